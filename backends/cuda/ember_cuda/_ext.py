"""The compiled extension, or why there is none.

``_C`` is ``ember_cuda._C`` when it was built (nvcc was found at install time) and
imports; otherwise ``None`` and ``BUILD_ERROR`` says why, in a sentence a user can act on.
"""
from __future__ import annotations

try:
    from . import _C
    BUILD_ERROR = ""
except ImportError as e:  # built without nvcc, or a broken build
    _C = None
    BUILD_ERROR = (f"ember-cuda was installed without its CUDA extension ({e}); it is built "
                   "only when the CUDA toolkit (nvcc) is found at install time: install the "
                   "toolkit and reinstall ember-cuda (pip install --no-build-isolation -e "
                   "backends/cuda)")


def unavailable_reason() -> str:
    """Why ``cuda`` cannot be used ("" when a device is available)."""
    if _C is None:
        return "not built: " + BUILD_ERROR
    if _C.device_count() > 0:
        return ""
    return f"no usable CUDA device ({_C.device_init_error()})"


def require(index: int = 0):
    """The extension, after checking that device ``index`` exists; else a RuntimeError."""
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(f"cuda:{index} is not available: {reason}. Use device='cpu' or "
                           "check ember_cuda.is_available() first.")
    n = _C.device_count()
    if not 0 <= index < n:
        raise RuntimeError(f"cuda:{index}: invalid device ordinal ({n} CUDA device(s))")
    return _C
