"""Unary, binary, comparison and ternary kernels against NumPy, on every layout."""
import math

import numpy as np
import pytest

import ember
from ocl_helpers import DEV, FLOATS, INTS, N, T, layouts, np_dtype

rng = np.random.default_rng(1)
TOL = {ember.float32: 1e-5, ember.float64: 1e-12, ember.float16: 2e-3, ember.bfloat16: 2e-2}

UNARY_FLOAT = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "reciprocal": lambda x: 1 / x,
    "log1p": np.log1p, "expm1": np.expm1, "log2": np.log2, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": np.round, "neg": np.negative,
    "abs": np.abs, "sign": np.sign,
    "erf": np.vectorize(math.erf),
}


def close(got, exp, dtype):
    if dtype.is_floating_point:
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(exp, np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype])
    else:
        np.testing.assert_array_equal(got, exp)


@pytest.mark.parametrize("dtype", FLOATS + [ember.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float(op, dtype):
    x = rng.uniform(0.1, 3.0, (4, 6)) * rng.choice([-1, 1], (4, 6))
    if op in ("log", "sqrt", "rsqrt", "log2", "log1p"):
        x = np.abs(x)
    x = x.astype(np_dtype(dtype))
    if dtype is ember.bfloat16:
        x = N(T(x, dtype))                      # values exact in bfloat16
    xs = x.astype(np.float64)
    for name, t in layouts(x, dtype):
        got = N(getattr(ember, op)(t))
        close(got, UNARY_FLOAT[op](xs), dtype)


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: d.name)
def test_unary_int(dtype):
    lo = 0 if dtype is ember.uint8 else -50
    x = rng.integers(lo, 50, (3, 7)).astype(dtype.to_numpy())
    for name, t in layouts(x, dtype):
        if dtype is not ember.uint8:
            close(N(-t), -x, dtype)
            close(N(ember.abs(t)), np.abs(x), dtype)
        close(N(ember.sign(t)), np.sign(x), dtype)
        close(N(ember.bitwise_not(t)), np.invert(x), dtype)
        close(N(ember.floor(t)), x, dtype)


def test_classify_and_logical_not():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    t = T(x)
    np.testing.assert_array_equal(N(ember.isnan(t)), np.isnan(x))
    np.testing.assert_array_equal(N(ember.isinf(t)), np.isinf(x))
    np.testing.assert_array_equal(N(ember.isfinite(t)), np.isfinite(x))
    np.testing.assert_array_equal(N(ember.logical_not(t)), np.logical_not(x))
    b = T(np.array([True, False]))
    np.testing.assert_array_equal(N(~b), [False, True])


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum, "fmod": np.fmod, "remainder": np.remainder}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int64,
                                   ember.int32, ember.int8, ember.uint8],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(op, dtype):
    if dtype.is_floating_point:
        a = (rng.integers(-40, 40, (4, 5)) / 4).astype(np_dtype(dtype))
        b = (rng.integers(1, 40, (4, 5)) / 4 * rng.choice([-1, 1], (4, 5))).astype(a.dtype)
    else:
        lo = 0 if dtype is ember.uint8 else -30
        a = rng.integers(lo, 30, (4, 5)).astype(dtype.to_numpy())
        b = rng.integers(1, 30, (4, 5)).astype(a.dtype)
        if dtype is not ember.uint8:
            b *= rng.choice([-1, 1], (4, 5)).astype(a.dtype)
    f = getattr(ember, op)
    for (na, ta), (nb, tb) in zip(layouts(a, dtype), reversed(layouts(b, dtype))):
        close(N(f(ta, tb)), BINARY[op](a, b), dtype)
    # broadcasting: a row against the matrix, and a Python scalar
    close(N(f(T(a, dtype), T(b[:1], dtype))), BINARY[op](a, b[:1]), dtype)
    # (maximum/minimum take tensors only, as in PyTorch: a 0-d tensor there)
    three = ember.tensor(3, dtype=dtype, device=DEV) if op in ("maximum", "minimum") else 3
    close(N(f(T(a, dtype), three)), BINARY[op](a, np.asarray(3, a.dtype)), dtype)


