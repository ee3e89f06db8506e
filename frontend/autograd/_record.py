"""Recording: the one path by which every op enters the graph.

The dispatcher's entry points call :func:`record_op` (installed as
``ember.dispatcher.grad_mode.HOOKS.op``) when grad mode is on, the op has a gradient
formula in its definition and an input requires grad; views call :func:`record_view`.
Both run the op below autograd and attach one :class:`~._engine.Node` to the result. What
a node saves follows from the names its formula asks for (``schema.Formula``); the
engine reduces each gradient to its input's shape (broadcasting) and dtype.

In-place ops are recorded on the tensor they write; writing into a view of a tensor in
the graph rebases that tensor (PyTorch's CopySlices, below).
"""
from __future__ import annotations

from ember.dispatcher import core as C
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.grad_mode import HOOKS, MODE, below_autograd
from ember.dispatcher.schema import Unsaved, parse_signature
from ember.dispatcher.core import TensorBase

from ._engine import SavedTensor, _edge, node_type
from .anomaly_mode import ANOMALY, forward_trace

__all__ = ["record_op", "record_view", "sum_to", "check_inplace", "install"]


# ---- what a formula asks for, resolved once per op ----------------------------------------
class _Plan:
    """How to build the saved values of one op's formula from a call."""
    __slots__ = ("getters", "saves_self", "self_users", "vjp", "names", "node_cls")

    def __init__(self, o):
        f = o.grad
        # the node class, where it does not depend on the call
        self.node_cls = None if callable(o.node) else node_type(o.node or _signature_name(o))
        inputs = {n: i for i, n in enumerate(o.inputs)}
        self.names = f.names
        # input name -> the inputs whose gradients read it (Formula.needs)
        users: dict = {}
        for i, used in (f.needs or {}).items():
            for n in used:
                if n in inputs or n.startswith("result"):
                    users.setdefault(n, []).append(inputs[i])
        getters = []
        for n in f.names:
            get = _getter(o, f, n, inputs)
            if n in users:
                get = _when_needed(get, inputs.get(n), tuple(users[n]))
            getters.append(get)
        self.getters = tuple(getters)
        self.saves_self = o.inputs[:1] and o.inputs[0] in f.names
        # (an in-place op copies self before writing only when its value will be read)
        self.self_users = tuple(users[o.inputs[0]]) if self.saves_self and \
            o.inputs[0] in users else None
        self.vjp = _make_vjp(f.fn, f.names)


def _requires(v) -> bool:
    return isinstance(v, TensorBase) and v.requires_grad


def _when_needed(get, i, users):
    """``get``, when an input whose gradient reads input ``i`` (or, ``i`` None, the
    result) requires grad; otherwise an ``Unsaved`` (input ``i`` is not kept, nor checked
    against in-place writes), or None for a result."""
    def saved(ins, attrs, res):
        for j in users:
            if _requires(ins[j]):
                return get(ins, attrs, res)
        if i is None:
            return None
        v = ins[i]
        return Unsaved(v) if isinstance(v, TensorBase) else v
    return saved


def _getter(o, f, n, inputs):
    if n in inputs:
        i = inputs[n]
        return lambda ins, attrs, res: _save(ins[i])
    if n == "result":
        return lambda ins, attrs, res: SavedTensor(res[0], is_output=True)
    if n.startswith("result") and n[6:].isdigit():
        k = int(n[6:])
        return lambda ins, attrs, res: _save(res[k])
    for suffix in ("_shape", "_dtype", "_device"):
        if n.endswith(suffix) and n[:-len(suffix)] in inputs:
            i, field = inputs[n[:-len(suffix)]], suffix[1:]
            if field == "shape":
                return lambda ins, attrs, res: _meta(ins[i], "shape")
            return lambda ins, attrs, res: _meta(ins[i], field)
    default = f.defaults.get(n, _MISSING)

    def attr(ins, attrs, res):
        v = attrs.get(n, default)
        if v is _MISSING:
            raise RuntimeError(f"{o.name}: the gradient formula needs {n!r}, which the call "
                               f"does not provide (inputs: {', '.join(o.inputs)}; attributes: "
                               f"{', '.join(attrs) or 'none'})")
        return _save(v)
    return attr


_MISSING = object()


def _save(v):
    return SavedTensor(v) if isinstance(v, TensorBase) else v


def _meta(v, field):
    """``v.shape`` (or dtype, device); for a tensor list, one per tensor."""
    if isinstance(v, TensorBase):
        return getattr(v, field)
    if isinstance(v, (list, tuple)):
        return tuple(_meta(t, field) for t in v)
    return None


