"""``nn.utils`` against PyTorch: gradient clipping, parameter/vector conversion, weight and
spectral norm (hooks and parametrizations), ``parametrize``, ``prune``, ``fusion``,
``stateless.functional_call``, ``skip_init`` and the memory-format converters."""
import copy
import math
import warnings

import numpy as np
import pytest
import torch
from nn_helpers import close, e, load_from_torch, randn

import ember
import ember.nn as enn
import ember.nn.utils as eu
import torch.nn.utils as tu
from ember.nn.utils import parametrizations as eparz
from ember.nn.utils import parametrize as eP
from ember.nn.utils import prune as eprune
from torch.nn.utils import parametrizations as tparz
from torch.nn.utils import parametrize as tP
from torch.nn.utils import prune as tprune


def _raises_like(fn_t, fn_e, compare_message=True):
    with pytest.raises(Exception) as t_info:
        fn_t()
    with pytest.raises(type(t_info.value)) as e_info:
        fn_e()
    if compare_message:
        assert str(e_info.value) == str(t_info.value)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _pair(seed=0, *shape_list):
    shapes = shape_list or [(3, 4), (5,), (2, 2, 2)]
    grads = [randn(*s, seed=seed + i) for i, s in enumerate(shapes)]
    tp = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    ep = [ember.zeros(tuple(g.shape), requires_grad=True) for g in grads]
    for p, q, g in zip(tp, ep, grads):
        p.grad = g.clone()
        q.grad = e(g)
    return tp, ep


# ---- clipping ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2, 1, 0, 3.5, math.inf, -math.inf, "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm(norm_type, max_norm, foreach):
    tp, ep = _pair()
    tn = tu.clip_grad_norm_(tp, max_norm, norm_type, foreach=foreach)
    en = eu.clip_grad_norm_(ep, max_norm, norm_type, foreach=foreach)
    close(en, tn)
    for p, q in zip(ep, tp):
        close(p.grad, q.grad)


def test_clip_grad_pieces_and_edge_cases():
    tp, ep = _pair(1)
    close(eu.get_total_norm([p.grad for p in ep], 3.0), tu.get_total_norm([p.grad for p in tp],
                                                                           3.0))
    total = tu.get_total_norm([p.grad for p in tp])
    tu.clip_grads_with_norm_(tp, 1.0, total)
    eu.clip_grads_with_norm_(ep, 1.0, e(total))
    for p, q in zip(ep, tp):
        close(p.grad, q.grad)
    # a single tensor, an empty list, a parameter without grad
    tp, ep = _pair(2, (4,))
    close(eu.clip_grad_norm_(ep[0], 0.1), tu.clip_grad_norm_(tp[0], 0.1))
    close(eu.clip_grad_norm_([], 1.0), tu.clip_grad_norm_([], 1.0))
    close(eu.clip_grad_norm_([ember.zeros(2, requires_grad=True)], 1.0),
          tu.clip_grad_norm_([torch.zeros(2, requires_grad=True)], 1.0))
    with pytest.warns(UserWarning, match="empty generator"):
        eu.clip_grad_norm_((p for p in []), 1.0)
    # non-finite totals
    tp, ep = _pair(3, (3,))
    tp[0].grad[1] = float("nan")
    ep[0].grad[1] = float("nan")
    _raises_like(lambda: tu.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True),
                 lambda: eu.clip_grad_norm_(ep, 1.0, error_if_nonfinite=True))
    assert math.isnan(float(eu.clip_grad_norm_(ep, 1.0)))
    with pytest.warns(FutureWarning):
        eu.clip_grad_norm(ember.zeros(1, requires_grad=True), 1.0)


@pytest.mark.parametrize("clip", [0.3, 1, 10.0])
def test_clip_grad_value(clip):
    tp, ep = _pair(4)
    tu.clip_grad_value_(tp, clip)
    eu.clip_grad_value_(ep, clip, foreach=True)
    for p, q in zip(ep, tp):
        close(p.grad, q.grad)


