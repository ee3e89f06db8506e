"""ember.func (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call) against
torch.func on the same functions and inputs."""
import numpy as np
import pytest
import torch
import torch.func as TFn

import ember
import ember.func as EFn

A = np.array([0.5, -1.5, 2.0], dtype=np.float64)
B = np.array([[1.0, -0.5, 0.25], [0.3, 0.7, -1.1]], dtype=np.float64)


def _close(e, t):
    if isinstance(t, (tuple, list)):
        assert type(e) is type(t) and len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b)
        return
    if isinstance(t, dict):
        assert set(e) == set(t)
        for k in t:
            _close(e[k], t[k])
        return
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


SCALAR_FNS = [
    ("cube", lambda x: (x ** 3).sum(), 0),
    ("sin_dot", lambda x, m: (m @ x.sin()).sum(), 0),
    ("sin_dot_m", lambda x, m: (m @ x.sin()).sum(), 1),
    ("both", lambda x, m: (m @ x.sin()).sum(), (0, 1)),
]
VEC_FNS = [
    ("tanh", lambda x: x.tanh(), 0),
    ("matvec", lambda x, m: m @ x.exp(), 0),
    ("matvec_m", lambda x, m: m @ x.exp(), 1),
    ("both", lambda x, m: m @ x.exp(), (0, 1)),
]


def _args(T, f):
    n = f.__code__.co_argcount
    return (T.tensor(A), T.tensor(B))[:n]


@pytest.mark.parametrize("name,f,argnums", SCALAR_FNS, ids=[c[0] for c in SCALAR_FNS])
def test_grad_and_value(name, f, argnums):
    _close(EFn.grad(f, argnums)(*_args(ember, f)), TFn.grad(f, argnums)(*_args(torch, f)))
    ge, ve = EFn.grad_and_value(f, argnums)(*_args(ember, f))
    gt, vt = TFn.grad_and_value(f, argnums)(*_args(torch, f))
    _close(ge, gt)
    _close(ve, vt)


def test_grad_of_grad_and_has_aux():
    f = lambda x: (x ** 4).sum()  # noqa: E731
    g2e = EFn.grad(lambda x: EFn.grad(f)(x).sum())(ember.tensor(A))
    g2t = TFn.grad(lambda x: TFn.grad(f)(x).sum())(torch.tensor(A))
    _close(g2e, g2t)
    ge, auxe = EFn.grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(ember.tensor(A))
    gt, auxt = TFn.grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(torch.tensor(A))
    _close(ge, gt)
    _close(auxe, auxt)


def test_grad_over_dict_of_params():
    def loss(params, x):
        return ((x @ params["w"]) + params["b"]).pow(2).sum()
    for T, F in ((ember, EFn), (torch, TFn)):
        params = {"w": T.tensor(B.T.copy()), "b": T.tensor([0.1, -0.2])}
        g = F.grad(loss)(params, T.tensor(A))
        assert set(g) == {"w", "b"}
    _close(EFn.grad(loss)({"w": ember.tensor(B.T.copy()), "b": ember.tensor([0.1, -0.2])},
                          ember.tensor(A)),
           TFn.grad(loss)({"w": torch.tensor(B.T.copy()), "b": torch.tensor([0.1, -0.2])},
                          torch.tensor(A)))


def test_grad_errors_match_torch():
    for T, F in ((ember, EFn), (torch, TFn)):
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar"):
            F.grad(lambda x: x * 2)(T.ones(2))


@pytest.mark.parametrize("name,f,argnums", VEC_FNS, ids=[c[0] for c in VEC_FNS])
@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
def test_jacobians(name, f, argnums, which):
    _close(getattr(EFn, which)(f, argnums)(*_args(ember, f)),
           getattr(TFn, which)(f, argnums)(*_args(torch, f)))


@pytest.mark.parametrize("name,f,argnums", SCALAR_FNS[:3], ids=[c[0] for c in SCALAR_FNS[:3]])
def test_hessian(name, f, argnums):
    _close(EFn.hessian(f, argnums)(*_args(ember, f)), TFn.hessian(f, argnums)(*_args(torch, f)))


@pytest.mark.parametrize("name,f,argnums", VEC_FNS[:2], ids=[c[0] for c in VEC_FNS[:2]])
def test_vjp_and_jvp(name, f, argnums):
    pe, pt = _args(ember, f), _args(torch, f)
    oe, fe = EFn.vjp(f, *pe)
    ot, ft = TFn.vjp(f, *pt)
    _close(oe, ot)
    ct = np.random.default_rng(0).standard_normal(tuple(ot.shape))
    _close(fe(ember.tensor(ct)), ft(torch.tensor(ct)))
    tang = tuple(np.random.default_rng(i).standard_normal(p.shape) for i, p in enumerate(pt))
    _close(EFn.jvp(f, pe, tuple(ember.tensor(t) for t in tang)),
           TFn.jvp(f, pt, tuple(torch.tensor(t) for t in tang)))


# ---- vmap --------------------------------------------------------------------------------
X3 = np.random.default_rng(5).standard_normal((4, 3))
Y3 = np.random.default_rng(6).standard_normal((3, 4))

VMAP_CASES = [  # (name, function, in_dims, out_dims, args)
    ("dot", lambda a, b: (a * b).sum(), 0, 0, (X3, X3)),
    ("in_dims_1", lambda a, b: a * b.sum(), (0, 1), 0, (X3, Y3)),
    ("broadcast_none", lambda a, w: a @ w, (0, None), 0, (X3, Y3)),
    ("out_dims_1", lambda a: a.exp(), 0, 1, (X3,)),
    ("negative_dim", lambda a: a.softmax(0), -1, 0, (X3,)),
    ("tuple_out", lambda a: (a.sum(), a * 2), 0, (0, 1), (X3,)),
]


