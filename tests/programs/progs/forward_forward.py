"""Hinton's forward-forward algorithm in the shape of its public PyTorch example: each layer
is trained on its own with its own Adam, goodness = mean squared activation, positive data
carries the true label in its first pixels and negative data a wrong one,
the per-layer loss is softplus(-(g_pos - threshold)) and softplus(g_neg - threshold),
inputs are L2-normalised per layer, and prediction picks the label of highest goodness."""
import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam

from _common import parse, share_init, write_log


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, lr):
        super().__init__(in_features, out_features)
        self.relu = torch.nn.ReLU()
        self.threshold = 2.0
        self.lr = lr

    def make_opt(self):
        self.opt = Adam(self.parameters(), lr=self.lr)

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train_step(self, x_pos, x_neg):
        g_pos = self.forward(x_pos).pow(2).mean(1)
        g_neg = self.forward(x_neg).pow(2).mean(1)
        loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold,
                                                  g_neg - self.threshold]))).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return self.forward(x_pos).detach(), self.forward(x_neg).detach(), loss.item()


class Net(torch.nn.Module):
    def __init__(self, dims, lr):
        super().__init__()
        self.layers = nn.ModuleList([Layer(dims[d], dims[d + 1], lr)
                                     for d in range(len(dims) - 1)])

    def predict(self, x, num_classes):
        goodness_per_label = []
        for label in range(num_classes):
            h = overlay_y_on_x(x, torch.full((x.shape[0],), label, dtype=torch.long),
                               num_classes)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        return torch.cat(goodness_per_label, 1).argmax(1)


def overlay_y_on_x(x, y, num_classes):
    x_ = x.clone()
    x_[:, :num_classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


def main():
    args = parse(steps=25, lr=0.03)
    rng = np.random.default_rng(8)
    k, d, n = 4, 32, 128
    y = rng.integers(0, k, n)
    centers = rng.standard_normal((k, d)) * 2
    x = torch.from_numpy((centers[y] + rng.standard_normal((n, d))).astype(np.float32))
    y = torch.from_numpy(y)
    net = Net([d, 24, 24], args.lr)
    share_init(torch, [net], args.init)
    for layer in net.layers:
        layer.make_opt()
    y_wrong = (y + torch.from_numpy(rng.integers(1, k, n))) % k
    x_pos, x_neg = overlay_y_on_x(x, y, k), overlay_y_on_x(x, y_wrong, k)
    losses = []
    h_pos, h_neg = x_pos, x_neg
    for layer in net.layers:
        for _ in range(args.steps):
            new_pos, new_neg, loss = layer.train_step(h_pos, h_neg)
            losses.append(loss)
        h_pos, h_neg = new_pos, new_neg
    acc = net.predict(x, k).eq(y).float().mean().item()
    write_log(args.log, losses, accuracy=acc)


if __name__ == "__main__":
    main()
