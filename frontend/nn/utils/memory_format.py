"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``.

In PyTorch these re-lay the weights of ``Conv2d``/``ConvTranspose2d`` (3d) in a memory
format such as ``channels_last``, for cuDNN's NHWC kernels; the values and every result
stay the same. ember tensors are always contiguous (row-major) and its convolutions
have one layout, so there is nothing to re-lay: the functions check their arguments and
return the module unchanged, which is exactly what the conversion means for its values.
"""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _check(module, fn: str) -> None:
    if not isinstance(module, Module):
        raise TypeError(f"{fn}(): expected an nn.Module, got {type(module).__name__}")


def convert_conv2d_weight_memory_format(module: Module, memory_format) -> Module:
    """Return ``module`` (a contiguous-only framework has no other layout to convert the
    2-d convolution weights to)."""
    _check(module, "convert_conv2d_weight_memory_format")
    return module


def convert_conv3d_weight_memory_format(module: Module, memory_format) -> Module:
    """Return ``module`` (see ``convert_conv2d_weight_memory_format``)."""
    _check(module, "convert_conv3d_weight_memory_format")
    return module
