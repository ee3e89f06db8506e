"""Weight normalisation through a forward pre-hook (the original, deprecated API of
``torch.nn.utils.weight_norm``; ``nn.utils.parametrizations.weight_norm`` is the new one).

``weight`` is split into a magnitude ``weight_g`` and a direction ``weight_v``
(Salimans & Kingma, 2016) and recomputed as ``g * v / ||v||`` before every forward.

>>> import warnings, ember.nn as nn
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     m = nn.utils.weight_norm(nn.Linear(20, 40))
>>> m.weight_g.shape, m.weight_v.shape
(ember.Size([40, 1]), ember.Size([40, 20]))
"""
from __future__ import annotations


import ember
from ember import Tensor

from ..modules.module import Module
from ..parameter import Parameter
from ember.dispatcher.warn import warn as _warn

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, keeping ``v``'s rank
    (``torch.norm_except_dim``); ``dim=-1`` means the norm of the whole tensor (0-d)."""
    if dim == -1:
        return v.norm(pow)
    ndim = v.dim()
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    dim = dim % ndim
    others = tuple(d for d in range(ndim) if d != dim)
    if not others:
        return v.abs()
    return ember.norm(v, pow, dim=others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v * (g / norm_except_dim(v, 2, dim))`` (``torch._weight_norm``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""
    name: str
    dim: int

    def __init__(self, name: str, dim: int) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> WeightNorm:
        _warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
              "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but
    ``dim``; ``dim=None`` for the whole tensor). Deprecated in PyTorch in favour of
    ``nn.utils.parametrizations.weight_norm``; warns the same way."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Fold the weight normalisation back into a plain parameter ``module.<name>``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
