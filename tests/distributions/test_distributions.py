"""ember.distributions against torch.distributions (float64): densities, moments, entropies,
CDFs and KL divergences to 1e-10; sample shapes, dtypes and statistics; gradients of log_prob
and of reparameterised samples; argument validation errors."""
import math

import numpy as np
import pytest
import torch
import torch.distributions as td

import ember
import ember.distributions as ed

TOL = dict(rtol=1e-10, atol=1e-10)


def E(a):
    return ember.tensor(a, dtype=ember.float64)


def T(a):
    return torch.tensor(a, dtype=torch.float64)


def close(ours, theirs, **tol):
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=np.float64),
                               theirs.detach().numpy(), **(tol or TOL))


COV = [[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 3.0]]
COV2 = [[1.0, -0.3, 0.0], [-0.3, 0.8, 0.1], [0.0, 0.1, 0.5]]
TRIL = np.linalg.cholesky(np.array(COV)).tolist()

# name -> (constructor args as nested lists, values inside the support)
CASES = {
    "Normal": (lambda f: (f([0.0, 1.5, -2.0]), f([1.0, 0.5, 3.0])), [0.3, 1.0, -7.0]),
    "LogNormal": (lambda f: (f([0.0, 1.5, -2.0]), f([1.0, 0.5, 3.0])), [0.3, 1.0, 7.0]),
    "Uniform": (lambda f: (f([0.0, -1.0, 2.0]), f([1.0, 3.0, 2.5])), [0.3, 2.0, 2.1]),
    "Exponential": (lambda f: (f([0.5, 1.0, 4.0]),), [0.3, 1.0, 7.0]),
    "Laplace": (lambda f: (f([0.0, 1.5, -2.0]), f([1.0, 0.5, 3.0])), [0.3, 1.0, -7.0]),
    "Gamma": (lambda f: (f([0.3, 1.5, 7.0]), f([2.0, 0.5, 1.0])), [0.5, 1.0, 12.0]),
    "Beta": (lambda f: (f([0.3, 1.5, 7.0]), f([2.0, 0.5, 1.0])), [0.1, 0.5, 0.99]),
    "Poisson": (lambda f: (f([0.5, 3.0, 40.0]),), [0.0, 2.0, 45.0]),
}
CDF = ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace"]
ICDF = CDF
MODE = ["Normal", "LogNormal", "Exponential", "Laplace", "Gamma", "Beta", "Poisson"]
ENTROPY = ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace", "Gamma", "Beta"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_univariate_against_torch(name):
    make, values = CASES[name]
    ours = getattr(ed, name)(*make(E))
    theirs = getattr(td, name)(*make(T))
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    close(ours.log_prob(E(values)), theirs.log_prob(T(values)))
    close(ours.mean, theirs.mean)
    close(ours.variance, theirs.variance)
    close(ours.stddev, theirs.stddev)
    if name in MODE:
        close(ours.mode, theirs.mode)
    if name in ENTROPY:
        close(ours.entropy(), theirs.entropy())
    if name in CDF:
        close(ours.cdf(E(values)), theirs.cdf(T(values)))
    if name in ICDF:
        p = [0.1, 0.5, 0.93]
        close(ours.icdf(E(p)), theirs.icdf(T(p)), rtol=1e-9, atol=1e-9)
    assert ours.has_rsample == theirs.has_rsample or name in ("Gamma", "Beta")


