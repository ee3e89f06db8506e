"""Creation and random ops on every device.

Values are checked against NumPy; dtype inference from Python data against PyTorch
(``torch.tensor``), whose rules ember follows. Random streams are checked for
reproducibility and for their distribution (100k samples).
"""
import math

import numpy as np
import pytest
import torch

import ember
from conftest import N, T
from helpers import check, npdt, other_device, tdt


def on(t, device):
    assert t.device.type == device, f"{t.device} is not a {device} device"
    return t


# ---------------------------------------------------------------------------------------
# tensor(): dtype inference and copies
# ---------------------------------------------------------------------------------------
INFER = [
    [1, 2, 3],
    [1.0, 2, 3],
    [True, False],
    [True, 1],
    [[1, 2], [3, 4]],
    [[1.5], [2.5]],
    3,
    3.5,
    True,
    [],
    [[]],
    np.array([1, 2], np.int32),
    np.array([1, 2], np.uint8),
    np.array([1.5, 2.5], np.float64),
    np.array([1.5, 2.5], np.float16),
    np.array([[1, 0]], np.int8),
    np.float64(2.5),
    np.array(7, np.int16),
]


@pytest.mark.parametrize("data", INFER, ids=lambda d: repr(d).replace(" ", ""))
def test_tensor_infers_dtype_like_pytorch(device, data):
    t = on(ember.tensor(data, device=device), device)
    want = torch.tensor(data).dtype
    assert t.dtype.name == str(want).replace("torch.", "")
    check(t, np.array(data))


def test_tensor_dtype_argument_and_copy_semantics(device):
    t = ember.tensor([1, 2, 3], dtype=ember.float64, device=device)
    check(on(t, device), [1.0, 2.0, 3.0], ember.float64)
    t = ember.tensor([1.7, -1.7, 300.0], dtype=ember.int32, device=device)
    check(t, [1, -1, 300], ember.int32)                 # float -> int truncates
    t = ember.tensor([0.0, 2.0, -1.0], dtype=ember.bool, device=device)
    check(t, [False, True, True], ember.bool)
    # from numpy: a copy, not a view
    arr = np.array([1.0, 2.0])
    t = ember.tensor(arr, device=device)
    arr[0] = 100.0
    check(t, [1.0, 2.0], ember.float64)
    # from a tensor: a copy
    src = T([1.0, 2.0], device)
    c = ember.tensor(src)
    c += 1
    check(src, [1.0, 2.0])
    check(on(c, device), [2.0, 3.0])


def test_tensor_bad_data(device):
    with pytest.raises((ValueError, TypeError)):
        ember.tensor([[1, 2], [3]], device=device)
    with pytest.raises(TypeError):
        ember.tensor(["a", "b"], device=device)
    with pytest.raises(TypeError):
        ember.tensor([1, 2], dtype="not-a-dtype", device=device)


# ---------------------------------------------------------------------------------------
# zeros / ones / full / empty / *_like
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, ember.float64, ember.float16, ember.bfloat16,
                                   ember.int32, ember.uint8, ember.bool],
                         ids=lambda d: "default" if d is None else d.name)
