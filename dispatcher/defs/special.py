"""Special functions (PyTorch's ``torch.special`` and the gamma family): scalar bodies.

Each is an elementwise op like those of ``elementwise.py``; the bodies are the series,
continued fractions and rational approximations the functions are usually computed with,
written in the expression language, so the kernels of every backend and the composites
follow from one text. Loops with data-dependent trip counts (shifting digamma's argument
up to 10, the Hurwitz zeta sum) are unrolled to their bound with ``where`` guards.

Ops that exist only in ``torch.special`` are named ``special_<name>``, as in PyTorch's
native_functions.yaml; the frontend publishes them as ``ember.special.<name>``.
"""
from __future__ import annotations

import math
from dataclasses import replace

from .. import dtypes as D
from .. import expr as X
from .. import ops as O
from ..expr import (attr, cast, const, cos, erf, exp, floor, fmod, inputs, isfinite, isinf,
                    isnan, log, loop, precise, sin, sqrt, where)
from ..expr import pow as fpow
from ..schema import OPS, defop, gradient
from .elementwise import (_TENSOR_OPS, _any, _body_composite, _expm1_x, _log1p_x,
                          _masked_zero, _signed_like, absolute, binary, unary)

__all__ = ["is_double", "loop_composite"]

x = inputs("x")
a, b = inputs("a", "b")
PI = math.pi
_SQRT_PI = math.sqrt(PI)
_SQRT2 = math.sqrt(2.0)
_SPECIAL_ONLY = ("function", "out")   # (torch.special.<name>: no method, no in-place form)


def _horner(v, coeffs):
    """c0 v^n + c1 v^(n-1) + ... + cn (coefficients from the highest power)."""
    r = coeffs[0]
    for c in coeffs[1:]:
        r = r * v + c
    return r


def _trunc(v):
    return precise("trunc", (v,), where(v < 0, -floor(-v), floor(v)))


def is_double(v):
    """True where the compute type is double: 1 + 2^-30 rounds to 1 in float. (``v``, an
    operand, keeps the test in the body's type in composites too, where constants alone
    fold in Python's double.)"""
    probe = cast(v != v, X.T) * 0.0 + (1.0 + 2.0 ** -30)
    return probe != 1.0


#: the tensor ops composites evaluate bodies with, and ``any`` for their loops
_LOOP_OPS = replace(_TENSOR_OPS, any=_any)
_HALF = (D.float16, D.bfloat16)


def loop_composite(o):
    """The composite of an op whose body has a :func:`~ember.dispatcher.expr.loop` (for
    backends without its kernel): the body evaluated with tensor ops, as
    ``elementwise._body_composite`` does, the loop running while any element still runs
    (float bodies; float16 / bfloat16 compute in float32)."""
    body = o.bodies()[None]["float"]

    def run(*ins, **attrs):
        ins = tuple(O.cast(t, D.float32) if getattr(t, "dtype", None) in _HALF else t
                    for t in ins)
        return X.evaluate(body, ins, attrs, _LOOP_OPS)
    run.__name__ = o.name
    return run


# ---- erfc, erfcx ------------------------------------------------------------------------------
def _erfc_cf(v):
    """sqrt(pi) exp(v^2) erfc(v) = 1 / t for v >= 2.5: the continued fraction
    t = v + (1/2) / (v + 1 / (v + (3/2) / (v + ...))), 40 terms (double precision there)."""
    t = v
    for k in range(40, 0, -1):
        t = v + (k / 2) / t
    return t


def _erfc_fallback(v):
    """1 - erf(v) below 2.5 (erfc >= 4e-4 there, so no digits are lost); the continued
    fraction above, where 1 - erf(v) would cancel."""
    vc = where(v < 2.5, 2.5, v)
    return where(v < 2.5, 1 - erf(v), exp(-vc * vc) / (_SQRT_PI * _erfc_cf(vc)))


def erfc_(v):
    return precise("erfc", (v,), _erfc_fallback(v))


