"""``ember.accelerator``: the current accelerator, over the installed backend plugins.

An *accelerator* is, as in PyTorch, a non-CPU device type. ember picks it from the
installed plugins that have at least one device, in this order:

1. ``EMBER_ACCELERATOR=<device type>`` in the environment names one explicitly
   (``EMBER_ACCELERATOR=opencl``; ``EMBER_ACCELERATOR=none`` disables it);
2. a plugin whose device API says so: ``device_api.is_accelerator()`` returning True;
3. the device types PyTorch itself treats as accelerators (``cuda``, ``xpu``, ``mps``,
   ``hpu``, ``mtia``), when their plugin has a device.

The OpenCL plugin does not count on its own: on most machines without a GPU its only
device is a CPU OpenCL implementation (PoCL), and a program asking
``ember.accelerator.is_available()`` wants to know whether there is faster hardware than
the CPU. An OpenCL plugin on a GPU may declare ``is_accelerator()``; a user may always
choose it with ``EMBER_ACCELERATOR=opencl``. So on a CPU-only machine
``current_accelerator()`` is None and ``is_available()`` False, as PyTorch's.

>>> import ember
>>> dev = ember.accelerator.current_accelerator() or ember.device("cpu")
"""
from __future__ import annotations

import os

from ember.dispatcher.device import device as _device
from ember.dispatcher.plugins import BACKENDS, ensure_loaded

__all__ = ["is_available", "current_accelerator", "device_count", "set_device_index",
           "set_device_idx", "current_device_index", "current_device_idx", "synchronize",
           "device_index", "empty_cache", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "reset_accumulated_memory_stats", "current_stream",
           "set_stream", "get_memory_info", "empty_host_cache"]

#: device types PyTorch treats as accelerators
_TORCH_ACCELERATORS = ("cuda", "xpu", "mps", "hpu", "mtia")

_CURRENT = {}   # device type -> the index set with set_device_index


def _count(backend) -> int:
    try:
        return int(backend.device_count())
    except Exception:
        return 0


def _declares(backend) -> bool:
    api = getattr(backend, "device_api", None)
    fn = getattr(api, "is_accelerator", None) if api is not None else None
    try:
        return bool(fn()) if callable(fn) else False
    except Exception:
        return False


def _accelerator_type() -> str | None:
    ensure_loaded()
    chosen = os.environ.get("EMBER_ACCELERATOR", "").strip()
    if chosen:
        if chosen.lower() == "none":
            return None
        b = BACKENDS.get(chosen)
        return chosen if b is not None and _count(b) > 0 else None
    for name, b in BACKENDS.items():
        if name != "cpu" and _declares(b) and _count(b) > 0:
            return name
    for name in _TORCH_ACCELERATORS:
        b = BACKENDS.get(name)
        if b is not None and _count(b) > 0:
            return name
    return None


def is_available(check_device: bool = True) -> bool:
    """Whether there is an accelerator (see the module docstring for what counts)."""
    return _accelerator_type() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's device (type only, as PyTorch's), or None."""
    t = _accelerator_type()
    return None if t is None else _device(t)


def device_count() -> int:
    """The number of devices of the accelerator's type (0 without an accelerator)."""
    t = _accelerator_type()
    return 0 if t is None else _count(BACKENDS[t])


def _require(what: str) -> str:
    t = _accelerator_type()
    if t is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return t


def current_device_index() -> int:
    """The index of the current accelerator device."""
    t = _require("current_device_index")
    api = getattr(BACKENDS[t], "device_api", None)
    if api is not None and hasattr(api, "current_device"):
        return int(api.current_device())
    return _CURRENT.get(t, 0)


current_device_idx = current_device_index


def set_device_index(device) -> None:
    """Make ``device`` (an index or a device of the accelerator's type) current."""
    t = _require("set_device_index")
    idx = device if isinstance(device, int) else _device(device).index or 0
    n = _count(BACKENDS[t])
    if not 0 <= idx < n:
        raise RuntimeError(f"set_device_index(): device index {idx} is out of range: the "
                           f"{t!r} accelerator has {n} device(s)")
    api = getattr(BACKENDS[t], "device_api", None)
    if api is not None and hasattr(api, "set_device"):
        api.set_device(idx)
    _CURRENT[t] = idx


set_device_idx = set_device_index


class device_index:
    """Context manager: ``device`` is the current accelerator device inside the block
    (None: no change)."""

    def __init__(self, device):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
        return False


def synchronize(device=None) -> None:
    """Wait for the work queued on the accelerator device."""
    t = _require("synchronize")
    b = BACKENDS[t]
    api = getattr(b, "device_api", None)
    if api is not None and hasattr(api, "synchronize"):
        api.synchronize() if device is None else api.synchronize(device)
    else:
        b.synchronize()


def _memory(name, default, *args):
    t = _accelerator_type()
    if t is None:
        if default is _RAISE:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return default
    api = getattr(BACKENDS[t], "device_api", None)
    if api is not None and hasattr(api, name):
        return getattr(api, name)(*args)
    return None if default is _RAISE else default


_RAISE = object()


def empty_cache() -> None:
    """Release the accelerator's cached, unused memory blocks to the device (a no-op
    without an accelerator)."""
    _memory("empty_cache", None)


def memory_allocated(device=None) -> int:
    """Bytes of accelerator memory that tensors occupy now (0 without an accelerator)."""
    return _memory("memory_allocated", 0, device)


def max_memory_allocated(device=None) -> int:
    """The peak of :func:`memory_allocated` since the start or the last
    :func:`reset_peak_memory_stats`."""
    return _memory("max_memory_allocated", 0, device)


def memory_reserved(device=None) -> int:
    """Bytes the caching allocator holds from the device (in use or cached)."""
    return _memory("memory_reserved", 0, device)


def max_memory_reserved(device=None) -> int:
    """The peak of :func:`memory_reserved` since the start or the last
    :func:`reset_peak_memory_stats`."""
    return _memory("max_memory_reserved", 0, device)


def memory_stats(device=None) -> dict:
    """The accelerator allocator's statistics, as PyTorch's ``memory_stats`` (``{}``
    without an accelerator)."""
    return _memory("memory_stats", {}, device)


def reset_peak_memory_stats(device=None) -> None:
    """Start the peak figures (``max_memory_allocated``, ``max_memory_reserved``) again
    from the current values."""
    _memory("reset_peak_memory_stats", None, device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Reset the allocator's accumulated counters (allocations, frees, ...)."""
    _memory("reset_accumulated_memory_stats", None, device)


def _api_call(name, *args):
    """The accelerator plugin's device-API function ``name`` called with ``args``."""
    t = _require(name)
    api = getattr(BACKENDS[t], "device_api", None)
    if api is None or not hasattr(api, name):
        raise NotImplementedError(f"ember.accelerator.{name}(): the {t!r} plugin does not "
                                  "provide it")
    return getattr(api, name)(*args)


def current_stream(device=None):
    """The accelerator's current stream (plugins with streams: CUDA)."""
    return _api_call("current_stream", device)


def set_stream(stream) -> None:
    """Make ``stream`` the current stream of its accelerator device (plugins with
    streams: CUDA)."""
    _api_call("set_stream", stream)


def get_memory_info(device=None) -> tuple:
    """``(free, total)`` bytes of the accelerator device."""
    return _api_call("mem_get_info", device)


def empty_host_cache() -> None:
    """Release cached pinned host memory: ember's staging buffers are freed as they go."""
