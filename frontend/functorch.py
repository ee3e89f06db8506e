"""PyTorch's older ``functorch`` package: the function transforms before they moved to
``torch.func``, and ``make_functional`` (a module turned into a function of its
parameters). Each name warns (``FutureWarning``) that it is deprecated, as PyTorch's do;
``python -m ember.as_torch`` makes ``import functorch`` load this module.

Example:
    >>> import ember.functorch as ft
    >>> fmodel, params = ft.make_functional(ember.nn.Linear(2, 1))
    >>> fmodel(params, ember.ones(1, 2)).shape
    ember.Size([1, 1])
"""
from __future__ import annotations

import copy
import functools
import warnings

from . import func as _func
from . import nn as _nn
from ._creation import empty as _empty
from ._functions import stack as _stack

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functionalize", "make_functional", "make_functional_with_buffers",
           "combine_state_for_ensemble", "FunctionalModule", "FunctionalModuleWithBuffers"]


def _warn_deprecated(api: str, new_api: str | None = None) -> None:
    new_api = new_api or f"torch.func.{api}"
    warnings.warn(
        f"We've integrated functorch into PyTorch. As the final step of the integration, "
        f"`functorch.{api}` is deprecated as of PyTorch 2.0 and will be deleted in a future "
        f"version of PyTorch >= 2.3. Please use `{new_api}` instead; see the PyTorch 2.0 "
        f"release notes and/or the `torch.func` migration guide for more details "
        f"https://pytorch.org/docs/main/func.migrating.html", FutureWarning, stacklevel=3)


def _deprecated(fn, api, new_api=None):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _warn_deprecated(api, new_api)
        return fn(*args, **kwargs)
    return wrapper


vmap = _deprecated(_func.vmap, "vmap", "torch.vmap")
grad = _deprecated(_func.grad, "grad")
grad_and_value = _deprecated(_func.grad_and_value, "grad_and_value")
vjp = _deprecated(_func.vjp, "vjp")
jvp = _deprecated(_func.jvp, "jvp")
jacrev = _deprecated(_func.jacrev, "jacrev")
jacfwd = _deprecated(_func.jacfwd, "jacfwd")
hessian = _deprecated(_func.hessian, "hessian")
functionalize = _deprecated(_func.functionalize, "functionalize")


def _strip(module, names):
    """Each named tensor of the copy left on the meta device (it holds no data: calls take
    the tensors as arguments), the originals returned."""
    taken = []
    for name in names:
        owner, _, leaf = name.rpartition(".")
        sub = module.get_submodule(owner) if owner else module
        t = getattr(sub, leaf)
        taken.append(t)
        stand_in = _empty(tuple(t.shape), dtype=t.dtype, device="meta")
        if leaf in sub._parameters:
            sub._parameters[leaf] = _nn.Parameter(stand_in, t.requires_grad)
        else:
            sub._buffers[leaf] = stand_in
    return tuple(taken)


class FunctionalModule(_nn.Module):
    """A module as a function of its parameters: ``fmodel(params, *args)`` runs the
    module with ``params`` (in ``named_parameters`` order) in place of its own.

    Example:
        >>> from ember.functorch import make_functional
        >>> fmodel, params = make_functional(ember.nn.Linear(2, 1))
        >>> type(fmodel).__name__
        'FunctionalModule'
    """

    def __init__(self, stateless_model, param_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)

    def forward(self, params, *args, **kwargs):
        return _func.functional_call(self.stateless_model,
                                     dict(zip(self.param_names, params)), args, kwargs)


class FunctionalModuleWithBuffers(_nn.Module):
    """A module as a function of its parameters and buffers:
    ``fmodel(params, buffers, *args)``.

    Example:
        >>> from ember.functorch import make_functional_with_buffers
        >>> f, p, b = make_functional_with_buffers(ember.nn.BatchNorm1d(2))
        >>> f(p, b, ember.randn(4, 2)).shape
        ember.Size([4, 2])
    """

    def __init__(self, stateless_model, param_names, buffer_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)
        self.buffer_names = tuple(buffer_names)

    def forward(self, params, buffers, *args, **kwargs):
        tensors = dict(zip(self.param_names, params))
        tensors.update(zip(self.buffer_names, buffers))
        return _func.functional_call(self.stateless_model, tensors, args, kwargs)


def _copy_params(model, disable_autograd_tracking):
    model_copy = copy.deepcopy(model)
    names = [n for n, _ in model_copy.named_parameters()]
    params = _strip(model_copy, names)
    if disable_autograd_tracking:
        for p in params:
            p.requires_grad_(False)
    return model_copy, names, params


def make_functional(model, disable_autograd_tracking: bool = False):
    """``(fmodel, params)``: a copy of ``model`` as a function of its parameters, and
    those parameters (the copy's; the copy itself keeps only their shapes, on the meta
    device). Deprecated in PyTorch, as here: use ``ember.func.functional_call``.

    Example:
        >>> from ember.functorch import make_functional
        >>> fmodel, params = make_functional(ember.nn.Linear(2, 1))
        >>> [tuple(p.shape) for p in params]
        [(1, 2), (1,)]
    """
    _warn_deprecated("make_functional", "torch.func.functional_call")
    if len(list(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    model_copy, names, params = _copy_params(model, disable_autograd_tracking)
    return FunctionalModule(model_copy, names), params


def make_functional_with_buffers(model, disable_autograd_tracking: bool = False):
    """``(fmodel, params, buffers)``: :func:`make_functional` for a module with buffers;
    ``fmodel(params, buffers, *args)``.

    Example:
        >>> from ember.functorch import make_functional_with_buffers
        >>> f, p, b = make_functional_with_buffers(ember.nn.BatchNorm1d(2))
        >>> len(p), len(b)
        (2, 3)
    """
    _warn_deprecated("make_functional_with_buffers", "torch.func.functional_call")
    model_copy, names, params = _copy_params(model, disable_autograd_tracking)
    buffer_names = [n for n, _ in model_copy.named_buffers()]
    buffers = _strip(model_copy, buffer_names)
    return FunctionalModuleWithBuffers(model_copy, names, buffer_names), params, buffers


def combine_state_for_ensemble(models):
    """``(fmodel, params, buffers)`` for models of one class: each parameter and buffer
    stacked over the models (detached), for ``vmap(fmodel)(params, buffers, x)``.

    Example:
        >>> models = [ember.nn.Linear(2, 1) for _ in range(3)]
        >>> f, p, b = ember.functorch.combine_state_for_ensemble(models)
        >>> p[0].shape
        ember.Size([3, 1, 2])
    """
    _warn_deprecated("combine_state_for_ensemble", "torch.func.stack_module_state")
    _func._check_ensemble("combine_state_for_ensemble", models)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        fmodel, _, _ = make_functional_with_buffers(models[0])
    params = tuple(_stack([p for p in ps]).detach() for ps in
                   zip(*[tuple(m.parameters()) for m in models]))
    buffers = tuple(_stack([b for b in bs]).detach() for bs in
                    zip(*[tuple(m.buffers()) for m in models]))
    return fmodel, params, buffers
