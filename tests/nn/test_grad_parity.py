"""Gradients through ember.nn match PyTorch's: same weights, same input, same upstream
gradient; compare ``.grad`` of every parameter and of the input."""
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from nn_helpers import close, e, load_from_torch, randn

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")

GTOL = dict(rtol=1e-4, atol=1e-5)


def leaf(t):
    return e(t).requires_grad_()


def grads_match(make, *shapes, inputs=None, train=False, seed=0, input_grad=True):
    """Forward both, backprop the same random cotangent, compare all gradients."""
    torch.manual_seed(seed)
    theirs = make(tnn)
    ours = load_from_torch(make(nn), theirs)
    theirs.train(train)
    ours.train(train)
    xs = inputs if inputs is not None else [randn(*s, seed=seed + i) for i, s in
                                            enumerate(shapes)]
    xt = [x.clone().requires_grad_(input_grad and x.is_floating_point()) for x in xs]
    xe = [leaf(x) if input_grad and x.is_floating_point() else e(x) for x in xs]
    out_t = theirs(*xt)
    out_e = ours(*xe)
    if isinstance(out_t, tuple):
        out_t, out_e = out_t[0], out_e[0]
    close(out_e, out_t)
    cot = randn(*out_t.shape, seed=99)
    (out_t * cot).sum().backward()
    (out_e * e(cot)).sum().backward()
    for (name, p_t) in theirs.named_parameters():
        p_e = ours.get_parameter(name)
        assert p_e.grad is not None, f"no gradient for {name}"
        close(p_e.grad, p_t.grad, **GTOL)
    for a, b in zip(xe, xt):
        if b.requires_grad:
            close(a.grad, b.grad, **GTOL)
    return ours, theirs


# ---- layers -------------------------------------------------------------------------------
def test_linear_bilinear():
    grads_match(lambda L: L.Linear(6, 4), (3, 5, 6))
    grads_match(lambda L: L.Linear(6, 4, bias=False), (6,))
    grads_match(lambda L: L.Bilinear(3, 4, 5), (6, 3), (6, 4))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                dict(groups=2), dict(groups=4, out_channels=8),
                                dict(padding="same"), dict(padding=1, padding_mode="reflect"),
                                dict(padding=(1, 2), padding_mode="circular", bias=False)])
def test_conv2d(kw):
    kw = dict(kw)
    oc = kw.pop("out_channels", 6)
    grads_match(lambda L: L.Conv2d(4, oc, 3, **kw), (2, 4, 7, 8))


def test_conv1d_conv3d():
    grads_match(lambda L: L.Conv1d(3, 4, 3, stride=2, padding=1, dilation=2), (2, 3, 11))
    grads_match(lambda L: L.Conv3d(2, 2, 2, padding=1), (1, 2, 3, 4, 3))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(groups=2, dilation=2)])
def test_conv_transpose(kw):
    grads_match(lambda L: L.ConvTranspose2d(4, 6, 3, **kw), (2, 4, 5, 5))
    grads_match(lambda L: L.ConvTranspose1d(4, 2, 3, **kw), (2, 4, 6))


@pytest.mark.parametrize("make", [
    lambda L: L.MaxPool2d(2), lambda L: L.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
    lambda L: L.MaxPool2d(3, dilation=2),
    lambda L: L.AvgPool2d(3, stride=2, padding=1),
    lambda L: L.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    lambda L: L.AdaptiveAvgPool2d((3, 5)), lambda L: L.AdaptiveAvgPool2d(1),
    lambda L: L.AdaptiveMaxPool2d((3, 2)), lambda L: L.AdaptiveMaxPool2d((4, 3)),
    lambda L: L.AdaptiveAvgPool2d((4, 3)),
])
def test_pooling(make):
    grads_match(make, (2, 3, 9, 10))


def test_pooling_1d():
    grads_match(lambda L: L.MaxPool1d(3, stride=2, padding=1), (2, 3, 11))
    grads_match(lambda L: L.AvgPool1d(3, stride=2, padding=1), (2, 3, 11))
    grads_match(lambda L: L.AdaptiveAvgPool1d(4), (2, 3, 11))


