"""ember.distributions.transforms and constraint_registry against torch.distributions: forward,
inverse, log|det J|, shapes, domains/codomains, caching, and which transform biject_to /
transform_to pick for each constraint; TransformedDistribution on top of them."""
import numpy as np
import pytest
import torch
import torch.distributions as td
import torch.distributions.transforms as tt

import ember
import ember.distributions as ed
import ember.distributions.transforms as et


def E(x):
    return ember.tensor(x, dtype=ember.float64)


def T(x):
    return torch.tensor(x, dtype=torch.float64)


def close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=np.float64),
                               theirs.detach().numpy(), rtol=tol, atol=tol)


X = [[-1.5, 0.2, 0.7], [2.0, -0.3, 0.1]]
XPOS = [[0.5, 1.2, 3.0], [2.0, 0.3, 0.1]]
XUNIT = [[0.1, 0.5, 0.9], [0.25, 0.75, 0.6]]
SIMPLEX = [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]
MAT = [[[0.3, 0.5], [-0.2, 0.1]], [[1.0, 2.0], [0.5, -1.0]]]

# name -> (ember factory, torch factory, x in the domain)
CASES = {
    "Exp": (lambda m: m.ExpTransform(), X),
    "Power": (lambda m: m.PowerTransform(2.5), XPOS),
    "Sigmoid": (lambda m: m.SigmoidTransform(), X),
    "Softplus": (lambda m: m.SoftplusTransform(), X),
    "Tanh": (lambda m: m.TanhTransform(), X),
    "Affine": (lambda m: m.AffineTransform(0.5, -2.0), X),
    "AffineEvent": (lambda m: m.AffineTransform(0.5, 3.0, event_dim=1), X),
    "StickBreaking": (lambda m: m.StickBreakingTransform(), X),
    "LowerCholesky": (lambda m: m.LowerCholeskyTransform(), MAT),
    "CorrCholesky": (lambda m: m.CorrCholeskyTransform(), X),
    "Compose": (lambda m: m.ComposeTransform([m.ExpTransform(), m.AffineTransform(1.0, 2.0)]),
                X),
    "Independent": (lambda m: m.IndependentTransform(m.ExpTransform(), 1), X),
    "Reshape": (lambda m: m.ReshapeTransform((3,), (3, 1)), X),
    "InverseExp": (lambda m: m.ExpTransform().inv, XPOS),
    "Cat": (lambda m: m.CatTransform([m.ExpTransform(), m.SigmoidTransform()], dim=-1,
                                     lengths=[2, 1]), X),
    "Stack": (lambda m: m.StackTransform([m.ExpTransform(), m.TanhTransform(),
                                          m.SoftplusTransform()], dim=-1), X),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_against_torch(name):
    make, x = CASES[name]
    ours, theirs = make(et), make(tt)
    xe, xt = E(x), T(x)
    ye, yt = ours(xe), theirs(xt)
    close(ye, yt)
    close(ours.inv(ye), theirs.inv(yt), tol=1e-9)
    try:
        expected = theirs.log_abs_det_jacobian(xt, yt)
    except NotImplementedError:   # e.g. LowerCholeskyTransform has none in torch either
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(xe, ye)
    else:
        close(ours.log_abs_det_jacobian(xe, ye), expected, tol=1e-8)
    assert ours.bijective == theirs.bijective
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert tuple(ours.forward_shape((4,) + tuple(xt.shape))) == \
        tuple(theirs.forward_shape((4,) + tuple(xt.shape)))
    assert tuple(ours.inverse_shape(tuple(yt.shape))) == tuple(theirs.inverse_shape(yt.shape))
    assert bool(ours.codomain.check(ye).all())


def test_abs_softmax_positive_definite_and_cdf_transforms():
    xe, xt = E(X), T(X)
    close(et.AbsTransform()(xe), tt.AbsTransform()(xt))
    close(et.SoftmaxTransform()(xe), tt.SoftmaxTransform()(xt))
    close(et.SoftmaxTransform().inv(E(SIMPLEX)), tt.SoftmaxTransform().inv(T(SIMPLEX)))
    me, mt = E(MAT), T(MAT)
    pe, pt = et.PositiveDefiniteTransform()(me), tt.PositiveDefiniteTransform()(mt)
    close(pe, pt)
    close(et.PositiveDefiniteTransform().inv(pe), tt.PositiveDefiniteTransform().inv(pt),
          tol=1e-9)
    ce = et.CumulativeDistributionTransform(ed.Normal(E(0.5), E(2.0)))
    ct = tt.CumulativeDistributionTransform(td.Normal(T(0.5), T(2.0)))
    close(ce(xe), ct(xt))
    close(ce.log_abs_det_jacobian(xe, ce(xe)), ct.log_abs_det_jacobian(xt, ct(xt)))
    close(ce.inv(ce(xe)), xt, tol=1e-9)


def test_cache_sign_equality_and_errors():
    t = et.ExpTransform(cache_size=1)
    x = E([0.5])
    y = t(x)
    assert t.inv(y) is x
    assert et.ExpTransform() == et.ExpTransform()
    assert et.ExpTransform().inv == et.ExpTransform().inv
    assert et.AffineTransform(1.0, 2.0) == et.AffineTransform(1.0, 2.0)
    assert et.AffineTransform(1.0, 2.0) != et.AffineTransform(1.0, 3.0)
    assert et.AffineTransform(0.0, -2.0).sign == -1
    assert et.ComposeTransform([et.ExpTransform(), et.AffineTransform(0.0, -1.0)]).sign == -1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        et.ExpTransform(cache_size=2)
    with pytest.raises(ValueError, match="different numbers of elements"):
        et.ReshapeTransform((3,), (2,))
    with pytest.raises(ValueError, match="Input is not a flattened lower-diagonal number"):
        et.CorrCholeskyTransform().forward_shape((4,))
    assert et.identity_transform(x) is x
    assert repr(et.ExpTransform()) == repr(tt.ExpTransform())


CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "real_vector",
               "corr_cholesky", "lower_cholesky", "positive_definite"]


