"""Fused elementwise kernels for ``ember.compile`` on OpenCL devices.

The dispatcher's planner (``ember.dispatcher.fusion``) hands a ``FusedGroup``; groups
whose values all have one of float32 and float64 (the dtypes whose compute type is their
storage type, so that keeping values in registers between ops rounds as the op-by-op
kernels do) become one OpenCL C kernel, rendered from the ops' bodies by
``ember.dispatcher.codegen.opencl.render_fused`` and built like the backend's other kernel
families (one program per group structure and device, kept for the process). Other
groups run op by op.
"""
from __future__ import annotations

import hashlib
import logging

import numpy as np

from ember.dispatcher.codegen.opencl import render_fused

from . import _runtime as rt
from ._source import CTYPES
from .ops._common import elementwise_local

#: ember.compile's output_code log (EMBER_LOGS=output_code turns it on)
_CODE_LOG = logging.getLogger("ember.compile.output_code")

__all__ = ["compile_elementwise", "STATS"]

#: groups turned into kernels (tests read it)
STATS = {"groups": 0}

_FLOATS = ("float32", "float64")
_FAMILIES: dict = {}        # group key -> (family name, dtype name)


def _fusible(group) -> bool:
    if group.reduction is not None:     # (not planned here: fuses_reductions is off)
        return False
    names = {op.dtype.name for op in group.operands} | {nd.dtype.name for nd in group.nodes}
    names |= {nd.out_dtype.name for nd in group.nodes}
    return len(names) == 1 and next(iter(names)) in _FLOATS


def compile_elementwise(group):
    """A callable ``(storages, byte_offsets, values, n)`` enqueueing ``group``'s kernel,
    or None for groups this backend runs op by op."""
    if not _fusible(group):
        return None
    key = group.key()
    hit = _FAMILIES.get(key)
    if hit is None:
        body = render_fused(group)
        _CODE_LOG.info("generated kernel of a fused group (%d ops):\n%s", len(group.nodes),
                       body)
        dtype = group.operands[0].dtype.name
        # (one program per body and dtype: the same text instantiates for either float)
        family = "fused_" + hashlib.sha256(f"{dtype}\n{body}".encode()).hexdigest()[:16]
        rt.SPECS[family] = lambda dev, _b=body, _t=dtype: {"types": (_t,), "body": _b}
        hit = _FAMILIES[key] = (family, dtype)
    family, dtype = hit
    STATS["groups"] += 1
    t = CTYPES[dtype]
    itemsize = 8 if dtype == "float64" else 4
    index = group.operands[0].enc[6].index or 0
    used = [op.load or op.store is not None for op in group.operands]
    scalar = np.float64 if dtype == "float64" else np.float32
    nvals = len(group.runtime_values)
    kname = f"fused_{t.sfx}"

    def run(storages, offsets, values, n):
        if n == 0:
            return
        dev = rt.device(index)
        dev.check_dtype(group.operands[0].dtype, "ember.compile")
        args = [np.int64(n)]
        for st, off, u in zip(storages, offsets, used):
            if u:
                args.append(st.handle)
                args.append(np.int64((st.offset + off) // itemsize))
        args += [scalar(v) for v in values[:nvals]]
        k = dev.kernel(family, kname)
        local = elementwise_local(dev)
        rt.enqueue(dev, k, (rt.round_up(n, local),), (local,), *args)

    return run
