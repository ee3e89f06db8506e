"""``InstanceNorm1d/2d/3d`` and their lazy forms: each (sample, channel) plane normalised
over its spatial dims."""
from __future__ import annotations


from ember import Tensor

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase
from ember.dispatcher.warn import warn as _warn

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    _no_batch_dim = 0

    def _check_input_dim(self, input):
        nd = self._no_batch_dim
        if input.dim() not in (nd, nd + 1):
            raise ValueError(f"expected {nd}D or {nd + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(feature_dim)}.")
            _warn(f"input's size at dim={feature_dim} does not match num_features. "
                  "You can silence this warning by not passing in num_features, "
                  "which is not used because affine=False")
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation: every channel of every sample is normalised over its
    length alone.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with ``mean`` and the biased
    ``var`` computed per (sample, channel) plane, and ``weight`` / ``bias`` learnable
    per-channel parameters when ``affine``. With ``track_running_stats`` running estimates of
    the statistics are kept during training (updated as
    ``running = (1 - momentum) * running + momentum * batch_value``) and used in eval mode;
    by default the statistics of the input itself are used in both modes.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor. Default: 0.1.
        affine (bool): learn a per-channel scale and shift. Default: False.
        track_running_stats (bool): keep running statistics for eval mode. Default: False.
        device: where to create the parameters and buffers.
        dtype: their dtype.
        bias (bool, keyword-only): with ``affine``, also learn the shift. Default: True.

    Shape:
        - Input: (N, C, L) or (C, L).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.InstanceNorm1d(2)
        >>> m(ember.tensor([[[1.0, 3.0], [2.0, 2.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [ 0.0000,  0.0000]]])
    """
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation: every channel of every sample is normalised over its
    height and width alone.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with ``mean`` and the biased
    ``var`` computed per (sample, channel) plane, and ``weight`` / ``bias`` learnable
    per-channel parameters when ``affine``. With ``track_running_stats`` running estimates of
    the statistics are kept during training (updated as
    ``running = (1 - momentum) * running + momentum * batch_value``) and used in eval mode;
    by default the statistics of the input itself are used in both modes.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor. Default: 0.1.
        affine (bool): learn a per-channel scale and shift. Default: False.
        track_running_stats (bool): keep running statistics for eval mode. Default: False.
        device: where to create the parameters and buffers.
        dtype: their dtype.
        bias (bool, keyword-only): with ``affine``, also learn the shift. Default: True.

    Shape:
        - Input: (N, C, H, W) or (C, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.InstanceNorm2d(3, affine=True)
        >>> y = m(ember.randn(4, 3, 8, 8))
        >>> y.shape, m.weight.shape
        (ember.Size([4, 3, 8, 8]), ember.Size([3]))
        >>> bool(y.mean(dim=(2, 3)).abs().max() < 1e-5)
        True
    """
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation: every channel of every sample is normalised over its
    depth, height and width alone.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with ``mean`` and the biased
    ``var`` computed per (sample, channel) plane, and ``weight`` / ``bias`` learnable
    per-channel parameters when ``affine``. With ``track_running_stats`` running estimates of
    the statistics are kept during training (updated as
    ``running = (1 - momentum) * running + momentum * batch_value``) and used in eval mode;
    by default the statistics of the input itself are used in both modes.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor. Default: 0.1.
        affine (bool): learn a per-channel scale and shift. Default: False.
        track_running_stats (bool): keep running statistics for eval mode. Default: False.
        device: where to create the parameters and buffers.
        dtype: their dtype.
        bias (bool, keyword-only): with ``affine``, also learn the shift. Default: True.

    Shape:
        - Input: (N, C, D, H, W) or (C, D, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> nn.InstanceNorm3d(3)(ember.randn(2, 3, 4, 5, 6)).shape
        ember.Size([2, 3, 4, 5, 6])
    """
    _no_batch_dim = 4


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm1d`` whose ``num_features`` is inferred from the first input (its
    defaults are the lazy base's, ``affine=True, track_running_stats=True``, as
    PyTorch's)."""
    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm2d`` whose ``num_features`` is inferred from the first input.

    ``num_features`` is read from dim 1 of the first input, which must therefore be
    batched; the parameters and running buffers are then created and the module becomes a
    plain ``InstanceNorm2d``. As in PyTorch, the lazy form defaults to
    ``affine=True`` and ``track_running_stats=True``, unlike ``InstanceNorm2d``.

    Args:
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor. Default: 0.1.
        affine (bool): learn a per-channel scale and shift. Default: True.
        track_running_stats (bool): keep running statistics for eval mode. Default: True.
        device: where to create the parameters and buffers.
        dtype: their dtype.
        bias (bool, keyword-only): with ``affine``, also learn the shift. Default: True.

    Shape:
        - Input: (N, C, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyInstanceNorm2d()
        >>> y = m(ember.randn(2, 3, 4, 4))
        >>> y.shape, m.num_features, type(m).__name__
        (ember.Size([2, 3, 4, 4]), 3, 'InstanceNorm2d')
    """
    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An ``InstanceNorm3d`` whose ``num_features`` is inferred from the first input.

    ``num_features`` is read from dim 1 of the first input, which must therefore be
    batched; the parameters and running buffers are then created and the module becomes a
    plain ``InstanceNorm3d``. As in PyTorch, the lazy form defaults to
    ``affine=True`` and ``track_running_stats=True``, unlike ``InstanceNorm3d``.

    Args:
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor. Default: 0.1.
        affine (bool): learn a per-channel scale and shift. Default: True.
        track_running_stats (bool): keep running statistics for eval mode. Default: True.
        device: where to create the parameters and buffers.
        dtype: their dtype.
        bias (bool, keyword-only): with ``affine``, also learn the shift. Default: True.

    Shape:
        - Input: (N, C, D, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyInstanceNorm3d()
        >>> y = m(ember.randn(2, 3, 4, 4, 4))
        >>> y.shape, m.num_features, type(m).__name__
        (ember.Size([2, 3, 4, 4, 4]), 3, 'InstanceNorm3d')
    """
    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4
