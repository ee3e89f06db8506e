"""Elementwise ops on every device, checked against NumPy (float64 where rounding matters).

Inputs are multiples of 1/16 in a small range, so they are exact in every floating dtype
(bfloat16 included) and the oracle sees the very values the kernel sees. Each op runs on
contiguous, transposed (``.transpose(-1, -2)``), step-sliced (``x[:, ::2]``), 0-d and empty inputs.
PyTorch is the oracle only for type promotion and for special-value semantics NumPy does
not share (``sign(nan)``).
"""
import math
import warnings
import zlib
from functools import partial

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import ember
from ember.dispatcher import OPS
from conftest import N, T
import helpers
from helpers import FLOATS, INTS, exact_values, hset, make, npdt, other_device, tdt

NUMERIC = FLOATS + INTS
ALL = NUMERIC + [ember.int16, ember.bool]

TOL = {ember.float64: (1e-10, 1e-12), ember.float32: (1e-5, 1e-6),
       ember.float16: (1e-2, 5e-3), ember.bfloat16: (3e-2, 3e-2)}
check = partial(helpers.check, tols=TOL)

HSET = hset(40)


def sample(rng, shape, dtype, domain="any"):
    """Values exact in ``dtype``: multiples of 1/16 for floats, small integers otherwise."""
    if dtype is ember.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_floating_point:
        lo, hi = {"any": (-64, 64), "pos": (1, 64), "nonneg": (0, 64), "gt-1": (-15, 64),
                  "small": (-20, 20), "nonzero": (1, 64)}[domain]
        v = rng.integers(lo, hi + 1, shape) / 16.0
        if domain == "nonzero":
            v = v * rng.choice([-1, 1], shape)
        return v
    lo, hi = {"any": (-5, 5), "pos": (1, 9), "nonneg": (0, 9), "gt-1": (0, 9),
              "small": (-1, 1), "nonzero": (1, 9)}[domain]
    if dtype is ember.uint8:
        lo = max(lo, 0)
    v = rng.integers(lo, hi + 1, shape)
    if domain == "nonzero" and dtype.is_signed:
        v = v * rng.choice([-1, 1], shape)
    return v


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# name: (float64 oracle, input domain, keeps integer dtype)
UNARY = {
    "neg": (np.negative, "any", True),
    "abs": (np.abs, "any", True),
    "sign": (np.sign, "any", True),
    "floor": (np.floor, "any", True),
    "ceil": (np.ceil, "any", True),
    "round": (np.round, "any", True),     # NumPy rounds half to even, as PyTorch does
    "trunc": (np.trunc, "any", True),
    "reciprocal": (lambda x: 1.0 / x, "nonzero", False),
    "exp": (np.exp, "any", False),
    "expm1": (np.expm1, "any", False),
    "log": (np.log, "pos", False),
    "log1p": (np.log1p, "gt-1", False),
    "log2": (np.log2, "pos", False),
    "sqrt": (np.sqrt, "nonneg", False),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "pos", False),
    "sin": (np.sin, "any", False),
    "cos": (np.cos, "any", False),
    "tan": (np.tan, "small", False),
    "tanh": (np.tanh, "any", False),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), "any", False),
    "erf": (_erf, "any", False),
}


def _unary_expected(name, x, dtype):
    fn, _, keeps = UNARY[name]
    if not dtype.is_floating_point and keeps:
        with np.errstate(over="ignore"):
            return fn(np.asarray(x).astype(npdt(dtype))), dtype
    out = dtype if dtype.is_floating_point else ember.float32
    return fn(np.asarray(x, np.float64)), out


# ---------------------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_numpy(device, name, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype.name}".encode()))
    domain = UNARY[name][1]
    fn = getattr(ember, name)
    for layout in ("contig", "t", "step"):
        x = sample(rng, (3, 4), dtype, domain)
        exp, out_dt = _unary_expected(name, x, dtype)
        check(fn(make(x, device, dtype, layout)), exp, out_dt)
        # method form
        check(getattr(make(x, device, dtype, layout), name)(), exp, out_dt)
    # 0-d and empty
    x0 = sample(rng, (), dtype, domain)
    exp, out_dt = _unary_expected(name, x0, dtype)
    r = fn(T(x0, device, dtype))
    assert r.shape == ()
    check(r, exp, out_dt)
    e = fn(T(np.zeros((0, 3)), device, dtype))
    assert e.shape == (0, 3) and e.dtype is out_dt


def test_round_is_half_to_even(device):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.4999999701976776, -0.49999997,
                  1e7 + 0.5, 2.0 ** 23 + 1])
    for dt in (ember.float32, ember.float64):
        xs = x.astype(npdt(dt))
        check(ember.round(T(xs, device, dt)), np.round(xs.astype(np.float64)), dt)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
def test_unary_special_values_follow_pytorch(device, dtype):
    # PyTorch is the oracle here: NumPy differs (e.g. sign(nan) is 0 in PyTorch)
    vals = [math.nan, math.inf, -math.inf, -0.0, 0.0, 100.0, -100.0]
    x = T(np.array(vals), device, dtype)
    tx = torch.tensor(vals, dtype=tdt(dtype))
    for name in ("neg", "abs", "sign", "floor", "ceil", "round", "trunc", "exp", "expm1",
                 "log", "log1p", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
                 "reciprocal", "sin", "cos"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = N(getattr(ember, name)(x)).astype(np.float64)
        exp = getattr(torch, name)(tx).double().numpy()
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-30, err_msg=name)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
def test_expm1_log1p_are_accurate_near_zero(device, dtype):
    # the reason these functions exist: no cancellation for tiny arguments
    x = np.array([1e-10, -1e-10, 1e-7, 3e-5, -2e-6])
    xs = x.astype(npdt(dtype))
    check(ember.expm1(T(xs, device, dtype)), np.expm1(xs.astype(np.float64)), dtype,
          tol=(1e-5, 0))
    check(ember.log1p(T(xs, device, dtype)), np.log1p(xs.astype(np.float64)), dtype,
          tol=(1e-5, 0))