@pytest.mark.parametrize("make", [
    lambda L: L.LayerNorm(5), lambda L: L.LayerNorm([4, 5], bias=False),
    lambda L: L.RMSNorm(5), lambda L: L.GroupNorm(2, 4),
    lambda L: L.InstanceNorm1d(4, affine=True),
])
def test_norms(make):
    torch.manual_seed(0)
    theirs = make(tnn)
    with torch.no_grad():
        for p in theirs.parameters():       # non-trivial affine parameters
            p.normal_()
    grads_match(lambda L: theirs if L is tnn else make(nn), (3, 4, 5))


@pytest.mark.parametrize("shape,cls", [((8, 4), "BatchNorm1d"), ((4, 4, 3), "BatchNorm1d"),
                                       ((3, 4, 3, 2), "BatchNorm2d")])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm(shape, cls, train):
    ours, theirs = grads_match(lambda L: getattr(L, cls)(4), shape, train=train)
    close(ours.running_mean, theirs.running_mean)
    close(ours.running_var, theirs.running_var)


@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=2), dict(scale_grad_by_freq=True),
                                dict(padding_idx=0, scale_grad_by_freq=True)])
def test_embedding(kw):
    idx = torch.tensor([[1, 2, 2], [0, 2, 5]])
    grads_match(lambda L: L.Embedding(6, 3, **kw), inputs=[idx])


ACTS = [lambda L: L.ReLU(), lambda L: L.LeakyReLU(0.1), lambda L: L.GELU(),
        lambda L: L.GELU(approximate="tanh"), lambda L: L.SiLU(), lambda L: L.ELU(0.7),
        lambda L: L.Tanh(), lambda L: L.Sigmoid(), lambda L: L.Softmax(dim=1),
        lambda L: L.LogSoftmax(dim=-1), lambda L: L.Softplus(beta=2, threshold=3),
        lambda L: L.Hardswish(), lambda L: L.Mish(), lambda L: L.SELU(), lambda L: L.PReLU(4),
        lambda L: L.LogSigmoid(), lambda L: L.Hardtanh(), lambda L: L.GLU(dim=1),
        lambda L: L.Softsign(), lambda L: L.CELU()]


@pytest.mark.parametrize("make", ACTS)
def test_activations(make):
    grads_match(make, inputs=[randn(3, 4, 5) * 3])


def test_activation_large_inputs_have_finite_grads():
    x = torch.tensor([-200.0, -30.0, -1.0, 0.5, 30.0, 200.0])
    for make in (lambda L: L.ELU(), lambda L: L.Softplus(), lambda L: L.CELU(),
                 lambda L: L.SELU(), lambda L: L.LogSigmoid(), lambda L: L.Mish()):
        grads_match(make, inputs=[x])


def test_dropout_gradient_is_the_mask():
    x = leaf(torch.ones(50, 40))
    y = F.dropout(x, 0.3)
    y.sum().backward()
    close(x.grad, torch.from_numpy(y.detach().numpy()))


# ---- functional -----------------------------------------------------------------------
def fn_grads(fn_t, fn_e, *tensors):
    xt = [t.clone().requires_grad_() for t in tensors]
    xe = [leaf(t) for t in tensors]
    out_t, out_e = fn_t(*xt), fn_e(*xe)
    close(out_e, out_t)
    cot = randn(*out_t.shape, seed=42)
    (out_t * cot).sum().backward()
    (out_e * e(cot)).sum().backward()
    for a, b in zip(xe, xt):
        close(a.grad, b.grad, **GTOL)


@pytest.mark.parametrize("mode,pad", [("constant", (1, 2, 0, -1)), ("reflect", (2, 1, 1, 2)),
                                      ("replicate", (3, 0, 1, 1)), ("circular", (1, 2, 2, 1))])
def test_pad(mode, pad):
    fn_grads(lambda x: TF.pad(x, pad, mode), lambda x: F.pad(x, pad, mode), randn(2, 3, 4, 5))


