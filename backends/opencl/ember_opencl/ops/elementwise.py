"""Elementwise kernels: unary, binary, comparisons, where, lerp/addcmul/addcdiv/clamp.

One OpenCL kernel per family and dtype (``unary_f32``, ``binary_i64``, ...) that switches
on an op code, walking any strides and broadcasts (``kernels/{unary,binary,ternary}.cl``).
The dispatcher has already promoted and broadcast the inputs, so operands share ``out``'s
shape and (except for comparisons, classifications and ``where``'s condition) its dtype.
"""
from __future__ import annotations

import math

from .._geometry import ew_geom
from .._runtime import enqueue, round_up
from .._source import SIZE_TYPES
from ._common import (CONSTS, OPCODES, buf, check_kind, check_same, dev_of,
                      elementwise_local, np, numel, rt, sfx, vt)

__all__ = ["KERNELS"]

ALL, NUM, INT_BOOL, FLOAT = {0, 1, 2}, {1, 2}, {0, 1}, {2}


def _typed(dev):
    return {"types": sorted(dev.dtypes), "consts": CONSTS, "linear": True}


def _sized_and_typed(dev):
    return {"sizes": sorted(SIZE_TYPES), "types": sorted(dev.dtypes), "consts": CONSTS,
            "linear": True}


rt.SPECS.update(unary=_typed, binary=_typed, ternary=_sized_and_typed)


def _launch(dev, family, kname, op, shape, tensors, *extra):
    """Enqueue ``kname`` over ``shape``: args (op code?, Geom, buffers..., extra...)."""
    n = numel(shape)
    if n == 0:
        return
    bufs, offs = zip(*[buf(t) for t in tensors])
    g = ew_geom(kname, shape, tensors, offs)
    k = dev.kernel(family, kname + "_lin" if g[1] <= 1 else kname)
    L = elementwise_local(dev)
    head = () if op is None else (np.int32(op),)
    enqueue(dev, k, (round_up(n, L),), (L,), *head, g, *bufs, *extra)


# ---- unary ------------------------------------------------------------------------
_UNARY_KINDS = {n: FLOAT for n in ("exp", "log", "sin", "cos", "tan", "sqrt", "rsqrt", "erf",
                                   "tanh", "sigmoid", "reciprocal", "log1p", "expm1",
                                   "log2")}
_UNARY_KINDS.update({"floor": ALL, "ceil": ALL, "trunc": ALL, "round": ALL, "neg": NUM,
                     "abs": NUM, "sign": ALL, "bitwise_not": INT_BOOL})


def _unary(name, kinds):
    code = OPCODES[name]

    def kernel(out, x):
        dev = dev_of(out)
        check_same(name, out, x)
        check_kind(name, dev, x.dtype, kinds)
        _launch(dev, "unary", "unary_" + sfx(x.dtype), code, out.shape, (out, x))
    kernel.__name__ = name
    return kernel


def _classify(name):
    code = OPCODES[name]

    def kernel(out, x):
        dev = dev_of(out)
        if out.dtype.name != "bool":
            raise TypeError(f"{name}(): expected a bool output, got {out.dtype.name}")
        dev.check_dtype(x.dtype, name)
        _launch(dev, "unary", "classify_" + sfx(x.dtype), code, out.shape, (out, x))
    kernel.__name__ = name
    return kernel


# ---- binary -----------------------------------------------------------------------
_BINARY_KINDS = {"add": ALL, "sub": NUM, "mul": ALL, "maximum": ALL, "minimum": ALL,
                 "fmod": NUM, "remainder": NUM, "pow": NUM, "bitwise_and": INT_BOOL,
                 "bitwise_or": INT_BOOL, "bitwise_xor": INT_BOOL}


def _binary(name, kinds):
    code = OPCODES[name]

    def kernel(out, a, b):
        dev = dev_of(out)
        check_same(name, out, a, b)
        if out.dtype._kind == 0 and name == "sub":
            raise TypeError("sub(): subtraction of bool tensors is not supported; use "
                            "logical_xor() or bitwise_xor()")
        check_kind(name, dev, out.dtype, kinds)
        _launch(dev, "binary", "binary_" + sfx(out.dtype), code, out.shape, (out, a, b),
                dev.err)
    kernel.__name__ = name
    return kernel


_DIV_MODES = {None: OPCODES["div"], "trunc": OPCODES["div_trunc"],
              "floor": OPCODES["div_floor"]}