def _f32_ulps(got, want):
    """|got - want| in float32 spacings at ``want`` (float64)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


@pytest.mark.parametrize("name,ref,bound", [("erf", np.vectorize(math.erf), 2.0),
                                            ("exp", np.exp, 2.0), ("tanh", np.tanh, 2.0)])
def test_float32_transcendentals_within_two_ulp_of_float64(device, name, ref, bound):
    # host backends compute float32 erf / exp / tanh with their own polynomials (scalar_ops.h
    # on cpu, common.cl on CPU OpenCL devices): checked against float64 libm over normal,
    # tiny and huge arguments, the boundaries of their ranges, signed zeros, inf and NaN
    if device == "primcpu" and name == "tanh":
        pytest.xfail("a backend of primitives only computes tanh from exp as "
                     "1 - 2 / (exp(2x) + 1), which cancels near 0 (known limitation)")
    r = np.random.default_rng(5)
    x = np.concatenate([
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 0.625, 0.9999999,
                  1.0, 1.0000001, -1.0, 3.92, 4.0, -4.5, 9.02, 88.7, 89.0, -87.3, -103.9,
                  -104.5, 1e30, -1e30]),
        r.uniform(-6, 6, 20000), r.uniform(-105, 90, 5000), r.standard_normal(5000) * 1e-3,
    ]).astype(np.float32)
    got = N(getattr(ember, name)(T(x, device)))
    with np.errstate(over="ignore"):
        want = ref(x.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want)), name
    fin = (np.abs(want) < float(np.finfo(np.float32).max)) & (np.abs(want) >= 1.2e-38)
    worst = _f32_ulps(got[fin], want[fin])
    assert worst.max() <= bound, (name, x[fin][np.argmax(worst)], worst.max())
    rest = ~fin & ~np.isnan(want)   # beyond float32 (its infinity) or subnormal results
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(got[rest], want[rest].astype(np.float32), rtol=0,
                                   atol=1.5e-45)
    zeros = x == 0
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(ref(x[zeros].astype(np.float64))))


def test_float32_log_within_one_ulp_of_float64(device):
    # host backends compute float32 log with their own reduction and series (scalar_ops.h
    # fast_logf; common.cl on CPU OpenCL devices): checked against float64 log over random
    # bit patterns of every exponent (subnormals too), the ends of the mantissa reduction
    # (sqrt(1/2), sqrt(2)), 1 and its neighbours, and the special values
    r = np.random.default_rng(6)
    bits = r.integers(1, 0x7F800000, 40000, dtype=np.uint32)
    x = np.concatenate([
        bits.view(np.float32),
        np.array([1.0, 0.99999994, 1.0000001, 0.70710677, 0.7071068, 1.4142135, 1.4142137,
                  2.0, 0.5, 1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38, 10.0, np.e],
                 np.float32),
        r.uniform(0.5, 2.0, 10000).astype(np.float32),
    ])
    got = N(ember.log(T(x, device))).astype(np.float64)
    want = np.log(x.astype(np.float64))
    worst = _f32_ulps(got, want)
    assert worst.max() <= 1.0, (x[np.argmax(worst)], worst.max())
    assert got[x == 1.0].tolist() == [0.0] and not np.signbit(got[x == 1.0]).any()
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -1e-45], np.float32)
    g = N(ember.log(T(special, device)))
    assert g[0] == g[1] == -np.inf and g[2] == np.inf
    assert np.isnan(g[3:]).all()


def _sincos_args():
    r = np.random.default_rng(7)
    return np.concatenate([
        r.uniform(-10, 10, 20000), r.uniform(-1e4, 1e4, 5000), r.uniform(-6e5, 6e5, 5000),
        r.standard_normal(2000) * 1e-4,
        # near multiples of pi / 2 (cancellation in the reduction), the 2^19 boundary of the
        # fast reduction, and beyond it
        np.pi / 2 * np.arange(-60, 61), np.pi * np.array([1e3, 1e4, 1e5, 1.5e5]),
        [524287.97, 524288.0, 524288.06, -524288.06, 1e6, -3e7, 1e30, 3.4e38, 1e-45, 1e-38],
    ]).astype(np.float32)


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_float32_sin_cos_within_one_ulp_of_float64(device, name):
    # the CPU backend reduces |x| <= 2^19 in double (scalar_ops.h sincosf_small) and leaves
    # larger arguments to libm; every device is held to 1 ulp of float64 here
    x = _sincos_args()
    got = N(getattr(ember, name)(T(x, device))).astype(np.float64)
    want = getattr(np, name)(x.astype(np.float64))
    worst = _f32_ulps(got, want)
    assert worst.max() <= 1.0, (x[np.argmax(worst)], worst.max())
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    g = N(getattr(ember, name)(T(special, device)))
    assert np.isnan(g[2:]).all()
    if name == "sin":
        assert g[0] == 0 and not np.signbit(g[0]) and g[1] == 0 and np.signbit(g[1])
    else:
        assert g[0] == g[1] == 1.0


@pytest.mark.parametrize("name", ["sin", "cos", "log", "exp", "tanh", "erf"])
def test_float32_fast_loops_match_the_generated_loop_bit_for_bit(name):
    # contiguous float32 runs go to multiversioned loops (sin / cos: a vectorised pass, then
    # libm again beyond 2^19); strided ones, in place or out, to the generated kernel: the
    # same bits everywhere
    x = _sincos_args()
    if name == "log":
        x = np.abs(x)
    x = np.repeat(x, 2)
    t = ember.from_numpy(x.copy())
    fn = getattr(ember, name)
    strided = fn(t[::2])                        # the generated loop
    contiguous = fn(t[::2].contiguous())         # the multiversioned one
    np.testing.assert_array_equal(N(strided).view(np.uint32), N(contiguous).view(np.uint32))
    inplace = t[::2].contiguous()
    getattr(inplace, name + "_")()              # o is a: the chunked pass must read first
    np.testing.assert_array_equal(N(inplace).view(np.uint32), N(contiguous).view(np.uint32))


def test_neg_and_sub_of_bool_raise(device):
    b = T([True, False], device)
    with pytest.raises(RuntimeError, match="bool"):
        -b
    with pytest.raises(RuntimeError, match="bool"):
        b - b


# ---------------------------------------------------------------------------------------
# binary arithmetic
# ---------------------------------------------------------------------------------------
ARITH = {
    "+": (lambda a, b: a + b, lambda a, b: np.add(a, b)),
    "-": (lambda a, b: a - b, lambda a, b: np.subtract(a, b)),
    "*": (lambda a, b: a * b, lambda a, b: np.multiply(a, b)),
    "/": (lambda a, b: a / b, lambda a, b: np.true_divide(a, b)),
    "//": (lambda a, b: a // b, lambda a, b: np.floor_divide(a, b)),
    "%": (lambda a, b: a % b, lambda a, b: np.remainder(a, b)),
    "**": (lambda a, b: a ** b, lambda a, b: np.power(a, b)),
}


def _arith_inputs(rng, op, dtype, sa, sb):
    a = sample(rng, sa, dtype, "any")
    if op in ("/", "//", "%"):
        b = sample(rng, sb, dtype, "nonzero")
    elif op == "**":
        if dtype.is_floating_point:
            a = sample(rng, sa, dtype, "pos")
            b = rng.integers(-16, 33, sb) / 16.0
        else:
            b = rng.integers(0, 3, sb)
    else:
        b = sample(rng, sb, dtype, "any")
    return a, b


def _arith_expected(op, a, b, dtype):
    ref = ARITH[op][1]
    if dtype.is_floating_point:
        return ref(np.asarray(a, np.float64), np.asarray(b, np.float64)), dtype
    if op == "/":
        return ref(np.asarray(a, np.float64), np.asarray(b, np.float64)), ember.float32
    nd = npdt(dtype)
    with np.errstate(over="ignore"):
        return ref(np.asarray(a).astype(nd), np.asarray(b).astype(nd)), dtype


SHAPE_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
               ((), (3, 4)), ((3, 4), ()), ((0, 4), (4,)), ((2, 0), (1, 1))]


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(ARITH))
def test_binary_arithmetic_broadcasts_like_numpy(device, op, dtype):
    rng = np.random.default_rng(len(op) * 100 + dtype.code)
    fn = ARITH[op][0]
    for sa, sb in SHAPE_PAIRS:
        a, b = _arith_inputs(rng, op, dtype, sa, sb)
        exp, out_dt = _arith_expected(op, a, b, dtype)
        check(fn(T(a, device, dtype), T(b, device, dtype)), exp, out_dt)
    # non-contiguous operands
    for la, lb in (("t", "contig"), ("step", "t"), ("step", "step")):
        a, b = _arith_inputs(rng, op, dtype, (3, 4), (3, 4))
        exp, out_dt = _arith_expected(op, a, b, dtype)
        check(fn(make(a, device, dtype, la), make(b, device, dtype, lb)), exp, out_dt)


def test_functional_forms_match_operators(device):
    rng = np.random.default_rng(0)
    a, b = sample(rng, (3, 4), ember.float32), sample(rng, (4,), ember.float32, "nonzero")
    ta, tb = T(a, device, ember.float32), T(b, device, ember.float32)
    check(ember.add(ta, tb), a + b)
    check(ember.add(ta, tb, alpha=2), a + 2 * b)
    check(ember.sub(ta, tb, alpha=3), a - 3 * b)
    check(ember.mul(ta, tb), a * b)
    check(ember.div(ta, tb), a / b)
    check(ember.div(ta, tb, rounding_mode="floor"), np.floor_divide(a, b))
    check(ember.div(ta, tb, rounding_mode="trunc"), np.trunc(a / b))
    check(ember.floor_divide(ta, tb), np.floor_divide(a, b))
    check(ember.remainder(ta, tb), np.remainder(a, b))
    check(ember.fmod(ta, tb), np.fmod(a, b))
    check(ember.pow(ember.abs(ta), 2), np.abs(a) ** 2)
    ia, ib = T([7, -7, 7, -7], device), T([2, 2, -2, -2], device)
    check(ember.div(ia, ib, rounding_mode="trunc"), [3, -3, -3, 3], ember.int64)
    check(ember.div(ia, ib, rounding_mode="floor"), [3, -4, -4, 3], ember.int64)
    check(ember.fmod(ia, ib), np.fmod([7, -7, 7, -7], [2, 2, -2, -2]), ember.int64)
    check(ia % ib, np.remainder([7, -7, 7, -7], [2, 2, -2, -2]), ember.int64)
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ember.div(ta, tb, rounding_mode="round")


def test_scalars_on_either_side(device):
    x = np.array([[0.5, 1.0, 2.0], [-1.5, 4.0, 0.25]])
    t = T(x, device, ember.float32)
    check(2 - t, 2 - x)
    check(t - 2, x - 2)
    check(t ** 2, x ** 2)
    check(2 ** t, 2.0 ** x)
    check(1 / t, 1 / x)
    check(t / 4, x / 4)
    check(3 + t, 3 + x)
    check(t * 2.5, x * 2.5)
    check(7 // t, np.floor_divide(7, x))
    check(3 % t, np.remainder(3, x))
    check(t % 0.75, np.remainder(x, 0.75))
    i = T([[1, 2, 3], [4, 5, 6]], device)
    check(2 - i, 2 - np.array([[1, 2, 3], [4, 5, 6]]), ember.int64)
    check(i ** 2, np.array([[1, 4, 9], [16, 25, 36]]), ember.int64)
    check(2 ** i, 2 ** np.array([[1, 2, 3], [4, 5, 6]]), ember.int64)
    check(1 / i, 1 / np.array([[1, 2, 3], [4, 5, 6]]), ember.float32)
    check(i * 0.5, np.array([[1, 2, 3], [4, 5, 6]]) * 0.5, ember.float32)
    check(i ** 0.5, np.sqrt([[1, 2, 3], [4, 5, 6]]), ember.float32)
    check(2.0 ** i, 2.0 ** np.array([[1, 2, 3], [4, 5, 6]]), ember.float32)
    # NumPy scalars behave like Python numbers
    check(t + np.float64(1.5), x + 1.5, ember.float32)


def test_float_division_by_zero_gives_inf_and_nan(device):
    a = np.array([1.0, -1.0, 0.0])
    z = np.zeros(3)
    t, tz = T(a, device, ember.float32), T(z, device, ember.float32)
    with np.errstate(all="ignore"):
        check(t / tz, a / z)
        check(t // tz, np.floor_divide(a, z))
        check(t % tz, np.remainder(a, z))
    # integer true division is float division
    check(T([1, 0, -2], device) / 0, [np.inf, np.nan, -np.inf], ember.float32)


@pytest.mark.parametrize("dtype", [ember.int32, ember.int64, ember.uint8, ember.int8],
                         ids=lambda d: d.name)
def test_integer_division_by_zero_raises(device, dtype):
    a = T([4, 5, 6], device, dtype)
    b = T([1, 0, 2], device, dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // b
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % b
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.fmod(a, 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.div(a, b, rounding_mode="trunc")


# ---------------------------------------------------------------------------------------
# type promotion (PyTorch's torch.result_type is the oracle)
# ---------------------------------------------------------------------------------------
PROMO_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
                ember.float16, ember.bfloat16, ember.float32, ember.float64]


def test_binary_result_dtypes_follow_torch_result_type(device):
    bad = []
    for da in PROMO_DTYPES:
        for db in PROMO_DTYPES:
            for sa, sb in (((2,), (2,)), ((2,), ()), ((), (2,))):
                a = T(np.ones(sa), device, da)
                b = T(np.ones(sb), device, db)
                ta = torch.ones(sa, dtype=tdt(da))
                tb = torch.ones(sb, dtype=tdt(db))
                want = torch.result_type(ta, tb)
                for name, fn in (("add", lambda x, y: x + y), ("mul", lambda x, y: x * y),
                                 ("maximum", ember.maximum)):
                    got = fn(a, b).dtype
                    if got.name != str(want).replace("torch.", ""):
                        bad.append((name, da.name, sa, db.name, sb, got.name, str(want)))
                if ember.result_type(a, b).name != str(want).replace("torch.", ""):
                    bad.append(("result_type", da.name, sa, db.name, sb))
                got = (a < b).dtype
                if got is not ember.bool:
                    bad.append(("lt", da.name, db.name, got.name))
    assert not bad, bad[:10]


@pytest.mark.parametrize("scalar", [2, 2.5, True, -1])
def test_tensor_scalar_result_dtypes(device, scalar):
    bad = []
    for d in PROMO_DTYPES:
        x = T(np.ones(3), device, d)
        tx = torch.ones(3, dtype=tdt(d))
        for name, fn in (("add", lambda a, b: a + b), ("radd", lambda a, b: b + a),
                         ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b)):
            want = str(fn(tx, scalar).dtype).replace("torch.", "")
            got = fn(x, scalar).dtype.name
            if got != want:
                bad.append((name, d.name, scalar, got, want))
    assert not bad, bad


def test_promotion_examples_from_the_docs(device):
    i64 = T([1, 2, 3], device)
    r = i64 + 2.5
    assert r.dtype is ember.float32
    check(r, [3.5, 4.5, 5.5])
    u8 = T([200, 255, 0], device, ember.uint8)
    i8 = T([-100, 127, -128], device, ember.int8)
    r = u8 + i8
    assert r.dtype is ember.int16
    check(r, [100, 382, -128], ember.int16)
    r = T([1, 2, 3], device) / T([2, 2, 2], device)
    check(r, [0.5, 1.0, 1.5], ember.float32)
    r = T([1, 2], device, ember.int32) + T([1, 2], device, ember.int64)
    check(r, [2, 4], ember.int64)
    # a 0-d tensor of a higher category wins; of the same category it does not
    r = T([1, 2], device, ember.int32) + T(1.5, device, ember.float64)
    check(r, [2.5, 3.5], ember.float64)
    r = T([1, 2], device, ember.int8) + T(1000, device, ember.int64)
    assert r.dtype is ember.int8
    r = T([1.0, 2.0], device, ember.float16) + T([1.0, 2.0], device, ember.bfloat16)
    check(r, [2.0, 4.0], ember.float32)


# ---------------------------------------------------------------------------------------
# in-place and out=
# ---------------------------------------------------------------------------------------
def test_inplace_ops_match_numpy(device):
    rng = np.random.default_rng(1)
    a = sample(rng, (3, 4), ember.float32)
    b = sample(rng, (4,), ember.float32, "nonzero")
    cases = [
        ("add_", lambda x, y: x.add_(y), a + b),
        ("add_alpha", lambda x, y: x.add_(y, alpha=2), a + 2 * b),
        ("sub_", lambda x, y: x.sub_(y), a - b),
        ("mul_", lambda x, y: x.mul_(y), a * b),
        ("div_", lambda x, y: x.div_(y), a / b),
        ("+=", lambda x, y: x.__iadd__(y), a + b),
        ("-=", lambda x, y: x.__isub__(y), a - b),
        ("*=", lambda x, y: x.__imul__(y), a * b),
        ("/=", lambda x, y: x.__itruediv__(y), a / b),
        ("//=", lambda x, y: x.__ifloordiv__(y), np.floor_divide(a, b)),
        ("%=", lambda x, y: x.__imod__(y), np.remainder(a, b)),
        ("pow_", lambda x, y: x.abs_().pow_(2), np.abs(a) ** 2),
        ("clamp_", lambda x, y: x.clamp_(-1, 1), np.clip(a, -1, 1)),
        ("exp_", lambda x, y: x.exp_(), np.exp(a)),
        ("neg_", lambda x, y: x.neg_(), -a),
        ("floor_divide_", lambda x, y: x.floor_divide_(y), np.floor_divide(a, b)),
        ("lerp_", lambda x, y: x.lerp_(y, 0.25), a + 0.25 * (b - a)),
        ("addcmul_", lambda x, y: x.addcmul_(y, y, value=0.5), a + 0.5 * b * b),
        ("addcdiv_", lambda x, y: x.addcdiv_(y, y, value=2), a + 2.0),
    ]
    for name, fn, exp in cases:
        for layout in ("contig", "t", "step"):
            x = make(a, device, ember.float32, layout)
            y = T(b, device, ember.float32)
            r = fn(x, y)
            assert r is x, name
            check(x, exp, ember.float32)


def test_inplace_through_a_view_changes_the_base(device):
    base = T(np.zeros((4, 6)), device, ember.float32)
    v = base[:, ::2]
    v += 1
    v.t().mul_(3)
    exp = np.zeros((4, 6))
    exp[:, ::2] = 3
    check(base, exp)
    base[1:3].sub_(T([1.0] * 6, device))
    exp[1:3] -= 1
    check(base, exp)


def test_inplace_integer_ops_keep_dtype(device):
    x = T([1, 2, 3], device, ember.int32)
    x += 2
    x *= T([2, 2, 2], device, ember.int64)   # int64 result fits back into int32
    x //= 3
    check(x, [2, 2, 3], ember.int32)
    x = T([1.0, 2.0], device, ember.float16)
    x += T([1, 2], device)                     # int into float: fine
    check(x, [2.0, 4.0], ember.float16)


def test_inplace_float_into_int_raises(device):
    x = T([1, 2, 3], device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x += T([0.5, 0.5, 0.5], device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x /= 2
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.mul_(2.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.exp_()
    check(x, [1, 2, 3], ember.int64)
    b = T([True, False], device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        b.add_(1)


def test_inplace_cannot_broadcast_self(device):
    x = T(np.zeros((3, 1)), device)
    with pytest.raises(RuntimeError, match=r"\[3, 1\].*\[3, 4\]"):
        x.add_(T(np.ones((3, 4)), device))


def test_inplace_ops_bump_version_shared_with_views(device):
    x = T(np.zeros((3, 4)), device)
    v = x[1]
    w = x.t()
    v0 = x._version
    assert v._version == v0 and w._version == v0
    steps = [lambda: x.add_(1), lambda: v.mul_(2), lambda: w.sub_(1), lambda: x.__iadd__(1),
             lambda: x.clamp_(0, 5), lambda: x.exp_(), lambda: x.fill_(0), lambda: x.zero_(),
             lambda: x.copy_(T(np.ones((3, 4)), device)), lambda: x.__setitem__(0, 5.0),
             lambda: v.__setitem__(slice(None), T(np.ones(4), device)),
             lambda: ember.add(T([1.0] * 4, device), 1, out=v)]
    for i, step in enumerate(steps):
        before = x._version
        step()
        assert x._version > before, f"step {i} did not bump the version"
        assert v._version == x._version == w._version


def test_out_argument(device):
    a = T([[1.0, 2.0], [3.0, 4.0]], device, ember.float32)
    b = T([10.0, 20.0], device, ember.float32)
    out = ember.empty((2, 2), device=device)
    r = ember.add(a, b, out=out)
    assert r is out
    check(out, [[11.0, 22.0], [13.0, 24.0]], ember.float32)
    # a wider float out is fine
    out64 = ember.empty((2, 2), dtype=ember.float64, device=device)
    ember.mul(a, b, out=out64)
    check(out64, [[10.0, 40.0], [30.0, 80.0]], ember.float64)
    # unary out=, into a non-contiguous view
    big = ember.zeros((2, 4), device=device)
    ember.exp(a, out=big[:, ::2])
    exp = np.zeros((2, 4))
    exp[:, ::2] = np.exp([[1.0, 2.0], [3.0, 4.0]])
    check(big, exp)
    # an empty out is resized without complaint
    e = ember.empty(0, device=device)
    ember.sub(a, b, out=e)
    check(e, [[-9.0, -18.0], [-7.0, -16.0]])
    # float result into an integer out: refused
    iout = ember.empty((2, 2), dtype=ember.int64, device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.add(a, b, out=iout)
    # a non-empty out of the wrong shape is resized with a warning
    with pytest.warns(UserWarning, match="resized"):
        r = ember.add(a, b, out=ember.empty(3, device=device))
    check(r, [[11.0, 22.0], [13.0, 24.0]])
    # the inputs may alias the output
    ember.add(a, a, out=a)
    check(a, [[2.0, 4.0], [6.0, 8.0]])


# ---------------------------------------------------------------------------------------
# clamp, maximum/minimum, comparisons, logical, bitwise, predicates
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
def test_clamp(device, dtype):
    rng = np.random.default_rng(3)
    x = sample(rng, (3, 4), dtype)
    nd = np.float64 if dtype.is_floating_point else npdt(dtype)
    xe = x.astype(nd)
    lo, hi = (-1.5, 2.0) if dtype.is_floating_point else (1, 3)
    for layout in ("contig", "t", "step"):
        t = make(x, device, dtype, layout)
        check(ember.clamp(t, lo, hi), np.clip(xe, lo, hi), dtype)
        check(t.clamp(min=lo), np.maximum(xe, lo), dtype)
        check(t.clamp(max=hi), np.minimum(xe, hi), dtype)
        check(ember.clip(t, lo, hi), np.clip(xe, lo, hi), dtype)
    with pytest.raises(RuntimeError, match="min.*max"):
        ember.clamp(T(x, device, dtype))


def test_clamp_promotes_and_propagates_nan(device):
    r = T([1, 5], device).clamp(max=2.5)
    check(r, [1.0, 2.5], ember.float32)
    r = T([1, 5], device, ember.int32).clamp(min=2)
    check(r, [2, 5], ember.int32)
    r = T([math.nan, 1.0, -3.0], device).clamp(0, 0.5)
    check(r, [math.nan, 0.5, 0.0])
    r = T([1.0, 2.0, 3.0], device).clamp(T([1.5, 1.5, 1.5], device), T([2.5, 2.5, 2.5], device))
    check(r, [1.5, 2.0, 2.5])


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
def test_maximum_minimum(device, dtype):
    rng = np.random.default_rng(4)
    a, b = sample(rng, (3, 4), dtype), sample(rng, (4,), dtype)
    nd = np.float64 if dtype.is_floating_point else npdt(dtype)
    for layout in ("contig", "t", "step"):
        ta = make(a, device, dtype, layout)
        check(ember.maximum(ta, T(b, device, dtype)), np.maximum(a.astype(nd), b.astype(nd)),
              dtype)
        check(ember.minimum(ta, T(b, device, dtype)), np.minimum(a.astype(nd), b.astype(nd)),
              dtype)
    check(ember.max(T(a, device, dtype), T(b, device, dtype)),
          np.maximum(a.astype(nd), b.astype(nd)), dtype)


def test_maximum_minimum_propagate_nan(device):
    a = np.array([math.nan, 1.0, 2.0, math.nan, -math.inf])
    b = np.array([0.0, math.nan, 1.0, math.nan, 3.0])
    for dt in (ember.float32, ember.float64, ember.float16, ember.bfloat16):
        check(ember.maximum(T(a, device, dt), T(b, device, dt)), np.maximum(a, b), dt)
        check(ember.minimum(T(a, device, dt), T(b, device, dt)), np.minimum(a, b), dt)
    check(ember.maximum(T([1, 2], device), T([1.5, 0.5], device, ember.float32)), [1.5, 2.0],
          ember.float32)


CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}
CMP_OPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
           "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


@pytest.mark.parametrize("dtype", NUMERIC + [ember.bool], ids=lambda d: d.name)
def test_comparisons(device, dtype):
    rng = np.random.default_rng(5)
    a, b = sample(rng, (3, 4), dtype), sample(rng, (4,), dtype)
    b[0] = a[0, 0]  # make sure some are equal
    for name, ref in CMP.items():
        for layout in ("contig", "t", "step"):
            r = CMP_OPS[name](make(a, device, dtype, layout), T(b, device, dtype))
            check(r, ref(a, b), ember.bool)
        check(getattr(ember, name)(T(a, device, dtype), T(b, device, dtype)), ref(a, b),
              ember.bool)
        s = 1 if dtype is not ember.bool else True
        check(CMP_OPS[name](T(a, device, dtype), s), ref(a, s), ember.bool)
        check(CMP_OPS[name](T(np.zeros((0, 2)), device, dtype), s), np.zeros((0, 2), bool),
              ember.bool)


def test_comparisons_with_nan_and_mixed_dtypes(device):
    a = np.array([math.nan, 1.0, math.inf, -math.inf])
    b = np.array([math.nan, math.nan, math.inf, 0.0])
    ta, tb = T(a, device), T(b, device)
    for name, ref in CMP.items():
        check(CMP_OPS[name](ta, tb), ref(a, b), ember.bool)
    check(T([1, 2, 3], device) < 2.5, [True, True, False], ember.bool)
    check(T([1, 2, 3], device, ember.int8) == T([1.0, 2.5, 3.0], device), [True, False, True],
          ember.bool)


LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}


@pytest.mark.parametrize("dtype", [ember.bool, ember.int32, ember.uint8, ember.float32,
                                   ember.float64], ids=lambda d: d.name)
def test_logical_ops(device, dtype):
    rng = np.random.default_rng(6)
    a = rng.integers(-1, 2, (3, 4)).astype(np.float64)
    b = rng.integers(0, 2, (4,)).astype(np.float64)
    if dtype is ember.uint8:
        a = np.abs(a)
    for name, ref in LOGICAL.items():
        for layout in ("contig", "t", "step"):
            r = getattr(ember, name)(make(a, device, dtype, layout), T(b, device, dtype))
            check(r, ref(a.astype(bool), b.astype(bool)), ember.bool)
        check(getattr(T(a, device, dtype), name)(T(b, device, dtype)),
              ref(a.astype(bool), b.astype(bool)), ember.bool)
    check(ember.logical_not(T(a, device, dtype)), np.logical_not(a), ember.bool)
    check(ember.logical_not(T(a, device, dtype).t()), np.logical_not(a.T), ember.bool)
    # mixed dtypes
    check(ember.logical_and(T(a, device, dtype), T([0.5, 0, 2, 0], device)),
          np.logical_and(a, [0.5, 0, 2, 0]), ember.bool)


BITWISE = {"bitwise_and": (np.bitwise_and, lambda a, b: a & b),
           "bitwise_or": (np.bitwise_or, lambda a, b: a | b),
           "bitwise_xor": (np.bitwise_xor, lambda a, b: a ^ b)}


@pytest.mark.parametrize("dtype", [ember.bool, ember.uint8, ember.int8, ember.int32,
                                   ember.int64], ids=lambda d: d.name)
def test_bitwise_ops(device, dtype):
    rng = np.random.default_rng(7)
    nd = npdt(dtype)
    if dtype is ember.bool:
        a, b = rng.integers(0, 2, (3, 4)).astype(bool), rng.integers(0, 2, (4,)).astype(bool)
    else:
        lo = 0 if dtype is ember.uint8 else -100
        a, b = rng.integers(lo, 100, (3, 4)).astype(nd), rng.integers(lo, 100, (4,)).astype(nd)
    for name, (ref, opr) in BITWISE.items():
        for layout in ("contig", "t", "step"):
            ta = make(a, device, dtype, layout)
            check(getattr(ember, name)(ta, T(b, device, dtype)), ref(a, b), dtype)
            check(opr(ta, T(b, device, dtype)), ref(a, b), dtype)
        s = True if dtype is ember.bool else 5
        check(opr(T(a, device, dtype), s), ref(a, np.asarray(s).astype(nd)), dtype)
    check(ember.bitwise_not(T(a, device, dtype)), np.invert(a), dtype)
    check(~T(a, device, dtype).t(), np.invert(a.T), dtype)


def test_bitwise_promotes_integers(device):
    r = T([12, 10], device, ember.int32) & T([10, 6], device, ember.int64)
    check(r, [8, 2], ember.int64)
    r = T([True, False], device) | T([4, 4], device, ember.uint8)
    check(r, [5, 4], ember.uint8)


def test_bitwise_on_float_raises_type_error(device):
    x = T([1.0, 2.0], device)
    for fn in (lambda: x & x, lambda: x | 1, lambda: x ^ x, lambda: ~x,
               lambda: ember.bitwise_and(x, x), lambda: ember.bitwise_not(x),
               lambda: T([1, 2], device) & 1.5):
        with pytest.raises(TypeError):
            fn()


@pytest.mark.parametrize("dtype", FLOATS + [ember.int32, ember.uint8, ember.bool],
                         ids=lambda d: d.name)
def test_isnan_isinf_isfinite(device, dtype):
    if dtype.is_floating_point:
        x = np.array([[math.nan, math.inf, -math.inf], [0.0, -1.5, 3.0]])
    else:
        x = np.array([[1, 0, 1], [0, 1, 1]])
    for layout in ("contig", "t", "step"):
        t = make(x, device, dtype, layout)
        check(ember.isnan(t), np.isnan(x), ember.bool)
        check(ember.isinf(t), np.isinf(x), ember.bool)
        check(ember.isfinite(t), np.isfinite(x), ember.bool)
        check(t.isnan(), np.isnan(x), ember.bool)


# ---------------------------------------------------------------------------------------
# ternary: lerp, addcmul, addcdiv, where
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_lerp_addcmul_addcdiv(device, dtype):
    rng = np.random.default_rng(8)
    a, b = sample(rng, (3, 4), dtype), sample(rng, (4,), dtype)
    w = rng.integers(0, 17, (3, 1)) / 16.0
    c = sample(rng, (3, 4), dtype, "nonzero")
    for layout in ("contig", "t", "step"):
        ta = make(a, device, dtype, layout)
        tb, tw, tc = T(b, device, dtype), T(w, device, dtype), T(c, device, dtype)
        check(ember.lerp(ta, tb, 0.25), a + 0.25 * (b - a), dtype)
        check(ember.lerp(ta, tb, tw), a + w * (b - a), dtype)
        check(ta.lerp(tb, 0.75), a + 0.75 * (b - a), dtype)
        check(ember.addcmul(ta, tb, tc), a + b * c, dtype)
        check(ember.addcmul(ta, tb, tc, value=0.5), a + 0.5 * b * c, dtype)
        check(ember.addcdiv(ta, tb, tc), a + b / c, dtype)
        check(ember.addcdiv(ta, tb, tc, value=-2), a - 2 * b / c, dtype)
    # integer addcmul stays integer
    check(ember.addcmul(T([1], device), T([2], device), T([3], device), value=2), [13],
          ember.int64)


@pytest.mark.parametrize("dtype", NUMERIC + [ember.bool], ids=lambda d: d.name)
def test_where(device, dtype):
    rng = np.random.default_rng(9)
    cond = rng.integers(0, 2, (3, 4)).astype(bool)
    a, b = sample(rng, (3, 4), dtype), sample(rng, (4,), dtype)
    nd = npdt(dtype) if dtype is not ember.bfloat16 else np.float64
    for layout in ("contig", "t", "step"):
        r = ember.where(make(cond, device, ember.bool, layout), make(a, device, dtype, layout),
                        T(b, device, dtype))
        check(r, np.where(cond, a.astype(nd), b.astype(nd)), dtype)
    # scalar branches and method form
    s = True if dtype is ember.bool else 1
    check(ember.where(T(cond, device), T(a, device, dtype), s),
          np.where(cond, a.astype(nd), np.asarray(s).astype(nd)), dtype)


def test_where_method_takes_self_as_the_true_branch(device):
    # x.where(condition, y) is where(condition, x, y), as in PyTorch
    x = T([1.0, 2.0, 3.0], device, ember.float32)
    y = T([10.0, 20.0, 30.0], device, ember.float32)
    cond = T([True, False, True], device)
    check(x.where(cond, y), [1.0, 20.0, 3.0], ember.float32)
    check(x.where(cond, 0.0), [1.0, 0.0, 3.0], ember.float32)


def test_where_promotes_and_checks_condition(device):
    c = T([True, False], device)
    check(ember.where(c, T([1, 2], device), 2.5), [1.0, 2.5], ember.float32)
    check(ember.where(c, 1.0, 0.0), [1.0, 0.0], ember.float32)
    check(ember.where(c, T([1, 2], device, ember.int32), T([3, 4], device)), [1, 4],
          ember.int64)
    check(ember.where(T(True, device), T([1.0, 2.0], device, ember.float32),
                      T([[3.0], [4.0]], device, ember.float32)),
          [[1.0, 2.0], [1.0, 2.0]], ember.float32)
    with pytest.raises(RuntimeError, match="condition to be a boolean"):
        ember.where(T([1, 0], device), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="must match"):
        ember.where(T([True, False, True], device), T([1.0, 2.0], device), 0.0)


# ---------------------------------------------------------------------------------------
# hypothesis: broadcasting of random shapes against NumPy
# ---------------------------------------------------------------------------------------
H_DTYPES = [ember.float32, ember.float64, ember.int32, ember.int64, ember.uint8, ember.int8,
            ember.bool]


_h_values = partial(exact_values, float_ints=(-40, 40), denom=8.0, int_bound=9)


def _np_of(dtype_name):
    return np.float32 if dtype_name == "bfloat16" else np.dtype(dtype_name)


def _want(sa, da, sb, db):
    """PyTorch's result dtype for operands of these shapes (0-d tensors rank lower)."""
    rt = torch.result_type(torch.zeros(sa, dtype=tdt(da)), torch.zeros(sb, dtype=tdt(db)))
    return str(rt).replace("torch.", "")


