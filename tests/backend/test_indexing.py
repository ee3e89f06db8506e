"""Advanced indexing, gather/scatter and friends on every device, against NumPy.

NumPy's advanced indexing agrees with PyTorch's except when an int and an index tensor
are separated by a slice (``x[1, :, [0, 2]]``); those keys are not used here.
"""
from functools import partial

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember
import helpers
from conftest import T
from helpers import check, hset, other_device


def base(shape=(3, 4, 5), dtype=np.float64):
    return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


# ``x`` as a contiguous tensor and as two non-contiguous views (the strided one skips -1s)
layouts = partial(helpers.layouts, fill=-1)


def _idx(a):
    return np.asarray(a, np.int64)


def get_keys(device):
    """(ember key, NumPy key) pairs for a (3, 4, 5) tensor."""
    i = [0, 2]
    j = [[1, 2], [0, 2]]
    m1 = np.array([True, False, True])
    m2 = np.array([[True, False, True, False], [False, False, True, True],
                   [True, True, True, False]])
    mlast = np.array([False, True, True, False, True])
    return [
        (T(i, device), _idx(i)),
        ([2, 0, 1], [2, 0, 1]),
        (T([-1, 0, -3], device), _idx([-1, 0, -3])),
        (T(j, device), _idx(j)),
        (T(i, device, ember.int32), _idx(i)),
        ((slice(None), T([3, 0, 3], device)), (slice(None), _idx([3, 0, 3]))),
        ((T(i, device), T([1, 3], device)), (_idx(i), _idx([1, 3]))),
        ((T([[0], [2]], device), T([[1, 2, 3]], device)), (_idx([[0], [2]]), _idx([[1, 2, 3]]))),
        ((T(i, device), slice(1, 3)), (_idx(i), slice(1, 3))),
        ((T(i, device), slice(None), T([4, 0], device)), (_idx(i), slice(None), _idx([4, 0]))),
        ((1, T([0, 2], device)), (1, _idx([0, 2]))),
        ((T([0, 2], device), 1), (_idx([0, 2]), 1)),
        ((slice(None, None, 2), T([1, 2], device)), (slice(None, None, 2), _idx([1, 2]))),
        ((Ellipsis, T([0, 4], device)), (Ellipsis, _idx([0, 4]))),
        ((T([0, 2], device), Ellipsis), (_idx([0, 2]), Ellipsis)),
        ((None, T([0, 1], device)), (None, _idx([0, 1]))),
        ((T([0, 1], device), None), (_idx([0, 1]), None)),
        (([0, 1], [1, 2]), ([0, 1], [1, 2])),
        ((slice(None), [1, 2], [3, 4]), (slice(None), [1, 2], [3, 4])),
        (T(m1, device), m1),
        (T(m2, device), m2),
        ((slice(None), slice(None), T(mlast, device)), (slice(None), slice(None), mlast)),
        ((T(m1, device), slice(1, 3)), (m1, slice(1, 3))),
        ((1, T(np.array([True, False, False, True]), device)),
         (1, np.array([True, False, False, True]))),
        (T(np.zeros(0, np.int64), device), np.zeros(0, np.int64)),
        ([], np.zeros(0, np.int64)),
        (T(np.zeros(3, bool), device), np.zeros(3, bool)),
    ]


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.uint8, ember.bool],
                         ids=lambda d: d.name)
def test_advanced_get_matches_numpy(device, dtype):
    x = base()
    if dtype is ember.bool:
        x = x % 3 == 0
    for ekey, nkey in get_keys(device):
        exp = x[nkey]
        for t in layouts(x, device, dtype):
            check(t[ekey], exp, dtype)


def test_full_boolean_mask_and_comparison_mask(device):
    x = base()
    for t in layouts(x, device, ember.float32):
        check(t[t > 30], x[x > 30], ember.float32)
        check(t[t < -5], x[x < -5], ember.float32)
    t = T(x, device)
    check(t[T(x % 7 == 0, device)], x[x % 7 == 0])


def test_advanced_get_returns_a_copy(device):
    x = base((3, 4))
    t = T(x, device)
    g = t[[0, 2]]
    g += 100
    check(t, x)


