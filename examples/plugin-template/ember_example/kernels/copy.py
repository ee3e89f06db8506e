"""copy (any dtype to any dtype, any strides), fill and arange."""
from __future__ import annotations

import numpy as np

from ._tensor import load, store


def copy(out, src):
    """``out[...] = src`` converted to ``out``'s dtype; ``src`` is on this device and
    already broadcast to ``out``'s shape (possibly with stride 0)."""
    store(out, load(src))


def fill(out, value):
    """Every element of ``out`` = ``value`` (a Python bool, int or float already coerced
    to ``out``'s kind)."""
    store(out, np.array(value))


def arange(out, start, step):
    """``out[i] = start + i * step``: in int64 when both are ints and ``out`` is integral,
    in double otherwise, then converted (as the CPU backend does)."""
    n = out.shape[0]
    integral = out.dtype.name not in ("float16", "bfloat16", "float32", "float64")
    if integral and isinstance(start, int) and isinstance(step, int):
        i = np.arange(n, dtype=np.int64)
        with np.errstate(over="ignore"):
            values = np.int64(start) + i * np.int64(step)
    else:
        values = float(start) + np.arange(n, dtype=np.float64) * float(step)
    store(out, values)
