"""``BatchNorm1d/2d/3d`` (running statistics, ``num_batches_tracked``), their lazy forms
and ``SyncBatchNorm`` (statistics all-reduced over ``ember.distributed``)."""
from __future__ import annotations

import ember
from ember import Tensor

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._functions import SyncBatchNorm as _SyncBatchNormFunction
from .lazy import LazyModuleMixin, UninitializedBuffer, UninitializedParameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Common base of the batch and instance norms: affine parameters and running stats."""
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(ember.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(ember.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, device=device,
                                                             dtype=dtype))
            self.register_buffer("running_var", ember.ones(num_features, device=device,
                                                           dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 ember.tensor(0, dtype=ember.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}".format(
                    **self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked
                                   is not None else ember.tensor(0, dtype=ember.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_buffers else None,
                            self.running_var if use_buffers else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) input.

    >>> import ember, ember.nn as nn
    >>> bn = nn.BatchNorm1d(4)
    >>> _ = bn(ember.randn(8, 4)); int(bn.num_batches_tracked)
    1
    """

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) input."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) input.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with per-channel ``mean`` and
    (biased) ``var`` taken over the batch and the three spatial dimensions in training mode.
    With ``track_running_stats`` the module also keeps running estimates
    ``running = (1 - momentum) * running + momentum * batch_value`` (the running variance
    uses the unbiased estimate) and normalises with them in eval mode; ``momentum=None``
    makes them a cumulative average.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor, or ``None`` for a
            cumulative moving average. Default: 0.1.
        affine (bool): learn a per-channel scale ``weight`` (ones) and shift ``bias`` (zeros).
            Default: True.
        track_running_stats (bool): keep ``running_mean``, ``running_var`` and
            ``num_batches_tracked``; without them batch statistics are used in eval mode too.
            Default: True.
        device: where to create the parameters and buffers.
        dtype: their dtype.

    Shape:
        - Input: (N, C, D, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.BatchNorm3d(3)
        >>> m(ember.randn(2, 3, 4, 4, 4)).shape
        ember.Size([2, 3, 4, 4, 4])
        >>> m = nn.BatchNorm3d(1)
        >>> _ = m(ember.tensor([0.0, 1.0]).reshape(2, 1, 1, 1, 1))
        >>> m.running_mean, m.running_var, int(m.num_batches_tracked)
        (tensor([0.0500]), tensor([0.9500]), 1)
    """

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """``num_features`` from the first input's dim 1."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True) -> None:
        # affine / running stats off here: the uninitialized tensors replace them
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm1d`` whose ``num_features`` is inferred from the first input.

    ``num_features`` is read from dim 1 (the channels) of the first input; the weight, bias
    and running buffers are then created and initialised, and the module becomes a plain
    ``BatchNorm1d``.

    Args:
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor, or ``None`` for a
            cumulative moving average. Default: 0.1.
        affine (bool): learn a per-channel scale and shift. Default: True.
        track_running_stats (bool): keep running statistics for eval mode. Default: True.
        device: where to create the parameters and buffers.
        dtype: their dtype.
        bias (bool, keyword-only): with ``affine``, also learn the shift. Default: True.

    Shape:
        - Input: (N, C) or (N, C, L).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.LazyBatchNorm1d()
        >>> m(ember.randn(4, 3, 5)).shape, m.running_mean.shape, type(m).__name__
        (ember.Size([4, 3, 5]), ember.Size([3]), 'BatchNorm1d')
    """
    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm2d`` whose ``num_features`` is inferred from the first input.

    ``num_features`` is read from dim 1 (the channels) of the first input; the weight, bias
    and running buffers are then created and initialised, and the module becomes a plain
    ``BatchNorm2d``.

    Args:
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor, or ``None`` for a
            cumulative moving average. Default: 0.1.
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
        >>> m = nn.LazyBatchNorm2d()
        >>> m(ember.randn(4, 3, 5, 5)).shape, m.running_mean.shape, type(m).__name__
        (ember.Size([4, 3, 5, 5]), ember.Size([3]), 'BatchNorm2d')
    """
    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm3d`` whose ``num_features`` is inferred from the first input.

    ``num_features`` is read from dim 1 (the channels) of the first input; the weight, bias
    and running buffers are then created and initialised, and the module becomes a plain
    ``BatchNorm3d``.

    Args:
        eps (float): added to the variance for stability. Default: 1e-5.
        momentum (float, optional): the running-statistics update factor, or ``None`` for a
            cumulative moving average. Default: 0.1.
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
        >>> m = nn.LazyBatchNorm3d()
        >>> m(ember.randn(4, 3, 5, 5, 5)).shape, m.running_mean.shape, type(m).__name__
        (ember.Size([4, 3, 5, 5, 5]), ember.Size([3]), 'BatchNorm3d')
    """
    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


def _distributed():
    """``ember.distributed`` when a process group is up, else None (looked up at call time:
    ``ember.distributed`` is an optional part of the package)."""
    dist = getattr(ember, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose training statistics are the whole process group's: the
    per-channel sum, sum of squares and count are all-reduced over ``ember.distributed``
    (and so are the input gradient's sums in backward). Without an initialised process
    group, in eval mode or with one rank, it is ``BatchNorm``.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.affine is not None and self.track_running_stats and \
                self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        running_mean = self.running_mean if not self.training or self.track_running_stats \
            else None
        running_var = self.running_var if not self.training or self.track_running_stats \
            else None
        dist = _distributed() if bn_training and self.training else None
        group = self.process_group
        if dist is not None and dist.get_world_size(group) <= 1:
            dist = None
        if dist is None:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, group, dist)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every ``BatchNorm*D`` layer replaced by a ``SyncBatchNorm`` that
        shares its parameters and buffers."""
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                module.affine, module.track_running_stats, process_group)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out
