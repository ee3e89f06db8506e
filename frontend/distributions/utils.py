"""Helpers shared by the distributions: broadcasting, probability/logit conversion, and the
special functions and triangular linear algebra they need, written as composites of ember ops
(so autograd differentiates them like any other expression).

>>> import ember
>>> from ember.distributions.utils import lgamma
>>> round(lgamma(ember.tensor([5.0], dtype=ember.float64)).item(), 10)  # log(4!)
3.1780538303
"""
import math
import numbers

import ember
from ember import Tensor
from ember.nn.init import _erfinv

__all__ = ["broadcast_all", "lazy_property", "logits_to_probs", "probs_to_logits", "clamp_probs",
           "lgamma", "digamma", "erfinv", "xlogy", "softplus", "cholesky", "solve_triangular",
           "sum_rightmost", "eps_of", "tiny_of", "vec_to_tril_matrix", "tril_matrix_to_vec"]

_EPS = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07,
        "float16": 0.0009765625, "bfloat16": 0.0078125}
_TINY = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38,
         "float16": 6.103515625e-05, "bfloat16": 1.1754943508222875e-38}
_MIN = {"float64": -1.7976931348623157e308, "float32": -3.4028234663852886e38,
        "float16": -65504.0, "bfloat16": -3.3895313892515355e38}


def _dtype_key(dtype) -> str:
    return str(dtype).split(".")[-1]


def eps_of(dtype) -> float:
    """Machine epsilon of a floating dtype (``torch.finfo(dtype).eps``)."""
    return _EPS[_dtype_key(dtype)]


def tiny_of(dtype) -> float:
    """Smallest positive normal number of a floating dtype (``torch.finfo(dtype).tiny``)."""
    return _TINY[_dtype_key(dtype)]


def min_of(dtype) -> float:
    """Most negative finite number of a floating dtype (``torch.finfo(dtype).min``)."""
    return _MIN[_dtype_key(dtype)]


