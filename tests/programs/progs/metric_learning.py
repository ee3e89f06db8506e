"""Metric learning in the shape of the siamese / contrastive tutorials (SimCLR, triplet
networks): an MLP embedding with F.normalize, batch-hard triplet mining from torch.cdist
(same-class pairs masked with torch.eye and masked_fill, hardest negatives by argmin and
gather), F.triplet_margin_loss (swap=True), an InfoNCE loss written with logsumexp and
torch.diag over augmented views, nn.CosineEmbeddingLoss on sampled pairs, Adam with amsgrad,
class prototypes from a one-hot built with scatter_, and nearest-prototype accuracy with
F.cosine_similarity."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log


class EmbeddingNet(nn.Module):
    def __init__(self, dim_in=16, dim_out=8):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim_in, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                 nn.Linear(32, 32), nn.ELU(), nn.Linear(32, dim_out))

    def forward(self, x):
        return F.normalize(self.net(x), p=2, dim=1)


def batch_hard_triplets(emb, labels):
    dist = torch.cdist(emb, emb, p=2)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool)
    pos_dist = dist.masked_fill(~same | eye, float("-inf"))
    neg_dist = dist.masked_fill(same, float("inf"))
    hardest_pos = pos_dist.argmax(dim=1)
    hardest_neg = neg_dist.argmin(dim=1)
    positives = emb.gather(0, hardest_pos.unsqueeze(1).expand(-1, emb.size(1)))
    negatives = emb[hardest_neg]
    return emb, positives, negatives


def info_nce(z1, z2, temperature=0.2):
    logits = z1 @ z2.t() / temperature
    return -(torch.diag(logits) - torch.logsumexp(logits, dim=1)).mean()


def main():
    args = parse(steps=30, batch_size=32, lr=3e-3)
    rng = np.random.default_rng(61)
    classes, dim = 5, 16
    centers = rng.standard_normal((classes, dim)) * 1.5

    def sample(n):
        y = np.arange(n) % classes  # every class in every batch
        x = centers[y] + rng.standard_normal((n, dim))
        return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)

    model = EmbeddingNet(dim)
    share_init(torch, [model], args.init)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, amsgrad=True)
    cosine_loss = nn.CosineEmbeddingLoss(margin=0.1)
    losses, parts = [], []
    model.train()
    for _ in range(args.steps):
        x, y = sample(args.batch_size)
        view1 = x + torch.from_numpy(rng.normal(0, 0.3, x.shape).astype(np.float32))
        view2 = x * torch.from_numpy(rng.uniform(0.8, 1.2, x.shape).astype(np.float32))
        emb = model(x)
        a, p, n = batch_hard_triplets(emb, y)
        triplet = F.triplet_margin_loss(a, p, n, margin=0.5, p=2, swap=True)
        nce = info_nce(model(view1), model(view2))
        perm = torch.from_numpy(rng.permutation(len(y)))
        target = torch.where(y == y[perm], 1.0, -1.0)
        pair = cosine_loss(emb, emb[perm], target)
        loss = triplet + 0.5 * nce + pair
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        parts.append([triplet.item(), nce.item(), pair.item()])
    model.eval()
    with torch.no_grad():
        x, y = sample(100)
        emb = model(x)
        one_hot = torch.zeros(len(y), classes).scatter_(1, y.unsqueeze(1), 1.0)
        prototypes = F.normalize(one_hot.t() @ emb / one_hot.sum(0, keepdim=True).t(), dim=1)
        sims = F.cosine_similarity(emb.unsqueeze(1), prototypes.unsqueeze(0), dim=-1)
        acc = (sims.argmax(dim=1) == y).float().mean().item()
        top2 = sims.topk(2, dim=1).values
        margin = (top2[:, 0] - top2[:, 1]).mean().item()
    write_log(args.log, losses, parts=parts, accuracy=acc, margin=margin)


if __name__ == "__main__":
    main()