def test_discrete_against_torch():
    p, logits = [0.1, 0.5, 0.85], [-2.0, 0.0, 3.0]
    v = [0.0, 1.0, 1.0]
    for kw in (dict(probs=p), dict(logits=logits)):
        ours = ed.Bernoulli(**{k: E(x) for k, x in kw.items()})
        theirs = td.Bernoulli(**{k: T(x) for k, x in kw.items()})
        for attr in ("mean", "variance", "probs", "logits"):
            close(getattr(ours, attr), getattr(theirs, attr))
        close(ours.log_prob(E(v)), theirs.log_prob(T(v)))
        close(ours.entropy(), theirs.entropy())
        close(ours.enumerate_support(), theirs.enumerate_support())
    probs = [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]
    for kw in (dict(probs=probs), dict(logits=np.log(probs).tolist())):
        for cls in ("Categorical", "OneHotCategorical"):
            ours = getattr(ed, cls)(**{k: E(x) for k, x in kw.items()})
            theirs = getattr(td, cls)(**{k: T(x) for k, x in kw.items()})
            value = [2, 0] if cls == "Categorical" else [[0, 0, 1], [1, 0, 0]]
            dtype = ember.int64 if cls == "Categorical" else ember.float64
            tdtype = torch.int64 if cls == "Categorical" else torch.float64
            close(ours.log_prob(ember.tensor(value, dtype=dtype)),
                  theirs.log_prob(torch.tensor(value, dtype=tdtype)))
            close(ours.entropy(), theirs.entropy())
            close(ours.probs, theirs.probs)
            close(ours.logits, theirs.logits)
            assert ours.mode.tolist() == theirs.mode.tolist()
            assert ours.enumerate_support().tolist() == theirs.enumerate_support().tolist()
    ours = ed.Binomial(10, E([0.2, 0.7]))
    theirs = td.Binomial(10, T([0.2, 0.7]))
    close(ours.log_prob(E([3.0, 10.0])), theirs.log_prob(T([3.0, 10.0])))
    close(ours.entropy(), theirs.entropy())
    for attr in ("mean", "variance", "mode"):
        close(getattr(ours, attr), getattr(theirs, attr))


def test_dirichlet_against_torch():
    conc = [[0.5, 1.0, 3.0], [2.0, 2.0, 0.7]]
    ours, theirs = ed.Dirichlet(E(conc)), td.Dirichlet(T(conc))
    value = [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]
    close(ours.log_prob(E(value)), theirs.log_prob(T(value)))
    for attr in ("mean", "variance"):
        close(getattr(ours, attr), getattr(theirs, attr))
    close(ours.entropy(), theirs.entropy())
    assert tuple(ours.event_shape) == (3,) and tuple(ours.batch_shape) == (2,)


