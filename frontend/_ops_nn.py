"""ember's top-level functions and Tensor methods: nn (see frontend/__init__.py).

PyTorch's ``torch.<name>`` forms of the neural-network functions (``torch.conv2d``,
``torch.batch_norm``, ``torch.embedding``, ``torch.ctc_loss``, ...) with their ATen
signatures: positional flags such as ``cudnn_enabled``, losses' integer ``reduction``
(0 none, 1 mean, 2 sum), ``embedding(weight, indices)`` and the tuple results of the
``native_*`` and ``*_with_indices`` forms. Each computes with ``ember.nn.functional``,
looked up when called (this module is imported while ``ember`` itself is).

>>> import ember
>>> ember.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2)).tolist()
[[[2.0, 2.0, 2.0]]]
>>> round(ember.kl_div(ember.zeros(2), ember.full((2,), 0.5), 2).item(), 4)
-0.6931
"""
from __future__ import annotations


import ember

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "conv_tbc", "avg_pool1d", "max_pool1d", "max_pool2d", "max_pool3d",
    "max_pool1d_with_indices", "adaptive_avg_pool1d", "adaptive_max_pool1d", "batch_norm",
    "native_batch_norm", "layer_norm", "native_layer_norm", "group_norm", "native_group_norm",
    "instance_norm", "rms_norm", "dropout", "dropout_", "alpha_dropout", "alpha_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_",
    "native_dropout", "embedding", "embedding_bag", "embedding_renorm_", "bilinear", "celu",
    "celu_", "selu", "selu_", "prelu", "rrelu", "rrelu_", "relu_", "threshold", "threshold_",
    "hardshrink", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "pairwise_distance", "cosine_similarity", "pdist", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "poisson_nll_loss", "binary_cross_entropy_with_logits", "ctc_loss",
    "constant_pad_nd", "affine_grid_generator", "grid_sampler", "grid_sampler_2d",
    "grid_sampler_3d", "native_norm", "norm_except_dim", "rnn_tanh_cell", "rnn_relu_cell",
    "lstm_cell", "gru_cell", "batch_norm_update_stats", "rnn_tanh", "rnn_relu", "lstm", "gru",
]


def _F():
    """``ember.nn.functional`` (set up after this module: looked up at call time)."""
    return ember.nn.functional


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction) -> str:
    """ATen's integer reduction (PyTorch's torch.* loss forms) as a string."""
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _reduce(loss, reduction):
    return _F()._reduce(loss, _reduction(reduction))