def test_zeros_ones_full_empty(device, dtype):
    want = dtype or ember.float32
    npd = npdt(want)
    for shape_args, shape in (((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([4],), (4,)),
                              ((0, 3), (0, 3)), ((), ())):
        z = on(ember.zeros(*shape_args, dtype=dtype, device=device), device)
        check(z, np.zeros(shape, npd), want)
        o = ember.ones(*shape_args, dtype=dtype, device=device)
        check(on(o, device), np.ones(shape, npd), want)
        e = ember.empty(*shape_args, dtype=dtype, device=device)
        assert on(e, device).shape == shape and e.dtype is want
        assert e.is_contiguous()
    v = True if want is ember.bool else 7
    f = ember.full((2, 2), v, dtype=want, device=device)
    check(on(f, device), np.full((2, 2), v, npd), want)


def test_full_infers_dtype_from_the_fill_value(device):
    for v in (7, 2.5, True, -3):
        f = ember.full((2, 3), v, device=device)
        want = torch.full((2, 3), v).dtype
        assert f.dtype.name == str(want).replace("torch.", ""), v
        check(on(f, device), np.full((2, 3), v))
    check(ember.full((2,), 7, dtype=ember.float64, device=device), [7.0, 7.0], ember.float64)
    check(ember.full((), 1.5, device=device), 1.5, ember.float32)


def test_like_functions_keep_shape_dtype_and_device(device):
    x = T(np.arange(6.0).reshape(2, 3), device, ember.float64).t()      # non-contiguous
    for fn, fill in ((ember.zeros_like, 0.0), (ember.ones_like, 1.0)):
        r = fn(x)
        check(on(r, device), np.full((3, 2), fill), ember.float64)
        r = fn(x, dtype=ember.int32)
        check(on(r, device), np.full((3, 2), fill), ember.int32)
    r = ember.full_like(x, 4)
    check(on(r, device), np.full((3, 2), 4.0), ember.float64)
    r = ember.empty_like(x)
    assert on(r, device).shape == (3, 2) and r.dtype is ember.float64
    r = ember.rand_like(x)
    assert on(r, device).shape == (3, 2) and r.dtype is ember.float64
    assert ((N(r) >= 0) & (N(r) < 1)).all()
    r = ember.randn_like(x, dtype=ember.float32)
    assert on(r, device).shape == (3, 2) and r.dtype is ember.float32
    r = ember.randint_like(x, 5)
    assert on(r, device).shape == (3, 2) and r.dtype is ember.float64
    assert set(np.unique(N(r))) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    r = x.new_zeros((2, 2))
    check(on(r, device), np.zeros((2, 2)), ember.float64)
    r = x.new_full((1, 2), 3)
    check(on(r, device), [[3.0, 3.0]], ember.float64)


def test_bad_sizes(device):
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(2, -1, device=device)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.empty((-3,), device=device)
    with pytest.raises(TypeError):
        ember.zeros(2.5, device=device)
    with pytest.raises(TypeError):
        ember.ones("3", device=device)
    with pytest.raises(TypeError):
        ember.rand((2, "a"), device=device)


# ---------------------------------------------------------------------------------------
# arange / linspace / eye
# ---------------------------------------------------------------------------------------
ARANGE = [
    ((5,), {}),
    ((1, 10, 3), {}),
    ((-3, 4), {}),
    ((5, 0, -1), {}),
    ((10, -10, -4), {}),
    ((0, 1, 0.25), {}),
    ((0, 1, 0.1), {}),
    ((5, 0, -1.5), {}),
    ((2.5,), {}),
    ((0, 10, 3), {"dtype": ember.float64}),
    ((0, 5), {"dtype": ember.float32}),
    ((1, 2, 0.3), {"dtype": ember.float64}),
    ((0, 0), {}),
    ((3, 3, -1), {}),
]


@pytest.mark.parametrize("args,kw", ARANGE, ids=str)
def test_arange(device, args, kw):
    t = on(ember.arange(*args, **kw, device=device), device)
    want = torch.arange(*args, **{k: tdt(v) for k, v in kw.items()})
    assert t.dtype.name == str(want.dtype).replace("torch.", "")
    exp = np.arange(*args).astype(np.float64)
    check(t, exp, tol=(1e-6, 1e-6))


def test_arange_errors(device):
    with pytest.raises(RuntimeError, match="step"):
        ember.arange(0, 5, 0, device=device)
    with pytest.raises(RuntimeError):
        ember.arange(0, 5, -1, device=device)
    with pytest.raises(RuntimeError):
        ember.arange(5, 0, 1, device=device)
    with pytest.raises(RuntimeError):
        ember.arange(0, math.inf, 1.0, device=device)


@pytest.mark.parametrize("dtype", [None, ember.float64, ember.int64],
                         ids=lambda d: "default" if d is None else d.name)
def test_linspace(device, dtype):
    want = dtype or ember.float32
    cases = [(0, 1, 5), (-2, 3, 7), (1, 0, 5), (0, 10, 4), (3, 3, 3), (0, 1, 1), (0, 1, 0)]
    if want.is_floating_point:
        cases.append((-1.5, 2.25, 16))
    for start, end, steps in cases:
        t = on(ember.linspace(start, end, steps, dtype=dtype, device=device), device)
        exp = np.linspace(start, end, steps)
        if not want.is_floating_point:
            exp = np.trunc(exp)
        check(t, exp, want, tol=(1e-6, 1e-6))
    t = ember.linspace(0, 1, 101, dtype=ember.float64, device=device)
    check(t, np.linspace(0, 1, 101), ember.float64, tol=(1e-14, 1e-15))
    assert N(t)[-1] == 1.0 and N(t)[0] == 0.0
    with pytest.raises(RuntimeError):
        ember.linspace(0, 1, -1, device=device)


@pytest.mark.parametrize("dtype", [None, ember.int64, ember.bool, ember.float64],
                         ids=lambda d: "default" if d is None else d.name)
def test_eye(device, dtype):
    want = dtype or ember.float32
    for args in ((3,), (2, 4), (4, 2), (1,), (0,), (0, 3)):
        t = on(ember.eye(*args, dtype=dtype, device=device), device)
        check(t, np.eye(*args), want)
    with pytest.raises(RuntimeError):
        ember.eye(-1, device=device)


# ---------------------------------------------------------------------------------------
# random
# ---------------------------------------------------------------------------------------
def test_manual_seed_reproduces_rand_and_randn(device):
    ember.manual_seed(1234)
    a = N(ember.rand(1000, device=device))
    b = N(ember.randn(3, 4, device=device))
    c = N(ember.randint(0, 100, (50,), device=device))
    p = N(ember.randperm(20, device=device))
    ember.manual_seed(1234)
    np.testing.assert_array_equal(N(ember.rand(1000, device=device)), a)
    np.testing.assert_array_equal(N(ember.randn(3, 4, device=device)), b)
    np.testing.assert_array_equal(N(ember.randint(0, 100, (50,), device=device)), c)
    np.testing.assert_array_equal(N(ember.randperm(20, device=device)), p)
    # the stream moves on; another seed gives other numbers
    assert not np.array_equal(N(ember.rand(1000, device=device)), a)
    ember.manual_seed(4321)
    assert not np.array_equal(N(ember.rand(1000, device=device)), a)


def test_rand_distribution(device):
    ember.manual_seed(0)
    for dt in (ember.float32, ember.float64):
        x = N(ember.rand(100_000, dtype=dt, device=device)).astype(np.float64)
        assert x.min() >= 0.0 and x.max() < 1.0
        assert abs(x.mean() - 0.5) < 0.01
        assert abs(x.std() - math.sqrt(1 / 12)) < 0.01
        hist, _ = np.histogram(x, bins=10, range=(0, 1))
        assert np.all(np.abs(hist / 10_000 - 1) < 0.05), hist


def test_rand_low_precision_stays_below_one(device):
    ember.manual_seed(3)
    for dt in (ember.float16, ember.bfloat16):
        x = N(ember.rand(100_000, dtype=dt, device=device))
        assert x.min() >= 0.0 and x.max() < 1.0, dt
        assert abs(x.astype(np.float64).mean() - 0.5) < 0.02, dt


def test_randn_distribution(device):
    ember.manual_seed(1)
    for dt in (ember.float32, ember.float64):
        x = N(ember.randn(100_000, dtype=dt, device=device)).astype(np.float64)
        assert abs(x.mean()) < 0.02
        assert abs(x.std() - 1.0) < 0.02
        assert abs(np.mean(np.abs(x) < 1.0) - 0.6827) < 0.01
        assert abs(np.mean(np.abs(x) < 2.0) - 0.9545) < 0.005
        assert np.isfinite(x).all()
    x = N(ember.randn(2, 50_000, dtype=ember.float16, device=device)).astype(np.float64)
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1.0) < 0.03


