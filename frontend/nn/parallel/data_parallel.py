"""``DataParallel`` on a machine without several accelerators of one kind: it runs the
wrapped module on its inputs, as PyTorch's does when CUDA is not available (use
``DistributedDataParallel`` for data-parallel training over processes)."""
from __future__ import annotations

from ... import accelerator
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module``; ``forward`` calls it (``self.module`` holds it, so state dict keys
    gain the ``module.`` prefix as in PyTorch).

    >>> import ember, ember.nn as nn
    >>> nn.DataParallel(nn.Linear(3, 2))(ember.randn(4, 3)).shape
    ember.Size([4, 2])
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """``module(*inputs, **module_kwargs)`` (the functional ``DataParallel``). Unlike the
    ``DataParallel`` module, it needs an accelerator: without one it raises ``RuntimeError``,
    as PyTorch's does.

    >>> import ember, ember.nn as nn
    >>> try:
    ...     y = nn.parallel.data_parallel(nn.Linear(3, 2), ember.randn(4, 3))
    ... except RuntimeError:  # no accelerator: the module form runs on the CPU
    ...     y = nn.DataParallel(nn.Linear(3, 2))(ember.randn(4, 3))
    >>> y.shape
    ember.Size([4, 2])
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not accelerator.is_available():
        raise RuntimeError("data_parallel: device type could not be determined (no accelerator "
                           "is available; the DataParallel module runs on the CPU)")
    return module(*inputs, **(module_kwargs or {}))
