"""Plugin discovery (entry points), validation and the kernel table.

Loading is lazy: nothing is imported until a device is first needed. Each plugin is
loaded in isolation: one that fails to import, declares the wrong API version, or fails
validation is recorded with its error and skipped; the others keep working.
``EMBER_BACKENDS=cpu,opencl`` restricts which entry points load.
"""
from __future__ import annotations

import inspect
import os
import sys
import threading
import traceback
import warnings
from dataclasses import dataclass, field

import pluggy

from . import hookspecs
from .backend import API_VERSION, Backend
from .schema import OPS, PRIMITIVES, install_kernels, uninstall_kernels

if sys.version_info >= (3, 10):
    from importlib.metadata import entry_points
else:  # pragma: no cover
    from importlib_metadata import entry_points

__all__ = ["PluginRecord", "plugin_records", "ensure_loaded", "register_backend",
           "backend_for", "BACKENDS", "ENTRY_POINT_GROUP", "unregister_backend",
           "validate_kernels", "fallback_enabled", "fallback_hint", "on_unregister",
           "on_install"]

ENTRY_POINT_GROUP = "ember.backends"


@dataclass
class PluginRecord:
    """What ``python -m ember backends`` shows for one plugin."""
    name: str
    status: str                 # "loaded", "error", "disabled"
    version: str = ""
    distribution: str = ""
    device_type: str = ""
    devices: list = field(default_factory=list)
    error: str = ""
    backend: Backend | None = None


#: device_type -> Backend, filled as plugins load.
BACKENDS: dict[str, Backend] = {}
_RECORDS: dict[str, PluginRecord] = {}
_loaded = False
_lock = threading.RLock()
_pm = pluggy.PluginManager("ember")
_pm.add_hookspecs(hookspecs)


def fallback_enabled() -> bool:
    """``EMBER_FALLBACK=cpu``: ops a backend lacks run on the CPU (see ``fallback.py``)."""
    return os.environ.get("EMBER_FALLBACK", "").strip().lower() == "cpu"


def fallback_hint() -> str:
    return ("Set EMBER_FALLBACK=cpu to run ops a backend lacks on the CPU (inputs copied "
            "there and results copied back).")


#: functions called with a device type when its backend is unregistered (caches keyed by
#: device drop their entries; the allocator cache in core.py registers one)
_ON_UNREGISTER: list = []


def on_unregister(fn) -> None:
    _ON_UNREGISTER.append(fn)


#: functions called with each backend as it is installed (and at once for those already
#: installed): what must know every backend's types without loading plugins early
_ON_INSTALL: list = []


def on_install(fn) -> None:
    _ON_INSTALL.append(fn)
    for backend in list(BACKENDS.values()):
        fn(backend)


def _allowed() -> set[str] | None:
    spec = os.environ.get("EMBER_BACKENDS", "").strip()
    if not spec:
        return None
    return {s.strip() for s in spec.split(",") if s.strip()}


