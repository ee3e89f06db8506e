"""``ember.autograd.Variable``: PyTorch's pre-0.4 wrapper, kept as it is in PyTorch: calling
it returns a tensor (sharing the data, a new leaf with ``requires_grad`` as given), and
every tensor is an instance of it.

>>> v = ember.autograd.Variable(ember.ones(2), requires_grad=True)
>>> isinstance(ember.ones(1), ember.autograd.Variable)
True
"""
from __future__ import annotations

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.core import TensorBase

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, TensorBase)


class Variable(metaclass=_VariableMeta):
    """Calling ``Variable(data, requires_grad=False, volatile=False)`` returns ``data``
    as a new leaf tensor sharing its memory."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            empty = C.empty((0,), D.get_default_dtype(), C.to_device("cpu"))
            return _frontend_tensor(empty, requires_grad)
        if not isinstance(data, TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t = data.detach()
        t.requires_grad = bool(requires_grad)
        return t


def _frontend_tensor(t, requires_grad):
    """``t`` (a bare dispatcher tensor) as the frontend's tensor type."""
    out = C.view_of(t, t.shape, t._stride, t._offset)
    out.requires_grad = bool(requires_grad)
    return out
