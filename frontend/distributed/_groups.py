"""Ranks across groups, subgroups, the group count and the monitored barrier."""
from __future__ import annotations

import time
import zlib
from datetime import timedelta

import numpy as np

import ember

from . import _backend as backends
from . import _core as core
from ._core import GroupMember, ProcessGroup

__all__ = ["get_global_rank", "get_group_rank", "get_process_group_ranks", "new_subgroups",
           "new_subgroups_by_enumeration", "get_pg_count", "monitored_barrier"]


def _member_group(group, what: str) -> ProcessGroup:
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"{what}(): this rank is not a member of the group "
                         "(GroupMember.NON_GROUP_MEMBER); pass a group it belongs to")
    return core._group(group)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank (in the default group) of the rank ``group_rank`` of ``group``.
    ``ValueError`` if ``group`` has no such rank; the identity on the default group.

    Example (on 2 ranks)::

        g = dist.new_group([1])
        if g is not dist.GroupMember.NON_GROUP_MEMBER:
            dist.get_global_rank(g, 0)    # 1
    """
    g = _member_group(group, "get_global_rank")
    if not 0 <= group_rank < len(g.world_ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g.world_ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of the process whose global rank is ``global_rank``.
    ``ValueError`` if that process is not in ``group``; the identity on the default group.
    """
    g = _member_group(group, "get_group_rank")
    if global_rank not in g.world_ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}")
    return g.world_ranks.index(global_rank)


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order (the default group's
    if None)."""
    return list(_member_group(group, "get_process_group_ranks").world_ranks)


def canonical_rank(group: ProcessGroup, global_rank, group_rank, what: str,
                   name: str) -> int:
    """The group rank named by either ``global_rank`` (``src=``/``dst=``, PyTorch's global
    ranks) or ``group_rank`` (``group_src=``/``group_dst=``), not both."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"{what}(): pass {name} or group_{name}, not both")
        if not 0 <= group_rank < group.size():
            raise ValueError(f"{what}(): group_{name}={group_rank} is not a rank of {group} "
                             f"(it has {group.size()})")
        return int(group_rank)
    if global_rank is None:
        raise ValueError(f"{what}(): pass {name} (a global rank) or group_{name} (a rank of "
                         "the group)")
    if global_rank not in group.world_ranks:
        raise ValueError(f"{what}(): {name}={global_rank} is not a member of {group} (its "
                         f"global ranks are {list(group.world_ranks)})")
    return group.world_ranks.index(global_rank)


def get_pg_count() -> int:
    """The number of process groups made in this process: the default group and one for
    each ``new_group`` (also those this rank is not in) and each subgroup; 0 before
    ``init_process_group`` and after the default group is destroyed."""
    return core._PG_COUNT


