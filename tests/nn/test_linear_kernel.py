"""F.linear with a bias through the CPU backend's linear kernel (the bias added inside the
product: written into the output, the product accumulated onto it on OpenBLAS; oneDNN's
matmul bias when oneDNN is loaded) against PyTorch: float32 and float64, small and large
products, transposed, strided and batched operands, empty and k = 0 shapes, gradients;
the other dtypes take the composite (mm, then an add)."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.dispatcher.schema import OPS

C = pytest.importorskip("ember_cpu._C")
ember.zeros(1)  # loads the backend
ONEDNN = [False, True] if C.onednn_loaded() else [False]


def _operands(n, k, m, layout, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = (rng.standard_normal((m, k)) / np.sqrt(max(k, 1))).astype(dtype)
    b = rng.standard_normal(2 * m).astype(dtype)
    return x, w, b


def _views(lib, x, w, b, layout):
    """The operands as ``lib`` tensors in the layout under test (same values)."""
    if layout == "transposed":      # x and w stored transposed (x.t().t() patterns)
        xt = lib.tensor(np.ascontiguousarray(x.T)).t()
        wt = lib.tensor(np.ascontiguousarray(w.T)).t()
    else:
        xt, wt = lib.tensor(x), lib.tensor(w)
    bt = lib.tensor(b)
    bias = bt[::2] if layout == "strided_bias" else bt[: w.shape[0]]
    return xt, wt, bias


@pytest.mark.parametrize("onednn", ONEDNN)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided_bias"])
@pytest.mark.parametrize("n,k,m", [(5, 7, 3), (256, 128, 160), (48, 128, 512), (1, 64, 33)])
def test_linear_matches_torch(n, k, m, layout, dtype, onednn):
    x, w, b = _operands(n, k, m, layout, dtype)
    C.set_onednn_enabled(onednn)
    try:
        xe, we, be = _views(ember, x, w, b, layout)
        ours = F.linear(xe, we, be).numpy()
    finally:
        C.set_onednn_enabled(True)
    xt, wt, bt = _views(torch, x.astype(np.float64), w.astype(np.float64),
                        b.astype(np.float64), layout)
    ref = torch.nn.functional.linear(xt, wt, bt).numpy()
    assert ours.dtype == dtype and ours.shape == (n, m)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * 10)


def test_the_kernel_runs_and_oneDNN_takes_large_products():
    x, w, b = _operands(256, 128, 160, "contiguous", np.float32)
    k = OPS["linear"].kernels["cpu"]
    calls = []
    OPS["linear"].kernels["cpu"] = lambda *a, **kw: calls.append(1) or k(*a, **kw)
    try:
        before = C.onednn_calls()
        F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b[:160]))
        if C.onednn_loaded():
            assert C.onednn_calls() > before
    finally:
        OPS["linear"].kernels["cpu"] = k
    assert calls == [1]


@pytest.mark.parametrize("shape", [(0, 4, 3), (4, 0, 3), (2, 3, 0)])
def test_empty_and_no_inner_dim(shape):
    n, k, m = shape
    x, w, b = _operands(n, k, m, "contiguous", np.float32)
    ours = F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b[:m])).numpy()
    ref = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w),
                                     torch.tensor(b[:m])).numpy()
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(ours, ref)   # k = 0: the bias on every row


@pytest.mark.parametrize("onednn", ONEDNN)
def test_batched_input_and_gradients(onednn):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 70, 96)).astype(np.float32)
    w = rng.standard_normal((128, 96)).astype(np.float32) * 0.1
    b = rng.standard_normal(128).astype(np.float32)
    g = rng.standard_normal((4, 70, 128)).astype(np.float32)
    C.set_onednn_enabled(onednn)
    try:
        ts = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = F.linear(*ts)
        y.backward(ember.tensor(g))
        ours = [y.detach().numpy()] + [t.grad.numpy() for t in ts]
    finally:
        C.set_onednn_enabled(True)
    tt = [torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, w, b)]
    yt = torch.nn.functional.linear(*tt)
    yt.backward(torch.tensor(g.astype(np.float64)))
    for a, r in zip(ours, [yt.detach()] + [t.grad for t in tt]):
        np.testing.assert_allclose(a, r.numpy(), rtol=2e-5, atol=2e-4)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16, ember.int32])
def test_other_dtypes_take_the_composite(dtype):
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (6, 5))
    w = rng.integers(-3, 4, (4, 5))
    b = rng.integers(-3, 4, 4)
    tdt = getattr(torch, str(dtype).split(".")[-1])
    ours = F.linear(*(ember.tensor(a).to(dtype) for a in (x, w, b)))
    ref = torch.nn.functional.linear(*(torch.tensor(a).to(tdt) for a in (x, w, b)))
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.to(ember.float64).numpy(), ref.double().numpy())


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_dtypes_round_once_as_torch(dtype, batched):
    """bfloat16/float16 linear with a bias is PyTorch's addmm: the bias is added to the
    float32 accumulators and the sum rounded once (a product rounded, then a rounded add,
    differs in the last bit for about a third of the elements)."""
    rng = np.random.default_rng(7)
    shape = (4, 8, 10) if batched else (32, 10)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (shape, (24, 10), (24,)))
    ours = F.linear(*(ember.tensor(a).to(getattr(ember, dtype)) for a in (x, w, b)))
    ref = torch.nn.functional.linear(*(torch.tensor(a).to(getattr(torch, dtype))
                                       for a in (x, w, b)))
    assert ours.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(ours.float().numpy(), ref.float().numpy())
