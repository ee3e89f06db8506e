"""Lazy modules (``torch.nn.modules.lazy``): parameters whose shape is inferred from the
first input. ``UninitializedParameter`` / ``UninitializedBuffer`` hold no data until
``materialize(shape)``; ``LazyModuleMixin`` materialises them in a forward pre-hook (or
from a loaded state dict) and then turns the module into its ``cls_to_become``.

>>> import ember, ember.nn as nn
>>> m = nn.LazyLinear(3)
>>> m(ember.randn(2, 5)).shape, type(m).__name__, m.weight.shape
(ember.Size([2, 3]), 'Linear', ember.Size([3, 5]))
"""
from __future__ import annotations

import itertools


from ..parameter import (UninitializedBuffer, UninitializedParameter,
                         is_lazy)

__all__ = ["LazyModuleMixin", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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
