"""Warnings attributed to the user's line.

PyTorch's warnings from its C++ ops point at the Python line that called the op. ember's
come from Python code several frames below that line (entry points, autocast wrappers,
composites), so a fixed ``stacklevel`` points into ember whenever a call takes another
path. :func:`warn` walks out of ember's own modules (``ember``, ``ember.*`` and the
``ember_*`` backend plugins) and attributes the warning to the first frame outside them.
"""
from __future__ import annotations

import sys
import warnings

__all__ = ["warn"]


def _ours(module: str) -> bool:
    return module == "ember" or module.startswith(("ember.", "ember_"))


def warn(message, category=UserWarning, stacklevel: int | None = None) -> None:
    """``warnings.warn``, attributed to the innermost caller outside ember (``stacklevel``
    is accepted, as ``warnings.warn`` takes it, and not needed)."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and _ours(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)
