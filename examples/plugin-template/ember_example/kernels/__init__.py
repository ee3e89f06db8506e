"""The example backend's kernels: exactly ``ember.dispatcher.PRIMITIVES``, one file per
op family (copy, unary, binary, reduce, index, matmul, random), as in every ember backend.

Every other op of the schema (softmax, conv, layer norm, ...) runs on this device through
the dispatcher's composites, written in these primitives. To make an op faster, add a
native kernel for it here (``KERNELS["softmax"] = my_softmax``, calling convention in
``ember.dispatcher.schema.OPS["softmax"].kernel``) and the composite is bypassed.
"""
from __future__ import annotations

import functools

import numpy as np

from . import binary, copy, index, matmul, random, reduce, unary

__all__ = ["KERNELS"]


def _quiet(kernel):
    """Run ``kernel`` with NumPy's floating-point warnings off: inf and NaN results are
    values here (``log(0)``, ``0 / 0``), not errors, as on every ember device."""
    @functools.wraps(kernel)
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return kernel(*args, **kwargs)
    return run


_MODULES = (copy, unary, binary, reduce, index, matmul, random)
_NAMES = {
    copy: ("copy", "fill", "arange"),
    unary: ("exp", "log", "sin", "cos", "sqrt", "erf", "floor", "bitwise_not"),
    binary: ("add", "sub", "mul", "div", "maximum", "minimum", "fmod", "pow", "eq", "lt",
             "bitwise_and", "bitwise_or", "bitwise_xor", "where"),
    reduce: ("sum", "max", "argmax"),
    index: ("gather", "scatter", "sort"),
    matmul: ("bmm",),
    random: ("uniform", "normal"),
}

#: op name -> kernel(out, *inputs, **attrs)
KERNELS = {name: _quiet(getattr(m, name)) for m in _MODULES for name in _NAMES[m]}