def erfcx_(v):
    """exp(v^2) erfc(v): the continued fraction without its exp above 2.5, below it the
    product (which overflows to inf for v < -26.6, as PyTorch's)."""
    vc = where(v < 2.5, 2.5, v)
    return where(v < 2.5, exp(v * v) * erfc_(v), 1 / (_SQRT_PI * _erfc_cf(vc)))


unary("erfc", {"float": erfc_(x)})
unary("special_erfcx", {"float": erfcx_(x)}, variants=_SPECIAL_ONLY)


# ---- erfinv, ndtri ------------------------------------------------------------------------------
_GILES_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _giles(w):
    """Giles' single-precision erfinv(y) / y as a function of w = -log((1 - y)(1 + y))."""
    wl = sqrt(where(w < 5, 5.0, w)) - 3
    return where(w < 5, _horner(w - 2.5, _GILES_SMALL), _horner(wl, _GILES_LARGE))


def _erfcinv_small(q):
    """erfcinv(q) for 0 < q <= 1 (so the result is >= 0): a start from Giles' formula in
    w = -log(q (2 - q)), then Newton steps on log(erfc(v)) = log(q), which stay finite
    in the far tail (log erfc(v) = log erfcx(v) - v^2)."""
    w = -log(q * (2 - q))
    v = _giles(w) * (1 - q)
    # far tail: the asymptotic erfc(v) ~ exp(-v^2) / (v sqrt(pi)) gives a better start
    lq = -log(q)
    tail = sqrt(lq - log(_SQRT_PI * sqrt(where(lq > 1, lq, 1.0))))
    v = where(w > 30, tail, v)
    lq_ = log(q)
    for _ in range(4):
        ex = erfcx_(v)
        v = v + (log(ex) - v * v - lq_) * (_SQRT_PI / 2) * ex
    return v


def _erfinv_central(ay):
    """erfinv(ay) for 0 <= ay <= 1/2: Giles' approximation, three Newton steps on erf."""
    v = _giles(-log((1 - ay) * (1 + ay))) * ay
    for _ in range(3):
        v = v - (erf(v) - ay) / ((2 / _SQRT_PI) * exp(-v * v))
    return v


def erfinv_(y):
    """Giles' approximation and three Newton steps on erf(v) = |y| up to |y| = 1/2; above,
    erfcinv(1 - |y|) (1 - |y| is exact there, erf(v) - |y| would cancel)."""
    ay = absolute(y)
    v = _erfinv_central(where(ay > 0.5, 0.5, ay))
    tail = _erfcinv_small(where(ay > 0.5, 1 - ay, 0.5))
    v = where(ay > 0.5, tail, v)
    v = where(ay == 1, math.inf, where(ay > 1, math.nan, v))
    return _signed_like(y, v)


unary("erfinv", {"float": erfinv_(x)}, domain=(-0.95, 0.95))


def ndtri_(p):
    """The inverse of the standard normal CDF: -sqrt(2) erfcinv(2p) below 1/2, by symmetry
    above (1 - p is exact there)."""
    low = p < 0.5
    q = where(low, p, 1 - p)
    qs = where(q > 0, q, 0.25)     # (q = 0: the ends, fixed below)
    v = _erfcinv_small(2 * qs) * _SQRT2
    r = where(low, -v, v)
    # the centre: sqrt(2) erfinv(2p - 1), where 2p - 1 is exact and small
    mid = (p >= 0.25) & (p <= 0.75)
    c = 2 * where(mid, p, 0.5) - 1
    r = where(mid, _signed_like(c, _erfinv_central(absolute(c))) * _SQRT2, r)
    r = where(p == 0, -math.inf, where(p == 1, math.inf, r))
    r = where((p < 0) | (p > 1), math.nan, where(p == 0.5, 0.0, r))
    return where(isnan(p), p, r)


unary("special_ndtri", {"float": ndtri_(x)}, domain=(0.05, 0.95), variants=_SPECIAL_ONLY)


