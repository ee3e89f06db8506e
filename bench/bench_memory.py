"""Activation offloading (``ember.utils.offload``, vDNN) on a VGG-style CNN, on opencl.

What it measures, in one run:

1. The step without offloading and without a limit: its losses, its peak device memory
   (``max_memory_allocated``) and, from that, ``N``: the peak minus what the parameters,
   their gradients and the optimizer hold (the activations and workspaces of a step).
2. The same steps with the device limited to (what the parameters hold) + N/4
   (``set_per_process_memory_fraction``): without offloading they fail with
   ``OutOfMemoryError``; with ``offload(model, policy="conv")`` they train, and the
   losses are compared with step 1's (bit for bit: the same kernels run).
3. Peak memory with offloading, as a fraction of step 1's peak (target <= 20 %).
4. Step times: no offload; offload; and the copies alone (the same bytes out and back,
   serially), to show the overlap: offload time < compute time + copy time.

Usage: ``python bench/bench_memory.py [--device opencl] [--depth 16] [--batch 32]
[--json out.json]``; ``make bench`` runs it. ``scripts/gpu_check.sh`` runs it on cuda
(``--device cuda``), vDNN's own setting.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time

import numpy as np

import ember
import ember.nn as nn
from ember.utils import offload as OF


def vgg(depth: int, width: int = 64):
    layers, c = [], 3
    for stage, w in enumerate((width, width * 2)):
        for _ in range(depth):
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU()]
            c = w
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c * 8 * 8, 10))


def run(args, limit=None, use_offload=False):
    ns = getattr(ember, args.device)
    # what an earlier run's OutOfMemoryError kept alive (its traceback's cycles) goes now,
    # not when the collector next runs: it would count in this run's memory
    gc.collect()
    ember.manual_seed(0)
    model = vgg(args.depth).to(args.device)
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((args.batch, 3, 32, 32)).astype(np.float32)).to(
        args.device)
    y = ember.tensor(rng.integers(0, 10, args.batch)).to(args.device)
    ns.synchronize()
    ns.empty_cache()
    ns.set_per_process_memory_fraction(1.0)
    if limit is not None:
        ns.set_per_process_memory_fraction(limit / ns.mem_get_info()[1])
    losses, times = [], []
    try:
        for i in range(args.steps):
            if i == 1:      # the optimizer's state exists from step 1 on
                ns.synchronize()
                ns.reset_peak_memory_stats()
                held = ns.memory_allocated()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            if use_offload:
                with OF.offload(model, policy="conv"):
                    loss = nn.functional.cross_entropy(model(x), y)
            else:
                loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            times.append(time.perf_counter() - t0)
    except ember.OutOfMemoryError as e:
        return {"oom": str(e).split(". ")[0]}
    finally:
        ns.set_per_process_memory_fraction(1.0)
    return {"losses": losses, "peak": ns.max_memory_allocated(), "held": held,
            "step_s": min(times[1:])}


def copies_alone(args, nbytes_out, steps=3):
    """The same bytes out to the host and back, serially (no compute)."""
    api = sys.modules[f"ember_{args.device}"]
    t = ember.empty(nbytes_out, dtype=ember.uint8, device=args.device)
    best = float("inf")
    for _ in range(steps):
        getattr(ember, args.device).synchronize()
        t0 = time.perf_counter()
        h = api.offload_copy_out(t._storage, 0, nbytes_out)
        h.wait()
        api.offload_copy_in(h, t._storage, 0)
        getattr(ember, args.device).synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="opencl")
    p.add_argument("--depth", type=int, default=16, help="conv layers per stage")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--json")
    args = p.parse_args(argv)
    base = run(args)
    n = base["peak"] - base["held"]
    limit = base["held"] + n // 4
    without = run(args, limit=limit)
    with_off = run(args, limit=limit, use_offload=True)
    before = dict(OF.STATS)
    free = run(args, use_offload=True)
    moved = (OF.STATS["bytes_out"] - before["bytes_out"]) // max(args.steps, 1)
    copy_s = copies_alone(args, moved)
    res = {
        "device": args.device, "depth": args.depth, "batch": args.batch,
        "activations_N_MiB": n / 2**20, "limit_MiB": limit / 2**20,
        "without_offload_under_limit": without,
        "with_offload_under_limit": {k: v for k, v in with_off.items() if k != "losses"},
        "losses_identical": with_off.get("losses") == base["losses"],
        "peak_fraction": free["peak"] / base["peak"],
        "step_s": {"no_offload": base["step_s"], "offload": free["step_s"],
                   "copies_alone": copy_s},
        "overlap": free["step_s"] < base["step_s"] + copy_s,
        "moved_MiB_per_step": moved / 2**20,
    }
    print(f"activations and workspaces N = {n / 2**20:.1f} MiB; limit = parameters + N/4 = "
          f"{limit / 2**20:.1f} MiB")
    print(f"  without offload under the limit: "
          f"{'OutOfMemoryError' if 'oom' in without else 'trained (the limit is too high)'}")
    print(f"  with offload (policy conv) under the limit: "
          f"{'OOM: ' + with_off['oom'] if 'oom' in with_off else 'trained'}; losses "
          f"identical to the unlimited run: {res['losses_identical']}")
    print(f"  peak with offload / without: {free['peak'] / 2**20:.1f} / "
          f"{base['peak'] / 2**20:.1f} MiB = {res['peak_fraction']:.0%} (target <= 20 %)")
    print(f"  step: no offload {base['step_s'] * 1e3:.0f} ms, offload "
          f"{free['step_s'] * 1e3:.0f} ms ({free['step_s'] / base['step_s']:.2f}x), the "
          f"{moved / 2**20:.1f} MiB of copies alone {copy_s * 1e3:.0f} ms: overlap "
          f"{'shown' if res['overlap'] else 'NOT shown'} (offload < compute + copies)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
