"""View ops: metadata-only, no kernel, shared by every backend.

Each returns a tensor sharing the input's storage and version counter; only shape,
strides and offset change, and ``_base`` names the tensor the view was made from.

The public views are recorded for autograd through the dispatcher's hook
(``grad_mode.HOOKS.view``) when their input requires grad, whoever calls them (the
frontend, composites, gradient formulas). Their kind tells the engine how the gradient
goes back: ``view`` (a reshape), ``permute`` (the inverse permutation), ``expand`` (a
sum) or ``as_view`` (any other view: a ``ViewGrad`` the engine adds into the input's
gradient in place where the view's elements are distinct, else replayed on an index map
and scattered).
"""
from __future__ import annotations

import functools
import operator

from . import core as C
from . import dtypes as D
from . import ops as _ops
from .core import normalize_dim, shape_str, view_of
from .grad_mode import HOOKS, MODE


def _view_op(kind: str, name=None, perm=None):
    """Record ``fn`` for autograd when its input requires grad; mark its result's base.
    ``name``: the node's name (default: the function's), or ``name(x, *args)`` choosing it;
    ``perm(x, *args)`` gives the permutation of ``permute``-kind views."""
    def deco(fn):
        node = name or fn.__name__

        @functools.wraps(fn)
        def op(input, *args, **kwargs):    # (input: PyTorch's keyword for the tensor)
            x = input
            if x.requires_grad and MODE.grad and HOOKS.view is not None:
                ctx = {"perm": perm(x, *args, **kwargs)} if perm is not None else {}
                return HOOKS.view(kind, fn, x, args, kwargs,
                                  node(x, *args) if callable(node) else node, ctx)
            res = fn(x, *args, **kwargs)
            if res is not None and res._storage is x._storage:
                res._base = x if x._base is None else x._base
            return res
        op.raw = fn
        return op
    return deco

__all__ = ["view", "reshape", "transpose", "permute", "expand", "squeeze", "unsqueeze",
           "flatten", "narrow", "select", "unfold", "as_strided", "movedim", "diagonal",
           "unflatten", "infer_shape", "basic_index", "t", "split", "chunk", "unbind",
           "sum_to", "GRADIENTS", "ViewGrad"]


def _ints(shape, op) -> tuple:
    if len(shape) == 1 and type(shape[0]) is tuple and all(type(s) is int for s in shape[0]):
        return shape[0]
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    elif len(shape) == 1 and hasattr(shape[0], "__len__") and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        try:
            out.append(operator.index(s))
        except TypeError:
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element"
                            f" of type {type(s).__name__}") from None
    return tuple(out)


