"""Dropout layers: active in training mode, identity in eval mode."""
from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training, scaling the rest by 1/(1-p)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of 1-D feature maps at random during training.

    Each channel of each sample (a length-``L`` row of (N, C, L) input) is zeroed with
    probability ``p``, independently; the kept channels are scaled by ``1 / (1 - p)``. In
    eval mode the module is the identity.

    Args:
        p (float): the probability of zeroing a channel. Default: 0.5.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (N, C, L) or (C, L).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.Dropout1d(p=0.5)
        >>> y = m(ember.ones(4, 3, 5))
        >>> set(y.unique().tolist()) <= {0.0, 2.0}, bool((y.amax(2) == y.amin(2)).all())
        (True, True)
        >>> m.eval()(ember.ones(1, 2, 3))
        tensor([[[1., 1., 1.],
                 [1., 1., 1.]]])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of 3-D feature maps at random during training.

    Each channel of each sample (a (D, H, W) volume) is zeroed with probability ``p``,
    independently; the kept channels are scaled by ``1 / (1 - p)``. In eval mode the module is
    the identity.

    Args:
        p (float): the probability of zeroing a channel. Default: 0.5.
        inplace (bool): write the result into the input. Default: False.

    Shape:
        - Input: (N, C, D, H, W) or (C, D, H, W).
        - Output: the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.Dropout3d(p=0.2)
        >>> y = m(ember.ones(2, 8, 3, 4, 5))
        >>> y.shape, set(y.unique().tolist()) <= {0.0, 1.25}
        (ember.Size([2, 8, 3, 4, 5]), True)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for self-normalising (SELU) networks: keeps zero mean and unit variance.

    During training each element is dropped with probability ``p`` and set to SELU's
    negative saturation value ``-scale * alpha ~= -1.7581`` rather than zero; the output
    then gets an affine correction chosen so that a standard-normal input keeps mean 0 and
    variance 1. In eval mode the module is the identity.

    Args:
        p (float): the probability of dropping an element. Default: 0.5.
        inplace (bool): accepted for signature compatibility; not used. Default: False.

    Shape:
        - Input: (*), any number of dimensions.
        - Output: (*), the shape of the input.

    Example:
        >>> import ember.nn as nn
        >>> m = nn.AlphaDropout(p=0.2)
        >>> m(ember.randn(16, 32)).shape
        ember.Size([16, 32])
        >>> m.eval()(ember.tensor([1.0, -1.0]))
        tensor([ 1., -1.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (SELU networks)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
