"""The caching allocator policy (``ember.dispatcher.allocator``) against a fake device.

The fake device is a counter with a capacity; its streams and events are plain objects
whose completion the test controls. The oracle for layout questions is the fake
device's own record of what it handed out, plus the blocks the test holds.
"""
import ast
import gc
import pathlib
import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ember
from ember.dispatcher import allocator as allocator_module
from ember.dispatcher.allocator import (Block, CachingAllocator, DeviceMemory, DeviceStorage,
                                        OutOfMemoryError)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


class FakeEvent:
    def __init__(self, stream):
        self.stream = stream
        self.done = False


class FakeStream:
    """A stream whose queued work 'finishes' when the test calls complete()."""

    def __init__(self, name):
        self.name = name
        self.events = []

    def complete(self):
        for e in self.events:
            e.done = True

    def __repr__(self):
        return f"FakeStream({self.name})"


class FakeDevice(DeviceMemory):
    name = "fake:0"

    def __init__(self, capacity=GiB, raise_oom=False):
        self.capacity = capacity
        self.raise_oom = raise_oom
        self.live = {}          # handle -> size
        self.alloc_calls = []   # every size asked for, successful or not
        self.freed = []
        self.events = []
        self.synchronized = 0
        self._next = 0

    @property
    def used(self):
        return sum(self.live.values())

    def alloc(self, nbytes):
        self.alloc_calls.append(nbytes)
        if self.used + nbytes > self.capacity:
            if self.raise_oom:
                raise MemoryError("fake device out of memory")
            return None
        self._next += 1
        handle = f"seg{self._next}"
        self.live[handle] = nbytes
        return handle

    def free(self, handle):
        self.freed.append(handle)
        del self.live[handle]   # KeyError on a double free fails the test

    def mem_get_info(self):
        return self.capacity - self.used, self.capacity

    def record_event(self, stream):
        event = FakeEvent(stream)
        stream.events.append(event)
        self.events.append(event)
        return event

    def event_done(self, event):
        return event.done

    def event_synchronize(self, event):
        event.done = True
        self.synchronized += 1


@pytest.fixture
def dev():
    return FakeDevice()


@pytest.fixture
def alloc(dev):
    return CachingAllocator(dev)


def check_invariants(alloc, dev, live_blocks=()):
    """Everything that must hold between any two calls, checked from the outside."""
    stats = alloc.memory_stats()
    snap = alloc.memory_snapshot()
    # the segments are exactly what the device handed out and has not taken back
    assert {s["handle"] for s in snap} == set(dev.live)
    for s in snap:
        assert dev.live[s["handle"]] == s["total_size"]
    assert alloc.memory_reserved() == dev.used == stats["reserved_bytes.all.current"]
    assert stats["segment.all.current"] == len(dev.live)
    # blocks of a segment tile it exactly, and no two free neighbours are left unmerged
    split_count = split_bytes = awaiting = 0
    for s in snap:
        offset = 0
        prev_state = None
        for b in s["blocks"]:
            assert b["offset"] == offset and b["size"] > 0 and b["size"] % 512 == 0
            offset += b["size"]
            assert not (b["state"] == prev_state == "inactive"), "unmerged free neighbours"
            prev_state = b["state"]
            if b["state"] == "inactive" and len(s["blocks"]) > 1:
                split_count += 1
                split_bytes += b["size"]
            if b["state"] == "active_awaiting_free":
                awaiting += b["size"]
        assert offset == s["total_size"]
    # the blocks the test holds do not overlap and lie inside their segments
    by_segment = {}
    for b in live_blocks:
        by_segment.setdefault(b.segment, []).append(b)
    for handle, blocks in by_segment.items():
        blocks.sort(key=lambda b: b.offset)
        for a, b in zip(blocks, blocks[1:]):
            assert a.offset + a.size <= b.offset
        assert blocks[-1].offset + blocks[-1].size <= dev.live[handle]
    # the statistics add up
    assert alloc.memory_allocated() == sum(b.size for b in live_blocks)
    assert stats["allocation.all.current"] == len(live_blocks)
    assert stats["requested_bytes.all.current"] == sum(b.requested for b in live_blocks) + sum(
        b["requested_size"] for s in snap for b in s["blocks"]
        if b["state"] == "active_awaiting_free")
    assert stats["active_bytes.all.current"] == alloc.memory_allocated() + awaiting
    assert stats["inactive_split.all.current"] == split_count
    assert stats["inactive_split_bytes.all.current"] == split_bytes
    for key in ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"):
        for metric in ("current", "allocated", "freed"):
            assert stats[f"{key}.all.{metric}"] == (stats[f"{key}.small_pool.{metric}"]
                                                   + stats[f"{key}.large_pool.{metric}"])
        for pool in ("all", "small_pool", "large_pool"):
            p = f"{key}.{pool}."
            assert stats[p + "current"] >= 0
            assert stats[p + "peak"] >= stats[p + "current"]
            assert stats[p + "current"] == stats[p + "allocated"] - stats[p + "freed"]


