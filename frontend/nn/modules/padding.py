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
    """Pad the last dimension of the input with a constant value.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 2-tuple gives ``(left, right)``.
            Negative values crop.
        value (float): the fill value.

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: (C, W_out) or (N, C, W_out), with ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[0.0, 1.0, 2.0, 3.0]])
        >>> nn.ConstantPad1d((1, 2), 3.5)(x)
        tensor([[3.5000, 0.0000, 1.0000, 2.0000, 3.0000, 3.5000, 3.5000]])
    """

    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pad the last two dimensions of the input with a constant value.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 4-tuple gives ``(left, right, top, bottom)``.
            Negative values crop.
        value (float): the fill value.

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: (C, H_out, W_out) or (N, C, H_out, W_out), with
          ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> nn.ConstantPad2d((1, 0, 0, 1), -1.0)(x)
        tensor([[[-1.,  1.,  2.],
                 [-1.,  3.,  4.],
                 [-1., -1., -1.]]])
    """
    n = 2


class ConstantPad3d(ConstantPad1d):
    """Pad the last three dimensions of the input with a constant value.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 6-tuple gives ``(left, right, top, bottom, front, back)``.
            Negative values crop.
        value (float): the fill value.

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: (C, D_out, H_out, W_out) or (N, C, D_out, H_out, W_out), with
          ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(1, 2, 3, 4, 5)
        >>> nn.ConstantPad3d(1, 0.5)(x).shape
        ember.Size([1, 2, 5, 6, 7])
    """
    n = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dimension of the input with zeros.

    The same as ``ConstantPad1d(padding, 0.0)``.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 2-tuple gives ``(left, right)``.
            Negative values crop.

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: (C, W_out) or (N, C, W_out), with ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[0.0, 1.0, 2.0, 3.0]])
        >>> nn.ZeroPad1d((2, 1))(x)
        tensor([[0., 0., 0., 1., 2., 3., 0.]])
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    """Pad the last two dimensions of the input with zeros.

    The same as ``ConstantPad2d(padding, 0.0)``.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 4-tuple gives ``(left, right, top, bottom)``.
            Negative values crop.

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: (C, H_out, W_out) or (N, C, H_out, W_out), with
          ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> nn.ZeroPad2d((1, 1, 0, 0))(x)
        tensor([[[0., 1., 2., 0.],
                 [0., 3., 4., 0.]]])
    """
    n = 2


class ZeroPad3d(ZeroPad1d):
    """Pad the last three dimensions of the input with zeros.

    The same as ``ConstantPad3d(padding, 0.0)``.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 6-tuple gives ``(left, right, top, bottom, front, back)``.
            Negative values crop.

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: (C, D_out, H_out, W_out) or (N, C, D_out, H_out, W_out), with
          ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(1, 2, 3, 4, 5)
        >>> nn.ZeroPad3d((1, 1, 2, 2, 0, 3))(x).shape
        ember.Size([1, 2, 6, 8, 7])
    """
    n = 3


class ReflectionPad1d(_PadNd):
    """Pad the last dimension of the input with its mirror image at each border.

    The border element itself is not repeated (``[a, b, c]`` padded by 2 on the left
    starts ``[c, b, a, b, c]``), so each padding must be smaller than the size of the
    dimension it pads.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 2-tuple gives ``(left, right)``.

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: (C, W_out) or (N, C, W_out), with ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[0.0, 1.0, 2.0, 3.0]])
        >>> nn.ReflectionPad1d((2, 1))(x)
        tensor([[2., 1., 0., 1., 2., 3., 2.]])
    """
    mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dimensions of the input with its mirror image at each border.

    The border element itself is not repeated (``[a, b, c]`` padded by 2 on the left
    starts ``[c, b, a, b, c]``), so each padding must be smaller than the size of the
    dimension it pads.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 4-tuple gives ``(left, right, top, bottom)``.

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: (C, H_out, W_out) or (N, C, H_out, W_out), with
          ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> nn.ReflectionPad2d((1, 0, 1, 0))(x)
        tensor([[[4., 3., 4.],
                 [2., 1., 2.],
                 [4., 3., 4.]]])
    """
    mode, n = "reflect", 2


