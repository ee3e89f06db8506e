"""Shared helpers of the opencl backend tests (imported as ``ocl_helpers``; a module
named ``conftest`` would collide with tests/backend/conftest.py in one pytest run).

Helpers: ``T(data, dtype)`` an opencl tensor holding ``data``; ``N(t)`` its values as a
NumPy array (through the host); ``layouts(arr)`` the same values as contiguous,
transposed, strided and offset views.
"""
import numpy as np
import pytest

import ember
import ember_opencl
from ember.dispatcher import backend_for
from ember_opencl import _runtime as rt  # noqa: F401  (re-exported for conftest)

if not ember_opencl.is_available():  # pragma: no cover - depends on the machine
    pytest.skip("no usable OpenCL device (pip install pocl-binary-distribution; "
                f"{rt._discovery_error or 'none found'})",
                allow_module_level=True)
backend_for("opencl")   # load the plugin (tests reach its kernels directly)

DEV = "opencl:0"
FLOATS = [ember.float32, ember.float64, ember.float16]
INTS = [ember.int64, ember.int32, ember.int16, ember.int8, ember.uint8]
ALL = FLOATS + INTS + [ember.bool, ember.bfloat16]


def T(data, dtype=None, device=DEV):
    arr = np.asarray(data)
    t = ember.tensor(arr if dtype is not ember.bfloat16 else arr.astype(np.float32))
    if dtype is not None:
        t = t.to(dtype=dtype)
    return t.to(device)


def N(t):
    if t.dtype is ember.bfloat16:
        t = t.float()
    return t.cpu().numpy()


def layouts(arr, dtype=None):
    """``arr`` (2-D) on the device as: contiguous, a transposed view, a strided view (every
    other column of a wider tensor) and a view at an offset."""
    arr = np.asarray(arr)
    out = [("contiguous", T(arr, dtype))]
    out.append(("transposed", T(np.ascontiguousarray(arr.T), dtype).t()))
    wide = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
    wide[..., ::2] = arr
    out.append(("strided", T(wide, dtype)[..., ::2]))
    big = np.zeros((arr.shape[0] + 1,) + arr.shape[1:], arr.dtype)
    big[1:] = arr
    out.append(("offset", T(big, dtype)[1:]))
    return out


def np_dtype(d):
    return np.float32 if d is ember.bfloat16 else d.to_numpy()
