"""Indexing, joining and rearranging: gather/scatter, advanced indexing, cat, flips."""
from __future__ import annotations

import operator

from .. import core as C
from .. import _indexing as IX
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient
from . import copy as CP

__all__ = ["cat", "stack", "index", "index_put", "index_put_", "index_select", "index_add",
           "masked_fill", "flip", "roll", "repeat", "tril", "triu"]

E = O.elementwise

# ---- gather / scatter (primitives) --------------------------------------------------------
defop("gather", "index", "gather(Tensor self, int dim, Tensor index) -> Tensor",
      "(out, x, dim, index)", promotion="none", primitive=True)
defop("scatter", "index",
      "scatter(Tensor self, int dim, Tensor index, Tensor src, *, str? reduce=None) -> Tensor",
      "(out, dim, index, src, reduce=None)  # in place into out", promotion="none",
      primitive=True, inputs=("self", "src"))
defop("nonzero", "index", "nonzero(Tensor self) -> Tensor",
      "(out, x)  # out [n, ndim] int64, n counted by the dispatcher", promotion="none",
      differentiable=False)


@gradient("gather")
def _(g, self_shape, dim, index):
    d = C.normalize_dim(dim, len(self_shape)) if self_shape else 0
    return (O.scatter(O.zeros(self_shape, g.dtype, g.device), d, index, g, reduce="add"),)


@gradient("scatter")
def _(g, dim, index, reduce=None):
    d = C.normalize_dim(dim, len(g.shape))
    gx = g if reduce in ("add", "sum") else O.scatter(g, d, index, 0.0)
    return gx, O.gather(g, d, index)


@composite("nonzero")
def _nonzero(x):
    """Compaction from primitives: prefix-sum positions, then a scatter."""
    flat = O.reshape_flat(E("ne", x, 0))
    total = C.numel(flat.shape)
    mask = O.cast(flat, D.int64)
    n = int(O.item(O.reduce("sum", mask))) if total else 0
    pos = E("sub", O.scan("cumsum", mask, 0), 1) if total else mask
    target = O.where(flat, pos, n)
    buf = O.zeros((n + 1,), D.int64, x.device)
    if total:
        O.scatter_(buf, 0, target, O.arange(0, total, 1, D.int64, x.device))
    lin = V.narrow(buf, 0, 0, n)
    cols = []
    for size in reversed(x.shape):
        cols.append(E("fmod", lin, size))
        lin = E("div", lin, size, rounding_mode="floor")
    cols.reverse()
    return stack(cols, 1) if cols else O.zeros((n, 0), D.int64, x.device)


# ---- advanced indexing (x[idx], x[mask] = v) ----------------------------------------------
defop("index", "index", "index(Tensor self, indices) -> Tensor  # advanced indexing x[idx]",
      "(composite only)", promotion="none")
defop("index_put", "index",
      "index_put(Tensor self, indices, Tensor values, bool accumulate=False) -> Tensor",
      "(composite only)", promotion="none", inputs=("self", "values"))


@composite("index")
@O.recorded("index")
def index(self, key):
    return IX.index(self, key)


def index_put_(self, key, values, accumulate=False):
    """``self[key] = values`` in place (recorded on ``self`` when autograd needs it)."""
    if O.MODE.grad and (O.requires_grad((self, values)) or O._base_requires_grad(self)):
        return O.record(OPS_INDEX_PUT, lambda: IX.index_put_(self, key, values, accumulate),
                        (self, values), {"key": key, "accumulate": accumulate}, inplace=True)
    return IX.index_put_(self, key, values, accumulate)


@composite("index_put")
def index_put(self, key, values, accumulate=False):
    """A copy of ``self`` with ``values`` put at ``key``."""
    if O.MODE.grad and O.requires_grad((self, values)):
        return O.record(OPS_INDEX_PUT,
                        lambda: IX.index_put_(O.clone(self), key, values, accumulate),
                        (self, values), {"key": key, "accumulate": accumulate})
    return IX.index_put_(O.clone(self), key, values, accumulate)


OPS_INDEX_PUT = O.OPS["index_put"]


@gradient("index")
def _(g, self_shape, key):
    return (index_put(O.zeros(self_shape, g.dtype, g.device), key, g, accumulate=True),)


@gradient("index_put")
def _(g, key, accumulate):
    gx = g if accumulate else index_put(g, key, 0.0)
    return gx, index(g, key)


# ---- joining ---------------------------------------------------------------------------------
defop("cat", "copy", "cat(Tensor[] tensors, int dim=0) -> Tensor", "(composite only)",
      promotion="none", inputs=("tensors",))
