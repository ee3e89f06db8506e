"""A mixture density network, in the shape of the MDN examples (Bishop, 1994; the
torch.distributions versions): an MLP head giving mixture logits, means and log-scales,
torch.distributions.MixtureSameFamily(Categorical(logits=...), Independent(Normal(loc,
scale), 1)) over a 2-D target whose conditional is bimodal, trained on -log_prob with
Adam and ReduceLROnPlateau; the mixture's mean / variance, log_prob checked against a
hand-written logsumexp over the components, Normal.rsample's reparameterized gradient,
LowRankMultivariateNormal and MultivariateNormal(scale_tril) log-likelihoods of the same
data, kl_divergence between Independent Normals, entropy of the Categorical, sample()
shapes, a univariate mixture's cdf (the calibration of the second output), validate_args
rejecting a negative scale, and enumerate_support."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (Categorical, Independent, LowRankMultivariateNormal,
                                 MixtureSameFamily, MultivariateNormal, Normal,
                                 kl_divergence)

from _common import parse, share_init, write_log


class MDN(nn.Module):
    def __init__(self, d_in=1, d_out=2, components=4, hidden=32):
        super().__init__()
        self.k, self.d = components, d_out
        self.body = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(),
                                  nn.Linear(hidden, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, components)
        self.loc = nn.Linear(hidden, components * d_out)
        self.log_scale = nn.Linear(hidden, components * d_out)

    def forward(self, x):
        h = self.body(x)
        loc = self.loc(h).view(-1, self.k, self.d)
        scale = F.softplus(self.log_scale(h)).view(-1, self.k, self.d) + 1e-3
        mix = Categorical(logits=self.logits(h))
        comp = Independent(Normal(loc, scale), 1)
        return MixtureSameFamily(mix, comp)


def main():
    args = parse(steps=30, batch_size=64, lr=5e-3)
    rng = np.random.default_rng(29)

    def batch(n):
        x = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
        branch = rng.integers(0, 2, (n, 1)) * 2 - 1
        y = np.concatenate([branch * np.sqrt(np.abs(x) + 0.1), np.sin(3 * x)], 1)
        y = y + 0.05 * rng.standard_normal(y.shape)
        return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))

    model = MDN()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                         patience=2)
    losses, lrs, manual_err = [], [], 0.0
    for step in range(args.steps):
        x, y = batch(args.batch_size)
        dist = model(x)
        assert dist.batch_shape == (args.batch_size,) and dist.event_shape == (2,)
        nll = -dist.log_prob(y).mean()
        if step == 0:
            comp = dist.component_distribution.base_dist
            per = comp.log_prob(y.unsqueeze(1)).sum(-1)
            manual = torch.logsumexp(per + dist.mixture_distribution.logits, dim=-1)
            manual_err = (manual - dist.log_prob(y)).abs().max().item()
        # rsample is reparameterized: d(sample)/d(loc) is 1 whatever noise was drawn
        comp = dist.component_distribution.base_dist
        draw = Normal(comp.loc, comp.scale.detach()).rsample()
        loc_grad = torch.autograd.grad(draw.sum(), comp.loc, retain_graph=True)[0]
        assert draw.requires_grad and torch.equal(loc_grad, torch.ones_like(comp.loc))
        optimizer.zero_grad()
        nll.backward()
        optimizer.step()
        plateau.step(nll.item())
        losses.append(nll.item())
        lrs.append(optimizer.param_groups[0]["lr"])
    assert manual_err < 1e-4, manual_err

    model.eval()
    extra = {}
    with torch.no_grad():
        x, y = batch(256)
        dist = model(x)
        extra["test_nll"] = -dist.log_prob(y).mean().item()
        extra["mean"] = dist.mean.mean(0).tolist()
        extra["variance"] = dist.variance.mean(0).tolist()
        extra["mix_entropy"] = dist.mixture_distribution.entropy().mean().item()
        assert dist.sample().shape == (256, 2) and dist.sample((3,)).shape == (3, 256, 2)
        # Gaussian fits of the same data, full covariance and low rank
        centred = y - y.mean(0)
        cov = centred.T @ centred / (len(y) - 1)
        mvn = MultivariateNormal(y.mean(0), scale_tril=torch.linalg.cholesky(cov))
        lowrank = LowRankMultivariateNormal(y.mean(0), cov_factor=centred[:2].T.contiguous()
                                            / math.sqrt(len(y)), cov_diag=cov.diagonal())
        extra["mvn_nll"] = -mvn.log_prob(y).mean().item()
        extra["lowrank_nll"] = -lowrank.log_prob(y).mean().item()
        comp = dist.component_distribution
        first = Independent(Normal(comp.base_dist.loc[:, 0], comp.base_dist.scale[:, 0]), 1)
        second = Independent(Normal(comp.base_dist.loc[:, 1], comp.base_dist.scale[:, 1]), 1)
        extra["kl_01"] = kl_divergence(first, second).mean().item()
        # the second output's marginal: a univariate mixture, its cdf and support checks
        marginal = MixtureSameFamily(dist.mixture_distribution,
                                     Normal(comp.base_dist.loc[..., 1],
                                            comp.base_dist.scale[..., 1]))
        cdf = marginal.cdf(y[:, 1])
        extra["cdf_mean"] = cdf.mean().item()
        extra["coverage"] = ((cdf > 0.05) & (cdf < 0.95)).float().mean().item()
        try:
            Normal(torch.zeros(2), -torch.ones(2), validate_args=True)
            raise AssertionError("a negative scale was accepted")
        except ValueError:
            pass
        support = Categorical(logits=torch.zeros(3)).enumerate_support()
        assert support.tolist() == [0, 1, 2]
    write_log(args.log, losses, lrs=lrs, **extra)


if __name__ == "__main__":
    main()