def broadcast_all(*values):
    """Turn numbers into tensors (dtype of the first tensor argument, else the default dtype)
    and broadcast everything to one shape, as ``torch.distributions.utils.broadcast_all``."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "ember.Tensor or objects implementing __torch_function__.")
    options = {"dtype": ember.get_default_dtype()}
    for v in values:
        if isinstance(v, Tensor):
            options = {"dtype": v.dtype, "device": v.device}
            break
    tensors = [v if isinstance(v, Tensor) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*tensors)


class lazy_property:
    """A property computed on first access and then stored in the instance's ``__dict__``
    (so ``'probs' in d.__dict__`` tells whether it was given or derived, as in PyTorch)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp probabilities into [eps, 1 - eps] of their dtype."""
    eps = eps_of(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Logits to probabilities: sigmoid for binary, softmax over the last dim otherwise."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities to logits: log-odds for binary, log-probabilities otherwise."""
    clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(clamped) - ember.log1p(-clamped)
    return ember.log(clamped)


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) without overflow."""
    return x.clamp(min=0.0) + ember.log1p(ember.exp(-x.abs()))


def xlogy(x: Tensor, y: Tensor) -> Tensor:
    """x * log(y), with 0 * log(0) defined as 0."""
    x, y = broadcast_all(x, y)
    # only 0 * log(0) needs guarding; elsewhere x * log(y) keeps d/dx = log(y) at x == 0
    safe_y = ember.where((x == 0) & (y == 0), ember.ones_like(y), y)
    return x * ember.log(safe_y)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


# PyTorch's private spelling, imported by packages that build on torch.distributions
# (zuko: ``from torch.distributions.utils import _sum_rightmost``)
_sum_rightmost = sum_rightmost

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant, as torch.distributions.utils


def _standard_normal(shape, dtype, device) -> Tensor:
    """A tensor of ``shape`` drawn from the standard normal distribution (PyTorch's private
    helper of the same name, which gpytorch imports).

    Example:
        >>> _standard_normal((2, 3), dtype=ember.float32, device="cpu").shape
        ember.Size([2, 3])
    """
    return ember.empty(shape, dtype=dtype, device=device).normal_()


# ---------------------------------------------------------------------------------------------
# Special functions. ember has no lgamma/digamma kernels yet; these composites are accurate to
# ~1e-14 for positive arguments: shift the argument up by 12 with the recurrence
# Gamma(x + 1) = x Gamma(x), then sum the asymptotic (Stirling) series, whose first omitted
# term is below 1e-16 once the argument is >= 12. Autograd through lgamma gives the digamma
# series term by term, so gradients are equally accurate.
# ---------------------------------------------------------------------------------------------
_SHIFT = 12
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Stirling coefficients B_2k / (2k (2k - 1)) for 1/y, 1/y^3, ..., 1/y^13
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
# digamma series coefficients B_2k / (2k) for 1/y^2, 1/y^4, ..., 1/y^14
_DIGAMMA = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _check_positive_domain(x: Tensor, name: str):
    if not x.is_floating_point():
        raise TypeError(f"ember.distributions.utils.{name}: expected a floating tensor, got "
                        f"{x.dtype}")


def lgamma(x: Tensor) -> Tensor:
    """log|Gamma(x)| for x > 0 (NaN for x <= 0), accurate to ~1e-14 in float64.

    Example:
        >>> from ember.distributions.utils import lgamma
        >>> round(lgamma(ember.tensor([0.5], dtype=ember.float64)).item(), 12)  # log(sqrt(pi))
        0.572364942925
    """
    _check_positive_domain(x, "lgamma")
    shift = ember.zeros_like(x)
    for k in range(_SHIFT):
        shift = shift + ember.log(x + k)
    y = x + _SHIFT
    inv = 1.0 / y
    inv2 = inv * inv
    series = ember.zeros_like(x)
    for c in reversed(_STIRLING):
        series = series * inv2 + c
    stirling = (y - 0.5) * ember.log(y) - y + _HALF_LOG_2PI + series * inv
    return stirling - shift


def digamma(x: Tensor) -> Tensor:
    """The digamma function psi(x) = d/dx log Gamma(x) for x > 0, accurate to ~1e-14."""
    _check_positive_domain(x, "digamma")
    shift = ember.zeros_like(x)
    for k in range(_SHIFT):
        shift = shift + 1.0 / (x + k)
    y = x + _SHIFT
    inv2 = 1.0 / (y * y)
    series = ember.zeros_like(x)
    for c in reversed(_DIGAMMA):
        series = series * inv2 + c
    return ember.log(y) - 0.5 / y - series * inv2 - shift


def erfinv(z: Tensor) -> Tensor:
    """Inverse error function on (-1, 1), to float64 accuracy (three Newton steps)."""
    return _erfinv(z, newton_steps=3)


# ---------------------------------------------------------------------------------------------
# Triangular linear algebra over batches. Column/row recurrences vectorised over the batch
# dimensions; O(n) ember ops per column, meant for the small event sizes distributions use.
# ---------------------------------------------------------------------------------------------
def cholesky(a: Tensor) -> Tensor:
    """Lower Cholesky factor of a batch of symmetric positive-definite matrices (..., n, n).
    Non-positive-definite input gives NaN entries (see ``cholesky_ok``)."""
    n = a.shape[-1]
    if a.dim() < 2 or a.shape[-2] != n:
        raise ValueError(f"cholesky: expected a batch of square matrices, got shape "
                         f"{tuple(a.shape)}")
    rows = ember.arange(n, device=a.device)
    cols = []
    for j in range(n):
        v = a[..., :, j]
        for k in range(j):
            v = v - cols[k] * cols[k][..., j:j + 1]
        pivot = ember.sqrt(v[..., j:j + 1])
        col = ember.where(rows >= j, v / pivot, ember.zeros_like(v))
        cols.append(col)
    return ember.stack(cols, dim=-1)


def cholesky_ok(a: Tensor) -> Tensor:
    """Boolean tensor over the batch: True where ``a`` has a Cholesky factorisation."""
    with ember.no_grad():
        diag = cholesky(a).diagonal(dim1=-2, dim2=-1)
        return ((diag > 0) & ember.isfinite(diag)).all(-1)


def solve_triangular(lower: Tensor, b: Tensor) -> Tensor:
    """Solve L X = B for X with L lower triangular (..., n, n) and B (..., n, m), broadcasting
    the batch dimensions, by forward substitution."""
    n = lower.shape[-1]
    batch = ember.broadcast_shapes(tuple(lower.shape[:-2]), tuple(b.shape[:-2]))
    lower = lower.expand(tuple(batch) + (n, n))
    b = b.expand(tuple(batch) + tuple(b.shape[-2:]))
    rows = []
    for i in range(n):
        r = b[..., i, :]
        for k in range(i):
            r = r - lower[..., i, k:k + 1] * rows[k]
        rows.append(r / lower[..., i, i:i + 1])
    return ember.stack(rows, dim=-2)


def _tril_positions(n: int, diag: int):
    """Row-major (row, col) positions of the entries of an n x n matrix on or below ``diag``."""
    return [(i, j) for i in range(n) for j in range(n) if j <= i + diag]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """Fill the entries on and below diagonal ``diag`` of a square matrix, row by row, from the
    last dimension of ``vec``; the other entries are 0 (differentiable, no in-place writes)."""
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > eps_of(vec.dtype):
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    index = [[m] * n for _ in range(n)]
    for k, (i, j) in enumerate(_tril_positions(n, diag)):
        index[i][j] = k
    padded = ember.cat([vec, ember.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype,
                                         device=vec.device)], -1)
    return padded[..., ember.tensor(index, dtype=ember.int64, device=vec.device)]


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries on and below diagonal ``diag`` of the last two dims, row by row."""
    n = mat.shape[-1]
    positions = _tril_positions(n, diag)
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    index = ember.tensor([i * n + j for i, j in positions], dtype=ember.int64, device=mat.device)
    return flat[..., index]


