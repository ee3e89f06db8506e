"""OpenCL C source generation: the dtype table and the template renderer.

Every kernel family is one file in ``kernels/`` written against a few macros (``S`` the
storage type, ``C`` the compute type, ``LD``/``ST`` element load/store, ``K(name)`` the
kernel name for this dtype, ...). :func:`render` prepends ``kernels/common.cl`` and
instantiates the family once per dtype (or per dtype pair, or per element size) by
wrapping it in ``#define``/``#undef`` blocks, so one program per family and device holds
every variant: the driver compiles it once, and PoCL compiles each kernel lazily on its
first launch.

Half types are storage-only: ``float16`` loads and stores through the core
``vload_half``/``vstore_half_rte`` (no ``cl_khr_fp16`` needed) and ``bfloat16`` through
bit shifts; both compute in float, as the CPU backend does.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["CType", "CTYPES", "SIZE_TYPES", "render", "kernel_file"]

_KERNEL_DIR = os.path.join(os.path.dirname(__file__), "kernels")


@dataclass(frozen=True)
class CType:
    """How one ember dtype looks in OpenCL C."""
    name: str        # the ember dtype's name
    sfx: str         # kernel-name suffix
    storage: str     # S: the element type in memory
    compute: str     # C: the type arithmetic happens in
    acc: str         # ACC: the sum/prod/GEMM accumulator
    kind: int        # 0 bool, 1 integer, 2 floating
    signed: bool
    wrap: str        # UT: unsigned type for wrapping integer arithmetic
    lowest: str      # identity of max()
    highest: str     # identity of min()
    load: str = "((p)[i])"
    store: str = "((p)[i] = (v))"
    mant: int = 0    # significand bits of a floating type (random numbers use them)

    @property
    def is_float(self) -> bool:
        return self.kind == 2


def _int(name, sfx, s, signed, wrap, lo, hi):
    return CType(name, sfx, s, s, "long", 1, signed, wrap, lo, hi)


CTYPES = {
    "bool": CType("bool", "b8", "uchar", "uchar", "long", 0, False, "uint", "0", "1",
                  store="((p)[i] = (uchar)((v) != 0))"),
    "uint8": _int("uint8", "u8", "uchar", False, "uint", "0", "255"),
    "int8": _int("int8", "i8", "char", True, "uint", "(-128)", "127"),
    "int16": _int("int16", "i16", "short", True, "uint", "(-32768)", "32767"),
    "int32": _int("int32", "i32", "int", True, "uint", "INT_MIN", "INT_MAX"),
    "int64": _int("int64", "i64", "long", True, "ulong", "LONG_MIN", "LONG_MAX"),
    "float16": CType("float16", "f16", "half", "float", "float", 2, True, "uint",
                     "(-INFINITY)", "INFINITY", load="vload_half((i), (p))",
                     store="vstore_half_rte((v), (i), (p))", mant=11),
    "bfloat16": CType("bfloat16", "bf16", "ushort", "float", "float", 2, True, "uint",
                      "(-INFINITY)", "INFINITY", load="bf16_to_float((p)[i])",
                      store="((p)[i] = float_to_bf16(v))", mant=8),
    "float32": CType("float32", "f32", "float", "float", "float", 2, True, "uint",
                     "(-INFINITY)", "INFINITY", mant=24),
    "float64": CType("float64", "f64", "double", "double", "double", 2, True, "ulong",
                     "(-INFINITY)", "INFINITY", mant=53),
}

#: element-size classes for kernels that only move bytes (copy, fill, where, gather)
SIZE_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def kernel_file(family: str) -> str:
    with open(os.path.join(_KERNEL_DIR, family + ".cl")) as f:
        return f.read()


def _from_float(t: CType, v: str) -> str:
    """C expression: the widest-float value ``v`` converted to ``t``'s compute type, with
    the CPU backend's rules (bool: nonzero; integers: truncate through int64)."""
    if t.kind == 0:
        return f"((uchar)(({v}) != 0))"
    if t.kind == 1:
        return f"(({t.storage})(long)({v}))"
    return f"(({t.compute})({v}))"


def _from_long(t: CType, v: str) -> str:
    if t.kind == 0:
        return f"((uchar)(({v}) != 0))"
    return f"(({t.compute})({v}))"


