"""Advanced indexing (``x[idx]``, ``x[mask] = v``) written in gather/scatter primitives.

The basic part of a key (ints, slices, None, ...) is applied first as a view, as
PyTorch does; the remaining index tensors are broadcast together, bounds-checked, and
turned into element offsets into the view's storage. Reads gather from a 1-D view of
the whole storage, writes scatter into it — so no contiguous copy is ever needed.
"""
from __future__ import annotations


import numpy as np

from . import core as C
from . import dtypes as D
from . import ops as O
from . import views as V
from .lazy import capturing
from .plugins import backend_for
from .warn import warn as _warn

__all__ = ["index", "index_put_"]

E = O.elementwise


def _to_index_tensor(k, dev):
    if O._is_t(k):
        return k
    arr = None
    try:    # (a list or array as big as the host can hold: its conversions need as much)
        arr = np.asarray(k)
        if arr.dtype == np.bool_:
            dt = D.bool_
        elif arr.dtype.kind in "iu" or arr.size == 0:
            dt, arr = D.int64, np.require(arr, np.int64, "C")
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        arr = np.require(arr, requirements="C")
    except MemoryError as e:
        size = None if arr is None else arr.size
        raise C.host_out_of_memory(
            "an index tensor" + ("" if size is None else f" of {size} elements") +
            f" made from a {type(k).__name__} (indexing a tensor on {dev})",
            None if size is None else size * 8, e) from None
    t = C.empty(arr.shape, dt, to_cpu := C.to_device("cpu"))
    if arr.size:    # the array's own memory is copied in: no bytes object in between
        backend_for("cpu").copy_from_host(t._storage, 0, memoryview(arr.reshape(-1)).cast("B"))
    return t if dev == to_cpu else O.to(t, dev)


def _split_key(x, key):
    """Apply the basic part of ``key``; return (view, [(dim, index tensor)])."""
    if not isinstance(key, tuple):
        key = (key,)
    key = list(key)
    basic = []
    for k in key:
        if isinstance(k, bool) or k is None or k is Ellipsis or isinstance(k, slice) or (
                isinstance(k, int)):
            basic.append(k)
        else:
            t = _to_index_tensor(k, x.device)
            basic.append(t)
    # count how many dims each entry consumes
    consumed = 0
    for k in basic:
        if O._is_t(k):
            consumed += len(k.shape) if k.dtype is D.bool_ or k.dtype is D.uint8 else 1
        elif k is not None and k is not Ellipsis and not isinstance(k, bool):
            consumed += 1
    nd = len(x.shape)
    if consumed > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    # replace tensors by full slices, track where they land in the view
    placeholder, entries = [], []
    for k in basic:
        if isinstance(k, bool) or (O._is_t(k) and not k.shape and (
                k.dtype is D.bool_ or k.dtype is D.uint8)):
            # a 0-d mask, Python bools included (PyTorch): a new dim of size 1 indexed by
            # [0] (True) or [] (False), so ``x[False]`` selects nothing
            entries.append((len(placeholder), k, 0))
            placeholder.append(None)
        elif O._is_t(k):
            n = len(k.shape) if (k.dtype is D.bool_ or k.dtype is D.uint8) else 1
            entries.append((len(placeholder), k, n))
            placeholder.extend([slice(None)] * n)
        elif k is Ellipsis:
            entries.append((len(placeholder), Ellipsis, 0))
            placeholder.append(Ellipsis)
        else:
            placeholder.append(k)
    v = V.basic_index(x, tuple(placeholder))
    # map each placeholder position to the dim it became in the view
    dim_of, d = [], 0
    ell_span = nd - sum(1 for k in placeholder if k is not None and k is not Ellipsis)
    for k in placeholder:
        if k is Ellipsis:
            dim_of.append(d)
            d += ell_span
        elif k is None:
            dim_of.append(d)
            d += 1
        elif isinstance(k, int):
            dim_of.append(d)
        else:
            dim_of.append(d)
            d += 1
    adv_dims = []
    for pos, k, n in entries:
        if k is Ellipsis:
            continue
        start = dim_of[pos]
        if isinstance(k, bool) or not n:
            kept = k if isinstance(k, bool) else bool(O.item(k))
            adv_dims.append((start, O.zeros((int(kept),), D.int64, v.device)))
        elif k.dtype is D.bool_ or k.dtype is D.uint8:
            mask = O.cast(k, D.bool_)
            for j in range(n):
                if mask.shape[j] != v.shape[start + j]:
                    raise IndexError(f"The shape of the mask {C.shape_str(mask.shape)} at index "
                                     f"{j} does not match the shape of the indexed tensor "
                                     f"{C.shape_str(v.shape[start:start + n])} at index {j}")
            nz = O.nonzero(mask)
            for j in range(n):
                adv_dims.append((start + j, V.select(nz, 1, j)))
        else:
            if k.dtype.is_floating_point or k.dtype in D.BAREBONES_UNSIGNED:
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors")
            adv_dims.append((start, O.cast(k, D.int64)))
    return v, adv_dims