def infer_shape(shape: tuple, n: int, op: str = "view") -> tuple:
    """Resolve a single -1 in ``shape`` so it has ``n`` elements."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {n}")
        shape = tuple(n // known if s == -1 else s for s in shape)
    elif known != n:
        raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {n}")
    return shape


def _view_strides(old_shape, old_stride, new_shape):
    """Strides for viewing (old_shape, old_stride) as new_shape, or None if a copy is needed.

    Port of the classic algorithm: split the old shape into chunks that are contiguous
    among themselves and match new dims against them.
    """
    if C.numel(old_shape) == 0:
        return C.contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1] if old_stride else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


@_view_op("view")
def view(x, *shape):
    """A view of ``x`` with the given shape, sharing its storage.

    One dimension may be -1, inferred from the element count. The view must be expressible
    with strides over ``x``'s memory (a transposed matrix cannot be flattened, for one);
    :func:`ember.reshape` copies in that case instead of raising.

    Args:
        x (Tensor): the tensor to view (``self`` as a method).
        *shape (int or tuple of ints): the new shape.

    Example:
        >>> ember.arange(6).view(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    shape = infer_shape(_ints(shape, "view"), C.numel(x.shape))
    if shape == x.shape:
        return view_of(x, x.shape, x._stride, x._offset)
    stride = (C.contiguous_strides(shape) if C.is_contiguous(x)
              else _view_strides(x.shape, x._stride, shape))
    if stride is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return view_of(x, shape, stride, x._offset)


@_view_op("view", "view")
def reshape(x, *shape):
    """``x``'s elements with a new shape: a view where strides allow one, else a copy.

    One dimension may be -1, inferred from the element count.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        *shape (int or tuple of ints): the new shape.

    Example:
        >>> ember.arange(6).reshape(3, -1)
        tensor([[0, 1],
                [2, 3],
                [4, 5]])
    """
    shape = infer_shape(_ints(shape, "reshape"), C.numel(x.shape), "reshape")
    stride = (C.contiguous_strides(shape) if C.is_contiguous(x)
              else _view_strides(x.shape, x._stride, shape))
    if stride is None:  # a copy only when no view exists
        y = _ops.contiguous(x)
        return view_of(y, shape, C.contiguous_strides(shape), y._offset)
    return view_of(x, shape, stride, x._offset)


@_view_op("as_view", "as_strided")
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with explicit sizes, strides and storage offset.

    Element ``i`` of the view is read from ``storage[offset + sum(i[d] * stride[d])]``;
    elements may overlap. Negative sizes, strides and offsets are refused, as is a view
    that reaches past the end of the storage.

    Args:
        input (Tensor): the input tensor (``self`` as a method).
        size (tuple of ints): the shape of the view.
        stride (tuple of ints): the stride of each dimension, in elements.
        storage_offset (int, optional): the view's offset in the storage, in elements.
            Default: ``input``'s own offset.

    Example:
        >>> ember.arange(4.).as_strided((2, 2), (1, 2))
        tensor([[0., 2.],
                [1., 3.]])
    """
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape ({len(stride)} vs "
                           f"{len(size)})")
    off = input._offset if storage_offset is None else int(storage_offset)
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or off < 0:
        raise RuntimeError("as_strided: negative sizes, strides or offsets are not supported")
    if C.numel(size):
        last = off + sum((n - 1) * s for n, s in zip(size, stride))
        cap = input._storage.nbytes // input.dtype.itemsize
        if last >= cap:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                               f"offset {off} require {last + 1} elements but the storage has "
                               f"only {cap}")
    return view_of(input, size, stride, off)


def _swap(nd, d0, d1):
    perm = list(range(nd))
    if nd:
        a, b = normalize_dim(d0, nd), normalize_dim(d1, nd)
        perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _perm(x, dims):
    nd = len(x.shape)
    return tuple(normalize_dim(d, nd, "permute") for d in _ints(dims, "permute")) if nd else ()


@_view_op("permute", "transpose", perm=lambda x, d0, d1: _swap(len(x.shape), d0, d1))
def transpose(x, dim0, dim1):
    """A view of ``x`` with dimensions ``dim0`` and ``dim1`` swapped.

    ``Tensor.swapaxes`` and ``Tensor.swapdims`` are aliases.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dim0 (int): the first dimension to swap.
        dim1 (int): the second dimension to swap.

    Example:
        >>> ember.tensor([[1, 2, 3], [4, 5, 6]]).transpose(0, 1)
        tensor([[1, 4],
                [2, 5],
                [3, 6]])
    """
    nd = len(x.shape)
    # (in-range int dims, the common case of every gradient formula, checked inline)
    a = dim0 if type(dim0) is int and 0 <= dim0 < nd else normalize_dim(dim0, nd)
    b = dim1 if type(dim1) is int and 0 <= dim1 < nd else normalize_dim(dim1, nd)
    if nd == 0 or a == b:
        return view_of(x, x.shape, x._stride, x._offset)
    if nd == 2:  # (a matrix: the swap of its two dims)
        return view_of(x, (x.shape[1], x.shape[0]), (x._stride[1], x._stride[0]), x._offset)
    shape, stride = list(x.shape), list(x._stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    return view_of(x, tuple(shape), tuple(stride), x._offset)


def t(input):
    """The transpose of a matrix, as a view; 0-D and 1-D tensors come back as they are.

    Shorthand for ``transpose(input, 0, 1)``, for tensors of at most 2 dimensions.

    Args:
        input (Tensor): the input tensor, with at most 2 dimensions.

    Example:
        >>> ember.tensor([[1, 2, 3], [4, 5, 6]]).t()
        tensor([[1, 4],
                [2, 5],
                [3, 6]])
    """
    if len(input.shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{len(input.shape)}D")
    return transpose(input, 0, 1) if len(input.shape) == 2 else view(input, input.shape)


@_view_op("permute", perm=lambda x, *dims: _perm(x, dims))
def permute(x, *dims):
    """A view of ``x`` with its dimensions reordered: dimension ``i`` of the result is
    dimension ``dims[i]`` of ``x``.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        *dims (int or tuple of ints): a permutation of ``x``'s dimensions.

    Example:
        >>> ember.zeros(2, 3, 4).permute(2, 0, 1).size()
        ember.Size([4, 2, 3])
    """
    dims = _ints(dims, "permute")
    nd = len(x.shape)
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(normalize_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return view_of(x, tuple(x.shape[d] for d in dims), tuple(x._stride[d] for d in dims),
                   x._offset)


def movedim(x, source, destination):
    """A view of ``x`` with the dimension(s) ``source`` moved to ``destination``.

    The other dimensions keep their relative order. ``moveaxis`` is an alias.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        source (int or sequence of ints): the dimension(s) to move.
        destination (int or sequence of ints): where each of them goes.

    Example:
        >>> ember.zeros(2, 3, 4).movedim(0, -1).size()
        ember.Size([3, 4, 2])
    """
    nd = len(x.shape)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [normalize_dim(s, nd) for s in src]
    dst = [normalize_dim(d, nd) for d in dst]
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(x, order)


@_view_op("expand")
def expand(x, *sizes):
    """A view of ``x`` with its size-1 dimensions repeated to ``sizes``, without copying.

    -1 keeps a dimension's size; new leading dimensions may be added. Expanded
    dimensions get stride 0, so several elements of the view share one memory location
    (write into a ``clone()`` rather than into the view).

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        *sizes (int or tuple of ints): the expanded size.

    Example:
        >>> ember.tensor([[1], [2]]).expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]])
        >>> ember.tensor([1, 2]).expand(2, -1)
        tensor([[1, 2],
                [1, 2]])
    """
    sizes = _ints(sizes, "expand")
    nd = len(sizes)
    off = nd - len(x.shape)
    if off < 0:
        raise C.expand_rank_error(x, sizes)
    target = tuple(x.shape[i - off] if (s == -1 and i >= off) else s
                   for i, s in enumerate(sizes))
    if any(s < 0 for s in target):
        raise RuntimeError(f"expand(): -1 is not allowed in a leading, non-existing dimension "
                           f"(sizes {list(sizes)})")
    res = C.expand_to(x, target)
    # always a new view, as every view op (autograd records it on its own node)
    return view_of(x, x.shape, x._stride, x._offset) if res is x else res


@_view_op("view", "squeeze")
def squeeze(x, dim=None):
    """A view of ``x`` with dimensions of size 1 removed.

    With ``dim``, only the given dimension(s) are removed, and only those of size 1 (other
    sizes are left alone, without an error).

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dim (int or tuple of ints, optional): the dimension(s) to squeeze; all size-1
            dimensions if None.

    Example:
        >>> x = ember.zeros(2, 1, 3, 1)
        >>> x.squeeze().size()
        ember.Size([2, 3])
        >>> x.squeeze(1).size()
        ember.Size([2, 3, 1])
    """
    nd = len(x.shape)
    if dim is None:
        keep = [i for i in range(nd) if x.shape[i] != 1]
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {normalize_dim(d, nd) for d in dims} if nd else set()
        keep = [i for i in range(nd) if not (i in dims and x.shape[i] == 1)]
    return view_of(x, tuple(x.shape[i] for i in keep), tuple(x._stride[i] for i in keep),
                   x._offset)


@_view_op("view", "unsqueeze")
def unsqueeze(x, dim):
    """A view of ``x`` with a new dimension of size 1 inserted at ``dim``.

    ``dim`` ranges over ``[-x.dim() - 1, x.dim()]``; a negative ``dim`` counts from the
    end of the result's dimensions.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dim (int): the index of the new dimension.

    Example:
        >>> ember.tensor([1, 2, 3]).unsqueeze(0)
        tensor([[1, 2, 3]])
        >>> ember.tensor([1, 2, 3]).unsqueeze(-1)
        tensor([[1],
                [2],
                [3]])
    """
    nd = len(x.shape)
    d = normalize_dim(dim, nd + 1)
    shape, stride = list(x.shape), list(x._stride)
    st = shape[d] * stride[d] if d < nd else 1
    shape.insert(d, 1)
    stride.insert(d, st)
    return view_of(x, tuple(shape), tuple(stride), x._offset)


@_view_op("view", "view")
def flatten(x, start_dim=0, end_dim=-1):
    """``x`` with dimensions ``start_dim`` to ``end_dim`` merged into one.

    A view where strides allow one, else a copy (as :func:`ember.reshape`); a 0-D tensor becomes
    1-D.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        start_dim (int): the first dimension to flatten. Default: 0.
        end_dim (int): the last dimension to flatten. Default: -1.

    Example:
        >>> ember.zeros(2, 3, 4).flatten(1).size()
        ember.Size([2, 12])
    """
    nd = len(x.shape)
    if nd == 0:
        return reshape(x, 1)
    s, e = normalize_dim(start_dim, nd), normalize_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return view_of(x, x.shape, x._stride, x._offset)
    shape = x.shape[:s] + (C.numel(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


@_view_op("view", "view")
def unflatten(x, dim, sizes):
    """A view of ``x`` with dimension ``dim`` expanded into several dimensions of ``sizes``.

    The product of ``sizes`` must equal ``x.size(dim)``; one entry may be -1.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dim (int): the dimension to unflatten.
        sizes (tuple of ints): the new sizes of that dimension.

    Example:
        >>> ember.zeros(2, 12).unflatten(1, (3, -1)).size()
        ember.Size([2, 3, 4])
    """
    nd = len(x.shape)
    d = normalize_dim(dim, nd)
    sizes = infer_shape(tuple(sizes), x.shape[d], "unflatten")
    return view(x, x.shape[:d] + sizes + x.shape[d + 1:])


@_view_op("as_view", "slice")
def narrow(x, dim, start, length):
    """A view of ``x`` restricted to ``length`` elements along ``dim`` from ``start``.

    Equivalent to slicing ``start:start + length`` along ``dim``; a negative ``start``
    counts from the end.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dim (int): the dimension to narrow.
        start (int): the first index kept.
        length (int): the number of elements kept.

    Example:
        >>> ember.arange(10).narrow(0, 2, 3)
        tensor([2, 3, 4])
    """
    nd = len(x.shape)
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, nd)
    size = x.shape[d]
    start = operator.index(start)
    if start < 0:
        start += size
    if start < 0 or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    shape = x.shape[:d] + (length,) + x.shape[d + 1:]
    return view_of(x, shape, x._stride, x._offset + start * x._stride[d])


@_view_op("as_view", "select")
def select(x, dim, index):
    """A view of ``x`` at position ``index`` of dimension ``dim``, which is removed.

    ``x.select(0, i)`` is ``x[i]``; a negative ``index`` counts from the end.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dim (int): the dimension to index.
        index (int): the position along ``dim``.

    Example:
        >>> ember.tensor([[1, 2, 3], [4, 5, 6]]).select(1, 0)
        tensor([1, 4])
    """
    nd = len(x.shape)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, nd)
    size = x.shape[d]
    i = operator.index(index)
    if i < -size or i >= size:
        raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
    if i < 0:
        i += size
    return view_of(x, x.shape[:d] + x.shape[d + 1:], x._stride[:d] + x._stride[d + 1:],
                   x._offset + i * x._stride[d])


@_view_op("as_view")
def unfold(x, dimension, size, step):
    """A view of every window of ``size`` elements along ``dimension``, ``step`` apart.

    ``dimension`` becomes the number of windows, ``(x.size(dimension) - size) // step + 1``,
    and a last dimension of length ``size`` holds each window. Windows may overlap.

    Args:
        x (Tensor): the input tensor (``self`` as a method).
        dimension (int): the dimension to take windows along.
        size (int): the length of each window.
        step (int): the distance between the starts of consecutive windows.

    Example:
        >>> ember.arange(7.).unfold(0, 2, 2)
        tensor([[0., 1.],
                [2., 3.],
                [4., 5.]])
    """
    nd = len(x.shape)
    d = normalize_dim(dimension, nd) if nd else 0
    n = x.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    st = x._stride[d] if nd else 1
    count = (n - size) // step + 1
    shape = x.shape[:d] + (count,) + x.shape[d + 1:] + (size,)
    stride = x._stride[:d] + (st * step,) + x._stride[d + 1:] + (st,)
    return view_of(x, shape, stride, x._offset)


@_view_op("as_view")
def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of a diagonal of ``input`` with respect to ``dim1`` and ``dim2``.

    Both dimensions are removed and the diagonal is appended as the last dimension.
    ``offset`` > 0 takes a diagonal above the main one, < 0 below it.

    Args:
        input (Tensor): the input tensor, with at least 2 dimensions.
        offset (int): which diagonal to take. Default: 0 (the main diagonal).
        dim1 (int): the first dimension of the 2-D sub-arrays. Default: 0.
        dim2 (int): the second dimension of the 2-D sub-arrays. Default: 1.

    Example:
        >>> a = ember.arange(9).view(3, 3)
        >>> a.diagonal()
        tensor([0, 4, 8])
        >>> a.diagonal(1)
        tensor([1, 5])
    """
    nd = len(input.shape)
    a, b = normalize_dim(dim1, nd), normalize_dim(dim2, nd)
    if a == b:
        raise RuntimeError("diagonal dimensions cannot be identical")
    if offset >= 0:
        n = max(min(input.shape[a], input.shape[b] - offset), 0)
        off = input._offset + offset * input._stride[b]
    else:
        n = max(min(input.shape[a] + offset, input.shape[b]), 0)
        off = input._offset - offset * input._stride[a]
    if n == 0:
        off = input._offset
    keep = [i for i in range(nd) if i not in (a, b)]
    shape = tuple(input.shape[i] for i in keep) + (n,)
    stride = tuple(input._stride[i] for i in keep) + (input._stride[a] + input._stride[b],)
    return view_of(input, shape, stride, off)


