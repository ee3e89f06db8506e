"""Run on 2 ranks by test_distributed.py: every collective against a single-process
reference computed from the same seeds (each rank can rebuild every rank's input)."""
import sys
import time

import numpy as np

import ember
import ember.distributed as dist

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
checks = 0


def data(r, shape, dtype):
    rng = np.random.default_rng(100 + r)
    if dtype in ("float32", "float64"):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-5, 6, shape).astype(dtype)


def check(got, ref, what):
    global checks
    got = got.numpy() if hasattr(got, "numpy") else got
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, ref, err_msg=what)
    checks += 1


for dtype in ("float32", "float64", "int64", "int32"):
    for shape in ((5,), (3, 4), ()):
        allx = [data(r, shape, dtype) for r in range(world)]
        for op, ref in (("sum", np.sum(allx, 0)), ("max", np.max(allx, 0)),
                        ("min", np.min(allx, 0)), ("product", np.prod(allx, 0))):
            t = ember.tensor(allx[rank])
            dist.all_reduce(t, op=op)
            check(t, ref.astype(dtype), f"all_reduce {op} {dtype} {shape}")
        if dtype.startswith("float"):
            t = ember.tensor(allx[rank])
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            check(t, np.mean(allx, 0).astype(dtype), f"all_reduce avg {dtype}")
        # async
        t = ember.tensor(allx[rank])
        w = dist.all_reduce(t, async_op=True)
        w.wait()
        check(t, np.sum(allx, 0).astype(dtype), "all_reduce async")
        # broadcast from 1
        t = ember.tensor(allx[rank])
        dist.broadcast(t, src=1)
        check(t, allx[1], "broadcast")
        # all_gather
        outs = [ember.empty(shape, dtype=getattr(ember, dtype)) for _ in range(world)]
        dist.all_gather(outs, ember.tensor(allx[rank]))
        for r in range(world):
            check(outs[r], allx[r], "all_gather")
        # gather / scatter to/from rank 0
        gl = [ember.empty(shape, dtype=getattr(ember, dtype)) for _ in range(world)] \
            if rank == 0 else None
        dist.gather(ember.tensor(allx[rank]), gl, dst=0)
        if rank == 0:
            for r in range(world):
                check(gl[r], allx[r], "gather")
        t = ember.empty(shape, dtype=getattr(ember, dtype))
        sl = [ember.tensor(a) for a in allx] if rank == 0 else None
        dist.scatter(t, sl, src=0)
        check(t, allx[rank], "scatter")

# reduce_scatter: rank r gets sum over ranks of input_list[r]
ins = [[data(10 * s + r, (4,), "float32") for r in range(world)] for s in range(world)]
out = ember.empty(4)
dist.reduce_scatter(out, [ember.tensor(a) for a in ins[rank]])
check(out, np.sum([ins[s][rank] for s in range(world)], 0), "reduce_scatter")
big = [data(50 + s, (world * 3,), "float64") for s in range(world)]
out = ember.empty(3, dtype=ember.float64)
dist.reduce_scatter_tensor(out, ember.tensor(big[rank]))
check(out, np.sum(big, 0)[rank * 3:(rank + 1) * 3], "reduce_scatter_tensor")
out = ember.empty(world * 3, dtype=ember.float64)
dist.all_gather_into_tensor(out, ember.tensor(big[rank][:3]))
check(out, np.concatenate([b[:3] for b in big]), "all_gather_into_tensor")

# non-contiguous tensors are staged and written back
allx = [data(r, (4, 6), "float32") for r in range(world)]
base = ember.tensor(allx[rank])
view = base[:, ::2]
dist.all_reduce(view)
ref = allx[rank].copy()
ref[:, ::2] = np.sum([a[:, ::2] for a in allx], 0)
check(base, ref, "all_reduce strided view")

# send / recv
if rank == 0:
    dist.send(ember.arange(6.0), dst=1)
    t = ember.empty(3, dtype=ember.int64)
    dist.recv(t, src=1)
    check(t, np.array([7, 8, 9]), "recv")
    # from any sender: recv returns who sent (PyTorch's)
    assert dist.recv(t) == 1, "recv from any sender returns the sender's rank"
    check(t, np.array([4, 5, 6]), "recv from any sender")
else:
    t = ember.empty(6)
    assert dist.recv(t, src=0) == 0
    check(t, np.arange(6.0, dtype=np.float32), "recv")
    dist.send(ember.tensor([7, 8, 9]), dst=0)
    dist.send(ember.tensor([4, 5, 6]), dst=0)

# a sub-group of rank 1 only, and the world group again
g = dist.new_group([1])
if rank == 1:
    t = ember.ones(2)
    dist.all_reduce(t, group=g)
    check(t, np.ones(2, np.float32), "sub-group")
    assert dist.get_world_size(g) == 1
else:
    assert g is dist.GroupMember.NON_GROUP_MEMBER
g0 = dist.new_group([0])
dist.barrier()
print(f"rank {rank}: {checks} checks passed", flush=True)

# a rank that finishes early is no error for the ranks that carry on without it: rank 1
# leaves at once, rank 0 keeps using a group of its own past the departure grace period
if rank == 1:
    sys.exit(0)
time.sleep(2.5)
t = ember.ones(2)
dist.all_reduce(t, group=g0)
check(t, np.ones(2, np.float32), "a group without the departed rank")
print("rank 0: carried on after rank 1 left", flush=True)
dist.destroy_process_group()
sys.exit(0)
