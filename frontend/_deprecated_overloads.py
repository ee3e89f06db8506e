"""PyTorch's deprecated positional overloads, which PyTorch 2.13 still accepts.

Old code (optimizers written before PyTorch 1.5, most of all) passes the scaling number
first: ``p.add_(-lr, grad)``, ``v.addcmul_(1 - beta2, g, g)``, ``p.addcdiv_(-step, m,
denom)``, ``torch.addmm(beta, input, alpha, mat1, mat2)``. PyTorch rebinds those calls to
the current signatures and warns once per process (one flag for all of them, as its
argument parser has); ember does the same. A call that fits neither form raises the
``TypeError`` it raised before.
"""
from __future__ import annotations

import numbers

from ember.dispatcher.core import TensorBase
from ember.dispatcher.warn import warn

#: op -> the scaling keyword its deprecated form takes first
SCALE = {"add": "alpha", "sub": "alpha", "addcmul": "value", "addcdiv": "value"}
#: op -> the names of its two product operands (the beta-first family)
_PRODUCT = {"addmm": ("mat1", "mat2"), "addbmm": ("batch1", "batch2"),
            "baddbmm": ("batch1", "batch2"), "addmv": ("mat", "vec"), "addr": ("vec1", "vec2")}
_OTHER = {"add": ("other",), "sub": ("other",), "addcmul": ("tensor1", "tensor2"),
          "addcdiv": ("tensor1", "tensor2")}
_warned = False


def _number(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, TensorBase)


def _warn(shown: str, old: str, new: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warn(f"This overload of {shown} is deprecated:\n\t{shown}({old})\nConsider using one "
             f"of the following signatures instead:\n\t{shown}({new})", stacklevel=4)


def _fail(shown: str, given: int, takes: int):
    return TypeError(f"{shown}() takes {takes} positional arguments but {given} were given")


def _default(v) -> bool:
    return type(v) is int and v == 1


def scaled(name: str, inplace: bool, args: tuple, takes: int, scale=1):
    """``(self, operands, scale)`` for a call of ``add``/``sub``/``addcmul``/``addcdiv`` (or
    their in-place forms) whose positional arguments ``args`` (``self`` first) follow
    PyTorch's deprecated order: the scaling number before the operands. ``scale`` is the
    keyword the call also gave (the scale twice is PyTorch's TypeError)."""
    shown, method = name + ("_" if inplace else ""), inplace
    names = _OTHER[name]
    if len(args) != len(names) + 2 or not _number(args[1]) or not _default(scale):
        raise _fail(shown, len(args) - method, takes - method)
    kw = SCALE[name]
    ops = ", ".join(f"Tensor {n}" for n in names)
    first = "" if method else "Tensor input, "
    out = "" if method or inplace else ", *, Tensor out = None"
    new_out = "" if method or inplace else ", Tensor out = None"
    _warn(shown, f"{first}Number {kw}, {ops}{out}",
          f"{first}{ops}, *, Number {kw} = 1{new_out}")
    return args[0], args[2:], args[1]


def product(name: str, inplace: bool, args: tuple, beta=1, alpha=1):
    """``(input, mat1, mat2, beta, alpha)`` for a call of the ``addmm`` family whose
    positional arguments ``args`` follow PyTorch's deprecated order: ``(beta, input,
    [alpha,] mat1, mat2)`` as a function, ``(self, beta, [alpha,] mat1, mat2)`` as a
    method. ``beta`` and ``alpha`` are the keywords the call also gave."""
    shown = name + ("_" if inplace else "")
    a, b = _PRODUCT[name]
    method = isinstance(args[0], TensorBase)
    rest = args[1:] if method else args[:1] + args[2:]
    if (len(rest) not in (3, 4) or not all(_number(v) for v in rest[:-2])
            or not _default(beta) or not _default(alpha)):
        got = ", ".join(type(v).__name__ for v in args)
        raise TypeError(f"{shown}() received an invalid combination of arguments - got ({got})")
    beta, alpha = rest[0], (rest[1] if len(rest) == 4 else 1)
    first = "" if method else "Tensor input, "
    old_alpha = "Number alpha, " if len(rest) == 4 else ""
    out = "" if method or inplace else ", *, Tensor out = None"
    new_out = "" if method or inplace else ", Tensor out = None"
    old = (f"Number beta, {old_alpha}Tensor {a}, Tensor {b}" if method else
           f"Number beta, Tensor input, {old_alpha}Tensor {a}, Tensor {b}{out}")
    _warn(shown, old, f"{first}Tensor {a}, Tensor {b}, *, Number beta = 1, Number alpha = 1"
          f"{new_out}")
    return (args[0] if method else args[1]), rest[-2], rest[-1], beta, alpha