def test_division_modes():
    a = np.array([7.0, -7.0, 7.5, -7.5, 0.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(N(T(a) / T(b)), a / b)
    np.testing.assert_array_equal(N(ember.div(T(a), T(b), rounding_mode="trunc")),
                                  np.trunc(a / b))
    np.testing.assert_array_equal(N(ember.div(T(a), T(b), rounding_mode="floor")),
                                  np.floor_divide(a, b))
    ia, ib = a.astype(np.int64), np.array([2, 2, -2, -2, 3])
    np.testing.assert_array_equal(N(ember.div(T(ia), T(ib), rounding_mode="floor")), ia // ib)
    np.testing.assert_array_equal(N(ember.div(T(ia), T(ib), rounding_mode="trunc")),
                                  np.trunc(ia / ib).astype(np.int64))


def test_pow():
    a = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    np.testing.assert_allclose(N(T(a) ** T(a)), a ** a, rtol=1e-5)
    ia = rng.integers(-5, 5, (3, 4))
    ib = rng.integers(0, 5, (3, 4))
    np.testing.assert_array_equal(N(T(ia) ** T(ib)), ia ** ib)


def test_maximum_minimum_propagate_nan():
    a = T(np.array([1.0, np.nan, 3.0], np.float32))
    b = T(np.array([np.nan, 2.0, 1.0], np.float32))
    np.testing.assert_array_equal(np.isnan(N(ember.maximum(a, b))), [True, True, False])
    assert N(ember.minimum(a, b))[2] == 1.0


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.int8, ember.bool,
                                   ember.float16], ids=lambda d: d.name)
def test_comparisons_bitwise_logical(dtype):
    if dtype is ember.bool:
        a, b = rng.integers(0, 2, (4, 5)).astype(bool), rng.integers(0, 2, (4, 5)).astype(bool)
    else:
        a = rng.integers(-3, 3, (4, 5)).astype(np_dtype(dtype))
        b = rng.integers(-3, 3, (4, 5)).astype(a.dtype)
    ta, tb = T(a, dtype), T(b, dtype).t().contiguous().t()
    for op, f in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                  ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                  ("logical_and", np.logical_and), ("logical_or", np.logical_or),
                  ("logical_xor", np.logical_xor)):
        np.testing.assert_array_equal(N(getattr(ember, op)(ta, tb)), f(a, b), err_msg=op)
    if not dtype.is_floating_point:
        for op, f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor)):
            np.testing.assert_array_equal(N(getattr(ember, op)(ta, tb)), f(a, b), err_msg=op)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.bool,
                                   ember.int16], ids=lambda d: d.name)
def test_where(dtype):
    c = rng.integers(0, 2, (4, 5)).astype(bool)
    a = rng.integers(0, 2, (4, 5)).astype(np_dtype(dtype))
    b = rng.integers(0, 2, (1, 5)).astype(np_dtype(dtype))
    got = ember.where(T(c).t().contiguous().t(), T(a, dtype), T(b, dtype))
    np.testing.assert_array_equal(N(got), np.where(c, a, b))
    np.testing.assert_array_equal(N(ember.where(T(c), T(a, dtype), 0)),
                                  np.where(c, a, 0).astype(np_dtype(dtype)))


