"""Grad mode and the autograd hook: where autograd enters the dispatcher.

Every dispatcher entry point of a differentiable op starts with the same test: grad mode
is on, the op has a gradient formula in its definition, and an input requires grad. Then
it hands the call to :data:`HOOKS` ``.op`` — the recorder the autograd engine installs
(``ember.autograd``) — which runs the same entry with grad mode off and records one graph
node from the op's formula. Ops without a formula (composites) run as they are: the ops
they are written in record themselves. Views go to ``HOOKS.view`` the same way.

The dispatcher never imports the autograd engine; it only calls what was installed (the
frontend → dispatcher dependency rule holds).
"""
from __future__ import annotations

import threading

__all__ = ["MODE", "HOOKS", "requires_grad", "below_autograd"]


class _Mode(threading.local):
    """Per-thread grad mode (``ember.no_grad`` flips ``grad``)."""

    def __init__(self):
        self.grad = True
        self.inference = False


MODE = _Mode()


class _Hooks:
    """The installed recorders: ``op(o, fn, inputs, attrs)`` and
    ``view(kind, fn, x, args, ctx)``; None until the autograd engine is imported."""
    op = None
    view = None


HOOKS = _Hooks()


def requires_grad(values) -> bool:
    """True when one of ``values`` is a tensor that requires grad."""
    for v in values:
        if getattr(v, "requires_grad", False) is True:
            return True
    return False


class below_autograd:
    """Grad mode off inside (the recorder runs an op's forward in it)."""
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = MODE.grad
        MODE.grad = False
        return self

    def __exit__(self, *exc):
        MODE.grad = self.prev
        return False
