"""matmul and friends on every device, against NumPy (float64 accumulation as the oracle)."""
from functools import partial

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import ember
import helpers
from conftest import T
from helpers import hset, other_device, strided, transposed

TOL = {ember.float32: (1e-5, 1e-5), ember.float64: (1e-12, 1e-12),
       ember.float16: (1e-2, 1e-2), ember.bfloat16: (1e-2, 1e-2)}
check = partial(helpers.check, tols=TOL)
DTYPES = [ember.float32, ember.float64, ember.int64, ember.int32]


def rand(rng, shape, dtype):
    if dtype.is_floating_point:
        return rng.standard_normal(shape)
    return rng.integers(-5, 6, shape)


def ref(a, b, dtype):
    if dtype.is_floating_point:
        return np.matmul(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return np.matmul(np.asarray(a, np.int64), np.asarray(b, np.int64))


def variants(a, device, dtype):
    """Contiguous, transposed-storage and strided tensors holding ``a``."""
    yield T(a, device, dtype)
    if a.ndim >= 2:
        yield transposed(a, device, dtype)
    yield strided(a, device, dtype, fill=1000)


MATMUL_SHAPES = [
    ((4,), (4,)),                   # 1D . 1D -> 0-d
    ((3, 4), (4,)),                 # 2D . 1D
    ((4,), (4, 5)),                 # 1D . 2D
    ((3, 4), (4, 5)),               # 2D . 2D
    ((2, 3, 4), (2, 4, 5)),         # batched
    ((2, 3, 4), (4, 5)),            # batched . 2D
    ((3, 4), (2, 4, 5)),            # 2D . batched
    ((2, 1, 3, 4), (5, 4, 2)),      # broadcast batch dims
    ((4,), (2, 4, 5)),              # 1D . 3D
    ((2, 3, 4), (4,)),              # 3D . 1D
    ((1, 3, 4), (2, 1, 4, 2)),
    ((0, 3), (3, 2)),               # empty rows
    ((3, 0), (0, 2)),               # empty inner dimension: zeros
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_broadcasting_cases(device, shapes, dtype):
    rng = np.random.default_rng(0)
    sa, sb = shapes
    a, b = rand(rng, sa, dtype), rand(rng, sb, dtype)
    exp = ref(a, b, dtype)
    for ta in variants(a, device, dtype):
        for tb in variants(b, device, dtype):
            check(ember.matmul(ta, tb), exp, dtype)
    check(T(a, device, dtype) @ T(b, device, dtype), exp, dtype)
    check(T(a, device, dtype).matmul(T(b, device, dtype)), exp, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_mm_bmm_mv_dot_outer(device, dtype):
    rng = np.random.default_rng(1)
    a, b = rand(rng, (5, 3), dtype), rand(rng, (3, 4), dtype)
    ba, bb = rand(rng, (2, 5, 3), dtype), rand(rng, (2, 3, 4), dtype)
    v, w = rand(rng, (3,), dtype), rand(rng, (5,), dtype)
    for ta in variants(a, device, dtype):
        for tb in variants(b, device, dtype):
            check(ember.mm(ta, tb), ref(a, b, dtype), dtype)
        for tv in variants(v, device, dtype):
            check(ember.mv(ta, tv), ref(a, v, dtype), dtype)
            check(ta.mv(tv), ref(a, v, dtype), dtype)
    for tba in variants(ba, device, dtype):
        for tbb in variants(bb, device, dtype):
            check(ember.bmm(tba, tbb), ref(ba, bb, dtype), dtype)
    for tv in variants(v, device, dtype):
        r = ember.dot(tv, T(v[::-1].copy(), device, dtype))
        assert r.shape == ()
        check(r, ref(v, v[::-1], dtype), dtype)
        for tw in variants(w, device, dtype):
            check(ember.outer(tw, tv), np.outer(w, v), dtype)
    check(T(a, device, dtype).mm(T(b, device, dtype)), ref(a, b, dtype), dtype)


def test_matmul_accumulates_long_rows_accurately(device):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((33, 257)), rng.standard_normal((257, 17))
    check(ember.matmul(T(a, device, ember.float32), T(b, device, ember.float32)), a @ b)
    check(ember.matmul(T(a, device), T(b, device)), a @ b, ember.float64)
    for ta in variants(a, device, ember.float32):
        for tb in variants(b, device, ember.float32):
            check(ta @ tb, a @ b)
    ai, bi = rng.integers(-9, 10, (40, 130)), rng.integers(-9, 10, (130, 3, 20))
    check(ember.matmul(T(ai, device), T(bi.transpose(1, 0, 2), device)),
          np.matmul(ai, bi.transpose(1, 0, 2)), ember.int64)


def test_out_arguments(device):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    out = ember.empty((3, 2), dtype=ember.float64, device=device)
    r = ember.matmul(T(a, device), T(b, device), out=out)
    assert r is out
    check(out, a @ b)
    out = ember.empty((3, 2), dtype=ember.float64, device=device)
    ember.mm(T(a, device), T(b, device), out=out)
    check(out, a @ b)
    out = ember.empty((1, 3, 2), dtype=ember.float64, device=device)
    ember.bmm(T(a[None], device), T(b[None], device), out=out)
    check(out, (a @ b)[None])


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64],
                         ids=lambda d: d.name)
def test_addmm(device, dtype):
    rng = np.random.default_rng(4)
    inp, m1, m2 = rand(rng, (3, 4), dtype), rand(rng, (3, 5), dtype), rand(rng, (5, 4), dtype)
    bias = rand(rng, (4,), dtype)
    p = ref(m1, m2, dtype)
    for tm1 in variants(m1, device, dtype):
        check(ember.addmm(T(inp, device, dtype), tm1, T(m2, device, dtype)), inp + p, dtype)
        check(ember.addmm(T(inp, device, dtype), tm1, T(m2, device, dtype), beta=2, alpha=3),
              2 * inp + 3 * p, dtype)
        check(ember.addmm(T(bias, device, dtype), tm1, T(m2, device, dtype), alpha=-1),
              bias - p, dtype)
    check(T(inp, device, dtype).addmm(T(m1, device, dtype), T(m2, device, dtype), beta=0),
          p, dtype)


def test_addmm_beta_zero_ignores_nan_in_input(device):
    rng = np.random.default_rng(5)
    m1, m2 = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    inp = np.full((2, 2), np.nan)
    check(ember.addmm(T(inp, device), T(m1, device), T(m2, device), beta=0), m1 @ m2)


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i->", [(5,)] * 2),
    ("ij,ij->ij", [(3, 4)] * 2),
    ("ij,jk", [(3, 4), (4, 5)]),            # implicit output
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,jk->...ik", [(2, 2, 3, 4), (4, 5)]),
    ("bi,bj->bij", [(2, 3), (2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("b i j , b j k -> b i k", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(device, eq, shapes, dtype):
    rng = np.random.default_rng(6)
    ops = [rand(rng, s, dtype) for s in shapes]
    exp = np.einsum(eq.replace(" ", ""), *[o.astype(np.float64) for o in ops])
    check(ember.einsum(eq, *[T(o, device, dtype) for o in ops]), exp, dtype)
    # non-contiguous operands, and operands passed as a list
    ts = [T(np.ascontiguousarray(o.T), device, dtype).permute(*range(o.ndim)[::-1])
          for o in ops]
    check(ember.einsum(eq, ts), exp, dtype)


def test_einsum_errors(device):
    a = T(np.ones((2, 3)), device)
    with pytest.raises((RuntimeError, ValueError)):
        ember.einsum("ij,jk->ik", a)                          # too few operands
    with pytest.raises(RuntimeError):
        ember.einsum("ijk->i", a)                             # wrong number of subscripts
    with pytest.raises(RuntimeError):
        ember.einsum("ij,jk->ik", a, T(np.ones((4, 2)), device))   # 3 vs 4
    with pytest.raises(RuntimeError):
        ember.einsum("i,i->", T(np.ones(2), device, ember.float32), T(np.ones(2), device))


def test_shape_mismatch_errors(device):
    a, b = T(np.zeros((2, 3)), device), T(np.zeros((4, 5)), device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        ember.mm(a, b)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        a @ b
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        ember.addmm(T(np.zeros((2, 5)), device), a, b)
    with pytest.raises(RuntimeError):
        ember.matmul(T(np.zeros(3), device), T(np.zeros(4), device))
    with pytest.raises(RuntimeError):
        ember.matmul(T(np.zeros((2, 3)), device), T(np.zeros(4), device))
    with pytest.raises(RuntimeError):
        ember.matmul(T(np.zeros(4), device), T(np.zeros((3, 2)), device))
    with pytest.raises(RuntimeError):
        ember.matmul(T(np.zeros((2, 2, 3)), device), T(np.zeros((2, 4, 3)), device))
    with pytest.raises(RuntimeError):
        ember.matmul(T(np.zeros((2, 2, 3)), device), T(np.zeros(4), device))
    with pytest.raises(RuntimeError, match="must match"):
        ember.matmul(T(np.zeros((2, 2, 3)), device), T(np.zeros((3, 3, 4)), device))
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[2, 4\]"):
        ember.bmm(T(np.zeros((2, 2, 3)), device), T(np.zeros((2, 4, 3)), device))
    with pytest.raises(RuntimeError, match="3D"):
        ember.bmm(a, b)
    with pytest.raises(RuntimeError, match="matrix"):
        ember.mm(T(np.zeros(3), device), T(np.zeros((3, 2)), device))
    with pytest.raises(RuntimeError, match="size mismatch"):
        ember.mv(a, T(np.zeros(4), device))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        ember.dot(T(np.zeros(3), device), T(np.zeros(4), device))
    with pytest.raises(RuntimeError, match="1D"):
        ember.dot(a, a)
    with pytest.raises(RuntimeError, match="1D"):
        ember.matmul(T(np.zeros(()), device), a)


def test_dtype_and_device_mismatch_errors(device):
    a32 = T(np.ones((2, 2)), device, ember.float32)
    a64 = T(np.ones((2, 2)), device, ember.float64)
    for fn in (ember.mm, ember.matmul, lambda x, y: ember.bmm(x[None], y[None])):
        with pytest.raises(RuntimeError, match="dtype"):
            fn(a32, a64)
    other = other_device(device)
    b = T(np.ones((2, 2)), other, ember.float32)
    for fn in (ember.mm, ember.matmul, lambda x, y: ember.bmm(x[None], y[None])):
        with pytest.raises(RuntimeError) as ei:
            fn(a32, b)
        msg = str(ei.value)
        assert "cpu" in msg and "primcpu" in msg, msg


def test_wrong_argument_types(device):
    a = T(np.ones((2, 2)), device)
    calls = {
        "matmul(list)": lambda: ember.matmul(a, [[1.0, 0.0], [0.0, 1.0]]),
        "a @ str": lambda: a @ "x",
        "mm(list)": lambda: ember.mm(a, [[1.0], [2.0]]),
        "dot(list)": lambda: ember.dot([1.0], [2.0]),
        "einsum(list)": lambda: ember.einsum("ij->ji", [[1.0, 2.0]]),
        "bmm(list)": lambda: ember.bmm(a, [[[1.0]]]),
    }
    wrong = []
    for name, fn in calls.items():
        try:
            fn()
            wrong.append(f"{name}: no error")
        except TypeError:
            pass
        except Exception as e:  # noqa: BLE001 - report what was raised instead
            wrong.append(f"{name}: {type(e).__name__}: {e}")
    assert not wrong, wrong


def test_int64_matmul_is_exact(device):
    a = np.array([[2**40 + 1, 3], [-(2**35) - 1, 7]], np.int64)
    b = np.array([[2**12 + 1, 5], [11, -(2**20) - 3]], np.int64)
    check(ember.mm(T(a, device), T(b, device)), a @ b, ember.int64)
    check(ember.matmul(T(a, device), T(b[:, 0].copy(), device)), a @ b[:, 0], ember.int64)
    check(ember.bmm(T(a[None], device), T(b[None], device)), (a @ b)[None], ember.int64)


@given(shapes=mutually_broadcastable_shapes(signature="(m?,n),(n,p?)->(m?,p?)", max_dims=4,
                                            min_side=1, max_side=4),
       dtype=st.sampled_from([ember.float32, ember.float64, ember.int64]),
       seed=st.integers(0, 2**16))
@hset(50)
def test_hypothesis_matmul_broadcasting(device, shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a, b = rand(rng, sa, dtype), rand(rng, sb, dtype)
    exp = ref(a, b, dtype)
    r = ember.matmul(T(a, device, dtype), T(b, device, dtype))
    check(r, exp, dtype)
