"""View functions and methods, PyTorch's forms of the dispatcher's views.

The dispatcher's views record themselves for autograd (see ``ember.dispatcher.views``);
these add only the argument forms PyTorch accepts (``view_as``, ``expand_as``,
``broadcast_to``).
"""
from __future__ import annotations

from ember.dispatcher import views as V

__all__ = ["view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze",
           "unsqueeze", "permute", "transpose", "t", "movedim", "expand", "expand_as",
           "broadcast_to", "narrow", "select", "unfold", "diagonal", "basic_index",
           "as_strided", "split", "chunk", "unbind"]

view = V.view
reshape = V.reshape
flatten = V.flatten
unflatten = V.unflatten
squeeze = V.squeeze
unsqueeze = V.unsqueeze
permute = V.permute
transpose = V.transpose
t = V.t
movedim = V.movedim
expand = V.expand
narrow = V.narrow
select = V.select
unfold = V.unfold
diagonal = V.diagonal
basic_index = V.basic_index
as_strided = V.as_strided
split = V.split
chunk = V.chunk
unbind = V.unbind


def view_as(x, other):
    return V.view(x, other.shape)


def reshape_as(x, other):
    return V.reshape(x, other.shape)


def expand_as(x, other):
    return V.expand(x, other.shape)


def broadcast_to(x, size):
    return V.expand(x, size)
