"""Counting (bincount, histc, histogramdd), searching (searchsorted, bucketize, isin), unique and
unique_consecutive, and scatter_reduce / index_reduce: composites over sort, gather, scatter,
cumsum and elementwise ops, so they run on every backend. Ops with data-dependent output
sizes (unique, bincount) read one number back from the device. Re-exported by
:mod:`.reduction`.
"""
from __future__ import annotations

import math

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..grad_mode import below_autograd
from ..schema import composite, defop, gradient
from ._reduction_core import _arange, _keep_shape, _range, _shifted, _tname, any_
from .copy import linspace
from .index import cat

__all__ = []

E = O.elementwise


# ---- counting: bincount, histc, histogram, histogramdd ----------------------------------------
defop("bincount", "reduction", "bincount(Tensor self, Tensor? weights=None, int minlength=0) -> "
      "Tensor", "(composite only)", promotion="none", differentiable=False)
defop("histc", "reduction", "histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> "
      "Tensor", "(composite only)", promotion="none", differentiable=False)
defop("histogramdd", "reduction", "histogramdd(Tensor self, int[]|Tensor[] bins, *, float[]? "
      "range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] "
      "bin_edges)", "(composite only)", promotion="none", differentiable=False)


@composite("bincount")
def bincount(x, weights=None, minlength=0):
    """Counts (or summed weights) of each non-negative integer in ``x``."""
    if x.dtype.is_floating_point or x.dtype is D.bool_ or x.dtype in D.BAREBONES_UNSIGNED:
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
