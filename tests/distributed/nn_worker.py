"""Run by test_nn.py on N ranks, twice: on ember (``NN_FRAMEWORK=ember``, launched with
``python -m ember.distributed.run``, MPI) and on PyTorch (``NN_FRAMEWORK=torch``, one process
a rank, gloo), the oracle. Every case calls a function of ``distributed.nn.functional``
on inputs each rank rebuilds from seeds, backpropagates a loss weighted per rank, and saves
the results and the input gradients to ``NN_OUT/<framework>_<rank>.npz``, which the test
compares."""
import os
import warnings

import numpy as np

FRAMEWORK = os.environ["NN_FRAMEWORK"]
if FRAMEWORK == "torch":
    import torch as fw
    import torch.distributed as dist
    import torch.distributed.nn.functional as F

    dist.init_process_group("gloo", init_method="file://" + os.environ["NN_STORE"],
                            rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
else:
    import ember as fw
    import ember.distributed as dist
    import ember.distributed.nn.functional as F

    dist.init_process_group("mpi")

warnings.simplefilter("ignore", FutureWarning)     # (PyTorch's deprecation of most of them)
rank, n = dist.get_rank(), dist.get_world_size()
results = {}


def data(seed, shape, dtype="float32"):
    return fw.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def leaf(seed, shape, dtype="float32"):
    return data(seed, shape, dtype).requires_grad_()


def weighted_loss(case, outs):
    """Σ_i (outs[i] · W_i) with weights of this rank's own (so gradients differ by rank)."""
    total = 0
    for i, o in enumerate(outs):
        results[f"{case}/out{i}"] = o.detach().numpy()
        total = total + (o * data(1000 + 100 * rank + i, tuple(o.shape), "float64")
                         .to(o.dtype)).sum()
    return total


def run(case, x, fn):
    """Forward ``fn(x)``, backward of the weighted loss; record results and ``x.grad``."""
    outs = fn(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    weighted_loss(case, outs).backward()
    results[f"{case}/grad"] = x.grad.numpy()


# ---- every function, forward and backward ------------------------------------------------
for dtype in ("float32", "float64"):
    run(f"all_reduce_sum_{dtype}", leaf(rank, (3, 4), dtype), lambda x: F.all_reduce(x))
for op in ("AVG", "MAX", "MIN", "PRODUCT"):
    run(f"all_reduce_{op}", leaf(10 + rank, (5,)),
        lambda x: F.all_reduce(x * 1.5, op=getattr(dist.ReduceOp, op)))
for src in sorted({0, n - 1}):
    run(f"broadcast_{src}", leaf(20 + rank, (2, 3)), lambda x: F.broadcast(x * 2, src))
    run(f"reduce_{src}", leaf(30 + rank, (4,)), lambda x: F.reduce(x * 2, src))
    run(f"gather_{src}", leaf(40 + rank, (3,)), lambda x: F.gather(x + 1, dst=src))
    # every rank passes n pieces (only src's are sent); piece k is (k + 1) * x
    run(f"scatter_{src}", leaf(50 + rank, (2, 2)),
        lambda x: F.scatter([x * (k + 1) for k in range(n)], src=src))
run("all_gather", leaf(60 + rank, (2, 3)), lambda x: F.all_gather(x))
run("all_gather_unused", leaf(61 + rank, (3,)), lambda x: F.all_gather(x)[0])
run("reduce_scatter", leaf(70 + rank, (3,)),
    lambda x: F.reduce_scatter(fw.empty(3), [x * (k + 1) for k in range(n)]))
run("reduce_scatter_max", leaf(71 + rank, (3,)),
    lambda x: F.reduce_scatter(fw.empty(3), [x * (k + 1) for k in range(n)],
                               op=dist.ReduceOp.MAX))


def sizes(r, j):
    """How many elements rank r sends rank j in the uneven cases."""
    return 1 + r + 2 * j


def all_to_all_uneven(x):
    pieces = list(x.split([sizes(rank, j) for j in range(n)]))
    outs = [fw.empty(sizes(i, rank)) for i in range(n)]
    return F.all_to_all(outs, [p * 3 for p in pieces])


run("all_to_all", leaf(80 + rank, (n * 2,)),
    lambda x: F.all_to_all([fw.empty(2) for _ in range(n)], list((x * 3).split(2))))
if FRAMEWORK == "ember":    # (gloo's all_to_all needs equal sizes: the test has the oracle)
    run("all_to_all_uneven", leaf(81 + rank, (sum(sizes(rank, j) for j in range(n)),)),
        all_to_all_uneven)
run("all_to_all_single", leaf(90 + rank, (2 * n, 3)),
    lambda x: F.all_to_all_single(fw.empty(2 * n, 3), x * 2))
in_rows = [sizes(rank, j) for j in range(n)]
out_rows = [sizes(i, rank) for i in range(n)]
run("all_to_all_single_split", leaf(91 + rank, (sum(in_rows), 2)),
    lambda x: F.all_to_all_single(fw.empty(sum(out_rows), 2), x * 2, out_rows, in_rows))

# the result is written into reduce_scatter's / all_to_all_single's output argument too
out = fw.empty(2)
y = F.reduce_scatter(out, [data(95 + rank, (2,)) for _ in range(n)])
results["reduce_scatter/fills_output"] = np.array(np.array_equal(out.numpy(), y.numpy()))

# ---- gradients of gradients: each backward is made of differentiable collectives --------
for name, fn in (("all_gather", lambda x: F.all_gather(x)),
                 ("all_reduce", lambda x: F.all_reduce(x)),
                 ("broadcast", lambda x: F.broadcast(x, n - 1)),
                 ("reduce_scatter",
                  lambda x: F.reduce_scatter(fw.empty(3), [x * (k + 1) for k in range(n)])),
                 ("all_to_all_single", lambda x: F.all_to_all_single(fw.empty(n), x))):
    x = leaf(100 + rank, (3,) if name != "all_to_all_single" else (n,))
    outs = fn(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = weighted_loss(f"double_{name}", tuple(o * o for o in outs))
    (g,) = fw.autograd.grad(loss, x, create_graph=True)
    results[f"double_{name}/g"] = g.detach().numpy()
    (g * data(200 + rank, tuple(g.shape))).sum().backward()
    results[f"double_{name}/grad"] = x.grad.numpy()

# ---- a subgroup of the first and last ranks; a rank outside it gets its input back -------
members = list(range(min(n, 2)))   # (group ranks = global ranks: see the report)
sub = dist.new_group(members)
x = leaf(300 + rank, (4,))
y = F.all_reduce(x * 2, group=sub)
weighted_loss("subgroup_all_reduce", (y,)).backward()
results["subgroup_all_reduce/grad"] = x.grad.numpy()
if rank in members:
    run("subgroup_all_gather", leaf(310 + rank, (2,)), lambda x: F.all_gather(x, group=sub))

# ---- no gradient: integer tensors, and inputs that do not require grad -------------------
z = F.all_reduce(fw.tensor(np.arange(4) * (rank + 1)))
results["int_all_reduce/out"] = z.numpy()
results["int_all_reduce/requires_grad"] = np.array(z.requires_grad)
z = F.all_gather(data(400 + rank, (2,)))
results["no_grad_all_gather/requires_grad"] = np.array([t.requires_grad for t in z])

np.savez(os.path.join(os.environ["NN_OUT"], f"{FRAMEWORK}_{rank}.npz"), **results)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: {len(results)} results saved", flush=True)
