"""Hogwild! training: one model, its parameters in shared memory, trained by 2 processes at
once without locks (Recht et al., 2011), as PyTorch's mnist_hogwild example.

    .venv/bin/python examples/hogwild.py [--processes 2] [--steps 500] [--start-method fork]

Each process runs its own optimizer over its own shard of the data; every ``step()``
updates the shared parameters in place, so each process trains on the others' progress and
the parent process, which only evaluates, sees the trained model when they finish.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember
import ember.multiprocessing as mp
from ember import nn


def make_data(n: int, seed: int):
    """A 3-class problem in 20-D: a fixed random MLP ("teacher") labels Gaussian points."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 20)).astype(np.float32)
    teacher = np.random.default_rng(1234)
    w1 = teacher.standard_normal((20, 32)).astype(np.float32)
    w2 = teacher.standard_normal((32, 3)).astype(np.float32)
    y = np.argmax(np.tanh(x @ w1) @ w2, axis=1)
    return ember.from_numpy(x), ember.from_numpy(y)


def build() -> nn.Module:
    return nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 3))


def evaluate(model, x, y) -> tuple[float, float]:
    with ember.no_grad():
        out = model(x)
        loss = nn.functional.cross_entropy(out, y).item()
        acc = (out.argmax(1) == y).float().mean().item()
    return loss, acc


def train(rank: int, model: nn.Module, steps: int, batch: int, results) -> None:
    """One Hogwild! worker: SGD on its own data, writing into the shared parameters."""
    ember.set_num_threads(1)  # the processes are the parallelism
    ember.manual_seed(rank)
    x, y = make_data(4096, seed=10 + rank)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps):
        idx = ember.randint(0, x.shape[0], (batch,))
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()  # in place: the other process and the parent see it
    results.put((rank, loss.item()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--start-method", default="fork", choices=mp.get_all_start_methods())
    args = ap.parse_args()

    ember.manual_seed(0)
    model = build()
    model.share_memory()  # parameters move to shared memory, in place
    x_test, y_test = make_data(2048, seed=99)
    loss0, acc0 = evaluate(model, x_test, y_test)
    print(f"before: test loss {loss0:.3f}, accuracy {acc0:.1%}")

    ctx = mp.get_context(args.start_method)
    results = ctx.Queue()
    start = time.perf_counter()
    procs = [ctx.Process(target=train, args=(rank, model, args.steps, args.batch, results))
             for rank in range(args.processes)]
    for p in procs:
        p.start()
    finals = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
        if p.exitcode != 0:
            raise SystemExit(f"training process {p.pid} failed with exit code {p.exitcode}")
    took = time.perf_counter() - start

    loss1, acc1 = evaluate(model, x_test, y_test)
    for rank in sorted(finals):
        print(f"process {rank}: last training batch loss {finals[rank]:.3f}")
    print(f"after {args.processes} x {args.steps} Hogwild! steps ({took:.1f} s): test loss "
          f"{loss1:.3f}, accuracy {acc1:.1%}")
    assert loss1 < 0.5 * loss0, "the shared model did not learn"


if __name__ == "__main__":
    main()
