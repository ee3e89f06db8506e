"""Host-side tensor geometry: what a kernel needs to walk strided tensors.

Kernels get ``(buffer, element offset)`` per tensor and a geometry struct by value
(``Geom`` / ``RGeom`` in ``kernels/common.cl``), packed here as int64 arrays whose layout
matches the struct. Dims are collapsed first: size-1 dims are dropped and neighbouring
dims merged wherever every operand is contiguous across them, so a contiguous tensor is
walked as one dim and only genuinely strided views pay for index arithmetic.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MAXD", "buf", "ew_geom", "line_geom", "numel", "unit_walk"]

MAXD = 8
_GEOM_LEN = 2 + MAXD + 4 + 4 * MAXD
_OFF0 = 2 + MAXD                # Geom.off[0]
_ST0 = _OFF0 + 4                # Geom.st[0][0]; operand k's strides start at _ST0 + k * MAXD
_RGEOM_LEN = 8 + 6 * MAXD


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def buf(t):
    """``(cl.Buffer, element offset)`` of tensor ``t``."""
    s = t._storage
    return s.handle, s.offset // t.dtype.itemsize + t._offset


def collapse(shape, strides):
    """Merge dims: returns ``(sizes, [strides per operand])`` with size-1 dims dropped and
    contiguous neighbours fused (row-major order is kept)."""
    sizes: list = []
    sts = [[] for _ in strides]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if sizes:
            k = len(sizes) - 1
            if all(st[k] == s[d] * n for st, s in zip(sts, strides)):
                sizes[k] *= n
                for st, s in zip(sts, strides):
                    st[k] = s[d]
                continue
        sizes.append(n)
        for st, s in zip(sts, strides):
            st.append(s[d])
    return sizes, sts


def _too_many(op, nd):
    return ValueError(f"{op}(): the opencl backend walks at most {MAXD} non-contiguous dims "
                      f"per tensor, got {nd}; make the tensor contiguous first")


def ew_geom(op: str, shape, tensors, offsets):
    """The ``Geom`` struct for an elementwise launch over ``shape``: operand ``k`` is
    ``tensors[k]`` (already broadcast to ``shape``) at element offset ``offsets[k]``."""
    sizes, sts = collapse(shape, [t._stride for t in tensors])
    nd = len(sizes)
    if nd > MAXD:
        raise _too_many(op, nd)
    g = [0] * _GEOM_LEN
    g[0] = numel(shape)
    g[1] = nd
    g[2:2 + nd] = sizes
    for k, off in enumerate(offsets):
        g[_OFF0 + k] = off
        base = _ST0 + k * MAXD
        g[base:base + nd] = sts[k]
    return np.array(g, np.int64)


def unit_walk(g, nops: int):
    """Which of the elementwise families' per-op kernels (``codegen.opencl.render_class``)
    can walk the ``Geom`` ``g`` of ``nops`` operands: ``"1d"`` (one dim, the output at
    stride 1, inputs at 0 or 1), ``"2d"`` (two dims whose rows, of at least 64 elements,
    are such, at any row strides: shorter rows would leave most lanes idle), or None."""
    nd = g[1]
    if nd == 1:
        d = 0
    elif nd == 2 and g[3] >= 64:
        d = 1
    else:
        return None
    if g[_ST0 + d] != 1 or any(g[_ST0 + k * MAXD + d] not in (0, 1) for k in range(1, nops)):
        return None
    return "1d" if nd == 1 else "2d"


def line_geom(op: str, x, out, dims, xoff: int, ooff: int, merge: bool = True):
    """The ``RGeom`` struct for ops over ``dims`` of ``x`` (reductions, scans, softmax,
    sort): the other ("kept") dims index outputs or lines, ``dims`` are walked inside.
    ``out`` has ``x``'s rank (reduced dims of size 1 for reductions)."""
    nd = len(x.shape)
    keep = [d for d in range(nd) if d not in dims]
    red = [d for d in range(nd) if d in dims]
    xs, os_ = x._stride, out._stride
    oshape = out.shape
    ks, (kx, ko) = collapse([x.shape[d] for d in keep],
                            [[xs[d] for d in keep], [os_[d] for d in keep]])
    rshape = [x.shape[d] for d in red]
    rx = [xs[d] for d in red]
    ro = [os_[d] if oshape[d] == x.shape[d] else 0 for d in red]
    if merge:
        rs, (rx, ro) = collapse(rshape, [rx, ro])
    else:
        rs = rshape
    if len(ks) > MAXD or len(rs) > MAXD:
        raise _too_many(op, max(len(ks), len(rs)))
    g = [0] * _RGEOM_LEN
    g[0] = numel(ks)
    g[1] = numel(rs)
    g[2] = len(ks)
    g[3] = len(rs)
    g[4] = xoff
    g[5] = ooff
    g[6] = g[1]      # chunk: reduced elements per work-group (callers may split)
    g[7] = 1         # nchunk
    for base, vals in ((8, ks), (16, kx), (24, ko), (32, rs), (40, rx), (48, ro)):
        g[base:base + len(vals)] = vals
    return np.array(g, np.int64)
