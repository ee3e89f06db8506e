"""The CUDA backend as an ember plugin: the caching allocator, copies and CUDA kernels.

This module imports only ``ember.dispatcher`` (the dependency rule) and the compiled
extension ``ember_cuda._C``. Without the extension (no nvcc at build time) or without a
GPU the plugin still loads: ``device_count()`` is 0 and using ``cuda`` raises a
RuntimeError saying why.
"""
from __future__ import annotations


from ember.dispatcher import Backend, hookimpl
from ember.dispatcher.codegen.cxx import check_extension
from ember.dispatcher.schema import OPS, PRIMITIVES

from . import __version__
from . import _api, fusion
from ._find import library_candidates
from ._ext import _C, require, unavailable_reason


def _unavailable_kernel(name):
    def kernel(*args, **kwargs):
        require(0)  # raises with the reason
        raise RuntimeError(f"{name}(): the cuda kernel is missing from ember_cuda._C")
    kernel.__name__ = name
    return kernel


def cublas_candidates() -> list[str]:
    """Where libcublas may be: the nvidia-cublas wheel first, then the system's."""
    return library_candidates("libcublas", skip=("libcublasLt",))


def load_cublas() -> str:
    """dlopen cuBLAS (once); returns its path, or "" when none was found (bmm then uses a
    slower built-in kernel)."""
    if _C is None:
        return ""
    if _C.cublas_loaded():
        return _C.cublas_path()
    for p in cublas_candidates():
        if _C.load_cublas(p):
            return p
    return ""


class CUDABackend(Backend):
    name = "cuda"
    version = __version__
    device_type = "cuda"
    #: the CUDA driver does not survive fork (PyTorch: "Cannot re-initialize CUDA in forked
    #: subprocess"); it is initialised once cudaGetDeviceCount has found a device
    fork_safe = False
    #: the user-facing API (Stream, Event, memory_stats...): what ``ember.cuda`` forwards to
    device_api = _api
    #: the kernels' device time for ember.profiler (timing events around each op)
    device_timer = _api.KernelTimer()

    def __init__(self):
        if _C is None:
            # every primitive is present (so the plugin validates and loads) and raises
            # the "not built" reason when called
            self.kernels = {n: _unavailable_kernel(n) for n in sorted(PRIMITIVES)}
        else:
            check_extension("ember-cuda", _C.KERNELS, _C.OPS_TABLE_HASH)
            self.kernels = {n: getattr(_C, n) for n in _C.KERNELS if n in OPS}
            if _C.device_count() > 0:
                load_cublas()

    #: fused groups may hold broadcast and outer-strided operands (ember.dispatcher.fusion)
    fuses_broadcasts = True
    #: and end in sums or means over rows (summed as the reduce kernels sum)
    fuses_reductions = True

    def compile_elementwise(self, group):
        """ember.compile's fused groups as CUDA C++ built by NVRTC (``ember_cuda.fusion``)."""
        if _C is None:
            return None
        return fusion.compile_elementwise(group, _C.current_stream)

    def device_count(self) -> int:
        try:
            return 0 if _C is None else int(_C.device_count())
        except Exception:  # must never raise
            return 0

    def is_initialized(self) -> bool:
        """Whether the CUDA driver started in this process (the count is cached by its
        first call, made when the plugin loads)."""
        return self.device_count() > 0

    def device_name(self, index: int) -> str:
        return f"cuda:{index} ({require(index).device_name(index)})"

    def allocator(self, index: int):
        return require(index).allocator(index)

    def allocate(self, nbytes: int, index: int):
        return self.allocator(index)(nbytes)

    def copy_from_host(self, storage, byte_offset: int, host_buffer) -> None:
        require(storage.device).copy_from_host(storage, byte_offset, host_buffer)

    def copy_to_host(self, storage, byte_offset: int, nbytes: int):
        return memoryview(require(storage.device).copy_to_host(storage, byte_offset, nbytes))

    def synchronize(self, index: int | None = None) -> None:
        if _C is None or _C.device_count() == 0:
            return
        if index is None:
            for i in range(_C.device_count()):
                _C.synchronize(i)
        else:
            require(index).synchronize(index)

    def status(self) -> str:
        """"available", or why not (shown by ``python -m ember backends``)."""
        return unavailable_reason() or "available"


@hookimpl
def ember_backend():
    return CUDABackend()
