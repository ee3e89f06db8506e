"""Reductions, scans, sort and topk on every device, checked against NumPy (float64).

PyTorch is the oracle only for result dtypes and for error types NumPy does not share.
"""
import math
import warnings
from functools import partial

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import ember
import helpers
from conftest import N, T
from helpers import FLOATS, INTS, exact_values, hset, tdt

TOL = {ember.float64: (1e-10, 1e-12), ember.float32: (2e-5, 2e-5),
       ember.float16: (1e-2, 1e-2), ember.bfloat16: (3e-2, 3e-2)}
check = partial(helpers.check, tols=TOL)
# step-sliced inputs skip a 99 (True for bool) between values: read by mistake, it shows
make = partial(helpers.make, fill=99)

HSET = hset(50)


# values(rng, shape, dtype): quarters in [-4, 4] for floats, small integers otherwise
values = partial(exact_values, float_ints=(-16, 17), denom=4.0, int_bound=5)


LAYOUTS = ["contig", "t", "step"]
DIMS = [None, 0, 1, -1, (0, 2), (1, -1), (0, 1, 2)]


def _axis(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


# ---------------------------------------------------------------------------------------
# sum / mean / prod / amax / amin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool], ids=lambda d: d.name)
def test_sum(device, dtype):
    rng = np.random.default_rng(1)
    x = values(rng, (2, 3, 4), dtype)
    out_dt = dtype if dtype.is_floating_point else ember.int64
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for dim in DIMS:
            for keepdim in (False, True):
                exp = np.sum(x.astype(np.float64), axis=_axis(dim), keepdims=keepdim)
                r = ember.sum(t, dim, keepdim) if dim is not None else \
                    ember.sum(t, keepdim=keepdim) if keepdim else t.sum()
                check(r, exp, out_dt)
    check(make(x, device, dtype).sum(dim=[0, 1]), x.astype(np.float64).sum(axis=(0, 1)), out_dt)


@pytest.mark.parametrize("dtype", [ember.int32, ember.uint8, ember.bool, ember.float16],
                         ids=lambda d: d.name)
def test_sum_result_dtype_and_dtype_argument(device, dtype):
    x = T(np.ones((2, 3)), device, dtype)
    want = str(torch.ones(2, 3, dtype=tdt(dtype)).sum().dtype)
    assert x.sum().dtype.name == want.replace("torch.", "")
    r = x.sum(dtype=ember.float64)
    check(r, 6.0, ember.float64)
    r = ember.sum(x, 1, dtype=ember.int32)
    check(r, [3, 3], ember.int32)


def test_sum_does_not_overflow_small_integers(device):
    x = T(np.full(300, 200), device, ember.uint8)
    check(x.sum(), 60000, ember.int64)
    y = T(np.full((2, 100), 100), device, ember.int8)
    check(y.sum(1), [10000, 10000], ember.int64)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_mean(device, dtype):
    rng = np.random.default_rng(2)
    x = values(rng, (2, 3, 4), dtype)
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for dim in DIMS:
            for keepdim in (False, True):
                exp = np.mean(x, axis=_axis(dim), keepdims=keepdim)
                check(ember.mean(t, dim, keepdim), exp, dtype)
    check(make(x, device, dtype).mean(), x.mean(), dtype)


def test_mean_of_integers_raises_unless_dtype_given(device):
    x = T([1, 2, 4], device)
    with pytest.raises(RuntimeError, match="mean.*Long"):
        x.mean()
    with pytest.raises(RuntimeError, match="mean"):
        ember.mean(T([True, False], device), 0)
    check(x.mean(dtype=ember.float64), 7 / 3, ember.float64)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32, ember.int64,
                                   ember.int8, ember.uint8], ids=lambda d: d.name)