def div(out, a, b, rounding_mode=None):
    dev = dev_of(out)
    check_same("div", out, a, b)
    code = _DIV_MODES.get(rounding_mode)
    if code is None:
        raise ValueError(f"div(): expected rounding_mode to be one of None, 'trunc' or "
                         f"'floor' but found {rounding_mode!r}")
    if rounding_mode is None and not out.dtype.is_floating_point:
        raise TypeError(f"div(): true division is not implemented for dtype "
                        f"{out.dtype.name} on opencl (promote to a floating dtype first)")
    check_kind("div", dev, out.dtype, NUM)
    _launch(dev, "binary", "binary_" + sfx(out.dtype), code, out.shape, (out, a, b), dev.err)


def _compare(name):
    code = OPCODES[name]

    def kernel(out, a, b):
        dev = dev_of(out)
        check_same(name, a, b)
        if out.dtype.name != "bool":
            raise TypeError(f"{name}(): expected a bool output, got {out.dtype.name}")
        dev.check_dtype(a.dtype, name)
        _launch(dev, "binary", "compare_" + sfx(a.dtype), code, out.shape, (out, a, b))
    kernel.__name__ = name
    return kernel


# ---- ternary ----------------------------------------------------------------------
def where(out, cond, a, b):
    dev = dev_of(out)
    check_same("where", out, a, b)
    if cond.dtype.name not in ("bool", "uint8"):
        raise TypeError(f"where(): expected condition to be a bool tensor, got "
                        f"{cond.dtype.name}")
    dev.check_dtype(out.dtype, "where")
    _launch(dev, "ternary", f"where_s{out.dtype.itemsize}", None, out.shape,
            (out, cond, a, b))


def _ternary(name, kinds, scalar_default=None):
    code = OPCODES[name]

    def kernel(out, a, b, c, value=scalar_default):
        dev = dev_of(out)
        check_same(name, out, a, b, c)
        check_kind(name, dev, out.dtype, kinds)
        v = 1 if value is None else value
        if out.dtype._kind == 1 and not isinstance(v, int):
            raise TypeError(f"{name}(): value must be an integer for integer tensors")
        _launch(dev, "ternary", "ternary_" + sfx(out.dtype), code, out.shape, (out, a, b, c),
                vt(out.dtype, v))
    kernel.__name__ = name
    return kernel


def lerp(out, a, b, w):
    _lerp(out, a, b, w)


_lerp = _ternary("lerp", FLOAT)


def _is_tensor(v) -> bool:
    return hasattr(v, "_storage")


def clamp(out, x, lo=None, hi=None):
    """clamp to tensor bounds (broadcast to out), number bounds, or None (no bound)."""
    dev = dev_of(out)
    check_same("clamp", out, x)
    check_kind("clamp", dev, out.dtype, NUM)
    dt = out.dtype
    if _is_tensor(lo) or _is_tensor(hi):
        from ember.dispatcher import _core as C
        flags = (1 if lo is not None else 0) | (2 if hi is not None else 0)
        lo_t = _bound_tensor(C, lo, x)
        hi_t = _bound_tensor(C, hi, x)
        check_same("clamp", out, lo_t, hi_t)
        _launch(dev, "ternary", "ternary_" + sfx(dt), OPCODES["clamp"], out.shape,
                (out, x, lo_t, hi_t), vt(dt, flags))
        return
    if dt.is_floating_point:
        lo_v = -math.inf if lo is None else float(lo)
        hi_v = math.inf if hi is None else float(hi)
    else:  # integer bounds: round inwards and saturate to the dtype's range (PyTorch)
        bits = 8 * dt.itemsize
        tmin, tmax = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.is_signed else \
            (0, (1 << bits) - 1)
        lo_v = tmin if lo is None else max(tmin, min(tmax, math.ceil(lo)))
        hi_v = tmax if hi is None else max(tmin, min(tmax, math.floor(hi)))
    _launch(dev, "ternary", "clamp_scalar_" + sfx(dt), None, out.shape, (out, x), vt(dt, lo_v),
            vt(dt, hi_v))


def _bound_tensor(C, v, x):
    if v is None:
        return x
    if _is_tensor(v):
        return C.expand_to(v, x.shape)
    return C.expand_to(C.scalar_tensor(C._coerce_scalar(v, x.dtype), x.dtype, x.device),
                       x.shape)


KERNELS = {name: _unary(name, kinds) for name, kinds in _UNARY_KINDS.items()}
KERNELS.update({name: _classify(name) for name in ("isnan", "isinf", "isfinite",
                                                    "logical_not")})
KERNELS.update({name: _binary(name, kinds) for name, kinds in _BINARY_KINDS.items()})
KERNELS["div"] = div
KERNELS.update({name: _compare(name) for name in ("eq", "ne", "lt", "le", "gt", "ge",
                                                   "logical_and", "logical_or",
                                                   "logical_xor")})
KERNELS.update({"where": where, "lerp": lerp, "clamp": clamp,
                "addcmul": _ternary("addcmul", NUM, 1),
                "addcdiv": _ternary("addcdiv", FLOAT, 1)})
