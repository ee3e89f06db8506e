"""Fused elementwise kernels for ``ember.compile`` on CUDA devices: CUDA C++ built by NVRTC.

The dispatcher's planner (``ember.dispatcher.fusion``) hands a ``FusedGroup``; this module
writes one ``__global__`` kernel for it from the same ``ember::gen`` functors the
backend's own elementwise kernels are compiled from (``codegen.cxx.render_fused_loop``,
shared with the cpu generator): a grid-stride loop that loads each operand once, applies
the functors with the values in registers and stores what the planner keeps.

The source is compiled at run time by NVRTC (``libnvrtc`` from the ``nvidia-cuda-nvrtc``
wheel, ``pip install 'ember-cuda[nvrtc]'``, or the CUDA toolkit) to PTX for the device's
compute capability; the PTX is cached on disk next to the cpu backend's libraries
(``$EMBER_COMPILE_CACHE``) and loaded with the driver API (``cuModuleLoadData``), and the
kernel is launched on the current stream (``cuLaunchKernel``), so it is ordered with every
other kernel of the backend and the caching allocator's stream rules hold. NVRTC has no
host C++ standard library: the few headers ember's headers include are given to it as
in-memory shims over libcu++ (``cuda/std``), which ships with the toolkit. Without NVRTC,
the toolkit's headers or the driver, groups run op by op.

Arithmetic: fused kernels are compiled with ``--fmad=false`` (no multiply-add contraction
across ops, as the cpu generator's ``-ffp-contract=off``); the backend's own kernels are
built by nvcc with its default contraction inside each op, so a fused float result may
differ from the op-by-op one in the last bit where an op's body has a multiply-add.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
import logging
import os
import threading

from ember.dispatcher import get_include, include_digest
from ember.dispatcher.codegen import cache_dir
from ember.dispatcher.codegen.cxx import (FUSED_CTYPES, render_fused_loop,
                                          render_fused_phases, render_fused_prelude)

from ._find import library_candidates, toolkits, wheel_roots
from ember.dispatcher.warn import warn as _warn

#: ember.compile's output_code log (EMBER_LOGS=output_code turns it on)
_CODE_LOG = logging.getLogger("ember.compile.output_code")

__all__ = ["compile_elementwise", "render_group", "compile_ptx", "nvrtc_candidates",
           "include_dirs", "STATS"]

#: PTX compiled, modules loaded, disk-cache hits (tests read it)
STATS = {"compiled": 0, "loaded": 0, "hits": 0}
_BLOCK = 256
_MAX_GRID = 65535

#: the C++ standard headers ember's headers include, for NVRTC (which has none): libcu++'s
#: versions, visible as std:: (and the fixed-width integer types in the global namespace)
_STD = "namespace std { using namespace cuda::std; }\n"
SHIMS = {
    "cstdint": "#pragma once\n#include <cuda/std/cstdint>\n" + _STD + "".join(
        f"using cuda::std::{t};\n" for t in ("int8_t", "int16_t", "int32_t", "int64_t",
                                            "uint8_t", "uint16_t", "uint32_t", "uint64_t"))
    + "#ifndef INT64_C\n#define INT64_C(c) c ## LL\n#endif\n",
    "cmath": "#pragma once\n#include <cuda/std/cmath>\n" + _STD,
    "cstring": "#pragma once\n#include <cuda/std/cstring>\n" + _STD,
    "type_traits": "#pragma once\n#include <cuda/std/type_traits>\n" + _STD,
    "algorithm": "#pragma once\n#include <cuda/std/__algorithm/min.h>\n"
                 "#include <cuda/std/__algorithm/max.h>\n" + _STD,
}
_OPTIONS = ["-std=c++17", "-default-device", "--fmad=false", "-diag-suppress=161"]


def render_group(group) -> str:
    """The CUDA C++ source of ``group``'s kernel: ``extern "C" __global__
    ember_fused(Args a, int64_t n)``, ``Args`` holding the operand pointers, the runtime
    values and the layout (``FusedGroup.layout()``). A group with reductions:
    ``_render_reduction``."""
    if group.reductions:
        return _render_reduction(group)
    setup, row, body = render_fused_loop(group, lambda k: f"a.p[{k}]")
    if group.inner is None:
        index = []
    else:
        index = ["    const int64_t o = i / d[0], j = i - o * d[0];", "    (void)j;"] + row
    return "\n".join(
        render_fused_prelude(group) +
        ["}  // namespace", "", _args_struct(group), "",
         'extern "C" __global__ void ember_fused(const Args a, const int64_t n) {',
         "  const double* s = a.s;", "  (void)s;", "  const int64_t* d = a.d;", "  (void)d;"]
        + setup +
        ["  const int64_t step = (int64_t)blockDim.x * gridDim.x;",
         "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
         "i += step) {"] + index + body + ["  }", "}", ""])


#: the eager reduce kernels' block: at most 512 threads, and blocks over rows up to 2^20
_RED_THREADS = 512
_RED_GRID = 1 << 20


def reduction_threads(inner: int) -> int:
    """The threads of the block that sums a row of ``inner`` elements: the power of two
    from 32 up to 512 that reaches ``inner``, as ``run_reduce`` in reduce.cu picks them (a
    fused reduction must add in the same order as the eager kernel)."""
    threads = 32
    while threads < _RED_THREADS and threads < inner:
        threads *= 2
    return threads


def _args_struct(group) -> str:
    k = max(len(group.operands), 1)
    m = max(len(group.runtime_values), 1)
    return f"struct Args {{ void* p[{k}]; double s[{m}]; int64_t d[{k + 1}]; }};"


def _render_reduction(group) -> str:
    """A group with reductions (sums or means over rows of ``inner`` = ``d[0]``
    elements; ``n / inner`` rows) as CUDA C++, adding in the order of reduce.cu's
    ``reduce_block_kernel`` for the same row, launched as it is (``reduction_threads``
    threads, a block per row, blocks striding over rows): thread ``t`` adds elements
    ``t, t + blockDim.x, ...`` of the chain's value in the accumulator type (the group's
    float type), the warps add by ``__shfl_down_sync`` (16 down to 1), lane 0 of each warp
    leaves its sum in shared memory and the first warp adds those the same way; a mean
    divides the total by ``inner`` in that type. Every thread gets the total and computes
    the epilogue (thread 0 stores it), then the row pass over its elements, which may feed
    the next reduction."""
    t = FUSED_CTYPES[group.reductions[0].dtype.name]
    ph = render_fused_phases(group, lambda k: f"a.p[{k}]")
    stages = ph["stages"]

    def indent(lines):
        return ["  " + ln for ln in lines]

    def over_row(body):     # this thread's elements of row o
        return ["    for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {",
                "      const int64_t i = o * inner + j;", "      (void)i;"] + \
            indent(body) + ["    }"]

    def summed(tag, element, source):
        return [f"    {t} acc{tag} = 0;"] + \
            over_row(element + [f"    acc{tag} = acc{tag} + ({t})({source});"]) + \
            [f"    acc{tag} = block_sum(acc{tag}, smem);"]

    def finish(k, red, st):
        total = f"acc{k} / ({t})inner" if red.op == "mean" else f"acc{k}"
        out = [f"    const {t} {st['result']} = {total};"] + st["epilogue_values"]
        if st["epilogue_stores"]:
            out += ["    if (threadIdx.x == 0) {"] + indent(st["epilogue_stores"]) + ["    }"]
        return out

    rows = summed(0, ph["body"], stages[0]["source"]) + \
        finish(0, group.reductions[0], stages[0])
    for k in range(1, len(stages)):
        rows += summed(k, stages[k - 1]["row_pass"], stages[k]["source"])
        rows += finish(k, group.reductions[k], stages[k])
    if stages[-1]["row_pass"]:
        rows += over_row(stages[-1]["row_pass"])
    return "\n".join(
        render_fused_prelude(group) +
        ["}  // namespace", "",
         "// reduce.cu's block sum: lanes by shuffles, then the warps' sums by the first warp",
         f"__device__ inline {t} block_sum({t} acc, {t}* smem) {{",
         "  for (int d = 16; d > 0; d >>= 1) acc = acc + __shfl_down_sync(0xffffffffu, acc, d);",
         "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;",
         "  if (lane == 0) smem[warp] = acc;", "  __syncthreads();", "  if (warp == 0) {",
         f"    acc = lane < (int)(blockDim.x / 32) ? smem[lane] : ({t})0;",
         "    for (int d = 16; d > 0; d >>= 1) acc = acc + __shfl_down_sync(0xffffffffu, acc, d);",
         "    if (lane == 0) smem[32] = acc;", "  }", "  __syncthreads();",
         f"  const {t} total = smem[32];",
         "  __syncthreads();  // every thread has read it before smem is used again",
         "  return total;", "}", "",
         _args_struct(group), "",
         'extern "C" __global__ void ember_fused(const Args a, const int64_t n) {',
         f"  __shared__ {t} smem[33];",
         "  const double* s = a.s;", "  (void)s;", "  const int64_t* d = a.d;", "  (void)d;",
         "  const int64_t inner = d[0], nout = n / inner;"]
        + ph["setup"] +
        ["  for (int64_t o = blockIdx.x; o < nout; o += gridDim.x) {"] + ph["row"] + rows +
        ["  }", "}", ""])


# ---- finding NVRTC and the headers --------------------------------------------------------

def nvrtc_candidates() -> list:
    """Where libnvrtc may be: the nvidia-cuda-nvrtc wheel first, then the toolkit's."""
    return library_candidates("libnvrtc", skip=("builtins", ".alt."))


