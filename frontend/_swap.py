"""``ember.utils.swap_tensors``."""
from __future__ import annotations

import weakref

from ember.dispatcher.core import TensorBase

__all__ = ["swap_tensors"]

_SKIP = ("__weakref__", "__dict__")


def _slot_names(cls) -> list:
    names = []
    for klass in cls.__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name not in _SKIP and name not in names:
                names.append(name)
    return names


def swap_tensors(t1, t2) -> None:
    """Swap the contents of two tensor objects: ``t1`` gets ``t2``'s class, attributes,
    data and autograd state and the other way round, while each object keeps its identity
    (what holds a reference to ``t1``, an optimizer say, now sees ``t2``'s contents).

    Example:
        >>> t1, t2 = ember.arange(2), ember.arange(3)
        >>> ember.utils.swap_tensors(t1, t2)
        >>> t1, t2
        (tensor([0, 1, 2]), tensor([0, 1]))
    """
    if not isinstance(t1, TensorBase) or not isinstance(t2, TensorBase):
        raise TypeError(f"swap_tensors: expected two tensors, got {type(t1).__name__} and "
                        f"{type(t2).__name__}")
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    slots1, slots2 = _slot_names(type(t1)), _slot_names(type(t2))
    if set(slots1) != set(slots2):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    d1, d2 = getattr(t1, "__dict__", None), getattr(t2, "__dict__", None)
    if d1 is not None and d2 is not None:
        t1.__dict__, t2.__dict__ = d2, d1
    sentinel = object()
    for name in slots1:
        v1, v2 = getattr(t1, name, sentinel), getattr(t2, name, sentinel)
        for t, v in ((t1, v2), (t2, v1)):
            if v is sentinel:
                if hasattr(t, name):
                    delattr(t, name)
            else:
                setattr(t, name, v)
    # the gradient-accumulation nodes of either leaf were made for the other object's
    # contents: later graphs make new ones
    for t in (t1, t2):
        if hasattr(t, "_acc_ref"):
            t._acc_ref = None
