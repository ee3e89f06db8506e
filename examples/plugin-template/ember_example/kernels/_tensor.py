"""How a kernel sees a tensor: a NumPy array over the device memory, with its strides.

A kernel receives tensors with the kernel tensor protocol of ``ember.dispatcher``:
``t._storage`` (what ``Backend.allocate`` returned: here a ``DeviceStorage`` whose
``handle`` is the segment and ``offset`` the block's byte offset in it), ``t.shape``,
``t._stride`` and ``t._offset`` (both in elements), ``t.dtype`` (``.name``, ``.itemsize``).
Views share storage, so a kernel must honour strides and offset; broadcast inputs arrive
as stride-0 views; inputs are already promoted to the dtypes the op computes in.

``array(t)`` is the strided NumPy view of ``t`` (reads and writes go to device memory),
``load(t)`` its values for computing (float16/bfloat16 widened to float32, as the CPU
backend computes them), ``store(out, values)`` writes values into ``out`` with rounding
and casting to ``out``'s dtype.
"""
from __future__ import annotations

import numpy as np

__all__ = ["array", "load", "store", "compute_dtype", "STORAGE_DTYPES"]

#: how each ember dtype is stored; NumPy has no bfloat16, so its raw 16 bits are kept as
#: uint16 and converted on load/store
STORAGE_DTYPES = {
    "bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
    "int32": np.int32, "int64": np.int64, "float16": np.float16, "bfloat16": np.uint16,
    "float32": np.float32, "float64": np.float64,
}


def array(t) -> np.ndarray:
    """The NumPy view of tensor ``t`` in device memory (no copy)."""
    np_dtype = STORAGE_DTYPES.get(t.dtype.name)
    if np_dtype is None:    # (PyTorch's uint16 / uint32 / uint64: no kernel here takes them)
        raise TypeError(f"not implemented for dtype {t.dtype.name} on example")
    item = t.dtype.itemsize
    if 0 in t.shape:
        return np.empty(t.shape, np_dtype)
    s = t._storage
    return np.ndarray(t.shape, np_dtype, buffer=s.handle, offset=s.offset + t._offset * item,
                      strides=tuple(st * item for st in t._stride))


def compute_dtype(dtype):
    """The NumPy dtype a kernel computes ``dtype`` in (half types in float32)."""
    if dtype.name in ("float16", "bfloat16"):
        return np.float32
    return STORAGE_DTYPES[dtype.name]


def load(t) -> np.ndarray:
    """``t``'s values ready for computing (a view where no conversion is needed)."""
    a = array(t)
    if t.dtype.name == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    if t.dtype.name == "float16":
        return a.astype(np.float32)
    return a


def _to_bfloat16_bits(values) -> np.ndarray:
    """float32 → bfloat16 bits, rounding to nearest even (NaN stays NaN)."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


def store(out, values) -> None:
    """Write ``values`` (broadcastable to ``out``) into ``out``, cast to its dtype."""
    dst = array(out)
    if dst.size == 0:
        return
    values = np.asarray(values)
    if out.dtype.name == "bfloat16":
        if values.dtype == np.bool_ or values.dtype.kind in "iu":
            values = values.astype(np.float64)
        values = _to_bfloat16_bits(np.broadcast_to(values.astype(np.float32), dst.shape))
    np.copyto(dst, values, casting="unsafe")
