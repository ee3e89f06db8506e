"""``ember.distributed.nn``: PyTorch's ``torch.distributed.nn``.

The collectives that autograd differentiates live in :mod:`ember.distributed.nn.functional`
and are re-exported here (``from torch.distributed import nn; nn.all_reduce(x)``).
``RemoteModule`` is PyTorch's RPC-based module, which ember cannot build (it has no RPC).

Example (run with ``python -m ember.distributed.run -n 2 script.py``)::

    import ember, ember.distributed as dist
    from ember.distributed.nn import all_gather

    dist.init_process_group("mpi")
    x = ember.randn(4, requires_grad=True)
    everyone = ember.cat(all_gather(x))      # every rank's x, differentiably
    everyone.square().sum().backward()       # x.grad == 2 * x * world_size
"""
from __future__ import annotations

from . import functional
from ._remote_module import RemoteModule
from .functional import (all_gather, all_reduce, all_to_all, all_to_all_single, broadcast,
                         gather, reduce, reduce_scatter, scatter)

__all__ = ["functional", "broadcast", "gather", "scatter", "reduce", "reduce_scatter",
           "all_gather", "all_to_all", "all_to_all_single", "all_reduce", "RemoteModule"]
