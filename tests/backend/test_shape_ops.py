"""Joining, splitting, reordering and view ops on real data, against NumPy.

Views must share memory with their base: writing through a view changes the base.
"""
from functools import partial

import numpy as np
import pytest
import torch

import ember
import helpers
from conftest import N, T
from helpers import layouts, other_device, tdt

check = partial(helpers.check, tols=(1e-6, 0))

DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int32,
          ember.int64, ember.uint8, ember.int8, ember.bool]


def data(shape, dtype):
    """Distinct, exactly representable values (bool: a pattern)."""
    a = np.arange(int(np.prod(shape))).reshape(shape)
    if dtype is ember.bool:
        return a % 3 == 1
    if dtype in (ember.uint8, ember.int8):
        return a % 100
    return a.astype(np.float64) if dtype.is_floating_point else a


# ---------------------------------------------------------------------------------------
# cat / stack
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_cat(device, dtype):
    a, b, c = data((2, 3, 4), dtype), data((2, 1, 4), dtype), data((2, 3, 4), dtype)
    for ta in layouts(a, device, dtype):
        for tc in layouts(c, device, dtype):
            check(ember.cat([ta, tc]), np.concatenate([a, c]), dtype)
            check(ember.cat((ta, tc), dim=2), np.concatenate([a, c], 2), dtype)
            check(ember.cat([ta, tc, ta], -1), np.concatenate([a, c, a], -1), dtype)
        check(ember.cat([ta, T(b, device, dtype)], 1), np.concatenate([a, b], 1), dtype)
    check(ember.cat([T(a, device, dtype)]), a, dtype)
    check(ember.concat([T(a, device, dtype), T(a[:0], device, dtype)]), a, dtype)


def test_cat_promotes_dtypes_like_pytorch(device):
    pairs = [(ember.int32, ember.float32), (ember.uint8, ember.int8), (ember.bool, ember.int64),
             (ember.float16, ember.bfloat16), (ember.int64, ember.float64)]
    for da, db in pairs:
        a, b = T([1, 0], device, da), T([1, 1], device, db)
        r = ember.cat([a, b])
        want = torch.cat([torch.tensor([1, 0], dtype=tdt(da)),
                          torch.tensor([1, 1], dtype=tdt(db))]).dtype
        assert r.dtype.name == str(want).replace("torch.", ""), (da, db)
        check(r, [1, 0, 1, 1])
    r = ember.cat([T([1, 2], device, ember.int32), T([1.5], device, ember.float32)])
    check(r, [1.0, 2.0, 1.5], ember.float32)


def test_cat_legacy_empty_and_out(device):
    a = data((2, 3), ember.float32)
    # 1-D empty tensors are skipped whatever the other shapes
    check(ember.cat([T(a, device), T(np.zeros(0), device)]), a)
    check(ember.cat([T(np.zeros(0), device), T(np.zeros(0), device)]), np.zeros(0))
    out = ember.empty((4, 3), dtype=ember.float64, device=device)
    r = ember.cat([T(a, device), T(a, device)], out=out)
    assert r is out
    check(out, np.concatenate([a, a]))


def test_cat_errors(device):
    a, b = T(np.zeros((2, 3)), device), T(np.zeros((2, 4)), device)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ember.cat([a, b])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ember.cat([a, T(np.zeros(3), device)])
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        ember.cat([T(1.0, device), T(2.0, device)])
    with pytest.raises(ValueError, match="non-empty"):  # (PyTorch's class for it)
        ember.cat([])
    with pytest.raises(IndexError):
        ember.cat([a, a], 2)
    with pytest.raises(TypeError):
        ember.cat([a, 1.0])
    other = other_device(device)
    with pytest.raises(RuntimeError) as ei:
        ember.cat([a, T(np.zeros((2, 3)), other)])
    assert "cpu" in str(ei.value) and "primcpu" in str(ei.value)


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool],
                         ids=lambda d: d.name)
