"""Reductions: sum, prod, mean, max, min, var, std (any dims), argmax, argmin (one dim).

kernels/reduce.cl. The dispatcher gives ``out`` with ``x``'s rank (reduced dims of size
1), ``x`` already cast to the result dtype, and ``dims`` sorted.
"""
from __future__ import annotations

from .._geometry import line_geom
from .._runtime import enqueue, round_up
from .._source import CTYPES
from ._common import CONSTS, OPCODES, buf, check_kind, check_same, dev_of, np, numel, rt

__all__ = ["KERNELS", "reduce_local", "plan_of", "WI_LOCAL"]

#: work-group size of the work-item-per-output kernels (reduce_wi, var_wi, ...)
WI_LOCAL = 64


def reduce_local(dev) -> int:
    """Work-group size of the tree reductions (a power of two)."""
    n = 256
    while n > dev.max_work_group:
        n //= 2
    return n


def _spec(dev):
    return {"types": sorted(dev.dtypes), "consts": {**CONSTS, "RL": reduce_local(dev)}}


rt.SPECS["reduce"] = _spec


def plan_of(dev, nout: int, nred: int) -> str:
    """How ``nout`` reductions of ``nred`` elements each are launched: "wi" (a work-item
    per output, its elements in order), "wg" (a work-group per output: a strided walk,
    then the local-memory tree) or "split" (few long reductions: chunks, then their
    partials). ember.compile's fused reductions sum as this plan does."""
    if nout < 32 and nred >= 1 << 16:
        return "split"
    if nred <= 32 or nout >= 2048 or dev.is_cpu:
        return "wi"
    return "wg"