# ---- normal distribution ------------------------------------------------------------------------
def ndtr_(v):
    """(1 + erf(v / sqrt(2))) / 2, as PyTorch computes it (0 below about -8.3)."""
    return (1 + erf(v * (1 / _SQRT2))) * 0.5


def log_ndtr_(v):
    t = v * (1 / _SQRT2)
    return where(v < -1, log(erfcx_(-t) / 2) - t * t, _log1p_x(-erfc_(t) / 2))


unary("special_ndtr", {"float": ndtr_(x)}, variants=_SPECIAL_ONLY)
unary("special_log_ndtr", {"float": log_ndtr_(x)}, variants=_SPECIAL_ONLY)


# ---- gamma family -------------------------------------------------------------------------------
_HALF_LOG_2PI = 0.5 * math.log(2 * PI)
# Stirling's series: B_2k / (2k (2k - 1)), highest power of 1/w^2 first
_STIRLING = (-3617 / 122400, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12)


def _lgamma_fallback(v):
    """log|Gamma(v)|: reflection below 1/2, the recurrence up to 10, Stirling's series."""
    neg = v < 0.5
    z = where(neg, 1 - v, v)
    prod, w = 1.0, z
    for _ in range(10):
        small = w < 10
        prod = where(small, prod * w, prod)
        w = where(small, w + 1, w)
    iw = 1 / w
    series = _horner(iw * iw, _STIRLING) * iw
    lg = (w - 0.5) * log(w) - w + _HALF_LOG_2PI + series - log(prod)
    refl = log(PI / absolute(sin(PI * v))) - lg
    r = where(neg, refl, lg)
    r = where(isinf(v), math.inf, r)
    return where(neg & (v == floor(v)), math.inf, r)


def lgamma_(v):
    return precise("lgamma", (v,), _lgamma_fallback(v))


_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2,
              7.57575757575757575758e-3, -4.16666666666666666667e-3,
              3.96825396825396825397e-3, -8.33333333333333333333e-3,
              8.33333333333333333333e-2)


def digamma_(v):
    """PyTorch's calc_digamma: reflection (pi / tan(pi frac(v))) below 0, the recurrence
    psi(v) = psi(v + 1) - 1/v up to 10, then the asymptotic series; +-inf at +-0 (the
    sign flipped), NaN at the negative integers."""
    neg = v < 0
    z = where(neg, 1 - v, v)
    res, w = 0.0, z
    for _ in range(10):
        small = w < 10
        res = where(small, res - 1 / w, res)
        w = where(small, w + 1, w)
    iw2 = 1 / (w * w)
    asym = res + log(w) - 0.5 / w - iw2 * _horner(iw2, _DIGAMMA_A)
    d = where(w == 10, res + _PSI_10, asym)
    fr = v - _trunc(v)
    d = where(neg, d - PI / precise("tan", (PI * fr,), sin(PI * fr) / cos(PI * fr)), d)
    d = where(neg & (v == _trunc(v)), math.nan, d)
    return where(v == 0, where(1 / v < 0, math.inf, -math.inf), d)


