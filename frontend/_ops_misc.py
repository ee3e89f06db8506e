"""ember's top-level functions and Tensor methods: misc (see frontend/__init__.py).

The process-wide switches and queries programs call in their first lines: random state,
print options, ``finfo``/``iinfo``, determinism, matmul precision, thread counts, warning
and anomaly modes, autocast state, ``vmap``. Switches that do not change how ember computes
are kept and read back as PyTorch does (documented at each function).
"""
from __future__ import annotations

import math
import os

from ember.dispatcher import dtypes as D
from ember.dispatcher.core import TensorBase
from ember.dispatcher.random import default_generator

from . import _repr
from . import amp as _amp
from ._creation import tensor as _tensor
from ._defaults import get_default_device, set_default_device
from ._vmap import vmap
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,
                                    set_anomaly_enabled)
from ember.dispatcher.warn import warn as _warn

__all__ = [  # names exported as ember.<name>
    "get_rng_state", "set_rng_state", "set_printoptions", "finfo", "iinfo", "typename",
    "get_default_device", "set_default_device", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "set_float32_matmul_precision", "set_flush_denormal",
    "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
    "set_warn_always", "is_warn_always_enabled", "is_anomaly_enabled", "set_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "autocast", "is_autocast_enabled", "set_autocast_enabled",
    "get_autocast_dtype", "set_autocast_dtype", "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "is_autocast_cache_enabled",
    "set_autocast_cache_enabled", "clear_autocast_cache", "vmap", "_assert",
]
TENSOR_METHODS: dict = {}   # name -> function (or property) installed on ember.Tensor

# ---- autocast state (ember.amp), under PyTorch's top-level names (the nesting counters
# stay in ember.amp: tests/api/omissions.py lists them as JIT internals) --------------------
autocast = _amp.autocast
is_autocast_enabled = _amp.is_autocast_enabled
set_autocast_enabled = _amp.set_autocast_enabled
get_autocast_dtype = _amp.get_autocast_dtype
set_autocast_dtype = _amp.set_autocast_dtype
get_autocast_cpu_dtype = _amp.get_autocast_cpu_dtype
get_autocast_gpu_dtype = _amp.get_autocast_gpu_dtype
set_autocast_cpu_dtype = _amp.set_autocast_cpu_dtype
set_autocast_gpu_dtype = _amp.set_autocast_gpu_dtype
is_autocast_cpu_enabled = _amp.is_autocast_cpu_enabled
set_autocast_cpu_enabled = _amp.set_autocast_cpu_enabled
is_autocast_cache_enabled = _amp.is_autocast_cache_enabled
set_autocast_cache_enabled = _amp.set_autocast_cache_enabled
clear_autocast_cache = _amp.clear_autocast_cache


# ---- random state -------------------------------------------------------------------------
def get_rng_state():
    """The CPU generator's state as a uint8 tensor (ember's generator is counter-based:
    its state is 16 bytes, seed and offset, not the 5056 bytes of PyTorch's Mersenne
    Twister; ``set_rng_state`` takes it back)."""
    return _tensor(list(default_generator("cpu").get_state()), dtype=D.uint8)


def set_rng_state(new_state) -> None:
    """Restore the CPU generator from ``get_rng_state()``'s tensor."""
    if not isinstance(new_state, TensorBase) or new_state.dtype is not D.uint8:
        raise TypeError("RNG state must be a ember.ByteTensor")
    default_generator("cpu").set_state(bytes(new_state.tolist()))


