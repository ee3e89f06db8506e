"""Differentiable entry points: run the dispatcher op, then record a graph node.

The functional API (``_functions.py``) and ``Tensor`` methods call these instead of the
dispatcher directly. When grad mode is off or no input requires grad, the cost is one
flag test and a scan of the inputs.
"""
from __future__ import annotations

from ember.dispatcher import _core as C
from ember.dispatcher import _indexing as IX
from ember.dispatcher import composites as CP
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher._core import TensorBase

from ._engine import _NODE_TYPES, MODE, SavedTensor, _edge, node_type

_FORMULAS = None


def _formulas():
    global _FORMULAS
    if _FORMULAS is None:
        from ._formulas import FORMULAS
        _FORMULAS = FORMULAS
    return _FORMULAS


def _requires(args) -> bool:
    for a in args:
        if isinstance(a, TensorBase) and a.requires_grad:
            return True
    return False


def record(op, out, inputs, ctx=None, formula=None):
    """Attach a ``grad_fn`` for ``op`` to ``out`` (inputs: tensors or other values)."""
    f = (_FORMULAS or _formulas())[formula or op]
    return _attach(op, f, out, inputs, inputs, ctx or {})


def _attach(op, f, out, inputs, saved_from, ctx):
    """Build the node: edges from ``inputs``, saved values from ``saved_from``."""
    edges = []
    shapes = []
    for a in inputs:
        if isinstance(a, TensorBase):
            if a._base is not None and a._view_gen != a._base._view_gen:
                _refresh_view(a)
            edges.append(a.grad_fn if a.grad_fn is not None else _edge(a))
            shapes.append(a.shape)
        else:
            edges.append(None)
            shapes.append(None)
    saved = []
    for i in f.save:
        v = saved_from[i]
        saved.append(SavedTensor(v) if isinstance(v, TensorBase) else v)
    if f.out:
        saved.append(SavedTensor(out, is_output=True))
    node = (_NODE_TYPES.get(op) or node_type(op))(f.vjp, tuple(edges), saved, ctx,
                                                  tuple(shapes))
    out.requires_grad = True
    out.grad_fn = node
    return out


def _grad_vjp_with_broadcast(vjp):
    """Wrap an elementwise VJP so each gradient is summed back to its input's shape."""
    def wrapped(g, s, ctx, shapes):
        grads = vjp(g, s, ctx, shapes)
        return tuple(None if gi is None or shp is None else sum_to(gi, shp)
                     for gi, shp in zip(grads, shapes))
    return wrapped


_BROADCAST_CACHE: dict = {}


def _elementwise_formula(name):
    f = _BROADCAST_CACHE.get(name)
    if f is None:
        base = _formulas()[name]
        f = _BROADCAST_CACHE[name] = base._replace(vjp=_grad_vjp_with_broadcast(base.vjp))
    return f


def _no_out_grad(name, out, args):
    if out is not None and MODE.grad and _requires(args):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def _check_inplace(name, self):
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           f"operation ({name}_).")
    base = self._base
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                           f"an in-place operation ({name}_).")


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
    return view("as_view", base, fn=lambda t: V.as_strided(t, shape, stride, t._offset + rel),
                name="AsStridedBackward0")


def _propagate_to_base(v):
    """After an in-place write recorded on view ``v``: rebase ``v._base`` (see above)."""
    base = v._base
    if base is None or not MODE.grad or not (v.requires_grad or base.requires_grad):
        return v
    geom = _view_geometry(v, base)
    _attach("CopySlices", _formulas()["copy_slices"], base, (base, v), (base, v),
            {"geom": geom})
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
        fresh = _as_strided_view(base, _view_geometry(t, base))
        t.grad_fn = fresh.grad_fn
        t.requires_grad = True
    t._view_gen = base._view_gen


def _record_elementwise(name, out, args, attrs):
    f = _BROADCAST_CACHE.get(name) or _elementwise_formula(name)
    return _attach(name, f, out, args, args, attrs)


