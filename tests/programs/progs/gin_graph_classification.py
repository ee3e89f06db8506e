"""Graph classification in the shape of the GIN / PyG examples, without a graph library:
a mini-batch of small NumPy graphs collated into one block-diagonal graph (edge_index offset
per graph, a batch vector built with torch.repeat_interleave), the adjacency as a
torch.sparse_coo_tensor (coalesce, torch.sparse.mm for neighbour sums), GCN-style degree
normalisation from torch.bincount with rsqrt and masked_fill_ for isolated nodes, a GIN layer
((1 + eps) * x + A x through an MLP with BatchNorm1d and a learnable eps), an edge-attention
layer whose softmax over incoming edges is written with scatter_reduce_("amax",
include_self=False), exp and scatter_add_, global_mean_pool written with index_add_ and
global_max_pool with scatter_reduce, F.dropout(training=self.training) active only in eval
(p=0 in training), cross-entropy with label_smoothing, Adam, accuracy, and a power iteration
with torch.mv / @ on the sparse adjacency."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


def make_graph(rng, label):
    """Class 0: a ring; class 1: a star; class 2: a path with a triangle; 5..9 nodes."""
    n = int(rng.integers(5, 10))
    if label == 0:
        edges = [(i, (i + 1) % n) for i in range(n)]
    elif label == 1:
        edges = [(0, i) for i in range(1, n)]
    else:
        edges = [(i, i + 1) for i in range(n - 1)] + [(0, 2)]
    e = np.array(edges, np.int64).T
    e = np.concatenate([e, e[::-1]], axis=1)   # undirected
    x = np.concatenate([np.ones((n, 1)), rng.standard_normal((n, 3)) * 0.5], 1)
    return x.astype(np.float32), e


def collate(graphs):
    xs, edges, sizes, offset = [], [], [], 0
    for x, e in graphs:
        xs.append(x)
        edges.append(e + offset)
        sizes.append(len(x))
        offset += len(x)
    x = torch.from_numpy(np.concatenate(xs))
    edge_index = torch.from_numpy(np.concatenate(edges, 1))
    batch = torch.repeat_interleave(torch.arange(len(graphs)), torch.tensor(sizes))
    return x, edge_index, batch


def normalized_adjacency(edge_index, num_nodes):
    row, col = edge_index
    deg = torch.bincount(col, minlength=num_nodes).float()
    dinv = deg.rsqrt().masked_fill_(deg == 0, 0.0)
    values = dinv[row] * dinv[col]
    adj = torch.sparse_coo_tensor(edge_index, values, (num_nodes, num_nodes))
    return adj.coalesce()


class GINConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU(),
                                 nn.Linear(cout, cout))

    def forward(self, x, adj):
        return self.mlp((1 + self.eps) * x + torch.sparse.mm(adj, x))


class EdgeAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim, bias=False)
        self.att = nn.Parameter(torch.empty(2 * dim))
        nn.init.normal_(self.att, std=0.1)

    def forward(self, x, edge_index):
        src, dst = edge_index
        h = self.lin(x)
        score = F.leaky_relu(torch.cat([h[src], h[dst]], dim=-1) @ self.att, 0.2)
        amax = torch.zeros(x.size(0)).scatter_reduce_(0, dst, score, "amax", include_self=False)
        w = (score - amax[dst]).exp()
        denom = torch.zeros(x.size(0)).scatter_add_(0, dst, w)
        alpha = w / denom[dst].clamp_min(1e-16)
        out = torch.zeros_like(h).index_add_(0, dst, alpha.unsqueeze(-1) * h[src])
        return F.elu(out) + x


def global_mean_pool(x, batch, num_graphs):
    sums = torch.zeros(num_graphs, x.size(1)).index_add_(0, batch, x)
    counts = torch.bincount(batch, minlength=num_graphs).clamp(min=1).unsqueeze(1)
    return sums / counts


def global_max_pool(x, batch, num_graphs):
    index = batch.unsqueeze(1).expand_as(x)
    return torch.full((num_graphs, x.size(1)), float("-inf")).scatter_reduce(
        0, index, x, reduce="amax", include_self=True)


class GIN(nn.Module):
    def __init__(self, cin=4, hidden=32, classes=3, p=0.5):
        super().__init__()
        self.conv1 = GINConv(cin, hidden)
        self.conv2 = GINConv(hidden, hidden)
        self.att = EdgeAttention(hidden)
        self.head = nn.Linear(2 * hidden, classes)
        self.p = p

    def forward(self, x, edge_index, batch, num_graphs):
        adj = normalized_adjacency(edge_index, x.size(0))
        h = F.relu(self.conv1(x, adj))
        h = F.relu(self.conv2(h, adj))
        h = self.att(h, edge_index)
        g = torch.cat([global_mean_pool(h, batch, num_graphs),
                       global_max_pool(h, batch, num_graphs)], dim=1)
        # dropout only outside training, so that the training curves stay deterministic
        g = F.dropout(g, p=0.0 if self.training else self.p, training=self.training)
        return self.head(g)


def main():
    args = parse(epochs=8, batch_graphs=12, lr=5e-3)
    rng = np.random.default_rng(29)
    labels = rng.integers(0, 3, 96)
    graphs = [make_graph(rng, int(c)) for c in labels]
    model = GIN()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for _ in range(args.epochs):
        model.train()
        order = rng.permutation(len(graphs))
        for b in range(0, len(graphs), args.batch_graphs):
            idx = order[b:b + args.batch_graphs]
            x, edge_index, batch = collate([graphs[i] for i in idx])
            y = torch.from_numpy(labels[idx])
            out = model(x, edge_index, batch, len(idx))
            loss = criterion(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        x, edge_index, batch = collate(graphs)
        pred = model(x, edge_index, batch, len(graphs)).argmax(dim=1)
        acc = (pred == torch.from_numpy(labels)).float().mean().item()
        adj = normalized_adjacency(edge_index, x.size(0))
        dense_gap = (adj.to_dense() @ x - torch.sparse.mm(adj, x)).abs().max().item()
        # node centrality by power iteration on the sparse adjacency (torch.mv, then @)
        r = torch.full((x.size(0),), 1.0 / x.size(0))
        for _ in range(10):
            r = torch.mv(adj, r)
            r = r / r.norm()
        r = adj @ r
        centrality = r.topk(5).values.tolist()
    write_log(args.log, losses, accuracy=acc, nnz=adj._nnz(), eps=model.conv1.eps.item(),
              dense_gap_small=float(dense_gap < 1e-5), centrality=centrality)


if __name__ == "__main__":
    main()
