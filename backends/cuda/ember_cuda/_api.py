"""The user-facing CUDA API (``ember.cuda`` re-exports it): availability, streams, events,
memory statistics, pinned memory.

Every op launches on the *current stream* of its device and returns at once; the host
waits only when it reads a result (``.item()``, ``.numpy()``, ``.cpu()``, ``print``) or
calls a ``synchronize``.

>>> import ember_cuda
>>> ember_cuda.is_available()      # doctest: +SKIP
True
>>> s = ember_cuda.Stream()        # doctest: +SKIP
>>> with ember_cuda.stream(s):     # doctest: +SKIP
...     y = x @ w                  # queued on s
"""
from __future__ import annotations

import contextlib

from ember.dispatcher.core import host_out_of_memory

from ._ext import _C, require, unavailable_reason

__all__ = ["is_available", "device_count", "current_device", "synchronize", "Stream",
           "current_stream", "default_stream", "set_stream", "stream", "Event",
           "record_stream", "memory_stats", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "memory_summary", "memory_snapshot",
           "empty_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
           "mem_get_info", "pinned_buffer", "host_sync_count", "get_device_name",
           "is_built", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction", "offload_copy_out", "offload_copy_in",
           "offload_ready"]


def is_built() -> bool:
    """Whether the CUDA extension was compiled (nvcc was found at install time)."""
    return _C is not None


def is_available() -> bool:
    """Whether at least one CUDA device can be used (never raises)."""
    return unavailable_reason() == ""


def device_count() -> int:
    """The number of usable CUDA devices: 0 without a GPU, driver or extension."""
    try:
        return 0 if _C is None else int(_C.device_count())
    except Exception:
        return 0


def current_device() -> int:
    return 0


def _index(device) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    s = str(device)
    if s.startswith("cuda"):
        return int(s.partition(":")[2] or 0)
    idx = getattr(device, "index", None)
    return 0 if idx is None else int(idx)


def get_device_name(device=None) -> str:
    i = _index(device)
    return require(i).device_name(i)


def synchronize(device=None) -> None:
    """Wait until all work queued on the device has finished."""
    i = _index(device)
    require(i).synchronize(i)


def host_sync_count() -> int:
    """How many times the host has waited for a device so far (a step that only queues
    work leaves it unchanged)."""
    return 0 if _C is None else int(_C.host_sync_count())


# ---- streams ------------------------------------------------------------------------------

class Stream:
    """A CUDA stream: an in-order queue of work on one device, as ``torch.cuda.Stream``.

    Streams are never destroyed (like PyTorch's stream pool), so a handle is never reused
    while the caching allocator keeps blocks for it.

    >>> s = ember_cuda.Stream()                     # doctest: +SKIP
    >>> with ember_cuda.stream(s): y = x * 2        # doctest: +SKIP
    >>> s.synchronize()                             # doctest: +SKIP
    """

    def __init__(self, device=None, priority: int = 0, _handle: int | None = None):
        self.device_index = _index(device)
        C = require(self.device_index)
        self.handle = C.stream_create(self.device_index, priority) if _handle is None else _handle

    @property
    def device(self) -> str:
        return f"cuda:{self.device_index}"

    def query(self) -> bool:
        """True when all work queued on the stream has finished (does not block)."""
        return _C.stream_query(self.handle)

    def synchronize(self) -> None:
        _C.stream_synchronize(self.handle)

    def wait_event(self, event: "Event") -> None:
        """Make future work on this stream wait for ``event``."""
        _C.stream_wait_event(self.handle, event._ensure(self.device_index))

    def wait_stream(self, other: "Stream") -> None:
        """Make future work on this stream wait for the work queued on ``other`` so far."""
        e = Event()
        e.record(other)
        self.wait_event(e)

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.handle == other.handle
                and self.device_index == other.device_index)

    def __hash__(self):
        return hash((self.device_index, self.handle))

    def __repr__(self):
        return f"<ember_cuda.Stream device=cuda:{self.device_index} handle={self.handle:#x}>"


def default_stream(device=None) -> Stream:
    return Stream(device, _handle=0)


def current_stream(device=None) -> Stream:
    """The stream ops on ``device`` are queued on by this thread."""
    i = _index(device)
    return Stream(i, _handle=require(i).current_stream(i))


def set_stream(s: Stream) -> None:
    require(s.device_index).set_stream(s.device_index, s.handle)


@contextlib.contextmanager
def stream(s: Stream | None):
    """Queue the ops of the ``with`` block on ``s`` (``None``: no change)."""
    if s is None:
        yield
        return
    C = require(s.device_index)
    prev = C.current_stream(s.device_index)
    C.set_stream(s.device_index, s.handle)
    try:
        yield s
    finally:
        C.set_stream(s.device_index, prev)


