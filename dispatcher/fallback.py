"""``EMBER_FALLBACK=cpu``: run the ops a backend lacks on the CPU, and account for it.

Without it, an op with no kernel on a device (and no composite) raises an error naming
the op, the device, the plugin and this switch. With it, such an op copies its tensor
inputs to the CPU, runs the CPU kernel and copies the results back; each op warns once,
and :func:`fallback_report` lists per op the calls, the bytes moved and the time spent.
A plugin that lacks required primitives is accepted (with a warning) in this mode, so a
backend under construction runs whole models while its kernels are written one by one.
"""
from __future__ import annotations

import threading
import time

from . import core as C
from .allocator import OutOfMemoryError
from .core import TensorBase, numel, shape_str
from .device import to_device
from .plugins import backend_for, fallback_enabled as enabled, fallback_hint as hint
from .warn import warn as _warn

__all__ = ["enabled", "hint", "run_on_cpu", "fallback_report", "reset_fallback_report"]

_lock = threading.Lock()
_REPORT: dict = {}          # op name -> {"calls", "bytes", "seconds", "devices"}
_WARNED: set = set()


def _is_tensor(x) -> bool:
    return isinstance(x, TensorBase)


def _span(t):
    """(first element, element count) of the storage range ``t`` views."""
    if numel(t.shape) == 0:
        return t._offset, 0
    last = t._offset + sum((n - 1) * st for n, st in zip(t.shape, t._stride))
    return t._offset, last - t._offset + 1


def _host_copy(t, cpu_backend, cpu, op):
    """A CPU tensor with ``t``'s shape and strides over a host copy of its storage span.
    Raw storage copies only: no kernel of the failing device is needed. Host memory
    running out (the copy, or the backend's staging buffer) is ``ember.OutOfMemoryError``."""
    start, n = _span(t)
    isz = t.dtype.itemsize
    try:
        storage = cpu_backend.allocate(n * isz, 0)
        if n:
            raw = backend_for(t.device.type).copy_to_host(t._storage, start * isz, n * isz)
            cpu_backend.copy_from_host(storage, 0, raw)
    except OutOfMemoryError:
        raise
    except MemoryError as e:
        raise C.host_out_of_memory(
            f"the CPU copy of a {t.dtype.name} tensor of shape {shape_str(t.shape)} on "
            f"{t.device} ({op}() falls back to the CPU)", n * isz, e) from None
    return C.new_tensor(storage, t.shape, t._stride, 0, t.dtype, cpu, [0]), n * isz


def run_on_cpu(o, dev, outs, ins, attrs):
    """Run op ``o`` for device ``dev`` on the CPU: ``outs`` are the device tensors to fill,
    ``ins``/``attrs`` the kernel's inputs (tensors among them are copied)."""
    cpu = to_device("cpu")
    cpu_b = backend_for("cpu")
    k = o.kernels.get("cpu")
    if k is None:
        raise NotImplementedError(f"{o.name}(): no kernel on {dev} and none on the CPU to "
                                  "fall back to")
    if o.name not in _WARNED:
        _WARNED.add(o.name)
        _warn(f"{o.name}(): the {dev.type!r} backend has no kernel for this op; "
              "running it on the CPU (EMBER_FALLBACK=cpu). See "
              "ember.backends.fallback_report().", RuntimeWarning)
    t0 = time.perf_counter()
    moved = 0

    def host(x):
        nonlocal moved
        if _is_tensor(x) and x.device.type != "cpu":
            h, nb = _host_copy(x, cpu_b, cpu, o.name)
            moved += nb
            return h
        return x

    cins = [host(x) for x in ins]
    cattrs = {n: host(v) for n, v in attrs.items()}
    couts = [host(t) for t in outs]     # current contents too: some kernels read ``out``
    try:
        k(*couts, *cins, **cattrs)
    except OutOfMemoryError:
        raise
    except MemoryError as e:    # the CPU kernel's scratch memory (C++ std::bad_alloc)
        raise C.host_out_of_memory(f"the scratch memory of {o.name}() on cpu (falling back "
                                   f"from {dev})", None, e) from None
    for t, c in zip(outs, couts):
        start, n = _span(t)
        if n:
            isz = t.dtype.itemsize
            try:    # the device's staging buffer of the upload
                raw = cpu_b.copy_to_host(c._storage, 0, n * isz)
                backend_for(t.device.type).copy_from_host(t._storage, start * isz, raw)
            except OutOfMemoryError:
                raise
            except MemoryError as e:
                raise C.host_out_of_memory(
                    f"the copy of {o.name}()'s {t.dtype.name} result of shape "
                    f"{shape_str(t.shape)} from the CPU back to {t.device}", n * isz,
                    e) from None
            moved += n * isz
    dt = time.perf_counter() - t0
    with _lock:
        r = _REPORT.setdefault(o.name, {"calls": 0, "bytes": 0, "seconds": 0.0,
                                        "devices": set()})
        r["calls"] += 1
        r["bytes"] += moved
        r["seconds"] += dt
        r["devices"].add(str(dev))
    return outs


def fallback_report() -> dict:
    """op name -> {"calls", "bytes", "seconds", "devices"} for every op that fell back."""
    with _lock:
        return {k: dict(v, devices=sorted(v["devices"])) for k, v in sorted(_REPORT.items())}


def reset_fallback_report() -> None:
    """Forget the ops recorded by :func:`fallback_report` (and warn again on the next
    fallback)."""
    with _lock:
        _REPORT.clear()
        _WARNED.clear()
