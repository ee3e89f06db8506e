"""Plugin discovery (entry points), validation and the kernel table.

Loading is lazy: nothing is imported until a device is first needed. Each plugin is
loaded in isolation: one that fails to import, declares the wrong API version, or fails
validation is recorded with its error and skipped; the others keep working.
``EMBER_BACKENDS=cpu,opencl`` restricts which entry points load.

Trust stops at the plugin boundary: a plugin that raises anything at import (``SystemExit``
included) is reported like any broken plugin; ember's own backends (``FIRST_PARTY``) load
first and keep their device types whatever a third-party plugin claims; and what a
third-party backend's ``copy_to_host`` returns is checked for length before anything
reads it.

Fork: a backend declares ``fork_safe`` (does it keep working in a child forked after it
started?) and ``is_initialized()`` (has it started in this process?). In a forked child,
every backend that had started in the parent and is not fork-safe is replaced by a stand-in
whose every use raises PyTorch's "Cannot re-initialize CUDA in forked subprocess" error for
its device type, instead of hanging in the driver (see ``fork_unsafe_devices``).
"""
from __future__ import annotations

import inspect
import os
import sys
import threading
import traceback
from dataclasses import dataclass, field

import pluggy

from . import hookspecs
from .backend import API_VERSION, Backend
from .meta import MetaBackend
from .schema import OPS, PRIMITIVES, install_kernels, uninstall_kernels
from .warn import warn as _warn

if sys.version_info >= (3, 10):
    from importlib.metadata import entry_points
else:  # pragma: no cover
    from importlib_metadata import entry_points

__all__ = ["PluginRecord", "plugin_records", "ensure_loaded", "register_backend",
           "backend_for", "BACKENDS", "ENTRY_POINT_GROUP", "unregister_backend",
           "validate_kernels", "fallback_enabled", "fallback_hint", "on_unregister",
           "on_install", "FIRST_PARTY", "fork_safe", "is_initialized", "fork_unsafe_devices"]

ENTRY_POINT_GROUP = "ember.backends"

#: ember's own backend distributions and the device type each provides. They load before
#: every other plugin, and a device type they provide is never given to another plugin.
FIRST_PARTY = {"ember-cpu": "cpu", "ember-opencl": "opencl", "ember-cuda": "cuda"}


@dataclass
class PluginRecord:
    """What ``python -m ember backends`` shows for one plugin."""
    name: str
    status: str                 # "loaded", "error", "disabled"
    version: str = ""
    distribution: str = ""
    device_type: str = ""
    error: str = ""
    backend: Backend | None = None
    _devices: list | None = field(default=None, repr=False)

    @property
    def devices(self) -> list:
        """The names of the backend's devices, asked for on first access: counting devices
        starts some drivers (OpenCL's), which a forked child could then not use, so loading
        a plugin does not count them."""
        if self._devices is None:
            self._devices = _device_names(self.backend) if self.status == "loaded" else []
        return self._devices


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
        # ember's own backends first, so that their device types are theirs whatever the
        # other plugins are called; then the others in name order (the first claim wins)
        found = [(_distribution(ep), ep) for ep in entry_points(group=ENTRY_POINT_GROUP)]
        found.sort(key=lambda d_ep: (d_ep[0] not in FIRST_PARTY, d_ep[1].name))
        for dist, ep in found:
            if ep.name in _RECORDS:
                continue
            if allowed is not None and ep.name not in allowed:
                _RECORDS[ep.name] = PluginRecord(ep.name, "disabled", distribution=dist,
                                                 error="not listed in EMBER_BACKENDS")
                continue
            if dist in FIRST_PARTY:
                _RESERVED[FIRST_PARTY[dist]] = (ep.name, dist)
            try:
                module = ep.load()
            except BaseException as e:  # a broken plugin must never break ember, even
                if isinstance(e, KeyboardInterrupt):  # one calling sys.exit() at import
                    raise
                _RECORDS[ep.name] = PluginRecord(
                    ep.name, "error", distribution=dist,
                    error=f"import failed: {type(e).__name__}: {e}")
                _debug()
                continue
            _register_module(ep.name, module, dist)
        _loaded = True


def _distribution(ep) -> str:
    return getattr(getattr(ep, "dist", None), "name", "") or ""


#: device type -> (plugin, distribution) of the first-party plugin that provides it, for
#: every first-party plugin installed and enabled (even one that failed to load)
_RESERVED: dict[str, tuple[str, str]] = {}


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
    except BaseException as e:  # SystemExit from the hook included: reported, not raised
        if isinstance(e, KeyboardInterrupt):
            raise
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
    _check_claim(name, dist, dt)
    validate_kernels(name, backend.kernels)
    if dist not in FIRST_PARTY:  # ember's own copies are tested with it (and .item() is hot)
        _check_copies(name, backend)
    BACKENDS[dt] = backend
    install_kernels(dt, backend.kernels)
    for fn in _ON_INSTALL:
        fn(backend)
    return PluginRecord(name, "loaded", version=str(backend.version), distribution=dist,
                        device_type=dt, backend=backend)