def split(x, split_size_or_sections, dim=0):
    """``x`` split into views along ``dim``.

    An int gives chunks of that size (the last one smaller if the size does not divide);
    a list gives the size of each chunk, which must sum to ``x.size(dim)``.

    Args:
        x (Tensor): the tensor to split.
        split_size_or_sections (int or list of ints): the chunk size, or the sizes.
        dim (int): the dimension to split along. Default: 0.

    Returns:
        tuple of Tensors: the chunks.

    Example:
        >>> ember.arange(5).split(2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    nd = len(x.shape)
    d = normalize_dim(dim, nd)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0 and n > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [min(s, n - i) for i in range(0, n, s)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    """``x`` split into at most ``chunks`` views of ``ceil(x.size(dim) / chunks)`` elements
    along ``dim`` (the last one smaller, and fewer chunks when the elements run out).

    Args:
        x (Tensor): the tensor to split.
        chunks (int): the number of chunks wanted.
        dim (int): the dimension to split along. Default: 0.

    Example:
        >>> ember.arange(5).chunk(3)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = normalize_dim(dim, len(x.shape))
    n = x.shape[d]
    size = -(-n // chunks) if n else 0
    if size == 0:
        return split(x, [0] * min(chunks, 1) or [0], d) if n == 0 else ()
    return split(x, size, d)


def unbind(input, dim=0):
    """The slices of ``input`` along ``dim``, as a tuple of views without that dimension.

    Args:
        input (Tensor): the tensor to unbind.
        dim (int): the dimension to remove. Default: 0.

    Example:
        >>> ember.tensor([[1, 2, 3], [4, 5, 6]]).unbind(1)
        (tensor([1, 4]), tensor([2, 5]), tensor([3, 6]))
    """
    d = normalize_dim(dim, len(input.shape))
    return tuple(select(input, d, i) for i in range(input.shape[d]))


def _too_many_indices(key, nd: int) -> str:
    # PyTorch's messages for a bare int or slice on a 0-dim tensor (x[0] where x.item() was
    # meant: old code's ``loss.data[0]``), else the general one
    if nd == 0 and isinstance(key, int):
        if key == 0:
            return ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                    "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        return f"index {key} is out of bounds for dimension 0 with size 0"
    if nd == 0 and isinstance(key, slice):
        return "slice() cannot be applied to a 0-dim tensor."
    return f"too many indices for tensor of dimension {nd}"


def _index_node(x, key) -> str:
    """The node name of ``x[key]``, as PyTorch's: its last step, applied one index at a
    time (an int selects, None unsqueezes, a slice that keeps the whole dimension is no
    step, except a bare one: ``x[:]`` slices), and ``alias`` when no step is taken
    (``x[...]``, ``x[:, :]``)."""
    if isinstance(key, slice):
        return "slice"
    name, d = "alias", 0
    for k in key if isinstance(key, tuple) else (key,):
        if k is None:
            name = "unsqueeze"
        elif k is Ellipsis:
            d = len(x.shape) - sum(1 for j in (key if isinstance(key, tuple) else ())
                                   if j is not None and j is not Ellipsis) + d
            continue
        elif isinstance(k, slice):
            whole = k.start in (None, 0) and k.step in (None, 1) and (
                k.stop is None or d < len(x.shape) and k.stop >= x.shape[d])
            if not whole:
                name = "slice"
            d += 1
        else:
            name = "select"
            d += 1
    return name


@_view_op("as_view", _index_node)
def basic_index(x, key):
    """ints, slices (with steps), None and Ellipsis → a view; returns None if ``key``
    holds anything else (advanced indexing)."""
    bare = key
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice) or
                (isinstance(k, int) and not isinstance(k, bool))):
            return None
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    nd = len(x.shape)
    if n_real > nd:
        raise IndexError(_too_many_indices(bare, nd))
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (nd - n_real))
        else:
            expanded.append(k)
    shape, stride, off = [], [], x._offset
    d = 0
    for k in expanded:
        if k is None:
            shape.append(1)
            stride.append(0 if d >= nd else x._stride[d] * x.shape[d])
            continue
        size, st = x.shape[d], x._stride[d]
        if isinstance(k, int):
            i = k
            if i < -size or i >= size:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
            off += (i + size if i < 0 else i) * st
        else:
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(size)
            count = max(0, -(-(stop - start) // step))
            if count:
                off += start * st
            shape.append(count)
            stride.append(st * step)
        d += 1
    shape.extend(x.shape[d:])
    stride.extend(x._stride[d:])
    return view_of(x, tuple(shape), tuple(stride), off)


def sum_to(g, shape):
    """Sum a broadcast gradient back to ``shape`` (recorded, for higher-order gradients)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    dims = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and g.shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        g = _ops.reduce("sum", g, tuple(dims), True)
    return g if g.shape == shape else view(g, shape)


# ---- how each kind of view sends its gradient back (``g``: the view's gradient, ``shape``:
# the input's shape) -------------------------------------------------------------------------
def _grad_view(g, ctx, shape):
    return reshape(g, shape)


def _grad_permute(g, ctx, shape):
    perm = ctx["perm"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return permute(g, inv)


def _grad_expand(g, ctx, shape):
    return sum_to(g, shape)


def non_overlapping(t) -> bool:
    """Whether no two elements of view ``t`` share memory (dims by stride, each stride at
    least the extent of the dims below it)."""
    dims = sorted((s, n) for n, s in zip(t.shape, t._stride) if n > 1)
    extent = 1
    for s, n in dims:
        if s < extent:
            return False
        extent = s * n
    return True


class ViewGrad:
    """The gradient of a view whose elements are distinct (a slice, select, narrow,
    diagonal) with respect to its input, kept as the view's gradient ``g`` and the view
    itself (``replay``), not as a zero tensor of the input's shape: the autograd engine
    adds it into the input's gradient buffer in place, O(view) (an RNN that reads ``x[t]``
    at every step would otherwise add a full-size buffer per step)."""
    __slots__ = ("g", "replay", "shape")

    def __init__(self, g, replay, shape):
        self.g, self.replay, self.shape = g, replay, shape

    def dense(self):
        """The gradient as a tensor of the input's shape (zeros outside the view)."""
        dest = _ops.zeros(self.shape, self.g.dtype, self.g.device)
        _ops.copy_(self.replay(dest), self.g)
        return dest

    def add_into(self, dest):
        """``dest += self``, in place, over the view's elements only."""
        target = self.replay(dest)
        _ops.elementwise("add", target, self.g, inplace=True)


def _grad_as_view(g, ctx, shape):
    """Slices, select, narrow, diagonal (views whose elements are distinct): a ``ViewGrad``
    (O(view) work). Overlapping views (unfold, as_strided) and higher-order gradients:
    replay the view on the map of element positions, then scatter-add the gradient."""
    if not MODE.grad and ctx.get("distinct"):
        return ViewGrad(g, ctx["replay"], tuple(shape))
    n = C.numel(shape)
    index = _ops.arange(0, n, 1, D.int64, g.device)
    positions = ctx["replay"](view_of(index, tuple(shape), C.contiguous_strides(tuple(shape)),
                                      0))
    flat = reshape(g, -1)
    dest = _ops.zeros((n,), g.dtype, g.device)
    return view(_ops.scatter(dest, 0, reshape(positions, -1), flat, reduce="add"), shape)


#: view kind -> gradient (the autograd recorder looks views up here)
GRADIENTS = {"view": _grad_view, "permute": _grad_permute, "expand": _grad_expand,
             "as_view": _grad_as_view}


# ---- complex tensors as pairs of reals --------------------------------------------------------
def _real_view(x):
    res = view_of(x, x.shape + (2,), tuple(2 * s for s in x._stride) + (1,), 2 * x._offset)
    res.dtype = D.real_of(x.dtype)
    return res


@_view_op("as_real", "ViewAsRealBackward0")
def view_as_real(input):
    """A real view of complex ``input``: one more dimension of size 2 at the end holding each
    element's real and imaginary parts (``input``'s memory: PyTorch's layout).

    Example:
        >>> ember.view_as_real(ember.tensor([1 + 2j, 3 - 1j]))
        tensor([[ 1.,  2.],
                [ 3., -1.]])
    """
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _real_view(input)


@_view_op("as_complex", "ViewAsComplexBackward0")
def view_as_complex(input):
    """A complex view of a float16 / float32 / float64 ``input`` whose last dimension has
    size 2 (real and imaginary parts) and stride 1; the other strides and the offset must be
    even.

    Example:
        >>> ember.view_as_complex(ember.tensor([[1., 2.], [3., -1.]]))
        tensor([1.+2.j, 3.-1.j])
    """
    x = input
    if x.dtype not in (D.float16, D.float32, D.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but "
                           f"got a tensor of scalar type: {D.torch_name(x.dtype)}")
    if not x.shape or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in x._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if x._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    res = view_of(x, x.shape[:-1], tuple(s // 2 for s in x._stride[:-1]), x._offset // 2)
    res.dtype = D.complex_of(x.dtype)
    return res


def complex_part(x, k: int):
    """The real (k = 0) or imaginary (k = 1) parts of complex ``x``: a real view (recorded
    for autograd, as ``x.real`` / ``x.imag``)."""
    return select(view_as_real(x), -1, k)


def _grad_as_real(g, ctx, shape):
    return view_as_complex(_ops.contiguous(g))


def _grad_as_complex(g, ctx, shape):
    return view_as_real(g)


GRADIENTS["as_real"] = _grad_as_real
GRADIENTS["as_complex"] = _grad_as_complex
__all__ += ["view_as_real", "view_as_complex", "complex_part"]
