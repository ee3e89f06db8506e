"""ember.autograd: reverse-mode automatic differentiation by operator overloading.

>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
from __future__ import annotations

from ember.dispatcher._core import TensorBase

from ._engine import (AccumulateGrad, Node, enable_grad, inference_mode, is_grad_enabled,
                      is_inference_mode_enabled, no_grad, run_backward, set_grad_enabled)
from .function import Function, FunctionCtx
from .gradcheck import gradcheck, gradgradcheck

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "Node", "AccumulateGrad"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, TensorBase):
        return (x,)
    return tuple(x)


def _root_grads(tensors, grad_tensors, create_graph):
    from .. import _creation as K
    grads = []
    for i, t in enumerate(tensors):
        g = grad_tensors[i] if grad_tensors is not None else None
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs"
                                   f" but got {t.dtype}")
            g = K.ones_like(t)
        elif isinstance(g, TensorBase):
            if g.shape != t.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{tuple(g.shape)} and output[{i}] has a shape of "
                                   f"{tuple(t.shape)}.")
        else:
            g = K.full(t.shape, g, dtype=t.dtype, device=t.device)
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    inputs = _as_tuple(inputs)
    if inputs is not None and not inputs:
        raise RuntimeError("backward() received an empty list of inputs")
    run_backward(tensors, _root_grads(tensors, grad_tensors, create_graph), retain_graph,
                 create_graph, inputs=inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated)."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    for t in outputs:
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    res = run_backward(outputs, _root_grads(outputs, grad_outputs, create_graph), retain_graph,
                       create_graph, inputs=inputs, capture=True,
                       allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        from .. import _creation as K
        res = tuple(K.zeros_like(t) if g is None else g for g, t in zip(res, inputs))
    return res