def _make_vjp(fn, names=()):
    def vjp(g, saved, ctx, metas):
        grads = fn(g, *saved)
        if type(grads) is not tuple:
            grads = (grads,)
        flat = grads
        for gi in grads:
            if type(gi) is list:  # (a list input's gradients, flattened)
                flat = []
                for gj in grads:
                    if type(gj) is list:
                        flat.extend(gj)
                    else:
                        flat.append(gj)
                break
        out = []
        for gi, m in zip(flat, metas):
            if gi is None or m is None:
                out.append(None)
            elif gi.shape == m[0] and (gi.dtype is m[1] or m[1]._kind < 2):
                out.append(gi)
            else:
                out.append(_fit(gi, m))
        return tuple(out)
    vjp.names = names  # (grad_fn._saved_<name> reads them)
    return vjp


def _fit(g, meta):
    """A gradient brought to its input's shape (summing broadcast dims) and dtype."""
    if g is None or meta is None:
        return None
    shape, dtype = meta
    if g.shape != shape:
        g = sum_to(g, shape)
    if g.dtype is not dtype and dtype._kind >= 2:
        if g.dtype._kind == 3 and dtype._kind == 2:  # a real input's part of a complex grad
            g = V.complex_part(g, 0)
        g = O.to(g, None, dtype)
    return g


_PLANS: dict = {}


def _plan(o):
    p = _PLANS.get(o.name)
    if p is None or p.names is not o.grad.names:
        p = _PLANS[o.name] = _Plan(o)
    return p


# ---- recording an op -----------------------------------------------------------------------
def record_op(o, run, inputs, attrs, inplace=False):
    """Run ``run()`` below autograd and attach the op's node to its result."""
    plan = _PLANS.get(o.name)  # (_plan, inline)
    if plan is None or plan.names is not o.grad.names:
        plan = _plan(o)
    before = inputs
    if inplace:
        self = inputs[0]
        check_inplace(o.name, self)
        users = plan.self_users
        if plan.saves_self and (users is None or any(_requires(inputs[j]) for j in users)):
            # the formula needs self's value from before the write
            with below_autograd():
                old = O.clone(self)
            old.requires_grad = self.requires_grad
            old.grad_fn = _edge(self)   # (the edge into self's output of its node)
            before = (old,) + tuple(inputs[1:])
    prev = MODE.grad  # (below_autograd, inline: this runs for every recorded op)
    MODE.grad = False
    try:
        res = run()
    finally:
        MODE.grad = prev
    outs = res if type(res) is tuple else (res,)
    first = outs[0]
    if first.dtype._kind < 2:
        return res
    edges, metas = [], []
    for a in inputs:
        ta = type(a)
        if ta is list or ta is tuple:
            for t in a:
                _add_edge(t, edges, metas)
        elif a is None:
            edges.append(None)
            metas.append(None)
        else:
            _add_edge(a, edges, metas)
    saved = [get(before, attrs, outs) for get in plan.getters]
    cls = plan.node_cls
    if cls is None:
        name = o.node(inputs) if callable(o.node) else (o.node or _signature_name(o))
        cls = node_type(name)
    node = cls(plan.vjp, tuple(edges), saved, {}, tuple(metas))
    if ANOMALY.enabled:
        node._ctx["anomaly_trace"] = forward_trace()
    first.requires_grad = True
    first.grad_fn = node
    if inplace:
        _propagate_to_base(first)
    return res


def _add_edge(a, edges, metas):
    if isinstance(a, TensorBase):
        if a._base is not None and a._view_gen != a._base._view_gen:
            _refresh_view(a)
        fn = a.grad_fn
        edges.append(fn if fn is not None and not fn._multi else _edge(a))
        metas.append((a.shape, a.dtype))
    else:
        edges.append(None)
        metas.append(None)


_SIG_NAMES: dict = {}


def _signature_name(o) -> str:
    n = _SIG_NAMES.get(o.name)
    if n is None:
        n = _SIG_NAMES[o.name] = parse_signature(o.signature)[0].rstrip("_")
    return n


def check_inplace(name, self):
    """PyTorch's errors for in-place writes into leaves that require grad."""
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           f"operation ({name}_).")
    base = self._base
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                           f"an in-place operation ({name}_).")
    if base is not None and base.dtype is not self.dtype:
        raise NotImplementedError(
            f"{name}_(): an in-place write, recorded for autograd, into a view of another "
            f"dtype ({self.dtype.name} view of a {base.dtype.name} tensor: .real, .imag, "
            "view_as_real) is not supported by ember; compute the new parts and join them "
            "with ember.complex() instead")


