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
``DistBackendError`` (a ``RuntimeError``) naming the operation.

PyTorch's backend names ``"gloo"``, ``"nccl"`` and ``"ucc"`` run over MPI too (see
``init_process_group``). Besides the tensor collectives (``_core``; ``all_to_all`` and
batched point-to-point in ``_exchange``) there are the object collectives (``_objects``,
pickle-based: unpickling executes code, so only exchange objects with trusted ranks),
ranks and subgroups (``_groups``), backend names, launch environment, debug level and error
classes (``_backend``) and in-process key-value stores (``_store``).

A rank that fails ends the whole job within seconds (see ``_lifecycle``): Open MPI ends it
when a rank is killed or exits non-zero without finalizing; an uncaught exception prints
its traceback and calls ``MPI_Abort``; a rank that leaves early (returns, ``sys.exit``)
tells the others, and a rank waiting for it raises ``RuntimeError`` instead of waiting out
the timeout.
"""
from __future__ import annotations

from datetime import timedelta

from ._backend import (Backend, DebugLevel, DistBackendError, DistError, DistNetworkError,
                       DistStoreError, QueueEmptyError, get_debug_level,
                       get_default_backend_for_device, get_node_local_rank,
                       is_backend_available, is_gloo_available, is_mpi_available,
                       is_nccl_available, is_torchelastic_launched, is_ucc_available,
                       is_xccl_available, set_debug_level, set_debug_level_from_env,
                       supports_complex)
from ._core import (GroupMember, ProcessGroup, ReduceOp, Work, all_gather,
                    all_gather_into_tensor, all_reduce, barrier, broadcast,
                    destroy_process_group, gather, get_backend, get_rank, get_world_size,
                    group, init_process_group, irecv, is_available, is_initialized, isend,
                    new_group, recv, reduce, reduce_scatter, reduce_scatter_tensor, scatter,
                    send)
from ._exchange import P2POp, all_to_all, all_to_all_single, batch_isend_irecv
from ._groups import (get_global_rank, get_group_rank, get_pg_count, get_process_group_ranks,
                      monitored_barrier, new_subgroups, new_subgroups_by_enumeration)
from ._mesh import DeviceMesh, init_device_mesh
from ._objects import (all_gather_object, broadcast_object_list, gather_object,
                       recv_object_list, scatter_object_list, send_object_list)
from ._store import FileStore, HashStore, PrefixStore, Store, TCPStore

#: the default timeout of collectives (``init_process_group(timeout=)`` sets another)
default_pg_timeout = timedelta(seconds=300)

__all__ = [
    # process groups
    "init_process_group", "destroy_process_group", "is_available", "is_initialized",
    "get_rank", "get_world_size", "get_backend", "new_group", "new_subgroups",
    "new_subgroups_by_enumeration", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_pg_count", "group", "GroupMember", "ProcessGroup",
    "Work", "default_pg_timeout",
    # collectives on tensors
    "ReduceOp", "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "barrier", "monitored_barrier", "supports_complex",
    # point to point
    "send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv",
    # collectives on objects
    "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
    "send_object_list", "recv_object_list",
    # backends, launch environment, debugging, errors
    "Backend", "is_mpi_available", "is_gloo_available", "is_nccl_available",
    "is_ucc_available", "is_xccl_available", "is_backend_available",
    "get_default_backend_for_device", "is_torchelastic_launched", "get_node_local_rank",
    "DebugLevel", "get_debug_level", "set_debug_level", "set_debug_level_from_env",
    "DistError", "DistBackendError", "DistNetworkError", "DistStoreError", "QueueEmptyError",
    # key-value stores, device meshes
    "Store", "HashStore", "PrefixStore", "FileStore", "TCPStore", "DeviceMesh",
    "init_device_mesh",
]