def test_advanced_set_matches_numpy(device):
    x0 = base()
    cases = [
        (lambda d: T([0, 2], d), _idx([0, 2]), 7.0),
        (lambda d: (slice(None), T([3, 0], d)), (slice(None), _idx([3, 0])), -1.0),
        (lambda d: ([0, 1], [1, 2]), ([0, 1], [1, 2]), np.array([5.0, 6.0, 7.0, 8.0, 9.0])),
        (lambda d: (T([0, 2], d), slice(None), T([4, 0], d)), (_idx([0, 2]), slice(None),
                                                               _idx([4, 0])),
         np.arange(8.0).reshape(2, 4)),
        (lambda d: T(x0 > 40, d), x0 > 40, 0.0),
        (lambda d: T(x0 % 5 == 0, d), x0 % 5 == 0, np.arange(12.0)),
        (lambda d: (1, T(np.array([True, False, True, False]), d)),
         (1, np.array([True, False, True, False])), np.arange(5.0)),
        (lambda d: (Ellipsis, T([-1], d)), (Ellipsis, _idx([-1])), np.arange(4.0)[:, None]),
        (lambda d: (T([[0], [2]], d), T([[1, 3]], d)), (_idx([[0], [2]]), _idx([[1, 3]])),
         np.array([1.0, 2.0, 3.0, 4.0, 5.0])),
    ]
    for ekey, nkey, val in cases:
        exp = x0.copy()
        exp[nkey] = val
        for t in layouts(x0, device, ember.float32):
            v = T(val, device, ember.float32) if isinstance(val, np.ndarray) else val
            t[ekey(device)] = v
            check(t, exp, ember.float32)


def test_advanced_set_writes_through_views_into_the_base(device):
    x = base((4, 6))
    t = T(x, device)
    v = t.t()                       # (6, 4) view
    v[[0, 5]] = -1.0
    exp = x.copy()
    exp[:, [0, 5]] = -1.0
    check(t, exp)
    w = t[1:, ::2]                  # (3, 3) view with offset and step
    w[T(np.array([True, False, True]), device)] = 9.0
    exp[1:, ::2][np.array([True, False, True])] = 9.0
    check(t, exp)


def test_advanced_set_casts_value_and_bumps_version(device):
    t = T(np.zeros((2, 3)), device, ember.int32)
    v0 = t._version
    t[[0, 1], [2, 0]] = T([1.9, -2.9], device)        # float values into int: truncated
    assert t._version > v0
    check(t, [[0, 0, 1], [-2, 0, 0]], ember.int32)
    t[t == 0] = 5
    check(t, [[5, 5, 1], [-2, 5, 5]], ember.int32)


def test_index_put_accumulate(device):
    x = np.zeros(5)
    t = T(x, device, ember.float32)
    idx = np.array([0, 1, 1, 3, 1])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    t.index_put_((T(idx, device),), T(vals, device, ember.float32), accumulate=True)
    exp = x.copy()
    np.add.at(exp, idx, vals)
    check(t, exp)
    r = t.index_put((T([4], device),), T([10.0], device, ember.float32))
    exp2 = exp.copy()
    exp2[4] = 10.0
    check(r, exp2)
    check(t, exp)                   # the out-of-place form left t alone


def test_out_of_range_indices_raise_index_error(device):
    x = base((3, 4))
    t = T(x, device)
    for key in ([3], [-4], T([0, 5], device), (slice(None), T([4], device)), ([0], [4]),
                (T([1], device), T([-5], device))):
        with pytest.raises(IndexError, match="out of bounds|out of range"):
            t[key]
        with pytest.raises(IndexError):
            t[key] = 1.0
        check(t, x)                 # nothing was written
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[0, 4]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError):
        t[T(np.array([True, False]), device)]        # mask of the wrong shape
    with pytest.raises(IndexError):
        t[T([0.0, 1.0], device)]                     # float index tensor


