"""ember.autograd.functional, anomaly detection, Variable and saved-tensor hooks, against
torch.autograd."""
import warnings

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import ember
import ember.autograd.functional as EF
from ember.autograd.graph import saved_tensors_hooks

X = np.array([0.3, -1.2, 2.0], dtype=np.float64)
Y = np.array([[0.5, 1.5], [-0.7, 0.2]], dtype=np.float64)


def _t(T, a):
    return T.tensor(a)


# (name, function written once for both frameworks, inputs as numpy arrays)
FUNCS = [
    ("square", lambda x: x ** 2, (X,)),
    ("sin_exp", lambda x: x.sin() * x.exp(), (X,)),
    ("matvec", lambda m: m @ m.sum(0), (Y,)),
    ("two_inputs", lambda x, m: (m.sum() * x).tanh(), (X, Y)),
]
SCALAR_FUNCS = [
    ("cube_sum", lambda x: (x ** 3).sum(), (X,)),
    ("logsumexp_like", lambda x: (x.exp().sum()).log(), (X,)),
    ("two_inputs", lambda x, m: (x.sum() * (m ** 2).sum()), (X, Y)),
]


def _inputs(T, arrays):
    ts = tuple(_t(T, a) for a in arrays)
    return ts if len(ts) > 1 else ts[0]


def _close(e, t):
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b)
        return
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("name,f,arrays", FUNCS, ids=[c[0] for c in FUNCS])
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian(name, f, arrays, vectorize):
    _close(EF.jacobian(f, _inputs(ember, arrays), vectorize=vectorize),
           TF.jacobian(f, _inputs(torch, arrays), vectorize=vectorize))


@pytest.mark.parametrize("name,f,arrays", SCALAR_FUNCS, ids=[c[0] for c in SCALAR_FUNCS])
def test_hessian(name, f, arrays):
    _close(EF.hessian(f, _inputs(ember, arrays)), TF.hessian(f, _inputs(torch, arrays)))


@pytest.mark.parametrize("name,f,arrays", FUNCS, ids=[c[0] for c in FUNCS])
@pytest.mark.parametrize("which", ["vjp", "jvp"])
def test_vjp_jvp(name, f, arrays, which):
    te = _inputs(torch, arrays)
    out = f(*te) if isinstance(te, tuple) else f(te)
    rng = np.random.default_rng(0)
    if which == "vjp":
        v = rng.standard_normal(tuple(out.shape))
    else:
        v = tuple(rng.standard_normal(a.shape) for a in arrays)
        v = v if len(v) > 1 else v[0]
    ve = tuple(ember.tensor(a) for a in v) if isinstance(v, tuple) else ember.tensor(v)
    vt = tuple(torch.tensor(a) for a in v) if isinstance(v, tuple) else torch.tensor(v)
    _close(getattr(EF, which)(f, _inputs(ember, arrays), ve),
           getattr(TF, which)(f, _inputs(torch, arrays), vt))


@pytest.mark.parametrize("name,f,arrays", SCALAR_FUNCS, ids=[c[0] for c in SCALAR_FUNCS])
@pytest.mark.parametrize("which", ["hvp", "vhp"])
def test_hvp_vhp(name, f, arrays, which):
    rng = np.random.default_rng(1)
    v = tuple(rng.standard_normal(a.shape) for a in arrays)
    ve = tuple(ember.tensor(a) for a in v)
    vt = tuple(torch.tensor(a) for a in v)
    if len(v) == 1:
        ve, vt = ve[0], vt[0]
    _close(getattr(EF, which)(f, _inputs(ember, arrays), ve),
           getattr(TF, which)(f, _inputs(torch, arrays), vt))


def test_create_graph_gives_differentiable_results():
    def f(x):
        return (x ** 3).sum()
    xe = ember.tensor(X, requires_grad=True)
    xt = torch.tensor(X, requires_grad=True)
    he = EF.hessian(f, xe, create_graph=True)
    ht = TF.hessian(f, xt, create_graph=True)
    assert he.requires_grad and ht.requires_grad
    he.sum().backward()
    ht.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())
    assert not EF.jacobian(lambda x: x ** 2, xe).requires_grad


