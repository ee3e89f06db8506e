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
from ember.dispatcher import core as C
from ember.overrides import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "UninitializedTensorMixin", "is_lazy"]


class _ParameterMeta(type):
    # a Parameter made from a Tensor subclass's instance keeps that type (marked
    # ``_is_param``), and ``isinstance(p, Parameter)`` is still true, as PyTorch's
    def __instancecheck__(cls, instance):
        if type.__instancecheck__(cls, instance):
            return True
        return cls is Parameter and isinstance(instance, Tensor) and \
            getattr(instance, "_is_param", False)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that is a module parameter (``torch.nn.Parameter``).

    It shares storage with ``data`` (no copy) and requires grad by default. Operations on
    a Parameter return plain Tensors. Made from an instance of a Tensor subclass, it is
    that subclass's instance marked as a parameter (``isinstance(p, Parameter)`` holds).
    """
    # no new slots: a tensor's class can be switched to Parameter in place
    __slots__ = ()
    # ops on a Parameter return plain tensors: it opts out of __torch_function__
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if cls is Parameter and type(data) is not Tensor and \
                not type.__instancecheck__(Parameter, data):
            t = data.detach().requires_grad_(requires_grad)
            if type(t) is not type(data):
                raise RuntimeError(f"Parameter(): data.detach() of a {type(data).__name__} "
                                   f"returned a {type(t).__name__}; a subclass's detach "
                                   "must keep its type")
            t._is_param = True
            return t
        t = data.detach()
        t.__class__ = cls
        t.grad = None
        t.grad_fn = None
        t.requires_grad = False
        if requires_grad:
            if t.dtype._kind < 2:
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


class UninitializedTensorMixin:
    """Shared by the uninitialized parameter and buffer: no data, no shape to ask for."""
    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl  # (not a subclass to dispatch to)
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor memory of ``shape`` (uninitialised values) in place and turn it
        into a plain ``cls_to_become``."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        with ember.no_grad():
            _set_data(self, ember.empty(shape, device=device, dtype=dtype))
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A ``Parameter`` of a lazy module whose shape is not known yet."""
    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        data = ember.empty(0, device=device, dtype=dtype)
        return Parameter.__new__(cls, data, requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module whose shape is not known yet."""
    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        t = ember.empty(0, device=device, dtype=dtype)
        t.__class__ = cls
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


def _set_data(param, new):
    """``param.data = new``: ``param`` (same Python object) now views ``new``'s memory."""
    param._storage = new._storage
    C.adopt(param)
    param.shape = new.shape
    param._stride = new._stride
    param._offset = new._offset
    param.dtype = new.dtype
    param.device = new.device