def _check_claim(name: str, dist: str, dt: str) -> None:
    """One plugin per device type: the first claim stands, and a first-party plugin's
    type is its own even before (or without) it loading. A conflict between installed
    plugins is also warned about, naming both distributions, since the user may not know
    that two installed packages compete."""
    owner = owner_dist = None
    if dt in BACKENDS:
        owner = next((r.name for r in _RECORDS.values() if r.backend is BACKENDS[dt]), "?")
        owner_dist = next((r.distribution for r in _RECORDS.values()
                           if r.backend is BACKENDS[dt]), "")
    elif dt in _RESERVED and _RESERVED[dt] != (name, dist):
        owner, owner_dist = _RESERVED[dt]
    if owner is None:
        return
    if dist:  # an installed plugin (not one registered in-process, whose error is raised)
        why = " (ember's own backends keep their device types)" if (
            owner_dist in FIRST_PARTY) else " (plugins load in name order; the first claim wins)"
        _warn(f"ember plugin {name!r} from distribution {dist!r} claims device type "
              f"{dt!r}, already provided by plugin {owner!r} from distribution "
              f"{owner_dist or 'registered in-process'!r}; {name!r} is not "
              f"loaded{why}", RuntimeWarning)
    raise RuntimeError(f"plugin {name!r} claims device type {dt!r}, already provided by "
                       f"plugin {owner!r}")


def _device_names(backend) -> list:
    try:
        count = int(backend.device_count())
        return [backend.device_name(i) for i in range(count)]
    except BaseException as e:  # device_count must not raise; report instead
        if isinstance(e, KeyboardInterrupt):
            raise
        backend._count_error = f"{type(e).__name__}: {e}"
        return []


def _check_copies(name: str, backend) -> None:
    """Wrap the backend's ``copy_to_host`` so that what it returns is checked at the
    boundary: exactly ``nbytes`` bytes, or an error naming the plugin. A short buffer would
    otherwise leave the rest of the destination uninitialised (``.cpu()`` returning
    garbage), a long one overrun it."""
    raw = backend.copy_to_host
    if getattr(raw, "_ember_checked", False):
        return
    dt = backend.device_type

    def copy_to_host(storage, byte_offset: int, nbytes: int):
        buf = raw(storage, byte_offset, nbytes)
        try:
            got = memoryview(buf).nbytes
        except TypeError:
            raise TypeError(f"the {name!r} backend's copy_to_host (device type {dt!r}) "
                            f"returned {type(buf).__name__}, not a host buffer (an object "
                            "with the buffer protocol: bytes, memoryview, a NumPy array)"
                            ) from None
        if got != nbytes:
            raise RuntimeError(
                f"the {name!r} backend's copy_to_host (device type {dt!r}) returned {got} "
                f"bytes for a read of {nbytes} bytes at byte offset {byte_offset} of a "
                f"{getattr(storage, 'nbytes', '?')}-byte storage; ember refuses to use a "
                f"copy of the wrong length (the rest would be uninitialised memory). This is "
                f"a bug in the plugin {name!r}.")
        return buf

    copy_to_host._ember_checked = True
    copy_to_host.__wrapped__ = raw
    backend.copy_to_host = copy_to_host


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
            _warn(f"plugin {plugin!r} is missing required primitives "
                  f"({', '.join(missing)}); they run on the CPU (EMBER_FALLBACK=cpu)",
                  RuntimeWarning)
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
    """Every backend plugin found, with its status (loaded, error, disabled), version,
    distribution, device type and error: what ``python -m ember backends`` shows."""
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
    if device_type == "meta":  # built in, installed on first use (ember.dispatcher.meta)
        with _lock:
            if "meta" not in BACKENDS:
                _RECORDS["meta"] = _install("meta", MetaBackend(), "ember")
        return BACKENDS["meta"]
    known = ", ".join(sorted(BACKENDS)) or "none"
    failed = [r for r in _RECORDS.values() if r.status != "loaded"]
    hint = "".join(f"\n  plugin {r.name!r}: {r.status}: {r.error}" for r in failed)
    raise RuntimeError(f"no ember backend provides device type {device_type!r} (loaded "
                       f"backends: {known}). Install its plugin (e.g. "
                       f"`pip install ember-{device_type}`) or check `python -m ember "
                       f"backends`.{hint}")


# ---- fork ------------------------------------------------------------------------------------
# A driver that started threads, contexts or device queues in a process does not survive
# fork: the child has a copy of its state but not its threads, and the first enqueue waits
# forever (PoCL) or fails (CUDA). PyTorch raises "Cannot re-initialize CUDA in forked
# subprocess" there; ember does the same for every backend that says it is not fork-safe.

def fork_safe(backend) -> bool:
    """Whether ``backend`` keeps working in a process forked after it started: its
    ``fork_safe`` attribute; a plugin that does not declare it is assumed not to."""
    return getattr(backend, "fork_safe", False) is True


