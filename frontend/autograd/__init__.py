"""ember.autograd: reverse-mode automatic differentiation by operator overloading.

>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
from __future__ import annotations

from . import _record
from ._engine import (AccumulateGrad, Node, backward, enable_grad, grad, inference_mode,
                      is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled)
from .function import Function, FunctionCtx
from .gradcheck import gradcheck, gradgradcheck

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "Node", "AccumulateGrad"]


# from here on, the dispatcher's entry points record through this package
_record.install()
