"""A variational autoencoder in the shape of the classic VAE example: fc encoder to mu and
logvar, the reparameterisation trick (the standard-normal noise comes from NumPy so both
frameworks draw the same), sigmoid decoder, binary_cross_entropy(reduction='sum') plus the
KL term, Adam, and a no_grad evaluation pass."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

from _common import parse, share_init, write_log


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main():
    args = parse(epochs=3, batch_size=32, lr=1e-3)
    rng = np.random.default_rng(6)
    protos = rng.random((4, 64)) > 0.5
    data = np.clip(protos[rng.integers(0, 4, 256)] + rng.normal(0, 0.1, (256, 64)), 0, 1)
    data = torch.from_numpy(data.astype(np.float32)).view(-1, 1, 8, 8)
    model = VAE()
    share_init(torch, [model], args.init)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    losses = []
    for _ in range(args.epochs):
        model.train()
        for b in range(0, len(data), args.batch_size):
            x = data[b:b + args.batch_size]
            eps = torch.from_numpy(rng.standard_normal((len(x), 4)).astype(np.float32))
            optimizer.zero_grad()
            recon, mu, logvar = model(x, eps)
            loss = loss_function(recon, x, mu, logvar)
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / len(x))
    model.eval()
    with torch.no_grad():
        recon, mu, logvar = model(data, torch.zeros(len(data), 4))
        test_loss = loss_function(recon, data, mu, logvar).item() / len(data)
    write_log(args.log, losses, test_loss=test_loss)


if __name__ == "__main__":
    main()
