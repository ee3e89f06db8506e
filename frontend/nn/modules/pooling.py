"""Pooling layers: max, average, adaptive, LP, fractional max pooling and max unpooling
over 1 to 3 spatial dims (``torch.nn.modules.pooling``)."""
from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module
from .utils import _pair, _single, _triple

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}"
                ", dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__))


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling: the maximum over sliding windows of the last dimension.

    Each output element is the largest input element in its window of ``kernel_size``
    elements (spaced ``dilation`` apart), windows starting every ``stride`` elements. Padding
    is implicit ``-inf``, so it never wins the max.

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit padding on both sides; at most half the kernel
            size. Default: 0.
        dilation (int or tuple): the spacing between window elements. Default: 1.
        return_indices (bool): also return the flat indices of the maxima (what
            ``MaxUnpool1d`` needs). Default: False.
        ceil_mode (bool): round the output length up instead of down, so that a last partial
            window (starting inside the input or left padding) is kept. Default: False.

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out), with
          ``L_out = floor((L_in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride + 1)``.

    Example:
        >>> import ember.nn as nn
        >>> nn.MaxPool1d(2)(ember.tensor([[1.0, 3.0, 2.0, 5.0, 4.0]]))
        tensor([[3., 5.]])
        >>> out, idx = nn.MaxPool1d(2, return_indices=True)(ember.tensor([[1.0, 3.0, 5.0, 2.0]]))
        >>> idx
        tensor([[1, 2]])
    """

    def forward(self, input: Tensor):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over (dilated) windows of (N, C, H, W) input.

    >>> import ember, ember.nn as nn
    >>> nn.MaxPool2d(2)(ember.randn(1, 3, 8, 8)).shape
    ember.Size([1, 3, 4, 4])
    """

    def forward(self, input: Tensor):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """1-D average pooling: the mean over sliding windows of the last dimension.

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): zero padding added on both sides; at most half the kernel
            size. Default: 0.
        ceil_mode (bool): round the output length up instead of down. Default: False.
        count_include_pad (bool): count the padding zeros in the divisor. Default: True.

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out), with
          ``L_out = floor((L_in + 2 * padding - kernel_size) / stride + 1)``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[1.0, 3.0, 2.0, 6.0]])
        >>> nn.AvgPool1d(2)(x)
        tensor([[2., 4.]])
        >>> nn.AvgPool1d(3, stride=1, padding=1)(x)
        tensor([[1.3333, 2.0000, 3.6667, 2.6667]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over windows of (N, C, H, W) input."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePoolNd(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """1-D average pooling to a fixed output length, whatever the input length.

    The window bounds are chosen for each output position ``i`` as
    ``[floor(i * L_in / L_out), ceil((i + 1) * L_in / L_out))``, so windows may overlap or
    differ in size when ``L_in`` is not a multiple of ``L_out``.

    Args:
        output_size (int): the output length ``L_out``.

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out).

    Example:
        >>> import ember.nn as nn
        >>> nn.AdaptiveAvgPool1d(2)(ember.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]))
        tensor([[2., 5.]])
        >>> nn.AdaptiveAvgPool1d(3)(ember.randn(8, 4, 50)).shape
        ember.Size([8, 4, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Average pooling to a fixed (oH, oW); ``None`` keeps that input size."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-D max pooling to a fixed output length, whatever the input length.

    The windows are those of ``AdaptiveAvgPool1d``; each output is the window's maximum.

    Args:
        output_size (int): the output length ``L_out``.
        return_indices (bool): also return the indices of the maxima. Default: False.

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out).

    Example:
        >>> import ember.nn as nn
        >>> nn.AdaptiveMaxPool1d(2)(ember.tensor([[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]))
        tensor([[3., 5.]])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-D max pooling to a fixed output size, whatever the input size.

    The windows are chosen per output position as in ``AdaptiveAvgPool2d``; each output is
    the window's maximum.

    Args:
        output_size (int or tuple): ``(H_out, W_out)``, or one int for a square output;
            ``None`` in either place keeps that input size.
        return_indices (bool): also return the indices of the maxima. Default: False.

    Shape:
        - Input: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out).

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(1, 64, 8, 9)
        >>> nn.AdaptiveMaxPool2d((5, 7))(x).shape
        ember.Size([1, 64, 5, 7])
        >>> nn.AdaptiveMaxPool2d((None, 3))(x).shape
        ember.Size([1, 64, 8, 3])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """3-D average pooling to a fixed output size, whatever the input size.

    Args:
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for a cube;
            ``None`` in any place keeps that input size.

    Shape:
        - Input: (N, C, D_in, H_in, W_in) or (C, D_in, H_in, W_in).
        - Output: (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out).

    Example:
        >>> import ember.nn as nn
        >>> nn.AdaptiveAvgPool3d((2, None, 1))(ember.randn(1, 3, 8, 9, 10)).shape
        ember.Size([1, 3, 2, 9, 1])
        >>> nn.AdaptiveAvgPool3d(1)(ember.ones(2, 3, 4, 4, 4)).flatten()
        tensor([1., 1., 1., 1., 1., 1.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-D max pooling to a fixed output size, whatever the input size.

    Args:
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for a cube;
            ``None`` in any place keeps that input size.
        return_indices (bool): also return the indices of the maxima. Default: False.

    Shape:
        - Input: (N, C, D_in, H_in, W_in) or (C, D_in, H_in, W_in).
        - Output: (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out).

    Example:
        >>> import ember.nn as nn
        >>> nn.AdaptiveMaxPool3d((2, 3, 4))(ember.randn(1, 3, 8, 9, 10)).shape
        ember.Size([1, 3, 2, 3, 4])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """Max over (dilated) windows of (N, C, D, H, W) input."""

    def forward(self, input: Tensor):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(Module):
    """Mean over windows of (N, C, D, H, W) input."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxUnpoolNd(Module):
    _tuple = staticmethod(_single)
    _fn = staticmethod(F.max_unpool1d)

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride if stride is not None else kernel_size)
        self.padding = self._tuple(padding)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding,
                        output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d``: values go back to their max positions."""


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d``.

    >>> import ember, ember.nn as nn
    >>> out, idx = nn.MaxPool2d(2, return_indices=True)(ember.randn(1, 1, 4, 4))
    >>> nn.MaxUnpool2d(2)(out, idx).shape
    ember.Size([1, 1, 4, 4])
    """
    _tuple = staticmethod(_pair)
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d``: each value goes back to the position its
    maximum came from, and every other position is zero.

    ``forward(input, indices, output_size=None)`` takes the pooled values and the indices
    ``MaxPool3d(..., return_indices=True)`` returned; pass ``output_size`` when several input
    sizes pool to the same size.

    Args:
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: 0.

    Shape:
        - Input: (N, C, D_in, H_in, W_in) or (C, D_in, H_in, W_in).
        - Output: (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out), with
          ``D_out = (D_in - 1) * stride[0] - 2 * padding[0] + kernel_size[0]`` and likewise
          for H and W, or ``output_size``.

    Example:
        >>> import ember.nn as nn
        >>> pool = nn.MaxPool3d(2, return_indices=True)
        >>> x = ember.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> out, idx = pool(x)
        >>> out.flatten(), idx.flatten()
        (tensor([7.]), tensor([7]))
        >>> nn.MaxUnpool3d(2)(out, idx).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """
    _tuple = staticmethod(_triple)
    _fn = staticmethod(F.max_unpool3d)


class _LPPoolNd(Module):
    _fn = staticmethod(F.lp_pool1d)

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                        self.ceil_mode)

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """Power-average pooling: ``(sum x^p)^(1/p)`` over each window."""


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling: ``(sum x^p)^(1/p)`` over each window.

    ``p = 1`` gives sum pooling; the larger ``p``, the closer it comes to max
    pooling (for non-negative inputs). The sum runs over the whole window (it is not
    divided by the window size).

    Args:
        norm_type (float): the power ``p``.
        kernel_size (int or tuple): the window size ``(kH, kW)``.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: False.

    Shape:
        - Input: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out), with
          ``H_out = floor((H_in - kH) / sH + 1)`` and ``W_out = floor((W_in - kW) / sW + 1)``.

    Example:
        >>> import ember.nn as nn
        >>> nn.LPPool2d(2, 2)(ember.full((1, 1, 2, 4), 3.0))
        tensor([[[[6., 6.]]]])
    """
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling: ``(sum x^p)^(1/p)`` over each window.

    ``p = 1`` gives sum pooling; the larger ``p``, the closer it comes to max
    pooling (for non-negative inputs).

    Args:
        norm_type (float): the power ``p``.
        kernel_size (int or tuple): the window size ``(kD, kH, kW)``.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: False.

    Shape:
        - Input: (N, C, D_in, H_in, W_in) or (C, D_in, H_in, W_in).
        - Output: (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out), with
          ``D_out = floor((D_in - kD) / sD + 1)`` and likewise for H and W.

    Example:
        >>> import ember.nn as nn
        >>> nn.LPPool3d(1, 2)(ember.ones(1, 1, 2, 2, 2))
        tensor([[[[[8.]]]]])
        >>> nn.LPPool3d(2, (3, 2, 2), stride=(2, 1, 2))(ember.randn(4, 16, 9, 5, 6)).shape
        ember.Size([4, 16, 4, 4, 3])
    """
    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    _nd = 2
    _fn = staticmethod(F.fractional_max_pool2d)

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        nd = self._nd
        tup = _pair if nd == 2 else _triple
        self.kernel_size = tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = tup(output_size) if output_size is not None else None
        self.output_ratio = tup(output_ratio) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        return self._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                        self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random, overlapping windows (Graham, 2014)."""


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling: max over pseudo-random windows that shrink the input
    by a non-integer factor.

    The ``kernel_size`` windows start at positions drawn at random for every (sample,
    channel) on each forward call, spread so that the output has exactly the requested size
    (Graham, 2014, "Fractional Max-Pooling").

    Args:
        kernel_size (int or tuple): the window size ``(kD, kH, kW)``.
        output_size (int or tuple, optional): the output size ``(D_out, H_out, W_out)``.
        output_ratio (float or tuple, optional): the output size as a fraction of the input
            size, each in (0, 1). Give exactly one of ``output_size`` and ``output_ratio``.
        return_indices (bool): also return the indices of the maxima (for
            ``MaxUnpool3d``). Default: False.

    Shape:
        - Input: (N, C, D_in, H_in, W_in) or (C, D_in, H_in, W_in).
        - Output: (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out), with
          ``D_out = floor(D_in * output_ratio)`` etc. when a ratio is given.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(2, 4, 10, 12, 14)
        >>> nn.FractionalMaxPool3d(3, output_ratio=0.5)(x).shape
        ember.Size([2, 4, 5, 6, 7])
        >>> nn.FractionalMaxPool3d(2, output_size=(5, 6, 7))(x).shape
        ember.Size([2, 4, 5, 6, 7])
    """
    _nd = 3
    _fn = staticmethod(F.fractional_max_pool3d)
