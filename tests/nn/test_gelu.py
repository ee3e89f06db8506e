"""GELU as one op (``gelu`` / ``gelu_backward``, both approximations), against PyTorch:
values on special inputs and every float dtype, first and second derivatives, errors,
devices, and one kernel per pass."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatcher import OPS

_SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, -3.6, -5.0, -5.5,
            5.0, 9.0, 12.0, -12.0, 30.0, -30.0, 1e30, -1e30, np.inf, -np.inf, np.nan]


def _inputs(dtype=np.float32):
    r = np.random.default_rng(3)
    return np.concatenate([np.array(_SPECIAL), r.standard_normal(4000) * 3,
                           r.uniform(-10, 10, 1000)]).astype(dtype)


def _devices():
    out = ["cpu"]
    try:
        import ember_opencl
        if ember_opencl.is_available():
            out.append("opencl")
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_values_follow_pytorch(device, approximate, dtype):
    x = _inputs(np.float64)
    tx = torch.tensor(x, dtype=getattr(torch, dtype))
    want = TF.gelu(tx, approximate=approximate)
    got = F.gelu(ember.tensor(x).to(getattr(ember, dtype)).to(device), approximate=approximate)
    assert got.dtype is getattr(ember, dtype) and got.device.type == device
    g = got.cpu().float().numpy().astype(np.float64)
    w = want.float().numpy().astype(np.float64)
    # gelu(+inf) is +inf (PyTorch's float64 and float16, its one-element float32 calls, and
    # its tanh form); its vectorised float32 / bfloat16 erf loops give NaN there
    pinf = x == np.inf
    assert np.all(g[pinf] == np.inf)
    w[pinf] = np.inf
    assert np.array_equal(np.isnan(g), np.isnan(w))
    tol = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-14), "float16": (2e-3, 1e-3),
           "bfloat16": (1.6e-2, 1e-2)}[dtype]
    np.testing.assert_allclose(g, w, rtol=tol[0], atol=tol[1])
    # the sign of zero results (gelu(-0) is -0) and infinities
    for v in (-0.0, np.inf, -np.inf):
        i = int(np.flatnonzero((x == v) & (np.signbit(x) == np.signbit(v)))[0])
        if not np.isnan(w[i]):      # (gelu(-inf) is NaN: -inf * 0)
            assert np.signbit(g[i]) == np.signbit(w[i]), (v, g[i], w[i])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_shapes_views_and_module(approximate):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    et, tt = ember.tensor(x), torch.tensor(x)
    for ev, tv in ((et.t(), tt.t()), (et[:, ::2], tt[:, ::2]), (et[0, 0], tt[0, 0]),
                   (et[:0], tt[:0])):
        got = F.gelu(ev, approximate=approximate)
        assert tuple(got.shape) == tuple(tv.shape)
        np.testing.assert_allclose(got.numpy(), TF.gelu(tv, approximate=approximate).numpy(),
                                   rtol=2e-6, atol=1e-7)
    m = nn.GELU(approximate=approximate)
    np.testing.assert_allclose(m(et).numpy(), TF.gelu(tt, approximate=approximate).numpy(),
                               rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_first_and_second_derivatives_follow_pytorch(approximate):
    x = np.concatenate([np.array([0.0, -0.0, 1.0, -1.0, -3.0, 4.0, -6.0, 20.0, -20.0]),
                        np.random.default_rng(2).standard_normal(200) * 3])
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x, requires_grad=True)
    ty = TF.gelu(tx, approximate=approximate)
    ey = F.gelu(ex, approximate=approximate)
    w = np.random.default_rng(4).standard_normal(x.shape)
    (tg,) = torch.autograd.grad(ty, tx, torch.tensor(w), create_graph=True)
    (eg,) = ember.autograd.grad(ey, ex, ember.tensor(w), create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    # second order: d/dx of sum(grad * v), and its derivative through grad_output
    v = np.random.default_rng(5).standard_normal(x.shape)
    (tgg,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), tx)
    (egg,) = ember.autograd.grad((eg * ember.tensor(v)).sum(), ex)
    np.testing.assert_allclose(egg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_second_derivative_against_finite_differences(approximate):
    # gelu''(x), independently of PyTorch: central differences of gelu'(x) in float64
    x = np.linspace(-6, 6, 97)
    h = 1e-5

    def d1(v):
        t = ember.tensor(v, requires_grad=True)
        (g,) = ember.autograd.grad(F.gelu(t, approximate=approximate).sum(), t)
        return g.numpy()
    t = ember.tensor(x, requires_grad=True)
    (g,) = ember.autograd.grad(F.gelu(t, approximate=approximate).sum(), t, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), t)
    np.testing.assert_allclose(gg.numpy(), (d1(x + h) - d1(x - h)) / (2 * h), rtol=1e-6,
                               atol=1e-8)


def test_errors_follow_pytorch():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(ember.ones(3), approximate="foo")
    with pytest.raises(NotImplementedError, match="gelu"):
        F.gelu(ember.ones(3, dtype=ember.int64))
    with pytest.raises(TypeError):
        F.gelu([1.0, 2.0])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_one_kernel_per_pass(approximate, monkeypatch):
    # forward is one gelu kernel and backward one gelu_backward kernel (not the five or
    # nine elementwise passes of the formula written out)
    calls = []
    for name in ("gelu", "gelu_backward"):
        k = OPS[name].kernels["cpu"]

        def spy(*a, _k=k, _n=name, **kw):
            calls.append(_n)
            return _k(*a, **kw)
        monkeypatch.setitem(OPS[name].kernels, "cpu", spy)
    x = ember.randn(64, requires_grad=True)
    F.gelu(x, approximate=approximate).sum().backward()
    assert calls == ["gelu", "gelu_backward"]
