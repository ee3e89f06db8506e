"""``nn.Parameter``: a tensor that a ``Module`` registers as one of its parameters.

>>> import ember
>>> p = ember.nn.Parameter(ember.zeros(2))
>>> p.requires_grad
True
"""
from __future__ import annotations

import weakref

import ember
from ember import Tensor

__all__ = ["Parameter", "Buffer", "is_lazy"]


class Parameter(Tensor):
    """A Tensor that is a module parameter (``torch.nn.Parameter``).

    It shares storage with ``data`` (no copy) and requires grad by default. Operations on
    a Parameter return plain Tensors.
    """
    # no new slots: a tensor's class can be switched to Parameter in place
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        t = data.detach()
        t.__class__ = cls
        t.grad = None
        t.grad_fn = None
        t.requires_grad = False
        if requires_grad:
            if not t.dtype.is_floating_point:
                raise RuntimeError("Only Tensors of floating point and complex dtype can "
                                   "require gradients")
            t.requires_grad_(True)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__ (Tensor.__init__ refuses direct construction)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.clone()
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    # ``isinstance(t, Buffer)`` is true for tensors made by ``Buffer(...)``
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and id(instance) in _BUFFER_FLAGS \
                and _BUFFER_FLAGS[id(instance)][0]() is instance
        return super().__instancecheck__(instance)


_BUFFER_FLAGS: dict = {}


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.

    ``Buffer(data, persistent=True)`` returns a Tensor sharing ``data``'s storage
    (``torch.nn.Buffer``).
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = ember.empty(0)
        t = data.detach()
        key = id(t)
        _BUFFER_FLAGS[key] = (weakref.ref(t, lambda _r, k=key: _BUFFER_FLAGS.pop(k, None)),
                              persistent)
        return t


def _buffer_persistent(t) -> bool:
    return _BUFFER_FLAGS[id(t)][1]


def is_lazy(param) -> bool:
    return False


def _set_data(param, new):
    """``param.data = new``: ``param`` (same Python object) now views ``new``'s memory."""
    param._storage = new._storage
    param.shape = new.shape
    param._stride = new._stride
    param._offset = new._offset
    param.dtype = new.dtype
    param.device = new.device