# ---------------------------------------------------------------------------------------
# masked_fill / masked_select / index_select / gather / scatter / index_add / nonzero
# ---------------------------------------------------------------------------------------
def test_masked_fill(device):
    x = base((3, 4))
    mask = (x % 3 == 1)
    for t in layouts(x, device, ember.float32):
        check(t.masked_fill(T(mask, device), -1.0), np.where(mask, -1.0, x), ember.float32)
        check(ember.masked_fill(t, T(mask[0], device), 2.5), np.where(mask[0], 2.5, x))
        check(t.masked_fill(T(mask, device), T(7.0, device)), np.where(mask, 7.0, x))
    ti = T(x, device, ember.int64)
    check(ti.masked_fill(T(mask, device), 2.7), np.where(mask, 2, x), ember.int64)
    tb = T(x > 5, device)
    check(tb.masked_fill(T(mask, device), True), np.where(mask, True, x > 5), ember.bool)
    # in place, through a view
    t = T(x, device, ember.float32)
    v0 = t._version
    r = t[:, 1:].masked_fill_(T(mask[:, 1:], device), 0.0)
    exp = x.copy()
    exp[:, 1:][mask[:, 1:]] = 0.0
    check(t, exp)
    check(r, exp[:, 1:])
    assert t._version > v0
    with pytest.raises(RuntimeError, match="bool"):
        t.masked_fill(T(mask.astype(np.int64), device), 1.0)
    with pytest.raises(RuntimeError):
        T(x[0], device).masked_fill_(T(mask, device), 1.0)   # would need to broadcast self


def test_masked_select(device):
    x = base((3, 4))
    mask = x % 2 == 0
    for t in layouts(x, device, ember.float32):
        check(ember.masked_select(t, T(mask, device)), x[mask], ember.float32)
        check(t.masked_select(T(mask[1], device)), np.broadcast_to(x, (3, 4))[
            np.broadcast_to(mask[1], (3, 4))])
    check(ember.masked_select(T(x, device), T(np.zeros((3, 4), bool), device)), np.zeros(0))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32, ember.bool],
                         ids=lambda d: d.name)
def test_index_select(device, dtype):
    x = base()
    if dtype is ember.bool:
        x = x % 2 == 0
    for t in layouts(x, device, dtype):
        for dim in (0, 1, 2, -1):
            idx = [1, 0, 1, x.shape[dim] - 1]
            check(ember.index_select(t, dim, T(idx, device)), np.take(x, idx, axis=dim), dtype)
            check(t.index_select(dim, T(idx, device, ember.int32)), np.take(x, idx, axis=dim))
        check(t.index_select(1, T(np.zeros(0, np.int64), device)), x[:, :0])
    check(ember.index_select(T(5.0, device), 0, T([0], device)), [5.0])


def test_index_select_errors(device):
    t = T(base((3, 4)), device)
    with pytest.raises(IndexError):
        ember.index_select(t, 0, T([3], device))
    with pytest.raises(IndexError, match="vector"):
        ember.index_select(t, 0, T([[0]], device))
    with pytest.raises(RuntimeError, match="int64|Long|dtype"):
        ember.index_select(t, 0, T([0.0], device))
    with pytest.raises(IndexError):
        ember.index_select(t, 2, T([0], device))


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.int8],
                         ids=lambda d: d.name)
def test_gather(device, dtype):
    rng = np.random.default_rng(0)
    x = base((3, 4, 5))
    for t in layouts(x, device, dtype):
        for dim in (0, 1, 2, -1):
            ishape = list(x.shape)
            ishape[dim] = 6
            ishape[(dim + 1) % 3] -= 1      # smaller than the input elsewhere is allowed
            idx = rng.integers(0, x.shape[dim], ishape)
            exp = np.take_along_axis(x[tuple(slice(0, s) for s in ishape[:dim % 3]) +
                                       (slice(None),) +
                                       tuple(slice(0, s) for s in ishape[dim % 3 + 1:])],
                                     idx, dim)
            check(ember.gather(t, dim, T(idx, device)), exp, dtype)
            check(t.gather(dim, T(idx, device)), exp, dtype)
    # non-contiguous index
    idx = rng.integers(0, 3, (4, 6))
    check(ember.gather(T(x[:, :, 0], device, dtype), 0, T(idx, device).t()),
          np.take_along_axis(x[:, :, 0], idx.T, 0), dtype)