# ---- printing -----------------------------------------------------------------------------
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """How tensors print: digits after the point, the element count past which a tensor
    is summarised, the items shown per edge, the line width, a ``profile`` ("default",
    "short", "full") and ``sci_mode`` (True/False: force/forbid scientific notation;
    None: automatic)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"profile must be one of {', '.join(_PROFILES)}, got {profile!r}")
        _repr.PRECISION, _repr.THRESHOLD, _repr.EDGEITEMS, _repr.LINEWIDTH = _PROFILES[
            profile]
    if precision is not None:
        _repr.PRECISION = int(precision)
    if threshold is not None:
        _repr.THRESHOLD = threshold
    if edgeitems is not None:
        _repr.EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        _repr.LINEWIDTH = int(linewidth)
    _repr.SCI_MODE = sci_mode


# ---- dtype limits -------------------------------------------------------------------------
# (bits, eps, max, tiny/smallest_normal, resolution) of each floating dtype, IEEE 754
_FLOAT_INFO = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
    "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 0.01),
    "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 1e-06),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
    "float8_e4m3fn": (8, 0.125, 448.0, 2.0 ** -6, 1.0),
    "float8_e5m2": (8, 0.25, 57344.0, 2.0 ** -14, 1.0),
}
#: the real dtype whose limits a complex dtype reports (PyTorch's finfo of complex)
_COMPLEX_PART = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def _g(v: float) -> str:
    return f"{v:.6g}"


class finfo:
    """Limits of a floating dtype (``ember.finfo(ember.float16).max``): ``bits``,
    ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution`` and
    ``dtype`` (its name, a string, as PyTorch's). No argument: the default dtype."""

    def __init__(self, type=None):  # noqa: A002 (PyTorch's parameter name)
        d = D.get_default_dtype() if type is None else type
        name = getattr(d, "name", None)
        name = _COMPLEX_PART.get(name, name)
        if name not in _FLOAT_INFO:
            raise TypeError("ember.finfo() requires a floating point input type. Use "
                            "ember.iinfo to handle 'ember.finfo'")
        bits, eps, mx, tiny, res = _FLOAT_INFO[name]
        self.bits = bits
        self.eps = eps
        self.max = mx
        self.min = -mx
        self.tiny = tiny
        self.smallest_normal = tiny
        self.resolution = res
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, "
                f"max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (``ember.iinfo(ember.uint8).max``): ``bits``, ``max``,
    ``min`` and ``dtype`` (its name)."""

    def __init__(self, type):  # noqa: A002 (PyTorch's parameter name)
        name = getattr(type, "name", None)
        if name == "bool":
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if (name is None or getattr(type, "is_floating_point", True)
                or getattr(type, "is_complex", False)):
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo "
                            "to handle 'ember.iinfo'")
        bits = 8 * type.itemsize
        signed = not name.startswith("uint")
        self.bits = bits
        self.max = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        self.min = -(1 << (bits - 1)) if signed else 0
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def typename(obj) -> str:
    """The type name PyTorch prints: ``ember.FloatTensor`` for a tensor, the qualified
    class or function name otherwise."""
    if isinstance(obj, TensorBase):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


# ---- determinism --------------------------------------------------------------------------
# ember's kernels are deterministic (its CPU reductions use a fixed tree and no atomics), so
# the switch changes nothing; it is kept and read back for programs that set it.
_DETERMINISTIC = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms only. ember's kernels already are (same inputs,
    same thread count: same bits), so this records the setting."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must "
                        f"be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _DETERMINISTIC["mode"] = mode
    _DETERMINISTIC["warn_only"] = warn_only if mode else False


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect.

    Example:
        >>> ember.are_deterministic_algorithms_enabled()
        False
    """
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was set with ``warn_only=True``."""
    return _DETERMINISTIC["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default", 1/"warn" or 2/"error" (PyTorch's mapping onto
    ``use_deterministic_algorithms``)."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")


def get_deterministic_debug_mode() -> int:
    """The deterministic debug mode: 0 (default, off), 1 (warn) or 2 (error); see
    :func:`set_deterministic_debug_mode`.
    """
    if are_deterministic_algorithms_enabled():
        return 1 if is_deterministic_algorithms_warn_only_enabled() else 2
    return 0


# ---- numerics and threads -----------------------------------------------------------------
_MATMUL_PRECISION = ["highest"]


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision setting: ``"highest"`` (the default), ``"high"`` or
    ``"medium"`` (see :func:`set_float32_matmul_precision`).

    Example:
        >>> ember.get_float32_matmul_precision()
        'highest'
    """
    return _MATMUL_PRECISION[0]


def set_float32_matmul_precision(precision: str) -> None:
    """"highest", "high" or "medium": how much float32 matmuls may trade precision for
    speed (TF32, bfloat16 passes). ember's GEMMs always compute in float32, which every
    setting allows; the value is recorded and read back."""
    if precision not in ("highest", "high", "medium"):
        _warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the "
              "current set_float32_matmul_precision call has no effect.",
              UserWarning)
        return
    _MATMUL_PRECISION[0] = precision


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormal floats to zero was switched: False, ember's CPU kernels
    run on their own thread pool and keep IEEE denormals (PyTorch also answers False
    where it cannot set the mode)."""
    return False


_INTEROP = [None]


def get_num_interop_threads() -> int:
    """The inter-op thread count (ember runs ops one after another on the calling thread;
    the value is the one set, by default PyTorch's: the number of CPU cores)."""
    if _INTEROP[0] is None:
        return max(1, os.cpu_count() or 1)
    return _INTEROP[0]


def set_num_interop_threads(nthreads: int) -> None:
    """Set the value :func:`get_num_interop_threads` returns (a positive int).

    ember runs ops on the calling thread, so nothing else changes; unlike PyTorch it may
    be called more than once, at any time.
    """
    if not isinstance(nthreads, int) or nthreads <= 0:
        raise RuntimeError("Expected positive number of threads")
    _INTEROP[0] = nthreads


def init_num_threads() -> None:
    """Nothing to initialise: ember's thread pool starts with its first parallel op."""


# ---- warnings -----------------------------------------------------------------------------
_WARN_ALWAYS = [False]


def set_warn_always(b: bool) -> None:
    """Warnings ember issues once per process are issued every time when True."""
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` turned on repeated warnings (False by default)."""
    return _WARN_ALWAYS[0]


def _assert(condition, message):
    """PyTorch's ``torch._assert``: ``assert condition, message`` as a function (model code
    such as torchvision's calls it so that symbolic tracing can record it).

    Example:
        >>> ember._assert(ember.tensor(True), "never raised")
    """
    assert bool(condition), message
