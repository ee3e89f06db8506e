"""The caching allocator policy, written once for every backend that owns device memory.

This is PyTorch's CUDA caching allocator (``c10/cuda/CUDACachingAllocator.cpp``) in
pure Python and device-agnostic: a backend supplies raw memory through a
:class:`DeviceMemory` and gets caching, stream-aware reuse, statistics and
out-of-memory handling from :class:`CachingAllocator`. The CUDA backend mirrors the
same policy in C++ and reports the same statistics.

The policy:

- Requests are rounded up to a multiple of 512 B. Rounded sizes up to 1 MiB come from
  the *small* pool, larger ones from the *large* pool.
- Device memory is requested in *segments*, only when the cache has no fitting block
  (nothing is reserved up front): 2 MiB for small requests, 20 MiB for requests
  between 1 and 10 MiB, larger requests rounded up to a multiple of 2 MiB.
- The smallest free block that fits is taken (best fit; ties go to the lowest address)
  and split when the remainder is worth keeping (small pool: >= 512 B, large pool:
  > 1 MiB). A freed block merges with its free neighbours in the segment.
- Free blocks are kept per (pool, stream): a block is only reused by the stream it was
  allocated on. ``record_stream(block, s)`` marks a block as used by another stream
  ``s``; freeing it then records an event on ``s`` and the block returns to its pool
  only once that event has completed (checked at the start of every ``malloc``).
- When the device refuses memory, pending events are synchronised, fully free
  segments are returned to the device, and the allocation is tried once more; if that
  fails too, :class:`OutOfMemoryError` says what was asked for and where memory went.

A backend uses it like this::

    class MyMemory(DeviceMemory):
        name = "mydevice:0"
        def alloc(self, nbytes): return driver.malloc(nbytes)   # None when out of memory
        def free(self, handle): driver.free(handle)
        def mem_get_info(self): return driver.mem_info()         # (free, total)

    allocator = CachingAllocator(MyMemory())
    storage = allocator.storage(4096)   # Backend.allocate returns this
    storage.handle, storage.offset      # the segment and the block's byte offset in it
"""
from __future__ import annotations

import operator
import threading
import time
from bisect import bisect_left
from collections import OrderedDict, deque

__all__ = ["OutOfMemoryError", "DeviceMemory", "Block", "CachingAllocator", "DeviceStorage",
           "round_size", "segment_size", "format_size"]

_MIN_BLOCK = 512                # every size is a multiple of this
_SMALL_SIZE = 1 << 20           # largest request served by the small pool
_SMALL_BUFFER = 2 << 20         # segment size for small requests
_LARGE_BUFFER = 20 << 20        # segment size for requests in (1 MiB, 10 MiB)
_MIN_LARGE_ALLOC = 10 << 20     # from here on, a segment is sized to the request
_ROUND_LARGE = 2 << 20          # ... rounded up to a multiple of this
_ADDR_BITS = 64                 # free-list key: (size << 64) | address


class OutOfMemoryError(RuntimeError, MemoryError):
    """The device (or the host) has no memory left for a request, even after the cache
    was freed.

    A ``RuntimeError`` like PyTorch's ``torch.OutOfMemoryError``, and a ``MemoryError`` too,
    so that code catching Python's own out-of-memory error keeps working for tensors.
    Attributes: ``nbytes`` (bytes asked for), ``alloc_size`` (the segment size the
    allocator tried to get from the device), ``device`` (the device's name).
    """


def round_size(nbytes: int) -> int:
    """The size a request of ``nbytes`` occupies: a multiple of 512 B, at least 512 B.

    >>> from ember.dispatcher.allocator import round_size
    >>> round_size(1), round_size(512), round_size(513)
    (512, 512, 1024)
    """
    return _MIN_BLOCK if nbytes < _MIN_BLOCK else (nbytes + _MIN_BLOCK - 1) & -_MIN_BLOCK


def segment_size(size: int) -> int:
    """The size of the segment requested from the device for a rounded ``size``.

    >>> from ember.dispatcher.allocator import segment_size
    >>> [segment_size(s) >> 20 for s in (1024, 5 << 20, 11 << 20)]
    [2, 20, 12]
    """
    if size <= _SMALL_SIZE:
        return _SMALL_BUFFER
    if size < _MIN_LARGE_ALLOC:
        return _LARGE_BUFFER
    return (size + _ROUND_LARGE - 1) & -_ROUND_LARGE


