"""ember's top-level functions and Tensor methods: reduce (see frontend/__init__.py).

Order statistics (median, kthvalue, mode, quantile), scans with indices (cummax, cummin,
logcumsumexp), counting (bincount, histc, histogram), searching (searchsorted, bucketize,
isin, unique), statistics (cov, corrcoef, cdist), numerical calculus (diff, trapezoid,
gradient) and scatter_reduce / index_reduce, with PyTorch's names, signatures and result
types. Each forwards to the op's one definition in ``ember.dispatcher.defs.reduction``.

>>> import ember
>>> ember.median(ember.tensor([[1., 5., 2.], [4., 3., 6.]]), dim=1)
ember.return_types.median(
values=tensor([2., 4.]),
indices=tensor([2, 0]))
"""
from __future__ import annotations


import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import reduction as RD
from ember.dispatcher.grad_mode import MODE
from .return_types import return_type

__all__ = ["cummax", "cummin", "logcumsumexp", "median", "nanmedian", "mode", "kthvalue",
           "quantile", "nanquantile", "msort", "aminmax", "bincount", "histc", "histogram",
           "histogramdd", "unique", "unique_consecutive", "searchsorted", "bucketize", "isin",
           "cdist", "diff", "trace", "cov", "corrcoef", "dist", "renorm", "trapezoid", "trapz",
           "cumulative_trapezoid", "gradient", "scatter_reduce", "index_reduce"]

# PyTorch's torch.return_types, by name and fields
cummax_ret = return_type("cummax", ["values", "indices"])
cummin_ret = return_type("cummin", ["values", "indices"])
median_ret = return_type("median", ["values", "indices"])
nanmedian_ret = return_type("nanmedian", ["values", "indices"])
mode_ret = return_type("mode", ["values", "indices"])
kthvalue_ret = return_type("kthvalue", ["values", "indices"])
aminmax_ret = return_type("aminmax", ["min", "max"])
histogram_ret = return_type("histogram", ["hist", "bin_edges"])
histogramdd_ret = return_type("histogramdd", ["hist", "bin_edges"])


def _t(x, op, arg="input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _number(v):
    return v.item() if isinstance(v, np.generic) else v


def _as_tensor(v, like, op, arg):
    """A Python number as a 0-d tensor of the dtype it takes next to ``like``."""
    if isinstance(v, TensorBase):
        return v
    v = _number(v)
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor or Number, not "
                        f"{type(v).__name__}")
    return C.scalar_tensor(v, D.result_type(like, v), like.device)


def _into(name, out, res, rule="any"):
    """``res`` written into ``out`` (one tensor or a tuple of them), PyTorch's out=, ``out``'s
    dtype checked by ``rule`` (see ``O.write_out``)."""
    if out is None:
        return res
    return O.write_out(name, out, res, rule)


def _inplace(name, self, fn, *args, **kwargs):
    """``self`` overwritten with ``fn(self, ...)``. Under autograd ``fn`` reads a copy, so
    that what its backward saved is not the tensor the write changes; that holds too when
    only another argument needs a gradient (``zeros(n).scatter_reduce_(0, i, src, "amax")``
    saves ``self`` to find which positions the maximum came from)."""
    C.check_writable(self, name)
    src = O.clone(self) if MODE.grad and O.requires_grad((self, *args)) else self
    return O.copy_(self, fn(src, *args, **kwargs))