def trigamma_(v):
    """PyTorch's calc_trigamma: reflection below 1/2, six steps of the recurrence, the
    asymptotic series."""
    low = v < 0.5
    s = sin(PI * v)
    res = where(low, -(PI * PI) / (s * s), 0.0)
    w = where(low, 1 - v, v)
    for _ in range(6):
        res = res + 1 / (w * w)
        w = w + 1
    ixx = 1 / (w * w)
    res = res + (1 + 1 / (2 * w) + ixx * (1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / w
    return where(low, -res, res)


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16
#: the direct sum's unrolled bound: Cephes sums at least 9 terms and on while q + i <= 9,
#: so every q > 9 - _ZETA_TERMS gets exactly its terms (more only for negative q)
_ZETA_TERMS = 24


def zeta_(s, q):
    """The Hurwitz zeta function, sum over k of (k + q)^-s, as Cephes (and PyTorch) compute
    it: the direct sum until a term falls below machine precision (at least 9 terms, and
    on while q + i <= 9), then 12 terms of Euler-Maclaurin; the early returns are flags."""
    tot = fpow(q, -s)
    acc, bt = q, 0.0 * q
    ret = const(False)
    for i in range(_ZETA_TERMS):
        go = ~ret & ((i < 9) | (acc <= 9))
        acc = where(go, acc + 1, acc)
        term = fpow(acc, -s)
        bt = where(go, term, bt)
        tot = where(go, tot + term, tot)
        ret = ret | (go & (-_MACHEP * tot < term) & (term < _MACHEP * tot))
    w = acc
    em = tot + bt * w / (s - 1) - 0.5 * bt
    am, k, fin = 1.0, 0.0, ret
    for coef in _ZETA_A:
        am = am * (s + k)
        bt = bt / w
        # (in float, am overflows where bt has underflowed to 0: PyTorch's double does not)
        t = where((bt == 0) & isfinite(s), 0.0, am * bt / coef)
        new = em + t
        em = where(fin, em, new)
        fin = fin | (absolute(t / new) < _MACHEP)
        am = am * (s + (k + 1))
        bt = bt / w
        k = k + 2
    r = where(ret, tot, em)
    nonpos = q <= 0
    return where(s == 1, math.inf, where(s < 1, math.nan, where(
        nonpos & (q == floor(q)), math.inf, where(nonpos & (s != floor(s)), math.nan, r))))


# ---- modified Bessel functions of the first kind, orders 0 and 1 ----------------------------
_I_CUT = 20.0        # series below, the asymptotic expansion above (its error ~ e^(-2x))
_I_SERIES = 50
_I_ASYM = 40


def bessel_i_(v, nu: int, scaled: bool):
    """I_nu(v) (times exp(-|v|) when ``scaled``): the power series
    (x/2)^nu sum (x^2/4)^k / (k! (k + nu)!) for |v| <= 20 (positive terms, nested from the
    last), the asymptotic series e^x / sqrt(2 pi x) sum_k prod_j ((2j - 1)^2 - 4 nu^2) /
    (8 j x) above it."""
    ax = absolute(v)
    small = ax <= _I_CUT
    xs = where(small, ax, 0.0)
    q = xs * xs * 0.25
    s = 1.0
    for k in range(_I_SERIES, 0, -1):
        s = 1 + q * (1 / (k * (k + nu))) * s
    ser = s * (xs * 0.5) if nu else s
    if scaled:
        ser = ser * exp(-ax)
    xl = where(small, _I_CUT, ax)
    t = 1.0
    for k in range(_I_ASYM, 0, -1):
        t = 1 + (((2 * k - 1) ** 2 - 4 * nu * nu) / (8 * k)) / xl * t
    asym = t / sqrt(2 * PI * xl)
    if not scaled:
        asym = exp(xl) * asym     # (NaN at inf, as PyTorch's: inf * 0)
    r = where(small, ser, asym)
    return _signed_like(v, r) if nu else r


def polygamma_(n, v):
    """PyTorch's polygamma: digamma (n = 0), trigamma (n = 1), else
    (-1)^(n+1) n! zeta(n + 1, v)."""
    gen = where(fmod(n, 2) != 0, 1.0, -1.0) * exp(lgamma_(n + 1)) * zeta_(n + 1, v)
    return where(n == 0, digamma_(v), where(n == 1, trigamma_(v), gen))


def logit_(v, eps):
    """log(z / (1 - z)) with z = v clamped to [eps, 1 - eps] (eps < 0: no clamp)."""
    z = where(eps < 0, v, where(v < eps, eps, where(v > 1 - eps, 1 - eps, v)))
    return log(z / (1 - z))


def entr_(v):
    return where(isnan(v), v, where(v > 0, -v * log(v), where(v == 0, 0.0, -math.inf)))


def sph_j0_(v):
    """sin(v) / v, its Taylor polynomial below 1/2 (PyTorch's)."""
    v2 = v * v
    poly = 1 + v2 * _horner(v2, (1 / 6227020800, -1 / 39916800, 1 / 362880, -1 / 5040,
                                 1 / 120, -1 / 6))
    return where(isinf(v), 0.0, where(absolute(v) < 0.5, poly, sin(v) / v))


# ---- the ops ---------------------------------------------------------------------------------
unary("lgamma", {"float": lgamma_(x)}, domain=(0.1, 4.0), doc="log |Gamma(x)|")
unary("digamma", {"float": digamma_(x)}, domain=(0.1, 4.0))
defop("polygamma", "elementwise", "polygamma(int n, Tensor self) -> Tensor",
      promotion="int_to_float", scalar={"float": polygamma_(attr("n"), x)}, attrs={"n": 1},
      inputs=("self",), doc="the n-th derivative of digamma")
unary("i0", {"float": bessel_i_(x, 0, False)}, doc="the modified Bessel function I_0")
unary("special_i0e", {"float": bessel_i_(x, 0, True)}, variants=_SPECIAL_ONLY)
unary("special_i1", {"float": bessel_i_(x, 1, False)}, variants=_SPECIAL_ONLY)
unary("special_i1e", {"float": bessel_i_(x, 1, True)}, variants=_SPECIAL_ONLY)
unary("special_entr", {"float": entr_(x)}, variants=_SPECIAL_ONLY, domain=(0.05, 3.0),
      doc="-x log x")
unary("special_spherical_bessel_j0", {"float": sph_j0_(x)}, variants=_SPECIAL_ONLY,
      differentiable=False)
defop("logit", "elementwise", "logit(Tensor self, float? eps=None) -> Tensor",
      promotion="int_to_float", scalar={"float": logit_(x, attr("eps"))}, attrs={"eps": -1.0},
      inputs=("self",), domain=(0.05, 0.95), doc="log(x / (1 - x)), x clamped to [eps, 1 - eps]")
binary("special_xlog1py", {"float": where(isnan(b), b, where(a == 0, 0.0, a * _log1p_x(b)))},
       promotion="int_to_float", self_type="Tensor|Scalar", variants=_SPECIAL_ONLY,
       domain=(0.1, 3.0), doc="a * log1p(b), 0 where a is 0")
binary("special_zeta", {"float": zeta_(a, b)}, promotion="int_to_float",
       self_type="Tensor|Scalar", variants=_SPECIAL_ONLY, domain=(1.5, 4.0),
       doc="the Hurwitz zeta function")

# ---- regularized incomplete gamma functions P(a, x) and Q(a, x) ------------------------------
# PyTorch's (SciPy's) choice of method by region, with its boundary values; each method
# below is a loop run to convergence. Where a is large and x near it PyTorch switches to
# Temme's uniform expansion; here the series and the continued fraction run on (their
# terms ~ 8 sqrt(a)), with the prefactor x^a e^-x / Gamma(a + 1) computed from
# log1p(s) - s, s = (x - a) / a, and Stirling's correction, so it stays exact there.
_IG_MAXITER = 100000.0
_IG_TINY = 1e-30
_LOG_2PI = math.log(2 * PI)
# B_2k / (2k (2k - 1)) a^(1 - 2k), k = 7 .. 1: mu(a) = lgamma(a + 1) - ((a + 1/2) log a - a
# + log(2 pi) / 2)
_STIRLING_MU = (1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12)
# 1 / (2j + 3), j = 19 .. 0
_LOG1PMX = tuple(1.0 / (2 * j + 3) for j in range(19, -1, -1))


def _log_ratio_m1(xv, av):
    """log(x / a) - (x / a - 1) without cancellation: near x = a (s = (x - a) / a small),
    with u = s / (2 + s), log(1 + s) = 2 atanh(u) and s - 2u = s u, so it is
    -s u + 2 u^3 sum u^2j / (2j + 3); elsewhere log(x / a) - s (x / a rounded once, where
    1 + s would lose x's digits for x << a)."""
    s = (xv - av) / av
    near = absolute(s) < 0.5
    sm = where(near, s, 0.0)
    u = sm / (2.0 + sm)
    u2 = u * u
    series = -sm * u + 2.0 * u * u2 * _horner(u2, _LOG1PMX)
    return where(near, series, log(xv / av) - s)


def _ig_log_prefactor(av, xv):
    """log(x^a e^-x / Gamma(a + 1)): directly below a = 10, above it as
    a (log(x / a) - (x - a) / a) - mu(a) - log(2 pi a) / 2, mu Stirling's correction (no
    cancellation where x is near a)."""
    big = av >= 10
    ab = where(big, av, 10.0)
    ia = 1.0 / ab
    mu = _horner(ia * ia, _STIRLING_MU) * ia
    large = ab * _log_ratio_m1(xv, ab) - mu - 0.5 * (_LOG_2PI + log(ab))
    small = av * log(xv) - xv - lgamma_(av + 1.0)
    return where(big, large, small)


def _ig_prefactor(av, xv):
    """x^a e^-x / Gamma(a + 1); 0 where PyTorch's is: away from x = a (|x - a| > 0.4 a) its
    x^a e^-x / Gamma(a) is flushed to 0 below exp(-MAXLOG) (709.78 double, 88.72 float)."""
    lp = _ig_log_prefactor(av, xv)
    maxlog = where(is_double(av), 7.09782712893383996843e2, 88.72283905206835)
    flush = (absolute(av - xv) > 0.4 * absolute(av)) & (lp + log(av) < -maxlog)
    return where(flush, 0.0, exp(lp))


def _ig_eps(v):
    return where(is_double(v), 1.11022302462515654042e-16, 5.9604644775390625e-08)


def _ig_p_series(av, xv, use):
    """P = D sum_k x^k / ((a + 1) ... (a + k)), D = x^a e^-x / Gamma(a + 1) (DLMF 8.11.4)."""
    def step(k, t, total, eps):
        t = t * xv / (av + (k + 1.0))
        return t, total + t, eps
    _, total, _ = loop(where(use, _IG_MAXITER, 0.0), (1.0, 1.0, _ig_eps(av)), step,
                       until=lambda t, total, eps: (t <= eps * total) | isnan(total))
    return _ig_prefactor(av, xv) * total


def _ig_q_fraction(av, xv, use):
    """Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...))
    (DLMF 8.9.2), by the modified Lentz method."""
    b0 = xv + 1.0 - av

    def step(k, d, c, h, last, eps):
        i = k + 1.0
        an = -i * (i - av)
        b = (xv + 1.0 - av) + 2.0 * i
        d = an * d + b
        d = where(absolute(d) < _IG_TINY, _IG_TINY, d)
        c = b + an / c
        c = where(absolute(c) < _IG_TINY, _IG_TINY, c)
        d = 1.0 / d
        delta = d * c
        return d, c, h * delta, delta, eps
    _, _, h, _, _ = loop(where(use, _IG_MAXITER, 0.0),
                         (1.0 / b0, 1.0 / _IG_TINY, 1.0 / b0, 0.0, _ig_eps(av)), step,
                         until=lambda d, c, h, last, eps: (absolute(last - 1.0) < eps) |
                         isnan(h))
    return av * _ig_prefactor(av, xv) * h


def _ig_q_series(av, xv, use):
    """Q = 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) sum_{n>=1} (-x)^n / (n! (a + n)) (DLMF
    8.7.3), for small x: no cancellation where P is near 1."""
    def step(k, fac, total, term, eps):
        fac = fac * -xv / (k + 1.0)
        term = fac / (av + (k + 1.0))
        return fac, total + term, term, eps
    _, total, _, _ = loop(where(use, _IG_MAXITER, 0.0), (1.0, 0.0, 1.0, _ig_eps(av)), step,
                          until=lambda fac, total, term, eps:
                          (absolute(term) <= eps * absolute(total)) | isnan(total))
    lx = log(xv)
    return -_expm1_x(av * lx - lgamma_(av + 1.0)) - exp(av * lx - lgamma_(av)) * total


def _ig_ends(av, xv, r, lower: bool):
    """PyTorch's boundary values (SciPy's): NaN for negative arguments, then a = 0, x = 0,
    infinite a, infinite x, in that order."""
    one, zero = (1.0, 0.0) if lower else (0.0, 1.0)
    r = where(isnan(av) | isnan(xv), math.nan, r)
    r = where(isinf(xv), one, r)
    r = where(isinf(av), where(isinf(xv), math.nan, zero), r)
    r = where(xv == 0, zero, r)
    r = where(av == 0, where(xv > 0, one, math.nan), r)
    return where((xv < 0) | (av < 0), math.nan, r)


def _ig_q_method(av, xv, ok):
    """Which method computes Q (PyTorch's regions): (1 - P series, fraction, Q series)."""
    # (PyTorch compares x with the double 1.1: a float x equal to float(1.1) is above it)
    high = (xv > 1.1) | ((xv == 1.1) & ~is_double(xv))
    via_p = where(high, xv < av,
                  where(xv <= 0.5, -0.4 / log(xv) < av, xv * 1.1 < av))
    return ok & via_p, ok & high & ~via_p, ok & ~high & ~via_p


def igamma_(av, xv):
    """P(a, x): 1 - Q where x > 1 and x > a, else the series."""
    ok = (av > 0) & (xv > 0) & isfinite(av) & isfinite(xv)
    upper = (xv > 1) & (xv > av)
    _, by_fraction, by_series = _ig_q_method(av, xv, ok & upper)
    q = where(by_fraction, _ig_q_fraction(av, xv, by_fraction),
              _ig_q_series(av, xv, by_series))
    r = where(upper, 1.0 - q, _ig_p_series(av, xv, ok & ~upper))
    return _ig_ends(av, xv, r, True)


def igammac_(av, xv):
    """Q(a, x): by PyTorch's regions, 1 - P by the series, the continued fraction or the
    series for Q."""
    ok = (av > 0) & (xv > 0) & isfinite(av) & isfinite(xv)
    via_p, by_fraction, by_series = _ig_q_method(av, xv, ok)
    r = where(via_p, 1.0 - _ig_p_series(av, xv, via_p),
              where(by_fraction, _ig_q_fraction(av, xv, by_fraction),
                    _ig_q_series(av, xv, by_series)))
    return _ig_ends(av, xv, r, False)


def _kernel_dtypes(kernel, rejected, promoted):
    """A meta check raising PyTorch's ``"<kernel>_cpu" not implemented for '<Type>'`` for
    the dtypes named in ``rejected``: that of the dtype the tensor operands promote to
    (``promoted``), or of any tensor operand."""
    def meta(args, attrs):
        tensors = [v for v in args if isinstance(getattr(v, "dtype", None), D.DType)]
        for d in ([D.result_type(*tensors)] if promoted and tensors else
                  [v.dtype for v in tensors]):
            if d.name in rejected:
                raise NotImplementedError(f'"{kernel}_cpu" not implemented for '
                                          f"'{D.torch_name(d)}'")
    return meta


def _not_integral(kernel):
    """igamma's kernels take floating dtypes only (PyTorch's error for the others): checked
    on the promoted dtype (igamma(int32, float16) is float16)."""
    return _kernel_dtypes(kernel, _INTEGRAL, promoted=True)


_INTEGRAL = ("bool", "uint8", "int8", "int16", "int32", "int64")


_IGAMMA_VARIANTS = ("function", "method", "inplace", "out")
binary("igamma", {"float": igamma_(a, b)}, other_type="Tensor", variants=_IGAMMA_VARIANTS,
       domain=(0.5, 4.0), doc="the regularized lower incomplete gamma function P(input, other)")
binary("igammac", {"float": igammac_(a, b)}, other_type="Tensor", variants=_IGAMMA_VARIANTS,
       domain=(0.5, 4.0), doc="the regularized upper incomplete gamma function Q(input, other)")
for _n in ("igamma", "igammac"):
    OPS[_n].meta = _not_integral(_n)
    OPS[_n].composite = loop_composite(OPS[_n])


def _float_only(kernel):
    """PyTorch's kernel of the op takes float and double only: float16 / bfloat16 raise."""
    return _kernel_dtypes(kernel, ("float16", "bfloat16"), promoted=False)


for _n in ("erfcx", "ndtri", "log_ndtr", "spherical_bessel_j0", "zeta"):
    OPS["special_" + _n].meta = _float_only(_n)

for _o in OPS.values():
    if _o.scalar is not None and not _o.primitive and _o.composite is None:
        _o.composite = _body_composite(_o)


# ---- gradient formulas (PyTorch's derivatives.yaml, term for term) ------------------------------
E = O.elementwise
_EPS = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07,
        "float16": 0.0009765625, "bfloat16": 0.0078125}


def _requires(v) -> bool:
    return getattr(v, "requires_grad", False) is True


@gradient("erfc")
def _(g, self):
    return (-2.0 / _SQRT_PI * E("exp", -(self * self)) * g,)


@gradient("erfinv")
def _(g, result):
    return (0.5 * _SQRT_PI * E("exp", result * result) * g,)


@gradient("special_erfcx")
def _(g, self, result):
    return ((2.0 * self * result - 2.0 / _SQRT_PI) * g,)


@gradient("special_ndtri")
def _(g, result):
    return (g * math.sqrt(2 * PI) * E("exp", result * result / 2),)


@gradient("special_ndtr")
def _(g, self):
    return (g * E("exp", -(self * self) / 2) * (1 / math.sqrt(2 * PI)),)


@gradient("special_log_ndtr")
def _(g, self, result):
    return (g / math.sqrt(2 * PI) * E("exp", -(result + self * self / 2)),)


@gradient("lgamma")
def _(g, self):
    return (g * E("digamma", self),)


@gradient("digamma")
def _(g, self):
    return (g * E("polygamma", self, n=1),)


@gradient("polygamma")
def _(g, self, n=1):
    return (g * E("polygamma", self, n=n + 1),)


@gradient("i0")
def _(g, self):
    return (g * E("special_i1", self),)


@gradient("special_i0e")
def _(g, self, result):
    return (g * (E("special_i1e", self) - E("sign", self) * result),)


def _not_tiny(self):
    eps = _EPS[self.dtype.name]
    big = E("abs", self) > eps
    return big, O.where(big, self, eps)


@gradient("special_i1")
def _(g, self, result):
    big, safe = _not_tiny(self)
    return (g * O.where(big, E("i0", safe) - result * E("reciprocal", safe), 0.5),)


@gradient("special_i1e")
def _(g, self, result):
    big, safe = _not_tiny(self)
    gx = E("special_i0e", safe) - result * (E("sign", safe) + E("reciprocal", safe))
    return (g * O.where(big, gx, 0.5),)


@gradient("special_entr")
def _(g, self):
    return (g * -(1 + E("log", self)),)


@gradient("logit")
def _(g, self, eps=-1.0):
    d = g / (self * (1 - self))
    if eps < 0:
        return (O.where(E("logical_or", self < 0, self > 1), math.nan, d),)
    return (O.where(E("logical_or", self < eps, self > 1 - eps), 0.0, d),)


@gradient("special_xlog1py")
def _(g, self, other):
    gs = go = None
    if _requires(self):
        gs = _masked_zero(E("special_xlog1py", g, other), self, other, -1.0)
    if _requires(other):
        go = g * self / (other + 1)
    return gs, go


def _igamma_grad(name: str, sign: float):
    def formula(g, self, other):
        if _requires(self):
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        d = E("exp", (self - 1) * E("log", other) - other - E("lgamma", self))
        return None, (g * d if sign > 0 else -(g * d))
    return formula


gradient("igamma")(_igamma_grad("igamma", 1.0))
gradient("igammac")(_igamma_grad("igammac", -1.0))


@gradient("special_zeta")
def _(g, self, other):
    if _requires(self):
        raise NotImplementedError("special_zeta(): the derivative with respect to the first "
                                  "argument (x) is not implemented, as in PyTorch")
    return None, g * -self * E("special_zeta", self + 1.0, other)
