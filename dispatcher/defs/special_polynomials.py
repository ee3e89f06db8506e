"""The orthogonal polynomials of ``torch.special``: Chebyshev (T, U, V, W and their shifted
forms on [0, 1]), Hermite (H, He), Laguerre and Legendre, each ``f(x, n)``.

Every one is the three-term recurrence PyTorch runs, n - 1 steps of it as a
:func:`~ember.dispatcher.expr.loop` (the kernels run exactly n - 1 steps, stopping where
the value becomes NaN as PyTorch's loops do), with PyTorch's special cases around it: n is
truncated to an integer (NaN, infinite and out-of-int64 n count as negative), n < 0 gives
0, x = +-1 (or 0 and 1 for the shifted forms) gives the closed values, and for |x| < 1
and n above a small bound the Chebyshev kinds use their trigonometric forms
(cos(n acos x), ...). The Hermite polynomials are NaN above degree 128 (float) / 512
(double), PyTorch's limits. None is differentiable (PyTorch's are not).

Where x is NaN PyTorch's U, V, W, shifted U, V, W, Laguerre and Legendre return a value
left over from another element (their loops run no step and return an uninitialised
variable); these give NaN there. PyTorch's CPU build contracts ``a * b - c`` into fused
multiply-adds: in float32 near the overflow threshold its recurrences stay finite a step
longer (3.37e38 where these give inf), and once Hermite's overflow it carries +-inf where
these give NaN (inf - inf); elsewhere the two differ by rounding only.
"""
from __future__ import annotations

import math

from .. import expr as X
from ..expr import cos, fmod, inputs, isnan, loop, sin, sqrt, where
from ..schema import OPS, defop
from .elementwise import _atan_fallback, absolute
from .special import _SPECIAL_ONLY, _float_only, _trunc, is_double, loop_composite

__all__ = ["acos_"]

x, n = inputs("x", "n")
#: the signature of each (PyTorch's three overloads: tensor-tensor, number-tensor,
#: tensor-number)
_SIG = "{}(Tensor|Scalar self, Tensor|Scalar n) -> Tensor"
_I64 = 2.0 ** 63


def acos_(v):
    """acos(v) (libm's; the fallback as elementwise.py's acos)."""
    return X.precise("acos", (v,), 2 * _atan_fallback(sqrt((1 - v) / (1 + v))))


def _degree(v):
    """static_cast<int64_t>(n): truncated, and -1 (any negative) where n is NaN or does
    not fit (x86 gives INT64_MIN there)."""
    return where(isnan(v) | (absolute(v) >= _I64), -1.0, _trunc(v))


def _even(d):
    return fmod(d, 2.0) == 0


def _recurrence(d, p0, q0, step, use, stop_at_nan=True):
    """q after d - 1 steps of (p, q) <- (q, step(k, p, q)) from (p0, q0) (k = 0, 1, ...);
    no step where ``use`` is false (another branch gives the value there)."""
    count = where(use, d - 1, 0.0)
    until = (lambda p, q: isnan(q)) if stop_at_nan else None
    _, q = loop(count, (p0, q0), lambda k, p, q: (q, step(k, p, q)), until=until)
    return q


def _chebyshev(trig_from, trig, ends, first, two_x, ax_trig, d):
    """The shared shape: n < 0 -> 0; ``ends`` (the closed values at the ends, or None);
    the trigonometric form where n > ``trig_from`` and |ax_trig| < 1; n = 0 -> 1; n = 1 ->
    ``first``; the recurrence r = two_x q - p from (1, first)."""
    use_trig = (d > trig_from) & (absolute(ax_trig) < 1)
    plain = (d >= 2) & ~use_trig
    if ends is not None:
        at_end, end_value = ends
        plain = plain & ~at_end
    rec = _recurrence(d, 1.0, first, lambda k, p, q: two_x * q - p, plain)
    r = where(d == 1, first, rec)
    r = where(d == 0, 1.0, r)
    r = where(use_trig, trig, r)
    if ends is not None:
        r = where(at_end, end_value, r)
    return where(d < 0, 0.0, r)