@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                            max_side=4),
       da=st.sampled_from(H_DTYPES), db=st.sampled_from(H_DTYPES),
       op=st.sampled_from(["add", "mul"]), seed=st.integers(0, 2**16))
@HSET
def test_hypothesis_binary_broadcasting(device, shapes, da, db, op, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a, b = _h_values(rng, sa, da), _h_values(rng, sb, db)
    want = _want(sa, da, sb, db)
    ta, tb = T(a, device, da), T(b, device, db)
    r = getattr(ember, op)(ta, tb) if seed % 2 else (ta + tb if op == "add" else ta * tb)
    assert r.dtype.name == want
    assert r.shape == shapes.result_shape
    w = _np_of(want)
    ref = np.add if op == "add" else np.multiply
    with np.errstate(over="ignore"):
        exp = ref(np.asarray(a).astype(w), np.asarray(b).astype(w))
    np.testing.assert_allclose(N(r).astype(np.float64), exp.astype(np.float64), rtol=1e-6)


@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, min_side=0,
                                            max_side=4),
       da=st.sampled_from(H_DTYPES), db=st.sampled_from(H_DTYPES), seed=st.integers(0, 2**16))
@HSET
def test_hypothesis_where_broadcasting(device, shapes, da, db, seed):
    rng = np.random.default_rng(seed)
    sc, sa, sb = shapes.input_shapes
    c = rng.integers(0, 2, sc).astype(bool)
    a, b = _h_values(rng, sa, da), _h_values(rng, sb, db)
    r = ember.where(T(c, device), T(a, device, da), T(b, device, db))
    want = _want(sa, da, sb, db)
    assert r.dtype.name == want
    assert r.shape == shapes.result_shape
    w = _np_of(want)
    exp = np.where(c, np.asarray(a).astype(w), np.asarray(b).astype(w))
    np.testing.assert_allclose(N(r).astype(np.float64), exp.astype(np.float64), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------
def test_shape_mismatch_message(device):
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 0"):
        T(np.zeros(3), device) + T(np.zeros(4), device)
    with pytest.raises(RuntimeError, match="must match"):
        ember.mul(T(np.zeros((2, 3)), device), T(np.zeros((3, 2)), device))


def test_mismatched_devices_raise(device):
    other = other_device(device)
    a = T([1.0, 2.0], device)
    b = T([3.0, 4.0], other)
    for fn in (lambda: a + b, lambda: ember.mul(a, b), lambda: ember.maximum(b, a),
               lambda: ember.where(T([True, False], device), a, b), lambda: a.add_(b),
               lambda: a < b):
        with pytest.raises(RuntimeError) as ei:
            fn()
        msg = str(ei.value)
        assert "cpu" in msg and "primcpu" in msg, msg


def test_zero_dim_cpu_tensor_joins_other_devices(device):
    a = T([1.0, 2.0], device)
    s = T(3.0, "cpu")
    r = a + s
    assert r.device.type == device
    check(r, [4.0, 5.0])
    if device != "cpu":
        r = s * T([1.0, 2.0], device)
        assert r.device.type == device
        check(r, [3.0, 6.0])


def test_wrong_argument_types_raise_type_error(device):
    x = T([1.0, 2.0], device)
    for fn in (lambda: x + "a", lambda: x * [1.0, 2.0], lambda: ember.exp([1.0, 2.0]),
               lambda: ember.add(x, None), lambda: ember.sum([1, 2]),
               lambda: ember.sqrt(3.0), lambda: x < "b"):
        with pytest.raises(TypeError):
            fn()
    with pytest.raises(TypeError, match="exp"):
        ember.exp([1.0])


# ---------------------------------------------------------------------------------------
# larger tensors: vectorised inner loops and the thread pool
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int32, ember.uint8],
                         ids=lambda d: d.name)
