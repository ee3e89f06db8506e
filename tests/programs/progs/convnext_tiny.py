"""A small ConvNeXt in the shape of timm / the ConvNeXt repository: a 4x4 stride-4 stem, blocks
of a depthwise 7x7 conv, a channels-last permute(0, 2, 3, 1) into nn.LayerNorm(eps=1e-6),
Linear 4x expansion with F.gelu, a LayerScale nn.Parameter(init_values * torch.ones(dim)),
DropPath whose keep mask NumPy decides (x.div(keep_prob) * mask), a channels-first LayerNorm2d
written with F.layer_norm between permutes, a downsampling stage, weights initialised with
trunc_normal_(std=.02) through model.apply; AdamW over param_groups with layer-wise lr decay
and no weight decay for norms, biases and LayerScale, CosineAnnealingWarmRestarts stepped
with a fractional epoch, label-smoothed cross-entropy, and an eval pass under
torch.autocast("cpu", dtype=torch.bfloat16) compared with the float32 logits, its head
also applied by hand (a float32 LayerNorm of bfloat16 features, then ``feats @ W.t()``)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


class DropPath(nn.Module):
    """Stochastic depth; the keep mask is set from outside (NumPy) before each step."""

    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob
        self.mask = None

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training or self.mask is None:
            return x
        keep_prob = 1 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        return x.div(keep_prob) * self.mask.view(shape).to(x.dtype)


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim, drop_path=0.0, ls_init_value=1e-1):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(ls_init_value * torch.ones(dim))
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(F.gelu(self.pwconv1(self.norm(x))))
        x = (self.gamma * x).permute(0, 3, 1, 2)
        return shortcut + self.drop_path(x)


class ConvNeXt(nn.Module):
    def __init__(self, classes=4, dims=(16, 32), depths=(1, 1), drop_path_rate=0.2):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], kernel_size=4, stride=4),
                                  LayerNorm2d(dims[0], eps=1e-6))
        rates = np.linspace(0, drop_path_rate, sum(depths)).tolist()
        self.stages = nn.ModuleList()
        k = 0
        for i, (dim, depth) in enumerate(zip(dims, depths)):
            layers = []
            if i > 0:
                layers += [LayerNorm2d(dims[i - 1], eps=1e-6),
                           nn.Conv2d(dims[i - 1], dim, kernel_size=2, stride=2)]
            layers += [Block(dim, rates[k + j]) for j in range(depth)]
            k += depth
            self.stages.append(nn.Sequential(*layers))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)
        self.apply(self._init_weights)
        self.head.weight.data.mul_(0.5)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=0.02)
            nn.init.constant_(m.bias, 0)

    def forward_features(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return x.mean([-2, -1])

    def forward(self, x):
        return self.head(self.norm(self.forward_features(x)))


def layer_id(name, num_layers):
    if name.startswith("stem"):
        return 0
    if name.startswith("stages"):
        return int(name.split(".")[1]) + 1
    return num_layers - 1


def param_groups_lrd(model, weight_decay=0.05, layer_decay=0.7):
    num_layers = len(model.stages) + 2
    scales = [layer_decay ** (num_layers - 1 - i) for i in range(num_layers)]
    groups = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_decay = p.ndim == 1 or name.endswith(".bias")
        lid = layer_id(name, num_layers)
        key = f"layer_{lid}_{'no_decay' if no_decay else 'decay'}"
        if key not in groups:
            groups[key] = {"params": [], "weight_decay": 0.0 if no_decay else weight_decay,
                           "lr_scale": scales[lid]}
        groups[key]["params"].append(p)
    return list(groups.values())


def make_data(rng, n):
    """Four classes: the bright quadrant of a 16x16 image."""
    y = rng.integers(0, 4, n)
    x = 0.3 * rng.standard_normal((n, 3, 16, 16))
    for i, c in enumerate(y):
        r, col = divmod(int(c), 2)
        x[i, :, r * 8:(r + 1) * 8, col * 8:(col + 1) * 8] += 1.0
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def main():
    args = parse(epochs=4, batch_size=16, lr=4e-3)
    rng = np.random.default_rng(31)
    x_train, y_train = make_data(rng, 64)
    x_test, y_test = make_data(rng, 32)
    model = ConvNeXt()
    share_init(torch, [model], args.init)
    groups = param_groups_lrd(model)
    for g in groups:
        g["lr"] = args.lr * g["lr_scale"]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.999))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2,
                                                                     eta_min=1e-5)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    drop_paths = [m for m in model.modules() if isinstance(m, DropPath)]
    iters = len(x_train) // args.batch_size
    losses, lrs = [], []
    for epoch in range(args.epochs):
        model.train()
        for i in range(iters):
            xb = x_train[i * args.batch_size:(i + 1) * args.batch_size]
            yb = y_train[i * args.batch_size:(i + 1) * args.batch_size]
            for dp in drop_paths:
                keep = rng.random(len(xb)) >= dp.drop_prob
                dp.mask = torch.from_numpy(keep)
            loss = criterion(model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step(epoch + (i + 1) / iters)
            losses.append(loss.item())
            lrs.append([g["lr"] for g in optimizer.param_groups])
    model.eval()
    with torch.no_grad():
        logits = model(x_test)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits_bf16 = model(x_test)
            # the head by hand, as in feature-extraction code: a float32 LayerNorm of the
            # bfloat16 features stays bfloat16, and @ with float32 weights is autocast's matmul
            feats = model.norm(model.forward_features(x_test).bfloat16())
            manual = feats @ model.head.weight.t() + model.head.bias
        acc = (logits.argmax(1) == y_test).float().mean().item()
        bf16_dtype_ok = float(logits_bf16.dtype == torch.bfloat16
                              and feats.dtype == torch.bfloat16)
        manual_close = float((manual.float() - logits).abs().max().item() < 0.1)
        gap = (logits_bf16.float() - logits).abs().max().item()
    write_log(args.log, losses, lrs=lrs, accuracy=acc, bf16_dtype_ok=bf16_dtype_ok,
              manual_close=manual_close,
              bf16_close=float(gap < 0.1), gamma=model.stages[0][0].gamma.mean().item())


if __name__ == "__main__":
    main()