def test_prod(device, dtype):
    rng = np.random.default_rng(3)
    if dtype.is_floating_point:
        x = rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0], (2, 3, 4))
    else:
        x = rng.choice([1, 2, 3] if dtype is ember.uint8 else [-2, -1, 1, 2, 3], (2, 3, 4))
    out_dt = dtype if dtype.is_floating_point else ember.int64
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        check(t.prod(), np.prod(x.astype(np.float64)), out_dt)
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                check(ember.prod(t, dim, keepdim),
                      np.prod(x.astype(np.float64), axis=dim, keepdims=keepdim), out_dt)
    with pytest.raises(TypeError):
        ember.prod(make(x, device, dtype), (0, 1))


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
def test_amax_amin(device, dtype):
    rng = np.random.default_rng(4)
    x = values(rng, (2, 3, 4), dtype)
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for dim in DIMS[1:]:
            for keepdim in (False, True):
                check(ember.amax(t, dim, keepdim), np.amax(x, _axis(dim), keepdims=keepdim),
                      dtype)
                check(ember.amin(t, dim, keepdim), np.amin(x, _axis(dim), keepdims=keepdim),
                      dtype)
        check(ember.amax(t), np.amax(x), dtype)
        check(t.amin(), np.amin(x), dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool], ids=lambda d: d.name)
def test_max_min_with_dim_return_values_and_indices(device, dtype):
    rng = np.random.default_rng(5)
    x = values(rng, (3, 5), dtype)
    x[1, :] = x[1, 0]          # ties: the first index wins
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                for name, ref, aref in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
                    r = getattr(ember, name)(t, dim, keepdim)
                    assert isinstance(r, tuple) and len(r) == 2
                    vals, idx = r
                    assert r.values is vals and r.indices is idx
                    check(vals, ref(x, axis=dim, keepdims=keepdim), dtype)
                    check(idx, aref(x, axis=dim, keepdims=keepdim), ember.int64)
        # no dim: the value over everything, a 0-d tensor
        check(ember.max(t), np.max(x), dtype)
        check(t.min(), np.min(x), dtype)
    r = make(x, device, dtype).max(dim=1)
    assert r._fields == ("values", "indices")


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
def test_argmax_argmin(device, dtype):
    rng = np.random.default_rng(6)
    x = values(rng, (3, 4, 5), dtype)
    x[0, 0, :] = x[0, 0, 2]    # ties
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        check(ember.argmax(t), np.argmax(x), ember.int64)
        check(t.argmin(), np.argmin(x), ember.int64)
        check(ember.argmax(t, keepdim=True), np.argmax(x).reshape(1, 1, 1), ember.int64)
        for dim in (0, 1, 2, -1):
            check(ember.argmax(t, dim), np.argmax(x, dim), ember.int64)
            check(ember.argmin(t, dim), np.argmin(x, dim), ember.int64)
            check(ember.argmax(t, dim, keepdim=True), np.argmax(x, dim, keepdims=True),
                  ember.int64)
            check(ember.argmin(t, dim, True), np.argmin(x, dim, keepdims=True), ember.int64)


def test_max_min_argmax_propagate_nan(device):
    x = np.array([[1.0, math.nan, 3.0, math.nan], [2.0, -1.0, math.inf, 0.0]])
    for dt in (ember.float32, ember.float64, ember.float16, ember.bfloat16):
        t = T(x, device, dt)
        check(ember.amax(t, 1), np.amax(x, 1), dt)
        check(ember.amin(t, 1), np.amin(x, 1), dt)
        check(ember.max(t), np.max(x), dt)
        check(ember.argmax(t, 1), np.argmax(x, 1), ember.int64)   # the first NaN
        check(ember.argmin(t, 1), np.argmin(x, 1), ember.int64)
        v, i = ember.max(t, 1)
        check(v, np.max(x, 1), dt)
        check(i, np.argmax(x, 1), ember.int64)
        v, i = ember.min(t, 0)
        check(v, np.min(x, 0), dt)
        check(i, np.argmin(x, 0), ember.int64)


def test_reductions_of_0d_tensors(device):
    x = T(2.5, device, ember.float32)
    check(x.sum(), 2.5, ember.float32)
    check(x.sum(0), 2.5, ember.float32)
    check(x.mean(), 2.5, ember.float32)
    check(x.amax(), 2.5, ember.float32)
    check(x.argmax(), 0, ember.int64)
    v, i = x.max(0)
    check(v, 2.5)
    check(i, 0, ember.int64)
    check(x.cumsum(0), 2.5, ember.float32)
    check(x.prod(), 2.5, ember.float32)


