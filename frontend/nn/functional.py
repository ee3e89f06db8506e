"""``nn.functional``: stateless layers, activations and losses with PyTorch's signatures.

Everything here is written in ember tensor ops only (no NumPy), so it runs on any device
and gets gradients from autograd. Convolution, pooling, batch/layer/group norm, embedding,
nll/cross-entropy and scaled dot-product attention are schema ops
(``ember.dispatcher.defs.nn``: a backend's native kernel, or a composite): the functions
here check and normalise their arguments (PyTorch's errors, unbatched inputs) and call
them. There are no Python loops over pixels.

>>> import ember, ember.nn.functional as F
>>> x = ember.randn(2, 3, 8, 8)
>>> F.conv2d(x, ember.randn(4, 3, 3, 3), padding=1).shape
ember.Size([2, 4, 8, 8])
>>> F.cross_entropy(ember.randn(4, 5), ember.tensor([0, 1, 2, 3])).shape
ember.Size([])
"""
from __future__ import annotations

import math

import ember
from ember import Tensor
from ember.dispatcher import dtypes as _dtypes
from ember.dispatcher import lazy as _lazy
from ember.dispatcher import ops as _ops
from ember.dispatcher.defs import linalg as _linalg
from ember.dispatcher.defs import nn as _nn

from .. import _sparse_tensor
from ..overrides import (handle_torch_function, has_torch_function,  # noqa: F401
                         has_torch_function_unary, has_torch_function_variadic)
from .modules.utils import _no_grad, _ntuple, _pair
from ember.dispatcher.warn import warn as _warn

__all__ = [
    # linear, conv, pooling
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "unfold", "fold", "max_pool1d", "max_pool2d", "max_pool3d",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "pad", "interpolate", "upsample", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle",
    # activations
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu",
    "gelu", "silu", "mish", "hardswish", "hardsigmoid", "hardtanh", "hardtanh_", "softplus",
    "softsign", "tanhshrink", "threshold", "threshold_", "hardshrink", "softshrink",
    "logsigmoid", "sigmoid", "tanh", "softmax", "softmin", "log_softmax", "glu", "prelu",
    "rrelu",
    # dropout, normalisation, embedding
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "layer_norm",
    "group_norm", "rms_norm", "batch_norm", "instance_norm", "local_response_norm",
    "normalize", "embedding", "one_hot", "cosine_similarity", "pairwise_distance",
    "scaled_dot_product_attention", "multi_head_attention_forward",
    # losses
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss",
    "multilabel_soft_margin_loss",
]

_TORCH_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool"}
_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16,
        "float16": 0.0009765625, "bfloat16": 0.0078125}


def _tname(dtype) -> str:
    return _TORCH_NAMES.get(dtype.name, dtype.name)


_prod = math.prod


def _grad_enabled() -> bool:
    fn = getattr(ember, "is_grad_enabled", None)
    return fn() if fn is not None else True


# ==== linear ==========================================================================
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x W^T + b`` over the last dimension of ``input``."""
    if input.dtype is not weight.dtype:
        if bias is None:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{_ctype(input.dtype)} != {_ctype(weight.dtype)}")
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_tname(input.dtype)} and {_tname(weight.dtype)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_tname(bias.dtype)} and {_tname(input.dtype)}")
    if weight.dim() == 2 and input.dim() >= 1 and input.shape[-1] == weight.shape[1] and (
            bias is None or bias.shape == (weight.shape[0],)):
        x = input if input.dim() > 1 else input.unsqueeze(0)
        out = _linalg.linear(x, weight, bias)   # one graph node, contiguous weight grads
        return out if input.dim() > 1 else out.squeeze(0)
    out = ember.matmul(input, weight.t()) if weight.dim() == 2 else ember.matmul(input, weight)
    return out + bias if bias is not None else out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k``; ``weight`` is (out, in1, in2)."""
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (B, in1) @ (in1, out*in2) -> (B, out, in2), then contract with x2
    t = ember.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    out = (t.reshape(-1, out_f, in2) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, out_f)


# ==== convolution =====================================================================
def _blocks(sp, kernel, stride, dilation):
    return [(sp[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
            for i in range(len(kernel))]


def _pad_dim(x: Tensor, dim: int, left: int, right: int, value) -> Tensor:
    if left < 0:
        x = x.narrow(dim, -left, x.shape[dim] + left)
        left = 0
    if right < 0:
        x = x.narrow(dim, 0, x.shape[dim] + right)
        right = 0
    if not left and not right:
        return x
    parts = []
    shape = list(x.shape)
    if left:
        shape[dim] = left
        parts.append(ember.full(tuple(shape), value, dtype=x.dtype, device=x.device))
    parts.append(x)
    if right:
        shape[dim] = right
        parts.append(ember.full(tuple(shape), value, dtype=x.dtype, device=x.device))
    return ember.cat(parts, dim)


def _check_conv_input(name, input, weight, nd, groups, transposed=False, bias=None):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional "
                           f"input {list(input.shape)}, but got {weight.dim()}-dimensional "
                           f"weight of size {list(weight.shape)} instead")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_ctype(input.dtype)}) and bias type "
                           f"({_ctype(bias.dtype)}) should be the same")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found "
                           f"{_tname(weight.dtype)}")
    batched = input.dim() == nd + 2
    c = input.shape[1] if batched else input.shape[0]
    shown = list(input.shape) if batched else [1] + list(input.shape)
    if transposed:
        if weight.shape[0] != c:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                               f"expected input{shown} to have {weight.shape[0]} channels, but "
                               f"got {c} channels instead")
        if c % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(weight.shape)}] instead")
    else:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(weight.shape)}] instead")
        if weight.shape[1] * groups != c:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                               f"expected input{shown} to have {weight.shape[1] * groups} "
                               f"channels, but got {c} channels instead")
    return batched


def _ctype(dtype) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16"}.get(dtype.name, dtype.name)


def _conv_padding(padding, kernel, stride, dilation, nd):
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for d, k in zip(dilation, kernel):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return pads
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    p = _ntuple(nd)(padding)
    if any(q < 0 for q in p):
        raise RuntimeError("negative padding is not supported")
    return [(q, q) for q in p]