def test_uniform_and_normal_in_place(device):
    ember.manual_seed(2)
    x = ember.empty(100_000, device=device)
    v0 = x._version
    r = x.uniform_(2.0, 3.0)
    assert r is x and x._version > v0
    a = N(x)
    assert a.min() >= 2.0 and a.max() < 3.0 and abs(a.mean() - 2.5) < 0.01
    x.normal_(5.0, 2.0)
    a = N(x).astype(np.float64)
    assert abs(a.mean() - 5.0) < 0.04 and abs(a.std() - 2.0) < 0.04
    # into a non-contiguous view: only the view's elements change
    y = ember.zeros(4, 6, device=device)
    y[:, ::2].uniform_(1.0, 2.0)
    b = N(y)
    assert (b[:, 1::2] == 0).all() and (b[:, ::2] >= 1).all() and (b[:, ::2] < 2).all()
    with pytest.raises(RuntimeError):
        ember.rand(3, dtype=ember.int64, device=device)


def test_randint(device):
    ember.manual_seed(5)
    x = on(ember.randint(3, 7, (4000,), device=device), device)
    assert x.dtype is ember.int64
    a = N(x)
    assert a.min() == 3 and a.max() == 6
    counts = np.bincount(a - 3, minlength=4)
    assert np.all(np.abs(counts / 1000 - 1) < 0.1), counts
    y = ember.randint(10, (3, 5), device=device)           # randint(high, size)
    assert y.shape == (3, 5) and N(y).min() >= 0 and N(y).max() < 10
    z = ember.randint(-5, -2, (100,), dtype=ember.int32, device=device)
    assert z.dtype is ember.int32 and set(N(z)) <= {-5, -4, -3}
    big = N(ember.randint(0, 2**40, (1000,), device=device))
    assert big.min() >= 0 and big.max() < 2**40 and big.max() > 2**39
    with pytest.raises(RuntimeError):
        ember.randint(5, 5, (3,), device=device)