def new_subgroups(group_size: int | None = None, group=None, timeout=None, backend=None,
                  pg_options=None, group_desc=None):
    """Split ``group`` (the default group if None) into consecutive subgroups of
    ``group_size`` ranks: returns ``(this rank's subgroup, all subgroups)``, the subgroups
    this rank is not in being ``GroupMember.NON_GROUP_MEMBER``. Every rank must call it.

    ``group_size`` must divide the group's size; PyTorch's default (None) is the number of
    CUDA devices, which needs CUDA. ``timeout``, ``backend``, ``pg_options`` and
    ``group_desc`` are accepted and ignored.

    Example (on 4 ranks)::

        mine, all_groups = dist.new_subgroups(2)   # ranks [0, 1] and [2, 3]
        dist.all_reduce(t, group=mine)             # sums over this rank's pair
    """
    if group_size is None:
        if not ember.cuda.is_available():
            raise ValueError("Default group size only takes effect when CUDA is available. "
                             "If your subgroup using a backend that does not depend on CUDA,"
                             "please pass in 'group_size' correctly.")
        group_size = ember.cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    ranks = get_process_group_ranks(group)
    if len(ranks) < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({len(ranks)})")
    if len(ranks) % group_size:
        raise ValueError(f"The world size ({len(ranks)}) must be divisible by "
                         f"'group_size={group_size}'")
    lists = [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)]
    return new_subgroups_by_enumeration(lists, timeout, backend, pg_options, group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One subgroup for each list of global ranks in ``ranks_per_subgroup_list`` (no rank
    in two lists): returns ``(this rank's subgroup or None, all subgroups)``, the subgroups
    this rank is not in being ``GroupMember.NON_GROUP_MEMBER``. Every rank of the default
    group must call it with the same lists (checked).

    One ``MPI_Comm_split`` makes them all. ``timeout``, ``backend``, ``pg_options`` and
    ``group_desc`` are accepted and ignored.

    Example (on 4 ranks)::

        mine, _ = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]])
    """
    world = core._group(None)
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    lists = [sorted(int(r) for r in ranks) for ranks in ranks_per_subgroup_list]
    owner = {}
    for i, ranks in enumerate(lists):
        for r in ranks:
            if not 0 <= r < world.size():
                raise ValueError(f"new_subgroups_by_enumeration(): rank {r} is not a rank of "
                                 f"the default group (of {world.size()} ranks)")
            if r in owner:
                raise ValueError(f"Rank {r} has appeared in both subgroup "
                                 f"{lists[owner[r]]} and {lists[i]}")
            owner[r] = i
    # every rank must pass the same lists, or the split would make different groups
    core._agree(world, "new_subgroups", [zlib.crc32(repr(lists).encode())],
                lambda sig: f"subgroup lists of checksum {int(sig[0])}")
    core.barrier(world)            # MPI_Comm_split blocks with no timeout
    me = world.rank()
    mine = owner.get(me)
    MPI = core._mpi()
    comm = world.comm.Split(MPI.UNDEFINED if mine is None else mine,
                            0 if mine is None else lists[mine].index(me))
    core._PG_COUNT += len(lists)
    subgroups = [GroupMember.NON_GROUP_MEMBER] * len(lists)
    if mine is None:
        return None, subgroups
    subgroups[mine] = ProcessGroup(comm, lists[mine])
    return subgroups[mine], subgroups


#: MPI tags of the monitored barrier's messages (the tensor point-to-point tags are >= 1000)
_ARRIVE_TAG, _RELEASE_TAG = 997, 998


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not arrive: every rank reports to rank 0 of
    ``group``, which waits ``timeout`` (a ``timedelta``; the group's timeout if None) and
    then releases them, or raises ``DistBackendError`` naming the first missing rank (all
    of them with ``wait_all_ranks=True``); the ranks that did arrive raise too.

    Example::

        dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)
    """
    if core._outside(group, "monitored_barrier"):
        return
    g = core._group(group)
    seconds = core._TIMEOUT if timeout is None else (
        timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout))
    if g.size() == 1:
        return
    if g.rank() != 0:
        token = np.zeros(1, np.int64)
        core._wait(g.comm.Isend(token, dest=0, tag=_ARRIVE_TAG), "monitored_barrier", g,
                   timeout=seconds)
        verdict = np.empty(1, np.int64)
        # rank 0 answers within its own timeout: wait a little longer than that
        core._wait(g.comm.Irecv(verdict, source=0, tag=_RELEASE_TAG), "monitored_barrier", g,
                   timeout=2 * seconds + 5)
        if verdict[0] >= 0:
            raise backends.DistBackendError(
                f"monitored_barrier: rank {int(verdict[0])} of {g} failed to pass "
                f"monitoredBarrier in {seconds * 1000:.0f} ms (reported by rank 0)")
        return
    tokens = {r: np.empty(1, np.int64) for r in range(1, g.size())}
    reqs = {r: g.comm.Irecv(tokens[r], source=r, tag=_ARRIVE_TAG) for r in tokens}
    deadline = time.monotonic() + seconds
    pending = set(reqs)
    while pending and time.monotonic() < deadline:
        pending = {r for r in pending if not reqs[r].Test()}
        if pending:
            time.sleep(0.001)
    for r in pending:
        reqs[r].Cancel()
        reqs[r].Wait()
    missing = sorted(pending)
    verdict = np.array([missing[0] if missing else -1], np.int64)
    # the late ranks too: they get the verdict when they arrive, instead of a timeout
    sends = [g.comm.Isend(verdict, dest=r, tag=_RELEASE_TAG) for r in tokens]
    core._wait(sends, "monitored_barrier", g)
    if missing:
        shown = missing if wait_all_ranks else missing[:1]
        who = (f"Rank {shown[0]}" if len(shown) == 1 else
               "Ranks " + ", ".join(str(r) for r in shown))
        raise backends.DistBackendError(
            f"{who} failed to pass monitoredBarrier in {seconds * 1000:.0f} ms")
