"""A minimal compiler for ``ember.compile``: the optional ``compile_elementwise`` of the
plugin contract, to show its shape.

ember's default compiler (``ember.dispatcher.fusion``) cuts a captured graph into groups
of consecutive elementwise calls over ``group.n`` elements and asks the device's plugin to
run each group as one kernel. A group lists:

- ``group.operands``: the tensors it touches, each a view of one storage (``.dtype``,
  ``.single``: one element read by all, ``.load``: read from memory, ``.store``: the
  value id the group writes into it, or None);
- ``group.nodes``: functor applications in order (``.op``, ``.mode``, ``.attrs``,
  ``.inputs``: ``("operand", i)`` or ``("value", id)``, ``.value``: the id it makes).

This plugin returns a callable that evaluates the nodes with NumPy, keeping intermediate
values as arrays instead of writing them to device memory, for float32/float64 groups of
the ops below; for any other group it returns None, and those calls run one kernel each.
A real backend would generate one device kernel here (see ``ember_cpu.fusion``: C++, and
``ember_opencl.fusion``: OpenCL C).
"""
from __future__ import annotations

import numpy as np

__all__ = ["compile_elementwise", "STATS"]

#: groups this plugin ran as one (tests read it)
STATS = {"groups": 0}

#: the ops this compiler evaluates: the same NumPy functions as the plugin's kernels
_FUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum, "exp": np.exp, "log": np.log, "sin": np.sin,
          "cos": np.cos, "sqrt": np.sqrt}
_FLOATS = {"float32": np.float32, "float64": np.float64}


def compile_elementwise(group):
    """``run(storages, byte_offsets, values, n)`` for ``group``, or None."""
    if any(nd.op not in _FUNCS or nd.mode is not None or nd.attrs
           or nd.dtype.name not in _FLOATS or nd.out_dtype is not nd.dtype
           for nd in group.nodes):
        return None
    if any(op.dtype.name not in _FLOATS for op in group.operands):
        return None
    STATS["groups"] += 1

    def view(storage, offset, op, n):
        """The operand's elements in device memory (this plugin's memory is NumPy's)."""
        dt = np.dtype(_FLOATS[op.dtype.name])
        return np.ndarray((1,) if op.single else (n,), dt, buffer=storage.handle,
                          offset=storage.offset + offset)

    def run(storages, offsets, values, n):
        arrays = [view(s, off, op, n) if op.load or op.store is not None else None
                  for s, off, op in zip(storages, offsets, group.operands)]
        made = {}
        for nd in group.nodes:
            args = [made[i] if kind == "value" else arrays[i] for kind, i in nd.inputs]
            made[nd.value] = _FUNCS[nd.op](*args)
        for a, op in zip(arrays, group.operands):
            if op.store is not None:
                a[...] = made[op.store]
    return run
