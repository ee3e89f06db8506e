"""Reductions, scans, softmax and sorting; and the composites built on them: order
statistics (median, kthvalue, mode, quantile), scans with indices (cummax, cummin,
logcumsumexp), counting (bincount, histc, histogramdd), searching (searchsorted, bucketize,
isin, unique), statistics and distances (cov, corrcoef, cdist, dist, renorm), numerical
calculus (diff, trapezoid, gradient) and scatter_reduce / index_reduce.

Reduction kernels receive ``dims`` (sorted, non-negative) and write an ``out`` that keeps
the reduced dims as size 1; the dispatcher drops them for ``keepdim=False``.
"""
from __future__ import annotations

import math
import warnings

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..grad_mode import MODE, below_autograd
from ..schema import composite, defop, gradient
from .copy import linspace
from .index import cat, flip
from .linalg import matmul, mm

__all__ = []

E = O.elementwise


def _red(name, signature, kernel, promotion, primitive=False, differentiable=True):
    defop(name, "reduction", signature, kernel, promotion=promotion, primitive=primitive,
          differentiable=differentiable)


# ---- reductions ------------------------------------------------------------------------------
_red("sum", "sum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
     " -> Tensor", "(out, x, dims)", "sum", primitive=True)
_red("max", "amax(Tensor self, int[] dim=(), bool keepdim=False) -> Tensor",
     "(out, x, dims)", "default", primitive=True)
