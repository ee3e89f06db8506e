"""Comparing a device's results with the reference: per-dtype tolerances, sentences on
failure."""
from __future__ import annotations

import numpy as np

import ember
from ember.dispatcher import dtypes as _D
from ember.dispatcher import to_device

__all__ = ["TOLERANCES", "tolerance", "assert_close", "flat_tensors", "to_numpy", "magnitude"]

#: (rtol, atol) per dtype; integers and bool compare exactly. Floating-point results may
#: differ in the last bits between backends (summation order, libm), so these are
#: PyTorch's ``assert_close`` defaults.
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def tolerance(dtype, scale: float = 1.0) -> tuple[float, float]:
    rtol, atol = TOLERANCES.get(dtype.name, (0.0, 0.0))
    return rtol * scale, atol * scale


def to_numpy(t) -> np.ndarray:
    """A tensor's values on the host, bfloat16 widened to float32, complex32 to complex64
    (NumPy has neither)."""
    t = t.detach().cpu()
    if t.dtype is ember.bfloat16:
        t = t.float()
    elif t.dtype is ember.complex32:
        t = t.to(ember.complex64)
    return np.array(t.numpy(), copy=True)


def flat_tensors(result) -> list:
    """The tensors of a result: a tensor, a (named) tuple or list of them."""
    if isinstance(result, ember.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out += flat_tensors(r)
        return out
    raise TypeError(f"expected a tensor or a tuple of tensors, got {type(result).__name__}")


def assert_close(actual, expected, *, device=None, scale: float = 1.0, what: str = "result",
                 check_dtype: bool = True, magnitude: float = 1.0) -> None:
    """``actual`` (a device result) equals ``expected`` (the reference) in structure,
    shape, dtype and values; floats within ``tolerance(dtype, scale)``, NaN equal to NaN.

    ``magnitude``: the largest input value; the absolute tolerance grows with it, since a
    composite's intermediate roundings are relative to its operands, not its result
    (``lerp(-3, 3, 0.46)`` in float16 is off by a few ulp of 6, not of 0.25).
    """
    a_list, e_list = flat_tensors(actual), flat_tensors(expected)
    if len(a_list) != len(e_list):
        raise AssertionError(f"{what}: {len(a_list)} tensors, the reference has "
                             f"{len(e_list)}")
    for i, (a, e) in enumerate(zip(a_list, e_list)):
        name = what if len(a_list) == 1 else f"{what}[{i}]"
        if device is not None and a.device != to_device(device):
            raise AssertionError(f"{name}: on {a.device}, expected on {device}")
        if tuple(a.shape) != tuple(e.shape):
            raise AssertionError(f"{name}: shape {list(a.shape)}, expected {list(e.shape)}")
        if check_dtype and a.dtype is not e.dtype:
            raise AssertionError(f"{name}: dtype {a.dtype}, expected {e.dtype}")
        an, en = to_numpy(a), to_numpy(e)
        _values_close(an, en, e.dtype, scale, name, max(1.0, magnitude))


def magnitude(tensors) -> float:
    """The largest finite absolute value among floating ``tensors`` (1 when none)."""
    m = 1.0
    for t in tensors:
        if t.dtype.is_floating_point and t.numel():
            v = np.abs(to_numpy(t).astype(np.float64))
            v = v[np.isfinite(v)]
            if v.size:
                m = max(m, float(v.max()))
    return m


def _values_close(an, en, dtype, scale, name, mag=1.0):
    if dtype.is_complex:  # (as PyTorch: the real and imaginary parts compared alike)
        an, en = an.view(an.real.dtype), en.view(en.real.dtype)
        dtype = _D.real_of(dtype)
    if not dtype.is_floating_point:
        if not np.array_equal(an, en):
            bad = np.argwhere(an != en)
            first = tuple(int(i) for i in bad[0]) if bad.size else ()
            raise AssertionError(
                f"{name}: {len(bad)} of {an.size} values differ ({dtype.name}, exact); first "
                f"at {first}: {_item(an, first)} != expected {_item(en, first)}")
        return
    rtol, atol = tolerance(dtype, scale)
    atol *= mag
    a64, e64 = an.astype(np.float64), en.astype(np.float64)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    same = (a64 == e64) | (nan_a & nan_e)
    with np.errstate(invalid="ignore", over="ignore"):
        close = same | (np.abs(a64 - e64) <= atol + rtol * np.abs(e64))
    if not close.all():
        bad = np.argwhere(~close)
        first = tuple(int(i) for i in bad[0])
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a64 - e64)
        finite = diff[np.isfinite(diff)]
        worst = float(finite.max()) if finite.size else float("nan")
        raise AssertionError(
            f"{name}: {len(bad)} of {an.size} values differ ({dtype.name}, rtol={rtol:g}, "
            f"atol={atol:g}); greatest finite difference {worst:g}; first at {first}: "
            f"{_item(an, first)} != expected {_item(en, first)}")


def _item(arr, idx):
    try:
        return arr[idx].item() if idx or arr.ndim == 0 else arr
    except IndexError:
        return "?"
