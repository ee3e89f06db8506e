"""gather / scatter (assign, add, multiply; bounds errors) and sort."""
import numpy as np
import pytest

import ember
from ocl_helpers import N, T, layouts, np_dtype
from ember_opencl import _runtime as rt

rng = np.random.default_rng(3)


def take(x, idx, dim):
    """gather's oracle: index may be smaller than x in the other dims."""
    sl = tuple(slice(0, n) for n in idx.shape)
    sub = x[tuple(slice(None) if d == dim else sl[d] for d in range(x.ndim))]
    return np.take_along_axis(sub, idx, dim)


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.int16, ember.bool,
                                   ember.float64], ids=lambda d: d.name)
def test_gather(dtype):
    x = rng.integers(0, 2 if dtype is ember.bool else 50, (5, 7)).astype(np_dtype(dtype))
    for dim in (0, 1):
        idx = rng.integers(0, x.shape[dim], (4, 3) if dim == 0 else (5, 9))
        for name, t in layouts(x, dtype):
            got = ember.gather(t, dim, T(idx))
            np.testing.assert_array_equal(N(got), take(x, idx, dim), err_msg=name)
        # a transposed index tensor
        got = ember.gather(T(x, dtype), dim, T(np.ascontiguousarray(idx.T)).t())
        np.testing.assert_array_equal(N(got), take(x, idx, dim))


def test_embedding_style_index_select():
    w = rng.standard_normal((10, 4)).astype(np.float32)
    idx = np.array([3, 3, 0, 9])
    np.testing.assert_array_equal(N(ember.index_select(T(w), 0, T(idx))), w[idx])


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.float64],
                         ids=lambda d: d.name)
def test_scatter_assign_add_multiply(dtype):
    base = np.zeros((4, 5))
    idx = np.stack([rng.permutation(4)[:3] for _ in range(5)], 1)   # unique per column
    src = rng.integers(1, 9, (3, 5)).astype(np_dtype(dtype))
    exp = base.copy()
    np.put_along_axis(exp, idx, src, 0)
    for name, t in layouts(base.astype(np_dtype(dtype)), dtype):
        t.scatter_(0, T(idx), T(src, dtype))
        np.testing.assert_array_equal(N(t), exp, err_msg=name)
    dup = rng.integers(0, 4, (6, 5))                                 # duplicates accumulate
    dsrc = rng.integers(1, 5, (6, 5)).astype(np_dtype(dtype))
    exp = np.zeros((4, 5))
    np.add.at(exp, (dup, np.arange(5)[None, :].repeat(6, 0)), dsrc)
    t = T(np.zeros((4, 5)), dtype)
    t.scatter_add_(0, T(dup), T(dsrc, dtype))
    np.testing.assert_array_equal(N(t), exp)
    t = T(np.ones((4, 5)), dtype)
    from ember.dispatcher.schema import OPS
    OPS["scatter"].kernels["opencl"](t, 0, T(dup), T(dsrc, dtype), reduce="multiply")
    exp = np.ones((4, 5))
    np.multiply.at(exp, (dup, np.arange(5)[None, :].repeat(6, 0)), dsrc)
    np.testing.assert_array_equal(N(t), exp)


def test_scatter_last_write_wins_in_index_order():
    t = T(np.zeros(3, np.float32))
    t.scatter_(0, T([1, 1, 1]), T(np.array([5.0, 6.0, 7.0], np.float32)))
    assert N(t).tolist() == [0, 7, 0]


def test_out_of_bounds_is_reported_at_the_next_synchronisation():
    t = T(np.zeros((3, 4), np.float32))
    bad = ember.gather(t, 1, T([[0, 4]]))           # enqueued; no error yet (asynchronous)
    with pytest.raises(IndexError, match=r"gather\(\): index 4 is out of bounds for dimension "
                                         r"1 with size 4"):
        N(bad)
    N(t)                                              # the error was reported once
    t.scatter_(0, T([[1, 3]]), 1.0)                   # index 3 out of range: nothing written
    with pytest.raises(IndexError, match="scatter.*index 3 is out of bounds"):
        rt.device(0).synchronize()
    np.testing.assert_array_equal(N(t), np.zeros((3, 4)))


def test_integer_division_by_zero_is_reported():
    q = ember.div(T([4, 5]), T([2, 0]), rounding_mode="floor")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        N(q)
    # a negative tensor exponent of an integer is no error (PyTorch: 1, -1 or 0)
    np.testing.assert_array_equal(N(T([2, -1, 1]) ** T([-1, -3, -2])), [0, -1, 1])


@pytest.mark.parametrize("length", [1, 7, 1000, 3000])
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.float16, ember.uint8,
                                   ember.float64], ids=lambda d: d.name)
def test_sort(dtype, length):
    x = rng.integers(0, 20, (3, length)).astype(np_dtype(dtype))   # ties: stable order
    for name, t in layouts(x, dtype):
        for desc in (False, True):
            v, i = ember.sort(t, 1, descending=desc)
            order = np.argsort(-x.astype(np.float64) if desc else x, 1, kind="stable")
            np.testing.assert_array_equal(N(i), order, err_msg=f"{name} desc={desc}")
            np.testing.assert_array_equal(N(v), np.take_along_axis(x, order, 1))
    v, i = ember.sort(T(x, dtype), 0)
    np.testing.assert_array_equal(N(i), np.argsort(x, 0, kind="stable"))


def test_sort_nan_and_topk():
    x = np.array([3.0, np.nan, 1.0, np.nan, 2.0], np.float32)
    v, i = ember.sort(T(x))
    assert N(i).tolist() == [2, 4, 0, 1, 3]
    v, i = ember.sort(T(x), descending=True)
    assert N(i).tolist() == [1, 3, 0, 4, 2]
    v, i = ember.topk(T(np.arange(10.0, dtype=np.float32)), 3)
    assert N(v).tolist() == [9, 8, 7]
