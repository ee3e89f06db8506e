"""The shared piece of the flag namespaces: a ``flags(...)`` context manager that sets
module attributes and restores them on exit (``torch.backends.cudnn.flags``)."""
from __future__ import annotations

import contextlib

__all__ = ["flag_context"]


@contextlib.contextmanager
def flag_context(module, **values):
    """Set the attributes ``values`` (None: leave unchanged) of ``module`` inside the
    block; the previous values come back afterwards, also on an exception."""
    old = {k: getattr(module, k) for k in values}
    try:
        for k, v in values.items():
            if v is not None:
                setattr(module, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
