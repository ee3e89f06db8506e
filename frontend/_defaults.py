"""Process-wide defaults the creation functions read: the default device
(``ember.set_default_device``). Kept apart so that ``_creation`` can read it without
importing the modules that set it."""
from __future__ import annotations

import threading

from ember.dispatcher.device import CONTEXT, to_device

__all__ = ["get_default_device", "set_default_device", "default_device_or"]


class _Defaults(threading.local):
    """Per-thread, as PyTorch's default device (a device context)."""

    def __init__(self):
        self.device = None
        self.saved = []     # the defaults ``with ember.device(...)`` blocks replaced


_STATE = _Defaults()


def get_default_device():
    """The device new tensors go to when creation functions get no ``device``."""
    return _STATE.device if _STATE.device is not None else to_device("cpu")


def set_default_device(device) -> None:
    """Set it (None: back to CPU)."""
    _STATE.device = None if device is None else to_device(device)


def default_device_or(device):
    """``device`` if given, else the default device (for creation functions)."""
    if device is not None:
        return device
    return _STATE.device


def _enter(d) -> None:
    _STATE.saved.append(_STATE.device)
    _STATE.device = to_device(d)


def _exit() -> None:
    _STATE.device = _STATE.saved.pop() if _STATE.saved else None


CONTEXT[0] = (_enter, _exit)
