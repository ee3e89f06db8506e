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
           "reset_peak_memory_stats", "empty_cache", "memory_summary"]


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
