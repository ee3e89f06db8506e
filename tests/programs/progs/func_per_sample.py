"""Per-sample gradients and model ensembling with torch.func, in the shape of PyTorch's
"Per-sample-gradients" and "Model ensembling" tutorials: a small CNN, compute_loss through
functional_call(model, (params, buffers), (batch,)), vmap(grad(compute_loss),
in_dims=(None, None, 0, 0)) checked against a loop of autograd.grad, the per-sample
gradients clipped to a norm and averaged (DP-SGD without the noise) into p.grad for an SGD
step; then an ensemble of MLPs: stack_module_state, a base copy moved to the 'meta' device,
vmap(fmodel, in_dims=(0, 0, None)) and in_dims=(0, 0, 0) over per-model minibatches, the
stacked parameters trained by Adam; vmap(jacrev(...)) input Jacobians and a jvp, per-sample
Hessians (vmap(hessian(...))), jacfwd against jacrev, grad_and_value(has_aux=True) over a
parameter dict, and vmap with in_dims=1, out_dims=1 and chunk_size."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                        stack_module_state, vmap)

from _common import parse, share_init, write_log


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, 1)
        self.conv2 = nn.Conv2d(6, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def main():
    args = parse(steps=8, batch_size=12, max_norm=0.5, lr=0.2, models=4, ens_steps=10)
    rng = np.random.default_rng(5)
    protos = rng.standard_normal((4, 1, 8, 8)).astype(np.float32)

    def image_batch(n):
        y = rng.integers(0, 4, n)
        x = protos[y] + 0.5 * rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
        return torch.from_numpy(x), torch.from_numpy(y)

    model = SimpleCNN()
    members = [MLP() for _ in range(args.models)]
    share_init(torch, [model, *members], args.init)

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return F.nll_loss(predictions, targets)

    ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    losses, grad_norms, loop_err = [], [], 0.0
    for step in range(args.steps):
        data, targets = image_batch(args.batch_size)
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        per_sample = ft_compute_sample_grad(params, buffers, data, targets)
        if step == 0:
            for i in range(3):
                loss = F.nll_loss(model(data[i:i + 1]), targets[i:i + 1])
                loop = torch.autograd.grad(loss, list(model.parameters()))
                for g, (name, _) in zip(loop, model.named_parameters()):
                    loop_err = max(loop_err, (g - per_sample[name][i]).abs().max().item())
        flat = torch.cat([g.flatten(1) for g in per_sample.values()], dim=1)
        norms = flat.norm(2, dim=1)
        factor = (args.max_norm / (norms + 1e-6)).clamp(max=1.0)
        optimizer.zero_grad()
        for name, p in model.named_parameters():
            g = per_sample[name]
            p.grad = torch.einsum("i,i...->...", factor, g) / args.batch_size
        with torch.no_grad():
            losses.append(F.nll_loss(model(data), targets).item())
        optimizer.step()
        grad_norms.append(norms.mean().item())
    assert loop_err < 1e-5, loop_err

    # model ensembling: one vmap over the stacked members
    params, buffers = stack_module_state(members)
    assert all(p.requires_grad and p.is_leaf for p in params.values())
    assert params["fc1.weight"].shape == (args.models, 16, 6)
    base_model = copy.deepcopy(members[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    w = rng.standard_normal((6, 3)).astype(np.float32)
    minibatch = torch.from_numpy(rng.standard_normal((10, 6)).astype(np.float32))
    predictions = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    looped = torch.stack([m(minibatch) for m in members])
    assert torch.allclose(predictions, looped, atol=1e-5)
    ens_opt = torch.optim.Adam(list(params.values()), lr=1e-2)
    ens_losses = []
    for _ in range(args.ens_steps):
        x = rng.standard_normal((args.models, 16, 6)).astype(np.float32)
        y = (x @ w).argmax(-1)
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        logits = vmap(fmodel, in_dims=(0, 0, 0))(params, buffers, x)
        loss = F.cross_entropy(logits.reshape(-1, 3), y.reshape(-1), reduction="none")
        loss = loss.view(args.models, -1).mean(1).sum()
        ens_opt.zero_grad()
        loss.backward()
        ens_opt.step()
        ens_losses.append(loss.item())
    losses += ens_losses

    # input Jacobians of the first member, per sample, and a forward-mode product
    member_params = {k: v[0].detach() for k, v in params.items()}

    def single(x):
        return functional_call(base_model, (member_params, {}), (x,))

    jac = vmap(jacrev(single))(minibatch)
    assert jac.shape == (10, 3, 6)
    tangent = torch.ones_like(minibatch)
    out, jvp_out = jvp(single, (minibatch,), (tangent,))
    assert torch.allclose(jvp_out, (jac @ tangent.unsqueeze(-1)).squeeze(-1), atol=1e-5)
    # forward-over-reverse Hessians per sample, grad_and_value with aux, chunked vmap
    def scalar_out(x):
        return single(x).logsumexp(-1)

    hess = vmap(hessian(scalar_out))(minibatch[:4])
    fwd = vmap(jacfwd(scalar_out))(minibatch)
    rev = vmap(jacrev(scalar_out))(minibatch)
    assert hess.shape == (4, 6, 6) and torch.allclose(hess, hess.transpose(1, 2), atol=1e-5)
    assert torch.allclose(fwd, rev, atol=1e-5)

    def loss_and_pred(p, x, y):
        out = functional_call(base_model, (p, {}), (x,))
        return F.cross_entropy(out, y), out.argmax(-1)

    y = torch.from_numpy((minibatch.numpy() @ w).argmax(-1))
    grads, (value, pred) = grad_and_value(loss_and_pred, has_aux=True)(member_params,
                                                                        minibatch, y)
    chunked = vmap(single, in_dims=1, out_dims=1, chunk_size=3)(minibatch.T.contiguous())
    assert chunked.shape == (3, 10) and torch.allclose(chunked.T, single(minibatch))
    write_log(args.log, losses, grad_norms=grad_norms, jac_norm=jac.norm().item(),
              hess_trace=hess.diagonal(dim1=1, dim2=2).sum().item(), gv_value=value.item(),
              gv_grad=grads["fc1.weight"].abs().sum().item(), gv_correct=(pred == y).sum().item(),
              jvp_sum=jvp_out.sum().item(), ens_pred=predictions.abs().sum().item())


if __name__ == "__main__":
    main()
