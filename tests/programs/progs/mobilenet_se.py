"""A MobileNetV3 / EfficientNet-style CNN in the shape of torchvision's: Conv-BN-activation
blocks (bias=False, Hardswish / ReLU / SiLU), inverted residuals with depthwise convolutions
(groups=channels), squeeze-and-excitation through F.adaptive_avg_pool2d and F.hardsigmoid,
stochastic depth on the residual branch with a per-sample survival mask (drawn by NumPy so
both frameworks drop the same rows), kaiming_normal_(mode="fan_out") init, CrossEntropyLoss
with label_smoothing, SGD with nesterov momentum and weight decay, OneCycleLR stepped per
batch, BatchNorm's running statistics in an eval pass, and a Grad-CAM of the last block
(register_forward_hook for its activations, register_full_backward_hook for their
gradients, F.interpolate of the map to the input size)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


def make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNActivation(nn.Sequential):
    def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1, activation=nn.Hardswish):
        padding = (kernel_size - 1) // 2
        layers = [nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=False),
                  nn.BatchNorm2d(cout, eps=0.001)]
        if activation is not None:
            layers.append(activation(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeeze_factor=4):
        super().__init__()
        squeeze = make_divisible(channels // squeeze_factor, 8)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = self.fc2(self.relu(self.fc1(scale)))
        return x * F.hardsigmoid(scale, inplace=True)


def stochastic_depth(x, survive, p, training):
    """torchvision's stochastic_depth(mode="row") with the Bernoulli draw passed in."""
    if not training or p == 0.0:
        return x
    size = [x.shape[0]] + [1] * (x.ndim - 1)
    noise = torch.empty(size, dtype=x.dtype).copy_(survive.view(size))
    noise.div_(1.0 - p)
    return x * noise


class InvertedResidual(nn.Module):
    def __init__(self, cin, expand, cout, kernel, stride, use_se, activation, drop_p):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        layers = []
        if expand != cin:
            layers.append(ConvBNActivation(cin, expand, 1, activation=activation))
        layers.append(ConvBNActivation(expand, expand, kernel, stride, groups=expand,
                                       activation=activation))
        if use_se:
            layers.append(SqueezeExcitation(expand))
        layers.append(ConvBNActivation(expand, cout, 1, activation=None))
        self.block = nn.Sequential(*layers)
        self.drop_p = drop_p

    def forward(self, x, survive):
        result = self.block(x)
        if self.use_res_connect:
            result = stochastic_depth(result, survive, self.drop_p, self.training) + x
        return result


class MobileNet(nn.Module):
    # cin, expand, cout, kernel, stride, use_se, activation
    SETTINGS = [(16, 16, 16, 3, 2, True, nn.ReLU),
                (16, 48, 24, 3, 2, False, nn.ReLU),
                (24, 72, 24, 3, 1, False, nn.ReLU),
                (24, 72, 32, 5, 1, True, nn.Hardswish),
                (32, 96, 32, 5, 1, True, nn.SiLU)]

    def __init__(self, classes=4, drop_p=0.2):
        super().__init__()
        self.stem = ConvBNActivation(3, 16, 3, stride=1)
        self.blocks = nn.ModuleList(InvertedResidual(*s, drop_p=drop_p) for s in self.SETTINGS)
        self.head_conv = ConvBNActivation(32, 96, 1)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(96, 64), nn.Hardswish(inplace=True),
                                        nn.Linear(64, classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x, survive=None):
        x = self.stem(x)
        for i, block in enumerate(self.blocks):
            x = block(x, None if survive is None else survive[:, i])
        x = self.avgpool(self.head_conv(x))
        return self.classifier(torch.flatten(x, 1))


def main():
    args = parse(epochs=8, batch_size=16, lr=0.1)
    rng = np.random.default_rng(41)
    n, classes = 64, 4
    y = rng.integers(0, classes, n)
    x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32) * 0.5
    for i, c in enumerate(y):  # each class: a bright stripe in a different quadrant/channel
        r, col = (c // 2) * 8, (c % 2) * 8
        x[i, c % 3, r:r + 8, col:col + 8] += 2.0
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    model = MobileNet(classes)
    share_init(torch, [model], args.init)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                weight_decay=4e-5)
    steps_per_epoch = n // args.batch_size
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr,
                                                    epochs=args.epochs,
                                                    steps_per_epoch=steps_per_epoch)
    losses, lrs = [], []
    for _ in range(args.epochs):
        model.train()
        for b in range(0, n, args.batch_size):
            xb, yb = x[b:b + args.batch_size], y[b:b + args.batch_size]
            survive = torch.from_numpy(
                (rng.random((len(xb), len(model.blocks))) >= 0.2).astype(np.float32))
            optimizer.zero_grad()
            loss = criterion(model(xb, survive), yb)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            lrs.append(optimizer.param_groups[0]["lr"])
    model.eval()
    with torch.no_grad():
        logits = model(x)
        eval_loss = F.cross_entropy(logits, y, label_smoothing=0.1).item()
        acc = (logits.argmax(1) == y).float().mean().item()
        running_var = model.stem[1].running_var.mean().item()
    # Grad-CAM on the last block, as the Grad-CAM tutorials hook a torchvision model
    store = {}
    target = model.blocks[-1]
    h1 = target.register_forward_hook(lambda m, inp, out: store.update(act=out.detach()))
    h2 = target.register_full_backward_hook(
        lambda m, grad_in, grad_out: store.update(grad=grad_out[0].detach()))
    images = x[:8].clone().requires_grad_(True)
    logits = model(images)
    model.zero_grad()
    logits.gather(1, logits.argmax(1, keepdim=True)).sum().backward()
    h1.remove()
    h2.remove()
    weights = store["grad"].mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * store["act"]).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=images.shape[-2:], mode="bilinear", align_corners=False)
    cam = cam / (cam.amax(dim=(2, 3), keepdim=True) + 1e-8)
    cam_mean = cam.mean().item()
    saliency = images.grad.abs().mean().item()
    write_log(args.log, losses, lr=lrs, eval_loss=eval_loss, accuracy=acc,
              running_var=running_var, cam_mean=cam_mean, saliency=saliency)


if __name__ == "__main__":
    main()