# ---- convolution and pooling -----------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C_in, L) or (C_in, L) input.

    Same as :func:`ember.nn.functional.conv1d` (the ``torch.conv1d`` form).

    Args:
        input (Tensor): the input, batched (N, C_in, *spatial) or unbatched (C_in, *spatial).
        weight (Tensor): the filters, (C_out, C_in / groups, *kernel).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the stride. Default: 1.
        padding (int, tuple of ints or str): zero padding on both sides, or 'valid' / 'same'.
            Default: 0.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.
        groups (int): the number of channel groups. Default: 1.

    Example:
        >>> ember.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2))
        tensor([[[2., 2., 2.]]])
    """
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) input.

    Same as :func:`ember.nn.functional.conv2d` (the ``torch.conv2d`` form).

    Args:
        input (Tensor): the input, batched (N, C_in, *spatial) or unbatched (C_in, *spatial).
        weight (Tensor): the filters, (C_out, C_in / groups, *kernel).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the stride. Default: 1.
        padding (int, tuple of ints or str): zero padding on both sides, or 'valid' / 'same'.
            Default: 0.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.
        groups (int): the number of channel groups. Default: 1.

    Example:
        >>> ember.conv2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 2, 2))
        tensor([[[[4., 4.],
                  [4., 4.]]]])
    """
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) input.

    Same as :func:`ember.nn.functional.conv3d` (the ``torch.conv3d`` form).

    Args:
        input (Tensor): the input, batched (N, C_in, *spatial) or unbatched (C_in, *spatial).
        weight (Tensor): the filters, (C_out, C_in / groups, *kernel).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the stride. Default: 1.
        padding (int, tuple of ints or str): zero padding on both sides, or 'valid' / 'same'.
            Default: 0.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.
        groups (int): the number of channel groups. Default: 1.
    """
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-D convolution.

    Same as :func:`ember.nn.functional.conv_transpose1d` (the ``torch.conv_transpose1d`` form).

    Args:
        input (Tensor): the input, batched (N, C_in, *spatial) or unbatched (C_in, *spatial).
        weight (Tensor): the filters, (C_in, C_out / groups, *kernel).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the stride. Default: 1.
        padding (int or tuple of ints): removed from both sides of the output. Default: 0.
        output_padding (int or tuple of ints): extra size on one side of the output.
            Default: 0.
        groups (int): the number of channel groups. Default: 1.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.

    Example:
        >>> ember.conv_transpose1d(ember.ones(1, 1, 3), ember.ones(1, 1, 2))
        tensor([[[1., 2., 2., 1.]]])
    """
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-D convolution.

    Same as :func:`ember.nn.functional.conv_transpose2d` (the ``torch.conv_transpose2d`` form).

    Args:
        input (Tensor): the input, batched (N, C_in, *spatial) or unbatched (C_in, *spatial).
        weight (Tensor): the filters, (C_in, C_out / groups, *kernel).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the stride. Default: 1.
        padding (int or tuple of ints): removed from both sides of the output. Default: 0.
        output_padding (int or tuple of ints): extra size on one side of the output.
            Default: 0.
        groups (int): the number of channel groups. Default: 1.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.
    """
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 3-D convolution.

    Same as :func:`ember.nn.functional.conv_transpose3d` (the ``torch.conv_transpose3d`` form).

    Args:
        input (Tensor): the input, batched (N, C_in, *spatial) or unbatched (C_in, *spatial).
        weight (Tensor): the filters, (C_in, C_out / groups, *kernel).
        bias (Tensor, optional): a bias of shape (C_out,). Default: None.
        stride (int or tuple of ints): the stride. Default: 1.
        padding (int or tuple of ints): removed from both sides of the output. Default: 0.
        output_padding (int or tuple of ints): extra size on one side of the output.
            Default: 0.
        groups (int): the number of channel groups. Default: 1.
        dilation (int or tuple of ints): the spacing between kernel elements. Default: 1.
    """
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The general convolution (1 to 3 spatial dims; ``transposed`` for the transposed
    form), as ``torch.convolution``."""
    nd = weight.dim() - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution(): expected a 3-D to 5-D weight, got "
                           f"{weight.dim()}-D")
    f = _F()
    if transposed:
        fn = (f.conv_transpose1d, f.conv_transpose2d, f.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (f.conv1d, f.conv2d, f.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over time-batch-channel input.

    Same as :func:`ember.nn.functional.conv_tbc` (the ``torch.conv_tbc`` form).

    Args:
        input (Tensor): input of shape (T, B, C_in).
        weight (Tensor): filters of shape (K, C_in, C_out).
        bias (Tensor): a bias of shape (C_out,).
        pad (int): zero padding on both ends of the time axis. Default: 0.

    Example:
        >>> ember.conv_tbc(ember.ones(4, 1, 1), ember.ones(2, 1, 1), ember.zeros(1)).shape
        ember.Size([3, 1, 1])
    """
    return _F().conv_tbc(input, weight, bias, pad)


