"""The CUDA backend's C++ caching-allocator policy, on a fake device (host memory, events
the test completes), mirroring tests/core/test_allocator.py case by case: the C++ core must
behave exactly like the dispatcher's Python policy, and report the same statistics.

Streams are integers here (0 is the default stream); ``dev.complete(s)`` finishes the work
queued on stream ``s``.
"""
import pytest

from ember.dispatcher.allocator import CachingAllocator as PyCachingAllocator
from ember.dispatcher.allocator import DeviceMemory, OutOfMemoryError

policy = pytest.importorskip("ember_cuda._policy_test")

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
S1, S2, S3 = 1, 2, 3


@pytest.fixture
def dev():
    return policy.FakeDevice(GiB)


@pytest.fixture
def alloc(dev):
    return policy.CachingAllocator(dev)


def check_invariants(alloc, dev, live_blocks=()):
    stats = alloc.memory_stats()
    snap = alloc.memory_snapshot()
    live = dev.live
    assert {s["handle"] for s in snap} == set(live)
    for s in snap:
        assert live[s["handle"]] == s["total_size"]
    assert alloc.memory_reserved() == dev.used == stats["reserved_bytes.all.current"]
    assert stats["segment.all.current"] == len(live)
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
    by_segment = {}
    for b in live_blocks:
        by_segment.setdefault(b.segment, []).append(b)
    for handle, blocks in by_segment.items():
        blocks.sort(key=lambda b: b.offset)
        for a, b in zip(blocks, blocks[1:]):
            assert a.offset + a.size <= b.offset
        assert blocks[-1].offset + blocks[-1].size <= live[handle]
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
            assert stats[p + "peak"] >= stats[p + "current"] >= 0
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
    (KiB, "small_pool", 2 * MiB), (MiB, "small_pool", 2 * MiB),
    (MiB + 1, "large_pool", 20 * MiB), (5 * MiB, "large_pool", 20 * MiB),
    (10 * MiB - 512, "large_pool", 20 * MiB), (10 * MiB - 1, "large_pool", 10 * MiB),
    (10 * MiB, "large_pool", 10 * MiB), (11 * MiB, "large_pool", 12 * MiB),
    (11 * MiB + 1, "large_pool", 12 * MiB), (100 * MiB, "large_pool", 100 * MiB),
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
    alloc.record_stream(None, S1)
    assert dev.alloc_calls == [] and alloc.memory_stats()["allocation.all.allocated"] == 0
    with pytest.raises(ValueError, match="negative"):
        alloc.malloc(-1)
    with pytest.raises(TypeError):
        alloc.malloc(1.5)


# -- splitting, best fit, merging ------------------------------------------------------

def test_best_fit_takes_the_smallest_block_that_fits(alloc, dev):
    h16 = alloc.malloc(16 * KiB)
    keep1 = alloc.malloc(KiB)
    h8 = alloc.malloc(8 * KiB)
    keep2 = alloc.malloc(KiB)
    off16, off8 = h16.offset, h8.offset
    alloc.free(h16)
    alloc.free(h8)
    b = alloc.malloc(6 * KiB)
    assert b.offset == off8
    c = alloc.malloc(12 * KiB)
    assert c.offset == off16
    assert dev.alloc_calls == [2 * MiB]
    check_invariants(alloc, dev, [keep1, keep2, b, c])


def test_best_fit_prefers_the_lowest_address_among_equal_sizes(alloc):
    blocks = [alloc.malloc(4 * KiB) for _ in range(6)]
    for i in (4, 2):
        alloc.free(blocks[i])
    assert alloc.malloc(4 * KiB).offset == blocks[2].offset


def test_small_pool_splits_a_remainder_of_512_bytes(alloc, dev):
    a = alloc.malloc(MiB)
    b = alloc.malloc(MiB - 512)
    assert b.size == MiB - 512
    c = alloc.malloc(512)
    assert c.offset == 2 * MiB - 512 and c.segment == a.segment
    assert dev.alloc_calls == [2 * MiB]
    check_invariants(alloc, dev, [a, b, c])


