"""Run on 2 ranks by test_distributed.py: the object collectives, all_to_all(_single),
groups and ranks, batched point-to-point and monitored_barrier, each against what every
rank should receive computed here from the rank numbers; then the error cases, which must
end in clear errors on every rank, not hangs. Prints ``rank R: N checks passed``."""
import time
import warnings
from datetime import timedelta

import numpy as np

import ember
import ember.distributed as dist

dist.init_process_group("gloo")            # PyTorch's name: runs over MPI
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2, world
peer = 1 - rank
checks = 0


def check(ok, what):
    global checks
    assert ok, f"rank {rank}: {what}"
    checks += 1


def same(got, ref, what):
    global checks
    np.testing.assert_array_equal(got.numpy() if hasattr(got, "numpy") else got, ref,
                                  err_msg=f"rank {rank}: {what}")
    checks += 1


def fails(fn, exc, text, what):
    """``fn()`` raises ``exc`` whose message contains ``text``."""
    global checks
    try:
        fn()
    except exc as e:
        assert text in str(e), f"rank {rank}: {what}: {type(e).__name__}: {e}"
        checks += 1
        return
    raise AssertionError(f"rank {rank}: {what}: no {exc.__name__}")


check(dist.get_backend() == "mpi", "gloo runs over MPI")
check(dist.get_pg_count() == 1, "one group after init")

# ---- object collectives ---------------------------------------------------------------
out = [None] * world
dist.all_gather_object(out, {"rank": rank, "sq": [rank * rank] * (rank + 1)})   # sizes differ
check(out == [{"rank": r, "sq": [r * r] * (r + 1)} for r in range(world)], "all_gather_object")
out = [None] * world
dist.all_gather_object(out, ember.arange(3.0) + rank)          # a tensor inside the object
for r in range(world):
    same(out[r], np.arange(3.0, dtype=np.float32) + r, "all_gather_object of tensors")

sent = ["x" * 1000, 7, {"k": (1, 2)}]
objs = list(sent) if rank == 1 else [None] * 3
dist.broadcast_object_list(objs, src=1)
check(objs == sent, "broadcast_object_list src=1")
objs = [f"from {rank}"] if rank == 0 else [None]
dist.broadcast_object_list(objs)                                 # src defaults to 0
check(objs == ["from 0"], "broadcast_object_list default src")

gathered = [None] * world if rank == 1 else None
dist.gather_object(("from", rank, "y" * rank), gathered, dst=1)
if rank == 1:
    check(gathered == [("from", r, "y" * r) for r in range(world)], "gather_object")
else:
    check(gathered is None, "gather_object leaves the other ranks alone")

received = [None, "untouched"]
dist.scatter_object_list(received, [f"item{r}" * (r + 1) for r in range(world)]
                         if rank == 0 else None, src=0)
check(received == [f"item{rank}" * (rank + 1), "untouched"], "scatter_object_list")

if rank == 0:
    dist.send_object_list([1, "two", [3]], dst=1)
    got = [None, None]
    check(dist.recv_object_list(got, src=1) == 1, "recv_object_list returns the sender")
    check(got == [{"a": 1}, None], "recv_object_list from rank 1")
else:
    got = [None] * 3
    check(dist.recv_object_list(got, src=0) == 0, "recv_object_list returns the sender")
    check(got == [1, "two", [3]], "recv_object_list from rank 0")
    dist.send_object_list([{"a": 1}, None], dst=0)

# ---- all_to_all -----------------------------------------------------------------------
# rank i sends rank j (i + j + 1) elements valued 100 i + 10 j + k
for dtype, async_op in (("float32", False), ("int64", True), ("float64", False)):
    ins = [ember.tensor(np.arange(rank + j + 1).astype(dtype) + 100 * rank + 10 * j)
           for j in range(world)]
    outs = [ember.empty(i + rank + 1, dtype=getattr(ember, dtype)) for i in range(world)]
    work = dist.all_to_all(outs, ins, async_op=async_op)
    if async_op:
        work.wait()
    for i in range(world):
        same(outs[i], np.arange(i + rank + 1).astype(dtype) + 100 * i + 10 * rank,
             f"all_to_all {dtype} from rank {i}")

# equal splits of a 2-d tensor: rank r gets rows [2r, 2r + 2) of every rank's input
x = ember.tensor(np.arange(12).reshape(4, 3) + 100 * rank)
y = ember.empty((4, 3), dtype=ember.int64)
dist.all_to_all_single(y, x)
ref = np.concatenate([(np.arange(12).reshape(4, 3) + 100 * i)[2 * rank:2 * rank + 2]
                      for i in range(world)])
same(y, ref, "all_to_all_single equal splits")

