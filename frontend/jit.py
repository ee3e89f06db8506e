"""``ember.jit``: PyTorch's TorchScript names, so programs that decorate with them run.

ember runs eagerly: ``script`` and ``trace`` return the function or module they are given,
unchanged (no TorchScript compilation; the program computes exactly what the eager code
computes). Once ``ember.compile`` exists they may hand the function to it; until then this
module only keeps decorated code running. ``is_scripting()`` is therefore always False,
``is_tracing()`` True only inside ``trace``'s call of the function, and ``save``/``load``
of TorchScript archives raise NotImplementedError (use ``ember.save`` of a state dict).

>>> @ember.jit.script
... def f(x):
...     return x * 2
>>> f(ember.ones(2))
tensor([2., 2.])
"""
from __future__ import annotations

import builtins
import contextlib
import typing
import warnings
from ember.dispatcher import dtypes

from .futures import Future  # (torch.jit.Future is torch.futures.Future)

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "Final",
           "annotations", "annotate", "is_scripting", "is_tracing", "fork", "wait", "save",
           "load", "export_opnames", "ScriptModule", "ScriptFunction",
           "RecursiveScriptModule", "TracedModule",
           "TopLevelTracedModule", "Attribute", "Future", "interface", "freeze",
           "optimize_for_inference", "script_if_tracing", "script_method", "isinstance",
           "Error", "TracerWarning", "ScriptWarning", "TracingCheckError",
           "optimized_execution", "fuser", "set_fusion_strategy", "enable_onednn_fusion",
           "onednn_fusion_enabled", "strict_fusion", "CompilationUnit"]

#: ``ember.jit.Final[int]`` marks a constant attribute, as ``typing.Final``
Final = typing.Final

_TRACING = [0]


class _Annotations:
    """``ember.jit.annotations``: the typing names TorchScript code imports from it."""
    Any = typing.Any
    Dict = typing.Dict
    List = typing.List
    Optional = typing.Optional
    Tuple = typing.Tuple
    Union = typing.Union
    BroadcastingList1 = typing.List
    BroadcastingList2 = typing.List
    BroadcastingList3 = typing.List


annotations = _Annotations()


class ScriptModule:
    """The type TorchScript modules have in PyTorch. ember never creates one (``script``
    returns the module itself); the name exists for ``isinstance`` checks and
    subclassing in ported code."""


class RecursiveScriptModule(ScriptModule):
    """PyTorch's type of a module compiled by ``script``; ember never creates one (the name
    exists for ``isinstance`` checks in ported code).
    """
    pass


class TracedModule(ScriptModule):
    """PyTorch's type of a module made by ``trace``; ember never creates one (``trace``
    returns the module itself).
    """
    pass


class TopLevelTracedModule(TracedModule):
    """PyTorch's type of the outermost module made by ``trace``; ember never creates one."""
    pass


class ScriptFunction:
    """The type of scripted functions in PyTorch (ember returns the function itself)."""


class CompilationUnit:
    """A TorchScript compilation unit in PyTorch; constructing one raises NotImplementedError
    (ember has no TorchScript compiler).
    """

    def __init__(self, lang=None, _frames_up=0):
        raise NotImplementedError("ember.jit.CompilationUnit: ember has no TorchScript "
                                  "compiler; write the code as Python functions.")


class Error(RuntimeError):
    """The error PyTorch's TorchScript runtime raises (a ``RuntimeError``); kept for
    ``except`` clauses in ported code.
    """
    pass


class TracerWarning(Warning):
    """The warning category of PyTorch's tracer (kept for warning filters in ported code)."""
    pass


class ScriptWarning(Warning):
    """The warning category of TorchScript code (kept for warning filters in ported code)."""
    pass


class TracingCheckError(Exception):
    """The error PyTorch raises when a traced graph does not match its re-run (kept for
    ``except`` clauses; ember's ``trace`` never raises it).
    """
    pass


def is_scripting() -> bool:
    """False: ember never compiles to TorchScript, code always runs as Python."""
    return False


def is_tracing() -> bool:
    """True while ``ember.jit.trace`` runs the traced function on its example inputs."""
    return _TRACING[0] > 0