def test_large_pool_keeps_a_remainder_of_1_mib_unsplit(alloc, dev):
    a = alloc.malloc(3 * MiB // 2)
    b = alloc.malloc(35 * MiB // 2)
    assert b.segment == a.segment and b.size == 37 * MiB // 2
    assert alloc.memory_allocated() == 20 * MiB and dev.alloc_calls == [20 * MiB]
    check_invariants(alloc, dev, [a, b])


def test_large_pool_splits_a_remainder_over_1_mib(alloc, dev):
    a = alloc.malloc(5 * MiB)
    b = alloc.malloc(13 * MiB)
    assert (b.segment, b.offset, b.size) == (a.segment, 5 * MiB, 13 * MiB)
    c = alloc.malloc(2 * MiB)
    assert (c.segment, c.offset) == (a.segment, 18 * MiB)
    assert dev.alloc_calls == [20 * MiB]


def test_free_merges_with_free_neighbours(alloc, dev):
    a, b, c = (alloc.malloc(64 * KiB) for _ in range(3))
    assert alloc.memory_stats()["inactive_split.all.current"] == 1
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
    assert stats["inactive_split.all.current"] == stats["inactive_split_bytes.all.current"] == 0
    check_invariants(alloc, dev)
    d = alloc.malloc(MiB)
    assert d.offset == 0 and dev.alloc_calls == [2 * MiB]


def test_steady_state_makes_no_device_allocations(alloc, dev):
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
    a = alloc.malloc(4 * KiB, S1)
    handle, offset = a.segment, a.offset
    alloc.free(a)
    b = alloc.malloc(4 * KiB, S2)
    assert b.segment != handle and len(dev.alloc_calls) == 2
    c = alloc.malloc(4 * KiB, S1)
    assert (c.segment, c.offset) == (handle, offset)
    assert b.stream == S2 and c.stream == S1
    d = alloc.malloc(4 * KiB)
    assert d.segment not in (b.segment, c.segment)
    check_invariants(alloc, dev, [b, c, d])


def test_record_stream_holds_the_block_until_the_event_completes(alloc, dev):
    a = alloc.malloc(4 * KiB, S1)
    offset = a.offset
    alloc.record_stream(a, S2)
    alloc.record_stream(a, S1)
    assert dev.event_streams == []
    alloc.free(a)
    assert dev.event_streams == [S2]
    stats = alloc.memory_stats()
    assert alloc.memory_allocated() == 0
    assert stats["active_bytes.all.current"] == 4 * KiB
    assert alloc.memory_snapshot()[0]["blocks"][0]["state"] == "active_awaiting_free"
    check_invariants(alloc, dev)
    b = alloc.malloc(4 * KiB, S1)
    assert b.offset != offset
    dev.complete(S2)
    c = alloc.malloc(4 * KiB, S1)
    assert c.offset == offset
    assert alloc.memory_stats()["active_bytes.all.current"] == 8 * KiB
    assert dev.synchronized == 0
    check_invariants(alloc, dev, [b, c])


def test_record_stream_waits_on_every_stream_used(alloc, dev):
    a = alloc.malloc(MiB * 4, S1)
    offset = a.offset
    alloc.record_stream(a, S2)
    alloc.record_stream(a, S3)
    alloc.free(a)
    dev.complete(S2)
    assert alloc.malloc(MiB * 4, S1).offset != offset
    dev.complete(S3)
    assert alloc.malloc(MiB * 4, S1).offset == offset


def test_pending_blocks_merge_when_released(alloc, dev):
    a, b = alloc.malloc(8 * KiB, S1), alloc.malloc(8 * KiB, S1)
    alloc.record_stream(a, S2)
    alloc.free(a)
    alloc.free(b)
    dev.complete(S2)
    alloc.malloc(4 * KiB, S3)        # any malloc processes events
    seg = [s for s in alloc.memory_snapshot() if s["stream"] == S1][0]
    assert [blk["state"] for blk in seg["blocks"]] == ["inactive"]


def test_record_stream_on_a_freed_block_is_an_error(alloc):
    a = alloc.malloc(KiB)
    alloc.free(a)
    with pytest.raises(RuntimeError, match="not allocated"):
        alloc.record_stream(a, S2)


def test_double_free_is_an_error(alloc):
    a = alloc.malloc(KiB)
    alloc.free(a)
    with pytest.raises(RuntimeError, match="freed twice"):
        alloc.free(a)


# -- empty_cache and out of memory -----------------------------------------------------

def test_empty_cache_returns_only_fully_free_segments(alloc, dev):
    a = alloc.malloc(KiB)
    b = alloc.malloc(KiB)
    big = alloc.malloc(12 * MiB)
    alloc.free(b)
    alloc.free(big)
    assert alloc.memory_reserved() == 14 * MiB
    alloc.empty_cache()
    assert alloc.memory_reserved() == 2 * MiB and list(dev.live.values()) == [2 * MiB]
    stats = alloc.memory_stats()
    assert stats["num_device_free"] == 1 and stats["segment.large_pool.current"] == 0
    assert stats["reserved_bytes.large_pool.freed"] == 12 * MiB
    check_invariants(alloc, dev, [a])
    alloc.free(a)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0 and dev.live == {}
    alloc.malloc(KiB)
    assert alloc.memory_reserved() == 2 * MiB


def test_empty_cache_waits_for_pending_events(alloc, dev):
    a = alloc.malloc(12 * MiB, S1)
    alloc.record_stream(a, S2)
    alloc.free(a)
    alloc.empty_cache()
    assert dev.synchronized == 1 and dev.live == {}
    assert alloc.memory_stats()["num_sync_all_streams"] == 1
    check_invariants(alloc, dev)


def test_out_of_memory_frees_the_cache_and_retries():
    dev = policy.FakeDevice(64 * MiB)
    alloc = policy.CachingAllocator(dev)
    alloc.free(alloc.malloc(40 * MiB, S1))
    b = alloc.malloc(30 * MiB, S2)
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0
    assert stats["num_device_free"] == 1 and stats["num_sync_all_streams"] == 1
    assert dev.alloc_calls == [40 * MiB, 30 * MiB, 30 * MiB]
    check_invariants(alloc, dev, [b])


def test_out_of_memory_error_and_state_afterwards():
    dev = policy.FakeDevice(64 * MiB)
    alloc = policy.CachingAllocator(dev)
    live = [alloc.malloc(30 * MiB), alloc.malloc(KiB)]
    alloc.free(alloc.malloc(KiB))
    alloc.free(alloc.malloc(12 * MiB))
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
    assert stats["num_device_free"] == 1
    check_invariants(alloc, dev, live)
    live += [alloc.malloc(20 * MiB), alloc.malloc(100)]
    check_invariants(alloc, dev, live)
    for b in live:
        alloc.free(b)
    alloc.empty_cache()
    check_invariants(alloc, dev)
    assert dev.live == {}


def test_out_of_memory_message_in_gib():
    dev = policy.FakeDevice(3 * GiB // 2)
    with pytest.raises(OutOfMemoryError, match=r"Tried to allocate 2\.00 GiB\. fake:0 has a "
                                                r"total capacity of 1\.50 GiB of which "
                                                r"1\.50 GiB is free.* 0 bytes is allocated"):
        policy.CachingAllocator(dev).malloc(2 * GiB)


def test_out_of_memory_waits_for_events_and_reuses_a_released_block():
    dev = policy.FakeDevice(2 * MiB)
    alloc = policy.CachingAllocator(dev)
    keep = alloc.malloc(KiB, S1)
    a = alloc.malloc(MiB, S1)
    offset = a.offset
    alloc.record_stream(a, S2)
    alloc.free(a)
    d = alloc.malloc(MiB, S1)
    assert (d.segment, d.offset) == (keep.segment, offset)
    assert dev.synchronized == 1 and len(dev.live) == 1
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0
    check_invariants(alloc, dev, [keep, d])


def test_out_of_memory_with_unknown_capacity():
    dev = policy.FakeDevice(0)
    dev.report_capacity = False
    dev.name = "thing:3"
    with pytest.raises(OutOfMemoryError, match="thing:3 does not report its capacity"):
        policy.CachingAllocator(dev).malloc(KiB)


# -- statistics: the same keys and values as the dispatcher's Python policy -------------

class _PyFake(DeviceMemory):
    name = "fake:0"

    def alloc(self, nbytes):
        return object()

    def free(self, handle):
        pass

    def mem_get_info(self):
        return GiB, GiB


def test_memory_stats_keys_equal_the_python_allocators(alloc):
    stats = alloc.memory_stats()
    py_stats = PyCachingAllocator(_PyFake()).memory_stats()
    assert list(stats) == list(py_stats)          # same keys, same (sorted) order
    assert all(isinstance(v, int) for v in stats.values())
    assert stats["max_split_size"] == -1


def test_same_program_same_statistics_as_the_python_policy(alloc):
    py = PyCachingAllocator(_PyFake())
    sizes = [300, 3 * MiB, 64 * KiB, 12 * MiB, 700 * KiB, 1, MiB, MiB + 1, 25 * MiB]
    held_c, held_p = [], []
    for i, n in enumerate(sizes * 3):
        held_c.append(alloc.malloc(n))
        held_p.append(py.malloc(n))
        if i % 3 == 2:
            alloc.free(held_c.pop(1))
            py.free(held_p.pop(1))
    assert [b.offset for b in held_c] == [b.offset for b in held_p]
    assert alloc.memory_stats() == py.memory_stats()
    alloc.empty_cache()
    py.empty_cache()
    assert alloc.memory_stats() == py.memory_stats()


def test_memory_limit_as_the_python_policy(alloc, dev):
    """set_per_process_memory_fraction's limit: a segment beyond it frees the cache and
    retries, then raises OutOfMemoryError naming the limit, as the Python policy does."""
    py = PyCachingAllocator(_PyFake())
    _, total = py._memory.mem_get_info()
    py.set_memory_fraction(0.25)
    alloc.set_limit(int(total * 0.25), 0.25)
    for a in (alloc, py):
        big = a.malloc(int(total * 0.15))
        a.free(big)                       # cached: freed for the next request
        keep = a.malloc(int(total * 0.2))
        with pytest.raises(OutOfMemoryError, match=r"set_per_process_memory_fraction\(0.25\)"):
            a.malloc(int(total * 0.1))
        a.free(keep)
    assert alloc.memory_stats() == py.memory_stats()
    alloc.set_limit(-1, 1.0)
    alloc.free(alloc.malloc(int(total * 0.5)))


def test_peaks_and_resets(alloc):
    a = alloc.malloc(3 * MiB)
    alloc.free(a)
    b = alloc.malloc(KiB)
    assert alloc.max_memory_allocated() == 3 * MiB and alloc.memory_allocated() == KiB
    assert alloc.max_memory_reserved() == alloc.memory_reserved() == 22 * MiB
    alloc.empty_cache()
    assert alloc.memory_reserved() == 2 * MiB and alloc.max_memory_reserved() == 22 * MiB
    alloc.reset_peak_memory_stats()
    assert alloc.max_memory_allocated() == KiB and alloc.max_memory_reserved() == 2 * MiB
    stats = alloc.memory_stats()
    assert stats["allocation.all.peak"] == 1 and stats["segment.large_pool.peak"] == 0
    assert stats["allocation.all.allocated"] == 2
    alloc.reset_accumulated_memory_stats()
    stats = alloc.memory_stats()
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 0
    assert stats["num_device_alloc"] == stats["num_device_free"] == 0
    assert stats["allocation.all.current"] == 1
    alloc.free(b)
    assert alloc.memory_stats()["allocation.all.freed"] == 1


def test_memory_summary_table(alloc):
    blocks = [alloc.malloc(KiB), alloc.malloc(5 * MiB)]
    alloc.free(blocks[0])
    text = alloc.memory_summary()
    assert all(len(line) == 77 for line in text.splitlines())
    assert "| Allocated memory      |   5120 KiB |   5121 KiB |   5121 KiB |   1024 B   |" in text
    assert "| Reserved segments     |       2    |       2    |       2    |       0    |" in text
    assert "from large pool" not in alloc.memory_summary(abbreviated=True)


# -- a random program, checked against the invariants and the Python policy ---------------

def test_random_programs_match_the_python_policy():
    import random

    class PyFakeEvents(DeviceMemory):
        name = "fake:0"

        def __init__(self, capacity):
            self.capacity, self.used, self.events = capacity, 0, []

        def alloc(self, n):
            if self.used + n > self.capacity:
                return None
            self.used += n
            return n

        def free(self, handle):
            self.used -= handle

        def mem_get_info(self):
            return self.capacity - self.used, self.capacity

        def record_event(self, stream):
            e = [stream, False]
            self.events.append(e)
            return e

        def event_done(self, e):
            return e[1]

        def event_synchronize(self, e):
            e[1] = True

    rng = random.Random(1234)
    for _ in range(30):
        dev = policy.FakeDevice(40 * MiB)
        alloc = policy.CachingAllocator(dev)
        pdev = PyFakeEvents(40 * MiB)
        py = PyCachingAllocator(pdev)
        live_c, live_p = [], []
        for _ in range(80):
            op = rng.random()
            if op < 0.5:
                n = rng.choice([0, rng.randint(1, 4 * KiB), rng.randint(1, 2 * MiB),
                                rng.randint(MiB, 24 * MiB)])
                s = rng.randint(0, 2)
                try:
                    b = alloc.malloc(n, s)
                except OutOfMemoryError:
                    b = "oom"
                try:
                    pb = py.malloc(n, s)
                except OutOfMemoryError:
                    pb = "oom"
                assert (b == "oom") == (pb == "oom")
                if b not in (None, "oom"):
                    assert (b.offset, b.size) == (pb.offset, pb.size)
                    live_c.append(b)
                    live_p.append(pb)
            elif op < 0.75 and live_c:
                i = rng.randrange(len(live_c))
                alloc.free(live_c.pop(i))
                py.free(live_p.pop(i))
            elif op < 0.85 and live_c:
                i, s = rng.randrange(len(live_c)), rng.randint(1, 2)
                alloc.record_stream(live_c[i], s)
                py.record_stream(live_p[i], s)
            elif op < 0.97:
                s = rng.randint(1, 2)
                dev.complete(s)
                for e in pdev.events:
                    if e[0] == s:
                        e[1] = True
            else:
                alloc.empty_cache()
                py.empty_cache()
            check_invariants(alloc, dev, live_c)
            assert alloc.memory_stats() == py.memory_stats()
