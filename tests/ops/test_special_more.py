"""The rest of ``torch.special`` against PyTorch: Airy, Bessel J/Y, modified Bessel I/K
(and scaled K), the orthogonal polynomials (Chebyshev T/U/V/W and shifted, Hermite H/He,
Laguerre, Legendre) and the regularized incomplete gamma functions (``gammainc`` /
``gammaincc``, ``ember.igamma`` / ``igammac`` and their Tensor methods): values on grids
with the edge values (0, negatives, large, inf, NaN), float64 / float32, integer inputs,
the number forms of the polynomials' arguments, ``out=``, the opencl device, gradients, and
the expression language's ``loop`` the polynomials and series are written with."""
from __future__ import annotations

import math
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import OPS
from ember.dispatcher import expr as X
from ember.dispatcher.codegen import cxx, opencl

from test_elementwise_family import _e, _n, assert_like

inf, nan = math.inf, math.nan


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


OPENCL = pytest.param("opencl", marks=pytest.mark.skipif(
    not _installed("opencl"), reason="ember-opencl is not installed"))
DEVICES = ["cpu", OPENCL]


def _float_dtypes(device):
    # (PoCL's double is not used by the opencl tests: float32 there)
    return (torch.float64, torch.float32) if device == "cpu" else (torch.float32,)


# ---- Airy, Bessel ----------------------------------------------------------------------------
BESSEL = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]
#: the grid: dense over the interesting range, geometric towards 0 and the large end, both
#: signs, the boundaries of the methods (2.09 for Ai, 5 for J/Y, 2 and 8 for K/I) and the
#: specials. (Not beyond |x| = 1e3 for the oscillating ones: in float32 PyTorch's sin/cos
#: of x - pi/4 there are argument-reduction noise, as ours are.)
_X = np.concatenate([np.linspace(-30, 30, 601), np.geomspace(1e-8, 700, 120),
                     -np.geomspace(1e-8, 100, 40),
                     [0.0, -0.0, 2.09, -2.09, 2.0, 5.0, -5.0, 8.0, -8.0, 103.89, 103.9, 1e3,
                      inf, -inf, nan]])
