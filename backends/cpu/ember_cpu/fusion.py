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
``~/.cache/ember/compile``) by a hash of the source, the flags, the compiler, ember's
headers (``include_digest``) and the machine's CPU flags; a second process, or a second
run, loads the library without compiling. Without a compiler, groups are left to the
kernels as recorded.
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

from ember.dispatcher import get_include, include_digest
from ember.dispatcher.codegen import cache_dir
from ember.dispatcher.codegen.cxx import (FUSED_CTYPES, FUSED_INCLUDES, render_fused_loop,
                                          render_fused_phases, render_fused_prelude)

from . import _C
from ember.dispatcher.warn import warn as _warn

#: ember.compile's output_code log (EMBER_LOGS=output_code turns it on)
_CODE_LOG = logging.getLogger("ember.compile.output_code")

__all__ = ["compile_elementwise", "prepare_elementwise", "render_group", "cache_dir",
           "STATS"]

#: libraries compiled and loaded (tests read it)
STATS = {"compiled": 0, "loaded": 0, "hits": 0}

#: the backend's own flags (CMakeLists.txt): the same arithmetic, no contraction into FMAs
_FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off",
          "-march=native", "-mprefer-vector-width=512", "-std=c++17", "-shared", "-fPIC", "-w"]
_GRAIN = 32768

_LOCK = threading.Lock()
_LOADED: dict = {}          # group key -> (the loaded entry point, its library)
_NO_COMPILER = [False]


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


def render_group(group) -> str:
    """The C++ source of ``group``'s kernel: ``extern "C" ember_fused(par, p, s, d, n)``
    (``d``: the layout, ``FusedGroup.layout()``); for a group with a reduction,
    ``ember_fused(par, vsum, p, s, d, n)`` (``_render_reduction``)."""
    if group.reduction is not None:
        return _render_reduction(group)
    setup, row, body = render_fused_loop(group, lambda k: f"c->p[{k}]")
    if group.inner is None:
        loop = ["  for (int64_t i = b; i < e; ++i) {"] + body + ["  }"]
    else:   # rows of inner elements; [b, e) may start and end inside a row
        loop = ["  const int64_t inner = d[0];",
                "  int64_t o = b / inner, j = b - o * inner;",
                "  for (int64_t at = b; at < e; ++o) {",
                "    const int64_t jend = (e - at) < (inner - j) ? j + (e - at) : inner;",
                "    const int64_t base = at - j;"] + row + [
                "    for (; j < jend; ++j) {", "    const int64_t i = base + j;", "    (void)i;"
                ] + body + ["    }", "    at = base + jend;", "    j = 0;", "  }"]
    return "\n".join(
        render_fused_prelude(group) +
        ["struct Ctx { void* const* p; const double* s; const int64_t* d; };",
         "void body(void* ctx, int64_t b, int64_t e) {",
         "  const Ctx* c = (const Ctx*)ctx;", "  const double* s = c->s;", "  (void)s;",
         "  const int64_t* d = c->d;", "  (void)d;"] +
        setup + loop +
        ["}", "}  // namespace", "",
         'extern "C" void ember_fused(void (*par)(int64_t, int64_t, int64_t, '
         'void (*)(void*, int64_t, int64_t), void*), void* const* p, const double* s, '
         'const int64_t* d, int64_t n) {',
         "  Ctx c{p, s, d};",
         f"  if (par) par(0, n, {_GRAIN}, body, &c);",
         "  else body(&c, 0, n);",
         "}", ""])


#: a full reduction's blocks and a sum's chunks: reduce.cpp's kBlock and row_sum's block
_RED_BLOCK = 65536
_SUM_CHUNK = 2048


