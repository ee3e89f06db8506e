"""A short tour of ember tensors on the CPU backend plugin.

(`make demo` runs the training demo, examples/train_digits.py.)
"""
import time

import numpy as np

import ember
from ember.dispatcher import plugin_records


def main():
    print("ember", ember.__version__)
    for r in plugin_records():
        print(f"  backend {r.name}: {r.status} {r.version} devices={r.devices or r.error}")

    x = ember.arange(12.).view(3, 4)
    print("x =", x)
    print("x.t() is a view:", x.t().data_ptr() == x.data_ptr(), "strides", x.t().stride())
    print("x[:, ::2] =", x[:, ::2])
    print("x + [10, 20, 30, 40] (broadcast) =", x + ember.tensor([10., 20., 30., 40.]))
    print("x.sum(dim=1) =", x.sum(dim=1), " x.max() =", x.max())
    print("softmax(x[0]) =", ember.softmax(x[0], dim=0))

    a = ember.randn(256, 512, generator=ember.Generator().manual_seed(0))
    b = ember.randn(512, 128, generator=ember.Generator().manual_seed(1))
    t0 = time.perf_counter()
    c = a @ b
    dt = time.perf_counter() - t0
    ref = a.numpy() @ b.numpy()
    print(f"matmul 256x512 @ 512x128: max |ember - numpy| = "
          f"{np.abs(c.numpy() - ref).max():.2e} ({2 * 256 * 512 * 128 / dt / 1e9:.1f} GFLOP/s)")

    arr = np.zeros(4, dtype=np.float32)
    t = ember.from_numpy(arr)
    t += 1
    print("from_numpy shares memory: numpy sees", arr)
    print("threads:", ember.get_num_threads())


if __name__ == "__main__":
    main()
