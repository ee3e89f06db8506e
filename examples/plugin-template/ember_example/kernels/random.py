"""Random numbers: Philox4x32-10, counter-based, reproducing ember's CPU stream.

A kernel gets the generator's ``seed`` and ``offset``: element ``i`` (row-major in
``out``) uses counter ``offset + i``, so results depend only on (seed, offset), never on
how the work is split. The formulas are the contract of ``ember.dispatcher.random``
(documented in ``docs/plugins.md``; C++ in ``dispatcher/include/ember/philox.h``).
"""
from __future__ import annotations

import numpy as np

from ._tensor import store

_M32 = 0xFFFFFFFF


def philox(counters: np.ndarray, seed: int):
    """Philox4x32-10 of ``(lo32(c), hi32(c), 0, 0)`` for each uint64 counter ``c`` under
    key ``(lo32(seed), hi32(seed))``: four arrays of 32-bit words (held in uint64)."""
    c0 = counters & _M32
    c1 = counters >> np.uint64(32)
    c2 = np.zeros_like(counters)
    c3 = np.zeros_like(counters)
    k0, k1 = seed & _M32, (seed >> 32) & _M32
    for r in range(10):
        if r:
            k0 = (k0 + 0x9E3779B9) & _M32
            k1 = (k1 + 0xBB67AE85) & _M32
        p0 = c0 * np.uint64(0xD2511F53)     # 32 x 32 -> 64 bits: exact in uint64
        p1 = c2 * np.uint64(0xCD9E8D57)
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & _M32,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & _M32)
    return c0, c1, c2, c3


def _words(out, seed, offset):
    n = int(np.prod(out.shape, dtype=np.int64))
    counters = np.uint64(offset) + np.arange(n, dtype=np.uint64)    # wraps mod 2**64
    return philox(counters, int(seed))


def uniform(out, low, high, seed, offset):
    """``out`` = ``low + u * (high - low)``, ``u`` in [0, 1) from the dtype's significand
    bits of the first Philox words (computed in double, then rounded)."""
    w0, w1, _, _ = _words(out, seed, offset)
    name = out.dtype.name
    if name == "float64":
        u = ((w0 << np.uint64(32) | w1) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    elif name == "float16":
        u = (w0 >> np.uint64(21)).astype(np.float64) * 2.0 ** -11
    elif name == "bfloat16":
        u = (w0 >> np.uint64(24)).astype(np.float64) * 2.0 ** -8
    else:
        u = (w0 >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    store(out, (low + u * (high - low)).reshape(out.shape))


def normal(out, mean, std, seed, offset):
    """``out`` = ``mean + std * z``, ``z`` from the Box-Muller transform of the first two
    Philox words (computed in double, then rounded)."""
    w0, w1, _, _ = _words(out, seed, offset)
    u1 = (w0.astype(np.float64) + 1.0) * 2.0 ** -32
    u2 = w1.astype(np.float64) * 2.0 ** -32
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    store(out, (mean + std * z).reshape(out.shape))