def _render_reduction(group) -> str:
    """A group ending in a sum or mean (``FusedGroup.reduction``) as C++. ``part_sum``
    computes the chain over elements ``[jb, je)`` of row ``o`` in chunks of 2,048 values
    and adds each chunk with ``vsum`` (the backend's own contiguous sum, ``_C.sum_addresses``),
    then the last ``n % 16`` values one by one: the order of eager mode's ``row_sum`` over
    the same elements. ``finish`` turns a row's total into the output as the kernel's
    store does (``(T)total``, or ``(T)(total * (1.0 / inner))`` for a mean) and runs the
    epilogue, then the row pass over the row's elements. Several outputs: one task per
    row. One output: blocks of 65,536 elements summed in parallel and their sums added in
    order, as the kernel's full reduction (no row pass: the planner keeps it out). Each
    later reduction's input is computed by the row pass before it, in ``finish``, into
    chunks summed the same way (``_stage``)."""
    red = group.reduction
    t = FUSED_CTYPES[red.dtype.name]
    ph = render_fused_phases(group, lambda k: f"c->p[{k}]")
    head = ["  const double* s = c->s;", "  (void)s;", "  const int64_t* d = c->d;",
            "  (void)d;", "  const int64_t inner = d[0];", "  (void)inner;"] + ph["setup"]
    later = []
    for k, (r, st) in enumerate(zip(group.reductions[1:], ph["stages"][1:]), 2):
        # the row pass before reduction k, into its sum, then its value and epilogue
        later += _chunked_sum(t, str(k), "0", "inner", ph["stages"][k - 2]["row_pass"],
                              st["source"])
        later += [f"  const {t} {st['result']} = ({t})(total{k}{_scale(r)});"]
        later += st["epilogue"]
    return "\n".join(
        render_fused_prelude(group) +
        ["struct Ctx {", "  void* const* p; const double* s; const int64_t* d;",
         f"  double (*vsum)(const {t}*, int64_t); double* part; int64_t n;", "};",
         "double part_sum(const Ctx* c, int64_t o, int64_t jb, int64_t je) {"] + head +
        ph["row"] + _chunked_sum(t, "", "jb", "je", ph["body"], ph["source"]) +
        ["  return total;", "}",
         "void finish(const Ctx* c, int64_t o, double total) {"] + head + ph["row"] +
        [f"    const {t} {ph['result']} = ({t})(total{_scale(red)});"] + ph["epilogue"] +
        later + _row_pass(ph["stages"][-1]["row_pass"]) + ["}",
         "void rows(void* ctx, int64_t b, int64_t e) {",
         "  const Ctx* c = (const Ctx*)ctx;",
         "  for (int64_t o = b; o < e; ++o) finish(c, o, part_sum(c, o, 0, c->d[0]));",
         "}",
         "void blocks(void* ctx, int64_t b, int64_t e) {",
         "  const Ctx* c = (const Ctx*)ctx;",
         "  for (int64_t k = b; k < e; ++k) {",
         f"    const int64_t jb = k * {_RED_BLOCK};",
         f"    const int64_t je = c->n - jb < {_RED_BLOCK} ? c->n : jb + {_RED_BLOCK};",
         "    c->part[k] = part_sum(c, 0, jb, je);", "  }", "}",
         "}  // namespace", "",
         'extern "C" void ember_fused(void (*par)(int64_t, int64_t, int64_t, '
         'void (*)(void*, int64_t, int64_t), void*), void* vsum, void* const* p, '
         'const double* s, const int64_t* d, int64_t n) {',
         f"  Ctx c{{p, s, d, (double (*)(const {t}*, int64_t))vsum, nullptr, n}};",
         "  const int64_t inner = d[0], nout = n / inner;",
         "  if (nout > 1) {",
         f"    const int64_t grain = inner >= {_GRAIN} ? 1 : {_GRAIN} / inner;",
         "    if (par) par(0, nout, grain, rows, &c);",
         "    else rows(&c, 0, nout);",
         "    return;", "  }",
         f"  const int64_t nb = (n + {_RED_BLOCK - 1}) / {_RED_BLOCK};",
         "  if (nb == 1) {", "    finish(&c, 0, part_sum(&c, 0, 0, n));", "    return;", "  }",
         "  double* part = new double[nb];", "  c.part = part;",
         "  if (par) par(0, nb, 1, blocks, &c);", "  else blocks(&c, 0, nb);",
         "  double acc = 0;", "  for (int64_t k = 0; k < nb; ++k) acc = acc + part[k];",
         "  delete[] part;", "  finish(&c, 0, acc);", "}", ""])


def _row_pass(lines) -> list:
    """The last row pass's loop over row ``o`` (inside ``finish``, after its epilogue)."""
    if not lines:
        return []
    return ["  for (int64_t j = 0; j < inner; ++j) {",
            "    const int64_t i = o * inner + j;", "    (void)i;"] + lines + ["  }"]


def _scale(red) -> str:
    """What a reduction's total is multiplied by before it is rounded: eager mode's mean."""
    return " * (1.0 / (double)inner)" if red.op == "mean" else ""