@functools.lru_cache(maxsize=None)
def include_dirs() -> tuple:
    """ember's headers, then the CUDA headers NVRTC needs (``cuda_fp16.h``, libcu++):
    from the toolkit, or from nvidia wheels that ship them."""
    dirs = [get_include()]
    for home in toolkits():
        for d in (os.path.join(home, "include", "cccl"), os.path.join(home, "include")):
            if os.path.isdir(d):
                dirs.append(d)
    for root in wheel_roots():
        for d in sorted(glob.glob(os.path.join(root, "**", "include"), recursive=True)):
            if os.path.exists(os.path.join(d, "cuda_fp16.h")) or \
                    os.path.isdir(os.path.join(d, "cuda", "std")):
                dirs.append(d)
    return tuple(dirs)


class _NVRTC:
    def __init__(self, path):
        folder = os.path.dirname(path)
        # the builtins library is found next to libnvrtc, not on the loader's path
        for b in sorted(glob.glob(os.path.join(folder, "libnvrtc-builtins.so*"))):
            if ".alt." not in b:
                ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
                break
        self.lib = ctypes.CDLL(path)
        self.path = path
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"{major.value}.{minor.value}"

    def compile(self, src: str, options: list, headers: dict) -> bytes:
        lib = self.lib
        prog = ctypes.c_void_p()
        names = list(headers)
        hdr = (ctypes.c_char_p * max(len(names), 1))(*[headers[n].encode() for n in names])
        inc = (ctypes.c_char_p * max(len(names), 1))(*[n.encode() for n in names])
        r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"ember_fused.cu",
                                   len(names), hdr, inc)
        if r != 0:
            raise RuntimeError(f"nvrtcCreateProgram failed ({r})")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            r = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            if r != 0:
                raise RuntimeError(f"ember.compile: NVRTC failed on a generated kernel "
                                   f"({self.path}):\n{log.value.decode()[-4000:]}\n"
                                   f"--- source ---\n{src}")
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            ptx = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, ptx)
            return ptx.raw[:size.value]
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