def _stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling.

    Same as :func:`ember.nn.functional.avg_pool1d` (the ``torch.avg_pool1d`` form).
    An empty ``stride`` (the default ``()``) means ``stride = kernel_size``.

    Args:
        input (Tensor): input of shape (N, C, L) or (C, L).
        kernel_size (int or tuple of one int): the window size.
        stride (int or tuple of ints): the window step. Default: () (``kernel_size``).
        padding (int or tuple of one int): zero padding on both sides. Default: 0.
        ceil_mode (bool): use ceil to compute the output length. Default: False.
        count_include_pad (bool): count padding zeros in the divisor. Default: True.

    Example:
        >>> ember.avg_pool1d(ember.tensor([[[1., 2., 3., 4.]]]), 2)
        tensor([[[1.5000, 3.5000]]])
    """
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-D max pooling.

    Same as :func:`ember.nn.functional.max_pool1d` (the ``torch.max_pool1d`` form).
    An empty ``stride`` (the default ``()``) means ``stride = kernel_size``.

    Args:
        input (Tensor): the input, (N, C, *spatial) or (C, *spatial).
        kernel_size (int or tuple of ints): the window size.
        stride (int or tuple of ints): the window step. Default: () (``kernel_size``).
        padding (int or tuple of ints): implicit -inf padding on both sides. Default: 0.
        dilation (int or tuple of ints): the spacing between window elements. Default: 1.
        ceil_mode (bool): use ceil to compute the output size. Default: False.

    Example:
        >>> ember.max_pool1d(ember.tensor([[[1., 3., 2., 4.]]]), 2)
        tensor([[[3., 4.]]])
    """
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling.

    Same as :func:`ember.nn.functional.max_pool2d` (the ``torch.max_pool2d`` form).
    An empty ``stride`` (the default ``()``) means ``stride = kernel_size``.

    Args:
        input (Tensor): the input, (N, C, *spatial) or (C, *spatial).
        kernel_size (int or tuple of ints): the window size.
        stride (int or tuple of ints): the window step. Default: () (``kernel_size``).
        padding (int or tuple of ints): implicit -inf padding on both sides. Default: 0.
        dilation (int or tuple of ints): the spacing between window elements. Default: 1.
        ceil_mode (bool): use ceil to compute the output size. Default: False.
    """
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling.

    Same as :func:`ember.nn.functional.max_pool3d` (the ``torch.max_pool3d`` form).
    An empty ``stride`` (the default ``()``) means ``stride = kernel_size``.

    Args:
        input (Tensor): the input, (N, C, *spatial) or (C, *spatial).
        kernel_size (int or tuple of ints): the window size.
        stride (int or tuple of ints): the window step. Default: () (``kernel_size``).
        padding (int or tuple of ints): implicit -inf padding on both sides. Default: 0.
        dilation (int or tuple of ints): the spacing between window elements. Default: 1.
        ceil_mode (bool): use ceil to compute the output size. Default: False.
    """
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """1-D max pooling returning ``(values, indices)``.

    See :func:`ember.nn.functional.max_pool1d_with_indices`; an empty ``stride`` (the default
    ``()``) means ``stride = kernel_size``.

    Example:
        >>> ember.max_pool1d_with_indices(ember.tensor([[[1., 3., 2., 4.]]]), 2)
        (tensor([[[3., 4.]]]), tensor([[[1, 3]]]))
    """
    return _F().max_pool1d_with_indices(input, kernel_size, _stride(stride), padding,
                                        dilation, ceil_mode)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of (N, C, L) or (C, L) input to ``output_size`` values.

    Same as :func:`ember.nn.functional.adaptive_avg_pool1d` (the ``torch`` form).

    Example:
        >>> ember.adaptive_avg_pool1d(ember.tensor([[[1., 2., 3., 4.]]]), 1)
        tensor([[[2.5000]]])
    """
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``(values, indices)``, as ``torch.adaptive_max_pool1d``."""
    return _F().adaptive_max_pool1d_with_indices(input, output_size)


