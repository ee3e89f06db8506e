"""Helpers shared by the backend tests: dtype lists and maps, a NumPy-oracle ``check``, and
tensors that hold given values in non-contiguous layouts.

``T`` and ``N`` (an ember tensor from data, and back) come from ``conftest``. Files whose
float tolerances differ bind their own table: ``check = partial(helpers.check, tols=TOL)``.
"""
import numpy as np
import torch
from hypothesis import HealthCheck, settings

import ember
from conftest import N, T

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
INTS = [ember.int32, ember.int64, ember.uint8, ember.int8]


def hset(max_examples):
    """Hypothesis settings for tests that take the ``device`` fixture."""
    return settings(max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def tdt(d):
    """The torch dtype with the same name as the ember dtype ``d``."""
    return getattr(torch, d.name)


def npdt(d):
    """The NumPy dtype of the ember dtype ``d`` (float32 for bfloat16, which NumPy lacks)."""
    return np.float32 if d is ember.bfloat16 else d.to_numpy()


def other_device(device):
    """The test device that is not ``device``."""
    return "primcpu" if device == "cpu" else "cpu"


def exact_values(rng, shape, dtype, float_ints, denom, int_bound):
    """Random values exact in ``dtype``: 0/1 for bool; for floats, integers drawn from the
    half-open range ``float_ints`` over ``denom``; otherwise integers in
    [-int_bound, int_bound] ([0, int_bound] for uint8)."""
    if dtype is ember.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_floating_point:
        return rng.integers(*float_ints, shape) / denom
    lo = 0 if dtype is ember.uint8 else -int_bound
    return rng.integers(lo, int_bound + 1, shape)


def check(t, expected, dtype=None, tol=None, *, tols=(1e-6, 1e-6)):
    """``t`` (ember) has ``expected``'s shape, the dtype ``dtype`` and its values.

    Floating-point values are compared with ``tol`` = (rtol, atol) where given, else with
    ``tols``: one (rtol, atol) pair for every floating dtype, or a dict of pairs by dtype.
    Other dtypes must match exactly.
    """
    expected = np.asarray(expected)
    if dtype is not None:
        assert t.dtype is dtype, f"dtype {t.dtype} != {dtype}"
    got = N(t)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    d = t.dtype
    if d.is_floating_point:
        if tol is None:
            tol = tols[d] if isinstance(tols, dict) else tols
        rtol, atol = tol
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def strided(arr, device, dtype=None, fill=0):
    """``arr`` as every other element (along the last dim) of a tensor twice as wide, whose
    other elements hold ``fill`` (a scalar, or an array of ``arr``'s shape): what a kernel
    that ignores the stride would read."""
    arr = np.asarray(arr)
    wide = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
    wide[..., ::2] = arr
    wide[..., 1::2] = fill
    return T(wide, device, dtype)[..., ::2]


def transposed(arr, device, dtype=None):
    """``arr`` held with its last two dims swapped in storage, viewed back through
    ``.transpose(-1, -2)`` (for 2-D: ``.t()``)."""
    arr = np.asarray(arr)
    return T(np.ascontiguousarray(np.swapaxes(arr, -1, -2)), device, dtype).transpose(-1, -2)


def make(arr, device, dtype, layout="contig", fill=None):
    """An ember tensor holding ``arr``, laid out as asked: "contig", "t" (``transposed``) or
    "step" (``strided``; ``fill`` defaults to ``arr`` reversed along its last dim, values in
    the same domain). "t" and "step" views are checked to be non-contiguous unless the
    last dim is shorter than 2."""
    arr = np.asarray(arr)
    if layout == "contig":
        return T(arr, device, dtype)
    if layout == "t":
        t = transposed(arr, device, dtype)
    elif layout == "step":
        t = strided(arr, device, dtype, arr[..., ::-1] if fill is None else fill)
    else:
        raise AssertionError(layout)
    assert not t.is_contiguous() or arr.shape[-1] < 2
    return t


def layouts(x, device, dtype=None, fill=0):
    """``x`` as a contiguous tensor and as two non-contiguous views with the same values:
    all dims reversed in storage and permuted back, and ``strided`` with ``fill``."""
    yield T(x, device, dtype)
    perm = tuple(range(x.ndim))[::-1]
    yield T(np.ascontiguousarray(x.transpose(perm)), device, dtype).permute(*perm)
    yield strided(x, device, dtype, fill)