@pytest.mark.parametrize("kw", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_against_torch(kw):
    matrix = TRIL if kw == "scale_tril" else COV
    loc = [[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]]  # batch of 2 sharing one matrix
    ours = ed.MultivariateNormal(E(loc), **{kw: E(matrix)})
    theirs = td.MultivariateNormal(T(loc), **{kw: T(matrix)})
    assert tuple(ours.batch_shape) == (2,) and tuple(ours.event_shape) == (3,)
    value = [[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]]
    close(ours.log_prob(E(value)), theirs.log_prob(T(value)))
    close(ours.entropy(), theirs.entropy())
    for attr in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        close(getattr(ours, attr), getattr(theirs, attr))


def test_independent_and_expand():
    ours = ed.Independent(ed.Normal(E([[0.0, 1.0], [2.0, 3.0]]), E([[1.0, 2.0], [0.5, 1.0]])), 1)
    theirs = td.Independent(td.Normal(T([[0.0, 1.0], [2.0, 3.0]]),
                                      T([[1.0, 2.0], [0.5, 1.0]])), 1)
    assert tuple(ours.batch_shape) == (2,) and tuple(ours.event_shape) == (2,)
    close(ours.log_prob(E([0.3, -0.2])), theirs.log_prob(T([0.3, -0.2])))
    close(ours.entropy(), theirs.entropy())
    big = ours.expand((4, 2))
    assert tuple(big.batch_shape) == (4, 2) and tuple(big.sample((3,)).shape) == (3, 4, 2, 2)
    close(big.log_prob(E([0.3, -0.2])), theirs.expand((4, 2)).log_prob(T([0.3, -0.2])))
    g = ed.Gamma(E([1.0]), E([2.0])).expand((3,))
    assert tuple(g.batch_shape) == (3,) and tuple(g.mean.shape) == (3,)


KL_PAIRS = [
    ("Normal", ([0.0, 1.0], [1.0, 2.0]), "Normal", ([0.5, -1.0], [2.0, 0.5])),
    ("LogNormal", ([0.0, 1.0], [1.0, 2.0]), "LogNormal", ([0.5, -1.0], [2.0, 0.5])),
    ("Laplace", ([0.0, 1.0], [1.0, 2.0]), "Laplace", ([0.5, -1.0], [2.0, 0.5])),
    ("Exponential", ([0.5, 3.0],), "Exponential", ([2.0, 1.0],)),
    ("Gamma", ([0.5, 3.0], [1.0, 2.0]), "Gamma", ([2.0, 1.0], [0.3, 4.0])),
    ("Beta", ([0.5, 3.0], [1.0, 2.0]), "Beta", ([2.0, 1.0], [0.3, 4.0])),
    ("Uniform", ([0.0, 1.0], [1.0, 2.0]), "Uniform", ([-1.0, 0.0], [2.0, 3.0])),
    ("Poisson", ([0.5, 3.0],), "Poisson", ([2.0, 1.0],)),
    ("Bernoulli", ([0.2, 0.9],), "Bernoulli", ([0.5, 0.3],)),
    ("Categorical", ([[0.2, 0.8], [0.5, 0.5]],), "Categorical", ([[0.6, 0.4], [0.1, 0.9]],)),
    ("Dirichlet", ([[0.5, 2.0, 1.0]],), "Dirichlet", ([[1.0, 1.0, 3.0]],)),
    ("Exponential", ([0.5, 3.0],), "Gamma", ([2.0, 1.0], [0.3, 4.0])),
    ("Uniform", ([0.0, 1.0], [1.0, 2.0]), "Normal", ([0.5, -1.0], [2.0, 0.5])),
    ("Normal", ([0.0, 1.0], [1.0, 2.0]), "Laplace", ([0.5, -1.0], [2.0, 0.5])),
]


@pytest.mark.parametrize("p_name,p_args,q_name,q_args", KL_PAIRS,
                         ids=[f"{p}-{q}" for p, _, q, _ in KL_PAIRS])
def test_kl_against_torch(p_name, p_args, q_name, q_args):
    ours = ed.kl_divergence(getattr(ed, p_name)(*map(E, p_args)),
                            getattr(ed, q_name)(*map(E, q_args)))
    theirs = td.kl_divergence(getattr(td, p_name)(*map(T, p_args)),
                              getattr(td, q_name)(*map(T, q_args)))
    close(ours, theirs)


def test_kl_multivariate_normal_independent_and_registry():
    p = ed.MultivariateNormal(E([0.0, 1.0, 2.0]), covariance_matrix=E(COV))
    q = ed.MultivariateNormal(E([1.0, 0.0, 2.5]), covariance_matrix=E(COV2))
    tp = td.MultivariateNormal(T([0.0, 1.0, 2.0]), covariance_matrix=T(COV))
    tq = td.MultivariateNormal(T([1.0, 0.0, 2.5]), covariance_matrix=T(COV2))
    close(ed.kl_divergence(p, q), td.kl_divergence(tp, tq))
    ip = ed.Independent(ed.Normal(E([0.0, 1.0]), E([1.0, 2.0])), 1)
    iq = ed.Independent(ed.Normal(E([1.0, 1.0]), E([2.0, 2.0])), 1)
    tip = td.Independent(td.Normal(T([0.0, 1.0]), T([1.0, 2.0])), 1)
    tiq = td.Independent(td.Normal(T([1.0, 1.0]), T([2.0, 2.0])), 1)
    close(ed.kl_divergence(ip, iq), td.kl_divergence(tip, tiq))
    with pytest.raises(NotImplementedError, match="No KL"):
        ed.kl_divergence(ed.Poisson(E([1.0])), ed.Uniform(E([0.0]), E([1.0])))
    # two different exponential families fall to the Bregman pair, which refuses, as in torch
    with pytest.raises(NotImplementedError, match="different exponential families"):
        ed.kl_divergence(ed.Poisson(E([1.0])), ed.Normal(E([0.0]), E([1.0])))

    class MyNormal(ed.Normal):
        pass

    @ed.register_kl(MyNormal, ed.Normal)
    def _kl(p, q):
        return ember.zeros_like(p.loc) + 42.0

    assert ed.kl_divergence(MyNormal(E([0.0]), E([1.0])),
                            ed.Normal(E([0.0]), E([1.0]))).tolist() == [42.0]


SAMPLE_CASES = [
    ("Normal", (E([0.0, 2.0]), E([1.0, 0.5]))),
    ("LogNormal", (E([0.0, 0.5]), E([0.5, 0.25]))),
    ("Uniform", (E([0.0, -1.0]), E([1.0, 3.0]))),
    ("Exponential", (E([0.5, 3.0]),)),
    ("Laplace", (E([0.0, 1.0]), E([1.0, 2.0]))),
    ("Gamma", (E([0.3, 5.0]), E([1.0, 2.0]))),
    ("Beta", (E([0.5, 3.0]), E([2.0, 1.0]))),
    ("Poisson", (E([0.5, 30.0]),)),
    ("Bernoulli", (E([0.2, 0.7]),)),
    ("Binomial", (10, E([0.2, 0.7]))),
]


@pytest.mark.parametrize("name,args", SAMPLE_CASES, ids=[c[0] for c in SAMPLE_CASES])
def test_sample_statistics(name, args):
    ember.manual_seed(0)
    d = getattr(ed, name)(*args)
    n = 20000
    s = d.sample((n,))
    assert tuple(s.shape) == (n, 2) and s.dtype == ember.float64
    assert tuple(d.sample().shape) == (2,)
    mean, var = np.asarray(d.mean.tolist()), np.asarray(d.variance.tolist())
    sample = np.asarray(s.tolist())
    assert np.all(np.abs(sample.mean(0) - mean) < 5 * np.sqrt(var / n))
    # standard error of the sample variance from the fourth central moment of the sample
    m4 = ((sample - sample.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(sample.var(0) - var) < 5 * np.sqrt((m4 - var ** 2) / n))


def test_categorical_and_multivariate_sampling():
    ember.manual_seed(0)
    probs = [[0.2, 0.3, 0.5], [0.7, 0.0, 0.3]]
    s = ed.Categorical(probs=E(probs)).sample((20000,))
    assert s.dtype == ember.int64 and tuple(s.shape) == (20000, 2)
    freq = np.stack([(np.asarray(s.tolist()) == k).mean(0) for k in range(3)], -1)
    p = np.asarray(probs)
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / 20000) + 1e-12)
    oh = ed.OneHotCategorical(probs=E(probs)).sample((5,))
    assert tuple(oh.shape) == (5, 2, 3) and oh.sum(-1).tolist() == [[1.0, 1.0]] * 5
    mvn = ed.MultivariateNormal(E([1.0, -1.0, 0.0]), covariance_matrix=E(COV))
    x = np.asarray(mvn.rsample((20000,)).tolist())
    assert np.all(np.abs(x.mean(0) - [1.0, -1.0, 0.0]) < 5 * np.sqrt(np.diag(COV) / 20000))
    assert np.allclose(np.cov(x.T), COV, atol=0.1)
    d = ed.Dirichlet(E([[0.5, 2.0, 1.0]]))
    s = d.sample((20000,))
    assert tuple(s.shape) == (20000, 1, 3)
    assert np.allclose(np.asarray(s.sum(-1).tolist()), 1.0)
    assert np.allclose(np.asarray(s.tolist()).mean(0), np.asarray(d.mean.tolist()), atol=0.01)


