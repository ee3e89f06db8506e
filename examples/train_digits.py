"""ember's main job: train a small CNN on the handwritten digits scikit-learn ships.

    make demo                                   # or: python examples/train_digits.py
    python examples/train_digits.py --device opencl --epochs 20
    python examples/train_digits.py --epochs 1 --profile trace.json   # ember.profiler
    make demo ARGS=--compile                    # the training step under ember.compile
    python examples/train_digits.py --compile reduce-overhead

Prints a progress bar per epoch, then test accuracy, throughput and time; saves a
checkpoint, reloads it into a fresh model and checks the predictions are identical.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


class DigitsCNN(nn.Module):
    """conv32 - conv64 - pool - fc128 - fc10 (the benchmark's CNN, on 8x8 inputs)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout(x.flatten(1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def load_data(seed: int):
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]      # (N, 1, 8, 8) in [0, 1]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = len(y) // 5
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def evaluate(model, x, y, device, batch_size=256):
    model.eval()
    preds = []
    with ember.no_grad():
        for i in range(0, len(x), batch_size):
            logits = model(x[i:i + batch_size].to(device))
            preds.append(logits.argmax(dim=1).cpu())
    pred = ember.cat(preds)
    return pred, float((pred == y).float().mean().item())


def report_profile(prof, path, marks):
    """Print the profiler's table, the recorded steps' measured time against the table's
    total, and write the trace."""
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    recorded = [t for action, t in marks
                if action is ember.profiler.ProfilerAction.RECORD_AND_SAVE]
    first = next(i for i, (action, _) in enumerate(marks)
                 if action is ember.profiler.ProfilerAction.RECORD)
    measured = (recorded[-1] - marks[first - 1][1]) * 1e6       # microseconds
    total = prof.key_averages().self_cpu_time_total
    print(f"profiled {prof.step_num - first} steps: measured {measured / 1e3:.1f} ms, the "
          f"table's self times add up to {total / 1e3:.1f} ms "
          f"({abs(total - measured) / measured:.1%} apart)")
    prof.export_chrome_trace(path)
    print(f"trace written to {path} (open it in https://ui.perfetto.dev)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu, opencl, cuda, ... (any backend)")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", metavar="TRACE.json",
                    help="profile training steps 3-12 (ember.profiler): print the op table "
                         "and write a Chrome/Perfetto trace")
    ap.add_argument("--compile", nargs="?", const="default", metavar="MODE",
                    choices=("default", "reduce-overhead", "max-autotune"),
                    help="run the training step under ember.compile (default mode, or the "
                         "mode named): forward, loss, backward and the optimizer step")
    args = ap.parse_args(argv)

    ember.manual_seed(args.seed)
    device = ember.device(args.device)
    (xtr, ytr), (xte, yte) = load_data(args.seed)
    train = TensorDataset(ember.from_numpy(xtr), ember.from_numpy(ytr))
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True,
                        generator=ember.Generator().manual_seed(args.seed))
    xte_t, yte_t = ember.from_numpy(xte), ember.from_numpy(yte)

    model = DigitsCNN().to(device)
    opt = ember.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"ember {ember.__version__} on {device}: {len(train)} training and {len(yte)} test "
          f"digits, {sum(p.numel() for p in model.parameters())} parameters")

    def train_step(xb, yb):
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    if args.compile:
        train_step = ember.compile(
            train_step, mode=None if args.compile == "default" else args.compile)
        print(f"training step compiled (ember.compile, mode={args.compile})")

    prof = None
    if args.profile:
        # steps 1-2 wait, 3 warms up, 4-13 are recorded (PyTorch's schedule)
        prof = ember.profiler.profile(
            schedule=ember.profiler.schedule(wait=1, warmup=1, active=10, repeat=1),
            on_trace_ready=lambda p: report_profile(p, args.profile, marks))
        prof.start()
        marks = []      # the time of each step() call: the recorded steps' wall time

    start = time.perf_counter()
    seen = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        bar = tqdm(loader, desc=f"epoch {epoch:2d}/{args.epochs}", leave=False, unit="batch")
        total = 0.0
        for xb, yb in bar:
            xb, yb = xb.to(device), yb.to(device)
            loss = train_step(xb, yb)
            seen += len(yb)
            total += loss.item() * len(yb)
            bar.set_postfix(loss=f"{loss.item():.4f}")
            if prof is not None:
                marks.append((prof.current_action, time.perf_counter()))
                prof.step()
        _, acc = evaluate(model, xte_t, yte_t, device)
        tqdm.write(f"epoch {epoch:2d}: train loss {total / len(train):.4f}, "
                   f"test accuracy {acc:.2%}")
    elapsed = time.perf_counter() - start
    if prof is not None:
        prof.stop()

    pred, acc = evaluate(model, xte_t, yte_t, device)
    print(f"test accuracy {acc:.2%} after {args.epochs} epochs in {elapsed:.1f} s "
          f"({seen / elapsed:.0f} samples/s)")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits_cnn.ember")
        ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "epochs": args.epochs}, path)
        ckpt = ember.load(path, map_location=device)
        fresh = DigitsCNN().to(device)
        fresh.load_state_dict(ckpt["model"])
        pred2, acc2 = evaluate(fresh, xte_t, yte_t, device)
        same = bool((pred2 == pred).all().item())
        print(f"checkpoint reloaded: predictions identical: {same} (accuracy {acc2:.2%})")
        if not same:
            raise SystemExit("reloaded model disagrees with the trained one")
    return acc


if __name__ == "__main__":
    main()
