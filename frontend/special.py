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
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv",
    "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e",
    "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
    "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta",
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

# ---- the top-level functions under their torch.special names ----------------------------------
digamma = psi = F.digamma
erf = F.erf
erfc = F.erfc
erfinv = F.erfinv
exp2 = F.exp2
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