# -- sizes and pools -------------------------------------------------------------------

@pytest.mark.parametrize("nbytes, size", [(1, 512), (511, 512), (512, 512), (513, 1024),
                                          (1000, 1024), (4096, 4096), (MiB + 1, MiB + 512)])
def test_requests_are_rounded_to_512_bytes(alloc, nbytes, size):
    b = alloc.malloc(nbytes)
    assert (b.size, b.requested) == (size, nbytes)
    assert alloc.memory_allocated() == size
    assert alloc.memory_stats()["requested_bytes.all.current"] == nbytes


@pytest.mark.parametrize("nbytes, pool, segment", [
    (KiB, "small_pool", 2 * MiB),
    (MiB, "small_pool", 2 * MiB),
    (MiB + 1, "large_pool", 20 * MiB),
    (5 * MiB, "large_pool", 20 * MiB),
    (10 * MiB - 512, "large_pool", 20 * MiB),
    (10 * MiB - 1, "large_pool", 10 * MiB),     # rounded to 10 MiB first
    (10 * MiB, "large_pool", 10 * MiB),
    (11 * MiB, "large_pool", 12 * MiB),
    (11 * MiB + 1, "large_pool", 12 * MiB),
    (100 * MiB, "large_pool", 100 * MiB),
])
def test_pool_and_segment_size(alloc, dev, nbytes, pool, segment):
    alloc.malloc(nbytes)
    assert dev.alloc_calls == [segment]
    stats = alloc.memory_stats()
    assert stats[f"segment.{pool}.current"] == 1
    assert stats[f"reserved_bytes.{pool}.current"] == segment
    assert stats[f"allocation.{pool}.current"] == 1
    other = "large_pool" if pool == "small_pool" else "small_pool"
    assert stats[f"segment.{other}.current"] == 0


def test_small_blocks_are_carved_from_one_segment(alloc, dev):
    blocks = [alloc.malloc(4 * KiB) for _ in range(8)]
    assert dev.alloc_calls == [2 * MiB]
    assert [b.offset for b in blocks] == [i * 4 * KiB for i in range(8)]
    assert len({b.segment for b in blocks}) == 1
    check_invariants(alloc, dev, blocks)


def test_nothing_is_reserved_up_front(alloc, dev):
    assert alloc.memory_reserved() == 0 and dev.alloc_calls == []
    alloc.malloc(KiB)
    assert alloc.memory_reserved() == 2 * MiB


def test_zero_bytes_allocate_nothing(alloc, dev):
    assert alloc.malloc(0) is None
    alloc.free(None)
    alloc.record_stream(None, FakeStream("s"))
    s = alloc.storage(0)
    assert (s.nbytes, s.block, s.handle, s.offset) == (0, None, None, 0)
    del s
    assert dev.alloc_calls == [] and alloc.memory_stats()["allocation.all.allocated"] == 0
    with pytest.raises(ValueError, match="negative"):
        alloc.malloc(-1)
    with pytest.raises(TypeError):
        alloc.malloc(1.5)


