"""``ember.amp``: automatic mixed precision — ``autocast`` and ``GradScaler``.

Inside ``autocast(device_type)`` ops run in the precision PyTorch's autocast picks for
them: matrix products, linear and convolution in the lower dtype (CPU: bfloat16, other
devices: float16), ops that need range or accuracy in float32 (the lists live in
``ember.dispatcher.autocast``). ``GradScaler`` multiplies the loss by a scale factor so that
float16 gradients do not underflow, unscales the gradients before the optimizer step,
skips the step when a gradient is inf/NaN and adapts the scale, exactly as
``torch.amp.GradScaler`` (it works on CPU as PyTorch's does).

>>> model = ember.nn.Linear(4, 2)
>>> opt = ember.optim.SGD(model.parameters(), lr=0.1)
>>> scaler = ember.amp.GradScaler("cpu")
>>> with ember.autocast("cpu"):
...     loss = model(ember.randn(8, 4)).float().pow(2).mean()
>>> scaler.scale(loss).backward()
>>> scaler.step(opt)
>>> scaler.update()
"""
from __future__ import annotations

import functools
from collections import defaultdict
from enum import Enum

from ember.dispatcher import autocast as AC
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase
from ember.dispatcher.plugins import BACKENDS, ensure_loaded

from ._creation import full
from .autograd import _engine
from ember.dispatcher.warn import warn as _warn

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available",
           "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "set_autocast_cpu_dtype",
           "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting"]

# autocast casts through ops.to, which autograd records
AC.install_cast(O.to)