_red("argmax", "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     "(out, x, dim)", "long_out", primitive=True, differentiable=False)
_red("min", "amin(Tensor self, int[] dim=(), bool keepdim=False) -> Tensor",
     "(out, x, dims)", "default")
_red("argmin", "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     "(out, x, dim)", "long_out", differentiable=False)
_red("prod", "prod(Tensor self, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
     " -> Tensor", "(out, x, dims)", "sum")
_red("mean", "mean(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype="
     "None) -> Tensor", "(out, x, dims)", "float_only")
_red("logsumexp", "logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor",
     "(out, x, dims)", "int_to_float")
_red("var", "var(Tensor self, int[]? dim=None, *, Scalar correction=1, bool keepdim=False) "
     "-> Tensor", "(out, x, dims, correction)", "float_only")
_red("std", "std(Tensor self, int[]? dim=None, *, Scalar correction=1, bool keepdim=False) "
     "-> Tensor", "(out, x, dims, correction)", "float_only")
_red("norm", "norm(Tensor self, Scalar p=2, int[]? dim=None, bool keepdim=False) -> Tensor",
     "(composite only)", "none")
_red("all", "all(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     "(composite only)", "none", differentiable=False)
_red("any", "any(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     "(composite only)", "none", differentiable=False)


def _keep_shape(x, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(x.shape))


# Half types (float16, bfloat16) accumulate in float32 and round once at the end, as
# PyTorch's kernels do: a float16 sum of 70k ones overflows where their mean does not.
_HALF = (D.float16, D.bfloat16)


def _wide(x):
    """``x`` in the type the composites accumulate it in (float32 for half types)."""
    return O.cast(x, D.float32) if x.dtype in _HALF else x


def _narrow(y, dtype):
    """A wide result rounded back to the op's dtype."""
    return O.cast(y, dtype) if y.dtype is not dtype else y


def _flip_order(x):
    return E("neg", x) if x.dtype.is_floating_point else E("bitwise_not", x)


def _ordered(x):
    """``x`` in a dtype whose order ``_flip_order`` reverses: bool as uint8 0 / 1 (the cast
    also reads any nonzero byte of a bool as 1)."""
    return O.cast(x, D.uint8) if x.dtype is D.bool_ else x


@composite("min")
def _min(x, dims):
    return _narrow(_flip_order(O.reduce("max", _flip_order(_ordered(x)), dims, keepdim=True)),
                   x.dtype)


@composite("argmin")
def _argmin(x, dim):
    return O.arg_reduce("argmax", _flip_order(_ordered(x)), dim, keepdim=True)


@composite("prod")
def _prod(x, dims):
    """Pairwise products along each reduced dim (exact order-independent tree)."""
    y = _wide(x)
    for d in dims:
        n = y.shape[d]
        if n == 0:
            y = O.full(_keep_shape(y, (d,)), 1, y.dtype, y.device)
            continue
        while n > 1:
            h = n // 2
            head = E("mul", V.narrow(y, d, 0, h), V.narrow(y, d, h, h))
            y = cat([head, V.narrow(y, d, 2 * h, 1)], d) if n % 2 else head
            n = y.shape[d]
    return _narrow(y, x.dtype)


@composite("mean")
def _mean(x, dims):
    n = C.numel([x.shape[d] for d in dims])
    s = O.reduce("sum", _wide(x), dims, keepdim=True)
    return _narrow(E("div", s, n if n else math.nan), x.dtype)


@composite("logsumexp")
def _logsumexp(x, dims):
    m = O.reduce("max", x, dims, keepdim=True) if C.numel(x.shape) else \
        O.full(_keep_shape(x, dims), -math.inf, x.dtype, x.device)
    m = O.where(E("eq", E("abs", m), math.inf), 0.0, m)
    s = O.reduce("sum", E("exp", E("sub", x, m)), dims, keepdim=True)
    return E("add", E("log", s), m)


def _scaled_var(x, dims, correction):
    """(m, q) with var = m * q * m and std = m * sqrt(q): the deviations from the mean are
    divided by their largest magnitude m before they are squared, so that squares of
    deviations near 1e30 (float32) or 300 (float16) neither overflow nor, near 1e-30,
    underflow. Half inputs are computed in float32."""
    xw = _wide(x)
    n = C.numel([x.shape[d] for d in dims])
    d = E("sub", xw, E("div", O.reduce("sum", xw, dims, keepdim=True), n))
    m = O.reduce("max", E("abs", d), dims, keepdim=True)
    # no scaling where every deviation is 0 (constant input) or m is inf / NaN
    m = O.where(E("logical_and", E("gt", m, 0), E("lt", m, math.inf)), m, 1.0)
    y = E("div", d, m)
    return m, E("div", O.reduce("sum", E("mul", y, y), dims, keepdim=True),
                max(n - correction, 0))


def _empty_spread(x, dims):
    """var / std over an empty dim: NaN (PyTorch), without taking the max of nothing."""
    if any(x.shape[d] == 0 for d in dims):
        return O.full(_keep_shape(x, dims), math.nan, x.dtype, x.device)
    return None


@composite("var")
def _var(x, dims, correction=1):
    empty = _empty_spread(x, dims)
    if empty is not None:
        return empty
    m, q = _scaled_var(x, dims, correction)
    return _narrow(E("mul", E("mul", m, q), m), x.dtype)


@composite("std")
def _std(x, dims, correction=1):
    empty = _empty_spread(x, dims)
    if empty is not None:
        return empty
    m, q = _scaled_var(x, dims, correction)
    return _narrow(E("mul", m, E("sqrt", q)), x.dtype)


def std(self, dim=None, correction=1, keepdim=False):
    """The standard deviation over ``dim``: ``std(x, (0,), correction=1)``."""
    return O.reduce("std", self, dim, keepdim, correction=correction)


@composite("norm")
@O.recorded("norm")
def norm(self, p=2, dim=None, keepdim=False):
    x = self
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.torch_name(x.dtype)}")
    if x.dtype in _HALF:    # sums of powers in float32, rounded once (PyTorch)
        return O.cast(norm(O.cast(x, D.float32), p, dim, keepdim), x.dtype)
    if C.numel(x.shape) == 0 and (p < 0 or p == math.inf):
        _no_identity(x, p, dim)
    a = E("abs", x)
    if p == math.inf:
        return O.reduce("max", a, dim if dim is not None else (), keepdim)
    if p == -math.inf:
        return O.reduce("min", a, dim if dim is not None else (), keepdim)
    if p == 0:
        return O.reduce("sum", O.cast(E("ne", x, 0), x.dtype), dim, keepdim)
    if p == 1:
        return O.reduce("sum", a, dim, keepdim)
    if p == 2:
        return E("sqrt", O.reduce("sum", E("mul", x, x), dim, keepdim))
    return E("pow", O.reduce("sum", E("pow", a, p), dim, keepdim), 1.0 / p)


def _no_identity(x, p, dim):
    """PyTorch's errors for a max / min / negative-power norm (no identity) of nothing."""
    given = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not given:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty "
                           f"tensor because the operation does not have an identity")
    # the first empty dim as the caller wrote it; PyTorch checks this before repeated dims
    for g in given:
        if x.shape[C.normalize_dim(g, len(x.shape))] == 0:
            # (PyTorch's message really has no space before "because")
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the "
                               f"dimension {g}because this dimension is empty and the "
                               f"operation does not have an identity")


def _all_any(x, dim, keepdim, is_all):
    if isinstance(dim, (list, tuple)) and not dim:
        # all(x, dim=()) reduces nothing (PyTorch): x != 0 elementwise, x's shape
        res = E("ne", x, 0)
        return O.cast(res, D.uint8) if x.dtype is D.uint8 else res
    b = O.cast(x, D.bool_) if x.dtype is not D.bool_ else x
    dims = C.normalize_dims(dim, len(x.shape), "all" if is_all else "any")
    if any(x.shape[d] == 0 for d in dims) or (not dims and C.numel(x.shape) == 0):
        # an empty reduction: all() of nothing is True, any() of nothing is False
        shape = _keep_shape(x, dims) if keepdim else \
            tuple(s for i, s in enumerate(x.shape) if i not in dims)
        return O.full(shape, is_all, D.uint8 if x.dtype is D.uint8 else D.bool_, x.device)
    res = O.reduce("min" if is_all else "max", O.cast(b, D.uint8), dim, keepdim)
    # PyTorch keeps uint8 for uint8 input, bool otherwise
    return res if x.dtype is D.uint8 else O.cast(res, D.bool_)


@composite("all")
def all_(x, dim=None, keepdim=False):
    return _all_any(x, dim, keepdim, True)


@composite("any")
def any_(x, dim=None, keepdim=False):
    return _all_any(x, dim, keepdim, False)


# ---- reduction gradients ------------------------------------------------------------------------
def _dims(dim, shape):
    return C.normalize_dims(dim, len(shape))


def _unreduce(g, dim, keepdim, shape):
    """A reduced gradient brought back to ``shape`` (dims re-inserted, then broadcast)."""
    if not keepdim:
        for d in _dims(dim, shape):
            g = V.unsqueeze(g, d)
    return V.expand(g, tuple(shape))


def _kept(t, dim, keepdim, shape):
    """A reduction's result with its reduced dims back as size 1."""
    if not keepdim:
        for d in _dims(dim, shape):
            t = V.unsqueeze(t, d)
    return t


@gradient("sum")
def _(g, self_shape, dim=None, keepdim=False):
    return (_unreduce(g, dim, keepdim, self_shape),)


@gradient("mean")
def _(g, self_shape, dim=None, keepdim=False):
    n = C.numel([self_shape[d] for d in _dims(dim, self_shape)])
    return (_unreduce(g, dim, keepdim, self_shape) / n,)


@gradient("max", "min")
def _(g, self, result, dim=(), keepdim=False):
    """Ties share the gradient equally (PyTorch's amax/amin: scale_grad_by_count)."""
    mask = O.to(self == _kept(result, dim, keepdim, self.shape), None, g.dtype)
    count = O.reduce("sum", mask, _dims(dim, self.shape), True)
    return ((_kept(g, dim, keepdim, self.shape) / count) * mask,)


def _prod_safe_zeros(g, x, d):
    """g times the product of the other elements, without dividing by x (PyTorch's
    prod_safe_zeros_backward): exclusive cumulative products from both ends."""
    n = x.shape[d]
    ones = O.full(_keep_shape(x, (d,)), 1, x.dtype, x.device)
    left = O.scan("cumprod", cat([ones, V.narrow(x, d, 0, n - 1)], d), d)
    right = flip(O.scan("cumprod", cat([ones, flip(V.narrow(x, d, 1, n - 1), (d,))], d), d),
                 (d,))
    return g * (left * right)


@gradient("prod")
def _(g, self, result, dim=None, keepdim=False):
    """PyTorch's prod_backward: ``g * result / x`` when the input holds no zero at all,
    otherwise the products of the other elements (no host sync: both are computed and
    the input's any-zero flag picks one)."""
    x = self
    if not x.shape:
        return (g,)
    if C.numel(x.shape) == 0:
        return (_unreduce(g, dim, keepdim, x.shape),)
    zero = x == 0
    if dim is None:
        safe = V.reshape(_prod_safe_zeros(g, V.reshape(x, (-1,)), 0), x.shape)
        if not MODE.grad:  # PyTorch: two zeros or more give zeros (first-order backward)
            count = O.reduce("sum", O.cast(zero, D.int64))
            safe = O.where(count > 1, 0.0, safe)
        return (O.where(any_(zero), safe, g * (result / x)),)
    d = C.normalize_dim(dim, len(x.shape))
    gk = _kept(g, d, keepdim, x.shape)
    return (O.where(any_(zero), _prod_safe_zeros(gk, x, d),
                    gk * (_kept(result, d, keepdim, x.shape) / x)),)


@gradient("logsumexp")
def _(g, self, result, dim, keepdim=False):
    return (_unreduce(g, dim, keepdim, self.shape)
            * E("exp", self - _kept(result, dim, keepdim, self.shape)),)


def _var_backward(g, x, dim, keepdim, correction):
    """PyTorch's var_backward: ``2 / (n - correction) * g * (x - mean)``. Over all
    elements with n <= correction that is NaN where x equals the mean and inf elsewhere;
    over ``dim`` a zero ``n - correction`` divides by zero (inf)."""
    if dim is None or not x.shape:
        dof = C.numel(x.shape) - correction
        mu = O.reduce("mean", x)
        if dof <= 0:
            return g * O.where(x == mu, math.nan, math.inf)
        return (2.0 / dof) * g * (x - mu)
    dims = _dims(dim, x.shape)
    dof = C.numel([x.shape[d] for d in dims]) - correction
    factor = 2.0 / dof if dof else math.inf
    return factor * _kept(g, dim, keepdim, x.shape) * (x - O.reduce("mean", x, dims, True))


@gradient("var")
def _(g, self, dim=None, keepdim=False, correction=1):
    return (_var_backward(g, self, dim, keepdim, correction),)


@gradient("std")
def _(g, self, result, dim=None, keepdim=False, correction=1):
    """PyTorch's std_backward: var's gradient of ``g / (2 std)``, 0 where std is 0 (a
    constant input gives 0, not 0 / 0)."""
    gv = O.where(result == 0, 0.0, g / (result * 2))
    return (_var_backward(gv, self, dim, keepdim, correction),)


@gradient("norm")
def _norm_backward(g, self, result, p=2, dim=None, keepdim=False):
    """PyTorch's norm_backward, branch by branch (0 where the norm is 0; the max norm's
    gradient goes to the maxima and to NaNs)."""
    x = self
    if p == 0:  # PyTorch's formula gives no gradient at all (``.grad`` stays None)
        return (None,)
    gk = _kept(g, dim, keepdim, x.shape)
    nk = _kept(result, dim, keepdim, x.shape)
    if p == 1:
        return (E("sign", x) * gk,)
    if p == 2:
        return (gk * O.where(nk == 0, 0.0, x / nk),)
    a = E("abs", x)
    if math.isinf(p):
        mask = O.to((a == nk) | E("isnan", a), None, g.dtype)
        count = O.reduce("sum", mask, _dims(dim, x.shape), True)
        return (E("sign", x) * ((gk / count) * mask),)
    if p < 1:
        scaled = E("sign", x) * O.where(x == 0, 0.0, E("pow", a, p - 1))
        return (scaled * gk * E("pow", nk, 1 - p),)
    scaled = E("sign", x) * E("pow", a, p - 1) if p < 2 else x * E("pow", a, p - 2)
    return (scaled * O.where(nk == 0, 0.0, gk / E("pow", nk, p - 1)),)


# ---- scans -------------------------------------------------------------------------------------
defop("cumsum", "scan", "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
      "(out, x, dim)", promotion="sum")
defop("cumprod", "scan", "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
      "(out, x, dim)", promotion="sum")


def _scan(x, dim, binop):
    """Hillis–Steele inclusive scan: log2(n) passes of shifted elementwise ops."""
    y = O.clone(x)
    n = x.shape[dim]
    k = 1
    while k < n:
        nxt = O.clone(y)
        E(binop, V.narrow(y, dim, k, n - k), V.narrow(y, dim, 0, n - k),
          out=V.narrow(nxt, dim, k, n - k))
        y = nxt
        k *= 2
    return y


@composite("cumsum")
def _cumsum(x, dim):
    return _narrow(_scan(_wide(x), dim, "add"), x.dtype)


@composite("cumprod")
def _cumprod(x, dim):
    return _narrow(_scan(_wide(x), dim, "mul"), x.dtype)


def _scan_dim(dim, shape):
    return C.normalize_dim(dim, len(shape)) if shape else 0


@gradient("cumsum")
def _(g, self_shape, dim):
    d = _scan_dim(dim, self_shape)
    if not self_shape:
        return (g,)
    return (flip(O.scan("cumsum", flip(g, (d,)), d), (d,)),)


def _reversed_cumsum(t, d):
    return flip(O.scan("cumsum", flip(t, (d,)), d), (d,))


@gradient("cumprod")
def _(g, self, result, dim):
    """PyTorch's cumprod_backward. Before the first zero of a line, d out_j / d x_i =
    out_j / x_i (j >= i); at the first zero, the product of the elements before it times
    the sum over j up to the second zero of g_j times the product of the elements
    between; after it, 0."""
    x = self
    d = _scan_dim(dim, x.shape)
    if C.numel(x.shape) <= 1 or x.shape[d] == 1:
        return (g,)
    n = x.shape[d]
    zero = x == 0
    seen = O.scan("cumsum", O.cast(zero, D.int64), d)     # zeros up to and including here
    before = seen == 0
    part = _reversed_cumsum(O.where(before, result * g, 0.0), d) / O.where(before, x, 1.0)
    window = seen == 1
    first = window & zero
    between = window & E("logical_not", zero)
    ones = O.full(_keep_shape(x, (d,)), 1, x.dtype, x.device)
    left = cat([ones, V.narrow(result, d, 0, n - 1)], d)  # the product before each element
    s = O.reduce("sum", O.scan("cumprod", O.where(between, x, 1.0), d)
                 * O.where(window, g, 0.0), d, True)
    return (O.where(before, part, O.where(first, s * left, 0.0)),)


# ---- softmax -------------------------------------------------------------------------------------
defop("softmax", "softmax", "softmax(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
      "(out, x, dim)", promotion="float_only")
defop("log_softmax", "softmax", "log_softmax(Tensor self, int dim, *, ScalarType? dtype=None) "
      "-> Tensor", "(out, x, dim)", promotion="float_only")


@composite("softmax")
def _softmax(x, dim):
    if x.dtype in _HALF:
        return O.cast(_softmax(O.cast(x, D.float32), dim), x.dtype)
    m = O.reduce("max", x, dim, keepdim=True) if C.numel(x.shape) else x
    e = E("exp", E("sub", x, m))
    return E("div", e, O.reduce("sum", e, dim, keepdim=True))


@composite("log_softmax")
def _log_softmax(x, dim):
    if x.dtype in _HALF:
        return O.cast(_log_softmax(O.cast(x, D.float32), dim), x.dtype)
    m = O.reduce("max", x, dim, keepdim=True) if C.numel(x.shape) else x
    z = E("sub", x, m)
    return E("sub", z, E("log", O.reduce("sum", E("exp", z), dim, keepdim=True)))


@gradient("softmax")
def _(g, result, dim):
    d = _scan_dim(dim, result.shape)
    return (result * (g - O.reduce("sum", g * result, d, True)),)


@gradient("log_softmax")
def _(g, result, dim):
    d = _scan_dim(dim, result.shape)
    return (g - E("exp", result) * O.reduce("sum", g, d, True),)


# ---- sorting -----------------------------------------------------------------------------------
defop("sort", "sort", "sort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False)"
      " -> (Tensor values, Tensor indices)", "(values, indices, x, dim, descending, stable)",
      promotion="none", primitive=True)
defop("topk", "sort", "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True)"
      " -> (Tensor values, Tensor indices)", "(composite only)", promotion="none")


@gradient("sort")
def _(g, self_shape, result1, dim=-1):
    """The values' gradient goes back to the positions the indices name."""
    if not self_shape:
        return (g,)
    d = C.normalize_dim(dim, len(self_shape))
    return (O.scatter(O.zeros(self_shape, g.dtype, g.device), d, result1, g, reduce="add"),)


@composite("topk")
def topk(x, k, dim=-1, largest=True, sorted=True):
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "topk")   # a 0-d tensor takes dim -1 or 0 (PyTorch)
    n = x.shape[d] if nd else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range (k={k}, dimension {d} has size {n})")
    values, indices = O.sort(x, d, descending=largest, stable=True)
    if not nd:
        return values, indices
    return V.narrow(values, d, 0, k), V.narrow(indices, d, 0, k)