# ---------------------------------------------------------------------------------------
# empty inputs
# ---------------------------------------------------------------------------------------
def test_empty_reductions(device):
    e = T(np.zeros(0), device, ember.float32)
    check(e.sum(), 0.0, ember.float32)
    check(T(np.zeros(0, np.int32), device).sum(), 0, ember.int64)
    check(e.prod(), 1.0, ember.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(e.mean(), math.nan, ember.float32)
    check(ember.all(e), True, ember.bool)
    check(ember.any(e), False, ember.bool)
    m = T(np.zeros((2, 0)), device, ember.float32)
    check(m.sum(1), [0.0, 0.0])
    check(m.sum(0), np.zeros(0))
    check(m.prod(1), [1.0, 1.0])
    check(ember.amax(m, 0), np.zeros(0))
    check(ember.cumsum(m, 1), np.zeros((2, 0)))
    check(ember.all(m, 0), np.zeros(0, bool), ember.bool)


def test_all_any_over_an_empty_dim(device):
    m = T(np.zeros((2, 0)), device, ember.float32)
    check(ember.all(m, 1), [True, True], ember.bool)
    check(ember.any(m, 1), [False, False], ember.bool)
    check(ember.all(T(np.zeros((0, 3)), device, ember.bool), 0), [True] * 3, ember.bool)


def test_max_of_empty_raises(device):
    e = T(np.zeros((0, 3)), device, ember.float32)
    with pytest.raises(IndexError, match="max"):
        ember.max(e, 0)
    with pytest.raises(IndexError, match="min"):
        ember.min(e, dim=0)
    with pytest.raises(IndexError, match="amax"):
        ember.amax(T(np.zeros((2, 0)), device), 1)
    with pytest.raises(IndexError, match="amin"):
        ember.amin(e, 0)
    with pytest.raises(IndexError, match="argmax"):
        ember.argmax(e, 0)
    with pytest.raises(RuntimeError, match="max"):
        ember.max(T(np.zeros(0), device))


def test_argmax_of_empty_without_dim_raises_index_error_like_pytorch(device):
    e = T(np.zeros(0), device, ember.float32)
    with pytest.raises(IndexError, match="argmax"):
        ember.argmax(e)
    with pytest.raises(IndexError, match="argmin"):
        ember.argmin(e)


# ---------------------------------------------------------------------------------------
# var / std / logsumexp / norm
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16],
                         ids=lambda d: d.name)
def test_var_std(device, dtype):
    rng = np.random.default_rng(7)
    x = values(rng, (3, 4, 5), dtype)
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for corr in (0, 1):
            check(t.var(correction=corr), np.var(x, ddof=corr), dtype)
            check(ember.std(t, correction=corr), np.std(x, ddof=corr), dtype)
            for dim in (0, -1, (0, 2), (1, 2)):
                for keepdim in (False, True):
                    check(ember.var(t, dim, correction=corr, keepdim=keepdim),
                          np.var(x, axis=dim, ddof=corr, keepdims=keepdim), dtype)
                    check(ember.std(t, dim, correction=corr, keepdim=keepdim),
                          np.std(x, axis=dim, ddof=corr, keepdims=keepdim), dtype)
        check(t.var(1, unbiased=False), np.var(x, axis=1), dtype)
        check(t.std(1, unbiased=True), np.std(x, axis=1, ddof=1), dtype)
        check(t.var(1), np.var(x, axis=1, ddof=1), dtype)


def test_var_of_one_element_with_correction_is_nan(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(T([3.0], device).var(), math.nan)
        check(T([[3.0, 4.0]], device).var(0), [math.nan, math.nan])
    check(T([3.0], device).var(correction=0), 0.0)
    with pytest.raises(RuntimeError, match="var"):
        T([1, 2, 3], device).var()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_logsumexp(device, dtype):
    rng = np.random.default_rng(8)
    x = values(rng, (3, 4, 5), dtype)

    def ref(a, axis, keepdims=False):
        m = np.max(a, axis=axis, keepdims=True)
        r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
        return r if keepdims else np.squeeze(r, axis=axis)

    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for dim in (0, -1, (0, 2), (0, 1, 2)):
            for keepdim in (False, True):
                check(ember.logsumexp(t, dim, keepdim), ref(x, dim, keepdim), dtype)
    # numerically stable with large and infinite inputs
    big = np.array([[1000.0, 1000.0, -1000.0], [-math.inf, -math.inf, -math.inf]])
    if dtype in (ember.float32, ember.float64):
        check(ember.logsumexp(T(big, device, dtype), 1), [1000.0 + math.log(2.0), -math.inf],
              dtype)
    check(ember.logsumexp(T([1, 2], device), 0), math.log(math.e + math.e ** 2),
          ember.float32)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
def test_norm(device, dtype):
    rng = np.random.default_rng(9)
    x = values(rng, (3, 4), dtype)
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        flat = x.reshape(-1)
        check(t.norm(), np.linalg.norm(flat), dtype)
        check(ember.norm(t, p="fro"), np.linalg.norm(flat), dtype)
        for p in (1, 2, math.inf, -math.inf, 3):
            check(ember.norm(t, p), np.linalg.norm(flat, p), dtype)
            for dim in (0, 1, -1):
                for keepdim in (False, True):
                    check(ember.norm(t, p, dim, keepdim),
                          np.linalg.norm(x, p, axis=dim, keepdims=keepdim), dtype)
    check(ember.norm(T(x, device, dtype), 2, (0, 1)), np.linalg.norm(x), dtype)
    with pytest.raises(RuntimeError, match="norm"):
        ember.norm(T([1, 2], device))


# ---------------------------------------------------------------------------------------
# cumsum / cumprod / all / any
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int32,
                                   ember.int64, ember.uint8, ember.bool], ids=lambda d: d.name)
