"""The example backend's kernels: ``ember.dispatcher.PRIMITIVES``, one file per op family
(copy, unary, binary, reduce, index, matmul, random), as in every ember backend, and one
native kernel for a composite (``nn.py``: layer_norm).

Every other op of the schema (softmax, conv, batch norm, ...) runs on this device through
the dispatcher's composites, written in these primitives. To make an op faster, add a
native kernel for it here (``KERNELS["softmax"] = my_softmax``, calling convention in
``ember.dispatcher.schema.OPS["softmax"].kernel``) and the composite is bypassed, as
``layer_norm`` shows.
"""
from __future__ import annotations

import functools

import numpy as np

from . import binary, copy, index, matmul, nn, random, reduce, unary

__all__ = ["KERNELS"]


def _quiet(kernel):
    """Run ``kernel`` with NumPy's floating-point warnings off: inf and NaN results are
    values here (``log(0)``, ``0 / 0``), not errors, as on every ember device."""
    @functools.wraps(kernel)
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return kernel(*args, **kwargs)
    return run


_MODULES = (copy, unary, binary, reduce, index, matmul, random, nn)
_NAMES = {
    copy: ("copy", "fill", "arange"),
    unary: ("exp", "log", "sin", "cos", "sqrt", "erf", "floor", "bitwise_not"),
    binary: ("add", "sub", "mul", "div", "maximum", "minimum", "fmod", "pow", "eq", "lt",
             "bitwise_and", "bitwise_or", "bitwise_xor", "where"),
    reduce: ("sum", "max", "argmax"),
    index: ("gather", "scatter", "sort"),
    matmul: ("bmm",),
    random: ("uniform", "normal"),
    nn: ("layer_norm",),            # replaces a composite (optional, for speed)
}

#: op name -> kernel(out, *inputs, **attrs)
KERNELS = {name: _quiet(getattr(m, name)) for m in _MODULES for name in _NAMES[m]}