# ==== scans with indices, order statistics, counting, searching, statistics ======================
# Composites over the primitives above (sort, gather, scatter, cumsum, elementwise ops): they
# run on every backend. Ops with data-dependent output sizes (unique, bincount) read one number
# back from the device.

_range = range   # (histogram's parameter ``range`` shadows the builtin)


def _arange(n, device):
    return O.arange(0, n, 1, D.int64, device)


def _positions(x, d):
    """0, 1, ..., n - 1 along dim ``d``, broadcast to ``x``'s shape (int64)."""
    nd = len(x.shape)
    pos = V.reshape(_arange(x.shape[d], x.device), tuple(-1 if i == d else 1
                                                         for i in range(nd)))
    return C.expand_to(pos, x.shape)


def _shifted(t, d, k):
    """(earlier, later): the elements ``k`` apart along ``d``, for one Hillis–Steele pass."""
    n = t.shape[d]
    return V.narrow(t, d, 0, n - k), V.narrow(t, d, k, n - k)


def _isnan(x):
    if x.dtype.is_floating_point:
        return E("isnan", x)
    return O.zeros(x.shape, D.bool_, x.device)


def _nonempty_dim(name, x, d):
    if x.shape and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _keep_or_squeeze(t, d, keepdim):
    return t if keepdim else V.squeeze(t, d)


# ---- cummax / cummin / logcumsumexp -----------------------------------------------------------
defop("cummax", "scan", "cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)",
      "(composite only)", promotion="none")
defop("cummin", "scan", "cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)",
      "(composite only)", promotion="none")
defop("logcumsumexp", "scan", "logcumsumexp(Tensor self, int dim) -> Tensor",
      "(composite only)", promotion="none")


def _cum_extreme_indices(x, d, largest):
    """The index of the running max (min) along ``d``: a later equal element wins (PyTorch's
    ``>=``), and so does a later NaN. (value, index) pairs are combined in
    log2(n) Hillis–Steele passes; the combination is associative."""
    v = _ordered(x)
    idx = _positions(x, d)
    n = x.shape[d]
    k = 1
    while k < n:
        (va, vb), (ia, ib) = _shifted(v, d, k), _shifted(idx, d, k)
        take = E("ge", vb, va) if largest else E("le", vb, va)
        if x.dtype.is_floating_point:
            take = E("logical_or", E("isnan", vb),
                     E("logical_and", E("logical_not", E("isnan", va)), take))
        v = cat([V.narrow(v, d, 0, k), O.where(take, vb, va)], d)
        idx = cat([V.narrow(idx, d, 0, k), O.where(take, ib, ia)], d)
        k *= 2
    return idx


def _cum_extreme(name, x, dim, largest):
    d = C.normalize_dim(dim, len(x.shape), name)
    if not x.shape:
        return O.clone(x), O.zeros((), D.int64, x.device)
    with below_autograd():
        idx = _cum_extreme_indices(x, d, largest)
    # the values gathered at the indices: the gradient goes to the element each one names
    return O.gather(x, d, idx), idx


@composite("cummax")
def cummax(x, dim):
    return _cum_extreme("cummax", x, dim, True)


@composite("cummin")
def cummin(x, dim):
    return _cum_extreme("cummin", x, dim, False)


def _logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow; equal infinities give themselves."""
    hi, lo = E("maximum", a, b), E("minimum", a, b)
    gap = O.where(E("eq", a, b), 0.0, E("sub", lo, hi))
    return E("add", hi, E("log1p", E("exp", gap)))


@composite("logcumsumexp")
@O.recorded("logcumsumexp")
def logcumsumexp(self, dim):
    """A Hillis–Steele scan of logaddexp: no term underflows as ``log(cumsum(exp(x - m)))``
    would for elements far below the maximum."""
    x = self
    d = C.normalize_dim(dim, len(x.shape), "logcumsumexp")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{_tname(x.dtype)}'")
    if x.dtype in _HALF:
        return O.to(logcumsumexp(O.to(x, None, D.float32), d), None, x.dtype)
    if not x.shape:
        return O.clone(x)
    y, n, k = x, x.shape[d], 1
    while k < n:
        a, b = _shifted(y, d, k)
        y = cat([V.narrow(y, d, 0, k), _logaddexp(a, b)], d)
        k *= 2
    return O.clone(y) if y is x else y


#: the most negative finite value, PyTorch's stand-in for log(0) in logcumsumexp_backward
_LOWEST = {D.float64: -1.7976931348623157e308, D.float32: -3.4028234663852886e38}


@gradient("logcumsumexp")
def _(g, self, result, dim):
    """PyTorch's logcumsumexp_backward: exp(reverse logcumsumexp(log|g| - result) + self),
    for the positive and the negative parts of ``g`` (log 0 taken as the lowest finite
    value): infinite inputs give NaN, and huge ones the rounding PyTorch's has."""
    if not self.shape or C.numel(self.shape) == 0:
        return (g,)
    if g.dtype in _HALF:
        out = _logcumsumexp_grad(O.cast(g, D.float32), O.cast(self, D.float32),
                                 O.cast(result, D.float32), dim)
        return (O.cast(out, g.dtype),)
    return (_logcumsumexp_grad(g, self, result, dim),)


def _logcumsumexp_grad(g, x, result, dim):
    d = C.normalize_dim(dim, len(x.shape), "logcumsumexp")
    lowest = _LOWEST[g.dtype]
    log_abs = E("log", E("abs", g))
    parts = []
    for keep in (E("gt", g, 0), E("lt", g, 0)):
        t = E("sub", O.where(keep, log_abs, lowest), result)
        t = flip(logcumsumexp(flip(t, (d,)), d), (d,))
        parts.append(E("exp", E("add", t, x)))
    return E("sub", parts[0], parts[1])


# ---- median, nanmedian, kthvalue, mode --------------------------------------------------------
defop("median", "reduction", "median(Tensor self) -> Tensor", "(composite only)",
      promotion="none")
defop("nanmedian", "reduction", "nanmedian(Tensor self) -> Tensor", "(composite only)",
      promotion="none")
defop("median_dim", "reduction", "median.dim(Tensor self, int dim, bool keepdim=False) -> "
      "(Tensor values, Tensor indices)", "(composite only)", promotion="none")
defop("nanmedian_dim", "reduction", "nanmedian.dim(Tensor self, int dim, bool keepdim=False) "
      "-> (Tensor values, Tensor indices)", "(composite only)", promotion="none")
defop("kthvalue", "reduction", "kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) "
      "-> (Tensor values, Tensor indices)", "(composite only)", promotion="none")
defop("mode", "reduction", "mode(Tensor self, int dim=-1, bool keepdim=False) -> "
      "(Tensor values, Tensor indices)", "(composite only)", promotion="none")


def _count_not_nan(s, d):
    return O.reduce("sum", E("logical_not", _isnan(s)), d, keepdim=True)