#: (rtol, atol) per dtype: J and Y cross zero, where only an absolute error means anything
_BESSEL_TOL = {torch.float64: (1e-13, 1e-15), torch.float32: (2e-6, 2e-7)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_against_torch(name, device):
    for dt in _float_dtypes(device):
        t = torch.tensor(_X, dtype=dt)
        want = getattr(torch.special, name)(t)
        got = getattr(ember.special, name)(_e(t, device))
        rtol, atol = _BESSEL_TOL[dt]
        if device == "opencl":  # (PoCL's float libm: a few ulps)
            rtol, atol = 2e-5, 1e-6
        assert_like(got, want, rtol, atol, f"special.{name} {dt} on {device}")


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes(name):
    """Integers and bool compute in float32; float16 / bfloat16 raise PyTorch's error."""
    for dt in (torch.int64, torch.int32, torch.uint8, torch.bool):
        t = torch.tensor([0, 1, 2, 7]).to(dt)
        assert_like(getattr(ember.special, name)(_e(t, "cpu")),
                    getattr(torch.special, name)(t), 2e-6, 1e-30, f"{name} {dt}")
    for dt in (torch.float16, torch.bfloat16):
        t = torch.tensor([0.5, 1.0]).to(dt)
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented'):
            getattr(torch.special, name)(t)
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented'):
            getattr(ember.special, name)(_e(t, "cpu"))


def test_bessel_edge_values():
    x = ember.tensor([0.0, -0.0, -1.0, inf, -inf, nan], dtype=ember.float64)
    s = ember.special
    assert _n(s.bessel_y0(x)).tolist()[:3] == [-inf, -inf, pytest.approx(nan, nan_ok=True)]
    assert np.isnan(_n(s.bessel_y1(x))[2:]).all() and _n(s.bessel_y1(x))[0] == -inf
    k0 = _n(s.modified_bessel_k0(x))
    assert k0[0] == inf and k0[1] == inf and np.isnan(k0[2]) and k0[3] == 0.0
    assert np.isnan(_n(s.airy_ai(x))[3:]).all()
    assert _n(s.bessel_j0(x))[0] == 1.0 and np.isnan(_n(s.bessel_j0(x))[3])


# ---- orthogonal polynomials --------------------------------------------------------------------
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
_PX = np.concatenate([np.linspace(-3, 3, 121), [0.0, 1.0, -1.0, 0.5, 1e-3, -1e-3, 0.999,
                                                  -0.999, 1.001, 10.0, -10.0]])
_PN = np.arange(-2, 61).astype(np.float64)
#: the error scale: |got - want| <= rtol (|want| + 1) (the recurrences and cos(n acos x)
#: lose absolute, not relative, accuracy where the value crosses zero). Hermite's He
#: cancels more (float32: intermediate terms ~10^4 times the result at x ~ 1.3, n ~ 23).
_POLY_RTOL = {("cpu", torch.float64): 1e-11, ("cpu", torch.float32): 3e-5,
              ("opencl", torch.float32): 2e-4}
_POLY_LOOSE = {"hermite_polynomial_he": 10.0, "hermite_polynomial_h": 5.0}


def _poly_close(got, want, rtol, what, big):
    g, w = _n(got), want.double().numpy()
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    # (float32 values near the overflow threshold: PyTorch's FMA-contracted recurrence
    # stays finite a few steps longer; see the module docstring of special_polynomials)
    near_overflow = (np.abs(w) > big) | (np.abs(g) > big) | (np.isinf(w) & np.isnan(g))
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= rtol * (np.abs(w) + 1))
    bad = ~(same | close | near_overflow)
    assert not bad.any(), f"{what}: {bad.sum()} differ, e.g. {g[bad][:4]} vs {w[bad][:4]}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_against_torch(name, device):
    x, n = np.meshgrid(_PX, _PN)
    for dt in _float_dtypes(device):
        tx, tn = torch.tensor(x, dtype=dt), torch.tensor(n, dtype=dt)
        want = getattr(torch.special, name)(tx, tn)
        got = getattr(ember.special, name)(_e(tx, device), _e(tn, device))
        assert got.dtype == ember.float64 if dt == torch.float64 else ember.float32
        rtol = _POLY_RTOL[(device, dt)] * _POLY_LOOSE.get(name, 1.0)
        _poly_close(got, want, rtol, f"special.{name} {dt} on {device}",
                    1e300 if dt == torch.float64 else 1e37)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_degrees(name):
    """n is truncated; negative, NaN and infinite degrees give 0; high degrees; the
    Hermite limits (NaN above 128 in float32, 512 in float64); n as a Python number."""
    x = torch.tensor([0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 0.0, 0.3, 1.0000001, inf, -inf],
                     dtype=torch.float64)
    for dt in (torch.float64, torch.float32):
        tx = x.to(dt)
        for deg in (-1, 0, 1, 2, 3, 5, 7, 9, 2.7, -0.5, nan, inf, -inf, 100, 129, 200, 513,
                    1e19):
            want = getattr(torch.special, name)(tx, deg)
            got = getattr(ember.special, name)(_e(tx, "cpu"), deg)
            rtol = 1e-9 if dt == torch.float64 else (3e-4 if deg < 100 else 3e-2)
            _poly_close(got, want, rtol, f"{name}(x, {deg}) {dt}",
                        1e300 if dt == torch.float64 else 1e37)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_argument_forms(name):
    fn, tfn = getattr(ember.special, name), getattr(torch.special, name)
    n = torch.tensor([0, 1, 2, 3, 6])
    # x a number, n a tensor (integer n: float32 result), and the reverse
    assert_like(fn(0.25, _e(n, "cpu")), tfn(0.25, n), 1e-6, 1e-6, f"{name}(0.25, n)")
    x = torch.tensor([[0.1], [0.7]])
    assert_like(fn(_e(x, "cpu"), 4), tfn(x, 4), 1e-6, 1e-6, f"{name}(x, 4)")
    assert_like(fn(_e(x, "cpu"), _e(n, "cpu")), tfn(x, n), 1e-6, 1e-6, f"{name} broadcast")
    # PyTorch's parameter names, and out=
    assert_like(fn(x=_e(x, "cpu"), n=3), tfn(x=x, n=3), 1e-6, 1e-6, f"{name}(x=, n=)")
    out = ember.empty(2, 5)
    assert fn(_e(x, "cpu"), _e(n, "cpu"), out=out) is out
    assert_like(out, tfn(x, n), 1e-6, 1e-6, f"{name} out=")
    # integer x and n compute in float32; float64 n promotes
    xi = torch.tensor([0, 1, 2])
    assert_like(fn(_e(xi, "cpu"), 2), tfn(xi, 2), 1e-6, 0, f"{name} integers")
    n64 = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert_like(fn(_e(xi.float(), "cpu"), _e(n64, "cpu")), tfn(xi.float(), n64), 1e-12, 0,
                f"{name} float64 n")
    with pytest.raises(TypeError):
        fn(0.5, 2)
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        fn(_e(x.half(), "cpu"), 2)


