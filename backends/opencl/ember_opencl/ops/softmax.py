"""softmax / log_softmax along one dim: kernels/softmax.cl."""
from __future__ import annotations

from .._geometry import line_geom
from .._runtime import enqueue, round_up
from ._common import (CONSTS, OPCODES, buf, check_kind, check_same, dev_of, np, numel, rt,
                      sfx)
from .reduce import reduce_local

__all__ = ["KERNELS"]


def _spec(dev):
    return {"types": sorted(n for n in dev.dtypes if n.startswith(("float", "bfloat"))),
            "consts": {**CONSTS, "RL": reduce_local(dev)}}


rt.SPECS["softmax"] = _spec


def _softmax(name):
    code = OPCODES[name]

    def kernel(out, x, dim):
        check_same(name, out, x)
        dev = dev_of(out)
        check_kind(name, dev, x.dtype, {2})
        if numel(x.shape) == 0:
            return
        ob, oo = buf(out)
        xb, xo = buf(x)
        g = line_geom(name, x, out, (dim,), xo, oo, merge=False)
        nlines, length = int(g[0]), int(g[1])
        if length <= 64 or nlines >= 4096 or (dev.is_cpu and nlines >= 16):
            enqueue(dev, dev.kernel("softmax", "softmax_wi_" + sfx(x.dtype)),
                    (round_up(nlines, 64),), (64,), np.int32(code), g, ob, xb)
        else:
            RL = reduce_local(dev)
            enqueue(dev, dev.kernel("softmax", "softmax_wg_" + sfx(x.dtype)), (nlines * RL,),
                    (RL,), np.int32(code), g, ob, xb)
    kernel.__name__ = name
    return kernel


KERNELS = {"softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax")}
