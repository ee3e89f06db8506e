"""Run by test_distributed_optim.py on N ranks, twice: on ember (``OPT_FRAMEWORK=ember``,
launched with ``python -m ember.distributed.run``, MPI) and on PyTorch (``OPT_FRAMEWORK=torch``, one
process a rank, gloo), the oracle. Each case trains a small model with
``ZeroRedundancyOptimizer`` for a few steps from weights and data every rank rebuilds from
seeds (gradients averaged with ``all_reduce``, as DDP would), and saves the parameters after
every step, each rank's share of the partition and the consolidated ``state_dict`` to
``OPT_OUT/<framework>_<rank>.npz``, which the test compares."""
import copy
import os

import numpy as np

FRAMEWORK = os.environ["OPT_FRAMEWORK"]
if FRAMEWORK == "torch":
    import torch as fw
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer

    dist.init_process_group("gloo", init_method="file://" + os.environ["OPT_STORE"],
                            rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
else:
    import ember as fw
    import ember.distributed as dist
    from ember.distributed.optim import ZeroRedundancyOptimizer

    dist.init_process_group("mpi")

rank, n = dist.get_rank(), dist.get_world_size()
results = {}


def data(seed, shape):
    return fw.tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def make_model():
    """Linear(5, 6) -> Tanh -> Linear(6, 3) -> Linear(3, 1), the same weights on every rank
    (six parameters of sizes 30, 6, 18, 3, 3, 1: uneven shares on 3 ranks)."""
    model = fw.nn.Sequential(fw.nn.Linear(5, 6), fw.nn.Tanh(), fw.nn.Linear(6, 3),
                             fw.nn.Linear(3, 1))
    with fw.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(data(500 + i, tuple(p.shape)) * 0.5)
    return model


def train_step(case, model, opt, step):
    """One step on this rank's batch, gradients averaged over the ranks; the parameters
    after it are recorded."""
    x = data(1000 + 10 * step + rank, (4, 5))
    loss = model(x).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= n
    opt.step()
    opt.zero_grad()
    for i, p in enumerate(model.parameters()):
        results[f"{case}/step{step}/param{i}"] = p.detach().numpy().copy()


def record_share(case, opt):
    results[f"{case}/share"] = np.array([len(g["params"]) for g in opt.optim.param_groups])


def record_state_dict(case, sd):
    for index, state in sd["state"].items():
        for name, value in state.items():
            results[f"{case}/state{index}/{name}"] = np.asarray(
                value.numpy() if hasattr(value, "numpy") else value, dtype="float64")
    for g, group in enumerate(sd["param_groups"]):
        results[f"{case}/group{g}/params"] = np.array(group["params"])
        results[f"{case}/group{g}/lr"] = np.array(group["lr"])


# ---- AdamW (train_gpt2.py's use), a learning rate changed on the exposed groups ------------
model = make_model()
opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=fw.optim.AdamW, lr=0.01,
                              betas=(0.9, 0.95), weight_decay=0.1)
record_share("adamw", opt)
for step in range(4):
    if step == 2:
        opt.param_groups[0]["lr"] = 0.005       # (as an LR scheduler does)
    train_step("adamw", model, opt, step)

# consolidate on the last rank; the others have nothing to return
to = n - 1
opt.consolidate_state_dict(to=to)
if rank == to:
    sd = opt.state_dict()
    record_state_dict("adamw_consolidated", sd)
else:
    try:
        opt.state_dict()
    except RuntimeError as e:
        results["adamw/unconsolidated_error"] = np.array(
            "has not been consolidated on this rank" in str(e))
    sd = None
box = [sd]
dist.broadcast_object_list(box, src=to)
# (on rank `to` the state tensors are the optimizer's own, as in PyTorch: a checkpoint
# written to disk would not alias them)
sd = copy.deepcopy(box[0])

# a fresh optimizer loading it continues exactly as the original one
twin = make_model()
with fw.no_grad():
    for p, q in zip(twin.parameters(), model.parameters()):
        p.copy_(q)
reloaded = ZeroRedundancyOptimizer(twin.parameters(), optimizer_class=fw.optim.AdamW,
                                   lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
reloaded.load_state_dict(sd)
results["adamw_reloaded/lr"] = np.array(reloaded.param_groups[0]["lr"])
results["adamw_reloaded/local_lr"] = np.array(reloaded.optim.param_groups[0]["lr"])
train_step("adamw", model, opt, 4)
train_step("adamw_reloaded", twin, reloaded, 4)

# ---- SGD with momentum, two groups, the second added after two steps ---------------------
model = make_model()
layers = [m for m in model if isinstance(m, fw.nn.Linear)]
opt = ZeroRedundancyOptimizer(list(layers[0].parameters()), optimizer_class=fw.optim.SGD,
                              lr=0.05, momentum=0.9)
record_share("sgd", opt)
for step in range(4):
    if step == 2:
        opt.add_param_group({"params": list(layers[1].parameters())
                             + list(layers[2].parameters()), "lr": 0.02})
        record_share("sgd_added", opt)
    train_step("sgd", model, opt, step)
opt.consolidate_state_dict(to=0)
if rank == 0:
    record_state_dict("sgd_consolidated", opt.state_dict())

# ---- parameters_as_bucket_view: one broadcast per rank ----------------------------------
model = make_model()
opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=fw.optim.SGD, lr=0.1,
                              parameters_as_bucket_view=True, weight_decay=0.01)
for step in range(3):
    train_step("sgd_bucket", model, opt, step)

np.savez(os.path.join(os.environ["OPT_OUT"], f"{FRAMEWORK}_{rank}.npz"), **results)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: {len(results)} results saved", flush=True)
