"""A convolutional denoising autoencoder in the shape of the autoencoder tutorials:
Conv2d/MaxPool2d encoder, nn.Upsample(scale_factor=2, mode='nearest') + Conv2d decoder
with a Sigmoid, noisy inputs made with torch.clamp, MSELoss, Adam with a
MultiStepLR schedule, gradient-free evaluation with model.eval()."""
import numpy as np
import torch
import torch.nn as nn

from _common import parse, share_init, write_log


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(8, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.decoder = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(4, 8, 3, padding=1),
            nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            nn.Conv2d(8, 1, 3, padding=1), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def main():
    args = parse(epochs=4, batch_size=16, lr=5e-3)
    rng = np.random.default_rng(12)
    yy, xx = np.mgrid[0:16, 0:16]
    n = 64
    cx, cy = rng.uniform(4, 12, (2, n, 1, 1))
    clean = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 6.0)[:, None].astype(np.float32)
    noise = rng.normal(0, 0.3, clean.shape).astype(np.float32)
    clean_t, noise_t = torch.from_numpy(clean), torch.from_numpy(noise)
    model = AutoEncoder()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 3], gamma=0.5)
    criterion = nn.MSELoss()
    losses = []
    for _ in range(args.epochs):
        model.train()
        for b in range(0, n, args.batch_size):
            target = clean_t[b:b + args.batch_size]
            noisy = torch.clamp(target + noise_t[b:b + args.batch_size], 0.0, 1.0)
            optimizer.zero_grad()
            loss = criterion(model(noisy), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    with torch.no_grad():
        test = criterion(model(torch.clamp(clean_t + noise_t, 0, 1)), clean_t).item()
    write_log(args.log, losses, test_loss=test)


if __name__ == "__main__":
    main()
