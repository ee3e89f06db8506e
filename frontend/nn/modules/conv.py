"""``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` and their lazy forms with PyTorch's
parameters, defaults and initialisation (kaiming_uniform_(a=sqrt(5)), bias uniform in
±1/sqrt(fan_in))."""
from __future__ import annotations

import math

import ember
from ember import Tensor

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .lazy import LazyModuleMixin, UninitializedParameter
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_nd(self, fn, zero, input, weight, bias):
        # the body of every Conv{1,2,3}d._conv_forward; non-zero padding modes pad first
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice,
                            mode=self.padding_mode), weight, bias, self.stride, zero,
                      self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         padding if isinstance(padding, str) else _single(padding),
                         _single(dilation), False, _single(0), groups, bias, padding_mode,
                         device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """The convolution with the given ``weight`` and ``bias`` (PyTorch's hook for
        subclasses that transform the parameters, e.g. cast them, before convolving)."""
        return self._conv_nd(F.conv1d, _single(0), input, weight, bias)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) input.

    >>> import ember, ember.nn as nn
    >>> nn.Conv2d(3, 8, 3, stride=2, padding=1)(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 8, 16, 16])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         padding if isinstance(padding, str) else _pair(padding),
                         _pair(dilation), False, _pair(0), groups, bias, padding_mode,
                         device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """The convolution with the given ``weight`` and ``bias`` (PyTorch's hook for
        subclasses that transform the parameters, e.g. cast them, before convolving)."""
        return self._conv_nd(F.conv2d, _pair(0), input, weight, bias)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) input.

    Output channel ``j`` is ``bias[j]`` plus the 3-D cross-correlation of ``weight[j]`` with
    the input channels of ``j``'s group. The weight has shape
    ``(out_channels, in_channels / groups, kD, kH, kW)``; it and the bias are initialised
    uniformly in ``±1/sqrt(fan_in)`` with ``fan_in = in_channels / groups * kD * kH * kW``.

    Args:
        in_channels (int): channels of the input.
        out_channels (int): channels of the output.
        kernel_size (int or tuple): the window size ``(kD, kH, kW)``.
        stride (int or tuple): the window step. Default: 1.
        padding (int, tuple or str): padding on both sides of each spatial dimension, or
            ``'valid'`` (none) or ``'same'`` (output the size of the input; stride 1 only).
            Default: 0.
        dilation (int or tuple): the spacing between kernel elements. Default: 1.
        groups (int): split the channels into this many independent groups; both channel
            counts must be divisible by it. Default: 1.
        bias (bool): add a learnable bias. Default: True.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
            Default: ``'zeros'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, C_in, D_in, H_in, W_in) or (C_in, D_in, H_in, W_in).
        - Output: (N, C_out, D_out, H_out, W_out) or (C_out, D_out, H_out, W_out), with
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` and likewise for H and W.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.Conv3d(2, 4, 3, padding=1)
        >>> m(ember.randn(1, 2, 5, 6, 7)).shape, m.weight.shape
        (ember.Size([1, 4, 5, 6, 7]), ember.Size([4, 2, 3, 3, 3]))
        >>> nn.Conv3d(2, 4, (3, 1, 1), stride=(2, 1, 1))(ember.randn(1, 2, 9, 4, 4)).shape
        ember.Size([1, 4, 4, 4, 4])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         padding if isinstance(padding, str) else _triple(padding),
                         _triple(dilation), False, _triple(0), groups, bias, padding_mode,
                         device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """The convolution with the given ``weight`` and ``bias`` (PyTorch's hook for
        subclasses that transform the parameters, e.g. cast them, before convolving)."""
        return self._conv_nd(F.conv3d, _triple(0), input, weight, bias)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         transposed, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size,
                        num_spatial_dims, dilation=None):
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1)
                        * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{list(input.size()[2:])})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution over (N, C_in, L) input: the gradient of ``Conv1d``
    with respect to its input, used to upsample ("deconvolution").

    Every input element scatters a copy of the kernel, scaled by its value, into the output
    at ``stride`` spacing, and overlapping copies add up. The weight has shape
    ``(in_channels, out_channels / groups, kernel_size)``.

    Args:
        in_channels (int): channels of the input.
        out_channels (int): channels of the output.
        kernel_size (int or tuple): the kernel size.
        stride (int or tuple): the spacing of the scattered copies. Default: 1.
        padding (int or tuple): how much to trim from both ends of the output (so that
            ``ConvTranspose1d`` inverts the shape change of a ``Conv1d`` with the same
            settings). Default: 0.
        output_padding (int or tuple): extra length added at the end of the output, to pick
            one of the sizes a strided ``Conv1d`` maps to the same length; smaller than
            ``stride`` or ``dilation``. Default: 0.
        groups (int): split the channels into this many independent groups. Default: 1.
        bias (bool): add a learnable bias. Default: True.
        dilation (int or tuple): the spacing between kernel elements. Default: 1.
        padding_mode (str): only ``'zeros'`` is supported. Default: ``'zeros'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    ``forward(input, output_size=None)`` can be given the wanted output length instead of
    ``output_padding``.

    Shape:
        - Input: (N, C_in, L_in) or (C_in, L_in).
        - Output: (N, C_out, L_out) or (C_out, L_out), with ``L_out = (L_in - 1) * stride
          - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1``.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.ConvTranspose1d(4, 2, 3, stride=2)
        >>> x = ember.randn(1, 4, 10)
        >>> m(x).shape, m.weight.shape
        (ember.Size([1, 2, 21]), ember.Size([4, 2, 3]))
        >>> m(x, output_size=[22]).shape
        ember.Size([1, 2, 22])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         _single(padding), _single(dilation), True, _single(output_padding),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        op = self._output_padding(input, output_size, self.stride, self.padding,
                                  self.kernel_size, 1, self.dilation)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution ("deconvolution"); weight (C_in, C_out/groups, kH, kW).

    >>> import ember, ember.nn as nn
    >>> nn.ConvTranspose2d(8, 3, 4, stride=2, padding=1)(ember.randn(1, 8, 16, 16)).shape
    ember.Size([1, 3, 32, 32])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         _pair(padding), _pair(dilation), True, _pair(output_padding), groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        op = self._output_padding(input, output_size, self.stride, self.padding,
                                  self.kernel_size, 2, self.dilation)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution; weight (C_in, C_out/groups, kD, kH, kW)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         _triple(padding), _triple(dilation), True, _triple(output_padding),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        op = self._output_padding(input, output_size, self.stride, self.padding,
                                  self.kernel_size, 3, self.dilation)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` from the first input (dim 1 batched, dim 0 unbatched)."""

    def _lazy_init(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        nd = self._get_num_spatial_dims()
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == nd + 2 else input.shape[0]

    def _get_num_spatial_dims(self) -> int:
        raise NotImplementedError


class _LazyConv(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        # bias=False here: the uninitialized one replaces it
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is inferred from the first input."""
    cls_to_become = Conv1d

    def _get_num_spatial_dims(self) -> int:
        return 1


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is inferred from the first input.

    >>> import ember, ember.nn as nn
    >>> m = nn.LazyConv2d(8, 3)
    >>> m(ember.randn(1, 3, 5, 5)).shape, m.weight.shape
    (ember.Size([1, 8, 3, 3]), ember.Size([8, 3, 3, 3]))
    """
    cls_to_become = Conv2d

    def _get_num_spatial_dims(self) -> int:
        return 2


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is inferred from the first input.

    The weight and bias start as ``UninitializedParameter``s. The first forward call
    reads ``in_channels`` from the input (dim 1, or dim 0 for unbatched input), creates and
    initialises the parameters, and turns the module into a plain ``Conv3d``.

    Args:
        out_channels (int): channels of the output.
        kernel_size (int or tuple): the window size.
        stride (int or tuple): the window step. Default: 1.
        padding (int, tuple or str): padding on both sides, or ``'valid'`` / ``'same'``.
            Default: 0.
        dilation (int or tuple): the spacing between kernel elements. Default: 1.
        groups (int): the number of channel groups. Default: 1.
        bias (bool): add a learnable bias. Default: True.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
            Default: ``'zeros'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, C_in, D_in, H_in, W_in) or (C_in, D_in, H_in, W_in).
        - Output: (N, C_out, D_out, H_out, W_out) or (C_out, D_out, H_out, W_out), as for
          ``Conv3d``.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyConv3d(4, 3)
        >>> m(ember.randn(1, 2, 5, 5, 5)).shape, m.weight.shape, type(m).__name__
        (ember.Size([1, 4, 3, 3, 3]), ember.Size([4, 2, 3, 3, 3]), 'Conv3d')
    """
    cls_to_become = Conv3d

    def _get_num_spatial_dims(self) -> int:
        return 3


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is inferred from the first input.

    The weight and bias start as ``UninitializedParameter``s. The first forward call
    reads ``in_channels`` from the input (dim 1, or dim 0 for unbatched input), creates and
    initialises the parameters, and turns the module into a plain ``ConvTranspose1d``.

    Args:
        out_channels (int): channels of the output.
        kernel_size (int or tuple): the kernel size.
        stride (int or tuple): the spacing of the scattered copies. Default: 1.
        padding (int or tuple): how much to trim from both ends of each output dimension.
            Default: 0.
        output_padding (int or tuple): extra size added at the end of each output dimension.
            Default: 0.
        groups (int): the number of channel groups. Default: 1.
        bias (bool): add a learnable bias. Default: True.
        dilation (int or tuple): the spacing between kernel elements. Default: 1.
        padding_mode (str): only ``'zeros'`` is supported. Default: ``'zeros'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, C_in, L_in) or (C_in, L_in).
        - Output: (N, C_out, L_out) or (C_out, L_out), as for ``ConvTranspose1d``.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyConvTranspose1d(2, 3, stride=2)
        >>> m(ember.randn(1, 4, 10)).shape, m.weight.shape
        (ember.Size([1, 2, 21]), ember.Size([4, 2, 3]))
    """
    cls_to_become = ConvTranspose1d

    def _get_num_spatial_dims(self) -> int:
        return 1


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is inferred from the first input.

    The weight and bias start as ``UninitializedParameter``s. The first forward call
    reads ``in_channels`` from the input (dim 1, or dim 0 for unbatched input), creates and
    initialises the parameters, and turns the module into a plain ``ConvTranspose2d``.

    Args:
        out_channels (int): channels of the output.
        kernel_size (int or tuple): the kernel size.
        stride (int or tuple): the spacing of the scattered copies. Default: 1.
        padding (int or tuple): how much to trim from both ends of each output dimension.
            Default: 0.
        output_padding (int or tuple): extra size added at the end of each output dimension.
            Default: 0.
        groups (int): the number of channel groups. Default: 1.
        bias (bool): add a learnable bias. Default: True.
        dilation (int or tuple): the spacing between kernel elements. Default: 1.
        padding_mode (str): only ``'zeros'`` is supported. Default: ``'zeros'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, C_in, H_in, W_in) or (C_in, H_in, W_in).
        - Output: (N, C_out, H_out, W_out) or (C_out, H_out, W_out), as for
          ``ConvTranspose2d``.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyConvTranspose2d(3, 4, stride=2, padding=1)
        >>> m(ember.randn(1, 8, 16, 16)).shape, m.weight.shape
        (ember.Size([1, 3, 32, 32]), ember.Size([8, 3, 4, 4]))
    """
    cls_to_become = ConvTranspose2d

    def _get_num_spatial_dims(self) -> int:
        return 2


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is inferred from the first input.

    The weight and bias start as ``UninitializedParameter``s. The first forward call
    reads ``in_channels`` from the input (dim 1, or dim 0 for unbatched input), creates and
    initialises the parameters, and turns the module into a plain ``ConvTranspose3d``.

    Args:
        out_channels (int): channels of the output.
        kernel_size (int or tuple): the kernel size.
        stride (int or tuple): the spacing of the scattered copies. Default: 1.
        padding (int or tuple): how much to trim from both ends of each output dimension.
            Default: 0.
        output_padding (int or tuple): extra size added at the end of each output dimension.
            Default: 0.
        groups (int): the number of channel groups. Default: 1.
        bias (bool): add a learnable bias. Default: True.
        dilation (int or tuple): the spacing between kernel elements. Default: 1.
        padding_mode (str): only ``'zeros'`` is supported. Default: ``'zeros'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, C_in, D_in, H_in, W_in) or (C_in, D_in, H_in, W_in).
        - Output: (N, C_out, D_out, H_out, W_out) or (C_out, D_out, H_out, W_out), as for
          ``ConvTranspose3d``.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyConvTranspose3d(2, 2, stride=2)
        >>> m(ember.randn(1, 3, 2, 3, 4)).shape, m.weight.shape
        (ember.Size([1, 2, 4, 6, 8]), ember.Size([3, 2, 2, 2, 2]))
    """
    cls_to_become = ConvTranspose3d

    def _get_num_spatial_dims(self) -> int:
        return 3
