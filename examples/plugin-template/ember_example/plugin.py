"""The example backend as an ember plugin: device, memory, copies, kernels.

ember loads this module through the entry point in ``pyproject.toml`` and calls the
``ember_backend`` hook once, the first time a device is needed. The module imports only
``ember.dispatcher`` (never the ``ember`` frontend) and NumPy.
"""
from __future__ import annotations

import os

import numpy as np

from ember.dispatcher import Backend, hookimpl

from . import __version__, compiler
from .kernels import KERNELS
from .memory import make_allocator


class ExampleBackend(Backend):
    """Device type ``example``: ``EMBER_EXAMPLE_DEVICES`` devices (default 2), each with
    its own memory, reached only through the copies below (``host_accessible = False``:
    the frontend never reads device memory directly)."""
    name = "example"
    version = __version__
    device_type = "example"
    host_accessible = False
    kernels = KERNELS
    #: whether a process forked after this backend started can still use it. NumPy memory
    #: can; a real driver (threads, contexts, queues: OpenCL, CUDA) cannot, so declare
    #: False there and define is_initialized() to say when the driver has started
    fork_safe = True

    def __init__(self):
        self._allocators = {}

    # -- ember.compile (optional) ----------------------------------------------------------
    def compile_elementwise(self, group):
        """Run one fused group of elementwise calls as one step (``compiler.py``)."""
        return compiler.compile_elementwise(group)

    # -- devices -----------------------------------------------------------------------
    def device_count(self) -> int:
        """How many devices are usable; never raises (0 when none)."""
        try:
            return max(int(os.environ.get("EMBER_EXAMPLE_DEVICES", "2")), 0)
        except ValueError:
            return 0

    def device_name(self, index: int) -> str:
        return "NumPy reference device"

    def synchronize(self, index: int | None = None) -> None:
        """Kernels run synchronously here: nothing to wait for."""

    # -- memory ------------------------------------------------------------------------
    def caching_allocator(self, index: int):
        alloc = self._allocators.get(index)
        if alloc is None:
            if not 0 <= index < self.device_count():
                raise RuntimeError(f"example:{index}: invalid device ordinal (the example "
                                   f"backend has {self.device_count()} device(s))")
            alloc = self._allocators[index] = make_allocator(index)
        return alloc

    def allocate(self, nbytes: int, index: int):
        return self.caching_allocator(index).storage(nbytes)

    def allocator(self, index: int):
        # the dispatcher caches this one-argument function for its hot path
        return self.caching_allocator(index).storage

    def memory_stats(self, index: int = 0):
        return self.caching_allocator(index).memory_stats()

    def empty_cache(self, index: int | None = None) -> None:
        for i, alloc in list(self._allocators.items()):
            if index is None or i == index:
                alloc.empty_cache()

    # -- copies between host and device --------------------------------------------------
    def copy_from_host(self, storage, byte_offset: int, host_buffer) -> None:
        data = np.frombuffer(host_buffer, dtype=np.uint8)
        if data.size:
            start = storage.offset + byte_offset
            storage.handle[start:start + data.size] = data

    def copy_to_host(self, storage, byte_offset: int, nbytes: int):
        if not nbytes:
            return np.empty(0, dtype=np.uint8)
        start = storage.offset + byte_offset
        return storage.handle[start:start + nbytes].copy()    # host memory of its own


@hookimpl
def ember_backend():
    return ExampleBackend()