def test_optimizer_style_ternaries():
    a, b, c = (rng.standard_normal((5, 4)).astype(np.float32) for _ in range(3))
    c = np.abs(c) + 0.5
    ta, tb, tc = T(a), T(b).t().contiguous().t(), T(c)
    np.testing.assert_allclose(N(ember.lerp(ta, tb, 0.3)), a + 0.3 * (b - a), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(N(ember.lerp(ta, tb, T(c))),
                               np.where(np.abs(c) < 0.5, a + c * (b - a), b - (b - a) * (1 - c)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(N(ember.addcmul(ta, tb, tc, value=0.5)), a + 0.5 * b * c,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(N(ember.addcdiv(ta, tb, tc, value=-2)), a - 2 * b / c,
                               rtol=1e-5, atol=1e-5)
    ia = rng.integers(-5, 5, (3, 3))
    np.testing.assert_array_equal(N(ember.addcmul(T(ia), T(ia), T(ia), value=2)),
                                  ia + 2 * ia * ia)


def test_clamp():
    x = rng.standard_normal((4, 6)).astype(np.float32)
    t = T(x)
    np.testing.assert_array_equal(N(ember.clamp(t, -0.5, 0.5)), np.clip(x, -0.5, 0.5))
    np.testing.assert_array_equal(N(ember.clamp(t, min=0.0)), np.maximum(x, 0))
    lo = T(np.full((1, 6), -0.2, np.float32))
    np.testing.assert_array_equal(N(ember.clamp(t, lo, 0.3)), np.clip(x, -0.2, 0.3))
    np.testing.assert_array_equal(N(ember.clamp(t, max=T(np.float32(0.1)))),
                                  np.minimum(x, 0.1))
    i = T(np.arange(-5, 5))
    np.testing.assert_array_equal(N(ember.clamp(i, -2, 3)), np.clip(np.arange(-5, 5), -2, 3))
    np.testing.assert_array_equal(N(ember.clamp(i, -2.5, 2.5)),      # promotes to float
                                  np.clip(np.arange(-5, 5), -2.5, 2.5))
    nan = T(np.array([np.nan, 1.0], np.float32))
    assert np.isnan(N(ember.clamp(nan, 0, 0.5))[0])


def test_in_place_ops_write_their_view():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = T(x)
    t[:, 1:3].mul_(2)
    exp = x.copy()
    exp[:, 1:3] *= 2
    np.testing.assert_array_equal(N(t), exp)


def test_dtype_errors_are_clear():
    from ember.dispatcher.schema import OPS
    with pytest.raises(TypeError, match="sub.*bool"):
        OPS["sub"].kernels["opencl"](T([True]), T([True]), T([False]))
    with pytest.raises(TypeError, match="div.*int64"):
        OPS["div"].kernels["opencl"](T([1]), T([1]), T([1]))
    with pytest.raises(TypeError, match="exp.*int64"):
        OPS["exp"].kernels["opencl"](T([1]), T([1]))
    with pytest.raises(TypeError, match="one dtype"):
        OPS["add"].kernels["opencl"](T([1.0]), T([1.0]), T([1]))


# -- the op's own kernels (launches of >= 4096 elements whose operands have stride 0/1) ---

def _kernels_of(fn):
    """(result, names of the kernels ``fn`` launched)."""
    import ember_opencl.ops.elementwise as E
    names = []
    orig = E.enqueue

    def spy(dev, kernel, *rest):
        names.append(kernel.function_name)
        return orig(dev, kernel, *rest)
    E.enqueue = spy
    try:
        out = fn()
    finally:
        E.enqueue = orig
    return out, names


@pytest.mark.parametrize("dtype", [ember.float32, ember.int32, ember.float16])
def test_unit_kernels_one_dim_and_rows(dtype):
    """Contiguous operands, a scalar (stride 0), a bias (rows: one row for all), a column
    (one value per row) and a strided slice of rows run the op's own 1-D / 2-D kernels and
    give NumPy's values, including NaN through clamp and where."""
    nd = np_dtype(dtype)
    a = rng.standard_normal((96, 128)) * 10
    b = rng.standard_normal((96, 128)) * 10
    if dtype.is_floating_point:
        a[3, 5] = np.nan
    a, b = a.astype(nd), b.astype(nd)
    bias = (rng.standard_normal(128) * 10).astype(nd)
    col = (rng.standard_normal((96, 1)) * 10).astype(nd)
    wide = (rng.standard_normal((96, 200)) * 10).astype(nd)
    ta, tb, tbias, tcol, twide = T(a), T(b), T(bias), T(col), T(wide)
    cases = [
        ("_1d_", lambda: ta + tb, a + b),
        ("_1d_", lambda: ta * 3, a * nd.type(3)),
        ("_1d_", lambda: ember.maximum(ta, tb), np.maximum(a, b)),
        ("_1d_", lambda: ta > tb, a > b),
        ("_2d_", lambda: ta + tbias, a + bias),
        ("_2d_", lambda: ta - tcol, a - col),
        ("_2d_", lambda: twide[:, 10:138] * tb, wide[:, 10:138] * b),
    ]
    if dtype.is_floating_point:
        cases += [("_1d_", lambda: ember.clamp(ta, min=-1.0), np.where(np.isnan(a), a,
                                                                     np.maximum(a, -1))),
                  ("_1d_", lambda: ember.where(ta > 0, ta, tb), np.where(a > 0, a, b))]
    for tag, fn, want in cases:
        got, names = _kernels_of(fn)
        assert any(tag in n for n in names), names
        close(N(got), want, dtype)


def test_unit_kernel_checks_report_errors():
    """An integer division by zero in the op's own kernel raises PyTorch's error."""
    a = T(np.arange(8192, dtype=np.int64))
    b = T(np.ones(8192, dtype=np.int64))
    b[100] = 0
    (res, names) = _kernels_of(lambda: ember.floor_divide(a, b))
    assert any("_1d_" in n for n in names), names
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.opencl.synchronize()
    del res


def test_isnan_isinf_isfinite_by_comparison():
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3e38, -0.0, 1e-45] * 1024, np.float32)
    tx = T(x)
    np.testing.assert_array_equal(N(ember.isnan(tx)), np.isnan(x))
    np.testing.assert_array_equal(N(ember.isinf(tx)), np.isinf(x))
    np.testing.assert_array_equal(N(ember.isfinite(tx)), np.isfinite(x))
    np.testing.assert_array_equal(N(ember.nan_to_num(tx)), np.nan_to_num(x))


# ---- CPU devices: common.cl's inline math (EMBER_HOST_CPU) ------------------------------

_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 0.5, -0.5,
                     1.5, 2.5, -2.5, 3.5, 0.625, -0.625, 0.6249999, 9.02, -9.02, 88.0, 88.8,
                     89.0, 89.5, -87.0, -103.0, -103.97, -104.0, -110.0, 1e30, -1e30,
                     3.4e38, -3.4e38], np.float32)


