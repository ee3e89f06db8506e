"""bmm: tiled, batched GEMM on strided operands (kernels/matmul.cl)."""
from __future__ import annotations

from ._common import CONSTS, buf, check_kind, check_same, dev_of, np, rt, sfx

__all__ = ["bmm"]

TM = TN = 64
TK = 16


def _spec(dev):
    return {"types": sorted(n for n in dev.dtypes if n != "bool"),
            "consts": {**CONSTS, "TM": TM, "TN": TN, "TK": TK}}


rt.SPECS["matmul"] = _spec


def bmm(out, a, b):
    """out[B, n, m] = a[B, n, k] @ b[B, k, m]; any strides (transposes included)."""
    check_same("bmm", out, a, b)
    if len(a.shape) != 3 or len(b.shape) != 3 or len(out.shape) != 3:
        raise ValueError(f"bmm(): expected 3-D tensors, got {list(a.shape)}, {list(b.shape)} "
                         f"and out {list(out.shape)}")
    B, n, k = a.shape
    m = b.shape[2]
    if b.shape[:2] != (B, k) or out.shape != (B, n, m):
        raise ValueError(f"bmm(): shape mismatch: a {list(a.shape)}, b {list(b.shape)}, out "
                         f"{list(out.shape)}")
    dev = dev_of(out)
    check_kind("bmm", dev, out.dtype, {1, 2})
    if B == 0 or n == 0 or m == 0:
        return
    ob, oo = buf(out)
    ab, ao = buf(a)
    bb, bo = buf(b)
    g = np.array([n, m, k, B, *a._stride, *b._stride, *out._stride, ao, bo, oo], np.int64)
    kern = dev.kernel("matmul", "gemm_" + sfx(out.dtype))
    gsize = (-(-m // TN) * 16, -(-n // TM) * 16, B)
    rt.enqueue(dev, kern, gsize, (16, 16, 1), g, ob, ab, bb)
