"""``Upsample`` (and the ``UpsamplingNearest2d`` / ``UpsamplingBilinear2d`` shorthands)."""
from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """``F.interpolate`` as a layer."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W) input.

    The same as ``Upsample(size, scale_factor, mode='nearest')``; give one of ``size`` and
    ``scale_factor``. ``nn.Upsample`` or ``F.interpolate`` is the general form.

    Args:
        size (int or tuple, optional): the output size ``(H_out, W_out)``.
        scale_factor (float or tuple, optional): the multiplier for the height and width.

    Shape:
        - Input: (N, C, H_in, W_in).
        - Output: (N, C, H_out, W_out), with ``H_out = floor(H_in * scale_factor)`` (and
          likewise for W) or the given ``size``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> nn.UpsamplingNearest2d(scale_factor=2)(x)
        tensor([[[[1., 1., 2., 2.],
                  [1., 1., 2., 2.],
                  [3., 3., 4., 4.],
                  [3., 3., 4., 4.]]]])
        >>> nn.UpsamplingNearest2d(size=(3, 5))(x).shape
        ember.Size([1, 1, 3, 5])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) input, with aligned corners.

    The same as ``Upsample(size, scale_factor, mode='bilinear', align_corners=True)``: the
    corner pixels of input and output coincide and the rest are interpolated between them.
    Give one of ``size`` and ``scale_factor``. ``nn.Upsample`` or ``F.interpolate`` is the
    general form.

    Args:
        size (int or tuple, optional): the output size ``(H_out, W_out)``.
        scale_factor (float or tuple, optional): the multiplier for the height and width.

    Shape:
        - Input: (N, C, H_in, W_in).
        - Output: (N, C, H_out, W_out), with ``H_out = floor(H_in * scale_factor)`` (and
          likewise for W) or the given ``size``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> nn.UpsamplingBilinear2d(size=(3, 3))(x)
        tensor([[[[1.0000, 1.5000, 2.0000],
                  [2.0000, 2.5000, 3.0000],
                  [3.0000, 3.5000, 4.0000]]]])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