# ---- scans -------------------------------------------------------------------------------------
def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and where it was found (a later equal element wins).

    >>> ember.cummax(ember.tensor([1, 3, 2, 3]), 0).indices.tolist()
    [0, 1, 1, 3]
    """
    return _into("cummax", out, cummax_ret(*RD.cummax(_t(input, "cummax"), dim)))


def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and where it was found."""
    return _into("cummin", out, cummin_ret(*RD.cummin(_t(input, "cummin"), dim)))


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input)))`` along ``dim``, computed without overflow."""
    return _into("logcumsumexp", out, RD.logcumsumexp(_t(input, "logcumsumexp"), dim))


def cumsum_(self, dim, *, dtype=None):
    """In-place :meth:`cumsum`: replace each element by the sum of the elements up to it
    along ``dim``.

    Example:
        >>> x = ember.tensor([1., 2., 3.])
        >>> x.cumsum_(0)
        tensor([1., 3., 6.])
    """
    return _inplace("cumsum_", self, lambda x: O.scan("cumsum", x, dim, dtype))


def cumprod_(self, dim, *, dtype=None):
    """In-place :meth:`cumprod`: replace each element by the product of the elements up to it
    along ``dim``.

    Example:
        >>> x = ember.tensor([1., 2., 3.])
        >>> x.cumprod_(0)
        tensor([1., 2., 6.])
    """
    return _inplace("cumprod_", self, lambda x: O.scan("cumprod", x, dim, dtype))


# ---- order statistics --------------------------------------------------------------------------
_UNSET = object()   # (median's two overloads: no dim at all, or an int dim)


def _median_dim_arg(name, dim, keepdim, out):
    """The dim of a median call, or None for the all-elements overload, which takes no
    other argument (PyTorch's errors otherwise)."""
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not NoneType")
    if dim is _UNSET:
        if keepdim is not _UNSET or out is not None:
            raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
        return None
    return dim


def median(input, dim=_UNSET, keepdim=_UNSET, *, out=None):
    """The lower median of all elements (a tensor), or along ``dim`` (values, indices).

    >>> ember.median(ember.tensor([4., 1., 3., 2.])).item()
    2.0
    """
    x = _t(input, "median")
    d = _median_dim_arg("median", dim, keepdim, out)
    if d is None:
        return RD.median(x)
    keep = False if keepdim is _UNSET else keepdim
    return _into("median", out, median_ret(*RD.median_dim(x, d, keep)))


def nanmedian(input, dim=_UNSET, keepdim=_UNSET, *, out=None):
    """``median`` that ignores NaNs."""
    x = _t(input, "nanmedian")
    d = _median_dim_arg("nanmedian", dim, keepdim, out)
    if d is None:
        return RD.nanmedian(x)
    keep = False if keepdim is _UNSET else keepdim
    return _into("nanmedian", out, nanmedian_ret(*RD.nanmedian_dim(x, d, keep)))


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` and the index of its last occurrence."""
    return _into("mode", out, mode_ret(*RD.mode(_t(input, "mode"), dim, keepdim)))


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim`` and its index."""
    return _into("kthvalue", out,
                 kthvalue_ret(*RD.kthvalue(_t(input, "kthvalue"), k, dim, keepdim)), "exact")


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles (a number or a 1-D tensor) of ``input`` along ``dim``.

    >>> ember.quantile(ember.tensor([0., 1., 2., 3.]), 0.5).item()
    1.5
    """
    return _into("quantile", out, RD.quantile(_t(input, "quantile"), _number(q), dim, keepdim,
                                              interpolation))


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` that ignores NaNs."""
    return _into("nanquantile", out, RD.nanquantile(_t(input, "nanquantile"), _number(q), dim,
                                                    keepdim, interpolation))


def msort(input, *, out=None):
    """``input`` sorted along its first dim."""
    return _into("msort", out, O.sort(_t(input, "msort"), 0)[0])


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(min, max) over all elements or along ``dim``."""
    return _into("aminmax", out, aminmax_ret(*RD.aminmax(_t(input, "aminmax"), dim, keepdim)))


# ---- counting ----------------------------------------------------------------------------------
def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs in ``input`` (or its summed weights).

    >>> ember.bincount(ember.tensor([0, 2, 2])).tolist()
    [1, 0, 2]
    """
    return RD.bincount(_t(input, "bincount"), weights, minlength)


def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when equal)."""
    return _into("histc", out, RD.histc(_t(input, "histc"), bins, _number(min), _number(max)))


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges) of ``input`` with ``bins`` equal bins (an int) or the given edges."""
    x = _t(input, "histogram")
    if weight is not None and tuple(weight.shape) != tuple(x.shape):
        raise RuntimeError(f"histogram(): weight {C.shape_str(weight.shape)} should have the "
                           f"same shape as the input {C.shape_str(x.shape)}")
    hist, edges = RD.histogramdd(V.reshape(x, (-1, 1)), [bins], range,
                                 None if weight is None else V.reshape(weight, (-1,)), density)
    return _into("histogram", out, histogram_ret(hist, edges[0]))


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """A histogram of points (the last dim of ``input`` holds the coordinates)."""
    if isinstance(bins, TensorBase):
        raise TypeError("histogramdd(): argument 'bins' must be an int, a sequence of ints or "
                        "a sequence of Tensors")
    hist, edges = RD.histogramdd(_t(input, "histogramdd"), bins, range, weight, density)
    return histogramdd_ret(hist, tuple(edges))


# ---- searching ---------------------------------------------------------------------------------
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Where ``input``'s values would be inserted into ``sorted_sequence`` to keep it sorted
    (along its last dim).

    >>> ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3, 6])).tolist()
    [1, 3]
    """
    seq = _t(sorted_sequence, "searchsorted", "sorted_sequence")
    x = _as_tensor(input, seq, "searchsorted", "input")
    return _into("searchsorted", out, RD.searchsorted(seq, x, out_int32, right, side, sorter),
                 "exact")


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value of ``input`` among the sorted 1-D ``boundaries``."""
    b = _t(boundaries, "bucketize", "boundaries")
    x = _as_tensor(input, b, "bucketize", "input")
    return _into("bucketize", out, RD.bucketize(x, b, out_int32, right), "exact")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` occurs in ``test_elements`` (either may be a number)."""
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        raise TypeError("isin() received an invalid combination of arguments: at least one of "
                        "'elements' and 'test_elements' must be a Tensor")
    if not isinstance(elements, TensorBase):
        elements = _as_tensor(elements, test_elements, "isin", "elements")
    if not isinstance(test_elements, TensorBase):
        test_elements = _as_tensor(test_elements, elements, "isin", "test_elements")
    return RD.isin(elements, test_elements, assume_unique, invert)


