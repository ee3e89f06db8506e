"""Reductions, scans, softmax and sorting (the kernels' ops and their composites and gradient
formulas), and the helpers the composites built on them share (:mod:`.order_statistics`,
:mod:`.search`, :mod:`.statistics`). Re-exported by :mod:`.reduction`.

Reduction kernels receive ``dims`` (sorted, non-negative) and write an ``out`` that keeps
the reduced dims as size 1; the dispatcher drops them for ``keepdim=False``.
"""
from __future__ import annotations

import math

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..grad_mode import MODE
from ..schema import composite, defop, gradient
from .index import cat, flip

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


defop("_safe_softmax", "softmax", "_safe_softmax(Tensor self, int dim, *, ScalarType? dtype=None)"
      " -> Tensor", "(out, x, dim)  # softmax, but 0 in rows whose values are all -inf",
      promotion="float_only",
      doc="attention's softmax (PyTorch's): a query that every mask hides attends to nothing")


@composite("_safe_softmax")
def _safe_softmax(x, dim):
    res = O.softmax_op("softmax", x, dim)
    if not C.numel(x.shape):
        return res
    return O.where(all_(E("eq", x, -math.inf), dim, True), 0.0, res)


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


@gradient("softmax", "_safe_softmax")
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
    O.refuse_barebones("topk", x)
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "topk")   # a 0-d tensor takes dim -1 or 0 (PyTorch)
    n = x.shape[d] if nd else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range (k={k}, dimension {d} has size {n})")
    values, indices = O.sort(x, d, descending=largest, stable=True)
    if not nd:
        return values, indices
    return V.narrow(values, d, 0, k), V.narrow(indices, d, 0, k)


# ---- helpers shared by the composites in order_statistics, search and statistics --------
# Those composites run on every backend, over the primitives above (sort, gather, scatter,
# cumsum, elementwise ops).
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


def _no_bool(kernel, x):
    """PyTorch's refusal of a bool (or uint16 / uint32 / uint64) ``x`` by ``kernel``."""
    if x.dtype is D.bool_ or x.dtype in D.BAREBONES_UNSIGNED:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(x.dtype)}'")


def _tname(dtype):
    """The dtype as PyTorch's "not implemented for 'Float'" messages spell it."""
    return D.torch_name(dtype)
