"""Device memory: raw ``cl.Buffer`` segments under the dispatcher's caching allocator.

The allocator policy (pools, splitting, statistics, out-of-memory handling) lives once in
``ember.dispatcher.allocator``; a backend only says how to get and give back raw memory.
Segments are ``cl.Buffer`` objects and blocks are byte offsets into them: kernels take
``(buffer, element offset)`` pairs, so no sub-buffers (and none of their alignment rules)
are needed. One in-order queue per device means a freed block can be reused at once.
"""
from __future__ import annotations

import pyopencl as cl

from ember.dispatcher.allocator import CachingAllocator, DeviceMemory

__all__ = ["OpenCLMemory", "make_allocator"]


class OpenCLMemory(DeviceMemory):
    """Raw memory of one OpenCL device.

    OpenCL has no "free memory" query, so the device's global memory size minus what this
    process holds stands in for it; requests above ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` or
    beyond the global memory size count as out of memory.
    """

    def __init__(self, device, ctx):
        self.name = f"opencl:{device.index}"
        self.device = device
        self._ctx = ctx
        self._total = int(device.cl_device.global_mem_size)
        self._max_alloc = int(device.cl_device.max_mem_alloc_size)
        self._held = 0

    def alloc(self, nbytes: int):
        if nbytes > self._max_alloc or self._held + nbytes > self._total:
            return None
        try:
            buf = cl.Buffer(self._ctx, cl.mem_flags.READ_WRITE, nbytes)
        except (cl.MemoryError, cl.RuntimeError):
            return None
        self._held += nbytes
        return buf

    def free(self, handle) -> None:
        self._held -= handle.size
        handle.release()

    def mem_get_info(self) -> tuple[int, int]:
        return self._total - self._held, self._total


def make_allocator(device, ctx) -> CachingAllocator:
    return CachingAllocator(OpenCLMemory(device, ctx))