def chebyshev_t_(v, deg):
    d = _degree(deg)
    t = acos_(v)
    end = where((v > 0) | _even(d), 1.0, -1.0)
    return _chebyshev(6, cos(d * t), (absolute(v) == 1, end), v, v + v, v, d)


def chebyshev_u_(v, deg):
    d = _degree(deg)
    t = acos_(v)
    st = sin(t)
    trig = where(st != 0, sin((d + 1) * t) / st, (d + 1) * cos((d + 1) * t) / v)
    end = where((v > 0) | _even(d), d + 1, -(d + 1))
    return _chebyshev(8, trig, (absolute(v) == 1, end), v + v, v + v, v, d)


def chebyshev_v_(v, deg):
    d = _degree(deg)
    t = acos_(v)
    odd_end = where(_even(d), d + d + 1, -(d + d + 1))
    trig = where(sin(t / 2.0) != 1, cos((d + 0.5) * t) / cos(t / 2.0), odd_end)
    end = where(v > 0, 1.0, odd_end)
    return _chebyshev(8, trig, (absolute(v) == 1, end), v + v - 1.0, v + v, v, d)


def chebyshev_w_(v, deg):
    d = _degree(deg)
    t = acos_(v)
    end = where(v > 0, d + d + 1, where(_even(d), 1.0, -1.0))
    trig = where(cos(t / 2.0) != 1, sin((d + 0.5) * t) / sin(t / 2.0), end)
    return _chebyshev(8, trig, (absolute(v) == 1, end), v + v + 1.0, v + v, v, d)


def _shifted(v):
    """2x - 1 as PyTorch writes it (x + x - 1), and twice it (the recurrence's factor)."""
    s = v + v - 1.0
    return s, s + s


def shifted_t_(v, deg):
    d = _degree(deg)
    s, s2 = _shifted(v)
    t = acos_(s)
    at_end = (v == 1) | (v == 0)
    end = where(v == 1, 1.0, where(_even(d), 1.0, -1.0))
    return _chebyshev(6, cos(d * t), (at_end, end), s, s2, s, d)


def shifted_u_(v, deg):
    d = _degree(deg)
    s, s2 = _shifted(v)
    t = acos_(s)
    st = sin(t)
    trig = where(st != 0, sin((d + 1) * t) / st, (d + 1) * cos((d + 1) * t) / s)
    end = where((v == 1) | _even(d), d + 1, -(d + 1))
    return _chebyshev(6, trig, ((v == 1) | (v == 0), end), s2, s2, s, d)


def shifted_v_(v, deg):
    d = _degree(deg)
    s, s2 = _shifted(v)
    t = acos_(s)
    odd_end = where(_even(d), d + d + 1, -(d + d + 1))
    trig = where(sin(t / 2.0) != 1, cos((d + 0.5) * t) / cos(t / 2.0), odd_end)
    end = where(v == 1, 1.0, odd_end)
    return _chebyshev(6, trig, ((v == 1) | (v == 0), end), s2 - 1.0, s2, s, d)


def shifted_w_(v, deg):
    d = _degree(deg)
    s, s2 = _shifted(v)
    t = acos_(s)
    sign_end = where(_even(d), 1.0, -1.0)
    trig = where(cos(t / 2.0) != 1, sin((d + 0.5) * t) / sin(t / 2.0), sign_end)
    end = where(v == 1, d + d + 1, sign_end)
    return _chebyshev(4, trig, ((v == 1) | (v == 0), end), s2 + 1.0, s2, s, d)


def _hermite_limit(v):
    """PyTorch's highest Hermite degree: 128 in float, 512 in double (NaN above)."""
    return where(is_double(v), 512.0, 128.0)