def ew(name, *args, out=None, inplace=False, **attrs):
    """Elementwise op with autograd (the frontend's ``E``)."""
    if not MODE.grad or not _requires(args):
        return O.elementwise(name, *args, out=out, inplace=inplace, **attrs)
    if name not in _formulas():  # comparisons, bitwise, ... : no gradient
        return O.elementwise(name, *args, out=out, inplace=inplace, **attrs)
    _no_out_grad(name, out, args)
    if inplace:
        return _inplace(name, args, attrs)
    res = O.elementwise(name, *args, **attrs)
    if not res.dtype.is_floating_point:
        return res
    if name == "pow":
        return _record_pow(res, args)
    return _record_elementwise(name, res, args, attrs)


def _record_pow(res, args):
    """PyTorch names pow's nodes by operand kinds: tensor**scalar 0, tensor**tensor 1,
    scalar**tensor 2."""
    a, b = args
    kind = "PowBackward1" if isinstance(a, TensorBase) and isinstance(b, TensorBase) else (
        "PowBackward0" if isinstance(a, TensorBase) else "PowBackward2")
    f = _BROADCAST_CACHE.get("pow") or _elementwise_formula("pow")
    return _attach(kind, f, res, args, args, {})


def _inplace(name, args, attrs):
    self = args[0]
    _check_inplace(name, self)
    f = _elementwise_formula(name)
    # the formula may need self's value from before the write
    before = list(args)
    if 0 in f.save:
        before[0] = O.clone(self)
        before[0].requires_grad = self.requires_grad
        before[0].grad_fn = self.grad_fn
    node_inputs = tuple(args)
    O.elementwise(name, *args, inplace=True, **attrs)
    # edges and saved inputs come from before the write; a saved output from after it
    return _propagate_to_base(_attach(name, f, self, node_inputs, before, attrs))


def where(cond, a, b, out=None):
    args = (cond, a, b)
    if not MODE.grad or not _requires(args):
        return O.where(cond, a, b, out=out)
    _no_out_grad("where", out, args)
    res = O.where(cond, a, b)
    return _record_elementwise("where", res, args, {})


def clamp(x, min=None, max=None, out=None, inplace=False):
    args = (x, min, max)
    if not MODE.grad or not _requires(args):
        return O.clamp(x, min, max, out=out, inplace=inplace)
    _no_out_grad("clamp", out, args)
    if inplace:
        _check_inplace("clamp", x)
        # the node must keep x's value from before the write: compute from a copy
        return copy_(x, clamp(clone(x), min, max))
    res = O.clamp(x, min, max)
    return _record_elementwise("clamp", res, args, {})


