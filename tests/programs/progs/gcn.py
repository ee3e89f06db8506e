"""A two-layer graph convolutional network in the shape of the GCN tutorials, written with
plain tensor ops (no graph library): a symmetric-normalised adjacency built from an edge
list with index_add_ / scatter_add_, degree normalisation with pow(-0.5), message passing
as gather + index_add_, dropout-free ReLU layers, masked log_softmax + nll_loss on the
training nodes, Adam with weight decay, and accuracy on held-out nodes."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x, edge_index):
        num_nodes = x.size(0)
        loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
        edge_index = torch.cat([edge_index, loops], dim=1)
        row, col = edge_index
        deg = torch.zeros(num_nodes).scatter_add_(0, col, torch.ones(col.size(0)))
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
        h = self.lin(x)
        msg = norm.view(-1, 1) * h.index_select(0, row)
        out = torch.zeros_like(h).index_add_(0, col, msg)
        return out + self.bias


class GCN(nn.Module):
    def __init__(self, num_features, hidden, num_classes):
        super().__init__()
        self.conv1 = GCNConv(num_features, hidden)
        self.conv2 = GCNConv(hidden, num_classes)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


def main():
    args = parse(epochs=40, lr=0.01)
    rng = np.random.default_rng(5)
    n, k = 60, 3
    y = rng.integers(0, k, n)
    src, dst = [], []
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < (0.25 if y[i] == y[j] else 0.02):
                src += [i, j]
                dst += [j, i]
    edge_index = torch.tensor([src, dst], dtype=torch.long)
    x = torch.from_numpy((np.eye(k)[y] * 0.5 + rng.standard_normal((n, k))).astype(np.float32))
    x = torch.cat([x, torch.from_numpy(rng.standard_normal((n, 5)).astype(np.float32))], 1)
    y = torch.from_numpy(y)
    train_mask = torch.zeros(n, dtype=torch.bool)
    train_mask[:20] = True
    model = GCN(x.size(1), 16, k)
    share_init(torch, [model], args.init)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)
    losses = []
    for _ in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.nll_loss(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    pred = model(x, edge_index).argmax(dim=1)
    acc = int((pred[~train_mask] == y[~train_mask]).sum()) / int((~train_mask).sum())
    write_log(args.log, losses, accuracy=acc)


if __name__ == "__main__":
    main()
