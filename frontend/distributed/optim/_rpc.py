"""``DistributedOptimizer``: PyTorch's optimizer of parameters held by remote workers over
RPC, which ember does not have."""
from __future__ import annotations

from typing import Any

__all__ = ["DistributedOptimizer"]


class DistributedOptimizer:
    """PyTorch's ``DistributedOptimizer``: takes ``RRef``\\ s to parameters living on other
    workers (``torch.distributed.rpc``) and steps an ``optimizer_class`` on each worker with
    the gradients of a distributed autograd context.

    ember has no RPC framework, so constructing one raises ``NotImplementedError``. With
    every rank holding the model, :class:`ZeroRedundancyOptimizer` (state sharded across
    ranks) or a plain optimizer after ``DistributedDataParallel`` does the job instead.

    Args:
        optimizer_class (type): the optimizer to create on each worker.
        params_rref (list): ``RRef``\\ s to the parameters to optimize.
        *args: the optimizer's other positional arguments.
        **kwargs: its keyword arguments.
    """

    def __init__(self, optimizer_class: type, params_rref: list, *args: Any, **kwargs: Any):
        raise NotImplementedError(
            "DistributedOptimizer needs torch.distributed.rpc (remote parameters and "
            "distributed autograd), and ember has no RPC framework; use "
            "ZeroRedundancyOptimizer, or an ordinary optimizer after "
            "DistributedDataParallel, on every rank instead")