# ---- views -----------------------------------------------------------------------------------
def record_view(kind, fn, x, args, kwargs, name, ctx):
    """Run view ``fn`` and record it: its gradient goes back by ``kind`` (views.GRADIENTS)."""
    res = fn(x, *args, **kwargs)
    if res is None or res is x:  # not a view (basic_index of a key with index tensors)
        return res
    if res._storage is x._storage:
        res._base = base = x if x._base is None else x._base
        res._view_gen = base._view_gen
    if kind == "as_view":
        ctx["replay"] = _replay(fn, x, args, kwargs)
        # (distinct memory: distinct elements of the input, which the backward then adds
        # into in place; an input that overlaps itself just takes the general path)
        ctx["distinct"] = V.non_overlapping(res)
    if x._base is not None and x._view_gen != x._base._view_gen:
        _refresh_view(x)
    edge = _edge(x)
    node = node_type(name)(_view_vjp(kind), (edge,), [], ctx, ((x.shape, x.dtype),))
    res.requires_grad = True
    res.grad_fn = node
    return res


def _replay(fn, x, args, kwargs):
    """The view re-applied to another tensor of ``x``'s shape (the index map)."""
    if fn.__name__ == "as_strided":
        if not C.is_contiguous(x):
            raise NotImplementedError("as_strided() on a non-contiguous tensor that requires "
                                      "grad is not supported yet; call .contiguous() first")
        size, stride = args[0], args[1]
        off = args[2] if len(args) > 2 else kwargs.get("storage_offset")
        rel = 0 if off is None else off - x._offset
        return lambda t: V.as_strided.raw(t, size, stride, t._offset + rel)
    return lambda t: fn(t, *args, **kwargs)


_VIEW_VJPS: dict = {}


def _view_vjp(kind):
    f = _VIEW_VJPS.get(kind)
    if f is None:
        grad = V.GRADIENTS[kind]

        def f(g, saved, ctx, metas):
            return (grad(g, ctx, metas[0][0]),)
        _VIEW_VJPS[kind] = f
    return f


# ---- in-place writes through views (PyTorch's CopySlices) ------------------------------------
# Writing into a view ``v`` of ``base`` changes ``base`` too. After the write is recorded on
# ``v``, ``base`` gets a CopySlices node: its gradient flows to the old base outside the
# view's elements and, for the elements inside, to the node that produced the new values.
# ``v`` (and, lazily, every older view of ``base``: ``_view_gen`` tells them apart) becomes
# an as_strided view of the new base.

def _view_geometry(v, base):
    if not C.is_contiguous(base):
        raise NotImplementedError(
            "in-place modification of a view of a non-contiguous tensor that requires grad "
            "is not supported; make the base contiguous first")
    return tuple(v.shape), tuple(v._stride), v._offset - base._offset


def _as_strided_view(base, geom):
    shape, stride, rel = geom
    return record_view("as_view", lambda t: V.as_strided.raw(t, shape, stride, t._offset + rel),
                       base, (), {}, "AsStridedBackward0", {})


def _propagate_to_base(v):
    """After an in-place write recorded on view ``v``: rebase ``v._base`` (see above)."""
    base = v._base
    if base is None or not MODE.grad or not (v.requires_grad or base.requires_grad):
        return v
    geom = _view_geometry(v, base)
    node = node_type("CopySlices")(_copy_slices, (_edge(base), _edge(v)), [],
                                   {"geom": geom}, ((base.shape, base.dtype),
                                                    (v.shape, v.dtype)))
    base.requires_grad = True
    base.grad_fn = node
    base._view_gen += 1
    fresh = _as_strided_view(base, geom)
    v.grad_fn = fresh.grad_fn
    v.requires_grad = True
    v._view_gen = base._view_gen
    return v


def _refresh_view(t):
    """A view made before its base was rebased by a write through another view: its graph
    edge is regenerated from the base's current graph (PyTorch does the same)."""
    base = t._base
    if base.requires_grad and base.grad_fn is not None:
        if base.dtype is not t.dtype:
            raise NotImplementedError(
                f"a {t.dtype.name} view (view_as_complex, .real, .imag, view_as_real) of a "
                f"{base.dtype.name} tensor that was then written in place through another "
                "view, recorded for autograd, is not supported by ember; use the tensor "
                "itself, or make the view again after the write")
        fresh = _as_strided_view(base, _view_geometry(t, base))
        t.grad_fn = fresh.grad_fn
        t.requires_grad = True
    t._view_gen = base._view_gen


def _copy_slices(g, saved, ctx, metas):
    """The base after a write through one of its views: elements inside the view came from
    the write (gradient to the view's new value), the others from the old base."""
    shape, stride, rel = ctx["geom"]
    g = O.contiguous(g)
    inside = V.as_strided(g, shape, stride, g._offset + rel)
    mask = ctx.get("mask")
    if mask is None or mask.device != g.device or mask.dtype is not g.dtype:
        with below_autograd():
            mask = O.full(metas[0][0], 1, g.dtype, g.device)
            O.fill_(V.as_strided(mask, shape, stride, rel), 0)
        ctx["mask"] = mask
    return O.elementwise("mul", g, mask), inside


# ---- helpers -----------------------------------------------------------------------------------
sum_to = V.sum_to


def install():
    """Make the dispatcher record through this module."""
    HOOKS.op = record_op
    HOOKS.view = record_view
