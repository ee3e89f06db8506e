"""``ChannelShuffle``: interleave the channels of ``groups`` groups (ShuffleNet)."""
from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """(N, g * c, *) viewed as (N, g, c, *), transposed to (N, c, g, *) and flattened back.

    >>> import ember, ember.nn as nn
    >>> nn.ChannelShuffle(2)(ember.arange(4.).reshape(1, 4, 1)).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
