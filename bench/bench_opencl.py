"""OpenCL benchmark: ember-opencl vs tinygrad on the same OpenCL device (PoCL), in one run,
with ember's CPU backend alongside.

    .venv/bin/python bench/bench_opencl.py [--quick]

Figures (issue "The OpenCL backend"): MLP 784-512-512-10 batch 128 SGD step time and GEMM
1024 GFLOP/s for ember-opencl, tinygrad on its CL device and ember's CPU backend; ratios
ember-opencl/tinygrad (step time; target <= 1) and ember-opencl/CPU backend (GEMM).

tinygrad loads libOpenCL through ctypes; unless OPENCL_PATH is set, this script points it
at the ICD loader bundled with pyopencl, which finds PoCL from pocl-binary-distribution.
Without tinygrad (``pip install tinygrad``) its figures are skipped with a message.
"""
from __future__ import annotations

import argparse
import glob
import os
import time

import numpy as np

import ember
from _timing import best_of

N_GEMM = 1024
BATCH = 128
SIZES = (784, 512, 512, 10)


def _weights(seed=0):
    """Initial MLP weights shared by every framework: [(w (out, in), b (out,)), ...]."""
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        out.append((rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                    rng.uniform(-bound, bound, fan_out).astype(np.float32)))
    return out


def _data(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BATCH, SIZES[0])).astype(np.float32),
            rng.integers(0, SIZES[-1], BATCH))


# -- ember ---------------------------------------------------------------------------------

def ember_figures(device, rep, compile_mode=None):
    """(GEMM GFLOP/s, MLP step seconds, final loss) of ember on ``device``; with
    ``compile_mode``, the step runs under ``ember.compile(step, mode=compile_mode)``."""
    sync = ember.opencl.synchronize if device.startswith("opencl") else (lambda: None)
    rng = np.random.default_rng(2)
    a = ember.tensor(rng.standard_normal((N_GEMM, N_GEMM)).astype(np.float32)).to(device)
    b = ember.tensor(rng.standard_normal((N_GEMM, N_GEMM)).astype(np.float32)).to(device)

    def gemm():
        a @ b
        sync()
    gflops = 2 * N_GEMM ** 3 / best_of(gemm, rep) / 1e9

    nn = ember.nn
    layers = []
    for w, bias in _weights():
        lin = nn.Linear(w.shape[1], w.shape[0])
        with ember.no_grad():
            lin.weight.copy_(ember.from_numpy(w.copy()))
            lin.bias.copy_(ember.from_numpy(bias.copy()))
        layers += [lin, nn.ReLU()]
    model = nn.Sequential(*layers[:-1]).to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    xn, yn = _data()
    x, y = ember.from_numpy(xn).to(device), ember.from_numpy(yn).to(device)
    last = []

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        # (the loss's value: a tensor that requires grad is not replayed, see the
        # reduce-overhead contract in docs/compile.md; TinyJit's step returns its value too)
        return loss.detach()

    if compile_mode is not None:
        step = ember.compile(step, mode=compile_mode)

    def steps():
        for _ in range(5):
            last[:] = [step()]
        sync()
    steps()             # (compiled: capture, code generation, the replay plan)
    t_step = best_of(steps, rep) / 5
    return gflops, t_step, float(last[0].item())


# -- tinygrad ------------------------------------------------------------------------------

def _point_tinygrad_at_pyopencl_loader():
    if os.environ.get("OPENCL_PATH"):
        return
    try:
        import pyopencl  # noqa: F401  (sets PYOPENCL_HOME, which the bundled loader reads)
    except ImportError:
        return
    libs = glob.glob(os.path.join(os.path.dirname(pyopencl.__file__), ".libs",
                                  "libOpenCL*.so*"))
    if libs:
        os.environ["OPENCL_PATH"] = libs[0]


