"""Indexing, joining and rearranging: gather/scatter, advanced indexing, cat, flips."""
from __future__ import annotations

import operator

from .. import core as C
from .. import _indexing as IX
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..device import to_device
from ..schema import composite, defop, gradient
from . import copy as CP
from . import linalg as LA

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
        raise ValueError("cat(): expected a non-empty list of Tensors")  # (as PyTorch's)
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
    O.refuse_barebones("index_add", x)
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
    O.refuse_barebones("masked_fill", x)
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
    O.refuse_barebones("flip", x)
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
    O.refuse_barebones("tril", x)
    return O.where(_tri_mask(x, diagonal, False), x, _zero_like(x))


@composite("triu")
def triu(x, diagonal=0):
    O.refuse_barebones("triu", x)
    return O.where(_tri_mask(x, diagonal, True), x, _zero_like(x))


# ---- PyTorch's shape family: diagonals, scatters into views, index copies ------------------
for _n, _sig in [
    ("repeat_interleave", "repeat_interleave(Tensor self, Tensor|int repeats, int? dim=None, "
                          "*, int? output_size=None) -> Tensor"),
    ("diag", "diag(Tensor self, int diagonal=0) -> Tensor"),
    ("diag_embed", "diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor"),
    ("diagonal_scatter", "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, "
                         "int dim2=1) -> Tensor"),
    ("select_scatter", "select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor"),
    ("slice_scatter", "slice_scatter(Tensor self, Tensor src, int dim=0, int? start=None, "
                      "int? end=None, int step=1) -> Tensor"),
    ("as_strided_scatter", "as_strided_scatter(Tensor self, Tensor src, int[] size, "
                           "int[] stride, int? storage_offset=None) -> Tensor"),
    ("index_copy", "index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"),
    ("index_fill", "index_fill(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"),
    ("masked_scatter", "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor"),
    ("put", "put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor"),
    ("take_along_dim", "take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor"),
    ("rot90", "rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor"),
    ("kron", "kron(Tensor self, Tensor other) -> Tensor"),
    ("block_diag", "block_diag(Tensor[] tensors) -> Tensor"),
    ("cartesian_prod", "cartesian_prod(Tensor[] tensors) -> Tensor"),
    ("combinations", "combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor"),
    ("vander", "vander(Tensor x, int? N=None, bool increasing=False) -> Tensor"),
    ("tensordot", "tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) "
                  "-> Tensor"),
]:
    defop(_n, "index", _sig, "(composite only)", promotion="none",
          inputs=("tensors",) if _n in ("block_diag", "cartesian_prod") else None)
del _n, _sig


def _long_index(op, index, what="index"):
    if not O._is_t(index):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(index).__name__}")
    if index.dtype is not D.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for {what}, but got "
                           f"{D.torch_name(index.dtype)}")
    return index


def _repeat_index(repeats, total, device):
    """``[0]*r0 + [1]*r1 + ...`` (length ``total``) for a 1-D int64 ``repeats``: a marker
    at the start of every element after the first, counted by a prefix sum."""
    n = repeats.shape[0]
    ends = O.scan("cumsum", repeats, 0)
    starts = E("sub", ends, repeats)
    marker = O.zeros((total + 1,), D.int64, device)
    if n > 1:
        O.scatter_(marker, 0, V.narrow(starts, 0, 1, n - 1),
                   O.full((n - 1,), 1, D.int64, device), reduce="add")
    return V.narrow(O.scan("cumsum", marker, 0), 0, 0, total)


