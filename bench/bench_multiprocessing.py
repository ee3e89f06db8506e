"""ember.multiprocessing and DataLoader workers, side by side with PyTorch, in one run.

    .venv/bin/python bench/bench_multiprocessing.py [--quick]

1. A 64 MiB float32 tensor through a Queue to another process (time from ``put`` to the
   receiver holding it): ember.multiprocessing vs plain ``multiprocessing`` pickling a
   NumPy array (which copies the bytes through a pipe) vs torch.multiprocessing. "fresh"
   sends a new tensor each time, so the time includes moving it into shared memory once;
   "again" re-sends one already in shared memory (parameters in Hogwild!, say).
2. A DataLoader epoch over a dataset with CPU-heavy per-item work (NumPy FFTs, the same
   dataset object for ember and PyTorch): 0 vs 2 workers, and ember vs PyTorch; worker
   start-up included, as a user sees it. And cheap items, where the per-batch cost of
   moving batches between processes dominates.

Issue 7 asks for these figures as ratios.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

import numpy as np
import torch
import torch.multiprocessing as tmp
import torch.utils.data as tud

import ember
import ember.multiprocessing as emp
from ember.utils.data import DataLoader, Dataset

MIB = 1 << 20


# ---- 1. one big tensor through a Queue ---------------------------------------------------------
def _receiver(q, ack):
    while True:
        x = q.get()
        if x is None:
            return
        ack.put(float(x[-1]))  # the receiver can read it


def _queue_times(make, ctx, repeat, fresh):
    q, ack = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_receiver, args=(q, ack), daemon=True)
    p.start()
    try:
        x = make()
        q.put(x)
        ack.get(timeout=60)  # warm-up: start-up, first mapping, lazy imports
        times = []
        for _ in range(repeat):
            if fresh:
                x = make()
            t0 = time.perf_counter()
            q.put(x)
            ack.get(timeout=60)
            times.append(time.perf_counter() - t0)
        q.put(None)
        p.join(30)
        return min(times)
    finally:
        if p.is_alive():
            p.kill()


def bench_queue(repeat):
    n = 64 * MIB // 4
    ctx = multiprocessing.get_context("fork")
    cases = {
        "pickle (NumPy)": lambda: np.ones(n, np.float32),
        "ember": lambda: ember.ones(n),
        "torch": lambda: torch.ones(n),
    }
    print(f"\n64 MiB tensor through a Queue (fork; best of {repeat}; put -> receiver has it)")
    print(f"{'':16}{'fresh':>12}{'again':>12}")
    res = {}
    for name, make in cases.items():
        res[name] = (_queue_times(make, ctx, repeat, True), _queue_times(make, ctx, repeat, False))
        print(f"{name:16}{res[name][0] * 1e3:10.2f}ms{res[name][1] * 1e3:10.2f}ms")
    pk, em, th = res["pickle (NumPy)"], res["ember"], res["torch"]
    print(f"ratios: pickle/ember   fresh {pk[0] / em[0]:6.1f}x   again {pk[1] / em[1]:7.1f}x")
    print(f"        ember/torch    fresh {em[0] / th[0]:6.2f}x   again {em[1] / th[1]:7.2f}x"
          "  (< 1: ember faster)")
    return res


# ---- 2. DataLoader throughput ------------------------------------------------------------------
class HeavyItems(Dataset):
    """Each item: a few 2-D FFT filters of a 3x64x64 image, cropped to 3x32x32 float32;
    about 2 ms of single-threaded NumPy per item. Plain NumPy, so ember's and PyTorch's
    loaders run exactly the same per-item work."""

    def __init__(self, n):
        self.n = n
        k = np.fft.fftfreq(64)
        self.mask = np.exp(-(k[:, None] ** 2 + k[None, :] ** 2) * 40)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = np.random.default_rng(i).random((3, 64, 64))
        for _ in range(6):
            img = np.abs(np.fft.ifft2(np.fft.fft2(img) * self.mask))
        return img[:, :32, :32].astype(np.float32), i


class CheapItems(HeavyItems):
    def __getitem__(self, i):
        return np.full((3, 32, 32), i, np.float32), i


def _epoch(lib_loader, dataset, workers):
    t0 = time.perf_counter()
    n = 0
    for x, _ in lib_loader(dataset, batch_size=32, num_workers=workers):
        n += x.shape[0]
    assert n == len(dataset)
    return time.perf_counter() - t0


def bench_loader(n_items, repeat):
    heavy = HeavyItems(n_items)
    t0 = time.perf_counter()
    for i in range(20):
        heavy[i]
    per_item = (time.perf_counter() - t0) / 20
    print(f"\nDataLoader epoch, {n_items} items, batch 32, fork, median of {repeat} interleaved "
          f"runs (worker start-up included); heavy item = {per_item * 1e3:.1f} ms of NumPy")
    print(f"{'':22}{'0 workers':>12}{'2 workers':>12}{'speed-up':>10}")
    loaders = {"ember": DataLoader, "torch": tud.DataLoader}
    res = {}
    for label, ds in (("heavy", heavy), ("cheap", CheapItems(n_items))):
        runs = {(name, w): [] for name in loaders for w in (0, 2)}
        for key in runs:
            _epoch(loaders[key[0]], ds, key[1])  # warm-up
        for _ in range(repeat):  # interleaved, so load from other programs hits all alike
            for (name, w), times in runs.items():
                times.append(_epoch(loaders[name], ds, w))
        for name in loaders:
            t = [statistics.median(runs[name, w]) for w in (0, 2)]
            res[label, name] = t
            print(f"{label + ' items, ' + name:22}{t[0] * 1e3:10.1f}ms{t[1] * 1e3:10.1f}ms"
                  f"{t[0] / t[1]:9.2f}x")
    for label in ("heavy", "cheap"):
        e, t = res[label, "ember"], res[label, "torch"]
        print(f"ember/torch time, {label} items: 0 workers {e[0] / t[0]:.2f}x, "
              f"2 workers {e[1] / t[1]:.2f}x  (< 1: ember faster)")

    # steady state: persistent workers, no start-up; per batch
    print("steady state, persistent 2 workers, per batch:")
    for label, ds in (("heavy", heavy), ("cheap", CheapItems(n_items))):
        made = {name: loaders[name](ds, batch_size=32, num_workers=2, persistent_workers=True)
                for name in loaders}
        per = {name: [] for name in loaders}
        for name, loader in made.items():
            for _ in loader:  # starts the workers
                pass
        for _ in range(repeat):
            for name, loader in made.items():
                t0 = time.perf_counter()
                for _ in loader:
                    pass
                per[name].append((time.perf_counter() - t0) / len(loader))
        e, t = (statistics.median(per[name]) for name in ("ember", "torch"))
        print(f"  {label} items: ember {e * 1e3:.2f} ms, torch {t * 1e3:.2f} ms, "
              f"ember/torch {e / t:.2f}x")
        del made
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    assert emp.get_sharing_strategy() == "file_descriptor"
    print(f"torch.multiprocessing sharing strategy: {tmp.get_sharing_strategy()}; "
          f"{multiprocessing.cpu_count()} CPUs")
    bench_queue(3 if args.quick else 7)
    bench_loader(256 if args.quick else 512, 1 if args.quick else 5)


if __name__ == "__main__":
    main()
