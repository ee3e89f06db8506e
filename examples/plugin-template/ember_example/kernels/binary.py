"""Elementwise primitives of two inputs, and ``where``.

Both inputs arrive promoted to one dtype and broadcast to ``out``'s shape (stride-0
views). Integer semantics follow C (and the CPU backend): arithmetic wraps around,
``fmod`` takes the dividend's sign, division by zero and negative integer powers raise.
"""
from __future__ import annotations

import numpy as np

from ._tensor import load, store


def _numeric(v):
    """bool inputs of arithmetic ops compute as small integers."""
    return v.astype(np.int64) if v.dtype == np.bool_ else v


def _binary(fn, name):
    def kernel(out, a, b):
        store(out, fn(load(a), load(b)))
    kernel.__name__ = name
    kernel.__doc__ = f"``out = {name}(a, b)``, elementwise."
    return kernel


add = _binary(np.add, "add")                  # bool + bool: logical or, as PyTorch
sub = _binary(np.subtract, "sub")
mul = _binary(np.multiply, "mul")
maximum = _binary(np.maximum, "maximum")      # NaN propagates
minimum = _binary(np.minimum, "minimum")
eq = _binary(np.equal, "eq")
lt = _binary(np.less, "lt")
bitwise_and = _binary(np.bitwise_and, "bitwise_and")
bitwise_or = _binary(np.bitwise_or, "bitwise_or")
bitwise_xor = _binary(np.bitwise_xor, "bitwise_xor")


def _refuse_bool(op, out):
    """PyTorch has no bool form of the arithmetic below (the dispatcher turns this
    TypeError into its NotImplementedError)."""
    if out.dtype.name == "bool":
        raise TypeError(f"{op}(): not implemented for dtype bool on example")


def _check_divisor(op, b):
    if (b == 0).any():
        raise RuntimeError(f"{op}(): ZeroDivisionError: integer division by zero")


def _floor_div_float(a, b):
    """PyTorch's ``div_floor_floating``: the floor of a / b, exact near integers."""
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    fl = np.floor(div)
    fl = np.where(div - fl > 0.5, fl + 1, fl)
    res = np.where(div != 0, fl, np.copysign(np.zeros_like(div), a / b))
    return np.where(b == 0, a / b, res)


def _int_div(a, b, mode):
    _check_divisor("div", b)
    safe_b = np.where(b == -1, 1, b)
    q = np.floor_divide(a, safe_b)
    if mode == "trunc":
        q = np.where((np.remainder(a, safe_b) != 0) & ((a < 0) != (safe_b < 0)), q + 1, q)
    return np.where(b == -1, np.negative(a), q)   # MIN / -1 wraps instead of trapping


def div(out, a, b, rounding_mode=None):
    """``out = a / b``: true division (floating dtypes only), or rounded with
    ``rounding_mode`` ``"trunc"`` / ``"floor"`` (any numeric dtype)."""
    _refuse_bool("div", out)
    x, y = _numeric(load(a)), _numeric(load(b))
    if rounding_mode is None:
        if x.dtype.kind != "f":
            raise TypeError(f"div(): true division is not implemented for dtype "
                            f"{out.dtype.name} on example (promote to a floating dtype first)")
        store(out, x / y)
    elif rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div(): expected rounding_mode to be one of None, 'trunc' or "
                         f"'floor' but found '{rounding_mode}'")
    elif x.dtype.kind == "f":
        store(out, np.trunc(x / y) if rounding_mode == "trunc" else _floor_div_float(x, y))
    else:
        store(out, _int_div(x, y, rounding_mode))


def fmod(out, a, b):
    """``out = fmod(a, b)``: the remainder with the dividend's sign (C's ``%``)."""
    _refuse_bool("fmod", out)
    x, y = _numeric(load(a)), _numeric(load(b))
    if x.dtype.kind != "f":
        _check_divisor("fmod", y)
        store(out, np.where(y == -1, 0, np.fmod(x, np.where(y == -1, 1, y))))
    else:
        store(out, np.fmod(x, y))


def pow(out, a, b):
    """``out = a ** b``; integer bases wrap around, negative integer exponents raise."""
    _refuse_bool("pow", out)
    x, y = _numeric(load(a)), _numeric(load(b))
    if x.dtype.kind != "f" and (y < 0).any():
        raise RuntimeError("pow(): Integers to negative integer powers are not allowed.")
    store(out, np.power(x, y))


def where(out, cond, a, b):
    """``out = a if cond else b``; ``cond`` is bool, ``a`` and ``b`` share ``out``'s dtype."""
    store(out, np.where(load(cond), load(a), load(b)))
