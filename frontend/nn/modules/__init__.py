"""The layers of ``ember.nn``, one file per family (as ``torch.nn.modules``)."""
# ruff: noqa: F401, F403
from . import (activation, batchnorm, container, conv, dropout, flatten, linear, loss,
               normalization, padding, pooling, rnn, sparse, transformer, upsampling)
from .module import Module
from .container import *
from .linear import *
from .flatten import *
from .activation import *
from .dropout import *
from .sparse import *
from .normalization import *
from .batchnorm import *
from .conv import *
from .pooling import *
from .padding import *
from .upsampling import *
from .loss import *
from .rnn import *
from .transformer import *

__all__ = ["Module"] + [name for m in (container, linear, flatten, activation, dropout, sparse,
                                       normalization, batchnorm, conv, pooling, padding,
                                       upsampling, loss, rnn, transformer)
                        for name in m.__all__]
