"""Lazy modules (``torch.nn.modules.lazy``): parameters whose shape is inferred from the
first input. ``UninitializedParameter`` / ``UninitializedBuffer`` hold no data until
``materialize(shape)``; ``LazyModuleMixin`` materialises them in a forward pre-hook (or
from a loaded state dict) and then turns the module into its ``cls_to_become``.

>>> import ember, ember.nn as nn
>>> m = nn.LazyLinear(3)
>>> m(ember.randn(2, 5)).shape, type(m).__name__, m.weight.shape
((2, 3), 'Linear', (3, 5))
"""
from __future__ import annotations

import itertools

import ember
from ember import Tensor

from ..parameter import Parameter, _set_data
from .utils import _no_grad

__all__ = ["LazyModuleMixin", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


class UninitializedTensorMixin:
    """Shared by the uninitialized parameter and buffer: no data, no shape to ask for."""
    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor memory of ``shape`` (uninitialised values) in place and turn it
        into a plain ``cls_to_become``."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        with _no_grad():
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


class LazyModuleMixin:
    """Mix in before a layer class: ``initialize_parameters(*args)`` materialises the
    uninitialized parameters on the first call, after which the module becomes
    ``cls_to_become`` (when set)."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(
            LazyModuleMixin._infer_parameters, with_kwargs=True)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # PyTorch registers this as a load pre-hook; a method follows the module through
        # deepcopy (a hook bound to the module would keep pointing at the original)
        self._lazy_load_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                             unexpected_keys, error_msgs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        # uninitialized entries are saved as they are (a detached copy would be an empty
        # tensor that a lazy module loading it would take as a shape)
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            if t is not None and is_lazy(t) and prefix + name in destination:
                destination[prefix + name] = t

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        """Materialise uninitialized entries to the shapes a state dict brings."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    param.materialize(value.shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, args, kwargs=None):
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        self._initialize_hook.remove()
        del self.__dict__["_initialize_hook"]
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")