def test_errors_match_torch():
    for mod, T in ((EF, ember), (TF, torch)):
        with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
            mod.jacobian(lambda x: x, 3)
        with pytest.raises(RuntimeError, match="v can only be None"):
            mod.vjp(lambda x: x * 2, T.ones(2))
        with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does "
                                               "not require gradients"):
            mod.jacobian(lambda x: T.ones(2), T.ones(2), strict=True)
        with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                               "independent of input 1"):
            mod.jacobian(lambda x, y: x * 2, (T.ones(2), T.ones(2)), strict=True)
        with pytest.raises(RuntimeError, match="should contain a single element"):
            mod.hessian(lambda x: x * 2, T.ones(2))
        with pytest.raises(RuntimeError, match="v has invalid size"):
            mod.vjp(lambda x: x * 2, T.ones(2), T.ones(3))
        # non-strict: an independent input gets zeros
        out = mod.jacobian(lambda x, y: x * 2, (T.ones(2), T.ones(3)))
        assert out[1].abs().sum().item() == 0 and tuple(out[1].shape) == (2, 3)


# ---- anomaly detection -------------------------------------------------------------------
def _nan_backward(T, mod):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError) as err:
            with mod.detect_anomaly():
                (x / x).sum().backward()
    return str(err.value), [str(m.message) for m in w]


def test_anomaly_nan_error_matches_torch():
    e_msg, e_warn = _nan_backward(ember, ember.autograd)
    t_msg, t_warn = _nan_backward(torch, torch.autograd)
    assert e_msg == t_msg == "Function 'DivBackward0' returned nan values in its 1th output."
    for warns in (e_warn, t_warn):
        assert any(w.startswith("Anomaly Detection has been enabled") for w in warns)
        trace = [w for w in warns if w.startswith("Error detected in DivBackward0")]
        assert trace and "Traceback of forward call that caused the error" in trace[0]
        assert "test_autograd_functional.py" in trace[0]     # the user's forward line


def test_anomaly_switches_match_torch():
    for T, mod in ((ember, ember.autograd), (torch, torch.autograd)):
        assert T.is_anomaly_enabled() is False and T.is_anomaly_check_nan_enabled() is True
        mod.set_detect_anomaly(True)
        assert T.is_anomaly_enabled() is True
        mod.set_detect_anomaly(False)
        with mod.set_detect_anomaly(True, check_nan=False):
            assert T.is_anomaly_enabled() and not T.is_anomaly_check_nan_enabled()
        assert T.is_anomaly_enabled() is False and T.is_anomaly_check_nan_enabled() is True
    # check_nan=False: no error for the NaN gradient
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ember.autograd.detect_anomaly(check_nan=False):
            (x / x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_anomaly_mode_off_has_no_effect_on_nan_grads():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    (x / x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


# ---- Variable -------------------------------------------------------------------------------
def test_variable_behaves_as_torch():
    for T, Var in ((ember, ember.autograd.Variable), (torch, torch.autograd.Variable)):
        base = T.ones(2)
        v = Var(base, requires_grad=True)
        assert v.requires_grad and v.grad_fn is None and type(v) is type(base)
        assert isinstance(T.ones(1), Var)
        v.data[0] = 5.0
        assert base[0].item() == 5.0            # shares memory
        assert Var(T.ones(2)).requires_grad is False
        assert tuple(Var().shape) == (0,)


# ---- saved-tensor hooks ----------------------------------------------------------------------
def test_saved_tensors_hooks_match_torch():
    for T, hooks in ((ember, saved_tensors_hooks),
                     (torch, torch.autograd.graph.saved_tensors_hooks)):
        packed = []

        def pack(t):
            packed.append(tuple(t.shape))
            return t * 1

        def unpack(t):
            return t * 2                      # doubles every saved value
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with hooks(pack, unpack):
            y = (x * x).sum()
        y.backward()
        assert packed == [(3,), (3,)]
        assert x.grad.tolist() == [4.0, 8.0, 12.0]


def test_multithreading_switch_matches_torch():
    for mod in (ember.autograd, torch.autograd):
        assert mod.is_multithreading_enabled() is True
        with mod.set_multithreading_enabled(False):
            assert mod.is_multithreading_enabled() is False
        assert mod.is_multithreading_enabled() is True
