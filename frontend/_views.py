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
    """``input``'s elements with a new shape: a view where strides allow one, else a copy.

    One dimension may be -1, inferred from the element count. Called as
    ``ember.reshape(input, shape)``, or as a method, ``Tensor.reshape(*shape)`` or
    ``Tensor.reshape(shape=...)``.

    Args:
        input (Tensor): the input tensor.
        shape (tuple of ints): the new shape.

    Example:
        >>> ember.reshape(ember.arange(6), (3, -1))
        tensor([[0, 1],
                [2, 3],
                [4, 5]])
        >>> ember.arange(4).reshape(2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    if shape is None:
        return _reshape(input, *args)
    if args:
        raise TypeError("reshape() got multiple values for argument 'shape'")
    return _reshape(input, shape)


def permute(input, *args, dims=None):
    """A view of ``input`` with its dimensions reordered: dimension ``i`` of the result is
    dimension ``dims[i]`` of ``input``.

    Called as ``ember.permute(input, dims)``, or as a method, ``Tensor.permute(*dims)`` or
    ``Tensor.permute(dims=...)``.

    Args:
        input (Tensor): the input tensor.
        dims (tuple of ints): a permutation of ``input``'s dimensions.

    Example:
        >>> ember.permute(ember.zeros(2, 3, 4), (2, 0, 1)).size()
        ember.Size([4, 2, 3])
    """
    if dims is None:
        return _permute(input, *args)
    if args:
        raise TypeError("permute() got multiple values for argument 'dims'")
    return _permute(input, dims)


def transpose(input, dim0, dim1):
    """A view of ``input`` with dimensions ``dim0`` and ``dim1`` swapped.

    ``ember.swapaxes`` and ``ember.swapdims`` are aliases.

    Args:
        input (Tensor): the input tensor.
        dim0 (int): the first dimension to swap.
        dim1 (int): the second dimension to swap.

    Example:
        >>> ember.transpose(ember.tensor([[1, 2, 3], [4, 5, 6]]), 0, 1)
        tensor([[1, 4],
                [2, 5],
                [3, 6]])
    """
    return _transpose(input, dim0, dim1)


def flatten(input, start_dim=0, end_dim=-1):
    """``input`` with dimensions ``start_dim`` to ``end_dim`` merged into one.

    A view where strides allow one, else a copy (as :func:`reshape`); a 0-D tensor becomes
    1-D.

    Args:
        input (Tensor): the input tensor.
        start_dim (int): the first dimension to flatten. Default: 0.
        end_dim (int): the last dimension to flatten. Default: -1.

    Example:
        >>> x = ember.zeros(2, 3, 4)
        >>> ember.flatten(x).size()
        ember.Size([24])
        >>> ember.flatten(x, start_dim=1).size()
        ember.Size([2, 12])
    """
    return _flatten(input, start_dim, end_dim)


def unflatten(input, dim, sizes):
    """A view of ``input`` with dimension ``dim`` expanded into several dimensions of
    ``sizes``.

    The product of ``sizes`` must equal ``input.size(dim)``; one entry may be -1.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to unflatten.
        sizes (tuple of ints): the new sizes of that dimension.

    Example:
        >>> ember.unflatten(ember.zeros(2, 12), 1, (3, 4)).size()
        ember.Size([2, 3, 4])
    """
    return _unflatten(input, dim, sizes)


def squeeze(input, dim=None):
    """A view of ``input`` with dimensions of size 1 removed.

    With ``dim``, only the given dimension(s) are removed, and only those of size 1 (other
    sizes are left alone, without an error).

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to squeeze; all size-1
            dimensions if None.

    Example:
        >>> x = ember.zeros(2, 1, 3, 1)
        >>> ember.squeeze(x).size()
        ember.Size([2, 3])
        >>> ember.squeeze(x, (1, 3)).size()
        ember.Size([2, 3])
        >>> ember.squeeze(x, 0).size()
        ember.Size([2, 1, 3, 1])
    """
    return _squeeze(input, dim)


def unsqueeze(input, dim):
    """A view of ``input`` with a new dimension of size 1 inserted at ``dim``.

    ``dim`` ranges over ``[-input.dim() - 1, input.dim()]``; a negative ``dim`` counts
    from the end of the result's dimensions.

    Args:
        input (Tensor): the input tensor.
        dim (int): the index of the new dimension.

    Example:
        >>> ember.unsqueeze(ember.tensor([1, 2, 3]), 0)
        tensor([[1, 2, 3]])
        >>> ember.unsqueeze(ember.tensor([1, 2, 3]), 1)
        tensor([[1],
                [2],
                [3]])
    """
    return _unsqueeze(input, dim)


def narrow(input, dim, start, length):
    """A view of ``input`` restricted to ``length`` elements along ``dim`` from ``start``.

    Equivalent to slicing ``start:start + length`` along ``dim``; a negative ``start``
    counts from the end.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to narrow.
        start (int or 0-D Tensor): the first index kept.
        length (int): the number of elements kept.

    Example:
        >>> x = ember.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        >>> ember.narrow(x, 0, 0, 2)
        tensor([[1, 2, 3],
                [4, 5, 6]])
        >>> ember.narrow(x, 1, 1, 2)
        tensor([[2, 3],
                [5, 6],
                [8, 9]])
    """
    return _narrow(input, dim, start, length)


def select(input, dim, index):
    """A view of ``input`` at position ``index`` of dimension ``dim``, which is removed.

    ``ember.select(x, 0, i)`` is ``x[i]``; a negative ``index`` counts from the end.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to index.
        index (int): the position along ``dim``.

    Example:
        >>> x = ember.tensor([[1, 2, 3], [4, 5, 6]])
        >>> ember.select(x, 1, 0)
        tensor([1, 4])
        >>> ember.select(x, 0, -1)
        tensor([4, 5, 6])
    """
    return _select(input, dim, index)


def movedim(input, source, destination):
    """A view of ``input`` with the dimension(s) ``source`` moved to ``destination``.

    The other dimensions keep their relative order. ``ember.moveaxis`` is an alias.

    Args:
        input (Tensor): the input tensor.
        source (int or sequence of ints): the dimension(s) to move.
        destination (int or sequence of ints): where each of them goes.

    Example:
        >>> x = ember.zeros(2, 3, 4)
        >>> ember.movedim(x, 0, -1).size()
        ember.Size([3, 4, 2])
        >>> ember.movedim(x, (0, 1), (2, 0)).size()
        ember.Size([3, 4, 2])
    """
    return _movedim(input, source, destination)


def split(tensor, split_size_or_sections, dim=0):
    """``tensor`` split into views along ``dim``.

    An int gives chunks of that size (the last one smaller if the size does not divide);
    a list gives the size of each chunk, which must sum to ``tensor.size(dim)``. The
    method, ``Tensor.split``, names the second argument ``split_size``.

    Args:
        tensor (Tensor): the tensor to split.
        split_size_or_sections (int or list of ints): the chunk size, or the sizes.
        dim (int): the dimension to split along. Default: 0.

    Returns:
        tuple of Tensors: the chunks.

    Example:
        >>> ember.split(ember.arange(5), 2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
        >>> ember.split(ember.arange(5), [1, 4])
        (tensor([0]), tensor([1, 2, 3, 4]))
    """
    return _split(tensor, split_size_or_sections, dim)


def split_method(self, split_size, dim=0):
    """``Tensor.split``: see :func:`split` (the size argument is named ``split_size``).

    Example:
        >>> ember.arange(4).split(split_size=[3, 1])
        (tensor([0, 1, 2]), tensor([3]))
    """
    return _split(self, split_size, dim)


def chunk(input, chunks, dim=0):
    """``input`` split into at most ``chunks`` views along ``dim``.

    Each view has ``ceil(n / chunks)`` elements along ``dim`` (``n = input.size(dim)``),
    the last one fewer; there are fewer than ``chunks`` views when the elements run out,
    as in PyTorch. A dimension of size 0 gives ``chunks`` empty views.

    Args:
        input (Tensor): the tensor to split.
        chunks (int): the number of chunks wanted.
        dim (int): the dimension to split along. Default: 0.

    Example:
        >>> ember.chunk(ember.arange(5), 3)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
        >>> ember.arange(6).chunk(4)
        (tensor([0, 1]), tensor([2, 3]), tensor([4, 5]))
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
    """``x.view(other.size())``: a view of ``x`` with ``other``'s shape.

    Example:
        >>> ember.arange(6).view_as(ember.zeros(2, 3))
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    return V.view(x, other.shape)


def reshape_as(x, other):
    """``x.reshape(other.size())``: ``x`` with ``other``'s shape (a view where possible).

    Example:
        >>> ember.arange(6).reshape_as(ember.zeros(3, 2))
        tensor([[0, 1],
                [2, 3],
                [4, 5]])
    """
    return V.reshape(x, other.shape)


def expand_as(x, other):
    """``x.expand(other.size())``: a view of ``x`` expanded to ``other``'s shape.

    Example:
        >>> ember.tensor([[1], [2]]).expand_as(ember.zeros(2, 3))
        tensor([[1, 1, 1],
                [2, 2, 2]])
    """
    return V.expand(x, other.shape)


def broadcast_to(input, size):
    """A view of ``input`` broadcast to ``size`` (the same as ``input.expand(size)``).

    Args:
        input (Tensor): the input tensor.
        size (tuple of ints): the target shape; -1 keeps a dimension's size.

    Example:
        >>> ember.broadcast_to(ember.tensor([1, 2, 3]), (2, 3))
        tensor([[1, 2, 3],
                [1, 2, 3]])
    """
    return V.expand(input, size)