# ---- normalisation -----------------------------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled=True):
    """Batch normalization with ATen's argument order (``torch.batch_norm``).

    Computes :func:`ember.nn.functional.batch_norm`, whose argument order differs: here
    ``weight`` and ``bias`` come before the running statistics, and ``training``,
    ``momentum`` and ``eps`` are required.

    Args:
        input (Tensor): input of shape (N, C, *).
        weight (Tensor, optional): the per-channel scale, (C,).
        bias (Tensor, optional): the per-channel shift, (C,).
        running_mean (Tensor, optional): the running mean, (C,); updated in place when
            ``training``.
        running_var (Tensor, optional): the running (unbiased) variance, (C,); updated in
            place when ``training``.
        training (bool): normalise with the batch statistics (else the running ones).
        momentum (float): the weight of the new statistics in the running update.
        eps (float): added to the variance for stability.
        cudnn_enabled (bool): accepted for compatibility and ignored. Default: True.

    Example:
        >>> x = ember.tensor([[1.], [3.]])
        >>> ember.batch_norm(x, None, None, None, None, True, 0.1, 0.0)
        tensor([[-1.],
                [ 1.]])
    """
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """``(output, save_mean, save_invstd)``; the saved statistics are empty in eval mode."""
    out = _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                          eps)
    if not training:
        empty = ember.zeros(0, dtype=input.dtype, device=input.device)
        return out, empty, empty
    dims = [0] + list(range(2, input.dim()))
    with ember.no_grad():
        x = input.detach()
        mean = x.mean(dims)
        invstd = ember.rsqrt(x.var(dims, correction=0) + eps)
    return out, mean, invstd


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """Per-channel ``(mean, biased var)`` of ``input`` (N, C, *); the running statistics
    move toward them in place (with the unbiased variance)."""
    dims = [0] + list(range(2, input.dim()))
    with ember.no_grad():
        x = input.detach()
        mean = x.mean(dims)
        var = x.var(dims, correction=0)
        n = input.numel() // input.shape[1] if input.shape[1] else 0
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(var * (momentum * n / max(n - 1, 1)))
    return mean, var


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Same as :func:`ember.nn.functional.layer_norm` (the ``torch.layer_norm`` form).

    ``cudnn_enable`` is accepted for compatibility and ignored.

    Example:
        >>> ember.layer_norm(ember.tensor([[1., 3.]]), [2])
        tensor([[-1.0000,  1.0000]])
    """
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(output, mean, rstd)``; the statistics keep the normalised dims as size 1."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    out = _F().layer_norm(input, ns, weight, bias, eps)
    dims = tuple(range(input.dim() - len(ns), input.dim()))
    with ember.no_grad():
        x = input.detach()
        mean = x.mean(dims, keepdim=True)
        rstd = ember.rsqrt(x.var(dims, correction=0, keepdim=True) + eps)
    return out, mean, rstd


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Same as :func:`ember.nn.functional.group_norm` (the ``torch.group_norm`` form).

    ``cudnn_enabled`` is accepted for compatibility and ignored.
    """
    return _F().group_norm(input, num_groups, weight, bias, eps)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(output, mean, rstd)`` with (N, group) statistics."""
    out = _F().group_norm(input, group, weight, bias, eps)
    with ember.no_grad():
        x = input.detach().reshape(N, group, -1)
        mean = x.mean(2)
        rstd = ember.rsqrt(x.var(2, correction=0) + eps)
    return out, mean, rstd


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled=True):
    """Instance normalization with ATen's argument order (``torch.instance_norm``).

    Computes :func:`ember.nn.functional.instance_norm`, whose argument order differs: here
    ``weight`` and ``bias`` come first and every argument up to ``eps`` is required.

    Args:
        input (Tensor): input of shape (N, C, *).
        weight (Tensor, optional): the per-channel scale, (C,).
        bias (Tensor, optional): the per-channel shift, (C,).
        running_mean (Tensor, optional): the running mean, (C,).
        running_var (Tensor, optional): the running variance, (C,).
        use_input_stats (bool): normalise with each instance's statistics (else the running
            ones).
        momentum (float): the weight of the new statistics in the running update.
        eps (float): added to the variance for stability.
        cudnn_enabled (bool): accepted for compatibility and ignored. Default: True.
    """
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Same as :func:`ember.nn.functional.rms_norm` (the ``torch.rms_norm`` form).

    Example:
        >>> ember.rms_norm(ember.tensor([[3., 4.]]), [2], eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    return _F().rms_norm(input, normalized_shape, weight, eps)


# ---- dropout -----------------------------------------------------------------------------
def dropout(input, p, train):
    """Dropout with a required ``train`` flag (``torch.dropout``).

    Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)`` when
    ``train``; returns ``input`` otherwise. See :func:`ember.nn.functional.dropout`.

    Example:
        >>> ember.dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    """In-place version of :func:`ember.dropout`."""
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """Alpha dropout with a required ``train`` flag (``torch.alpha_dropout``).

    See :func:`ember.nn.functional.alpha_dropout`.
    """
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """In-place version of :func:`ember.alpha_dropout`."""
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """Channel-wise alpha dropout with a required ``train`` flag.

    The ``torch.feature_alpha_dropout`` form of
    :func:`ember.nn.functional.feature_alpha_dropout`.
    """
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """In-place version of :func:`ember.feature_alpha_dropout`."""
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train, inplace):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _F()._feature_dropout(input, p, train, inplace, True)


def feature_dropout(input, p, train):
    """Dropout of whole channels (dims 0 and 1 keep their own draw)."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature_dropout(input, p, train, True)


def native_dropout(input, p, train):
    """``(output, mask)``: the kept positions as a bool mask (all True when not training)."""
    if train is False or (train is None and not ember.is_grad_enabled()):
        return input.clone(), ember.ones(input.shape, dtype=ember.bool, device=input.device)
    if p == 1:
        return input * 0.0, ember.zeros(input.shape, dtype=ember.bool, device=input.device)
    keep = ember.rand(input.shape, device=input.device) >= p
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    return input * keep.to(input.dtype) * scale, keep


# ---- embedding ---------------------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding``: weight first, ``padding_idx=-1`` for none."""
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)`` with the integer ``mode`` (0 sum,
    1 mean, 2 max)."""
    name = {0: "sum", 1: "mean", 2: "max"}[mode] if not isinstance(mode, str) else mode
    return _F()._embedding_bag(indices, weight, offsets, None, 2.0, name, per_sample_weights,
                               include_last_offset, padding_idx)


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows ``indices`` names whose ``norm_type`` norm exceeds
    ``max_norm``."""
    _F()._embedding_renorm_(weight, indices.reshape(-1), max_norm, norm_type)
    return weight


def bilinear(input1, input2, weight, bias=None):
    """Same as :func:`ember.nn.functional.bilinear` (the ``torch.bilinear`` form).

    Example:
        >>> ember.bilinear(ember.ones(1, 2), ember.ones(1, 3), ember.ones(4, 2, 3)).shape
        ember.Size([1, 4])
    """
    return _F().bilinear(input1, input2, weight, bias)


