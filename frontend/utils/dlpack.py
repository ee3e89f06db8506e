"""``ember.utils.dlpack``: PyTorch's DLPack helpers (``from_dlpack``, ``to_dlpack``)."""
from __future__ import annotations

import enum

from .._creation import from_dlpack as _from_dlpack

__all__ = ["from_dlpack", "to_dlpack", "DLDeviceType"]


class DLDeviceType(enum.IntEnum):
    """The device codes of the DLPack standard."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def from_dlpack(ext):
    """A tensor sharing memory with ``ext``: an object with ``__dlpack__`` or a DLPack
    capsule (PyTorch's legacy form; a capsule can be consumed once)."""
    return _from_dlpack(ext)


def to_dlpack(tensor):
    """A DLPack capsule sharing ``tensor``'s memory (the legacy capsule interface)."""
    return tensor.__dlpack__()
