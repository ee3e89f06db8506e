"""DistributedDataParallel over MPI: step time of the benchmark CNN on 2 ranks vs 1, and
how much of the all-reduce time the overlap with backward hides.

    python bench/bench_ddp.py            # launches itself with 1 and with 2 ranks

Per run: the step time (global batch 64: 64 on 1 rank, 32 per rank on 2), the step time
with the overlap off (every bucket reduced after backward), and the all-reduce of the
same buckets alone. Hidden fraction = (step_off - step_on) / allreduce_alone.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np


def worker():
    import ember
    import ember.distributed as dist
    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 14 * 14, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    ddp = DDP(model, bucket_cap_mb=float(os.environ.get("BUCKET_MB", "25")))
    opt = ember.optim.SGD(ddp.parameters(), lr=0.01)
    per = 64 // world
    rng = np.random.default_rng(rank)
    x = ember.tensor(rng.standard_normal((per, 1, 28, 28)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, per))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()

    def timed(n=6):
        dist.barrier()
        t = time.perf_counter()
        for _ in range(n):
            step()
        dist.barrier()
        return (time.perf_counter() - t) / n

    for _ in range(3):
        step()
    on_t, off_t = [], []
    for _ in range(6):                  # interleaved rounds: drift hits both modes alike
        ddp.overlap = True
        on_t.append(timed())
        ddp.overlap = False
        off_t.append(timed())
    ddp.overlap = True
    on, off = float(np.median(on_t)), float(np.median(off_t))
    flats = [ember.zeros(b.numel) for b in ddp._buckets]
    dist.barrier()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        works = [dist.all_reduce(f, async_op=True) for f in flats]
        for w in works:
            w.wait()
        best = min(best, time.perf_counter() - t)
    if rank == 0:
        nparams = sum(p.numel() for p in model.parameters())
        print(f"RESULT world={world} step_ms={on * 1e3:.2f} step_off_ms={off * 1e3:.2f} "
              f"allreduce_ms={best * 1e3:.2f} buckets={len(ddp._buckets)} "
              f"grad_mb={nparams * 4 / 2 ** 20:.1f}", flush=True)
    dist.destroy_process_group()


def main():
    results = {}
    for n in (1, 2):
        out = subprocess.run([sys.executable, "-m", "ember.distributed.run", "-n", str(n),
                              "--timeout", "600", __file__, "--worker"], capture_output=True,
                             text=True)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
        if not line:
            print(out.stdout, out.stderr)
            raise SystemExit(f"the {n}-rank run failed")
        results[n] = dict(kv.split("=") for kv in line[0].split()[1:])
    one, two = results[1], results[2]
    s1, s2 = float(one["step_ms"]), float(two["step_ms"])
    off, ar = float(two["step_off_ms"]), float(two["allreduce_ms"])
    hidden = max(0.0, min(1.0, (off - s2) / ar)) if ar > 0 else 0.0
    print(f"DDP, benchmark CNN, global batch 64, {two['grad_mb']} MB of gradients in "
          f"{two['buckets']} bucket(s); {os.cpu_count()} cores shared by the ranks")
    print(f"  1 rank  (batch 64)      step {s1:8.2f} ms")
    print(f"  2 ranks (batch 32 each) step {s2:8.2f} ms   speed-up x{s1 / s2:.2f}")
    print(f"  2 ranks, overlap off    step {off:8.2f} ms")
    print(f"  all-reduce alone             {ar:8.2f} ms   hidden by the overlap: "
          f"{hidden:.0%}")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        main()
