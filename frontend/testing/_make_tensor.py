"""``ember.testing.make_tensor`` and the deprecated ``assert_allclose``, with
``torch.testing``'s signatures and semantics (programs' own test suites call them)."""
from __future__ import annotations

import math

import numpy as np

from ember.dispatcher import dtypes as D
from ember.dispatcher.core import TensorBase

from .. import _creation as K
from ._compare import to_numpy
from ember.dispatcher.warn import warn as _warn

__all__ = ["make_tensor", "assert_allclose"]


def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _low_high(low, high, lowest, highest, default_low, default_high):
    """PyTorch's rules: defaults, NaN and order checks, clamping into the dtype's range."""
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    for v, n in ((low, "low"), (high, "high")):
        if v is not None and isinstance(v, float) and math.isnan(v):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and "
                             f"high={high}")
    low = default_low if low is None else low
    high = default_high if high is None else high
    return max(low, lowest), min(high, highest)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):
    """A tensor of ``shape`` filled with random values from ``[low, high)`` (defaults:
    floats in [-9, 9), integers in [-9, 10) clipped to the dtype, bools either value),
    drawn from ember's generator (``ember.manual_seed`` reproduces it).

    >>> from ember.testing import make_tensor
    >>> make_tensor(2, 3, dtype=ember.float32, device="cpu").shape
    ember.Size([2, 3])
    """
    shape = _shape(shape)
    dtype = D.to_dtype(dtype)
    if dtype is D.bool_:
        result = K.randint(0, 2, shape, device=device).bool()
    elif not dtype.is_floating_point:
        bits = 8 * dtype.itemsize
        signed = dtype.is_signed
        lowest = -(1 << (bits - 1)) if signed else 0
        highest = (1 << (bits - 1)) if signed else (1 << bits)
        lo, hi = _low_high(low, high, lowest, highest, -9, 10)
        lo, hi = math.ceil(lo), math.ceil(hi)
        if lo == hi:
            result = K.full(shape, lo, dtype=dtype, device=device)
        else:
            result = K.randint(lo, hi, shape, dtype=dtype, device=device)
    else:
        info = np.finfo(np.float64) if dtype is D.float64 else np.finfo(np.float32)
        lo, hi = _low_high(low, high, float(info.min), float(info.max), -9.0, 9.0)
        base = K.rand(*shape, dtype=D.float64 if dtype is D.float64 else D.float32,
                      device=device)
        result = (base * (hi - lo) + lo).to(dtype)
    if noncontiguous and result.numel() > 1:
        result = result.repeat_interleave(2, dim=-1)[..., ::2]
    if exclude_zero:
        if dtype is D.bool_:
            result = K.ones(shape, dtype=dtype, device=device)
        else:
            tiny = 1 if not dtype.is_floating_point else (
                2.0 ** -14 if dtype is D.float16 else 2.0 ** -126 if dtype is not D.float64
                else 2.0 ** -1022)
            result = result.masked_fill(result == 0, tiny)
    if requires_grad:
        result.requires_grad_(True)
    return result


def _default_tol(dtype) -> tuple:
    return {D.float16: (1e-3, 1e-3), D.float32: (1e-4, 1e-5),
            D.float64: (1e-5, 1e-8)}.get(dtype, (0.0, 0.0))


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan: bool = True,
                    msg: str = "") -> None:
    """Deprecated (as in PyTorch): ``|actual - expected| <= atol + rtol * |expected|``
    elementwise after broadcasting ``expected``'s dtype to ``actual``'s, NaN equal to NaN
    unless ``equal_nan=False``; default tolerances per dtype as PyTorch's. Raises
    AssertionError."""
    _warn("`ember.testing.assert_allclose()` is deprecated (as torch.testing's since "
          "1.12). Please use `ember.testing.assert_close()` instead.", FutureWarning)
    if not isinstance(actual, TensorBase):
        actual = K.tensor(actual)
    if not isinstance(expected, TensorBase):
        expected = K.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        ra, aa = _default_tol(actual.dtype)
        re, ae = _default_tol(expected.dtype)
        rtol, atol = max(ra, re), max(aa, ae)
    elif rtol is None or atol is None:
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but "
                         f"got no {'rtol' if rtol is None else 'atol'}.")
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(f"{msg or 'The values for attribute'} 'shape' do not match: "
                             f"{tuple(actual.shape)} != {tuple(expected.shape)}.")
    a = to_numpy(actual).astype(np.float64)
    e = to_numpy(expected).astype(np.float64)
    ok = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not ok.all():
        bad = int((~ok).sum())
        diff = np.abs(a - e)[~ok]
        raise AssertionError(msg or (f"Tensor-likes are not close!\n\nMismatched elements: "
                                     f"{bad} / {a.size} ({100.0 * bad / max(a.size, 1):.1f}%)"
                                     f"\nGreatest absolute difference: {diff.max()} "
                                     f"(up to {atol} allowed)\nGreatest relative difference: "
                                     f"{(diff / np.abs(e[~ok])).max()} (up to {rtol} "
                                     "allowed)"))
