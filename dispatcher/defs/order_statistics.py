"""Scans with indices (cummax, cummin, logcumsumexp) and order statistics (median, nanmedian,
kthvalue, mode, quantile, nanquantile, aminmax): composites over sort, gather, scatter,
cumsum and elementwise ops, so they run on every backend. Re-exported by :mod:`.reduction`.
"""
from __future__ import annotations

import math

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..grad_mode import below_autograd
from ..schema import composite, defop, gradient
from ._reduction_core import (_HALF, _isnan, _keep_or_squeeze, _keep_shape, _no_bool,
                              _nonempty_dim, _ordered, _positions, _range, _shifted, _tname, all_,
                              any_)
from .index import cat, flip

__all__ = []

E = O.elementwise


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
    O.refuse_barebones(name, x)
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
    O.refuse_barebones("mode", x)
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
    O.refuse_barebones("aminmax", x)
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