def test_parameters_vector_roundtrip():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Conv1d(2, 3, 2))
    em = load_from_torch(enn.Sequential(enn.Linear(3, 4), enn.Conv1d(2, 3, 2)), tm)
    close(eu.parameters_to_vector(em.parameters()), tu.parameters_to_vector(tm.parameters()))
    vec = randn(tu.parameters_to_vector(tm.parameters()).numel(), seed=3)
    tu.vector_to_parameters(vec, tm.parameters())
    eu.vector_to_parameters(e(vec), em.parameters())
    for (name, p) in tm.named_parameters():
        close(em.get_parameter(name), p)
    _raises_like(lambda: tu.vector_to_parameters([1.0], tm.parameters()),
                 lambda: eu.vector_to_parameters([1.0], em.parameters()), False)


# ---- weight norm (hook API and parametrization) ------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_hook(dim):
    torch.manual_seed(0)
    tm = _quiet(tu.weight_norm, torch.nn.Linear(4, 3), dim=dim)
    em = enn.Linear(4, 3)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        eu.weight_norm(em, dim=dim)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert tuple(em.weight_g.shape) == tuple(tm.weight_g.shape)
    load_from_torch(em, tm)
    x = randn(2, 4, seed=1)
    tout, eout = tm(x), em(e(x))
    close(eout, tout)
    tout.pow(2).sum().backward()
    eout.pow(2).sum().backward()
    for name in ("weight_g", "weight_v", "bias"):
        close(getattr(em, name).grad, getattr(tm, name).grad)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        _quiet(eu.weight_norm, em, dim=dim)
    eu.remove_weight_norm(em)
    tu.remove_weight_norm(tm)
    assert isinstance(em.weight, enn.Parameter) and list(em.state_dict()) == ["bias", "weight"]
    close(em.weight, tm.weight)
    _raises_like(lambda: tu.remove_weight_norm(tm), lambda: eu.remove_weight_norm(em))


def test_weight_norm_parametrization():
    torch.manual_seed(1)
    tm = tparz.weight_norm(torch.nn.Conv1d(2, 3, 3), dim=0)
    em = eparz.weight_norm(enn.Conv1d(2, 3, 3), dim=0)
    assert list(em.state_dict()) == list(tm.state_dict())
    load_from_torch(em, tm)
    close(em.weight, tm.weight)
    x = randn(2, 2, 5, seed=2)
    tm(x).sum().backward()
    em(e(x)).sum().backward()
    for i in range(2):
        close(getattr(em.parametrizations.weight, f"original{i}").grad,
              getattr(tm.parametrizations.weight, f"original{i}").grad)
    # old ``weight_g``/``weight_v`` checkpoints load through the compatibility hook
    old = _quiet(tu.weight_norm, torch.nn.Conv1d(2, 3, 3))
    em.load_state_dict({k: e(v) for k, v in old.state_dict().items()})
    close(em.weight, old.weight)
    eP.remove_parametrizations(em, "weight")
    assert type(em) is enn.Conv1d and isinstance(em.weight, enn.Parameter)
    close(em.weight, old.weight)


# ---- spectral norm ------------------------------------------------------------------------
@pytest.mark.parametrize("factory,dim", [(lambda m: m.Linear(5, 4), None),
                                         (lambda m: m.Conv2d(2, 3, 2), None),
                                         (lambda m: m.ConvTranspose2d(2, 3, 2), None),
                                         (lambda m: m.Linear(5, 4), 1)])
