"""im2col, col2im and max_pool: the convolution and pooling building blocks
(kernels/conv.cl), with the CPU backend's semantics (backends/cpu/csrc/conv.cpp)."""
from __future__ import annotations

import math

from .._runtime import enqueue, round_up
from ._common import buf, check_kind, check_same, dev_of, elementwise_local, np, numel, rt, sfx

__all__ = ["im2col", "col2im", "max_pool"]

# CGeom in kernels/conv.cl: rows, N, C, I K D P S B (3 each), img (off, n, c, s[3]),
# col (off, n, c, k[3], b[3]), idx (off, n, c, b[3])
_GEOM_LEN = 3 + 6 * 3 + 6 + 9 + 6


def _spec(dev):
    return {"types": sorted(dev.dtypes)}


rt.SPECS["conv"] = _spec


def _ints(op, name, v, nd):
    v = tuple(int(a) for a in v)
    if len(v) != nd:
        raise ValueError(f"{op}(): argument '{name}' must have {nd} values (one per spatial "
                         f"dim), got {len(v)}")
    return v


def _pad3(v, fill):
    return (fill,) * (3 - len(v)) + tuple(v)


class _Geom:
    """Packs a CGeom: geometry padded to 3 spatial dims (leading size-1 dims)."""

    def __init__(self, op, nd, kernel, dilation, padding, stride):
        kernel, dilation, padding, stride = (_ints(op, n, v, nd) for n, v in (
            ("kernel", kernel), ("dilation", dilation), ("padding", padding),
            ("stride", stride)))
        if (min(kernel + dilation + stride) <= 0) or min(padding) < 0:
            raise ValueError(f"{op}(): kernel, dilation and stride must be positive and "
                             f"padding non-negative, got kernel {kernel}, dilation "
                             f"{dilation}, padding {padding}, stride {stride}")
        self.nd = nd
        self.g = np.zeros(_GEOM_LEN, np.int64)
        for slot, v, fill in ((6, kernel, 1), (9, dilation, 1), (12, padding, 0),
                              (15, stride, 1)):
            self.g[slot:slot + 3] = _pad3(v, fill)

    def sizes(self, n, c, size, blocks):
        self.g[1:3] = n, c
        self.g[3:6] = _pad3(size, 1)
        self.g[18:21] = _pad3(blocks, 1)

    def img(self, t, off):
        nd = self.nd
        self.g[21:24] = off, t._stride[0], t._stride[1]
        self.g[24:27] = _pad3(t._stride[2:2 + nd], 0)

    def col(self, t, off, kernel_dims=True):
        nd = self.nd
        st = t._stride
        self.g[27:30] = off, st[0], st[1]
        if kernel_dims:
            self.g[30:33] = _pad3(st[2:2 + nd], 0)
            self.g[33:36] = _pad3(st[2 + nd:2 + 2 * nd], 0)
        else:
            self.g[33:36] = _pad3(st[2:2 + nd], 0)

    def idx(self, t, off):
        st = t._stride
        self.g[36:39] = off, st[0], st[1]
        self.g[39:42] = _pad3(st[2:2 + self.nd], 0)

    def launch(self, dev, name, rows, *args):
        self.g[0] = rows
        L = elementwise_local(dev)
        enqueue(dev, dev.kernel("conv", name), (round_up(rows, L),), (L,), self.g, *args)


def _spatial(op, t, what):
    nd = len(t.shape) - 2
    if not 1 <= nd <= 3:
        raise ValueError(f"{op}(): expected {what} with 1 to 3 spatial dims, got shape "
                         f"{list(t.shape)}")
    return nd


def _fill_value(dtype, value):
    """``value`` as the padding of a ``dtype`` tensor, as the CPU backend converts it:
    integers clamp to the dtype's range (NaN is 0), bool is ``value != 0``."""
    v = float(value)
    if dtype._kind == 2:
        return np.float64(v) if dtype.name == "float64" else np.float32(v)
    if dtype._kind == 0:
        return np.int64(v != 0)
    if math.isnan(v):
        return np.int64(0)
    info = np.iinfo(dtype.to_numpy())
    return np.int64(info.min if v <= info.min else info.max if v >= info.max else int(v))


