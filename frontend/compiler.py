"""``ember.compiler``: the switches and markers programs use around ``ember.compile``.

``is_compiling()`` is true while ops are being captured (inside a compiled function, on
its thread). ``disable`` runs a function eagerly inside a compiled one (a graph break before
it), ``reset`` forgets every compiled graph, ``set_stance`` switches compiled functions to
eager mode and back, and ``explain``/``list_backends`` are ``ember.compile``'s.
"""
from __future__ import annotations

import functools

from ember.dispatcher import lazy as _lazy

from . import _compile

__all__ = ["is_compiling", "is_dynamo_compiling", "is_exporting", "allow_in_graph",
           "assume_constant_result", "disable", "reset", "set_stance",
           "cudagraph_mark_step_begin", "substitute_in_graph", "list_backends", "explain",
           "ops"]

#: the functions a captured graph's nodes call (``ember.compiler.ops.add``, ...)
ops = _compile.OPS_NAMESPACE
explain = _compile.explain
list_backends = _compile.list_backends


def is_compiling() -> bool:
    """Whether ops are being captured by ``ember.compile`` now (on this thread)."""
    return _lazy.capturing()


def is_dynamo_compiling() -> bool:
    """Same as :func:`is_compiling` (ember has no Dynamo; its capture plays that role).

    Example:
        >>> ember.compiler.is_dynamo_compiling()
        False
    """
    return _lazy.capturing()


#: set while ``ember.export.export`` runs a model
_EXPORTING = [False]


def is_exporting() -> bool:
    """Whether ``ember.export.export`` is running a model now."""
    return _EXPORTING[0]


def allow_in_graph(fn):
    """Marks ``fn`` for a graph compiler: capture records what it runs anyway, so ``fn``
    is returned unchanged."""
    return fn


def assume_constant_result(fn):
    """Decorator telling a graph compiler that ``fn``'s result is a constant; ember returns
    ``fn`` unchanged (its capture records what ``fn`` computes).
    """
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """A decorator registering a traceable stand-in for ``original_fn``: capture runs the
    original (it records whatever runs), so the decorated function is returned unchanged."""
    def deco(fn):
        return fn
    return deco


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` runs eagerly even when called from a compiled function: what was captured
    before the call runs first (a graph break), capture resumes after it."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    why = f"a call of {getattr(fn, '__qualname__', fn)!s}, which is excluded from " \
          f"compilation (ember.compiler.disable{': ' + reason if reason else ''})"

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        with _lazy.suspended(why):
            return fn(*args, **kwargs)
    eager._ember_disabled = True
    return eager


def reset() -> None:
    """Forget every compiled graph (the next calls compile again)."""
    _compile.reset()


_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """How compiled functions run from now on: ``"default"``; ``"force_eager"`` (their
    Python runs with no capture); ``"eager_on_recompile"`` (a graph of a structure not
    compiled yet runs its kernels one by one instead of compiling); ``"fail_on_recompile"``
    (such a graph raises)."""
    if stance not in _STANCES:
        raise RuntimeError(f"invalid torch.compile stance '{stance}'")
    _compile._STANCE[0] = stance


def cudagraph_mark_step_begin() -> None:
    """Marks a training step for CUDA graphs; nothing to mark without them."""