# uneven splits, a non-contiguous input, async: rank i sends rank j (i + 2 j + 1) rows
def rows_of(i):
    splits = [i + 2 * j + 1 for j in range(world)]
    return splits, (np.arange(2 * sum(splits) * 2, dtype=np.float32).reshape(-1, 2)
                    + 1000 * i)[::2]
in_splits, mine = rows_of(rank)
out_splits = [i + 2 * rank + 1 for i in range(world)]
base = ember.tensor(np.arange(2 * sum(in_splits) * 2, dtype=np.float32).reshape(-1, 2)
                    + 1000 * rank)
y = ember.empty((sum(out_splits), 2))
dist.all_to_all_single(y, base[::2], out_splits, in_splits, async_op=True).wait()
ref = []
for i in range(world):
    splits, data = rows_of(i)
    start = sum(splits[:rank])
    ref.append(data[start:start + splits[rank]])
same(y, np.concatenate(ref), "all_to_all_single uneven splits")

# ---- groups and ranks -----------------------------------------------------------------
check(dist.group.WORLD is dist.GroupMember.WORLD and dist.group.WORLD is not None,
      "group.WORLD is the default group")
t = ember.ones(2)
dist.all_reduce(t, group=dist.group.WORLD)
same(t, np.full(2, 2.0, np.float32), "all_reduce on group.WORLD")
check(dist.get_process_group_ranks(dist.group.WORLD) == [0, 1], "ranks of WORLD")
check(dist.get_global_rank(dist.group.WORLD, 1) == 1, "WORLD: global rank is the identity")

g1 = dist.new_group([1])
check(dist.get_pg_count() == 2, "new_group counts on every rank")
if rank == 1:
    check(dist.get_global_rank(g1, 0) == 1 and dist.get_group_rank(g1, 1) == 0,
          "rank translation in a sub-group")
    check(dist.get_process_group_ranks(g1) == [1], "ranks of a sub-group")
    fails(lambda: dist.get_group_rank(g1, 0), ValueError, "Global rank 0 is not part",
          "get_group_rank of a non-member")
    fails(lambda: dist.get_global_rank(g1, 1), ValueError, "Group rank 1 is not part",
          "get_global_rank of a missing group rank")
else:
    check(g1 is dist.GroupMember.NON_GROUP_MEMBER, "non-members get NON_GROUP_MEMBER")
    check(dist.get_rank(g1) == -1 and dist.get_world_size(g1) == -1, "non-member rank -1")
    t = ember.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(dist.all_reduce(t, group=g1) is None, "a collective on a non-member group")
        dist.all_gather_object([None], rank, group=g1)
    same(t, np.ones(2, np.float32), "a non-member's tensor is left alone")
    check(any("does not belong to the given group" in str(w.message) for w in caught),
          "PyTorch's warning for a non-member")

mine, subs = dist.new_subgroups(1)                   # each rank alone
check(len(subs) == 2 and subs[rank] is mine, "new_subgroups returns this rank's subgroup")
check(subs[peer] is dist.GroupMember.NON_GROUP_MEMBER, "the other subgroup")
check(dist.get_process_group_ranks(mine) == [rank] and dist.get_pg_count() == 4,
      "subgroup ranks and the group count")
out = [None]
dist.all_gather_object(out, f"alone {rank}", group=mine)
check(out == [f"alone {rank}"], "all_gather_object in a subgroup")

both, subs = dist.new_subgroups_by_enumeration([[1, 0]])
check(subs == [both] and dist.get_process_group_ranks(both) == [0, 1],
      "new_subgroups_by_enumeration sorts the ranks")
objs = ["from group rank 1"] if rank == 1 else [None]
dist.broadcast_object_list(objs, group=both, group_src=1)
check(objs == ["from group rank 1"], "broadcast_object_list group_src")
rev = dist.new_group([1, 0], sort_ranks=False)
check(dist.get_process_group_ranks(rev) == [1, 0] and dist.get_rank(rev) == peer,
      "new_group(sort_ranks=False) keeps the given order")
objs = [f"from global rank {rank}"] if rank == 1 else [None]
dist.broadcast_object_list(objs, group=rev, group_src=0)
check(objs == ["from global rank 1"], "group_src is a rank of the group")
fails(lambda: dist.new_subgroups(3), ValueError, "must not exceed the world size",
      "new_subgroups larger than the world")
fails(lambda: dist.new_subgroups_by_enumeration([[0], [0, 1]]), ValueError,
      "Rank 0 has appeared in both subgroup", "overlapping subgroups")

dist.monitored_barrier(timeout=timedelta(seconds=20))
check(dist.barrier(timeout=timedelta(seconds=20)) is None, "monitored_barrier, barrier")

