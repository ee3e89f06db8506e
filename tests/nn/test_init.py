"""nn.init and the layers' default initialisation follow PyTorch's distributions (same
bounds, fans and gains; the random streams differ, so statistics are compared)."""
import math

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from nn_helpers import n


def stats(t):
    a = n(t).astype(np.float64).ravel()
    return a.min(), a.max(), a.mean(), a.std()


@pytest.mark.parametrize("shape", [(3, 4), (8, 3, 5), (16, 4, 3, 3), (2, 3, 1, 2, 2)])
def test_fan_in_fan_out_match_pytorch(shape):
    assert (nn.init._calculate_fan_in_and_fan_out(ember.empty(shape))
            == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape)))


def test_fan_needs_2d():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init._calculate_fan_in_and_fan_out(ember.empty(3))


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",),
                                  ("leaky_relu",), ("leaky_relu", 0.2), ("selu",)])
def test_calculate_gain(args):
    assert math.isclose(nn.init.calculate_gain(*args), torch.nn.init.calculate_gain(*args))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        nn.init.calculate_gain("leaky_relu", "x")


def test_uniform_normal_constant():
    t = ember.empty(200, 100)
    lo, hi, mean, _ = stats(nn.init.uniform_(t, -2, 3))
    assert -2 <= lo and hi <= 3 and abs(mean - 0.5) < 0.05
    _, _, mean, std = stats(nn.init.normal_(t, 1.0, 0.5))
    assert abs(mean - 1.0) < 0.02 and abs(std - 0.5) < 0.02
    assert stats(nn.init.constant_(t, 0.3))[:2] == pytest.approx((0.3, 0.3))
    assert stats(nn.init.ones_(t))[:2] == (1.0, 1.0)
    assert stats(nn.init.zeros_(t))[:2] == (0.0, 0.0)
    g = ember.Generator().manual_seed(3)
    a = nn.init.normal_(ember.empty(5), generator=g).tolist()
    b = nn.init.normal_(ember.empty(5), generator=ember.Generator().manual_seed(3)).tolist()
    assert a == b


def test_trunc_normal():
    t = nn.init.trunc_normal_(ember.empty(20000), mean=0.5, std=1.0, a=-1.0, b=1.5)
    lo, hi, mean, std = stats(t)
    ref = torch.nn.init.trunc_normal_(torch.empty(200000), mean=0.5, std=1.0, a=-1.0, b=1.5)
    assert -1.0 <= lo and hi <= 1.5
    assert abs(mean - ref.mean().item()) < 0.02 and abs(std - ref.std().item()) < 0.02


@pytest.mark.parametrize("fn,kw", [("xavier_uniform_", {}), ("xavier_uniform_", dict(gain=2)),
                                   ("xavier_normal_", {}), ("kaiming_uniform_", {}),
                                   ("kaiming_uniform_", dict(a=math.sqrt(5))),
                                   ("kaiming_uniform_", dict(mode="fan_out",
                                                             nonlinearity="relu")),
                                   ("kaiming_normal_", {}),
                                   ("kaiming_normal_", dict(mode="fan_out"))])
def test_xavier_kaiming_statistics_match_pytorch(fn, kw):
    shape = (64, 32, 3, 3)
    ours = getattr(nn.init, fn)(ember.empty(shape), **kw)
    theirs = getattr(torch.nn.init, fn)(torch.empty(shape), **kw)
    lo, hi, mean, std = stats(ours)
    tlo, thi, _, tstd = stats(theirs)
    assert abs(mean) < 0.01 * max(tstd, 1e-3) * 10
    assert abs(std - tstd) / tstd < 0.03
    if "uniform" in fn:
        bound = max(abs(tlo), thi)
        assert -bound * 1.01 <= lo and hi <= bound * 1.01 and hi > bound * 0.95


def test_kaiming_bad_mode():
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        nn.init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")