def _unique_result(res, return_inverse, return_counts):
    values, inverse, counts = res
    if not return_inverse and not return_counts:
        return values
    out = (values,)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (counts,)
    return out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along ``dim``), sorted; with ``return_inverse`` where
    each element went, with ``return_counts`` how often each occurs.

    >>> ember.unique(ember.tensor([3, 1, 3]), return_counts=True)[1].tolist()
    [1, 2]
    """
    res = RD.unique(_t(input, "unique"), sorted, return_inverse, return_counts, dim)
    return _unique_result(res, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with runs of equal consecutive elements (slices) collapsed to one."""
    res = RD.unique_consecutive(_t(input, "unique_consecutive"), return_inverse,
                                return_counts, dim)
    return _unique_result(res, return_inverse, return_counts)


# ---- distances and statistics ------------------------------------------------------------------
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of rows of ``x1`` and ``x2`` (batched)."""
    return RD.cdist(_t(x1, "cdist", "x1"), _t(x2, "cdist", "x2"), float(p), compute_mode)


def dist(input, other, p=2):
    """The p-norm of ``input - other``."""
    return RD.dist(_t(input, "dist"), _t(other, "dist", "other"), _number(p))


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The ``n``-th forward difference along ``dim``.

    >>> ember.diff(ember.tensor([1, 4, 9])).tolist()
    [3, 5]
    """
    return _into("diff", out, RD.diff(_t(input, "diff"), n, dim, prepend, append))


def trace(input):
    """The sum of a matrix's diagonal."""
    return RD.trace(_t(input, "trace"))


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the rows (variables) of ``input`` over its columns."""
    return RD.cov(_t(input, "cov"), correction, fweights, aweights)


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input``."""
    return RD.corrcoef(_t(input, "corrcoef"))


def renorm(input, p, dim, maxnorm, *, out=None):
    """Slices along ``dim`` with p-norm above ``maxnorm`` scaled down to it."""
    return _into("renorm", out, RD.renorm(_t(input, "renorm"), _number(p), dim,
                                          _number(maxnorm)))


def renorm_(self, p, dim, maxnorm):
    return _inplace("renorm_", self, renorm, p, dim, maxnorm)


# ---- integration and differences ---------------------------------------------------------------
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim`` (samples at ``x`` or spaced ``dx``, default 1).

    >>> ember.trapezoid(ember.tensor([1., 2., 3.])).item()
    4.0
    """
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: pass "
                        "either x or dx, not both")
    return RD.trapezoid(_t(y, "trapezoid", "y"), x, _number(dx), dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim``."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments:"
                        " pass either x or dx, not both")
    return RD.cumulative_trapezoid(_t(y, "cumulative_trapezoid", "y"), x, _number(dx), dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimated derivatives of ``input`` along each dim in ``dim`` (a tuple of tensors):
    central differences inside, one-sided at the edges.

    >>> [g.tolist() for g in ember.gradient(ember.tensor([1., 4., 9., 16.]))]
    [[3.0, 4.0, 6.0, 7.0]]
    """
    return RD.numerical_gradient(_t(input, "gradient"), spacing, dim, edge_order)


# ---- scatter_reduce, index_reduce --------------------------------------------------------------
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with ``src`` reduced (sum, prod, mean, amax, amin) into the positions
    ``index`` names along ``dim``."""
    O.refuse_barebones("scatter_reduce", input)   # (index_reduce takes uint16, ...)
    return RD.scatter_reduce(_t(input, "scatter_reduce"), dim, index, src, reduce,
                             include_self)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    return _inplace("scatter_reduce_", self, scatter_reduce, dim, index, src, reduce,
                    include_self=include_self)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """``input`` with slice ``i`` of ``source`` reduced (prod, mean, amax, amin) into slice
    ``index[i]`` along ``dim``."""
    return RD.index_reduce(_t(input, "index_reduce"), dim, index, source, reduce, include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return _inplace("index_reduce_", self, index_reduce, dim, index, source, reduce,
                    include_self=include_self)


TENSOR_METHODS: dict = {name: globals()[name] for name in (
    "cummax", "cummin", "logcumsumexp", "cumsum_", "cumprod_", "median", "nanmedian", "mode",
    "kthvalue", "quantile", "nanquantile", "msort", "aminmax", "bincount", "histc",
    "histogram", "unique", "unique_consecutive", "diff", "trace", "cov", "corrcoef", "dist",
    "renorm", "renorm_", "scatter_reduce", "scatter_reduce_", "index_reduce",
    "index_reduce_")}
