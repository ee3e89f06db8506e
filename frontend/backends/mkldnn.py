"""``ember.backends.mkldnn``: oneDNN, which the CPU backend uses for float32 dense
convolution and matrix products when it is installed (``pip install "ember-cpu[onednn]"``;
without it, ember's own kernels run). ``enabled`` switches it at run time, as in PyTorch:

>>> import ember
>>> with ember.backends.mkldnn.flags(enabled=False):
...     pass  # convolutions and matrix products here run ember's own kernels
>>> isinstance(ember.backends.mkldnn.is_available(), bool)
True
"""
from __future__ import annotations

import sys
import types

from ember.dispatcher.plugins import BACKENDS, ensure_loaded

from ._flags import flag_context

# ``enabled`` is a property of the module's class (below)
__all__ = ["is_available", "enabled", "deterministic", "allow_tf32", "flags",  # noqa: F822
           "VERBOSE_OFF", "VERBOSE_ON", "VERBOSE_ON_CREATION", "verbose"]

deterministic = False
allow_tf32 = False
VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2


def _cpu():
    """The CPU backend when it offers oneDNN, else None."""
    ensure_loaded()
    b = BACKENDS.get("cpu")
    return b if b is not None and getattr(b, "onednn_available", None) is not None else None


def is_available() -> bool:
    """Whether the CPU backend loaded oneDNN (the ``onednn-cpu-gomp`` wheel, unless
    ``EMBER_ONEDNN=0``)."""
    b = _cpu()
    return bool(b is not None and b.onednn_available())


class _Module(types.ModuleType):
    # ``enabled`` reads and switches the backend's oneDNN path (True where it is absent,
    # as PyTorch's flag defaults to True; setting it then changes nothing)
    @property
    def enabled(self) -> bool:
        b = _cpu()
        return bool(b.onednn_enabled()) if b is not None and b.onednn_available() else self._enabled

    @enabled.setter
    def enabled(self, value) -> None:
        self._enabled = bool(value)
        b = _cpu()
        if b is not None:
            b.set_onednn_enabled(self._enabled)


sys.modules[__name__].__class__ = _Module
_enabled = True


def flags(enabled=False, deterministic=False, allow_tf32=True):
    """Set the flags inside a ``with`` block (PyTorch's defaults for the arguments)."""
    return flag_context(sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                        allow_tf32=allow_tf32)


class verbose:
    """Context manager for oneDNN's verbose level: accepted and ignored (oneDNN's verbose
    output is switched by its own ONEDNN_VERBOSE environment variable)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
