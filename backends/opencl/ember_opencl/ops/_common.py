"""What every kernel module shares: op codes, device lookup, checks, launch sizes."""
from __future__ import annotations

import numpy as np

from ember.dispatcher.codegen import opencl as gen

from .. import _runtime as rt
from .._geometry import buf, numel
from .._source import CTYPES

__all__ = ["OPCODES", "CONSTS", "dev_of", "sfx", "check_same", "check_kind", "vt",
           "elementwise_local", "buf", "numel", "np", "rt"]

# Op codes: a family's kernel switches on them (one kernel per family and dtype, not per
# op). The elementwise ones come from the op table (one per op and mode: "div_floor");
# the reductions, scans and softmax follow.
_OTHER = ["sum", "prod", "max", "min", "mean", "argmax", "argmin", "cumsum", "cumprod",
          "softmax", "log_softmax"]
OPCODES = {(name if mode is None else f"{name}_{mode}"): code
           for (name, mode), code in gen.opcodes().items()}
OPCODES.update({n: len(OPCODES) + i for i, n in enumerate(_OTHER)})

#: ``#define``s every program gets: OP_<NAME> and the error-report op ids EOP_<NAME>
CONSTS = {f"OP_{n.upper()}": i for n, i in OPCODES.items()}
CONSTS.update({f"EOP_{n.upper()}": i for i, n in enumerate(rt.ERROR_OPS)})


def dev_of(t) -> "rt.Device":
    """The runtime device a tensor lives on."""
    return rt.device(t.device.index)


def sfx(dtype) -> str:
    return CTYPES[dtype.name].sfx


def check_same(op: str, *tensors) -> None:
    d = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not d:
            names = ", ".join(t.dtype.name for t in tensors)
            raise TypeError(f"{op}(): the opencl kernel expects operands of one dtype, got "
                            f"{names}")


_KIND_NAMES = {0: "bool", 1: "integer", 2: "floating-point"}


def check_kind(op: str, dev, dtype, kinds) -> None:
    """Raise a TypeError unless ``dtype``'s kind (0 bool, 1 int, 2 float) is in ``kinds``
    and the device supports it."""
    if dtype._kind not in kinds:
        want = " or ".join(_KIND_NAMES[k] for k in sorted(kinds))
        raise TypeError(f"{op}(): not implemented for dtype {dtype.name} on opencl "
                        f"(expected {want} tensors)")
    dev.check_dtype(dtype, op)


def vt(dtype, value):
    """A Python number as the ``VT`` kernel argument of ``dtype``'s kernels."""
    if dtype._kind < 2:
        return np.int64(int(value))
    return np.float64(value) if dtype.name == "float64" else np.float32(value)


def elementwise_local(dev) -> int:
    return min(256, dev.max_work_group)