# ---- igamma / igammac / gammainc / gammaincc -------------------------------------------------
_A = np.array([0, 1e-20, 1e-5, 0.01, 0.1, 0.5, 1, 1.5, 2, 3, 5, 9.9, 10, 10.5, 20, 25, 50, 100,
               150, 199, 201, 500, 1e3, 1e4, 1e5, inf, nan, -1])
_XG = np.array([0, 1e-30, 1e-5, 0.01, 0.1, 0.4, 0.5, 0.7, 1, 1.05, 1.1, 1.5, 2, 3, 5, 9, 10,
                11, 19, 21, 30, 45, 55, 90, 100, 110, 150, 200, 250, 480, 520, 900, 1000, 1100,
                9500, 1e4, 10500, 99000, 1e5, 101000, 1e6, inf, nan, -1])


def _temme_region(a, x):
    """Where PyTorch evaluates Temme's uniform expansion (a large, x near a). There its
    float64 values are off by up to ~2e-9 relative (the expansion's last factor uses pi in
    float precision): ember's agree with SciPy / mpmath to ~1e-15 there instead."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.abs(x - a) / a
        return ((a > 20) & (a < 200) & (r < 0.3)) | ((a > 200) & (r < 4.5 / np.sqrt(a)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_against_torch(name, device):
    a, x = np.meshgrid(_A, _XG)
    for dt in _float_dtypes(device):
        ta, tx = torch.tensor(a, dtype=dt), torch.tensor(x, dtype=dt)
        want = getattr(torch, name)(ta, tx)
        got = getattr(ember, name)(_e(ta, device), _e(tx, device))
        g, w = _n(got), want.double().numpy()
        if dt == torch.float64:
            rtol = np.where(_temme_region(a, x), 3e-9, 1e-12)
            atol = 1e-15
        else:   # (PyTorch's float32 series lose a few digits in the far tails)
            rtol, atol = 1.5e-4, 4e-6 if device == "cpu" else 2e-5
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        with np.errstate(invalid="ignore"):
            close = np.abs(g - w) <= atol + rtol * np.abs(w)
        bad = ~(same | close)
        assert not bad.any(), (f"{name} {dt} on {device}: at a={a[bad][:3]}, x={x[bad][:3]}: "
                               f"{g[bad][:3]} vs PyTorch {w[bad][:3]}")


def test_igamma_names_and_forms():
    a = torch.tensor([0.5, 1.5, 2.0, 7.0], dtype=torch.float64)
    x = torch.tensor([0.2, 1.0, 3.0, 6.5], dtype=torch.float64)
    ea, ex = _e(a, "cpu"), _e(x, "cpu")
    for ename, tname in (("gammainc", "igamma"), ("gammaincc", "igammac")):
        want = getattr(torch, tname)(a, x)
        assert_like(getattr(ember.special, ename)(ea, ex), want, 1e-14, 0, ename)
        assert_like(getattr(ember, tname)(ea, ex), want, 1e-14, 0, tname)
        assert_like(getattr(ea, tname)(ex), want, 1e-14, 0, f"Tensor.{tname}")
        assert_like(getattr(ember.special, ename)(input=ea, other=ex), want, 1e-14, 0,
                    f"{ename}(input=, other=)")
        out = ember.empty(4, dtype=ember.float64)
        assert getattr(ember.special, ename)(ea, ex, out=out) is out
        assert_like(out, want, 1e-14, 0, f"{ename} out=")
        y = ea.clone()
        assert getattr(y, tname + "_")(ex) is y
        assert_like(y, want, 1e-14, 0, f"Tensor.{tname}_")
    assert ember.special.gammainc is ember.igamma and ember.special.gammaincc is ember.igammac
    # float16 / bfloat16 compute in float32; float32 with float64 promotes
    for dt in (torch.float16, torch.bfloat16):
        assert_like(ember.igamma(_e(a.to(dt), "cpu"), _e(x.to(dt), "cpu")),
                    torch.igamma(a.to(dt), x.to(dt)), 1e-2, 1e-3, f"igamma {dt}")
    assert_like(ember.igamma(_e(a.float(), "cpu"), ex), torch.igamma(a.float(), x), 1e-7, 0)


def test_igamma_errors():
    """Integer tensors raise NotImplementedError (PyTorch's words where the dispatcher's
    checks run; its same-dtype fast path reports the dtype in its own words), numbers
    TypeError (both arguments must be tensors)."""
    i = torch.tensor([1, 2])
    for name in ("igamma", "igammac"):
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for '
                                                      "'Long'"):
            getattr(torch, name)(i, i)
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for '
                                                      "'Long'"):
            getattr(ember, name)(_e(i, "cpu"), _e(i[:1], "cpu"))
        with pytest.raises(NotImplementedError, match="not implemented for"):
            getattr(ember, name)(_e(i, "cpu"), _e(i, "cpu"))
        with pytest.raises(TypeError):
            getattr(ember, name)(_e(i.float(), "cpu"), 2.0)
        with pytest.raises(TypeError):
            getattr(ember, name)(2.0, _e(i.float(), "cpu"))


# ---- gradients --------------------------------------------------------------------------------
def test_igamma_gradients():
    """d/dx exists (PyTorch's formula); d/da raises PyTorch's NotImplementedError."""
    a = torch.tensor([0.5, 1.5, 2.0, 7.0], dtype=torch.float64)
    x = torch.tensor([0.2, 1.0, 3.0, 6.5], dtype=torch.float64, requires_grad=True)
    for tname, ename in (("igamma", "gammainc"), ("igammac", "gammaincc")):
        x.grad = None
        getattr(torch, tname)(a, x).sum().backward()
        ex = ember.tensor(x.detach().numpy(), requires_grad=True)
        getattr(ember.special, ename)(_e(a, "cpu"), ex).sum().backward()
        assert_like(ex.grad, x.grad, 1e-12, 1e-300, f"d{tname}/dx")
        ea = ember.tensor(a.numpy(), requires_grad=True)
        r = getattr(ember, tname)(ea, ex)
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for '{tname}: input' is not implemented"):
            r.sum().backward()


@pytest.mark.parametrize("name", BESSEL + POLYNOMIALS)
def test_not_differentiable(name):
    """As in PyTorch: the result does not require grad, so backward raises."""
    x = ember.tensor([0.3, 1.5], requires_grad=True)
    args = (x, 3) if name in POLYNOMIALS else (x,)
    r = getattr(ember.special, name)(*args)
    assert not r.requires_grad and r.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        r.sum().backward()


# ---- the composites (what a backend without these kernels runs) ------------------------------
@pytest.mark.parametrize("name", ["special_chebyshev_polynomial_u", "special_legendre_polynomial_p",
                                  "special_hermite_polynomial_h", "special_airy_ai", "igamma",
                                  "igammac"])
def test_composites_match_kernels(name):
    """Each op's composite (its body evaluated with tensor ops, loops while any element
    runs) gives the kernel's values."""
    o = OPS[name]
    if name.startswith("special_airy"):
        args = (ember.tensor(np.linspace(-6, 6, 41)),)
    elif name.startswith("igamma"):
        a, x = np.meshgrid([0.3, 1.0, 4.0, 30.0], [0.05, 0.8, 2.0, 5.0, 35.0])
        args = (ember.tensor(a.ravel()), ember.tensor(x.ravel()))
    else:
        x, n = np.meshgrid(np.linspace(-1.5, 1.5, 13), np.arange(-1, 12, dtype=np.float64))
        args = (ember.tensor(x.ravel()), ember.tensor(n.ravel()))
    for dt in (ember.float64, ember.float32):
        cargs = tuple(t.to(dt) for t in args)
        want = ember.dispatcher.ops.elementwise(name, *cargs)
        got = o.composite(*cargs)
        # (composites compute lgamma, acos from their fallbacks: not libm's last bits)
        tol = 1e-9 if dt == ember.float64 else 2e-5
        g, w = _n(got), _n(want)
        assert np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True), (name, dt, g, w)