@composite("repeat_interleave")
def repeat_interleave(x, repeats=None, dim=None, output_size=None):
    """``torch.repeat_interleave``: each element (slice along ``dim``; of the flattened
    input without ``dim``) ``repeats`` times; ``repeat_interleave(repeats)`` alone repeats
    ``arange(len(repeats))``."""
    if repeats is None:  # repeat_interleave(repeats_tensor)
        reps = x
        if len(reps.shape) > 1:
            raise RuntimeError("repeat_interleave(): repeats must be 0-dim or 1-dim tensor")
        if reps.dtype not in (D.int32, D.int64):
            raise RuntimeError("repeat_interleave(): repeats has to be Long or Int tensor")
        reps = O.cast(V.reshape(reps, (-1,)), D.int64)
        if C.numel(reps.shape) and O.item(O.reduce("min", reps)) < 0:
            raise RuntimeError("repeat_interleave(): repeats can not be negative")
        total = int(O.item(O.reduce("sum", reps))) if C.numel(reps.shape) else 0
        if output_size is not None:
            if output_size != total:
                raise RuntimeError(f"repeat_interleave(): output_size ({output_size}) does not "
                                   f"match the sum of repeats ({total})")
        return _repeat_index(reps, total, x.device)
    if dim is None:
        x = V.reshape(x, (-1,))
        dim = 0
    nd = len(x.shape)
    d = C.normalize_dim(dim, max(nd, 1), "repeat_interleave")
    if nd == 0:
        x = V.reshape(x, (1,))
    n = x.shape[d]
    if not O._is_t(repeats):
        r = operator.index(repeats)
        if r < 0:
            raise RuntimeError("repeat_interleave(): repeats can not be negative")
        if output_size is not None and output_size != n * r:
            raise RuntimeError(f"repeat_interleave(): output_size ({output_size}) does not match "
                               f"the sum of repeats ({n * r})")
        shape = x.shape[:d + 1] + (r,) + x.shape[d + 1:]
        src = V.expand(V.unsqueeze(x, d + 1), shape)
        return V.reshape(O.contiguous(src), x.shape[:d] + (n * r,) + x.shape[d + 1:])
    if len(repeats.shape) > 1:
        raise RuntimeError("repeat_interleave(): repeats must be 0-dim or 1-dim tensor")
    if repeats.dtype not in (D.int32, D.int64):
        raise NotImplementedError(f"\"repeat_interleave_{x.device.type}\" not implemented for "
                                  f"'{D.torch_name(repeats.dtype)}'")
    if repeats.device != x.device:
        raise RuntimeError(f"repeat_interleave(): repeats and input must be on the same "
                           f"device, got {repeats.device} and {x.device}")
    reps = O.cast(V.reshape(repeats, (-1,)), D.int64)
    if reps.shape[0] == 1 and n != 1:
        reps = O.contiguous(V.expand(reps, (n,)))
    if reps.shape[0] != n:
        raise RuntimeError(f"repeat_interleave(): repeats must have the same size as input "
                           f"along dim, but got repeats.size(0) = {reps.shape[0]} and "
                           f"input.size({d}) = {n}")
    idx = repeat_interleave(reps, None, None, output_size)
    return index_select(x, d, idx)