def format_size(nbytes: int) -> str:
    """PyTorch's size format in error messages: ``"512 bytes"``, ``"2.00 GiB"``."""
    if nbytes <= 1024:
        return f"{nbytes} bytes"
    if nbytes <= 1 << 20:
        return f"{nbytes / 1024:.2f} KiB"
    if nbytes <= 1 << 30:
        return f"{nbytes / (1 << 20):.2f} MiB"
    return f"{nbytes / (1 << 30):.2f} GiB"


class DeviceMemory:
    """What a backend supplies: raw device memory, and optionally streams and events.

    Subclass it and override ``alloc``, ``free`` and ``mem_get_info``. The stream and
    event methods default to a device with one in-order queue, where a freed block can
    be reused at once. Streams are whatever hashable objects the backend passes to
    ``CachingAllocator.malloc(nbytes, stream)`` (``None`` for the default stream).
    """
    #: the device's name in messages and summaries, e.g. ``"opencl:0"``
    name: str = "device:0"

    def alloc(self, nbytes: int):
        """Reserve ``nbytes`` of device memory and return an opaque handle to it.

        Return ``None`` (or raise ``MemoryError``) when the device is out of memory;
        translate the driver's own out-of-memory error into one of these. A
        ``last_error`` attribute (a sentence), when set, is added to the error message
        (why the driver refused: "the host is out of memory").
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement alloc()")

    def free(self, handle) -> None:
        """Give the memory behind ``handle`` back to the device."""
        raise NotImplementedError(f"{type(self).__name__} does not implement free()")

    def mem_get_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of device memory, for out-of-memory messages."""
        raise NotImplementedError(f"{type(self).__name__} does not implement mem_get_info()")

    def record_event(self, stream):
        """An event that completes when the work queued on ``stream`` so far has finished.

        Return ``None`` when there is nothing to wait for (an in-order single queue).
        """
        return None

    def event_done(self, event) -> bool:
        """Whether ``event`` (from :meth:`record_event`) has completed; must not block."""
        return True

    def event_synchronize(self, event) -> None:
        """Block until ``event`` has completed."""
        return None


class _Segment:
    """One device allocation. ``base`` is a virtual address, unique across segments, that
    orders blocks by address in the free lists (device handles are opaque)."""
    __slots__ = ("handle", "size", "small", "stream", "base", "head")

    def __init__(self, handle, size, small, stream, base):
        self.handle = handle
        self.size = size
        self.small = small
        self.stream = stream
        self.base = base
        self.head = None    # the block at offset 0


class Block:
    """A piece of a segment: free in a pool, allocated to a user, or awaiting events.

    Attributes: ``segment`` (the device handle of its segment), ``offset`` (bytes into the
    segment), ``size`` (rounded bytes), ``requested`` (bytes asked for), ``stream`` (the
    stream it was allocated on) and ``allocated``.
    """
    __slots__ = ("segment", "offset", "size", "requested", "stream", "allocated", "small",
                 "prev", "next", "stream_uses", "event_count", "_seg", "_key")

    def __init__(self, seg: _Segment, offset: int, size: int):
        self.segment = seg.handle
        self._seg = seg
        self.offset = offset
        self.size = size
        self.requested = 0
        self.stream = seg.stream
        self.small = seg.small
        self.allocated = False
        self.prev = None
        self.next = None
        self.stream_uses = None     # streams other than `stream` that used it (record_stream)
        self.event_count = 0        # events still to complete before it returns to its pool
        self._key = 0

    def __repr__(self):
        state = ("allocated" if self.allocated else
                 "awaiting events" if self.event_count else "free")
        return (f"Block(offset={self.offset}, size={self.size}, requested={self.requested}, "
                f"stream={self.stream!r}, {state})")


# Statistic arrays in PyTorch's schema: each holds [all, small_pool, large_pool], each of
# those [current, peak, allocated, freed].
_STAT_ARRAYS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
_POOL_NAMES = ("all", "small_pool", "large_pool")
_METRICS = ("current", "peak", "allocated", "freed")
_COUNTERS = ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
             "num_device_free")
_SMALL, _LARGE = 1, 2