def test_cumsum_cumprod(device, dtype):
    rng = np.random.default_rng(10)
    x = values(rng, (3, 4, 5), dtype)
    if dtype.is_floating_point:
        px = rng.choice([-1.5, -1.0, 0.5, 1.0, 2.0], (3, 4, 5))
    elif dtype is ember.bool:
        px = x
    else:
        px = rng.choice([1, 2] if dtype is ember.uint8 else [-2, -1, 1, 2], (3, 4, 5))
    out_dt = dtype if dtype.is_floating_point else ember.int64
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        pt = make(px, device, dtype, layout)
        for dim in (0, 1, 2, -1, -3):
            check(ember.cumsum(t, dim), np.cumsum(x.astype(np.float64), axis=dim), out_dt)
            check(pt.cumprod(dim), np.cumprod(px.astype(np.float64), axis=dim), out_dt)
    check(ember.cumsum(T(x, device, dtype), 1, dtype=ember.float64),
          np.cumsum(x.astype(np.float64), 1), ember.float64)


def test_cumsum_long_row(device):
    x = np.arange(1, 1001, dtype=np.float64)
    check(ember.cumsum(T(x, device), 0), np.cumsum(x), ember.float64)
    check(ember.cumsum(T(np.ones(1000, np.int32), device), 0), np.arange(1, 1001),
          ember.int64)


@pytest.mark.parametrize("dtype", [ember.bool, ember.float32, ember.int32, ember.uint8],
                         ids=lambda d: d.name)
def test_all_any(device, dtype):
    rng = np.random.default_rng(11)
    x = rng.choice([0, 1, 2], (3, 4, 5), p=[0.2, 0.4, 0.4]).astype(np.float64)
    x[0, 1, :] = 1      # an all-true row
    x[1, 2, :] = 0      # an all-false row
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        check(ember.all(t), np.all(x))
        check(ember.any(t), np.any(x))
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                check(ember.all(t, dim, keepdim), np.all(x, axis=dim, keepdims=keepdim))
                check(t.any(dim, keepdim), np.any(x, axis=dim, keepdims=keepdim))
        if dtype is not ember.uint8:    # PyTorch keeps uint8 for uint8 input
            assert ember.all(t).dtype is ember.bool and ember.any(t, 0).dtype is ember.bool


# ---------------------------------------------------------------------------------------
# sort / argsort / topk
# ---------------------------------------------------------------------------------------
def _stable_order(row, descending):
    """Stable sort order with NaN largest (PyTorch's ordering)."""
    def key(i):
        v = row[i]
        nan = isinstance(v, float) and math.isnan(v)
        if descending:
            return (0 if nan else 1, 0 if nan else -v)
        return (1 if nan else 0, 0 if nan else v)
    return sorted(range(len(row)), key=key)


def _ref_sort(x, dim, descending):
    xm = np.moveaxis(x, dim, -1)
    idx = np.empty(xm.shape, np.int64)
    for pos in np.ndindex(xm.shape[:-1]):
        idx[pos] = _stable_order(list(xm[pos].tolist()), descending)
    vals = np.take_along_axis(xm, idx, -1)
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int32,
                                   ember.int64, ember.uint8, ember.int8, ember.bool],
                         ids=lambda d: d.name)