@pytest.mark.parametrize("kw", [dict(size=(7, 9)), dict(scale_factor=2, mode="bilinear"),
                                dict(size=(3, 8), mode="bilinear", align_corners=True),
                                dict(size=(2, 3), mode="area")])
def test_interpolate(kw):
    fn_grads(lambda x: TF.interpolate(x, **kw), lambda x: F.interpolate(x, **kw),
             randn(2, 3, 4, 5))


def test_unfold_fold():
    kw = dict(kernel_size=3, stride=2, padding=1, dilation=1)
    fn_grads(lambda x: TF.unfold(x, **kw), lambda x: F.unfold(x, **kw), randn(2, 3, 7, 6))
    fn_grads(lambda x: TF.fold(x, (7, 6), **kw), lambda x: F.fold(x, (7, 6), **kw),
             randn(2, 27, 12))


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True),
                                dict(attn_mask=torch.ones(5, 5).tril().bool()),
                                dict(attn_mask=randn(5, 5))])
def test_sdpa(kw):
    ek = {k: e(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    fn_grads(lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, **kw),
             lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **ek),
             randn(2, 2, 5, 4), randn(2, 2, 5, 4, seed=1), randn(2, 2, 5, 3, seed=2))


def test_misc_functional():
    fn_grads(lambda a, b: TF.cosine_similarity(a, b), lambda a, b: F.cosine_similarity(a, b),
             randn(4, 5), randn(4, 5, seed=1))
    fn_grads(lambda a: TF.normalize(a, dim=-1), lambda a: F.normalize(a, dim=-1), randn(4, 5))
    fn_grads(lambda a: TF.pixel_shuffle(a, 2), lambda a: F.pixel_shuffle(a, 2),
             randn(1, 8, 2, 3))
    fn_grads(lambda a: TF.local_response_norm(a, 3), lambda a: F.local_response_norm(a, 3),
             randn(2, 5, 3))


# ---- losses ---------------------------------------------------------------------------
def loss_grads(loss_t, loss_e, x, *rest, weight=None):
    xt = x.clone().requires_grad_()
    xe = leaf(x)
    lt = loss_t(xt, *rest)
    le = loss_e(xe, *[e(r) for r in rest])
    close(le, lt)
    if lt.dim():
        cot = randn(*lt.shape, seed=5)
        (lt * cot).sum().backward()
        (le * e(cot)).sum().backward()
    else:
        lt.backward()
        le.backward()
    close(xe.grad, xt.grad, **GTOL)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [dict(), dict(ignore_index=1), dict(label_smoothing=0.2),
                                dict(weight=True, ignore_index=2, label_smoothing=0.1)])
def test_cross_entropy(red, kw):
    kw = dict(kw)
    w = torch.rand(4) + 0.5 if kw.pop("weight", False) else None
    t = torch.tensor([0, 1, 2, 3, 1, 2])
    loss_grads(lambda x, t: TF.cross_entropy(x, t, weight=w, reduction=red, **kw),
               lambda x, t: F.cross_entropy(x, t, weight=None if w is None else e(w),
                                            reduction=red, **kw), randn(6, 4), t)
    t4 = torch.tensor([[[0, 1], [2, 3]], [[1, 1], [2, 0]]])
    loss_grads(lambda x, t: TF.cross_entropy(x, t, weight=w, reduction=red, **kw),
               lambda x, t: F.cross_entropy(x, t, weight=None if w is None else e(w),
                                            reduction=red, **kw), randn(2, 4, 2, 2), t4)


