"""Training-step benchmarks: ember vs PyTorch (CPU) in one run, as ratios of time.

    .venv/bin/python bench/bench_training.py [--quick]

Targets (issue "Autograd, nn, optim ..."): MLP 784-512-512-10 batch 128 SGD step
<= 1.2x PyTorch's time; CNN (conv32-conv64-pool-fc128-fc10, 28x28, batch 64, Adam)
<= 1.5x; 20 x (16x16 matmul + tanh) forward+backward <= 3x; RSS flat over 1,000 steps.
"""
from __future__ import annotations

import argparse
import resource

import numpy as np
import torch

import ember
from _timing import best_of


def build(lib, kind, weights=None):
    nn = lib.nn
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64 * 14 * 14, 128), nn.ReLU(),
                              nn.Linear(128, 10))
    if weights is not None:  # same initial weights in both frameworks
        with lib.no_grad():
            for p, w in zip(model.parameters(), weights):
                p.copy_(lib.from_numpy(w.copy()))
    return model


def step_fn(lib, model, opt, x, y):
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def compare(kind, batch, make_opt, rep, number, target):
    rng = np.random.default_rng(0)
    tmodel = build(torch, kind)
    weights = [p.detach().numpy() for p in tmodel.parameters()]
    emodel = build(ember, kind, weights)
    shape = (batch, 784) if kind == "mlp" else (batch, 1, 28, 28)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 10, batch)
    t_step = step_fn(torch, tmodel, make_opt(torch, tmodel), torch.from_numpy(x),
                     torch.from_numpy(y))
    e_step = step_fn(ember, emodel, make_opt(ember, emodel), ember.from_numpy(x),
                     ember.from_numpy(y))
    te, tt = best_of(e_step, rep, number), best_of(t_step, rep, number)
    ratio = te / tt
    print(f"{kind + ' step':<34} ember {te * 1e3:8.2f} ms  torch {tt * 1e3:8.2f} ms  "
          f"ember/torch time {ratio:5.2f}x   {'PASS' if ratio <= target else 'MISS'} "
          f"(target <= {target}x)")
    return e_step


def chain(rep):
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((16, 16)).astype(np.float32) * 0.3 for _ in range(20)]
    x0 = rng.standard_normal((16, 16)).astype(np.float32)

    def make(lib):
        w = [lib.from_numpy(a.copy()).requires_grad_() for a in ws]
        x = lib.from_numpy(x0.copy())

        def run():
            h = x
            for wi in w:
                h = lib.tanh(h @ wi)
            h.sum().backward()
        return run
    te, tt = best_of(make(ember), rep, 50), best_of(make(torch), rep, 50)
    ratio = te / tt
    print(f"{'20 x (16x16 matmul + tanh) fwd+bwd':<34} ember {te * 1e6:8.0f} us  torch "
          f"{tt * 1e6:8.0f} us  ember/torch time {ratio:5.2f}x   "
          f"{'PASS' if ratio <= 3 else 'MISS'} (target <= 3x)")


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2 ** 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rep = 3 if args.quick else 7
    torch.set_num_threads(ember.get_num_threads())
    print(f"threads: {ember.get_num_threads()}; torch {torch.__version__}")
    mlp = compare("mlp", 128, lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.01), rep, 10,
                  1.2)
    compare("cnn", 64, lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-3), rep, 3, 1.5)
    chain(rep)
    for _ in range(100):
        mlp()
    before = rss_mb()
    for _ in range(1000):
        mlp()
    after = rss_mb()
    print(f"{'RSS over 1,000 MLP steps':<34} {before:.1f} MB -> {after:.1f} MB "
          f"({after - before:+.1f} MB)   {'PASS' if after - before < 8 else 'MISS'}")


if __name__ == "__main__":
    main()
