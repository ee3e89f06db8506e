"""Fused elementwise kernels for ``ember.compile`` on the CPU: C++ generated per group.

The dispatcher's fusion planner (``ember.dispatcher.fusion``) hands a ``FusedGroup``: a
run of elementwise calls over ``n`` elements, as functor applications on operands. This
module writes one C++ function for it: a loop over the elements that loads each operand
once, applies the ops' functors (the same ``ember::gen`` functors the backend's own
kernels are generated from, so each op computes the same bits as its kernel) with the
values in registers, and stores only what the planner keeps. The loop runs on ember's
thread pool (``_C.parallel_address()``: a C function the generated code calls with its
body) and the call releases the GIL (ctypes).

Sources are compiled with the system C++ compiler (``$CXX``, else ``c++``) into a shared
library, cached on disk under ``$EMBER_COMPILE_CACHE`` (default
``~/.cache/ember/compile``) by a hash of the source, the flags, the compiler and the
machine's CPU flags; a second process, or a second run, loads the library without
compiling. Without a compiler, groups are left to the kernels as recorded.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import warnings

from ember.dispatcher import get_include
from ember.dispatcher.codegen.cxx import functor_name, render_functors

from . import _C

#: ember.compile's output_code log (EMBER_LOGS=output_code turns it on)
_CODE_LOG = logging.getLogger("ember.compile.output_code")

__all__ = ["compile_elementwise", "render_group", "cache_dir", "STATS"]

#: libraries compiled and loaded (tests read it)
STATS = {"compiled": 0, "loaded": 0, "hits": 0}

_CTYPES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
           "int32": "int32_t", "int64": "int64_t", "float16": "Half",
           "bfloat16": "BFloat16", "float32": "float", "float64": "double"}
#: the backend's own flags (CMakeLists.txt): the same arithmetic, no contraction into FMAs
_FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off",
          "-march=native", "-mprefer-vector-width=512", "-std=c++17", "-shared", "-fPIC", "-w"]
_GRAIN = 32768

_LOCK = threading.Lock()
_LOADED: dict = {}          # group key -> callable
_NO_COMPILER = [False]


def cache_dir() -> str:
    """Where compiled libraries are kept: ``$EMBER_COMPILE_CACHE``, else
    ``$XDG_CACHE_HOME/ember/compile`` (``~/.cache/ember/compile``)."""
    path = os.environ.get("EMBER_COMPILE_CACHE")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        path = os.path.join(base, "ember", "compile")
    return path


def _compiler() -> str | None:
    cxx = os.environ.get("CXX") or "c++"
    return shutil.which(cxx) or shutil.which("g++")


@functools.lru_cache(maxsize=None)
def _machine() -> str:
    """The CPU's feature flags (``-march=native`` code is only for such a machine)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return line
    except OSError:
        pass
    return os.uname().machine


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx: str) -> str:
    return subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout


def _scalar(ref) -> str:
    kind, v = ref
    if kind == "runtime":
        return f"scalar_of(s[{v}])"
    if isinstance(v, bool) or isinstance(v, int):
        return f"em::Scalar{{true, INT64_C({int(v)}), {float(v)!r}}}"
    return f"scalar_of({v!r})"