def _chunked_sum(t, tag, begin, end, element, source) -> list:
    """``double total<tag>``: ``source`` (computed by the ``element`` lines for element
    ``j`` of row ``o``) over ``j`` in ``[begin, end)``, added as eager mode's ``row_sum``
    adds memory: chunks of 2,048 values to ``vsum``, then the last ``n % 16`` one by
    one."""
    b, tot, j0 = f"buf{tag}", f"total{tag}", f"j0{tag}"
    element = ["    const int64_t i = o * inner + j;", "    (void)i; (void)j;"] + element
    return ([f"  {t} {b}[{_SUM_CHUNK}];", f"  double {tot} = 0;", f"  int64_t {j0} = {begin};",
             f"  while ({end} - {j0} >= 16) {{",
             f"    const int64_t whole = ({end} - {j0}) / 16 * 16;",
             f"    const int64_t len = whole < {_SUM_CHUNK} ? whole : {_SUM_CHUNK};",
             "    for (int64_t t = 0; t < len; ++t) {", f"    const int64_t j = {j0} + t;"]
            + element +
            [f"    {b}[t] = {source};", "    }", f"    {tot} += c->vsum({b}, len);",
             f"    {j0} += len;", "  }",
             f"  for (int64_t j = {j0}; j < {end}; ++j) {{"] + element +
            [f"    {tot} += (double){source};", "  }"])


def _library(src: str, cxx: str) -> tuple:
    """``(path, flags)``: where the library compiled from ``src`` is cached, and the flags
    it is compiled with."""
    flags = _FLAGS + [f"-I{get_include()}"]
    h = hashlib.sha256("\0".join([src, " ".join(flags), _compiler_version(cxx),
                                   _machine(), include_digest()]).encode())
    return os.path.join(cache_dir(), f"fused_{h.hexdigest()[:32]}.so"), flags


#: what every generated source includes first: precompiled once per cache folder
_PRELUDE = "".join(f"#include {h}\n" for h in FUSED_INCLUDES)
_PCH: dict = {}     # (cache folder, flags) -> the flags that use the precompiled header


