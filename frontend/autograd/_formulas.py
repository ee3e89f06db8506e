"""The gradient table: one vector–Jacobian product per differentiable op.

Each entry is ``Formula(vjp, save, out)``: ``save`` lists the input positions the VJP
needs, ``out`` whether it needs the op's output. ``vjp(g, s, ctx, shapes)`` receives the
incoming gradient ``g``, the saved tensors ``s`` (inputs in ``save`` order, then the
output), the op's attributes ``ctx`` and the input shapes, and returns one gradient per
input (None where there is none). Formulas are written in ember ops, so with
``create_graph=True`` they are recorded too and give higher-order gradients.
Gradients are reduced to each input's shape by the engine's caller (broadcasting).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple


class Formula(NamedTuple):
    vjp: Callable
    save: tuple = ()
    out: bool = False


def _F():
    from .. import _functions as F
    return F


def _zeros(shape, like):
    from .. import _creation as K
    return K.zeros(shape, dtype=like.dtype, device=like.device)


FORMULAS: dict[str, Formula] = {}


def formula(name, save=(), out=False):
    def deco(fn):
        FORMULAS[name] = Formula(fn, tuple(save), out)
        return fn
    return deco


# ---- elementwise: binary --------------------------------------------------------------
@formula("add")
def _add(g, s, ctx, shapes):
    return g, g


@formula("sub")
def _sub(g, s, ctx, shapes):
    return g, -g


@formula("mul", save=(0, 1))
def _mul(g, s, ctx, shapes):
    a, b = s
    return g * b, g * a


@formula("div", save=(0, 1))
def _div(g, s, ctx, shapes):
    a, b = s
    if ctx and ctx.get("rounding_mode") is not None:
        return None, None
    ga = g / b
    return ga, -ga * a / b


@formula("pow", save=(0, 1), out=True)
def _pow(g, s, ctx, shapes):
    F = _F()
    a, b, out = s
    ga = gb = None
    if getattr(a, "requires_grad", False):
        ga = g * b * F.pow(a, b - 1)
        if isinstance(b, (int, float)):
            if b == 0:
                ga = g * 0
        else:
            ga = F.where((a == 0) & (b == 0), 0.0, ga)
    if getattr(b, "requires_grad", False):
        if isinstance(a, (int, float)):
            gb = g * out * math.log(a) if a > 0 else g * 0
        else:
            gb = g * F.where(a > 0, out * F.log(F.where(a > 0, a, 1.0)), 0.0)
    return ga, gb


def _max_min_vjp(g, a, b, pick_a):
    F = _F()
    tie = a == b
    half = g / 2
    ga = F.where(tie, half, F.where(pick_a, g, 0.0))
    gb = F.where(tie, half, F.where(pick_a, 0.0, g))
    return ga, gb


@formula("maximum", save=(0, 1))
def _maximum(g, s, ctx, shapes):
    a, b = s
    return _max_min_vjp(g, a, b, a > b)


@formula("minimum", save=(0, 1))
def _minimum(g, s, ctx, shapes):
    a, b = s
    return _max_min_vjp(g, a, b, a < b)


@formula("fmod", save=(0, 1))
def _fmod(g, s, ctx, shapes):
    a, b = s
    return g, -g * _F().trunc(a / b)


@formula("remainder", save=(0, 1))
def _remainder(g, s, ctx, shapes):
    a, b = s
    return g, -g * _F().floor(a / b)


# ---- elementwise: unary -----------------------------------------------------------------
@formula("neg")
def _neg(g, s, ctx, shapes):
    return (-g,)


@formula("exp", out=True)
def _exp(g, s, ctx, shapes):
    return (g * s[0],)


@formula("expm1", out=True)
def _expm1(g, s, ctx, shapes):
    return (g * (s[0] + 1),)


@formula("log", save=(0,))
def _log(g, s, ctx, shapes):
    return (g / s[0],)


@formula("log1p", save=(0,))
def _log1p(g, s, ctx, shapes):
    return (g / (s[0] + 1),)


@formula("log2", save=(0,))
def _log2(g, s, ctx, shapes):
    return (g / (s[0] * math.log(2.0)),)


@formula("sqrt", out=True)
def _sqrt(g, s, ctx, shapes):
    return (g / (2 * s[0]),)


@formula("rsqrt", out=True)
def _rsqrt(g, s, ctx, shapes):
    o = s[0]
    return (-0.5 * g * o * o * o,)


@formula("sin", save=(0,))
def _sin(g, s, ctx, shapes):
    return (g * _F().cos(s[0]),)


@formula("cos", save=(0,))
def _cos(g, s, ctx, shapes):
    return (-g * _F().sin(s[0]),)


@formula("tan", out=True)
def _tan(g, s, ctx, shapes):
    return (g * (1 + s[0] * s[0]),)


@formula("tanh", out=True)
def _tanh(g, s, ctx, shapes):
    return (g * (1 - s[0] * s[0]),)


@formula("sigmoid", out=True)
def _sigmoid(g, s, ctx, shapes):
    return (g * s[0] * (1 - s[0]),)


@formula("erf", save=(0,))
def _erf(g, s, ctx, shapes):
    x = s[0]
    return (g * (2.0 / math.sqrt(math.pi)) * _F().exp(-x * x),)


@formula("reciprocal", out=True)
def _reciprocal(g, s, ctx, shapes):
    return (-g * s[0] * s[0],)


@formula("abs", save=(0,))
def _abs(g, s, ctx, shapes):
    return (g * _F().sign(s[0]),)


def _zero_grad(g, s, ctx, shapes):
    return (g * 0,)


for _n in ("floor", "ceil", "round", "trunc", "sign"):
    FORMULAS[_n] = Formula(_zero_grad)


# ---- elementwise: ternary ---------------------------------------------------------------
@formula("where", save=(0,))
def _where(g, s, ctx, shapes):
    F = _F()
    cond = s[0]
    return None, F.where(cond, g, 0.0), F.where(cond, 0.0, g)


@formula("lerp", save=(0, 1, 2))
def _lerp(g, s, ctx, shapes):
    a, b, w = s
    return g * (1 - w), g * w, g * (b - a)


@formula("addcmul", save=(1, 2))
def _addcmul(g, s, ctx, shapes):
    t1, t2 = s
    v = ctx.get("value", 1)
    return g, g * t2 * v, g * t1 * v


@formula("addcdiv", save=(1, 2))
def _addcdiv(g, s, ctx, shapes):
    t1, t2 = s
    v = ctx.get("value", 1)
    return g, g * v / t2, -g * v * t1 / (t2 * t2)


@formula("clamp", save=(0, 1, 2))
def _clamp(g, s, ctx, shapes):
    F = _F()
    x, lo, hi = s
    inside = None
    if lo is not None:
        inside = x >= lo
    if hi is not None:
        below = x <= hi
        inside = below if inside is None else inside & below
    gx = F.where(inside, g, 0.0)
    glo = F.where(x < lo, g, 0.0) if getattr(lo, "requires_grad", False) else None
    ghi = F.where(x > hi, g, 0.0) if getattr(hi, "requires_grad", False) else None
    return gx, glo, ghi


# ---- reductions (ctx: dims, keepdim; shapes[0] is the input's) ---------------------------
def _unreduce(g, ctx, shape):
    """Bring a reduced gradient back to ``shape`` (re-insert dims, then broadcast)."""
    if not ctx["keepdim"]:
        for d in ctx["dims"]:
            g = g.unsqueeze(d)
    return g.expand(shape)


@formula("sum")
def _sum(g, s, ctx, shapes):
    return (_unreduce(g, ctx, shapes[0]),)


@formula("mean")
def _mean(g, s, ctx, shapes):
    n = 1
    for d in ctx["dims"]:
        n *= shapes[0][d]
    return (_unreduce(g, ctx, shapes[0]) / n,)


def _amax_vjp(g, s, ctx, shapes):
    """Ties share the gradient equally (PyTorch's amax/amin)."""
    x, out = s
    keep = out
    if not ctx["keepdim"]:
        for d in ctx["dims"]:
            keep = keep.unsqueeze(d)
    mask = (x == keep).to(g.dtype)
    count = mask.sum(dim=ctx["dims"], keepdim=True)
    return (_unreduce(g, ctx, x.shape) * mask / count,)


FORMULAS["max"] = Formula(_amax_vjp, (0,), True)
FORMULAS["min"] = Formula(_amax_vjp, (0,), True)


@formula("prod", save=(0,), out=True)
def _prod(g, s, ctx, shapes):
    x, out = s
    F = _F()
    gx = _unreduce(g, ctx, x.shape)
    o = out
    if not ctx["keepdim"]:
        for d in ctx["dims"]:
            o = o.unsqueeze(d)
    if len(ctx["dims"]) == 1:
        # product of the others without dividing by x: exclusive cumprods both ways
        d = ctx["dims"][0]
        from .. import _creation as K
        ones = K.ones_like(x.narrow(d, 0, 1)) if x.shape[d] else x
        left = F.cat([ones, F.cumprod(x, d).narrow(d, 0, x.shape[d] - 1)], d)
        rev = F.flip(x, (d,))
        right = F.flip(F.cat([ones, F.cumprod(rev, d).narrow(d, 0, x.shape[d] - 1)], d), (d,))
        return (gx * left * right,)
    return (gx * F.where(x == 0, 0.0, o / F.where(x == 0, 1.0, x)),)


@formula("logsumexp", save=(0,), out=True)
def _logsumexp(g, s, ctx, shapes):
    x, out = s
    o = out
    if not ctx["keepdim"]:
        for d in ctx["dims"]:
            o = o.unsqueeze(d)
    return (_unreduce(g, ctx, x.shape) * _F().exp(x - o),)


@formula("var", save=(0,))
def _var(g, s, ctx, shapes):
    x = s[0]
    n = 1
    for d in ctx["dims"]:
        n *= x.shape[d]
    mu = x.mean(dim=ctx["dims"], keepdim=True)
    return (_unreduce(g, ctx, x.shape) * (2.0 / max(n - ctx["correction"], 0)) * (x - mu),)


@formula("std", save=(0,), out=True)
def _std(g, s, ctx, shapes):
    x, out = s
    n = 1
    for d in ctx["dims"]:
        n *= x.shape[d]
    o = out
    if not ctx["keepdim"]:
        for d in ctx["dims"]:
            o = o.unsqueeze(d)
    mu = x.mean(dim=ctx["dims"], keepdim=True)
    return (_unreduce(g, ctx, x.shape) * (x - mu) / (o * max(n - ctx["correction"], 0)),)


@formula("mm", save=(0, 1))
def _mm(g, s, ctx, shapes):
    a, b = s
    F = _F()
    ga = F.mm(g, b.t()) if a.requires_grad else None
    gb = F.mm(a.t(), g) if b.requires_grad else None
    return ga, gb


@formula("linear", save=(0, 1))
def _linear(g, s, ctx, shapes):
    F = _F()
    x, w = s
    g2 = g.reshape(-1, g.shape[-1])
    gx = F.mm(g2, w).reshape(shapes[0]) if x.requires_grad else None
    gw = F.mm(g2.t(), x.reshape(-1, x.shape[-1])) if w.requires_grad else None
    gb = g2.sum(0) if shapes[2] is not None else None
    return gx, gw, gb


@formula("cumsum")
def _cumsum(g, s, ctx, shapes):
    F = _F()
    d = ctx["dim"]
    return (F.flip(F.cumsum(F.flip(g, (d,)), d), (d,)),)


@formula("cumprod", save=(0,), out=True)
def _cumprod(g, s, ctx, shapes):
    # valid for inputs without zeros: d out_j / d x_i = out_j / x_i for j >= i
    F = _F()
    x, out = s
    d = ctx["dim"]
    rev = F.flip(F.cumsum(F.flip(g * out, (d,)), d), (d,))
    return (rev / x,)


@formula("softmax", out=True)
def _softmax(g, s, ctx, shapes):
    o = s[0]
    d = ctx["dim"]
    return (o * (g - (g * o).sum(dim=d, keepdim=True)),)


@formula("log_softmax", out=True)
def _log_softmax(g, s, ctx, shapes):
    o = s[0]
    d = ctx["dim"]
    return (g - _F().exp(o) * g.sum(dim=d, keepdim=True),)


# ---- indexing ------------------------------------------------------------------------------
@formula("gather", save=(2,))
def _gather(g, s, ctx, shapes):
    idx = s[0]
    base = _zeros(shapes[0], g)
    return _F().scatter_add(base, ctx["dim"], idx, g), None, None


@formula("im2col")
def _im2col(g, s, ctx, shapes):
    from ._record import col2im
    return (col2im(g, ctx["size"], ctx["kernel"], ctx["dilation"], ctx["padding"],
                   ctx["stride"]),)


@formula("col2im")
def _col2im(g, s, ctx, shapes):
    from ._record import im2col
    return (im2col(g, ctx["kernel"], ctx["dilation"], ctx["padding"], ctx["stride"],
                   ctx["blocks"]),)


@formula("max_pool", save=(1,))
def _max_pool(g, s, ctx, shapes):
    """Scatter-add the gradient to the input positions the indices name."""
    idx = s[0]
    shape = shapes[0]
    n, c = shape[0], shape[1]
    base = _zeros((n, c, math.prod(shape[2:])), g)
    flat = base.scatter_add_(2, idx.reshape(n, c, -1), g.reshape(n, c, -1))  # fresh: no copy
    return flat.reshape(shape), None


@formula("copy_slices")
def _copy_slices(g, s, ctx, shapes):
    """The base after a write through one of its views: elements inside the view came from
    the write (gradient to the view's new value), the others from the old base."""
    from .. import _creation as K
    shape, stride, rel = ctx["geom"]
    g = g.contiguous()
    inside = g.as_strided(shape, stride, g.storage_offset() + rel)
    mask = ctx.get("mask")
    if mask is None or mask.device != g.device or mask.dtype is not g.dtype:
        from ._engine import no_grad
        with no_grad():
            mask = K.ones(shapes[0], dtype=g.dtype, device=g.device)
            mask.as_strided(shape, stride, rel).fill_(0)
        ctx["mask"] = mask
    return g * mask, inside


@formula("scatter", save=(2,))
def _scatter(g, s, ctx, shapes):
    F = _F()
    idx = s[0]
    d = ctx["dim"]
    if ctx.get("reduce") == "add":
        gx = g
    else:
        gx = F.scatter(g, d, idx, 0.0)
    gsrc = F.gather(g, d, idx) if shapes[3] is not None else None
    return gx, None, None, gsrc


@formula("index", save=())
def _index(g, s, ctx, shapes):
    from . import _record as R
    return (R.index_put(_zeros(shapes[0], g), ctx["key"], g, accumulate=True),)


@formula("index_put", save=())
def _index_put(g, s, ctx, shapes):
    from . import _record as R
    gx = g if ctx["accumulate"] else R.index_put(g, ctx["key"], 0.0)
    gv = None
    if shapes[1] is not None:
        from ._record import sum_to
        gv = sum_to(g[ctx["key"]], shapes[1])
    return gx, gv


@formula("bmm", save=(0, 1))
def _bmm(g, s, ctx, shapes):
    a, b = s
    F = _F()
    return F.bmm(g, b.transpose(1, 2)), F.bmm(a.transpose(1, 2), g)


@formula("cat")
def _cat(g, s, ctx, shapes):
    d = ctx["dim"]
    out, start = [], 0
    for shp in shapes:
        if len(shp) == 1 and shp[0] == 0 and len(g.shape) != 1:
            out.append(None)
            continue
        n = shp[d]
        out.append(g.narrow(d, start, n))
        start += n
    return tuple(out)


@formula("copy")
def _copy(g, s, ctx, shapes):
    """Casts and device moves: the gradient goes back to the source's dtype/device."""
    return (g.to(ctx["device"], ctx["dtype"]),)


# ---- views (ctx["replay"] re-applies the view to another tensor) -----------------------
@formula("view")
def _view_like(g, s, ctx, shapes):
    return (g.reshape(shapes[0]),)


@formula("permute")
def _permute(g, s, ctx, shapes):
    perm = ctx["perm"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return (g.permute(inv),)


@formula("expand")
def _expand(g, s, ctx, shapes):
    from ._record import sum_to
    return (sum_to(g, shapes[0]),)


@formula("as_view")
def _as_view(g, s, ctx, shapes):
    """Any other view (slices, select, narrow, unfold, diagonal, as_strided): scatter the
    gradient back through the element positions the view selects."""
    from .. import _creation as K
    shape = shapes[0]
    n = 1
    for v in shape:
        n *= v
    positions = ctx["replay"](K.arange(n, device=g.device).view(shape))
    base = K.zeros(n, dtype=g.dtype, device=g.device)
    flat_pos = positions.reshape(-1)
    return (base.scatter_add(0, flat_pos, g.reshape(-1)).view(shape),)


# sort / topk / max(dim) record their values as a gather of the input at the chosen
# indices, so the gradient flows to the selected elements only (PyTorch's semantics)
FORMULAS["sort"] = FORMULAS["gather"]
