"""gather and scatter along one dim: kernels/index.cl."""
from __future__ import annotations

from .._geometry import ew_geom
from .._runtime import enqueue, round_up
from .._source import SIZE_TYPES
from ._common import (CONSTS, OPCODES, buf, check_same, dev_of, elementwise_local, np, numel,
                      rt, sfx)

__all__ = ["gather", "scatter"]


def _spec(dev):
    return {"sizes": sorted(SIZE_TYPES), "types": sorted(dev.dtypes), "consts": CONSTS,
            "linear": True}


def _lin(name, g):
    return name + "_lin" if g[1] <= 1 else name


rt.SPECS["index"] = _spec


class _Strides:
    """Just the strides of a tensor view (all the geometry packer reads)."""
    __slots__ = ("_stride",)

    def __init__(self, stride):
        self._stride = tuple(stride)


def _check_index(op, index):
    if index.dtype.name != "int64":
        raise TypeError(f"{op}(): expected an int64 index tensor, got {index.dtype.name}")


def gather(out, x, dim, index):
    """out[p] = x[p with coordinate ``dim`` replaced by index[p]] (out has index's shape)."""
    _check_index("gather", index)
    check_same("gather", out, x)
    if len(index.shape) != len(x.shape):
        raise ValueError(f"gather(): index {list(index.shape)} and input {list(x.shape)} must "
                         "have the same number of dimensions")
    n = numel(index.shape)
    if n == 0:
        return
    dev = dev_of(out)
    dev.check_dtype(x.dtype, "gather")
    ob, oo = buf(out)
    ib, io = buf(index)
    xb, xo = buf(x)
    xs = list(x._stride)
    xdst = xs[dim]
    xs[dim] = 0
    g = ew_geom("gather", index.shape, (out, index, _Strides(xs)), (oo, io, xo))
    L = elementwise_local(dev)
    k = dev.kernel("index", _lin(f"gather_s{x.dtype.itemsize}", g))
    with dev.kernel_errors("gather", out=out, input=x, index=index) as err:
        enqueue(dev, k, (round_up(n, L),), (L,), g, ob, ib, xb, np.int64(xdst),
                np.int64(x.shape[dim]), np.int32(dim), err)


def scatter(out, dim, index, src, reduce=None):
    """In place: out[p with ``dim`` = index[p]] = src[p] (or += / *= with ``reduce``)."""
    _check_index("scatter", index)
    check_same("scatter", out, src)
    if reduce in ("sum",):
        reduce = "add"
    if reduce not in (None, "add", "multiply", "prod"):
        raise ValueError(f"scatter(): reduce argument must be None, 'add' or 'multiply', got "
                         f"{reduce!r}")
    nd = len(out.shape)
    if len(index.shape) != nd or len(src.shape) != nd:
        raise ValueError(f"scatter(): index {list(index.shape)}, src {list(src.shape)} and self "
                         f"{list(out.shape)} must have the same number of dimensions")
    n = numel(index.shape)
    if n == 0:
        return
    dev = dev_of(out)
    dev.check_dtype(out.dtype, "scatter")
    ob, oo = buf(out)
    ib, io = buf(index)
    sb, so = buf(src)
    L = elementwise_local(dev)
    size = out.shape[dim] if nd else 1
    # 1. every index in range, else report into the op's error record and write nothing
    g1 = ew_geom("scatter", index.shape, (index,), (io,))
    k1 = dev.kernel("index", _lin("index_check_s8", g1))
    # 2. one work-item per position, walking dim in order (skipped when 1. reported)
    if nd:
        pos = tuple(s for d, s in enumerate(index.shape) if d != dim)
        views = [_Strides(s for d, s in enumerate(t._stride) if d != dim)
                 for t in (out, index, src)]
        strides = [t._stride[dim] for t in (out, index, src)]
        length = index.shape[dim]
    else:
        pos, views, strides, length = (), [_Strides(())] * 3, [0, 0, 0], 1
    g = ew_geom("scatter", pos, views, (oo, io, so))
    npos = numel(pos)
    if reduce is None:
        k = dev.kernel("index", _lin(f"scatter_s{out.dtype.itemsize}", g))
        head = (g, ob, ib, sb)
    else:
        k = dev.kernel("index", _lin("scatter_reduce_" + sfx(out.dtype), g))
        head = (np.int32(OPCODES["add" if reduce == "add" else "mul"]), g, ob, ib, sb)
    with dev.kernel_errors("scatter", self=out, index=index, src=src) as err:
        enqueue(dev, k1, (round_up(n, L),), (L,), g1, ib, np.int64(size),
                np.int32((rt.ERROR_OPS.index("scatter") << 8) | dim), err)
        enqueue(dev, k, (round_up(npos, L),), (L,), *head, np.int64(length),
                *[np.int64(s) for s in strides], err)
