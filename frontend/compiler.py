"""``ember.compiler``: the switches and markers programs use around ``torch.compile``.

ember runs eagerly (``ember.compile`` is a separate piece of work), so these are the
answers of an eager run: nothing is being compiled or exported, and the markers that tell a
compiler how to treat a function return it unchanged. ``reset`` and ``set_stance`` accept
their arguments and change nothing, because there is no compiled state to reset.
"""
from __future__ import annotations

import functools

__all__ = ["is_compiling", "is_dynamo_compiling", "is_exporting", "allow_in_graph",
           "assume_constant_result", "disable", "reset", "set_stance",
           "cudagraph_mark_step_begin", "substitute_in_graph", "list_backends"]

_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")


def is_compiling() -> bool:
    """False: ember code always runs eagerly."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def allow_in_graph(fn):
    """Marks ``fn`` for a graph compiler; returns it unchanged."""
    return fn


def assume_constant_result(fn):
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """A decorator registering a traceable stand-in for ``original_fn``; in eager mode the
    original runs, so the decorated function is returned unchanged."""
    def deco(fn):
        return fn
    return deco


def disable(fn=None, recursive=True, *, reason=None):
    """Excludes ``fn`` from compilation: in eager mode, ``fn`` itself (or a decorator)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    return fn


def reset() -> None:
    """Clears compiled state: there is none in an eager run."""


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe=False, force_backend=None):
    if stance not in _STANCES:
        raise RuntimeError(f"invalid torch.compile stance '{stance}'")


def cudagraph_mark_step_begin() -> None:
    """Marks a training step for CUDA graphs; nothing to mark without them."""


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The compiler backends available: none yet (ember runs eagerly)."""
    return []
