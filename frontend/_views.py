"""View functions and methods, PyTorch's forms of the dispatcher's views.

The dispatcher's views record themselves for autograd (see ``ember.dispatcher.views``);
these add only the argument forms PyTorch accepts (``view_as``, ``expand_as``,
``broadcast_to``).
"""
from __future__ import annotations

from ember.dispatcher import core as C
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
unbind = V.unbind


def chunk(x, chunks, dim=0):
    """Views of ``ceil(n / chunks)`` elements along ``dim`` (fewer views when the elements
    run out, as PyTorch); a dim of size 0 gives ``chunks`` empty views.

    >>> [tuple(c.shape) for c in ember.empty(0, 3).chunk(3)]
    [(0, 3), (0, 3), (0, 3)]
    """
    if not x.shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = C.normalize_dim(dim, len(x.shape))
    n = x.shape[d]
    if n == 0:
        return V.split(x, [0] * chunks, d)
    return V.split(x, -(-n // chunks), d)


def view_as(x, other):
    return V.view(x, other.shape)


def reshape_as(x, other):
    return V.reshape(x, other.shape)


def expand_as(x, other):
    return V.expand(x, other.shape)


def broadcast_to(x, size):
    return V.expand(x, size)