def test_cross_entropy_probabilities():
    p = torch.softmax(randn(5, 3, seed=1), 1)
    loss_grads(lambda x, t: TF.cross_entropy(x, t, label_smoothing=0.1),
               lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), randn(5, 3), p)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_other_losses(red):
    x, y = randn(4, 5), randn(4, 5, seed=1)
    for name, kw in [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", dict(beta=0.5)),
                     ("huber_loss", dict(delta=0.7))]:
        loss_grads(lambda a, b: getattr(TF, name)(a, b, reduction=red, **kw),
                   lambda a, b: getattr(F, name)(a, b, reduction=red, **kw), x, y)
    t = torch.rand(4, 5)
    loss_grads(lambda a, b: TF.binary_cross_entropy_with_logits(
                   a, b, pos_weight=torch.full((5,), 2.0), reduction=red),
               lambda a, b: F.binary_cross_entropy_with_logits(
                   a, b, pos_weight=ember.full((5,), 2.0), reduction=red), x * 5, t)
    p = torch.rand(4, 5) * 0.9 + 0.05
    loss_grads(lambda a, b: TF.binary_cross_entropy(a, b, reduction=red),
               lambda a, b: F.binary_cross_entropy(a, b, reduction=red), p, t)
    lp = torch.log_softmax(x, 1)
    loss_grads(lambda a, b: TF.nll_loss(a, b, reduction=red, ignore_index=0),
               lambda a, b: F.nll_loss(a, b, reduction=red, ignore_index=0), lp,
               torch.tensor([0, 1, 4, 3]))
    q = torch.softmax(y, 1)
    r = "batchmean" if red == "mean" else red
    loss_grads(lambda a, b: TF.kl_div(a, b, reduction=r),
               lambda a, b: F.kl_div(a, b, reduction=r), lp, q)


# ---- a whole model, and the utilities -------------------------------------------------
def _cnn(L):
    return L.Sequential(L.Conv2d(3, 8, 3, padding=1), L.BatchNorm2d(8), L.ReLU(),
                        L.MaxPool2d(2), L.Conv2d(8, 8, 3, groups=2, padding="same"),
                        L.GELU(), L.AdaptiveAvgPool2d(1), L.Flatten(), L.Dropout(0.0),
                        L.Linear(8, 5))


def test_small_cnn_end_to_end():
    torch.manual_seed(0)
    theirs = _cnn(tnn)
    ours = load_from_torch(_cnn(nn), theirs)
    x, t = randn(4, 3, 8, 8), torch.tensor([0, 4, 2, 1])
    lt = TF.cross_entropy(theirs(x), t, label_smoothing=0.1)
    le = F.cross_entropy(ours(e(x)), e(t), label_smoothing=0.1)
    close(le, lt)
    lt.backward()
    le.backward()
    for name, p in theirs.named_parameters():
        close(ours.get_parameter(name).grad, p.grad, **GTOL)
    ours.zero_grad()
    assert all(p.grad is None for p in ours.parameters())


def test_clip_grad_norm_and_value():
    torch.manual_seed(0)
    theirs = _cnn(tnn)
    ours = load_from_torch(_cnn(nn), theirs)
    x = randn(2, 3, 8, 8)
    (theirs(x) ** 2).sum().backward()
    (ours(e(x)) ** 2).sum().backward()
    for norm_type in (2.0, 1.0, float("inf")):
        tt = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5, norm_type=norm_type)
        te = nn.utils.clip_grad_norm_(ours.parameters(), 0.5, norm_type=norm_type)
        close(te, tt, rtol=1e-4, atol=1e-5)
        for name, p in theirs.named_parameters():
            close(ours.get_parameter(name).grad, p.grad, **GTOL)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 0.01)
    nn.utils.clip_grad_value_(ours.parameters(), 0.01)
    for name, p in theirs.named_parameters():
        close(ours.get_parameter(name).grad, p.grad, **GTOL)


def test_parameters_to_vector_roundtrip():
    torch.manual_seed(0)
    theirs = tnn.Linear(3, 2)
    ours = load_from_torch(nn.Linear(3, 2), theirs)
    close(nn.utils.parameters_to_vector(ours.parameters()),
          torch.nn.utils.parameters_to_vector(theirs.parameters()))
    vec = ember.arange(8.0)
    w = ours.weight
    nn.utils.vector_to_parameters(vec, ours.parameters())
    assert ours.weight is w and w.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert ours.bias.tolist() == [6, 7] and w.requires_grad
    y = ours(ember.ones(1, 3)).sum()
    y.backward()
    assert w.grad.tolist() == [[1, 1, 1], [1, 1, 1]]


