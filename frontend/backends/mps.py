"""``ember.backends.mps``: Apple's Metal backend; ember has none, so both
``is_available()`` and ``is_built()`` are False.

>>> import ember
>>> ember.backends.mps.is_available()
False
"""
from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos13_or_newer", "is_macos_or_newer"]


def is_available() -> bool:
    """Whether an MPS device can be used: never in ember."""
    return False


def is_built() -> bool:
    """Whether ember was built with MPS support: no."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    return False
