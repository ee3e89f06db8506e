"""Run on 2 ranks by test_distributed.py: DDP with batch B/2 per rank against
single-process training with batch B (same initial weights, same data), 20 steps."""
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
B = 16


def make(seed):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 16), nn.Tanh(), nn.Linear(16, 3))


rng = np.random.default_rng(7)
X = ember.tensor(rng.standard_normal((20, B, 1, 6, 6)).astype(np.float32))
Y = ember.tensor(rng.integers(0, 3, (20, B)))
F = nn.functional

# rank 1 starts from different weights: DDP must broadcast rank 0's
ref = make(0)
model = make(rank)
ddp = DDP(model, bucket_cap_mb=0.002)          # several buckets
assert len(ddp._buckets) > 1, len(ddp._buckets)
opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
ropt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
half = slice(rank * B // world, (rank + 1) * B // world)
for step in range(20):
    opt.zero_grad()
    F.cross_entropy(ddp(X[step][half]), Y[step][half]).backward()
    opt.step()
    ropt.zero_grad()
    F.cross_entropy(ref(X[step]), Y[step]).backward()
    ropt.step()
for (name, p), q in zip(model.named_parameters(), ref.parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6,
                               err_msg=name)
    outs = [ember.empty(p.shape) for _ in range(world)]
    dist.all_gather(outs, p.detach())
    for o in outs:                         # identical on every rank, bit for bit
        assert np.array_equal(o.numpy(), outs[0].numpy()), name
print(f"rank {rank}: ddp parity ok", flush=True)

# no_sync: two micro-batches accumulated locally, reduced on the second backward
ref2 = make(3)
ddp2 = DDP(make(3 + rank))
with ddp2.no_sync():
    F.cross_entropy(ddp2(X[0][half]), Y[0][half]).backward()
F.cross_entropy(ddp2(X[1][half]), Y[1][half]).backward()
F.cross_entropy(ref2(X[0]), Y[0]).backward()
F.cross_entropy(ref2(X[1]), Y[1]).backward()
for p, q in zip(ddp2.parameters(), ref2.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
print(f"rank {rank}: no_sync ok", flush=True)


# find_unused_parameters: a branch used on rank 0 only
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 2)
        self.b = nn.Linear(4, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


ember.manual_seed(5)
m = Branchy()
ddp3 = DDP(m, find_unused_parameters=True)
x = ember.ones(3, 4) * (rank + 1)
ddp3(x, use_b=(rank == 0)).sum().backward()
gb = m.b.weight.grad
expect_b = np.full((2, 4), 3.0 / world, np.float32)      # rank 0's grad / world
np.testing.assert_allclose(gb.numpy(), expect_b, rtol=1e-6)
np.testing.assert_allclose(m.a.weight.grad.numpy(),
                           np.full((2, 4), 3.0 * sum(r + 1 for r in range(world)) / world,
                                   np.float32), rtol=1e-6)
print(f"rank {rank}: find_unused_parameters ok", flush=True)
dist.destroy_process_group()
sys.exit(0)