@composite("diag")
def diag(x, diagonal=0):
    nd = len(x.shape)
    if nd == 1:
        n = x.shape[0] + abs(diagonal)
        out = O.zeros((n, n), x.dtype, x.device)
        O.copy_(V.diagonal(out, diagonal, 0, 1), x)
        return out
    if nd == 2:
        return O.clone(V.diagonal(x, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


@composite("diag_embed")
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    nd = len(x.shape) + 1
    a, b = C.normalize_dim(dim1, nd, "diag_embed"), C.normalize_dim(dim2, nd, "diag_embed")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (x.shape[-1] if x.shape else 1) + abs(offset)
    rest = list(x.shape[:-1])
    shape = []
    for i in range(nd):
        shape.append(n if i in (a, b) else rest.pop(0))
    out = O.zeros(tuple(shape), x.dtype, x.device)
    O.copy_(V.diagonal(out, offset, a, b), x)
    return out


def _scatter_into(op, x, src, make_view):
    """A copy of ``x`` with ``src`` written into the view ``make_view`` picks of it (the
    *_scatter ops): ``src`` must have the view's shape exactly."""
    if not O._is_t(src):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    out = O.clone(x)
    view = make_view(out)
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(view.shape)}")
    O.copy_(view, src)
    return out


@composite("diagonal_scatter")
def diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    return _scatter_into("diagonal_scatter", x, src,
                         lambda t: V.diagonal(t, offset, dim1, dim2))


@composite("select_scatter")
def select_scatter(x, src, dim, index):
    return _scatter_into("select_scatter", x, src, lambda t: V.select(t, dim, index))


def slice_view(x, dim=0, start=None, end=None, step=1):
    """``x[..., start:end:step, ...]`` along ``dim`` (PyTorch's ``slice`` op)."""
    nd = len(x.shape)
    if nd == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = C.normalize_dim(dim, nd, "slice")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return V.basic_index(x, (slice(None),) * d + (slice(start, end, step),))


@composite("slice_scatter")
def slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    return _scatter_into("slice_scatter", x, src,
                         lambda t: slice_view(t, dim, start, end, step))


@composite("as_strided_scatter")
def as_strided_scatter(x, src, size, stride, storage_offset=None):
    if not C.is_contiguous(x):
        x = O.contiguous(x)
    return _scatter_into("as_strided_scatter", x, src,
                         lambda t: V.as_strided(t, tuple(size), tuple(stride), storage_offset))


def _dim_key(d, index):
    return (slice(None),) * d + (index,)


@composite("index_copy")
def index_copy(x, dim, index, source):
    O.refuse_barebones("index_copy", x)
    op = "index_copy_"
    _long_index(op, index)
    nd = len(x.shape)
    d = C.normalize_dim(dim, max(nd, 1), op)
    if len(index.shape) > 1:
        raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {len(index.shape)})")
    n = C.numel(index.shape)
    src_nd = len(source.shape)
    if nd == 0 or src_nd == 0:
        if n != 1 or C.numel(source.shape) != 1 or C.numel(x.shape) < 1:
            raise IndexError(f"{op}(): When source and destination are scalars or 1-D, index "
                             "should have one element and source one element")
        out = O.clone(x)
        index_put_(V.reshape(out, (-1,)), (V.reshape(index, (1,)),),
                      V.reshape(source, (1,)))
        return out
    if src_nd != nd:
        raise IndexError(f"{op}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({src_nd}), "
                         f"destination dimensionality ({nd})")
    for i in range(nd):
        if i != d and source.shape[i] != x.shape[i]:
            raise IndexError(f"{op}(): Source/destination tensor must have same slice shapes. "
                             f"Destination slice shape: {list(x.shape[:d] + x.shape[d + 1:])} "
                             f"at dimension {d} and source slice shape: "
                             f"{list(source.shape[:d] + source.shape[d + 1:])} at dimension {d}.")
    if source.shape[d] != n:
        raise IndexError(f"{op}(): Number of indices ({n}) should be equal to "
                           f"source.size(dim) ({source.shape[d]})")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"(self) {D.torch_name(x.dtype)} and (source) "
                           f"{D.torch_name(source.dtype)}")
    out = O.clone(x)
    if n:
        index_put_(out, _dim_key(d, V.reshape(index, (-1,))), source)
    return out


@composite("index_fill")
def index_fill(x, dim, index, value):
    O.refuse_barebones("index_fill", x)
    op = "index_fill_"
    if not O._is_t(index) or index.dtype is not D.int64:
        got = D.torch_name(index.dtype) if O._is_t(index) else type(index).__name__
        raise IndexError(f"{op}(): Expected dtype int64 for index (got {got})")
    if O._is_t(value) and value.shape:
        raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {len(value.shape)} dimension(s).")
    if len(index.shape) > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    nd = len(x.shape)
    d = C.normalize_dim(dim, max(nd, 1), op)
    out = O.clone(x)
    if not C.numel(index.shape):
        return out
    target = out if nd else V.reshape(out, (1,))
    if not O._is_t(value):
        value = CP.scalar_to(value, x.dtype, op)
    index_put_(target, _dim_key(d, V.reshape(index, (-1,))), value)
    return out


