"""A small vision transformer in the shape of the ViT tutorials: patch embedding with a
strided Conv2d, a learnable class token and position embedding (nn.Parameter with
trunc_normal_ init), nn.TransformerEncoder of pre-norm layers (norm_first, GELU,
batch_first), the class token's LayerNorm into a linear head, AdamW, a linear-warmup
LambdaLR, and accuracy with torch.no_grad."""
import numpy as np
import torch
import torch.nn as nn

from _common import parse, share_init, write_log


class ViT(nn.Module):
    def __init__(self, image=16, patch=4, dim=32, depth=2, heads=4, classes=3):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        n = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


def main():
    args = parse(epochs=3, batch_size=16, lr=2e-3)
    rng = np.random.default_rng(11)
    n = 64
    y = rng.integers(0, 3, n)
    x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32) * 0.3
    for i, c in enumerate(y):
        x[i, c, 4 * c:4 * c + 4, :] += 1.5
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    model = ViT()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    steps = args.epochs * (n // args.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 4))
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(args.epochs):
        model.train()
        for b in range(0, n, args.batch_size):
            optimizer.zero_grad()
            loss = criterion(model(x[b:b + args.batch_size]), y[b:b + args.batch_size])
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    assert len(losses) == steps
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(-1) == y).float().mean().item()
    write_log(args.log, losses, accuracy=acc)


if __name__ == "__main__":
    main()