def _sweep():
    r = np.random.default_rng(11)
    return np.concatenate([_SPECIAL, r.uniform(-110, 90, 20000).astype(np.float32),
                           r.standard_normal(20000).astype(np.float32),
                           (r.standard_normal(5000) * 1e-3).astype(np.float32)])


def _ulps(got, want):
    """|got - want| in units of the float32 spacing at want (float64 want)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


@pytest.mark.parametrize("name,ref,bound", [("exp", np.exp, 2.0), ("tanh", np.tanh, 2.0),
                                            ("erf", np.vectorize(math.erf), 2.0)])
def test_exp_tanh_erf_within_two_ulp_of_float64(name, ref, bound):
    # on a CPU device these are ember's polynomials, not the device's builtins: checked
    # against float64 NumPy over normal, tiny, huge and special inputs, NaN and the signs
    # of zeros included
    x = _sweep()
    got = N(getattr(ember, name)(T(x)))
    with np.errstate(over="ignore"):
        want = ref(x.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    fin = np.abs(want) < float(np.finfo(np.float32).max)
    over = ~fin & ~np.isnan(want)     # beyond float32: its infinity
    with np.errstate(over="ignore"):
        assert np.array_equal(got[over], want[over].astype(np.float32))
    worst = _ulps(got[fin], want[fin])
    # (exp's results below float32's normal range are subnormal: compared absolutely)
    tiny = np.abs(want[fin]) < 1.2e-38
    assert worst[~tiny].max() <= bound, x[fin][~tiny][np.argmax(worst[~tiny])]
    assert np.abs(got[fin][tiny] - want[fin][tiny]).max() <= 1.5e-45
    zeros = x == 0
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(ref(x[zeros]))), name


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
def test_rounding_abs_sqrt_copysign_agree_with_numpy(dtype):
    # the clang builtins CPU devices get for fabs, floor, ceil, trunc, rint, sqrt and
    # copysign (and isnan as a comparison): exact, as NumPy, on zeros, halves, infinities
    # and NaN
    x = _sweep().astype(np_dtype(dtype))
    t = T(x, dtype)
    for got, want in ((t.abs(), np.abs(x)), (t.floor(), np.floor(x)),
                      (t.ceil(), np.ceil(x)), (t.trunc(), np.trunc(x)),
                      (t.round(), np.round(x)), (t.abs().sqrt(), np.sqrt(np.abs(x))),
                      (ember.copysign(t, -t), np.copysign(x, -x)),
                      (t.isnan(), np.isnan(x))):
        g = N(got)
        np.testing.assert_array_equal(g, want)
        if g.dtype.kind == "f":
            assert np.array_equal(np.signbit(g), np.signbit(want))
