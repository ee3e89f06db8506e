"""copy (strided, any dtype to any dtype), fill, arange: kernels/copy.cl."""
from __future__ import annotations

import math
import struct

from .._geometry import ew_geom
from .._runtime import copy_buffer, enqueue, round_up
from .._source import CTYPES, SIZE_TYPES
from ._common import CONSTS, buf, dev_of, elementwise_local, np, numel, rt

__all__ = ["copy", "fill", "arange"]


def _spec(dev):
    names = sorted(dev.dtypes)
    return {"sizes": sorted(SIZE_TYPES), "types": names,
            "pairs": [(o, i) for o in names for i in names if o != i], "consts": CONSTS,
            "linear": True}


rt.SPECS["copy"] = _spec
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _is_contiguous(t) -> bool:
    expected = 1
    for n, s in zip(reversed(t.shape), reversed(t._stride)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def copy(out, src):
    """out[...] = src[...] (same shape; src may be a broadcast view), converting dtypes."""
    n = numel(out.shape)
    if n == 0:
        return
    dev = dev_of(out)
    if out.dtype is not src.dtype or out.dtype.name in CTYPES:
        # (a dtype without kernels here, uint16 / uint32 / uint64, copies to itself as bytes)
        dev.check_dtype(out.dtype, "copy")
        dev.check_dtype(src.dtype, "copy")
    ob, oo = buf(out)
    sb, so = buf(src)
    if out.dtype is src.dtype:
        isz = out.dtype.itemsize
        if _is_contiguous(out) and _is_contiguous(src):
            copy_buffer(dev, ob, sb, n * isz, oo * isz, so * isz)
            return
        name = f"copy_s{isz}"
    else:
        name = f"cast_{CTYPES[out.dtype.name].sfx}_{CTYPES[src.dtype.name].sfx}"
    g = ew_geom("copy", out.shape, (out, src), (oo, so))
    k = dev.kernel("copy", name + "_lin" if g[1] <= 1 else name)
    L = elementwise_local(dev)
    enqueue(dev, k, (round_up(n, L),), (L,), g, ob, sb)


def _bits(value, dtype) -> int:
    """The bit pattern of ``value`` in ``dtype`` (the host encodes; the kernel stores)."""
    name = dtype.name
    if name == "bool":
        return int(bool(value))
    if not dtype.is_floating_point:
        return int(value) & ((1 << (8 * dtype.itemsize)) - 1)   # wraps, as a C cast
    v = float(value)
    if name == "float64":
        return struct.unpack("<Q", struct.pack("<d", v))[0]
    if name == "float16":
        try:
            return struct.unpack("<H", struct.pack("<e", v))[0]
        except OverflowError:
            return 0xFC00 if v < 0 else 0x7C00
    try:
        u = struct.unpack("<I", struct.pack("<f", v))[0]
    except OverflowError:
        u = 0xFF800000 if v < 0 else 0x7F800000
    if name == "float32":
        return u
    if math.isnan(v):     # bfloat16: round the float32 to nearest even
        return 0x7FC0
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def fill(out, value):
    n = numel(out.shape)
    if n == 0:
        return
    dev = dev_of(out)
    dev.check_dtype(out.dtype, "fill")
    isz = out.dtype.itemsize
    ob, oo = buf(out)
    g = ew_geom("fill", out.shape, (out,), (oo,))
    k = dev.kernel("copy", f"fill_s{isz}_lin" if g[1] <= 1 else f"fill_s{isz}")
    L = elementwise_local(dev)
    enqueue(dev, k, (round_up(n, L),), (L,), g, ob, _UINT[isz](_bits(value, out.dtype)))


def arange(out, start, step):
    """out[i] = start + i * step (out is 1-D)."""
    if len(out.shape) != 1:
        raise ValueError(f"arange(): expected a 1-D output, got shape {list(out.shape)}")
    n = out.shape[0]
    if n == 0:
        return
    dev = dev_of(out)
    dev.check_dtype(out.dtype, "arange")
    use_int = (out.dtype._kind == 1 and isinstance(start, int) and isinstance(step, int))
    wf = np.float64 if dev.fp64 else np.float32
    ob, oo = buf(out)
    k = dev.kernel("copy", f"arange_{CTYPES[out.dtype.name].sfx}")
    L = elementwise_local(dev)
    wrap = (1 << 64) - 1
    ist = (int(step) & wrap) if use_int else 0
    isl = (int(start) & wrap) if use_int else 0
    enqueue(dev, k, (round_up(n, L),), (L,), np.int64(n), ob, np.int64(oo),
            np.int64(out._stride[0]), np.uint64(isl).view(np.int64),
            np.uint64(ist).view(np.int64), wf(start), wf(step), np.int32(use_int))
