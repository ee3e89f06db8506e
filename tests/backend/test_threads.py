"""ember's own thread pool: thread-count control, determinism, and the GIL released."""
import threading
import time

import numpy as np
import pytest

import ember


def test_set_get_num_threads_roundtrip():
    n0 = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        ember.set_num_threads(2)
        assert ember.get_num_threads() == 2
    finally:
        ember.set_num_threads(n0)
    with pytest.raises(RuntimeError, match="positive"):
        ember.set_num_threads(0)


def _results(x):
    g = ember.Generator().manual_seed(3)
    return x.sum().item(), (x * 2 + 1).numpy().copy(), ember.rand(100_000, generator=g).numpy()


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal(3_000_001).astype(np.float32))
    n0 = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = _results(x)
        ember.set_num_threads(2)
        two = _results(x)
    finally:
        ember.set_num_threads(n0)
    assert one[0] == pytest.approx(two[0], rel=1e-6)
    np.testing.assert_array_equal(one[1], two[1])
    np.testing.assert_array_equal(one[2], two[2])   # counter-based RNG
    ref = float(np.sum(x.numpy().astype(np.float64)))
    assert one[0] == pytest.approx(ref, rel=1e-5, abs=1e-2)


def test_kernels_release_the_gil():
    """A Python thread keeps running while a long kernel runs in another thread."""
    x = ember.rand(4_000_000, generator=ember.Generator().manual_seed(0))
    t0 = time.perf_counter()
    x.sort()
    kernel_time = time.perf_counter() - t0
    stamps = []
    done = threading.Event()

    def work():
        x.sort()
        done.set()

    th = threading.Thread(target=work)
    th.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    th.join()
    gaps = np.diff(stamps) if len(stamps) > 1 else np.array([kernel_time])
    # with the GIL held, the main thread would stall for the whole kernel
    assert gaps.max() < 0.5 * kernel_time, (gaps.max(), kernel_time)