def test_gather_errors(device):
    t = T(base((3, 4)), device)
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
        ember.gather(t, 1, T([[0, 4]], device))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ember.gather(t, 0, T([0, 1], device))
    with pytest.raises(RuntimeError, match="int64|Long"):
        ember.gather(t, 0, T([[0.0]], device))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64],
                         ids=lambda d: d.name)
def test_scatter_and_scatter_add(device, dtype):
    rng = np.random.default_rng(1)
    x = np.zeros((4, 5))
    # scatter: a permutation per column so there are no duplicate targets
    idx = np.stack([rng.permutation(4)[:3] for _ in range(5)], 1)      # (3, 5)
    src = base((3, 5)) + 1
    exp = x.copy()
    for i in range(3):
        for j in range(5):
            exp[idx[i, j], j] = src[i, j]
    for t in layouts(x, device, dtype):
        r = ember.scatter(t, 0, T(idx, device), T(src, device, dtype))
        check(r, exp, dtype)
        check(t, x)                                  # out-of-place
        v0 = t._version
        r = t.scatter_(0, T(idx, device), T(src, device, dtype))
        assert r is t and t._version > v0
        check(t, exp, dtype)
    # scalar value
    expv = x.copy()
    for i in range(3):
        for j in range(5):
            expv[idx[i, j], j] = 9
    check(T(x, device, dtype).scatter(0, T(idx, device), value=9), expv, dtype)
    # scatter_add accumulates duplicates
    didx = rng.integers(0, 4, (6, 5))
    dsrc = base((6, 5))
    expa = x.copy()
    for i in range(6):
        for j in range(5):
            expa[didx[i, j], j] += dsrc[i, j]
    for t in layouts(x, device, dtype):
        check(ember.scatter_add(t, 0, T(didx, device), T(dsrc, device, dtype)), expa, dtype)
        t.scatter_add_(0, T(didx, device), T(dsrc, device, dtype))
        check(t, expa, dtype)
    # along the last dim, reduce="add"
    t = T(np.zeros((2, 3)), device, dtype)
    t.scatter_(1, T([[0, 0], [2, 1]], device), T([[1.0, 2.0], [3.0, 4.0]], device, dtype),
               reduce="add")
    check(t, [[3, 0, 0], [0, 4, 3]], dtype)


def test_scatter_errors(device):
    t = T(np.zeros((3, 4)), device)
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
        t.scatter_(0, T([[3]], device), 1.0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        t.scatter_(0, T([0], device), 1.0)
    with pytest.raises(RuntimeError):
        t.scatter_(0, T([[0, 1, 2, 0, 1]], device), T(np.ones((1, 4)), device))
    check(t, np.zeros((3, 4)))


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64], ids=lambda d: d.name)
def test_index_add(device, dtype):
    x = base((4, 3))
    idx = np.array([0, 2, 0, 3])
    src = np.arange(12.0).reshape(4, 3) * 10
    exp = x.copy()
    np.add.at(exp, idx, src)
    for t in layouts(x, device, dtype):
        check(ember.index_add(t, 0, T(idx, device), T(src, device, dtype)), exp, dtype)
        check(t, x)
        t.index_add_(0, T(idx, device), T(src, device, dtype), alpha=2)
        exp2 = x.copy()
        np.add.at(exp2, idx, 2 * src)
        check(t, exp2, dtype)
    # along dim 1
    src1 = np.ones((4, 2))
    exp1 = x.copy()
    np.add.at(exp1, (slice(None), [2, 2]), src1)
    check(T(x, device, dtype).index_add(1, T([2, 2], device), T(src1, device, dtype)), exp1,
          dtype)


@pytest.mark.parametrize("dtype", [ember.float32, ember.int32, ember.bool, ember.uint8],
                         ids=lambda d: d.name)
