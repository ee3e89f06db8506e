"""Device memory: raw segments under ember's caching allocator.

A real backend asks its driver for memory here (``cudaMalloc``, ``clCreateBuffer``, ...).
The example device's memory is host memory it keeps to itself: each segment is a NumPy
byte array that only this backend's kernels and copies touch. Everything else — rounding,
pools, splitting, reuse, statistics, out-of-memory handling — is ember's
``CachingAllocator``: a backend only says how to get and give back raw memory.
"""
from __future__ import annotations

import os

import numpy as np

from ember.dispatcher.allocator import CachingAllocator, DeviceMemory

__all__ = ["ExampleMemory", "make_allocator", "capacity"]


def capacity() -> int:
    """Bytes of memory per example device (``EMBER_EXAMPLE_MEMORY``, default 4 GiB)."""
    try:
        return int(os.environ.get("EMBER_EXAMPLE_MEMORY", 4 << 30))
    except ValueError:
        return 4 << 30


class ExampleMemory(DeviceMemory):
    """Raw memory of one example device: segments are ``np.ndarray`` of bytes.

    ``alloc`` returns ``None`` when the device is full (the allocator then frees its cache,
    retries once, and raises ``ember.OutOfMemoryError`` with the numbers). One in-order
    "queue" per device, so the default stream and event methods apply: a freed block can
    be reused at once.
    """

    def __init__(self, index: int, total: int):
        self.name = f"example:{index}"
        self.total = total
        self.held = 0

    def alloc(self, nbytes: int):
        if self.held + nbytes > self.total:
            return None
        try:
            segment = np.empty(nbytes, dtype=np.uint8)
        except MemoryError:
            return None
        self.held += nbytes
        return segment

    def free(self, handle) -> None:
        self.held -= handle.nbytes

    def mem_get_info(self) -> tuple[int, int]:
        return self.total - self.held, self.total


def make_allocator(index: int) -> CachingAllocator:
    return CachingAllocator(ExampleMemory(index, capacity()))
