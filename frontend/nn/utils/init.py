"""``nn.utils.skip_init``: build a module without paying for its initialisation.

PyTorch builds the module on the ``meta`` device and then allocates uninitialised
storage with ``to_empty``. ember has no meta device, so the module is built directly on
the target device and its initialisation runs: the result satisfies the same contract
(parameter values are unspecified and must be set by the caller), it only costs the
initialisation time PyTorch saves.

>>> import ember.nn as nn
>>> m = nn.utils.skip_init(nn.Linear, 5, 1)
>>> m.weight.shape
ember.Size([1, 5])
"""
from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """An instance of ``module_cls(*args, **kwargs)`` whose parameter values are
    unspecified. The class must accept a ``device`` argument, as PyTorch requires."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs)