def test_nonzero(device, dtype):
    x = (base((3, 4, 5)) % 7 == 0) * base((3, 4, 5))
    for t in layouts(x, device, dtype):
        check(ember.nonzero(t), np.argwhere(x), ember.int64)
        check(t.nonzero(), np.argwhere(x), ember.int64)
        tup = ember.nonzero(t, as_tuple=True)
        assert isinstance(tup, tuple) and len(tup) == 3
        for got, exp in zip(tup, np.nonzero(x)):
            check(got, exp, ember.int64)
        wt = ember.where(t)
        for got, exp in zip(wt, np.nonzero(x)):
            check(got, exp, ember.int64)
    check(ember.nonzero(T(np.zeros((2, 3)), device, dtype)), np.zeros((0, 2)), ember.int64)
    check(ember.nonzero(T(np.zeros(0), device, dtype)), np.zeros((0, 1)), ember.int64)
    check(ember.nonzero(T(np.array([0, 3, 0, 1]), device, dtype)), [[1], [3]], ember.int64)
    # 0-d: shape (n, 0); as_tuple gives one vector
    check(ember.nonzero(T(3, device, dtype)), np.zeros((1, 0)), ember.int64)
    tup = ember.nonzero(T(3, device, dtype), as_tuple=True)
    assert len(tup) == 1
    check(tup[0], [0], ember.int64)


def test_take_and_index_with_numpy_integer_arrays(device):
    x = base((3, 4))
    t = T(x, device)
    check(ember.take(t, T([[0, 11], [5, 6]], device)), np.take(x, [[0, 11], [5, 6]]))
    check(t[np.array([2, 0])], x[[2, 0]])
    check(t[np.array([True, False, True])], x[[True, False, True]])


def test_indexing_with_a_tensor_from_the_other_device(device):
    other = other_device(device)
    x = base((3, 4))
    t = T(x, device)
    # an index on another device is moved over (as PyTorch does with CPU indices)
    check(t[T([2, 0], other)], x[[2, 0]])
    with pytest.raises(RuntimeError) as ei:
        ember.gather(t, 0, T([[0]], other))
    msg = str(ei.value)
    assert "cpu" in msg and "primcpu" in msg, msg


# ---------------------------------------------------------------------------------------
# hypothesis: random keys of slices, index arrays and masks against NumPy
# ---------------------------------------------------------------------------------------


@st.composite
def shape_and_key(draw):
    """Either index arrays (one common shape) and slices, or one mask and slices."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    use_mask = draw(st.booleans())
    mask_dim = draw(st.integers(0, len(shape) - 1))
    idx_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    key = []
    for d, size in enumerate(shape):
        if use_mask and d == mask_dim:
            key.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))))
        elif not use_mask and draw(st.booleans()):
            n = int(np.prod(idx_shape))
            vals = draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n))
            key.append(np.array(vals, np.int64).reshape(idx_shape))
        else:
            start = draw(st.integers(-size - 1, size))
            stop = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            step = draw(st.integers(1, 3))
            key.append(slice(start, stop, step))
    return shape, tuple(key)


def _to_ember_key(key, device):
    return tuple(T(k, device) if isinstance(k, np.ndarray) else k for k in key)


@given(sk=shape_and_key(), seed=st.integers(0, 2**16))
@hset(50)
def test_hypothesis_advanced_indexing(device, sk, seed):
    shape, key = sk
    x = np.random.default_rng(seed).integers(-50, 50, shape).astype(np.float64)
    exp = x[key]
    t = T(x, device, ember.float32)
    check(t[_to_ember_key(key, device)], exp, ember.float32)
    # assignment of a scalar and of a value array of the result's shape
    y = x.copy()
    y[key] = 7.0
    t[_to_ember_key(key, device)] = 7.0
    check(t, y)
    # a value array, where no element is selected twice (else the last write is arbitrary)
    pos = np.arange(x.size).reshape(shape)[key]
    if exp.size and len(np.unique(pos)) == pos.size:
        vals = np.arange(exp.size, dtype=np.float64).reshape(exp.shape)
        y2 = x.copy()
        y2[key] = vals
        t2 = T(x, device, ember.float32)
        t2[_to_ember_key(key, device)] = T(vals, device, ember.float32)
        check(t2, y2)
    # accumulate (PyTorch's index_put_ takes index tensors only): duplicates add up
    if all(isinstance(k, np.ndarray) for k in key):
        y3 = x.copy()
        np.add.at(y3, key, 1.0)
        t3 = T(x, device, ember.float32)
        t3.index_put_(_to_ember_key(key, device), T(np.ones(exp.shape), device, ember.float32),
                      accumulate=True)
        check(t3, y3)
