"""View and stride logic as pure metadata, checked against NumPy's views (hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember  # noqa: F401  (registers the Tensor factory)
from ember.dispatcher import core as C, dtypes as D, views as V
from ember.dispatcher.device import to_device


class _FakeStorage:
    def __init__(self, nbytes):
        self.nbytes = nbytes


def _meta_like(arr):
    """A tensor whose metadata mirrors the contiguous array ``arr`` (no data needed)."""
    st_ = C.contiguous_strides(arr.shape)
    return C.new_tensor(_FakeStorage(arr.size * 4), tuple(arr.shape), st_, 0, D.float32,
                        to_device("cpu"), [0])


def _np_meta(base, view):
    off = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4
    return tuple(view.shape), tuple(s // 4 for s in view.strides), off


def _ours(t):
    return tuple(t.shape), tuple(t._stride), t._offset


def _same(base, view, t):
    np_shape, np_strides, np_off = _np_meta(base, view)
    assert tuple(t.shape) == np_shape
    if view.size:
        # size-1 dims may carry any stride; compare where it matters
        for n, a, b in zip(np_shape, np_strides, t._stride):
            if n > 1:
                assert a == b
        assert t._offset == np_off


shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


@given(shapes, st.data())
@settings(max_examples=150, deadline=None)
def test_permute_transpose_match_numpy(shape, data):
    base = np.zeros(shape, np.float32)
    t = _meta_like(base)
    perm = data.draw(st.permutations(range(len(shape))))
    _same(base, base.transpose(perm), V.permute(t, perm))
    a = data.draw(st.integers(-len(shape), len(shape) - 1))
    b = data.draw(st.integers(-len(shape), len(shape) - 1))
    _same(base, np.swapaxes(base, a, b), V.transpose(t, a, b))


def _slice(n):
    return st.builds(slice, st.one_of(st.none(), st.integers(-n - 2, n + 2)),
                     st.one_of(st.none(), st.integers(-n - 2, n + 2)),
                     st.one_of(st.none(), st.integers(1, 3)))


@given(shapes, st.data())
@settings(max_examples=200, deadline=None)
def test_basic_indexing_matches_numpy(shape, data):
    base = np.zeros(shape, np.float32)
    t = _meta_like(base)
    key = []
    for n in shape:
        kind = data.draw(st.sampled_from(["slice", "int", "none", "skip"]))
        if kind == "slice":
            key.append(data.draw(_slice(n)))
        elif kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "none":
            key.append(None)
            key.append(data.draw(_slice(n)))
        else:
            break
    if data.draw(st.booleans()):
        full = sum(k is not None for k in key) == len(shape)
        # an Ellipsis anywhere spans zero dims only when the key already covers every dim
        key.insert(data.draw(st.integers(0, len(key))) if full else len(key), Ellipsis)
    key = tuple(key)
    has_ellipsis = any(k is Ellipsis for k in key)
    view = base[key] if has_ellipsis else base[key + (Ellipsis,)]  # always a view
    _same(base, view, V.basic_index(t, key))


@given(shapes, st.data())
@settings(max_examples=150, deadline=None)
def test_view_of_transposed_matches_numpy_or_refuses(shape, data):
    base = np.zeros(shape, np.float32)
    t = _meta_like(base)
    perm = data.draw(st.permutations(range(len(shape))))
    bv, tv = base.transpose(perm), V.permute(t, perm)
    n = bv.size
    # a random factorisation of n as the new shape
    new, rest = [], n
    for f in (2, 3, 5):
        while rest % f == 0 and data.draw(st.booleans()):
            new.append(f)
            rest //= f
    new.append(rest)
    new = tuple(new)
    try:
        r = bv.view()
        r.shape = new  # NumPy raises when a copy would be needed
        expected = r
    except AttributeError:
        expected = None
    if expected is None:
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            V.view(tv, new)
    else:
        _same(base, expected, V.view(tv, new))


@given(shapes, st.data())
@settings(max_examples=100, deadline=None)
def test_expand_squeeze_unsqueeze_unfold(shape, data):
    base = np.zeros(shape, np.float32)
    t = _meta_like(base)
    d = data.draw(st.integers(-len(shape) - 1, len(shape)))
    _same(base, np.expand_dims(base, d), V.unsqueeze(t, d))
    ones = tuple(1 if data.draw(st.booleans()) else n for n in shape)
    b1 = np.zeros(ones, np.float32)
    t1 = _meta_like(b1)
    target = tuple(max(a, b) for a, b in zip(ones, shape))
    got = C.expand_to(t1, target)
    assert got.shape == target
    for i, (n, tg) in enumerate(zip(ones, target)):
        if n == 1 and tg > 1:
            assert got._stride[i] == 0
    _same(b1, np.squeeze(b1), V.squeeze(t1))
    dim = data.draw(st.integers(0, len(shape) - 1))
    size = data.draw(st.integers(1, shape[dim]))
    step = data.draw(st.integers(1, 3))
    win = np.lib.stride_tricks.sliding_window_view(base, size, axis=dim)[
        tuple(slice(None, None, step) if i == dim else slice(None) for i in range(len(shape)))]
    _same(base, win, V.unfold(t, dim, size, step))


def test_view_errors_match_pytorch_wording():
    t = _meta_like(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        V.view(t, 4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        V.view(t, -1, -1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        V.transpose(t, 0, 2)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        V.select(t, 1, 3)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        V.expand(t, 3, 3)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        V.basic_index(t, (0, 0, 0))
    with pytest.raises(RuntimeError, match="require 7 elements but the storage has only 6"):
        V.as_strided(t, (7,), (1,))


def test_broadcast_shapes_error():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        C.broadcast_shapes((2, 3), (2, 4))
