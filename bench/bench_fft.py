"""Complex arithmetic and ember.fft against PyTorch (CPU), side by side in one run,
interleaved rounds, minimum time; prints ember / PyTorch time ratios (1.0 = as fast).

    .venv/bin/python bench/bench_fft.py [--quick]

ember computes complex tensors as pairs of real tensors and its transforms as real GEMMs
(DFT matrices, Cooley-Tukey splits, Bluestein), where PyTorch runs complex kernels and
pocketfft: this measures what that costs.
"""
from __future__ import annotations

import argparse
import numpy as np
import torch

import ember
from _timing import interleaved


def case(name, make, rounds, number):
    fe, ft = make(ember), make(torch)
    t = interleaved({"ember": fe, "torch": ft}, rounds, number)
    print(f"{name:<44} ember {t['ember'] * 1e3:9.3f} ms  torch {t['torch'] * 1e3:9.3f} ms  "
          f"ember/torch time {t['ember'] / t['torch']:6.2f}x")
    return t["ember"] / t["torch"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds = 3 if args.quick else 7
    torch.set_num_threads(ember.get_num_threads())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1 << 20,)).astype(np.float32)
    b = rng.standard_normal((1 << 20,)).astype(np.float32)
    sig = rng.standard_normal((8, 16000)).astype(np.float32)
    xq = rng.standard_normal((8, 256, 8, 64)).astype(np.float32)

    def cmul(m):
        z, w = m.complex(m.tensor(a), m.tensor(b)), m.complex(m.tensor(b), m.tensor(a))
        return lambda: z * w

    def rotary(m):   # LLaMA's rotary embedding on (batch, seq, heads, head_dim)
        x = m.tensor(xq)
        freqs = m.outer(m.arange(256.), 1.0 / (10000 ** (m.arange(0, 64, 2).float() / 64)))
        fc = m.polar(m.ones_like(freqs), freqs).view(1, 256, 1, 32)
        return lambda: m.view_as_real(m.view_as_complex(x.reshape(8, 256, 8, 32, 2)) * fc
                                      ).flatten(3)

    def fft(n, batch):
        x = rng.standard_normal((batch, n)).astype(np.float32)
        return lambda m: (lambda t: lambda: m.fft.rfft(t))(m.tensor(x))

    def stft(m):
        x, w = m.tensor(sig), m.hann_window(400)
        return lambda: m.stft(x, 400, 160, window=w, return_complex=True)

    ratios = [
        case("complex mul, 1M complex64", cmul, rounds, 5),
        case("rotary embedding (8, 256, 8, 64)", rotary, rounds, 5),
        case("rfft 64 x 1024", fft(1024, 64), rounds, 5),
        case("rfft 16 x 4096", fft(4096, 16), rounds, 5),
        case("rfft 64 x 1000 (not a power of 2)", fft(1000, 64), rounds, 5),
        case("rfft 64 x 997 (prime: Bluestein)", fft(997, 64), rounds, 3),
        case("stft 8 x 16000, n_fft 400, hop 160", stft, rounds, 3),
    ]
    print(f"geometric mean ember/torch time: {np.exp(np.mean(np.log(ratios))):.2f}x")


if __name__ == "__main__":
    main()
