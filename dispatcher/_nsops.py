"""The op namespace composites are written against.

A composite that takes ``ops=`` builds its result from these functions. The dispatcher's
own namespace (:class:`DispatcherOps`) runs them directly; the frontend passes a
namespace with the same names whose functions record autograd nodes, so one composite
serves both the plain and the differentiable path.
"""
from __future__ import annotations

from . import _core as C
from . import ops as O
from . import views as V


class DispatcherOps:
    diagonal = staticmethod(V.diagonal)
    permute = staticmethod(V.permute)
    reshape = staticmethod(V.reshape)
    view = staticmethod(V.view)
    expand = staticmethod(C.expand_to)
    unsqueeze = staticmethod(V.unsqueeze)
    squeeze = staticmethod(V.squeeze)
    narrow = staticmethod(V.narrow)
    flatten = staticmethod(V.flatten)
    bmm = staticmethod(O.bmm)
    contiguous = staticmethod(O.contiguous)
    clone = staticmethod(O.clone)
    where = staticmethod(O.where)
    gather = staticmethod(O.gather)

    @staticmethod
    def sum(t, dims):
        return O.reduce("sum", t, dims)

    @staticmethod
    def mm(a, b):
        from .composites import mm
        return mm(a, b)

    @staticmethod
    def cat(tensors, dim):
        from .composites import cat
        return cat(tensors, dim)