def test_large_tensors_match_numpy(device, dtype):
    rng = np.random.default_rng(42)
    shape = (301, 257)
    a, b = sample(rng, shape, dtype), sample(rng, shape, dtype, "nonzero")
    col, row = sample(rng, (301, 1), dtype), sample(rng, (1, 257), dtype)
    nd = np.float64 if dtype.is_floating_point else npdt(dtype)
    an, bn, cn, rn = (v.astype(nd) for v in (a, b, col, row))
    for la in ("contig", "t", "step"):
        ta = make(a, device, dtype, la)
        tb = T(b, device, dtype)
        with np.errstate(over="ignore"):
            check(ta + tb, an + bn, dtype)
            check(ta * tb, an * bn, dtype)
            check(ta - T(row, device, dtype), an - rn, dtype)
            check(T(col, device, dtype) * T(row, device, dtype), cn * rn, dtype)
            check(ember.maximum(ta, tb), np.maximum(an, bn), dtype)
        check(ta < tb, an < bn, ember.bool)
        check(ember.where(ta > tb, ta, tb), np.where(an > bn, an, bn), dtype)
        if dtype.is_floating_point:
            check(ember.exp(ta), np.exp(an), dtype)
            check(ember.sigmoid(ta), 1 / (1 + np.exp(-an)), dtype)
            check(ta / tb, an / bn, dtype)
        else:
            check(ta // tb, np.floor_divide(an, bn), dtype)
            check(ta % tb, np.remainder(an, bn), dtype)
    x = make(a, device, dtype, "step")
    x += T(b, device, dtype)
    with np.errstate(over="ignore"):
        check(x, an + bn, dtype)


# ---------------------------------------------------------------------------------------
# integer edge cases
# ---------------------------------------------------------------------------------------
def test_integer_arithmetic_wraps_like_numpy(device):
    cases = [(ember.int8, [127, -128, 100], [1, -1, 100]),
             (ember.uint8, [255, 0, 200], [1, 1, 100]),
             (ember.int32, [2**31 - 1, -2**31, 65536], [1, -1, 65536]),
             (ember.int64, [2**63 - 1, -2**63, 2**62], [1, -1, 4])]
    for dt, a, b in cases:
        an, bn = np.array(a, npdt(dt)), np.array(b, npdt(dt))
        ta, tb = T(an, device, dt), T(bn, device, dt)
        with np.errstate(over="ignore"):
            check(ta + tb, an + bn, dt)
            check(ta - tb, an - bn, dt)
            check(ta * tb, an * bn, dt)


def test_large_int64_values_stay_exact(device):
    big = np.array([2**53 + 1, 2**53, -(2**60) - 7, 3], np.int64)
    t = T(big, device)
    check(t + 1, big + 1, ember.int64)
    check(t * 3, big * 3, ember.int64)
    check(t // 2, big // 2, ember.int64)
    check(t % 10, big % 10, ember.int64)
    check(t == 2**53, big == 2**53, ember.bool)
    check(t > 2**53, big > 2**53, ember.bool)
    check(ember.maximum(t, T(big[::-1].copy(), device)), np.maximum(big, big[::-1]),
          ember.int64)
    check(ember.where(t > 0, t, -t), np.where(big > 0, big, -big), ember.int64)


def test_integer_to_negative_integer_power_raises(device):
    # PyTorch: a negative Python-number exponent of an integer tensor raises; a negative
    # *tensor* exponent computes (1 for 1, +-1 for -1, else 0)
    with pytest.raises(RuntimeError, match="negative"):
        torch.tensor([2, 3]) ** -1
    with pytest.raises(RuntimeError, match="negative"):
        T([2, 3], device) ** -1
    base, exp = [2, -1, 1, 0, 3, -1, 5], [-1, -3, -2, -1, 2, -2, 0]
    want = torch.pow(torch.tensor(base), torch.tensor(exp)).tolist()
    check(ember.pow(T(base, device), T(exp, device)), want, ember.int64)
    check(T([2, 3], device) ** T([0, 3], device), [1, 27], ember.int64)


def test_clamp_with_min_above_max_gives_max(device):
    check(T([1.0, 5.0, -3.0], device, ember.float32).clamp(2, 1), [1.0, 1.0, 1.0],
          ember.float32)
    check(T([1, 5, -3], device).clamp(2, 1), [1, 1, 1], ember.int64)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
@pytest.mark.parametrize("bounds", [(-1, 2), (None, 5), (-3, None), (-255, 7)])
def test_clamp_integer_bounds_wrap_like_torch(device, dtype, bounds):
    """Integer bounds convert to the tensor's dtype first (uint8: -1 is 255), the same with
    and without out=, and an out-of-range bound is PyTorch's overflow error."""
    import torch
    vals = [0, 1, 2, 3, 100]
    x = T(np.array(vals, dtype=dtype), device)
    lo, hi = bounds
    try:
        ref = torch.clamp(torch.tensor(vals, dtype=getattr(torch, dtype)), lo, hi).numpy()
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match="without overflow"):
            ember.clamp(x, lo, hi)
        assert "overflow" in str(e)
        return
    np.testing.assert_array_equal(N(ember.clamp(x, lo, hi)), ref)
    out = ember.empty(5, dtype=x.dtype, device=device)
    np.testing.assert_array_equal(N(ember.clamp(x, lo, hi, out=out)), ref)


@pytest.mark.parametrize("bound", [300, -256])
def test_clamp_integer_bound_overflow(device, bound):
    x = T(np.array([1, 2], dtype="uint8"), device)
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t without overflow"):
        ember.clamp(x, max=bound)


# ---------------------------------------------------------------------------------------
# every op with a scalar body, from its definition alone, against PyTorch
# ---------------------------------------------------------------------------------------
from ember.dispatcher.schema import elementwise_ops  # noqa: E402

_ELEMENTWISE = [o for o in elementwise_ops()]
_ALL_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
               ember.float16, ember.bfloat16, ember.float32, ember.float64]