def _deprecated(name):
    # PyTorch 2.13 deprecates TorchScript the same way, in its words, and attributes the
    # warning to its own module, so the default filters (which show a DeprecationWarning
    # only where __main__ triggers it) keep it quiet
    m = dtypes.module_name
    warnings.warn(f"`{m}.jit.{name}` is deprecated. Please switch to `{m}.compile` or "
                  f"`{m}.export`.", DeprecationWarning, stacklevel=2)


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Return ``obj`` (a function, module or class) unchanged: ember runs it eagerly."""
    _deprecated("script")
    return obj


def script_method(fn):
    """Decorator for ``ScriptModule`` methods; returns ``fn`` unchanged."""
    return fn


def script_if_tracing(fn):
    """Decorator compiling ``fn`` only when first called under tracing in PyTorch; ember
    returns ``fn`` unchanged.
    """
    return fn


def _run_traced(fn, example_inputs, kwargs=None):
    _TRACING[0] += 1
    try:
        if kwargs:
            fn(**kwargs)
        elif builtins.isinstance(example_inputs, tuple):
            fn(*example_inputs)
        elif example_inputs is not None:
            fn(example_inputs)
    finally:
        _TRACING[0] -= 1


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False,
          _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """Run ``func`` once on ``example_inputs`` (as PyTorch's tracer does, so errors show
    up here) and return ``func`` unchanged: ember runs it eagerly afterwards."""
    _deprecated("trace")
    if example_inputs is not None or example_kwarg_inputs is not None:
        _run_traced(func, example_inputs, example_kwarg_inputs)
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """``inputs`` maps method names to example inputs; each method runs once and the
    module comes back unchanged."""
    _deprecated("trace_method")
    if not builtins.isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    for name, example in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            _run_traced(method, None, example)
        else:
            _run_traced(method, example if builtins.isinstance(example, tuple) else (example,))
    return mod


def ignore(drop=False, **kwargs):
    """Decorator leaving a function to Python (it always is in ember)."""
    if callable(drop):
        return drop

    def deco(fn):
        return fn
    return deco


def unused(fn):
    """Decorator for functions TorchScript should not compile (they run as they are)."""
    return fn


def export(fn):
    """Decorator marking a module method as a TorchScript entry point (no effect)."""
    return fn


def interface(obj):
    """Decorator marking a class as a TorchScript interface type; returns ``obj`` unchanged."""
    return obj


def annotate(the_type, the_value):
    """``the_value`` (TorchScript's type hint for an expression)."""
    return the_value


def isinstance(obj, target_type):  # noqa: A001 (PyTorch's name)
    """``builtins.isinstance`` over typing generics (``List[int]``) as far as the origin
    type: ember does not check element types."""
    origin = typing.get_origin(target_type) or target_type
    if origin is typing.Union:
        return any(builtins.isinstance(obj, typing.get_origin(t) or t)
                   for t in typing.get_args(target_type))
    if target_type is typing.Any:
        return True
    return builtins.isinstance(obj, origin)


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` now (ember runs eagerly) and return a finished
    :class:`Future` holding its result or exception."""
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as e:  # the exception is re-raised by wait(), as PyTorch's
        fut.set_exception(e)
    return fut


def wait(future):
    """The value of a :class:`Future` from ``fork``."""
    return future.wait()


def save(m, f, _extra_files=None):
    """Raise NotImplementedError: ember has no TorchScript archives.

    Save the weights with ``ember.save(model.state_dict(), path)`` instead.
    """
    raise NotImplementedError("ember.jit.save(): ember has no TorchScript archives; save the "
                              "weights with ember.save(model.state_dict(), path) and rebuild "
                              "the module in Python.")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Raise NotImplementedError: ember cannot read TorchScript archives.

    Load a state dict with ``ember.load(path)`` into a module built in Python instead.
    """
    raise NotImplementedError("ember.jit.load(): ember cannot run TorchScript archives; load "
                              "a state dict with ember.load(path) into a Python module "
                              "instead.")


def export_opnames(m):
    """Raise NotImplementedError: there is no TorchScript graph to list operators from."""
    raise NotImplementedError("ember.jit.export_opnames(): there is no TorchScript graph "
                              "whose operators could be listed (ember runs eagerly).")


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """The module, unchanged (nothing to freeze without TorchScript)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """The module, unchanged (ember has no TorchScript graph to optimise)."""
    return mod


class Attribute:
    """``ember.jit.Attribute(value, type)``: the value (the type is a TorchScript hint)."""

    def __new__(cls, value, type=None):  # noqa: A002 (PyTorch's name)
        return value


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Context manager toggling TorchScript graph optimisation in PyTorch; a no-op in ember."""
    yield


@contextlib.contextmanager
def fuser(name):
    """Context manager choosing TorchScript's fusion backend in PyTorch; a no-op in ember."""
    yield


@contextlib.contextmanager
def strict_fusion():
    """Context manager asserting that TorchScript fused a region in PyTorch; a no-op in ember."""
    yield


def set_fusion_strategy(strategy):
    """Accept a TorchScript fusion strategy (a list of ``(kind, depth)`` pairs); ember does
    not fuse and returns the strategy as a list.
    """
    return list(strategy)


_ONEDNN = [False]


def enable_onednn_fusion(enabled: bool) -> None:
    """Record whether oneDNN graph fusion is requested (no effect: ember runs eagerly)."""
    _ONEDNN[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """The flag set by :func:`enable_onednn_fusion` (False by default)."""
    return _ONEDNN[0]
