"""Neural style transfer in the shape of the PyTorch tutorial, with a small fixed random CNN in
place of VGG: a Normalization module whose mean / std are buffers viewed as (-1, 1, 1), the
feature network frozen with requires_grad_(False) and eval(), MaxPool2d swapped for
AvgPool2d by walking named_children, features captured with register_forward_hook (the
handles removed at the end), Gram matrices with torch.bmm divided by the element count,
content and style losses with F.mse_loss against detached targets, a total-variation term
with torch.diff, the input image optimised by optim.LBFGS([img.requires_grad_()]) through a
closure that clamps the image with clamp_ under torch.no_grad, and a final
img.data.clamp_(0, 1)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(-1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(-1, 1, 1))

    def forward(self, img):
        return (img - self.mean) / self.std


def feature_net():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True))


def gram_matrix(feat):
    b, c, h, w = feat.size()
    f = feat.view(b, c, h * w)
    return torch.bmm(f, f.transpose(1, 2)).div(c * h * w)


def total_variation(img):
    return torch.diff(img, dim=2).abs().mean() + torch.diff(img, dim=3).abs().mean()


def main():
    args = parse(steps=6, lr=0.5, max_iter=3, style_weight=3e2, content_weight=1.0,
                 tv_weight=1e-2)
    rng = np.random.default_rng(37)
    yy, xx = np.mgrid[0:24, 0:24] / 23.0
    content = np.stack([xx, yy, 0.5 * np.ones_like(xx)])[None]  # a smooth gradient
    stripes = (np.sin(xx * 20) > 0).astype(np.float64)
    style = np.stack([stripes, 1 - stripes, 0.5 * stripes])[None] * 0.8 + 0.1
    content_img = torch.from_numpy(content.astype(np.float32))
    style_img = torch.from_numpy(style.astype(np.float32))

    cnn = feature_net()
    share_init(torch, [cnn], args.init)
    for name, child in cnn.named_children():
        if isinstance(child, nn.MaxPool2d):
            setattr(cnn, name, nn.AvgPool2d(kernel_size=2, stride=2))
    model = nn.Sequential(Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), cnn)
    model.requires_grad_(False).eval()

    captured = {}

    def save_output(name):
        def hook(module, inputs, output):
            captured[name] = output
        return hook

    style_layers = {"0": cnn[0], "2": cnn[2], "5": cnn[5]}
    content_layers = {"7": cnn[7]}
    handles = [m.register_forward_hook(save_output(n))
               for n, m in {**style_layers, **content_layers}.items()]

    model(style_img)
    style_targets = {n: gram_matrix(captured[n]).detach() for n in style_layers}
    model(content_img)
    content_targets = {n: captured[n].detach() for n in content_layers}

    noise = rng.uniform(-0.1, 0.1, content.shape).astype(np.float32)
    img = (content_img + torch.from_numpy(noise)).clamp(0, 1).clone()
    optimizer = torch.optim.LBFGS([img.requires_grad_()], lr=args.lr, max_iter=args.max_iter)
    losses, parts = [], []
    for _ in range(args.steps):
        def closure():
            with torch.no_grad():
                img.clamp_(0, 1)
            optimizer.zero_grad()
            model(img)
            style_score = sum(F.mse_loss(gram_matrix(captured[n]), style_targets[n])
                              for n in style_layers)
            content_score = sum(F.mse_loss(captured[n], content_targets[n])
                                for n in content_layers)
            loss = (args.style_weight * style_score + args.content_weight * content_score
                    + args.tv_weight * total_variation(img))
            loss.backward()
            parts.append([style_score.item(), content_score.item()])
            return loss
        losses.append(optimizer.step(closure).item())
    for h in handles:
        h.remove()
    img.data.clamp_(0, 1)
    captured.clear()
    with torch.no_grad():
        model(img)
    write_log(args.log, losses, parts=parts, hooks_removed=float(not captured),
              img_mean=img.mean().item(), img_grad_none=float(cnn[0].weight.grad is None),
              state=len(optimizer.state_dict()["state"][0]))


if __name__ == "__main__":
    main()
