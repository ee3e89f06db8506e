"""Distances, differences and statistics (cdist, dist, diff, trace, cov, corrcoef, renorm) and
numerical calculus (trapezoid, cumulative_trapezoid, gradient): composites over reductions,
matrix products and elementwise ops. Re-exported by :mod:`.reduction`.
"""
from __future__ import annotations

import math

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient
from ._reduction_core import _HALF, _no_bool, _norm_backward, _range, _tname, _wide, norm
from .index import cat
from .linalg import matmul, mm
from ..warn import warn as _warn

__all__ = []

E = O.elementwise


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
@O.recorded("dist")
def dist(self, other, p=2):
    return norm(E("sub", self, other), p)


@gradient("dist")
def _(g, self, other, result, p=2):
    """The norm's gradient at ``self - other``, summed back to each input's shape (one node,
    ``DistBackward0``, as PyTorch records it)."""
    (gd,) = _norm_backward(g, E("sub", self, other), result, p)
    if gd is None:
        return None, None
    return V.sum_to(gd, tuple(self.shape)), V.sum_to(E("neg", gd), tuple(other.shape))


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
        _warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
              "than the number of observations.", UserWarning)
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
