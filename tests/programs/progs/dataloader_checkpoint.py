"""A DataLoader-driven training loop with a checkpoint round-trip, in the shape of the
"Datasets & DataLoaders" and "Saving and loading a general checkpoint" tutorials: a custom
map-style Dataset returning dicts, a collate_fn that pads variable-length rows, DataLoader
(batch_size, shuffle=False, drop_last), TensorDataset and Subset for the training split,
random_split with a seeded torch.Generator (fractions) for validation / test, ConcatDataset
and the default collate for evaluation, torch.save of model + optimizer + scheduler state
to a file mid-training, torch.load(weights_only=True) into a fresh model, optimizer (Adam,
weight decay) and StepLR via load_state_dict, and training continued from there."""
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import (ConcatDataset, DataLoader, Dataset, Subset, TensorDataset,
                              random_split)

from _common import parse, share_init, write_log


class SequenceDataset(Dataset):
    """Rows of varying length; the label is which of 3 patterns the row follows."""

    def __init__(self, rows, labels):
        self.rows, self.labels = rows, labels

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        return {"values": torch.from_numpy(self.rows[idx]), "label": int(self.labels[idx])}


def pad_collate(batch):
    lengths = torch.tensor([len(item["values"]) for item in batch])
    values = torch.zeros(len(batch), int(lengths.max()))
    for i, item in enumerate(batch):
        values[i, :lengths[i]] = item["values"]
    labels = torch.tensor([item["label"] for item in batch], dtype=torch.long)
    return values, lengths, labels


class Net(nn.Module):
    def __init__(self, width=12, classes=3):
        super().__init__()
        self.conv = nn.Conv1d(1, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 + 1, width)
        self.fc2 = nn.Linear(width, classes)

    def forward(self, values, lengths):
        h = F.relu(self.conv(values.unsqueeze(1)))
        mask = torch.arange(values.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
        pooled = (h * mask.unsqueeze(1)).sum(-1) / lengths.unsqueeze(1)
        feats = torch.cat([pooled, (lengths.float() / 16).unsqueeze(1)], dim=1)
        return self.fc2(F.relu(self.fc1(feats)))


def make_rows(rng, n):
    rows, labels = [], rng.integers(0, 3, n)
    for c in labels:
        length = int(rng.integers(6, 16))
        t = np.arange(length)
        base = [np.sin(t * 0.9), np.sign(np.sin(t * 0.5)), t / length][c]
        rows.append((base + rng.normal(0, 0.3, length)).astype(np.float32))
    return rows, labels


def train_epoch(model, optimizer, loader, losses):
    model.train()
    for values, lengths, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(values, lengths), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def main():
    args = parse(epochs=4, batch_size=16, lr=1e-2)
    rng = np.random.default_rng(71)
    rows, labels = make_rows(rng, 160)
    dataset = SequenceDataset(rows, labels)
    train_set = Subset(dataset, range(128))
    held_out = Subset(dataset, range(128, 160))
    val_set, test_set = random_split(held_out, [0.5, 0.5],
                                     generator=torch.Generator().manual_seed(42))
    assert len(val_set) == len(test_set) == 16
    assert not set(val_set.indices) & set(test_set.indices)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=False,
                        collate_fn=pad_collate, drop_last=True)
    assert len(loader) == 8

    model = Net()
    share_init(torch, [model], args.init)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    half = args.epochs // 2
    for epoch in range(half):
        train_epoch(model, optimizer, loader, losses)
        scheduler.step()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        torch.save({"epoch": half, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(),
                    "scheduler_state_dict": scheduler.state_dict(), "loss": losses[-1]}, path)
        checkpoint = torch.load(path, weights_only=True)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    assert checkpoint["epoch"] == half and checkpoint["loss"] == losses[-1]
    assert optimizer.param_groups[0]["lr"] == scheduler.get_last_lr()[0]
    for epoch in range(checkpoint["epoch"], args.epochs):
        train_epoch(model, optimizer, loader, losses)
        scheduler.step()

    # evaluation: the held-out rows (validation + test together, so that the total does not
    # depend on the framework's random split), a fixed-length TensorDataset, default collate
    model.eval()
    eval_loader = DataLoader(ConcatDataset([val_set, test_set]), batch_size=8,
                             collate_fn=pad_collate)
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for values, lengths, y in eval_loader:
            logits = model(values, lengths)
            total += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            count += len(y)
        fixed = TensorDataset(torch.stack([torch.from_numpy(np.resize(r, 8)) for r in rows]),
                              torch.full((len(rows),), 8), torch.from_numpy(labels))
        fixed_loss = 0.0
        for values, lengths, y in DataLoader(fixed, batch_size=40):
            fixed_loss += F.cross_entropy(model(values, lengths), y, reduction="sum").item()
    write_log(args.log, losses, held_out_loss=total / count, held_out_acc=correct / count,
              fixed_loss=fixed_loss / len(fixed), lr=optimizer.param_groups[0]["lr"])


if __name__ == "__main__":
    main()