def _convnd(name, input, weight, bias, stride, padding, dilation, groups, nd):
    batched = _check_conv_input(name, input, weight, nd, groups, bias=bias)
    x = input if batched else input.unsqueeze(0)
    if 0 in x.shape[2:] and x.shape[0] and x.shape[1]:
        raise RuntimeError("Only zero batch or zero channel inputs are supported, but got "
                           f"input shape: {list(x.shape)}")
    stride, dilation = _ntuple(nd)(stride), _ntuple(nd)(dilation)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    kernel = tuple(weight.shape[2:])
    pads = _conv_padding(padding, kernel, stride, dilation, nd)
    padded = [x.shape[2 + i] + lo + hi for i, (lo, hi) in enumerate(pads)]
    eff = [dilation[i] * (kernel[i] - 1) + 1 for i in range(nd)]
    if any(e > p for e, p in zip(eff, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           "actual input size")
    if any(lo != hi for lo, hi in pads):  # asymmetric ('same' with an even kernel)
        for i, (lo, hi) in enumerate(pads):
            if hi != lo:
                x = _pad_dim(x, 2 + i, 0, hi - lo, 0)
    out = _nn.convolution(x, weight, bias, stride, tuple(lo for lo, _ in pads), dilation,
                          False, (0,) * nd, groups)
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D convolution over (N, C, L) or (C, L); ``padding`` may be 'same' or 'valid'."""
    return _convnd("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution over (N, C, H, W) or (C, H, W) (cross-correlation, as PyTorch)."""
    return _convnd("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """3-D convolution over (N, C_in, D, H, W) or unbatched (C_in, D, H, W) input.

    Cross-correlates ``input`` with ``weight`` (as PyTorch; the kernel is not flipped) and adds
    ``bias``. The output is (N, C_out, D_out, H_out, W_out).

    Args:
        input (Tensor): input of shape (N, C_in, D, H, W) or (C_in, D, H, W).
        weight (Tensor): filters of shape (C_out, C_in / groups, kD, kH, kW).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the step of the sliding window. Default: 1.
        padding (int, tuple of ints or str): implicit zero padding on both sides of each
            spatial dim, or 'valid' (none) or 'same' (the output as large as the input;
            stride 1 only). Default: 0.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.
        groups (int): split the input channels into this many groups, each convolved with its
            own filters. Default: 1.

    Example:
        >>> import ember.nn.functional as F
        >>> F.conv3d(ember.ones(1, 2, 4, 4, 4), ember.ones(3, 2, 2, 2, 2)).shape
        ember.Size([1, 3, 3, 3, 3])
    """
    return _convnd("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


def _fold_nd(cols: Tensor, channels, out_sp, kernel, dilation, padding, stride) -> Tensor:
    """col2im: (N, C * K, L) blocks summed into (N, C, *out_sp) (overlaps add up,
    ``padding`` is cropped)."""
    n = cols.shape[0]
    blocks = [(out_sp[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
              for i in range(len(kernel))]
    cols = cols.reshape(n, channels, *kernel, *blocks)
    return _ops.col2im(cols, tuple(out_sp), tuple(kernel), tuple(dilation), tuple(padding),
                          tuple(stride))


def _conv_transposend(name, input, weight, bias, stride, padding, output_padding, groups,
                      dilation, nd):
    batched = _check_conv_input(name, input, weight, nd, groups, transposed=True, bias=bias)
    x = input if batched else input.unsqueeze(0)
    stride, padding = _ntuple(nd)(stride), _ntuple(nd)(padding)
    output_padding, dilation = _ntuple(nd)(output_padding), _ntuple(nd)(dilation)
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        axes = ["height", "width"] if nd == 2 else (["width"] if nd == 1 else
                                                   ["depth", "height", "width"])
        parts = ([f"output_padding_{a}: {v}" for a, v in zip(axes, output_padding)]
                 + [f"stride_{a}: {v}" for a, v in zip(axes, stride)]
                 + [f"dilation_{a}: {v}" for a, v in zip(axes, dilation)])
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join(parts))
    in_sp = x.shape[2:]
    out_sp = _nn.conv_output_size(in_sp, weight, stride, padding, dilation, True,
                                  output_padding, groups)[1:]
    if any(s <= 0 for s in out_sp):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, in_sp))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, out_sp))}). Output size is too small")
    out = _nn.convolution(x, weight, bias, stride, padding, dilation, True, output_padding,
                          groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:
    """Transposed 1-D convolution over (N, C_in, L) or unbatched (C_in, L) input.

    The gradient of :func:`conv1d` with respect to its input (sometimes called a
    "deconvolution"). The output length is
    ``(L - 1) * stride - 2 * padding + dilation * (kL - 1) + output_padding + 1``.

    Args:
        input (Tensor): input of shape (N, C_in, L) or (C_in, L).
        weight (Tensor): filters of shape (C_in, C_out / groups, kL).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of one int): the stride of the convolution. Default: 1.
        padding (int or tuple of one int): ``dilation * (kL - 1) - padding`` zeros are added
            on both sides of the input. Default: 0.
        output_padding (int or tuple of one int): extra size added to one side of the output;
            must be smaller than ``stride`` or ``dilation``. Default: 0.
        groups (int): the number of blocked connections from input to output channels.
            Default: 1.
        dilation (int or tuple of one int): the spacing between kernel elements. Default: 1.

    Example:
        >>> import ember.nn.functional as F
        >>> F.conv_transpose1d(ember.ones(1, 1, 3), ember.ones(1, 1, 2))
        tensor([[[1., 2., 2., 1.]]])
    """
    return _conv_transposend("conv_transpose1d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:
    """Transposed 2-D convolution (the gradient of conv2d w.r.t. its input);
    ``weight`` is (C_in, C_out / groups, kH, kW)."""
    return _conv_transposend("conv_transpose2d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation, 2)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C * kH * kW, L) sliding blocks."""
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    k, d, p, s = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    blocks = [(x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), "
                           f"kernel_size={k}, dilation={d}, padding={p}, calculated shape of "
                           f"the array of sliding blocks as ({blocks[0]}, {blocks[1]}), but its "
                           "components must be at least one.")
    n, c = x.shape[0], x.shape[1]
    out = _ops.im2col(x, k, d, p, s, tuple(blocks)).reshape(
        n, c * k[0] * k[1], blocks[0] * blocks[1])
    return out if batched else out.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im: (N, C * kH * kW, L) -> (N, C, H, W), summing overlapping values."""
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    o, k, d = _pair(output_size), _pair(kernel_size), _pair(dilation)
    p, s = _pair(padding), _pair(stride)
    for what, (a, b), ok, names in (("kernel size", k, 0, "kernel"), ("stride", s, 0, "stride"),
                                    ("dilation", d, 0, "dilation"), ("padding", p, -1, "pad")):
        if a <= ok or b <= ok:
            rule = "be non-negative" if ok < 0 else "be greater than zero"
            raise RuntimeError(f"{what} should {rule}, but got {names}_height: {a} "
                               f"{names}_width: {b}")
    if 0 in x.shape[1:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={k}")
    blocks = [(o[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size={o}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    if min(blocks) < 1:
        raise RuntimeError(f"Given output_size={o}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, calculated shape of the array of "
                           f"sliding blocks as ({blocks[0]}, {blocks[1]}), which is too small "
                           "(non-positive)")
    out = _fold_nd(x, x.shape[1] // kk, o, k, d, p, s)
    return out if batched else out.squeeze(0)


# ==== pooling =========================================================================
def _pool_args(name, input, kernel_size, stride, padding, dilation, nd):
    if input.dim() not in (nd + 1, nd + 2):
        if nd == 3:
            raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
        prefix = f"{name}: " if nd == 1 else ""
        raise RuntimeError(f"{prefix}Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)}")
    tup = _ntuple(nd)
    k = tup(kernel_size)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else tup(stride)
    p, d = tup(padding), tup(dilation)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for i in range(nd):
        if p[i] > (d[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    return k, s, p, d


def _max_poolnd(name, input, kernel_size, stride, padding, dilation, ceil_mode,
                return_indices, nd):
    k, s, p, d = _pool_args(name, input, kernel_size, stride, padding, dilation, nd)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    in_sp = x.shape[2:]
    out_sp = [_nn.pool_output_size(in_sp[i], k[i], s[i], p[i], d[i], ceil_mode)
              for i in range(nd)]
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). "
                           f"Calculated output size: "
                           f"({'x'.join(map(str, [x.shape[1]] + out_sp))}). Output size is too "
                           "small")
    out, index = _ops.max_pool(x, tuple(k), tuple(d), tuple(p), tuple(s), tuple(out_sp))
    if not return_indices:
        return out if batched else out.squeeze(0)
    if not batched:
        out, index = out.squeeze(0), index.squeeze(0)
    return out, index


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over (N, C, L) or unbatched (C, L) input.

    Each output value is the maximum of a (dilated) window of ``kernel_size`` input values.

    Args:
        input (Tensor): input of shape (N, C, L) or (C, L).
        kernel_size (int or tuple of one int): the window size.
        stride (int or tuple of one int, optional): the window step; ``kernel_size`` if None.
        padding (int or tuple of one int): implicit -inf padding on both sides, at most half
            the effective kernel size. Default: 0.
        dilation (int or tuple of one int): the spacing between window elements. Default: 1.
        ceil_mode (bool): use ceil instead of floor to compute the output length, so a
            partial window at the end still gives an output. Default: False.
        return_indices (bool): also return the position of each maximum along L (for
            :func:`max_unpool1d`). Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.max_pool1d(ember.tensor([[[1., 2., 3., 4., 5., 6.]]]), 2)
        tensor([[[2., 4., 6.]]])
    """
    return _max_poolnd("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); ``return_indices`` gives flat
    indices into each H*W plane, as PyTorch."""
    return _max_poolnd("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices, 2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_poolnd("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices, 3)


def _avg_poolnd(name, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override, nd):
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")   # PyTorch checks it first
    k, s, p, _ = _pool_args(name, input, kernel_size, stride, padding, 1, nd)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    out = _nn.avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor_override)
    return out if batched else out.squeeze(0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over (N, C, L) or unbatched (C, L) input.

    Args:
        input (Tensor): input of shape (N, C, L) or (C, L).
        kernel_size (int or tuple of one int): the window size.
        stride (int or tuple of one int, optional): the window step; ``kernel_size`` if None.
        padding (int or tuple of one int): implicit zero padding on both sides, at most half
            the kernel size. Default: 0.
        ceil_mode (bool): use ceil instead of floor to compute the output length. Default:
            False.
        count_include_pad (bool): count the padding zeros in the divisor. Default: True.

    Example:
        >>> import ember.nn.functional as F
        >>> F.avg_pool1d(ember.tensor([[[1., 2., 3., 4., 5., 6.]]]), 3)
        tensor([[[2., 5.]]])
    """
    return _avg_poolnd("avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling; padding counts toward the divisor unless
    ``count_include_pad=False``."""
    return _avg_poolnd("avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override, 2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_poolnd("avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override, 3)


def _adaptive_sizes(name, input, output_size, nd):
    if input.dim() not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                               f"tensor for argument #1 'self' (while checking arguments for "
                               f"{name})")
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    out = _ntuple(nd)(output_size)
    sp = input.shape[-nd:]
    return tuple(sp[i] if out[i] is None else out[i] for i in range(nd))


def _adaptive_avg(name, input, output_size, nd):
    sizes = _adaptive_sizes(name, input, output_size, nd)
    batched = input.dim() == nd + 2
    out = _nn.adaptive_avg_pool(input if batched else input.unsqueeze(0), sizes)
    return out if batched else out.squeeze(0)


def adaptive_avg_pool1d(input, output_size):
    """1-D average pooling to a fixed output length.

    The input is split into ``output_size`` windows along each spatial dim; window ``i`` of
    a dim of size ``L`` covers ``[floor(i * L / out), ceil((i + 1) * L / out))``, so the
    windows may overlap or differ in size by one.

    Args:
        input (Tensor): input of shape (N, C, L) or (C, L).
        output_size (int or tuple of one int): the output length.

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_avg_pool1d(ember.tensor([[[1., 2., 3., 4., 5., 6.]]]), 2)
        tensor([[[2., 5.]]])
    """
    return _adaptive_avg("adaptive_avg_pool1d", input, output_size, 1)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size; windows ``[floor(i*H/oH), ceil((i+1)*H/oH))``
    as PyTorch."""
    return _adaptive_avg("adaptive_avg_pool2d", input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    """3-D average pooling to a fixed output size.

    The input is split into ``output_size`` windows along each spatial dim; window ``i`` of
    a dim of size ``L`` covers ``[floor(i * L / out), ceil((i + 1) * L / out))``, so the
    windows may overlap or differ in size by one.

    Args:
        input (Tensor): input of shape (N, C, D, H, W) or (C, D, H, W).
        output_size (int or tuple of 3 ints/None): the output size (D_out, H_out, W_out); an
            int is used for all three, a None entry keeps the input's size.

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_avg_pool3d(ember.ones(1, 2, 5, 6, 7), (2, None, 3)).shape
        ember.Size([1, 2, 2, 6, 3])
    """
    return _adaptive_avg("adaptive_avg_pool3d", input, output_size, 3)


def _adaptive_max(name, input, output_size, return_indices, nd):
    sizes = _adaptive_sizes(name, input, output_size, nd)
    batched = input.dim() == nd + 2
    out, index = _nn.adaptive_max_pool(input if batched else input.unsqueeze(0), sizes)
    if not batched:
        out, index = out.squeeze(0), index.squeeze(0)
    return (out, index) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1-D max pooling to a fixed output length.

    The input is split into ``output_size`` windows along each spatial dim; window ``i`` of
    a dim of size ``L`` covers ``[floor(i * L / out), ceil((i + 1) * L / out))``, so the
    windows may overlap or differ in size by one.

    Args:
        input (Tensor): input of shape (N, C, L) or (C, L).
        output_size (int or tuple of one int): the output length.
        return_indices (bool): also return the position of each maximum along L. Default:
            False.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([[[1., 2., 3., 4., 5., 6.]]])
        >>> F.adaptive_max_pool1d(x, 4, return_indices=True)
        (tensor([[[2., 3., 5., 6.]]]), tensor([[[1, 2, 4, 5]]]))
    """
    return _adaptive_max("adaptive_max_pool1d", input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2-D max pooling to a fixed output size.

    The input is split into ``output_size`` windows along each spatial dim; window ``i`` of
    a dim of size ``L`` covers ``[floor(i * L / out), ceil((i + 1) * L / out))``, so the
    windows may overlap or differ in size by one.

    Args:
        input (Tensor): input of shape (N, C, H, W) or (C, H, W).
        output_size (int or tuple of 2 ints/None): the output size (H_out, W_out); an int is
            used for both, a None entry keeps the input's size.
        return_indices (bool): also return the flat index of each maximum within its H * W
            plane (for :func:`max_unpool2d`). Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool2d(ember.tensor([[[[1., 5.], [3., 2.]]]]), 1, return_indices=True)
        (tensor([[[[5.]]]]), tensor([[[[1]]]]))
    """
    return _adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D max pooling to a fixed output size.

    The input is split into ``output_size`` windows along each spatial dim; window ``i`` of
    a dim of size ``L`` covers ``[floor(i * L / out), ceil((i + 1) * L / out))``, so the
    windows may overlap or differ in size by one.

    Args:
        input (Tensor): input of shape (N, C, D, H, W) or (C, D, H, W).
        output_size (int or tuple of 3 ints/None): the output size (D_out, H_out, W_out); an
            int is used for all three, a None entry keeps the input's size.
        return_indices (bool): also return the flat index of each maximum within its
            D * H * W volume. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool3d(ember.ones(2, 4, 4, 4), 2).shape
        ember.Size([2, 2, 2, 2])
    """
    return _adaptive_max("adaptive_max_pool3d", input, output_size, return_indices, 3)


# ==== padding and resampling ==========================================================
def _pad_index(n, left, right, mode, dim, input):
    """Source positions along one dim of length ``n`` for PyTorch's reflect / replicate /
    circular padding, negative pads included: reflect and replicate index the *uncropped*
    input (ATen's reflection/replication kernels), circular wraps the cropped part (ATen's
    ``_pad_circular``)."""
    out = n + left + right
    i0, o0 = max(0, -left), max(0, left)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {dim} of input {list(input.shape)}")
        src = [2 * left - j if j < left else j if j < n + left else 2 * (n + left - 1) - j
               for j in range(out)]
        return [j - o0 + i0 for j in src]
    if mode == "replicate":
        src = [left if j < left else j if j < n + left else n + left - 1 for j in range(out)]
        return [j - o0 + i0 for j in src]
    if left > n or right > n:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if out <= 0:
        return []
    kept = n - max(-left, 0) - max(-right, 0)
    lp, rp = max(left, 0), max(right, 0)
    if kept <= 0 or lp > kept or rp > kept:
        # PyTorch copies the wrap from the padded output itself: here the source overlaps
        # the destination (or is empty, where PyTorch reads uninitialised memory)
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please "
                           "clone() the tensor before performing the operation.")
    return [i0 + (k % kept) for k in range(-lp, kept + rp)]


def _check_pad_output(input, pad, mode, npad):
    """PyTorch's 'too small' check of reflect / replicate padding with negative pads (1-d:
    an empty output is an error; 2-d and 3-d: a negative one)."""
    if mode == "circular":
        for i in range(npad):
            if input.shape[-1 - i] + pad[2 * i] + pad[2 * i + 1] < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        return
    names = "WHD"[:npad]
    sizes = [input.shape[-1 - i] for i in range(npad)]
    outs = [sizes[i] + pad[2 * i] + pad[2 * i + 1] for i in range(npad)]
    if any(o < (1 if npad == 1 else 0) for o in outs):
        ins = ", ".join(f"{names[i]}: {sizes[i]}" for i in reversed(range(npad)))
        res = " ".join(f"{names[i]}: {outs[i]}" for i in reversed(range(npad)))
        raise RuntimeError(f"input ({ins}) is too small. Calculated output {res}")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.

    Modes ``constant`` (negative pads crop), ``reflect``, ``replicate``, ``circular``.
    """
    pad = tuple(int(v) for v in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.dim()}")
    if mode == "constant":
        x = input
        for i in range(len(pad) // 2):
            x = _pad_dim(x, input.dim() - 1 - i, pad[2 * i], pad[2 * i + 1],
                         0 if value is None else value)
        return x
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    npad = len(pad) // 2
    if not (1 <= npad <= 3 and input.dim() in (npad + 1, npad + 2)):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    _check_pad_output(input, pad, mode, npad)
    x = input
    for i in range(npad):
        dim = input.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if left == 0 and right == 0:
            continue
        idx = _pad_index(x.shape[dim], left, right, mode, dim, input)
        x = x.index_select(dim, ember.tensor(idx, dtype=ember.int64, device=x.device))
    return x


def _weight_dtype(dtype):
    """The dtype PyTorch computes source positions and weights in (its opmath type)."""
    return ember.float64 if dtype is ember.float64 else ember.float32


def _interp_scale(in_size, out_size, scale, align_corners, wdt, device):
    """PyTorch's area_pixel_compute_scale, rounded as it rounds (in the weight dtype)."""
    if align_corners:
        if out_size <= 1:
            return ember.tensor(0.0, dtype=wdt, device=device)
        return ember.tensor(float(in_size - 1), dtype=wdt, device=device) / (out_size - 1)
    if scale is not None and scale > 0:
        return ember.tensor(1.0 / scale, dtype=wdt, device=device)
    return ember.tensor(float(in_size), dtype=wdt, device=device) / out_size


def _f32(v, device):
    return ember.tensor(v, dtype=ember.float32, device=device)


def _nearest_index(in_size, out_size, scale, exact, device):
    s = _f32(1.0 / scale if scale is not None and scale > 0 else in_size / out_size, device)
    pos = ember.arange(out_size, dtype=ember.float32, device=device)
    if exact:
        pos = pos + 0.5
    idx = (pos * s).floor().long()
    return idx.clamp(max=in_size - 1)


def _linear_weights(in_size, out_size, scale, align_corners, dtype, device):
    """Source indices and weights of linear interpolation along one dim, as PyTorch's
    compute_source_index_and_lambda: ``(i0, w0, i1, w1)``. Equal sizes copy (weights 1, 0
    on the same element)."""
    pos = ember.arange(out_size, dtype=ember.int64, device=device)
    if in_size == out_size:
        w1 = ember.zeros(out_size, dtype=dtype, device=device)
        return pos, 1 - w1, pos, w1
    wdt = _weight_dtype(dtype)
    sc = _interp_scale(in_size, out_size, scale, align_corners, wdt, device)
    pos = pos.to(wdt)
    if align_corners:
        src = sc * pos
    else:
        src = (sc * (pos + 0.5) - 0.5).clamp(min=0)
    # PyTorch floors with floorf (in float32) and clamps the weight to [0, 1]
    i0 = src.float().floor().long().clamp(max=in_size - 1)
    i1 = ember.where(i0 < in_size - 1, i0 + 1, i0)
    w1 = (src - i0.to(wdt)).clamp(min=0, max=1).to(dtype)
    return i0, 1 - w1, i1, w1


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims: modes nearest, nearest-exact, linear, bilinear, trilinear,
    area, with ``align_corners`` for the linear modes."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    modes = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3),
             "linear": (1,), "bilinear": (2,), "bicubic": (2,), "trilinear": (3,)}
    if mode not in modes or nd not in (1, 2, 3):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    if nd not in modes[mode]:
        need = {"linear": 3, "bilinear": 4, "trilinear": 5}[mode]
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need}D "
                                  "input")
    if antialias and (mode not in ("bilinear", "bicubic") or input.dim() != 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and "
                         "requires a 4-D tensor as input")
    _check_interp_dtype(input, mode, nd)
    sp = input.shape[2:]
    if size is not None:
        out = list(_ntuple(nd)(size))
        scales = [None] * nd
    else:
        sf = list(_ntuple(nd)(scale_factor))
        out = [int(math.floor(float(sp[i]) * sf[i])) for i in range(nd)]
        scales = [None] * nd if recompute_scale_factor else sf
    if mode == "area":
        fn = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[nd]
        return fn(input, out if nd > 1 else out[0])
    x = input
    if mode.startswith("nearest"):
        for i in range(nd):
            idx = _nearest_index(sp[i], out[i], scales[i], mode == "nearest-exact", x.device)
            x = x.index_select(2 + i, idx)
        return x
    if antialias:
        return _antialiased(x, sp, out, scales, align_corners, mode)
    if mode == "bicubic":
        if x.dtype is ember.uint8:
            return _resample_uint8(x, sp, out, scales, align_corners, mode, False)
        return _bicubic(x, sp, out, scales, align_corners)
    if x.dtype is ember.uint8:
        return _resample_uint8(x, sp, out, scales, align_corners, mode, False)
    return _linear_resample(x, sp, out, scales, align_corners, nd)


def _check_interp_dtype(input, mode, nd):
    """PyTorch's CPU kernels: nearest, bilinear and bicubic take uint8 besides the float
    types; no other integer (or bool) input."""
    dt = input.dtype
    if dt.is_floating_point or (dt is ember.uint8 and mode in ("nearest", "nearest-exact",
                                                               "bilinear", "bicubic")):
        return
    if mode in ("nearest", "nearest-exact"):
        kernel = "upsample_nearest2d_channels_last" if nd == 2 else \
            "compute_indices_weights_nearest"
    elif mode == "bilinear":
        kernel = "upsample_bilinear2d_channels_last"
    elif mode == "bicubic":
        kernel = "compute_indices_weights_cubic"
    elif mode == "area":
        kernel = "adaptive_avg_pool3d_cpu" if nd == 3 else "adaptive_avg_pool2d"
    else:
        kernel = "compute_indices_weights_linear"
    raise NotImplementedError(f'"{kernel}" not implemented for \'{_tname(dt)}\'')


def _aa_filter(mode, v, a=-0.5):
    v = abs(v)
    if mode == "bilinear":
        return 1.0 - v if v < 1.0 else 0.0
    # PyTorch's antialiased bicubic uses a = -0.5 (PIL's), its uint8 one without
    # antialiasing a = -0.75
    if v < 1.0:
        return ((a + 2.0) * v - (a + 3.0)) * v * v + 1.0
    if v < 2.0:
        return (((v - 5.0) * v + 8.0) * v - 4.0) * a
    return 0.0


def _aa_matrix(in_size, out_size, scale, align_corners, mode, antialias=True):
    """The (out, in) resampling matrix of PyTorch's separable interpolation kernels (its
    antialiased ones, and its uint8 ones): each output averages the inputs under a filter,
    stretched by the downscale factor when antialiasing, weights normalised to sum 1."""
    if align_corners:
        sc = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    elif scale is not None and scale > 0:
        sc = 1.0 / scale
    else:
        sc = in_size / out_size
    half = 1.0 if mode == "bilinear" else 2.0
    stretch = antialias and sc >= 1.0
    support = half * sc if stretch else half
    invscale = 1.0 / sc if stretch else 1.0
    delta = 0.5 if align_corners and not antialias else 0.0
    a = -0.5 if antialias else -0.75
    rows = []
    for i in range(out_size):
        center = sc * (i + 0.5 - delta)
        lo = max(int(center - support + 0.5 + delta), 0)
        hi = min(int(center + support + 0.5 + delta), in_size)
        w = [_aa_filter(mode, (j - center + 0.5 - delta) * invscale, a)
             for j in range(lo, hi)]
        total = sum(w)
        row = [0.0] * in_size
        for j, wj in zip(range(lo, hi), w):
            row[j] = wj / total if total != 0.0 else wj
        rows.append(row)
    return rows


def _antialiased(x, sp, out, scales, align_corners, mode):
    """PyTorch's antialiased bilinear / bicubic resampling (separable, last dim first) as
    one small matrix product per dim."""
    if x.dtype is ember.uint8:
        return _resample_uint8(x, sp, out, scales, align_corners, mode, True)
    for i in reversed(range(2)):
        m = ember.tensor(_aa_matrix(sp[i], out[i], scales[i], align_corners, mode),
                         dtype=x.dtype, device=x.device)
        x = ember.matmul(x.transpose(2 + i, -1), m.t()).transpose(2 + i, -1)
    return x


def _resample_uint8(x, sp, out, scales, align_corners, mode, antialias):
    """PyTorch's uint8 bilinear / bicubic kernel: per dim (last first) the float weights
    as int16 fixed point with the most bits that fit, an integer weighted sum rounded
    half up, shifted back and clamped to 0..255."""
    for i in reversed(range(2)):
        if sp[i] == out[i] and not antialias and scales[i] in (None, 1.0):
            continue
        if mode == "bicubic" and not antialias:
            rows = _cubic_rows(sp[i], out[i], scales[i], align_corners)
        else:
            rows = _aa_matrix(sp[i], out[i], scales[i], align_corners, mode, antialias)
        top = max((abs(w) for row in rows for w in row), default=0.0)
        bits = 0
        while bits < 22 and int(0.5 + top * (1 << (bits + 1))) < (1 << 15):
            bits += 1
        fixed = [[int(w * (1 << bits) - 0.5) if w < 0 else int(w * (1 << bits) + 0.5)
                  for w in row] for row in rows]
        m = ember.tensor(fixed, dtype=ember.int64, device=x.device)
        acc = ember.matmul(x.long().transpose(2 + i, -1), m.t()) + (1 << (bits - 1) if bits
                                                                      else 0)
        acc = ember.div(acc, 1 << bits, rounding_mode="floor")
        x = acc.clamp(0, 255).to(ember.uint8).transpose(2 + i, -1)
    return x


def _cubic_rows(in_size, out_size, scale, align_corners):
    """The (out, in) matrix of PyTorch's bicubic resampling along one dim (A = -0.75, the
    taps past a border clamped onto it)."""
    if align_corners:
        sc = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    elif scale is not None and scale > 0:
        sc = 1.0 / scale
    else:
        sc = in_size / out_size
    rows = []
    for i in range(out_size):
        src = sc * i if align_corners else sc * (i + 0.5) - 0.5
        fl = math.floor(src)
        t = src - fl
        row = [0.0] * in_size
        for k, w in enumerate(_cubic_weights(t)):
            row[min(max(fl - 1 + k, 0), in_size - 1)] += w
        rows.append(row)
    return rows


def _bicubic(x, sp, out, scales, align_corners):
    """PyTorch's bicubic upsampling (A = -0.75, taps clamped to the border), separable,
    last dim first."""
    wdt = _weight_dtype(x.dtype)
    for i in reversed(range(2)):
        dim = 2 + i
        sc = _interp_scale(sp[i], out[i], scales[i], align_corners, wdt, x.device)
        pos = ember.arange(out[i], dtype=wdt, device=x.device)
        src = sc * pos if align_corners else sc * (pos + 0.5) - 0.5
        fl = src.floor()
        w = _cubic_weights(src - fl)
        base = fl.long()
        shape = [1] * x.dim()
        shape[dim] = out[i]
        acc = None
        for k in range(4):
            idx = (base - 1 + k).clamp(0, sp[i] - 1)
            term = x.index_select(dim, idx) * w[k].to(x.dtype).reshape(shape)
            acc = term if acc is None else acc + term
        x = acc
    return x


def _linear_resample(x, sp, out, scales, align_corners, nd, only=None):
    # PyTorch's separable form, innermost (last) dim first: t0 * w0 + t1 * w1 per dim. A
    # weight of 0 times an inf neighbour is NaN there as in PyTorch; a difference form
    # (a + (b - a) * w) would turn inf into NaN where both neighbours are the same inf.
    for i in reversed(range(nd)):
        if only is not None and i != only:
            continue
        dim = 2 + i
        i0, w0, i1, w1 = _linear_weights(sp[i], out[i], scales[i], align_corners, x.dtype,
                                         x.device)
        shape = [1] * x.dim()
        shape[dim] = out[i]
        x = x.index_select(dim, i0) * w0.reshape(shape) + \
            x.index_select(dim, i1) * w1.reshape(shape)
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resize ``input`` (deprecated: use :func:`interpolate`).

    Warns and calls :func:`interpolate` with the same arguments.

    Args:
        input (Tensor): input of shape (N, C, *spatial).
        size (int or tuple of ints, optional): the output spatial size.
        scale_factor (float or tuple of floats, optional): the multiplier of the spatial size.
        mode (str): 'nearest', 'linear', 'bilinear', 'bicubic', 'trilinear', 'area' or
            'nearest-exact'. Default: 'nearest'.
        align_corners (bool, optional): for the linear modes, align the corner pixels of input
            and output. Default: None (False).
    """
    _warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
          "instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)


def _check_shuffle(name, input, factor, what):
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r)."""
    r = upscale_factor
    _check_shuffle("pixel_shuffle", input, r, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W)."""
    r = downscale_factor
    _check_shuffle("pixel_unshuffle", input, r, "downscale_factor")
    *lead, c, h, w = input.shape
    for what, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g * c, *) -> the channels of the ``g`` groups interleaved."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = input.shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


# ==== activations =====================================================================
def _inplace(input: Tensor, fn, inplace: bool) -> Tensor:
    """``fn(input)``, written into ``input`` when ``inplace``. Under autograd the result is
    computed from a copy, so what the graph saved is not the tensor being overwritten."""
    if not inplace:
        return fn(input)
    src = input.clone() if input.requires_grad and _grad_enabled() else input
    return input.copy_(fn(src))


def _tensor_input(name: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``; the gradient is 0 where ``x <= 0`` (PyTorch's threshold_backward)."""
    _tensor_input("relu", input)
    if inplace and _nn.activation_("relu", input, {}) is not None:
        return input
    return _inplace(input, _nn.relu, inplace)


def relu_(input: Tensor) -> Tensor:
    """In-place version of :func:`relu`."""
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies ``min(max(x, 0), 6)`` elementwise.

    Args:
        input (Tensor): the input tensor.
        inplace (bool): write the result into ``input``. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.relu6(ember.tensor([-1., 3., 8.]))
        tensor([0., 3., 6.])
    """
    _tensor_input("relu6", input)
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Applies ``x`` if ``x > 0`` else ``negative_slope * x`` elementwise.

    Args:
        input (Tensor): the input tensor.
        negative_slope (float): the slope for negative inputs. Default: 0.01.
        inplace (bool): write the result into ``input``. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.leaky_relu(ember.tensor([-2., 0., 3.]), 0.1)
        tensor([-0.2000,  0.0000,  3.0000])
    """
    return _inplace(input, lambda x: ember.where(x > 0, x, x * negative_slope), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place version of :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    # expm1 of the input with its positive part zeroed: the unused branch never overflows
    # (no inf * 0 in backward); NaN takes the negative branch, as PyTorch's vectorised
    # kernel (its gradient is NaN)
    return _inplace(input, lambda x: ember.where(
        x > 0, x, ember.expm1(ember.where(x > 0, 0.0, x)) * alpha), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of :func:`elu`."""
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies the scaled exponential linear unit elementwise.

    ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with the fixed constants
    ``alpha = 1.6732632423543772`` and ``scale = 1.0507009873554805`` that make
    self-normalising networks keep zero mean and unit variance.

    Args:
        input (Tensor): the input tensor.
        inplace (bool): write the result into ``input``. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.selu(ember.tensor([-1., 0., 1.]))
        tensor([-1.1113,  0.0000,  1.0507])
    """
    return _inplace(input, lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Applies ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` elementwise.

    The continuously differentiable exponential linear unit: equal to :func:`elu` for
    ``alpha = 1``.

    Args:
        input (Tensor): the input tensor.
        alpha (float): the scale of the negative part. Default: 1.0.
        inplace (bool): write the result into ``input``. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.celu(ember.tensor([-2., 0., 2.]), alpha=0.5)
        tensor([-0.4908,  0.0000,  2.0000])
    """
    return _inplace(input, lambda x: ember.where(
        x > 0, x, ember.expm1(ember.where(x > 0, 0.0, x) / alpha) * alpha), inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (exact, via erf) or the tanh approximation."""
    _tensor_input("gelu", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _ops.elementwise("gelu", input,
                            approximate=None if approximate == "none" else approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return _inplace(input, lambda x: x * ember.sigmoid(x), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies ``x * tanh(softplus(x))`` elementwise.

    Args:
        input (Tensor): the input tensor.
        inplace (bool): write the result into ``input``. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.mish(ember.tensor([-1., 0., 1.]))
        tensor([-0.3034,  0.0000,  0.8651])
    """
    return _inplace(input, lambda x: x * ember.tanh(softplus(x)), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``; the gradient is 0 at -3 and 1 at 3 (PyTorch's)."""
    return _inplace(input, lambda x: x * _nn.hardtanh(x + 3.0, 0.0, 6.0) / 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``; no gradient at -3 and 3 (PyTorch's)."""
    return _inplace(input, lambda x: _nn.hardtanh(x + 3.0, 0.0, 6.0) / 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """Clamps ``input`` to ``[min_val, max_val]`` elementwise.

    The gradient is 1 strictly inside the range and 0 outside it.

    Args:
        input (Tensor): the input tensor.
        min_val (float): the lower bound. Default: -1.0.
        max_val (float): the upper bound. Default: 1.0.
        inplace (bool): write the result into ``input``. Default: False.

    Raises:
        ValueError: if ``min_val > max_val``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.hardtanh(ember.tensor([-2., 0.5, 3.]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    _tensor_input("hardtanh", input)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace and _nn.activation_("hardtanh", input,
                                   {"min_val": min_val, "max_val": max_val}) is not None:
        return input
    return _inplace(input, lambda x: _nn.hardtanh(x, min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place version of :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    bx = input * beta
    # the linear part zeroed in the soft branch (no overflow there); NaN stays NaN
    soft = ember.log1p(ember.exp(ember.where(bx > threshold, 0.0, bx))) / beta
    return ember.where(bx > threshold, input, soft)


def softsign(input: Tensor) -> Tensor:
    """Applies ``x / (1 + |x|)`` elementwise.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softsign(ember.tensor([-2., 0., 1.]))
        tensor([-0.6667,  0.0000,  0.5000])
    """
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """Applies ``x - tanh(x)`` elementwise.

    Example:
        >>> import ember.nn.functional as F
        >>> F.tanhshrink(ember.tensor([-2., 0., 2.]))
        tensor([-1.0360,  0.0000,  1.0360])
    """
    return input - ember.tanh(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where ``x <= threshold``, else ``x`` (NaN passes, as PyTorch)."""
    return _inplace(input, lambda x: ember.where(x <= threshold, value, x), inplace)


_threshold = threshold   # (threshold_'s parameter has the function's name, as PyTorch)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place version of :func:`ember.nn.functional.threshold`."""
    return _threshold(input, threshold, value, inplace=True)


def _shrink(x, lambd, above, below):
    """0 for ``-lambd <= x <= lambd``, ``above`` / ``below`` beyond; NaN stays NaN with no
    gradient (PyTorch's vectorised kernels; +0.0 inside)."""
    return ember.where((x >= -lambd) & (x <= lambd), 0.0, ember.where(
        x > lambd, above, ember.where(x < -lambd, below, x.detach())))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Applies the hard shrinkage function elementwise.

    ``x`` where ``|x| > lambd``, 0 elsewhere (``-lambd <= x <= lambd``).

    Args:
        input (Tensor): the input tensor.
        lambd (float): the half-width of the zeroed band. Default: 0.5.

    Example:
        >>> import ember.nn.functional as F
        >>> F.hardshrink(ember.tensor([-1., -0.3, 0.2, 0.8]))
        tensor([-1.0000,  0.0000,  0.0000,  0.8000])
    """
    return _shrink(input, lambd, input, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x -+ lambd`` beyond ``±lambd``, 0 between."""
    return _shrink(input, lambd, input - lambd, input + lambd)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, computed stably as ``min(x, 0) - log1p(exp(-|x|))``; at 0 the
    gradient is 1/2 (the kinks of min and |x| cancel: PyTorch's log_sigmoid_backward)."""
    neg = input < 0
    return ember.where(neg, input, 0.0) - ember.log1p(ember.exp(ember.where(neg, input,
                                                                            -input)))


def sigmoid(input: Tensor) -> Tensor:
    """Applies ``1 / (1 + exp(-x))`` elementwise. See :func:`ember.sigmoid`.

    Example:
        >>> import ember.nn.functional as F
        >>> F.sigmoid(ember.tensor([-2., 0., 2.]))
        tensor([0.1192, 0.5000, 0.8808])
    """
    return ember.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Applies the hyperbolic tangent elementwise. See :func:`ember.tanh`.

    Example:
        >>> import ember.nn.functional as F
        >>> F.tanh(ember.tensor([-1., 0., 1.]))
        tensor([-0.7616,  0.0000,  0.7616])
    """
    return ember.tanh(input)


def _softmax_dim(name: str, input: Tensor) -> int:
    """The dim PyTorch's functional softmaxes choose when ``dim`` is None (deprecated)."""
    _warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
          "to include dim=X as an argument.")
    return 0 if input.dim() in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """Applies softmax along ``dim``: ``exp(x_i) / sum_j exp(x_j)``.

    The results along ``dim`` lie in [0, 1] and sum to 1; large inputs do not overflow.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension along which to normalise. If None (deprecated; a
            warning is issued), dim 0 is used for 0-, 1- and 3-D inputs and dim 1 otherwise.
        _stacklevel (int): accepted as PyTorch's (the warning names the caller's line).
            Default: 3.
        dtype (ember.dtype, optional): cast ``input`` to this dtype before the operation
            (useful to avoid overflow in low precision). Default: None.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softmax(ember.tensor([1., 2., 3.]), dim=0)
        tensor([0.0900, 0.2447, 0.6652])
    """
    if dim is None:
        dim = _softmax_dim("softmax", input)
    return ember.softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """Applies softmin along ``dim``: ``softmax(-x)``.

    The results along ``dim`` lie in [0, 1] and sum to 1; the smallest input gets the largest
    weight.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension along which to normalise. If None (deprecated; a
            warning is issued), dim 0 is used for 0-, 1- and 3-D inputs and dim 1 otherwise.
        _stacklevel (int): accepted as PyTorch's (the warning names the caller's line).
            Default: 3.
        dtype (ember.dtype, optional): cast ``input`` to this dtype before the operation
            (useful to avoid overflow in low precision). Default: None.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softmin(ember.tensor([1., 2., 3.]), dim=0)
        tensor([0.6652, 0.2447, 0.0900])
    """
    if dim is None:
        dim = _softmax_dim("softmin", input)
    return ember.softmax(-input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    """Applies ``log(softmax(x))`` along ``dim``, computed in one stable step.

    Use it with :func:`nll_loss` (the pair is what :func:`cross_entropy` computes).

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension along which to normalise. If None (deprecated; a
            warning is issued), dim 0 is used for 0-, 1- and 3-D inputs and dim 1 otherwise.
        _stacklevel (int): accepted as PyTorch's (the warning names the caller's line).
            Default: 3.
        dtype (ember.dtype, optional): cast ``input`` to this dtype before the operation
            (useful to avoid overflow in low precision). Default: None.

    Example:
        >>> import ember.nn.functional as F
        >>> F.log_softmax(ember.tensor([1., 2., 3.]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input)
    return ember.log_softmax(input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` where ``a, b`` are the halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        d = dim % input.dim()
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.chunk(2, dim)
    return a * ember.sigmoid(b)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``max(0, x) + weight * min(0, x)``; ``weight`` has 1 or C (channel dim 1) values."""
    if weight.numel() != 1:
        c = input.shape[1] if input.dim() >= 2 else input.shape[0] if input.dim() else 1
        if weight.numel() != c:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = {c}.")
        if input.dim() >= 2:
            weight = weight.reshape((1, c) + (1,) * (input.dim() - 2))
    else:
        weight = weight.reshape(())
    return ember.where(input > 0, input, input * weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Applies the randomized leaky ReLU elementwise.

    ``x`` for ``x >= 0`` and ``a * x`` otherwise. When ``training``, the slope ``a`` is drawn
    independently for each element from ``U(lower, upper)``; otherwise it is fixed at
    ``(lower + upper) / 2``.

    Args:
        input (Tensor): the input tensor.
        lower (float): the lower bound of the slope's distribution. Default: 1/8.
        upper (float): the upper bound of the slope's distribution. Default: 1/3.
        training (bool): draw random slopes. Default: False.
        inplace (bool): write the result into ``input``. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.rrelu(ember.tensor([-1., 2.]), 0.1, 0.3)
        tensor([-0.2000,  2.0000])
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = ember.rand(input.shape, dtype=input.dtype, device=input.device) * (upper - lower) \
        + lower
    return _inplace(input, lambda x: ember.where(x >= 0, x, x * slope), inplace)


# ==== dropout =========================================================================
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (only when ``training``)."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _inplace(input, lambda x: x * 0.0, inplace)
    mask = _nn.dropout_mask(input, p, input.shape)
    return _inplace(input, lambda x: x * mask, inplace)


def _feature_dropout(input, p, training, inplace, batched):
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _inplace(input, lambda x: x * 0.0, inplace)
    lead = 2 if batched else 1
    if input.dim() < lead:
        # PyTorch's feature dropout draws one draw per (sample, channel) or per channel
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = input.shape[:lead] + (1,) * (input.dim() - lead)
    mask = _nn.dropout_mask(input, p, shape)
    return _inplace(input, lambda x: x * mask, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) / (C, L) input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a "
                           f"{input.dim()}D input. Note that dropout1d exists to provide "
                           "channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) / (C, H, W) input."""
    if input.dim() not in (3, 4):
        _warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
              "deprecated and will result in an error in a future release. To retain "
              "the behavior and silence this warning, please use dropout instead. Note "
              "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
              "spatial dimensions, a channel dimension, and an optional batch dimension "
              "(i.e. 3D or 4D inputs).")
    if input.dim() == 3:
        _warn("dropout2d: Received a 3D input to dropout2d and assuming that "
              "channel-wise 1D dropout behavior is desired - input is interpreted as "
              "shape (N, C, L), where C is the channel dim. This behavior will change "
              "in a future release to interpret the input as one without a batch "
              "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
              "behavior, please switch to using dropout1d instead.")
    # as PyTorch's: one draw per entry of the first two dimensions whatever the rank (so a
    # 2-D input is dropped element by element, like ``dropout``)
    return _feature_dropout(input, p, training, inplace, True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Randomly zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input.

    When ``training``, each channel (of each sample) is zeroed with probability ``p`` and the
    kept channels are scaled by ``1 / (1 - p)``; otherwise ``input`` is returned unchanged.

    Args:
        input (Tensor): input of shape (N, C, D, H, W) or (C, D, H, W).
        p (float): the probability of zeroing a channel. Default: 0.5.
        training (bool): apply dropout. Default: True.
        inplace (bool): write the result into ``input``. Default: False.

    Note:
        Inputs that are not 4-D or 5-D draw PyTorch's deprecation warning; any input that
        is not 5-D is treated as unbatched (one draw per entry of its first dimension).

    Example:
        >>> import ember.nn.functional as F
        >>> F.dropout3d(ember.ones(2, 3, 2, 2, 2), 0.5, training=False).shape
        ember.Size([2, 3, 2, 2, 2])
    """
    if input.dim() not in (4, 5):
        _warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is "
              "deprecated and will result in an error in a future release. To retain "
              "the behavior and silence this warning, please use dropout instead. Note "
              "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
              "spatial dimensions, a channel dimension, and an optional batch dimension "
              "(i.e. 4D or 5D inputs).")
    return _feature_dropout(input, p, training, inplace, input.dim() == 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _inplace(input, lambda x: x * 0.0, inplace)
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = (ember.rand(input.shape, dtype=input.dtype, device=input.device) >= p).to(
        input.dtype)
    return _inplace(input, lambda x: (x * keep + (1 - keep) * alpha_p) * a + b, inplace)


# ==== normalisation ===================================================================
def _norm_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


_REDUCED = ("bfloat16", "float16")


def _mixed_norm(input: Tensor, *params) -> bool:
    """PyTorch's mixed-dtype rule for layer_norm, group_norm and instance_norm: parameters of
    another dtype than ``input`` are allowed only as float32 next to a bfloat16 or float16
    input (autocast's ``LayerNorm(x_bf16)``, whose weights stay float32); the norm is then
    computed in float32 and returned in the input's dtype. Any other mix is an error."""
    if all(p is None or p.dtype is input.dtype for p in params):
        return False
    if any(p is not None and p.dtype is not ember.float32 for p in params):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype.name not in _REDUCED:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return True


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (biased variance)."""
    ns = _norm_shape(normalized_shape)
    if tuple(input.shape[input.dim() - len(ns):]) != ns or input.dim() < len(ns):
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    if _mixed_norm(input, weight, bias):
        return _nn.layer_norm(input.float(), ns, weight, bias, eps).to(input.dtype)
    return _nn.layer_norm(input, ns, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) over groups of C / num_groups channels and the spatial dims."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    c = input.shape[1]
    # PyTorch's batch-size check: one value per group normalises to 0 (its error, its type)
    size = [input.shape[0] * c // num_groups, num_groups, *input.shape[2:]]
    if math.prod([size[0], *size[2:]]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {size}")
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    if _mixed_norm(input, weight, bias):
        return _nn.group_norm(input.float(), num_groups, weight, bias, eps).to(input.dtype)
    return _nn.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims (``eps`` defaults to
    the dtype's machine epsilon)."""
    ns = _norm_shape(normalized_shape)
    if tuple(input.shape[input.dim() - len(ns):]) != ns or input.dim() < len(ns):
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    # PyTorch's composite: computed in the input's opmath dtype (float32 for bfloat16 and
    # float16, whose eps is then float32's too), the weight applied before the one rounding
    # to the input's dtype
    reduced = input.dtype.name in _REDUCED
    if eps is None:
        eps = _EPS["float32"] if reduced else _EPS.get(input.dtype.name, _EPS["float32"])
    x = input.float() if reduced else input
    dims = tuple(range(-len(ns), 0))
    out = x * ember.rsqrt((x * x).mean(dim=dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out.to(input.dtype)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) per channel with batch statistics (training; the running stats
    are updated in place with ``momentum`` and the unbiased variance) or the running stats."""
    if input.dim() < 2:
        raise ValueError(f"Expected 2D or more input (got {input.dim()}D input)")
    c = input.shape[1]
    n_per_channel = input.numel() // c if c else 0
    if training and n_per_channel == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {input.size()}")
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    return _nn.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                          eps)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) plane over its spatial dims."""
    if _mixed_norm(input, weight, bias):
        return instance_norm(input.float(), running_mean, running_var, weight, bias,
                             use_input_stats, momentum, eps).to(input.dtype)
    c = input.shape[1]
    dims = tuple(range(2, input.dim()))
    shape = (1, c) + (1,) * (input.dim() - 2)
    if use_input_stats:
        mean = input.mean(dim=dims, keepdim=True)
        var = input.var(dim=dims, correction=0, keepdim=True)
        if running_mean is not None or running_var is not None:
            n = _prod(input.shape[2:])
            with _no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(
                        mean.detach().mean(dim=0).reshape(-1) * momentum)
                if running_var is not None:
                    unbiased = var.detach() * (n / max(n - 1, 1))
                    running_var.mul_(1 - momentum).add_(
                        unbiased.mean(dim=0).reshape(-1) * momentum)
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) * ember.rsqrt(var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Normalise each channel by the (zero-padded) sum of squares of ``size`` neighbours."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    sq = (input * input).unsqueeze(1)                         # (N, 1, C, *)
    sq = _pad_dim(sq, 2, size // 2, (size - 1) // 2, 0)
    win = sq.unfold(2, size, 1).mean(dim=-1).squeeze(1)       # (N, C, *)
    div = (win * alpha + k) ** beta
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out=None) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / denom


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine similarity between ``x1`` and ``x2`` along ``dim``.

    ``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))``, with the norms taken along
    ``dim``. The inputs broadcast against each other; ``dim`` is removed from the result.

    Args:
        x1 (Tensor): the first input.
        x2 (Tensor): the second input, broadcastable with ``x1``.
        dim (int): the dimension along which to compute. Default: 1.
        eps (float): the lower bound of each norm, to avoid division by zero. Default: 1e-8.

    Example:
        >>> import ember.nn.functional as F
        >>> F.cosine_similarity(ember.tensor([[1., 0.], [1., 1.]]),
        ...                     ember.tensor([[1., 0.], [-1., 1.]]))
        tensor([1., 0.])
    """
    n1 = ember.sqrt((x1 * x1).sum(dim, keepdim=True)).clamp(min=eps)
    n2 = ember.sqrt((x2 * x2).sum(dim, keepdim=True)).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm distance between the rows of ``x1`` and ``x2``.

    Computes ``||x1 - x2 + eps||_p`` over the last dimension (the two inputs broadcast). Note
    that ``eps`` is added to the difference, so identical rows give a small positive distance.

    Args:
        x1 (Tensor): input of shape (N, D) or (D,).
        x2 (Tensor): input broadcastable with ``x1``.
        p (float): the norm degree. Default: 2.
        eps (float): a small value added to the difference. Default: 1e-6.
        keepdim (bool): keep the last dimension with size 1. Default: False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.pairwise_distance(ember.tensor([[0., 0.], [1., 1.]]),
        ...                     ember.tensor([[3., 4.], [1., 1.]]), eps=0.0)
        tensor([5., 0.])
    """
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


# ==== embedding =======================================================================
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` selected by the integer ``input``: output (*input.shape, D).

    Positions equal to ``padding_idx`` get no gradient.
    """
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"{_dtypes.module_name}.{_tname(input.dtype)}Tensor instead "
                           "(while checking arguments for embedding)")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num, "Padding_idx must be within num_embeddings"
            padding_idx = num + padding_idx
    flat = input.reshape(-1)
    if flat.numel() and _nn.check_by_reading("embedding", weight.device) and bool(
            ((flat < 0) | (flat >= num)).any()):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    if sparse:  # the weight's gradient is a sparse COO tensor (PyTorch's sparse=True)
        return _sparse_tensor.embedding_sparse(input, weight, padding_idx, scale_grad_by_freq)
    return _nn.embedding(weight, input, -1 if padding_idx is None else padding_idx,
                         scale_grad_by_freq)


def _embedding_renorm_(weight, flat, max_norm, norm_type):
    with _no_grad():
        used = ember.zeros(weight.shape[0], dtype=ember.bool, device=weight.device)
        used[flat] = True
        norms = weight.detach().norm(norm_type, 1)
        scale = ember.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale.unsqueeze(1).to(weight.dtype))


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dimension of size ``num_classes``."""
    tensor = input
    if tensor.dtype is not ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    elif num_classes != -1 and _lazy.exporting():
        pass    # (an exported graph has no value checks, as PyTorch's traced one_hot)
    else:
        if bool((tensor < 0).any()):
            raise RuntimeError("Class values must be non-negative.")
        mx = int(tensor.max().item())
        if num_classes == -1:
            num_classes = mx + 1
        elif mx >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ember.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# ==== attention =======================================================================
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v``. A bool ``attn_mask`` marks the positions that
    take part; a float mask is added. ``is_causal`` uses a lower-triangular mask."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if dropout_p > 0.0:
        _check_p(dropout_p)
    return _nn.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                            scale, enable_gqa)


def _canonical_mask(mask, target_type):
    """A bool mask (True = masked out) as an additive float mask; float masks pass."""
    if mask is None:
        return None
    if mask.dtype is not ember.bool and not mask.dtype.is_floating_point:
        raise AssertionError("only bool and floating types of masks are supported")
    if mask.dtype is ember.bool:
        return ember.zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill(
            mask, -math.inf)
    return mask


def _warn_mismatched_masks(mask, mask_name, other, other_name):
    """PyTorch's deprecation warning for a padding mask whose dtype differs from the attention
    mask's (a bool one with a float one): both still work."""
    if mask is not None and other is not None and mask.dtype != other.dtype:
        _warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same "
              "type for both instead.")


def _mha_in_projection(query, key, value, packed, in_proj_weight, in_proj_bias,
                       q_proj_weight, k_proj_weight, v_proj_weight, separate):
    """q, k, v of multi-head attention in their inputs' layout (..., E)."""
    if packed:
        # self-attention: one GEMM with the packed weight, as PyTorch's _in_projection_packed
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if separate:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _mha_check_mask(attn_mask, tgt_len, src_len, batch_heads):
    """A 2-D attn_mask as (1, L, S); the shape errors PyTorch raises."""
    if attn_mask is None:
        return None
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.size()}, but "
                               f"should be {(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        expected = (batch_heads, tgt_len, src_len)
        if tuple(attn_mask.shape) != expected:
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.size()}, but "
                               f"should be {expected}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _mha_heads_as_views(query, key, value, num_heads, packed, in_proj_weight, in_proj_bias,
                        q_proj_weight, k_proj_weight, v_proj_weight, separate,
                        out_proj_weight, out_proj_bias, attn_mask, key_padding_mask,
                        dropout_p, is_causal, is_batched):
    """Multi-head attention without attention weights, the heads kept as views.

    The (L, N, E) inputs are often transposed views of batch-first (N, L, E) tensors
    (``batch_first=True``): the projections then run on the batch-first memory, and the
    (N, H, L, head_dim) operands of scaled_dot_product_attention are views of the
    projections' results in either layout, so no head is copied on the way in; only the
    attention's result is laid out as (tokens, E) for the out-projection, as in PyTorch."""
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    head_dim = embed_dim // num_heads
    # batch-first memory: the inputs' batch dim has the larger stride
    bf = all(t.stride(1) > t.stride(0) for t in (query, key, value))
    if bf:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if packed:  # (still one tensor: one packed GEMM)
            key = value = query
    q, k, v = _mha_in_projection(query, key, value, packed, in_proj_weight, in_proj_bias,
                                 q_proj_weight, k_proj_weight, v_proj_weight, separate)
    # (N, L, E) → (N, H, L, hd), or (L, N, E) → (N, H, L, hd): views
    order = (0, 2, 1, 3) if bf else (1, 2, 0, 3)
    q, k, v = (t.unflatten(-1, (num_heads, head_dim)).permute(*order) for t in (q, k, v))
    attn_mask = _mha_check_mask(attn_mask, tgt_len, src_len, bsz * num_heads)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise RuntimeError(f"Expected key_padded_mask.shape == {(bsz, src_len)}, but got "
                               f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len)
        attn_mask = kpm if attn_mask is None else (
            attn_mask.reshape(-1, num_heads, tgt_len, src_len) if attn_mask.shape[0] != 1
            else attn_mask.unsqueeze(0)) + kpm
    elif attn_mask is not None:
        attn_mask = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1
                     else attn_mask.reshape(bsz, num_heads, tgt_len, src_len))
    if dropout_p > 0.0:
        _check_p(dropout_p)
    # (the kernel's result laid out (N, L, H, hd) for the batch-first join below)
    out = _nn.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal,
                                           heads_last=bf)
    if bf:   # (N, H, L, hd) → (N, L, E) → (L, N, E), a view of the batch-first result
        out = out.transpose(1, 2).reshape(bsz * tgt_len, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(bsz, tgt_len, -1)
        out = out.transpose(0, 1)
    else:
        out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """The computation of ``nn.MultiheadAttention`` on (L, N, E) inputs (or unbatched
    (L, E)). Bool masks mark positions that are *not* attended (PyTorch's MHA convention)."""
    is_batched = query.dim() == 3
    packed = not use_separate_proj_weight and query is key and key is value
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    _warn_mismatched_masks(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask")
    key_padding_mask = _canonical_mask(key_padding_mask, query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if (not need_weights and bias_k is None and bias_v is None and not add_zero_attn
            and static_k is None and static_v is None):
        return _mha_heads_as_views(query, key, value, num_heads, packed, in_proj_weight,
                                   in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight,
                                   use_separate_proj_weight, out_proj_weight, out_proj_bias,
                                   attn_mask, key_padding_mask, dropout_p if training else 0.0,
                                   is_causal, is_batched)
    q, k, v = _mha_in_projection(query, key, value, packed, in_proj_weight, in_proj_bias,
                                 q_proj_weight, k_proj_weight, v_proj_weight,
                                 use_separate_proj_weight)
    attn_mask = _mha_check_mask(attn_mask, tgt_len, key.shape[0], bsz * num_heads)
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = ember.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None \
        else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None \
        else static_v
    if add_zero_attn:
        zeros = ember.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k = ember.cat([k, zeros], dim=1)
        v = ember.cat([v, zeros], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise RuntimeError(f"Expected key_padded_mask.shape == {(bsz, src_len)}, but got "
                               f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = ember.matmul(q * math.sqrt(1.0 / float(head_dim)), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = ember.softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = ember.matmul(weights, v)                       # (N * H, L, hd)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


# ==== losses ==========================================================================
def _legacy_reduction(size_average, reduce) -> str:
    _warn("size_average and reduce args will be deprecated, please use "
          "reduction='{}' instead.".format(
                      "mean" if (size_average is not False and reduce is not False)
                      else "sum" if reduce is not False else "none"))
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduction(reduction, size_average=None, reduce=None) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def _check_same_size(input, target):
    if target.shape != input.shape:
        _warn(f"Using a target size ({target.size()}) that is different to the input "
              f"size ({input.size()}). This will likely lead to incorrect results due "
              "to broadcasting. Please ensure they have the same size.")


def _weighted(loss, weight, reduction, input):
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target)^2``."""
    _check_same_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    d = input - target
    return _weighted(d * d, weight, reduction, input)


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|``."""
    _check_same_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    return _weighted((input - target).abs(), weight, reduction, input)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Quadratic ``0.5 d^2 / beta`` below ``beta``, linear ``|d| - beta / 2`` above."""
    _check_same_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    loss = ember.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """Huber loss: quadratic for small errors, linear for large ones.

    With ``d = |input - target|``, each element is ``0.5 * d^2`` if ``d < delta`` and
    ``delta * (d - 0.5 * delta)`` otherwise. For ``delta = 1`` it equals
    :func:`smooth_l1_loss`; in general it is ``delta`` times smooth L1 with ``beta = delta``.

    Args:
        input (Tensor): the predictions.
        target (Tensor): the targets, of the same shape (a warning is given otherwise).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.
        delta (float): the error at which the loss turns linear. Default: 1.0.
        weight (Tensor, optional): per-element weights of the same shape as ``input``.

    Note:
        With ``weight`` and ``reduction='mean'`` the weighted sum is divided by the number
        of elements (as PyTorch's ``huber_loss``; :func:`mse_loss` and :func:`l1_loss`
        divide by ``weight.sum()``, as PyTorch's do).

    Example:
        >>> import ember.nn.functional as F
        >>> F.huber_loss(ember.tensor([0., 2., 5.]), ember.tensor([0.5, 0., 0.]),
        ...              reduction='none')
        tensor([0.1250, 1.5000, 4.5000])
    """
    _check_same_size(input, target)
    reduction = _reduction(reduction)
    d = (input - target).abs()
    loss = ember.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None and reduction == "mean":
        return _weighted(loss, weight, "sum", input) / loss.numel()
    return _weighted(loss, weight, reduction, input)


def _check_target_long(target):
    if target.dtype not in (ember.int64, ember.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_tname(target.dtype)}")


def _check_nll(input, target, weight):
    """nll_loss's argument checks (PyTorch's errors), on ``input`` or its log_softmax."""
    _check_target_long(target)
    dim = input.dim()
    if dim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {dim})")
    if dim == 1:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.dim() == 1 and target.shape[0] != 1 and dim == 1:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size "
                             f"({target.shape[0]}).")
    else:
        if target.dim() == 0 or input.shape[0] != target.shape[0]:
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                             f"batch_size ({target.shape[0] if target.dim() else 1}).")
        if dim == 2 and target.dim() != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        expected = (input.shape[0],) + tuple(input.shape[2:])
        if dim > 2 and tuple(target.shape) != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got "
                               f"{list(target.shape)}")
    c = input.shape[0 if dim == 1 else 1]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood: ``-input[n, target[n]] * weight[target[n]]``.

    ``input`` is (N, C), (N, C, d1, ...) or (C,) log-probabilities; ``target`` holds class
    indices; entries equal to ``ignore_index`` count for nothing, also in the mean.
    """
    reduction = _reduction(reduction, size_average, reduce)
    _check_nll(input, target, weight)
    return _nn.nll_loss(input, target, weight, reduction, ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, class_dim), target)``; ``target`` holds class indices
    or, with the same shape as ``input``, class probabilities. ``label_smoothing`` mixes
    the target with the uniform distribution."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    # a 0-d or integer input fails in log_softmax / at its class dim first (in the op)
    if input.dim() and input.dtype.is_floating_point:
        if tuple(target.shape) == tuple(input.shape):
            if not target.dtype.is_floating_point:
                raise RuntimeError(f"Expected floating point type for target with class "
                                   f"probabilities, got {_tname(target.dtype)}")
        else:
            _check_nll(input, target, weight)     # on log_softmax(input): the same shape
    return _nn.cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100, as PyTorch."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the "
                         f"input size ({input.size()}) is deprecated. Please ensure they have "
                         "the same size.")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {_tname(target.dtype)} but expected "
                           f"{_tname(input.dtype)}")
    # (NaN is out of range too, as PyTorch's check reads)
    if input.numel() and not bool(((input >= 0) & (input <= 1)).all()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None:
        if weight.requires_grad and ember.is_grad_enabled():
            raise RuntimeError("The function 'binary_cross_entropy' is not differentiable "
                               "with respect to argument 'weight'. This input cannot have "
                               "requires_grad True.")
        weight = weight.to(input.dtype).expand(ember.broadcast_shapes(target.shape,
                                                                      weight.shape))
    return _nn.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably
    (``(1 - t) x + lw * softplus(-x)``, ``lw = 1 + (pos_weight - 1) t``)."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    softplus_neg = (-input).clamp(min=0) + ember.log1p(ember.exp(-input.abs()))
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise: ``target * (log target - input)``;
    ``reduction='batchmean'`` gives the mathematical KL divergence per sample."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        _warn("reduction: 'mean' divides the total loss by both the batch size and the "
              "support size.'batchmean' divides only by the batch size, and aligns "
              "with the KL div math definition.'mean' will be changed to behave the "
              "same as 'batchmean' in the next major release.")
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = ember.exp(target) * (target - input)
    else:
        safe = ember.where(target > 0, target, 1.0)
        loss = target * ember.log(safe) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))``.

    Args:
        input (Tensor): the scores, any shape.
        target (Tensor): the labels (1 or -1), of the same shape.
        size_average (bool, optional): deprecated (use ``reduction``).
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> F.soft_margin_loss(ember.tensor([0., 2.]), ember.tensor([1., -1.]), reduction='none')
        tensor([0.6931, 2.1269])
    """
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce(softplus(-target * input), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """Ranking loss ``max(0, -target * (input1 - input2) + margin)``.

    ``target`` 1 means ``input1`` should rank higher than ``input2``, -1 the reverse.

    Args:
        input1 (Tensor): the first scores, shape (N,) or ().
        input2 (Tensor): the second scores, of the same shape.
        target (Tensor): the labels (1 or -1), of the same shape.
        margin (float): the required gap. Default: 0.
        size_average (bool, optional): deprecated (use ``reduction``).
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> F.margin_ranking_loss(ember.tensor([1., 2.]), ember.tensor([2., 1.]),
        ...                       ember.tensor([1., 1.]), reduction='none')
        tensor([1., 0.])
    """
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """Hinge embedding loss, for learning whether inputs are similar.

    Each element is ``input`` where ``target == 1`` and ``max(0, margin - input)`` where
    ``target == -1`` (``input`` is typically a distance).

    Args:
        input (Tensor): the inputs, any shape.
        target (Tensor): the labels (1 or -1), of the same shape.
        margin (float): the margin for the -1 labels. Default: 1.0.
        size_average (bool, optional): deprecated (use ``reduction``).
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> F.hinge_embedding_loss(ember.tensor([0.3, 0.3, 2.]), ember.tensor([1., -1., -1.]),
        ...                        reduction='none')
        tensor([0.3000, 0.7000, 0.0000])
    """
    reduction = _reduction(reduction, size_average, reduce)
    margin_clamp = (margin - input).clamp(min=0)
    out_margin = ember.where(target != 1, margin_clamp, 0.0)
    out_self = ember.where(target != -1, input, 0.0)
    return _reduce(out_margin + out_self, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """Cosine embedding loss, for learning whether pairs are similar.

    With ``cos`` the cosine similarity of ``input1`` and ``input2`` along the last dim, each
    pair's loss is ``1 - cos`` where ``target == 1`` and ``max(0, cos - margin)`` where
    ``target == -1``.

    Args:
        input1 (Tensor): the first embeddings, shape (N, D) or (D,).
        input2 (Tensor): the second embeddings, of the same shape.
        target (Tensor): the labels (1 or -1), shape (N,) or ().
        margin (float): the margin for the -1 labels, in [-1, 1]. Default: 0.
        size_average (bool, optional): deprecated (use ``reduction``).
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([[1., 0.], [1., 0.]])
        >>> y = ember.tensor([[0., 1.], [1., 0.]])
        >>> F.cosine_embedding_loss(x, y, ember.tensor([1., -1.]), reduction='none')
        tensor([1., 1.])
    """
    reduction = _reduction(reduction, size_average, reduce)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / ember.sqrt(mag1 * mag2)
    pos = 1 - cos
    neg = (cos - margin).clamp(min=0)
    loss = ember.where(target == 1, pos, 0.0) + ember.where(target == -1, neg, 0.0)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of ``target`` under a Poisson distribution.

    With ``log_input`` the loss is ``exp(input) - target * input`` (``input`` is the log of
    the rate); otherwise ``input - target * log(input + eps)``. ``full`` adds the Stirling
    approximation ``target * log(target) - target + 0.5 * log(2 * pi * target)`` of
    ``log(target!)`` where ``target > 1``.

    Args:
        input (Tensor): the (log) rates.
        target (Tensor): the observed counts.
        log_input (bool): ``input`` holds log rates. Default: True.
        full (bool): add the Stirling term. Default: False.
        size_average (bool, optional): deprecated (use ``reduction``).
        eps (float): added to ``input`` before the log when ``log_input=False``. Default: 1e-8.
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> F.poisson_nll_loss(ember.tensor([0., 1.]), ember.tensor([1., 2.]), reduction='none')
        tensor([1.0000, 0.7183])
    """
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = ember.exp(input) - target * input
    else:
        loss = input - target * ember.log(input + eps)
    if full:
        safe = ember.where(target > 1, target, 1.0)
        stirling = safe * ember.log(safe) - safe + 0.5 * ember.log(safe * (2 * math.pi))
        loss = loss + ember.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood of ``target``, given means and variances.

    Each element is ``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))``, plus
    ``0.5 * log(2 * pi)`` when ``full``. The clamp to ``eps`` does not stop the gradient
    with respect to ``var``.

    Args:
        input (Tensor): the predicted means, shape (N, *) or (*).
        target (Tensor): the targets, of the same shape.
        var (Tensor or float): the predicted variances: the shape of ``input``, or of
            ``input`` with the last dim of size 1 or removed (one variance shared by the last
            dim), or a float for all elements. Must be non-negative.
        full (bool): add the constant term. Default: False.
        eps (float): the lower bound of ``var``, for stability. Default: 1e-6.
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Raises:
        ValueError: if ``var`` has the wrong size or a negative entry.

    Example:
        >>> import ember.nn.functional as F
        >>> F.gaussian_nll_loss(ember.tensor([0., 1.]), ember.tensor([1., 1.]),
        ...                     ember.tensor([1., 1.]), reduction='none')
        tensor([0.5000, 0.0000])
    """
    if not isinstance(var, Tensor):
        var = ember.full(input.shape, float(var), dtype=input.dtype, device=input.device)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    reduction = _reduction(reduction)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    with _no_grad():
        var_c = var.clamp(min=eps)
    var = var + (var_c - var).detach()   # clamp without blocking the gradient
    d = input - target
    loss = (ember.log(var) + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """Triplet loss ``max(0, d(a, p) - d(a, n) + margin)``.

    ``d`` is :func:`pairwise_distance` with norm ``p``: the anchor should be closer to the
    positive sample than to the negative one by at least ``margin``.

    Args:
        anchor (Tensor): the anchors, shape (N, D) or (D,).
        positive (Tensor): the positive samples, of the same shape.
        negative (Tensor): the negative samples, of the same shape.
        margin (float): the required gap. Default: 1.0.
        p (float): the norm degree of the distance. Default: 2.
        eps (float): added to the differences (see :func:`pairwise_distance`). Default: 1e-6.
        swap (bool): use ``min(d(a, n), d(p, n))`` as the negative distance (the "distance
            swap" of Balntas et al., 2016). Default: False.
        size_average (bool, optional): deprecated (use ``reduction``).
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> a, p, n = ember.tensor([[0., 0.]]), ember.tensor([[3., 4.]]), ember.tensor([[1., 0.]])
        >>> F.triplet_margin_loss(a, p, n, eps=0.0)
        tensor(5.)
    """
    reduction = _reduction(reduction, size_average, reduce)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ember.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Multi-label one-versus-all logistic loss.

    For each sample, the mean over the C classes of
    ``-(y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x)))``, optionally weighted per class.

    Args:
        input (Tensor): the scores, shape (N, C) or (C,).
        target (Tensor): the labels (0 or 1), of the same shape.
        weight (Tensor, optional): per-class weights of shape (C,).
        size_average (bool, optional): deprecated (use ``reduction``).
        reduce (bool, optional): deprecated (use ``reduction``).
        reduction (str): 'none' (per-element losses), 'mean' or 'sum'. Default: 'mean'.

    Example:
        >>> import ember.nn.functional as F
        >>> F.multilabel_soft_margin_loss(ember.tensor([[0., 0.]]), ember.tensor([[1., 0.]]))
        tensor(0.6931)
    """
    reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


# ==== more layers: indices forms, 3-d transposed conv, LP / unpooling / fractional pools ====
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool1d`` returning ``(values, indices)`` whatever ``return_indices`` says."""
    return _max_poolnd("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                       True, 1)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """:func:`max_pool2d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored. The indices are flat positions within each
    H * W input plane.

    Example:
        >>> import ember.nn.functional as F
        >>> F.max_pool2d_with_indices(ember.tensor([[[[1., 5.], [3., 2.]]]]), 2)
        (tensor([[[[5.]]]]), tensor([[[[1]]]]))
    """
    return _max_poolnd("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                       True, 2)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """:func:`max_pool3d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored. The indices are flat positions within each
    D * H * W input volume.
    """
    return _max_poolnd("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                       True, 3)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool1d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored.
    """
    return _adaptive_max("adaptive_max_pool1d", input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool2d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored.
    """
    return _adaptive_max("adaptive_max_pool2d", input, output_size, True, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool3d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored.
    """
    return _adaptive_max("adaptive_max_pool3d", input, output_size, True, 3)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:
    """Transposed 3-D convolution; ``weight`` is (C_in, C_out / groups, kD, kH, kW)."""
    return _conv_transposend("conv_transpose3d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation, 3)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution over time-batch-channel input: ``input`` (T, B, C_in), ``weight``
    (K, C_in, C_out), ``bias`` (C_out,) -> (T + 2 * pad - K + 1, B, C_out)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    k = _ntuple(nd)(kernel_size)
    if norm_type in (math.inf, -math.inf):    # PyTorch: max pooling of |x| (min for -inf)
        mx = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[nd]
        sign = 1 if norm_type > 0 else -1
        return mx(input.abs() * sign, k if nd > 1 else k[0], stride, 0, 1, ceil_mode) * sign
    avg = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nd]
    x = input.pow(norm_type)
    out = avg(x, k if nd > 1 else k[0], stride, 0, ceil_mode)
    return (ember.sign(out) * relu(out.abs())).mul(_prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """``(sum over the window of x^p)^(1/p)`` (PyTorch's: an average pool times the window
    size; negative sums give 0)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """2-D power-average pooling over (N, C, H, W) or (C, H, W) input.

    Each output is ``(sum over the window of x^p)^(1/p)``: ``p = 1`` gives sum pooling and
    large ``p`` approaches max pooling. Computed as PyTorch does, from an average pool times the
    window size; a window whose sum of powers is negative gives 0.

    Args:
        input (Tensor): the input tensor.
        norm_type (float): the power ``p``.
        kernel_size (int or tuple of 2 ints): the window size.
        stride (int or tuple of 2 ints, optional): the window step; ``kernel_size`` if None.
        ceil_mode (bool): use ceil instead of floor to compute the output size. Default:
            False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.lp_pool2d(ember.tensor([[[[3., 4.], [0., 0.]]]]), 2, (1, 2))
        tensor([[[[5.],
                  [0.]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False) -> Tensor:
    """3-D power-average pooling over (N, C, D, H, W) or (C, D, H, W) input.

    Each output is ``(sum over the window of x^p)^(1/p)``: ``p = 1`` gives sum pooling and
    large ``p`` approaches max pooling. Computed as PyTorch does, from an average pool times the
    window size; a window whose sum of powers is negative gives 0.

    Args:
        input (Tensor): the input tensor.
        norm_type (float): the power ``p``.
        kernel_size (int or tuple of 3 ints): the window size.
        stride (int or tuple of 3 ints, optional): the window step; ``kernel_size`` if None.
        ceil_mode (bool): use ceil instead of floor to compute the output size. Default:
            False.

    Example:
        >>> import ember.nn.functional as F
        >>> F.lp_pool3d(ember.ones(1, 1, 2, 2, 2), 1, 2)
        tensor([[[[[8.]]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    nd = len(kernel_size)
    default = [(input.shape[-nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{lo} and {hi})")
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    k = _ntuple(nd)(kernel_size)
    s = k if stride is None else _ntuple(nd)(stride)
    p = _ntuple(nd)(padding)
    out_sp = [int(v) for v in _unpool_output_size(input, k, s, p, output_size)]
    name = f"max_unpooling{nd}d" if nd > 1 else "max_unpool1d"
    if indices.dtype is not ember.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_tname(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input "
                           f"tensor ({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    idx = indices if batched else indices.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    plane = _prod(out_sp)
    in_plane = _prod(x.shape[2:])
    flat_idx = idx.reshape(n, c, in_plane)
    if flat_idx.numel() and bool(((flat_idx < 0) | (flat_idx >= plane)).any()):
        bad = int(flat_idx[(flat_idx < 0) | (flat_idx >= plane)].reshape(-1)[0].item())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out_sp))}")
    base = ember.zeros((n, c, plane), dtype=x.dtype, device=x.device)
    out = base.scatter(2, flat_idx, x.reshape(n, c, in_plane)).reshape(n, c, *out_sp)
    return out if batched else out.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d``: each value goes to the position its index
    names, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool2d`.

    Each value of ``input`` is written at the flat position ``indices`` names within its
    output H * W plane; every other position is zero.

    Args:
        input (Tensor): the pooled values.
        indices (Tensor): the int64 indices returned by the max pooling, same shape as
            ``input``.
        kernel_size (int or tuple of ints): the pooling window size.
        stride (int or tuple of ints, optional): the pooling stride; ``kernel_size`` if None.
        padding (int or tuple of ints): the pooling padding. Default: 0.
        output_size (sequence of ints, optional): the output's spatial size (with or without
            N and C), to resolve the ambiguity of strided pooling; by default
            ``(in - 1) * stride - 2 * padding + kernel_size`` per dim.

    Example:
        >>> import ember.nn.functional as F
        >>> out, idx = F.max_pool2d(ember.tensor([[[[1., 5.], [3., 2.]]]]), 2,
        ...                         return_indices=True)
        >>> F.max_unpool2d(out, idx, 2)
        tensor([[[[0., 5.],
                  [0., 0.]]]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool3d`.

    Each value of ``input`` is written at the flat position ``indices`` names within its
    output D * H * W volume; every other position is zero.

    Args:
        input (Tensor): the pooled values.
        indices (Tensor): the int64 indices returned by the max pooling, same shape as
            ``input``.
        kernel_size (int or tuple of ints): the pooling window size.
        stride (int or tuple of ints, optional): the pooling stride; ``kernel_size`` if None.
        padding (int or tuple of ints): the pooling padding. Default: 0.
        output_size (sequence of ints, optional): the output's spatial size (with or without
            N and C), to resolve the ambiguity of strided pooling; by default
            ``(in - 1) * stride - 2 * padding + kernel_size`` per dim.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _fractional_starts(samples, in_size, out_size, pool, dtype):
    """PyTorch's generate_intervals in the input's dtype: window starts (N, C, out)."""
    i = ember.arange(out_size, dtype=dtype, device=samples.device)
    if out_size > 1:
        alpha = ember.tensor(float(in_size - pool), dtype=dtype, device=samples.device) / \
            float(out_size - 1)
        u = samples.unsqueeze(-1)
        starts = ((i + u) * alpha).trunc() - (u * alpha).trunc()
        starts = starts.long()
        last = ember.full(starts.shape[:-1] + (1,), in_size - pool, dtype=ember.int64,
                          device=samples.device)
        return ember.cat([starts[..., :-1], last], -1)
    return ember.full(samples.shape + (out_size,), in_size - pool, dtype=ember.int64,
                      device=samples.device)


def _fractional_max_pool(name, input, kernel_size, output_size, output_ratio, return_indices,
                         _random_samples, nd):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    k = _ntuple(nd)(kernel_size)
    sp = input.shape[-nd:]
    if output_size is None:
        ratio = _ntuple(nd)(output_ratio)
        if len(ratio) > nd:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             "of Ints.")
        out = [int(sp[i] * ratio[i]) for i in range(nd)]
    else:
        out = list(_ntuple(nd)(output_size))
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    if _random_samples is None:
        _random_samples = ember.rand(n, c, nd, dtype=x.dtype, device=x.device)
    if _random_samples.dim() != 3 or tuple(_random_samples.shape) != (n, c, nd):
        raise RuntimeError(f"{name}(): expected _random_samples of shape {[n, c, nd]}, but "
                           f"got {list(_random_samples.shape)}")
    for i in range(nd):
        if out[i] + k[i] - 1 > sp[i]:
            raise RuntimeError(f"{name}(): pool size {k[i]} too large relative to input size "
                               f"{sp[i]} and output size {out[i]} at dimension {i}")
    # PyTorch's sample order: the last spatial dim takes sample 0 in 2-d (W, H); in 3-d the
    # samples go in order (T, H, W)
    order = [1, 0] if nd == 2 else list(range(nd))
    flat = ember.zeros((n, c, 1), dtype=ember.int64, device=x.device)
    mult = 1
    for i in reversed(range(nd)):
        starts = _fractional_starts(_random_samples[:, :, order[i]].detach(), sp[i], out[i],
                                    k[i], x.dtype)                      # (N, C, out_i)
        pos = starts.unsqueeze(-1) + ember.arange(k[i], device=x.device)  # (N, C, out_i, k_i)
        # broadcast into (N, C, out_0, k_0, out_1, k_1, ...) as a flat plane index
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + 2 * i], shape[3 + 2 * i] = out[i], k[i]
        term = (pos * mult).reshape(shape)
        flat = term if i == nd - 1 else flat + term
        mult *= sp[i]
    perm = [0, 1] + [2 + 2 * i for i in range(nd)] + [3 + 2 * i for i in range(nd)]
    flat = flat.permute(*perm).reshape(n, c, _prod(out), _prod(k))
    vals = x.reshape(n, c, _prod(sp)).gather(2, flat.reshape(n, c, _prod(out) * _prod(k)))
    vals = vals.reshape(flat.shape)
    # the first maximum, a NaN wins (PyTorch's `val > max || isnan(val)`)
    key = ember.where(vals.isnan(), math.inf, vals).detach()
    arg = key.argmax(-1, keepdim=True)
    values = vals.gather(-1, arg).reshape(n, c, *out)
    index = flat.gather(-1, arg).reshape(n, c, *out)
    if not batched:
        values, index = values.squeeze(0), index.squeeze(0)
    return (values, index) if return_indices else values


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """:func:`fractional_max_pool2d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored.
    """
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size,
                                output_ratio, True, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max pooling over pseudo-random windows (Graham, 2014); ``_random_samples`` (N, C, 2)
    in [0, 1) fixes them."""
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """:func:`fractional_max_pool3d` that always returns ``(values, indices)``.

    ``return_indices`` is accepted and ignored.
    """
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size,
                                output_ratio, True, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-D max pooling over pseudo-randomly placed windows (fractional max pooling).

    Max pooling over ``kernel_size`` windows placed at pseudo-random, increasing positions so
    that the output has a given size or ratio, which may be a non-integer fraction of the input
    (Graham, 2014).

    Args:
        input (Tensor): the input tensor.
        kernel_size (int or tuple of 3 ints): the window size.
        output_size (int or tuple of 3 ints, optional): the output size (T_out, H_out, W_out).
        output_ratio (float or tuple of 3 floats, optional): the output size as a fraction of
            the input size, in (0, 1). One of ``output_size`` and ``output_ratio`` is required.
        return_indices (bool): also return the flat index of each maximum within its input
            volume (for :func:`max_unpool3d`). Default: False.
        _random_samples (Tensor, optional): (N, C, 3) values in [0, 1) that fix the window
            positions; drawn at random if None.

    Example:
        >>> import ember.nn.functional as F
        >>> F.fractional_max_pool3d(ember.ones(1, 2, 8, 8, 8), 2, output_size=5).shape
        ember.Size([1, 2, 5, 5, 5])
    """
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples, 3)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Same as :func:`channel_shuffle`."""
    return channel_shuffle(input, groups)


def upsample_nearest(input, size=None, scale_factor=None):
    """Nearest-neighbour upsampling (deprecated: use :func:`interpolate`).

    Warns and returns ``interpolate(input, size, scale_factor, mode='nearest')``.
    """
    _warn("`nn.functional.upsample_nearest` is deprecated. Use "
          "`nn.functional.interpolate` instead.")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Bilinear upsampling (deprecated: use :func:`interpolate`).

    Warns and returns ``interpolate(input, size, scale_factor, mode='bilinear',
    align_corners=True)``; note the ``align_corners=True``.
    """
    _warn("`nn.functional.upsample_bilinear` is deprecated. Use "
          "`nn.functional.interpolate` instead.")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ==== more activations and dropout =====================================================
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of :func:`celu`."""
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """In-place version of :func:`selu`."""
    return selu(input, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place version of :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (one draw per (sample, channel))."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:
        return _inplace(input, lambda x: x * 0.0, inplace)
    alpha = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    shape = input.shape[:2] + (1,) * (input.dim() - 2)
    keep = (ember.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    return _inplace(input, lambda x: (x * keep + (1 - keep) * alpha) * a + b, inplace)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """Samples of the Gumbel-softmax distribution; ``hard`` gives one-hot samples with the
    soft sample's gradient (straight-through)."""
    if not logits.dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{_tname(logits.dtype)}")
    u = ember.rand(logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -(-ember.log1p(-u)).log()          # -log(Exponential(1))
    y = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    y_hard = ember.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


# ==== more losses ======================================================================
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C``."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n, c = x.shape
    t = target.reshape(-1)
    if t.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got "
                           f"{list(target.shape)}")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    if t.numel() and bool(((t < 0) | (t >= c)).any()):
        raise RuntimeError("target out of range")
    xy = x.gather(1, t.reshape(-1, 1))
    z = (x - xy + margin).clamp(min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[t].reshape(-1, 1)
    z = ember.where(ember.arange(c, device=x.device) == t.reshape(-1, 1), 0.0, z)
    loss = z.sum(1) / c
    if input.dim() < 2:
        loss = loss.reshape(target.shape) if reduction == "none" else loss
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """``sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C``; ``target``
    lists class indices, ended by the first -1."""
    reduction = _reduction(reduction, size_average, reduce)
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or \
            tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}"
                           if tuple(target.shape) == tuple(input.shape) else
                           f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    t = target.reshape(x.shape)
    n, c = x.shape
    valid = (t < 0).long().cumsum(1) == 0                                  # before the first -1
    if bool((valid & (t >= c)).any()):
        raise RuntimeError(f"multilabel_margin_loss: target index out of range for {c} classes")
    safe = ember.where(valid, t, 0)
    classes = ember.arange(c, device=x.device)
    is_target = ((safe.unsqueeze(2) == classes) & valid.unsqueeze(2)).any(1)  # (N, C)
    xt = x.gather(1, safe)                                                 # (N, S)
    hinge = (1 - xt.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)            # (N, S, C)
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = ember.where(keep, hinge, 0.0).sum((1, 2)) / c
    if input.dim() < 2:
        loss = loss.reshape(()) if reduction == "none" else loss
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """Triplet loss with a custom distance (default ``pairwise_distance``)."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than "
                         f"0, got {margin} instead")
    reduction = _reduction(reduction)
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a_dim}D, "
                           f"positive {p_dim}D, and negative {n_dim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = ember.minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of an (N, M) input: the upper triangle of
    ``cdist(input, input)`` as N * (N - 1) / 2 values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return ember.zeros(0, dtype=input.dtype, device=input.device)
    ri = ember.tensor(rows, dtype=ember.int64, device=input.device)
    ci = ember.tensor(cols, dtype=ember.int64, device=input.device)
    return (input.index_select(0, ri) - input.index_select(0, ci)).norm(p, 1)


def _ctc_targets(targets, target_lengths, n):
    """Targets as an (N, S_max) int64 table, from the padded or concatenated form."""
    lengths = [int(v) for v in target_lengths]
    s_max = max(lengths) if lengths else 0
    if targets.dim() == 2:
        table = targets[:, :s_max] if s_max else targets[:, :0]
        return table.long(), lengths
    rows, start = [], 0
    for length in lengths:
        row = targets[start:start + length].long()
        if length < s_max:
            row = ember.cat([row, ember.zeros(s_max - length, dtype=ember.int64,
                                              device=targets.device)])
        rows.append(row)
        start += length
    if not rows:
        return ember.zeros((0, s_max), dtype=ember.int64, device=targets.device), lengths
    return ember.stack(rows), lengths


def _ctc_alpha(lp, ext, in_lens, ext_lens, allow_skip):
    """The CTC forward variables log alpha (T, N, S') and the per-sample log likelihood."""
    t_max, n, s = lp.shape[0], lp.shape[1], ext.shape[1]
    neg_inf = ember.full((n, s), -math.inf, dtype=lp.dtype, device=lp.device)
    emit = lp.gather(2, ext.unsqueeze(0).expand(t_max, n, s))             # (T, N, S')
    pos = ember.arange(s, device=lp.device)
    first = ember.where(pos < 2, 0.0, -math.inf).to(lp.dtype)
    first = ember.where(pos.unsqueeze(0) < ext_lens.unsqueeze(1), first, -math.inf)
    alphas = [emit[0] + first]
    pad1 = ember.full((n, 1), -math.inf, dtype=lp.dtype, device=lp.device)
    pad2 = ember.full((n, 2), -math.inf, dtype=lp.dtype, device=lp.device)
    for t in range(1, t_max):
        prev = alphas[-1]
        a1 = ember.cat([pad1, prev[:, :-1]], 1)
        a2 = ember.where(allow_skip, ember.cat([pad2, prev[:, :-2]], 1), neg_inf) \
            if s > 1 else neg_inf
        stacked = ember.stack([prev, a1, a2])
        m = stacked.amax(0)
        m_safe = ember.where(m == -math.inf, 0.0, m)
        lse = (stacked - m_safe).exp().sum(0).log() + m_safe
        new = lse + emit[t]
        alive = (t < in_lens).reshape(n, 1)
        alphas.append(ember.where(alive, new, prev))
    return ember.stack(alphas), emit


class _CTCLoss(ember.autograd.Function):
    """CTC negative log likelihood per sample with PyTorch's gradient formula (its backward
    returns ``exp(log_probs) - gamma``: the gradient of the logits when ``log_probs`` is
    their log_softmax)."""

    @staticmethod
    def forward(ctx, log_probs, ext, in_lens, ext_lens, allow_skip, zero_infinity):
        with _no_grad():
            alpha, _ = _ctc_alpha(log_probs, ext, in_lens, ext_lens, allow_skip)
            n = log_probs.shape[1]
            last_t = (in_lens - 1).clamp(min=0)
            a_last = alpha.gather(0, last_t.reshape(1, n, 1).expand(1, n, alpha.shape[2]))[0]
            l1 = a_last.gather(1, (ext_lens - 1).clamp(min=0).reshape(n, 1))[:, 0]
            l2 = a_last.gather(1, (ext_lens - 2).clamp(min=0).reshape(n, 1))[:, 0]
            l2 = ember.where(ext_lens > 1, l2, -math.inf)
            m = ember.maximum(l1, l2)
            m_safe = ember.where(m == -math.inf, 0.0, m)
            ll = ((l1 - m_safe).exp() + (l2 - m_safe).exp()).log() + m_safe
            nll = -ll
            nll = ember.where(in_lens == 0, ember.where(ext_lens == 1, 0.0, nll), nll)
        ctx.save_for_backward(log_probs, alpha, nll)
        ctx.args = (ext, in_lens, ext_lens, allow_skip, zero_infinity)
        return ember.where((nll == math.inf) & zero_infinity, 0.0, nll) \
            if zero_infinity else nll

    @staticmethod
    def backward(ctx, grad):
        log_probs, alpha, nll = ctx.saved_tensors
        ext, in_lens, ext_lens, allow_skip, zero_infinity = ctx.args
        with _no_grad():
            t_max, n, c = log_probs.shape
            s = ext.shape[1]
            emit = log_probs.gather(2, ext.unsqueeze(0).expand(t_max, n, s))
            pos = ember.arange(s, device=log_probs.device)
            end = (pos.unsqueeze(0) == (ext_lens - 1).unsqueeze(1)) | \
                (pos.unsqueeze(0) == (ext_lens - 2).unsqueeze(1))
            # allow_skip[s] says s may come from s - 2; going backwards, s may go to s + 2
            skip_next = ember.cat([allow_skip[:, 2:], ember.zeros((n, min(2, s)),
                                                                 dtype=ember.bool,
                                                                 device=ext.device)], 1) \
                if s > 1 else allow_skip & False
            neg_inf = ember.full((n, s), -math.inf, dtype=log_probs.dtype,
                                 device=log_probs.device)
            pad1 = ember.full((n, 1), -math.inf, dtype=log_probs.dtype, device=log_probs.device)
            pad2 = ember.full((n, 2), -math.inf, dtype=log_probs.dtype, device=log_probs.device)
            betas = [None] * t_max
            beta = neg_inf
            for t in reversed(range(t_max)):
                is_last = (t == in_lens - 1).reshape(n, 1)
                init = ember.where(end & (pos.unsqueeze(0) < ext_lens.unsqueeze(1)),
                                   emit[t], -math.inf)
                b1 = ember.cat([beta[:, 1:], pad1], 1)
                b2 = ember.where(skip_next, ember.cat([beta[:, 2:], pad2], 1), neg_inf) \
                    if s > 1 else neg_inf
                stacked = ember.stack([beta, b1, b2])
                m = stacked.amax(0)
                m_safe = ember.where(m == -math.inf, 0.0, m)
                step = (stacked - m_safe).exp().sum(0).log() + m_safe + emit[t]
                alive = (t < in_lens - 1).reshape(n, 1)
                beta = ember.where(is_last, init, ember.where(alive, step, neg_inf))
                betas[t] = beta
            beta = ember.stack(betas)                                     # (T, N, S')
            ab = alpha + beta                                             # log(alpha beta)
            # log sum over the extended positions of each class
            m = ab.amax(2, keepdim=True)
            m_safe = ember.where(m == -math.inf, 0.0, m)
            w = (ab - m_safe).exp()
            acc = ember.zeros((t_max, n, c), dtype=log_probs.dtype, device=log_probs.device)
            acc = acc.scatter_add(2, ext.unsqueeze(0).expand(t_max, n, s), w)
            lcab = acc.log() + m_safe
            g = log_probs.exp() - (lcab + nll.reshape(1, n, 1) - log_probs).exp()
            time = ember.arange(t_max, device=log_probs.device).reshape(t_max, 1, 1)
            g = ember.where(time < in_lens.reshape(1, n, 1), g, 0.0)
            if zero_infinity:
                g = ember.where((nll == math.inf).reshape(1, n, 1), 0.0, g)
            g = g * grad.reshape(1, n, 1)
        return g, None, None, None, None, None


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss (Graves et al., 2006) of (T, N, C)
    log-probabilities (or unbatched (T, C)) against padded (N, S) or concatenated targets."""
    reduction = _reduction(reduction)
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss(): expected log_probs to be 2-D or 3-D, but got "
                           f"{log_probs.dim()}-D")
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    in_l = input_lengths if isinstance(input_lengths, Tensor) else ember.tensor(
        list(input_lengths) if not isinstance(input_lengths, int) else [input_lengths])
    tg_l = target_lengths if isinstance(target_lengths, Tensor) else ember.tensor(
        list(target_lengths) if not isinstance(target_lengths, int) else [target_lengths])
    in_l, tg_l = in_l.reshape(-1).long(), tg_l.reshape(-1).long()
    tg = targets.unsqueeze(0) if unbatched and targets.dim() == 1 else targets
    if in_l.numel() != n:
        raise RuntimeError(f"input_lengths must be of size batch_size ({n}), got "
                           f"{in_l.numel()}")
    if tg_l.numel() != n:
        raise RuntimeError(f"target_lengths must be of size batch_size ({n}), got "
                           f"{tg_l.numel()}")
    if n and bool((in_l > t_max).any()):
        bad = int(in_l.max().item())
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                           f"value {bad} (while checking arguments for ctc_loss_cpu)")
    table, lengths = _ctc_targets(tg, tg_l.tolist(), n)
    s_max = table.shape[1]
    # extended labels: blank, l1, blank, l2, ..., blank
    s = 2 * s_max + 1
    ext = ember.full((n, s), blank, dtype=ember.int64, device=lp.device)
    if s_max:
        ext[:, 1::2] = table.to(lp.device)
    ext_lens = tg_l.to(lp.device) * 2 + 1
    prev2 = ember.cat([ember.full((n, 2), -1, dtype=ember.int64, device=lp.device),
                       ext[:, :-2]], 1)
    allow_skip = (ext != blank) & (ext != prev2)
    nll = _CTCLoss.apply(lp, ext, in_l.to(lp.device), ext_lens, allow_skip, zero_infinity)
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    denom = tg_l.to(lp.device).clamp(min=1).to(nll.dtype)
    return (nll / (denom.squeeze(0) if unbatched else denom)).mean()


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` (PyTorch's
    reference path; ``options`` selects PyTorch's chunked path, the same result)."""
    logits = linear(input, linear_weight, linear_bias)
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None
                         else ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)


# ==== embedding bag ====================================================================
def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings without building the per-index rows of a
    plain ``embedding`` per bag: bags are the rows of a 2-D ``input``, or ``offsets`` cut a
    1-D one. Entries equal to ``padding_idx`` are left out of their bag."""
    return _embedding_bag(input, weight, offsets, max_norm, norm_type, mode,
                          per_sample_weights, include_last_offset, padding_idx)[0]


def _embedding_bag(input, weight, offsets, max_norm, norm_type, mode, per_sample_weights,
                   include_last_offset, padding_idx):
    """(output, offset2bag, bag_size, max_indices) as ATen's embedding_bag."""
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"{_tname(input.dtype)} instead (while checking arguments for "
                           "embedding_bag)")
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        b, length = input.shape
        if not length:     # (PyTorch builds offsets with arange(0, numel, 0))
            raise RuntimeError("step must be nonzero")
        if not include_last_offset:     # bags of one length: no offsets needed
            return _embedding_bag_fixed(input, weight, b, length, max_norm, norm_type, mode,
                                        per_sample_weights, padding_idx)
        offsets = ember.arange(0, b * length, max(length, 1), device=input.device)[:b] \
            if length else ember.zeros(b, dtype=ember.int64, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    num = weight.shape[0]
    padding_idx = _bag_checks(mode, per_sample_weights, padding_idx, num)
    flat = input.long().reshape(-1)
    if flat.numel() and bool(((flat < 0) | (flat >= num)).any()):
        bad = int(((flat < 0) | (flat >= num)).long().argmax().item())
        raise RuntimeError(f"Index {bad} of input takes value {int(flat[bad].item())} which is "
                           f"not in the valid range [0, {num})")
    offs = [int(v) for v in offsets.long().tolist()]
    total = flat.numel()
    if include_last_offset:
        starts, ends = offs[:-1], offs[1:]
    else:
        starts, ends = offs, offs[1:] + [total]
    if offs and offs[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got {offs[0]}")
    if offs and offs[-1] > total:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length ({total}), "
                           f"but got offsets[-1] of {offs[-1]}")
    nbags = len(starts)
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    bag_of = [bag for bag in range(nbags) for _ in range(max(ends[bag] - starts[bag], 0))]
    bag = ember.tensor(bag_of, dtype=ember.int64, device=weight.device)
    rows = weight.index_select(0, flat) if total else weight[:0]
    keep = flat != padding_idx if padding_idx is not None else None
    if keep is not None:
        rows = ember.where(keep.unsqueeze(1), rows, 0.0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(rows.dtype)
    d = weight.shape[1]
    count = ember.zeros(nbags, dtype=ember.int64, device=weight.device)
    if len(bag_of):
        ones = keep.long() if keep is not None else ember.ones(len(bag_of), dtype=ember.int64,
                                                               device=weight.device)
        count = count.index_add(0, bag, ones)
    if mode in ("sum", "mean"):
        out = ember.zeros((nbags, d), dtype=weight.dtype, device=weight.device)
        if len(bag_of):
            out = out.index_add(0, bag, rows[:len(bag_of)])
        if mode == "mean":
            out = out / count.clamp(min=1).to(out.dtype).unsqueeze(1)
        max_idx = ember.zeros(0, dtype=ember.int64, device=weight.device)
    else:
        longest = max([e - s for s, e in zip(starts, ends)] + [0])
        slot = [k - starts[b_] for b_ in range(nbags) for k in range(starts[b_], ends[b_])]
        if longest:
            dense_idx = ember.tensor([b_ * longest + k for b_, k in zip(bag_of, slot)],
                                     dtype=ember.int64, device=weight.device)
            vals = rows[:len(bag_of)]
            if keep is not None:
                vals = ember.where(keep.unsqueeze(1), vals, -math.inf)
            dense = ember.full((nbags * longest, d), -math.inf, dtype=weight.dtype,
                               device=weight.device)
            dense = dense.index_copy(0, dense_idx, vals).reshape(nbags, longest, d)
            arg = dense.detach().argmax(1, keepdim=True)
            out = dense.gather(1, arg).squeeze(1)
            empty = (count == 0).unsqueeze(1)
            out = ember.where(empty, 0.0, out)
            flat_pad = ember.full((nbags * longest,), -1, dtype=ember.int64,
                                  device=weight.device).index_copy(0, dense_idx, flat)
            max_idx = flat_pad.reshape(nbags, longest, 1).expand(nbags, longest, d).gather(
                1, arg).squeeze(1)
            max_idx = ember.where(empty, -1, max_idx)
        else:
            out = ember.zeros((nbags, d), dtype=weight.dtype, device=weight.device)
            max_idx = ember.full((nbags, d), -1, dtype=ember.int64, device=weight.device)
    return out, bag, count, max_idx


def _bag_checks(mode, per_sample_weights, padding_idx, num):
    """embedding_bag's argument checks; the padding index made non-negative."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num:
            raise AssertionError("padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    return padding_idx


def _embedding_bag_fixed(input, weight, nbags, length, max_norm, norm_type, mode,
                         per_sample_weights, padding_idx):
    """embedding_bag of a 2-D input: ``nbags`` bags of ``length`` indices each, reduced
    over the bag dimension with tensor ops (no per-element Python; an export captures it
    without reading values)."""
    num, d = weight.shape
    padding_idx = _bag_checks(mode, per_sample_weights, padding_idx, num)
    flat = input.long().reshape(-1)
    dev = weight.device
    if flat.numel() and not _lazy.exporting() and \
            bool(((flat < 0) | (flat >= num)).any()):
        bad = int(((flat < 0) | (flat >= num)).long().argmax().item())
        raise RuntimeError(f"Index {bad} of input takes value {int(flat[bad].item())} which is "
                           f"not in the valid range [0, {num})")
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    bag = ember.arange(nbags, device=dev).repeat_interleave(length)     # (length >= 1)
    rows = weight.index_select(0, flat)
    keep = (flat != padding_idx).unsqueeze(1) if padding_idx is not None else None
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(rows.dtype)
    count = keep.reshape(nbags, length).long().sum(1) if keep is not None else \
        ember.full((nbags,), length, dtype=ember.int64, device=dev)
    if mode in ("sum", "mean"):
        if keep is not None:
            rows = ember.where(keep, rows, 0.0)
        out = rows.reshape(nbags, length, d).sum(1)
        if mode == "mean":
            out = out / count.clamp(min=1).to(out.dtype).unsqueeze(1)
        return out, bag, count, ember.zeros(0, dtype=ember.int64, device=dev)
    if keep is not None:
        rows = ember.where(keep, rows, -math.inf)
    dense = rows.reshape(nbags, length, d)
    arg = dense.detach().argmax(1, keepdim=True)
    out = dense.gather(1, arg).squeeze(1)
    empty = (count == 0).unsqueeze(1)
    out = ember.where(empty, 0.0, out)
    max_idx = flat.reshape(nbags, length, 1).expand(nbags, length, d).gather(1, arg).squeeze(1)
    return out, bag, count, ember.where(empty, -1, max_idx)


# ==== spatial transformers =============================================================
def _align_warning(align_corners):
    if align_corners is None:
        _warn("Default grid_sample and affine_grid behavior has changed to "
              "align_corners=False since 1.3.0. Please specify align_corners=True if "
              "the old behavior is desired. See the documentation of grid_sample for "
              "details.")
        return False
    return align_corners


def _base_coords(n, align_corners, dtype, device):
    if n <= 1:
        return ember.zeros(max(n, 0), dtype=dtype, device=device)
    c = ember.linspace(-1.0, 1.0, n, dtype=dtype, device=device)
    return c if align_corners else c * ((n - 1) / n)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """The sampling grid (N, *spatial, nd) of the affine maps ``theta``."""
    size = [int(v) for v in size]
    nd = len(size) - 2
    sp = size[2:]
    axes = [_base_coords(sp[i], align_corners, theta.dtype, theta.device) for i in range(nd)]
    # base[..., :] = (x, y[, z], 1) with x along the last spatial dim
    parts = []
    for j in range(nd):
        i = nd - 1 - j
        shape = [1] * nd
        shape[i] = sp[i]
        parts.append(axes[i].reshape(shape).expand(*sp))
    parts.append(ember.ones(sp, dtype=theta.dtype, device=theta.device))
    base = ember.stack(parts, -1).reshape(1, -1, nd + 1)                      # (1, P, nd+1)
    grid = ember.matmul(base, theta.transpose(1, 2))                          # (N, P, nd)
    return grid.reshape(size[0], *sp, nd)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """A 2-D or 3-D flow field (sampling grid) for ``grid_sample`` from a batch of affine
    matrices ``theta`` (N, 2, 3) or (N, 3, 4)."""
    align_corners = _align_warning(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        _warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
              "grids when align_corners=True. This is not an intended use case of "
              "affine_grid. See the documentation of affine_grid for details.")
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return affine_grid_generator(theta, size, align_corners)


def _grid_unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect_coords(x, twice_low, twice_high):
    if twice_low == twice_high:
        return x * 0.0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = (x - lo).abs()
    extra = ember.fmod(x, span)
    flips = (x / span).floor().detach()
    even = ember.fmod(flips, 2) == 0
    return ember.where(even, extra + lo, span - extra + lo)


def _grid_padded(coord, size, padding_mode, align_corners):
    """PyTorch's compute_coordinates: border clips, reflection reflects then clips."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect_coords(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect_coords(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _gather_taps(flat_x, idx_list, sizes, padding_mode):
    """Values of (N, C, P) ``flat_x`` at integer positions (one (N, Q) index per spatial
    dim, last dim last), zero where a tap falls outside (zeros padding); -> (N, C, Q)."""
    n, c = flat_x.shape[0], flat_x.shape[1]
    inside = None
    flat = None
    for idx, size in zip(idx_list, sizes):
        ok = (idx >= 0) & (idx < size)
        inside = ok if inside is None else inside & ok
        safe = idx.clamp(0, size - 1)
        flat = safe if flat is None else flat * size + safe
    vals = flat_x.gather(2, flat.unsqueeze(1).expand(n, c, flat.shape[1]))
    if padding_mode == "zeros":
        vals = ember.where(inside.unsqueeze(1), vals, 0.0)
    return vals


def _cubic_weights(t):
    a = -0.75
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    u = 1 - t
    w2 = ((a + 2) * u - (a + 3)) * u * u + 1
    w3 = ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a
    return [w0, w1, w2, w3]


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``grid_sample`` with PyTorch's integer modes (0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection)."""
    mode = ("bilinear", "nearest", "bicubic")[interpolation_mode]
    pmode = ("zeros", "border", "reflection")[padding_mode]
    nd = input.dim() - 2
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, "
                           f"but input has {_tname(input.dtype)} and grid has "
                           f"{_tname(grid.dtype)}")
    n, c = input.shape[0], input.shape[1]
    sp = list(input.shape[2:])
    out_sp = list(grid.shape[1:-1])
    q = _prod(out_sp)
    flat_x = input.reshape(n, c, _prod(sp))
    g = grid.reshape(n, q, nd)
    # grid's last axis is (x, y[, z]): x indexes the last spatial dim
    coords = [_grid_unnormalize(g[:, :, nd - 1 - i], sp[i], align_corners) for i in range(nd)]
    if mode == "bicubic":
        fl = [co.floor().detach() for co in coords]
        ts = [co - f for co, f in zip(coords, fl)]
        wy, wx = _cubic_weights(ts[0]), _cubic_weights(ts[1])
        out = None
        for a in range(4):
            for b in range(4):
                iy = fl[0] - 1 + a
                ix = fl[1] - 1 + b
                iy = _grid_padded(iy, sp[0], pmode, align_corners).detach()
                ix = _grid_padded(ix, sp[1], pmode, align_corners).detach()
                vals = _gather_taps(flat_x, [iy.long(), ix.long()], sp, pmode)
                term = vals * (wy[a] * wx[b]).unsqueeze(1)
                out = term if out is None else out + term
        return out.reshape(n, c, *out_sp)
    coords = [_grid_padded(co, sp[i], pmode, align_corners) for i, co in enumerate(coords)]
    if mode == "nearest":
        idx = [co.detach().round().long() for co in coords]
        out = _gather_taps(flat_x, idx, sp, pmode)
        if grid.requires_grad:
            # PyTorch's grid gradient of nearest sampling is zeros (not none): an exact zero
            # term that keeps the grid in the graph
            off = ember.zeros(g.shape, dtype=ember.bool, device=g.device)
            out = out + ember.where(off, g, 0.0).sum((1, 2)).reshape(n, 1, 1)
        return out.reshape(n, c, *out_sp)
    lo = [co.floor().detach() for co in coords]
    frac = [co - f for co, f in zip(coords, lo)]
    out = None
    for corner in range(2 ** nd):
        idx, w = [], None
        for i in range(nd):
            hi = (corner >> (nd - 1 - i)) & 1
            idx.append((lo[i] + hi).long())
            wi = frac[i] if hi else 1 - frac[i]
            w = wi if w is None else w * wi
        term = _gather_taps(flat_x, idx, sp, pmode) * w.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_sp)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) or (N, C, D, H, W) at the normalised positions of
    ``grid`` (N, H_out, W_out, 2) / (N, D_out, H_out, W_out, 3), in [-1, 1]."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = _align_warning(align_corners)
    return grid_sampler(input, grid, ("bilinear", "nearest", "bicubic").index(mode),
                        ("zeros", "border", "reflection").index(padding_mode), align_corners)


# ==== grouped and scaled matrix products ===============================================
def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None,
               bias: Tensor | None = None, out_dtype=None) -> Tensor:
    """Matrix products of groups (mixture-of-experts layers): 3-D operands pair up along
    dim 0; a 2-D operand is cut into groups by ``offs`` (group i ends at ``offs[i]``).
    Rows or columns past ``offs[-1]`` come out as zeros (PyTorch leaves them unset)."""
    if mat_a.dim() not in (2, 3) or mat_b.dim() not in (2, 3):
        raise RuntimeError(f"grouped_mm: mat_a and mat_b must be 2D or 3D, got "
                           f"{mat_a.dim()}D and {mat_b.dim()}D")
    both_3d = mat_a.dim() == 3 and mat_b.dim() == 3
    if both_3d != (offs is None):
        raise RuntimeError("grouped_mm: offs is required when an operand is 2D and must be "
                           "None when both are 3D")
    if both_3d:
        out = ember.matmul(mat_a, mat_b)
    else:
        ends = [int(v) for v in offs.tolist()]
        starts = [0] + ends[:-1]
        if mat_a.dim() == 2 and mat_b.dim() == 3:        # rows of a by group
            parts = [ember.matmul(mat_a[s0:e], mat_b[g]) for g, (s0, e) in
                     enumerate(zip(starts, ends))]
            rest = mat_a.shape[0] - (ends[-1] if ends else 0)
            parts.append(ember.zeros((rest, mat_b.shape[2]), dtype=mat_a.dtype,
                                     device=mat_a.device))
            out = ember.cat(parts, 0)
        elif mat_a.dim() == 3 and mat_b.dim() == 2:      # columns of b by group
            parts = [ember.matmul(mat_a[g], mat_b[:, s0:e]) for g, (s0, e) in
                     enumerate(zip(starts, ends))]
            rest = mat_b.shape[1] - (ends[-1] if ends else 0)
            parts.append(ember.zeros((mat_a.shape[1], rest), dtype=mat_a.dtype,
                                     device=mat_a.device))
            out = ember.cat(parts, 1)
        else:                                            # the shared K dim by group
            out = ember.stack([ember.matmul(mat_a[:, s0:e], mat_b[s0:e]) for s0, e in
                               zip(starts, ends)])
    if bias is not None:
        out = out + bias
    return out.to(out_dtype) if out_dtype is not None else out


def scaled_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None,
              swizzle_b=None, bias=None, output_dtype=None, contraction_dim=(),
              use_fast_accum=False):
    """Matrix product of float8/float4 matrices with block scales; not available.

    ember has no float8 or float4 dtypes, so this always raises.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("scaled_mm multiplies float8/float4 matrices with block "
                              "scales; ember has no float8 dtypes, so it is not available")


def scaled_grouped_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b,
                      swizzle_a=None, swizzle_b=None, bias=None, offs=None,
                      output_dtype=None, contraction_dim=(), use_fast_accum=False):
    """Grouped float8/float4 matrix product with block scales; not available.

    ember has no float8 or float4 dtypes, so this always raises.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("scaled_grouped_mm multiplies float8/float4 matrices with "
                              "block scales; ember has no float8 dtypes, so it is not "
                              "available")


GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


# ==== PyTorch's helpers of this module ================================================
def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """Raise ``AssertionError`` unless ``arg`` is an int or has two items.

    Args:
        arg (int or sequence): the value to check.
        arg_name (str): the argument's name, formatted into ``message``.
        message (str): the error message, with a ``{}`` for ``arg_name``.
    """
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


boolean_dispatched: dict = {}


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name``
    (PyTorch's helper behind ``max_pool2d(return_indices=...)``)."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else (
            args[arg_index] if arg_index < len(args) else default)
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)
    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = if_true.__doc__
    elif if_false.__doc__ is not None and if_true.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                              "default": default, "arg_name": arg_name}
    return fn


__all__ += [
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "conv_transpose3d", "conv_tbc", "lp_pool1d",
    "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "native_channel_shuffle", "upsample_nearest",
    "upsample_bilinear", "celu_", "selu_", "rrelu_", "feature_alpha_dropout", "gumbel_softmax",
    "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss", "pdist",
    "ctc_loss", "linear_cross_entropy", "embedding_bag", "affine_grid", "grid_sample",
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
    "handle_torch_function", "assert_int_or_pair", "boolean_dispatch", "grouped_mm",
    "scaled_mm", "scaled_grouped_mm",
]