def is_initialized(backend) -> bool:
    """Whether ``backend`` has started its driver in this process (so that a forked child
    inherits it half-alive): its ``is_initialized()``; a plugin without one counts as
    started from the moment it loaded."""
    probe = getattr(backend, "is_initialized", None)
    if not callable(probe):
        return True
    try:
        return bool(probe())
    except BaseException as e:  # a broken probe: assume the worst
        if isinstance(e, KeyboardInterrupt):
            raise
        return True


def fork_unsafe_devices() -> list[str]:
    """The device types a child forked now could not use: their backend started in this
    process and does not survive fork. Loads no plugin and starts no driver.

    >>> from ember.dispatcher.plugins import fork_unsafe_devices
    >>> "cpu" in fork_unsafe_devices()      # the CPU backend survives fork
    False
    """
    return sorted(dt for dt, b in list(BACKENDS.items())
                  if not fork_safe(b) and is_initialized(b))


def _forked_error(backend_name: str, dt: str, parent: int, declared: bool) -> RuntimeError:
    why = "declares fork_safe = False" if declared else "does not declare fork_safe = True"
    return RuntimeError(
        f"Cannot re-initialize {dt} in forked subprocess. To use {dt} with multiprocessing, "
        f"you must use the 'spawn' start method. (The {backend_name!r} backend was "
        f"initialised in the parent process, pid {parent}, before the fork, and its plugin "
        f"{why}. Start processes with multiprocessing.get_context('spawn'), or "
        f"DataLoader(..., multiprocessing_context='spawn').)")


class _ForkedDeviceAPI:
    """``ember.<device type>.*`` in a forked child: counting devices still works (as
    ``torch.cuda.device_count()`` does there); everything else raises the fork error."""

    def __init__(self, api, backend):
        self._api = api
        self._backend = backend

    def is_available(self) -> bool:
        return self._backend.device_count() > 0

    def device_count(self) -> int:
        return self._backend.device_count()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._api, name)
        if not callable(value):
            return value

        def forked(*args, **kwargs):
            raise self._backend.error()
        forked.__name__ = name
        return forked


class _ForkedBackend(Backend):
    """Stands in, in a forked child, for a backend that started in the parent and does not
    survive fork: every use of its devices raises :meth:`error` instead of reaching the
    driver. Thread settings are ignored (a DataLoader worker sets them for every backend)."""
    fork_safe = False

    def __init__(self, backend, parent: int):
        self._backend = backend
        declared = any("fork_safe" in vars(c) for c in type(backend).__mro__
                       if c is not Backend and c is not object)
        self._error = (backend.name, backend.device_type, parent, declared)
        self.name = backend.name
        self.version = backend.version
        self.device_type = backend.device_type
        self.host_accessible = backend.host_accessible
        self.storage_types = getattr(backend, "storage_types", ())
        api = getattr(backend, "device_api", None)
        self.device_api = None if api is None else _ForkedDeviceAPI(api, self)
        self.kernels = {}

    def error(self) -> RuntimeError:
        return _forked_error(*self._error)

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        try:  # the plugins' counts are cached by their first call (opencl, cuda)
            return int(self._backend.device_count())
        except Exception:
            return 0

    def device_name(self, index: int) -> str:
        return f"{self.device_type}:{index} (not usable in this forked process)"

    def _raise(self, *args, **kwargs):
        raise self.error()

    allocate = allocator = copy_from_host = copy_to_host = wrap_host_buffer = _raise
    synchronize = share_storage = storage_from_handle = is_shared = _raise

    def set_num_threads(self, n: int) -> None:
        return None

    def get_num_threads(self) -> int:
        return 1

    def __getattr__(self, name):  # the plugin's optional members (memory_stats, status...)
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._backend, name)
        return self._raise if callable(value) else value


def _forked_kernel(backend: _ForkedBackend, op: str):
    def kernel(*args, **kwargs):
        raise backend.error()
    kernel.__name__ = op
    return kernel


def _after_fork_in_child() -> None:
    global _lock
    # a lock another thread of the parent held at the fork stays held forever here
    _lock = threading.RLock()
    parent = os.getppid()
    for dt in fork_unsafe_devices():
        backend = BACKENDS[dt]
        if isinstance(backend, _ForkedBackend):  # forked twice: already a stand-in
            continue
        try:
            stand_in = _ForkedBackend(backend, parent)
            BACKENDS[dt] = stand_in
            install_kernels(dt, {name: _forked_kernel(stand_in, name)
                                 for name, o in OPS.items() if dt in o.kernels})
            for fn in _ON_UNREGISTER:  # caches keyed by device (allocators) drop entries
                fn(dt)
            for rec in _RECORDS.values():
                if rec.backend is backend:
                    rec.backend = stand_in
        except Exception:  # an at-fork handler must not fail the fork
            _debug()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