def hermite_h_(v, deg):
    """H_{k+1} = 2x H_k - 2k H_{k-1}."""
    d = _degree(deg)
    rec = _recurrence(d, 1.0, v + v, lambda k, p, q: (v + v) * q - ((k + 1.0) * 2.0) * p,
                      (d >= 2) & (d <= _hermite_limit(v)), stop_at_nan=False)
    r = where(d > _hermite_limit(v), math.nan, rec)
    r = where(d == 1, v + v, where(d == 0, 1.0, r))
    return where(d < 0, 0.0, r)


def hermite_he_(v, deg):
    """He_{k+1} = x He_k - k He_{k-1}."""
    d = _degree(deg)
    rec = _recurrence(d, 1.0, v, lambda k, p, q: v * q - (k + 1.0) * p,
                      (d >= 2) & (d <= _hermite_limit(v)), stop_at_nan=False)
    r = where(d > _hermite_limit(v), math.nan, rec)
    r = where(d == 1, v, where(d == 0, 1.0, r))
    return where(d < 0, 0.0, r)


def laguerre_l_(v, deg):
    """(k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}; 1 at x = 0."""
    d = _degree(deg)

    def step(k, p, q):
        j = k + 1.0
        return (((j + j) + (1.0 - v)) * q - j * p) / (j + 1.0)
    rec = _recurrence(d, 1.0, 1.0 - v, step, (d >= 2) & (v != 0))
    r = where(d == 1, 1.0 - v, where(d == 0, 1.0, rec))
    r = where(v == 0, 1.0, r)
    return where(d < 0, 0.0, r)


def legendre_p_(v, deg):
    """(k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}; +-1 at x = +-1."""
    d = _degree(deg)

    def step(k, p, q):
        j = k + 1.0
        return ((j + j + 1.0) * v * q - j * p) / (j + 1.0)
    at_end = absolute(v) == 1
    rec = _recurrence(d, 1.0, v, step, (d >= 2) & ~at_end)
    r = where(d == 1, v, where(d == 0, 1.0, rec))
    r = where(at_end, where((v > 0) | _even(d), 1.0, -1.0), r)
    return where(d < 0, 0.0, r)


_POLYNOMIALS = {
    "chebyshev_polynomial_t": (chebyshev_t_, "the Chebyshev polynomial of the first kind"),
    "chebyshev_polynomial_u": (chebyshev_u_, "the Chebyshev polynomial of the second kind"),
    "chebyshev_polynomial_v": (chebyshev_v_, "the Chebyshev polynomial of the third kind"),
    "chebyshev_polynomial_w": (chebyshev_w_, "the Chebyshev polynomial of the fourth kind"),
    "shifted_chebyshev_polynomial_t": (shifted_t_, "T_n(2x - 1)"),
    "shifted_chebyshev_polynomial_u": (shifted_u_, "U_n(2x - 1)"),
    "shifted_chebyshev_polynomial_v": (shifted_v_, "V_n(2x - 1)"),
    "shifted_chebyshev_polynomial_w": (shifted_w_, "W_n(2x - 1)"),
    "hermite_polynomial_h": (hermite_h_, "the physicists' Hermite polynomial"),
    "hermite_polynomial_he": (hermite_he_, "the probabilists' Hermite polynomial"),
    "laguerre_polynomial_l": (laguerre_l_, "the Laguerre polynomial"),
    "legendre_polynomial_p": (legendre_p_, "the Legendre polynomial"),
}


for _name, (_body, _doc) in _POLYNOMIALS.items():
    defop("special_" + _name, "elementwise", _SIG.format("special_" + _name),
          promotion="int_to_float", scalar={"float": _body(x, n)}, differentiable=False,
          variants=_SPECIAL_ONLY, domain=(-1.0, 1.0), doc=f"{_doc} of degree n at x")
    OPS["special_" + _name].meta = _float_only(_name)
    OPS["special_" + _name].composite = loop_composite(OPS["special_" + _name])


del _name, _body, _doc
