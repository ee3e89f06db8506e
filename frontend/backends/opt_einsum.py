"""``ember.backends.opt_einsum``: PyTorch's switch for contraction-path optimisation in
``einsum``. ember's einsum contracts left to right; ``is_available()`` says whether the
``opt_einsum`` package is importable, and ``enabled``/``strategy`` are plain attributes
with PyTorch's defaults (``True``/``"auto"`` when the package is there, else
``False``/None).

>>> import ember
>>> ember.backends.opt_einsum.strategy in ("auto", None)
True
"""
from __future__ import annotations

import importlib
import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]



def is_available() -> bool:
    return importlib.util.find_spec("opt_einsum") is not None


enabled = is_available()
strategy = "auto" if enabled else None


def get_opt_einsum():
    """The ``opt_einsum`` module if installed, else None (ember does not call it)."""
    if not is_available():
        return None
    return importlib.import_module("opt_einsum")