def test_randperm(device):
    ember.manual_seed(6)
    for n in (0, 1, 2, 10, 257):
        p = on(ember.randperm(n, device=device), device)
        assert p.dtype is ember.int64 and p.shape == (n,)
        np.testing.assert_array_equal(np.sort(N(p)), np.arange(n))
    p = N(ember.randperm(50, device=device))
    assert not np.array_equal(p, np.arange(50))
    q = ember.randperm(5, dtype=ember.int32, device=device)
    assert q.dtype is ember.int32
    np.testing.assert_array_equal(np.sort(N(q)), np.arange(5))


def test_generators_are_independent(device):
    g1 = ember.Generator(device).manual_seed(7)
    g2 = ember.Generator(device).manual_seed(7)
    a = N(ember.rand(5, generator=g1, device=device))
    ember.manual_seed(99)
    ember.rand(100, device=device)                  # the default stream moves
    ember.randn(10, generator=ember.Generator(device).manual_seed(7), device=device)
    b = N(ember.rand(5, generator=g2, device=device))
    np.testing.assert_array_equal(a, b)
    a2 = N(ember.rand(5, generator=g1, device=device))
    assert not np.array_equal(a, a2)
    # a generator's stream does not move the default one
    ember.manual_seed(11)
    d1 = N(ember.rand(5, device=device))
    ember.manual_seed(11)
    ember.rand(5, generator=g1, device=device)
    d2 = N(ember.rand(5, device=device))
    np.testing.assert_array_equal(d1, d2)
    # get_state / set_state round trip
    s = g1.get_state()
    x = N(ember.randn(8, generator=g1, device=device))
    g1.set_state(s)
    np.testing.assert_array_equal(N(ember.randn(8, generator=g1, device=device)), x)
    assert g1.initial_seed() == 7


def test_generator_of_another_device_is_refused(device):
    other = other_device(device)
    g = ember.Generator(other)
    with pytest.raises(RuntimeError) as ei:
        ember.rand(3, generator=g, device=device)
    assert "cpu" in str(ei.value)


def test_random_streams_do_not_depend_on_thread_count(device):
    n0 = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        ember.manual_seed(8)
        a = N(ember.randn(200_000, device=device))
        ember.set_num_threads(2)
        ember.manual_seed(8)
        b = N(ember.randn(200_000, device=device))
    finally:
        ember.set_num_threads(n0)
    np.testing.assert_array_equal(a, b)