@functools.lru_cache(maxsize=None)
def _nvrtc():
    """NVRTC, or None (with the reason warned once)."""
    for p in nvrtc_candidates():
        try:
            return _NVRTC(p)
        except OSError:
            continue
    return None


def compile_ptx(src: str, arch: str = "compute_90") -> bytes:
    """PTX of the CUDA source ``src`` for ``arch``, through NVRTC with ember's include
    paths and the standard-header shims; cached on disk by a hash of the source, ember's
    headers, the options and NVRTC's version. Raises RuntimeError when NVRTC is missing or fails."""
    nv = _nvrtc()
    if nv is None:
        raise RuntimeError("ember.compile: NVRTC was not found (pip install "
                           "'ember-cuda[nvrtc]', or a CUDA toolkit with lib64/libnvrtc.so)")
    options = [f"--gpu-architecture={arch}", *_OPTIONS] + [f"-I{d}" for d in include_dirs()]
    h = hashlib.sha256("\0".join([src, " ".join(options), nv.version,
                                  include_digest()]).encode())
    folder = cache_dir()
    path = os.path.join(folder, f"fused_{h.hexdigest()[:32]}.ptx")
    if os.path.exists(path):
        STATS["hits"] += 1
        with open(path, "rb") as f:
            return f.read()
    ptx = nv.compile(src, options, SHIMS)
    STATS["compiled"] += 1
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(ptx)
    os.replace(tmp, path)       # atomic: another process sees all of it or nothing
    return ptx