def test_numpy_integer_sizes(alloc, dev):
    np = pytest.importorskip("numpy")
    b = alloc.malloc(np.int64(5 * MiB))
    assert type(b.size) is int and b.size == 5 * MiB
    alloc.free(b)
    assert alloc.malloc(np.int32(5 * MiB)).offset == 0 and len(dev.alloc_calls) == 1


# -- splitting, best fit, merging ------------------------------------------------------

def test_best_fit_takes_the_smallest_block_that_fits(alloc, dev):
    # free holes of 16 KiB (lower address) and 8 KiB, separated by live blocks
    h16 = alloc.malloc(16 * KiB)
    keep1 = alloc.malloc(KiB)
    h8 = alloc.malloc(8 * KiB)
    keep2 = alloc.malloc(KiB)
    off16, off8 = h16.offset, h8.offset
    alloc.free(h16)
    alloc.free(h8)
    b = alloc.malloc(6 * KiB)
    assert b.offset == off8            # not the 16 KiB hole, not the big tail
    c = alloc.malloc(12 * KiB)
    assert c.offset == off16
    assert dev.alloc_calls == [2 * MiB]
    check_invariants(alloc, dev, [keep1, keep2, b, c])


def test_best_fit_prefers_the_lowest_address_among_equal_sizes(alloc, dev):
    blocks = [alloc.malloc(4 * KiB) for _ in range(6)]
    for i in (4, 2):                  # free two equal holes, the higher one first
        alloc.free(blocks[i])
    assert alloc.malloc(4 * KiB).offset == blocks[2].offset


def test_small_pool_splits_a_remainder_of_512_bytes(alloc, dev):
    a = alloc.malloc(MiB)                  # 2 MiB segment, 1 MiB left
    b = alloc.malloc(MiB - 512)            # leaves exactly 512 B: still split
    assert b.size == MiB - 512
    c = alloc.malloc(512)
    assert c.offset == 2 * MiB - 512 and c.segment == a.segment
    assert dev.alloc_calls == [2 * MiB]
    check_invariants(alloc, dev, [a, b, c])


