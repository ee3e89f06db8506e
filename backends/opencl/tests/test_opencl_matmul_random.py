"""bmm (tiled GEMM: batched, transposed, ragged sizes, several dtypes) and Philox random
numbers (reproducible, equal to the CPU backend's)."""
import numpy as np
import pytest

import ember
from ocl_helpers import DEV, N, T, np_dtype

rng = np.random.default_rng(4)


@pytest.mark.parametrize("n,k,m", [(1, 1, 1), (5, 3, 7), (64, 64, 64), (70, 130, 65),
                                   (128, 784, 10)])
def test_mm_layouts(n, k, m):
    a = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal((k, m)).astype(np.float32)
    exp = a.astype(np.float64) @ b
    ta, tb = T(a), T(b)
    ta_t, tb_t = T(np.ascontiguousarray(a.T)).t(), T(np.ascontiguousarray(b.T)).t()
    for x, y in ((ta, tb), (ta_t, tb), (ta, tb_t), (ta_t, tb_t)):
        np.testing.assert_allclose(N(x @ y), exp, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,k,m", [(5, 3, 7), (70, 130, 65), (16, 33, 48),
                                   # short k: gemm_cpu's work-items take several row
                                   # blocks, the last group ragged; k a multiple of
                                   # pack_b's 16 rows and not
                                   (300, 20, 70), (40, 16, 33), (50, 17, 32)])
def test_both_gemm_kernels_on_every_layout(monkeypatch, n, k, m):
    # float32 on a CPU device runs gemm_cpu (register-blocked, b packed into panels); the
    # local-memory tiled kernel GPUs get is checked here too, forced on this device
    from ember_opencl import _runtime as rt
    a = rng.standard_normal((2, n, k)).astype(np.float32)
    b = rng.standard_normal((2, k, m)).astype(np.float32)
    exp = a.astype(np.float64) @ b
    ta, tb = T(a), T(b)
    ta_t = T(np.ascontiguousarray(a.transpose(0, 2, 1))).transpose(1, 2)
    tb_t = T(np.ascontiguousarray(b.transpose(0, 2, 1))).transpose(1, 2)
    cases = [(ta, tb, exp), (ta_t, tb, exp), (ta, tb_t, exp), (ta_t, tb_t, exp),
             # a strided a, and a b broadcast over the batch (batch stride 0)
             (ta[:, ::2], tb[1], a[:, ::2].astype(np.float64) @ b[1])]
    for is_cpu in (True, False):
        monkeypatch.setattr(rt.device(0), "is_cpu", is_cpu)
        for x, y, want in cases:
            np.testing.assert_allclose(N(ember.matmul(x, y)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", [(6, 8), (12, 16)], ids=["6x16", "12x32"])
def test_gemm_cpu_register_blocks(monkeypatch, block):
    # gemm_cpu's two register blocks (6 rows x 2 AVX2 vectors; 12 rows x 2 AVX-512 vectors,
    # which a device with 16 float lanes gets): built here whatever the device reports, on
    # ragged n, m and k, transposed and batched operands, against float64 NumPy
    from ember_opencl import _runtime as rt
    from ember_opencl.ops import matmul as mm
    dev = rt.device(0)
    if not dev.is_cpu:
        pytest.skip("gemm_cpu runs on CPU devices only")

    def forget():
        dev._programs.pop("matmul", None)
        for key in [k for k in dev._kernels if k[0] == "matmul"]:
            del dev._kernels[key]
    monkeypatch.setattr(mm, "_cpu_block", lambda d: block)
    forget()
    try:
        for n, k, m in [(1, 1, 1), (13, 7, 33), (25, 40, 31), (12, 300, 64), (37, 129, 100)]:
            a = rng.standard_normal((3, n, k)).astype(np.float32)
            b = rng.standard_normal((3, k, m)).astype(np.float32)
            exp = a.astype(np.float64) @ b
            ta_t = T(np.ascontiguousarray(a.transpose(0, 2, 1))).transpose(1, 2)
            tb_t = T(np.ascontiguousarray(b.transpose(0, 2, 1))).transpose(1, 2)
            for x, y in ((T(a), T(b)), (ta_t, tb_t), (T(a), tb_t)):
                np.testing.assert_allclose(N(ember.matmul(x, y)), exp, rtol=1e-4, atol=1e-4)
    finally:
        monkeypatch.undo()
        forget()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int64,
                                   ember.int32], ids=lambda d: d.name)
def test_bmm_dtypes(dtype):
    a = rng.integers(-3, 4, (3, 9, 17)).astype(np_dtype(dtype))
    b = rng.integers(-3, 4, (3, 17, 5)).astype(np_dtype(dtype))
    got = ember.bmm(T(a, dtype), T(b, dtype))
    np.testing.assert_array_equal(N(got), (a.astype(np.int64) @ b).astype(np_dtype(dtype)))
    # a broadcast batch operand (stride 0) through matmul
    got = ember.matmul(T(a, dtype), T(b[0], dtype))
    np.testing.assert_array_equal(N(got), (a.astype(np.int64) @ b[0]).astype(np_dtype(dtype)))


def test_matmul_empty_and_vector():
    assert N(T(np.zeros((0, 3), np.float32)) @ T(np.ones((3, 2), np.float32))).shape == (0, 2)
    np.testing.assert_array_equal(N(T(np.zeros((2, 0), np.float32)) @ T(np.zeros((0, 3),
                                                                                   np.float32))),
                                  np.zeros((2, 3)))
    v = rng.standard_normal(6).astype(np.float32)
    np.testing.assert_allclose(N(T(v) @ T(v)), v @ v, rtol=1e-5)


def _gen():
    return ember.Generator(DEV)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16,
                                   ember.bfloat16], ids=lambda d: d.name)
def test_random_is_reproducible_and_matches_cpu(dtype):
    for kind in ("rand", "randn"):
        f = getattr(ember, kind)
        a = f(1000, generator=_gen().manual_seed(7), dtype=dtype, device=DEV)
        b = f(1000, generator=_gen().manual_seed(7), dtype=dtype, device=DEV)
        np.testing.assert_array_equal(N(a), N(b))
        c = f(1000, generator=ember.Generator().manual_seed(7), dtype=dtype)
        tol = 1e-6 if dtype in (ember.float32, ember.float64) else 1e-2
        np.testing.assert_allclose(N(a), N(c), rtol=tol, atol=tol)
    g = _gen().manual_seed(3)
    first, second = ember.rand(10, generator=g, device=DEV), ember.rand(10, generator=g,
                                                                         device=DEV)
    assert not np.array_equal(N(first), N(second))          # the offset advances


def test_random_statistics_and_strided_fill():
    x = N(ember.randn(200000, generator=_gen().manual_seed(1), device=DEV))
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    u = N(ember.rand(200000, generator=_gen().manual_seed(1), device=DEV))
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    t = ember.zeros(4, 6, device=DEV)
    t[:, ::2].uniform_(2, 3)
    v = N(t)
    assert (v[:, ::2] >= 2).all() and (v[:, 1::2] == 0).all()
