"""Collectives on picklable Python objects (PyTorch's ``*_object`` functions).

Each object is pickled into bytes, the byte counts are exchanged first and then the bytes
themselves, with MPI's variable-count collectives (``MPI_Allgatherv``, ``MPI_Gatherv``,
``MPI_Scatterv``; ``MPI_Bcast`` and point-to-point messages), under the same descriptor
check and timeout as the tensor collectives. The output lists are filled in place.

.. warning::
    Receiving an object unpickles it, and unpickling can execute arbitrary code: only
    exchange objects between ranks (and a job) you trust, as with PyTorch's functions.
"""
from __future__ import annotations

import pickle

import numpy as np

from . import _core as core
from ._groups import canonical_rank

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object",
           "scatter_object_list", "send_object_list", "recv_object_list"]

#: MPI tag of send_object_list's messages (tensor point-to-point tags are >= 1000)
_OBJECT_TAG = 995


def _dumps(obj, what: str):
    """``(bytes as a writable uint8 array, None)``, or ``(None, the problem)`` when ``obj``
    cannot be pickled (a problem the other ranks must learn of, not a hang)."""
    try:
        return np.frombuffer(bytearray(pickle.dumps(obj)), np.uint8), None
    except Exception as e:      # pickling runs user code: anything can fail
        return None, f"{what}(): the object cannot be pickled: {type(e).__name__}: {e}"


def _loads(array):
    return pickle.loads(array.tobytes())


def _words(*names):
    """How a descriptor ``[*values, bad]`` reads in a mismatch error."""
    def describe(sig):
        parts = [f"{n}={int(v)}" for n, v in zip(names, sig)]
        if int(sig[len(names)]):
            parts.append("invalid arguments")
        return ", ".join(parts) or "valid arguments"
    return describe


def _offsets(sizes):
    return [0] + np.cumsum(sizes)[:-1].tolist() if len(sizes) else []


def _length(x) -> str:
    return f"{len(x)} entries" if isinstance(x, list) else type(x).__name__


def all_gather_object(object_list, obj, group=None) -> None:
    """Gather a picklable object from every rank: ``object_list[r]`` receives rank r's
    ``obj`` (``object_list`` needs at least one entry per rank of ``group``).

    Unpickling can execute arbitrary code: only use it between trusted ranks.

    Example (on 2 ranks)::

        out = [None, None]
        dist.all_gather_object(out, {"rank": dist.get_rank()})
        # out == [{"rank": 0}, {"rank": 1}] on every rank
    """
    if core._outside(group, "all_gather_object"):
        return
    g = core._group(group)
    n = g.size()
    data, problem = _dumps(obj, "all_gather_object")
    if not isinstance(object_list, list) or len(object_list) < n:
        problem = (f"all_gather_object(): object_list must be a list with an entry for each "
                   f"of the {n} ranks, got {_length(object_list)}")
    core._agree_or_raise(g, "all_gather_object", [], problem, _words())
    MPI = core._mpi()
    sizes = np.empty(n, np.int64)
    core._wait(g.comm.Iallgather(np.array([data.size], np.int64), sizes),
               "all_gather_object", g)
    out = np.empty(int(sizes.sum()), np.uint8)
    displs = _offsets(sizes)
    core._wait(g.comm.Iallgatherv(data, [out, sizes.tolist(), displs, MPI.BYTE]),
               "all_gather_object", g)
    for r in range(n):
        object_list[r] = _loads(out[displs[r]:displs[r] + int(sizes[r])])


