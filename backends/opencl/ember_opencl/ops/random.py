"""uniform and normal (Philox4x32-10, reproducible from the generator's seed and offset):
kernels/random.cl."""
from __future__ import annotations

from .._runtime import enqueue, round_up
from ._common import CONSTS, buf, check_kind, dev_of, elementwise_local, np, numel, rt, sfx

__all__ = ["uniform", "normal"]


def _spec(dev):
    return {"types": sorted(n for n in dev.dtypes if n.startswith(("float", "bfloat"))),
            "consts": CONSTS}


rt.SPECS["random"] = _spec


def _random(kind):
    def kernel(out, p1, p2, seed, offset):
        dev = dev_of(out)
        check_kind(kind, dev, out.dtype, {2})
        n = numel(out.shape)
        if n == 0:
            return
        if len(out.shape) > 1 and any(s != 0 for s in out.shape) and not _contiguous(out):
            raise ValueError(f"{kind}(): the opencl kernel fills contiguous tensors (the "
                             "dispatcher passes a contiguous temporary)")
        ob, oo = buf(out)
        wf = np.float64 if dev.fp64 else np.float32
        k = dev.kernel("random", f"{kind}_{sfx(out.dtype)}")
        L = elementwise_local(dev)
        stride = out._stride[-1] if out.shape else 1
        enqueue(dev, k, (round_up(n, L),), (L,), np.int64(n), ob, np.int64(oo),
                np.int64(stride if len(out.shape) <= 1 else 1), wf(p1), wf(p2),
                np.uint64(int(seed) & (2**64 - 1)), np.uint64(int(offset) & (2**64 - 1)))
    kernel.__name__ = kind
    return kernel


def _contiguous(t) -> bool:
    expected = 1
    for n, s in zip(reversed(t.shape), reversed(t._stride)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


uniform = _random("uniform")
normal = _random("normal")
