"""``ember.backends.mkl``: ember does not link Intel MKL (its BLAS is OpenBLAS).

>>> import ember
>>> ember.backends.mkl.is_available()
False
"""
from __future__ import annotations

__all__ = ["is_available", "verbose", "VERBOSE_OFF", "VERBOSE_ON"]

VERBOSE_OFF, VERBOSE_ON = 0, 1


def is_available() -> bool:
    return False


class verbose:
    """Context manager for MKL's verbose level: accepted and ignored (no MKL)."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