def test_spectral_norm_hook(factory, dim):
    torch.manual_seed(0)
    tm = tu.spectral_norm(factory(torch.nn), n_power_iterations=2, dim=dim)
    em = eu.spectral_norm(factory(enn), n_power_iterations=2, dim=dim)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert tuple(em.weight_u.shape) == tuple(tm.weight_u.shape)
    load_from_torch(em, tm)
    x = randn(*((2, 5) if isinstance(tm, torch.nn.Linear) else (1, 2, 4, 4)), seed=1)
    # training: two power iterations update u and v, then sigma normalises the weight
    tout, eout = tm(x), em(e(x))
    close(eout, tout, rtol=1e-4, atol=1e-5)
    close(em.weight_u, tm.weight_u, rtol=1e-4, atol=1e-5)
    close(em.weight_v, tm.weight_v, rtol=1e-4, atol=1e-5)
    tout.pow(2).sum().backward()
    eout.pow(2).sum().backward()
    close(em.weight_orig.grad, tm.weight_orig.grad, rtol=1e-3, atol=1e-5)
    # eval: the stored vectors are used as they are
    u_before = em.weight_u.clone()
    tm.eval()
    em.eval()
    close(em(e(x)), tm(x), rtol=1e-4, atol=1e-5)
    close(em.weight_u, u_before)
    # state dicts carry the version, and load back
    assert em.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    em.load_state_dict(em.state_dict())
    eu.remove_spectral_norm(em)
    tu.remove_spectral_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, rtol=1e-4, atol=1e-5)
    assert not em._state_dict_hooks and not em._load_state_dict_pre_hooks
    _raises_like(lambda: tu.remove_spectral_norm(tm), lambda: eu.remove_spectral_norm(em))


def test_spectral_norm_errors():
    _raises_like(lambda: tu.spectral_norm(torch.nn.Linear(2, 2), n_power_iterations=0),
                 lambda: eu.spectral_norm(enn.Linear(2, 2), n_power_iterations=0))
    tm, em = tu.spectral_norm(torch.nn.Linear(2, 2)), eu.spectral_norm(enn.Linear(2, 2))
    _raises_like(lambda: tu.spectral_norm(tm), lambda: eu.spectral_norm(em))
    _raises_like(lambda: tu.spectral_norm(torch.nn.Linear(2, 2, bias=False), name="bias"),
                 lambda: eu.spectral_norm(enn.Linear(2, 2, bias=False), name="bias"))