# ---- activations -------------------------------------------------------------------------
def celu(input, alpha=1.0):
    """Same as :func:`ember.nn.functional.celu` (the ``torch.celu`` form).

    Example:
        >>> ember.celu(ember.tensor([-1., 1.]))
        tensor([-0.6321,  1.0000])
    """
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place version of :func:`ember.celu`."""
    return _F().celu(input, alpha, inplace=True)


def selu(input):
    """Same as :func:`ember.nn.functional.selu` (the ``torch.selu`` form).

    Example:
        >>> ember.selu(ember.tensor([-1., 1.]))
        tensor([-1.1113,  1.0507])
    """
    return _F().selu(input)


def selu_(input):
    """In-place version of :func:`ember.selu`."""
    return _F().selu(input, inplace=True)


def prelu(input, weight):
    """Same as :func:`ember.nn.functional.prelu` (the ``torch.prelu`` form).

    Example:
        >>> ember.prelu(ember.tensor([-2., 2.]), ember.tensor([0.25]))
        tensor([-0.5000,  2.0000])
    """
    return _F().prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Same as :func:`ember.nn.functional.rrelu` (the ``torch.rrelu`` form).

    ``generator`` is accepted for compatibility and ignored (the slopes come from
    ember's global generator).
    """
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """In-place version of :func:`ember.rrelu`."""
    return _F().rrelu(input, lower, upper, training, inplace=True)


def relu_(input):
    return _F().relu(input, inplace=True)


