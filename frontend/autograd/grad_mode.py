"""``ember.autograd.grad_mode``: the grad-mode context managers under PyTorch's module
path, and the multithreaded-backward switch (ember's backward always runs on the calling
thread; the switch is kept and read back)."""
from __future__ import annotations

from ._engine import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                      set_grad_enabled)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "set_multithreading_enabled", "is_multithreading_enabled"]

_MULTITHREADING = [True]


def is_multithreading_enabled() -> bool:
    """The value set by ``set_multithreading_enabled`` (True by default); ember's backward
    runs on one thread either way.
    """
    return _MULTITHREADING[0]


class set_multithreading_enabled:
    """Context manager (or call) switching multithreaded backward on or off; ember runs
    backward on one thread either way, so only the recorded value changes."""

    def __init__(self, mode: bool):
        self.prev = _MULTITHREADING[0]
        _MULTITHREADING[0] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _MULTITHREADING[0] = self.prev
        return False

    def clone(self):
        return self.__class__(_MULTITHREADING[0])
