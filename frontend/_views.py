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
t = V.t
expand = V.expand
unfold = V.unfold
diagonal = V.diagonal
basic_index = V.basic_index
as_strided = V.as_strided
unbind = V.unbind

# PyTorch's parameter names (``input=``, ``dims=``, ``shape=``, ``tensor=`` work as keywords);
# positional calls go straight through to the dispatcher's views.
_reshape, _permute, _transpose = V.reshape, V.permute, V.transpose
_flatten, _unflatten, _squeeze, _unsqueeze = V.flatten, V.unflatten, V.squeeze, V.unsqueeze
_narrow, _select, _movedim, _split = V.narrow, V.select, V.movedim, V.split


def reshape(input, *args, shape=None):
    """``torch.reshape(input, shape)`` and ``Tensor.reshape(*shape)`` / ``(shape=...)``."""
    if shape is None:
        return _reshape(input, *args)
    if args:
        raise TypeError("reshape() got multiple values for argument 'shape'")
    return _reshape(input, shape)


def permute(input, *args, dims=None):
    """``torch.permute(input, dims)`` and ``Tensor.permute(*dims)`` / ``(dims=...)``."""
    if dims is None:
        return _permute(input, *args)
    if args:
        raise TypeError("permute() got multiple values for argument 'dims'")
    return _permute(input, dims)


def transpose(input, dim0, dim1):
    return _transpose(input, dim0, dim1)


def flatten(input, start_dim=0, end_dim=-1):
    return _flatten(input, start_dim, end_dim)


def unflatten(input, dim, sizes):
    return _unflatten(input, dim, sizes)


def squeeze(input, dim=None):
    return _squeeze(input, dim)


def unsqueeze(input, dim):
    return _unsqueeze(input, dim)


def narrow(input, dim, start, length):
    return _narrow(input, dim, start, length)


def select(input, dim, index):
    return _select(input, dim, index)


def movedim(input, source, destination):
    return _movedim(input, source, destination)


def split(tensor, split_size_or_sections, dim=0):
    """``torch.split``; the method ``Tensor.split`` names its size ``split_size``."""
    return _split(tensor, split_size_or_sections, dim)


def split_method(self, split_size, dim=0):
    return _split(self, split_size, dim)


def chunk(input, chunks, dim=0):
    """Views of ``ceil(n / chunks)`` elements along ``dim`` (fewer views when the elements
    run out, as PyTorch); a dim of size 0 gives ``chunks`` empty views.

    >>> [tuple(c.shape) for c in ember.empty(0, 3).chunk(3)]
    [(0, 3), (0, 3), (0, 3)]
    """
    x = input
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
