"""ember-opencl: ember's OpenCL backend (pyopencl, OpenCL C kernels generated per dtype).

Loaded by ember through the ``ember.backends`` entry point, like any third-party plugin.
The functions below are what ``ember.opencl.*`` exposes::

    >>> import ember_opencl
    >>> ember_opencl.device_count() >= 0
    True
"""
__version__ = "0.1.0"

__all__ = ["is_available", "device_count", "get_device_name", "synchronize", "memory_stats",
           "memory_allocated", "memory_reserved", "max_memory_allocated",
           "reset_peak_memory_stats", "empty_cache", "memory_summary", "mem_get_info",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "memory_snapshot", "_record_memory_history", "_snapshot", "offload_copy_out",
           "offload_copy_in", "offload_ready"]


def _dev(device):
    from . import _runtime as rt
    if device is None:
        return rt.device(0)
    if isinstance(device, int):
        return rt.device(device)
    if isinstance(device, str):
        _, _, idx = device.partition(":")
        return rt.device(int(idx) if idx else 0)
    return rt.device(getattr(device, "index", None) or 0)


def is_available() -> bool:
    """Whether at least one OpenCL device is usable."""
    return device_count() > 0


def device_count() -> int:
    """The number of OpenCL devices (0 when there is no OpenCL platform; never raises)."""
    from . import _runtime as rt
    return rt.device_count()


def get_device_name(device=None) -> str:
    return _dev(device).name


def synchronize(device=None) -> None:
    """Wait for every op queued on ``device`` (all devices when None) and raise kernel
    errors found meanwhile."""
    from . import _runtime as rt
    if device is None:
        for d in rt.devices():
            d.synchronize()
    else:
        _dev(device).synchronize()


def memory_stats(device=None):
    """The caching allocator's statistics, with PyTorch's key schema."""
    return _dev(device).allocator_().memory_stats()


def memory_allocated(device=None) -> int:
    return _dev(device).allocator_().memory_allocated()


def memory_reserved(device=None) -> int:
    return _dev(device).allocator_().memory_reserved()


def max_memory_allocated(device=None) -> int:
    return _dev(device).allocator_().max_memory_allocated()


def reset_peak_memory_stats(device=None) -> None:
    _dev(device).allocator_().reset_peak_memory_stats()


def empty_cache(device=None) -> None:
    """Give cached, unused device memory back to the driver."""
    from . import _runtime as rt
    devs = rt.devices() if device is None else [_dev(device)]
    for d in devs:
        if d.started:
            d.allocator_().empty_cache()


def memory_summary(device=None, abbreviated: bool = False) -> str:
    return _dev(device).allocator_().memory_summary(abbreviated)


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of the device's global memory, as this process sees it (the
    per-process limit applied; OpenCL reports no other process's use)."""
    alloc = _dev(device).allocator_()
    free, total = alloc.memory.mem_get_info()
    frac = alloc.get_memory_fraction()
    if frac < 1.0:
        limit = int(total * frac)
        free = max(0, min(free, limit - alloc.memory_reserved()))
        total = limit
    return free, total


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Let this process reserve at most ``fraction`` of the device's memory (beyond it,
    ``ember.OutOfMemoryError``): makes out-of-memory reproducible where device memory is
    host memory (PoCL)."""
    _dev(device).allocator_().set_memory_fraction(fraction)


def get_per_process_memory_fraction(device=None) -> float:
    return _dev(device).allocator_().get_memory_fraction()


def memory_snapshot(device=None) -> list:
    """The allocator's segments and blocks (``torch.cuda.memory_snapshot()``'s layout)."""
    return _dev(device).allocator_().memory_snapshot()


def _record_memory_history(enabled=True, max_entries: int = 1 << 62, context=None,
                           device=None) -> None:
    """Start or stop the allocator's event trace (``context()`` adds frames and phase)."""
    _dev(device).allocator_().record_history(bool(enabled), max_entries, context)


def _snapshot(device=None) -> dict:
    """Segments and the event trace (``torch.cuda.memory._snapshot()``'s layout)."""
    return _dev(device).allocator_().snapshot()


def offload_copy_out(storage, byte_offset: int, nbytes: int):
    """Start an asynchronous copy of device memory to the host on the device's transfer
    queue (``ember.utils.offload``); returns a handle with ``done()`` and ``wait()``."""
    from ._transfer import copy_out
    return copy_out(storage, byte_offset, nbytes)


def offload_copy_in(handle, storage, byte_offset: int = 0):
    """Start copying an offloaded handle's bytes back into ``storage``; returns an event
    for ``offload_ready``."""
    from ._transfer import copy_in
    return copy_in(handle, storage, byte_offset)


def offload_ready(event, storage) -> None:
    """Kernels enqueued on ``storage``'s device from now on wait for ``event`` (on the
    device: the host does not wait)."""
    from ._transfer import ready
    ready(event, storage)