defop("stack", "copy", "stack(Tensor[] tensors, int dim=0) -> Tensor", "(composite only)",
      promotion="none", inputs=("tensors",))


@composite("cat")
@O.recorded("cat")
def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not O._is_t(t):
            raise TypeError(f"cat(): expected a list of Tensors, but element {i} is "
                            f"{type(t).__name__}")
    for i, t in enumerate(tensors):
        if not t.shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    dev = C.same_device("cat", tensors)
    # legacy behaviour: 1-D empty tensors are skipped
    live = [t for t in tensors if not (len(t.shape) == 1 and t.shape[0] == 0)]
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    if not live:
        return O.full((0,), 0, dt, dev)
    ref = live[0]
    nd = len(ref.shape)
    d = C.normalize_dim(dim, nd, "cat")
    position = {id(t): i for i, t in enumerate(tensors)}
    for t in live:
        if len(t.shape) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{len(t.shape)}")
        for j in range(nd):
            if j != d and t.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref.shape[j]} but got size {t.shape[j]} "
                                   f"for tensor number {position[id(t)]} in the list.")
    shape = list(ref.shape)
    shape[d] = sum(t.shape[d] for t in live)
    out = C.empty(tuple(shape), dt, dev)
    start = 0
    for t in live:
        n = t.shape[d]
        if n:
            O.run(O.OPS["copy"], dev, (t,), {}, None, dt, V.narrow.raw(out, d, start, n))
        start += n
    return out


@gradient("cat")
def _(g, tensors_shape, dim=0):
    nd = len(g.shape)
    d = C.normalize_dim(dim, nd, "cat")
    grads, start = [], 0
    for shp in tensors_shape:
        if len(shp) == 1 and shp[0] == 0 and nd != 1:  # skipped by cat
            grads.append(None)
            continue
        n = shp[d]
        grads.append(V.narrow(g, d, start, n))
        start += n
    return (grads,)


@composite("stack")
def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{C.shape_str(s0)} at entry 0 and {C.shape_str(t.shape)} at "
                               f"entry {i}")
    d = C.normalize_dim(dim, len(s0) + 1, "stack")
    return cat([V.unsqueeze(t, d) for t in tensors], d)


# ---- selecting and rearranging (composites of the above) --------------------------------------
for _n, _sig in [
    ("index_select", "index_select(Tensor self, int dim, Tensor index) -> Tensor"),
    ("index_add", "index_add(Tensor self, int dim, Tensor index, Tensor source, *, "
                  "Scalar alpha=1) -> Tensor"),
    ("masked_fill", "masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor"),
    ("flip", "flip(Tensor self, int[] dims) -> Tensor"),
    ("roll", "roll(Tensor self, int[] shifts, int[]? dims=None) -> Tensor"),
    ("repeat", "repeat(Tensor self, int[] repeats) -> Tensor"),
    ("tril", "tril(Tensor self, int diagonal=0) -> Tensor"),
    ("triu", "triu(Tensor self, int diagonal=0) -> Tensor"),
]:
    defop(_n, "index", _sig, "(composite only)", promotion="none")
del _n, _sig


def _bad_index(idx, size):
    """One index of ``idx`` outside ``[0, size)`` (None if all are inside): read back only
    when an error is being reported."""
    if not C.numel(idx.shape):
        return None
    low, high = O.item(O.reduce("min", idx)), O.item(O.reduce("max", idx))
    return low if low < 0 else high if high >= size else None


@composite("index_select")
def index_select(x, dim, index):
    """PyTorch's checks in its order, and its error types: ``IndexError: index out of range
    in self`` from its general CPU loop, ``RuntimeError: INDICES element is out of DATA
    bounds`` from the loops it uses for dim 1 and for an empty ``self``."""
    if not O._is_t(index):
        O._check_index("index_select", index)
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "index_select")
    if len(index.shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    n = C.numel(index.shape)
    if nd == 0 and n != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} "
                           "value(s)")
    if index.dtype not in (D.int32, D.int64):
        raise RuntimeError(f"index_select(): Expected dtype int32 or int64 for index, got "
                           f"{D.torch_name(index.dtype)}")
    idx = V.reshape(O._check_index("index_select", index), -1)
    size = x.shape[d] if nd else 1
    indices_error = nd > 1 and n and (d == 1 or not C.numel(x.shape))
    if nd > 1 and n and not C.numel(x.shape):
        if size == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        bad = _bad_index(idx, size)
        if bad is not None:  # nothing is read, so no kernel would check
            raise RuntimeError(f"index_select(): INDICES element is out of DATA bounds, "
                               f"id={bad} axis_dim={size}")
    try:
        if nd == 0:  # the index's shape (PyTorch gives a 0-d result)
            return O.gather(x, 0, index)
        shape = x.shape[:d] + (n,) + x.shape[d + 1:]
        view_shape = tuple(n if i == d else 1 for i in range(nd))
        return O.gather(x, d, C.expand_to(V.reshape(idx, view_shape), shape))
    except IndexError:
        bad = _bad_index(idx, size)
        if indices_error:
            raise RuntimeError(f"index_select(): INDICES element is out of DATA bounds, "
                               f"id={bad} axis_dim={size}") from None
        raise IndexError(f"index_select(): index out of range in self (index {bad} for "
                         f"dimension {d} with size {size})") from None


