"""Quick timings of ember_cpu._C kernels (vs PyTorch / NumPy when installed).

    python backends/cpu/bench/bench_kernels.py
"""
import os
import time
import timeit

import numpy as np

import ember_cpu._C as C


class DT:
    def __init__(self, code, itemsize):
        self.code, self.itemsize = code, itemsize


F32 = DT(8, 4)


class T:
    __slots__ = ("_storage", "shape", "_stride", "_offset", "dtype")

    def __init__(self, storage, shape, stride, dtype=F32):
        self._storage, self.shape, self._stride, self._offset, self.dtype = storage, shape, stride, 0, dtype


def new(n, fill=None):
    t = T(C.Storage(4 * n), (n,), (1,))
    if fill is not None:
        np.frombuffer(t._storage, np.float32)[:] = fill
    return t


def best(fn, reps=10):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    try:
        import scipy_openblas32 as so
        C.load_blas(os.path.join(so.get_lib_dir(), so.get_library(True)))
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        torch = None
    nthreads = C.get_num_threads()

    a1, b1, o1 = new(1, 1.0), new(1, 2.0), new(1)
    n = 200000
    dt = min(timeit.repeat(lambda: C.add(o1, a1, b1), number=n, repeat=5)) / n
    print(f"1-element add call: {dt * 1e6:.3f} us")

    N = 1 << 24
    rng = np.random.default_rng(0)
    an = rng.standard_normal(N).astype(np.float32)
    bn = rng.standard_normal(N).astype(np.float32)
    a, b = new(N, an), new(N, bn)
    out = new(N)
    for th in (1, 2):
        C.set_num_threads(th)
        t_pre = best(lambda: C.add(out, a, b))
        t_new = best(lambda: C.add(new(N), a, b))
        line = (f"16M f32 add, {th} thread(s): {3 * 4 * N / t_pre / 1e9:6.1f} GB/s preallocated, "
                f"{3 * 4 * N / t_new / 1e9:6.1f} GB/s fresh output")
        if torch is not None:
            torch.set_num_threads(th)
            ta, tb = torch.from_numpy(an), torch.from_numpy(bn)
            to = torch.empty(N)
            tt_pre = best(lambda: torch.add(ta, tb, out=to))
            tt_new = best(lambda: torch.add(ta, tb))
            line += (f" | torch {3 * 4 * N / tt_pre / 1e9:6.1f} / {3 * 4 * N / tt_new / 1e9:6.1f} GB/s")
        print(line)
    C.set_num_threads(nthreads)
    if torch is not None:
        torch.set_num_threads(nthreads)

    s = T(C.Storage(4), (1,), (1,))
    t_sum = best(lambda: C.sum(s, a, (0,)))
    line = f"16M f32 sum ({nthreads} threads): {4 * N / t_sum / 1e9:6.1f} GB/s"
    if torch is not None:
        ta = torch.from_numpy(an)
        tt = best(lambda: ta.sum())
        line += f" | torch {4 * N / tt / 1e9:6.1f} GB/s"
    print(line)

    M = 1024
    am = rng.standard_normal((M, M)).astype(np.float32)
    bm = rng.standard_normal((M, M)).astype(np.float32)
    ta = T(C.Storage.from_buffer(am), (1, M, M), (M * M, M, 1))
    tb = T(C.Storage.from_buffer(bm), (1, M, M), (M * M, M, 1))
    to = T(C.Storage(4 * M * M), (1, M, M), (M * M, M, 1))
    C.bmm(to, ta, tb)
    t_mm = best(lambda: C.bmm(to, ta, tb), 20)
    t_np = best(lambda: am @ bm, 20)
    fl = 2 * M ** 3
    print(f"1024^2 sgemm: {fl / t_mm / 1e9:6.1f} GFLOP/s | numpy {fl / t_np / 1e9:6.1f} GFLOP/s "
          f"(ratio {t_np / t_mm:.2f})")


if __name__ == "__main__":
    main()
