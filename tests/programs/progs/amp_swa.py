"""Mixed precision on the CPU with activation checkpointing and stochastic weight averaging,
in the shape of the "Automatic Mixed Precision" recipe, the activation-checkpointing docs
and the SWA tutorial: a residual MLP classifier whose blocks (Linear / BatchNorm1d / GELU)
run through torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False), the forward
and loss under torch.autocast("cpu", dtype=torch.bfloat16), torch.amp.GradScaler("cpu")
(scale, unscale_ before clip_grad_norm_, step, update, a short growth_interval so the scale
grows, one overflowing step that it skips and backs off from), SGD with momentum and
nesterov, CosineAnnealingLR then SWALR (cos annealing) from swa_start, AveragedModel
updated every epoch and an EMA AveragedModel (get_ema_multi_avg_fn) every step, and
update_bn over the training loader to recompute the averaged models' BatchNorm statistics
before evaluation."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

from _common import parse, share_init, write_log


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, 2 * width)
        self.bn = nn.BatchNorm1d(2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.bn(self.fc1(x))))


class ResMLP(nn.Module):
    def __init__(self, d_in=10, width=32, depth=3, classes=4):
        super().__init__()
        self.stem = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            if self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(self.norm(x))


def main():
    args = parse(epochs=6, swa_start=3, batch_size=32, lr=0.05, swa_lr=0.02, overflow_step=7)
    rng = np.random.default_rng(23)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    x = rng.standard_normal((256, 10)).astype(np.float32)
    y = (np.tanh(x) @ w + 0.3 * rng.standard_normal((256, 4))).argmax(1)
    xt = rng.standard_normal((128, 10)).astype(np.float32)
    yt = (np.tanh(xt) @ w).argmax(1)
    train = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=False)

    model = ResMLP()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    swa_model = AveragedModel(model)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    swa_scheduler = SWALR(optimizer, swa_lr=args.swa_lr, anneal_epochs=2,
                          anneal_strategy="cos")
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=5)
    losses, scales, lrs, dtypes_ok = [], [], [], True
    step = 0
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
            dtypes_ok &= logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
            # one step overflows on purpose: the scaler must skip it and back off
            overflow = step == args.overflow_step
            before = model.head.weight.detach().clone()
            scaler.scale(loss * float("inf") if overflow else loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            scale = scaler.get_scale()
            scaler.step(optimizer)
            scaler.update()
            if overflow:
                assert torch.equal(before, model.head.weight) and scaler.get_scale() == scale / 2
            step += 1
            ema_model.update_parameters(model)
            losses.append(loss.item())
            scales.append(scaler.get_scale())
        dtypes_ok &= all(p.grad.dtype == torch.float32 for p in model.parameters())
        if epoch >= args.swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    assert swa_model.n_averaged.item() == args.epochs - args.swa_start

    update_bn(loader, swa_model)
    update_bn(loader, ema_model)
    results = {}
    xt_t, yt_t = torch.from_numpy(xt), torch.from_numpy(yt)
    with torch.no_grad():
        for name, m in [("model", model), ("swa", swa_model), ("ema", ema_model)]:
            m.eval()
            logits = m(xt_t)
            results[f"{name}_loss"] = F.cross_entropy(logits, yt_t).item()
            results[f"{name}_acc"] = (logits.argmax(1) == yt_t).float().mean().item()
        results["swa_bn_mean"] = swa_model.module.blocks[0].bn.running_mean.abs().mean().item()
    assert dtypes_ok
    write_log(args.log, losses, scales=scales, lrs=lrs, **results)


if __name__ == "__main__":
    main()
