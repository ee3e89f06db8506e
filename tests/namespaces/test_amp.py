"""ember.amp (autocast state, GradScaler) against torch.amp on CPU."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.amp as amp
from ember.dispatcher import autocast as AC


def _linear_pair(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    em, tm = ember.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with ember.no_grad():
        em.weight.copy_(ember.tensor(w))
        em.bias.copy_(ember.tensor(b))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
        tm.bias.copy_(torch.tensor(b))
    return em, tm


# steps whose loss is multiplied by inf (their gradients are inf/NaN and the step skipped)
BAD_STEPS = {2, 5, 6}


@pytest.mark.parametrize("growth_interval", [1, 2, 3])
def test_grad_scaler_trajectory_matches_torch(growth_interval):
    em, tm = _linear_pair()
    eo = ember.optim.SGD(em.parameters(), lr=0.1)
    to = torch.optim.SGD(tm.parameters(), lr=0.1)
    es = amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=growth_interval)
    ts = torch.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=growth_interval)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for step in range(9):
        mult = float("inf") if step in BAD_STEPS else 1.0
        el = (em(ember.tensor(x)) ** 2).mean() * mult
        tl = (tm(torch.tensor(x)) ** 2).mean() * mult
        eo.zero_grad()
        to.zero_grad()
        es.scale(el).backward()
        ts.scale(tl).backward()
        er, tr = es.step(eo), ts.step(to)
        assert (er is None) == (tr is None)
        es.update()
        ts.update()
        assert es.get_scale() == ts.get_scale()
        assert es._get_growth_tracker() == ts._get_growth_tracker()
        np.testing.assert_allclose(em.weight.detach().numpy(), tm.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert es.state_dict() == ts.state_dict()


def test_scale_and_unscale_values():
    es, ts = amp.GradScaler("cpu", init_scale=8.0), torch.amp.GradScaler("cpu", init_scale=8.0)
    el, tl = ember.tensor(3.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)
    se, st = es.scale(el), ts.scale(tl)
    assert se.item() == st.item() and tuple(se.shape) == tuple(st.shape)
    assert es.scale([el, (el,)])[1][0].item() == 24.0
    p_e, p_t = ember.nn.Parameter(ember.ones(2)), torch.nn.Parameter(torch.ones(2))
    p_e.grad, p_t.grad = ember.tensor([8.0, 16.0]), torch.tensor([8.0, 16.0])
    oe, ot = ember.optim.SGD([p_e], lr=1.0), torch.optim.SGD([p_t], lr=1.0)
    es.unscale_(oe)
    ts.unscale_(ot)
    assert p_e.grad.tolist() == p_t.grad.tolist() == [1.0, 2.0]


def test_scaler_misuse_errors_match_torch():
    for mod, SGD, T in ((amp, ember.optim.SGD, ember), (torch.amp, torch.optim.SGD, torch)):
        s = mod.GradScaler("cpu")
        p = T.nn.Parameter(T.ones(1))
        opt = SGD([p], lr=0.1)
        with pytest.raises(AssertionError, match="_scale is None"):
            s.step(opt)
        s.scale(T.ones(1) * p).sum().backward()
        s.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            s.unscale_(opt)
        s.step(opt)
        with pytest.raises(RuntimeError, match=r"step\(\) has already been called"):
            s.step(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            s.step(opt, closure=lambda: None)
        s.update()
        with pytest.raises(RuntimeError, match="source state dict is empty"):
            s.load_state_dict({})


def test_scaler_disabled_and_state_dict_round_trip():
    s = amp.GradScaler("cpu", enabled=False)
    assert s.state_dict() == {} and s.get_scale() == 1.0
    a = amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, growth_interval=7)
    a.scale(ember.ones(1))
    b = amp.GradScaler("cpu")
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict()
    c = pickle.loads(pickle.dumps(a))
    assert c.get_scale() == 4.0 and c.get_growth_interval() == 7
    a.update(2.0)
    assert a.get_scale() == 2.0
    with pytest.raises(AssertionError, match="growth factor"):
        amp.GradScaler("cpu", growth_factor=0.5)


def test_grad_scaler_default_device_cuda_disables_without_gpu():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = amp.GradScaler()
    assert not s.is_enabled() and any("not available" in str(m.message) for m in w)


# ---- autocast state --------------------------------------------------------------------
def test_autocast_state_matches_torch():
    assert ember.get_autocast_dtype("opencl") == ember.bfloat16     # (as cpu: the issue)
    for mod, T in ((ember, ember), (torch, torch)):
        assert mod.is_autocast_enabled("cpu") is False
        assert mod.get_autocast_dtype("cpu") == T.bfloat16
        assert mod.get_autocast_dtype("cuda") == T.float16
        with mod.autocast("cpu"):
            assert mod.is_autocast_enabled("cpu") is True
            assert mod.is_autocast_enabled() is False      # the CUDA switch
            with mod.autocast("cpu", enabled=False):
                assert mod.is_autocast_enabled("cpu") is False
            with mod.autocast("cpu", dtype=T.float16):
                assert mod.get_autocast_dtype("cpu") == T.float16
            assert mod.get_autocast_dtype("cpu") == T.bfloat16
        assert mod.is_autocast_enabled("cpu") is False
    assert AC.ACTIVE[0] == 0


def test_autocast_decorator_and_errors():
    @ember.autocast("cpu")
    def f():
        return ember.is_autocast_enabled("cpu")
    assert f() is True and ember.is_autocast_enabled("cpu") is False
    for mod in (ember, torch):
        with pytest.raises(ValueError, match="device_type"):
            mod.autocast(1)
    assert amp.is_autocast_available("cpu") == torch.amp.is_autocast_available("cpu")
    assert amp.is_autocast_available("cuda") == torch.amp.is_autocast_available("cuda")
    with pytest.raises(RuntimeError):
        torch.amp.is_autocast_available("foo")
    with pytest.raises(RuntimeError):
        amp.is_autocast_available("foo")


def test_cpu_autocast_refuses_float32_with_warning():
    for mod, T in ((ember, ember), (torch, torch)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with mod.autocast("cpu", dtype=T.float32):
                assert mod.is_autocast_enabled("cpu") is False
        assert any("target dtype is not supported" in str(m.message) for m in w)


def test_custom_fwd_needs_device_type():
    with pytest.raises(TypeError):
        torch.amp.custom_fwd(lambda ctx, x: x)
    with pytest.raises(TypeError):
        amp.custom_fwd(lambda ctx, x: x)

    class Double(ember.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, x):
            ctx.enabled_inside = ember.is_autocast_enabled("cpu")
            return x * 2

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2

    x = ember.ones(2, dtype=ember.bfloat16, requires_grad=True)
    with ember.autocast("cpu"):
        y = Double.apply(x)
    assert y.dtype is ember.float32     # cast_inputs under autocast
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ---- the casting policy (what the dispatcher hook applies), against torch's results ------
POLICY_CASES = [  # (ember name, torch call on float32 inputs under CPU autocast)
    ("mm", lambda a, b: torch.mm(a, b)),
    ("linear", lambda a, b: torch.nn.functional.linear(a, b)),
    ("bmm", lambda a, b: torch.bmm(a[None], b[None])),
    ("mse_loss", lambda a, b: torch.nn.functional.mse_loss(a, b)),
    ("exp", lambda a, b: torch.exp(a)),
    ("softmax", lambda a, b: torch.softmax(a, 0)),
    ("sum", lambda a, b: a.sum()),
]


@pytest.mark.parametrize("name,call", POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
def test_cast_policy_dtype_matches_torch(name, call, in_dtype):
    a = torch.randn(3, 3, dtype=getattr(torch, in_dtype))
    with torch.autocast("cpu"):
        expected = call(a, a).dtype
    e = ember.randn(3, 3).to(getattr(ember, in_dtype))
    with ember.autocast("cpu"):
        cast = AC.cast_args(name, (e, e))
    # an op outside every list keeps its inputs; its result dtype is the inputs'
    assert str(cast[0].dtype).split(".")[-1] == str(expected).split(".")[-1]


def test_cast_is_recorded_by_autograd():
    x = ember.randn(2, 2, requires_grad=True)
    with ember.autocast("cpu"):
        (xc, _) = AC.cast_args("mm", (x, x))
    assert xc.dtype is ember.bfloat16 and xc.grad_fn is not None
    xc.float().sum().backward()
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_no_cast_outside_autocast_or_for_float64():
    x = ember.randn(2, 2)
    assert AC.cast_args("mm", (x, x))[0] is x
    d = x.double()
    with ember.autocast("cpu"):
        assert AC.cast_args("mm", (d, d))[0] is d


def test_autocast_runs_ops_in_torchs_dtypes_end_to_end():
    a = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    img = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    ker = np.random.default_rng(2).standard_normal((3, 2, 3, 3)).astype(np.float32)
    results = []
    for T, F in ((ember, ember.nn.functional), (torch, torch.nn.functional)):
        x = T.tensor(a, requires_grad=True)
        with T.autocast("cpu"):
            y = x @ x
            z = F.linear(x, x)
            c = F.conv2d(T.tensor(img), T.tensor(ker))
            p = y.prod()
            s = y.sum()
        (y.float().sum() + z.float().sum()).backward()
        results.append([str(t.dtype).split(".")[-1] for t in (y, z, c, p, s, x.grad)])
    assert results[0] == results[1]


def test_unscale_reads_nothing_on_the_host_per_parameter(monkeypatch):
    """The inf/NaN check stays on the device: no value comes to the host while unscaling,
    one per device when step() decides (PyTorch: _amp_foreach_non_finite_check_and_unscale_
    writes found_inf on the device)."""
    model = ember.nn.Sequential(*[ember.nn.Linear(4, 4) for _ in range(5)])
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    scaler.scale(model(ember.randn(2, 4)).sum()).backward()
    reads = []
    for name in ("item", "__bool__", "tolist", "numpy"):
        orig = getattr(ember.Tensor, name)
        monkeypatch.setattr(ember.Tensor, name,
                            lambda self, *a, _o=orig, _n=name, **k: (reads.append(_n),
                                                                     _o(self, *a, **k))[1])
    scaler.unscale_(opt)
    assert reads == []
    scaler.step(opt)
    assert len(reads) == 1