# ---------------------------------------------------------------------------------------------
# Inverse trigonometric functions as composites (used only when ember has no kernel for them):
# reduce |x| <= 1 with atan(x) = pi/2 - atan(1/x), halve the angle twice with
# atan(x) = 2 atan(x / (1 + sqrt(1 + x^2))) so that |x| <= tan(pi/16), then sum the Taylor series
# (the first omitted term is below 1e-18).
# ---------------------------------------------------------------------------------------------
def atan(x: Tensor) -> Tensor:
    """Arctangent, elementwise (``ember.atan`` when ember provides it)."""
    if hasattr(ember, "atan"):
        return ember.atan(x)
    big = x.abs() > 1
    safe = ember.where(big, x, ember.ones_like(x))
    y = ember.where(big, 1.0 / safe, x)
    for _ in range(2):
        y = y / (1 + ember.sqrt(1 + y * y))
    y2 = y * y
    series = ember.zeros_like(y)
    for k in reversed(range(13)):
        series = series * y2 + ((-1) ** k) / (2 * k + 1)
    small = 4 * y * series
    return ember.where(big, x.sign() * (math.pi / 2) - small, small)


def acos(x: Tensor) -> Tensor:
    """Arccosine on [-1, 1] (``ember.acos`` when ember provides it)."""
    if hasattr(ember, "acos"):
        return ember.acos(x)
    # acos(x) = 2 atan(sqrt((1 - x) / (1 + x))), finite at x = -1 through the pi branch
    return 2 * atan(ember.sqrt((1 - x).clamp(min=0.0)) / ember.sqrt((1 + x).clamp(min=0.0)))
