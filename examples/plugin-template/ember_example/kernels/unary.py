"""Elementwise primitives of one input: exp, log, sin, cos, sqrt, erf, floor, bitwise_not.

Inputs arrive promoted: the transcendental ops (``int_to_float`` in the schema) see
floating inputs only; ``floor`` sees any numeric dtype; ``bitwise_not`` bool or integers.
"""
from __future__ import annotations

import math

import numpy as np

from ._tensor import load, store

_erf = np.frompyfunc(math.erf, 1, 1)   # NumPy has no erf; libm's, one element at a time


def _unary(fn, name):
    def kernel(out, x):
        store(out, fn(load(x)))
    kernel.__name__ = name
    kernel.__doc__ = f"``out = {name}(x)``, elementwise."
    return kernel


exp = _unary(np.exp, "exp")
log = _unary(np.log, "log")
sin = _unary(np.sin, "sin")
cos = _unary(np.cos, "cos")
sqrt = _unary(np.sqrt, "sqrt")
erf = _unary(lambda v: _erf(v.astype(np.float64)).astype(np.float64), "erf")
bitwise_not = _unary(np.invert, "bitwise_not")       # bool: logical not


def floor(out, x):
    """``out = floor(x)``; integers are their own floor."""
    v = load(x)
    store(out, np.floor(v) if v.dtype.kind == "f" else v)
