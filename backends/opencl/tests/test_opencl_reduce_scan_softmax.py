"""Reductions (every strategy), argmax/argmin, cumsum/cumprod, softmax/log_softmax."""
import numpy as np
import pytest

import ember
from ocl_helpers import N, T, layouts, np_dtype

rng = np.random.default_rng(2)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int64,
                                   ember.int32, ember.uint8, ember.bool],
                         ids=lambda d: d.name)
def test_sum_prod_max_min(dtype):
    if dtype is ember.bool:
        x = rng.integers(0, 2, (6, 5)).astype(bool)
    elif dtype.is_floating_point:
        x = (rng.integers(-8, 8, (6, 5)) / 4).astype(np_dtype(dtype))
    else:
        x = rng.integers(0 if dtype is ember.uint8 else -8, 8, (6, 5)).astype(dtype.to_numpy())
    for name, t in layouts(x, dtype):
        for dim in (None, 0, 1, (0, 1)):
            acc = np.int64 if not dtype.is_floating_point else x.dtype
            np.testing.assert_array_equal(N(t.sum(dim)), x.sum(dim, dtype=acc),
                                          err_msg=f"sum {dim} {name}")
            np.testing.assert_array_equal(N(t.amax(dim if dim is not None else ())),
                                          x.max(dim), err_msg=f"max {dim} {name}")
            np.testing.assert_array_equal(N(t.amin(dim if dim is not None else ())),
                                          x.min(dim), err_msg=f"min {dim} {name}")
        if dtype is not ember.bool:
            np.testing.assert_array_equal(N(t.prod(1)), x.prod(1, dtype=acc))


@pytest.mark.parametrize("shape,dims", [((300000,), None), ((3, 100000), 1),
                                        ((100000, 3), 0), ((64, 50, 40), (0, 2)),
                                        ((4000, 3), 1), ((7, 1), 1), ((1, 1, 1), None)])
def test_sum_mean_strategies(shape, dims):
    x = rng.standard_normal(shape).astype(np.float32)
    t = T(x)
    np.testing.assert_allclose(N(t.sum(dims)), x.sum(dims, dtype=np.float64), rtol=1e-4,
                               atol=1e-3)
    np.testing.assert_allclose(N(t.mean(dims)), x.mean(dims, dtype=np.float64), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_array_equal(N(t.amax(dims if dims is not None else ())), x.max(dims))


def test_reduce_0d_empty_and_nan():
    assert T(np.float32(3)).sum().item() == 3
    assert N(T(np.zeros((0, 4), np.float32)).sum(0)).tolist() == [0, 0, 0, 0]
    assert np.isnan(N(T(np.zeros((0, 4), np.float32)).mean(0))).all()
    x = T(np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32))
    assert np.isnan(N(x.amax(1))[0]) and N(x.amax(1))[1] == 3


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.float16, ember.uint8],
                         ids=lambda d: d.name)
def test_argmax_argmin(dtype):
    x = rng.integers(0, 4, (7, 200)).astype(np_dtype(dtype))   # many ties: first wins
    for name, t in layouts(x, dtype):
        for dim in (0, 1):
            np.testing.assert_array_equal(N(t.argmax(dim)), x.argmax(dim), err_msg=name)
            np.testing.assert_array_equal(N(t.argmin(dim)), x.argmin(dim), err_msg=name)
        assert t.argmax().item() == x.argmax()
    f = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    assert T(f).argmax().item() == 1 and T(f).argmin().item() == 1


@pytest.mark.parametrize("length", [5, 300])
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.int32],
                         ids=lambda d: d.name)
def test_cumsum_cumprod(dtype, length):
    if dtype.is_floating_point:
        x = rng.uniform(0.9, 1.1, (3, length)).astype(np.float32)
    else:
        x = rng.integers(-2, 3, (3, length)).astype(dtype.to_numpy())
    acc = x.dtype if dtype.is_floating_point else np.int64
    for name, t in layouts(x, dtype):
        for dim in (0, 1):
            got = N(ember.cumsum(t, dim))
            np.testing.assert_allclose(got, np.cumsum(x, dim, dtype=acc), rtol=1e-5, atol=1e-4)
            got = N(ember.cumprod(t, dim))
            np.testing.assert_allclose(got, np.cumprod(x, dim, dtype=acc), rtol=1e-4)


@pytest.mark.parametrize("shape", [(4, 10), (3, 1000), (50, 7)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16],
                         ids=lambda d: d.name)
def test_softmax_log_softmax(shape, dtype):
    x = (rng.standard_normal(shape) * 3).astype(np_dtype(dtype))
    tol = 2e-3 if dtype is ember.float16 else 1e-5
    xs = x.astype(np.float64)
    for name, t in layouts(x, dtype):
        for dim in (0, 1):
            e = np.exp(xs - xs.max(dim, keepdims=True))
            np.testing.assert_allclose(N(ember.softmax(t, dim)), e / e.sum(dim, keepdims=True),
                                       rtol=tol, atol=tol)
            np.testing.assert_allclose(N(ember.log_softmax(t, dim)),
                                       np.log(e / e.sum(dim, keepdims=True)), rtol=tol,
                                       atol=tol * 10)