def _linear_offsets(v, adv_dims):
    """Element offsets (int64 tensor) of every selected element, and the result shape."""
    dev = v.device
    idx_shape = C.broadcast_shapes(*[t.shape for _, t in adv_dims])
    dims = [d for d, _ in adv_dims]
    off = None
    # while ember.compile captures, reading the bounds back would break the graph: an
    # index out of range gets an offset past the storage instead, which the gather rejects
    # (IndexError) when the graph runs
    outside = None
    for d, t in adv_dims:
        size = v.shape[d]
        if t.device != dev:
            t = O.to(t, dev)
        if C.numel(t.shape) and capturing():
            bad = E("bitwise_or", E("ge", t, size), E("lt", t, -size))
            outside = bad if outside is None else E("bitwise_or", outside, bad)
            t = O.where(E("lt", t, 0), E("add", t, size), t)
        elif C.numel(t.shape):
            lo = int(O.item(O.reduce("min", t)))
            hi = int(O.item(O.reduce("max", t)))
            bad = hi if hi >= size else (lo if lo < -size else None)
            if bad is not None:
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size "
                                 f"{size}")
            if lo < 0:
                t = O.where(E("lt", t, 0), E("add", t, size), t)
        term = E("mul", t, v._stride[d])
        off = term if off is None else E("add", off, term)
    if outside is not None:
        off = O.where(outside, v._storage.nbytes // v.dtype.itemsize, off)
    rest = [i for i in range(len(v.shape)) if i not in dims]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if adjacent:
        before, after = [i for i in rest if i < dims[0]], [i for i in rest if i > dims[0]]
        layout = [("r", i) for i in before] + [("a", None)] + [("r", i) for i in after]
    else:
        layout = [("a", None)] + [("r", i) for i in rest]
    shape = []
    for kind, i in layout:
        shape.extend(idx_shape if kind == "a" else (v.shape[i],))
    total = C.numel(shape)
    pos = 0
    full = None
    for kind, i in layout:
        if kind == "a":
            view_shape = (1,) * pos + idx_shape + (1,) * (len(shape) - pos - len(idx_shape))
            term = V.reshape(off, view_shape)
            pos += len(idx_shape)
        else:
            n = v.shape[i]
            ar = E("mul", O.arange(0, n, 1, D.int64, dev), v._stride[i])
            view_shape = (1,) * pos + (n,) + (1,) * (len(shape) - pos - 1)
            term = V.reshape(ar, view_shape)
            pos += 1
        full = term if full is None else E("add", full, term)
    full = E("add", C.expand_to(full, tuple(shape)), v._offset)
    return full, tuple(shape), total


def _storage_1d(v):
    cap = v._storage.nbytes // v.dtype.itemsize
    return C.view_of(v, (cap,), (1,), 0)


def index(x, key):
    """``x[key]`` for a key with index tensors (advanced indexing), as a gather."""
    v, adv = _split_key(x, key)
    if not adv:
        return v
    offs, shape, total = _linear_offsets(v, adv)
    if total == 0:
        return C.empty(shape, x.dtype, x.device)
    flat = O.contiguous(offs)
    res = O.gather(_storage_1d(v), 0, V.reshape(flat, (total,)))
    return V.view(res, shape)


#: PyTorch's warning for an index_put_ into a tensor with internal overlap (it writes; a
#: basic-index assignment, ``x[...] = v``, raises instead)
_EXPANDED_WARNING = ("Use of index_put_ on expanded tensors is deprecated. Please clone() the "
                     "tensor before performing this operation. This also applies to advanced "
                     "indexing e.g. tensor[indices] = tensor")


def index_put_(x, key, values, accumulate=False):
    """``x[key] = values`` (``+=`` with ``accumulate``) in place, as a scatter."""
    v, adv = _split_key(x, key)
    if not adv:
        O.copy_(v, values)
        return x
    O.refuse_barebones("index_put", x)
    offs, shape, total = _linear_offsets(v, adv)
    if total == 0:
        return x
    if 0 in v._stride and C.has_internal_overlap(v):   # (what the indices index into)
        _warn(_EXPANDED_WARNING, UserWarning)
    if O._is_t(values):
        vals = O.cast(values, x.dtype)
        if vals.device != x.device:
            vals = O.to(vals, x.device)
        try:
            vals = C.expand_to(vals, shape)
        except RuntimeError:
            raise RuntimeError(f"shape mismatch: value tensor of shape "
                               f"{C.shape_str(values.shape)} cannot be broadcast to indexing "
                               f"result of shape {C.shape_str(shape)}") from None
    else:
        vals = C.expand_to(C.scalar_tensor(C._coerce_scalar(values, x.dtype), x.dtype,
                                           x.device), shape)
    flat_idx = V.reshape(O.contiguous(offs), (total,))
    flat_vals = V.reshape(O.contiguous(vals), (total,))
    O.scatter_(_storage_1d(v), 0, flat_idx, flat_vals, reduce="add" if accumulate else None)
    C.bump(x)
    return x