# ---- batched point-to-point -----------------------------------------------------------
send_buf = ember.full((3,), float(rank))
recv_buf = ember.empty(3)
tagged = [ember.empty(2, dtype=ember.int64) for _ in range(2)]
ops = [dist.P2POp(dist.irecv, recv_buf, peer, tag=5),    # receives listed first
       dist.P2POp(dist.irecv, tagged[1], peer, tag=1),
       dist.P2POp(dist.irecv, tagged[0], peer, tag=0),
       dist.P2POp(dist.isend, ember.tensor([rank, 0]), peer, tag=0),
       dist.P2POp(dist.isend, ember.tensor([rank, 1]), peer, tag=1),
       dist.P2POp(dist.isend, send_buf, peer, tag=5)]
for work in dist.batch_isend_irecv(ops):
    work.wait()
same(recv_buf, np.full(3, float(peer), np.float32), "batch_isend_irecv")
same(tagged[0], [peer, 0], "batch_isend_irecv tag 0")
same(tagged[1], [peer, 1], "batch_isend_irecv tag 1")
fails(lambda: dist.P2POp(dist.send, send_buf, peer), ValueError, "Invalid ``op``",
      "P2POp of a blocking send")
fails(lambda: dist.batch_isend_irecv([send_buf]), ValueError, "Invalid ``p2p_op_list``",
      "batch_isend_irecv of a tensor")

# ---- errors: every rank raises, nobody waits for a timeout ------------------------------
start = time.monotonic()
# an output list too short on rank 1 only
fails(lambda: dist.all_gather_object([None] * (2 - rank), rank),
      ValueError if rank == 1 else RuntimeError,
      "an entry for each of the 2 ranks" if rank == 1 else "invalid arguments",
      "all_gather_object with a short list")
# rank 0 sends rank 1 two elements, rank 1 expects three
ins = [ember.zeros(2), ember.zeros(2)]
outs = [ember.empty(2 + rank), ember.empty(2)]
fails(lambda: dist.all_to_all(outs, ins), RuntimeError,
      "rank 0 sends 2 elements to rank 1, but rank 1 expects 3", "all_to_all size mismatch")
# a size that does not split on rank 1 only
fails(lambda: dist.all_to_all_single(ember.empty(4), ember.empty(4 - rank)),
      ValueError if rank == 1 else RuntimeError,
      "not divisible by the group size 2" if rank == 1 else "invalid arguments",
      "all_to_all_single with an uneven size")
# different collectives
if rank == 0:
    fails(lambda: dist.all_gather_object([None, None], 0), RuntimeError,
          "rank 0 called all_gather_object, rank 1 called broadcast_object_list",
          "different collectives")
else:
    fails(lambda: dist.broadcast_object_list([None]), RuntimeError,
          "rank 0 called all_gather_object, rank 1 called broadcast_object_list",
          "different collectives")
# lists of different lengths: the receiver learns it once the objects arrived
if rank == 1:
    fails(lambda: dist.broadcast_object_list([None]), ValueError,
          "rank 0 sent 2 objects but object_list on rank 1 has 1", "broadcast length")
else:
    dist.broadcast_object_list([1, 2])
# an unpicklable object on rank 0
unpicklable = (lambda: 0) if rank == 0 else rank
fails(lambda: dist.gather_object(unpicklable, [None, None] if rank == 0 else None),
      ValueError if rank == 0 else RuntimeError,
      "cannot be pickled" if rank == 0 else "invalid arguments", "gather_object of a lambda")
fails(lambda: dist.send_object_list([1], dst=rank), ValueError,
      "destination rank should not be the same", "send_object_list to itself")
fails(lambda: dist.recv_object_list([None]), ValueError, "pass src", "recv without src")
fails(lambda: dist.broadcast_object_list([None], src=0, group_src=0), ValueError,
      "not both", "src and group_src")
check(time.monotonic() - start < 20, "the error cases end at once")

# rank 1 arrives 1 s late at a monitored barrier with a 0.3 s timeout: both ranks raise
dist.barrier()
if rank == 1:
    time.sleep(1.0)
    fails(lambda: dist.monitored_barrier(timeout=timedelta(seconds=0.3)),
          dist.DistBackendError, "rank 1 of", "monitored_barrier, the late rank")
else:
    fails(lambda: dist.monitored_barrier(timeout=timedelta(seconds=0.3)),
          dist.DistBackendError, "Rank 1 failed to pass monitoredBarrier in 300 ms",
          "monitored_barrier names the late rank")
dist.barrier()
print(f"rank {rank}: {checks} checks passed", flush=True)
dist.destroy_process_group()
check(dist.get_pg_count() == 0 and dist.group.WORLD is None, "destroyed")
