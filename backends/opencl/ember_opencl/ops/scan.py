"""cumsum / cumprod along one dim: kernels/scan.cl."""
from __future__ import annotations

from .._geometry import line_geom
from .._runtime import enqueue, round_up
from ._common import CONSTS, OPCODES, buf, check_same, dev_of, np, numel, rt, sfx
from .reduce import reduce_local

__all__ = ["KERNELS"]


def _spec(dev):
    return {"types": sorted(dev.dtypes), "consts": {**CONSTS, "RL": reduce_local(dev)}}


rt.SPECS["scan"] = _spec


def _scan(name):
    code = OPCODES[name]

    def kernel(out, x, dim):
        check_same(name, out, x)
        if numel(x.shape) == 0:
            return
        dev = dev_of(out)
        dev.check_dtype(x.dtype, name)
        ob, oo = buf(out)
        xb, xo = buf(x)
        g = line_geom(name, x, out, (dim,), xo, oo, merge=False)
        nlines, length = int(g[0]), int(g[1])
        if length <= 64 or nlines >= 1024 or (dev.is_cpu and nlines >= 16):
            enqueue(dev, dev.kernel("scan", "scan_wi_" + sfx(x.dtype)),
                    (round_up(nlines, 64),), (64,), np.int32(code), g, ob, xb)
        else:
            RL = reduce_local(dev)
            enqueue(dev, dev.kernel("scan", "scan_wg_" + sfx(x.dtype)), (nlines * RL,), (RL,),
                    np.int32(code), g, ob, xb)
    kernel.__name__ = name
    return kernel


KERNELS = {"cumsum": _scan("cumsum"), "cumprod": _scan("cumprod")}
