"""``ember.utils.dlpack``: PyTorch's DLPack helpers (``from_dlpack``, ``to_dlpack``)."""
from __future__ import annotations

from .._creation import from_dlpack as _from_dlpack
from .._dlpack import DLDeviceType

__all__ = ["from_dlpack", "to_dlpack", "DLDeviceType"]


def from_dlpack(ext):
    """A tensor sharing memory with ``ext``: an object with ``__dlpack__`` or a DLPack
    capsule (PyTorch's legacy form; a capsule can be consumed once)."""
    return _from_dlpack(ext)


def to_dlpack(tensor):
    """A DLPack capsule sharing ``tensor``'s memory (the legacy capsule interface)."""
    return tensor.__dlpack__()
