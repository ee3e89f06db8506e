"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly``.

While it is on, every recorded node keeps the stack of the forward call that created it,
and the backward pass checks each node's gradients: a NaN raises
``RuntimeError: Function 'DivBackward0' returned nan values in its 1th output.`` and any
error inside a node's backward is preceded by a warning showing the forward call that
created the node — PyTorch's messages. It slows everything down; use it to debug.

>>> x = ember.tensor([1., 2.], requires_grad=True)
>>> with ember.autograd.detect_anomaly():
...     loss = (x * 3).sum()
...     loss.backward()
>>> x.grad
tensor([3., 3.])
"""
from __future__ import annotations

import functools
import os
import threading
import traceback

import ember.dispatcher as _dispatcher
from ember.dispatcher.warn import warn as _warn

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled", "ANOMALY",
           "forward_trace", "warn_forward_trace"]


class _Anomaly(threading.local):
    def __init__(self):
        self.enabled = False
        self.check_nan = True


ANOMALY = _Anomaly()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (see ``ember.autograd.detect_anomaly``)."""
    return ANOMALY.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward outputs for NaN."""
    return ANOMALY.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off, without the warning ``detect_anomaly`` gives.

    Args:
        enabled (bool): record forward stacks and check backward.
        check_nan (bool): raise when a node's backward returns NaN. Default: True.
    """
    ANOMALY.enabled = bool(enabled)
    ANOMALY.check_nan = bool(check_nan)


#: ember's own source folders: their frames are left out of the forward traces
_OWN = tuple(os.path.dirname(os.path.abspath(p)) + os.sep for p in (
    os.path.dirname(__file__), _dispatcher.__file__))


def forward_trace() -> str:
    """The current Python stack as the user wrote it (ember's own frames left out)."""
    frames = [f for f in traceback.extract_stack()
              if not os.path.abspath(f.filename).startswith(_OWN)]
    return "".join(traceback.format_list(frames))


def warn_forward_trace(node) -> None:
    """PyTorch's warning naming the node and the forward call that created it."""
    ctx = getattr(node, "_ctx", None)
    trace = ctx.get("anomaly_trace") if isinstance(ctx, dict) else None
    if trace is None:
        trace = ("No forward pass information available. Enable detect anomaly during "
                 "forward pass for more information.")
    else:
        trace = "Traceback of forward call that caused the error:\n" + trace
    _warn(f"Error detected in {node.name()}. {trace}", UserWarning)


class detect_anomaly:
    """Context manager (and decorator) turning anomaly detection on inside the block.

    ``check_nan``: whether backward checks the gradients for NaN (default True)."""

    def __init__(self, check_nan: bool = True):
        self.prev = ANOMALY.enabled
        self.check_nan = check_nan
        self.prev_check_nan = ANOMALY.check_nan
        _warn("Anomaly Detection has been enabled. This mode will increase the "
              "runtime and should only be enabled for debugging.", UserWarning)

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: a call (it takes effect at once) or a context
    manager (the previous state comes back on exit)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = ANOMALY.enabled
        self.prev_check_nan = ANOMALY.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False