def test_sort_stable(device, dtype):
    rng = np.random.default_rng(12)
    x = values(rng, (3, 4, 6), dtype)   # plenty of ties
    for layout in LAYOUTS:
        t = make(x, device, dtype, layout)
        for dim in (0, 1, 2, -1):
            for descending in (False, True):
                ev, ei = _ref_sort(x, dim, descending)
                r = ember.sort(t, dim, descending=descending, stable=True)
                vals, idx = r
                assert r.values is vals and r.indices is idx
                check(vals, ev, dtype)
                check(idx, ei, ember.int64)
                check(ember.argsort(t, dim, descending=descending, stable=True), ei,
                      ember.int64)


def test_sort_default_is_ascending_last_dim_and_indices_are_consistent(device):
    rng = np.random.default_rng(13)
    x = rng.permutation(40).reshape(5, 8).astype(np.float64)
    t = T(x, device, ember.float32)
    v, i = t.sort()
    check(v, np.sort(x, -1))
    check(i, np.argsort(x, -1), ember.int64)
    v, i = ember.sort(t.t(), 0, descending=True)
    check(v, -np.sort(-x.T, 0))
    check(i, np.argsort(-x.T, 0), ember.int64)


def test_sort_nan_ordering(device):
    x = np.array([3.0, math.nan, 1.0, math.nan, 2.0, -math.inf, math.inf])
    for dt in (ember.float32, ember.float64, ember.float16):
        t = T(x, device, dt)
        for descending in (False, True):
            ev, ei = _ref_sort(x, 0, descending)
            v, i = ember.sort(t, descending=descending, stable=True)
            check(v, ev, dt)
            check(i, ei, ember.int64)
            v, i = ember.sort(t, descending=descending)
            check(v, ev, dt)
            np.testing.assert_array_equal(np.isnan(N(v)), np.isnan(ev))


def test_sort_empty_and_0d(device):
    v, i = ember.sort(T(np.zeros((2, 0)), device), 1)
    assert v.shape == (2, 0) and i.shape == (2, 0) and i.dtype is ember.int64
    v, i = ember.sort(T(5.0, device))
    check(v, 5.0)
    check(i, 0, ember.int64)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.int8],
                         ids=lambda d: d.name)
def test_topk(device, dtype):
    rng = np.random.default_rng(14)
    x = np.stack([rng.permutation(12) - 6 for _ in range(4)]).astype(np.float64)  # distinct
    for layout in ("contig", "t", "step"):
        t = make(x, device, dtype, layout)
        for k in (0, 1, 3, 12):
            for largest in (True, False):
                r = ember.topk(t, k, largest=largest)
                v, i = r
                assert r.values is v and r.indices is i
                order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :k]
                check(v, np.take_along_axis(x, order, 1), dtype)
                check(i, order, ember.int64)
        v, i = t.topk(2, dim=0)
        order = np.argsort(-x, axis=0, kind="stable")[:2]
        check(v, np.take_along_axis(x, order, 0), dtype)
        check(i, order, ember.int64)
    with pytest.raises(RuntimeError, match="k"):
        ember.topk(T(x, device, dtype), 13)


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------
def test_reduction_bad_input(device):
    x = T(np.zeros((2, 3)), device)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.amax(x, -3)
    with pytest.raises(IndexError):
        ember.argmax(x, 5)
    with pytest.raises(IndexError):
        ember.cumsum(x, 2)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.sum((0, 0))
    with pytest.raises(TypeError):
        ember.sum([1.0, 2.0])
    with pytest.raises(TypeError):
        x.sum("0")


# ---------------------------------------------------------------------------------------
# hypothesis: random shapes and random dims against NumPy
# ---------------------------------------------------------------------------------------
@st.composite
def shape_and_dims(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)))
    nd = len(shape)
    dims = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                          st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd,
                                   unique=True).map(tuple)))
    return shape, dims


@given(sd=shape_and_dims(), keepdim=st.booleans(),
       op=st.sampled_from(["sum", "mean", "amax", "amin", "prod", "var", "logsumexp"]),
       layout=st.sampled_from(["contig", "step"]), seed=st.integers(0, 2**16))
