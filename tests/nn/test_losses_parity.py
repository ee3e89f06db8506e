"""Losses match PyTorch for every reduction and their non-default arguments, and reject
bad targets with PyTorch's messages."""
import warnings

import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from nn_helpers import close, e, randn

REDUCTIONS = ["mean", "sum", "none"]


def both(make, *args):
    """Run the loss module from each library on the same arguments."""
    out_t = make(tnn, torch)(*args)
    out_e = make(nn, ember)(*[e(a) for a in args])
    close(out_e, out_t)


def _w(lib, t):
    return None if t is None else (t if lib is torch else e(t))


@pytest.mark.parametrize("red", REDUCTIONS)
def test_regression_losses(red):
    x, y = randn(4, 5), randn(4, 5, seed=1)
    both(lambda L, T: L.MSELoss(reduction=red), x, y)
    both(lambda L, T: L.L1Loss(reduction=red), x, y)
    both(lambda L, T: L.SmoothL1Loss(reduction=red), x, y)
    both(lambda L, T: L.SmoothL1Loss(reduction=red, beta=0.3), x, y)
    both(lambda L, T: L.SmoothL1Loss(reduction=red, beta=0.0), x, y)
    both(lambda L, T: L.HuberLoss(reduction=red, delta=0.5), x, y)
    w = torch.rand(4, 5)
    close(F.mse_loss(e(x), e(y), reduction=red, weight=e(w)),
          TF.mse_loss(x, y, reduction=red, weight=w))
    close(F.l1_loss(e(x), e(y), reduction=red, weight=e(w)),
          TF.l1_loss(x, y, reduction=red, weight=w))


def test_legacy_size_average_reduce():
    x, y = randn(3, 4), randn(3, 4, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sa, r in [(False, None), (None, False), (True, True)]:
            close(nn.MSELoss(size_average=sa, reduce=r)(e(x), e(y)),
                  tnn.MSELoss(size_average=sa, reduce=r)(x, y))


CE_CASES = [
    dict(),
    dict(ignore_index=2),
    dict(label_smoothing=0.2),
    dict(weight=True),
    dict(weight=True, ignore_index=1),
    dict(weight=True, label_smoothing=0.15),
    dict(weight=True, label_smoothing=0.15, ignore_index=0),
    dict(ignore_index=3, label_smoothing=0.3),
]


@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("kw", CE_CASES)
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4), (2, 5, 3, 2)])
def test_cross_entropy_class_indices(red, kw, shape):
    kw = dict(kw)
    weight = torch.rand(5) + 0.5 if kw.pop("weight", False) else None
    x = randn(*shape) * 2
    tshape = (shape[0],) + shape[2:]
    t = torch.randint(0, 5, tshape, generator=torch.Generator().manual_seed(3))
    t.view(-1)[0] = kw.get("ignore_index", 0)   # make sure an ignored entry exists
    both(lambda L, T: L.CrossEntropyLoss(weight=_w(T, weight), reduction=red, **kw), x, t)
    close(F.cross_entropy(e(x), e(t), weight=_w(ember, weight), reduction=red, **kw),
          TF.cross_entropy(x, t, weight=weight, reduction=red, **kw))


def test_cross_entropy_unbatched():
    x, t = randn(5), torch.tensor(3)
    both(lambda L, T: L.CrossEntropyLoss(), x, t)
    both(lambda L, T: L.CrossEntropyLoss(label_smoothing=0.1), x, t)


@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("kw", [dict(), dict(label_smoothing=0.25), dict(weight=True),
                                dict(weight=True, label_smoothing=0.1)])
def test_cross_entropy_class_probabilities(red, kw):
    kw = dict(kw)
    weight = torch.rand(4) + 0.5 if kw.pop("weight", False) else None
    x = randn(3, 4, 2)
    p = torch.softmax(randn(3, 4, 2, seed=5), 1)
    both(lambda L, T: L.CrossEntropyLoss(weight=_w(T, weight), reduction=red, **kw), x, p)


@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("kw", [dict(), dict(ignore_index=1), dict(weight=True),
                                dict(weight=True, ignore_index=4)])
