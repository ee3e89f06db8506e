"""MAML on sine-wave regression, in the shape of the MAML examples (Finn et al., 2017; the
learn2learn / higher-free PyTorch versions): an MLP written functionally over a list of
parameters (F.linear with the fast weights), an inner loop of SGD steps whose gradients come
from torch.autograd.grad(loss, fast_weights, create_graph=True) so that the meta-gradient is
second order, a meta-batch of tasks whose query losses are averaged and backpropagated into
the meta-parameters (nn.ParameterList), Adam as the meta-optimizer, a first-order variant
(create_graph=False, gradients detached) compared on the same tasks, a learned
per-parameter inner learning rate (Meta-SGD) trained alongside, and the functorch form of
the inner loop (torch.func.grad over functional_call) on some meta-steps, its meta-gradient
checked against the autograd.grad one."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad

from _common import parse, share_init, write_log


class SineLearner(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        sizes = [(hidden, 1), (hidden, hidden), (1, hidden)]
        self.weights = nn.ParameterList()
        for out_f, in_f in sizes:
            w = nn.Parameter(torch.empty(out_f, in_f))
            nn.init.kaiming_uniform_(w, a=5 ** 0.5)
            self.weights.append(w)
            self.weights.append(nn.Parameter(torch.zeros(out_f)))
        # Meta-SGD: a learned step size per parameter tensor element
        self.inner_lrs = nn.ParameterList(
            [nn.Parameter(torch.full_like(p, 0.01)) for p in self.weights])

    def forward(self, x, params=None):
        params = list(self.weights) if params is None else params
        for i in range(0, len(params) - 2, 2):
            x = F.relu(F.linear(x, params[i], params[i + 1]))
        return F.linear(x, params[-2], params[-1])


def adapt(model, x, y, steps, lr, first_order=False, meta_sgd=False):
    fast = list(model.weights)
    for _ in range(steps):
        loss = F.mse_loss(model(x, fast), y)
        grads = torch.autograd.grad(loss, fast, create_graph=not first_order)
        if first_order:
            grads = [g.detach() for g in grads]
        if meta_sgd:
            fast = [w - a * g for w, a, g in zip(fast, model.inner_lrs, grads)]
        else:
            fast = [w - lr * g for w, g in zip(fast, grads)]
    return fast


def adapt_func(model, x, y, steps, lr):
    """The same inner loop with torch.func (the functorch MAML example): grad of a loss
    over a parameter dict, through functional_call; the outer backward differentiates
    through it as through autograd.grad(create_graph=True)."""
    def inner_loss(params, x, y):
        return F.mse_loss(functional_call(model, params, (x,)), y)

    fast = {name: p for name, p in model.named_parameters() if name.startswith("weights.")}
    for _ in range(steps):
        grads = grad(inner_loss)(fast, x, y)
        fast = {name: w - lr * grads[name] for name, w in fast.items()}
    return list(fast.values())


def main():
    args = parse(meta_steps=12, tasks=4, shots=10, inner_steps=2, inner_lr=0.01, meta_lr=1e-3)
    rng = np.random.default_rng(3)

    def task():
        amp, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
        xs = rng.uniform(-5, 5, (2 * args.shots, 1)).astype(np.float32)
        ys = (amp * np.sin(xs - phase)).astype(np.float32)
        x, y = torch.from_numpy(xs), torch.from_numpy(ys)
        return x[:args.shots], y[:args.shots], x[args.shots:], y[args.shots:]

    model = SineLearner()
    share_init(torch, [model], args.init)
    meta_opt = torch.optim.Adam(model.parameters(), lr=args.meta_lr)
    losses, fo_losses, lr_means = [], [], []
    for step in range(args.meta_steps):
        meta_sgd = step % 3 == 2
        meta_opt.zero_grad()
        tasks = [task() for _ in range(args.tasks)]
        meta_loss = 0.0
        for xs, ys, xq, yq in tasks:
            if step % 3 == 1:
                fast = adapt_func(model, xs, ys, args.inner_steps, args.inner_lr)
            else:
                fast = adapt(model, xs, ys, args.inner_steps, args.inner_lr, meta_sgd=meta_sgd)
            meta_loss = meta_loss + F.mse_loss(model(xq, fast), yq)
        meta_loss = meta_loss / args.tasks
        meta_loss.backward()
        if step == 0:  # the torch.func inner loop gives the same second-order meta-gradient
            grads = [p.grad.clone() for p in model.weights]
            func_loss = sum(F.mse_loss(model(xq, adapt_func(model, xs, ys, args.inner_steps,
                                                            args.inner_lr)), yq)
                            for xs, ys, xq, yq in tasks) / args.tasks
            func_grads = torch.autograd.grad(func_loss, list(model.weights))
            assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6)
                       for a, b in zip(grads, func_grads))
        if not meta_sgd:
            assert all(a.grad is None for a in model.inner_lrs)
        # the first-order approximation's meta-gradient on the same tasks, for comparison
        fo_grads = None
        for xs, ys, xq, yq in tasks[:2]:
            fast = adapt(model, xs, ys, args.inner_steps, args.inner_lr, first_order=True)
            g = torch.autograd.grad(F.mse_loss(model(xq, fast), yq), fast)
            fo_grads = g if fo_grads is None else [a + b for a, b in zip(fo_grads, g)]
        fo_losses.append(sum(g.norm() ** 2 for g in fo_grads).sqrt().item())
        nn.utils.clip_grad_value_(model.parameters(), 10.0)
        meta_opt.step()
        losses.append(meta_loss.item())
        lr_means.append(torch.stack([a.mean() for a in model.inner_lrs]).mean().item())

    # evaluation: loss on a new task before and after adaptation (gradients still needed)
    xs, ys, xq, yq = task()
    before = F.mse_loss(model(xq), yq).item()
    fast = adapt(model, xs, ys, 5, args.inner_lr)
    after = F.mse_loss(model(xq, fast), yq).item()
    write_log(args.log, losses, fo_grad_norms=fo_losses, inner_lr_means=lr_means,
              before=before, after=after)


if __name__ == "__main__":
    main()
