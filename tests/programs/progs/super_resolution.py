"""Sub-pixel super-resolution in the shape of the super_resolution example (ESPCN):
Conv2d layers with orthogonal_ init scaled by calculate_gain('relu'), nn.PixelShuffle for
the upscale, MSELoss, Adam, and PSNR = 10 * log10(1 / mse) on a held-out image."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.init as init
import torch.nn.functional as F

from _common import parse, share_init, write_log


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv4.weight)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


def main():
    args = parse(epochs=5, batch_size=8, lr=2e-3)
    rng = np.random.default_rng(14)
    yy, xx = np.mgrid[0:16, 0:16] / 16.0
    n = 40
    fx, fy, ph = rng.uniform(1, 3, (3, n, 1, 1))
    hi = (0.5 + 0.5 * np.sin(2 * math.pi * (fx * xx + fy * yy) + ph))[:, None]
    hi_t = torch.from_numpy(hi.astype(np.float32))
    lo_t = F.avg_pool2d(hi_t, 2)
    model = Net(upscale_factor=2)
    share_init(torch, [model], args.init)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses = []
    for _ in range(args.epochs):
        for b in range(0, n - 8, args.batch_size):
            optimizer.zero_grad()
            loss = criterion(model(lo_t[b:b + args.batch_size]), hi_t[b:b + args.batch_size])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with torch.no_grad():
        mse = criterion(model(lo_t[n - 8:]), hi_t[n - 8:])
        psnr = 10 * math.log10(1 / mse.item())
    write_log(args.log, losses, psnr=psnr)


if __name__ == "__main__":
    main()