def _no_bool(kernel, x):
    if x.dtype is D.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _median_all(self, ignore_nan):
    _no_bool("median_cpu", self)
    flat = V.reshape(self, (-1,))
    n = flat.shape[0]
    if n == 0:   # NaN; an integer type holds PyTorch's NaN-converted lowest value
        return O.full((), math.nan if self.dtype.is_floating_point else O._lowest(self.dtype),
                      self.dtype, self.device)
    with below_autograd():
        s = O.sort(flat)[0]          # NaNs sort last
        if ignore_nan:
            pos = E("div", E("sub", _count_not_nan(s, 0), 1), 2, rounding_mode="floor")
            pos = E("maximum", pos, 0)
            return V.reshape(O.gather(s, 0, pos), ())
        v = O.clone(V.select(s, 0, (n - 1) // 2))
        if self.dtype.is_floating_point:
            v = O.where(any_(E("isnan", flat)), math.nan, v)
        return v


@composite("median")
@O.recorded("median")
def median(self):
    """The lower median of all elements; NaN when there is a NaN (PyTorch)."""
    return _median_all(self, False)


@composite("nanmedian")
@O.recorded("nanmedian")
def nanmedian(self):
    """The lower median of the elements that are not NaN."""
    return _median_all(self, True)


@gradient("median", "nanmedian")
def _(g, self, result):
    """PyTorch's evenly_distribute_backward: the elements equal to the median (the NaNs,
    when the median is NaN) share the gradient."""
    mask = E("eq", self, result)
    if self.dtype.is_floating_point:
        mask = E("logical_or", mask, E("logical_and", E("isnan", self), E("isnan", result)))
    m = O.to(mask, None, g.dtype)
    return (m * (g / O.reduce("sum", m)),)


def _pick_sorted(x, d, pos, keepdim, order=None):
    """(values, indices) of the elements at sorted positions ``pos`` (kept dim) along ``d``
    (``order``: the stable sort's indices, when already known): the values are gathered
    from ``x`` so that the gradient reaches the chosen element."""
    with below_autograd():
        if order is None:
            order = O.sort(x, d, stable=True)[1]
        idx = O.gather(order, d, pos)
    return (_keep_or_squeeze(O.gather(x, d, idx), d, keepdim),
            _keep_or_squeeze(idx, d, keepdim))


def _zero_d_pair(x):
    return O.clone(x), O.zeros((), D.int64, x.device)


def _median_dim(name, x, dim, keepdim, ignore_nan):
    _no_bool("median_out", x)
    d = C.normalize_dim(dim, len(x.shape), name)
    if not x.shape:
        return _zero_d_pair(x)
    _nonempty_dim(name, x, d)
    n = x.shape[d]
    with below_autograd():
        s, order = O.sort(x, d, stable=True)
        count = _count_not_nan(s, d)
        if ignore_nan:
            pos = E("maximum", E("div", E("sub", count, 1), 2, rounding_mode="floor"), 0)
        else:
            # a line with a NaN: its first NaN (stably sorted to the count of the others)
            pos = O.where(E("lt", count, n), count, (n - 1) // 2)
    return _pick_sorted(x, d, pos, keepdim, order)


@composite("median_dim")
def median_dim(x, dim, keepdim=False):
    return _median_dim("median", x, dim, keepdim, False)


@composite("nanmedian_dim")
def nanmedian_dim(x, dim, keepdim=False):
    return _median_dim("nanmedian", x, dim, keepdim, True)


@composite("kthvalue")
def kthvalue(x, k, dim=-1, keepdim=False):
    """The k-th smallest element along ``dim`` (NaN counts as the largest)."""
    _no_bool("kthvalue_cpu", x)
    d = C.normalize_dim(dim, len(x.shape), "kthvalue")
    _nonempty_dim("kthvalue", x, d)
    n = x.shape[d] if x.shape else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if not x.shape:
        return _zero_d_pair(x)
    pos = O.full(_keep_shape(x, (d,)), k - 1, D.int64, x.device)
    return _pick_sorted(x, d, pos, keepdim)


def _runs(s, d):
    """For sorted ``s``: True where an element equals the one before it along ``d`` (a NaN
    equals nothing, as in PyTorch's ``!=`` between neighbours)."""
    a, b = _shifted(s, d, 1)
    same = E("eq", a, b)
    first = O.zeros(_keep_shape(s, (d,)), D.bool_, s.device)
    return cat([first, same], d)


def _run_starts(same, d):
    """The position where each element's run of equal values starts."""
    pos = _positions(same, d)
    starts = O.where(same, 0, pos)
    return O.gather(starts, d, _cum_extreme_indices(starts, d, True))


def _insertion_sorted(x, d):
    """(values, indices) of ``x`` along ``d`` in the order PyTorch's CPU mode sees them: an
    insertion sort by ``<`` (what std::sort does for up to 16 elements). A NaN compares
    false both ways, so a NaN stays where it is and stops the elements inserted after it
    (unless smaller than the first element), and the order depends on where NaNs are.
    Equal values keep their order (stable), so a run's last element is its last
    occurrence."""
    n = x.shape[d]
    s, idx = x, _positions(x, d)
    pos = _positions(x, d)
    for i in _range(1, n):
        v = V.narrow(s, d, i, 1)
        front = E("lt", v, V.narrow(s, d, 0, 1))
        # the last element before i that v is not smaller than: v goes right after it
        stop = O.where(E("logical_not", E("lt", v, V.narrow(s, d, 0, i))),
                       V.narrow(pos, d, 0, i), -1)
        at = O.where(front, 0, E("add", O.reduce("max", stop, (d,), keepdim=True), 1))
        shift = E("logical_and", E("gt", pos, at), E("le", pos, i))
        src = O.where(E("eq", pos, at), i, O.where(shift, E("sub", pos, 1), pos))
        s, idx = O.gather(s, d, src), O.gather(idx, d, src)
    return s, idx


@composite("mode")
def mode(x, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the
    index of its last occurrence. A NaN equals nothing, not even another NaN (a run of its
    own); with NaNs in a line of up to 16 elements the lines are ordered as PyTorch's CPU
    kernel orders them (``_insertion_sorted``), so a NaN first in its line is its mode when
    no value repeats. (Over 16, PyTorch's std::sort with NaNs has no defined order; these
    lines are sorted with NaNs last.)"""
    d = C.normalize_dim(dim, len(x.shape), "mode")
    if not x.shape:
        return _zero_d_pair(x)
    _nonempty_dim("mode", x, d)
    with below_autograd():
        if x.dtype.is_floating_point and x.shape[d] <= 16:
            s, order = _insertion_sorted(x, d)
        else:
            s, order = O.sort(x, d, stable=True)
        pos = _positions(s, d)
        run = E("sub", pos, _run_starts(_runs(s, d), d))
        best = O.arg_reduce("argmax", run, d, keepdim=True)   # the first longest run's end
        idx = O.gather(order, d, best)
    return (_keep_or_squeeze(O.gather(x, d, idx), d, keepdim),
            _keep_or_squeeze(idx, d, keepdim))


# ---- quantile ---------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")
defop("quantile", "reduction", "quantile(Tensor self, Tensor q, int? dim=None, bool keepdim="
      "False, *, str interpolation='linear') -> Tensor", "(composite only)", promotion="none")
defop("nanquantile", "reduction", "nanquantile(Tensor self, Tensor q, int? dim=None, bool "
      "keepdim=False, *, str interpolation='linear') -> Tensor", "(composite only)",
      promotion="none")


def _quantile_checks(name, x, q, interpolation):
    if C.numel(x.shape) == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if O._is_t(q):
        if len(q.shape) > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if x.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if O._is_t(q):
        if q.dtype is not x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q.device != x.device:
            raise RuntimeError(f"{name}() q tensor must be on the same device as the input "
                               f"tensor")
    elif not 0 <= q <= 1:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    if O._is_t(q):
        inside = E("logical_and", E("ge", q, 0), E("le", q, 1))
        if not O.item(all_(inside)):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")


def _quantile(name, x, q, dim, keepdim, interpolation, ignore_nan):
    """PyTorch's algorithm: sort, rank ``q * (n - 1)`` (n: the non-NaN count for
    nanquantile; a line with a NaN gives NaN for quantile), then gather and interpolate."""
    _quantile_checks(name, x, q, interpolation)
    scalar_q = not O._is_t(q) or not q.shape
    qt = q if O._is_t(q) else O.full((), q, x.dtype, x.device)
    qv = V.reshape(qt, (-1,))
    nd = len(x.shape)
    if dim is None:
        xs = V.reshape(x, (-1,))
    else:
        d = C.normalize_dim(dim, nd, name)
        xs = V.movedim(x, d, -1) if nd else V.reshape(x, (1,))
    n = xs.shape[-1]
    with below_autograd():
        order = O.sort(xs, -1, stable=True)[1]
    s = O.gather(xs, -1, order)     # the sorted values, differentiable
    lead = xs.shape[:-1]
    qb = V.reshape(qv, (1,) * len(lead) + (qv.shape[0],))
    with below_autograd():
        nan = _isnan(s)
        if ignore_nan:
            count = O.reduce("sum", E("logical_not", nan), -1, keepdim=True)
            ranks = E("mul", qb, E("sub", count, 1))
            ranks = O.where(E("lt", ranks, 0), 0.0, ranks)
        else:
            ranks = C.expand_to(E("mul", qb, n - 1), lead + (qv.shape[0],))
            ranks = O.where(any_(nan, -1, True), float(n - 1), ranks)
        if interpolation == "lower":
            ranks = E("floor", ranks)
        elif interpolation == "higher":
            ranks = E("ceil", ranks)
        elif interpolation == "nearest":
            ranks = E("round", ranks)
        below = O.cast(ranks, D.int64)
        above = O.cast(E("ceil", ranks), D.int64)
    res = O.gather(s, -1, below)
    if interpolation in ("linear", "midpoint"):
        w = O.full(ranks.shape, 0.5, ranks.dtype, x.device) if interpolation == "midpoint" \
            else E("sub", ranks, O.cast(below, ranks.dtype))
        res = E("lerp", res, O.gather(s, -1, above), w)
    # (lead..., nq) -> (nq, out_shape...)
    res = V.movedim(res, -1, 0)
    if dim is None:
        if keepdim:
            res = V.reshape(res, (res.shape[0],) + (1,) * nd)
    elif keepdim and nd:
        res = V.unsqueeze(res, d + 1)
    return V.select(res, 0, 0) if scalar_q else res


@composite("quantile")
def quantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile("quantile", x, q, dim, keepdim, interpolation, False)


@composite("nanquantile")
def nanquantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile("nanquantile", x, q, dim, keepdim, interpolation, True)


# ---- aminmax ----------------------------------------------------------------------------------
defop("aminmax", "reduction", "aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> "
      "(Tensor min, Tensor max)", "(composite only)", promotion="none")


@composite("aminmax")
def aminmax(x, dim=None, keepdim=False):
    if dim is None:
        if C.numel(x.shape) == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = ()
    else:
        d = C.normalize_dim(dim, len(x.shape), "aminmax")
        if x.shape and x.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,)
    if x.dtype is D.bool_:
        lo, hi = aminmax(O.cast(x, D.uint8), dim, keepdim)
        return O.cast(lo, D.bool_), O.cast(hi, D.bool_)
    if dim is None and keepdim:   # (PyTorch: every dim kept as size 1)
        shape = (1,) * len(x.shape)
        return (V.reshape(O.reduce("min", x), shape), V.reshape(O.reduce("max", x), shape))
    return O.reduce("min", x, dims, keepdim), O.reduce("max", x, dims, keepdim)


# ---- counting: bincount, histc, histogram, histogramdd ----------------------------------------
defop("bincount", "reduction", "bincount(Tensor self, Tensor? weights=None, int minlength=0) -> "
      "Tensor", "(composite only)", promotion="none", differentiable=False)
defop("histc", "reduction", "histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> "
      "Tensor", "(composite only)", promotion="none", differentiable=False)
defop("histogramdd", "reduction", "histogramdd(Tensor self, int[]|Tensor[] bins, *, float[]? "
      "range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] "
      "bin_edges)", "(composite only)", promotion="none", differentiable=False)


def _tname(dtype):
    """The dtype as PyTorch's "not implemented for 'Float'" messages spell it."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
            "uint8": "Byte", "bool": "Bool"}[dtype.name]


@composite("bincount")
def bincount(x, weights=None, minlength=0):
    """Counts (or summed weights) of each non-negative integer in ``x``."""
    if x.dtype.is_floating_point or x.dtype is D.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_tname(x.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if len(x.shape) != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = x.shape[0]
    if weights is not None and (len(weights.shape) != 1 or weights.shape[0] != n):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        dtype = D.int64
    else:
        dtype = D.float32 if weights.dtype is D.float32 else D.float64
    idx = O.cast(x, D.int64)
    size = minlength
    if n:
        if O.item(O.reduce("min", idx)) < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        size = max(size, O.item(O.reduce("max", idx)) + 1)
    src = O.full((n,), 1, dtype, x.device) if weights is None else O.cast(weights, dtype)
    return O.scatter(O.zeros((size,), dtype, x.device), 0, idx, src, reduce="add")


def _bin_positions(v, edges, search):
    """The bin of each value in ``v`` (1-D) for sorted ``edges`` (1-D, same dtype), and
    whether it falls inside [edges[0], edges[-1]] (NaN does not). ``search``: ``linear``
    (histc's interpolation), ``local`` (interpolation, then the neighbouring edges decide)
    or ``binary`` (bins given as edges). The last bin includes its right edge."""
    m = edges.shape[0]
    left, right = V.select(edges, 0, 0), V.select(edges, 0, m - 1)
    inside = E("logical_and", E("ge", v, left), E("le", v, right))
    if search == "binary":
        pos = E("sub", _search(edges, v, True), 1)
    else:
        pos = O.cast(E("div", E("mul", E("sub", v, left), m - 1), E("sub", right, left)),
                     D.int64)
        pos = O.where(inside, pos, 0)
        if search == "local":   # upper_bound among edges[pos - 1 : pos + 2]
            lo = E("maximum", E("sub", pos, 1), 0)
            hi = E("minimum", E("add", pos, 2), m)
            count = O.zeros(pos.shape, D.int64, v.device)
            for j in range(3):
                at = E("add", lo, j)
                e = O.gather(edges, 0, E("minimum", at, m - 1))
                hit = E("logical_and", E("lt", at, hi), E("le", e, v))
                count = E("add", count, O.cast(hit, D.int64))
            pos = E("sub", E("add", lo, count), 1)
    pos = O.where(E("eq", pos, m - 1), m - 2, pos)
    return O.where(inside, pos, 0), inside


def _outer_edges(lo, hi, dim):
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is "
                           f"not finite")
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} "
                           f"max {hi:g} for dimension {dim}")
    return lo, hi


