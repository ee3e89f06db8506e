"""``ember.backends.openmp``: ember's CPU backend runs on its own thread pool, not OpenMP.

>>> import ember
>>> ember.backends.openmp.is_available()
False
"""
from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether ember was built with OpenMP: no (``ember.set_num_threads`` sizes its own
    pool)."""
    return False
