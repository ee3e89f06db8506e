"""A sequence-to-sequence forecaster in the shape of the time-series tutorials: variable-length
noisy sine windows batched with pad_sequence and a length mask, an nn.GRUCell encoder
unrolled by hand (torch.where keeps a finished sequence's state), an nn.LSTMCell decoder with
teacher forcing decided by a NumPy coin, outputs gathered with torch.stack, a Huber loss
(F.huber_loss) plus F.smooth_l1_loss on the first step, RMSprop (centered, momentum),
clip_grad_value_, ExponentialLR, and a free-running no_grad forecast."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from _common import parse, share_init, write_log


class Forecaster(nn.Module):
    def __init__(self, features=2, hidden=24):
        super().__init__()
        self.hidden = hidden
        self.encoder = nn.GRUCell(features, hidden)
        self.bridge = nn.Linear(hidden, 2 * hidden)
        self.decoder = nn.LSTMCell(1, hidden)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def encode(self, x, lengths):
        h = x.new_zeros(x.size(0), self.hidden)
        for t in range(x.size(1)):
            h_new = self.encoder(x[:, t], h)
            alive = (t < lengths).unsqueeze(1)
            h = torch.where(alive, h_new, h)
        return h

    def forward(self, x, lengths, horizon, targets=None, teacher=None):
        h = self.encode(x, lengths)
        hx, cx = torch.tanh(self.bridge(h)).chunk(2, dim=1)
        last = x[torch.arange(x.size(0)), lengths - 1, :1]
        outputs = []
        for t in range(horizon):
            hx, cx = self.decoder(last, (hx, cx))
            pred = self.head(hx)
            outputs.append(pred)
            last = targets[:, t:t + 1] if teacher is not None and teacher[t] else pred
        return torch.stack(outputs, dim=1).squeeze(-1)


def make_batch(rng, n, horizon):
    seqs, lengths, targets = [], [], []
    for _ in range(n):
        length = int(rng.integers(6, 16))
        freq, phase = rng.uniform(0.3, 0.8), rng.uniform(0, 2 * np.pi)
        t = np.arange(length + horizon)
        wave = np.sin(freq * t + phase) + rng.normal(0, 0.05, t.shape)
        feats = np.stack([wave[:length], t[:length] / 16.0], axis=1).astype(np.float32)
        seqs.append(torch.from_numpy(feats))
        lengths.append(length)
        targets.append(wave[length:].astype(np.float32))
    return (pad_sequence(seqs, batch_first=True), torch.tensor(lengths),
            torch.from_numpy(np.stack(targets)))


def main():
    args = parse(steps=30, batch_size=16, horizon=5, lr=5e-3)
    rng = np.random.default_rng(51)
    model = Forecaster()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr, alpha=0.9, momentum=0.5,
                                    centered=True)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.97)
    losses = []
    model.train()
    for step in range(args.steps):
        x, lengths, y = make_batch(rng, args.batch_size, args.horizon)
        teacher = rng.random(args.horizon) < max(0.0, 1.0 - step / args.steps)
        pred = model(x, lengths, args.horizon, targets=y, teacher=teacher)
        loss = F.huber_loss(pred, y, delta=0.5) + 0.5 * F.smooth_l1_loss(
            pred[:, 0], y[:, 0], beta=0.1)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        x, lengths, y = make_batch(rng, 64, args.horizon)
        pred = model(x, lengths, args.horizon)
        mae = F.l1_loss(pred, y).item()
        per_step = (pred - y).abs().mean(dim=0).tolist()
    write_log(args.log, losses, mae=mae, per_step=per_step)


if __name__ == "__main__":
    main()
