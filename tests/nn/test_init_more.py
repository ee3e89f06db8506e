"""``nn.init`` beyond the common initialisers, against PyTorch: the deprecated spellings
without the underscore, the deterministic fills (``eye_``, ``dirac_``, ``constant_``)
by value, the random ones (``orthogonal_``, ``sparse_``, ``trunc_normal_``) by structure
and statistics, and the argument checks by exception type and message."""
import math
import warnings

import numpy as np
import pytest
import torch
from nn_helpers import close

import ember
import ember.nn.init as einit
import torch.nn.init as tinit

DEPRECATED = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
              "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def test_the_public_names_match_torch():
    theirs = {n for n in dir(tinit) if not n.startswith("_") and callable(getattr(tinit, n))
              and getattr(getattr(tinit, n), "__module__", "") == "torch.nn.init"}
    ours = {n for n in dir(einit) if not n.startswith("_")}
    assert theirs - ours == set()
    # private helpers that model zoos call
    for name in ("_calculate_fan_in_and_fan_out", "_calculate_correct_fan", "_no_grad_uniform_",
                 "_no_grad_normal_", "_no_grad_trunc_normal_", "_no_grad_fill_",
                 "_no_grad_zero_"):
        assert hasattr(tinit, name) and hasattr(einit, name), name
    t = einit._no_grad_trunc_normal_(ember.empty(50), 0.0, 1.0, -0.5, 0.5).numpy()
    assert t.min() >= -0.5 and t.max() <= 0.5
    assert einit._calculate_fan_in_and_fan_out(ember.empty(4, 3, 2, 2)) == \
        tinit._calculate_fan_in_and_fan_out(torch.empty(4, 3, 2, 2))


@pytest.mark.parametrize("name", DEPRECATED)
def test_deprecated_aliases_warn_and_fill(name):
    shape = (4, 3, 3) if name == "dirac" else (6, 5)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    t = ember.zeros(*shape)
    with pytest.warns(FutureWarning) as record:
        out = getattr(einit, name)(t, *args)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        getattr(tinit, name)(torch.zeros(*shape), *args)
    assert str(record[0].message) == str(theirs[0].message)
    assert out is t
    assert getattr(einit, name).__name__ == name
    if name in ("uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                "kaiming_normal", "orthogonal"):
        assert float(t.abs().sum()) > 0


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 2, 3, 3), 2), ((2, 5, 3, 3, 3), 1),
                                          ((8, 3, 2, 2), 4), ((3, 6, 4), 1)])
def test_dirac(shape, groups):
    close(einit.dirac_(ember.empty(*shape), groups), tinit.dirac_(torch.empty(*shape), groups))


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)])
def test_eye_and_constant(shape):
    close(einit.eye_(ember.empty(*shape)), tinit.eye_(torch.empty(*shape)))
    close(einit.constant_(ember.empty(*shape), -2.5), tinit.constant_(torch.empty(*shape), -2.5))
    close(einit.ones_(ember.empty(*shape)), tinit.ones_(torch.empty(*shape)))
    close(einit.zeros_(ember.empty(*shape)), tinit.zeros_(torch.empty(*shape)))
    t = ember.empty(*shape, requires_grad=True)
    einit.eye_(t)
    assert t.requires_grad and t.grad_fn is None


@pytest.mark.parametrize("shape,gain", [((6, 6), 1.0), ((4, 9), 2.0), ((9, 4), 0.5),
                                        ((3, 2, 2, 2), 1.0)])
def test_orthogonal_structure(shape, gain):
    w = einit.orthogonal_(ember.empty(*shape), gain=gain).numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    m = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(m, gain ** 2 * np.eye(min(rows, cols)), atol=1e-5)


def test_sparse_and_trunc_normal_statistics():
    w = einit.sparse_(ember.empty(40, 30), sparsity=0.3, std=0.05).numpy()
    zeros_per_column = (w == 0).sum(0)
    assert (zeros_per_column >= math.ceil(0.3 * 40)).all()
    nonzero = w[w != 0]
    assert abs(nonzero.std() - 0.05) < 0.01
    t = einit.trunc_normal_(ember.empty(200, 100), mean=1.0, std=2.0, a=-1.0, b=2.0).numpy()
    assert t.min() >= -1.0 and t.max() <= 2.0
    ref = tinit.trunc_normal_(torch.empty(200, 100), mean=1.0, std=2.0, a=-1.0, b=2.0).numpy()
    assert abs(t.mean() - ref.mean()) < 0.03 and abs(t.std() - ref.std()) < 0.03


@pytest.mark.parametrize("fn,kw,shape", [
    ("uniform_", dict(a=-3, b=1), (300, 100)),
    ("normal_", dict(mean=2, std=0.5), (300, 100)),
    ("xavier_uniform_", dict(gain=2.0), (300, 100)),
    ("xavier_normal_", dict(), (300, 100)),
    ("kaiming_uniform_", dict(a=0.1, mode="fan_out", nonlinearity="leaky_relu"), (300, 100)),
    ("kaiming_normal_", dict(nonlinearity="relu"), (100, 30, 3, 3)),
])
def test_random_fills_statistics(fn, kw, shape):
    ours = getattr(einit, fn)(ember.empty(*shape), **kw).numpy()
    theirs = getattr(tinit, fn)(torch.empty(*shape), **kw).numpy()
    assert abs(ours.mean() - theirs.mean()) < 0.05 * max(1.0, abs(theirs.mean()))
    assert abs(ours.std() / theirs.std() - 1) < 0.03
    if "uniform" in fn:
        assert abs(ours.min() - theirs.min()) < 0.02 * theirs.std() * 10
        assert abs(ours.max() - theirs.max()) < 0.02 * theirs.std() * 10


ERROR_CASES = [
    ("eye_", (3,), {}), ("eye_", (2, 3, 4), {}), ("dirac_", (3, 4), {}),
    ("dirac_", (6, 4, 3), {"groups": 4}), ("orthogonal_", (3,), {}), ("sparse_", (3, 4, 5),
                                                                      {"sparsity": 0.1}),
    ("xavier_uniform_", (3,), {}), ("xavier_normal_", (5,), {}),
    ("kaiming_uniform_", (3, 4), {"mode": "fan_avg"}),
    ("kaiming_normal_", (3, 4), {"nonlinearity": "swish"}),
    ("kaiming_uniform_", (3, 4), {"a": "x"}),
]


@pytest.mark.parametrize("fn,shape,kw", ERROR_CASES)
def test_argument_errors_match_torch(fn, shape, kw):
    with pytest.raises(Exception) as theirs:
        getattr(tinit, fn)(torch.empty(*shape), **kw)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(einit, fn)(ember.empty(*shape), **kw)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("conv3d", None), ("conv_transpose2d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
    ("leaky_relu", 1), ("selu", None)])
def test_calculate_gain(nonlinearity, param):
    assert einit.calculate_gain(nonlinearity, param) == pytest.approx(
        tinit.calculate_gain(nonlinearity, param))


def test_zero_element_tensors():
    for fn in ("kaiming_uniform_", "kaiming_normal_"):
        with pytest.warns(UserWarning, match="zero-element"):
            getattr(einit, fn)(ember.empty(0, 3))
    assert tuple(einit.orthogonal_(ember.empty(0, 3)).shape) == (0, 3)
    assert tuple(einit.trunc_normal_(ember.empty(0)).shape) == (0,)
