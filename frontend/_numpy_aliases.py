"""NumPy's argument names where PyTorch accepts them.

PyTorch's argument parser takes ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` in
every natively bound function and Tensor method: ``x.mean(axis=0)``, ``torch.cat(ts,
axis=1)``, ``x.sum(axis=-1, keepdims=True)``, ``torch.linalg.vector_norm(x, axis=0)``.
Its Python-level functions (``split``, ``norm``, ``unique``, ``unique_consecutive``,
``Tensor.unflatten``, most of ``nn.functional``) do not, and neither do ember's here.
Each public function with a ``dim`` or ``keepdim`` parameter is wrapped once, when ember
is imported; a call without the NumPy names pays one dictionary test.
"""
from __future__ import annotations

import functools
import inspect
import sys

__all__ = ["install"]

#: NumPy's name -> PyTorch's, as PyTorch's argument parser maps them
ALIASES = {"axis": "dim", "keepdims": "keepdim"}

#: functions that are Python-level in PyTorch, and so take no NumPy names there either
_PYTHON_LEVEL = frozenset({"split", "norm", "unique", "unique_consecutive", "unflatten"})

#: hot accessors whose alias form nobody writes (``x.size(axis=0)``): left unwrapped
_SKIP = frozenset({"size", "stride"})


def _rename(name, kwargs):
    kwargs = dict(kwargs)
    for numpy_name, torch_name in ALIASES.items():
        if numpy_name in kwargs:
            if torch_name in kwargs:  # PyTorch's parser rejects the pair the same way
                raise TypeError(f"{name}() got an unexpected keyword argument "
                                f"'{numpy_name}'")
            kwargs[torch_name] = kwargs.pop(numpy_name)
    return kwargs


def _wrap(name, fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs and ("axis" in kwargs or "keepdims" in kwargs):
            kwargs = _rename(name, kwargs)
        return fn(*args, **kwargs)
    call.__numpy_aliases__ = True
    return call


def _takes_dim(fn) -> bool:
    if isinstance(fn, type) or not callable(fn) or getattr(fn, "__numpy_aliases__", False):
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return ("dim" in params or "keepdim" in params) and \
        not any(p.kind is p.VAR_KEYWORD for p in params.values())


def install(spaces, Tensor) -> None:
    """Wrap every public function of ``spaces`` (modules) and every public method of
    ``Tensor`` that has a ``dim`` or ``keepdim`` parameter, so that ``axis=`` and
    ``keepdims=`` reach it as PyTorch's parser passes them; aliases share one wrapper."""
    wrapped: dict = {}  # id(original) -> (original, wrapper)
    for space in (*spaces, Tensor):
        for key, value in list(vars(space).items()):
            if key.startswith("_") or key in _PYTHON_LEVEL or key in _SKIP:
                continue
            if isinstance(value, (staticmethod, classmethod, property)):
                continue
            hit = wrapped.get(id(value))
            if hit is None:
                if not _takes_dim(value):
                    continue
                hit = wrapped[id(value)] = (value, _wrap(key, value))
            if hit[0] is value:
                setattr(space, key, hit[1])
                _locate(hit[1], space, key)


def _locate(fn, space, key) -> None:
    """Name the wrapper after the first public place it is bound to, unless its module and
    qualified name already lead to it: pickle (a ``partial(torch.mean, dim=1)`` sent to a
    DataLoader worker) and documentation tools look functions up that way, and the
    wrapped function's names lead to the unwrapped function."""
    obj = sys.modules.get(fn.__module__ or "")
    for part in fn.__qualname__.split("."):
        obj = getattr(obj, part, None)
    if obj is fn:
        return
    if isinstance(space, type):
        fn.__module__, fn.__qualname__ = space.__module__, f"{space.__name__}.{key}"
    else:
        fn.__module__, fn.__qualname__ = space.__name__, key