def _as(T, arrays):
    return tuple(T.tensor(a) for a in arrays)


@pytest.mark.parametrize("name,f,in_dims,out_dims,args", VMAP_CASES,
                         ids=[c[0] for c in VMAP_CASES])
def test_vmap_matches_torch(name, f, in_dims, out_dims, args):
    _close(EFn.vmap(f, in_dims, out_dims)(*_as(ember, args)),
           torch.vmap(f, in_dims, out_dims)(*_as(torch, args)))
    assert ember.vmap is EFn.vmap


def test_nested_vmap_and_grad_through_it():
    f = lambda a, b: (a * b).sum()  # noqa: E731
    outer_e = EFn.vmap(EFn.vmap(f, (0, None)), (None, 0))
    outer_t = torch.vmap(torch.vmap(f, (0, None)), (None, 0))
    _close(outer_e(ember.tensor(X3), ember.tensor(Y3.T.copy())),
           outer_t(torch.tensor(X3), torch.tensor(Y3.T.copy())))
    xe, xt = ember.tensor(X3, requires_grad=True), torch.tensor(X3, requires_grad=True)
    EFn.vmap(lambda r: (r ** 2).sum())(xe).sum().backward()
    torch.vmap(lambda r: (r ** 2).sum())(xt).sum().backward()
    _close(xe.grad, xt.grad)
    # per-sample gradients: vmap over grad
    _close(EFn.vmap(EFn.grad(lambda r: (r ** 3).sum()))(ember.tensor(X3)),
           torch.vmap(TFn.grad(lambda r: (r ** 3).sum()))(torch.tensor(X3)))


def test_vmap_errors_match_torch():
    for T, vm in ((ember, EFn.vmap), (torch, torch.vmap)):
        with pytest.raises(ValueError, match="same size in the mapped dimension"):
            vm(lambda a, b: a + b)(T.ones(2, 3), T.ones(3, 3))
        with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
            vm(lambda a: a, in_dims=(None,))(T.ones(2))
        with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
            vm(lambda a: a, in_dims=None)(T.ones(2))
        with pytest.raises(ValueError, match="in_dim"):
            vm(lambda a: a, in_dims=2)(T.ones(2, 3))
        with pytest.raises(RuntimeError, match="randomness"):
            vm(lambda a: a + T.rand(3))(T.ones(2, 3))
        with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
            vm(lambda a: a, randomness="sometimes")(T.ones(2))


def test_vmap_randomness_modes():
    ember.manual_seed(0)
    same = EFn.vmap(lambda a: a + ember.rand(3), randomness="same")(ember.zeros(4, 3))
    assert np.all(same.numpy() == same.numpy()[0])
    diff = EFn.vmap(lambda a: a + ember.rand(3), randomness="different")(ember.zeros(4, 3))
    assert not np.all(diff.numpy() == diff.numpy()[0])
    # chunk_size changes nothing but is validated
    _close(EFn.vmap(lambda a: a * 2, chunk_size=2)(ember.tensor(X3)),
           torch.vmap(lambda a: a * 2, chunk_size=2)(torch.tensor(X3)))


def test_functional_call_matches_torch():
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal((2, 3)), rng.standard_normal(2)
    x = rng.standard_normal((4, 3))
    em, tm = ember.nn.Linear(3, 2).double(), torch.nn.Linear(3, 2).double()
    ye = EFn.functional_call(em, {"weight": ember.tensor(w), "bias": ember.tensor(b)},
                             (ember.tensor(x),))
    yt = TFn.functional_call(tm, {"weight": torch.tensor(w), "bias": torch.tensor(b)},
                             (torch.tensor(x),))
    _close(ye, yt)
    # the module's own parameters are untouched
    assert not np.allclose(em.weight.detach().numpy(), w)


def test_stack_module_state_ensembling_matches_torch():
    rng = np.random.default_rng(7)
    ws = [(rng.standard_normal((2, 3)), rng.standard_normal(2)) for _ in range(3)]
    x = rng.standard_normal((5, 3))
    outs = []
    for T, F in ((ember, EFn), (torch, TFn)):
        models = []
        for w, b in ws:
            m = T.nn.Linear(3, 2).double()
            with T.no_grad():
                m.weight.copy_(T.tensor(w))
                m.bias.copy_(T.tensor(b))
            models.append(m)
        params, buffers = F.stack_module_state(models)
        assert tuple(params["weight"].shape) == (3, 2, 3) and params["weight"].requires_grad
        base = models[0]
        outs.append(F.vmap(lambda p, bf: F.functional_call(base, (p, bf), (T.tensor(x),)))(
            params, buffers))
        with pytest.raises(RuntimeError, match="Expected at least one model"):
            F.stack_module_state([])
    _close(outs[0], outs[1])


def test_functionalize_and_batch_norm_helpers():
    f = lambda a: a.add_(1) * 2  # noqa: E731
    assert EFn.functionalize(f)(ember.ones(2)).tolist() == \
        TFn.functionalize(f)(torch.ones(2)).tolist()
    for T, F in ((ember, EFn), (torch, TFn)):
        net = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.BatchNorm1d(3))
        F.replace_all_batch_norm_modules_(net)
        assert net[1].running_mean is None and net[1].track_running_stats is False