def ensure_loaded() -> None:
    """Discover and load every entry-point plugin once (thread-safe, idempotent)."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        allowed = _allowed()
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in _RECORDS:
                continue
            dist = getattr(getattr(ep, "dist", None), "name", "") or ""
            if allowed is not None and ep.name not in allowed:
                _RECORDS[ep.name] = PluginRecord(ep.name, "disabled", distribution=dist,
                                                 error="not listed in EMBER_BACKENDS")
                continue
            try:
                module = ep.load()
            except BaseException as e:  # a broken plugin must never break ember
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                _RECORDS[ep.name] = PluginRecord(
                    ep.name, "error", distribution=dist,
                    error=f"import failed: {type(e).__name__}: {e}")
                _debug()
                continue
            _register_module(ep.name, module, dist)
        _loaded = True


def _debug():
    if os.environ.get("EMBER_DEBUG_PLUGINS"):
        traceback.print_exc()


def _register_module(name: str, module, dist: str = "") -> PluginRecord:
    try:
        _pm.register(module, name=name)
        impls = [i for i in _pm.hook.ember_backend.get_hookimpls() if i.plugin is module]
        if not impls:
            raise RuntimeError("the module defines no ember_backend() hook")
        backend = impls[0].function()
        rec = _install(name, backend, dist)
    except Exception as e:
        try:
            _pm.unregister(module)
        except Exception:
            pass
        rec = PluginRecord(name, "error", distribution=dist, error=f"{type(e).__name__}: {e}")
        _debug()
    _RECORDS[name] = rec
    return rec


def _install(name: str, backend, dist: str = "") -> PluginRecord:
    if not isinstance(backend, Backend):
        raise TypeError(f"ember_backend() returned {type(backend).__name__}, expected an "
                        "ember.dispatcher.Backend instance")
    if backend.api_version != API_VERSION:
        raise RuntimeError(f"plugin {name!r} was written for ember backend API version "
                           f"{backend.api_version!r}, but this ember provides version "
                           f"{API_VERSION}; upgrade the plugin or ember")
    dt = backend.device_type
    if not isinstance(dt, str) or not dt or not dt.replace("_", "").isalnum() or not dt.islower():
        raise ValueError(f"plugin {name!r} declares an invalid device_type {dt!r}")
    if dt in BACKENDS:
        other = next((r.name for r in _RECORDS.values() if r.backend is BACKENDS[dt]), "?")
        raise RuntimeError(f"plugin {name!r} claims device type {dt!r}, already provided by "
                           f"plugin {other!r}")
    validate_kernels(name, backend.kernels)
    BACKENDS[dt] = backend
    install_kernels(dt, backend.kernels)
    for fn in _ON_INSTALL:
        fn(backend)
    try:
        count = int(backend.device_count())
    except Exception as e:  # device_count must not raise; report instead
        count = 0
        backend._count_error = f"{type(e).__name__}: {e}"
    devices = [backend.device_name(i) for i in range(count)]
    return PluginRecord(name, "loaded", version=str(backend.version), distribution=dist,
                        device_type=dt, devices=devices, backend=backend)


def register_backend(backend: Backend, name: str | None = None) -> PluginRecord:
    """Register a backend object directly (tests, interactive use), with full validation.

    Errors are raised, not recorded.
    """
    with _lock:
        name = name or backend.name or backend.device_type
        rec = _install(name, backend)
        _RECORDS[name] = rec
        return rec


def unregister_backend(device_type: str) -> None:
    """Remove a backend and its kernels (tests)."""
    with _lock:
        backend = BACKENDS.pop(device_type, None)
        uninstall_kernels(device_type)
        for fn in _ON_UNREGISTER:
            fn(device_type)
        for k, r in list(_RECORDS.items()):
            if r.backend is backend and backend is not None:
                del _RECORDS[k]


def validate_kernels(plugin: str, kernels) -> None:
    """Reject unknown op names, non-callables, wrong arity and missing primitives."""
    if not hasattr(kernels, "items"):
        raise TypeError(f"plugin {plugin!r}: kernels must be a mapping of op name to kernel")
    unknown = sorted(k for k in kernels if k not in OPS)
    if unknown:
        raise ValueError(f"plugin {plugin!r} registers kernels for unknown ops: "
                         f"{', '.join(unknown)} (see ember.dispatcher.schema.OPS)")
    for name, k in kernels.items():
        if not callable(k):
            raise TypeError(f"plugin {plugin!r}: kernel for {name!r} is not callable")
        _check_arity(plugin, name, k)
    missing = sorted(PRIMITIVES - set(kernels))
    if missing:
        if fallback_enabled():
            warnings.warn(f"plugin {plugin!r} is missing required primitives "
                          f"({', '.join(missing)}); they run on the CPU (EMBER_FALLBACK=cpu)",
                          RuntimeWarning, stacklevel=2)
            return
        raise ValueError(f"plugin {plugin!r} is missing required primitives: "
                         f"{', '.join(missing)}. {fallback_hint()}")


def _check_arity(plugin, name, k):
    try:
        sig = inspect.signature(k)
    except (TypeError, ValueError):  # builtins (pybind11) carry no signature
        return
    spec = OPS[name].kernel.split("#")[0].strip()
    if spec.startswith("(composite"):
        return
    params = [p.strip() for p in spec.strip("()").split(",") if p.strip()]
    positional = [p for p in params if "=" not in p]
    try:
        sig.bind(*range(len(positional)))
    except TypeError:
        raise TypeError(f"plugin {plugin!r}: kernel for {name!r} has signature {sig}, "
                        f"expected {spec}") from None


def plugin_records() -> list[PluginRecord]:
    ensure_loaded()
    return list(_RECORDS.values())


def backend_for(device_type: str) -> Backend:
    b = BACKENDS.get(device_type)
    if b is not None:
        return b
    ensure_loaded()
    b = BACKENDS.get(device_type)
    if b is not None:
        return b
    known = ", ".join(sorted(BACKENDS)) or "none"
    failed = [r for r in _RECORDS.values() if r.status != "loaded"]
    hint = "".join(f"\n  plugin {r.name!r}: {r.status}: {r.error}" for r in failed)
    raise RuntimeError(f"no ember backend provides device type {device_type!r} (loaded "
                       f"backends: {known}). Install its plugin (e.g. "
                       f"`pip install ember-{device_type}`) or check `python -m ember "
                       f"backends`.{hint}")