@HSET
def test_hypothesis_reductions_over_random_dims(device, sd, keepdim, op, layout, seed):
    shape, dims = sd
    if op == "prod" and not (dims is None or isinstance(dims, int)):
        dims = dims[0]
    if op == "logsumexp" and dims is None:
        dims = 0
    rng = np.random.default_rng(seed)
    x = rng.integers(-8, 9, shape) / 4.0
    if layout == "step" and 0 in shape:
        layout = "contig"
    t = make(x, device, ember.float64, layout)
    axis = dims if dims is None or isinstance(dims, int) else tuple(dims)
    reduced = range(len(shape)) if axis is None else \
        [axis] if isinstance(axis, int) else axis
    empty_reduced = any(shape[d] == 0 for d in reduced)
    fn = {"sum": ember.sum, "mean": ember.mean, "amax": ember.amax, "amin": ember.amin,
          "prod": ember.prod, "var": lambda a, d, keepdim: ember.var(a, d, keepdim=keepdim,
                                                                      correction=0),
          "logsumexp": ember.logsumexp}[op]
    if op in ("amax", "amin") and empty_reduced:
        with pytest.raises((IndexError, RuntimeError)):
            fn(t, dims if dims is not None else (), keepdim=keepdim)
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "logsumexp":
            if x.size:
                m = np.max(x, axis=axis, keepdims=True) if not empty_reduced else 0.0
            else:
                m = 0.0
            exp = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
            if not keepdim:
                exp = np.squeeze(exp, axis=axis)
        else:
            ref = {"sum": np.sum, "mean": np.mean, "amax": np.amax, "amin": np.amin,
                   "prod": np.prod, "var": np.var}[op]
            exp = ref(x, axis=axis, keepdims=keepdim)
        r = fn(t, dims if dims is not None else None, keepdim=keepdim) \
            if op != "amax" and op != "amin" else fn(t, dims if dims is not None else (),
                                                    keepdim=keepdim)
    assert r.dtype is ember.float64
    check(r, exp)


# ---------------------------------------------------------------------------------------
# larger tensors: vectorised inner loops and the thread pool
# ---------------------------------------------------------------------------------------
def test_large_reductions(device):
    rng = np.random.default_rng(21)
    x = rng.standard_normal((257, 1031))
    mag = np.abs(x)
    for layout in ("contig", "t"):
        t = make(x, device, ember.float32, layout)
        for dim in (None, 0, 1):
            tol = (1e-5, 1e-6 * float(np.sum(mag, axis=dim).max()))
            check(ember.sum(t, dim), np.sum(x, axis=dim), tol=tol)
            check(ember.mean(t, dim), np.mean(x, axis=dim), tol=(1e-5, 1e-6))
            check(ember.amax(t, dim if dim is not None else ()), np.amax(x, axis=dim))
            check(ember.argmax(t, dim), np.argmax(x, axis=dim), ember.int64)
            check(ember.argmin(t, dim), np.argmin(x, axis=dim), ember.int64)
            check(ember.var(t, dim), np.var(x, axis=dim, ddof=1), tol=(1e-4, 1e-5))
        for dim in (0, 1):
            v, i = ember.min(t, dim)
            check(v, np.min(x, axis=dim))
            check(i, np.argmin(x, axis=dim), ember.int64)
            check(ember.logsumexp(t, dim), np.log(np.sum(np.exp(x), axis=dim)),
                  tol=(1e-5, 1e-5))
            check(ember.cumsum(t, dim), np.cumsum(x, axis=dim),
                  tol=(1e-4, 1e-5 * float(np.cumsum(mag, axis=dim).max())))
    xi = rng.integers(-1000, 1000, (257, 1031))
    check(ember.sum(T(xi, device, ember.int32)), np.sum(xi), ember.int64)
    check(ember.sum(T(xi, device, ember.int32), 0), np.sum(xi, 0), ember.int64)
    check(ember.amax(T(xi, device, ember.int32).t(), 1), np.amax(xi.T, 1), ember.int32)


def test_large_sort_is_stable(device):
    rng = np.random.default_rng(22)
    x = rng.integers(0, 50, (3, 5000)).astype(np.float64)
    t = T(x, device, ember.float32)
    v, i = ember.sort(t, 1, stable=True)
    order = np.argsort(x, axis=1, kind="stable")
    check(i, order, ember.int64)
    check(v, np.take_along_axis(x, order, 1))
    v, i = ember.sort(t.t(), 0, descending=True, stable=True)
    order = np.argsort(-x.T, axis=0, kind="stable")
    check(i, order, ember.int64)