def _grads(params):
    return [np.asarray(p.grad.tolist()) for p in params]


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Gamma", "Beta", "Exponential",
                                  "LogNormal", "Uniform"])
def test_log_prob_gradients_match_torch(name):
    make, values = CASES[name]
    ours_params = [p.requires_grad_() for p in make(E)]
    theirs_params = [p.requires_grad_() for p in make(T)]
    getattr(ed, name)(*ours_params).log_prob(E(values)).sum().backward()
    getattr(td, name)(*theirs_params).log_prob(T(values)).sum().backward()
    for ours, theirs in zip(_grads(ours_params), theirs_params):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_mvn_and_categorical_gradients_match_torch():
    loc, cov = E([0.0, 1.0, 2.0]).requires_grad_(), E(COV).requires_grad_()
    tloc, tcov = T([0.0, 1.0, 2.0]).requires_grad_(), T(COV).requires_grad_()
    value = [[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]]
    (ed.MultivariateNormal(loc, cov).log_prob(E(value)).sum()
     + ed.MultivariateNormal(loc, cov).entropy()).backward()
    (td.MultivariateNormal(tloc, tcov).log_prob(T(value)).sum()
     + td.MultivariateNormal(tloc, tcov).entropy()).backward()
    np.testing.assert_allclose(loc.grad.tolist(), tloc.grad.numpy(), rtol=1e-9, atol=1e-9)
    # torch symmetrises the covariance gradient; compare the symmetric part
    ours = np.asarray(cov.grad.tolist())
    theirs = tcov.grad.numpy()
    np.testing.assert_allclose(ours + ours.T, theirs + theirs.T, rtol=1e-9, atol=1e-9)
    logits, tlogits = E([[0.1, -1.0, 2.0]]).requires_grad_(), T([[0.1, -1.0, 2.0]])
    tlogits.requires_grad_()
    (ed.Categorical(logits=logits).log_prob(ember.tensor([2])).sum()
     + ed.Categorical(logits=logits).entropy().sum()).backward()
    (td.Categorical(logits=tlogits).log_prob(torch.tensor([2])).sum()
     + td.Categorical(logits=tlogits).entropy().sum()).backward()
    np.testing.assert_allclose(logits.grad.tolist(), tlogits.grad.numpy(), rtol=1e-9,
                               atol=1e-9)


