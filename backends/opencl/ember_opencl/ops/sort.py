"""sort along one dim (stable, NaN last ascending / first descending): kernels/sort.cl."""
from __future__ import annotations

from .._geometry import line_geom
from .._runtime import enqueue, round_up
from .._source import CTYPES
from ._common import CONSTS, buf, check_same, dev_of, elementwise_local, np, numel, rt, sfx

__all__ = ["sort"]

_KEY_SIZE = {"uchar": 1, "char": 1, "short": 2, "int": 4, "long": 8, "float": 4,
             "double": 8}


def _local_sizes(dev):
    sl = 256
    while sl > dev.max_work_group:
        sl //= 2
    return sl, 1024


def _spec(dev):
    sl, sort_local = _local_sizes(dev)
    return {"types": sorted(dev.dtypes), "consts": {**CONSTS, "SL": sl,
                                                     "SORT_LOCAL": sort_local}}


rt.SPECS["sort"] = _spec


def sort(values, indices, x, dim=-1, descending=False, stable=True):
    check_same("sort", values, x)
    if indices.dtype.name != "int64":
        raise TypeError(f"sort(): expected int64 indices, got {indices.dtype.name}")
    if values.shape != x.shape or indices.shape != x.shape:
        raise ValueError(f"sort(): values {list(values.shape)}, indices "
                         f"{list(indices.shape)} and input {list(x.shape)} must match")
    if values._stride != indices._stride:
        raise ValueError("sort(): the opencl kernel expects values and indices with the same "
                         "strides")
    if numel(x.shape) == 0:
        return
    dev = dev_of(values)
    dev.check_dtype(x.dtype, "sort")
    nd = len(x.shape)
    dim = dim + nd if dim < 0 else dim
    vb, vo = buf(values)
    ib, io = buf(indices)
    xb, xo = buf(x)
    g = line_geom("sort", x, values, (dim,), xo, vo, merge=False)
    nlines, length = int(g[0]), int(g[1])
    P = 1
    while P < length:
        P *= 2
    s = sfx(x.dtype)
    ksz = _KEY_SIZE[CTYPES[x.dtype.name].compute]
    keys = rt.scratch(dev, nlines * P * ksz)
    idx = rt.scratch(dev, nlines * P * 8)
    # temporaries from the caching allocator; dropped at return (the queue is in order)
    kb, ko = keys.handle, np.int64(keys.offset // ksz)
    jb, jo = idx.handle, np.int64(idx.offset // 8)
    L = elementwise_local(dev)
    total = nlines * P
    desc = np.int32(bool(descending))
    enqueue(dev, dev.kernel("sort", f"sort_load_{s}"), (round_up(total, L),), (L,), g,
            np.int64(P), xb, kb, ko, jb, jo)
    sl, sort_local = _local_sizes(dev)
    if P <= sort_local:
        enqueue(dev, dev.kernel("sort", f"sort_local_{s}"), (nlines * sl,), (sl,),
                np.int64(P), desc, np.int64(length), kb, ko, jb, jo)
    else:
        step = dev.kernel("sort", f"sort_step_{s}")
        k = 2
        while k <= P:
            j = k // 2
            while j:
                enqueue(dev, step, (round_up(total, L),), (L,), np.int64(nlines), np.int64(P),
                        np.int64(k), np.int64(j), desc, np.int64(length), kb, ko, jb, jo)
                j //= 2
            k *= 2
    enqueue(dev, dev.kernel("sort", f"sort_store_{s}"), (round_up(nlines * length, L),), (L,),
            g, np.int64(P), kb, ko, jb, jo, vb, ib, np.int64(io))