# ---- loading and launching (the driver API) ----------------------------------------------

@functools.lru_cache(maxsize=None)
def _driver():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    cu.cuInit(0)
    return cu


def _check(r, what):
    if r != 0:
        raise RuntimeError(f"ember.compile: {what} failed (CUresult {r})")


def _arch(cu, index: int) -> str:
    dev = ctypes.c_int()
    _check(cu.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "cuDeviceGetAttribute")
    _check(cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev), "cuDeviceGetAttribute")
    return f"compute_{major.value}{minor.value}"


def _function(cu, ptx: bytes, index: int):
    """``ember_fused`` of ``ptx`` loaded into device ``index``'s primary context (the one
    the runtime, and so the backend, uses)."""
    dev = ctypes.c_int()
    _check(cu.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    _check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    _check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    mod = ctypes.c_void_p()
    _check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0")),
           "cuModuleLoadData")
    fn = ctypes.c_void_p()
    _check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"ember_fused"),
           "cuModuleGetFunction")
    STATS["loaded"] += 1
    return fn


_LOCK = threading.Lock()
_SOURCES: dict = {}         # group key -> source
_FUNCTIONS: dict = {}       # (group key, device index) -> CUfunction
_UNAVAILABLE: list = []     # why fused kernels cannot be made here (warned once)


def _unavailable(reason: str):
    if not _UNAVAILABLE:
        _UNAVAILABLE.append(reason)
        _warn(f"ember.compile: {reason}: fused kernels are not generated on cuda and "
              f"graphs run op by op", RuntimeWarning)
    return None


def compile_elementwise(group, current_stream):
    """A callable ``(storages, byte_offsets, values, n)`` launching ``group``'s kernel on
    ``current_stream(index)``, or None when NVRTC or the driver is missing (the planner
    then runs the kernels as recorded)."""
    if _UNAVAILABLE:
        return None
    cu = _driver()
    if cu is None:
        return _unavailable("the CUDA driver (libcuda.so.1) was not found")
    if _nvrtc() is None:
        return _unavailable("NVRTC was not found (pip install 'ember-cuda[nvrtc]')")
    key = group.key()
    with _LOCK:
        src = _SOURCES.get(key)
        if src is None:
            src = _SOURCES[key] = render_group(group)
            _CODE_LOG.info("generated kernel of a fused group (%d ops):\n%s",
                           len(group.nodes), src)
    k = max(len(group.operands), 1)
    m = max(len(group.runtime_values), 1)

    class Args(ctypes.Structure):
        _fields_ = [("p", ctypes.c_void_p * k), ("s", ctypes.c_double * m),
                    ("d", ctypes.c_int64 * (k + 1))]

    layout = group.layout()

    used = [op.load or op.store is not None for op in group.operands]
    nvals = len(group.runtime_values)
    # a reduction: a block per row (striding over rows), as the reduce kernels launch
    reduces = bool(group.reductions)
    block = reduction_threads(layout[0]) if reduces else _BLOCK

    def function(index):
        fn = _FUNCTIONS.get((key, index))
        if fn is None:
            with _LOCK:
                fn = _FUNCTIONS.get((key, index))
                if fn is None:
                    fn = _FUNCTIONS[(key, index)] = _function(
                        cu, compile_ptx(src, _arch(cu, index)), index)
        return fn

    def run(storages, offsets, values, n):
        if n == 0:
            return
        index = next(s.device for s, u in zip(storages, used) if u)
        fn = function(index)
        args = Args()
        for i, (s, off, u) in enumerate(zip(storages, offsets, used)):
            args.p[i] = s.data_ptr + off if u else None
        for i, v in enumerate(values[:nvals]):
            args.s[i] = v
        for i, v in enumerate(layout):
            args.d[i] = v
        count = ctypes.c_int64(n)
        params = (ctypes.c_void_p * 2)(ctypes.addressof(args), ctypes.addressof(count))
        grid = min(n // layout[0], _RED_GRID) if reduces else \
            min((n + _BLOCK - 1) // _BLOCK, _MAX_GRID)
        _check(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0,
                                 ctypes.c_void_p(current_stream(index)), params, None),
               "cuLaunchKernel")

    return run
