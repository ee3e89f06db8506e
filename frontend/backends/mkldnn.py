"""``ember.backends.mkldnn``: oneDNN flags. ember's CPU backend does not use oneDNN, so
``is_available()`` is False; ``enabled`` is a plain attribute.

>>> import ember
>>> ember.backends.mkldnn.is_available()
False
"""
from __future__ import annotations

import sys

from ._flags import flag_context

__all__ = ["is_available", "enabled", "deterministic", "allow_tf32", "flags", "VERBOSE_OFF",
           "VERBOSE_ON", "VERBOSE_ON_CREATION", "verbose"]

enabled = True
deterministic = False
allow_tf32 = False
VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2


def is_available() -> bool:
    """Whether oneDNN is used: no, ember's CPU kernels are its own."""
    return False


def flags(enabled=False, deterministic=False, allow_tf32=True):
    return flag_context(sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                        allow_tf32=allow_tf32)


class verbose:
    """Context manager for oneDNN's verbose level: accepted and ignored (no oneDNN)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
