"""Reductions, scans, softmax and sorting.

Reduction kernels receive ``dims`` (sorted, non-negative) and write an ``out`` that keeps
the reduced dims as size 1; the dispatcher drops them for ``keepdim=False``.
"""
from __future__ import annotations

import math

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
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
     "-> Tensor", "(composite only)", "none")
_red("norm", "norm(Tensor self, Scalar p=2, int[]? dim=None, bool keepdim=False) -> Tensor",
     "(composite only)", "none")
_red("all", "all(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     "(composite only)", "none", differentiable=False)
_red("any", "any(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     "(composite only)", "none", differentiable=False)


def _keep_shape(x, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(x.shape))


def _flip_order(x):
    return E("neg", x) if x.dtype.is_floating_point else E("bitwise_not", x)


@composite("min")
def _min(x, dims):
    return _flip_order(O.reduce("max", _flip_order(x), dims, keepdim=True))


@composite("argmin")
def _argmin(x, dim):
    return O.arg_reduce("argmax", _flip_order(x), dim, keepdim=True)


@composite("prod")
def _prod(x, dims):
    """Pairwise products along each reduced dim (exact order-independent tree)."""
    y = x
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
    return O.cast(y, x.dtype) if y.dtype is not x.dtype else y


@composite("mean")
def _mean(x, dims):
    n = C.numel([x.shape[d] for d in dims])
    return E("div", O.reduce("sum", x, dims, keepdim=True), n if n else math.nan)


@composite("logsumexp")
def _logsumexp(x, dims):
    m = O.reduce("max", x, dims, keepdim=True) if C.numel(x.shape) else \
        O.full(_keep_shape(x, dims), -math.inf, x.dtype, x.device)
    m = O.where(E("eq", E("abs", m), math.inf), 0.0, m)
    s = O.reduce("sum", E("exp", E("sub", x, m)), dims, keepdim=True)
    return E("add", E("log", s), m)


@composite("var")
def _var(x, dims, correction=1):
    n = C.numel([x.shape[d] for d in dims])
    mu = _mean(x, dims)
    d = E("sub", x, mu)
    ss = O.reduce("sum", E("mul", d, d), dims, keepdim=True)
    return E("div", ss, max(n - correction, 0))


@composite("std")
@O.recorded("std")
def std(self, dim=None, correction=1, keepdim=False):
    return E("sqrt", O.reduce("var", self, dim, keepdim, correction=correction))


@composite("norm")
def norm(x, p=2, dim=None, keepdim=False):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.torch_name(x.dtype)}")
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


def _all_any(x, dim, keepdim, is_all):
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
    """Ties share the gradient equally (PyTorch's amax/amin)."""
    mask = O.to(self == _kept(result, dim, keepdim, self.shape), None, g.dtype)
    count = O.reduce("sum", mask, _dims(dim, self.shape), True)
    return (_unreduce(g, dim, keepdim, self.shape) * mask / count,)


@gradient("prod")
def _(g, self, result, dim=None, keepdim=False):
    x = self
    gx = _unreduce(g, dim, keepdim, x.shape)
    dims = _dims(dim, x.shape)
    if len(dims) == 1:
        # the product of the others without dividing by x: exclusive cumprods both ways
        d = dims[0]
        n = x.shape[d]
        ones = O.full(_keep_shape(x, (d,)), 1, x.dtype, x.device)
        left = cat([ones, V.narrow(O.scan("cumprod", x, d), d, 0, n - 1)], d)
        right = flip(cat([ones, V.narrow(O.scan("cumprod", flip(x, (d,)), d), d, 0, n - 1)],
                         d), (d,))
        return (gx * left * right,)
    o = _kept(result, dim, keepdim, x.shape)
    zero = x == 0
    return (gx * O.where(zero, 0.0, o / O.where(zero, 1.0, x)),)


@gradient("logsumexp")
def _(g, self, result, dim, keepdim=False):
    return (_unreduce(g, dim, keepdim, self.shape)
            * E("exp", self - _kept(result, dim, keepdim, self.shape)),)


@gradient("var")
def _(g, self, dim=None, keepdim=False, correction=1):
    dims = _dims(dim, self.shape)
    n = C.numel([self.shape[d] for d in dims])
    mu = O.reduce("mean", self, dims, True)
    return (_unreduce(g, dim, keepdim, self.shape) * (2.0 / max(n - correction, 0))
            * (self - mu),)


@gradient("std")
def _(g, self, result, dim=None, keepdim=False, correction=1):
    dims = _dims(dim, self.shape)
    n = C.numel([self.shape[d] for d in dims])
    mu = O.reduce("mean", self, dims, True)
    o = _kept(result, dim, keepdim, self.shape)
    return (_unreduce(g, dim, keepdim, self.shape) * (self - mu)
            / (o * max(n - correction, 0)),)


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
    return _scan(x, dim, "add")


@composite("cumprod")
def _cumprod(x, dim):
    return _scan(x, dim, "mul")


def _scan_dim(dim, shape):
    return C.normalize_dim(dim, len(shape)) if shape else 0


@gradient("cumsum")
def _(g, self_shape, dim):
    d = _scan_dim(dim, self_shape)
    if not self_shape:
        return (g,)
    return (flip(O.scan("cumsum", flip(g, (d,)), d), (d,)),)


@gradient("cumprod")
def _(g, self, result, dim):
    # valid for inputs without zeros: d out_j / d x_i = out_j / x_i for j >= i
    d = _scan_dim(dim, self.shape)
    if not self.shape:
        return (g,)
    return (flip(O.scan("cumsum", flip(g * result, (d,)), d), (d,)) / self,)


# ---- softmax -------------------------------------------------------------------------------------
defop("softmax", "softmax", "softmax(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
      "(out, x, dim)", promotion="float_only")
defop("log_softmax", "softmax", "log_softmax(Tensor self, int dim, *, ScalarType? dtype=None) "
      "-> Tensor", "(out, x, dim)", promotion="float_only")


@composite("softmax")
def _softmax(x, dim):
    m = O.reduce("max", x, dim, keepdim=True) if C.numel(x.shape) else x
    e = E("exp", E("sub", x, m))
    return E("div", e, O.reduce("sum", e, dim, keepdim=True))


@composite("log_softmax")
def _log_softmax(x, dim):
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
    d = C.normalize_dim(dim, nd, "topk") if nd else 0
    n = x.shape[d] if nd else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range (k={k}, dimension {d} has size {n})")
    values, indices = O.sort(x, d, descending=largest, stable=True)
    if not nd:
        return values, indices
    return V.narrow(values, d, 0, k), V.narrow(indices, d, 0, k)