@composite("index_add")
def index_add(x, dim, index, source, alpha=1):
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "index_add")
    index = O._check_index("index_add", index)
    if alpha != 1:
        source = E("mul", source, alpha)
    view_shape = tuple(index.shape[0] if i == d else 1 for i in range(nd))
    idx = C.expand_to(V.reshape(index, view_shape), source.shape)
    return O.scatter(x, d, idx, source, reduce="add")


@composite("masked_fill")
def masked_fill(x, mask, value):
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.torch_name(mask.dtype)}")
    if O._is_t(value) and value.shape:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {len(value.shape)} dimension(s).")
    if not O._is_t(value):
        value = CP.scalar_to(value, x.dtype, "masked_fill")
    elif not CP.holds_every_value(x.dtype, value.dtype):  # PyTorch checks value.item()
        CP.scalar_to(O.item(value), x.dtype, "masked_fill")
    return O.to(O.where(mask, value, x), None, x.dtype)


@composite("flip")
def flip(x, dims):
    if isinstance(dims, (list, tuple)) and not dims:  # no dims: an unchanged copy
        return O.clone(x)
    nd = len(x.shape)
    dims = C.normalize_dims(dims if not isinstance(dims, int) else (dims,), nd, "flip")
    y = x
    for d in dims:
        n = y.shape[d]
        if n > 1:
            y = index_select(y, d, O.arange(n - 1, -1, -1, D.int64, x.device))
    return O.clone(y) if y is x else y


@composite("roll")
def roll(x, shifts, dims=None):
    if isinstance(shifts, int):
        shifts = (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError("roll(): shifts and dims must align when dims is not given "
                               f"(got {len(shifts)} shifts)")
        flat = V.flatten(O.contiguous(x))
        return V.view(roll(flat, shifts, (0,)), x.shape)
    if isinstance(dims, int):
        dims = (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    y = x
    for s, d in zip(shifts, dims):
        d = C.normalize_dim(d, len(x.shape), "roll")
        n = y.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            y = cat([V.narrow(y, d, n - s, s), V.narrow(y, d, 0, n - s)], d)
    return O.clone(y) if y is x else y


@composite("repeat")
def repeat(x, repeats):
    try:
        repeats = tuple(operator.index(r) for r in repeats)
    except TypeError:
        raise TypeError(f"repeat(): argument 'repeats' must be tuple of ints, not "
                        f"{type(repeats).__name__}") from None
    if len(repeats) < len(x.shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(repeats) - len(x.shape)) + x.shape
    sizes = [r * s for r, s in zip(repeats, shape)]
    for v in sizes:
        if v < 0:
            raise RuntimeError(f"repeat(): Trying to create tensor with negative dimension {v}: "
                               f"{sizes}")
    inter = []
    target = []
    for r, s in zip(repeats, shape):
        inter += [1, s]
        target += [r, s]
    src = V.expand(V.reshape(x, tuple(inter)), tuple(target))
    return V.reshape(O.contiguous(src), tuple(r * s for r, s in zip(repeats, shape)))


def _tri_mask(x, diagonal, upper):
    if len(x.shape) < 2:
        raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 "
                           "dimensions")
    n, m = x.shape[-2], x.shape[-1]
    rows = V.unsqueeze(O.arange(0, n, 1, D.int64, x.device), 1)
    cols = V.unsqueeze(O.arange(0, m, 1, D.int64, x.device), 0)
    diff = E("sub", cols, rows)
    return E("ge", diff, diagonal) if upper else E("le", diff, diagonal)


def _zero_like(x):
    return False if x.dtype is D.bool_ else (0.0 if x.dtype.is_floating_point else 0)


@composite("tril")
def tril(x, diagonal=0):
    return O.where(_tri_mask(x, diagonal, False), x, _zero_like(x))


@composite("triu")
def triu(x, diagonal=0):
    return O.where(_tri_mask(x, diagonal, True), x, _zero_like(x))