def sum_to(g, shape):
    """Sum a broadcast gradient back to ``shape``."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    dims = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and g.shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        g = reduce("sum", g, tuple(dims), True)
    if lead:
        g = view("view", g, shape) if g.shape != shape else g
    return g if g.shape == shape else view("view", g, shape)


def add(a, b):
    return ew("add", a, b)


# ---- reductions, scans, softmax --------------------------------------------------------------
def reduce(name, x, dim=None, keepdim=False, dtype=None, out=None, **attrs):
    if not MODE.grad or not x.requires_grad or name not in _formulas():
        return O.reduce(name, x, dim, keepdim, dtype, out, **attrs)
    _no_out_grad(name, out, (x,))
    res = O.reduce(name, x, dim, keepdim, dtype, **attrs)
    if not res.dtype.is_floating_point:
        return res
    dims = C.normalize_dims(dim, len(x.shape), name)
    src = x
    if dtype is not None and x.dtype is not res.dtype:
        src = to(x, None, res.dtype)
    ctx = dict(attrs, dims=dims, keepdim=keepdim)
    return record(_PUBLIC.get(name, name), res, (src,), ctx, formula=name)


_PUBLIC = {"max": "amax", "min": "amin"}


def std(x, dim=None, keepdim=False, correction=1):
    if not MODE.grad or not x.requires_grad:
        return O.elementwise("sqrt", O.reduce("var", x, dim, keepdim, correction=correction))
    res = O.elementwise("sqrt", O.reduce("var", x, dim, keepdim, correction=correction))
    dims = C.normalize_dims(dim, len(x.shape), "std")
    return record("std", res, (x,), dict(dims=dims, keepdim=keepdim, correction=correction))


def linear(x, w, b=None):
    """``x @ w.T + b`` as one node: the weight gradient comes out contiguous (g.T @ x)."""
    lead = x.shape[:-1]
    x2 = x if len(x.shape) == 2 else V.reshape(x, (C.numel(lead), x.shape[-1]))
    res = CP.mm(x2, V.t(w))
    if b is not None:
        O.elementwise("add", res, b, inplace=True)
    if len(x.shape) != 2:
        res = V.view(res, lead + (w.shape[0],))
    if not MODE.grad or not _requires((x, w, b)):
        return res
    return record("linear", res, (x, w, b))


def mm(a, b):
    res = CP.mm(a, b)
    if not MODE.grad or not _requires((a, b)):
        return res
    return record("mm", res, (a, b))


def scan(name, x, dim, dtype=None, out=None):
    if not MODE.grad or not x.requires_grad:
        return O.scan(name, x, dim, dtype, out)
    _no_out_grad(name, out, (x,))
    d = C.normalize_dim(dim, len(x.shape), name) if x.shape else 0
    src = to(x, None, dtype) if dtype is not None else x
    res = O.scan(name, src, dim)
    return record(name, res, (src,), {"dim": d})


def softmax_op(name, x, dim, dtype=None):
    if not MODE.grad or not x.requires_grad:
        return O.softmax_op(name, x, dim, dtype)
    src = to(x, None, dtype) if dtype is not None else x
    res = O.softmax_op(name, src, dim)
    d = C.normalize_dim(dim, len(x.shape), name) if x.shape else 0
    return record(name, res, (src,), {"dim": d})


# ---- indexing ------------------------------------------------------------------------------
def gather(x, dim, index, out=None):
    if not MODE.grad or not x.requires_grad:
        return O.gather(x, dim, index, out=out)
    _no_out_grad("gather", out, (x,))
    res = O.gather(x, dim, index)
    d = C.normalize_dim(dim, len(x.shape), "gather") if x.shape else 0
    return record("gather", res, (x, dim, index), {"dim": d})


def scatter(x, dim, index, src, reduce=None):
    """Out-of-place scatter with autograd for ``x`` and ``src``."""
    args = (x, dim, index, src)
    res = O.scatter_(O.clone(x), dim, index, src, reduce=reduce)
    if not MODE.grad or not _requires(args):
        return res
    d = C.normalize_dim(dim, len(x.shape), "scatter")
    return record("scatter", res, args, {"dim": d, "reduce": "add" if reduce in ("add", "sum")
                                          else reduce})


# ---- convolution and pooling building blocks -------------------------------------------
def im2col(x, kernel, dilation, padding, stride, blocks=None, value=0, batch_inner=False):
    """Sliding blocks (N, C, *kernel, *blocks); its gradient is one col2im."""
    res = O.im2col(x, kernel, dilation, padding, stride, blocks, value, batch_inner)
    if not MODE.grad or not x.requires_grad:
        return res
    return record("im2col", res, (x,), {"size": tuple(x.shape[2:]), "kernel": kernel,
                                        "dilation": dilation, "padding": padding,
                                        "stride": stride})


def col2im(cols, size, kernel, dilation, padding, stride):
    """Blocks summed back into (N, C, *size); its gradient is one im2col."""
    res = O.col2im(cols, size, kernel, dilation, padding, stride)
    if not MODE.grad or not cols.requires_grad:
        return res
    blocks = tuple(cols.shape[2 + len(kernel):])
    return record("col2im", res, (cols,), {"blocks": blocks, "kernel": kernel,
                                           "dilation": dilation, "padding": padding,
                                           "stride": stride})


def max_pool(x, kernel, dilation, padding, stride, blocks):
    """(values, indices); the values' gradient goes to the chosen input positions."""
    values, indices = O.max_pool(x, kernel, dilation, padding, stride, blocks)
    if MODE.grad and x.requires_grad:
        record("max_pool", values, (x, indices))
    return values, indices


