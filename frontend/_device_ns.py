"""``ember.opencl``, ``ember.cuda``, ...: per-device-type namespaces.

Each forwards to the functions its backend plugin offers (``Backend.device_api``), so the
frontend never imports a backend package. Without the plugin (or with no device), the
namespace behaves as PyTorch's ``torch.cuda`` on a machine without a GPU, so that programs
written for a GPU run on CPU-only machines:

- ``is_available()`` is False and ``device_count()`` 0, never an error;
- seeding (``manual_seed``, ``manual_seed_all``, ``seed``, ``seed_all``, ``initial_seed``,
  ``get_rng_state``/``set_rng_state``) works on the device type's generator in the
  dispatcher, which exists without a device (PyTorch defers these calls; ember applies
  them at once, so ``initial_seed()`` answers instead of raising);
- memory queries answer 0 (``memory_allocated``, ``max_memory_allocated``, ...), and
  ``empty_cache``/``reset_peak_memory_stats`` do nothing: there is no memory in use;
- whatever needs a device (``synchronize``, ``get_device_name``, ``current_device``,
  ``set_device``, streams and events) raises :class:`DeviceUnavailableError`, a
  RuntimeError that is also an AssertionError (what PyTorch raises in a CPU-only build),
  naming the plugin to install;
- ``amp.autocast`` / ``amp.GradScaler`` are ``ember.amp``'s, for this device type (they
  disable themselves with PyTorch's warning when no device is there).
"""
from __future__ import annotations

import contextlib
import importlib.machinery
import json
import os
import sys
import traceback

from ember.dispatcher import dtypes as D
from ember.dispatcher.plugins import BACKENDS, ensure_loaded
from ember.dispatcher.random import default_generator

from . import amp as _amp
from ._creation import tensor as _tensor
from . import _ops_shape as _SH
from .autograd._engine import IN_BACKWARD, RUNNING_NODE
from ember.dispatcher.warn import warn as _warn

__all__ = ["DeviceNamespace", "DeviceUnavailableError", "pinning_api", "cpu", "cuda", "opencl",
           "xpu", "mps"]


class DeviceUnavailableError(RuntimeError, AssertionError):
    """A device-only function called where no such device is available (a RuntimeError,
    and an AssertionError as PyTorch's CPU-only builds raise)."""