def _plan(dev, g):
    """How to launch a reduction of geometry ``g``: "wi" (a work-item per output) or
    "wg" (a work-group per output, or per chunk when few long reductions are split: the
    chunk count is written into ``g``)."""
    nout, nred = int(g[0]), int(g[1])
    plan = plan_of(dev, nout, nred)
    if plan == "split":     # few long reductions: split them
        nchunk = min(reduce_local(dev), nred >> 14)
        g[6] = -(-nred // nchunk)
        g[7] = nchunk
        return "wg"
    return plan


def _line_args(name, out, x, dims, kinds):
    """The checked launch arguments of a line reduction of ``x`` over ``dims`` into
    ``out``: (device, out buffer, x buffer, geometry, dtype suffix); None when ``out`` is
    empty (nothing to launch)."""
    dev = dev_of(out)
    check_same(name, out, x)
    check_kind(name, dev, x.dtype, kinds)
    if numel(out.shape) == 0:
        return None
    ob, oo = buf(out)
    xb, xo = buf(x)
    return dev, ob, xb, line_geom(name, x, out, tuple(dims), xo, oo), CTYPES[x.dtype.name].sfx


def _reduce(name, kinds):
    code = OPCODES[name]

    def kernel(out, x, dims):
        args = _line_args(name, out, x, dims, kinds)
        if args is None:
            return
        dev, ob, xb, g, s = args
        RL = reduce_local(dev)
        plan = _plan(dev, g)
        nout, nchunk = int(g[0]), int(g[7])
        if plan == "wi":
            k = dev.kernel("reduce", f"reduce_wi_{s}")
            enqueue(dev, k, (round_up(nout, WI_LOCAL),), (WI_LOCAL,), np.int32(code), g, ob, xb)
            return
        # partial results of a split reduction: a temporary from the caching allocator
        # (dropping it right after the enqueue is safe: the queue is in order)
        part, pbuf, poff = None, dev.err, 0
        if nchunk > 1:
            asz = 8 if x.dtype._kind < 2 or dev.fp64 else 4   # SACC: int64 or widest float
            part = rt.scratch(dev, nout * nchunk * asz)
            pbuf, poff = part.handle, part.offset // asz
        if nchunk > 1 and dev.is_cpu:
            k = dev.kernel("reduce", f"reduce_wic_{s}")
            enqueue(dev, k, (round_up(nout * nchunk, WI_LOCAL),), (WI_LOCAL,), np.int32(code),
                    g, xb, pbuf, np.int64(poff))
        else:
            k = dev.kernel("reduce", f"reduce_wg_{s}")
            enqueue(dev, k, (nout * nchunk * RL,), (RL,), np.int32(code), g, ob, xb, pbuf,
                    np.int64(poff))
        if nchunk > 1:
            k2 = dev.kernel("reduce", f"reduce_part_{s}")
            enqueue(dev, k2, (nout * RL,), (RL,), np.int32(code), g, ob, pbuf, np.int64(poff))
    kernel.__name__ = name
    return kernel


def _var_std(name):
    sq = np.int32(name == "std")

    def kernel(out, x, dims, correction=1):
        args = _line_args(name, out, x, dims, FLOAT)
        if args is None:
            return
        dev, ob, xb, g, s = args
        # the correction reaches the kernel as its accumulator type (SACC)
        corr = np.float64(correction) if dev.fp64 else np.float32(correction)
        plan = _plan(dev, g)
        nout, nchunk = int(g[0]), int(g[7])
        if plan == "wi":
            enqueue(dev, dev.kernel("reduce", f"var_wi_{s}"), (round_up(nout, WI_LOCAL),),
                    (WI_LOCAL,), sq, g, ob, xb, corr)
            return
        part, pbuf, poff = None, dev.err, 0
        if nchunk > 1:   # (mean, m2) per output and chunk
            asz = 8 if dev.fp64 else 4
            part = rt.scratch(dev, nout * nchunk * 2 * asz)
            pbuf, poff = part.handle, part.offset // asz
        if nchunk > 1 and dev.is_cpu:
            enqueue(dev, dev.kernel("reduce", f"var_wic_{s}"),
                    (round_up(nout * nchunk, WI_LOCAL),), (WI_LOCAL,), g, xb, pbuf,
                    np.int64(poff))
        else:
            RL = reduce_local(dev)
            enqueue(dev, dev.kernel("reduce", f"var_wg_{s}"), (nout * nchunk * RL,), (RL,),
                    sq, g, ob, xb, pbuf, np.int64(poff), corr)
        if nchunk > 1:
            enqueue(dev, dev.kernel("reduce", f"var_part_{s}"), (round_up(nout, WI_LOCAL),),
                    (WI_LOCAL,), sq, g, ob, pbuf, np.int64(poff), corr)
    kernel.__name__ = name
    return kernel


def _arg_reduce(name):
    code = OPCODES[name]

    def kernel(out, x, dim):
        dev = dev_of(out)
        if out.dtype.name != "int64":
            raise TypeError(f"{name}(): expected an int64 output, got {out.dtype.name}")
        dev.check_dtype(x.dtype, name)
        if numel(out.shape) == 0:
            return
        if not x.shape or x.shape[dim] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
        ob, oo = buf(out)
        xb, xo = buf(x)
        g = line_geom(name, x, out, (dim,), xo, oo, merge=False)
        nout, nred = int(g[0]), int(g[1])
        s = CTYPES[x.dtype.name].sfx
        if nred <= 64 or nout >= 2048 or dev.is_cpu:
            k = dev.kernel("reduce", f"argreduce_wi_{s}")
            enqueue(dev, k, (round_up(nout, WI_LOCAL),), (WI_LOCAL,), np.int32(code), g, ob, xb)
        else:
            RL = reduce_local(dev)
            k = dev.kernel("reduce", f"argreduce_wg_{s}")
            enqueue(dev, k, (nout * RL,), (RL,), np.int32(code), g, ob, xb)
    kernel.__name__ = name
    return kernel


ALL, FLOAT = {0, 1, 2}, {2}
KERNELS = {"sum": _reduce("sum", ALL), "prod": _reduce("prod", ALL),
           "max": _reduce("max", ALL), "min": _reduce("min", ALL),
           "mean": _reduce("mean", FLOAT), "var": _var_std("var"), "std": _var_std("std"),
           "argmax": _arg_reduce("argmax"), "argmin": _arg_reduce("argmin")}
