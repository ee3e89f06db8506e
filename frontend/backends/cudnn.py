"""``ember.backends.cudnn``: PyTorch's cuDNN flags. ember has no cuDNN, so
``is_available()`` is False and ``version()`` is None (as PyTorch without cuDNN); the
flags are plain attributes programs may set (``cudnn.benchmark = True``) and read back.

>>> import ember
>>> ember.backends.cudnn.deterministic = True
>>> ember.backends.cudnn.deterministic
True
"""
from __future__ import annotations

import sys

from ._flags import flag_context

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark",
           "benchmark_limit", "deterministic", "allow_tf32"]

enabled = True
benchmark = False
benchmark_limit = None   # (PyTorch without cuDNN reports None; 10 with it)
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: never in ember (its CUDA backend uses its own kernels)."""
    return False


def version():
    """cuDNN's version, None when it is not available (PyTorch's behaviour)."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor``: False, there is no cuDNN."""
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=None, deterministic=False,
          allow_tf32=True):
    """Context manager setting the flags inside the block (PyTorch's defaults)."""
    return flag_context(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                        benchmark_limit=benchmark_limit, deterministic=deterministic,
                        allow_tf32=allow_tf32)