def _histogramdd(name, x, bins, range=None, weight=None, density=False):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_tname(x.dtype)}'")
    if len(x.shape) < 1:
        raise RuntimeError(f"{name}(): input should have at least 2 dimensions, but got 0")
    ndims = x.shape[-1]
    pts = V.reshape(x, (-1, ndims))
    npts = pts.shape[0]
    if isinstance(bins, int):
        bins = [bins] * ndims
    bins = list(bins)
    if len(bins) != ndims:
        raise RuntimeError(f"torch.histogramdd: expected {ndims} sequences of bin edges for "
                           f"each of the {ndims} dimensions of the input, but got {len(bins)}")
    if range is not None and len(range) != 2 * ndims:
        raise RuntimeError(f"torch.histogramdd: for a {ndims}-dimensional histogram range should"
                           f" have {2 * ndims} elements, but got {len(range)}")
    if weight is not None and tuple(weight.shape) != tuple(x.shape[:-1]):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the "
                           f"same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {C.shape_str(x.shape)} and weight with "
                           f"shape {C.shape_str(weight.shape)}")
    edges, search = [], []
    for i, b in enumerate(bins):
        if O._is_t(b):
            if len(b.shape) != 1 or b.shape[0] < 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension "
                                   f"and at least 1 element, but got {len(b.shape)} dimensions "
                                   f"and {C.numel(b.shape)} elements")
            if b.dtype is not x.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should "
                                   f"have the same dtype, but got input {D.torch_name(x.dtype)}"
                                   f" and bins {D.torch_name(b.dtype)}")
            edges.append(b)
            search.append("binary")
            continue
        if b <= 0:
            raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {b} for "
                               f"dimension {i}")
        if range is not None:
            lo, hi = float(range[2 * i]), float(range[2 * i + 1])
        elif npts:
            col = V.select(pts, 1, i)
            lo, hi = O.item(O.reduce("min", col)), O.item(O.reduce("max", col))
        else:   # (PyTorch's range for no data)
            lo, hi = 0.0, 1.0
        lo, hi = _outer_edges(lo, hi, i)
        edges.append(linspace(lo, hi, b + 1, x.dtype, x.device))
        search.append("local")
    sizes = tuple(e.shape[0] - 1 for e in edges)
    flat = O.zeros((npts,), D.int64, x.device)
    valid = O.full((npts,), True, D.bool_, x.device)
    for i, e in enumerate(edges):
        pos, inside = _bin_positions(V.select(pts, 1, i), e, search[i])
        flat = E("add", E("mul", flat, max(sizes[i], 1)), pos)
        valid = E("logical_and", valid, inside)
    w = O.full((npts,), 1, x.dtype, x.device) if weight is None else \
        O.cast(V.reshape(weight, (-1,)), x.dtype)
    w = O.where(valid, w, 0)
    total = C.numel(sizes)
    hist = O.zeros((total,), x.dtype, x.device)
    if npts and total:
        hist = O.scatter(hist, 0, O.where(valid, flat, 0), w, reduce="add")
    hist = V.reshape(hist, sizes)
    if density:
        hist = E("div", hist, O.reduce("sum", hist))
        for i, e in enumerate(edges):
            width = E("sub", V.narrow(e, 0, 1, sizes[i]), V.narrow(e, 0, 0, sizes[i]))
            hist = E("div", hist, V.reshape(width, tuple(-1 if j == i else 1
                                                         for j in _range(ndims))))
    return hist, edges


@composite("histogramdd")
def histogramdd(x, bins, range=None, weight=None, density=False):
    """A histogram of the points ``x[..., :]`` (the last dim holds each point's coordinates):
    ``bins`` an int, one int per dim, or one tensor of edges per dim."""
    return _histogramdd("histogramdd", x, bins, range, weight, density)


@composite("histc")
def histc(x, bins=100, min=0, max=0):
    """``bins`` equal bins between ``min`` and ``max`` (the data's extremes when they are
    equal); elements outside are ignored."""
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_tname(x.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and C.numel(x.shape):
        lo, hi = O.item(O.reduce("min", x)), O.item(O.reduce("max", x))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    edges = linspace(lo, hi, bins + 1, x.dtype, x.device)
    v = V.reshape(x, (-1,))
    pos, inside = _bin_positions(v, edges, "linear")
    hist = O.zeros((bins,), x.dtype, x.device)
    if not v.shape[0]:
        return hist
    ones = O.cast(inside, x.dtype)
    return O.scatter(hist, 0, pos, ones, reduce="add")


# ---- searching: searchsorted, bucketize, isin -------------------------------------------------
defop("searchsorted", "index", "searchsorted(Tensor sorted_sequence, Tensor self, *, bool "
      "out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
      "(composite only)", promotion="none", differentiable=False)
defop("bucketize", "index", "bucketize(Tensor self, Tensor boundaries, *, bool out_int32=False,"
      " bool right=False) -> Tensor", "(composite only)", promotion="none",
      differentiable=False)
defop("isin", "index", "isin(Tensor elements, Tensor test_elements, *, bool assume_unique="
      "False, bool invert=False) -> Tensor", "(composite only)", promotion="none",
      differentiable=False)


def _search(seq, v, right, sorter=None, nan_last=False):
    """Insertion points of ``v`` in ``seq`` sorted along its last dim (1-D, or with the same
    leading dims as ``v``): a vectorised binary search, one gather per halving. The
    comparisons are PyTorch's (``!(s >= v)`` / ``!(s > v)``: a NaN value goes to the end);
    ``nan_last``: ``s < v`` / ``s <= v``, for a ``seq`` sorted with its NaNs last."""
    m = seq.shape[-1]
    flat = len(seq.shape) == 1
    vv = V.reshape(v, (-1,)) if flat else v
    lo = O.zeros(vv.shape, D.int64, v.device)
    hi = O.full(vv.shape, m, D.int64, v.device)
    if m == 0 or not C.numel(vv.shape):
        return V.reshape(lo, v.shape)
    for _ in _range(m.bit_length() + 1):
        mid = E("div", E("add", lo, hi), 2, rounding_mode="floor")
        at = E("minimum", mid, m - 1)
        if sorter is not None:
            at = O.gather(sorter, -1, at)
        s = O.gather(seq, -1, at)
        if nan_last:
            go = E("le", s, vv) if right else E("lt", s, vv)
        else:
            go = E("logical_not", E("gt", s, vv) if right else E("ge", s, vv))
        active = E("lt", lo, hi)
        lo = O.where(E("logical_and", active, go), E("add", mid, 1), lo)
        hi = O.where(E("logical_and", active, E("logical_not", go)), mid, hi)
    return V.reshape(lo, v.shape)


def _common(a, b):
    dt = D.result_type(a, b)
    return O.cast(a, dt), O.cast(b, dt)


@composite("searchsorted")
def searchsorted(sorted_sequence, x, out_int32=False, right=False, side=None, sorter=None):
    seq = sorted_sequence
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites,"
                               " got side of left while right was True")
        right = side == "right"
    if not seq.shape:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if len(seq.shape) != 1 and (len(x.shape) != len(seq.shape)
                                or x.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(x.shape)}")
    if sorter is not None:
        if sorter.dtype is not D.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype "
                               f"but got dtype {D.torch_name(sorter.dtype)}")
        if sorter.shape != seq.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)} and got sorter"
                               f" tensor {list(sorter.shape)}")
        if C.numel(sorter.shape):
            lo = O.item(O.reduce("min", sorter))
            hi = O.item(O.reduce("max", sorter))
            if lo < 0 or hi >= seq.shape[-1]:
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
    C.same_device("searchsorted", [seq, x])
    seq, x = _common(seq, x)
    res = _search(seq, x, right, sorter)
    return O.cast(res, D.int32) if out_int32 else res


@composite("bucketize")
def bucketize(x, boundaries, out_int32=False, right=False):
    if len(boundaries.shape) != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim("
                           f"{len(boundaries.shape)})")
    return searchsorted(boundaries, x, out_int32, right)


@composite("isin")
def isin(elements, test_elements, assume_unique=False, invert=False):
    """Whether each element is among ``test_elements``: a binary search in their sorted
    values (NaN is never found)."""
    for t in (elements, test_elements):
        if t.dtype is D.bool_:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    elements, test_elements = _common(elements, test_elements)
    test = O.sort(V.reshape(test_elements, (-1,)))[0]
    m = test.shape[0]
    if m == 0:
        found = O.zeros(elements.shape, D.bool_, elements.device)
    else:
        pos = _search(test, elements, False, nan_last=True)
        at = V.reshape(O.gather(test, 0, V.reshape(E("minimum", pos, m - 1), (-1,))),
                       elements.shape)
        found = E("logical_and", E("lt", pos, m), E("eq", at, elements))
    return E("logical_not", found) if invert else found


# ---- unique, unique_consecutive ---------------------------------------------------------------
defop("unique", "index", "unique(Tensor self, bool sorted=True, bool return_inverse=False, "
      "bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)",
      "(composite only)", promotion="none", differentiable=False)
defop("unique_consecutive", "index", "unique_consecutive(Tensor self, bool return_inverse="
      "False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)",
      "(composite only)", promotion="none", differentiable=False)


