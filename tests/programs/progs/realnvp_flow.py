"""A normalizing flow in the shape of the RealNVP / Glow tutorials, on NumPy two-moons data:
affine coupling layers that torch.chunk the input, scales bounded by tanh times a learned
scale, log-determinants summed over features; ActNorm with a data-dependent init (done once
under torch.no_grad with .data.copy_ and a flag registered as a buffer); an invertible linear
map (Glow's 1x1 conv) initialised from a NumPy QR and its log-determinant from
torch.linalg.slogdet; torch.flip between couplings; nn.ModuleList; the base density as
MultivariateNormal(zeros, eye) checked against Independent(Normal(0, 1), 1); the negative
log-likelihood in bits per dimension, Adam with a StepLR, the inverse pass with
torch.linalg.inv for samples from NumPy latents, and torch.distributions.kl_divergence."""
import math

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Independent, MultivariateNormal, Normal, kl_divergence

from _common import parse, share_init, write_log


class ActNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, dim))
        self.log_scale = nn.Parameter(torch.zeros(1, dim))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def forward(self, x):
        if self.initialized.item() == 0:
            with torch.no_grad():
                self.loc.data.copy_(-x.mean(0, keepdim=True))
                self.log_scale.data.copy_(-torch.log(x.std(0, keepdim=True) + 1e-6))
                self.initialized.fill_(1)
        y = (x + self.loc) * torch.exp(self.log_scale)
        return y, self.log_scale.sum().expand(x.size(0))

    def inverse(self, y):
        return y * torch.exp(-self.log_scale) - self.loc


class InvertibleLinear(nn.Module):
    def __init__(self, dim, rng):
        super().__init__()
        q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        self.weight = nn.Parameter(torch.from_numpy(q.astype(np.float32)))

    def forward(self, x):
        _, logabsdet = torch.linalg.slogdet(self.weight)
        return x @ self.weight.T, logabsdet.expand(x.size(0))

    def inverse(self, y):
        return y @ torch.linalg.inv(self.weight).T


class AffineCoupling(nn.Module):
    def __init__(self, dim, hidden=32):
        super().__init__()
        half = dim // 2
        self.net = nn.Sequential(nn.Linear(half, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, 2 * (dim - half)))
        self.scale = nn.Parameter(torch.ones(dim - half))

    def _st(self, xa):
        s, t = self.net(xa).chunk(2, dim=-1)
        return self.scale * torch.tanh(s), t

    def forward(self, x):
        xa, xb = torch.chunk(x, 2, dim=1)
        s, t = self._st(xa)
        yb = xb * torch.exp(s) + t
        return torch.cat([xa, yb], dim=1), s.sum(dim=1)

    def inverse(self, y):
        ya, yb = y.chunk(2, dim=1)
        s, t = self._st(ya)
        return torch.cat([ya, (yb - t) * torch.exp(-s)], dim=1)


class Flow(nn.Module):
    def __init__(self, dim=2, n_layers=4, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        layers = []
        for _ in range(n_layers):
            layers += [ActNorm(dim), InvertibleLinear(dim, rng), AffineCoupling(dim)]
        self.layers = nn.ModuleList(layers)
        self.register_buffer("base_loc", torch.zeros(dim))
        self.register_buffer("base_cov", torch.eye(dim))

    @property
    def base(self):
        return MultivariateNormal(self.base_loc, covariance_matrix=self.base_cov)

    def forward(self, x):
        log_det = torch.zeros(x.size(0))
        for i, layer in enumerate(self.layers):
            x, ld = layer(x)
            log_det = log_det + ld
            if isinstance(layer, AffineCoupling) and i < len(self.layers) - 1:
                x = torch.flip(x, dims=[1])
        return x, log_det

    def log_prob(self, x):
        z, log_det = self(x)
        return self.base.log_prob(z) + log_det

    def inverse(self, z):
        for i in reversed(range(len(self.layers))):
            layer = self.layers[i]
            if isinstance(layer, AffineCoupling) and i < len(self.layers) - 1:
                z = z.flip(1)
            z = layer.inverse(z)
        return z


def two_moons(rng, n):
    t = rng.uniform(0, math.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    pts = np.stack([x, y], 1) + 0.05 * rng.standard_normal((n, 2))
    return torch.from_numpy(pts.astype(np.float32))


def main():
    args = parse(steps=40, batch_size=64, lr=5e-3)
    rng = np.random.default_rng(23)
    flow = Flow()
    flow(two_moons(rng, 256))   # the ActNorm layers' data-dependent init
    share_init(torch, [flow], args.init)
    optimizer = torch.optim.Adam(flow.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=15, gamma=0.5)
    losses = []
    for _ in range(args.steps):
        x = two_moons(rng, args.batch_size)
        nll = -flow.log_prob(x).mean()
        loss = nll / (2 * math.log(2))   # bits per dimension
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    flow.eval()
    with torch.no_grad():
        x = two_moons(rng, 200)
        z, _ = flow(x)
        std_normal = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
        base_gap = (flow.base.log_prob(z) - std_normal.log_prob(z)).abs().max().item()
        recon = (flow.inverse(z) - x).abs().max().item()
        samples = flow.inverse(torch.from_numpy(rng.standard_normal((200, 2)).astype(np.float32)))
        fitted = MultivariateNormal(samples.mean(0), covariance_matrix=torch.cov(samples.T))
        data_fit = MultivariateNormal(x.mean(0), covariance_matrix=torch.cov(x.T))
        kl = kl_divergence(fitted, data_fit).item()
        test_nll = -flow.log_prob(x).mean().item()
    write_log(args.log, losses, test_nll=test_nll, kl=kl, base_gap_small=float(base_gap < 1e-4),
              recon_small=float(recon < 1e-3), sample_mean=samples.mean(0).tolist())


if __name__ == "__main__":
    main()
