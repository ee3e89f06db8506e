"""``ember.nn``: layers, containers, losses, ``functional`` and ``init`` with PyTorch's
names and semantics, so PyTorch code ports by changing the import.

>>> import ember, ember.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> model(ember.randn(2, 4)).shape
(2, 3)
>>> list(model.state_dict())
['0.weight', '0.bias', '2.weight', '2.bias']
"""
# ruff: noqa: F401, F403
from .parameter import Parameter, Buffer
from .modules import *
from .modules.module import Module
from . import functional, init, utils, parameter, modules, parallel