@composite("masked_scatter")
def masked_scatter(x, mask, source):
    O.refuse_barebones("masked_scatter", x)
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {D.torch_name(mask.dtype)}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {D.torch_name(x.dtype)} and {D.torch_name(source.dtype)}")
    shape = C.broadcast_shapes(x.shape, mask.shape)
    m = V.reshape(O.contiguous(C.expand_to(mask, shape)), (-1,))
    n = C.numel(shape)
    if not n:
        return O.clone(V.expand(x, shape))
    count = O.cast(m, D.int64)
    ones = int(O.item(O.reduce("sum", count)))
    if ones > C.numel(source.shape):
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in "
                           "mask")
    pos = E("maximum", E("sub", O.scan("cumsum", count, 0), 1), 0)
    flat_src = V.reshape(source, (-1,))
    if not C.numel(flat_src.shape):
        return O.clone(V.expand(x, shape))
    vals = index_select(flat_src, 0, pos)
    return O.where(V.reshape(m, shape), V.reshape(vals, shape), V.expand(x, shape))


@composite("put")
def put(x, index, source, accumulate=False):
    O.refuse_barebones("put", x)
    op = "put_"
    _long_index(op, index)
    if source.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {D.torch_name(x.dtype)} and source.dtype = "
                           f"{D.torch_name(source.dtype)}")
    if C.numel(source.shape) != C.numel(index.shape):
        raise IndexError(f"{op}(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {C.numel(source.shape)}, "
                           f"index.numel() = {C.numel(index.shape)}")
    out = O.clone(x)
    if C.numel(index.shape):
        if not C.numel(x.shape):
            raise IndexError("put_(): Tried to put elements into an empty tensor")
        index_put_(V.reshape(out, (-1,)), (V.reshape(index, (-1,)),),
                      V.reshape(source, (-1,)), accumulate)
    return out


@composite("take_along_dim")
def take_along_dim(x, indices, dim=None):
    O.refuse_barebones("take_along_dim", x)
    op = "torch.take_along_dim()"
    if not O._is_t(indices):
        raise TypeError(f"take_along_dim(): argument 'indices' must be Tensor, not "
                        f"{type(indices).__name__}")
    if indices.dtype not in (D.int64, D.int32, D.int16, D.int8, D.uint8):
        raise RuntimeError(f"{op}: dtype of indices should be an integer type but got "
                           f"{D.torch_name(indices.dtype)}")
    if indices.dtype is not D.int64:
        indices = O.cast(indices, D.int64)
    if dim is None:
        return O.gather(V.reshape(x, (-1,)), 0, V.reshape(indices, (-1,)))
    nd = len(x.shape)
    if nd != len(indices.shape):
        raise RuntimeError(f"{op}: input and indices should have the same number of "
                           f"dimensions, but got {nd} dimensions for input, and "
                           f"{len(indices.shape)} dimensions for indices")
    d = C.normalize_dim(dim, max(nd, 1), "take_along_dim")
    if nd == 0:
        return O.gather(x, 0, indices)
    xs, ids = list(x.shape), list(indices.shape)
    xs[d] = ids[d] = 1
    shape = list(C.broadcast_shapes(tuple(xs), tuple(ids)))
    shape_x, shape_i = list(shape), list(shape)
    shape_x[d], shape_i[d] = x.shape[d], indices.shape[d]
    return O.gather(V.expand(x, tuple(shape_x)), d, V.expand(indices, tuple(shape_i)))


@composite("rot90")
def rot90(x, k=1, dims=(0, 1)):
    dims = list(dims)
    nd = len(x.shape)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    a, b = C.normalize_dim(dims[0], nd, "rot90"), C.normalize_dim(dims[1], nd, "rot90")
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and "
                           f"dim1 = {b}")
    k %= 4
    if k == 1:
        return V.transpose(flip(x, (b,)), a, b)
    if k == 2:
        return flip(x, (a, b))
    if k == 3:
        return V.transpose(flip(x, (a,)), a, b)
    return O.clone(x)


@composite("kron")
def kron(a, b):
    nd = max(len(a.shape), len(b.shape))
    sa = (1,) * (nd - len(a.shape)) + tuple(a.shape)
    sb = (1,) * (nd - len(b.shape)) + tuple(b.shape)
    ia, ib = [], []
    for p, q in zip(sa, sb):
        ia += [p, 1]
        ib += [1, q]
    prod = E("mul", V.reshape(a, tuple(ia)), V.reshape(b, tuple(ib)))
    return V.reshape(prod, tuple(p * q for p, q in zip(sa, sb)))


