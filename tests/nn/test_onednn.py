"""The oneDNN paths of the CPU backend against ember's own kernels and PyTorch: dense
convolution (forward, input gradient, filter gradient) on the convolution configurations
of the op database and the layouts models use (strides, padding, dilation, groups, 1-3
spatial dims, channels-last and strided inputs, float32 and the dtypes oneDNN leaves to
ember), and float32 matrix products (mm, bmm, linear and the recurrent layers' GEMMs:
transposed, strided, batched operands).

oneDNN is optional (``ember-cpu[onednn]``); ``make test`` installs it, so on CI these
tests run. Without it they are skipped with that reason.
"""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

C = pytest.importorskip("ember_cpu._C")
ember.zeros(1)  # loads the backend (and oneDNN with it)
pytestmark = pytest.mark.skipif(not C.onednn_loaded(),
                                reason="oneDNN is not installed (pip install 'ember-cpu[onednn]')")

FN = {1: (F.conv1d, torch.nn.functional.conv1d), 2: (F.conv2d, torch.nn.functional.conv2d),
      3: (F.conv3d, torch.nn.functional.conv3d)}

# (input shape, weight shape, conv kwargs): the op database's dense_conv samples and more
CONFIGS = [
    ((2, 4, 6, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, groups=2)),
    ((3, 2, 5, 5), (4, 2, 1, 1), {}),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(dilation=(1, 2), padding=(2, 1))),
    ((2, 3, 9), (4, 3, 3), dict(padding=1, dilation=2)),
    ((2, 4, 4, 4), (4, 4, 3, 3), dict(padding=2)),
    ((2, 4, 6, 6), (4, 2, 3, 3), dict(stride=2, padding=1, groups=2)),
    ((3, 4, 5), (2, 4, 1), {}),
    ((2, 16, 8, 8), (32, 16, 3, 3), dict(padding=1)),              # blocked layouts
    ((2, 32, 8, 8), (64, 32, 1, 1), dict(stride=2)),               # strided 1x1
    ((1, 3, 17, 17), (8, 3, 5, 5), dict(stride=4, padding=2)),     # stem: floor division
    ((2, 8, 7, 7), (8, 2, 3, 3), dict(padding="same", groups=4)),
    ((2, 4, 6, 6), (5, 4, 2, 2), dict(padding="same")),            # asymmetric padding
    ((2, 4, 9, 9), (6, 4, 4, 4), dict(padding=1, stride=3)),       # unused last rows
    ((1, 4, 5, 6, 7), (3, 4, 3, 3, 3), dict(padding=1)),
    ((2, 4, 5, 6, 7), (6, 2, 3, 1, 2), dict(stride=(1, 2, 1), groups=2, dilation=(2, 1, 1))),
    ((1, 8, 6, 6), (16, 8, 3, 3), dict(padding=1)),  # one sample: split over channels
    ((3, 8, 6, 6), (16, 8, 3, 3), dict(padding=1)),  # uneven batch chunks
]