def test_stack(device, dtype):
    a, b = data((2, 3), dtype), data((2, 3), dtype)[::-1].copy()
    for ta in layouts(a, device, dtype):
        for dim in (0, 1, 2, -1, -3):
            check(ember.stack([ta, T(b, device, dtype)], dim), np.stack([a, b], dim), dtype)
    check(ember.stack([T(1.0, device), T(2.0, device)]), [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size.*"
                                           r"\[2, 3\].*\[3\]"):
        ember.stack([T(a, device, dtype), T(a[0], device, dtype)])
    with pytest.raises(RuntimeError):
        ember.stack([])
    with pytest.raises(IndexError):
        ember.stack([T(a, device, dtype)], 3)


# ---------------------------------------------------------------------------------------
# split / chunk / unbind
# ---------------------------------------------------------------------------------------
def test_split_chunk_unbind(device):
    x = data((7, 4), ember.float32)
    for t in layouts(x, device):
        parts = ember.split(t, 3)
        exp = np.split(x, [3, 6])
        assert len(parts) == len(exp)
        for p, e in zip(parts, exp):
            check(p, e)
        parts = t.split([2, 5], dim=0)
        for p, e in zip(parts, np.split(x, [2])):
            check(p, e)
        parts = t.split(3, dim=1)
        for p, e in zip(parts, np.split(x, [3], axis=1)):
            check(p, e)
        parts = ember.chunk(t, 3)          # sizes 3, 3, 1 (PyTorch: ceil(7 / 3))
        assert [p.shape[0] for p in parts] == [3, 3, 1]
        for p, e in zip(parts, np.split(x, [3, 6])):
            check(p, e)
        parts = t.chunk(2, dim=1)
        for p, e in zip(parts, np.split(x, 2, axis=1)):
            check(p, e)
        rows = t.unbind(0)
        assert len(rows) == 7
        for r, e in zip(rows, x):
            check(r, e)
    with pytest.raises(RuntimeError):
        ember.split(T(x, device), [2, 2])
    with pytest.raises(RuntimeError):
        ember.chunk(T(x, device), 0)


def test_split_parts_are_views(device):
    t = T(np.zeros((6, 2)), device)
    a, b = t.split(3)
    b.fill_(5.0)
    c0, c1 = t.chunk(2, dim=1)
    c1 += 1
    exp = np.zeros((6, 2))
    exp[3:] = 5.0
    exp[:, 1] += 1
    check(t, exp)


# ---------------------------------------------------------------------------------------
# flip / roll / repeat / tril / triu
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.uint8, ember.bool],
                         ids=lambda d: d.name)
def test_flip(device, dtype):
    x = data((2, 3, 4), dtype)
    for t in layouts(x, device, dtype):
        for dims in ((0,), (1,), (2,), (-1,), (0, 2), (0, 1, 2)):
            check(ember.flip(t, dims), np.flip(x, dims), dtype)
        check(t.flip([1]), np.flip(x, 1), dtype)
        check(ember.fliplr(t), np.flip(x, 1), dtype)
        check(ember.flipud(t), np.flip(x, 0), dtype)
    r = ember.flip(T(x, device, dtype), (0,))
    r.zero_() if dtype is not ember.bool else r.fill_(False)
    check(T(x, device, dtype), x, dtype)   # flip copies


@pytest.mark.parametrize("dtype", [ember.float32, ember.int32, ember.bool],
                         ids=lambda d: d.name)
def test_roll(device, dtype):
    x = data((3, 4), dtype)
    for t in layouts(x, device, dtype):
        for shift in (1, -1, 5, 0, -13):
            check(ember.roll(t, shift), np.roll(x, shift), dtype)       # flattened
            check(ember.roll(t, shift, 1), np.roll(x, shift, 1), dtype)
            check(t.roll(shift, dims=0), np.roll(x, shift, 0), dtype)
        check(ember.roll(t, (1, -2), (0, 1)), np.roll(x, (1, -2), (0, 1)), dtype)
        check(ember.roll(t, (1, 2), (1, 1)), np.roll(x, 3, 1), dtype)
    check(ember.roll(T(np.zeros((0, 3)), device, dtype), 2, 0), np.zeros((0, 3)), dtype)
    with pytest.raises(RuntimeError):
        ember.roll(T(x, device, dtype), (1, 2), (0,))


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool],
                         ids=lambda d: d.name)
