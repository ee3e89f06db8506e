"""PyTorch's elementwise family against PyTorch itself: values over domain grids with the
specials (±0, ±inf, NaN), promotion of integer and bool inputs, float16/bfloat16, the
in-place, method, alias and out= forms, gradients, and the errors PyTorch raises."""
from __future__ import annotations

import math
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

import ember

inf, nan = math.inf, math.nan


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not _installed("opencl"), reason="ember-opencl is not installed"))]
SPECIALS = [0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30, 40.0, 800.0]
TOL = {torch.float64: (1e-12, 1e-300), torch.float32: (2e-6, 1e-37),
       torch.float16: (4e-3, 1e-5), torch.bfloat16: (3.2e-2, 1e-5)}
E_DT = {torch.float64: ember.float64, torch.float32: ember.float32,
        torch.float16: ember.float16, torch.bfloat16: ember.bfloat16,
        torch.int64: ember.int64, torch.int32: ember.int32, torch.int16: ember.int16,
        torch.int8: ember.int8, torch.uint8: ember.uint8, torch.bool: ember.bool}


def _grid(lo, hi, n=41):
    return np.concatenate([np.linspace(lo, hi, n), SPECIALS])


def _e(t, device):
    """An ember tensor holding torch tensor ``t``'s values and dtype, on ``device``."""
    if t.dtype == torch.bfloat16:
        return ember.tensor(t.float().numpy()).to(ember.bfloat16).to(device)
    return ember.tensor(t.numpy(), dtype=E_DT[t.dtype]).to(device)


def _n(x):
    """Values of an ember or torch tensor as float64 NumPy (bool/int kept)."""
    if isinstance(x, torch.Tensor):
        return x.double().numpy() if x.dtype.is_floating_point else x.numpy()
    x = x.cpu()
    if x.dtype in (ember.bfloat16, ember.float16):
        x = x.float()
    return x.numpy().astype(np.float64) if x.dtype.is_floating_point else x.numpy()


def _raised_as(e):
    """The exception types ember may raise where PyTorch raised ``e``: the same, except
    that the backends report a dtype an op's body does not support as TypeError where
    PyTorch's kernels raise NotImplementedError (a difference of the dispatcher, listed
    in the report)."""
    return (NotImplementedError, TypeError) if isinstance(e, NotImplementedError) else type(e)


def assert_like(got, want, rtol=0.0, atol=0.0, what=""):
    assert str(got.dtype).replace("ember.", "") == str(want.dtype).replace("torch.", ""), \
        f"{what}: dtype {got.dtype}, PyTorch {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {got.shape} vs {want.shape}"
    g, w = _n(got), _n(want)
    if g.dtype.kind != "f":
        assert (g == w).all(), f"{what}: {g} != {w}"
        return
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w))
    bad = ~(same | close)
    assert not bad.any(), (f"{what}: {bad.sum()} values differ, first at input index "
                           f"{np.argmax(bad)}: {g[bad][:4]} vs PyTorch {w[bad][:4]}")


# ---- unary ops: (name, domain of the grid) -------------------------------------------------------
UNARY = [
    ("asin", (-1.2, 1.2)), ("acos", (-1.2, 1.2)), ("atan", (-30, 30)), ("sinh", (-30, 30)),
    ("cosh", (-30, 30)), ("asinh", (-1e5, 1e5)), ("acosh", (0.5, 1e4)), ("atanh", (-1.2, 1.2)),
    ("exp2", (-200, 200)), ("log10", (-1, 1e6)), ("deg2rad", (-720, 720)),
    ("rad2deg", (-10, 10)), ("frac", (-10, 10)), ("sinc", (-6, 6)), ("erfc", (-6, 30)),
    ("erfinv", (-1.1, 1.1)), ("lgamma", (-8.5, 40)), ("digamma", (-8.5, 40)), ("i0", (-60, 60)),
    ("signbit", (-3, 3)), ("isposinf", (-3, 3)), ("isneginf", (-3, 3)), ("sgn", (-3, 3)),
    ("fix", (-3.5, 3.5)), ("logit", (-0.2, 1.2)), ("nan_to_num", (-3, 3)),
    ("arcsin", (-1, 1)), ("arccos", (-1, 1)), ("arctan", (-3, 3)), ("arcsinh", (-3, 3)),
    ("arccosh", (1, 3)), ("arctanh", (-1, 1)),
]
FLOATS = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_pytorch(name, domain, device):
    for dt in FLOATS:
        t = torch.tensor(_grid(*domain), dtype=torch.float64).to(dt)
        want = getattr(torch, name)(t)
        got = getattr(ember, name)(_e(t, device))
        rtol, atol = TOL[dt]
        if name in ("lgamma", "digamma") and dt == torch.float32:
            atol = 2e-6   # (near their zeros the float32 results differ in absolute terms)
        assert_like(got, want, rtol, atol, f"{name} {dt}")


