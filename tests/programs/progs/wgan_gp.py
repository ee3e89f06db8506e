"""WGAN-GP in the shape of the improved-WGAN examples, on a 2-D mixture of Gaussians: an MLP
generator, a critic of Linear / LayerNorm / LeakyReLU(0.2) blocks, the gradient penalty from
torch.autograd.grad(outputs, inputs, grad_outputs=torch.ones_like(...), create_graph=True,
retain_graph=True) on interpolates made requires_grad_(True), gradients flattened with view
and their norm(2, dim=1), n_critic critic steps per generator step with the critic's
parameters toggled by requires_grad_(False/True), Adam(betas=(0.0, 0.9)) for both networks,
and NumPy noise and interpolation weights."""
import numpy as np
import torch
import torch.nn as nn
from torch import autograd

from _common import parse, share_init, write_log


class Generator(nn.Module):
    def __init__(self, z_dim=4, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(z_dim, hidden), nn.ReLU(True),
                                 nn.Linear(hidden, hidden), nn.ReLU(True),
                                 nn.Linear(hidden, 2))

    def forward(self, z):
        return self.net(z)


class Critic(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()

        def block(i, o):
            return [nn.Linear(i, o), nn.LayerNorm(o), nn.LeakyReLU(0.2, inplace=True)]

        self.net = nn.Sequential(*block(2, hidden), *block(hidden, hidden), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def gradient_penalty(critic, real, fake, alpha):
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interpolates = critic(interpolates)
    gradients = autograd.grad(outputs=d_interpolates, inputs=interpolates,
                              grad_outputs=torch.ones_like(d_interpolates),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def main():
    args = parse(iterations=25, batch_size=32, n_critic=3, lr=1e-3, lambda_gp=10.0)
    rng = np.random.default_rng(17)
    centers = np.array([[2, 0], [-2, 0], [0, 2], [0, -2]], np.float32)

    def real_batch(n):
        return torch.from_numpy(centers[rng.integers(0, 4, n)]
                                + 0.1 * rng.standard_normal((n, 2)).astype(np.float32))

    def noise(n):
        return torch.from_numpy(rng.standard_normal((n, 4)).astype(np.float32))

    generator, critic = Generator(), Critic()
    share_init(torch, [generator, critic], args.init)
    opt_g = torch.optim.Adam(generator.parameters(), lr=args.lr, betas=(0.0, 0.9))
    opt_d = torch.optim.Adam(critic.parameters(), lr=args.lr, betas=(0.0, 0.9))
    losses, d_losses, gps = [], [], []
    for _ in range(args.iterations):
        for p in critic.parameters():
            p.requires_grad_(True)
        for _ in range(args.n_critic):
            real = real_batch(args.batch_size)
            with torch.no_grad():
                fake = generator(noise(args.batch_size))
            alpha = torch.from_numpy(rng.random((args.batch_size, 1)).astype(np.float32))
            critic.zero_grad()
            d_real = critic(real).mean()
            d_fake = critic(fake).mean()
            gp = gradient_penalty(critic, real, fake, alpha)
            d_loss = d_fake - d_real + args.lambda_gp * gp
            d_loss.backward()
            opt_d.step()
            d_losses.append(d_loss.item())
            gps.append(gp.item())
        for p in critic.parameters():
            p.requires_grad_(False)
        generator.zero_grad()
        g_loss = -critic(generator(noise(args.batch_size))).mean()
        g_loss.backward()
        opt_g.step()
        losses.append(g_loss.item())
    assert all(p.grad is None or not p.requires_grad for p in critic.parameters())
    with torch.no_grad():
        samples = generator(noise(256))
        spread = samples.std(dim=0).mean().item()
        dist = torch.cdist(samples, torch.from_numpy(centers)).min(dim=1).values.mean().item()
    write_log(args.log, losses, d_losses=d_losses, gp=gps, spread=spread, center_dist=dist)


if __name__ == "__main__":
    main()