def _unique_rows(x, d, sort):
    """Unique slices along ``d`` (None: elements of the flattened tensor), sorted
    (lexicographically for slices) or consecutive: (values, inverse, counts)."""
    if d is None:
        rows = V.reshape(x, (-1, 1))
    else:
        width = C.numel([s for i, s in enumerate(x.shape) if i != d])
        rows = V.reshape(V.movedim(x, d, 0), (x.shape[d], width))
    n, width = rows.shape
    dev = x.device
    if sort:
        order = _arange(n, dev)
        for c in reversed(_range(width)):   # stable sorts, last key first
            key = O.gather(V.select(rows, 1, c), 0, order)
            order = O.gather(order, 0, O.sort(key, 0, stable=True)[1])
    else:
        order = _arange(n, dev)
    srt = O.gather(rows, 0, C.expand_to(V.unsqueeze(order, 1), rows.shape)) if n else rows
    if n:
        a, b = V.narrow(srt, 0, 0, n - 1), V.narrow(srt, 0, 1, n - 1)
        differs = E("ne", a, b)
        if d is not None:
            differs = any_(differs, 1) if width else O.zeros((n - 1,), D.bool_, dev)
        else:
            differs = V.reshape(differs, (-1,))
        start = cat([O.full((1,), True, D.bool_, dev), differs], 0)
    else:
        start = O.zeros((0,), D.bool_, dev)
    group = E("sub", O.scan("cumsum", O.cast(start, D.int64), 0), 1)
    k = int(O.item(O.reduce("sum", O.cast(start, D.int64)))) if n else 0
    firsts = V.reshape(O.nonzero(start), (-1,))
    values = O.gather(srt, 0, C.expand_to(V.unsqueeze(firsts, 1), (k, width))) if k else \
        O.zeros((0, width), x.dtype, dev)
    inverse = O.scatter(O.zeros((n,), D.int64, dev), 0, order, group) if n else \
        O.zeros((0,), D.int64, dev)
    counts = O.scatter(O.zeros((k,), D.int64, dev), 0, group,
                       O.full((n,), 1, D.int64, dev), reduce="add") if n else \
        O.zeros((0,), D.int64, dev)
    if d is None:
        return V.reshape(values, (k,)), V.reshape(inverse, x.shape), counts
    values = V.movedim(V.reshape(values, (k,) + tuple(s for i, s in enumerate(x.shape)
                                                      if i != d)), 0, d)
    return O.contiguous(values), inverse, counts


def _unique_dim(name, x, dim):
    if dim is None:
        return None
    d = C.normalize_dim(dim, len(x.shape), name)
    if not x.shape:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{dim})")
    if any(s == 0 for i, s in enumerate(x.shape) if i != d):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return d


@composite("unique")
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """(values, inverse, counts): the sorted distinct elements (slices along ``dim``), where
    each element went, and how often each occurs. NaNs are all distinct (PyTorch)."""
    return _unique_rows(x, _unique_dim("unique", x, dim), True)


@composite("unique_consecutive")
def unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    """(values, inverse, counts) of runs of equal consecutive elements (slices)."""
    return _unique_rows(x, _unique_dim("unique_consecutive", x, dim), False)


# ---- distances, differences, statistics -------------------------------------------------------
defop("cdist", "reduction", "cdist(Tensor x1, Tensor x2, float p=2, str? compute_mode=None) -> "
      "Tensor", "(composite only)", promotion="none", inputs=("x1", "x2"))
defop("dist", "reduction", "dist(Tensor self, Tensor other, Scalar p=2) -> Tensor",
      "(composite only)", promotion="none", inputs=("self", "other"))
defop("diff", "reduction", "diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, "
      "Tensor? append=None) -> Tensor", "(composite only)", promotion="none")
defop("trace", "reduction", "trace(Tensor self) -> Tensor", "(composite only)",
      promotion="none")
defop("cov", "reduction", "cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? "
      "aweights=None) -> Tensor", "(composite only)", promotion="none")
defop("corrcoef", "reduction", "corrcoef(Tensor self) -> Tensor", "(composite only)",
      promotion="none")
defop("renorm", "reduction", "renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
      "(composite only)", promotion="none")

_COMPUTE_MODES = (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                  "donot_use_mm_for_euclid_dist")


def _cdist_checks(x1, x2, p, compute_mode):
    if len(x1.shape) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: "
                           f"{len(x1.shape)}D")
    if len(x2.shape) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: "
                           f"{len(x2.shape)}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_tname(t.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    C.same_device("cdist", [x1, x2])


def _pair_diff(x1, x2):
    """x1[..., i, :] - x2[..., j, :] as (..., P, R, M)."""
    return E("sub", V.unsqueeze(x1, -2), V.unsqueeze(x2, -3))


@composite("cdist")
@O.recorded("cdist")
def cdist(x1, x2, p=2.0, compute_mode=None):
    """The p-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M). Euclidean distances of many rows go through one matrix product, as
    PyTorch computes them (``compute_mode``)."""
    _cdist_checks(x1, x2, p, compute_mode)
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist(): X1 and X2 must have the same dtype, got "
                           f"{D.torch_name(x1.dtype)} and {D.torch_name(x2.dtype)}")
    if x1.dtype in _HALF:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{_tname(x1.dtype)}")
    batch = C.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    a = V.expand(x1, batch + x1.shape[-2:])
    b = V.expand(x2, batch + x2.shape[-2:])
    rows1, rows2 = a.shape[-2], b.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode in (None, "use_mm_for_euclid_dist_if_necessary")
        and (rows1 > 25 or rows2 > 25)))
    if rows1 == 0 or rows2 == 0:
        return O.zeros(batch + (rows1, rows2), x1.dtype, x1.device)
    if use_mm:
        n1 = O.reduce("sum", E("mul", a, a), -1, keepdim=True)
        n2 = O.reduce("sum", E("mul", b, b), -1, keepdim=True)
        ones1 = O.full(n1.shape, 1, a.dtype, a.device)
        ones2 = O.full(n2.shape, 1, b.dtype, b.device)
        left = cat([E("mul", a, -2), n1, ones1], -1)
        right = cat([b, ones2, n2], -1)
        sq = matmul(left, V.transpose(right, -1, -2))
        return E("sqrt", E("maximum", sq, O.zeros((), sq.dtype, sq.device)))
    if math.isinf(p):   # PyTorch's running max(agg, |d|) from 0 skips NaN coordinates
        ad = E("abs", _pair_diff(a, b))
        return O.reduce("max", O.where(E("isnan", ad), 0.0, ad), -1)
    if p == 0:          # PyTorch's sum of min(ceil(|d|), 1): a NaN coordinate gives NaN
        ad = E("abs", _pair_diff(a, b))
        return O.reduce("sum", E("minimum", E("ceil", ad), 1.0), -1)
    return norm(_pair_diff(a, b), p, -1)


@gradient("cdist")
def _(g, x1, x2, result, p=2.0):
    """PyTorch's _cdist_backward, per p: 0 where a distance is 0 (and for p = 0); for p = inf
    the gradient goes to every coordinate at the maximum."""
    if p == 0:
        return O.zeros(x1.shape, g.dtype, g.device), O.zeros(x2.shape, g.dtype, g.device)
    diff = _pair_diff(x1, x2)
    r = V.unsqueeze(result, -1)
    gk = V.unsqueeze(g, -1)
    if p == 1:  # (a NaN coordinate passes NaN back, as PyTorch's)
        t = O.where(E("isnan", diff), diff, E("sign", diff))
    elif p == 2:
        t = O.where(E("eq", r, 0), 0.0, diff / r)
    elif math.isinf(p):  # PyTorch's sign(d) * (1 - min(1, ceil(||d| - r|))): NaN at NaN d or
        # at |d| = r = inf
        sign = O.where(E("isnan", diff), diff, E("sign", diff))
        t = sign * (1 - E("minimum", E("ceil", E("abs", E("abs", diff) - r)), 1.0))
    elif p < 2:
        t = E("sign", diff) * E("pow", E("abs", diff), p - 1) / E("pow", r, p - 1)
        t = O.where(E("logical_or", E("eq", r, 0),
                      E("logical_and", E("eq", diff, 0), p < 1)), 0.0, t)
    else:
        t = O.where(E("eq", r, 0), 0.0, diff * E("pow", E("abs", diff), p - 2)
                    / E("pow", r, p - 1))
    gt = gk * t
    return O.reduce("sum", gt, -2), -O.reduce("sum", gt, -3)


@composite("dist")
def dist(x, other, p=2):
    return norm(E("sub", x, other), p)


