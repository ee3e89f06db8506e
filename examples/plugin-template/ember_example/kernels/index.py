"""Indexing primitives: gather, scatter (in place, optionally adding) and sort."""
from __future__ import annotations

import numpy as np

from ._tensor import array, load, store


def _check_bounds(op, idx, size):
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)][0]
        raise IndexError(f"{op}(): index {bad} is out of bounds for dimension with size "
                         f"{size}")


def _coords(index_shape, dim, idx):
    """Full coordinates for every element of an index tensor, ``idx`` along ``dim``."""
    grid = list(np.indices(index_shape, sparse=True))
    grid[dim] = idx
    return tuple(grid)


def gather(out, x, dim, index):
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` (for ``dim == 1``); ``index`` may be
    smaller than ``x`` in the other dims."""
    idx = array(index)
    _check_bounds("gather", idx, x.shape[dim])
    store(out, load(x)[_coords(idx.shape, dim, idx)])


def scatter(out, dim, index, src, reduce=None):
    """In place: ``out[i][index[i][j][k]][k] = src[i][j][k]`` (for ``dim == 1``), or
    ``+=`` with ``reduce="add"``. ``src`` may be larger than ``index``."""
    idx = array(index)
    _check_bounds("scatter", idx, out.shape[dim])
    values = load(src)[tuple(slice(0, n) for n in idx.shape)]
    target = load(out).copy()          # half types: compute in float32, store back
    where = _coords(idx.shape, dim, idx)
    if reduce == "add":
        np.add.at(target, where, values)
    else:
        target[where] = values
    store(out, target)


def sort(values, indices, x, dim, descending, stable):
    """``values`` = ``x`` sorted along ``dim``; ``indices`` (int64) where each came from.
    NaN sorts as the largest value; equal values keep their order (every sort here is
    stable, which satisfies ``stable=False`` too)."""
    v = load(x)
    if descending:
        # a stable descending order: sort the reversed row ascending, then reverse back
        flipped = np.flip(v, axis=dim)
        order = np.flip(np.argsort(flipped, axis=dim, kind="stable"), axis=dim)
        order = v.shape[dim] - 1 - order
    else:
        order = np.argsort(v, axis=dim, kind="stable")
    store(indices, order)
    store(values, np.take_along_axis(v, order, axis=dim))
