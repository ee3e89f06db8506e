"""GEMM: batched matrix multiply, the primitive behind mm, matmul, linear and conv."""
from __future__ import annotations

import numpy as np

from ._tensor import load, store


def bmm(out, a, b):
    """``out[i] = a[i] @ b[i]`` for ``a`` [B, n, k] and ``b`` [B, k, m], one dtype."""
    x, y = load(a), load(b)
    if x.dtype.kind in "iu":           # integer GEMM wraps around, as C does
        with np.errstate(over="ignore"):
            store(out, np.matmul(x, y))
    else:
        store(out, np.matmul(x, y))