def test_spectral_norm_loads_version0_state_dict():
    """A checkpoint without ``weight_v`` (PyTorch < 1.1) gets v solved from u and sigma
    (a tall weight, so that W^T W is invertible and v is well defined)."""
    torch.manual_seed(7)
    src = tu.spectral_norm(torch.nn.Linear(3, 4))
    src(randn(2, 3, seed=1))
    old = {k: v for k, v in src.state_dict().items() if k != "weight_v"}
    old["weight"] = src.weight.detach()
    tm = tu.spectral_norm(torch.nn.Linear(3, 4))
    em = eu.spectral_norm(enn.Linear(3, 4))
    tm.load_state_dict(dict(old))
    em.load_state_dict({k: e(v) for k, v in old.items()})
    close(em.weight_v, tm.weight_v, rtol=1e-3, atol=1e-4)
    tm.eval()
    em.eval()
    close(em(e(randn(2, 3, seed=2))), tm(randn(2, 3, seed=2)), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_spectral_norm_parametrization(dim):
    torch.manual_seed(2)
    tm = tparz.spectral_norm(torch.nn.Linear(5, 4), dim=dim)
    em = eparz.spectral_norm(enn.Linear(5, 4), dim=dim)
    assert list(em.state_dict()) == list(tm.state_dict())
    load_from_torch(em, tm)
    close(em.weight, tm.weight, rtol=1e-4, atol=1e-5)      # one more power iteration each
    x = randn(3, 5, seed=3)
    tm(x).sum().backward()
    em(e(x)).sum().backward()
    close(em.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
          rtol=1e-3, atol=1e-5)
    tm.eval()
    em.eval()
    close(em.weight, tm.weight, rtol=1e-4, atol=1e-5)
    # a 1-d tensor is just normalised
    close(eparz.spectral_norm(enn.Linear(2, 3), "bias").bias.norm(), torch.tensor(1.0))
    _raises_like(lambda: tparz.spectral_norm(torch.nn.Linear(2, 2), dim=2),
                 lambda: eparz.spectral_norm(enn.Linear(2, 2), dim=2))


# ---- parametrize ----------------------------------------------------------------------------
class _TSym(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class _ESym(enn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class _TScale(torch.nn.Module):
    def forward(self, X):
        return 2 * X


class _EScale(enn.Module):
    def forward(self, X):
        return 2 * X


def test_register_parametrization():
    torch.manual_seed(3)
    tm = torch.nn.Linear(3, 3)
    em = load_from_torch(enn.Linear(3, 3), tm)
    p_orig = em.weight
    tP.register_parametrization(tm, "weight", _TSym())
    eP.register_parametrization(em, "weight", _ESym())
    assert type(em).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert eP.type_before_parametrizations(em) is enn.Linear
    assert isinstance(em, enn.Linear) and type(enn.Linear(1, 1)) is enn.Linear
    assert eP.is_parametrized(em) and eP.is_parametrized(em, "weight")
    assert not eP.is_parametrized(em, "bias")
    assert list(em.state_dict()) == list(tm.state_dict())
    assert em.parametrizations.weight.original is p_orig        # same Parameter object
    close(em.weight, tm.weight)
    close(em.parametrizations.weight.original, tm.parametrizations.weight.original)
    # a second parametrization chains; the list shows both
    tP.register_parametrization(tm, "weight", _TScale())
    eP.register_parametrization(em, "weight", _EScale())
    assert len(em.parametrizations.weight) == 2
    close(em.weight, tm.weight)
    x = randn(2, 3, seed=4)
    tm(x).sum().backward()
    em(e(x)).sum().backward()
    close(em.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)
    # cached: one evaluation per access inside the context
    with eP.cached():
        assert em.weight is em.weight
    assert em.weight is not em.weight
    # removing keeps the value (or the original)
    tP.remove_parametrizations(tm, "weight", leave_parametrized=False)
    eP.remove_parametrizations(em, "weight", leave_parametrized=False)
    assert type(em) is enn.Linear and not hasattr(em, "parametrizations")
    assert em.weight is p_orig
    close(em.weight, tm.weight)
    _raises_like(lambda: tP.remove_parametrizations(tm, "weight"),
                 lambda: eP.remove_parametrizations(em, "weight"), False)


def test_parametrization_right_inverse_and_errors():
    tm, em = torch.nn.Linear(3, 3), enn.Linear(3, 3)
    tP.register_parametrization(tm, "weight", _TSym())
    eP.register_parametrization(em, "weight", _ESym())
    a = randn(3, 3, seed=5)
    tm.weight = a
    em.weight = e(a)
    close(em.weight, tm.weight)
    close(em.parametrizations.weight.original, tm.parametrizations.weight.original)
    tP.remove_parametrizations(tm, "weight")
    eP.remove_parametrizations(em, "weight")
    close(em.weight, tm.weight)
    assert isinstance(em.weight, enn.Parameter)

    class TBad(torch.nn.Module):
        def forward(self, X):
            return X[0]

    class EBad(enn.Module):
        def forward(self, X):
            return X[0]

    _raises_like(lambda: tP.register_parametrization(torch.nn.Linear(2, 2), "weight", TBad()),
                 lambda: eP.register_parametrization(enn.Linear(2, 2), "weight", EBad()),
                 False)
    eP.register_parametrization(enn.Linear(2, 2), "weight", EBad(), unsafe=True)
    _raises_like(lambda: tP.register_parametrization(torch.nn.Linear(2, 2), "nope", TBad()),
                 lambda: eP.register_parametrization(enn.Linear(2, 2), "nope", EBad()), False)
    # transfer to a fresh module shares the originals
    src = eP.register_parametrization(enn.Linear(3, 3), "weight", _ESym())
    dst = eP.transfer_parametrizations_and_params(src, enn.Linear(3, 3))
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    close(dst.weight, src.weight.detach())
    with pytest.raises(RuntimeError, match="state_dict"):
        copy.copy(src).__getstate__()
    clone = copy.deepcopy(src)
    close(clone.weight, src.weight.detach())


@pytest.mark.parametrize("shape,orth_map", [((4, 4), None), ((5, 3), None), ((3, 5), None),
                                            ((4, 4), "householder"), ((5, 3), "matrix_exp"),
                                            ((4, 4), "cayley"), ((2, 3, 3), None)])
def test_orthogonal(shape, orth_map):
    w = randn(*shape, seed=6)
    tm = torch.nn.Module()
    tm.weight = torch.nn.Parameter(w.clone())
    em = enn.Module()
    em.weight = enn.Parameter(e(w))
    tparz.orthogonal(tm, orthogonal_map=orth_map)
    eparz.orthogonal(em, orthogonal_map=orth_map)
    # the initial value is the orthogonalised weight: deterministic, compare with torch
    close(em.weight, tm.weight, rtol=1e-4, atol=1e-4)
    q = em.weight.detach().numpy()
    qq = np.swapaxes(q, -1, -2) @ q if shape[-2] >= shape[-1] else q @ np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(qq, np.broadcast_to(np.eye(qq.shape[-1]), qq.shape), atol=1e-5)
    # gradients reach the unconstrained original as in PyTorch; a step keeps the weight
    # orthogonal
    close(em.parametrizations.weight.original, tm.parametrizations.weight.original,
          rtol=1e-4, atol=1e-4)
    r = randn(*shape, seed=14)
    (tm.weight * r).sum().backward()
    (em.weight * e(r)).sum().backward()
    g = em.parametrizations.weight.original.grad
    tg = tm.parametrizations.weight.original.grad
    # a non-square weight's base is completed with random columns: the gradient of the
    # entries past the square block depends on them, so only the square block compares
    k = min(shape[-2:])
    close(g[..., :k, :k], tg[..., :k, :k], rtol=1e-3, atol=1e-4)
    with ember.no_grad():
        em.parametrizations.weight.original.sub_(0.1 * g)
    q = em.weight.detach().numpy()
    qq = np.swapaxes(q, -1, -2) @ q if shape[-2] >= shape[-1] else q @ np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(qq, np.broadcast_to(np.eye(qq.shape[-1]), qq.shape), atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3)])
def test_orthogonal_assignment_and_no_trivialization(shape):
    """Assigning an orthogonal matrix makes it the weight; without trivialization the
    householder map is inverted through geqrf."""
    q = torch.linalg.qr(randn(*shape, seed=12))[0]
    for trivial in (True, False):
        tm = torch.nn.Linear(shape[1], shape[0])
        em = enn.Linear(shape[1], shape[0])
        tparz.orthogonal(tm, orthogonal_map="householder", use_trivialization=trivial)
        eparz.orthogonal(em, orthogonal_map="householder", use_trivialization=trivial)
        assert hasattr(em.parametrizations.weight[0], "base") == trivial
        tm.weight = q
        em.weight = e(q)
        close(em.weight, q, rtol=1e-4, atol=1e-5)
        close(em.parametrizations.weight.original, tm.parametrizations.weight.original,
              rtol=1e-4, atol=1e-4)
    tm = tparz.orthogonal(torch.nn.Linear(3, 3), orthogonal_map="cayley",
                          use_trivialization=False)
    em = eparz.orthogonal(enn.Linear(3, 3), orthogonal_map="cayley", use_trivialization=False)
    q3 = torch.linalg.qr(randn(3, 3, seed=13))[0]

    def assign(m, value):
        m.weight = value

    _raises_like(lambda: assign(tm, q3), lambda: assign(em, e(q3)))


def test_orthogonal_errors():
    _raises_like(lambda: tparz.orthogonal(torch.nn.Linear(2, 2), "bias"),
                 lambda: eparz.orthogonal(enn.Linear(2, 2), "bias"))
    _raises_like(lambda: tparz.orthogonal(torch.nn.Linear(2, 2), orthogonal_map="qr"),
                 lambda: eparz.orthogonal(enn.Linear(2, 2), orthogonal_map="qr"))
    _raises_like(lambda: tparz.orthogonal(torch.nn.Linear(2, 2), "nope"),
                 lambda: eparz.orthogonal(enn.Linear(2, 2), "nope"))


# ---- prune ------------------------------------------------------------------------------------
def _distinct(*shape, seed=0):
    """Values with distinct magnitudes (so top-k has no ties to break differently)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = (rng.permutation(n) + 1.0) * rng.choice([-1.0, 1.0], n) / n
    return torch.tensor(vals.reshape(shape), dtype=torch.float32)


def _linear_pair(seed=0, n_in=5, n_out=4):
    tm = torch.nn.Linear(n_in, n_out)
    with torch.no_grad():
        tm.weight.copy_(_distinct(n_out, n_in, seed=seed))
    return tm, load_from_torch(enn.Linear(n_in, n_out), tm)


@pytest.mark.parametrize("amount", [0, 3, 0.5, 1.0])
def test_l1_unstructured(amount):
    tm, em = _linear_pair()
    tprune.l1_unstructured(tm, "weight", amount)
    eprune.l1_unstructured(em, "weight", amount)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    close(em.weight_mask, tm.weight_mask)
    close(em.weight, tm.weight)
    x = randn(2, 5, seed=1)
    tm(x).sum().backward()
    em(e(x)).sum().backward()
    close(em.weight_orig.grad, tm.weight_orig.grad)
    assert eprune.is_pruned(enn.Sequential(em)) and not eprune.is_pruned(enn.Linear(2, 2))


@pytest.mark.parametrize("n,dim,amount", [(1, 0, 2), (2, -1, 0.4), (math.inf, 1, 1)])
def test_ln_structured_and_container(n, dim, amount):
    tm, em = _linear_pair(1)
    tprune.ln_structured(tm, "weight", amount, n, dim)
    eprune.ln_structured(em, "weight", amount, n, dim)
    close(em.weight_mask, tm.weight_mask)
    # pruning again combines the masks in a PruningContainer
    tprune.l1_unstructured(tm, "weight", 0.3)
    eprune.l1_unstructured(em, "weight", 0.3)
    close(em.weight_mask, tm.weight_mask)
    tprune.ln_structured(tm, "weight", 1, 2, 0)
    eprune.ln_structured(em, "weight", 1, 2, 0)
    close(em.weight_mask, tm.weight_mask)
    hooks = [h for h in em._forward_pre_hooks.values()
             if isinstance(h, eprune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], eprune.PruningContainer)
    assert len(hooks[0]) == 3
    tprune.remove(tm, "weight")
    eprune.remove(em, "weight")
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    close(em.weight, tm.weight)
    assert isinstance(em.weight, enn.Parameter) and not eprune.is_pruned(em)


def test_random_pruning_statistics():
    em = enn.Linear(10, 8)
    eprune.random_unstructured(em, "weight", 0.25)
    assert int((em.weight_mask == 0).sum()) == 20
    eprune.random_structured(em, "weight", 3, dim=0)
    zero_rows = int((em.weight_mask.sum(1) == 0).sum())
    assert zero_rows == 3
    assert int((em.weight == 0).sum()) >= 30
    eprune.identity(em, "bias")
    close(em.bias_mask, torch.ones(8))


def test_global_and_custom_pruning():
    tms = [_linear_pair(s, 4, 3) for s in (2, 3)]
    both = _distinct(2, 3, 4, seed=2)                 # no magnitude ties across the two
    for (tm, em), w in zip(tms, both):
        with torch.no_grad():
            tm.weight.copy_(w)
        load_from_torch(em, tm)
    tparams = [(tm, "weight") for tm, _ in tms]
    eparams = [(em, "weight") for _, em in tms]
    tprune.global_unstructured(tparams, tprune.L1Unstructured, amount=7)
    eprune.global_unstructured(eparams, eprune.L1Unstructured, amount=7)
    for tm, em in tms:
        close(em.weight_mask, tm.weight_mask)
    mask = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    tm, em = torch.nn.Linear(2, 2), enn.Linear(2, 2)
    tprune.custom_from_mask(tm, "weight", mask)
    eprune.custom_from_mask(em, "weight", e(mask))
    close(em.weight_mask, tm.weight_mask)
    scores = _distinct(4, 5, seed=9)
    tm, em = _linear_pair(4)
    tprune.l1_unstructured(tm, "weight", 6, importance_scores=scores)
    eprune.l1_unstructured(em, "weight", 6, importance_scores=e(scores))
    close(em.weight_mask, tm.weight_mask)


def test_prune_errors():
    cases = [lambda m, p: p.l1_unstructured(m.Linear(2, 2), "weight", -1),
             lambda m, p: p.l1_unstructured(m.Linear(2, 2), "weight", 1.5),
             lambda m, p: p.l1_unstructured(m.Linear(2, 2), "weight", "a"),
             lambda m, p: p.l1_unstructured(m.Linear(2, 2), "weight", 5),
             lambda m, p: p.ln_structured(m.Linear(2, 2), "bias", 1, 2, 0),
             lambda m, p: p.ln_structured(m.Linear(2, 2), "weight", 1, 2, 2),
             lambda m, p: p.remove(m.Linear(2, 2), "weight"),
             lambda m, p: p.global_unstructured([(m.Linear(2, 2), "weight")],
                                                p.RandomStructured, amount=1)]
    for case in cases:
        _raises_like(lambda: case(torch.nn, tprune), lambda: case(enn, eprune),
                     compare_message=False)
    # a failed pruning leaves the module as it was
    em = enn.Linear(2, 2)
    with pytest.raises(ValueError):
        eprune.l1_unstructured(em, "weight", 5)
    assert "weight" in em._parameters and "weight_orig" not in em._parameters


# ---- fusion -----------------------------------------------------------------------------------
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn(transpose):
    torch.manual_seed(4)
    make = (lambda m: m.ConvTranspose2d(3, 4, 3)) if transpose else (lambda m: m.Conv2d(3, 4, 3))
    tconv, tbn = make(torch.nn), torch.nn.BatchNorm2d(4)
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1)
        tbn.running_var.uniform_(0.5, 2)
        tbn.weight.uniform_(0.5, 2)
        tbn.bias.uniform_(-1, 1)
    econv, ebn = load_from_torch(make(enn), tconv), load_from_torch(enn.BatchNorm2d(4), tbn)
    for m in (tconv, tbn, econv, ebn):
        m.eval()
    tf = tu.fuse_conv_bn_eval(tconv, tbn, transpose)
    ef = eu.fuse_conv_bn_eval(econv, ebn, transpose)
    close(ef.weight, tf.weight)
    close(ef.bias, tf.bias)
    assert isinstance(ef.weight, enn.Parameter) and ef is not econv
    x = randn(1, 3, 6, 6, seed=5)
    close(ef(e(x)), tbn(tconv(x)), rtol=1e-4, atol=1e-4)
    econv.train()
    _raises_like(lambda: tu.fuse_conv_bn_eval(tconv.train(), tbn),
                 lambda: eu.fuse_conv_bn_eval(econv, ebn))


def test_fuse_linear_bn():
    torch.manual_seed(5)
    tl, tbn = torch.nn.Linear(3, 4, bias=False), torch.nn.BatchNorm1d(4)
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1)
        tbn.running_var.uniform_(0.5, 2)
    el, ebn = load_from_torch(enn.Linear(3, 4, bias=False), tl), \
        load_from_torch(enn.BatchNorm1d(4), tbn)
    for m in (tl, tbn, el, ebn):
        m.eval()
    tf, ef = tu.fuse_linear_bn_eval(tl, tbn), eu.fuse_linear_bn_eval(el, ebn)
    close(ef.weight, tf.weight)
    close(ef.bias, tf.bias)
    _raises_like(lambda: tu.fuse_linear_bn_eval(tl, torch.nn.BatchNorm1d(3).eval()),
                 lambda: eu.fuse_linear_bn_eval(el, enn.BatchNorm1d(3).eval()))
    w, b = eu.fuse_conv_bn_weights(e(tl.weight).unsqueeze(-1), None, ebn.running_mean,
                                   ebn.running_var, 1e-5, None, None)
    tw, tb = tu.fuse_conv_bn_weights(tl.weight.unsqueeze(-1), None, tbn.running_mean,
                                     tbn.running_var, 1e-5, None, None)
    close(w, tw)
    close(b, tb)


# ---- stateless, skip_init, memory format --------------------------------------------------------
def test_functional_call():
    torch.manual_seed(6)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    em = load_from_torch(enn.Sequential(enn.Linear(3, 4), enn.BatchNorm1d(4)), tm)
    new = {"0.weight": randn(4, 3, seed=7), "1.running_mean": randn(4, seed=8)}
    x = randn(5, 3, seed=9)
    tm.eval()
    em.eval()
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        eout = eu.stateless.functional_call(em, {k: e(v) for k, v in new.items()}, (e(x),))
    tout = _quiet(tu.stateless.functional_call, tm, new, (x,))
    close(eout, tout)
    close(em[0].weight, tm[0].weight)                    # restored
    assert isinstance(em[0].weight, enn.Parameter)
    # gradients flow to the given tensors
    w = e(new["0.weight"]).requires_grad_()
    eu.stateless._functional_call(em, {"0.weight": w}, e(x)).sum().backward()
    assert w.grad is not None and em[0].weight.grad is None
    _raises_like(lambda: _quiet(tu.stateless.functional_call, tm, {"nope": x}, (x,),
                                strict=True),
                 lambda: _quiet(eu.stateless.functional_call, em, {"nope": e(x)}, (e(x),),
                                strict=True))


def test_functional_call_tied_weights():
    tm = torch.nn.Sequential(torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 2, bias=False))
    tm[1].weight = tm[0].weight
    em = enn.Sequential(enn.Linear(2, 2, bias=False), enn.Linear(2, 2, bias=False))
    em[1].weight = em[0].weight
    load_from_torch(em, tm)
    w = randn(2, 2, seed=10)
    x = randn(1, 2, seed=11)
    close(eu.stateless._functional_call(em, {"0.weight": e(w)}, e(x)),
          tu.stateless._functional_call(tm, {"0.weight": w}, x))
    close(eu.stateless._functional_call(em, {"0.weight": e(w)}, e(x), tie_weights=False),
          tu.stateless._functional_call(tm, {"0.weight": w}, x, tie_weights=False))
    _raises_like(lambda: tu.stateless._functional_call(tm, {"0.weight": w, "1.weight": w * 2},
                                                       x),
                 lambda: eu.stateless._functional_call(em, {"0.weight": e(w),
                                                            "1.weight": e(w) * 2}, e(x)))


def test_skip_init_and_memory_format():
    m = eu.skip_init(enn.Linear, 5, 2, bias=False)
    assert type(m) is enn.Linear and tuple(m.weight.shape) == (2, 5) and m.bias is None
    _raises_like(lambda: tu.skip_init(int), lambda: eu.skip_init(int))

    class TNoDevice(torch.nn.Module):
        def __init__(self):
            super().__init__()

    class ENoDevice(enn.Module):
        def __init__(self):
            super().__init__()

    _raises_like(lambda: tu.skip_init(TNoDevice), lambda: eu.skip_init(ENoDevice))
    net = enn.Sequential(enn.Conv2d(2, 3, 3))
    before = net[0].weight.detach().clone()
    assert eu.convert_conv2d_weight_memory_format(net, "channels_last") is net
    assert eu.convert_conv3d_weight_memory_format(net, "channels_last") is net
    close(net[0].weight, before)