class Event:
    """A CUDA event: a marker in a stream, as ``torch.cuda.Event``.

    >>> start, end = ember_cuda.Event(enable_timing=True), ember_cuda.Event(enable_timing=True)
    >>> start.record(); run(); end.record()                          # doctest: +SKIP
    >>> end.synchronize(); start.elapsed_time(end)                   # doctest: +SKIP
    """

    def __init__(self, enable_timing: bool = False):
        self.enable_timing = enable_timing
        self.handle = 0
        self.device_index = None

    def _ensure(self, device_index: int) -> int:
        if not self.handle:
            self.device_index = device_index
            self.handle = require(device_index).event_create(device_index, self.enable_timing)
        return self.handle

    def record(self, stream: Stream | None = None) -> None:
        stream = stream or current_stream()
        _C.event_record(self._ensure(stream.device_index), stream.handle)

    def query(self) -> bool:
        return True if not self.handle else _C.event_query(self.handle)

    def synchronize(self) -> None:
        if self.handle:
            _C.event_synchronize(self.handle)

    def wait(self, stream: Stream | None = None) -> None:
        (stream or current_stream()).wait_event(self)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds between this event and ``end`` (both recorded, timing enabled)."""
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("elapsed_time(): both events need Event(enable_timing=True)")
        if not (self.handle and end.handle):
            raise RuntimeError("elapsed_time(): both events must be recorded first")
        return _C.event_elapsed_time(self.handle, end.handle)

    def __del__(self):
        if self.handle and _C is not None:
            try:
                _C.event_destroy(self.handle)
            except Exception:
                pass


def record_stream(tensor, s: Stream) -> None:
    """Mark ``tensor``'s memory as used by stream ``s`` too (``Tensor.record_stream``): when
    the tensor is freed, its memory is reused only after the work queued on ``s`` by then."""
    tensor._storage.record_stream(s.handle)


# ---- memory --------------------------------------------------------------------------------

def memory_stats(device=None):
    """``torch.cuda.memory_stats()``: the caching allocator's statistics (the dispatcher's
    key schema; ``num_device_alloc`` counts cudaMalloc calls)."""
    i = _index(device)
    return require(i).memory_stats(i)


def memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def memory_summary(device=None, abbreviated: bool = False) -> str:
    i = _index(device)
    return require(i).memory_summary(i, abbreviated)


def memory_snapshot(device=None) -> list:
    i = _index(device)
    return require(i).memory_snapshot(i)


def empty_cache(device=None) -> None:
    """Return every fully free cached segment to the device (no-op without a GPU)."""
    if is_available():
        i = _index(device)
        _C.empty_cache(i)


def reset_peak_memory_stats(device=None) -> None:
    i = _index(device)
    require(i).reset_peak_memory_stats(i)


def reset_accumulated_memory_stats(device=None) -> None:
    i = _index(device)
    require(i).reset_accumulated_memory_stats(i)


def mem_get_info(device=None) -> tuple:
    i = _index(device)
    return require(i).mem_get_info(i)


def pinned_buffer(nbytes: int):
    """Page-locked host memory (a buffer-protocol object): host->device copies from it are
    queued without staging (``Tensor.pin_memory()`` wraps one). ``cudaHostAlloc`` refusing
    for lack of memory raises ``ember.OutOfMemoryError``."""
    ext = require(0)
    try:
        return ext.PinnedBuffer(int(nbytes))
    except (MemoryError, RuntimeError) as e:
        if not isinstance(e, MemoryError) and "cudaErrorMemoryAllocation" not in str(e):
            raise
        raise host_out_of_memory("page-locked (pinned) host memory (cudaHostAlloc)",
                                 int(nbytes), e) from None


def _no_history(what):
    raise NotImplementedError(
        f"ember.cuda: {what} is not implemented yet: the cuda backend's caching allocator is "
        f"C++ and keeps no event trace (the opencl backend's does)")


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Let this process reserve at most ``fraction`` of the device's total memory
    (``torch.cuda.set_per_process_memory_fraction``): a request beyond it frees the cache,
    then raises ``ember.OutOfMemoryError``, as a full device does."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    i = _index(device)
    total = require(i).mem_get_info(i)[1]
    _C.set_memory_limit(i, -1 if fraction == 1.0 else int(total * fraction), fraction)
    _fractions[i] = fraction


def get_per_process_memory_fraction(device=None) -> float:
    return _fractions.get(_index(device), 1.0)


_fractions: dict = {}


def _record_memory_history(enabled=True, max_entries=1 << 62, context=None, device=None):
    _no_history("memory._record_memory_history")


def _snapshot(device=None) -> dict:
    _no_history("memory._snapshot")


# ---- activation offloading (ember.utils.offload) --------------------------------------------

def offload_copy_out(storage, byte_offset: int, nbytes: int):
    """Start an asynchronous copy of device memory to pinned host memory on the device's
    transfer stream (``ember.utils.offload``); returns a handle with ``done()`` and
    ``wait()``."""
    from ._transfer import copy_out
    return copy_out(storage, byte_offset, nbytes)


def offload_copy_in(handle, storage, byte_offset: int = 0):
    """Start copying an offloaded handle's bytes back into ``storage``; returns an event
    for ``offload_ready``."""
    from ._transfer import copy_in
    return copy_in(handle, storage, byte_offset)


def offload_ready(event, storage) -> None:
    """Kernels queued on ``storage``'s device from now on wait for ``event`` (on the device:
    the host does not wait)."""
    from ._transfer import ready
    ready(event, storage)


class KernelTimer:
    """``ember.profiler``'s device time (the backend's ``device_timer``): each mark records
    a timing event on the current stream, so the device time between two marks is the time
    the stream took over the kernels queued between them (``cudaEventElapsedTime``).
    Without a device it records nothing and reports 0."""

    def __init__(self):
        self._events: list | None = None

    def start(self) -> None:
        if self._events is None and device_count() > 0:
            self._events = []

    def mark(self) -> int:
        if self._events is None:
            return 0
        ev = Event(enable_timing=True)
        ev.record()
        self._events.append(ev)
        return len(self._events) - 1

    def elapsed_ns(self, begin: int, end: int) -> int:
        if not self._events or end <= begin:
            return 0
        first, last = self._events[begin], self._events[end]
        last.synchronize()
        return int(first.elapsed_time(last) * 1e6)

    def stop(self) -> None:
        self._events = None
