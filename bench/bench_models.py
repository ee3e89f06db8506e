"""The PyTorch paper's model families, scaled down: ember vs PyTorch (CPU) in one run.

    .venv/bin/python bench/bench_models.py [--quick] [--only NAME ...] [--no-rss]

One training step = forward + loss + backward + optimizer step, float32, the same initial
weights and data in both frameworks. Rounds interleave the two frameworks; each reports the
minimum over its rounds, and the table prints ember's time as a ratio of PyTorch's. Peak RSS
is measured per workload and framework in a fresh subprocess (``--one``) that imports only
that framework (VmHWM: a forked child's ru_maxrss starts at its parent's).

Targets (issue "Performance on the paper's models"): every training row <= 1.25x PyTorch's
time and their geometric mean <= 1.0x; inference rows <= 1.1x; the small-op chain <= 2.0x.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import subprocess
import sys
import time

import numpy as np


# ---- the models (written once, for either library) -------------------------------------------
def alexnet(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 64, 11, stride=4, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Flatten(), nn.Dropout(0.5), nn.Linear(256, 1024), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(1024, 1024), nn.ReLU(inplace=True), nn.Linear(1024, 10))


def vgg(lib):
    nn = lib.nn
    layers, c = [], 3
    for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
            c = v
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, 10))


def resnet18(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            y = lib.relu(self.b1(self.c1(x)))
            return lib.relu(self.b2(self.c2(y)) + self.short(x))

    layers, c = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
    for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(c, width, stride), Block(width, width, 1)]
        c = width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))


def mobilenet_v2(lib):
    nn = lib.nn

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            mid = cin * expand
            parts = []
            if expand != 1:
                parts += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6()]
            parts += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                      nn.BatchNorm2d(mid), nn.ReLU6(),
                      nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.body = nn.Sequential(*parts)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    layers, c = [nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
    for t, cout, n, s in ((1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2),
                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            layers.append(Inverted(c, cout, s if i == 0 else 1, t))
            c = cout
    layers += [nn.Conv2d(c, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 10)]
    return nn.Sequential(*layers)


def gnmt(lib, vocab=1000, hidden=256):
    nn = lib.nn

    class GNMT(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(vocab, hidden)
            self.tgt_emb = nn.Embedding(vocab, hidden)
            self.encoder = nn.LSTM(hidden, hidden, 2, batch_first=True)
            self.decoder = nn.LSTM(hidden, hidden, 2, batch_first=True)
            self.combine = nn.Linear(2 * hidden, hidden)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, src, tgt):
            enc, state = self.encoder(self.src_emb(src))
            dec, _ = self.decoder(self.tgt_emb(tgt), state)
            weights = lib.softmax(lib.bmm(dec, enc.transpose(1, 2)), dim=-1)
            context = lib.bmm(weights, enc)
            mixed = lib.tanh(self.combine(lib.cat([dec, context], dim=-1)))
            return self.out(mixed)
    return GNMT()


def lstm_lm(lib, vocab=10000, hidden=256, layers=2):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, hidden)
            self.rnn = nn.LSTM(hidden, hidden, layers)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, x):
            y, _ = self.rnn(self.emb(x))
            return self.out(y)
    return LM()


def ncf(lib, users=6000, items=4000, dim=64):
    nn = lib.nn

    class NCF(nn.Module):
        def __init__(self):
            super().__init__()
            self.user = nn.Embedding(users, dim)
            self.item = nn.Embedding(items, dim)
            self.mlp = nn.Sequential(nn.Linear(2 * dim, 128), nn.ReLU(), nn.Linear(128, 64),
                                     nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, u, i):
            return self.mlp(lib.cat([self.user(u), self.item(i)], dim=1)).squeeze(1)
    return NCF()


def transformer(lib, d=128):
    nn = lib.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(dim=1))
    return Encoder()


# ---- the workloads ------------------------------------------------------------------------------
def _images(shape):
    def data(rng):
        return [rng.standard_normal(shape).astype(np.float32),
                rng.integers(0, 10, shape[0])]
    return data


def _ce(lib, out, y):
    return lib.nn.functional.cross_entropy(out, y)


def _seq_ce(lib, out, y):
    return lib.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def _bce(lib, out, y):
    return lib.nn.functional.binary_cross_entropy_with_logits(out, y)


def _sgd(lib, model):
    return lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _adam(lib, model):
    return lib.optim.Adam(model.parameters(), lr=1e-3)


WORKLOADS = {
    # name: (model, data(rng) -> [inputs..., target], loss, optimizer, kind)
    "alexnet": (alexnet, _images((16, 3, 64, 64)), _ce, _sgd, "train"),
    "vgg": (vgg, _images((16, 3, 32, 32)), _ce, _sgd, "train"),
    "resnet18": (resnet18, _images((16, 3, 32, 32)), _ce, _sgd, "train"),
    "mobilenet_v2": (mobilenet_v2, _images((16, 3, 32, 32)), _ce, _sgd, "train"),
    "gnmt": (gnmt, lambda rng: [rng.integers(0, 1000, (16, 20)), rng.integers(0, 1000, (16, 20)),
                                rng.integers(0, 1000, (16, 20))], _seq_ce, _adam, "train"),
    "lstm_lm": (lstm_lm, lambda rng: [rng.integers(0, 10000, (35, 20)),
                                      rng.integers(0, 10000, (35, 20))], _seq_ce, _sgd, "train"),
    "ncf": (ncf, lambda rng: [rng.integers(0, 6000, 1024), rng.integers(0, 4000, 1024),
                              (rng.random(1024) > 0.5).astype(np.float32)], _bce, _adam,
            "train"),
    "transformer": (transformer, lambda rng: [rng.standard_normal((16, 64, 128)).astype(
        np.float32), rng.integers(0, 10, 16)], _ce, _adam, "train"),
    "resnet18_infer": (resnet18, _images((16, 3, 32, 32)), None, None, "infer"),
    "transformer_infer": (transformer, lambda rng: [rng.standard_normal((16, 64, 128)).astype(
        np.float32), None], None, None, "infer"),
    "small_op_chain": (None, None, None, None, "chain"),
}
TRAINING = [n for n, w in WORKLOADS.items() if w[4] == "train"]


def _chain(lib):
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((16, 16)).astype(np.float32) * 0.25,
                   requires_grad=True)
    x = lib.tensor(rng.standard_normal((16, 16)).astype(np.float32))

    def step():
        h = x
        for _ in range(20):
            h = lib.tanh(h @ w)
        h.sum().backward()
        w.grad = None
    return step


def make_step(name, lib, state=None):
    """The workload's step for ``lib``; ``state``: the PyTorch model's weights to start from."""
    build, data, loss_fn, make_opt, kind = WORKLOADS[name]
    if kind == "chain":
        return _chain(lib), None
    lib.manual_seed(0)
    model = build(lib)
    if state is not None:
        model.load_state_dict({k: v.copy() for k, v in state.items()})
    arrays = data(np.random.default_rng(0))
    tensors = [None if a is None else lib.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    *inputs, target = tensors
    if kind == "infer":
        model.eval()

        def infer():
            with lib.no_grad():
                model(*inputs)
        return infer, model
    opt = make_opt(lib, model)

    def train():
        opt.zero_grad()
        loss = loss_fn(lib, model(*inputs), target)
        loss.backward()
        opt.step()
    return train, model


def _state(model):
    return None if model is None else {k: v.detach().numpy().copy()
                                       for k, v in model.state_dict().items()}


def compare(torch, ember, name, rounds, number):
    t_step, t_model = make_step(name, torch)
    e_step, _ = make_step(name, ember, _state(t_model))
    t_step(), e_step()  # warm-up (allocators, caches, lazy loads)
    best = {"torch": math.inf, "ember": math.inf}
    order = [("torch", t_step), ("ember", e_step)]
    for r in range(rounds):
        for label, step in order if r % 2 == 0 else order[::-1]:
            # one untimed step first: the other framework's worker threads spin for a while
            # after its last parallel region (OpenMP's wait policy) and would take the cores
            # from the first timed step; after it, each is timed in its steady state
            step()
            t0 = time.perf_counter()
            for _ in range(number):
                step()
            best[label] = min(best[label], (time.perf_counter() - t0) / number)
    return best["torch"], best["ember"]


def _vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss(name, lib_name, number):
    """Peak RSS (MB) of a fresh process that builds the workload and runs its steps."""
    out = subprocess.run([sys.executable, __file__, "--one", name, "--lib", lib_name,
                          "--number", str(number)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2 rounds of 1 step")
    ap.add_argument("--rounds", type=int, default=11,
                    help="interleaved rounds per workload (the minimum is reported; single "
                         "rows move 10-30 %% between runs of 5 rounds on a 2-core VM)")
    ap.add_argument("--only", nargs="*", help="workload names")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS subprocesses")
    ap.add_argument("--json", help="also write the figures to this file (for plot_models.py)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    ap.add_argument("--number", type=int, default=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:  # the peak-RSS child: only the measured framework is imported
        lib = importlib.import_module(args.lib)
        step, _ = make_step(args.one, lib)
        for _ in range(args.number):
            step()
        print(_vm_hwm_mb())
        return
    import torch

    import ember
    rounds = 2 if args.quick else args.rounds
    names = args.only or list(WORKLOADS)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; ember "
          f"{ember.get_num_threads()} threads; min of {rounds} interleaved rounds")
    print(f"{'workload':<20}{'torch ms':>10}{'ember ms':>10}{'ratio':>8}"
          + ("" if args.no_rss else f"{'torch MB':>10}{'ember MB':>10}"))
    ratios, rows = {}, []
    for name in names:
        number = 1 if WORKLOADS[name][4] != "chain" else 20
        t, e = compare(torch, ember, name, rounds, number)
        ratios[name] = e / t
        row = {"workload": name, "kind": WORKLOADS[name][4], "torch_ms": t * 1e3,
               "ember_ms": e * 1e3}
        line = f"{name:<20}{t * 1e3:>10.2f}{e * 1e3:>10.2f}{e / t:>7.2f}x"
        if not args.no_rss:
            row["torch_mb"], row["ember_mb"] = peak_rss(name, "torch", 3), peak_rss(name,
                                                                                  "ember", 3)
            line += f"{row['torch_mb']:>10.0f}{row['ember_mb']:>10.0f}"
        rows.append(row)
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "rows": rows}, f, indent=1)
    train = [ratios[n] for n in TRAINING if n in ratios]
    if train:
        geo = math.exp(sum(math.log(r) for r in train) / len(train))
        print(f"geometric mean over {len(train)} training rows: {geo:.2f}x PyTorch's time")


if __name__ == "__main__":
    main()