class _AmpNamespace:
    """``ember.cuda.amp``: PyTorch's deprecated per-device spellings of ``ember.amp``."""

    def __init__(self, device_type: str):
        self._type = device_type
        self.custom_fwd = _amp.custom_fwd
        self.custom_bwd = _amp.custom_bwd
        # one object each, as PyTorch's classes are (``from torch.cuda.amp import autocast``
        # then ``autocast is torch.cuda.amp.autocast``)
        self.autocast, self.GradScaler = self.autocast, self.GradScaler

    def autocast(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        """``ember.amp.autocast(<this device type>, ...)``."""
        self._deprecated("autocast")
        if dtype is None:   # torch.cpu.amp.autocast's default is bfloat16, cuda's float16
            dtype = D.bfloat16 if self._type == "cpu" else D.float16
        return _amp.autocast(self._type, dtype=dtype,
                             enabled=enabled, cache_enabled=cache_enabled)

    def GradScaler(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                   backoff_factor: float = 0.5, growth_interval: int = 2000,
                   enabled: bool = True):
        """``ember.amp.GradScaler(<this device type>, ...)``."""
        self._deprecated("GradScaler")
        return _amp.GradScaler(self._type, init_scale=init_scale, growth_factor=growth_factor,
                               backoff_factor=backoff_factor, growth_interval=growth_interval,
                               enabled=enabled)

    def _deprecated(self, name: str) -> None:
        torch = D.module_name
        _warn(f"`{torch}.{self._type}.amp.{name}(args...)` is deprecated. Please use "
              f"`{torch}.amp.{name}('{self._type}', args...)` instead.", FutureWarning)

    def __repr__(self):
        return f"<ember.{self._type}.amp namespace>"


class _DeviceContext:
    """``ember.cuda.device(i)``: make device ``i`` current inside the block."""

    def __init__(self, ns, device):
        self.ns = ns
        self.idx = -1 if device is None else getattr(device, "index", device)
        self.prev = -1

    def __enter__(self):
        if self.idx is None or self.idx < 0:
            return self
        self.prev = self.ns.current_device()
        self.ns.set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev >= 0:
            self.ns.set_device(self.prev)
        return False


#: functions that need a device (raise without one); everything else of the plugin's
#: device API is forwarded as it is
_NEEDS_DEVICE = ("synchronize", "get_device_name", "get_device_capability",
                 "get_device_properties", "current_device", "set_device", "mem_get_info",
                 "current_stream", "default_stream", "set_stream", "stream", "Stream",
                 "Event", "init", "ipc_collect", "memory_snapshot", "record_stream",
                 "_record_memory_history", "_snapshot",
                 "set_per_process_memory_fraction", "get_per_process_memory_fraction",
                 "can_device_access_peer", "utilization", "temperature", "power_draw",
                 "clock_rate", "memory_usage", "caching_allocator_alloc",
                 "caching_allocator_delete", "set_sync_debug_mode", "get_sync_debug_mode",
                 "list_gpu_processes", "device_memory_used")


#: where ember's own code lives: the frontend, the dispatcher and backend plugins
#: (``ember_<name>`` packages)
_EMBER_DIRS = (os.path.dirname(os.path.abspath(__file__)),
               os.path.dirname(os.path.abspath(D.__file__)))


def _is_ember(filename: str) -> bool:
    return filename.startswith(_EMBER_DIRS) or f"{os.sep}ember_" in filename


def _history_context(stacks: bool):
    """What each allocator event of the memory history records: the Python frames that
    led to it (user code, and the ember function it called, innermost last; ember's own
    internals left out) and the autograd phase."""
    def context():
        entry = {"phase": "backward" if IN_BACKWARD[0] else "forward"}
        node = RUNNING_NODE[0]
        if node is not None and IN_BACKWARD[0]:
            entry["node"] = type(node).__name__
        if stacks:
            frames = []
            for f in traceback.extract_stack(limit=48)[:-3]:
                inside = _is_ember(f.filename)
                if inside and frames and frames[-1]["ember"]:
                    continue        # the first ember frame below user code names the op
                frames.append({"filename": f.filename, "line": f.lineno, "name": f.name,
                               "ember": inside})
            entry["frames"] = frames[-12:]
        return entry
    return context


class _MemoryNamespace:
    """``ember.<device type>.memory``: the memory functions, with PyTorch's private
    history API (``_record_memory_history``, ``_snapshot``, ``_dump_snapshot``)."""

    def __init__(self, ns):
        self._ns = ns

    def _record_memory_history(self, enabled="all", context="all", stacks="all",
                               max_entries: int = sys.maxsize, device=None,
                               clear_history: bool = False) -> None:
        """Record every allocation and free of ``device``'s caching allocator, with the
        Python stack and the autograd phase (``enabled=None`` stops). View it with
        ``_dump_snapshot`` and ``python -m ember.utils.memory_viz``."""
        if enabled not in (None, False, True, "state", "all"):
            raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
        on = enabled not in (None, False)
        getattr(self._ns, "_record_memory_history")(
            on, max_entries, _history_context(stacks == "all") if on else None,
            device=device)

    def _snapshot(self, device=None) -> dict:
        """``{"segments": [...], "device_traces": [[event, ...]]}``."""
        return getattr(self._ns, "_snapshot")(device)

    def _dump_snapshot(self, filename: str = "dump_snapshot.json") -> None:
        """Write ``_snapshot()`` as JSON (PyTorch pickles it; JSON loads without running
        code), the input of ``python -m ember.utils.memory_viz``."""
        snap = self._snapshot()
        tmp = f"{filename}.tmp"
        with open(tmp, "w") as f:
            json.dump(snap, f, default=repr)
        os.replace(tmp, filename)

    def __getattr__(self, name):
        return getattr(self._ns, name)


def _importable(namespace, name: str, package: bool = False) -> None:
    """Make ``import name`` give ``namespace``: PyTorch's ``torch.cuda`` and
    ``torch.cuda.amp`` are modules, and programs import them (``from torch.cuda.amp import
    autocast, GradScaler``, which ``ember.as_torch`` maps to ``ember.cuda.amp``)."""
    namespace.__name__ = name
    namespace.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    if package:
        namespace.__path__ = []
    sys.modules.setdefault(name, namespace)


class DeviceNamespace:
    """``ember.<device type>``: the device API of that type's plugin, with PyTorch's
    behaviour when there is no device (see the module docstring)."""

    def __init__(self, device_type: str):
        self._type = device_type
        self.amp = _AmpNamespace(device_type)
        self.memory = _MemoryNamespace(self)
        self._current = 0
        _importable(self, f"ember.{device_type}", package=True)
        _importable(self.amp, f"ember.{device_type}.amp")
        _importable(self.memory, f"ember.{device_type}.memory")

    def _backend(self):
        ensure_loaded()
        return BACKENDS.get(self._type)

    def _api(self):
        b = self._backend()
        return None if b is None else getattr(b, "device_api", None)

    def is_available(self) -> bool:
        try:
            return self.device_count() > 0
        except Exception:
            return False

    def device_count(self) -> int:
        b = self._backend()
        if b is None:
            return 0
        try:
            return int(b.device_count())
        except Exception:
            return 0

    def is_initialized(self) -> bool:
        return self.is_available()

    def _unavailable(self, name):
        b = self._backend()
        if b is None:
            why = (f"no {self._type!r} backend is installed (pip install "
                   f"ember-{self._type}); see `python -m ember backends`")
        else:
            why = f"the {b.name!r} plugin sees no {self._type} device"
        return DeviceUnavailableError(f"ember.{self._type}.{name}(): {why}. Check "
                                      f"ember.{self._type}.is_available() first.")

    # ---- seeding: the dispatcher's per-device generators, with or without a device -------
    def _generators(self, all_devices: bool):
        n = max(1, self.device_count())
        idx = range(n) if all_devices else (self._current_index(),)
        return [default_generator(f"{self._type}:{i}") for i in idx]

    def _current_index(self) -> int:
        api = self._api()
        if api is not None and hasattr(api, "current_device") and self.is_available():
            return int(api.current_device())
        return self._current

    def manual_seed(self, seed) -> None:
        """Seed the current device's generator (works without a device)."""
        for g in self._generators(False):
            g.manual_seed(int(seed))

    def manual_seed_all(self, seed) -> None:
        """Seed every device's generator of this type (works without a device)."""
        for g in self._generators(True):
            g.manual_seed(int(seed))

    def seed(self) -> None:
        """Seed the current device's generator with a random number."""
        for g in self._generators(False):
            g.seed()

    def seed_all(self) -> None:
        s = self._generators(False)[0].seed()
        for g in self._generators(True):
            g.manual_seed(s)

    def initial_seed(self) -> int:
        return self._generators(False)[0].initial_seed()

    def get_rng_state(self, device="cuda"):
        """The generator state as a uint8 tensor (``set_rng_state`` takes it back)."""
        idx = device if isinstance(device, int) else (getattr(device, "index", None)
                                                      if not isinstance(device, str) else None)
        g = default_generator(f"{self._type}:{idx if idx is not None else self._current}")
        return _tensor(list(g.get_state()), dtype=D.uint8)

    def set_rng_state(self, new_state, device="cuda") -> None:
        idx = device if isinstance(device, int) else (getattr(device, "index", None)
                                                      if not isinstance(device, str) else None)
        g = default_generator(f"{self._type}:{idx if idx is not None else self._current}")
        g.set_state(bytes(new_state.tolist()))

    def get_rng_state_all(self) -> list:
        if not self.is_available():
            return []
        return [self.get_rng_state(i) for i in range(self.device_count())]

    def set_rng_state_all(self, new_states) -> None:
        for i, s in enumerate(new_states):
            self.set_rng_state(s, i)

    # ---- memory: 0 without a device ----------------------------------------------------------
    def _memory(self, name, default, *args, **kwargs):
        api = self._api()
        if api is not None and hasattr(api, name) and self.is_available():
            return getattr(api, name)(*args, **kwargs)
        return default

    def memory_allocated(self, device=None) -> int:
        return self._memory("memory_allocated", 0, device)

    def max_memory_allocated(self, device=None) -> int:
        return self._memory("max_memory_allocated", 0, device)

    def memory_reserved(self, device=None) -> int:
        return self._memory("memory_reserved", 0, device)

    def max_memory_reserved(self, device=None) -> int:
        return self._memory("max_memory_reserved", 0, device)

    def memory_cached(self, device=None) -> int:
        return self.memory_reserved(device)

    def max_memory_cached(self, device=None) -> int:
        return self.max_memory_reserved(device)

    def memory_stats(self, device=None) -> dict:
        return self._memory("memory_stats", {}, device)

    def memory_summary(self, device=None, abbreviated: bool = False) -> str:
        return self._memory("memory_summary",
                            f"No {self._type} device: no memory allocated.", device,
                            abbreviated)

    def empty_cache(self) -> None:
        self._memory("empty_cache", None)

    def reset_peak_memory_stats(self, device=None) -> None:
        self._memory("reset_peak_memory_stats", None, device)

    def reset_max_memory_allocated(self, device=None) -> None:
        _warn(f"ember.{self._type}.reset_max_memory_allocated now calls "
              f"ember.{self._type}.reset_peak_memory_stats, which resets /all/ peak "
              "memory stats.", FutureWarning)
        self.reset_peak_memory_stats(device)

    def reset_accumulated_memory_stats(self, device=None) -> None:
        self._memory("reset_accumulated_memory_stats", None, device)

    def reset_max_memory_cached(self, device=None) -> None:
        _warn(f"ember.{self._type}.reset_max_memory_cached now calls "
              f"ember.{self._type}.reset_peak_memory_stats, which resets /all/ peak "
              "memory stats.", FutureWarning)
        self.reset_peak_memory_stats(device)

    def memory_stats_as_nested_dict(self, device=None) -> dict:
        """``memory_stats`` with its dotted keys split into nested dicts."""
        nested: dict = {}
        for key, value in self.memory_stats(device).items():
            node = nested
            parts = key.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = value
        return nested

    # ---- misc --------------------------------------------------------------------------------
    def is_bf16_supported(self, including_emulation: bool = True) -> bool:
        return self.is_available()

    def is_tf32_supported(self) -> bool:
        return False

    def StreamContext(self, stream):
        """Context manager running the block on ``stream`` (None: no change)."""
        if stream is None:
            return contextlib.nullcontext()
        return self.stream(stream)

    def get_arch_list(self) -> list:
        return []

    def device(self, device):
        """Context manager making ``device`` current inside the block."""
        return _DeviceContext(self, device)

    def device_of(self, obj):
        return _DeviceContext(self, obj.get_device() if getattr(obj, "is_cuda", False)
                              else -1)

    def is_current_stream_capturing(self) -> bool:
        return False

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _SH.LEGACY_NAMES:   # ember.cuda.FloatTensor, ...
            return _SH.legacy_type(self._type, name, self.is_available)
        api = self._api()
        if api is not None and hasattr(api, name):
            if name in _NEEDS_DEVICE and not self.is_available():
                return _raiser(self._unavailable(name))
            return getattr(api, name)
        b = self._backend()
        if name == "synchronize" and b is not None and self.is_available():
            return b.synchronize
        if name in _NEEDS_DEVICE:
            return _raiser(self._unavailable(name))
        if b is None:
            raise AttributeError(f"ember.{self._type} has no attribute {name!r} (no "
                                 f"{self._type!r} backend is installed: pip install "
                                 f"ember-{self._type})")
        raise AttributeError(f"ember.{self._type} has no attribute {name!r} (the "
                             f"{b.name!r} plugin does not provide it)")

    def __repr__(self):
        return f"<ember.{self._type} device namespace>"


def _raiser(err):
    def unavailable(*args, **kwargs):
        raise err
    return unavailable


def pinning_api():
    """The device API of an available accelerator plugin that offers pinned host memory
    (``pinned_buffer``), or None (``Tensor.pin_memory`` and ``DataLoader(pin_memory=)``)."""
    ensure_loaded()
    for b in BACKENDS.values():
        api = getattr(b, "device_api", None)
        if api is not None and hasattr(api, "pinned_buffer"):
            try:
                if api.is_available():
                    return api
            except Exception:
                continue
    return None


opencl = DeviceNamespace("opencl")
cuda = DeviceNamespace("cuda")
#: made at import, as the others, so that ``import torch.cpu.amp`` (ember.as_torch) finds it
cpu = DeviceNamespace("cpu")
#: PyTorch's other accelerator namespaces: without a plugin for them, is_available() is
#: False, as in a PyTorch build without them
xpu = DeviceNamespace("xpu")
mps = DeviceNamespace("mps")
