"""The convolution/pooling building blocks (schema ops im2col, col2im, max_pool) on every
device, against NumPy loops and PyTorch's max pooling."""
import itertools
import math

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import ops as O

from conftest import N, T

GEOMS = [
    # (spatial size, kernel, dilation, padding, stride)
    ((7,), (3,), (1,), (1,), (1,)),
    ((9,), (2,), (2,), (0,), (3,)),
    ((5, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((8, 7), (3, 2), (2, 1), (1, 0), (2, 3)),
    ((4, 4), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((4, 5, 6), (2, 3, 2), (1, 1, 2), (1, 0, 1), (2, 1, 1)),
]


def blocks_of(sp, k, d, p, s):
    return tuple((sp[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k)))


def np_im2col(x, k, d, p, s, blocks, value=0.0):
    n, c = x.shape[:2]
    out = np.full((n, c) + tuple(k) + tuple(blocks), value, dtype=x.dtype)
    for kk in itertools.product(*[range(v) for v in k]):
        for bb in itertools.product(*[range(v) for v in blocks]):
            pos = [bb[i] * s[i] - p[i] + kk[i] * d[i] for i in range(len(k))]
            if all(0 <= pos[i] < x.shape[2 + i] for i in range(len(k))):
                out[(slice(None), slice(None)) + kk + bb] = x[(slice(None), slice(None))
                                                              + tuple(pos)]
    return out


def np_col2im(cols, size, k, d, p, s):
    n, c = cols.shape[:2]
    nd = len(k)
    blocks = cols.shape[2 + nd:]
    out = np.zeros((n, c) + tuple(size), dtype=np.float64)
    for kk in itertools.product(*[range(v) for v in k]):
        for bb in itertools.product(*[range(v) for v in blocks]):
            pos = [bb[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd)]
            if all(0 <= pos[i] < size[i] for i in range(nd)):
                out[(slice(None), slice(None)) + tuple(pos)] += cols[(slice(None), slice(None))
                                                                     + kk + bb]
    return out


@pytest.mark.parametrize("geom", GEOMS, ids=str)
@pytest.mark.parametrize("batch_inner", [False, True])
def test_im2col_matches_numpy(device, geom, batch_inner):
    sp, k, d, p, s = geom
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + sp).astype(np.float32)
    blocks = blocks_of(sp, k, d, p, s)
    got = O.im2col(T(x, device), k, d, p, s, batch_inner=batch_inner)
    assert got.shape == (2, 3) + k + blocks
    np.testing.assert_array_equal(N(got), np_im2col(x, k, d, p, s, blocks))


@pytest.mark.parametrize("dtype", ["int64", "float64", "uint8"])
def test_im2col_fill_value_and_extra_blocks(device, dtype):
    # more blocks than the symmetric padding gives: the right side reads `value`
    x = np.arange(2 * 2 * 5 * 5).reshape(2, 2, 5, 5).astype(dtype)
    k, d, p, s, blocks = (2, 2), (1, 1), (1, 1), (2, 2), (4, 4)
    value = 7
    got = O.im2col(T(x, device), k, d, p, s, blocks=blocks, value=value)
    np.testing.assert_array_equal(N(got), np_im2col(x, k, d, p, s, blocks, value))


def test_im2col_of_strided_input(device):
    x = np.random.default_rng(1).standard_normal((3, 2, 6, 8)).astype(np.float32)
    xt = T(x, device).transpose(2, 3)       # non-contiguous (3, 2, 8, 6)
    got = O.im2col(xt, (3, 3), (1, 1), (1, 1), (1, 1))
    ref = np_im2col(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), (3, 3), (1, 1), (1, 1),
                    (1, 1), (8, 6))
    np.testing.assert_array_equal(N(got), ref)


@pytest.mark.parametrize("geom", GEOMS, ids=str)
def test_col2im_matches_numpy(device, geom):
    sp, k, d, p, s = geom
    blocks = blocks_of(sp, k, d, p, s)
    rng = np.random.default_rng(2)
    cols = rng.standard_normal((2, 3) + k + blocks)
    got = O.col2im(T(cols, device), sp, k, d, p, s)
    np.testing.assert_allclose(N(got), np_col2im(cols, sp, k, d, p, s), rtol=1e-12, atol=1e-12)


def test_col2im_is_the_adjoint_of_im2col(device):
    # <im2col(x), y> == <x, col2im(y)> for random x, y
    sp, k, d, p, s = (6, 7), (3, 2), (1, 2), (1, 1), (2, 1)
    blocks = blocks_of(sp, k, d, p, s)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2) + sp)
    y = rng.standard_normal((2, 2) + k + blocks)
    lhs = (N(O.im2col(T(x, device), k, d, p, s)) * y).sum()
    rhs = (x * N(O.col2im(T(y, device), sp, k, d, p, s))).sum()
    assert math.isclose(lhs, rhs, rel_tol=1e-12)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("geom", [
    ((9, 9), (2, 2), (1, 1), (0, 0), (2, 2)),
    ((8, 7), (3, 3), (1, 1), (1, 1), (2, 2)),
    ((10, 9), (3, 2), (2, 1), (1, 1), (3, 2)),
], ids=str)
def test_max_pool_matches_torch(device, geom, ceil_mode):
    sp, k, d, p, s = geom
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3) + sp).astype(np.float32)
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, d, ceil_mode=ceil_mode,
                                            return_indices=True)
    values, indices = O.max_pool(T(x, device), k, d, p, s, tuple(tv.shape[2:]))
    np.testing.assert_array_equal(N(values), tv.numpy())
    np.testing.assert_array_equal(N(indices), ti.numpy())


