"""Fused elementwise kernels for ``ember.compile`` on OpenCL devices.

The dispatcher's planner (``ember.dispatcher.fusion``) hands a ``FusedGroup``; groups
whose functors all compute in one of float32 and float64 (the dtypes whose compute type is
their storage type, so that keeping values in registers between ops rounds as the op-by-op
kernels do; bool values, a comparison's result or a ``where``'s condition, may pass
between them) become one OpenCL C kernel, rendered from the ops' bodies by
``ember.dispatcher.codegen.opencl.render_fused`` and built like the backend's other kernel
families (one program per group structure and device, kept for the process). Other
groups run op by op.
"""
from __future__ import annotations

import hashlib
import logging

import numpy as np

from ember.dispatcher.codegen.opencl import render_fused, render_fused_reduction

from . import _runtime as rt
from ._source import CTYPES
from .ops._common import CONSTS, elementwise_local
from .ops.reduce import WI_LOCAL, plan_of, reduce_local

#: ember.compile's output_code log (EMBER_LOGS=output_code turns it on)
_CODE_LOG = logging.getLogger("ember.compile.output_code")

__all__ = ["compile_elementwise", "STATS"]

#: groups turned into kernels (tests read it)
STATS = {"groups": 0}

_FLOATS = ("float32", "float64")
_FAMILIES: dict = {}        # group key -> (family name, dtype name)


def _float_of(group):
    """The floating dtype every functor of ``group`` computes in (values and operands are
    of it, or bool), or None when there is none."""
    names = {nd.dtype.name for nd in group.nodes}
    if len(names) != 1 or next(iter(names)) not in _FLOATS:
        return None
    t = next(iter(names))
    others = {op.dtype.name for op in group.operands} | {nd.out_dtype.name
                                                         for nd in group.nodes}
    return t if others <= {t, "bool"} else None


def compile_elementwise(group):
    """A callable ``(storages, byte_offsets, values, n)`` enqueueing ``group``'s kernel,
    or None for groups this backend runs op by op."""
    dtype = _float_of(group)
    if dtype is None:
        return None
    index = group.operands[0].enc[6].index or 0
    plan = None
    if group.reductions:    # summed as the backend's reduce kernels sum this shape
        plan = plan_of(rt.device(index), group.n // group.inner, group.inner)
        if plan == "split":
            return None
    key = (group.key(), plan)
    hit = _FAMILIES.get(key)
    if hit is None:
        body = render_fused(group) if plan is None else render_fused_reduction(group, plan)
        _CODE_LOG.info("generated kernel of a fused group (%d ops):\n%s", len(group.nodes),
                       body)
        # (one program per body and dtype: the same text instantiates for either float)
        family = "fused_" + hashlib.sha256(f"{dtype}\n{body}".encode()).hexdigest()[:16]
        rt.SPECS[family] = lambda dev, _b=body, _t=dtype: {
            "types": (_t,), "body": _b, "consts": {**CONSTS, "RL": reduce_local(dev)}}
        hit = _FAMILIES[key] = (family, dtype)
    family, dtype = hit
    t = CTYPES[dtype]
    kname = f"fused_{t.sfx}"
    if plan == "wg":
        # a work-group of RL, as reduce_wg's tree: a kernel whose own limit is lower (a
        # long body on a GPU) could not launch, and a smaller tree would change the sums
        dev = rt.device(index)
        k = dev.kernel(family, kname)
        if k.get_work_group_info(rt.cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                 dev.cl_device) < reduce_local(dev):
            return None
    STATS["groups"] += 1
    used = [op.load or op.store is not None for op in group.operands]
    sizes = [op.dtype.itemsize for op in group.operands]
    checked = group.nodes[0].dtype      # (the float type, which fp64 devices need)
    scalar = np.float64 if dtype == "float64" else np.float32
    nvals = len(group.runtime_values)

    inner = group.inner
    # (the row length and the outer strides of row and strided operands: kernel arguments)
    tail = () if inner is None else (np.int64(inner),) + tuple(
        np.int64(op.outer_stride) for op, u in zip(group.operands, used)
        if u and op.kind in ("row", "strided"))
    if plan is not None:    # launched as reduce_wg / reduce_wi are
        def geometry(n):
            nout = n // inner
            if plan == "wg":
                rl = reduce_local(rt.device(index))
                return (nout * rl,), (rl,), tail
            return (rt.round_up(nout, WI_LOCAL),), (WI_LOCAL,), tail
    elif inner is None:
        def geometry(n):
            local = elementwise_local(rt.device(index))
            return (rt.round_up(n, local),), (local,), ()
    else:   # rows of inner: a 2-D launch, columns along dim 0 (as the eager 2d kernels)
        def geometry(n):
            local = min(elementwise_local(rt.device(index)), 64)
            return (rt.round_up(inner, local), n // inner), (local, 1), tail

    def run(storages, offsets, values, n):
        if n == 0:
            return
        dev = rt.device(index)
        dev.check_dtype(checked, "ember.compile")
        args = [np.int64(n)]
        for st, off, u, size in zip(storages, offsets, used, sizes):
            if u:
                args.append(st.handle)
                args.append(np.int64((st.offset + off) // size))
        args += [scalar(v) for v in values[:nvals]]
        size, local, tail = geometry(n)
        rt.enqueue(dev, dev.kernel(family, kname), size, local, *args, *tail)

    return run
