"""Run on 2 ranks by test_layers_more.py: SyncBatchNorm on each rank's half of a batch
equals PyTorch's BatchNorm on the whole batch (output, input gradient, summed parameter
gradients, running statistics)."""
import numpy as np
import torch

import ember
import ember.distributed as dist
import ember.nn as nn

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
g = torch.Generator().manual_seed(0)
x = torch.randn(4 * world, 3, 5, generator=g)
cot = torch.randn(4 * world, 3, 5, generator=g)
theirs = torch.nn.BatchNorm1d(3)
with torch.no_grad():
    theirs.weight.uniform_(0.5, 1.5, generator=g)
    theirs.bias.uniform_(-1, 1, generator=g)
xt = x.clone().requires_grad_()
yt = theirs(xt)
(yt * cot).sum().backward()
ours = nn.SyncBatchNorm(3)
ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in
                      torch.nn.BatchNorm1d(3).state_dict().items()} | {
    "weight": ember.tensor(theirs.weight.detach().numpy()),
    "bias": ember.tensor(theirs.bias.detach().numpy())})
part = slice(4 * rank, 4 * rank + 4)
xe = ember.tensor(x[part].numpy()).requires_grad_()
ye = ours(xe)
(ye * ember.tensor(cot[part].numpy())).sum().backward()
tol = dict(rtol=1e-4, atol=1e-5)
np.testing.assert_allclose(ye.detach().numpy(), yt[part].detach().numpy(), **tol)
np.testing.assert_allclose(xe.grad.numpy(), xt.grad[part].numpy(), **tol)
for name in ("weight", "bias"):
    grad = getattr(ours, name).grad.clone()
    dist.all_reduce(grad)                      # what DDP does with parameter gradients
    np.testing.assert_allclose(grad.numpy(), getattr(theirs, name).grad.numpy(), **tol)
np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), **tol)
np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), **tol)
ours.eval()                                    # eval: the running statistics, no collective
theirs.eval()
np.testing.assert_allclose(ours(ember.tensor(x[part].numpy())).detach().numpy(),
                           theirs(x[part]).detach().numpy(), **tol)
print(f"rank {rank}: syncbn ok", flush=True)