def render_group(group) -> str:
    """The C++ source of ``group``'s kernel: ``extern "C" ember_fused(par, p, s, n)``."""
    runtime = group.runtime_values
    slot_of_runtime = {v: i for i, v in enumerate(runtime)}
    uses = {(nd.op, nd.mode) for nd in group.nodes}
    lines = ["#include <cstdint>", "#include <cmath>", "#include <ember/dtype.h>",
             "#include <ember/scalar_ops.h>", "", render_functors(uses),
             "using namespace ember;", "namespace {",
             "inline em::Scalar scalar_of(double v) {",
             "  return em::Scalar{false, std::isfinite(v) ? (int64_t)v : 0, v};", "}",
             "struct Ctx { void* const* p; const double* s; };",
             "void body(void* ctx, int64_t b, int64_t e) {",
             "  const Ctx* c = (const Ctx*)ctx;", "  const double* s = c->s;", "  (void)s;"]
    # no stored operand shares a storage with another one: the pointers do not alias
    slots = [op.slot for op in group.operands if op.load or op.store is not None]
    restrict = all(slots.count(op.slot) == 1 for op in group.operands
                   if op.store is not None)
    qual = " __restrict__" if restrict else ""
    for i, op in enumerate(group.operands):
        if not op.load and op.store is None:
            continue
        ct = _CTYPES[op.dtype.name]
        if ct == "bool":
            ct = "uint8_t"
        const = "const " if op.store is None else ""
        lines.append(f"  {const}{ct}*{qual} p{i} = ({const}{ct}*)c->p[{i}];")
        if op.single and op.load:
            load = f"(p{i}[0] != 0)" if op.dtype.name == "bool" else f"p{i}[0]"
            vt = "bool" if op.dtype.name == "bool" else ct
            lines.append(f"  const {vt} x{i} = {load};")
    for k, nd in enumerate(group.nodes):
        fname = functor_name(nd.op, nd.mode)
        if nd.attrs:
            inits = ", ".join(_scalar(("runtime", slot_of_runtime[r[1]]) if r[0] == "runtime"
                                      else r) for _, r in nd.attrs)
            lines.append(f"  const gen::{fname} f{k}{{{inits}}};")
        else:
            lines.append(f"  const gen::{fname} f{k}{{}};")
    lines.append("  for (int64_t i = b; i < e; ++i) {")
    for k, nd in enumerate(group.nodes):
        args = []
        for ref in nd.inputs:
            if ref[0] == "value":
                args.append(f"v{ref[1]}")
            else:
                op = group.operands[ref[1]]
                if op.single:
                    args.append(f"x{ref[1]}")
                elif op.dtype.name == "bool":
                    args.append(f"(p{ref[1]}[i] != 0)")
                else:
                    args.append(f"p{ref[1]}[i]")
        vt = _CTYPES[nd.out_dtype.name]
        lines.append(f"    const {vt} v{nd.value} = f{k}({', '.join(args)});")
    for i, op in enumerate(group.operands):
        if op.store is not None:
            idx = "0" if op.single else "i"
            lines.append(f"    p{i}[{idx}] = v{op.store};")
    lines += ["  }", "}", "}  // namespace", "",
              'extern "C" void ember_fused(void (*par)(int64_t, int64_t, int64_t, '
              'void (*)(void*, int64_t, int64_t), void*), void* const* p, const double* s, '
              'int64_t n) {',
              "  Ctx c{p, s};",
              f"  if (par) par(0, n, {_GRAIN}, body, &c);",
              "  else body(&c, 0, n);",
              "}", ""]
    return "\n".join(lines)


def _build(src: str, cxx: str) -> str:
    """The path of the library compiled from ``src`` (compiled now unless cached)."""
    flags = _FLAGS + [f"-I{get_include()}"]
    h = hashlib.sha256("\0".join([src, " ".join(flags), _compiler_version(cxx),
                                  _machine()]).encode())
    name = h.hexdigest()[:32]
    folder = cache_dir()
    lib = os.path.join(folder, f"fused_{name}.so")
    if os.path.exists(lib):
        STATS["hits"] += 1
        return lib
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        cpp = os.path.join(tmp, "fused.cpp")
        with open(cpp, "w") as f:
            f.write(src)
        out = os.path.join(tmp, "fused.so")
        r = subprocess.run([cxx, *flags, cpp, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"ember.compile: the C++ compiler failed on a generated "
                               f"kernel ({cxx}):\n{r.stderr[-4000:]}\n--- source ---\n{src}")
        with open(os.path.join(folder, f"fused_{name}.cpp"), "w") as f:
            f.write(src)
        os.replace(out, lib)        # atomic: another process sees all of it or nothing
    STATS["compiled"] += 1
    return lib


def _parallel() -> int:
    get = getattr(_C, "parallel_address", None)
    return get() if get is not None else 0


def compile_elementwise(group):
    """A callable ``(storages, byte_offsets, values, n)`` running ``group``'s fused kernel
    over ``n`` elements (one library serves every size), or None when no C++ compiler is
    there (the planner then runs the kernels as recorded)."""
    key = group.key()
    with _LOCK:
        fn = _LOADED.get(key)
        if fn is not None:
            return fn
        if _NO_COMPILER[0]:
            return None
        cxx = _compiler()
        if cxx is None:
            _NO_COMPILER[0] = True
            warnings.warn("ember.compile: no C++ compiler found ($CXX, c++, g++): fused "
                          "kernels are not generated and graphs run op by op",
                          RuntimeWarning)
            return None
        src = render_group(group)
        _CODE_LOG.info("generated kernel of a fused group (%d ops):\n%s", len(group.nodes),
                       src)
        lib = ctypes.CDLL(_build(src, cxx))
        STATS["loaded"] += 1
        entry = lib.ember_fused
        entry.restype = None
        entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        par = _parallel()
        k = len(group.operands)
        ptr_array = ctypes.c_void_p * k
        nvals = len(group.runtime_values)
        val_array = ctypes.c_double * max(nvals, 1)
        used = [op.load or op.store is not None for op in group.operands]

        def run(storages, offsets, values, n, _lib=lib):
            ptrs = ptr_array(*[s.data_ptr + off if u else 0
                               for s, off, u in zip(storages, offsets, used)])
            vals = val_array(*values) if nvals else val_array()
            entry(par, ptrs, vals, n)

        _LOADED[key] = run
        return run
