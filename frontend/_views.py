"""View functions with autograd: the dispatcher's metadata-only views, recorded.

``view``-like ops send the gradient back with a reshape, transposes with the inverse
permutation, broadcasts with a sum, and every other view (slices, select, narrow,
unfold, diagonal, as_strided) by replaying itself on an index map and scattering.
"""
from __future__ import annotations

from ember.dispatcher import _core as C
from ember.dispatcher import views as V

from .autograd import _record as R


def _shape_args(shape):
    if len(shape) == 1 and not isinstance(shape[0], int):
        return tuple(shape[0])
    return tuple(shape)


def view(x, *shape):
    return R.view("view", x, _shape_args(shape), fn=V.view)


def reshape(x, *shape):
    return R.view("view", x, _shape_args(shape), fn=V.reshape)


def view_as(x, other):
    return view(x, other.shape)


def reshape_as(x, other):
    return reshape(x, other.shape)


def flatten(x, start_dim=0, end_dim=-1):
    return R.view("view", x, start_dim, end_dim, fn=V.flatten)


def unflatten(x, dim, sizes):
    return R.view("view", x, dim, sizes, fn=V.unflatten)


def squeeze(x, dim=None):
    return R.view("view", x, dim, fn=V.squeeze, name="squeeze")


def unsqueeze(x, dim):
    return R.view("view", x, dim, fn=V.unsqueeze, name="unsqueeze")


def permute(x, *dims):
    dims = _shape_args(dims)
    nd = len(x.shape)
    perm = tuple(C.normalize_dim(d, nd, "permute") for d in dims) if nd else ()
    return R.view("permute", x, perm, fn=V.permute, perm=perm)


def transpose(x, dim0, dim1):
    nd = len(x.shape)
    if nd == 0:
        return R.view("view", x, (), fn=V.view)
    perm = list(range(nd))
    a, b = C.normalize_dim(dim0, nd), C.normalize_dim(dim1, nd)
    perm[a], perm[b] = perm[b], perm[a]
    return R.view("permute", x, tuple(perm), fn=V.permute, perm=tuple(perm), name="transpose")


def t(x):
    if len(x.shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{len(x.shape)}D")
    return transpose(x, 0, 1) if len(x.shape) == 2 else x


def movedim(x, source, destination):
    nd = len(x.shape)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [C.normalize_dim(s, nd) for s in src]
    dst = [C.normalize_dim(d, nd) for d in dst]
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    return permute(x, [o if o is not None else next(rest) for o in order])


def expand(x, *sizes):
    sizes = _shape_args(sizes)
    return R.view("expand", x, *sizes, fn=V.expand)


def expand_as(x, other):
    return R.expand(x, other.shape)


def broadcast_to(x, size):
    return expand(x, size)


def _as_view(fn, name=None):
    import inspect
    sig = inspect.signature(fn)

    def wrapped(x, *args, **kwargs):
        if kwargs:  # replaying needs positional arguments
            bound = sig.bind(x, *args, **kwargs)
            bound.apply_defaults()
            args = bound.args[1:]
        return R.view("as_view", x, *args, fn=fn, name=name)
    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


narrow = _as_view(V.narrow, "slice")
select = _as_view(V.select, "select")
unfold = _as_view(V.unfold, "unfold")
diagonal = _as_view(V.diagonal, "diagonal")
_basic_index = _as_view(V.basic_index, "slice")
_select_index = _as_view(V.basic_index, "select")


def basic_index(x, key):
    """``x[key]`` for ints/slices/None/...; named like PyTorch's node for the key."""
    if isinstance(key, int) and not isinstance(key, bool):
        return _select_index(x, key)
    return _basic_index(x, key)


def as_strided(x, size, stride, storage_offset=None):
    if x.requires_grad and not C.is_contiguous(x):
        raise NotImplementedError("as_strided() on a non-contiguous tensor that requires grad "
                                  "is not supported yet; call .contiguous() first")
    if storage_offset is not None:
        # replaying needs offsets relative to the input's own start
        rel = storage_offset - x._offset
        return R.view("as_view", x, size, stride, rel, fn=_as_strided_rel)
    return R.view("as_view", x, size, stride, fn=_as_strided_rel)


def _as_strided_rel(x, size, stride, rel=0):
    return V.as_strided(x, size, stride, x._offset + rel)


_as_strided_rel.__name__ = "as_strided"


def split(x, split_size_or_sections, dim=0):
    d = C.normalize_dim(dim, len(x.shape))
    parts = V.split(x, split_size_or_sections, d)
    out, start = [], 0
    for p in parts:
        n = p.shape[d]
        out.append(narrow(x, d, start, n))
        start += n
    return tuple(out)


def chunk(x, chunks, dim=0):
    d = C.normalize_dim(dim, len(x.shape))
    parts = V.chunk(x, chunks, d)
    return split(x, [p.shape[d] for p in parts], d) if parts else ()


def unbind(x, dim=0):
    d = C.normalize_dim(dim, len(x.shape))
    return tuple(select(x, d, i) for i in range(x.shape[d]))
