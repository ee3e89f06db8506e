"""``ember.distributed.tensor``: the name ``DTensor`` (``torch.distributed.tensor``), which
packages written for PyTorch test parameters against (opacus: ``type(p) is DTensor``).

ember has no distributed tensors (a tensor sharded or replicated over a ``DeviceMesh``, with
placements), so no ember tensor is a ``DTensor`` and making one raises
``NotImplementedError``. Shard a model over processes with
``ember.nn.parallel.DistributedDataParallel`` or ``ember.distributed.optim`` instead.

>>> import ember
>>> from ember.distributed.tensor import DTensor
>>> isinstance(ember.ones(2), DTensor)
False
"""
from __future__ import annotations

from .._tensor import Tensor
from ..overrides import _disabled_torch_function_impl
from ._mesh import DeviceMesh, init_device_mesh

__all__ = ["DTensor", "DeviceMesh", "init_device_mesh"]


class DTensor(Tensor):
    """PyTorch's distributed tensor type. ember has none: constructing one raises
    ``NotImplementedError``; the class exists for ``isinstance``/``type`` checks.

    Example:
        >>> from ember.distributed.tensor import DTensor
        >>> try:
        ...     DTensor()
        ... except NotImplementedError as e:
        ...     print(str(e).split(":")[0])
        ember.distributed.tensor.DTensor
    """
    # (no __torch_function__ of its own: defining the class arms no dispatch)
    __torch_function__ = classmethod(_disabled_torch_function_impl)

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(
            "ember.distributed.tensor.DTensor: ember has no distributed tensors (sharded or "
            "replicated over a DeviceMesh); use DistributedDataParallel or "
            "ember.distributed.optim to spread training over processes")