def broadcast_object_list(object_list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Broadcast the picklable objects of ``object_list`` from rank ``src`` (a global rank;
    or ``group_src``, a rank of ``group``; rank 0 when neither is given): on the other
    ranks ``object_list`` (of the same length) is filled in place. ``device`` is accepted
    and ignored (objects travel through host memory).

    Unpickling can execute arbitrary code: only use it between trusted ranks.

    Example (on 2 ranks)::

        objs = ["config", {"lr": 0.1}] if dist.get_rank() == 0 else [None, None]
        dist.broadcast_object_list(objs, src=0)
    """
    if core._outside(group, "broadcast_object_list"):
        return
    g = core._group(group)
    if src is None and group_src is None:
        src = 0
    root = canonical_rank(g, src, group_src, "broadcast_object_list", "src")
    me = g.rank()
    data, problem = None, None
    if not isinstance(object_list, list):
        problem = f"broadcast_object_list(): object_list must be a list, got " \
                  f"{type(object_list).__name__}"
    elif me == root:
        data, problem = _dumps(list(object_list), "broadcast_object_list")
    core._agree_or_raise(g, "broadcast_object_list", [root], problem, _words("src"))
    header = np.array([data.size if me == root else 0], np.int64)
    core._wait(g.comm.Ibcast(header, root=root), "broadcast_object_list", g)
    if me != root:
        data = np.empty(int(header[0]), np.uint8)
    core._wait(g.comm.Ibcast(data, root=root), "broadcast_object_list", g)
    if me == root:
        return
    objects = _loads(data)
    if len(objects) != len(object_list):
        raise ValueError(f"broadcast_object_list(): rank {g.world_ranks[root]} sent "
                         f"{len(objects)} objects but object_list on rank "
                         f"{g.world_ranks[me]} has {len(object_list)} entries; pass lists "
                         "of the same length on every rank")
    object_list[:] = objects


def gather_object(obj, object_gather_list=None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """Gather a picklable object from every rank into ``object_gather_list`` on rank
    ``dst`` (a global rank; or ``group_dst``; rank 0 when neither is given), which needs
    an entry per rank; the other ranks pass None.

    Unpickling can execute arbitrary code: only use it between trusted ranks.

    Example (on 2 ranks)::

        out = [None, None] if dist.get_rank() == 0 else None
        dist.gather_object(dist.get_rank() * 10, out, dst=0)   # rank 0: out == [0, 10]
    """
    if core._outside(group, "gather_object"):
        return
    g = core._group(group)
    if dst is None and group_dst is None:
        dst = 0
    root = canonical_rank(g, dst, group_dst, "gather_object", "dst")
    me, n = g.rank(), g.size()
    data, problem = _dumps(obj, "gather_object")
    if me == root and (not isinstance(object_gather_list, list)
                       or len(object_gather_list) < n):
        problem = (f"gather_object(): Argument ``gather_list`` must be specified on "
                   f"destination rank: a list with an entry for each of the {n} ranks, got "
                   f"{_length(object_gather_list)}")
    elif me != root and object_gather_list:
        problem = ("gather_object(): Argument ``gather_list`` must NOT be specified on "
                   "non-destination ranks.")
    core._agree_or_raise(g, "gather_object", [root], problem, _words("dst"))
    MPI = core._mpi()
    sizes = np.empty(n, np.int64) if me == root else None
    core._wait(g.comm.Igather(np.array([data.size], np.int64), sizes, root=root),
               "gather_object", g)
    if me != root:
        core._wait(g.comm.Igatherv(data, None, root=root), "gather_object", g)
        return
    out = np.empty(int(sizes.sum()), np.uint8)
    displs = _offsets(sizes)
    core._wait(g.comm.Igatherv(data, [out, sizes.tolist(), displs, MPI.BYTE], root=root),
               "gather_object", g)
    for r in range(n):
        object_gather_list[r] = _loads(out[displs[r]:displs[r] + int(sizes[r])])


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                        src: int | None = None, group=None,
                        group_src: int | None = None) -> None:
    """Scatter the picklable objects of ``scatter_object_input_list`` (one per rank, given
    on rank ``src``, a global rank; or ``group_src``; rank 0 when neither is given): rank r
    receives the r-th into ``scatter_object_output_list[0]``.

    Unpickling can execute arbitrary code: only use it between trusted ranks.

    Example (on 2 ranks)::

        out = [None]
        dist.scatter_object_list(out, ["a", "b"] if dist.get_rank() == 0 else None, src=0)
        # out == ["a"] on rank 0, ["b"] on rank 1
    """
    if core._outside(group, "scatter_object_list"):
        return
    g = core._group(group)
    if src is None and group_src is None:
        src = 0
    root = canonical_rank(g, src, group_src, "scatter_object_list", "src")
    me, n = g.rank(), g.size()
    problem, pieces = None, []
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        problem = ("scatter_object_list(): Expected argument scatter_object_output_list to "
                   "be a list of size at least 1.")
    elif me == root:
        if scatter_object_input_list is None:
            problem = ("scatter_object_list(): source rank must provide non-None "
                       "scatter_object_input_list")
        elif len(scatter_object_input_list) != n:
            problem = (f"scatter_object_list(): scatter_object_input_list must have one "
                       f"object for each of the {n} ranks, got "
                       f"{len(scatter_object_input_list)}")
        else:
            for obj in scatter_object_input_list:
                data, problem = _dumps(obj, "scatter_object_list")
                if problem:
                    break
                pieces.append(data)
    core._agree_or_raise(g, "scatter_object_list", [root], problem, _words("src"))
    MPI = core._mpi()
    sizes = np.array([p.size for p in pieces], np.int64) if me == root else None
    size = np.empty(1, np.int64)
    core._wait(g.comm.Iscatter(sizes, size, root=root), "scatter_object_list", g)
    out = np.empty(int(size[0]), np.uint8)
    send = None
    if me == root:
        whole = np.concatenate(pieces) if pieces else np.empty(0, np.uint8)
        send = [whole, sizes.tolist(), _offsets(sizes), MPI.BYTE]
    core._wait(g.comm.Iscatterv(send, out, root=root), "scatter_object_list", g)
    scatter_object_output_list[0] = _loads(out)


def _peer(g, rank, group_rank, what, name, label):
    peer = canonical_rank(g, rank, group_rank, what, name)
    if peer == g.rank():
        raise ValueError(f"Invalid {label} rank: {label} rank should not be the same as the "
                         "rank of the current process.")
    return peer


def send_object_list(object_list, dst: int | None = None, group=None, device=None,
                     group_dst: int | None = None, use_batch: bool = False) -> None:
    """Send the picklable objects of ``object_list`` to rank ``dst`` (a global rank; or
    ``group_dst``, a rank of ``group``), which receives them with
    :func:`recv_object_list`; returns once they are sent. ``device`` and ``use_batch`` are
    accepted and ignored.

    Example (on 2 ranks)::

        if dist.get_rank() == 0:
            dist.send_object_list(["foo", 12, {1: 2}], dst=1)
        else:
            objs = [None, None, None]
            dist.recv_object_list(objs, src=0)
    """
    if core._outside(group, "send_object_list"):
        return
    g = core._group(group)
    peer = _peer(g, dst, group_dst, "send_object_list", "dst", "destination")
    data, problem = _dumps(list(object_list), "send_object_list")
    if problem:
        raise ValueError(problem)
    header = np.array([len(object_list), data.size], np.int64)
    reqs = [g.comm.Isend(header, dest=peer, tag=_OBJECT_TAG),
            g.comm.Isend(data, dest=peer, tag=_OBJECT_TAG)]
    core._wait(reqs, "send_object_list", g)


def recv_object_list(object_list, src: int | None = None, group=None, device=None,
                     group_src: int | None = None, use_batch: bool = False) -> int:
    """Receive the objects :func:`send_object_list` sent from rank ``src`` (a global
    rank; or ``group_src``) into ``object_list``, which must have as many entries as were
    sent; returns the sender's global rank (-1 on a rank outside ``group``). ``device``
    and ``use_batch`` are accepted and ignored.

    Unpickling can execute arbitrary code: only receive from trusted ranks.
    """
    if core._outside(group, "recv_object_list"):
        return -1
    g = core._group(group)
    peer = _peer(g, src, group_src, "recv_object_list", "src", "source")
    header = np.empty(2, np.int64)
    core._wait(g.comm.Irecv(header, source=peer, tag=_OBJECT_TAG), "recv_object_list", g)
    data = np.empty(int(header[1]), np.uint8)
    core._wait(g.comm.Irecv(data, source=peer, tag=_OBJECT_TAG), "recv_object_list", g)
    if int(header[0]) != len(object_list):
        raise ValueError(f"recv_object_list(): rank {g.world_ranks[peer]} sent "
                         f"{int(header[0])} objects but object_list has {len(object_list)} "
                         "entries; pass a list of the sender's length")
    object_list[:] = _loads(data)
    return g.world_ranks[peer]