def _pch_flags(cxx: str, flags: list) -> list:
    """``["-include", header]`` for GCC, with the header's precompiled form next to it in
    the cache (built on first use; ember's headers take most of a small kernel's compile
    time), or ``[]`` (another compiler, or the build failed: sources then parse the
    headers themselves). The libraries are the same bits either way, so their cache key
    leaves this out."""
    folder = cache_dir()
    key = (folder, tuple(flags))
    hit = _PCH.get(key)
    if hit is not None:
        return hit
    version = _compiler_version(cxx)
    if "GCC" not in version and "g++" not in version:
        _PCH[key] = []
        return []
    h = hashlib.sha256("\0".join([_PRELUDE, " ".join(flags), version, _machine(),
                                   include_digest()]).encode()).hexdigest()[:32]
    header = os.path.join(folder, f"prelude_{h}.h")
    result = ["-include", header]
    if not os.path.exists(header + ".gch"):
        try:
            os.makedirs(folder, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder) as tmp:
                src = os.path.join(tmp, "prelude.h")
                with open(src, "w") as f:
                    f.write(_PRELUDE)
                r = subprocess.run([cxx, *[f for f in flags if f != "-shared"],
                                    "-x", "c++-header", src, "-o", src + ".gch"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    result = []
                else:       # the header, then its precompiled form: each one atomic
                    if not os.path.exists(header):
                        os.replace(src, header)
                    os.replace(src + ".gch", header + ".gch")
        except OSError:
            result = []
    _PCH[key] = result
    return result


class _Build:
    """One run of the C++ compiler on a generated source, into a private folder next to
    the cache; ``finish()`` waits for it and moves the library into place."""

    def __init__(self, src: str, cxx: str, lib: str, flags: list):
        folder = os.path.dirname(lib)
        os.makedirs(folder, exist_ok=True)
        self.src, self.cxx, self.lib = src, cxx, lib
        self.tmp = tempfile.TemporaryDirectory(dir=folder)
        cpp = os.path.join(self.tmp.name, "fused.cpp")
        with open(cpp, "w") as f:
            f.write(src)
        self.out = os.path.join(self.tmp.name, "fused.so")
        self.proc = subprocess.Popen([cxx, *flags, *_pch_flags(cxx, flags), cpp, "-o",
                                      self.out],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)

    def finish(self) -> None:
        try:
            _, err = self.proc.communicate()
            if self.proc.returncode != 0:
                raise RuntimeError(f"ember.compile: the C++ compiler failed on a generated "
                                   f"kernel ({self.cxx}):\n{err[-4000:]}\n--- source ---\n"
                                   f"{self.src}")
            with open(self.lib[:-3] + ".cpp", "w") as f:
                f.write(self.src)
            os.replace(self.out, self.lib)  # atomic: another process sees all or nothing
            STATS["compiled"] += 1
        finally:
            self.tmp.cleanup()


def _build(src: str, cxx: str) -> str:
    """The path of the library compiled from ``src`` (compiled now unless cached)."""
    lib, flags = _library(src, cxx)
    if os.path.exists(lib):
        STATS["hits"] += 1
        return lib
    _Build(src, cxx, lib, flags).finish()
    return lib


def prepare_elementwise(groups) -> None:
    """Compile the libraries of a graph's groups that are neither loaded nor cached, in
    parallel (as many compiler runs at once as the machine has cores), so that
    ``compile_elementwise`` then finds them on disk: a graph's first call waits for its
    slowest kernel, not for the sum of them. A failed build is left for
    ``compile_elementwise`` to report."""
    cxx = _compiler()
    if cxx is None:
        return
    todo = {}
    with _LOCK:
        for g in groups:
            key = g.key()
            if key in _LOADED or key in todo:
                continue
            src = render_group(g)
            lib, flags = _library(src, cxx)
            if not os.path.exists(lib):
                todo[key] = (src, lib, flags)
    if len(todo) < 2:
        return      # (one build: compile_elementwise runs it)
    width = max(1, os.cpu_count() or 1)
    running = []
    for src, lib, flags in todo.values():
        if len(running) >= width:
            _finish_quietly(running.pop(0))
        try:
            running.append(_Build(src, cxx, lib, flags))
        except OSError:
            break
    for b in running:
        _finish_quietly(b)


def _finish_quietly(build: _Build) -> None:
    try:
        build.finish()
    except RuntimeError:
        pass        # (compile_elementwise builds it again and raises the error)


def _parallel() -> int:
    get = getattr(_C, "parallel_address", None)
    return get() if get is not None else 0


def compile_elementwise(group):
    """A callable ``(storages, byte_offsets, values, n)`` running ``group``'s fused kernel
    over ``n`` elements (one library serves every size), or None when no C++ compiler is
    there (the planner then runs the kernels as recorded)."""
    key = group.key()
    with _LOCK:
        hit = _LOADED.get(key)
        if hit is not None:
            return _runner(group, *hit)
        if _NO_COMPILER[0]:
            return None
        cxx = _compiler()
        if cxx is None:
            _NO_COMPILER[0] = True
            _warn("ember.compile: no C++ compiler found ($CXX, c++, g++): fused "
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
        entry.argtypes = ([ctypes.c_void_p] * (5 if group.reduction is not None else 4) +
                          [ctypes.c_int64])
        _LOADED[key] = (entry, lib)
    return _runner(group, *_LOADED[key])


def _runner(group, entry, lib):
    """The call of a loaded kernel for ``group`` (its layout's numbers are this group's:
    groups of one key share the library, not the sizes)."""
    par = _parallel()
    k = len(group.operands)
    ptr_array = ctypes.c_void_p * k
    nvals = len(group.runtime_values)
    val_array = ctypes.c_double * max(nvals, 1)
    layout = (ctypes.c_int64 * (k + 1))(*group.layout())
    used = [op.load or op.store is not None for op in group.operands]
    lead = (par,) if group.reduction is None else (par, _sum_address(group.reduction.dtype))

    def run(storages, offsets, values, n, _lib=lib, _layout=layout):
        ptrs = ptr_array(*[s.data_ptr + off if u else 0
                           for s, off, u in zip(storages, offsets, used)])
        vals = val_array(*values) if nvals else val_array()
        entry(*lead, ptrs, vals, _layout, n)
    return run


@functools.lru_cache(maxsize=None)
def _sum_address(dtype) -> int:
    """The backend's contiguous sum for ``dtype`` (a reduction group's chunks go to it)."""
    return _C.sum_addresses()[dtype.name]