def im2col(out, x, kernel, dilation, padding, stride, blocks, value=0):
    """out (N, C, *kernel, *blocks) = the sliding blocks of x (N, C, *sp); ``out`` may have
    any strides (the dispatcher passes a permuted view for a batch-inner layout)."""
    check_same("im2col", out, x)
    nd = _spatial("im2col", x, "an input (N, C, *spatial)")
    geo = _Geom("im2col", nd, kernel, dilation, padding, stride)
    blocks = _ints("im2col", "blocks", blocks, nd)
    k = tuple(int(v) for v in kernel)
    if tuple(out.shape) != tuple(x.shape[:2]) + k + blocks:
        raise ValueError(f"im2col(): out {list(out.shape)} must be (N, C, *kernel, *blocks) = "
                         f"{list(x.shape[:2] + k + blocks)} for input {list(x.shape)}")
    if numel(out.shape) == 0:
        return
    dev = dev_of(out)
    dev.check_dtype(x.dtype, "im2col")
    ob, oo = buf(out)
    xb, xo = buf(x)
    geo.sizes(x.shape[0], x.shape[1], x.shape[2:], blocks)
    geo.img(x, xo)
    geo.col(out, oo)
    rows = numel(out.shape) // blocks[-1]
    geo.launch(dev, "im2col_" + sfx(x.dtype), rows, ob, xb, _fill_value(x.dtype, value))


def col2im(out, cols, kernel, dilation, padding, stride, size):
    """out (N, C, *size) = the blocks of cols (N, C, *kernel, *blocks) summed in place;
    positions in the padding are dropped."""
    check_same("col2im", out, cols)
    nd = _spatial("col2im", out, "an output (N, C, *size)")
    geo = _Geom("col2im", nd, kernel, dilation, padding, stride)
    size = _ints("col2im", "size", size, nd)
    k = tuple(int(v) for v in kernel)
    if (len(cols.shape) != 2 + 2 * nd or cols.shape[:2] != out.shape[:2]
            or tuple(cols.shape[2:2 + nd]) != k or tuple(out.shape[2:]) != size):
        raise ValueError(f"col2im(): cols {list(cols.shape)} must be (N, C, *kernel, "
                         f"*blocks) with kernel {list(k)}, for out {list(out.shape)} of size "
                         f"{list(size)}")
    dev = dev_of(out)
    check_kind("col2im", dev, out.dtype, {1, 2})
    if numel(out.shape) == 0:
        return
    ob, oo = buf(out)
    cb, co = buf(cols)
    geo.sizes(out.shape[0], out.shape[1], size, cols.shape[2 + nd:])
    geo.img(out, oo)
    geo.col(cols, co)
    rows = numel(out.shape) // size[-1]
    geo.launch(dev, "col2im_" + sfx(out.dtype), rows, ob, cb)


def max_pool(values, indices, x, kernel, dilation, padding, stride, blocks):
    """values, indices (N, C, *blocks) = the maxima of each window of x (N, C, *sp) and
    their flat positions in the input plane (NaN wins; PyTorch's tie rule)."""
    check_same("max_pool", values, x)
    if indices.dtype.name != "int64":
        raise TypeError(f"max_pool(): expected int64 indices, got {indices.dtype.name}")
    nd = _spatial("max_pool", x, "an input (N, C, *spatial)")
    geo = _Geom("max_pool", nd, kernel, dilation, padding, stride)
    blocks = _ints("max_pool", "blocks", blocks, nd)
    want = tuple(x.shape[:2]) + blocks
    if tuple(values.shape) != want or tuple(indices.shape) != want:
        raise ValueError(f"max_pool(): values {list(values.shape)} and indices "
                         f"{list(indices.shape)} must be (N, C, *blocks) = {list(want)}")
    dev = dev_of(values)
    check_kind("max_pool", dev, x.dtype, {1, 2})
    if numel(want) == 0:
        return
    vb, vo = buf(values)
    ib, io = buf(indices)
    xb, xo = buf(x)
    geo.sizes(x.shape[0], x.shape[1], x.shape[2:], blocks)
    geo.img(x, xo)
    geo.col(values, vo, kernel_dims=False)
    geo.idx(indices, io)
    rows = numel(want) // blocks[-1]
    geo.launch(dev, "max_pool_" + sfx(x.dtype), rows, vb, ib, xb)
