"""``ember._dynamo``: the names of ``torch._dynamo`` that programs use around
``ember.compile`` (its capture is lazy, not TorchDynamo's bytecode analysis:
docs/compile.md): ``reset``, ``explain``, ``list_backends``, ``register_backend``,
``optimize``, ``graph_break``, the shape markers (``mark_dynamic``...), ``config`` and the
exceptions in ``exc``."""
from __future__ import annotations

import weakref

from ember.dispatcher import lazy as _lazy

from .. import _compile, compiler
from .._tensor import Tensor
from ..nn.modules.module import Module
from . import config, exc, utils

__all__ = ["reset", "explain", "list_backends", "register_backend", "lookup_backend",
           "config", "exc", "utils", "OptimizedModule", "disable", "is_compiling", "optimize",
           "optimize_assert", "graph_break", "mark_dynamic", "maybe_mark_dynamic",
           "mark_static", "mark_static_address", "allow_in_graph", "assume_constant_result",
           "substitute_in_graph", "set_stance"]

_compile._DYNAMO_CONFIG[0] = config     # (compiled functions read its ``disable``)
reset = _compile.reset
explain = _compile.explain
list_backends = _compile.list_backends
register_backend = _compile.register_backend
lookup_backend = _compile.lookup_backend
OptimizedModule = _compile.OptimizedModule


disable = compiler.disable
is_compiling = compiler.is_compiling
allow_in_graph = compiler.allow_in_graph
assume_constant_result = compiler.assume_constant_result
substitute_in_graph = compiler.substitute_in_graph
set_stance = compiler.set_stance


def optimize(backend="inductor", *, nopython: bool = False, guard_export_fn=None,
             guard_fail_fn=None, disable: bool = False, dynamic=None):
    """The decorator form of ``ember.compile`` older programs use:
    ``@ember._dynamo.optimize("inductor")``; ``nopython=True`` is ``fullgraph=True``. An
    invalid backend raises ``InvalidBackend`` here, as in PyTorch."""
    lookup_backend(backend)

    def deco(fn):
        return _compile.compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic,
                                disable=disable)
    return deco


def optimize_assert(backend="inductor", *, dynamic=None, **kwargs):
    """``optimize(backend, nopython=True)``: a graph break raises."""
    return optimize(backend, nopython=True, dynamic=dynamic)


def graph_break(msg: str = "") -> None:
    """Inside a compiled function: what was captured so far runs now, and capture resumes
    after the call (a graph break); under ``fullgraph=True`` it raises ``Unsupported``
    naming the line. Elsewhere it does nothing."""
    _lazy.graph_break("a call of ember._dynamo.graph_break()" + (f" ({msg})" if msg else ""))


# ---- shape markers -------------------------------------------------------------------------
# ember keys compiled graphs by the shapes they saw (docs/compile.md): every shape gets a
# graph of its own, so no marker changes what runs. They are kept, per tensor, for
# ``marked(t)`` (tests, debugging), and checked as PyTorch checks them.

#: id(tensor) -> (a weak reference to it, {"dynamic": set, "maybe_dynamic": set,
#: "static": set, "static_address": bool})
_MARKS: dict = {}


def _marks_of(t) -> dict:
    key = id(t)
    hit = _MARKS.get(key)
    if hit is not None and hit[0]() is t:
        return hit[1]
    marks = {"dynamic": set(), "maybe_dynamic": set(), "static": set(),
             "static_address": False}
    _MARKS[key] = (weakref.ref(t, lambda _, k=key: _MARKS.pop(k, None)), marks)
    return marks


def _dims(index) -> list:
    return list(index) if isinstance(index, (list, tuple)) else [index]


def _tensor(fn: str, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn} expects a tensor but received {type(t)}")


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None,
                 specialize_on=None) -> None:
    """Marks dims of ``t`` as dynamic for a compiler. ember compiles a graph per shape, so
    this changes nothing that runs; it is kept (``marked(t)``)."""
    _tensor("mark_dynamic", t)
    _marks_of(t)["dynamic"].update(_dims(index))


def maybe_mark_dynamic(t, index) -> None:
    """As :func:`mark_dynamic`, a hint only."""
    _tensor("maybe_mark_dynamic", t)
    _marks_of(t)["maybe_dynamic"].update(_dims(index))


def mark_static(t, index=None) -> None:
    """Marks dims of ``t`` (``None``: all of them) as static; an ``nn.Module`` class or
    instance as static too. ember compiles a graph per shape: kept, nothing changes."""
    if isinstance(t, Tensor):
        _marks_of(t)["static"].update(range(t.dim()) if index is None else _dims(index))
        return
    if isinstance(t, Module) or (isinstance(t, type) and issubclass(t, Module)):
        return
    raise TypeError(f"mark_static expects a tensor or an nn.Module but received {type(t)}")


def mark_static_address(t, guard: bool = True) -> None:
    """Marks ``t``'s memory as fixed across calls (PyTorch's CUDA graphs keep it). ember's
    replay mode keeps its own static buffers: kept, nothing changes."""
    _tensor("mark_static_address", t)
    _marks_of(t)["static_address"] = True


def marked(t) -> dict:
    """What the markers recorded for ``t`` (an empty record if none was applied)."""
    hit = _MARKS.get(id(t))
    if hit is not None and hit[0]() is t:
        return {k: (set(v) if isinstance(v, set) else v) for k, v in hit[1].items()}
    return {"dynamic": set(), "maybe_dynamic": set(), "static": set(),
            "static_address": False}