@composite("block_diag")
def block_diag(tensors):
    mats = []
    for i, t in enumerate(tensors):
        nd = len(t.shape)
        if nd > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {nd} dimensions")
        mats.append(V.reshape(t, (1, 1)) if nd == 0 else V.reshape(t, (1, -1)) if nd == 1
                    else t)
    if not mats:
        return O.zeros((1, 0), D.get_default_dtype(), to_device("cpu"))
    dev = C.same_device("block_diag", mats)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = D.promote_types(dt, m.dtype)
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    out = O.zeros((rows, cols), dt, dev)
    r = c = 0
    for m in mats:
        h, w = m.shape
        if h and w:
            O.copy_(V.narrow(V.narrow(out, 0, r, h), 1, c, w), m)
        r, c = r + h, c + w
    return out


def meshgrid(tensors, indexing="ij"):
    """``torch.meshgrid``: views of 0-d/1-d tensors expanded to the grid of their sizes
    (``xy`` swaps the first two grid dimensions)."""
    tensors = list(tensors)
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if len(t.shape) > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {C.shape_str(t.shape)}")
    dt = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dt:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to "
                               "have the same dtype.")
    C.same_device("meshgrid", tensors)
    flat = [V.reshape(t, (-1,)) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t.shape[0] for t in flat)
    n = len(flat)
    grids = [V.expand(V.reshape(t, tuple(-1 if j == i else 1 for j in range(n))), shape)
             for i, t in enumerate(flat)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@composite("cartesian_prod")
def cartesian_prod(tensors):
    tensors = list(tensors)
    for t in tensors:
        if len(t.shape) != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(tensors, "ij")
    return stack([V.reshape(g, (-1,)) for g in grids], 1)


@composite("combinations")
def combinations(x, r=2, with_replacement=False):
    """PyTorch's way: a grid of ``r`` copies of ``x``, the cells whose positions increase
    (or do not decrease, ``with_replacement``) picked in order."""
    if len(x.shape) != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return O.zeros((0,), x.dtype, x.device)
    n = x.shape[0]
    pos = meshgrid([O.arange(0, n, 1, D.int64, x.device)] * r, "ij")
    keep = None
    for p, q in zip(pos, pos[1:]):
        ok = E("le" if with_replacement else "lt", p, q)
        keep = ok if keep is None else E("logical_and", keep, ok)
    grids = meshgrid([x] * r, "ij")
    if keep is None:
        return O.clone(x)
    return stack([index(g, keep) for g in grids], 1)


@composite("vander")
def vander(x, N=None, increasing=False):
    if len(x.shape) != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = D.promote_types(x.dtype, D.int64)
    if n == 0:
        return O.zeros((x.shape[0], 0), dt, x.device)
    cols = [O.full((x.shape[0], 1), 1, dt, x.device)]
    if n > 1:
        rep = O.to(V.expand(V.unsqueeze(x, 1), (x.shape[0], n - 1)), None, dt)
        cols.append(O.scan("cumprod", rep, 1))
    res = cat(cols, 1)
    return res if increasing else flip(res, (1,))


@composite("tensordot")
def tensordot(a, b, dims_a, dims_b):
    na, nb = len(a.shape), len(b.shape)
    da = [C.normalize_dim(d, na, "tensordot") for d in dims_a]
    db = [C.normalize_dim(d, nb, "tensordot") for d in dims_b]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {D.torch_name(a.dtype)} but found "
                           f"{D.torch_name(b.dtype)}")
    size = 1
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in "
                               f"dim {j}")
        size *= a.shape[i]
    free_a = [i for i in range(na) if i not in da]
    free_b = [j for j in range(nb) if j not in db]
    fa = [a.shape[i] for i in free_a]
    fb = [b.shape[j] for j in free_b]
    ma = V.reshape(V.permute(a, tuple(free_a + da)), (C.numel(fa), size))
    mb = V.reshape(V.permute(b, tuple(db + free_b)), (size, C.numel(fb)))
    return V.reshape(LA.mm(ma, mb), tuple(fa + fb))
