"""``ember.nn``: layers, containers, losses, ``functional`` and ``init`` with PyTorch's
names and semantics, so PyTorch code ports by changing the import.

>>> import ember, ember.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> model(ember.randn(2, 4)).shape
ember.Size([2, 3])
>>> list(model.state_dict())
['0.weight', '0.bias', '2.weight', '2.bias']
"""
# ruff: noqa: F401, F403
from .parameter import Parameter, Buffer
from .modules import *
from .modules.module import Module
from .modules.lazy import UninitializedBuffer, UninitializedParameter
from .parallel.data_parallel import DataParallel
from . import functional, init, utils, parameter, modules, parallel


def factory_kwargs(kwargs):
    """``kwargs``' factory arguments (device, dtype, memory_format, and those of a
    ``factory_kwargs`` entry) as one dict; anything else is a TypeError (PyTorch's
    ``torch.nn.factory_kwargs``)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