@composite("diff")
def diff(x, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (``!=`` for bool)."""
    if not x.shape:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = C.normalize_dim(dim, len(x.shape), "diff")
    parts = []
    for name, t in (("prepend", prepend), ("append", append)):
        if t is None:
            continue
        if len(t.shape) != len(x.shape):
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
        parts.append((name, t))
    pieces = [t for name, t in parts if name == "prepend"] + [x] + \
        [t for name, t in parts if name == "append"]
    if len(pieces) > 1:
        dt = pieces[0].dtype
        for t in pieces[1:]:
            dt = D.promote_types(dt, t.dtype)
        x = cat([O.to(t, None, dt) for t in pieces], d)
    for _ in _range(n):
        m = x.shape[d]
        if m == 0:
            break
        a, b = V.narrow(x, d, 0, m - 1), V.narrow(x, d, 1, m - 1)
        x = E("logical_xor", b, a) if x.dtype is D.bool_ else E("sub", b, a)
    return x if n else O.clone(x)


@composite("trace")
def trace(x):
    if len(x.shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(x.shape)}")
    _no_bool("trace", x)
    return O.reduce("sum", V.diagonal(x))


def _cov_weights(name, w, n, integral):
    kind = "fweights" if integral else "aweights"
    if len(w.shape) > 1:
        raise RuntimeError(f"{name}(): expected {kind} to have one or fewer dimensions but got "
                           f"{kind} with {len(w.shape)} dimensions")
    if integral and (w.dtype.is_floating_point or w.dtype is D.bool_):
        raise RuntimeError(f"{name}(): expected fweights to have integral dtype but got "
                           f"fweights with {_tname(w.dtype)} dtype")
    if not integral and not w.dtype.is_floating_point:
        raise RuntimeError(f"{name}(): expected aweights to have floating point dtype but got "
                           f"aweights with {_tname(w.dtype)} dtype")
    if C.numel(w.shape) != n:
        raise RuntimeError(f"{name}(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {C.numel(w.shape)} != {n}")
    if n and O.item(O.reduce("min", w)) < 0:
        raise RuntimeError(f"{name}(): {kind} cannot be negative")


@composite("cov")
def cov(x, correction=1, fweights=None, aweights=None):
    """PyTorch's cov: rows are variables, columns observations, with frequency and
    importance weights."""
    if len(x.shape) > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {len(x.shape)} dimensions")
    if x.dtype is D.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    m = V.reshape(x, (1, -1)) if len(x.shape) < 2 else x
    if not m.dtype.is_floating_point:   # (PyTorch's true divisions give the default dtype)
        m = O.to(m, None, D.get_default_dtype())
    n = m.shape[1]
    w = None
    if fweights is not None:
        _cov_weights("cov", fweights, n, True)
        w = fweights
    if aweights is not None:
        _cov_weights("cov", aweights, n, False)
        w = aweights if w is None else E("mul", w, aweights)
    if w is not None:
        w_sum = O.reduce("sum", w)
        if not O.item(E("ne", w_sum, 0)):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    else:
        w_sum = O.full((), n, D.int64, x.device)
    avg = E("div", O.reduce("sum", m if w is None else E("mul", m, w), 1), w_sum)
    if w is not None and correction != 0 and aweights is not None:
        factor = E("sub", w_sum, E("div", E("mul", O.reduce("sum", E("mul", w, aweights)),
                                              correction), w_sum))
    else:
        factor = E("sub", w_sum, correction)
    if O.item(E("le", factor, 0)):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=3)
        factor = E("mul", factor, 0)
    centred = E("sub", m, V.unsqueeze(avg, 1))
    c = mm(centred, V.t(centred if w is None else E("mul", centred, w)))
    return V.squeeze(E("div", c, factor))


@composite("corrcoef")
def corrcoef(x):
    if len(x.shape) > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but "
                           f"got an input with {len(x.shape)} dimensions")
    c = cov(x)
    if not c.shape:
        return E("div", c, c)
    sd = E("sqrt", V.diagonal(c))
    c = E("div", E("div", c, V.unsqueeze(sd, 1)), V.unsqueeze(sd, 0))
    return O.clamp(c, -1, 1)


@composite("renorm")
@O.recorded("renorm")
def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to it
    (PyTorch's ``maxnorm / (norm + 1e-7)``)."""
    x = self
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point or complex tensor as input. "
                           f"Got {_tname(x.dtype)}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if len(x.shape) <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {len(x.shape)} "
                           f"dimensions")
    d = C.normalize_dim(dim, len(x.shape), "renorm")
    others = tuple(i for i in _range(len(x.shape)) if i != d)
    nrm = norm(x, p, others, True)
    factor = O.where(E("gt", nrm, maxnorm), E("div", maxnorm, E("add", nrm, 1e-7)), 1.0)
    return E("mul", x, O.to(factor, None, x.dtype))


@gradient("renorm")
def _(g, self, p, dim, maxnorm):
    """PyTorch's renorm_backward, in its order of operations: a slice whose norm is not
    above ``maxnorm`` (a NaN norm included) passes ``g`` through unchanged."""
    d = C.normalize_dim(dim, len(self.shape), "renorm")
    others = tuple(i for i in _range(len(self.shape)) if i != d)
    # the norm and the sum in PyTorch's CPU accumulation type (float64 for float32)
    acc = D.float64 if self.dtype is D.float32 else _wide(self).dtype
    nrm = norm(O.cast(self, acc), p, others, True)
    nb = _norm_backward(O.reduce("sum", O.cast(self * g, acc), others, True), self, nrm, p,
                        others, True)[0]
    inv = E("reciprocal", nrm + 1e-7)
    out = O.where(E("gt", nrm, maxnorm), O.cast(inv * maxnorm, g.dtype) * (g - inv * nb), g)
    return (O.cast(out, g.dtype),)


# ---- integration and numerical derivatives ----------------------------------------------------
defop("trapezoid", "reduction", "trapezoid(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim="
      "-1) -> Tensor", "(composite only)", promotion="none", inputs=("y", "x"))
defop("cumulative_trapezoid", "scan", "cumulative_trapezoid(Tensor y, Tensor? x=None, *, "
      "Scalar? dx=None, int dim=-1) -> Tensor", "(composite only)", promotion="none",
      inputs=("y", "x"))
defop("gradient", "reduction", "gradient(Tensor self, *, Scalar|Scalar[]|Tensor[] spacing=1, "
      "int[]? dim=None, int edge_order=1) -> Tensor[]", "(composite only)", promotion="none")


def _trapezoid_steps(name, y, x, dx, d):
    """The sample spacings along ``d``: a number, or a tensor broadcasting against
    ``y``'s pairs."""
    if y.dtype is D.bool_ or (x is not None and x.dtype is D.bool_):
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           f"supported")
    if x is None:
        step = 1 if dx is None else dx
        if isinstance(step, bool) or isinstance(step, complex):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        return float(step)
    if len(x.shape) == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = V.reshape(x, tuple(-1 if i == d else 1 for i in _range(len(y.shape))))
    elif len(x.shape) < len(y.shape):
        x = V.reshape(x, (1,) * (len(y.shape) - len(x.shape)) + tuple(x.shape))
    m = x.shape[d]
    return E("sub", V.narrow(x, d, 1, m - 1), V.narrow(x, d, 0, m - 1))


def _pair_sums(y, d):
    m = y.shape[d]
    return E("add", V.narrow(y, d, 1, m - 1), V.narrow(y, d, 0, m - 1))


@composite("trapezoid")
def trapezoid(y, x=None, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``, with samples at ``x`` or spaced ``dx``."""
    d = C.normalize_dim(dim, len(y.shape), "trapezoid")
    if y.shape[d] == 0:
        return O.zeros(tuple(s for i, s in enumerate(y.shape) if i != d), y.dtype, y.device)
    step = _trapezoid_steps("trapezoid", y, x, dx, d)
    if O._is_t(step):
        return E("div", O.reduce("sum", E("mul", step, _pair_sums(y, d)), d), 2.0)
    ends = E("mul", E("add", V.select(y, d, 0), V.select(y, d, y.shape[d] - 1)), 0.5)
    return E("mul", E("sub", O.reduce("sum", y, d), ends), step)


@composite("cumulative_trapezoid")
def cumulative_trapezoid(y, x=None, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim`` (one element fewer)."""
    d = C.normalize_dim(dim, len(y.shape), "cumulative_trapezoid")
    step = _trapezoid_steps("cumulative_trapezoid", y, x, dx, d)
    if y.shape[d] == 0:
        return O.zeros(y.shape, y.dtype if y.dtype.is_floating_point
                       else D.get_default_dtype(), y.device)
    half = E("div", step, 2.0) if O._is_t(step) else step / 2.0
    return O.scan("cumsum", E("mul", half, _pair_sums(y, d)), d)


def _gradient_spacing(x, spacing, dims):
    """One spacing per dim: numbers, or coordinate tensors (1-D, one per sample)."""
    nd = len(x.shape)
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            where = f"'len(dim) = {len(dims)}'" if len(dims) != nd else \
                f"'self.dim() = {nd}', since dim argument was not given"
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}." if len(dims) != nd else
                               f"torch.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to {where}, but got a list of "
                               f"length {len(spacing)}")
        out = []
        for s, d in zip(spacing, dims):
            if O._is_t(s) and s.shape:
                if len(s.shape) != 1 or s.shape[0] != x.shape[d]:
                    raise RuntimeError("torch.gradient expected each tensor to be on the same "
                                       "device and to have one dimension with as many elements"
                                       " as the input has along its dim")
                out.append(s)
            else:
                out.append(O.item(s) if O._is_t(s) else s)
        return out
    if O._is_t(spacing):
        spacing = O.item(spacing)
    return [spacing] * len(dims)


@composite("gradient")
def numerical_gradient(x, spacing=1, dim=None, edge_order=1):
    """Central differences inside, one-sided (first or second order) at the edges, for
    each dim in ``dim`` (all by default): PyTorch's (and NumPy's) ``gradient``."""
    nd = len(x.shape)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(_range(nd))
    elif isinstance(dim, int):
        dims = [C.normalize_dim(dim, nd, "gradient")]
    else:
        dims = [C.normalize_dim(d, nd, "gradient") for d in dim]
    steps = _gradient_spacing(x, spacing, dims)
    for d in dims:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if not x.dtype.is_floating_point:
        x = O.cast(x, D.get_default_dtype())

    def sl(d, a, b):
        n = x.shape[d]
        b = n if b is None else b % n if b < 0 else b
        a = a % n if a < 0 else a
        return V.narrow(x, d, a, b - a)

    out = []
    for d, h in zip(dims, steps):
        if O._is_t(h):
            h = O.to(h, None, x.dtype) if h.dtype is not x.dtype else h
            out.append(_gradient_coords(x, d, h, edge_order, sl))
            continue
        center = E("div", E("div", E("sub", sl(d, 2, None), sl(d, 0, -2)), h), 2)
        if edge_order == 1:
            first = E("div", E("sub", sl(d, 1, 2), sl(d, 0, 1)), h)
            last = E("div", E("sub", sl(d, -1, None), sl(d, -2, -1)), h)
        else:
            first = E("div", E("add", E("add", E("mul", sl(d, 0, 1), -1.5),
                                           E("mul", sl(d, 1, 2), 2)),
                                 E("mul", sl(d, 2, 3), -0.5)), h)
            last = E("div", E("add", E("add", E("mul", sl(d, -3, -2), 0.5),
                                          E("mul", sl(d, -2, -1), -2)),
                                E("mul", sl(d, -1, None), 1.5)), h)
        out.append(cat([first, center, last], d))
    return tuple(out)