def test_nll_loss(red, kw):
    kw = dict(kw)
    weight = torch.rand(5) + 0.5 if kw.pop("weight", False) else None
    x = torch.log_softmax(randn(7, 5), 1)
    t = torch.tensor([0, 1, 4, 4, 2, 1, 3])
    both(lambda L, T: L.NLLLoss(weight=_w(T, weight), reduction=red, **kw), x, t)
    x4 = torch.log_softmax(randn(2, 5, 3, 3), 1)
    t4 = torch.randint(0, 5, (2, 3, 3), generator=torch.Generator().manual_seed(1))
    both(lambda L, T: L.NLLLoss(weight=_w(T, weight), reduction=red, **kw), x4, t4)


@pytest.mark.parametrize("red", REDUCTIONS)
def test_bce(red):
    x = torch.rand(4, 3) * 0.98 + 0.01
    y = torch.rand(4, 3)
    x[0, 0], x[0, 1], y[0, 0] = 0.0, 1.0, 1.0      # log clamped at -100, as PyTorch
    w = torch.rand(4, 3)
    both(lambda L, T: L.BCELoss(reduction=red), x, y)
    both(lambda L, T: L.BCELoss(weight=_w(T, w), reduction=red), x, y)


@pytest.mark.parametrize("red", REDUCTIONS)
def test_bce_with_logits(red):
    x = randn(4, 3) * 10
    x[0, 0], x[0, 1] = 100.0, -100.0               # stable for large logits
    y = torch.rand(4, 3)
    w = torch.rand(4, 3)
    pw = torch.rand(3) * 3
    both(lambda L, T: L.BCEWithLogitsLoss(reduction=red), x, y)
    both(lambda L, T: L.BCEWithLogitsLoss(weight=_w(T, w), pos_weight=_w(T, pw),
                                          reduction=red), x, y)


@pytest.mark.parametrize("red", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(red, log_target):
    x = torch.log_softmax(randn(4, 5), 1)
    p = torch.softmax(randn(4, 5, seed=2), 1)
    p[0, 0] = 0.0                                  # 0 * log 0 = 0
    t = p.log() if log_target else p
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda L, T: L.KLDivLoss(reduction=red, log_target=log_target), x, t)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(ember.zeros(2), ember.ones(2))


@pytest.mark.parametrize("red", REDUCTIONS)
def test_other_losses(red):
    x1, x2 = randn(5, 4), randn(5, 4, seed=1)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0])
    both(lambda L, T: L.SoftMarginLoss(reduction=red), x1, torch.sign(x2))
    both(lambda L, T: L.MarginRankingLoss(margin=0.3, reduction=red), x1[:, 0], x2[:, 0], sign)
    both(lambda L, T: L.HingeEmbeddingLoss(margin=0.5, reduction=red), x1, torch.sign(x2))
    both(lambda L, T: L.CosineEmbeddingLoss(margin=0.2, reduction=red), x1, x2, sign)
    both(lambda L, T: L.PoissonNLLLoss(reduction=red), x1, x2.abs())
    both(lambda L, T: L.PoissonNLLLoss(log_input=False, full=True, reduction=red), x1.abs(),
         x2.abs() * 3)
    both(lambda L, T: L.GaussianNLLLoss(reduction=red), x1, x2, torch.rand(5, 4) + 0.1)
    both(lambda L, T: L.TripletMarginLoss(margin=0.5, swap=True, reduction=red), x1, x2,
         randn(5, 4, seed=7))
    both(lambda L, T: L.MultiLabelSoftMarginLoss(reduction=red), x1, (x2 > 0).float())


# ---- errors --------------------------------------------------------------------------
def same_error(fn_t, fn_e, exc):
    with pytest.raises(exc) as te:
        fn_t()
    with pytest.raises(exc) as ee:
        fn_e()
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


