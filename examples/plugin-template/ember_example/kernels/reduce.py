"""Reductions: sum, max (amax) and argmax. ``out`` keeps the reduced dims as size 1."""
from __future__ import annotations

import numpy as np

from ._tensor import compute_dtype, load, store


def sum(out, x, dims):
    """``out`` = the sum of ``x`` over ``dims`` (sorted, non-negative). ``x`` arrives in
    ``out``'s dtype (bool and integers already widened to int64 by the dispatcher)."""
    store(out, np.sum(load(x), axis=tuple(dims), keepdims=True,
                      dtype=compute_dtype(out.dtype)))


def max(out, x, dims):
    """``out`` = the maximum of ``x`` over ``dims``; NaN wins, as in PyTorch."""
    store(out, np.max(load(x), axis=tuple(dims), keepdims=True))


def argmax(out, x, dim):
    """``out`` (int64) = the index of the first maximum along ``dim``; NaN counts as the
    maximum."""
    store(out, np.argmax(load(x), axis=dim, keepdims=True))