_TOL = {ember.float64: (1e-9, 1e-12), ember.float32: (2e-5, 1e-6),
        ember.float16: (4e-3, 1e-3), ember.bfloat16: (3e-2, 1e-2)}


def _operand(rng, o, i, dtype, shape):
    """Input ``i`` of op ``o``: bool conditions, nonzero divisors, the op's domain."""
    var = o.body_inputs()[i]
    if var.value[2] == "bool" or dtype is ember.bool:
        return rng.integers(0, 2, shape).astype(bool)
    lo, hi = o.domain or (-3.0, 3.0)
    nonzero = any(c.input == i for c in o.checks)
    if dtype.is_floating_point:
        v = rng.uniform(lo, hi, shape)
        return np.where(np.abs(v) < 0.25, 0.5, v) if nonzero else v
    lo_i, hi_i = (0, 6) if dtype is ember.uint8 or not dtype.is_signed else (-6, 6)
    if o.name == "pow" and i == 1:
        lo_i = 0
    v = rng.integers(max(int(lo), lo_i) if lo > lo_i else lo_i, hi_i + 1, shape)
    return np.where(v == 0, 3, v) if nonzero else v


def _public(module, name):
    """The public function for schema op ``name``: ``special_x`` lives at ``special.x``."""
    if name.startswith("special_"):
        return getattr(module.special, name[len("special_"):])
    if OPS[name].variants == ():  # internal ops (tanh_backward): aten's, the dispatcher's
        if module is torch:
            if name == "gelu_backward":     # (aten's takes operands of one shape only)
                return lambda *args: torch.ops.aten.gelu_backward(
                    *[t.contiguous() for t in torch.broadcast_tensors(*args)])
            return getattr(torch.ops.aten, name)
        return lambda *args: module.dispatcher.ops.elementwise(name, *args)
    return getattr(module, name)