INTS = [torch.int64, torch.int32, torch.uint8, torch.bool]


@pytest.mark.parametrize("name", [u[0] for u in UNARY if u[0] not in ("frac",)])
def test_unary_promotes_integers_and_bool(name):
    for dt in INTS:
        t = torch.tensor([0, 1, 2, 5, 7], dtype=torch.int64).to(dt)
        try:
            want = getattr(torch, name)(t)
        except (RuntimeError, NotImplementedError) as e:
            with pytest.raises(_raised_as(e)):
                getattr(ember, name)(_e(t, "cpu"))
            continue
        assert_like(getattr(ember, name)(_e(t, "cpu")), want, 2e-6, 1e-30, f"{name} {dt}")


def test_frac_of_integers_raises_as_pytorch():
    with pytest.raises(NotImplementedError):
        torch.frac(torch.tensor([1]))
    with pytest.raises((NotImplementedError, TypeError, RuntimeError)):
        ember.frac(ember.tensor([1]))


# ---- binary ops ------------------------------------------------------------------------------
BINARY = [("atan2", (-3, 3)), ("arctan2", (-3, 3)), ("logaddexp", (-800, 800)),
          ("logaddexp2", (-800, 800)), ("fmax", (-3, 3)), ("fmin", (-3, 3)),
          ("nextafter", (-3, 3)), ("xlogy", (-2, 3)), ("ldexp", (-10, 10)),
          ("heaviside", (-2, 2)), ("hypot", (-3, 3)), ("float_power", (0, 3))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,domain", BINARY, ids=[b[0] for b in BINARY])
def test_binary_against_pytorch(name, domain, device):
    g = _grid(*domain, n=13)
    a, b = np.meshgrid(g, g)
    for dt in FLOATS:
        ta = torch.tensor(a.ravel()).to(dt)
        tb = torch.tensor(b.ravel()).to(dt)
        if name == "ldexp":
            tb = torch.tensor(np.nan_to_num(np.trunc(b.ravel()), posinf=5, neginf=-5)).long()
        want = getattr(torch, name)(ta, tb)
        got = getattr(ember, name)(_e(ta, device), _e(tb, device))
        rtol, atol = TOL[dt]
        if name == "logaddexp2":  # (log1p(1) / ln 2 rounds differently: -4.8e-17 vs 0)
            atol = max(atol, {torch.float64: 1e-15, torch.float32: 2e-8}.get(dt, 1e-3))
        assert_like(got, want, rtol, atol, f"{name} {dt}")


@pytest.mark.parametrize("name", ["atan2", "xlogy", "ldexp", "fmax", "fmin", "heaviside",
                                  "float_power", "logaddexp", "nextafter"])
def test_binary_promotion(name):
    """Integer and bool tensors, mixed dtypes and Python numbers where PyTorch takes them."""
    ints = torch.tensor([0, 1, 2, 3, -2])
    f32 = torch.tensor([0.5, 1.0, 2.0, 0.0, 3.0])
    pairs = [(ints, ints), (ints, f32), (f32, ints), (f32.double(), f32), (ints > 0, ints),
             (f32, 2), (2, f32), (f32, 2.5)]
    for x, y in pairs:
        ex = _e(x, "cpu") if isinstance(x, torch.Tensor) else x
        ey = _e(y, "cpu") if isinstance(y, torch.Tensor) else y
        try:
            want = getattr(torch, name)(x, y)
        except (RuntimeError, TypeError, NotImplementedError) as e:
            with pytest.raises(_raised_as(e)):
                getattr(ember, name)(ex, ey)
            continue
        assert_like(getattr(ember, name)(ex, ey), want, 2e-6, 1e-30, f"{name}({x}, {y})")


@pytest.mark.parametrize("device", DEVICES)
def test_integer_ops(device):
    rng = np.random.default_rng(0)
    for dt in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        info = torch.iinfo(dt)
        a = torch.tensor(rng.integers(info.min, info.max, 64, endpoint=True)).to(dt)
        b = torch.tensor(rng.integers(info.min, info.max, 64, endpoint=True)).to(dt)
        b[:8] = 0
        a[8:12] = 0
        a[12] = info.min
        small = torch.tensor(rng.integers(-2 if info.min < 0 else 0, 70, 64)).to(dt)
        assert_like(ember.gcd(_e(a, device), _e(b, device)), torch.gcd(a, b),
                    what=f"gcd {dt}")
        a[12] = 1     # (PyTorch's lcm divides MIN by -1 there: SIGFPE)
        assert_like(ember.lcm(_e(a, device), _e(b, device)), torch.lcm(a, b),
                    what=f"lcm {dt}")
        for name in ("bitwise_left_shift", "bitwise_right_shift"):
            assert_like(getattr(ember, name)(_e(a, device), _e(small, device)),
                        getattr(torch, name)(a, small), what=f"{name} {dt}")
        ea = _e(a, device)
        assert_like(ea << _e(small, device), a << small, what="<<")
        assert_like(ea >> _e(small, device), a >> small, what=">>")
        assert_like(ea << 3, a << 3, what="<< 3")
        assert_like(ea >> 2, a >> 2, what=">> 2")
    for name in ("gcd", "bitwise_left_shift"):
        with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
            getattr(ember, name)(ember.tensor([1.5]), ember.tensor([2.0]))


def test_errors_as_pytorch():
    f = ember.tensor([0.5, 2.0])
    cases = [
        (lambda lib, t: lib.heaviside(t, t.double()), RuntimeError),
        (lambda lib, t: lib.polygamma(-1, t), RuntimeError),
        (lambda lib, t: lib.frexp(t.long()), RuntimeError),
        (lambda lib, t: lib.positive(t > 0), RuntimeError),
        (lambda lib, t: t.clone().float_power_(2), RuntimeError),
        (lambda lib, t: lib.float_power(t, 2, out=lib.empty(2)), RuntimeError),
        (lambda lib, t: lib.mvlgamma(t, 0), RuntimeError),
        (lambda lib, t: lib.atan2(t, 2), TypeError),
    ]
    tt = torch.tensor([0.5, 2.0])
    for fn, exc in cases:
        with pytest.raises(exc):
            fn(torch, tt)
        with pytest.raises(exc):
            fn(ember, f)


# ---- the other forms: method, in place, out=, aliases, torch-level in-place functions ------------
def test_torch_level_inplace_functions():
    names = [n for n in dir(torch) if n.endswith("_") and not n.startswith("_")
             and hasattr(ember, n)]
    assert len(names) >= 50
    for name in names:
        if name in ("fill_", "zero_", "detach_", "index_put_", "as_strided_", "resize_as_",
                    "clamp_", "clip_", "clamp_min_", "clamp_max_", "ldexp_", "gcd_", "lcm_",
                    "xlogy_"):
            continue
        t = torch.tensor([0.3, 0.6, 1.7, 2.5])
        e = _e(t, "cpu")
        try:
            getattr(torch, name)(t)
        except (TypeError, RuntimeError):
            continue  # (not a one-tensor in-place function: addmv_, dropout_, ...)
        r = getattr(ember, name)(e)
        assert r is e, name
        assert_like(e, t, 2e-6, 1e-30, name)
    t, e = torch.tensor([0.3, 2.5]), ember.tensor([0.3, 2.5])
    for name, args in (("clamp_", (0.5, 1.0)), ("clamp_min_", (1.0,)), ("clamp_max_", (1.0,)),
                       ("clip_", (0.5, 1.0)), ("xlogy_", (2.0,))):
        tc, ec = t.clone(), e.clone()
        getattr(torch, name)(tc, *args)
        getattr(ember, name)(ec, *args)
        assert_like(ec, tc, 1e-6, 0, name)


TENSOR_INPLACE = ["absolute_", "multiply_", "subtract_", "divide_", "true_divide_",
                  "greater_", "greater_equal_", "less_", "less_equal_", "not_equal_",
                  "float_power_", "arctan2_", "atan2_", "negative_", "square_", "sgn_",
                  "fix_", "heaviside_", "nextafter_", "xlogy_", "ldexp_", "hypot_",
                  "logit_", "digamma_", "lgamma_", "erfinv_", "polygamma_", "mvlgamma_",
                  "nan_to_num_", "i0_", "sinc_", "frac_", "deg2rad_", "rad2deg_", "exp2_",
                  "log10_", "arcsin_", "arccos_", "arctan_", "arcsinh_", "arctanh_", "cosh_",
                  "sinh_", "erfc_", "clamp_min_", "clamp_max_"]


@pytest.mark.parametrize("name", TENSOR_INPLACE)
def test_tensor_inplace_forms(name):
    t = torch.tensor([0.25, 0.5, 0.75, 1.5], dtype=torch.float64)
    other = torch.tensor([0.5, 2.0, 0.75, 1.0], dtype=torch.float64)
    args = {"polygamma_": (2,), "mvlgamma_": (1,), "clamp_min_": (0.6,), "clamp_max_": (0.6,),
            "ldexp_": (torch.tensor([1, 2, 3, -1]),)}.get(name)
    if args is None:
        try:
            getattr(t.clone(), name)()
            args = ()
        except TypeError:
            args = (other,)
    eargs = tuple(_e(a, "cpu") if isinstance(a, torch.Tensor) else a for a in args)
    want = getattr(t.clone(), name)(*args)
    e = _e(t, "cpu")
    got = getattr(e, name)(*eargs)
    assert got is e
    assert_like(got, want, 1e-12, 1e-300, name)


METHODS = ["arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "arctan2", "atan2",
           "sinh", "cosh", "deg2rad", "rad2deg", "digamma", "erfc", "erfinv", "exp2", "fix",
           "fmax", "fmin", "frac", "gcd", "lcm", "heaviside", "i0", "isneginf", "isposinf",
           "isreal", "ldexp", "lgamma", "log10", "logaddexp", "logaddexp2", "logit",
           "mvlgamma", "nan_to_num", "nextafter", "polygamma", "positive", "sgn", "signbit",
           "sinc", "xlogy", "bitwise_left_shift", "bitwise_right_shift", "frexp"]


@pytest.mark.parametrize("name", METHODS)
def test_methods(name):
    x = torch.tensor([0.25, 0.5, 1.5, 2.0], dtype=torch.float64)
    y = torch.tensor([0.5, 2.0, 0.75, 1.0], dtype=torch.float64)
    if name in ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"):
        x, y = torch.tensor([12, 18, -4, 7]), torch.tensor([8, 3, 2, 0])
    args = {"polygamma": (2,), "mvlgamma": (2,), "ldexp": (torch.tensor([1, 2, 3, -1]),),
            "arccosh": ()}.get(name)
    if name == "arccosh":
        x = x + 1
    if args is None:
        try:
            getattr(x, name)()
            args = ()
        except TypeError:
            args = (y,)
    want = getattr(x, name)(*args)
    eargs = tuple(_e(a, "cpu") if isinstance(a, torch.Tensor) else a for a in args)
    got = getattr(_e(x, "cpu"), name)(*eargs)
    if name == "frexp":
        assert_like(got[0], want[0], 0, 0, "mantissa")
        assert_like(got[1], want[1], 0, 0, "exponent")
    else:
        assert_like(got, want, 1e-12, 1e-300, name)


@pytest.mark.parametrize("name", ["asin", "atan2", "exp2", "log10", "logaddexp", "xlogy",
                                  "lgamma", "digamma", "erfinv", "i0", "signbit", "isposinf",
                                  "fmax", "gcd", "logit", "nan_to_num", "polygamma", "frexp",
                                  "ldexp", "float_power", "mvlgamma"])
def test_out_argument(name):
    x = torch.tensor([0.25, 0.5, 1.5, 2.0])
    y = torch.tensor([0.5, 2.0, 0.75, 1.0])
    if name == "gcd":
        x, y = torch.tensor([12, 18, -4, 7]), torch.tensor([8, 3, 2, 0])
    call = {"polygamma": lambda lib, a, b, **k: lib.polygamma(2, a, **k),
            "mvlgamma": lambda lib, a, b, **k: lib.mvlgamma(a, 1, **k),
            "ldexp": lambda lib, a, b, **k: lib.ldexp(a, (b * 2).long()
                                                      if lib is torch else (b * 2).long(), **k),
            }.get(name)
    if call is None:
        def call(lib, a, b, **k):
            try:
                return getattr(lib, name)(a, b, **k)
            except TypeError:
                return getattr(lib, name)(a, **k)
    want = call(torch, x, y)
    if name == "frexp":
        outs = (ember.empty(4), ember.empty(4, dtype=ember.int32))
        got = call(ember, _e(x, "cpu"), _e(y, "cpu"), out=outs)
        assert got[0] is outs[0] and got[1] is outs[1]
        assert_like(outs[0], want[0], 0, 0, "mantissa")
        assert_like(outs[1], want[1], 0, 0, "exponent")
        return
    out = ember.empty(4, dtype=E_DT[want.dtype])
    got = call(ember, _e(x, "cpu"), _e(y, "cpu"), out=out)
    assert got is out
    assert_like(out, want, 2e-6, 1e-30, name)


def test_aliases_are_the_ops():
    assert ember.arcsin is ember.asin and ember.arctan2 is ember.atan2
    assert ember.fix is ember.trunc
    # (sgn is sign for real tensors; for complex ones z / |z|, which sign refuses)
    x = ember.tensor([-2.0, 0.0, 3.0])
    assert ember.sgn(x).tolist() == ember.sign(x).tolist() == [-1.0, 0.0, 1.0]
    x = ember.tensor([1.0])
    assert ember.positive(x) is x
    assert ember.isreal(x).dtype is ember.bool
    assert ember.rsub(ember.tensor([1.0, 2.0]), 5, alpha=2).tolist() == \
        torch.rsub(torch.tensor([1.0, 2.0]), 5, alpha=2).tolist()


def test_nan_to_num_arguments():
    for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        t = torch.tensor([nan, inf, -inf, 1.5]).to(dt)
        for kw in ({}, {"nan": 2.0}, {"posinf": 7.0, "neginf": -3.0}):
            assert_like(ember.nan_to_num(_e(t, "cpu"), **kw), torch.nan_to_num(t, **kw),
                        0, 0, f"nan_to_num {dt} {kw}")
    assert_like(ember.nan_to_num(ember.tensor([1, 2])), torch.nan_to_num(torch.tensor([1, 2])))


def test_logit_eps_and_polygamma_orders():
    t = torch.tensor([-0.5, 0.0, 0.05, 0.3, 0.99, 1.0, 1.5, nan], dtype=torch.float64)
    for eps in (None, 0.0, 0.1, 0.6):
        assert_like(ember.logit(_e(t, "cpu"), eps), torch.logit(t, eps), 1e-13, 1e-300,
                    f"logit eps={eps}")
    x = torch.tensor(_grid(-4.5, 12, 30))
    for n in range(5):
        assert_like(ember.polygamma(n, _e(x, "cpu")), torch.polygamma(n, x), 1e-10, 1e-12,
                    f"polygamma {n}")
    for p in (1, 2, 4):
        y = torch.tensor([2.5, 3.0, 7.25], dtype=torch.float64)
        assert_like(ember.mvlgamma(_e(y, "cpu"), p), torch.mvlgamma(y, p), 1e-12, 1e-12,
                    f"mvlgamma p={p}")


def test_frexp_values():
    for dt in (torch.float64, torch.float32, torch.float16):
        t = torch.tensor([0.0, -0.0, 3.0, -5.0, 0.75, 1.0, 1024.0, 1e-3, inf, -inf, nan,
                          6e-5]).to(dt)
        m, e = ember.frexp(_e(t, "cpu"))
        wm, we = torch.frexp(t)
        assert_like(m, wm, 0, 0, f"mantissa {dt}")
        assert_like(e, we, 0, 0, f"exponent {dt}")


# ---- gradients against torch.autograd ---------------------------------------------------------
GRADS = [("asin", (-0.9, 0.9)), ("acos", (-0.9, 0.9)), ("atan", (-3, 3)), ("sinh", (-3, 3)),
         ("cosh", (-3, 3)), ("asinh", (-3, 3)), ("acosh", (1.1, 3)), ("atanh", (-0.9, 0.9)),
         ("exp2", (-3, 3)), ("log10", (0.1, 3)), ("deg2rad", (-3, 3)), ("rad2deg", (-3, 3)),
         ("frac", (-3, 3)), ("sinc", (-3, 3)), ("erfc", (-3, 3)), ("erfinv", (-0.9, 0.9)),
         ("lgamma", (0.1, 5)), ("digamma", (0.1, 5)), ("i0", (-3, 3)), ("logit", (0.1, 0.9))]


@pytest.mark.parametrize("name,domain", GRADS, ids=[g[0] for g in GRADS])
def test_unary_gradients(name, domain):
    x = torch.tensor(np.linspace(*domain, 9) + 1e-3, requires_grad=True)
    getattr(torch, name)(x).sum().backward()
    ex = ember.tensor(x.detach().numpy(), requires_grad=True)
    getattr(ember, name)(ex).sum().backward()
    assert_like(ex.grad, x.grad, 1e-9, 1e-12, f"{name}'")


@pytest.mark.parametrize("name", ["atan2", "logaddexp", "logaddexp2", "fmax", "fmin", "xlogy",
                                  "hypot"])
def test_binary_gradients(name):
    a = torch.tensor([0.5, -1.0, 2.0, 0.0, 3.0, 1.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([1.5, 2.0, 2.0, 1.0, nan, 0.5], dtype=torch.float64, requires_grad=True)
    getattr(torch, name)(a, b).sum().backward()
    ea = ember.tensor(a.detach().numpy(), requires_grad=True)
    eb = ember.tensor(b.detach().numpy(), requires_grad=True)
    getattr(ember, name)(ea, eb).sum().backward()
    assert_like(ea.grad, a.grad, 1e-12, 1e-300, f"d{name}/da")
    assert_like(eb.grad, b.grad, 1e-12, 1e-300, f"d{name}/db")


def test_polygamma_and_mvlgamma_gradients():
    x = torch.tensor([0.7, 1.5, 3.0], dtype=torch.float64, requires_grad=True)
    (torch.polygamma(2, x).sum() + torch.mvlgamma(x + 2, 3).sum()).backward()
    ex = ember.tensor(x.detach().numpy(), requires_grad=True)
    (ember.polygamma(2, ex).sum() + ember.mvlgamma(ex + 2, 3).sum()).backward()
    assert_like(ex.grad, x.grad, 1e-9, 1e-12, "grad")
