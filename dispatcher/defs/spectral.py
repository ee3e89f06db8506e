"""The discrete Fourier transform's op: ``fft_pairs`` (the unnormalized DFT of each row of
a contiguous ``(..., n, 2)`` tensor of real and imaginary parts), for ``ember.fft``.

Backends may implement it (the cpu backend has a mixed-radix C++ kernel); the composite
runs elsewhere: a product with the DFT matrix where n <= 64, a Cooley-Tukey split for
longer lengths (n = n1 * n2: length-n1 transforms as one matrix product over the batch, a
twiddle factor, then length-n2 transforms, recursively), Bluestein's chirp-z algorithm for
a length with a prime factor above 64. The products are real GEMMs on the interleaved
layout (``complex_ops.matmul``); matrices and twiddles are computed in float64 from exact
integer phases and cached per length, dtype and device. The DFT is linear: its gradient is
the transform of the opposite sign.
"""
from __future__ import annotations

import math

from .. import complex_ops as CX
from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..grad_mode import below_autograd
from ..schema import OPS, composite, defop, gradient
from . import index as IX

__all__ = ["fft_pairs", "rfft_real", "fft_last"]

defop("fft_pairs", "matmul", "fft_pairs(Tensor self, int sign) -> Tensor", "(out, x, sign)",
      promotion="none")
defop("rfft_real", "matmul", "rfft_real(Tensor self) -> Tensor", "(out, x)", promotion="none")

_DIRECT = 64          # lengths up to this: one product with the DFT matrix
_CACHE: dict = {}     # (what, n, ..., dtype, device) -> constant tensor
_CACHE_LIMIT = 64


def _cached(key, make):
    t = _CACHE.get(key)
    if t is None:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.pop(next(iter(_CACHE)))
        with below_autograd():
            t = _CACHE[key] = make()
    return t


def _phase(k, n, sign, dtype, device):
    """exp(sign * 2 pi i k / n) for an int64 tensor ``k`` of exact phases in [0, n),
    computed in float64 and rounded to ``dtype`` once. The quadrant is taken out exactly
    (2 pi k / n = q pi / 2 + phi, phi in [0, pi / 2)), so multiples of pi / 2 give exact
    zeros and ones, as PyTorch's transforms do."""
    E = O.elementwise
    k4 = E("mul", k, 4)
    q = E("div", k4, n, rounding_mode="floor")
    phi = E("mul", O.to(E("sub", k4, E("mul", q, n)), dtype=D.float64), math.pi / 2 / n)
    c, s = E("cos", phi), E("sin", phi)
    nc, ns = E("neg", c), E("neg", s)
    quad = [E("eq", q, i) for i in range(3)]
    re = O.where(quad[0], c, O.where(quad[1], ns, O.where(quad[2], nc, s)))
    im = O.where(quad[0], s, O.where(quad[1], c, O.where(quad[2], ns, nc)))
    if sign < 0:
        im = E("neg", im)
    return O.to(CX.join(re, im), dtype=dtype)


def _dft_matrix(n, sign, dtype, device):
    def make():
        j = O.arange(0, n, 1, D.int64, device)
        jk = O.elementwise("remainder", O.elementwise("mul", V.unsqueeze(j, 1), j), n)
        return _phase(jk, n, sign, dtype, device)
    return _cached(("dft", n, sign, dtype, device), make)


def _twiddle(n1, n2, sign, dtype, device):
    def make():
        a = O.arange(0, n2, 1, D.int64, device)
        b = O.arange(0, n1, 1, D.int64, device)
        jk = O.elementwise("remainder", O.elementwise("mul", V.unsqueeze(a, 1), b), n1 * n2)
        return _phase(jk, n1 * n2, sign, dtype, device)
    return _cached(("twiddle", n1, n2, sign, dtype, device), make)


def _chirp(n, sign, dtype, device):
    """exp(sign * i pi j^2 / n), j < n (j^2 reduced mod 2n, exactly)."""
    def make():
        j = O.arange(0, n, 1, D.int64, device)
        q = O.elementwise("remainder", O.elementwise("mul", j, j), 2 * n)
        return _phase(q, 2 * n, sign, dtype, device)
    return _cached(("chirp", n, sign, dtype, device), make)


