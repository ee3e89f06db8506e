"""The CPU backend's host block cache (freed blocks of at least 64 KiB kept by size, 512 MiB
at most): a full cache makes room for a newly freed block by freeing blocks of the sizes
used least recently, so the shapes of the model that runs now are the ones kept."""
import pytest

import ember

C = pytest.importorskip("ember_cpu._C")
MIB = 1 << 20


@pytest.fixture
def empty_cache():
    ember.zeros(1)
    C.empty_cache()
    yield
    C.empty_cache()


def test_a_full_cache_evicts_the_least_recently_used_sizes(empty_cache):
    olds = [ember.empty(16 * MIB, dtype=ember.float32) for _ in range(8)]  # 8 x 64 MiB
    del olds
    assert C.cached_bytes() == 512 * MIB                        # full
    y = ember.empty(MIB // 4, dtype=ember.float32)               # 1 MiB
    ptr = y.data_ptr()
    del y                                                        # makes room for itself
    assert C.cached_bytes() == 7 * 64 * MIB + MIB
    again = ember.empty(MIB // 4, dtype=ember.float32)
    assert again.data_ptr() == ptr                               # handed back from the cache
    del again
    # a block of a size in use is kept, others go first: the 1 MiB class was used last
    z = ember.empty(32 * MIB, dtype=ember.float32)               # 128 MiB
    del z
    assert C.cached_bytes() == 5 * 64 * MIB + MIB + 128 * MIB


def test_blocks_larger_than_the_cache_are_not_kept(empty_cache):
    x = ember.empty(160 * MIB, dtype=ember.float32)              # 640 MiB
    del x
    assert C.cached_bytes() == 0


def test_empty_cache_returns_everything(empty_cache):
    xs = [ember.empty(MIB, dtype=ember.float32) for _ in range(3)]
    del xs
    assert C.cached_bytes() == 12 * MIB
    assert C.empty_cache() == 12 * MIB
    assert C.cached_bytes() == 0