def threshold(input, threshold, value):
    """Same as :func:`ember.nn.functional.threshold` (the ``torch.threshold`` form).

    Example:
        >>> ember.threshold(ember.tensor([0.5, 1.5]), 1.0, -1.0)
        tensor([-1.0000,  1.5000])
    """
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place version of :func:`ember.threshold`."""
    return _F().threshold(input, threshold, value, inplace=True)


def hardshrink(input, lambd=0.5):
    """Same as :func:`ember.nn.functional.hardshrink` (the ``torch.hardshrink`` form).

    Example:
        >>> ember.hardshrink(ember.tensor([-1., 0.2, 0.8]))
        tensor([-1.0000,  0.0000,  0.8000])
    """
    return _F().hardshrink(input, lambd)


# ---- shuffles and distances ----------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """Same as :func:`ember.nn.functional.pixel_shuffle` (the ``torch.pixel_shuffle`` form).

    Example:
        >>> ember.pixel_shuffle(ember.ones(1, 8, 2, 3), 2).shape
        ember.Size([1, 2, 4, 6])
    """
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """Same as :func:`ember.nn.functional.pixel_unshuffle` (the ``torch.pixel_unshuffle`` form).

    Example:
        >>> ember.pixel_unshuffle(ember.ones(1, 2, 4, 6), 2).shape
        ember.Size([1, 8, 2, 3])
    """
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """Same as :func:`ember.nn.functional.channel_shuffle` (the ``torch.channel_shuffle`` form).

    Example:
        >>> ember.channel_shuffle(ember.arange(4.).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    return _F().channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """Same as :func:`ember.channel_shuffle`."""
    return _F().channel_shuffle(input, groups)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """Same as :func:`ember.nn.functional.pairwise_distance` (the ``torch.pairwise_distance`` form).

    Example:
        >>> ember.pairwise_distance(ember.tensor([[0., 0.]]), ember.tensor([[3., 4.]]), eps=0.0)
        tensor([5.])
    """
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Same as :func:`ember.nn.functional.cosine_similarity` (the ``torch.cosine_similarity`` form).

    Example:
        >>> ember.cosine_similarity(ember.tensor([[1., 0.]]), ember.tensor([[1., 1.]]))
        tensor([0.7071])
    """
    return _F().cosine_similarity(x1, x2, dim, eps)


def pdist(input, p=2):
    """Same as :func:`ember.nn.functional.pdist` (the ``torch.pdist`` form).

    Example:
        >>> ember.pdist(ember.tensor([[0., 0.], [3., 4.], [6., 8.]]))
        tensor([ 5., 10.,  5.])
    """
    return _F().pdist(input, p)


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The p-norm of ``input``, over all elements or over ``dim`` (``torch.native_norm``).

    PyTorch implements this only for sparse tensors; ember computes it for dense ones too.

    Args:
        input (Tensor): the input tensor.
        p (float): the norm degree. Default: 2.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): cast ``input`` to this dtype first.

    Example:
        >>> ember.native_norm(ember.tensor([3., 4.]))
        tensor(5.)
    """
    x = input.to(dtype) if dtype is not None else input
    return x.norm(p) if dim is None else x.norm(p, dim, keepdim=keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm over every dim but ``dim`` (sizes kept as 1); ``dim=-1``: the whole
    tensor's norm."""
    if dim == -1:
        return v.norm(pow)
    dims = tuple(d for d in range(v.dim()) if d != dim % v.dim())
    return v.norm(pow, dims, keepdim=True) if dims else v.abs()


# ---- losses (integer reductions) -----------------------------------------------------
def kl_div(input, target, reduction=0, *, log_target=False):
    """``torch.kl_div``: 'mean' (1) averages over every element, without F.kl_div's
    warning. The reductions of these torch.* forms default to 0 ('none'), as PyTorch's
    Python bindings read them."""
    loss = _F().kl_div(input, target, reduction="none", log_target=log_target)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """:func:`ember.nn.functional.margin_ranking_loss` with an integer reduction.

    Args:
        input1 (Tensor): the first scores.
        input2 (Tensor): the second scores.
        target (Tensor): the labels (1 or -1).
        margin (float): the required gap. Default: 0.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum' (a string is accepted too).
            Default: 0 ('none'), as PyTorch's ``torch.*`` forms.

    Example:
        >>> ember.margin_ranking_loss(ember.tensor([1., 2.]), ember.tensor([2., 1.]),
        ...                           ember.tensor([1., 1.]))
        tensor([1., 0.])
    """
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """:func:`ember.nn.functional.hinge_embedding_loss` with an integer reduction.

    Args:
        input (Tensor): the inputs.
        target (Tensor): the labels (1 or -1).
        margin (float): the margin for the -1 labels. Default: 1.0.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum' (a string is accepted too).
            Default: 0 ('none'), as PyTorch's ``torch.*`` forms.
    """
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """:func:`ember.nn.functional.cosine_embedding_loss` with an integer reduction.

    Args:
        input1 (Tensor): the first embeddings.
        input2 (Tensor): the second embeddings.
        target (Tensor): the labels (1 or -1).
        margin (float): the margin for the -1 labels. Default: 0.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum' (a string is accepted too).
            Default: 0 ('none'), as PyTorch's ``torch.*`` forms.
    """
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=0):
    """:func:`ember.nn.functional.triplet_margin_loss` with an integer reduction.

    Args:
        anchor (Tensor): the anchors.
        positive (Tensor): the positive samples.
        negative (Tensor): the negative samples.
        margin (float): the required gap. Default: 1.0.
        p (float): the norm degree of the distance. Default: 2.
        eps (float): added to the differences. Default: 1e-6.
        swap (bool): use the distance swap. Default: False.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum' (a string is accepted too).
            Default: 0 ('none'), as PyTorch's ``torch.*`` forms.
    """
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """:func:`ember.nn.functional.poisson_nll_loss` with every argument required.

    Args:
        input (Tensor): the (log) rates.
        target (Tensor): the observed counts.
        log_input (bool): ``input`` holds log rates.
        full (bool): add the Stirling term.
        eps (float): added to ``input`` before the log when not ``log_input``.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum'.

    Example:
        >>> ember.poisson_nll_loss(ember.tensor([0.]), ember.tensor([1.]), True, False, 1e-8, 0)
        tensor([1.])
    """
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=0):
    """Binary cross entropy on logits, with an integer reduction.

    The ``torch.*`` form of :func:`ember.nn.functional.binary_cross_entropy_with_logits`.

    Args:
        input (Tensor): the logits.
        target (Tensor): the targets in [0, 1], of the same shape.
        weight (Tensor, optional): a weight broadcast over the per-element losses.
        pos_weight (Tensor, optional): the weight of the positive class, broadcast along the
            last dim.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum' (a string is accepted too).
            Default: 0 ('none'), as PyTorch's ``torch.*`` forms.

    Example:
        >>> ember.binary_cross_entropy_with_logits(ember.tensor([0.]), ember.tensor([1.]))
        tensor([0.6931])
    """
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """:func:`ember.nn.functional.ctc_loss` with an integer reduction.

    Args:
        log_probs (Tensor): log-probabilities of shape (T, N, C) or (T, C).
        targets (Tensor): padded (N, S) or concatenated target indices.
        input_lengths (sequence of ints or Tensor): the length of each input, (N,).
        target_lengths (sequence of ints or Tensor): the length of each target, (N,).
        blank (int): the blank label. Default: 0.
        reduction (int or str): 0 'none', 1 'mean', 2 'sum' (a string is accepted too).
            Default: 0 ('none'), as PyTorch's ``torch.*`` forms. 'mean' divides
            each loss by its target length (at least 1), then averages over the batch.
        zero_infinity (bool): replace infinite losses (and their gradients) by zero.
            Default: False.
    """
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _reduction(reduction), zero_infinity)