def _split(n):
    """The largest factor of ``n`` in [2, 64] (0 if none: n has only primes above 64)."""
    for f in range(min(_DIRECT, n // 2), 1, -1):
        if n % f == 0:
            return f
    return 0


def _composite_last(x, sign):
    """The unnormalized DFT (kernel exp(sign 2 pi i jk / n)) of complex ``x`` along its
    last dimension."""
    n = x.shape[-1]
    if n == 1:
        return x
    dt, dev = x.dtype, x.device
    if n <= _DIRECT:
        return CX.matmul(x, _dft_matrix(n, sign, dt, dev))
    n1 = _split(n)
    if n1 == 0:
        return _bluestein(x, sign)
    n2 = n // n1
    lead = x.shape[:-1]
    a = V.transpose(V.reshape(x, lead + (n1, n2)), -1, -2)          # [j2, j1]
    b = CX.matmul(a, _dft_matrix(n1, sign, dt, dev))                  # [j2, k1]
    b = O.elementwise("mul", b, _twiddle(n1, n2, sign, dt, dev))
    c = fft_last(O.contiguous(V.transpose(b, -1, -2)), sign)         # [k1, k2]
    return V.reshape(O.contiguous(V.transpose(c, -1, -2)), lead + (n,))  # k = k1 + n1 k2


def _bluestein(x, sign):
    """Bluestein's algorithm: jk = (j^2 + k^2 - (k - j)^2) / 2 turns the DFT into a
    circular convolution of power-of-two length m >= 2n - 1."""
    n = x.shape[-1]
    dt, dev = x.dtype, x.device
    m = 1 << (2 * n - 2).bit_length()
    w = _chirp(n, sign, dt, dev)                       # exp(sign i pi j^2 / n)

    def make_kernel():
        wc = CX.conj(w)
        zeros = O.zeros((m - 2 * n + 1,), dt, dev)
        full = IX.cat([wc, zeros, IX.flip(V.narrow(wc, 0, 1, n - 1), (0,))], 0)
        return fft_last(full, -1)
    kernel_hat = _cached(("bluestein", n, sign, dt, dev), make_kernel)
    a = O.elementwise("mul", x, w)
    a = IX.cat([a, O.zeros(x.shape[:-1] + (m - n,), dt, dev)], -1)
    conv = fft_last(O.elementwise("mul", fft_last(a, -1), kernel_hat), 1)
    conv = O.elementwise("mul", V.narrow(conv, -1, 0, n), 1.0 / m)
    return O.elementwise("mul", conv, w)


@composite("fft_pairs")
def _fft_pairs_composite(self, sign):
    z = V.view_as_complex(self)
    return O.contiguous(V.view_as_real(_composite_last(z, sign)))


@O.recorded("fft_pairs")
def fft_pairs(self, sign):
    """The unnormalized DFT (kernel exp(sign 2 pi i jk / n)) of each row of contiguous
    ``(..., n, 2)`` float32 / float64 pairs."""
    o = OPS["fft_pairs"]
    k = o.kernels.get(self.device.type)
    if k is None:
        return _fft_pairs_composite(self, sign)
    out = C.empty(self.shape, self.dtype, self.device)
    O.launch(o, self.device, k, out, self, sign=sign)
    return out


@gradient("fft_pairs")
def _(g, sign):
    return (fft_pairs(O.contiguous(g), -sign),)


def fft_last(x, sign):
    """The unnormalized DFT (kernel exp(sign 2 pi i jk / n)) of complex ``x`` along its
    last dimension, through ``fft_pairs``."""
    pairs = O.contiguous(V.view_as_real(x))
    res = V.view_as_complex(fft_pairs(pairs, sign))
    res._base = None   # (a tensor of its own, as complex_ops.join's results)
    return res


@composite("rfft_real")
def _rfft_real_composite(self):
    n = self.shape[-1]
    z = CX.join(self, O.zeros(self.shape, self.dtype, self.device))
    return O.contiguous(V.view_as_real(V.narrow(_composite_last(z, -1), -1, 0, n // 2 + 1)))


@O.recorded("rfft_real")
def rfft_real(self):
    """The DFT (kernel exp(-2 pi i jk / n)) of each row of a contiguous real ``(..., n)``
    float32 / float64 tensor: its ``n // 2 + 1`` non-negative frequencies as ``(..., n //
    2 + 1, 2)`` pairs."""
    o = OPS["rfft_real"]
    k = o.kernels.get(self.device.type)
    if k is None:
        return _rfft_real_composite(self)
    out = C.empty(self.shape[:-1] + (self.shape[-1] // 2 + 1, 2), self.dtype, self.device)
    O.launch(o, self.device, k, out, self)
    return out


@gradient("rfft_real")
def _(g, self_shape):
    # the adjoint of x -> X[:n // 2 + 1]: the real part of the opposite-sign DFT of the
    # gradient zero-extended to n frequencies
    n = self_shape[-1]
    g = O.contiguous(g)
    pad = O.zeros(g.shape[:-2] + (n - g.shape[-2], 2), g.dtype, g.device)
    full = fft_pairs(IX.cat([g, pad], -2) if n > g.shape[-2] else g, 1)
    return (O.contiguous(V.select(full, -1, 0)),)