def test_large_pool_keeps_a_remainder_of_1_mib_unsplit(alloc, dev):
    a = alloc.malloc(3 * MiB // 2)         # 20 MiB segment, 18.5 MiB left
    assert a.size == 3 * MiB // 2
    b = alloc.malloc(35 * MiB // 2)        # 17.5 MiB: the remainder would be exactly 1 MiB
    assert b.segment == a.segment and b.size == 37 * MiB // 2
    assert alloc.memory_allocated() == 20 * MiB
    assert dev.alloc_calls == [20 * MiB]
    check_invariants(alloc, dev, [a, b])


def test_large_pool_splits_a_remainder_over_1_mib(alloc, dev):
    a = alloc.malloc(5 * MiB)
    b = alloc.malloc(13 * MiB)             # 15 MiB free: remainder 2 MiB is split off
    assert (b.segment, b.offset, b.size) == (a.segment, 5 * MiB, 13 * MiB)
    c = alloc.malloc(2 * MiB)
    assert (c.segment, c.offset) == (a.segment, 18 * MiB)
    assert dev.alloc_calls == [20 * MiB]


def test_free_merges_with_free_neighbours(alloc, dev):
    a, b, c = (alloc.malloc(64 * KiB) for _ in range(3))
    stats = alloc.memory_stats()
    assert stats["inactive_split.all.current"] == 1          # the tail of the segment
    alloc.free(b)
    assert [blk["state"] for blk in alloc.memory_snapshot()[0]["blocks"]] == [
        "active_allocated", "inactive", "active_allocated", "inactive"]
    assert alloc.memory_stats()["inactive_split.all.current"] == 2
    alloc.free(a)
    assert len(alloc.memory_snapshot()[0]["blocks"]) == 3
    alloc.free(c)
    (seg,) = alloc.memory_snapshot()
    assert seg["blocks"] == [{"offset": 0, "size": 2 * MiB, "requested_size": 0,
                              "state": "inactive"}]
    stats = alloc.memory_stats()
    assert stats["inactive_split.all.current"] == 0
    assert stats["inactive_split_bytes.all.current"] == 0
    check_invariants(alloc, dev)
    # the merged segment serves a request as large as the small pool allows
    d = alloc.malloc(MiB)
    assert d.offset == 0 and dev.alloc_calls == [2 * MiB]


def test_steady_state_reuses_the_cache(alloc, dev):
    def iteration():
        x = alloc.malloc(300)
        w = alloc.malloc(3 * MiB)
        y = alloc.malloc(64 * KiB)
        alloc.free(x)
        z = alloc.malloc(12 * MiB)
        t = alloc.malloc(700 * KiB)
        for b in (w, y, t, z):
            alloc.free(b)

    iteration()
    calls = list(dev.alloc_calls)
    reserved = alloc.memory_reserved()
    for _ in range(1000):
        iteration()
    stats = alloc.memory_stats()
    assert dev.alloc_calls == calls and stats["num_device_alloc"] == len(calls)
    assert alloc.memory_reserved() == reserved and alloc.memory_allocated() == 0
    assert stats["allocation.all.allocated"] == 5 * 1001
    check_invariants(alloc, dev)


# -- streams and events ----------------------------------------------------------------

def test_free_blocks_are_reused_only_on_their_stream(alloc, dev):
    s1, s2 = FakeStream("a"), FakeStream("b")
    a = alloc.malloc(4 * KiB, s1)
    handle, offset = a.segment, a.offset
    alloc.free(a)
    b = alloc.malloc(4 * KiB, s2)
    assert b.segment != handle and len(dev.alloc_calls) == 2
    c = alloc.malloc(4 * KiB, s1)
    assert (c.segment, c.offset) == (handle, offset)
    assert b.stream is s2 and c.stream is s1
    d = alloc.malloc(4 * KiB)                # the default stream is a stream of its own
    assert d.segment not in (b.segment, c.segment)
    check_invariants(alloc, dev, [b, c, d])


def test_record_stream_holds_the_block_until_the_event_completes(alloc, dev):
    s1, s2 = FakeStream("a"), FakeStream("b")
    a = alloc.malloc(4 * KiB, s1)
    offset = a.offset
    alloc.record_stream(a, s2)
    alloc.record_stream(a, s1)                  # its own stream: nothing to wait for
    assert dev.events == []                     # events are recorded at free time
    alloc.free(a)
    assert [e.stream for e in dev.events] == [s2]
    stats = alloc.memory_stats()
    assert alloc.memory_allocated() == 0
    assert stats["active_bytes.all.current"] == 4 * KiB     # still in use by s2
    assert alloc.memory_snapshot()[0]["blocks"][0]["state"] == "active_awaiting_free"
    check_invariants(alloc, dev)
    b = alloc.malloc(4 * KiB, s1)
    assert b.offset != offset                   # not handed out while s2 may use it
    s2.complete()
    c = alloc.malloc(4 * KiB, s1)               # events are processed at malloc
    assert c.offset == offset
    assert alloc.memory_stats()["active_bytes.all.current"] == 8 * KiB
    assert dev.synchronized == 0
    check_invariants(alloc, dev, [b, c])


def test_record_stream_waits_on_every_stream_used(alloc, dev):
    s1, s2, s3 = FakeStream("a"), FakeStream("b"), FakeStream("c")
    a = alloc.malloc(MiB * 4, s1)
    offset = a.offset
    alloc.record_stream(a, s2)
    alloc.record_stream(a, s3)
    alloc.free(a)
    s2.complete()
    assert alloc.malloc(MiB * 4, s1).offset != offset
    s3.complete()
    assert alloc.malloc(MiB * 4, s1).offset == offset


def test_pending_blocks_merge_when_released(alloc, dev):
    s1, s2 = FakeStream("a"), FakeStream("b")
    a, b = alloc.malloc(8 * KiB, s1), alloc.malloc(8 * KiB, s1)
    alloc.record_stream(a, s2)
    alloc.free(a)
    alloc.free(b)                               # a is pending: b cannot merge with it yet
    assert len(alloc.memory_snapshot()[0]["blocks"]) == 2
    s2.complete()
    alloc.malloc(4 * MiB, s1).offset            # any malloc processes events
    seg = [s for s in alloc.memory_snapshot() if s["segment_type"] == "small"][0]
    assert [blk["state"] for blk in seg["blocks"]] == ["inactive"]


def test_record_stream_on_a_freed_block_is_an_error(alloc):
    a = alloc.malloc(KiB)
    alloc.free(a)
    with pytest.raises(RuntimeError, match="not allocated"):
        alloc.record_stream(a, FakeStream("b"))


def test_double_free_is_an_error(alloc):
    a = alloc.malloc(KiB)
    alloc.free(a)
    with pytest.raises(RuntimeError, match="freed twice"):
        alloc.free(a)


def test_default_device_memory_needs_no_events():
    class InOrder(DeviceMemory):
        def alloc(self, nbytes):
            return object()

        def free(self, handle):
            pass

    alloc = CachingAllocator(InOrder())
    a = alloc.malloc(KiB)
    offset = a.offset
    alloc.record_stream(a, "other stream")
    alloc.free(a)                               # record_event returned None: free at once
    assert alloc.malloc(KiB).offset == offset


# -- empty_cache and out of memory -----------------------------------------------------

def test_empty_cache_returns_only_fully_free_segments(alloc, dev):
    a = alloc.malloc(KiB)                # small segment, stays in use
    b = alloc.malloc(KiB)
    big = alloc.malloc(12 * MiB)         # large segment, freed below
    alloc.free(b)
    alloc.free(big)
    assert alloc.memory_reserved() == 14 * MiB
    alloc.empty_cache()
    assert alloc.memory_reserved() == 2 * MiB
    assert list(dev.live.values()) == [2 * MiB]
    stats = alloc.memory_stats()
    assert stats["num_device_free"] == 1 and stats["segment.large_pool.current"] == 0
    assert stats["reserved_bytes.large_pool.freed"] == 12 * MiB
    check_invariants(alloc, dev, [a])
    alloc.free(a)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0 and dev.live == {}
    # the next request grows the cache again
    alloc.malloc(KiB)
    assert alloc.memory_reserved() == 2 * MiB


def test_empty_cache_waits_for_pending_events(alloc, dev):
    s1, s2 = FakeStream("a"), FakeStream("b")
    a = alloc.malloc(12 * MiB, s1)
    alloc.record_stream(a, s2)
    alloc.free(a)
    alloc.empty_cache()
    assert dev.synchronized == 1 and dev.live == {}
    assert alloc.memory_stats()["num_sync_all_streams"] == 1
    check_invariants(alloc, dev)


def test_out_of_memory_frees_the_cache_and_retries(dev):
    dev.capacity = 64 * MiB
    alloc = CachingAllocator(dev)
    s1, s2 = FakeStream("a"), FakeStream("b")
    alloc.free(alloc.malloc(40 * MiB, s1))       # cached on s1
    b = alloc.malloc(30 * MiB, s2)               # device full: the s1 cache is released
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0
    assert stats["num_device_free"] == 1 and stats["num_sync_all_streams"] == 1
    assert dev.alloc_calls == [40 * MiB, 30 * MiB, 30 * MiB]
    check_invariants(alloc, dev, [b])


def test_out_of_memory_error_and_state_afterwards(dev):
    dev.capacity = 64 * MiB
    alloc = CachingAllocator(dev)
    live = [alloc.malloc(30 * MiB), alloc.malloc(KiB)]
    alloc.free(alloc.malloc(KiB))
    cached = alloc.malloc(12 * MiB)
    alloc.free(cached)                           # a fully free segment, released by the retry
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(40 * MiB)
    msg = str(info.value)
    assert "Out of memory on fake:0. Tried to allocate 40.00 MiB." in msg
    assert "fake:0 has a total capacity of 64.00 MiB of which 32.00 MiB is free." in msg
    assert "30.00 MiB is allocated by ember" in msg
    assert "2.00 MiB is reserved by ember but unallocated" in msg
    assert (info.value.nbytes, info.value.alloc_size, info.value.device) == (
        40 * MiB, 40 * MiB, "fake:0")
    assert isinstance(info.value, RuntimeError)
    stats = alloc.memory_stats()
    assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 1
    assert stats["num_device_free"] == 1         # the free 12 MiB segment went back
    check_invariants(alloc, dev, live)
    # smaller requests still work and the books still balance
    live += [alloc.malloc(20 * MiB), alloc.malloc(100)]
    check_invariants(alloc, dev, live)
    for b in live:
        alloc.free(b)
    alloc.empty_cache()
    check_invariants(alloc, dev)
    assert dev.live == {}


def test_out_of_memory_message_in_gib_and_memory_error_from_device():
    dev = FakeDevice(capacity=3 * GiB // 2, raise_oom=True)
    alloc = CachingAllocator(dev)
    with pytest.raises(OutOfMemoryError, match=r"Tried to allocate 2\.00 GiB\. fake:0 has a "
                                                r"total capacity of 1\.50 GiB of which "
                                                r"1\.50 GiB is free.* 0 bytes is allocated"):
        alloc.malloc(2 * GiB)
    assert alloc.memory_stats()["num_ooms"] == 1
    assert ember.OutOfMemoryError is OutOfMemoryError


def test_out_of_memory_waits_for_events_and_reuses_a_released_block(dev):
    dev.capacity = 2 * MiB                       # room for one small segment
    alloc = CachingAllocator(dev)
    s1, s2 = FakeStream("a"), FakeStream("b")
    keep = alloc.malloc(KiB, s1)
    a = alloc.malloc(MiB, s1)
    offset = a.offset
    alloc.record_stream(a, s2)
    alloc.free(a)                                # pending; 1023 KiB free after it
    d = alloc.malloc(MiB, s1)                    # device full: wait for s2, then reuse a
    assert (d.segment, d.offset) == (keep.segment, offset)
    assert dev.synchronized == 1 and len(dev.live) == 1
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0
    check_invariants(alloc, dev, [keep, d])


def test_out_of_memory_with_unknown_capacity():
    class NoInfo(DeviceMemory):
        name = "thing:3"

        def alloc(self, nbytes):
            return None

    with pytest.raises(OutOfMemoryError, match="thing:3 does not report its capacity"):
        CachingAllocator(NoInfo()).malloc(KiB)


# -- statistics ------------------------------------------------------------------------

def torch_memory_stats_keys():
    """The key set of torch.cuda.memory_stats() (PyTorch 2.x), written out by hand."""
    keys = {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
            "num_device_free", "max_split_size"}
    for stat in ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                 "reserved_bytes", "active_bytes", "inactive_split_bytes",
                 "requested_bytes"):
        for pool in ("all", "large_pool", "small_pool"):
            for metric in ("current", "peak", "allocated", "freed"):
                keys.add(f"{stat}.{pool}.{metric}")
    for stat in ("oversize_allocations", "oversize_segments"):
        for metric in ("current", "peak", "allocated", "freed"):
            keys.add(f"{stat}.{metric}")
    return keys


def test_memory_stats_has_pytorchs_keys_sorted(alloc):
    stats = alloc.memory_stats()
    assert set(stats) == torch_memory_stats_keys()
    assert list(stats) == sorted(stats)
    assert all(isinstance(v, int) for v in stats.values())
    assert stats["max_split_size"] == -1


def test_peaks_and_resets(alloc, dev):
    a = alloc.malloc(3 * MiB)
    alloc.free(a)
    b = alloc.malloc(KiB)
    assert alloc.max_memory_allocated() == 3 * MiB
    assert alloc.memory_allocated() == KiB
    assert alloc.max_memory_reserved() == alloc.memory_reserved() == 22 * MiB
    alloc.empty_cache()
    assert alloc.memory_reserved() == 2 * MiB and alloc.max_memory_reserved() == 22 * MiB
    alloc.reset_peak_memory_stats()
    assert alloc.max_memory_allocated() == KiB
    assert alloc.max_memory_reserved() == 2 * MiB
    stats = alloc.memory_stats()
    assert stats["allocation.all.peak"] == 1 and stats["segment.large_pool.peak"] == 0
    assert stats["allocation.all.allocated"] == 2       # accumulated totals are kept
    alloc.reset_accumulated_memory_stats()
    stats = alloc.memory_stats()
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 0
    assert stats["num_device_alloc"] == stats["num_device_free"] == 0
    assert stats["allocation.all.current"] == 1          # current values are kept
    alloc.free(b)
    assert alloc.memory_stats()["allocation.all.freed"] == 1


def test_memory_summary_table(alloc):
    blocks = [alloc.malloc(KiB), alloc.malloc(5 * MiB)]
    alloc.free(blocks[0])
    text = alloc.memory_summary()
    lines = text.splitlines()
    assert all(len(line) == 77 for line in lines)
    assert "fake:0" in lines[1]
    assert "Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed" in text
    for row in ("Allocated memory", "Active memory", "Requested memory", "Reserved memory",
                "Non-releasable memory", "Allocations", "Active allocs", "Reserved segments",
                "Non-releasable allocs", "from large pool", "from small pool"):
        assert f"| {row}" in text or f"|       {row}" in text
    assert "| Allocated memory      |   5120 KiB |   5121 KiB |   5121 KiB |   1024 B   |" in text
    assert "| Reserved segments     |       2    |       2    |       2    |       0    |" in text
    short = alloc.memory_summary(abbreviated=True)
    assert "from large pool" not in short and "Allocated memory" in short


# -- DeviceStorage ---------------------------------------------------------------------

def test_storage_frees_its_block_when_dropped(alloc, dev):
    s = alloc.storage(1000)
    assert isinstance(s, DeviceStorage) and isinstance(s.block, Block)
    assert (s.nbytes, s.handle, s.offset, s.allocator) == (1000, s.block.segment, 0, alloc)
    t = alloc.storage(1000)
    assert t.offset == 1024 and t.handle == s.handle
    assert alloc.memory_allocated() == 2048
    del s
    assert alloc.memory_allocated() == 1024
    del t
    assert alloc.memory_allocated() == 0 and alloc.memory_reserved() == 2 * MiB


def test_storage_on_a_stream_and_record_stream(alloc, dev):
    s1, s2 = FakeStream("a"), FakeStream("b")
    s = alloc.storage(KiB, s1)
    assert s.stream is s1
    offset = s.offset
    s.record_stream(s2)
    del s
    assert alloc.storage(KiB, s1).offset != offset
    s2.complete()
    assert alloc.storage(KiB, s1).offset == offset


def test_storage_freed_by_the_garbage_collector_inside_the_allocator(dev):
    """A finalizer that runs while the allocator holds its lock (the GC may run at any
    allocation) must neither deadlock nor corrupt the free lists."""
    alloc = CachingAllocator(dev)
    holder = [alloc.storage(KiB)]
    original = dev.alloc

    def alloc_and_collect(nbytes):
        holder.clear()                    # drops the storage while malloc holds the lock
        return original(nbytes)

    dev.alloc = alloc_and_collect
    b = alloc.malloc(12 * MiB)
    assert alloc.memory_allocated() == 12 * MiB
    check_invariants(alloc, dev, [b])


def test_storage_in_a_reference_cycle_is_freed_by_gc(alloc):
    class Node:
        pass

    n = Node()
    n.self = n
    n.storage = alloc.storage(KiB)
    del n
    gc.collect()
    assert alloc.memory_allocated() == 0


# -- threads, layering, speed ----------------------------------------------------------

def test_concurrent_malloc_and_free_keep_the_books(alloc, dev):
    errors = []

    def worker(seed):
        try:
            held = []
            for i in range(300):
                held.append(alloc.malloc((seed * 7919 + i * 104729) % (3 * MiB) + 1))
                if len(held) > 5:
                    alloc.free(held.pop(0))
            for b in held:
                alloc.free(b)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check_invariants(alloc, dev)
    assert alloc.memory_allocated() == 0


def test_allocator_imports_neither_frontend_nor_backends():
    tree = ast.parse(pathlib.Path(allocator_module.__file__).read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the allocator needs no other ember module"
            modules.add(node.module)
    assert modules <= {"__future__", "operator", "threading", "time", "bisect", "collections"}


# -- a property test -------------------------------------------------------------------

sizes = st.one_of(st.just(0), st.integers(1, 4 * KiB), st.integers(1, 2 * MiB),
                  st.integers(MiB, 24 * MiB))
mallocs = st.tuples(st.just("malloc"), sizes, st.integers(0, 2))
ops = st.one_of(
    mallocs, mallocs, mallocs,
    st.tuples(st.just("free"), st.integers(0, 1 << 16)),
    st.tuples(st.just("free"), st.integers(0, 1 << 16)),
    st.tuples(st.just("record"), st.integers(0, 1 << 16), st.integers(0, 2)),
    st.tuples(st.just("complete"), st.integers(0, 2)),
    st.tuples(st.just("empty_cache")),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=10, max_size=80))
def test_random_programs_keep_the_invariants(program):
    dev = FakeDevice(capacity=40 * MiB)         # small enough to run out now and then
    alloc = CachingAllocator(dev)
    streams = [None, FakeStream("a"), FakeStream("b")]
    live = []
    ooms = 0
    for op in program:
        kind = op[0]
        if kind == "malloc":
            try:
                b = alloc.malloc(op[1], streams[op[2]])
            except OutOfMemoryError:
                ooms += 1
                b = None
            if b is not None:
                assert b.stream is streams[op[2]]
                assert b.size >= op[1] and b.size % 512 == 0
                live.append(b)
        elif kind == "free" and live:
            alloc.free(live.pop(op[1] % len(live)))
        elif kind == "record" and live:
            s = streams[op[2]]
            if s is not None:
                alloc.record_stream(live[op[1] % len(live)], s)
        elif kind == "complete" and streams[op[1]] is not None:
            streams[op[1]].complete()
        elif kind == "empty_cache":
            alloc.empty_cache()
            # events were waited for; only segments holding live blocks remain
            assert all(any(b["state"] == "active_allocated" for b in s["blocks"])
                       for s in alloc.memory_snapshot())
        check_invariants(alloc, dev, live)
    assert alloc.memory_stats()["num_ooms"] == ooms
    for b in live:
        alloc.free(b)
    alloc.empty_cache()
    assert dev.live == {} and alloc.memory_reserved() == 0
    stats = alloc.memory_stats()
    assert stats["allocation.all.current"] == stats["active.all.current"] == 0
    assert stats["requested_bytes.all.current"] == 0