# ---- padding and spatial transformers ------------------------------------------------
def constant_pad_nd(input, pad, value=0):
    """Pad ``input`` with the constant ``value`` (``torch.constant_pad_nd``).

    ``pad`` lists (before, after) pairs starting from the last dimension; negative values
    crop. Same as ``ember.nn.functional.pad(input, pad, 'constant', value)``.

    Example:
        >>> ember.constant_pad_nd(ember.tensor([1., 2.]), [1, 2], 9.)
        tensor([9., 1., 2., 9., 9.])
    """
    return _F().pad(input, pad, "constant", value)


def affine_grid_generator(theta, size, align_corners):
    """Sampling grid of the affine maps ``theta`` (``torch.affine_grid_generator``).

    See :func:`ember.nn.functional.affine_grid`; here ``align_corners`` is required, and
    ``theta`` and ``size`` are not checked.
    """
    return _F().affine_grid_generator(theta, size, align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`ember.nn.functional.grid_sample` with integer modes (``torch.grid_sampler``).

    Args:
        input (Tensor): input of shape (N, C, H, W) or (N, C, D, H, W).
        grid (Tensor): sampling positions in [-1, 1], (N, H_out, W_out, 2) or
            (N, D_out, H_out, W_out, 3).
        interpolation_mode (int): 0 bilinear, 1 nearest, 2 bicubic.
        padding_mode (int): 0 zeros, 1 border, 2 reflection.
        align_corners (bool): -1 and 1 name the centres (True) or the outer edges (False) of
            the corner pixels.
    """
    return _F().grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`ember.grid_sampler` for 4-D input only.

    Args:
        input (Tensor): input of shape (N, C, H, W) or (N, C, D, H, W).
        grid (Tensor): sampling positions in [-1, 1], (N, H_out, W_out, 2) or
            (N, D_out, H_out, W_out, 3).
        interpolation_mode (int): 0 bilinear, 1 nearest, 2 bicubic.
        padding_mode (int): 0 zeros, 1 border, 2 reflection.
        align_corners (bool): -1 and 1 name the centres (True) or the outer edges (False) of
            the corner pixels.
    """
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, got {input.dim()}D")
    return _F().grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`ember.grid_sampler` for 5-D input only.

    Args:
        input (Tensor): input of shape (N, C, H, W) or (N, C, D, H, W).
        grid (Tensor): sampling positions in [-1, 1], (N, H_out, W_out, 2) or
            (N, D_out, H_out, W_out, 3).
        interpolation_mode (int): 0 bilinear, 1 nearest, 2 bicubic.
        padding_mode (int): 0 zeros, 1 border, 2 reflection.
        align_corners (bool): -1 and 1 name the centres (True) or the outer edges (False) of
            the corner pixels.
    """
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, got {input.dim()}D")
    return _F().grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


# ---- recurrent cells ---------------------------------------------------------------------
def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    f = _F()
    return f.linear(input, w_ih, b_ih), f.linear(hx, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``: one step of an Elman RNN."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return ember.tanh(gi + gh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``: one step of an Elman RNN.

    Args:
        input (Tensor): the input, (N, input_size) or (input_size,).
        hx (Tensor): the hidden state, (N, hidden_size) or (hidden_size,).
        w_ih (Tensor): the input weights, (hidden_size, input_size).
        w_hh (Tensor): the hidden weights, (hidden_size, hidden_size).
        b_ih (Tensor, optional): the input bias, (hidden_size,).
        b_hh (Tensor, optional): the hidden bias, (hidden_size,).

    Example:
        >>> ember.rnn_relu_cell(ember.ones(1, 2), ember.zeros(1, 1), ember.ones(1, 2),
        ...                     ember.ones(1, 1))
        tensor([[2.]])
    """
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _F().relu(gi + gh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: ``hx = (h, c)`` -> ``(h', c')`` (gates i, f, g, o)."""
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    c_new = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    return ember.sigmoid(o) * ember.tanh(c_new), c_new


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gates r, z, n; the reset gate scales the hidden part of n)."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = ember.sigmoid(i_r + h_r)
    z = ember.sigmoid(i_z + h_z)
    n = ember.tanh(i_n + r * h_n)
    return n + z * (hx - n)


def _run_layers(kind, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first):
    """The multi-layer, optionally bidirectional recurrence of ``torch.lstm`` & co. over
    (T, N, *) input (unbatched (T, *) too); ``params`` per layer and direction:
    w_ih, w_hh[, b_ih, b_hh][, w_hr (LSTM projections)]."""
    dirs = 2 if bidirectional else 1
    n_per = len(params) // (num_layers * dirs)
    unbatched = input.dim() == 2
    x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if batch_first else input)
    if kind == "lstm":
        h0, c0 = hx
        if unbatched:
            h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
    else:
        h0, c0 = (hx.unsqueeze(1) if unbatched else hx), None
    step = {"rnn_tanh": rnn_tanh_cell, "rnn_relu": rnn_relu_cell, "gru": gru_cell}.get(kind)
    last_h, last_c = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * n_per
            p = params[k:k + n_per]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            w_hr = p[4 if has_biases else 2] if n_per in (3, 5) else None
            h = h0[layer * dirs + d]
            c = c0[layer * dirs + d] if c0 is not None else None
            seq = []
            times = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            for t in times:
                if kind == "lstm":
                    h, c = lstm_cell(x[t], (h, c), w_ih, w_hh, b_ih, b_hh)
                    if w_hr is not None:
                        h = _F().linear(h, w_hr)
                else:
                    h = step(x[t], h, w_ih, w_hh, b_ih, b_hh)
                seq.append(h)
            if d:
                seq.reverse()
            outs.append(ember.stack(seq))
            last_h.append(h)
            last_c.append(c)
        x = ember.cat(outs, -1) if dirs == 2 else outs[0]
        if dropout and train and layer < num_layers - 1:
            x = _F().dropout(x, dropout, True)
    out = x.squeeze(1) if unbatched else (x.transpose(0, 1) if batch_first else x)
    h_n = ember.stack(last_h)
    h_n = h_n.squeeze(1) if unbatched else h_n
    if kind != "lstm":
        return out, h_n
    c_n = ember.stack(last_c)
    return out, h_n, c_n.squeeze(1) if unbatched else c_n


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    """``(output, h_n)`` of a multi-layer Elman RNN (``torch.rnn_tanh``)."""
    return _run_layers("rnn_tanh", input, hx, params, has_biases, num_layers, dropout, train,
                       bidirectional, batch_first)


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    """``(output, h_n)`` of a multi-layer Elman RNN with ReLU (``torch.rnn_relu``).

    Args:
        input (Tensor): the sequence, (T, N, input_size) (``batch_first``: (N, T, input_size))
            or unbatched (T, input_size).
        hx (Tensor): the initial hidden state, (num_layers * num_directions, N, hidden_size).
        params (sequence of Tensors): per layer and direction: ``w_ih, w_hh`` and, with
            ``has_biases``, ``b_ih, b_hh``.
        has_biases (bool): whether ``params`` include the biases.
        num_layers (int): the number of stacked layers.
        dropout (float): the dropout probability between layers (when ``train``).
        train (bool): training mode (enables the dropout).
        bidirectional (bool): also run each layer backwards and concatenate the outputs.
        batch_first (bool): ``input`` and ``output`` are batch-major.
    """
    return _run_layers("rnn_relu", input, hx, params, has_biases, num_layers, dropout, train,
                       bidirectional, batch_first)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first):
    """``(output, h_n, c_n)`` of a multi-layer LSTM (``torch.lstm``; ``hx = (h_0, c_0)``)."""
    return _run_layers("lstm", input, tuple(hx), params, has_biases, num_layers, dropout,
                       train, bidirectional, batch_first)


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first):
    """``(output, h_n)`` of a multi-layer GRU (``torch.gru``).

    The gate weights are stacked in the order r, z, n, as in :class:`ember.nn.GRU`.

    Args:
        input (Tensor): the sequence, (T, N, input_size) (``batch_first``: (N, T, input_size))
            or unbatched (T, input_size).
        hx (Tensor): the initial hidden state, (num_layers * num_directions, N, hidden_size).
        params (sequence of Tensors): per layer and direction: ``w_ih, w_hh`` and, with
            ``has_biases``, ``b_ih, b_hh``.
        has_biases (bool): whether ``params`` include the biases.
        num_layers (int): the number of stacked layers.
        dropout (float): the dropout probability between layers (when ``train``).
        train (bool): training mode (enables the dropout).
        bidirectional (bool): also run each layer backwards and concatenate the outputs.
        batch_first (bool): ``input`` and ``output`` are batch-major.
    """
    return _run_layers("gru", input, hx, params, has_biases, num_layers, dropout, train,
                       bidirectional, batch_first)


def _tensor_prelu(self, weight):
    """See :func:`ember.prelu`."""
    return prelu(self, weight)


def _tensor_hardshrink(self, lambd=0.5):
    """See :func:`ember.hardshrink`."""
    return hardshrink(self, lambd)


TENSOR_METHODS: dict = {"prelu": _tensor_prelu, "hardshrink": _tensor_hardshrink,
                        "relu_": relu_}

