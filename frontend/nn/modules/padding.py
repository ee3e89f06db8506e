"""Padding layers: ``ZeroPad1d/2d/3d``, ``ConstantPad1d/2d/3d``, ``ReflectionPad1d/2d/3d``,
``ReplicationPad1d/2d/3d``, ``CircularPad1d/2d/3d`` (negative pads crop, as PyTorch)."""
from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module
from .utils import _ntuple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d",
           "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d"]


class _PadNd(Module):
    mode = "constant"
    n = 1

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        self.padding = _ntuple(2 * self.n)(padding)
        if self.mode == "constant":
            self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        if self.mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    n = 2


class ConstantPad3d(ConstantPad1d):
    n = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    n = 2


class ZeroPad3d(ZeroPad1d):
    n = 3


class ReflectionPad1d(_PadNd):
    mode = "reflect"


class ReflectionPad2d(_PadNd):
    mode, n = "reflect", 2


class ReplicationPad1d(_PadNd):
    mode = "replicate"


class ReplicationPad2d(_PadNd):
    mode, n = "replicate", 2


class CircularPad1d(_PadNd):
    mode = "circular"


class CircularPad2d(_PadNd):
    mode, n = "circular", 2


class ReflectionPad3d(_PadNd):
    mode, n = "reflect", 3


class ReplicationPad3d(_PadNd):
    mode, n = "replicate", 3


class CircularPad3d(_PadNd):
    mode, n = "circular", 3
