"""The OpenCL backend as an ember plugin: devices, memory, transfers and kernels.

This module imports only ``ember.dispatcher`` (the dependency rule) and pyopencl, and
never fails to import for lack of an OpenCL platform: ``device_count()`` is then 0 and
using ``opencl`` raises an error that says why.
"""
from __future__ import annotations

import numpy as np

from ember.dispatcher import Backend, hookimpl
from ember.dispatcher.core import host_out_of_memory

from . import __version__
from . import _runtime as rt
from . import fusion
from ._memory import is_out_of_memory


class OpenCLBackend(Backend):
    name = "opencl"
    version = __version__
    device_type = "opencl"
    #: an OpenCL driver does not survive fork: once it listed its devices (PoCL starts its
    #: worker threads then), a forked child's first enqueue waits forever
    fork_safe = False
    #: the kernels' device time for ember.profiler (the queues record timestamps)
    device_timer = rt.KernelTimer()
    #: fused groups may broadcast (a bias add): two-level layouts, a 2-D launch
    fuses_broadcasts = True
    #: fused groups may hold sums and means over rows, summed as the reduce kernels sum
    fuses_reductions = True

    def __init__(self):
        import ember_opencl
        self.device_api = ember_opencl          # ember.opencl.* forwards here
        from .ops import KERNELS
        if rt.LAUNCH_BLOCKING:
            KERNELS = {n: _blocking(k) for n, k in KERNELS.items()}
        self.kernels = KERNELS

    def is_initialized(self) -> bool:
        """Whether the driver started in this process: devices were discovered (listing a
        platform's devices is what starts it; listing platforms alone does not)."""
        return bool(rt._devices)

    def device_count(self) -> int:
        return rt.device_count()

    def compile_elementwise(self, group):
        """ember.compile's fused groups as OpenCL C kernels (``ember_opencl.fusion``)."""
        return fusion.compile_elementwise(group)

    def record_launches(self, fn):
        """Replay plans' launches, recorded once and enqueued again as they were
        (``ember_opencl._runtime.record_launches``)."""
        return rt.record_launches(fn)

    def device_name(self, index: int) -> str:
        d = rt.device(index)
        return f"{d.name} ({d.platform.name.strip()})"

    def allocate(self, nbytes: int, index: int):
        return rt.device(index).allocator_().storage(nbytes)

    def allocator(self, index: int):
        return rt.device(index).allocator_().storage

    def copy_from_host(self, storage, byte_offset: int, host_buffer) -> None:
        data = np.frombuffer(host_buffer, np.uint8)
        if not data.size:
            return
        dev = _device_of_storage(storage)
        # a private copy, so the caller may reuse its buffer at once; the upload is
        # asynchronous and the copy stays alive until it completes
        data = data.copy()
        try:
            ev = rt.cl.enqueue_copy(dev.queue, storage.handle, data,
                                    dst_offset=storage.offset + byte_offset, is_blocking=False)
        except rt.cl.Error as e:
            if not is_out_of_memory(e):
                raise
            raise _copy_out_of_memory(dev, "from", data.size, e) from None
        dev.keep_alive(ev, data)

    def copy_to_host(self, storage, byte_offset: int, nbytes: int):
        out = np.empty(nbytes, np.uint8)
        if not nbytes:
            return out
        dev = _device_of_storage(storage)
        dev.host_waits += 1
        rt.not_repeatable("a read back to the host")
        try:
            rt.cl.enqueue_copy(dev.queue, out, storage.handle,
                               src_offset=storage.offset + byte_offset, is_blocking=True)
        except rt.cl.Error as e:
            if not is_out_of_memory(e):
                raise
            raise _copy_out_of_memory(dev, "to", nbytes, e) from None
        dev.check_errors()
        return out

    def synchronize(self, index: int | None = None) -> None:
        if index is None:
            for d in rt.devices():
                d.synchronize()
        else:
            rt.device(index).synchronize()


def _device_of_storage(storage) -> "rt.Device":
    return storage.allocator.memory.device


def _copy_out_of_memory(dev: "rt.Device", direction: str, nbytes: int, err: Exception):
    """``ember.OutOfMemoryError`` for a copy the driver could not do for lack of memory:
    its own host memory (``OUT_OF_HOST_MEMORY``: staging, bookkeeping), or device memory
    it wanted at this first use of a buffer (``MEM_OBJECT_ALLOCATION_FAILURE``,
    ``OUT_OF_RESOURCES``). Raised from ``None``: the pyopencl error is in the message."""
    what = f"copying {nbytes} bytes {direction} the host"
    if getattr(err, "code", None) == rt.cl.status_code.OUT_OF_HOST_MEMORY:
        return host_out_of_memory(f"the OpenCL driver {what} (opencl:{dev.index})", None, err)
    return rt._out_of_memory(dev, what, err)


def _blocking(kernel):
    """EMBER_OPENCL_LAUNCH_BLOCKING=1: wait for each op and raise its errors at once."""
    def run(out, *args, **kwargs):
        kernel(out, *args, **kwargs)
        dev = out.device.index
        rt.device(dev).synchronize()
    run.__name__ = getattr(kernel, "__name__", "kernel")
    run.__wrapped__ = kernel
    return run


@hookimpl
def ember_backend():
    return OpenCLBackend()