def test_frozen_parameters_get_no_grad():
    lin = nn.Linear(3, 2)
    lin.weight.requires_grad_(False)
    lin(ember.ones(4, 3)).sum().backward()
    assert lin.weight.grad is None and lin.bias.grad is not None


def test_rnn_modules_if_present():
    if not hasattr(nn, "LSTM"):
        pytest.skip("no recurrent layers")
    for cls, kw in [("RNN", dict(nonlinearity="relu")), ("LSTM", dict(num_layers=2)),
                    ("GRU", dict(bidirectional=True, batch_first=True))]:
        torch.manual_seed(0)
        theirs = getattr(tnn, cls)(3, 4, **kw)
        ours = load_from_torch(getattr(nn, cls)(3, 4, **kw), theirs)
        x = randn(5, 2, 3)
        out_t, _ = theirs(x)
        out_e, _ = ours(e(x))
        close(out_e, out_t)
        cot = randn(*out_t.shape, seed=3)
        (out_t * cot).sum().backward()
        (out_e * e(cot)).sum().backward()
        for name, p in theirs.named_parameters():
            close(ours.get_parameter(name).grad, p.grad, **GTOL)


def test_inplace_activations_inside_a_model():
    def make(L):
        return L.Sequential(L.Conv2d(3, 4, 3), L.BatchNorm2d(4), L.ReLU(inplace=True),
                            L.Conv2d(4, 2, 3), L.Hardswish(inplace=True), L.Flatten(),
                            L.Linear(8, 6), L.ELU(inplace=True), L.Linear(6, 5),
                            L.LeakyReLU(0.1, inplace=True))
    torch.manual_seed(0)
    theirs = make(tnn)
    ours = load_from_torch(make(nn), theirs)
    x = randn(2, 3, 6, 6)
    (theirs(x) ** 2).sum().backward()
    (ours(e(x)) ** 2).sum().backward()
    for name, p in theirs.named_parameters():
        close(ours.get_parameter(name).grad, p.grad, **GTOL)


def test_double_backward_through_conv_fold_and_pool():
    x, w = randn(2, 3, 6, 6), randn(4, 3, 3, 3, seed=1)
    wt = randn(4, 2, 3, 3, seed=2)

    def f(lib_f, x, w, wt):
        y = lib_f.conv2d(x, w, padding=1, stride=2)
        y = lib_f.conv_transpose2d(y.tanh(), wt, stride=2, padding=1, output_padding=1)
        return lib_f.avg_pool2d(y, 2, padding=1) * lib_f.max_pool2d(y, 2, padding=1)

    xt, wtt = x.clone().requires_grad_(), w.clone().requires_grad_()
    (gx,) = torch.autograd.grad((f(TF, xt, wtt, wt) ** 2).sum(), xt, create_graph=True)
    (gx ** 2).sum().backward()
    xe, we = leaf(x), leaf(w)
    (gxe,) = ember.autograd.grad((f(F, xe, we, e(wt)) ** 2).sum(), xe, create_graph=True)
    close(gxe, gx, **GTOL)
    (gxe ** 2).sum().backward()
    close(xe.grad, xt.grad, rtol=1e-3, atol=1e-4)
    close(we.grad, wtt.grad, rtol=1e-3, atol=1e-4)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 3), s=st.integers(1, 3), p=st.integers(0, 2), d=st.integers(1, 2),
       g=st.sampled_from([1, 2]), transposed=st.booleans())
def test_conv_random_config_gradients(k, s, p, d, g, transposed):
    if transposed:
        op = 1 if s > 1 else 0
        if (4 - 1) * s - 2 * p + d * (k - 1) + op + 1 <= 0:
            return
        grads_match(lambda L: L.ConvTranspose2d(4, 2, k, stride=s, padding=p,
                                                output_padding=op, dilation=d, groups=g),
                    (2, 4, 5, 4))
    else:
        if d * (k - 1) + 1 > 4 + 2 * p:
            return
        grads_match(lambda L: L.Conv2d(4, 2, k, stride=s, padding=p, dilation=d, groups=g),
                    (2, 4, 6, 4))