# ---------------------------------------------------------------------------------------
# accuracy and exactness
# ---------------------------------------------------------------------------------------
def test_low_precision_sums_accumulate_in_higher_precision(device):
    # fp16 cannot hold 2049; an fp16 accumulator gets stuck at 2048
    check(ember.ones(10000, dtype=ember.float16, device=device).sum(), 10000.0,
          ember.float16, tol=(0, 0))
    check(ember.ones(1000, dtype=ember.bfloat16, device=device).sum(), 1000.0,
          ember.bfloat16, tol=(0, 0))
    check(ember.ones(4, 5000, dtype=ember.float16, device=device).sum(1), [5000.0] * 4,
          ember.float16, tol=(0, 0))
    check(ember.ones(10000, dtype=ember.float16, device=device).mean(), 1.0, ember.float16,
          tol=(0, 0))
    x = np.full(3000, 0.1)
    check(T(x, device, ember.float32).sum(), 300.0, tol=(1e-5, 0))


def test_var_is_stable_for_large_offsets(device):
    rng = np.random.default_rng(23)
    x = 1e4 + 0.1 * rng.standard_normal(20000)
    x32 = x.astype(np.float32).astype(np.float64)
    t = T(x, device, ember.float32)
    check(t.var(), np.var(x32, ddof=1), tol=(1e-2, 0))
    check(t.std(correction=0), np.std(x32), tol=(1e-2, 0))
    check(T(x.reshape(4, -1), device, ember.float32).var(1),
          np.var(x32.reshape(4, -1), axis=1, ddof=1), tol=(1e-2, 0))


def test_int64_reductions_are_exact(device):
    big = np.array([[2**53 + 1, 2**53, 5], [-(2**60) - 7, 2**60 + 3, 2**53 + 3]], np.int64)
    t = T(big, device)
    check(t.sum(), big.sum(), ember.int64)
    check(t.sum(0), big.sum(0), ember.int64)
    check(t.amax(1), big.max(1), ember.int64)
    check(t.amin(0), big.min(0), ember.int64)
    check(t.argmax(1), big.argmax(1), ember.int64)
    check(t.argmin(), big.argmin(), ember.int64)
    check(ember.cumsum(t, 1), np.cumsum(big, 1), ember.int64)
    v, i = ember.sort(t, 1)
    check(v, np.sort(big, 1), ember.int64)
    check(i, np.argsort(big, 1, kind="stable"), ember.int64)
    v, i = ember.topk(t, 2, 1)
    check(v, -np.sort(-big, 1)[:, :2], ember.int64)


# ---------------------------------------------------------------------------------------
# out=
# ---------------------------------------------------------------------------------------
def test_reduction_out_argument(device):
    x = np.arange(24.0).reshape(2, 3, 4)
    t = T(x, device, ember.float32)
    for keepdim in (False, True):
        exp = x.sum(1, keepdims=keepdim)
        out = ember.empty(exp.shape, device=device)
        r = ember.sum(t, 1, keepdim, out=out)
        assert r is out
        check(out, exp)
        out = ember.empty(exp.shape, dtype=ember.float64, device=device)
        ember.mean(t, 1, keepdim, out=out)
        check(out, x.mean(1, keepdims=keepdim), ember.float64)
        out = ember.empty(exp.shape, device=device)
        ember.amax(t, 1, keepdim, out=out)
        check(out, x.max(1, keepdims=keepdim))
    # into a non-contiguous out: only its elements change
    big = ember.zeros(4, 6, device=device)
    ember.sum(T(np.arange(24.0).reshape(4, 3, 2), device, ember.float32), 2, out=big[:, ::2])
    exp = np.zeros((4, 6))
    exp[:, ::2] = np.arange(24.0).reshape(4, 3, 2).sum(2)
    check(big, exp)
    big = ember.zeros(6, 4, device=device)
    ember.sum(t, 1, out=big[::3].t().t())
    exp = np.zeros((6, 4))
    exp[::3] = x.sum(1)
    check(big, exp)
    out = ember.empty(0, dtype=ember.int64, device=device)
    ember.argmax(t, 2, out=out)
    check(out, x.argmax(2), ember.int64)
    out = ember.empty(0, device=device)
    ember.cumsum(t, 2, out=out)
    check(out, np.cumsum(x, 2))
    out = ember.empty((2, 4), dtype=ember.int64, device=device)   # torch: sums in out's dtype
    ember.sum(t, 1, out=out)
    check(out, x.astype(np.int64).sum(1), ember.int64)
