"""The layers of ``ember.nn``, one file per family (as ``torch.nn.modules``)."""
# ruff: noqa: F401, F403
from . import (activation, adaptive, batchnorm, channelshuffle, container, conv, distance,
               dropout, flatten, fold, instancenorm, lazy, linear, linear_cross_entropy,
               linear_cross_entropy_options, loss, normalization, padding, pixelshuffle,
               pooling, rnn, sparse, transformer, upsampling)
from .module import Module
from .container import *
from .linear import *
from .flatten import *
from .activation import *
from .dropout import *
from .sparse import *
from .normalization import *
from .batchnorm import *
from .instancenorm import *
from .conv import *
from .pooling import *
from .padding import *
from .upsampling import *
from .loss import *
from .rnn import *
from .transformer import *
from .adaptive import *
from .channelshuffle import *
from .distance import *
from .fold import *
from .pixelshuffle import *
from .linear_cross_entropy_options import *
from .lazy import LazyModuleMixin

__all__ = ["Module", "LazyModuleMixin"] + [
    name for m in (container, linear, flatten, activation, dropout, sparse, normalization,
                   batchnorm, instancenorm, conv, pooling, padding, upsampling, loss, rnn,
                   transformer, adaptive, channelshuffle, distance, fold, pixelshuffle,
                   linear_cross_entropy_options)
    for name in m.__all__]