def test_repeat(device, dtype):
    x = data((2, 3), dtype)
    for t in layouts(x, device, dtype):
        for reps in ((1, 1), (2, 1), (1, 3), (2, 2), (3, 1, 2), (2, 0)):
            check(t.repeat(*reps), np.tile(x, reps), dtype)
        check(t.repeat((2, 2)), np.tile(x, (2, 2)), dtype)
    check(T(5, device, dtype).repeat(3), np.full(3, 5).astype(N(T(x, device, dtype)).dtype),
          dtype)
    with pytest.raises(RuntimeError):
        T(x, device, dtype).repeat(2)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32, ember.bool],
                         ids=lambda d: d.name)
def test_tril_triu(device, dtype):
    for shape in ((4, 4), (3, 5), (5, 3), (2, 3, 4)):
        x = data(shape, dtype)
        if dtype is not ember.bool:
            x = x + 1           # no zeros, so masked entries are visible
        for t in layouts(x, device, dtype):
            for k in (-2, -1, 0, 1, 2, 7, -7):
                check(ember.tril(t, k), np.tril(x, k), dtype)
                check(ember.triu(t, diagonal=k), np.triu(x, k), dtype)
            check(t.tril(), np.tril(x), dtype)
            check(t.triu(), np.triu(x), dtype)
    with pytest.raises(RuntimeError):
        ember.tril(T([1.0, 2.0], device))


# ---------------------------------------------------------------------------------------
# view ops on real data
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool, ember.bfloat16],
                         ids=lambda d: d.name)
def test_view_ops_match_numpy(device, dtype):
    x = data((2, 3, 4), dtype)
    t = T(x, device, dtype)
    check(t.view(6, 4), x.reshape(6, 4), dtype)
    check(t.view(-1), x.reshape(-1), dtype)
    check(t.view((4, -1)), x.reshape(4, -1), dtype)
    check(t.reshape(4, 6), x.reshape(4, 6), dtype)
    check(ember.reshape(t, (3, 8)), x.reshape(3, 8), dtype)
    check(t.transpose(0, 2), np.swapaxes(x, 0, 2), dtype)
    check(ember.transpose(t, -1, 1), np.swapaxes(x, -1, 1), dtype)
    check(t.permute(2, 0, 1), x.transpose(2, 0, 1), dtype)
    check(ember.permute(t, (1, 2, 0)), x.transpose(1, 2, 0), dtype)
    check(t.T, x.T, dtype)
    check(t.mT, np.swapaxes(x, -1, -2), dtype)
    check(t[:, :1].expand(2, 5, 4), np.broadcast_to(x[:, :1], (2, 5, 4)), dtype)
    check(t[:, :1].expand(3, -1, -1, 4), np.broadcast_to(x[:, :1], (3, 2, 1, 4)), dtype)
    check(t.unsqueeze(1), np.expand_dims(x, 1), dtype)
    check(t.unsqueeze(-1), np.expand_dims(x, -1), dtype)
    check(t[:, :1].squeeze(), np.squeeze(x[:, :1]), dtype)
    check(t[:, :1].squeeze(1), np.squeeze(x[:, :1], 1), dtype)
    check(t.squeeze(0), x, dtype)                           # size 2: unchanged
    check(t.flatten(), x.reshape(-1), dtype)
    check(t.flatten(1), x.reshape(2, 12), dtype)
    check(ember.flatten(t, 0, 1), x.reshape(6, 4), dtype)
    check(t.unflatten(2, (2, 2)), x.reshape(2, 3, 2, 2), dtype)
    check(t.narrow(2, 1, 2), x[:, :, 1:3], dtype)
    check(ember.narrow(t, 1, -2, 2), x[:, 1:3], dtype)
    check(t.select(1, 2), x[:, 2], dtype)
    check(ember.select(t, -1, -1), x[..., -1], dtype)
    check(t.movedim(0, 2), np.moveaxis(x, 0, 2), dtype)
    check(t.diagonal(0, 1, 2), np.diagonal(x, 0, 1, 2), dtype)
    check(t.diagonal(1, 1, 2), np.diagonal(x, 1, 1, 2), dtype)
    check(t[1, ..., None, 1:], x[1, ..., None, 1:], dtype)
    check(t[:, ::2, 1::2], x[:, ::2, 1::2], dtype)
    check(t[-1, -2], x[-1, -2], dtype)