def tinygrad_figures(rep):
    """(version, device name, GEMM GFLOP/s, MLP step seconds, final loss) of tinygrad on
    its CL device, or a string saying why it could not run."""
    _point_tinygrad_at_pyopencl_loader()
    try:
        import tinygrad
        from tinygrad import Device, Tensor, TinyJit
        from tinygrad import nn as tnn
        try:                    # 0.14: a context variable; older: Tensor.train()
            from tinygrad.helpers import Context
            def training():
                return Context(TRAINING=1)
        except ImportError:
            training = Tensor.train
    except ImportError as e:
        return f"tinygrad is not installed ({e}); `pip install tinygrad` to compare"
    try:
        from importlib.metadata import version
        ver = version("tinygrad")
    except Exception:
        ver = getattr(tinygrad, "__version__", "?")
    try:
        dev = Device["CL"]
        name = getattr(getattr(dev, "device_id", None), "value", None) or "CL"
        try:
            import pyopencl as cl
            name = cl.get_platforms()[0].get_devices()[0].name.strip()
        except Exception:
            pass
        rng = np.random.default_rng(2)
        a = Tensor(rng.standard_normal((N_GEMM, N_GEMM)).astype(np.float32),
                   device="CL").realize()
        b = Tensor(rng.standard_normal((N_GEMM, N_GEMM)).astype(np.float32),
                   device="CL").realize()
        mm = TinyJit(lambda x, y: (x @ y).realize())

        def gemm():
            mm(a, b)
            dev.synchronize()
        for _ in range(2):          # TinyJit captures on the second call
            gemm()
        gflops = 2 * N_GEMM ** 3 / best_of(gemm, rep) / 1e9

        class MLP:
            def __init__(self):
                self.layers = []
                for w, bias in _weights():
                    lin = tnn.Linear(w.shape[1], w.shape[0])
                    lin.weight = Tensor(w, device="CL")
                    lin.bias = Tensor(bias, device="CL")
                    self.layers.append(lin)

            def __call__(self, x):
                for i, lin in enumerate(self.layers):
                    x = lin(x)
                    if i < len(self.layers) - 1:
                        x = x.relu()
                return x
        model = MLP()
        opt = tnn.optim.SGD(tnn.state.get_parameters(model), lr=0.01)
        xn, yn = _data()
        x, y = Tensor(xn, device="CL").realize(), Tensor(yn.astype(np.int32),
                                                          device="CL").realize()

        @TinyJit
        def jit_step(x, y):
            opt.zero_grad()
            loss = model(x).sparse_categorical_crossentropy(y).backward()
            opt.step()
            return loss.realize()
        last = []

        def steps():
            with training():
                for _ in range(5):
                    last[:] = [jit_step(x, y)]
            dev.synchronize()
        steps()
        t_step = best_of(steps, rep) / 5
        return ver, name, gflops, t_step, float(last[0].item())
    except Exception as e:  # report why, keep ember's figures
        return (f"tinygrad {ver} could not run on its CL device: {type(e).__name__}: {e} "
                f"(OPENCL_PATH={os.environ.get('OPENCL_PATH', '')!r})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rep = 3 if args.quick else 7
    if not ember.opencl.is_available():
        raise SystemExit("no OpenCL device: pip install -e backends/opencl (pulls pyopencl "
                         "and pocl-binary-distribution)")
    import ember_opencl
    from ember_opencl import _runtime as rt
    print(f"ember {ember.__version__}, ember-opencl {ember_opencl.__version__} on opencl:0 "
          f"({rt.device(0).name}); CPU backend with {ember.get_num_threads()} threads")
    t0 = time.perf_counter()
    ocl = ember_figures("opencl", rep)
    ocl_c = ember_figures("opencl", rep, compile_mode="reduce-overhead")
    cpu = ember_figures("cpu", rep)
    tg = tinygrad_figures(rep)
    print(f"{'':<22}{'GEMM 1024':>14}{'MLP step':>12}{'last loss':>12}")
    row = "{:<22}{:>8.1f} GFLOP/s{:>9.2f} ms{:>12.4f}"
    print(row.format("ember opencl (PoCL)", ocl[0], ocl[1] * 1e3, ocl[2]))
    print(row.format("  ember.compile", ocl_c[0], ocl_c[1] * 1e3, ocl_c[2])
          + "  (mode=\"reduce-overhead\")")
    if isinstance(tg, str):
        print(f"{'tinygrad':<22}{tg}")
    else:
        print(row.format(f"tinygrad {tg[0]} CL", tg[2], tg[3] * 1e3, tg[4]) + f"  ({tg[1]})")
    print(row.format("ember cpu backend", cpu[0], cpu[1] * 1e3, cpu[2]))
    if not isinstance(tg, str):
        ratio = ocl[1] / tg[3]
        print(f"MLP step time ember-opencl / tinygrad: {ratio:.2f}x   "
              f"{'PASS' if ratio <= 1 else 'MISS'} (target <= 1x); "
              f"GEMM ember-opencl / tinygrad: {ocl[0] / tg[2]:.2f}x")
        ratio = ocl_c[1] / tg[3]
        print(f"MLP step time ember.compile on opencl / tinygrad TinyJit: {ratio:.2f}x   "
              f"{'PASS' if ratio <= 0.5 else 'MISS'} (target <= 0.5x, issue 16)")
    print(f"GEMM 1024 ember-opencl (PoCL) / ember CPU backend: {ocl[0] / cpu[0]:.2f}x; "
          f"MLP step opencl / cpu time: {ocl[1] / cpu[1]:.2f}x   "
          f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
