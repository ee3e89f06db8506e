"""``ember.special``: PyTorch's ``torch.special`` namespace.

The functions that exist only here are the schema's ``special_<name>`` ops (generated in
``_functions.SPECIAL`` from their definitions in ``dispatcher/defs/special.py``); the rest
are the top-level functions under their ``torch.special`` names.

>>> import ember
>>> ember.special.ndtr(ember.tensor([0.0])).item()
0.5
"""
from __future__ import annotations

from . import _functions as F

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv",
    "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
    "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

# ---- only in torch.special: generated from the op table ---------------------------------------
entr = F.SPECIAL["entr"]
erfcx = F.SPECIAL["erfcx"]
i0e = F.SPECIAL["i0e"]
i1 = F.SPECIAL["i1"]
i1e = F.SPECIAL["i1e"]
log_ndtr = F.SPECIAL["log_ndtr"]
ndtr = F.SPECIAL["ndtr"]
ndtri = F.SPECIAL["ndtri"]
spherical_bessel_j0 = F.SPECIAL["spherical_bessel_j0"]
xlog1py = F.SPECIAL["xlog1py"]
zeta = F.SPECIAL["zeta"]
airy_ai = F.SPECIAL["airy_ai"]
bessel_j0 = F.SPECIAL["bessel_j0"]
bessel_j1 = F.SPECIAL["bessel_j1"]
bessel_y0 = F.SPECIAL["bessel_y0"]
bessel_y1 = F.SPECIAL["bessel_y1"]
modified_bessel_i0 = F.SPECIAL["modified_bessel_i0"]
modified_bessel_i1 = F.SPECIAL["modified_bessel_i1"]
modified_bessel_k0 = F.SPECIAL["modified_bessel_k0"]
modified_bessel_k1 = F.SPECIAL["modified_bessel_k1"]
scaled_modified_bessel_k0 = F.SPECIAL["scaled_modified_bessel_k0"]
scaled_modified_bessel_k1 = F.SPECIAL["scaled_modified_bessel_k1"]


# ---- the orthogonal polynomials: f(x, n), PyTorch's parameter names -----------------------------
def _polynomial(name: str, title: str, example: str):
    """``ember.special.<name>(x, n, *, out=None)``: the schema op ``special_<name>`` under
    PyTorch's parameter names (x and n: ``input=`` is not one of them)."""
    op = F.SPECIAL[name]

    def fn(x, n, *, out=None):
        return op(x, n, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = (
        f"{title} of degree ``n`` at ``x``, elementwise, as ``torch.special.{name}``.\n\n"
        "``n`` is truncated to an integer; n < 0 gives 0. ``x`` or ``n`` may be a Python "
        "number (not both); integer inputs compute in the default float dtype. Not "
        "differentiable (as in PyTorch).\n\n"
        "Args:\n    x (Tensor or Number): the points.\n"
        "    n (Tensor or Number): the degrees.\n"
        "    out (Tensor, optional): the output tensor.\n\n"
        f">>> import ember\n>>> ember.special.{name}(ember.tensor([0.5]), 3)\n{example}\n")
    return fn


chebyshev_polynomial_t = _polynomial(
    "chebyshev_polynomial_t", "The Chebyshev polynomial of the first kind T_n",
    "tensor([-1.])")
chebyshev_polynomial_u = _polynomial(
    "chebyshev_polynomial_u", "The Chebyshev polynomial of the second kind U_n",
    "tensor([-1.])")
chebyshev_polynomial_v = _polynomial(
    "chebyshev_polynomial_v", "The Chebyshev polynomial of the third kind V_n",
    "tensor([-1.])")
chebyshev_polynomial_w = _polynomial(
    "chebyshev_polynomial_w", "The Chebyshev polynomial of the fourth kind W_n",
    "tensor([-1.])")
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", "The shifted Chebyshev polynomial T*_n(x) = T_n(2x - 1)",
    "tensor([-0.])")
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", "The shifted Chebyshev polynomial U*_n(x) = U_n(2x - 1)",
    "tensor([-0.])")
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", "The shifted Chebyshev polynomial V*_n(x) = V_n(2x - 1)",
    "tensor([1.])")
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", "The shifted Chebyshev polynomial W*_n(x) = W_n(2x - 1)",
    "tensor([-1.])")
hermite_polynomial_h = _polynomial(
    "hermite_polynomial_h", "The physicists' Hermite polynomial H_n (NaN above degree 128 "
    "in float32, 512 in float64, as PyTorch)", "tensor([-5.])")
hermite_polynomial_he = _polynomial(
    "hermite_polynomial_he", "The probabilists' Hermite polynomial He_n (NaN above degree "
    "128 in float32, 512 in float64, as PyTorch)", "tensor([-1.3750])")
laguerre_polynomial_l = _polynomial(
    "laguerre_polynomial_l", "The Laguerre polynomial L_n", "tensor([-0.1458])")
legendre_polynomial_p = _polynomial(
    "legendre_polynomial_p", "The Legendre polynomial P_n", "tensor([-0.4375])")

# ---- the top-level functions under their torch.special names ----------------------------------
digamma = psi = F.digamma
erf = F.erf
erfc = F.erfc
erfinv = F.erfinv
exp2 = F.exp2
gammainc = F.igamma
gammaincc = F.igammac
expit = F.sigmoid
expm1 = F.expm1
gammaln = F.lgamma
i0 = F.i0
log1p = F.log1p
logit = F.logit
multigammaln = F.mvlgamma
polygamma = F.polygamma
round = F.round
sinc = F.sinc
xlogy = F.xlogy


def softmax(input, dim, *, dtype=None):
    """``torch.special.softmax``: ``ember.softmax`` with ``dim`` required."""
    return F.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """``torch.special.log_softmax``: ``ember.log_softmax`` with ``dim`` required."""
    return F.log_softmax(input, dim, dtype)


def logsumexp(input, dim, keepdim=False):
    """``torch.special.logsumexp``: log(sum(exp(input))) along ``dim``, computed stably."""
    return F.logsumexp(input, dim, keepdim)