@pytest.mark.parametrize("shape", [(6, 6), (4, 10), (10, 4), (3, 2, 2, 2)])
def test_orthogonal(shape):
    w = nn.init.orthogonal_(ember.empty(shape), gain=1.5)
    m = n(w).reshape(shape[0], -1).astype(np.float64) / 1.5
    if m.shape[0] <= m.shape[1]:
        np.testing.assert_allclose(m @ m.T, np.eye(m.shape[0]), atol=1e-5)
    else:
        np.testing.assert_allclose(m.T @ m, np.eye(m.shape[1]), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        nn.init.orthogonal_(ember.empty(3))


def test_eye_dirac_sparse():
    assert n(nn.init.eye_(ember.empty(3, 4))).tolist() == np.eye(3, 4).tolist()
    w = nn.init.dirac_(ember.empty(4, 2, 3, 3), groups=2)
    tw = torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2)
    assert n(w).tolist() == tw.tolist()
    s = nn.init.sparse_(ember.empty(10, 6), sparsity=0.3)
    assert ((n(s) == 0).sum(axis=0) >= 3).all()


def test_init_works_on_parameters_without_recording():
    p = nn.Parameter(ember.empty(4, 4))
    for fn in (nn.init.uniform_, nn.init.normal_, nn.init.xavier_uniform_,
               nn.init.kaiming_normal_, nn.init.orthogonal_, nn.init.zeros_,
               nn.init.trunc_normal_, lambda t: nn.init.constant_(t, 2.0)):
        out = fn(p)
        assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad


# ---- layers' default initialisation ---------------------------------------------------
def _bound_ok(t, bound):
    lo, hi, _, _ = stats(t)
    return -bound <= lo and hi <= bound and hi > 0.8 * bound and lo < -0.8 * bound


@pytest.mark.parametrize("make,fan_in", [
    (lambda L: L.Linear(50, 40), 50),
    (lambda L: L.Conv2d(6, 20, 3, groups=2), 27),
    (lambda L: L.Conv1d(4, 30, 5), 20),
    (lambda L: L.ConvTranspose2d(6, 20, 3, groups=2), 90),
])
def test_linear_and_conv_default_bounds(make, fan_in):
    ours, theirs = make(nn), make(torch.nn)
    bound = 1 / math.sqrt(fan_in)
    assert _bound_ok(ours.weight, bound)
    assert _bound_ok(theirs.weight, bound)              # the fan is PyTorch's too
    lo, hi, _, _ = stats(ours.bias)
    assert -bound <= lo and hi <= bound


def test_bilinear_embedding_and_norm_defaults():
    b = nn.Bilinear(30, 20, 10)
    assert _bound_ok(b.weight, 1 / math.sqrt(30))
    emb = nn.Embedding(400, 50, padding_idx=7)
    _, _, mean, std = stats(emb.weight)
    assert abs(mean) < 0.04 and abs(std - 1) < 0.04      # 20000 samples: ~5 sigma
    assert n(emb.weight)[7].tolist() == [0.0] * 50
    for layer in (nn.LayerNorm(5), nn.GroupNorm(1, 5), nn.BatchNorm2d(5)):
        assert n(layer.weight).tolist() == [1.0] * 5
        assert n(layer.bias).tolist() == [0.0] * 5
    assert n(nn.RMSNorm(5).weight).tolist() == [1.0] * 5
    bn = nn.BatchNorm1d(3)
    assert n(bn.running_mean).tolist() == [0.0] * 3 and n(bn.running_var).tolist() == [1.0] * 3
    assert bn.num_batches_tracked.dtype is ember.int64 and bn.num_batches_tracked.shape == ()
    assert n(nn.PReLU(3).weight).tolist() == [0.25] * 3


def test_default_init_is_seeded_by_ember_manual_seed():
    ember.manual_seed(123)
    a = nn.Linear(4, 4).weight.tolist()
    ember.manual_seed(123)
    assert nn.Linear(4, 4).weight.tolist() == a


def test_device_and_dtype_factory_kwargs():
    lin = nn.Linear(3, 2, dtype=ember.float64, device="cpu")
    assert lin.weight.dtype is ember.float64 and lin.bias.dtype is ember.float64
    conv = nn.Conv2d(2, 2, 3, dtype=ember.float64)
    assert conv.weight.dtype is ember.float64
