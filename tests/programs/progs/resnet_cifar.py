"""A small ResNet in the shape of the CIFAR training scripts: BasicBlock with a 1x1
projection shortcut, BatchNorm2d, AdaptiveAvgPool2d, SGD with Nesterov momentum and weight
decay, CosineAnnealingLR, label-smoothed cross entropy, per-epoch train/eval with
model.train()/model.eval(), and a random-crop + flip augmentation done by indexing with
NumPy-drawn offsets."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

from _common import parse, share_init, write_log


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, num_blocks=(1, 1), num_classes=4):
        super().__init__()
        self.in_planes = 8
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(8, num_blocks[0], 1)
        self.layer2 = self._make_layer(16, num_blocks[1], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.linear = nn.Linear(16, num_classes)

    def _make_layer(self, planes, n, stride):
        layers = []
        for s in [stride] + [1] * (n - 1):
            layers.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.layer1(out))
        out = torch.flatten(self.avgpool(out), 1)
        return self.linear(out)


def main():
    args = parse(epochs=3, batch_size=16, lr=0.05)
    rng = np.random.default_rng(4)
    n = 64
    labels = rng.integers(0, 4, n)
    imgs = rng.standard_normal((n, 3, 12, 12)).astype(np.float32) * 0.5
    for i, c in enumerate(labels):
        imgs[i, c % 3, 2:10, 2 + c:6 + c] += 2.0
    model = ResNet()
    share_init(torch, [model], args.init)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    x_all, y_all = torch.from_numpy(imgs), torch.from_numpy(labels)
    losses, accs = [], []
    for _ in range(args.epochs):
        model.train()
        for b in range(0, n, args.batch_size):
            x, y = x_all[b:b + args.batch_size], y_all[b:b + args.batch_size]
            dx, dy = rng.integers(0, 3, 2)
            x = F.pad(x, (1, 1, 1, 1))[:, :, dy:dy + 12, dx:dx + 12]
            if rng.random() < 0.5:
                x = torch.flip(x, dims=[3])
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        with torch.no_grad():
            correct = (model(x_all).argmax(1) == y_all).sum().item()
        accs.append(correct / n)
    write_log(args.log, losses, accuracy=accs[-1])


if __name__ == "__main__":
    main()