def test_max_pool_nan_wins(device):
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 2] = np.nan
    x[0, 0, 3, 3] = 5
    values, indices = O.max_pool(T(x, device), (2, 2), (1, 1), (0, 0), (2, 2), (2, 2))
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(N(values), tv.numpy())
    np.testing.assert_array_equal(N(indices), ti.numpy())


def test_max_pool_1d_and_3d_match_torch(device):
    rng = np.random.default_rng(5)
    x1 = rng.standard_normal((2, 3, 11)).astype(np.float32)
    tv, ti = torch.nn.functional.max_pool1d(torch.tensor(x1), 3, 2, 1, return_indices=True)
    v, i = O.max_pool(T(x1, device), (3,), (1,), (1,), (2,), tuple(tv.shape[2:]))
    np.testing.assert_array_equal(N(v), tv.numpy())
    np.testing.assert_array_equal(N(i), ti.numpy())
    x3 = rng.standard_normal((1, 2, 5, 6, 4)).astype(np.float32)
    tv, ti = torch.nn.functional.max_pool3d(torch.tensor(x3), 2, 2, 1, return_indices=True)
    v, i = O.max_pool(T(x3, device), (2, 2, 2), (1, 1, 1), (1, 1, 1), (2, 2, 2),
                      tuple(tv.shape[2:]))
    np.testing.assert_array_equal(N(v), tv.numpy())
    np.testing.assert_array_equal(N(i), ti.numpy())


def test_bad_geometry_is_a_clear_error(device):
    x = T(np.zeros((1, 1, 4, 4), np.float32), device)
    with pytest.raises(ValueError, match="im2col"):
        O.im2col(x, (3,), (1,), (0,), (1,))
    with pytest.raises(ValueError, match="positive"):
        O.im2col(x, (3, 3), (1, 1), (0, 0), (0, 1))
    with pytest.raises(ValueError, match="col2im"):
        O.col2im(x, (4, 4), (3, 3), (1, 1), (0, 0), (1, 1))


def test_where_with_scalar_branch(device):
    # the fast path of where(mask, g, 0) (ReLU's backward) and where(mask, 0, g)
    rng = np.random.default_rng(6)
    g = rng.standard_normal((5000,)).astype(np.float32)
    m = g > 0.1
    zero = ember.zeros((), device=device)
    np.testing.assert_array_equal(N(ember.where(T(m, device), T(g, device), zero)),
                                  np.where(m, g, 0))
    np.testing.assert_array_equal(N(ember.where(T(m, device), zero, T(g, device))),
                                  np.where(m, 0, g))