@pytest.mark.parametrize("dtype", _ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", [o.name for o in _ELEMENTWISE])
def test_every_elementwise_op_matches_pytorch(device, name, dtype):
    """``ember.<name>`` on inputs drawn from the op's definition (arity, domain, checks),
    broadcast (3, 4) x (4,) x (3, 1), against ``torch.<name>``; where PyTorch rejects a
    dtype, ember must raise too. A new op is covered the moment it is defined."""
    o = next(o for o in _ELEMENTWISE if o.name == name)
    rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype.name}".encode()))
    shapes = [(3, 4), (4,), (3, 1)][:len(o.body_inputs())]
    arrays = [_operand(rng, o, i, dtype, s) for i, s in enumerate(shapes)]
    tdts = [torch.bool if a.dtype == bool else tdt(dtype) for a in arrays]
    tins = [torch.tensor(a).to(t) for a, t in zip(arrays, tdts)]
    eins = [T(a, device, ember.bool if a.dtype == bool else dtype) for a in arrays]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _public(torch, name)(*tins)
    except (RuntimeError, TypeError, NotImplementedError):
        with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
            _public(ember, name)(*eins)
        return
    got = _public(ember, name)(*eins)
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), name
    assert tuple(got.shape) == tuple(want.shape)
    exp = want.double().numpy() if want.dtype.is_floating_point else want.numpy()
    act = N(got).astype(np.float64) if got.dtype.is_floating_point else N(got)
    if got.dtype.is_floating_point:
        rtol, atol = _TOL[got.dtype]
        np.testing.assert_allclose(act, exp, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=name)
    else:
        np.testing.assert_array_equal(act, exp, err_msg=name)
