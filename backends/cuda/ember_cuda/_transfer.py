"""Copies between device memory and page-locked host memory on a second stream, for
activation offloading (``ember.utils.offload``, vDNN): the copies run while the compute
stream runs the next layers.

Each device gets one *transfer stream* the first time it is used. ``copy_out`` makes it
wait for what the current stream has queued (an event), queues the device-to-host copy
into a pinned buffer there, and marks the block as used by the transfer stream
(``record_stream``): once freed, the caching allocator reuses it only after the copy.
``copy_in`` queues the copy back the same way (the block it writes may have been freed by
tensors whose kernels are still queued on the current stream) and returns an event;
``ready`` makes the current stream wait for it just before the tensor is used, so the
host never waits and a prefetch overlaps the kernels queued between it and its use.

Pinned buffers come from a small pool keyed by size (``cudaHostAlloc`` is slow): a buffer
goes back to the pool when its ``HostCopy`` is dropped, and is reused only once the last
copy that read or wrote it has completed.
"""
from __future__ import annotations

import threading

from . import _api
from ._ext import require

__all__ = ["HostCopy", "copy_out", "copy_in", "ready", "transfer_stream"]

_streams: dict = {}
_pool: dict = {}            # nbytes -> [(PinnedBuffer, Event or None)]
_lock = threading.Lock()
#: pinned bytes the pool may keep unused (more is freed at once)
POOL_LIMIT = 1 << 30


def transfer_stream(device: int) -> "_api.Stream":
    s = _streams.get(device)
    if s is None:
        s = _streams[device] = _api.Stream(device)
    return s


def _after_current(device: int, stream: "_api.Stream") -> None:
    """``stream`` waits for what the device's current stream has queued so far."""
    e = _api.Event()
    e.record(_api.current_stream(device))
    stream.wait_event(e)


def _take(nbytes: int):
    with _lock:
        free = _pool.get(nbytes)
        while free:
            buf, last = free[-1]
            if last is not None and not last.query():
                break
            free.pop()
            return buf
    return _api.pinned_buffer(nbytes)


def _give(nbytes: int, buf, last) -> None:
    with _lock:
        kept = sum(n * len(v) for n, v in _pool.items())
        if kept + nbytes <= POOL_LIMIT:
            _pool.setdefault(nbytes, []).insert(0, (buf, last))


class HostCopy:
    """Bytes of device memory on their way to (or in) pinned host memory."""
    __slots__ = ("host", "event", "nbytes", "__weakref__")

    def __init__(self, host, event, nbytes):
        self.host = host
        self.event = event      # the last copy that used ``host``
        self.nbytes = nbytes

    def done(self) -> bool:
        return self.event.query()

    def wait(self) -> None:
        self.event.synchronize()

    def __del__(self):
        try:
            _give(self.nbytes, self.host, self.event)
        except Exception:       # (interpreter shutdown)
            pass


def copy_out(storage, byte_offset: int, nbytes: int) -> HostCopy:
    """Start copying ``nbytes`` of ``storage`` (from ``byte_offset``) to pinned memory."""
    dev = storage.device
    ext = require(dev)
    s = transfer_stream(dev)
    _after_current(dev, s)
    host = _take(nbytes)
    ext.copy_async(storage, byte_offset, host, nbytes, True, s.handle)
    storage.record_stream(s.handle)
    return HostCopy(host, s.record_event(), nbytes)


def copy_in(copy: HostCopy, storage, byte_offset: int = 0):
    """Start copying ``copy``'s bytes into ``storage``; returns the copy's event, which
    ``ready`` makes the current stream wait for."""
    dev = storage.device
    ext = require(dev)
    s = transfer_stream(dev)
    _after_current(dev, s)      # (the copy out is earlier on the same stream)
    ext.copy_async(storage, byte_offset, copy.host, copy.nbytes, False, s.handle)
    storage.record_stream(s.handle)
    copy.event = s.record_event()   # the host buffer is reused only after this
    return copy.event


def ready(event, storage) -> None:
    """Kernels queued on ``storage``'s device from now on wait for ``event``."""
    _api.current_stream(storage.device).wait_event(event)