# ---- the expression language's loop --------------------------------------------------------------
def test_loop_renders_one_for_statement_per_dialect():
    x, n = X.inputs("x", "n")
    p, q = X.loop(n - 1, (1.0, x), lambda k, p, q: (q, (x + x) * q - p),
                  until=lambda p, q: X.isnan(q))
    assert X.type_of(q) == X.T
    assert [v.value[1] for v in X.variables(q)] == ["x", "n"]
    lines, res = cxx.render_body(q, "float", {0: "x_", 1: "n_"}, "  ")
    text = "\n".join(lines)
    assert text.count("for (long ") == 1 and "break;" in text and res.endswith("_1")
    lines, res = opencl.render_body(q, "float", {0: "x_", 1: "n_"}, {}, "  ")
    assert "\n".join(lines).count("for (long ") == 1
    assert "loop(" in X.render_text(q)


def test_loop_evaluates_with_tensor_ops():
    """A loop over tensors runs until no element runs any more; counts are truncated and
    NaN or negative counts run no step."""
    x, n = X.inputs("x", "n")
    _, total = X.loop(n, (0.0, 0.0), lambda k, s, t: (s + 1.0, t + x * (k + 1.0)))
    ops = X.TensorOps(ew=ember.dispatcher.ops.elementwise, where=ember.dispatcher.ops.where,
                      cast=ember.dispatcher.ops.cast,
                      full=None, any=lambda m: bool(ember.dispatcher.ops.item(
                          ember.dispatcher.ops.reduce("sum", m))))
    xs = ember.tensor([1.0, 2.0, 3.0, 1.0, 1.0])
    ns = ember.tensor([0.0, 3.0, 4.5, -2.0, nan])
    got = X.evaluate(total, (xs, ns), {}, ops)
    assert _n(got).tolist() == [0.0, 12.0, 30.0, 0.0, 0.0]


def test_loop_checks_its_steps():
    x = X.inputs("x")
    (y,) = X.loop(3.0, (x,), lambda k, s: s * X.exp(x))   # (inputs' functions: fine)
    with pytest.raises(ValueError, match="another loop's values"):
        X.loop(3.0, (x,), lambda k, s: s * y)
    with pytest.raises(TypeError, match="2 values for 1 state"):
        X.loop(3.0, (x,), lambda k, s: (s, s))
    with pytest.raises(TypeError, match="state variable 0 is T"):
        X.loop(3.0, (x,), lambda k, s: s > 0)