def _run(lib, fn, x, w, b, g, kw, onednn):
    C.set_onednn_enabled(onednn)
    try:
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        bt = lib.tensor(b, requires_grad=True)
        y = fn(xt, wt, bt, **kw)
        y.backward(lib.tensor(g))
        return [t.detach().numpy() for t in (y, xt.grad, wt.grad, bt.grad)]
    finally:
        C.set_onednn_enabled(True)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("xs,ws,kw", CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_forward_and_gradients_match_ember_and_torch(xs, ws, kw):
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    ef, tf = FN[len(xs) - 2]
    expected_y = tf(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
    g = rng.standard_normal(tuple(expected_y.shape)).astype(np.float32)
    oracle = _run(torch, tf, x, w, b, g, kw, True)
    calls = C.onednn_calls()
    via_onednn = _run(ember, ef, x, w, b, g, kw, True)
    assert C.onednn_calls() >= calls + 3  # forward, input gradient, filter gradient (in parts)
    via_ember = _run(ember, ef, x, w, b, g, kw, False)
    for name, o, e, t in zip(("output", "input grad", "weight grad", "bias grad"), via_onednn,
                             via_ember, oracle):
        scale = float(np.abs(t).max()) or 1.0
        np.testing.assert_allclose(o / scale, t / scale, rtol=0, atol=2e-6, err_msg=name)
        np.testing.assert_allclose(o / scale, e / scale, rtol=0, atol=2e-6, err_msg=name)


def test_no_input_channels_gives_the_bias():
    # an empty sum over channels: the bias everywhere (PyTorch 2.13 returns no channels here)
    x, w, b = ember.ones(1, 0, 5, 5), ember.ones(3, 0, 3, 3), ember.tensor([1.0, 2.0, 3.0])
    expected = np.broadcast_to(np.array([1.0, 2.0, 3.0], np.float32)[:, None, None], (1, 3, 3, 3))
    np.testing.assert_array_equal(F.conv2d(x, w, b).numpy(), expected)


@pytest.mark.parametrize("xs,ws,kw", [
    ((1, 8, 6, 6), (8, 2, 3, 3), dict(groups=4, padding=1)),  # grouped, one sample
])
def test_calls_oneDNN_declines_match_torch(xs, ws, kw):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    expected_y = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
    g = rng.standard_normal(tuple(expected_y.shape)).astype(np.float32)
    oracle = _run(torch, torch.nn.functional.conv2d, x, w, b, g, kw, True)
    got = _run(ember, F.conv2d, x, w, b, g, kw, True)
    for name, o, t in zip(("output", "input grad", "weight grad", "bias grad"), got, oracle):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-5, err_msg=name)


def test_channels_last_and_strided_operands():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 8)).astype(np.float32)   # (O, kh, kw, C): permuted below
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w).permute(0, 3, 1, 2),
                                          padding=1, stride=(1, 2)).numpy()
    xe = ember.tensor(x).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # channels-last
    we = ember.tensor(w).permute(0, 3, 1, 2)
    xs = ember.tensor(np.repeat(x, 2, axis=3))[..., ::2]                    # a strided view
    for xi in (xe, xs):
        for on in (True, False):
            C.set_onednn_enabled(on)
            try:
                out = F.conv2d(xi, we, padding=1, stride=(1, 2)).numpy()
            finally:
                C.set_onednn_enabled(True)
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [ember.float64, ember.bfloat16])
def test_other_dtypes_run_embers_kernels(dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    tdtype = getattr(torch, str(dtype).split(".")[-1])
    expected = torch.nn.functional.conv2d(torch.tensor(x, dtype=tdtype),
                                          torch.tensor(w, dtype=tdtype), padding=1)
    out = F.conv2d(ember.tensor(x, dtype=dtype), ember.tensor(w, dtype=dtype), padding=1)
    tol = 1e-12 if dtype == ember.float64 else 5e-2
    np.testing.assert_allclose(out.float().numpy(), expected.float().numpy(), rtol=tol,
                               atol=tol * 10)


def test_flags_switch_the_path():
    assert ember.backends.mkldnn.is_available() is True
    assert ember.backends.mkldnn.enabled is True and C.onednn_enabled()
    with ember.backends.mkldnn.flags(enabled=False):
        assert ember.backends.mkldnn.enabled is False and not C.onednn_enabled()
    assert ember.backends.mkldnn.enabled is True and C.onednn_enabled()


MATMULS = [  # (batch or None, n, k, m, a transposed, b transposed): >= 2**21 multiply-adds
    (None, 128, 128, 128, False, False), (None, 300, 200, 100, True, False),
    (None, 70, 500, 90, False, True), (4, 64, 128, 80, True, True), (3, 70, 150, 90, False, True),
    (None, 1, 4096, 600, False, False), (16, 128, 1, 1200, False, False),
]


@pytest.mark.parametrize("batch,n,k,m,ta,tb", MATMULS)
def test_matmul_matches_openblas_and_torch(batch, n, k, m, ta, tb):
    rng = np.random.default_rng(n * k + m)
    lead = () if batch is None else (batch,)
    a = rng.standard_normal(lead + (n, k)).astype(np.float32)
    b = rng.standard_normal(lead + (k, m)).astype(np.float32)
    g = rng.standard_normal(lead + (n, m)).astype(np.float32)

    def operand(lib, x, transposed):  # the same values, stored transposed when asked
        if transposed:
            t = lib.tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2))).transpose(-1, -2)
        else:
            t = lib.tensor(x)
        return t.detach().requires_grad_(True)

    def run(lib, onednn):
        C.set_onednn_enabled(onednn)
        try:
            x, y = operand(lib, a, ta), operand(lib, b, tb)
            out = x @ y
            out.backward(lib.tensor(g))
            return [t.detach().numpy() for t in (out, x.grad, y.grad)]
        finally:
            C.set_onednn_enabled(True)
    oracle = run(torch, True)
    calls = C.onednn_calls()
    via_onednn = run(ember, True)
    assert C.onednn_calls() >= calls + 3  # the product and both gradients
    via_blas = run(ember, False)
    for name, o, e, t in zip(("product", "grad a", "grad b"), via_onednn, via_blas, oracle):
        scale = float(np.abs(t).max()) or 1.0
        np.testing.assert_allclose(o / scale, t / scale, rtol=0, atol=3e-6, err_msg=name)
        np.testing.assert_allclose(o / scale, e / scale, rtol=0, atol=3e-6, err_msg=name)


def test_small_products_and_broadcast_batches_stay_with_openblas():
    threads = ember.get_num_threads()
    ember.set_num_threads(2)  # (with a thread per batch entry a part has no batch stride)
    try:
        _small_and_broadcast()
    finally:
        ember.set_num_threads(threads)


def _small_and_broadcast():
    calls = C.onednn_calls()
    a = ember.ones(2, 64, 64)
    (a @ a).numpy()                                   # 524,288 multiply-adds: below the cut
    big = ember.ones(128, 128)
    (ember.ones(3, 128, 128) @ big.expand(3, 128, 128)).numpy()  # batch stride 0
    assert C.onednn_calls() == calls
    with ember.backends.mkldnn.flags(enabled=False):
        (big @ big).numpy()
    assert C.onednn_calls() == calls
    (big @ big).numpy()
    assert C.onednn_calls() > calls


def test_lstm_training_step_matches_torch():
    torch.manual_seed(0)
    tl = torch.nn.LSTM(64, 128, num_layers=2)
    el = ember.nn.LSTM(64, 128, num_layers=2)
    el.load_state_dict({k: v.detach().numpy() for k, v in tl.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((12, 16, 64)).astype(np.float32)
    tout, _ = tl(torch.tensor(x))
    tout.square().mean().backward()
    calls = C.onednn_calls()
    eout, _ = el(ember.tensor(x))
    eout.square().mean().backward()
    assert C.onednn_calls() > calls
    np.testing.assert_allclose(eout.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    for (name, tp), ep in zip(tl.named_parameters(), el.parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
