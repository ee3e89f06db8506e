"""bmm: batched GEMM on strided operands (kernels/matmul.cl).

GPUs (and dtypes other than float32) get the local-memory tiled kernel; CPU devices
(PoCL) get ``gemm_cpu``, register-blocked without local memory, which is several times
faster there: PoCL runs a work-group as a loop over its work-items, so staging tiles in
local memory behind barriers only adds copies.
"""
from __future__ import annotations

from ._common import CONSTS, buf, check_kind, check_same, dev_of, np, rt, sfx

__all__ = ["bmm"]

TM = TN = 64
TK = 16
#: pack_b's rows of a panel per work-item
PACK_K = 16


def _cpu_block(dev):
    """gemm_cpu's (rows, float lanes per vector) of c per work-item: two vectors of the
    device's width per row, as many rows as the register file holds (measured on PoCL,
    AVX-512, the MLP's GEMMs: 12 x 32 blocks take half the time of 6 x 16)."""
    return (12, 16) if dev.float_lanes >= 16 else (6, 8)


def _spec(dev):
    cm, vw = _cpu_block(dev)
    return {"types": sorted(n for n in dev.dtypes if n != "bool"),
            "consts": {**CONSTS, "TM": TM, "TN": TN, "TK": TK, "CPU_CM": cm,
                       "CPU_VW": vw, "PACK_K": PACK_K}}


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
    if dev.is_cpu and out.dtype.name == "float32" and out._stride[2] == 1 and k > 0:
        _gemm_cpu(dev, g, ob, ab, bb)
        return
    kern = dev.kernel("matmul", "gemm_" + sfx(out.dtype))
    gsize = (-(-m // TN) * 16, -(-n // TM) * 16, B)
    rt.enqueue(dev, kern, gsize, (16, 16, 1), g, ob, ab, bb)


def _gemm_cpu(dev, g, ob, ab, bb):
    n, m, k, B = (int(v) for v in g[:4])
    cm, vw = _cpu_block(dev)
    cn = 2 * vw
    panels = -(-m // cn)
    # b packed as panels of 2 * vw columns (pack_b): a work-item then streams one contiguous panel.
    # The block goes back to the caching allocator on return; the in-order queue runs the
    # GEMM before any later use of it.
    scratch = rt.scratch(dev, B * panels * k * cn * 4)
    k_fast = int(g[8] == 1 and g[9] != 1)       # b contiguous along k (x @ w.t())
    poff = np.int64(scratch.offset // 4)
    rt.enqueue(dev, dev.kernel("matmul", "pack_b_f32"), (panels, -(-k // PACK_K), B),
               (1, 1, 1), g, scratch.handle, poff, bb, np.int32(k_fast))
    blocks = -(-n // cm)
    rb = _row_blocks(k, blocks, panels * B)
    rt.enqueue(dev, dev.kernel("matmul", "gemm_cpu_f32"), (panels, -(-blocks // rb), B),
               (1, 1, 1), g, ob, ab, scratch.handle, poff, np.int32(rb))


def _row_blocks(k, blocks, columns):
    """gemm_cpu's row blocks per work-item: at least 256 steps along k in all (PoCL's cost
    per work-group is then small against the work), while leaving at least 32 work-items
    to share out."""
    rb = max(1, -(-256 // max(k, 1)))
    while rb > 1 and columns * -(-blocks // rb) < 32:
        rb -= 1
    return rb