#: the device types PyTorch knows (its device-string parser's list); autocast exists for the
#: ones in ``_AUTOCAST_TYPES`` and for every installed ember plugin's device type
_KNOWN_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                "privateuseone")
_AUTOCAST_TYPES = ("cpu", "cuda", "xpu", "ipu", "hpu", "xla", "mps", "mtia", "maia",
                   "privateuseone")


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` supports ``device_type``: PyTorch's autocast device types, plus
    the device type of every installed ember plugin (``"opencl"``)."""
    if device_type in _AUTOCAST_TYPES:
        return True
    ensure_loaded()
    if device_type in BACKENDS:
        return True
    if device_type not in _KNOWN_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_KNOWN_TYPES)} device type at start "
                           f"of device string: {device_type}")
    return False


def _device_available(device_type: str) -> bool:
    if device_type == "cpu":
        return True
    ensure_loaded()
    b = BACKENDS.get(device_type)
    if b is None:
        return False
    try:
        return int(b.device_count()) > 0
    except Exception:
        return False


# ---- the state functions (torch.is_autocast_enabled, ...) ---------------------------------
def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (no argument: ``"cuda"``, PyTorch's
    deprecated form)."""
    return AC.is_enabled("cuda" if device_type is None else device_type)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)`` (or the deprecated
    ``set_autocast_enabled(enabled)`` for CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    AC.set_enabled(device_type, bool(enabled))


def get_autocast_dtype(device_type: str):
    """The lower-precision dtype autocast uses on ``device_type``."""
    return AC.get_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the lower-precision dtype autocast uses on ``device_type``.

    Args:
        device_type (str): the device type, e.g. ``"cpu"`` or ``"cuda"``.
        dtype (ember.dtype): the dtype autocast casts eligible ops to.
    """
    AC.set_dtype(device_type, dtype)


def get_autocast_cpu_dtype():
    """The dtype CPU autocast casts to (bfloat16 by default).

    PyTorch deprecates it for ``get_autocast_dtype("cpu")`` (with a warning; ember does
    not warn).

    Example:
        >>> ember.get_autocast_cpu_dtype()
        ember.bfloat16
    """
    return AC.get_dtype("cpu")


def get_autocast_gpu_dtype():
    """The dtype CUDA autocast casts to (float16 by default).

    Deprecated in PyTorch for ``get_autocast_dtype("cuda")``; ember does not warn.
    """
    return AC.get_dtype("cuda")


def set_autocast_cpu_dtype(dtype) -> None:
    """Set the dtype CPU autocast casts to (``set_autocast_dtype("cpu", dtype)``)."""
    AC.set_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype) -> None:
    """Set the dtype CUDA autocast casts to (``set_autocast_dtype("cuda", dtype)``)."""
    AC.set_dtype("cuda", dtype)


def is_autocast_cpu_enabled() -> bool:
    """Whether CPU autocast is on.

    Deprecated in PyTorch for ``is_autocast_enabled("cpu")``; ember does not warn.

    Example:
        >>> ember.is_autocast_cpu_enabled()
        False
        >>> with ember.autocast("cpu"):
        ...     ember.is_autocast_cpu_enabled()
        True
    """
    return AC.is_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Turn CPU autocast on or off (``set_autocast_enabled("cpu", enabled)``)."""
    AC.set_enabled("cpu", enabled)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast's weight-cast cache is enabled (the ``cache_enabled`` flag of
    ``autocast``; ember records the flag but keeps no cache).
    """
    return AC.STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Set the flag read by :func:`is_autocast_cache_enabled`."""
    AC.STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """ember keeps no cache of cast weights (each cast is recomputed), so nothing to clear."""


def autocast_increment_nesting() -> int:
    """Add one to the autocast nesting depth and return the new depth (used by ``autocast``
    on entry).
    """
    AC.STATE.nesting += 1
    return AC.STATE.nesting


def autocast_decrement_nesting() -> int:
    """Subtract one from the autocast nesting depth and return the new depth (used by
    ``autocast`` on exit).
    """
    AC.STATE.nesting -= 1
    return AC.STATE.nesting


# ---- autocast --------------------------------------------------------------------------------
class autocast:
    """Context manager (and decorator) running ops in mixed precision on ``device_type``.

    ``dtype`` defaults to the device's autocast dtype (CPU: bfloat16); CPU autocast takes
    bfloat16 and float16 only and disables itself with a warning otherwise, as PyTorch.
    On a device type with no available device (``"cuda"`` without a GPU) autocast
    disables itself with PyTorch's warning.

    Example:
        >>> a, b = ember.ones(4, 4), ember.ones(4, 4)
        >>> with ember.autocast("cpu"):
        ...     y = ember.mm(a, b)
        >>> y.dtype
        ember.bfloat16
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device = device_type
        self.fast_dtype = AC.get_dtype(device_type) if dtype is None else D.to_dtype(dtype)
        self._cache_enabled = (AC.STATE.cache_enabled if cache_enabled is None
                               else bool(cache_enabled))
        enabled = bool(enabled)
        if enabled and device_type == "cpu" and self.fast_dtype not in AC.SUPPORTED_DTYPES[
                "cpu"]:
            _warn("In CPU autocast, but the target dtype is not supported. Disabling "
                  "autocast.\nCPU Autocast only supports dtypes of ember.bfloat16, "
                  "ember.float16 currently.", UserWarning)
            enabled = False
        elif enabled and device_type != "cpu" and not _device_available(device_type):
            # (PyTorch's text, the torch_xla clause included, for cuda)
            why = ("CUDA is not available or torch_xla is imported" if device_type == "cuda"
                   else f"{device_type!r} is not available")
            _warn(f"{why}. Disabling autocast.", UserWarning)
            enabled = False
        elif enabled and device_type != "cpu" and self.fast_dtype not in (D.float16,
                                                                          D.bfloat16):
            _warn(f"In {device_type} autocast, but the target dtype is not supported. "
                  "Disabling autocast.", UserWarning)
            enabled = False
        self._enabled = enabled
        self._stack: list = []

    def __enter__(self):
        st = AC.STATE
        self._stack.append((AC.is_enabled(self.device), st.dtype.get(self.device),
                            st.cache_enabled))
        AC.set_enabled(self.device, self._enabled)
        AC.set_dtype(self.device, self.fast_dtype)
        st.cache_enabled = self._cache_enabled
        autocast_increment_nesting()
        return self

    def __exit__(self, *exc):
        enabled, dtype, cache = self._stack.pop()
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        AC.set_enabled(self.device, enabled)
        if dtype is None:
            AC.STATE.dtype.pop(self.device, None)
        else:
            AC.set_dtype(self.device, dtype)
        AC.STATE.cache_enabled = cache
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def _cast_floats(value, dtype):
    if isinstance(value, TensorBase):
        return O.to(value, None, dtype) if value.dtype.is_floating_point else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floats(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floats(v, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of a custom ``autograd.Function``: with
    ``cast_inputs`` and autocast on, the floating inputs are cast to it and forward runs
    with autocast off; the autocast state is remembered for :func:`custom_bwd`."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = AC.get_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = AC.is_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = AC.is_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast_floats(args, cast_inputs), **_cast_floats(kwargs,
                                                                            cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a custom ``autograd.Function``: it runs with the
    autocast state its forward saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=getattr(ctx, "_fwd_used_autocast",
                                                                False),
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(*args, **kwargs)
    return decorate_bwd


# ---- GradScaler ------------------------------------------------------------------------------
class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Loss scaling for mixed-precision training, as ``torch.amp.GradScaler``.

    ``scale(loss)`` multiplies by the current scale; ``unscale_(optimizer)`` divides the
    optimizer's gradients by it in place and records whether any is inf/NaN; ``step``
    skips ``optimizer.step()`` when one was; ``update()`` multiplies the scale by
    ``backoff_factor`` after a skipped step, and by ``growth_factor`` after
    ``growth_interval`` steps in a row without one.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        self._device = device
        self._enabled = enabled
        if self._device != "cpu" and enabled and not _device_available(device):
            what = (f"{D.module_name}.cuda.amp.GradScaler is enabled, but CUDA"
                    if device == "cuda" else
                    f"{D.module_name}.amp.GradScaler is enabled, but {device}")
            _warn(f"{what} is not available.  Disabling.", UserWarning)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = full((), self._init_scale, dtype=D.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=D.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples of them) times the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, TensorBase):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * O.to(self._scale, outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        found = {}
        with _engine.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    dev = g.device
                    if dev not in found:
                        found[dev] = O.to(found_inf, dev, copy=True)
                    # inf/NaN anywhere: the whole step is skipped (the values are then
                    # unused). Kept on the device: the host reads found_inf once per step
                    # (step()/update()), not once per parameter
                    found[dev] = found[dev].maximum(g.isfinite().all().logical_not())
                    g.mul_(O.to(inv_scale, dev))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (in place), once per step."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = O.to(self._scale, dtype=D.float64).reciprocal().float()
        found_inf = full((), 0.0, dtype=D.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(float(v.item()) for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` after unscaling, unless a gradient is inf or
        NaN (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Adapt the scale for the next iteration (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element ember.FloatTensor or "
                          "ember.cuda.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, TensorBase):
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [v for st in self._per_optimizer_states.values()
                          for v in st["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(float(v.item()) for v in found_infs)
            scale = float(_scale.item())
            tracker = int(_growth_tracker.item())
            if found_inf:
                scale *= self._backoff_factor
                tracker = 0
            else:
                successful = tracker + 1
                if successful == self._growth_interval:
                    grown = scale * self._growth_factor
                    # (float32 arithmetic, as the kernel: the scale stays finite)
                    grown32 = float(full((), grown, dtype=D.float32).item())
                    if grown32 != float("inf"):
                        scale = grown32
                    tracker = 0
                else:
                    tracker = successful
            _scale.fill_(scale)
            _growth_tracker.fill_(tracker)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        if self._scale is None:
            return self._init_scale
        return float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
