"""A DCGAN in the shape of the classic example: transposed-convolution generator with
BatchNorm2d/ReLU/Tanh, convolutional discriminator with LeakyReLU/Sigmoid, the weights_init
hook applied with Module.apply, BCELoss with real/fake labels, two Adam optimizers with
betas=(0.5, 0.999), the generator trained through the discriminator. The latent noise is
drawn by NumPy so both frameworks see the same batches."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

from _common import parse, share_init, write_log

nz, ngf, ndf, nc = 8, 8, 8, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.constant_(m.bias, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid())

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main():
    args = parse(iters=12, batch_size=16, lr=2e-4)
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:16, 0:16]
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    share_init(torch, [netG, netD], args.init)
    criterion = nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
    losses = []
    for _ in range(args.iters):
        cx = rng.uniform(4, 12, (args.batch_size, 1, 1))
        blobs = np.exp(-((xx - cx) ** 2 + (yy - 8) ** 2) / 8.0) * 2 - 1
        real = torch.from_numpy(blobs[:, None].astype(np.float32))
        noise = torch.from_numpy(rng.standard_normal((args.batch_size, nz, 1, 1))
                                 .astype(np.float32))
        netD.zero_grad()
        label = torch.full((args.batch_size,), real_label, dtype=torch.float)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        fake = netG(noise)
        label.fill_(fake_label)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        losses += [(errD_real + errD_fake).item(), errG.item()]
    write_log(args.log, losses)


if __name__ == "__main__":
    main()
