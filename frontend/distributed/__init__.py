"""``ember.distributed``: collectives on tensors over MPI (mpi4py), PyTorch's API.

Launch N processes with ``python -m ember.distributed.run -n N script.py`` (a thin
wrapper around ``mpiexec``), then in the script::

    import ember.distributed as dist
    dist.init_process_group(backend="mpi")
    t = ember.ones(4) * dist.get_rank()
    dist.all_reduce(t)                     # in place, sum over ranks

CPU tensors are handed to MPI as buffers without a copy (non-contiguous ones go through
a contiguous staging copy); tensors of other devices are staged through the host.
``async_op=True`` returns a :class:`Work` whose ``wait()`` completes the operation.

Every collective first exchanges a small descriptor (op, shape, dtype) so that ranks
calling mismatched collectives get a clear error instead of a hang or corrupted data
(``EMBER_DIST_CHECKS=0`` skips it), and every wait has a timeout (``timeout=`` of
``init_process_group``, default 300 s): a rank that never arrives produces a
``RuntimeError`` naming the operation.

A rank that fails ends the whole job within seconds (see ``_lifecycle``): Open MPI ends it
when a rank is killed or exits non-zero without finalizing; an uncaught exception prints
its traceback and calls ``MPI_Abort``; a rank that leaves early (returns, ``sys.exit``)
tells the others, and a rank waiting for it raises ``RuntimeError`` instead of waiting out
the timeout.
"""
from __future__ import annotations

from ._core import (ReduceOp, Work, ProcessGroup, all_gather, all_gather_into_tensor,
                    all_reduce, barrier, broadcast, destroy_process_group, gather,
                    get_backend, get_rank, get_world_size, init_process_group,
                    is_available, is_initialized, irecv, isend, new_group, recv,
                    reduce, reduce_scatter, reduce_scatter_tensor, scatter, send)

__all__ = ["ReduceOp", "Work", "ProcessGroup", "all_gather", "all_gather_into_tensor",
           "all_reduce", "barrier", "broadcast", "destroy_process_group", "gather",
           "get_backend", "get_rank", "get_world_size", "init_process_group", "is_available",
           "is_initialized", "irecv", "isend", "new_group", "recv", "reduce",
           "reduce_scatter", "reduce_scatter_tensor", "scatter", "send"]
