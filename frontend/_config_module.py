"""Settings modules as PyTorch's (``torch._dynamo.config``, ``torch._inductor.config``):
reading or assigning a name the module does not define raises ``AttributeError`` (a typo
must not pass silently), and ``patch`` sets some for a ``with`` block or a decorated call.

A settings module defines its names as globals and ends with ``install(__name__)``.
Sub-namespaces (``triton.cudagraphs``) are :class:`Section` objects.
"""
from __future__ import annotations

import __future__
import contextlib
import sys
import types

__all__ = ["Section", "install"]


def _missing(where: str, name: str) -> AttributeError:
    return AttributeError(f"{where}.{name} does not exist")


class Section:
    """A namespace of settings inside a settings module (``config.triton``)."""

    def __init__(self, where: str, **defaults):
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_values", dict(defaults))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise _missing(object.__getattribute__(self, "_where"), name)

    def __setattr__(self, name, value):
        if name not in self._values:
            raise _missing(self._where, name)
        self._values[name] = value

    def __dir__(self):
        return sorted(self._values)

    def __repr__(self):
        return f"<settings {self._where}: {self._values!r}>"


def _split(module, key: str):
    """(the object holding ``key``, its last part); a dotted key names a section."""
    where = module.__name__
    obj = module
    *path, last = key.split(".")
    for part in path:
        sub = getattr(obj, part, None) if part in _names(obj) else None
        if not isinstance(sub, Section):
            raise _missing(where, key)
        obj = sub
    if last not in _names(obj):
        raise _missing(where, key)
    return obj, last


def _names(obj) -> set:
    """The settings ``obj`` defines (a module's: its public globals that are values)."""
    if isinstance(obj, Section):
        return set(object.__getattribute__(obj, "_values"))
    return {n for n, v in vars(obj).items() if not n.startswith("_") and not callable(v)
            and not isinstance(v, (types.ModuleType, __future__._Feature))}


class _Module(types.ModuleType):
    def __getattr__(self, name):
        raise _missing(self.__name__, name)

    def __setattr__(self, name, value):
        if name.startswith("_") or name in _names(self):
            super().__setattr__(name, value)
            return
        raise _missing(self.__name__, name)

    def patch(self, arg1=None, arg2=None, **changes):
        """Set settings for a ``with`` block or a decorated function's calls, as PyTorch's
        ``config.patch``: ``patch("key", value)``, ``patch({"key": value})`` or
        ``patch(key=value)``; a dotted key names a section (``"triton.cudagraphs"``). An
        unknown key raises ``AttributeError`` here, before anything is set."""
        if isinstance(arg1, str):
            changes = {arg1: arg2, **changes}
        elif isinstance(arg1, dict):
            changes = {**arg1, **changes}
        elif arg1 is not None:
            raise TypeError(f"{self.__name__}.patch() takes a key and a value, a dict, or "
                            f"keyword arguments, not {type(arg1).__name__}")
        targets = [(_split(self, k), v) for k, v in changes.items()]

        @contextlib.contextmanager
        def patched():
            saved = [(obj, last, getattr(obj, last)) for (obj, last), _ in targets]
            try:
                for (obj, last), v in targets:
                    setattr(obj, last, v)
                yield
            finally:
                for obj, last, old in reversed(saved):
                    setattr(obj, last, old)
        return patched()

    def get_config_copy(self) -> dict:
        """Every setting's value, sections as dotted keys."""
        out = {}
        for n in sorted(_names(self)):
            v = getattr(self, n)
            if isinstance(v, Section):
                out.update({f"{n}.{k}": getattr(v, k) for k in _names(v)})
            else:
                out[n] = v
        return out


def install(name: str) -> None:
    """Make the module ``name`` a settings module (call it last in that module)."""
    sys.modules[name].__class__ = _Module