def test_unfold_matches_sliding_windows(device):
    x = data((3, 7), ember.float32)
    swv = np.lib.stride_tricks.sliding_window_view
    for t in layouts(x, device):
        for size, step in ((3, 2), (1, 1), (7, 3), (2, 5)):
            check(t.unfold(1, size, step), swv(x, size, axis=1)[:, ::step])
        check(t.unfold(0, 2, 1), swv(x, 2, axis=0))
    with pytest.raises(RuntimeError):
        T(x, device).unfold(1, 8, 1)


def test_views_share_memory_with_the_base(device):
    x = data((3, 4), ember.float32)
    views = [
        (lambda t: t.view(12), lambda a: a.reshape(12)),
        (lambda t: t.reshape(4, 3), lambda a: a.reshape(4, 3)),
        (lambda t: t.t(), lambda a: a.T),
        (lambda t: t.transpose(0, 1), lambda a: a.T),
        (lambda t: t.permute(1, 0), lambda a: a.T),
        (lambda t: t.unsqueeze(0), lambda a: a[None]),
        (lambda t: t[None].squeeze(0), lambda a: a),
        (lambda t: t.flatten(), lambda a: a.reshape(-1)),
        (lambda t: t.narrow(1, 1, 2), lambda a: a[:, 1:3]),
        (lambda t: t.select(0, 2), lambda a: a[2]),
        (lambda t: t[:, ::2], lambda a: a[:, ::2]),
        (lambda t: t[1:, 1], lambda a: a[1:, 1]),
        (lambda t: t.unfold(1, 2, 2), lambda a: a.reshape(3, 2, 2)),
        (lambda t: t.diagonal(), lambda a: np.lib.stride_tricks.as_strided(
            a, (3,), (a.strides[0] + a.strides[1],))),
        (lambda t: t.detach(), lambda a: a),
        (lambda t: t.split(2, 1)[1], lambda a: a[:, 2:]),
        (lambda t: t.unbind(1)[3], lambda a: a[:, 3]),
    ]
    for make_view, np_view in views:
        t = T(x, device)
        v = make_view(t)
        v0 = t._version
        v.mul_(-1)                       # write through the view
        assert t._version > v0 and v._version == t._version
        exp = x.copy()
        nv = np_view(exp)
        nv *= -1
        check(t, exp)
        # and the base's writes show in the view
        t.add_(100)
        check(v, np_view(exp + 100))


def test_expand_is_a_broadcast_view(device):
    t = T(np.array([[1.0], [2.0]]), device)
    e = t.expand(2, 3)
    assert e.stride() == (1, 0)
    check(e, [[1.0] * 3, [2.0] * 3])
    t.mul_(10)
    check(e, [[10.0] * 3, [20.0] * 3])


def test_view_errors(device):
    t = T(data((3, 4), ember.float32), device)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.t().view(-1)
    check(t.t().reshape(-1), data((3, 4), ember.float32).T.reshape(-1))
    with pytest.raises(RuntimeError, match="invalid for input of size 12"):
        t.view(5, 3)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(RuntimeError):
        t.expand(3, 5)
    with pytest.raises(RuntimeError):
        t.permute(0)
    with pytest.raises(IndexError):
        t.transpose(0, 2)
    with pytest.raises(IndexError):
        t.select(0, 3)
    with pytest.raises((IndexError, RuntimeError)):
        t.narrow(1, 2, 3)
    with pytest.raises(TypeError):
        t.view("a", 3)
    with pytest.raises(RuntimeError):
        T(np.zeros((2, 2, 2)), device).t()


# ---------------------------------------------------------------------------------------
# contiguous / clone
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_contiguous_and_clone(device, dtype):
    x = data((3, 4), dtype)
    for t in list(layouts(x, device, dtype))[1:]:
        assert not t.is_contiguous()
        c = t.contiguous()
        assert c.is_contiguous() and c.stride() == (4, 1)
        check(c, x, dtype)
        # an independent copy
        c.zero_()
        check(t, x, dtype)
    t = T(x, device, dtype)
    assert t.contiguous() is t
    k = t.clone()
    assert k is not t and k.dtype is dtype and k.device == t.device
    check(k, x, dtype)
    k.fill_(1)
    check(t, x, dtype)
    k = t.t().clone()
    check(k, x.T, dtype)
    check(ember.clone(t[:, ::2]), x[:, ::2], dtype)
