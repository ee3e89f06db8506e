"""ember.autograd: reverse-mode automatic differentiation by operator overloading.

>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
from __future__ import annotations

from . import _record
from . import anomaly_mode, forward_ad, functional, grad_mode, graph, profiler
from ._engine import (AccumulateGrad, Node, backward, enable_grad, grad, inference_mode,
                      is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled)
from .function import Function, FunctionCtx
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .grad_mode import is_multithreading_enabled, set_multithreading_enabled
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "Node", "AccumulateGrad", "Variable",
           "detect_anomaly", "set_detect_anomaly", "functional", "graph", "anomaly_mode",
           "forward_ad",
           "profiler", "grad_mode", "set_multithreading_enabled",
           "is_multithreading_enabled"]


# from here on, the dispatcher's entry points record through this package
_record.install()