def test_rsample_is_reparameterised():
    # The same standard noise drives both frameworks: E[f(x)] gradients must agree exactly.
    ember.manual_seed(1)
    loc, scale = E([0.5, -1.0]).requires_grad_(), E([1.5, 0.3]).requires_grad_()
    x = ed.Normal(loc, scale).rsample((1000,))
    noise = (x.detach() - loc.detach()) / scale.detach()
    (x ** 2).mean().backward()
    tloc, tscale = T([0.5, -1.0]).requires_grad_(), T([1.5, 0.3]).requires_grad_()
    tx = tloc + T(noise.tolist()) * tscale  # torch's Normal.rsample formula
    (tx ** 2).mean().backward()
    np.testing.assert_allclose(loc.grad.tolist(), tloc.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(scale.grad.tolist(), tscale.grad.numpy(), rtol=1e-12)
    # MultivariateNormal: d/d loc of E[sum x] is the sample count; gradients reach scale_tril
    lower = E(TRIL).requires_grad_()
    mloc = E([0.0, 0.0, 0.0]).requires_grad_()
    ed.MultivariateNormal(mloc, scale_tril=lower).rsample((7,)).sum().backward()
    assert mloc.grad.tolist() == [7.0, 7.0, 7.0] and lower.grad is not None
    for cls, args in (("Exponential", (E([2.0]),)), ("Laplace", (E([0.0]), E([1.0]))),
                      ("Uniform", (E([0.0]), E([2.0]))), ("LogNormal", (E([0.0]), E([1.0])))):
        params = [a.requires_grad_() for a in args]
        d = getattr(ed, cls)(*params)
        assert d.has_rsample
        d.rsample((10,)).sum().backward()
        assert all(p.grad is not None for p in params)
    # Gamma/Beta/Dirichlet: implicit reparameterisation (gradients checked in
    # test_distributions_more.py against torch's incomplete gamma function)
    for cls, args in (("Gamma", (E([1.5]), E([1.0]))), ("Beta", (E([1.5]), E([2.0]))),
                      ("Dirichlet", (E([1.5, 2.0]),))):
        params = [a.requires_grad_() for a in args]
        d = getattr(ed, cls)(*params)
        assert d.has_rsample == getattr(td, cls)(*[T(a.tolist()) for a in args]).has_rsample
        d.rsample((10,)).sum().backward()
        assert all(p.grad is not None for p in params)


def test_validate_args_errors_match_torch():
    bad = [
        ("Normal", (E([0.0]), E([-1.0]))),
        ("Gamma", (E([-1.0]), E([1.0]))),
        ("Exponential", (E([0.0]),)),
        ("Beta", (E([1.0]), E([0.0]))),
        ("Dirichlet", (E([[1.0, -1.0]]),)),
        ("Uniform", (E([1.0]), E([0.0]))),
    ]
    for name, args in bad:
        with pytest.raises(ValueError):
            getattr(td, name)(*(T(a.tolist()) for a in args))
        with pytest.raises(ValueError):
            getattr(ed, name)(*args)
        getattr(ed, name)(*args, validate_args=False)  # no check when validation is off
    with pytest.raises(ValueError, match="Expected parameter scale"):
        ed.Normal(E([0.0]), E([-1.0]))
    with pytest.raises(ValueError, match="within the support"):
        ed.Exponential(E([1.0])).log_prob(E([-1.0]))
    with pytest.raises(ValueError, match="right-most size of value must match event_shape"):
        ed.Dirichlet(E([1.0, 1.0])).log_prob(E([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError, match="broadcastable"):
        ed.Normal(E([0.0, 1.0]), E([1.0, 1.0])).log_prob(E([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        ed.Bernoulli(probs=E([0.5]), logits=E([0.0]))
    with pytest.raises(ValueError, match="Exactly one of"):
        ed.MultivariateNormal(E([0.0]))
    with pytest.raises(ValueError):
        ed.MultivariateNormal(E([0.0, 0.0]), covariance_matrix=E([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError):
        td.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T([[1.0, 2.0], [2.0, 1.0]]))
    try:
        ed.Distribution.set_default_validate_args(False)
        ed.Normal(E([0.0]), E([-1.0]))  # accepted, as in torch
    finally:
        ed.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ed.Normal(E([0.0]), E([-1.0]))


def test_shapes_dtypes_and_repr():
    d = ed.Normal(0.0, 1.0)
    assert tuple(d.batch_shape) == () and d.sample().dtype == ember.get_default_dtype()
    assert tuple(d.sample((2, 3)).shape) == (2, 3)
    assert repr(ed.Normal(E([0.0, 1.0]), E([1.0, 1.0]))) == \
        repr(td.Normal(T([0.0, 1.0]), T([1.0, 1.0]))).replace("torch", "ember")
    assert repr(ed.constraints.positive) == repr(td.constraints.positive)
    assert repr(ed.constraints.real_vector) == repr(td.constraints.real_vector)
    assert repr(ed.constraints.unit_interval) == repr(td.constraints.unit_interval)
    assert ed.Categorical(probs=E([0.5, 0.5])).sample((4,)).dtype == ember.int64
    assert ed.Bernoulli(probs=ember.tensor([0.5])).sample().dtype == ember.float32
    assert ember.distributions is ed and math.isclose(
        ed.Normal(0.0, 1.0).perplexity().item(), math.exp(0.5 + 0.5 * math.log(2 * math.pi)),
        rel_tol=1e-6)
