"""im2col, col2im and max_pool (kernels/conv.cl) against NumPy loops and the CPU backend:
1 to 3 spatial dims, padding, dilation, stride, extra (ceil-mode) blocks and their fill
value, strided inputs and permuted outputs, every dtype; NaN-wins maxima and PyTorch's
default index; convolution and pooling forward and backward through nn.functional."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.dispatcher import ops as O
from ocl_helpers import ALL, DEV, N, T, np_dtype

rng = np.random.default_rng(7)

GEOMS = [
    # (spatial size, kernel, dilation, padding, stride)
    ((7,), (3,), (1,), (1,), (1,)),
    ((9,), (2,), (2,), (0,), (3,)),
    ((5, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((8, 7), (3, 2), (2, 1), (1, 0), (2, 3)),
    ((4, 4), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((4, 5, 6), (2, 3, 2), (1, 1, 2), (1, 0, 1), (2, 1, 1)),
]


def blocks_of(sp, k, d, p, s, extra=0):
    return tuple((sp[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 + extra
                 for i in range(len(k)))


def np_im2col(x, k, d, p, s, blocks, value=0):
    out = np.full(x.shape[:2] + tuple(k) + tuple(blocks), value, dtype=x.dtype)
    for kk in itertools.product(*map(range, k)):
        for bb in itertools.product(*map(range, blocks)):
            pos = tuple(bb[i] * s[i] - p[i] + kk[i] * d[i] for i in range(len(k)))
            if all(0 <= pos[i] < x.shape[2 + i] for i in range(len(k))):
                out[(Ellipsis,) + kk + bb] = x[(Ellipsis,) + pos]
    return out


def np_col2im(cols, size, k, d, p, s):
    nd = len(k)
    out = np.zeros(cols.shape[:2] + tuple(size), np.float64)
    for kk in itertools.product(*map(range, k)):
        for bb in itertools.product(*map(range, cols.shape[2 + nd:])):
            pos = tuple(bb[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd))
            if all(0 <= pos[i] < size[i] for i in range(nd)):
                out[(Ellipsis,) + pos] += cols[(Ellipsis,) + kk + bb]
    return out


def np_max_pool(x, k, d, p, s, blocks):
    """PyTorch's rule: the first position inside the input is the default, then a strictly
    greater value or a NaN wins; windows entirely in the padding give (lowest, 0)."""
    nd = len(k)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    vals = np.full(x.shape[:2] + tuple(blocks), lowest, x.dtype)
    idx = np.zeros(x.shape[:2] + tuple(blocks), np.int64)
    for n, c in itertools.product(*map(range, x.shape[:2])):
        for bb in itertools.product(*map(range, blocks)):
            best, bi = lowest, -1
            for kk in itertools.product(*map(range, k)):
                pos = tuple(bb[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd))
                if not all(0 <= pos[i] < x.shape[2 + i] for i in range(nd)):
                    continue
                v = x[(n, c) + pos]
                if v > best or v != v or bi < 0:
                    best, bi = v, int(np.ravel_multi_index(pos, x.shape[2:]))
            vals[(n, c) + bb], idx[(n, c) + bb] = best, max(bi, 0)
    return vals, idx


@pytest.mark.parametrize("geom", GEOMS, ids=str)
@pytest.mark.parametrize("batch_inner", [False, True], ids=["nckb", "batch_inner"])
def test_im2col_matches_numpy(geom, batch_inner):
    sp, k, d, p, s = geom
    x = rng.standard_normal((2, 3) + sp).astype(np.float32)
    blocks = blocks_of(sp, k, d, p, s)
    # batch_inner: the kernel writes a permuted (non-contiguous) view of its buffer
    got = O.im2col(T(x), k, d, p, s, batch_inner=batch_inner)
    assert got.shape == (2, 3) + k + blocks
    np.testing.assert_array_equal(N(got), np_im2col(x, k, d, p, s, blocks))


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_im2col_every_dtype_with_extra_blocks_and_fill(dtype):
    # more blocks than the padding gives (ceil mode): the right side reads `value`
    x = rng.integers(0, 2 if dtype is ember.bool else 100, (2, 2, 5, 5)).astype(np_dtype(dtype))
    k, d, p, s = (2, 2), (1, 1), (1, 1), (2, 2)
    blocks = blocks_of((5, 5), k, d, p, s, extra=1)
    value = 1 if dtype is ember.bool else 7
    got = O.im2col(T(x, dtype), k, d, p, s, blocks=blocks, value=value)
    np.testing.assert_array_equal(N(got), np_im2col(x, k, d, p, s, blocks, value))


@pytest.mark.parametrize("dtype,value,expect", [
    (ember.int8, -1e9, -128), (ember.uint8, 300, 255), (ember.int32, float("nan"), 0),
    (ember.int64, -3.7, -3), (ember.float32, float("-inf"), -np.inf),
    (ember.float16, float("nan"), np.nan)], ids=str)
def test_im2col_fill_value_converts_like_the_cpu_backend(dtype, value, expect):
    x = np.ones((1, 1, 3), np_dtype(dtype))
    got = N(O.im2col(T(x, dtype), (3,), (1,), (1,), (1,), value=value))
    cpu = N(O.im2col(ember.tensor(x).to(dtype=dtype), (3,), (1,), (1,), (1,), value=value))
    np.testing.assert_array_equal(got, cpu)
    assert (got[0, 0, 0, 0] == expect) or (np.isnan(expect) and np.isnan(got[0, 0, 0, 0]))


def test_im2col_of_strided_and_offset_inputs():
    x = rng.standard_normal((3, 2, 6, 8)).astype(np.float32)
    xt = T(x).transpose(2, 3)                          # non-contiguous (3, 2, 8, 6)
    ref = np_im2col(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), (3, 3), (1, 1), (1, 1),
                    (1, 1), (8, 6))
    np.testing.assert_array_equal(N(O.im2col(xt, (3, 3), (1, 1), (1, 1), (1, 1))), ref)
    big = T(np.concatenate([x, x], 1))[:, 2:, :, 1::2]  # offset and column stride 2
    ref = np_im2col(x[:, :, :, 1::2], (2, 2), (1, 1), (0, 0), (1, 1), (5, 3))
    np.testing.assert_array_equal(N(O.im2col(big, (2, 2), (1, 1), (0, 0), (1, 1))), ref)


@pytest.mark.parametrize("geom", GEOMS, ids=str)
def test_col2im_matches_numpy(geom):
    sp, k, d, p, s = geom
    blocks = blocks_of(sp, k, d, p, s)
    cols = rng.standard_normal((2, 3) + k + blocks)
    got = O.col2im(T(cols), sp, k, d, p, s)
    np.testing.assert_allclose(N(got), np_col2im(cols, sp, k, d, p, s), rtol=1e-12,
                               atol=1e-12)


def test_col2im_equals_the_cpu_backend_bitwise_and_reads_strided_cols():
    # the kernel adds the blocks covering a position in kernel order, as the CPU does
    sp, k, d, p, s = (9, 8), (3, 3), (1, 2), (1, 2), (2, 1)
    blocks = blocks_of(sp, k, d, p, s)
    cols = rng.standard_normal((2, 4) + k + blocks).astype(np.float32)
    cpu = N(O.col2im(ember.tensor(cols), sp, k, d, p, s))
    np.testing.assert_array_equal(N(O.col2im(T(cols), sp, k, d, p, s)), cpu)
    perm = T(np.ascontiguousarray(cols.transpose(1, 0, 2, 3, 4, 5))).transpose(0, 1)
    np.testing.assert_array_equal(N(O.col2im(perm, sp, k, d, p, s)), cpu)


@pytest.mark.parametrize("dtype", [ember.float64, ember.float16, ember.bfloat16,
                                   ember.int64, ember.int32, ember.int8, ember.uint8],
                         ids=lambda d: d.name)
def test_col2im_dtypes(dtype):
    sp, k, d, p, s = (5, 4), (2, 2), (1, 1), (0, 1), (1, 2)
    blocks = blocks_of(sp, k, d, p, s)
    cols = rng.integers(0, 9, (2, 2) + k + blocks).astype(np_dtype(dtype))
    got = N(O.col2im(T(cols, dtype), sp, k, d, p, s))
    exp = np_col2im(cols.astype(np.float64), sp, k, d, p, s).astype(np_dtype(dtype))
    np.testing.assert_array_equal(got, exp)


def test_col2im_is_the_adjoint_of_im2col():
    sp, k, d, p, s = (6, 7), (3, 2), (1, 2), (1, 1), (2, 1)
    blocks = blocks_of(sp, k, d, p, s)
    x = rng.standard_normal((2, 2) + sp)
    y = rng.standard_normal((2, 2) + k + blocks)
    lhs = (N(O.im2col(T(x), k, d, p, s)) * y).sum()
    rhs = (x * N(O.col2im(T(y), sp, k, d, p, s))).sum()
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


POOLS = [
    ((9, 9), (2, 2), (1, 1), (0, 0), (2, 2), 0),
    ((8, 7), (3, 3), (1, 1), (1, 1), (2, 2), 1),         # ceil mode: one extra block
    ((10, 9), (3, 2), (2, 1), (1, 1), (3, 2), 1),
    ((11,), (3,), (1,), (1,), (2,), 0),
    ((5, 6, 4), (2, 2, 2), (1, 1, 1), (1, 1, 1), (2, 2, 2), 0),
    ((4, 4), (2, 2), (1, 1), (1, 1), (1, 1), 2),         # last windows fully in the padding
]


@pytest.mark.parametrize("geom", POOLS, ids=str)
def test_max_pool_matches_numpy_and_cpu(geom):
    sp, k, d, p, s, extra = geom
    blocks = blocks_of(sp, k, d, p, s, extra)
    x = rng.standard_normal((2, 3) + sp).astype(np.float32)
    values, indices = O.max_pool(T(x), k, d, p, s, blocks)
    ev, ei = np_max_pool(x, k, d, p, s, blocks)
    np.testing.assert_array_equal(N(values), ev)
    np.testing.assert_array_equal(N(indices), ei)
    cv, ci = O.max_pool(ember.tensor(x), k, d, p, s, blocks)
    np.testing.assert_array_equal(N(values), N(cv))
    np.testing.assert_array_equal(N(indices), N(ci))


def test_max_pool_nan_wins_and_ties_keep_the_first_position():
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 2] = np.nan
    x[0, 0, 3, 3] = 5
    x[0, 0, 2, 0] = x[0, 0, 3, 1] = 2                   # a tie: the first one's index
    values, indices = O.max_pool(T(x), (2, 2), (1, 1), (0, 0), (2, 2), (2, 2))
    ev, ei = np_max_pool(x, (2, 2), (1, 1), (0, 0), (2, 2), (2, 2))
    np.testing.assert_array_equal(N(values), ev)
    np.testing.assert_array_equal(N(indices), ei)
    assert np.isnan(N(values)[0, 0, 0, 1]) and N(indices)[0, 0, 1, 0] == 8
    # a window of -inf only: the first valid position, not index 0 of the plane
    y = np.full((1, 1, 1, 4), -np.inf, np.float32)
    _, i = O.max_pool(T(y), (1, 2), (1, 1), (0, 0), (1, 2), (1, 2))
    np.testing.assert_array_equal(N(i), [[[[0, 2]]]])


@pytest.mark.parametrize("dtype", [ember.float64, ember.float16, ember.bfloat16,
                                   ember.int64, ember.int16, ember.uint8],
                         ids=lambda d: d.name)
def test_max_pool_dtypes_and_strided_input(dtype):
    x = rng.integers(0, 50, (2, 2, 6, 10)).astype(np_dtype(dtype))
    t = T(x, dtype)[:, :, :, ::2]                       # (2, 2, 6, 5), column stride 2
    values, indices = O.max_pool(t, (2, 2), (1, 1), (1, 0), (2, 2), (4, 3))
    ev, ei = np_max_pool(x[:, :, :, ::2], (2, 2), (1, 1), (1, 0), (2, 2), (4, 3))
    np.testing.assert_array_equal(N(values), ev)
    np.testing.assert_array_equal(N(indices), ei)


def test_bool_and_bad_geometry_are_clear_errors():
    b = T(np.ones((1, 1, 4, 4), bool))
    # (PyTorch raises NotImplementedError: "max_pool2d" not implemented for 'Bool')
    with pytest.raises(NotImplementedError, match="max_pool"):
        O.max_pool(b, (2, 2), (1, 1), (0, 0), (2, 2), (2, 2))
    with pytest.raises(NotImplementedError, match="col2im"):
        O.col2im(T(np.ones((1, 1, 2, 2, 3, 3), bool)), (4, 4), (2, 2), (1, 1), (0, 0),
                 (1, 1))
    x = T(np.zeros((1, 1, 4, 4), np.float32))
    with pytest.raises(ValueError, match="im2col"):
        O.im2col(x, (3,), (1,), (0,), (1,))
    with pytest.raises(ValueError, match="positive"):
        O.im2col(x, (3, 3), (1, 1), (0, 0), (0, 1))


def test_empty_tensors():
    x = T(np.zeros((0, 3, 5, 5), np.float32))
    assert O.im2col(x, (3, 3), (1, 1), (1, 1), (1, 1)).shape == (0, 3, 3, 3, 5, 5)
    v, i = O.max_pool(x, (2, 2), (1, 1), (0, 0), (2, 2), (2, 2))
    assert v.shape == i.shape == (0, 3, 2, 2)
    assert O.col2im(T(np.zeros((0, 3, 3, 3, 5, 5), np.float32)), (5, 5), (3, 3), (1, 1),
                    (1, 1), (1, 1)).shape == (0, 3, 5, 5)


def _conv_pool_net(device, x, w1, w2):
    xt = ember.tensor(x).to(device).requires_grad_()
    a = ember.tensor(w1).to(device).requires_grad_()
    b = ember.tensor(w2).to(device).requires_grad_()
    h = F.relu(F.conv2d(xt, a, padding=1))
    h = F.max_pool2d(h, 2, ceil_mode=True)
    h = F.conv2d(h, b, stride=2, dilation=1, padding=1)
    h = F.max_pool1d(h.flatten(2), 3, stride=2, padding=1)
    loss = (h * h).sum()
    loss.backward()
    return [N(t.detach()) for t in (loss, xt.grad, a.grad, b.grad)]


def test_conv_and_pool_forward_backward_match_cpu():
    x = rng.standard_normal((3, 2, 9, 7)).astype(np.float32)
    w1 = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((5, 4, 2, 2)).astype(np.float32)
    for got, exp in zip(_conv_pool_net(DEV, x, w1, w2), _conv_pool_net("cpu", x, w1, w2)):
        np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4)


def test_fold_unfold_match_cpu():
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    geom = {"dilation": (1, 2), "padding": 1, "stride": 2}
    u = F.unfold(T(x), (2, 3), **geom)
    uc = F.unfold(ember.tensor(x), (2, 3), **geom)
    np.testing.assert_array_equal(N(u), N(uc))
    np.testing.assert_array_equal(N(F.fold(u, (6, 5), (2, 3), **geom)),
                                  N(F.fold(uc, (6, 5), (2, 3), **geom)))
