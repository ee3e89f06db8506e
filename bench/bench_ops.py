"""ember vs PyTorch (CPU) vs NumPy, side by side in one run; prints ratios.

    make bench            # or: .venv/bin/python bench/bench_ops.py [--quick]

Targets (issue "Foundation"): a+b on 1-element tensors <= 4 us per op; add/mul of 16M
float32 >= 0.9x PyTorch's GB/s; sum of 16M >= 0.9x PyTorch; matmul 1024x1024 float32
>= 0.9x NumPy's GFLOP/s; 2 threads >= 1.6x faster than 1 thread on the 16M add.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import ember
from _timing import best_of


def row(name, unit, ours, peers, higher_is_better, target=None):
    cells = [f"{name:<34}", f"ember {ours:9.2f} {unit}"]
    ratios = {}
    for peer, v in peers.items():
        r = (ours / v) if higher_is_better else (v / ours)
        ratios[peer] = r
        cells.append(f"{peer} {v:9.2f} {unit} (ember/{peer} speed {r:5.2f}x)")
    line = "  ".join(cells)
    if target is not None:
        ok = target(ours, ratios)
        line += "   " + ("PASS" if ok else "MISS")
    print(line)
    return ratios


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    rep = 3 if args.quick else 15
    threads = ember.get_num_threads()
    torch.set_num_threads(threads)
    print(f"threads: ember {threads}, torch {torch.get_num_threads()}; numpy {np.__version__}, "
          f"torch {torch.__version__}")

    # ---- per-op overhead ----------------------------------------------------------
    a, b = ember.ones(1), ember.ones(1)
    ta, tb = torch.ones(1), torch.ones(1)
    na, nb = np.ones(1, np.float32), np.ones(1, np.float32)
    n = 20000
    us = {k: best_of(f, rep, n) * 1e6 for k, f in
          (("ember", lambda: a + b), ("torch", lambda: ta + tb), ("numpy", lambda: na + nb))}
    row("a + b, 1 element (per op)", "us", us["ember"], {"torch": us["torch"],
        "numpy": us["numpy"]}, False, lambda v, r: v <= 4.0)

    # ---- bandwidth-bound elementwise ------------------------------------------------
    N = 16 * 1024 * 1024
    x = np.random.default_rng(0).standard_normal(N, dtype=np.float32)
    y = np.random.default_rng(1).standard_normal(N, dtype=np.float32)
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    gb = 3 * 4 * N / 1e9  # two reads, one write
    for op, e_fn, t_fn, n_fn in (
            ("add", lambda: ex + ey, lambda: tx + ty, lambda: x + y),
            ("mul", lambda: ex * ey, lambda: tx * ty, lambda: x * y)):
        te, tt, tn = (best_of(f, rep) for f in (e_fn, t_fn, n_fn))
        row(f"{op} 16M float32", "GB/s", gb / te, {"torch": gb / tt, "numpy": gb / tn}, True,
            lambda v, r: r["torch"] >= 0.9)

    # the same with a preallocated output (out=): the kernel alone, no page faults
    ez, tz, nz = ember.empty(N), torch.empty(N), np.empty(N, np.float32)
    for op, e_fn, t_fn, n_fn in (
            ("add", lambda: ember.add(ex, ey, out=ez), lambda: torch.add(tx, ty, out=tz),
             lambda: np.add(x, y, out=nz)),
            ("mul", lambda: ember.mul(ex, ey, out=ez), lambda: torch.mul(tx, ty, out=tz),
             lambda: np.multiply(x, y, out=nz))):
        te, tt, tn = (best_of(f, rep) for f in (e_fn, t_fn, n_fn))
        row(f"{op} 16M float32, out=", "GB/s", gb / te, {"torch": gb / tt, "numpy": gb / tn},
            True, lambda v, r: r["torch"] >= 0.9)

    gb_sum = 4 * N / 1e9
    te, tt, tn = (best_of(f, rep) for f in (lambda: ex.sum(), lambda: tx.sum(),
                                           lambda: x.sum()))
    row("sum 16M float32", "GB/s", gb_sum / te, {"torch": gb_sum / tt, "numpy": gb_sum / tn},
        True, lambda v, r: r["torch"] >= 0.9)

    # ---- activations and transcendental functions (compute-bound) --------------------
    # elements per second, 4M float32; GELU is one op in each (exact erf form and tanh form)
    M4 = 4 * 1024 * 1024
    ex4, tx4 = ex[:M4].contiguous(), tx[:M4].contiguous()
    ax4, tax4 = ember.abs(ex4), torch.abs(tx4)
    for op, e_fn, t_fn in (
            ("exp", lambda: ember.exp(ex4), lambda: torch.exp(tx4)),
            ("tanh", lambda: ember.tanh(ex4), lambda: torch.tanh(tx4)),
            ("erf", lambda: ember.erf(ex4), lambda: torch.erf(tx4)),
            ("sigmoid", lambda: ember.sigmoid(ex4), lambda: torch.sigmoid(tx4)),
            ("log", lambda: ember.log(ax4), lambda: torch.log(tax4)),
            ("sin", lambda: ember.sin(ex4), lambda: torch.sin(tx4)),
            ("cos", lambda: ember.cos(ex4), lambda: torch.cos(tx4)),
            ("gelu", lambda: ember.nn.functional.gelu(ex4),
             lambda: torch.nn.functional.gelu(tx4)),
            ("gelu tanh", lambda: ember.nn.functional.gelu(ex4, approximate="tanh"),
             lambda: torch.nn.functional.gelu(tx4, approximate="tanh"))):
        te, tt = (best_of(f, rep) for f in (e_fn, t_fn))
        row(f"{op} 4M float32", "Gelem/s", M4 / te / 1e9, {"torch": M4 / tt / 1e9}, True)

    # ---- GEMM ------------------------------------------------------------------------
    M = 1024
    p = np.random.default_rng(2).standard_normal((M, M), dtype=np.float32)
    q = np.random.default_rng(3).standard_normal((M, M), dtype=np.float32)
    ep, eq = ember.from_numpy(p), ember.from_numpy(q)
    tp, tq = torch.from_numpy(p), torch.from_numpy(q)
    flop = 2 * M ** 3 / 1e9
    te, tt, tn = (best_of(f, rep) for f in (lambda: ep @ eq, lambda: tp @ tq, lambda: p @ q))
    row("matmul 1024x1024 float32", "GFLOP/s", flop / te, {"numpy": flop / tn,
        "torch": flop / tt}, True, lambda v, r: r["numpy"] >= 0.9)

    # ---- thread scaling ----------------------------------------------------------------
    for label, fn in (("add 16M", lambda: ex + ey),
                      ("add 16M out=", lambda: ember.add(ex, ey, out=ez))):
        ember.set_num_threads(1)
        t1 = best_of(fn, rep)
        ember.set_num_threads(2)
        t2 = best_of(fn, rep)
        ember.set_num_threads(threads)
        speedup = t1 / t2
        tfn = (lambda: tx + ty) if "out" not in label else (lambda: torch.add(tx, ty, out=tz))
        torch.set_num_threads(1)
        p1 = best_of(tfn, rep)
        torch.set_num_threads(2)
        p2 = best_of(tfn, rep)
        torch.set_num_threads(threads)
        print(f"{label + ': 2 threads vs 1':<34}  ember 1 thread {gb / t1:6.2f} GB/s, "
              f"2 threads {gb / t2:6.2f} GB/s, speedup {speedup:4.2f}x "
              f"(torch: {gb / p1:6.2f} -> {gb / p2:6.2f} GB/s, {p1 / p2:4.2f}x)   "
              f"{'PASS' if speedup >= 1.6 else 'MISS'}")


if __name__ == "__main__":
    main()