def _type_defines(t: CType, prefix: str = "") -> list[tuple[str, str]]:
    p = prefix
    return [
        (p + "S", t.storage), (p + "C", t.compute), (p + "ACC", t.acc), (p + "UT", t.wrap),
        # SACC: the accumulator of sums, means and scans: the widest float the device has
        # (float32 sums in double, as the CPU backend), int64 for integers
        (p + "SACC", "WF" if t.kind == 2 else t.acc),
        (p + "SFX", t.sfx), (p + "KIND", str(t.kind)), (p + "SIGNED", str(int(t.signed))),
        (p + "LOWEST", t.lowest), (p + "HIGHEST", t.highest), (p + "MANT", str(t.mant)),
        (p + "LD(p, i)", t.load), (p + "ST(p, i, v)", t.store),
        (p + "FROM_F(v)", _from_float(t, "v")), (p + "FROM_L(v)", _from_long(t, "v")),
        # VT: how a Python scalar reaches a kernel of this dtype
        (p + "VT", "long" if t.kind < 2 else t.compute),
        (p + "ISNAN(v)", "isnan(v)" if t.kind == 2 else "0"),
    ]


def _block(defines: list[tuple[str, str]], body: str) -> str:
    head = "".join(f"#define {k} {v}\n" for k, v in defines)
    tail = "".join(f"#undef {k.split('(')[0]}\n" for k, _ in defines)
    return head + body + "\n" + tail


def render(family: str, *, fp64: bool, types=(), pairs=(), sizes=(), consts=None,
           linear: bool = False, body: str | None = None) -> str:
    """The OpenCL C source of one kernel family for one device.

    ``types``: dtype names to instantiate ``TYPE`` mode for; ``pairs``: (out, in) dtype
    name pairs (``PAIR`` mode, prefixes ``O_``/``I_``); ``sizes``: element sizes in bytes
    (``BYTES`` mode, ``S`` an unsigned type of that size). ``consts``: extra
    ``#define``s shared by every instantiation (op codes, tile sizes). ``linear``:
    instantiate everything twice, with ``EW_OFFSETS`` the general strided walk
    (``geom_offsets``) and, in kernels suffixed ``_lin``, the one-stride walk
    (``lin_offsets``) for launches whose dims collapse to one. ``body``: the family's
    template text when it is generated rather than read from ``kernels/<family>.cl``.
    """
    body = kernel_file(family) if body is None else body
    if linear:
        walks = [("geom_offsets", ""), ("lin_offsets", "_lin")]
        return "".join(_render(body, fp64, types, pairs, sizes, consts, w, s, i == 0)
                       for i, (w, s) in enumerate(walks))
    return _render(body, fp64, types, pairs, sizes, consts, "geom_offsets", "", True)


def _render(body, fp64, types, pairs, sizes, consts, walk, suffix, head) -> str:
    out = []
    walk_def = [("EW_OFFSETS", walk), ("EW_LIN", "1" if walk == "lin_offsets" else "0")]
    if not head:
        out.append("")
    elif fp64:
        out.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define HAS_FP64 1\n"
                   "#define WF double\n")
    else:
        out.append("#define HAS_FP64 0\n#define WF float\n")
    if head:
        for k, v in (consts or {}).items():
            out.append(f"#define {k} {v}\n")
        out.append(kernel_file("common"))
    for size in sizes:
        out.append(_block(walk_def + [("BYTES", "1"), ("S", SIZE_TYPES[size]),
                                      ("SFX", f"s{size}{suffix}")], body))
    for name in types:
        t = CTYPES[name]
        defs = _type_defines(t)
        defs = [(k, v + suffix if k == "SFX" else v) for k, v in defs]
        out.append(_block(walk_def + [("TYPE", "1")] + defs, body))
    for o, i in pairs:
        to, ti = CTYPES[o], CTYPES[i]
        cvt = _convert(to, ti, "v")
        out.append(_block(walk_def + [("PAIR", "1"),
                                      ("PAIR_SFX", f"{to.sfx}_{ti.sfx}{suffix}"),
                                      ("CVT(v)", cvt)] + _type_defines(to, "O_")
                          + _type_defines(ti, "I_"), body))
    return "".join(out)


def _convert(to: CType, ti: CType, v: str) -> str:
    """C expression converting ``v`` (``ti``'s compute type) to ``to``'s compute type,
    as the CPU backend's ``cvt``: bool is ``!= 0``, float to integer truncates through
    int64, half types round from float."""
    if to.kind == 0:
        return f"((uchar)(({v}) != 0))"
    if to.kind == 1 and ti.kind == 2:
        return f"(({to.storage})(long)({v}))"
    if to.is_float and to.compute == "float" and ti.compute == "double":
        return f"((float)({v}))"
    return f"(({to.compute})({v}))"