class ReplicationPad1d(_PadNd):
    """Pad the last dimension of the input by repeating its border values.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 2-tuple gives ``(left, right)``.

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: (C, W_out) or (N, C, W_out), with ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[0.0, 1.0, 2.0, 3.0]])
        >>> nn.ReplicationPad1d((2, 1))(x)
        tensor([[0., 0., 0., 1., 2., 3., 3.]])
    """
    mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dimensions of the input by repeating its border values.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 4-tuple gives ``(left, right, top, bottom)``.

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: (C, H_out, W_out) or (N, C, H_out, W_out), with
          ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> nn.ReplicationPad2d((1, 0, 0, 1))(x)
        tensor([[[1., 1., 2.],
                 [3., 3., 4.],
                 [3., 3., 4.]]])
    """
    mode, n = "replicate", 2


class CircularPad1d(_PadNd):
    """Pad the last dimension of the input periodically: it wraps around.

    The left padding is taken from the right end of the input and the right padding
    from its left end (and likewise for the other dimensions); each padding can be at
    most the size of the dimension it pads.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 2-tuple gives ``(left, right)``.

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: (C, W_out) or (N, C, W_out), with ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[0.0, 1.0, 2.0, 3.0]])
        >>> nn.CircularPad1d((2, 1))(x)
        tensor([[2., 3., 0., 1., 2., 3., 0.]])
    """
    mode = "circular"


class CircularPad2d(_PadNd):
    """Pad the last two dimensions of the input periodically: it wraps around.

    The left padding is taken from the right end of the input and the right padding
    from its left end (and likewise for the other dimensions); each padding can be at
    most the size of the dimension it pads.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 4-tuple gives ``(left, right, top, bottom)``.

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: (C, H_out, W_out) or (N, C, H_out, W_out), with
          ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> nn.CircularPad2d((1, 0, 0, 1))(x)
        tensor([[[2., 1., 2.],
                 [4., 3., 4.],
                 [2., 1., 2.]]])
    """
    mode, n = "circular", 2


class ReflectionPad3d(_PadNd):
    """Pad the last three dimensions of the input with its mirror image at each border.

    The border element itself is not repeated (``[a, b, c]`` padded by 2 on the left
    starts ``[c, b, a, b, c]``), so each padding must be smaller than the size of the
    dimension it pads.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 6-tuple gives ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: (C, D_out, H_out, W_out) or (N, C, D_out, H_out, W_out), with
          ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(1, 2, 3, 4, 5)
        >>> nn.ReflectionPad3d(2)(x).shape
        ember.Size([1, 2, 7, 8, 9])
    """
    mode, n = "reflect", 3


class ReplicationPad3d(_PadNd):
    """Pad the last three dimensions of the input by repeating its border values.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 6-tuple gives ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: (C, D_out, H_out, W_out) or (N, C, D_out, H_out, W_out), with
          ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(1, 2, 3, 4, 5)
        >>> nn.ReplicationPad3d((0, 1, 0, 1, 0, 1))(x).shape
        ember.Size([1, 2, 4, 5, 6])
    """
    mode, n = "replicate", 3


class CircularPad3d(_PadNd):
    """Pad the last three dimensions of the input periodically: it wraps around.

    The left padding is taken from the right end of the input and the right padding
    from its left end (and likewise for the other dimensions); each padding can be at
    most the size of the dimension it pads.

    Args:
        padding (int or tuple): the amount of padding. An int pads every side by the same
            amount; a 6-tuple gives ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: (C, D_out, H_out, W_out) or (N, C, D_out, H_out, W_out), with
          ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example:
        >>> import ember.nn as nn
        >>> x = ember.randn(1, 2, 3, 4, 5)
        >>> nn.CircularPad3d(1)(x).shape
        ember.Size([1, 2, 5, 6, 7])
    """
    mode, n = "circular", 3
