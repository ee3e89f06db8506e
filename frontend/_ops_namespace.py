"""``ember.ops``: operators by namespace (PyTorch's ``torch.ops``): the custom operators
of ``ember.library`` as ``ember.ops.<namespace>.<name>``, and ``ember.ops.aten.<name>``
for ember's own functions."""
from __future__ import annotations

import sys
import types

from ._tensor import Tensor

__all__ = ["OPS", "OpOverload", "OpOverloadPacket", "ops"]

#: "ns::name" -> its operator (``ember.library.CustomOpDef``)
OPS: dict = {}


class OpOverload:
    """One overload of an operator (``ember.ops.mylib.name.default``)."""

    def __init__(self, op, overload):
        self._op = op
        self._overloadname = overload

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __repr__(self):
        return f"{self._op._namespace}.{self._op._name}.{self._overloadname}"

    @property
    def _schema(self):
        return self._op._schema


class OpOverloadPacket:
    """An operator with its overloads (``ember.ops.mylib.name``); calling it calls the
    default one."""

    def __init__(self, op):
        self._op = op
        self._qualified_op_name = f"{op._namespace}::{op._name}"

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "default" or self._op._namespace == "aten":
            return OpOverload(self._op, name)
        raise AttributeError(f"'{self._op._namespace}.{self._op._name}' has no overload "
                             f"{name!r}")

    def overloads(self) -> list:
        """The overload names (``["default"]``)."""
        return ["default"]

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._op._namespace}.{self._op._name}')>"


class _Aten:
    """``ember.ops.aten.<name>``: the ember function of that name as an operator."""

    def __init__(self, name, fn):
        self._namespace, self._name, self._fn = "aten", name, fn
        self._schema = None

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


class _OpNamespace(types.ModuleType):
    """``ember.ops.<namespace>``."""

    def __init__(self, name):
        super().__init__(f"ember.ops.{name}")
        self._ns = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = OPS.get(f"{self._ns}::{name}")
        if op is None and self._ns == "aten":
            ember = sys.modules["ember"]
            fn = getattr(ember, name, None) or getattr(ember.nn.functional, name, None) or \
                getattr(Tensor, name, None)
            if fn is not None:
                return OpOverloadPacket(_Aten(name, fn))
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute "
                                 f"'{name}'")
        return OpOverloadPacket(op)


class _Ops(types.ModuleType):
    """``ember.ops``: the operators by namespace (``ember.ops.mylib.name``,
    ``ember.ops.aten.add``)."""

    def __init__(self):
        super().__init__("ember.ops")
        self._namespaces: dict = {}

    def __getattr__(self, name):
        if name.startswith("_"):     # (namespaces are names; tools probe private ones)
            raise AttributeError(name)
        ns = self._namespaces.get(name)
        if ns is None:
            ns = self._namespaces[name] = _OpNamespace(name)
        return ns

    def load_library(self, path):
        """Not supported: ember cannot load PyTorch C++ operator libraries."""
        raise NotImplementedError(f"ember.ops.load_library({path!r}): ember cannot load "
                                  f"C++ operator libraries built for PyTorch")


ops = _Ops()