@pytest.mark.parametrize("cname", CONSTRAINTS)
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_picks_torchs_transform(cname, registry):
    ours_c, theirs_c = getattr(ed.constraints, cname), getattr(td.constraints, cname)
    try:
        theirs = getattr(td, registry)(theirs_c)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(ed, registry)(ours_c)
        return
    ours = getattr(ed, registry)(ours_c)
    assert type(ours).__name__ == type(theirs).__name__
    if isinstance(theirs, tt.ComposeTransform):
        assert [type(p).__name__ for p in ours.parts] == [type(p).__name__ for p in theirs.parts]
    n = {"simplex": 2, "corr_cholesky": 3}.get(cname, 3)
    shape = (2, 2, 2) if cname in ("lower_cholesky", "positive_definite") else (2, n)
    x = np.random.default_rng(1).normal(size=shape).tolist()
    close(ours(E(x)), theirs(T(x)))
    assert bool(ours_c.check(ours(E(x))).all())


def test_registry_parametrised_constraints():
    for ours_c, theirs_c in ((ed.constraints.greater_than(2.0), td.constraints.greater_than(2.0)),
                             (ed.constraints.less_than(-1.0), td.constraints.less_than(-1.0)),
                             (ed.constraints.interval(-1.0, 3.0),
                              td.constraints.interval(-1.0, 3.0))):
        x = [-2.0, 0.0, 1.5]
        close(ed.biject_to(ours_c)(E(x)), td.biject_to(theirs_c)(T(x)))
        close(ed.transform_to(ours_c).inv(ed.transform_to(ours_c)(E(x))), T(x), tol=1e-9)
    with pytest.raises(TypeError, match="Expected constraint"):
        ed.biject_to.register(int, lambda c: None)


def test_transformed_distribution_against_torch():
    base_e = ed.Normal(E([0.0, 1.0]), E([1.0, 0.5]))
    base_t = td.Normal(T([0.0, 1.0]), T([1.0, 0.5]))
    ours = ed.TransformedDistribution(base_e, [et.ExpTransform(), et.AffineTransform(1.0, -2.0)])
    theirs = td.TransformedDistribution(base_t, [tt.ExpTransform(), tt.AffineTransform(1.0, -2.0)])
    v = [-1.0, -3.0]
    close(ours.log_prob(E(v)), theirs.log_prob(T(v)))
    close(ours.cdf(E(v)), theirs.cdf(T(v)))
    close(ours.icdf(E([0.2, 0.7])), theirs.icdf(T([0.2, 0.7])), tol=1e-9)
    assert ours.has_rsample and tuple(ours.rsample((3,)).shape) == (3, 2)
    assert tuple(ours.expand((4, 2)).batch_shape) == (4, 2)
    # event-changing transform: StickBreaking turns a batch of 2 into one event of 3
    sb_e = ed.TransformedDistribution(base_e, et.StickBreakingTransform())
    sb_t = td.TransformedDistribution(base_t, tt.StickBreakingTransform())
    assert tuple(sb_e.event_shape) == tuple(sb_t.event_shape) == (3,)
    close(sb_e.log_prob(E(SIMPLEX)), sb_t.log_prob(T(SIMPLEX)))
    with pytest.raises(ValueError, match="transforms must be a Transform or list"):
        ed.TransformedDistribution(base_e, 3)