def _gradient_coords(x, d, coords, edge_order, sl):
    """gradient along ``d`` with samples at ``coords`` (uneven spacing; PyTorch's
    second-order accurate weights)."""
    nd = len(x.shape)
    shape = tuple(-1 if i == d else 1 for i in _range(nd))
    h = diff(coords)
    m = h.shape[0]
    h1, h2 = V.narrow(h, 0, 0, m - 1), V.narrow(h, 0, 1, m - 1)
    a = V.reshape(E("div", E("neg", h2), E("mul", h1, E("add", h1, h2))), shape)
    b = V.reshape(E("div", E("sub", h2, h1), E("mul", h1, h2)), shape)
    c = V.reshape(E("div", h1, E("mul", h2, E("add", h1, h2))), shape)
    center = E("add", E("add", E("mul", a, sl(d, 0, -2)), E("mul", b, sl(d, 1, -1))),
               E("mul", c, sl(d, 2, None)))
    h0, h1_, hl, hl2 = (V.select(h, 0, 0), V.select(h, 0, min(1, m - 1)), V.select(h, 0, m - 1),
                        V.select(h, 0, max(m - 2, 0)))
    if edge_order == 1:
        first = E("div", E("sub", sl(d, 1, 2), sl(d, 0, 1)), h0)
        last = E("div", E("sub", sl(d, -1, None), sl(d, -2, -1)), hl)
    else:
        a0 = E("div", E("neg", E("add", E("mul", h0, 2.0), h1_)), E("mul", h0, E("add", h0, h1_)))
        b0 = E("div", E("add", h0, h1_), E("mul", h0, h1_))
        c0 = E("div", E("neg", h0), E("mul", h1_, E("add", h0, h1_)))
        first = E("add", E("add", E("mul", a0, sl(d, 0, 1)), E("mul", b0, sl(d, 1, 2))),
                  E("mul", c0, sl(d, 2, 3)))
        a1 = E("div", hl, E("mul", hl2, E("add", hl, hl2)))
        b1 = E("div", E("neg", E("add", hl, hl2)), E("mul", hl, hl2))
        c1 = E("div", E("add", E("mul", hl, 2), hl2), E("mul", hl, E("add", hl, hl2)))
        last = E("add", E("add", E("mul", a1, sl(d, -3, -2)), E("mul", b1, sl(d, -2, -1))),
                 E("mul", c1, sl(d, -1, None)))
    return cat([first, center, last], d)


# ---- scatter_reduce, index_reduce -------------------------------------------------------------
_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
defop("scatter_reduce", "index", "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor "
      "src, str reduce, *, bool include_self=True) -> Tensor", "(composite only)",
      promotion="none", inputs=("self", "src"))
defop("index_reduce", "index", "index_reduce(Tensor self, int dim, Tensor index, Tensor source, "
      "str reduce, *, bool include_self=True) -> Tensor", "(composite only)",
      promotion="none", inputs=("self", "source"))

_COMBINE = {"prod": "mul", "amax": "maximum", "amin": "minimum", "sum": "add"}


def _scatter_reduce_checks(self, dim, index, src, reduce):
    if reduce not in _SCATTER_REDUCES and reduce not in ("max", "min"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if not O._is_t(index) or index.dtype not in (D.int32, D.int64):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if not O._is_t(src):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    nd = len(self.shape)
    d = C.normalize_dim(dim, nd, "scatter_reduce")
    for what, t in (("self", self), ("src", src)):
        if len(index.shape) != len(t.shape) and not (len(t.shape) <= 1 and
                                                     len(index.shape) <= 1):
            raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                               f"{what} tensor")
    for i in _range(len(index.shape)):
        if index.shape[i] > src.shape[i] or (i != d and index.shape[i] > self.shape[i]):
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(self.shape)} apart from dimension {d} and to be no "
                               f"larger size than src {list(src.shape)}")
    if C.numel(index.shape):
        size = self.shape[d] if nd else 1
        for bad in (O.item(O.reduce("min", index)), O.item(O.reduce("max", index))):
            if not 0 <= bad < size:
                raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                                   f"{size}")
    return d


def _src_part(src, index):
    """The part of ``src`` that ``index`` covers (its leading corner)."""
    for i, n in enumerate(index.shape):
        if src.shape[i] != n:
            src = V.narrow(src, i, 0, n)
    return src


def _segment_reduce(self, d, index, src, op):
    """``op`` (mul, maximum, minimum) of the ``src`` elements that go to each position:
    a stable sort of ``index`` along ``d`` groups them, a segmented Hillis–Steele scan
    combines each group, and each group's last element is scattered (the others go to a
    spare slot). Returns (reduced, covered)."""
    with below_autograd():
        sidx, order = O.sort(index, d, stable=True)
    vals = O.gather(src, d, order)
    n = index.shape[d]
    k = 1
    while k < n:
        (ia, ib), (va, vb) = _shifted(sidx, d, k), _shifted(vals, d, k)
        vals = cat([V.narrow(vals, d, 0, k), O.where(E("eq", ia, ib), E(op, vb, va), vb)], d)
        k *= 2
    size = self.shape[d]
    last = cat([E("ne", V.narrow(sidx, d, 1, n - 1), V.narrow(sidx, d, 0, n - 1)),
                O.full(_keep_shape(sidx, (d,)), True, D.bool_, sidx.device)], d)
    target = O.where(last, sidx, size)
    spare = tuple(s + 1 if i == d else s for i, s in enumerate(self.shape))
    buf = O.scatter(O.zeros(spare, self.dtype, self.device), d, target, vals)
    covered = O.scatter(O.zeros(self.shape, D.bool_, self.device), d, index, True)
    return V.narrow(buf, d, 0, size), covered


@composite("scatter_reduce")
@O.recorded("scatter_reduce")
def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    """``self`` with the ``src`` elements reduced into the positions ``index`` names along
    ``dim`` (sum, prod, mean, amax, amin), with or without ``self``'s own values."""
    d = _scatter_reduce_checks(self, dim, index, src, reduce)
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)   # (PyTorch takes both)
    index = O.cast(index, D.int64)
    if not self.shape:
        res = scatter_reduce(V.reshape(self, (1,)), 0, V.reshape(index, (-1,)),
                             V.reshape(src, (-1,)), reduce, include_self)
        return V.reshape(res, ())
    if not C.numel(index.shape):
        return O.clone(self)
    src = _src_part(src, index)
    if reduce in ("sum", "mean"):
        base = self if include_self else O.scatter(self, d, index, 0)
        total = O.scatter(base, d, index, src, reduce="add")
        if reduce == "sum":
            return total
        count = O.full(self.shape, 1 if include_self else 0, self.dtype, self.device)
        count = O.scatter(count, d, index, O.full(index.shape, 1, self.dtype, self.device),
                          reduce="add")
        count = O.where(E("eq", count, 0), 1, count)
        if self.dtype.is_floating_point:
            return E("div", total, count)
        return E("div", total, count, rounding_mode="floor")
    if self.dtype is D.bool_ and reduce == "prod":
        op = "logical_and"
    else:
        op = _COMBINE[reduce]
    part, covered = _segment_reduce(self, d, index, src, op)
    both = E(op, self, part) if include_self else part
    if self.dtype is D.bool_ and both.dtype is not D.bool_:
        both = O.cast(both, D.bool_)
    return O.where(covered, both, self)


@gradient("scatter_reduce")
def _(g, self, src, result, dim, index, reduce, include_self=True):
    """PyTorch's scatter_reduce_backward, reduction by reduction."""
    d = C.normalize_dim(dim, len(self.shape), "scatter_reduce")
    if not self.shape or not C.numel(index.shape):
        return g, O.zeros(src.shape, g.dtype, g.device)
    part = _src_part(src, index)
    if reduce == "sum":
        gs, gsrc = g, O.gather(g, d, index)
    elif reduce == "mean":
        count = O.full(self.shape, 1 if include_self else 0, g.dtype, g.device)
        count = O.scatter(count, d, index, O.full(index.shape, 1, g.dtype, g.device),
                          reduce="add")
        gs = g / O.where(E("eq", count, 0), 1.0, count)
        gsrc = O.gather(gs, d, index)
    elif reduce == "prod":
        masked_self = O.where(E("eq", self, 0), 1.0, self)
        gs = g * scatter_reduce(masked_self, d, index, part, "prod", include_self) / masked_self
        src_zero = E("eq", part, 0)
        zeros_at = O.scatter(O.zeros(self.shape, g.dtype, g.device), d, index,
                             O.to(src_zero, None, g.dtype), reduce="add")
        single = E("logical_and", src_zero, E("eq", O.gather(zeros_at, d, index), 1))
        masked_src = O.where(single, 1.0, part)
        without = scatter_reduce(self, d, index, masked_src, "prod", include_self)
        gsrc = O.where(single, O.gather(g * without, d, index),
                       O.gather(g * result, d, index) / O.where(src_zero, 1.0, part))
    else:
        value = O.gather(result, d, index)
        self_is = O.to(E("eq", self, result), None, g.dtype)
        src_is = O.to(E("eq", part, value), None, g.dtype)
        shares = O.scatter(self_is, d, index, src_is, reduce="add")
        gd = g / shares
        gs = self_is * gd
        gsrc = src_is * O.gather(gd, d, index)
    if not include_self:
        gs = O.scatter(gs, d, index, 0.0)
    if gsrc.shape != src.shape:   # index covered only part of src: the rest gets zeros
        full = O.zeros(src.shape, g.dtype, g.device)
        O.copy_(_src_part(full, index), gsrc)
        gsrc = full
    return gs, gsrc


@composite("index_reduce")
def index_reduce(self, dim, index, source, reduce, include_self=True):
    """``scatter_reduce`` with whole slices: slice ``i`` of ``source`` along ``dim`` goes
    to slice ``index[i]`` of ``self`` (prod, mean, amax, amin)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    nd = len(self.shape)
    d = C.normalize_dim(dim, nd, "index_reduce")
    if not O._is_t(index) or index.dtype not in (D.int32, D.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{D.torch_name(index.dtype) if O._is_t(index) else index}")
    if len(index.shape) > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_reduce_(): self ({D.torch_name(self.dtype)}) and source ("
                           f"{D.torch_name(source.dtype)}) must have the same scalar type")
    n = C.numel(index.shape)
    if len(source.shape) != nd or any(a != b for i, (a, b) in enumerate(
            zip(self.shape, source.shape)) if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self.shape)} "
                           f"source.shape = {list(source.shape)}")
    if (source.shape[d] if source.shape else 1) != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({source.shape[d] if source.shape else 1}), for "
                           f"dim: {d}")
    if n:
        lo, hi = O.item(O.reduce("min", index)), O.item(O.reduce("max", index))
        size = self.shape[d] if nd else 1
        if lo < 0 or hi >= size:   # (PyTorch takes no negative index here)
            raise IndexError(f"index out of range in self (index {lo if lo < 0 else hi} for "
                             f"dimension {d} with size {size})")
    idx = O.cast(V.reshape(index, (-1,)), D.int64)
    if not nd:
        return scatter_reduce(self, 0, V.reshape(idx, ()), V.reshape(source, ()), reduce,
                              include_self)
    view = tuple(n if i == d else 1 for i in _range(nd))
    idx = C.expand_to(V.reshape(idx, view), source.shape)
    return scatter_reduce(self, d, idx, source, reduce, include_self)
