"""Docstrings that follow from other docstrings, as PyTorch words them.

PyTorch documents ``Tensor.abs`` as "See :func:`torch.abs`" and ``Tensor.abs_`` as
"In-place version of :meth:`~Tensor.abs`"; ember's method and in-place forms are made
from the op table or shared with the functions, so :func:`fill` gives each one without a
docstring of its own that sentence, once every namespace is built (``ember/__init__``
calls it last). A form whose base has no docstring stays without one: the documentation
test (``tests/core/test_api_docs.py``) counts it.
"""
from __future__ import annotations

import sys
import types

__all__ = ["fill"]


def _has_doc(obj) -> bool:
    doc = getattr(obj, "__doc__", None)
    return bool(doc and doc.strip())


def _set_doc(owner, name: str, fn, doc: str) -> None:
    """Give ``owner.name`` (a Python function) ``doc``; a function shared with another name
    gets a copy, so the other name keeps its own docstring."""
    if not isinstance(fn, types.FunctionType):
        return
    if fn.__name__ != name:
        # (an alias: ``Tensor.arcsin_`` is ``asin_``'s function; give it its own copy)
        fn = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__,
                                fn.__closure__)
        fn.__kwdefaults__ = getattr(owner, name).__kwdefaults__
        fn.__qualname__ = name
        setattr(owner, name, fn)
    fn.__doc__ = doc


def _findable(fn) -> bool:
    """Whether ``fn.__module__`` + ``fn.__qualname__`` leads back to ``fn``."""
    obj = sys.modules.get(fn.__module__ or "")
    for part in fn.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


def _place(fn, module: str, qualname: str) -> None:
    """Give a function made at import time (by ``exec``, a closure, a lambda, or under
    another name) the module and qualified name it is public under, so that documentation
    tools find it there."""
    if isinstance(fn, types.FunctionType) and not _findable(fn):
        fn.__module__, fn.__qualname__ = module, qualname


def _place_all(ember, tensor_cls) -> None:
    """Place every public function of ``ember`` and method of ``tensor_cls`` that its
    names do not lead back to (see :func:`_place`)."""
    names = vars(ember)
    for name in dir(ember):
        if not name.startswith("_"):
            _place(names.get(name), "ember", name)
    for name, fn in list(vars(tensor_cls).items()):
        if not name.startswith("_"):
            _place(fn, tensor_cls.__module__, f"{tensor_cls.__name__}.{name}")


def fill(ember, tensor_cls) -> int:
    """Fill the derived docstrings of ``ember``'s functions and ``tensor_cls``'s methods;
    returns how many it filled."""
    filled = 0
    # (the module's own names: getattr would ask ember's module __getattr__, once defined,
    # about missing ones, which loads the backend plugins: a second call took 0.2 s)
    names = vars(ember)
    _place_all(ember, tensor_cls)
    # ember.abs_ (PyTorch has some in-place forms at the top level too)
    for name in dir(ember):
        if name.startswith("_") or not name.endswith("_") or name.endswith("__"):
            continue
        fn, base = names.get(name), names.get(name[:-1])
        if isinstance(fn, types.FunctionType) and not _has_doc(fn) and _has_doc(base):
            _set_doc(ember, name, fn, f"In-place version of :func:`ember.{name[:-1]}`.")
            filled += 1
    for name in dir(tensor_cls):
        if name.startswith("_"):
            continue
        fn = tensor_cls.__dict__.get(name)
        if not isinstance(fn, types.FunctionType) or _has_doc(fn):
            continue
        base = name[:-1] if name.endswith("_") else None
        if base and _has_doc(getattr(tensor_cls, base, None)):
            doc = f"In-place version of :meth:`ember.Tensor.{base}`."
        elif base and _has_doc(names.get(base)):
            doc = f"In-place version of :func:`ember.{base}`."
        elif _has_doc(names.get(name)):
            doc = f"See :func:`ember.{name}`."
        else:
            continue
        _set_doc(tensor_cls, name, fn, doc)
        filled += 1
    _place_all(ember, tensor_cls)   # (the copies made for aliases, and what they displaced)
    return filled
