"""``ember.distributed.fsdp``: fully sharded data parallelism (``torch.distributed.fsdp``)
is not in ember. The names packages import from it exist so that they load (opacus checks
``isinstance(module, FSDPModule)``): ``fully_shard`` raises ``NotImplementedError``, so no
module is ever an ``FSDPModule``; ``MixedPrecisionPolicy`` is PyTorch's settings record.

Spread training over processes with ``ember.nn.parallel.DistributedDataParallel``, and shard
optimizer state with ``ember.distributed.optim.ZeroRedundancyOptimizer``.

>>> import ember
>>> from ember.distributed.fsdp import FSDPModule
>>> isinstance(ember.nn.Linear(2, 2), FSDPModule)
False
"""
from __future__ import annotations

from dataclasses import dataclass

from ember.dispatcher.dtypes import DType

__all__ = ["FSDPModule", "MixedPrecisionPolicy", "fully_shard"]


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """The dtypes FSDP would use: for the unsharded parameters in forward and backward
    (``param_dtype``), for the gradient reduction (``reduce_dtype``), for the forward
    outputs (``output_dtype``), and whether floating inputs are cast to ``param_dtype``.

    Example:
        >>> from ember.distributed.fsdp import MixedPrecisionPolicy
        >>> MixedPrecisionPolicy(param_dtype=ember.bfloat16).cast_forward_inputs
        True
    """
    param_dtype: DType | None = None
    reduce_dtype: DType | None = None
    output_dtype: DType | None = None
    cast_forward_inputs: bool = True


class FSDPModule:
    """The class ``fully_shard`` mixes into the modules it shards. ember shards none (see
    :func:`fully_shard`), so no module is an instance.

    Example:
        >>> from ember.distributed.fsdp import FSDPModule
        >>> isinstance(ember.nn.Linear(1, 1), FSDPModule)
        False
    """


def fully_shard(module, **kwargs):
    """Raise NotImplementedError: ember has no fully sharded data parallelism.

    Example:
        >>> from ember.distributed.fsdp import fully_shard
        >>> try:
        ...     fully_shard(ember.nn.Linear(2, 2))
        ... except NotImplementedError as e:
        ...     print(str(e).split(":")[0])
        fully_shard
    """
    raise NotImplementedError(
        f"fully_shard: ember has no fully sharded data parallelism (FSDP) to shard "
        f"{type(module).__name__} with; use ember.nn.parallel.DistributedDataParallel, and "
        "ember.distributed.optim.ZeroRedundancyOptimizer to shard optimizer state")