def index(x, key):
    res = IX.index(x, key)
    if not MODE.grad or not x.requires_grad:
        return res
    return record("index", res, (x,), {"key": key})


def index_put(x, key, values, accumulate=False):
    res = IX.index_put_(O.clone(x), key, values, accumulate)
    if not MODE.grad or not _requires((x, values)):
        return res
    return record("index_put", res, (x, values), {"key": key, "accumulate": accumulate})


def index_put_(x, key, values, accumulate=False):
    if not MODE.grad or not _requires((x, values)):
        return IX.index_put_(x, key, values, accumulate)
    _check_inplace("index_put", x)
    res = index_put(x, key, values, accumulate)
    return _rebase(x, res)


def copy_(dst, src):
    base = dst._base
    if not MODE.grad or not (_requires((dst, src)) or (base is not None and base.requires_grad)):
        return O.copy_(dst, src)
    _check_inplace("copy", dst)
    res = expand(to(src, dst.device, dst.dtype), dst.shape) if src.shape != dst.shape else \
        to(src, dst.device, dst.dtype)
    res = clone(res)
    return _rebase(dst, res)


def _rebase(dst, res):
    """Write ``res`` into ``dst`` and make ``dst`` carry ``res``'s graph."""
    O.copy_(dst, res)
    dst.grad_fn = res.grad_fn
    dst.requires_grad = res.requires_grad
    return _propagate_to_base(dst)


def bmm(a, b, out=None):
    if not MODE.grad or not _requires((a, b)):
        return O.bmm(a, b, out=out)
    _no_out_grad("bmm", out, (a, b))
    return record("bmm", O.bmm(a, b), (a, b))


def cat(tensors, dim=0):
    tensors = list(tensors)
    res = CP.cat(tensors, dim)
    if not MODE.grad or not _requires(tensors):
        return res
    live = [t for t in tensors if not (len(t.shape) == 1 and t.shape[0] == 0)]
    d = C.normalize_dim(dim, len(live[0].shape), "cat") if live else 0
    return record("cat", res, tuple(tensors), {"dim": d})


def to(x, device=None, dtype=None, copy=False):
    res = O.to(x, device, dtype, copy)
    if res is x or not MODE.grad or not x.requires_grad or not res.dtype.is_floating_point:
        return res
    return record("copy", res, (x,), {"device": x.device, "dtype": x.dtype})


def clone(x):
    res = O.clone(x)
    if not MODE.grad or not x.requires_grad:
        return res
    return record("clone", res, (x,), formula="view")


def contiguous(x):
    return x if C.is_contiguous(x) else clone(x)


# ---- views ------------------------------------------------------------------------------------
def _mark_view(res, x):
    res._base = base = x._base if x._base is not None else x
    res._view_gen = base._view_gen
    return res


def view(kind, x, *args, fn=None, name=None, **ctx):
    """Run a view function and record it. ``kind``: 'view' (reshape-like), 'permute',
    'expand' or 'as_view' (anything else, replayed for the gradient)."""
    if fn is None:
        fn = V.view
    res = fn(x, *args)
    if res is x:
        return res
    if res._storage is x._storage:
        _mark_view(res, x)
    if not MODE.grad or not x.requires_grad:
        return res
    if kind == "as_view":
        ctx = {"replay": lambda t: fn(t, *args)}
    return record(name or (fn.__name__ if kind == "as_view" else kind), res, (x,), ctx,
                  formula=kind)


def expand(x, shape):
    return view("expand", x, shape, fn=C.expand_to)
