"""Device memory: raw ``cl.Buffer`` segments under the dispatcher's caching allocator.

The allocator policy (pools, splitting, statistics, out-of-memory handling) lives once in
``ember.dispatcher.allocator``; a backend only says how to get and give back raw memory.
Segments are ``cl.Buffer`` objects and blocks are byte offsets into them: kernels take
``(buffer, element offset)`` pairs, so no sub-buffers (and none of their alignment rules)
are needed. One in-order queue per device means a freed block can be reused at once.

Where the device's memory is host memory (a CPU device such as PoCL), buffers are created
with ``CL_MEM_ALLOC_HOST_PTR``: the driver then allocates them at once and reports a
failure (``OUT_OF_HOST_MEMORY``), which the allocator turns into ``ember.OutOfMemoryError``.
Without the flag PoCL allocates a buffer lazily, on its first use by a command, and when
the host has no memory left then (an address-space limit, an overcommitted container) a
kernel writes through a null pointer: the process dies with a segfault.
"""
from __future__ import annotations

import pyopencl as cl

from ember.dispatcher.allocator import CachingAllocator, DeviceMemory

__all__ = ["OpenCLMemory", "make_allocator", "buffer_flags", "is_out_of_memory"]

#: the OpenCL status codes that mean "no memory" (device or host)
_OOM_CODES = frozenset(getattr(cl.status_code, n) for n in (
    "MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY")
    if hasattr(cl.status_code, n))


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` (a pyopencl error or a ``MemoryError``) says memory ran out."""
    if isinstance(err, MemoryError):
        return True
    if isinstance(err, cl.MemoryError):
        return True
    if isinstance(err, cl.Error):
        try:
            return err.code in _OOM_CODES
        except Exception:   # an error without a status code
            return False
    return False


def buffer_flags(cl_device) -> int:
    """``cl.mem_flags`` for ember's buffers on ``cl_device``: read-write, allocated at
    creation on devices whose memory is the host's (see the module docstring)."""
    flags = cl.mem_flags.READ_WRITE
    try:
        unified = bool(cl_device.type & cl.device_type.CPU or cl_device.host_unified_memory)
    except Exception:   # CL_DEVICE_HOST_UNIFIED_MEMORY is deprecated; a driver may refuse
        unified = bool(cl_device.type & cl.device_type.CPU)
    if unified:
        flags |= cl.mem_flags.ALLOC_HOST_PTR
    return flags


class OpenCLMemory(DeviceMemory):
    """Raw memory of one OpenCL device.

    OpenCL has no "free memory" query, so the device's global memory size minus what this
    process holds stands in for it; requests above ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` or
    beyond the global memory size count as out of memory, and so does a driver's refusal
    (``cl.MemoryError``, ``OUT_OF_HOST_MEMORY``, a Python ``MemoryError``).
    """

    def __init__(self, device, ctx):
        self.name = f"opencl:{device.index}"
        self.device = device
        self._ctx = ctx
        self._total = int(device.cl_device.global_mem_size)
        self._max_alloc = int(device.cl_device.max_mem_alloc_size)
        self._flags = buffer_flags(device.cl_device)
        self._held = 0
        self.last_error = None      # why the driver refused the last request (messages)

    def alloc(self, nbytes: int):
        if nbytes > self._max_alloc or self._held + nbytes > self._total:
            return None
        try:
            buf = cl.Buffer(self._ctx, self._flags, nbytes)
        except (cl.Error, MemoryError) as e:
            if is_out_of_memory(e) or isinstance(e, cl.RuntimeError):
                self.last_error = f"The OpenCL driver refused the buffer ({e})."
                return None
            raise
        self.last_error = None
        self._held += nbytes
        return buf

    def free(self, handle) -> None:
        self._held -= handle.size
        handle.release()

    def mem_get_info(self) -> tuple[int, int]:
        return self._total - self._held, self._total

    # streams: the device's queues (the transfer queue of offloading, ``_transfer.py``); a
    # block a transfer reads is held until a marker enqueued after the transfer completes
    def record_event(self, stream):
        return cl.enqueue_marker(stream)

    def event_done(self, event) -> bool:
        return event.command_execution_status == cl.command_execution_status.COMPLETE

    def event_synchronize(self, event) -> None:
        event.wait()


def make_allocator(device, ctx) -> CachingAllocator:
    return CachingAllocator(OpenCLMemory(device, ctx))
