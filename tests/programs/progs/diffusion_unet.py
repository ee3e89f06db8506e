"""A tiny DDPM denoiser in the shape of the diffusion tutorials: a UNet of GroupNorm / SiLU
residual blocks conditioned on sinusoidal time embeddings (torch.cat of sin and cos), a
strided-conv downsample, an upsample through ConvTranspose2d plus F.interpolate, a skip
concatenation, the noise schedule as buffers (linspace, cumprod), the forward process with
NumPy noise (in place of torch.randn_like, so both frameworks draw the same), MSE on the
noise, AdamW, clip_grad_norm_, an EMA copy of the weights (copy.deepcopy, requires_grad_,
torch._foreach_lerp_ under torch.no_grad, as timm's ModelEmaV3), and one reverse
sampling step with the EMA model."""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim, groups=4):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb_proj = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    def __init__(self, ch=16, tdim=32):
        super().__init__()
        self.tdim = tdim
        self.time_mlp = nn.Sequential(nn.Linear(tdim, 2 * tdim), nn.SiLU(),
                                      nn.Linear(2 * tdim, tdim))
        self.inc = nn.Conv2d(1, ch, 3, padding=1)
        self.down = ResBlock(ch, ch, tdim)
        self.downsample = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.mid = ResBlock(ch, 2 * ch, tdim)
        self.upsample = nn.ConvTranspose2d(2 * ch, ch, 4, stride=2, padding=1)
        self.up_conv = nn.Conv2d(2 * ch, ch, 1)
        self.up = ResBlock(2 * ch, ch, tdim)
        self.out_norm = nn.GroupNorm(4, ch)
        self.out = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x, t):
        temb = self.time_mlp(timestep_embedding(t, self.tdim))
        h0 = self.down(self.inc(x), temb)
        h = self.mid(self.downsample(h0), temb)
        h = self.upsample(h) + self.up_conv(
            F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False))
        h = self.up(torch.cat([h, h0], dim=1), temb)
        return self.out(F.silu(self.out_norm(h)))


class Diffusion(nn.Module):
    def __init__(self, steps=50):
        super().__init__()
        betas = torch.linspace(1e-4, 0.05, steps)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("betas", betas)
        self.register_buffer("sqrt_ac", alphas_cumprod.sqrt())
        self.register_buffer("sqrt_1m_ac", (1.0 - alphas_cumprod).sqrt())

    def q_sample(self, x0, t, noise):
        return (self.sqrt_ac[t].view(-1, 1, 1, 1) * x0
                + self.sqrt_1m_ac[t].view(-1, 1, 1, 1) * noise)


def main():
    args = parse(epochs=3, batch_size=16, lr=2e-3, ema_decay=0.9)
    rng = np.random.default_rng(21)
    n, size, steps = 64, 16, 50
    imgs = np.zeros((n, 1, size, size), np.float32)
    for i in range(n):  # bright squares on a dark field, in [-1, 1]
        r, c, w = rng.integers(0, 10), rng.integers(0, 10), rng.integers(3, 7)
        imgs[i, 0, r:r + w, c:c + w] = 1.0
    data = torch.from_numpy(imgs * 2 - 1)
    model = UNet()
    share_init(torch, [model], args.init)
    ema = copy.deepcopy(model).requires_grad_(False)
    diffusion = Diffusion(steps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    losses, norms = [], []
    for _ in range(args.epochs):
        model.train()
        for b in range(0, n, args.batch_size):
            x0 = data[b:b + args.batch_size]
            t = torch.from_numpy(rng.integers(0, steps, len(x0)))
            noise = torch.from_numpy(rng.standard_normal(x0.shape).astype(np.float32))
            loss = F.mse_loss(model(diffusion.q_sample(x0, t, noise), t), noise)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
            optimizer.step()
            with torch.no_grad():   # timm's ModelEmaV3 update
                ema_params = tuple(ema.parameters())
                torch._foreach_lerp_(ema_params, tuple(model.parameters()),
                                     weight=1.0 - args.ema_decay)
            losses.append(loss.item())
    ema.eval()
    with torch.no_grad():
        t = torch.full((n,), steps // 2, dtype=torch.long)
        noise = torch.from_numpy(rng.standard_normal(data.shape).astype(np.float32))
        x_t = diffusion.q_sample(data, t, noise)
        eps = ema(x_t, t)
        ema_loss = F.mse_loss(eps, noise).item()
        beta = diffusion.betas[t].view(-1, 1, 1, 1)
        x_prev = (x_t - beta / diffusion.sqrt_1m_ac[t].view(-1, 1, 1, 1) * eps) / torch.sqrt(
            1.0 - beta)
        sample_mean = x_prev.clamp(-1, 1).abs().mean().item()
    write_log(args.log, losses, grad_norm=norms, ema_loss=ema_loss, sample_mean=sample_mean)


if __name__ == "__main__":
    main()
