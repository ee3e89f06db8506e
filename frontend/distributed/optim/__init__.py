"""``ember.distributed.optim``: PyTorch's ``torch.distributed.optim``.

:class:`ZeroRedundancyOptimizer` shards an optimizer's state across the ranks (each rank
updates its share of the parameters, then broadcasts it); :class:`PostLocalSGDOptimizer`
follows a local optimizer with model averaging; :func:`as_functional_optim` gives an
optimizer stepped with gradients passed in. :class:`DistributedOptimizer` is PyTorch's
RPC-based optimizer, which ember cannot build (it has no RPC).

Example (run with ``python -m ember.distributed.run -n 2 script.py``)::

    import ember, ember.distributed as dist
    from ember.distributed.optim import ZeroRedundancyOptimizer

    dist.init_process_group("mpi")
    model = ember.nn.Linear(4, 4)
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=ember.optim.AdamW,
                                  lr=1e-3)
    model(ember.randn(2, 4)).sum().backward()   # (average the gradients first: DDP)
    opt.step()                                   # each rank keeps half of AdamW's state
"""
from __future__ import annotations

from ._functional import as_functional_optim
from ._post_local_sgd import PostLocalSGDOptimizer
from ._rpc import DistributedOptimizer
from ._zero import ZeroRedundancyOptimizer

__all__ = ["as_functional_optim", "DistributedOptimizer", "PostLocalSGDOptimizer",
           "ZeroRedundancyOptimizer"]