def _new_array():
    return [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def _inc(arr, pool, n):
    s = arr[0]
    c = s[0] = s[0] + n
    s[2] += n
    if c > s[1]:
        s[1] = c
    s = arr[pool]
    c = s[0] = s[0] + n
    s[2] += n
    if c > s[1]:
        s[1] = c


def _dec(arr, pool, n):
    s = arr[0]
    s[0] -= n
    s[3] += n
    s = arr[pool]
    s[0] -= n
    s[3] += n


class _Guard:
    """``with allocator._guard:`` holds the lock and records the owning thread, so that a
    finalizer freeing a block while this thread holds the lock is deferred, not deadlocked."""
    __slots__ = ("allocator",)

    def __init__(self, allocator):
        self.allocator = allocator

    def __enter__(self):
        a = self.allocator
        me = threading.get_ident()
        if a._owner == me:
            raise RuntimeError("the caching allocator was called re-entrantly (from a "
                               "finalizer or a DeviceMemory method); this is not supported")
        a._lock.acquire()
        a._owner = me

    def __exit__(self, *exc):
        a = self.allocator
        try:
            if a._deferred:
                a._drain_deferred()
        finally:
            a._owner = None
            a._lock.release()


class CachingAllocator:
    """PyTorch's caching allocator policy over one device's :class:`DeviceMemory`.

    >>> alloc = CachingAllocator(memory)           # doctest: +SKIP
    >>> b = alloc.malloc(1000)                      # doctest: +SKIP
    >>> b.size, alloc.memory_reserved() >> 20       # doctest: +SKIP
    (1024, 2)
    >>> alloc.free(b)                               # doctest: +SKIP
    """

    def __init__(self, memory: DeviceMemory):
        self._memory = memory
        self._lock = threading.Lock()
        self._owner = None          # thread id while a call holds the lock
        self._deferred: list = []   # frees from finalizers that ran while we held the lock
        self._guard = _Guard(self)
        # free lists: (is_small, stream) -> (sorted keys, blocks in the same order)
        self._pools: dict = {}
        self._events: dict = {}     # stream -> deque of (event, block), oldest first
        self._segments: set = set()
        self._next_base = 0
        self._stats = {name: _new_array() for name in _STAT_ARRAYS}
        self._counters = dict.fromkeys(_COUNTERS, 0)
        st = self._stats
        # bound once for the hot path
        self._s_allocation = st["allocation"]
        self._s_allocated = st["allocated_bytes"]
        self._s_active = st["active"]
        self._s_active_bytes = st["active_bytes"]
        self._s_requested = st["requested_bytes"]
        self._s_split = st["inactive_split"]
        self._s_split_bytes = st["inactive_split_bytes"]
        self._fraction = 1.0
        self._limit = None          # bytes this process may reserve (set_memory_fraction)
        self._history = None        # deque of trace entries while recording (record_history)
        self._context = None        # () -> dict merged into each entry (frames, phase)

    def __repr__(self):
        return (f"CachingAllocator({self._memory.name}, allocated="
                f"{format_size(self.memory_allocated())}, reserved="
                f"{format_size(self.memory_reserved())})")

    @property
    def memory(self) -> DeviceMemory:
        return self._memory

    # -- allocation ---------------------------------------------------------------------

    def malloc(self, nbytes: int, stream=None) -> Block | None:
        """A block of at least ``nbytes`` for use on ``stream``; ``None`` for 0 bytes.

        Raises :class:`OutOfMemoryError` when the device cannot provide the memory even
        after the cache was returned to it.
        """
        if type(nbytes) is not int:
            nbytes = operator.index(nbytes)     # numpy integers would overflow the keys
        if nbytes <= 0:
            if nbytes == 0:
                return None     # like PyTorch: nothing is allocated for 0 bytes
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        size = _MIN_BLOCK if nbytes < _MIN_BLOCK else (nbytes + _MIN_BLOCK - 1) & -_MIN_BLOCK
        small = size <= _SMALL_SIZE
        me = threading.get_ident()
        if self._owner == me:
            raise RuntimeError("CachingAllocator.malloc was called re-entrantly (from a "
                               "finalizer or a DeviceMemory method); this is not supported")
        with self._lock:
            self._owner = me
            try:
                if self._events:
                    self._process_events()
                block = self._take_free_block(size, small, stream)
                if block is None:
                    block = self._alloc_segment(size, small, stream, nbytes)
                try:
                    self._allocate(block, size, nbytes)
                    if self._history is not None:
                        self._trace("alloc", block._seg.base + block.offset, block.size, stream)
                except BaseException:
                    # (a MemoryError of Python itself, under a hard memory limit): the
                    # block goes back to its pool, the allocator stays consistent
                    if not block.allocated:
                        self._insert_free(block)
                    raise
            finally:
                if self._deferred:
                    self._drain_deferred()
                self._owner = None
        return block

    def _allocate(self, block: Block, size: int, nbytes: int) -> None:
        """Mark ``block`` (taken out of its pool) allocated, splitting off the remainder."""
        pool = _SMALL if block.small else _LARGE
        remaining = block.size - size
        already_split = block.prev is not None or block.next is not None
        if (remaining >= _MIN_BLOCK) if block.small else (remaining > _SMALL_SIZE):
            rest = Block(block._seg, block.offset + size, remaining)
            self._insert_free(rest)     # first: what can fail (memory) changes nothing yet
            rest.prev = block
            rest.next = block.next
            if rest.next is not None:
                rest.next.prev = rest
            block.next = rest
            block.size = size
            if already_split:       # an inactive split block shrank by `size`
                _dec(self._s_split_bytes, pool, size)
            else:                   # a new inactive split block appeared
                _inc(self._s_split, pool, 1)
                _inc(self._s_split_bytes, pool, remaining)
        elif already_split:         # an inactive split block becomes active
            _dec(self._s_split, pool, 1)
            _dec(self._s_split_bytes, pool, block.size)
        block.allocated = True
        block.requested = nbytes
        size = block.size
        _inc(self._s_allocation, pool, 1)
        _inc(self._s_allocated, pool, size)
        _inc(self._s_active, pool, 1)
        _inc(self._s_active_bytes, pool, size)
        _inc(self._s_requested, pool, nbytes)

    def _take_free_block(self, size: int, small: bool, stream) -> Block | None:
        """Best fit: the smallest free block >= size on this stream, lowest address first."""
        fl = self._pools.get((small, stream))
        if fl is None:
            return None
        keys, blocks = fl
        i = bisect_left(keys, size << _ADDR_BITS)
        if i == len(keys):
            return None
        del keys[i]
        return blocks.pop(i)

    def _insert_free(self, block: Block) -> None:
        key = block._key = (block.size << _ADDR_BITS) | (block._seg.base + block.offset)
        fl = self._pools.get((block.small, block.stream))
        if fl is None:
            fl = self._pools[(block.small, block.stream)] = ([], [])
        keys, blocks = fl
        i = bisect_left(keys, key)
        keys.insert(i, key)
        blocks.insert(i, block)

    def _remove_free(self, block: Block) -> None:
        keys, blocks = self._pools[(block.small, block.stream)]
        i = bisect_left(keys, block._key)
        del keys[i]
        del blocks[i]

    def _alloc_segment(self, size: int, small: bool, stream, nbytes: int) -> Block:
        """A new segment's block, after freeing the cache and retrying once if needed."""
        alloc_size = segment_size(size)
        handle = self._device_alloc(alloc_size)
        if handle is None:
            # Out of device memory: wait for blocks held by other streams' events (one of
            # them may fit now), return every fully free segment, and try once more.
            self._counters["num_alloc_retries"] += 1
            self._synchronize_and_free_events()
            block = self._take_free_block(size, small, stream)
            if block is not None:
                return block
            self._release_free_segments()
            handle = self._device_alloc(alloc_size)
            if handle is None:
                self._counters["num_ooms"] += 1
                if self._history is not None:
                    self._trace("oom", 0, alloc_size)
                err = OutOfMemoryError(self._oom_message(alloc_size))
                err.nbytes, err.alloc_size, err.device = nbytes, alloc_size, self._memory.name
                raise err
        try:
            seg = _Segment(handle, alloc_size, small, stream, self._next_base)
            block = seg.head = Block(seg, 0, alloc_size)
            self._segments.add(seg)
        except BaseException:   # bookkeeping failed: the device memory is not leaked
            self._memory.free(handle)
            raise
        self._next_base += alloc_size
        pool = _SMALL if small else _LARGE
        self._counters["num_device_alloc"] += 1
        _inc(self._stats["segment"], pool, 1)
        _inc(self._stats["reserved_bytes"], pool, alloc_size)
        return block

    def _device_alloc(self, nbytes: int):
        if self._limit is not None and \
                self._stats["reserved_bytes"][0][0] + nbytes > self._limit:
            return None
        try:
            handle = self._memory.alloc(nbytes)
        except MemoryError:
            return None
        if handle is not None and self._history is not None:
            self._trace("segment_alloc", self._next_base, nbytes)
        return handle

    def _oom_message(self, alloc_size: int) -> str:
        name = self._memory.name
        try:
            free, total = self._memory.mem_get_info()
            capacity = (f"{name} has a total capacity of {format_size(total)} of which "
                        f"{format_size(free)} is free. ")
        except Exception:
            capacity = f"{name} does not report its capacity. "
        allocated = self._stats["allocated_bytes"][0][0]
        reserved = self._stats["reserved_bytes"][0][0]
        why = getattr(self._memory, "last_error", None)
        why = f"{why} " if why else ""
        if self._limit is not None:
            why += (f"This process may reserve {format_size(self._limit)} "
                    f"(set_per_process_memory_fraction({self._fraction:g})). ")
        # training: most of a step's memory is activations saved for the backward pass
        hint = (" If this is a training step, the activations saved for the backward pass "
                "can move to host memory (ember.utils.offload) or be recomputed "
                "(ember.utils.checkpoint) instead of staying on the device.")
        return (f"Out of memory on {name}. Tried to allocate {format_size(alloc_size)}. "
                f"{why}{capacity}Of the allocated memory {format_size(allocated)} is allocated by "
                f"ember, and {format_size(reserved - allocated)} is reserved by ember but "
                "unallocated. If reserved but unallocated memory is large, the cache is "
                "fragmented: free tensors you no longer need, or allocate the largest "
                f"buffers first.{hint}")

    # -- a per-process limit ------------------------------------------------------------

    def set_memory_fraction(self, fraction: float) -> None:
        """Let this process reserve at most ``fraction`` of the device's total memory
        (``torch.cuda.set_per_process_memory_fraction``): a request beyond it frees the
        cache and then raises :class:`OutOfMemoryError`, as a full device does. 1.0 (the
        default) is no limit beyond the device's own."""
        if not isinstance(fraction, float):
            raise TypeError("Invalid type for fraction argument, must be `float`")
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        _, total = self._memory.mem_get_info()
        with self._guard:
            self._fraction = fraction
            self._limit = None if fraction == 1.0 else int(total * fraction)

    def get_memory_fraction(self) -> float:
        return self._fraction

    # -- history ------------------------------------------------------------------------

    def record_history(self, enabled: bool, max_entries: int = 1 << 62,
                       context=None) -> None:
        """Start (or, with ``enabled`` False, stop) keeping a trace of allocator events:
        ``alloc``, ``free_requested``, ``free_completed``, ``segment_alloc``,
        ``segment_free`` and ``oom``, each a dict with ``action``, ``addr``, ``size``,
        ``stream``, ``time_us`` and what ``context()`` returns (the frontend's stack frames
        and autograd phase); the newest ``max_entries`` are kept. Starting again clears
        the trace."""
        with self._guard:
            if not enabled:
                self._history = None
                self._context = None
                return
            self._history = deque(maxlen=max(1, int(max_entries)))
            self._context = context

    def _trace(self, action: str, addr: int, size: int, stream=None) -> None:
        entry = {"action": action, "addr": addr, "size": size,
                 "stream": 0 if stream is None else id(stream),
                 "time_us": time.perf_counter_ns() // 1000}
        if self._context is not None:
            try:
                entry.update(self._context())
            except Exception:   # a context that fails must not fail the allocation
                pass
        self._history.append(entry)

    def snapshot(self) -> dict:
        """``{"segments": memory_snapshot(), "device_traces": [trace]}`` (the layout of
        ``torch.cuda.memory._snapshot()``; the trace is empty unless recording)."""
        segments = self.memory_snapshot()
        with self._guard:
            trace = list(self._history) if self._history is not None else []
        return {"segments": segments, "device_traces": [trace]}

    # -- freeing ------------------------------------------------------------------------

    def free(self, block: Block | None) -> None:
        """Give ``block`` back to the cache (``None``, from a 0-byte malloc, is ignored).

        If other streams used the block (:meth:`record_stream`), it stays unavailable until
        the events recorded on those streams now have completed.
        """
        if block is None:
            return
        me = threading.get_ident()
        if self._owner == me:
            # A finalizer (DeviceStorage.__del__, run by the garbage collector) fired while
            # this thread is inside the allocator: finish the free when the call returns.
            self._deferred.append(block)
            return
        with self._lock:
            self._owner = me
            try:
                self._free(block)
            finally:
                if self._deferred:
                    self._drain_deferred()
                self._owner = None

    def _drain_deferred(self) -> None:
        while self._deferred:
            try:
                self._free(self._deferred.pop())
            except Exception:   # a finalizer's free has nobody to report to
                pass

    def _free(self, block: Block) -> None:
        if not block.allocated or block._seg not in self._segments:
            raise RuntimeError(f"{block!r} is not allocated by this allocator (freed twice?)")
        block.allocated = False
        if self._history is not None:
            self._trace("free_requested", block._seg.base + block.offset, block.size)
        pool = _SMALL if block.small else _LARGE
        _dec(self._s_allocation, pool, 1)
        _dec(self._s_allocated, pool, block.size)
        uses = block.stream_uses
        if uses:
            block.stream_uses = None
            record = self._memory.record_event
            for s in uses:
                event = record(s)
                if event is not None:
                    block.event_count += 1
                    q = self._events.get(s)
                    if q is None:
                        q = self._events[s] = deque()
                    q.append((event, block))
            if block.event_count:
                return
        self._free_block(block)

    def _free_block(self, block: Block) -> None:
        """Return an inactive block to its pool, merging it with free neighbours."""
        pool = _SMALL if block.small else _LARGE
        size = block.size
        if self._history is not None:
            self._trace("free_completed", block._seg.base + block.offset, size)
        requested = block.requested
        net_blocks = net_bytes = 0
        prev = block.prev
        if prev is not None and not prev.allocated and not prev.event_count:
            self._remove_free(prev)
            block.offset = prev.offset
            block.size += prev.size
            block.prev = prev.prev
            if block.prev is None:
                block._seg.head = block
            else:
                block.prev.next = block
            net_blocks -= 1
            net_bytes -= prev.size
        nxt = block.next
        if nxt is not None and not nxt.allocated and not nxt.event_count:
            self._remove_free(nxt)
            block.size += nxt.size
            block.next = nxt.next
            if block.next is not None:
                block.next.prev = block
            net_blocks -= 1
            net_bytes -= nxt.size
        if block.prev is not None or block.next is not None:
            net_blocks += 1
            net_bytes += block.size
        block.requested = 0
        self._insert_free(block)
        if net_blocks > 0:
            _inc(self._s_split, pool, net_blocks)
        elif net_blocks < 0:
            _dec(self._s_split, pool, -net_blocks)
        if net_bytes > 0:
            _inc(self._s_split_bytes, pool, net_bytes)
        elif net_bytes < 0:
            _dec(self._s_split_bytes, pool, -net_bytes)
        _dec(self._s_active, pool, 1)
        _dec(self._s_active_bytes, pool, size)
        _dec(self._s_requested, pool, requested)

    # -- streams ------------------------------------------------------------------------

    def record_stream(self, block: Block | None, stream) -> None:
        """Mark ``block`` as used by ``stream`` too: when it is freed, it is held until the
        work queued on ``stream`` by then has completed (PyTorch's ``record_stream``)."""
        if block is None:
            return
        with self._guard:
            if not block.allocated:
                raise RuntimeError(f"record_stream on {block!r}, which is not allocated")
            if stream == block.stream:
                return
            if block.stream_uses is None:
                block.stream_uses = set()
            block.stream_uses.add(stream)

    def _process_events(self) -> None:
        """Return to their pools the blocks whose events have all completed."""
        done = self._memory.event_done
        for stream, q in list(self._events.items()):
            while q:
                event, block = q[0]
                if not done(event):
                    break
                q.popleft()
                block.event_count -= 1
                if block.event_count == 0:
                    self._free_block(block)
            if not q:
                del self._events[stream]

    def _synchronize_and_free_events(self) -> None:
        self._counters["num_sync_all_streams"] += 1
        sync = self._memory.event_synchronize
        events, self._events = self._events, {}
        for q in events.values():
            for event, block in q:
                sync(event)
                block.event_count -= 1
                if block.event_count == 0:
                    self._free_block(block)

    # -- the cache ----------------------------------------------------------------------

    def empty_cache(self) -> None:
        """Return every fully free segment to the device (after waiting for pending
        events); split segments and segments in use stay."""
        with self._guard:
            self._synchronize_and_free_events()
            self._release_free_segments()

    def _release_free_segments(self) -> None:
        released = []
        for pool_key in list(self._pools):
            keys, blocks = self._pools[pool_key]
            keep = [i for i, b in enumerate(blocks) if b.prev is not None or b.next is not None]
            if len(keep) == len(blocks):
                continue
            released += [b for b in blocks if b.prev is None and b.next is None]
            if keep:
                keys[:] = [keys[i] for i in keep]
                blocks[:] = [blocks[i] for i in keep]
            else:
                del self._pools[pool_key]
        for block in released:
            seg = block._seg
            self._segments.discard(seg)
            pool = _SMALL if seg.small else _LARGE
            self._counters["num_device_free"] += 1
            _dec(self._stats["segment"], pool, 1)
            _dec(self._stats["reserved_bytes"], pool, seg.size)
            seg.head = None
            if self._history is not None:
                self._trace("segment_free", seg.base, seg.size)
            self._memory.free(seg.handle)

    # -- statistics ---------------------------------------------------------------------

    def memory_stats(self) -> OrderedDict:
        """PyTorch's ``torch.cuda.memory_stats()`` for this device: flat keys such as
        ``"allocated_bytes.all.current"``, sorted by name.

        Arrays (each ``.{all,small_pool,large_pool}.{current,peak,allocated,freed}``):
        ``allocation``, ``segment``, ``active``, ``inactive_split`` (counts) and
        ``allocated_bytes``, ``reserved_bytes``, ``active_bytes``,
        ``inactive_split_bytes``, ``requested_bytes`` (bytes). Counters:
        ``num_alloc_retries``, ``num_ooms``, ``num_sync_all_streams``,
        ``num_device_alloc``, ``num_device_free``. For compatibility, also
        ``max_split_size`` (-1: blocks of any size may be split) and the
        ``oversize_allocations``/``oversize_segments`` stats (always 0).
        """
        with self._guard:
            items = []
            for name, arr in self._stats.items():
                for pool_name, s in zip(_POOL_NAMES, arr):
                    for metric, v in zip(_METRICS, s):
                        items.append((f"{name}.{pool_name}.{metric}", v))
            items += self._counters.items()
        items.append(("max_split_size", -1))
        for name in ("oversize_allocations", "oversize_segments"):
            items += [(f"{name}.{metric}", 0) for metric in _METRICS]
        items.sort()
        return OrderedDict(items)

    def memory_allocated(self) -> int:
        """Bytes in blocks allocated to users now (rounded sizes)."""
        return self._stats["allocated_bytes"][0][0]

    def max_memory_allocated(self) -> int:
        """The peak of :meth:`memory_allocated` since start or the last peak reset."""
        return self._stats["allocated_bytes"][0][1]

    def memory_reserved(self) -> int:
        """Bytes of device memory held by the allocator now (all segments)."""
        return self._stats["reserved_bytes"][0][0]

    def max_memory_reserved(self) -> int:
        """The peak of :meth:`memory_reserved` since start or the last peak reset."""
        return self._stats["reserved_bytes"][0][1]

    def reset_peak_memory_stats(self) -> None:
        """Set every ``peak`` to its ``current`` value."""
        with self._guard:
            for arr in self._stats.values():
                for s in arr:
                    s[1] = s[0]

    def reset_accumulated_memory_stats(self) -> None:
        """Zero the ``allocated``/``freed`` totals and the event counters."""
        with self._guard:
            for arr in self._stats.values():
                for s in arr:
                    s[2] = s[3] = 0
            for k in self._counters:
                self._counters[k] = 0

    def memory_snapshot(self) -> list:
        """The segments and their blocks, in address order (like
        ``torch.cuda.memory_snapshot()``): a list of dicts with ``handle``, ``address``
        (a virtual address), ``total_size``, ``stream``, ``segment_type``
        (``"small"``/``"large"``), ``allocated_size``, ``active_size`` and ``blocks``,
        each block a dict with ``offset``, ``size``, ``requested_size`` and ``state``
        (``"active_allocated"``, ``"active_awaiting_free"`` or ``"inactive"``)."""
        with self._guard:
            out = []
            for seg in sorted(self._segments, key=lambda s: s.base):
                blocks = []
                b = seg.head
                while b is not None:
                    state = ("active_allocated" if b.allocated else
                             "active_awaiting_free" if b.event_count else "inactive")
                    blocks.append({"offset": b.offset, "size": b.size,
                                   "requested_size": b.requested, "state": state})
                    b = b.next
                out.append({
                    "handle": seg.handle, "address": seg.base, "total_size": seg.size,
                    "stream": seg.stream, "segment_type": "small" if seg.small else "large",
                    "allocated_size": sum(b["size"] for b in blocks
                                          if b["state"] == "active_allocated"),
                    "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
                    "blocks": blocks,
                })
            return out

    def memory_summary(self, abbreviated: bool = False) -> str:
        """A table of the statistics, in the layout of ``torch.cuda.memory_summary()``."""
        stats = self.memory_stats()
        rows = [("allocated_bytes", "Allocated memory", _format_size_cell),
                ("active_bytes", "Active memory", _format_size_cell),
                ("requested_bytes", "Requested memory", _format_size_cell),
                ("reserved_bytes", "Reserved memory", _format_size_cell),
                ("inactive_split_bytes", "Non-releasable memory", _format_size_cell),
                ("allocation", "Allocations", _format_count_cell),
                ("active", "Active allocs", _format_count_cell),
                ("segment", "Reserved segments", _format_count_cell),
                ("inactive_split", "Non-releasable allocs", _format_count_cell)]
        width = 75
        lines = ["=" * width,
                 f" ember caching allocator memory summary, device {self._memory.name} "
                 .center(width),
                 "-" * width,
                 (f"  OOMs: {stats['num_ooms']:<12d} | alloc retries: "
                  f"{stats['num_alloc_retries']:<8d} | device allocs: "
                  f"{stats['num_device_alloc']:<8d}").ljust(width),
                 "=" * width,
                 "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
        pools = [("all", None)]
        if not abbreviated:
            pools += [("large_pool", "      from large pool"),
                      ("small_pool", "      from small pool")]
        for key, title, fmt in rows:
            lines.append("-" * width)
            ref = None
            for pool, label in pools:
                vals = [stats[f"{key}.{pool}.{m}"] for m in _METRICS]
                if ref is None:
                    ref = vals      # the "from ... pool" rows use the "all" row's unit
                cells = " | ".join(fmt(v, r) for v, r in zip(vals, ref))
                lines.append(f" {label or title:<21} | {cells} ")
        lines.append("=" * width)
        return "|" + "|\n|".join(lines) + "|\n"

    # -- storage ------------------------------------------------------------------------

    def storage(self, nbytes: int, stream=None) -> DeviceStorage:
        """A :class:`DeviceStorage` of ``nbytes`` on ``stream``: what ``Backend.allocate``
        returns. Its block goes back to this allocator when the storage is dropped."""
        return DeviceStorage(self, nbytes, stream)


def _format_size_cell(n: int, ref: int) -> str:
    units = ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB")
    unit = 0
    while unit < len(units) - 1 and ref >= 768 * 1024:
        unit += 1
        n //= 1024
        ref /= 1024
    return f"{n:6d} {units[unit]}"


def _format_count_cell(n: int, ref: int) -> str:
    units = (" ", "K", "M")
    unit = 0
    while unit < len(units) - 1 and ref >= 750 * 1000:
        unit += 1
        n //= 1000
        ref /= 1000
    return f"{n:7d} {units[unit]} "


class DeviceStorage:
    """Device memory owned by a tensor's storage: one :class:`Block` of a
    :class:`CachingAllocator`, given back the moment the last reference goes.

    Attributes: ``nbytes`` (bytes asked for), ``block`` (``None`` for 0 bytes),
    ``handle`` (the device handle of the block's segment), ``offset`` (the block's byte
    offset in that segment) and ``allocator``. Backends may subclass it to add their own
    fields.

    >>> s = allocator.storage(4096)             # doctest: +SKIP
    >>> kernel(s.handle, s.offset, ...)         # doctest: +SKIP
    >>> del s                                   # doctest: +SKIP
    """
    __slots__ = ("nbytes", "block", "handle", "offset", "allocator", "__weakref__")

    def __init__(self, allocator: CachingAllocator, nbytes: int, stream=None):
        self.block = None   # set first, so __del__ is safe if malloc raises
        self.allocator = allocator
        self.nbytes = nbytes
        block = allocator.malloc(nbytes, stream)
        self.block = block
        if block is None:
            self.handle, self.offset = None, 0
        else:
            self.handle, self.offset = block.segment, block.offset

    @property
    def stream(self):
        """The stream the memory was allocated on."""
        return None if self.block is None else self.block.stream

    def record_stream(self, stream) -> None:
        """See :meth:`CachingAllocator.record_stream`."""
        self.allocator.record_stream(self.block, stream)

    def __repr__(self):
        return (f"DeviceStorage(nbytes={self.nbytes}, offset={self.offset}, "
                f"device={self.allocator.memory.name})")

    def __del__(self):
        block = self.block
        if block is not None:
            self.block = None
            try:
                self.allocator.free(block)
            except Exception:   # interpreter shutdown, or the device is already gone
                pass
