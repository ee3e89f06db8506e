"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (PyTorch semantics)."""
from __future__ import annotations

import math
import types

import ember
from ember import Tensor

from ..modules.utils import _no_grad
from ember.dispatcher.warn import warn as _warn

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _tensors(parameters) -> list:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` taken together (as one vector)."""
    tensors = [t for t in _tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    with _no_grad():
        if norm_type == math.inf:
            norms = [t.detach().abs().amax() for t in tensors]
            total = ember.stack(norms).amax() if len(norms) > 1 else norms[0]
        else:
            norms = [t.detach().norm(norm_type) for t in tensors]
            total = ember.stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(ember.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None):
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with _no_grad():
        coef = (ember.tensor(float(max_norm), dtype=total_norm.dtype) / (total_norm + 1e-6))
        coef = coef.clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Rescale the gradients of ``parameters`` in place so that their total norm is at
    most ``max_norm``; returns the total norm before clipping.

    >>> import ember, ember.nn as nn
    >>> p = nn.Parameter(ember.ones(4)); p.grad = ember.full((4,), 3.0)
    >>> float(nn.utils.clip_grad_norm_([p], 1.0))
    6.0
    """
    if isinstance(parameters, Tensor):
        params = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        params = list(parameters)
        if is_generator and not params:
            _warn("`parameters` is an empty generator, no gradient clipping will occur.")
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None) -> Tensor:
    """Deprecated spelling of ``clip_grad_norm_``: warns (``FutureWarning``), then calls
    it with the same arguments and returns its result.
    """
    _warn("`nn.utils.clip_grad_norm` is now deprecated in favor of "
          "`nn.utils.clip_grad_norm_`.", FutureWarning)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with _no_grad():
        for p in _tensors(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
