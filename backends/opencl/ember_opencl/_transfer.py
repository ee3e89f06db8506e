"""Copies between device memory and host memory on a second queue, for activation
offloading (``ember.utils.offload``): the copies run while the device's queue computes.

A device gets one *transfer queue* (a second in-order ``cl.CommandQueue`` on its
context) the first time it is used. ``copy_out`` enqueues a device-to-host copy there
after a marker of the compute queue (so it reads what the kernels before it wrote) and
marks the block as used by the transfer queue (``record_stream``): once freed, the
allocator reuses it only after the copy has completed. ``copy_in`` enqueues the
host-to-device copy there, after a marker of the compute queue (the block it writes may
have been freed by tensors whose last kernels are still queued); ``ready`` enqueues a
barrier on the compute queue that waits for it just before the tensor is used, so the
kernels enqueued afterwards see the data while the host thread never waits, and the
kernels enqueued between a prefetch and its use run meanwhile. Host memory is
a NumPy array (on a CPU device such as PoCL, device memory is host memory anyway).
"""
from __future__ import annotations

import numpy as np

from . import _runtime as rt

__all__ = ["HostCopy", "copy_out", "copy_in", "ready", "transfer_queue"]


def transfer_queue(dev):
    q = getattr(dev, "_transfer_queue", None)
    if q is None:
        q = dev._transfer_queue = rt.cl.CommandQueue(dev.ctx)
    return q


class HostCopy:
    """Bytes of device memory on their way to (or in) host memory."""
    __slots__ = ("host", "event", "nbytes")

    def __init__(self, host, event, nbytes):
        self.host = host
        self.event = event
        self.nbytes = nbytes

    def done(self) -> bool:
        return self.event.command_execution_status == rt.cl.command_execution_status.COMPLETE

    def wait(self) -> None:
        self.event.wait()


def _device(storage):
    return storage.allocator.memory.device


def copy_out(storage, byte_offset: int, nbytes: int) -> HostCopy:
    """Start copying ``nbytes`` of ``storage`` (from ``byte_offset``) to host memory."""
    dev = _device(storage)
    rt.not_repeatable("a copy to the host")
    q = transfer_queue(dev)
    host = np.empty(nbytes, np.uint8)
    after = rt.cl.enqueue_marker(dev.queue)
    ev = rt.cl.enqueue_copy(q, host, storage.handle, src_offset=storage.offset + byte_offset,
                            wait_for=[after], is_blocking=False)
    storage.record_stream(q)
    return HostCopy(host, ev, nbytes)


def copy_in(copy: HostCopy, storage, byte_offset: int = 0):
    """Start copying ``copy``'s bytes into ``storage``; returns the copy's event, which
    ``ready`` makes the compute queue wait for (when the tensor is about to be used: a
    prefetch enqueued earlier overlaps the kernels queued in between)."""
    dev = _device(storage)
    q = transfer_queue(dev)
    # the block may have been freed by tensors whose last kernels are still queued on the
    # compute queue: the write waits for what is queued there now (not for what comes
    # after: the next layers' backward overlaps it)
    after = rt.cl.enqueue_marker(dev.queue)
    ev = rt.cl.enqueue_copy(q, storage.handle, copy.host,
                            dst_offset=storage.offset + byte_offset,
                            wait_for=[copy.event, after], is_blocking=False)
    storage.record_stream(q)
    dev.keep_alive(ev, copy.host)
    return ev


def ready(event, storage) -> None:
    """Kernels enqueued on ``storage``'s device from now on run after ``event``."""
    rt.not_repeatable("a wait for a copy from the host")
    rt.cl.enqueue_barrier(_device(storage).queue, wait_for=[event])