@pytest.mark.parametrize("x,t,exc", [
    (randn(3, 5), torch.rand(3), RuntimeError),                   # float target
    (randn(3, 5), torch.tensor([1, 2, 3, 4]), ValueError),        # batch mismatch
    (randn(3, 5), torch.tensor([1, 2, 7]), IndexError),           # out of range
    (randn(3, 5, 2), torch.tensor([1, 2, 3]), RuntimeError),      # target size
    (randn(3, 5), torch.tensor([[1], [2], [3]]), RuntimeError),   # multi-target
    (randn(3, 5), torch.randint(0, 5, (3, 5)), RuntimeError),     # int probabilities
])
def test_cross_entropy_errors(x, t, exc):
    same_error(lambda: TF.cross_entropy(x, t), lambda: F.cross_entropy(e(x), e(t)), exc)


def test_loss_argument_errors():
    x, t = randn(3, 5), torch.tensor([1, 2, 3])
    same_error(lambda: TF.nll_loss(x, t, weight=torch.ones(3)),
               lambda: F.nll_loss(e(x), e(t), weight=ember.ones(3)), RuntimeError)
    same_error(lambda: TF.cross_entropy(x, t, label_smoothing=1.5),
               lambda: F.cross_entropy(e(x), e(t), label_smoothing=1.5), RuntimeError)
    same_error(lambda: TF.mse_loss(x, x, reduction="foo"),
               lambda: F.mse_loss(e(x), e(x), reduction="foo"), ValueError)
    p = torch.rand(3, 1)
    same_error(lambda: TF.binary_cross_entropy(p, torch.rand(3)),
               lambda: F.binary_cross_entropy(e(p), ember.rand(3)), ValueError)
    same_error(lambda: TF.binary_cross_entropy_with_logits(p, torch.rand(3)),
               lambda: F.binary_cross_entropy_with_logits(e(p), ember.rand(3)), ValueError)
    same_error(lambda: TF.binary_cross_entropy(p * 3, p),
               lambda: F.binary_cross_entropy(e(p) * 3, e(p)), RuntimeError)


def test_mse_size_mismatch_warns():
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(ember.zeros(3, 1), ember.zeros(3))


@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_saturated_gradients(red, weighted):
    """Probabilities of exactly 0 or 1 (a sigmoid rounding to 1.0) give PyTorch's finite
    gradients ((x - t) / max(x (1 - x), 1e-12) for the input, -logit(x) for the target),
    not the NaN of differentiating the clamped logs; the grad_fn is one node."""
    x = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.5, 1e-30, 1 - 1e-7, 0.3])
    t = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.25])
    w = torch.linspace(0.5, 2.0, 8) if weighted else None
    got, want = [], []
    for lib, fn, out in ((ember, F.binary_cross_entropy, got),
                         (torch, TF.binary_cross_entropy, want)):
        xs, ts = (x, t) if lib is torch else (e(x), e(t))
        xs, ts = xs.requires_grad_(), ts.requires_grad_()
        loss = fn(xs, ts, _w(lib, w), reduction=red)
        out.extend([loss, *lib.autograd.grad(loss.sum(), (xs, ts))])
        out.append(type(loss.grad_fn).__name__)
    assert got[-1] == want[-1] == "BinaryCrossEntropyBackward0"
    close(got[0], want[0])
    close(got[1], want[1])
    finite = torch.isfinite(want[2])    # -logit(0) is inf in both
    close(got[2][e(finite)], want[2][finite])


def test_binary_cross_entropy_checks_match_torch():
    p, t = torch.rand(3), torch.rand(3)
    same_error(lambda: TF.binary_cross_entropy(torch.tensor([float("nan")]), t[:1]),
               lambda: F.binary_cross_entropy(ember.tensor([float("nan")]), e(t[:1])),
               RuntimeError)
    same_error(lambda: TF.binary_cross_entropy(p, t.double()),
               lambda: F.binary_cross_entropy(e(p), e(t).double()), RuntimeError)
    same_error(lambda: TF.binary_cross_entropy(p, t, torch.rand(3, requires_grad=True)),
               lambda: F.binary_cross_entropy(e(p), e(t), ember.rand(3, requires_grad=True)),
               RuntimeError)
    both(lambda L, T: (lambda a, b: L.functional.binary_cross_entropy(
        a, b, _w(T, torch.tensor([2.0])))), p, t)
