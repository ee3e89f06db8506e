"""nn.functional matches torch.nn.functional, including its error messages."""
import contextlib
import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from nn_helpers import close, e, randn

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")


# ---- pad ------------------------------------------------------------------------------
@pytest.mark.parametrize("pad", [(1, 2), (0, 0, 2, 1), (1, 1, 1, 1, 1, 0), (-1, 2, 1, -2)])
def test_pad_constant(pad):
    x = randn(2, 3, 4, 5)
    close(F.pad(e(x), pad), TF.pad(x, pad))
    close(F.pad(e(x), pad, value=2.5), TF.pad(x, pad, value=2.5))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 5), (2, 1)), ((3, 5), (1, 3)),
                                       ((2, 3, 4, 5), (1, 2, 3, 0)), ((3, 4, 5), (2, 2, 1, 1)),
                                       ((1, 2, 3, 4, 5), (1, 0, 2, 1, 1, 2))])
def test_pad_modes(mode, shape, pad):
    x = randn(*shape)
    close(F.pad(e(x), pad, mode=mode), TF.pad(x, pad, mode=mode))


def test_pad_errors():
    x = randn(1, 1, 3, 3)
    for args in [((3, 3, 0, 0), "reflect"), ((4, 4, 0, 0), "circular")]:
        with pytest.raises(RuntimeError) as te:
            TF.pad(x, args[0], mode=args[1])
        with pytest.raises(RuntimeError) as ee:
            F.pad(e(x), args[0], mode=args[1])
        assert str(ee.value) == str(te.value)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
        F.pad(e(x), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal"):
        F.pad(ember.ones(3, 3), (1,) * 6)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(e(x), (1, 1, 1, 1), mode="foo")


# ---- interpolate ----------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(size=(7, 9)), dict(size=(3, 2)), dict(scale_factor=2), dict(scale_factor=(0.5, 1.7)),
    dict(size=(7, 9), mode="nearest-exact"), dict(scale_factor=1.5, mode="nearest-exact"),
    dict(size=(7, 9), mode="bilinear"), dict(size=(3, 2), mode="bilinear"),
    dict(size=(7, 9), mode="bilinear", align_corners=True),
    dict(size=(1, 4), mode="bilinear", align_corners=True),
    dict(scale_factor=2.5, mode="bilinear"),
    dict(scale_factor=2.5, mode="bilinear", recompute_scale_factor=True),
    dict(size=(2, 3), mode="area"), dict(size=(3, 4), mode="area"),
])
def test_interpolate_2d(kw):
    x = randn(2, 3, 4, 5)
    close(F.interpolate(e(x), **kw), TF.interpolate(x, **kw))


@pytest.mark.parametrize("kw", [dict(size=11), dict(scale_factor=0.6),
                                dict(size=11, mode="linear"),
                                dict(size=11, mode="linear", align_corners=True),
                                dict(size=3, mode="area")])
def test_interpolate_1d(kw):
    x = randn(2, 3, 7)
    close(F.interpolate(e(x), **kw), TF.interpolate(x, **kw))


def test_interpolate_errors():
    x = randn(1, 1, 4, 4)
    for kw, exc in [(dict(size=3, align_corners=True), ValueError),
                    (dict(size=3, scale_factor=2), ValueError), (dict(), ValueError),
                    (dict(size=3, mode="foo"), NotImplementedError)]:
        with pytest.raises(exc) as te:
            TF.interpolate(x, **kw)
        with pytest.raises(exc) as ee:
            F.interpolate(e(x), **kw)
        assert str(ee.value) == str(te.value)
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D input"):
        F.interpolate(ember.ones(1, 1, 4), size=3, mode="bilinear")


# ---- unfold / fold --------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(2, 1)),
                                dict(kernel_size=3, padding=1, dilation=2),
                                dict(kernel_size=3, stride=2, padding=1)])
def test_unfold_fold(kw):
    x = randn(2, 3, 7, 8)
    cols_t = TF.unfold(x, **kw)
    close(F.unfold(e(x), **kw), cols_t)
    close(F.fold(e(cols_t), (7, 8), **kw), TF.fold(cols_t, (7, 8), **kw))
    close(F.unfold(e(x[0]), **kw), TF.unfold(x[0], **kw))
    close(F.fold(e(cols_t[0]), (7, 8), **kw), TF.fold(cols_t[0], (7, 8), **kw))


def test_fold_errors():
    with pytest.raises(RuntimeError) as te:
        TF.fold(torch.rand(1, 4, 5), (4, 4), 2)
    with pytest.raises(RuntimeError) as ee:
        F.fold(ember.rand(1, 4, 5), (4, 4), 2)
    assert str(ee.value) == str(te.value)


# ---- functional conv / pool / norm / misc ---------------------------------------------
def test_conv_functional_with_explicit_weights():
    x, w, b = randn(2, 4, 6, 6), randn(6, 2, 3, 3, seed=1), randn(6, seed=2)
    close(F.conv2d(e(x), e(w), e(b), stride=2, padding=(1, 0), groups=2),
          TF.conv2d(x, w, b, stride=2, padding=(1, 0), groups=2))
    wt = randn(4, 3, 3, 3, seed=3)
    close(F.conv_transpose2d(e(x), e(wt), None, stride=2, padding=1, output_padding=1),
          TF.conv_transpose2d(x, wt, None, stride=2, padding=1, output_padding=1))
    x1, w1 = randn(2, 4, 9), randn(3, 4, 2, seed=4)
    close(F.conv1d(e(x1), e(w1), padding="same", dilation=3),
          TF.conv1d(x1, w1, padding="same", dilation=3))
    wt1 = randn(4, 2, 3, seed=5)
    close(F.conv_transpose1d(e(x1), e(wt1), stride=3, dilation=2),
          TF.conv_transpose1d(x1, wt1, stride=3, dilation=2))


def test_float64_layers():
    x = randn(2, 3, 6, 6, dtype=torch.float64)
    w = randn(4, 3, 3, 3, seed=1, dtype=torch.float64)
    close(F.conv2d(e(x), e(w), padding=1), TF.conv2d(x, w, padding=1), rtol=1e-10, atol=1e-12)
    close(F.max_pool2d(e(x), 2), TF.max_pool2d(x, 2))
    close(F.layer_norm(e(x), (6,)), TF.layer_norm(x, (6,)), rtol=1e-10, atol=1e-12)


def test_activations_functional():
    x = randn(3, 8) * 4
    for name in ["relu", "relu6", "elu", "selu", "celu", "gelu", "silu", "mish", "hardswish",
                 "hardsigmoid", "hardtanh", "softplus", "softsign", "tanhshrink", "logsigmoid",
                 "sigmoid", "tanh", "hardshrink", "softshrink"]:
        close(getattr(F, name)(e(x)), getattr(TF, name)(x))
    close(F.leaky_relu(e(x), 0.3), TF.leaky_relu(x, 0.3))
    close(F.gelu(e(x), approximate="tanh"), TF.gelu(x, approximate="tanh"))
    close(F.threshold(e(x), 0.5, -2.0), TF.threshold(x, 0.5, -2.0))
    close(F.softmax(e(x), dim=0), TF.softmax(x, dim=0))
    close(F.log_softmax(e(x), dim=1), TF.log_softmax(x, dim=1))
    close(F.softmin(e(x), dim=1), TF.softmin(x, dim=1))
    close(F.glu(e(x), 1), TF.glu(x, 1))
    close(F.prelu(e(x), ember.full((8,), 0.1)), TF.prelu(x, torch.full((8,), 0.1)))
    close(F.softplus(e(x), beta=0.5, threshold=3), TF.softplus(x, beta=0.5, threshold=3))
    xe = e(x)
    F.relu_(xe)
    close(xe, TF.relu(x))



KINKED = [("relu", {}), ("relu6", {}), ("hardtanh", {}), ("hardtanh", {"min_val": -2.0,
                                                                      "max_val": 0.5})]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "uint8", "int8"])
@pytest.mark.parametrize("name,kw", KINKED)
def test_kinked_activations_keep_values_and_dtype(name, kw, dtype):
    """relu / relu6 / hardtanh, out of place and in place: PyTorch's values (NaN, -0.0)
    and dtype (integers stay integers), on a non-contiguous input too."""
    vals = [-7.0, -1.0, -0.0, 0.0, 0.25, 3.0, 6.0, 9.0]
    if dtype.startswith("float") or dtype == "bfloat16":
        vals += [math.nan, math.inf, -math.inf]
    if dtype == "uint8":
        vals = [abs(v) for v in vals]
        if name == "hardtanh":  # (negative limits)
            kw = {"min_val": 0.5, "max_val": 6.5}
    t = torch.tensor(vals * 2).to(getattr(torch, dtype)).reshape(2, -1).t()
    x = ember.tensor(np.array(vals * 2)).to(getattr(ember, dtype)).reshape(2, -1).t()
    tf, ef = getattr(TF, name), getattr(F, name)
    want, got = tf(t, **kw), ef(x, **kw)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    g, w = got.float().numpy(), want.float().numpy()
    np.testing.assert_array_equal(g, w)
    num = ~np.isnan(w)  # (-0.0 stays -0.0; a NaN's sign is not compared)
    assert np.array_equal(np.signbit(g[num]), np.signbit(w[num]))
    t2, x2 = t.clone(), x.clone()
    tf(t2, inplace=True, **kw)
    assert ef(x2, inplace=True, **kw) is x2
    np.testing.assert_array_equal(x2.float().numpy(), t2.float().numpy())


def test_kinked_activation_errors():
    for fn in (F.relu, lambda t: F.relu(t, inplace=True), ember.relu_, ember.relu):
        with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
            fn(ember.tensor([True, False]))
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        torch.relu(torch.tensor([True]))
    for fn in (F.relu6, F.hardtanh, lambda t: F.hardtanh(t, inplace=True)):
        with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
            fn(ember.tensor([True, False]))
    u8 = ember.tensor([1, 2], dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="unsigned type with negative limits"):
        F.hardtanh(u8)
    with pytest.raises(RuntimeError, match="unsigned type with negative limits"):
        TF.hardtanh(torch.tensor([1, 2], dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="hardtanh_.*single memory location"):
        F.hardtanh(ember.zeros(3).expand(2, 3), inplace=True)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "3d", "2d"])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_evaluation_mode(layout, affine):
    """Running statistics (the backend's batch_norm_inference kernel), in every layout, and
    gradients through it (a frozen BatchNorm in a trained model)."""
    shape = {"contiguous": (3, 5, 4, 6), "channels_last": (3, 5, 4, 6), "3d": (3, 5, 7),
             "2d": (6, 5)}[layout]
    x = randn(*shape) * 3 + 1
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    w, b = (randn(5, seed=1), randn(5, seed=2)) if affine else (None, None)
    rm, rv = randn(5, seed=3), torch.rand(5) + 0.5
    xe = e(x) if layout != "channels_last" else ember.tensor(x.permute(0, 2, 3, 1).numpy()
                                                             ).permute(0, 3, 1, 2)
    close(F.batch_norm(xe, e(rm), e(rv), None if w is None else e(w),
                       None if b is None else e(b), eps=1e-3),
          TF.batch_norm(x, rm, rv, w, b, eps=1e-3))
    if affine:
        xt, wt, bt = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
        xg, wg, bg = (e(t.detach()).requires_grad_(True) for t in (x, w, b))
        g = randn(*shape, seed=4)
        TF.batch_norm(xt, rm, rv, wt, bt).backward(g)
        F.batch_norm(xg, e(rm), e(rv), wg, bg).backward(e(g))
        for ours, theirs in ((xg, xt), (wg, wt), (bg, bt)):
            close(ours.grad, theirs.grad)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_batch_norm_evaluation_mode_dtypes(dtype):
    x = randn(4, 3, 5).to(getattr(torch, dtype))
    rm, rv = randn(3, seed=1), torch.rand(3) + 0.5     # float32 statistics
    w, b = randn(3, seed=2), randn(3, seed=3)
    if dtype == "float64":
        rm, rv, w, b = (t.double() for t in (rm, rv, w, b))
    xe = ember.tensor(x.double().numpy()).to(getattr(ember, dtype))
    ours = F.batch_norm(xe, e(rm), e(rv), e(w), e(b))
    theirs = TF.batch_norm(x, rm, rv, w, b)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    tol = 1e-2 if dtype != "float64" else 1e-12
    close(ours.to(ember.float64), theirs.double(), rtol=tol, atol=tol)
    if dtype != "float64":   # training: computed in float32 too, the input's dtype out
        close(F.batch_norm(xe, None, None, e(w), e(b), training=True).to(ember.float64),
              TF.batch_norm(x, None, None, w, b, training=True).double(), rtol=tol, atol=tol)


def test_batch_norm_mixed_dtype_errors():
    x, p64 = randn(4, 3), torch.ones(3, dtype=torch.float64)
    for xt, pt in ((x, p64), (x.double(), torch.ones(3))):
        with pytest.raises(RuntimeError) as theirs:
            TF.batch_norm(xt, pt, pt)
        with pytest.raises(RuntimeError) as ours:
            F.batch_norm(e(xt), e(pt), e(pt))
        assert str(ours.value) == str(theirs.value)


def test_normalisation_functional():
    x = randn(4, 6, 3)
    w, b = torch.rand(6), torch.rand(6)
    rm, rv = torch.rand(6), torch.rand(6) + 0.5
    close(F.batch_norm(e(x), e(rm), e(rv), e(w), e(b)), TF.batch_norm(x, rm, rv, w, b))
    rm_e, rv_e = e(rm), e(rv)
    close(F.batch_norm(e(x), rm_e, rv_e, training=True, momentum=0.2),
          TF.batch_norm(x, rm, rv, training=True, momentum=0.2))
    close(rm_e, rm)
    close(rv_e, rv)
    close(F.instance_norm(e(x)), TF.instance_norm(x))
    close(F.layer_norm(e(x), (3,), e(w[:3]), e(b[:3])), TF.layer_norm(x, (3,), w[:3], b[:3]))
    close(F.group_norm(e(x), 3, e(w), e(b)), TF.group_norm(x, 3, w, b))
    close(F.rms_norm(e(x), (6, 3)), TF.rms_norm(x, (6, 3)))
    close(F.normalize(e(x)), TF.normalize(x))
    close(F.normalize(e(x), p=1, dim=-1), TF.normalize(x, p=1, dim=-1))
    close(F.local_response_norm(e(x), 2), TF.local_response_norm(x, 2))


def test_distances():
    a, b = randn(5, 4), randn(5, 4, seed=1)
    close(F.cosine_similarity(e(a), e(b)), TF.cosine_similarity(a, b))
    close(F.cosine_similarity(e(a), e(b), dim=0), TF.cosine_similarity(a, b, dim=0))
    close(F.pairwise_distance(e(a), e(b)), TF.pairwise_distance(a, b))
    close(F.pairwise_distance(e(a), e(b), p=1, keepdim=True),
          TF.pairwise_distance(a, b, p=1, keepdim=True))


def test_pixel_and_channel_shuffle():
    x = randn(2, 8, 3, 5)
    close(F.pixel_shuffle(e(x), 2), TF.pixel_shuffle(x, 2))
    y = randn(2, 3, 4, 6)
    close(F.pixel_unshuffle(e(y), 2), TF.pixel_unshuffle(y, 2))
    close(F.channel_shuffle(e(x), 4), TF.channel_shuffle(x, 4))


def test_embedding_and_one_hot():
    w = randn(10, 3)
    idx = torch.tensor([[0, 9], [4, 4]])
    close(F.embedding(e(idx), e(w)), TF.embedding(idx, w))
    close(F.embedding(e(idx).int(), e(w), padding_idx=4),
          TF.embedding(idx.int(), w, padding_idx=4))
    t = torch.tensor([[0, 2], [1, 3]])
    close(F.one_hot(e(t)), TF.one_hot(t))
    close(F.one_hot(e(t), 6), TF.one_hot(t, 6))
    for args, exc in [((torch.tensor([1, 5]), 3), RuntimeError),
                      ((torch.tensor([1.0, 5.0]), 3), RuntimeError),
                      ((torch.tensor([-1, 2]), 3), RuntimeError),
                      ((torch.tensor([], dtype=torch.long),), RuntimeError)]:
        with pytest.raises(exc) as te:
            TF.one_hot(*args)
        with pytest.raises(exc) as ee:
            F.one_hot(e(args[0]), *args[1:])
        assert str(ee.value) == str(te.value)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([10]), e(w))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar"):
        F.embedding(ember.tensor([1.0]), e(w))


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3),
                                dict(mask="bool"), dict(mask="float"),
                                dict(mask="bool4d")])
def test_scaled_dot_product_attention(kw):
    kw = dict(kw)
    q, k, v = randn(2, 3, 5, 4), randn(2, 3, 6, 4, seed=1), randn(2, 3, 6, 7, seed=2)
    mask = kw.pop("mask", None)
    if mask == "bool":
        kw["attn_mask"] = torch.rand(5, 6, generator=torch.Generator().manual_seed(0)) > 0.3
        kw["attn_mask"][:, 0] = True              # no fully masked rows
    elif mask == "float":
        kw["attn_mask"] = randn(5, 6, seed=4)
    elif mask == "bool4d":
        kw["attn_mask"] = torch.ones(2, 1, 5, 6, dtype=torch.bool).tril()
    ek = {k_: (e(v_) if isinstance(v_, torch.Tensor) else v_) for k_, v_ in kw.items()}
    if kw.get("is_causal"):
        q = randn(2, 3, 6, 4)
    close(F.scaled_dot_product_attention(e(q), e(k), e(v), **ek),
          TF.scaled_dot_product_attention(q, k, v, **kw))


def test_sdpa_gqa_and_errors():
    q, k, v = randn(1, 4, 5, 8), randn(1, 2, 5, 8, seed=1), randn(1, 2, 5, 8, seed=2)
    close(F.scaled_dot_product_attention(e(q), e(k), e(v), enable_gqa=True),
          TF.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(e(q), e(q), e(q), attn_mask=ember.ones(5, 5),
                                       is_causal=True)


def test_sdpa_dropout_is_random_but_unbiased():
    ember.manual_seed(0)
    q = ember.zeros(1, 1, 4, 2)
    v = ember.ones(1, 1, 4, 2)
    outs = ember.stack([F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
                        for _ in range(200)])
    assert abs(outs.mean().item() - 1.0) < 0.1
    assert outs.std().item() > 0.1


def test_dropout_functional():
    x = ember.ones(1000)
    assert F.dropout(x, 0.5, training=False) is x
    y = F.dropout(x, 0.4)
    vals = np.unique(y.numpy())
    assert len(vals) == 2 and vals[0] == 0 and np.isclose(vals[1], 1 / 0.6)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, "
                                         "but got 1.5"):
        F.dropout(x, 1.5)
    z = ember.ones(100)
    assert F.dropout(z, 0.5, inplace=True) is z
    assert set(np.unique(z.numpy()).tolist()) == {0.0, 2.0}
    assert F.alpha_dropout(x, 0.2, training=False) is x
    a = F.alpha_dropout(ember.randn(20000), 0.2, training=True)
    assert abs(a.mean().item()) < 0.05 and abs(a.std().item() - 1) < 0.05


# ---- error messages for layers --------------------------------------------------------
def _same(fn_t, fn_e, exc=RuntimeError):
    with pytest.raises(exc) as te:
        fn_t()
    with pytest.raises(exc) as ee:
        fn_e()
    assert str(ee.value) == str(te.value).replace("torch.", "ember."), \
        f"\nours:   {ee.value}\ntorch:  {te.value}"


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3), (4, 3, 3, 3), {}),
    ((2, 4, 8, 8), (8, 3, 3, 3), {}),
    ((4, 8, 8), (8, 3, 3, 3), {}),
    ((2, 4, 8, 8), (8, 2, 3, 3), dict(groups=3)),
    ((2, 3, 2, 2), (8, 3, 3, 3), {}),
    ((2, 3, 5, 5), (8, 3, 3, 3), dict(dilation=3)),
    ((2, 3, 8, 8), (8, 3, 3, 3), dict(padding="same", stride=2)),
    ((2, 3, 8, 8), (8, 3, 3, 3), dict(padding="foo")),
])
def test_conv2d_errors(xs, ws, kw):
    x, w = torch.rand(*xs), torch.rand(*ws)
    _same(lambda: TF.conv2d(x, w, **kw), lambda: F.conv2d(e(x), e(w), **kw))


def test_other_layer_errors():
    _same(lambda: TF.conv1d(torch.rand(2, 3, 4, 4), torch.rand(8, 3, 3)),
          lambda: F.conv1d(ember.rand(2, 3, 4, 4), ember.rand(8, 3, 3)))
    _same(lambda: TF.conv_transpose2d(torch.rand(1, 3, 5, 5), torch.rand(4, 2, 3, 3)),
          lambda: F.conv_transpose2d(ember.rand(1, 3, 5, 5), ember.rand(4, 2, 3, 3)))
    _same(lambda: TF.conv_transpose2d(torch.rand(1, 4, 5, 5), torch.rand(4, 2, 3, 3),
                                      stride=2, output_padding=2),
          lambda: F.conv_transpose2d(ember.rand(1, 4, 5, 5), ember.rand(4, 2, 3, 3),
                                     stride=2, output_padding=2))
    _same(lambda: TF.max_pool2d(torch.rand(1, 1, 5, 5), 3, padding=2),
          lambda: F.max_pool2d(ember.rand(1, 1, 5, 5), 3, padding=2))
    _same(lambda: TF.avg_pool2d(torch.rand(1, 5, 5, 5, 5), 2),
          lambda: F.avg_pool2d(ember.rand(1, 5, 5, 5, 5), 2))
    _same(lambda: TF.max_pool1d(torch.rand(1, 1, 3, 3, 3), 2),
          lambda: F.max_pool1d(ember.rand(1, 1, 3, 3, 3), 2))
    _same(lambda: TF.layer_norm(torch.rand(2, 5), (10,)),
          lambda: F.layer_norm(ember.rand(2, 5), (10,)))
    _same(lambda: TF.group_norm(torch.rand(2, 5, 4), 2),
          lambda: F.group_norm(ember.rand(2, 5, 4), 2))
    _same(lambda: TF.rms_norm(torch.rand(2, 5), (4,)),
          lambda: F.rms_norm(ember.rand(2, 5), (4,)))
    _same(lambda: TF.batch_norm(torch.rand(1, 10), None, None, training=True),
          lambda: F.batch_norm(ember.rand(1, 10), None, None, training=True), ValueError)
    _same(lambda: TF.batch_norm(torch.rand(4, 3), torch.zeros(4), torch.ones(4)),
          lambda: F.batch_norm(ember.rand(4, 3), ember.zeros(4), ember.ones(4)))
    _same(lambda: torch.nn.BatchNorm2d(3)(torch.rand(4, 3, 2)),
          lambda: nn.BatchNorm2d(3)(ember.rand(4, 3, 2)), ValueError)
    _same(lambda: torch.nn.BatchNorm1d(3)(torch.rand(4, 3, 2, 2)),
          lambda: nn.BatchNorm1d(3)(ember.rand(4, 3, 2, 2)), ValueError)
    _same(lambda: TF.adaptive_avg_pool2d(torch.rand(5, 5), 3),
          lambda: F.adaptive_avg_pool2d(ember.rand(5, 5), 3))
    _same(lambda: TF.glu(torch.rand(3, 5), 1), lambda: F.glu(ember.rand(3, 5), 1))
    _same(lambda: TF.prelu(torch.rand(3, 5), torch.rand(3)),
          lambda: F.prelu(ember.rand(3, 5), ember.rand(3)))
    _same(lambda: torch.nn.Linear(3, 4)(torch.rand(2, 5)),
          lambda: nn.Linear(3, 4)(ember.rand(2, 5)))
    _same(lambda: TF.max_pool2d(torch.rand(1, 1, 5, 5), 3, stride=0),
          lambda: F.max_pool2d(ember.rand(1, 1, 5, 5), 3, stride=0))


def test_dtype_mismatch_errors():
    x64, w, b64 = torch.ones(1, 3, 5, 5, dtype=torch.float64), torch.ones(2, 3, 3, 3), \
        torch.ones(2, dtype=torch.float64)
    _same(lambda: TF.conv2d(x64, w), lambda: F.conv2d(e(x64), e(w)))
    _same(lambda: TF.conv1d(x64[..., 0].float(), w[..., 0], b64),
          lambda: F.conv1d(e(x64[..., 0].float()), e(w[..., 0]), e(b64)))
    _same(lambda: TF.conv_transpose2d(x64, w.transpose(0, 1).contiguous()),
          lambda: F.conv_transpose2d(e(x64), e(w.transpose(0, 1).contiguous())))
    _same(lambda: TF.linear(torch.ones(1, 3, dtype=torch.float64), torch.ones(2, 3)),
          lambda: F.linear(ember.ones(1, 3, dtype=ember.float64), ember.ones(2, 3)))
    _same(lambda: tnn.Linear(3, 2)(torch.ones(2, 3, dtype=torch.float64)),
          lambda: nn.Linear(3, 2)(ember.ones(2, 3, dtype=ember.float64)))
    _same(lambda: TF.linear(torch.ones(1, 3), torch.ones(2, 3), b64),
          lambda: F.linear(ember.ones(1, 3), ember.ones(2, 3), e(b64)))


def test_layer_constructor_errors():
    for make, exc in [(lambda L: L.Conv2d(3, 4, 3, groups=2), ValueError),
                      (lambda L: L.Conv2d(4, 4, 3, padding="same", stride=2), ValueError),
                      (lambda L: L.ConvTranspose2d(4, 4, 3, padding_mode="reflect"),
                       ValueError),
                      (lambda L: L.Dropout(2.0), ValueError),
                      (lambda L: L.GroupNorm(3, 4), ValueError),
                      (lambda L: L.Embedding(4, 2, padding_idx=4), AssertionError)]:
        _same(lambda: make(torch.nn), lambda: make(nn), exc)
    # these messages print a Python set, whose order varies between runs (also PyTorch's)
    with pytest.raises(ValueError, match="Invalid padding string 'full', should be one of"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of .* but got "
                                         "padding_mode='mirror'"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")


def test_calculate_gain_and_misc_math():
    assert math.isclose(nn.init.calculate_gain("leaky_relu"),
                        torch.nn.init.calculate_gain("leaky_relu"))


@contextlib.contextmanager
def _attention_composite():
    """Inside: scaled_dot_product_attention runs its composite on the CPU (no kernel)."""
    from ember.dispatcher import OPS
    ember.zeros(1)
    kernel = OPS["scaled_dot_product_attention"].kernels.pop("cpu")
    try:
        yield
    finally:
        OPS["scaled_dot_product_attention"].kernels["cpu"] = kernel


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_kernel_is_the_composite(causal, dtype):
    """The CPU's attention kernel (no mask tensor) gives the composite's results bit for
    bit (the same operations per head), on strided heads as MultiheadAttention makes them,
    and follows PyTorch; a row whose keys are all hidden gives zeros."""
    rng = np.random.default_rng(3)
    q, k = (rng.standard_normal((7, 6, 5)).astype(dtype) for _ in range(2))  # (L, N*H, E)
    v = rng.standard_normal((9, 6, 4)).astype(dtype)
    k = np.concatenate([k, k[:2]], 0)  # S = 9
    q[:, 1] = np.abs(q[:, 1]) + 0.1
    k[:, 1] = -np.inf  # head 1: every score is -inf, a query that attends to nothing

    def run(lib):
        heads = [lib.tensor(a).transpose(0, 1).reshape(2, 3, a.shape[0], a.shape[-1])
                 for a in (q, k, v)]
        with lib.no_grad():
            return lib.nn.functional.scaled_dot_product_attention(*heads, is_causal=causal)
    native = run(ember).numpy()
    with _attention_composite():
        composite = run(ember).numpy()
    np.testing.assert_array_equal(native, composite)
    assert not np.isnan(native).any() and (native[0, 1] == 0).all()
    want = torch.nn.functional.scaled_dot_product_attention(
        *[torch.tensor(a).transpose(0, 1).reshape(2, 3, a.shape[0], a.shape[-1])
          for a in (q, k, v)], is_causal=causal).numpy()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(native, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_kernel_writes_heads_last_memory(dtype):
    """The dispatcher's heads_last=True (MultiheadAttention's call): the kernel writes its
    (B, H, L, E) result into (B, L, H, E) memory, the same values as the contiguous one;
    PyTorch's public layout (contiguous) is what F.scaled_dot_product_attention returns."""
    from ember.dispatcher.defs import nn as NN
    rng = np.random.default_rng(5)
    q, k, v = (ember.tensor(rng.standard_normal((2, 3, 7, 4)).astype(dtype)) for _ in range(3))
    with ember.no_grad():
        plain = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        joined = NN.scaled_dot_product_attention(q, k, v, None, 0.0, True, heads_last=True)
    assert plain.stride() == (84, 28, 4, 1)
    assert joined.stride() == (84, 4, 12, 1)
    np.testing.assert_array_equal(joined.numpy(), plain.numpy())


@pytest.mark.parametrize("causal", [False, True])
def test_attention_kernel_is_the_composite_on_large_heads(causal):
    """Heads large enough for oneDNN's products (where it is loaded): with OpenBLAS for the
    composite's products, as the kernel's, the composite's results bit for bit; with
    oneDNN's, within float32 rounding of them; PyTorch's within float32 rounding."""
    rng = np.random.default_rng(4)
    # (L, N*H, E) as MultiheadAttention lays heads out: 16 heads of 64 x 32
    q, k, v = (rng.standard_normal((64, 16, 32)).astype(np.float32) for _ in range(3))

    def run(lib):
        heads = [lib.tensor(a).transpose(0, 1).reshape(4, 4, 64, 32) for a in (q, k, v)]
        with lib.no_grad():
            return lib.nn.functional.scaled_dot_product_attention(*heads, is_causal=causal)
    native = run(ember).numpy()
    with _attention_composite():
        with ember.backends.mkldnn.flags(enabled=False):
            composite = run(ember).numpy()
        composite_onednn = run(ember).numpy()
    np.testing.assert_array_equal(native, composite)
    np.testing.assert_allclose(native, composite_onednn, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(native, run(torch).numpy(), rtol=1e-5, atol=1e-5)


def _norm_calls(T, fn):
    w4, b4 = T.linspace(0.5, 1.5, 4), T.linspace(-0.2, 0.2, 4)
    w3, b3 = T.linspace(0.5, 1.5, 3), T.linspace(-0.2, 0.2, 3)
    return {
        "layer_norm": lambda x: fn.layer_norm(x, (3,), w3, b3),
        "layer_norm_weight_only": lambda x: fn.layer_norm(x, (3,), w3),
        "LayerNorm": lambda x: T.nn.LayerNorm(3)(x),
        "group_norm": lambda x: fn.group_norm(x, 2, w4, b4),
        "GroupNorm": lambda x: T.nn.GroupNorm(2, 4)(x),
        "instance_norm": lambda x: fn.instance_norm(x, weight=w4, bias=b4),
        "rms_norm": lambda x: fn.rms_norm(x, (3,), w3),
        "rms_norm_no_weight": lambda x: fn.rms_norm(x, (3,)),
    }


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize("name", sorted(_norm_calls(torch, TF)))
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_norm_of_reduced_input_with_float32_params_keeps_its_dtype(name, dtype):
    """PyTorch's mixed-dtype norms (autocast's LayerNorm: a bfloat16 activation, float32
    weights): computed in float32, returned in the input's dtype, gradients of each
    argument in its own dtype. Small inputs check rms_norm's eps (float32's, not the
    reduced dtype's)."""
    x = (randn(2, 4, 3) * 1e-2).numpy()
    res = []
    for T, fn in ((torch, TF), (ember, ember.nn.functional)):
        xt = T.tensor(x).to(getattr(T, dtype)).requires_grad_()
        out = _norm_calls(T, fn)[name](xt)
        assert str(out.dtype).split(".")[-1] == dtype
        out.float().pow(2).sum().backward()
        assert str(xt.grad.dtype).split(".")[-1] == dtype
        res.append((out.float().detach().numpy(), xt.grad.float().numpy()))
    tol = 1e-2 if dtype == "bfloat16" else 1e-3
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol * np.abs(theirs).max())


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "instance_norm"])
@pytest.mark.parametrize("dtypes", [("float32", "bfloat16"), ("float32", "float64"),
                                    ("float64", "float32"), ("bfloat16", "float16")])
def test_norm_mixed_dtype_errors_match_torch(name, dtypes):
    """Any other mix of input and parameter dtypes is PyTorch's RuntimeError, its words."""
    x = randn(2, 4, 3).numpy()
    msgs = []
    for T, fn in ((torch, TF), (ember, ember.nn.functional)):
        xt = T.tensor(x).to(getattr(T, dtypes[0]))
        w = T.ones(3 if name == "layer_norm" else 4, dtype=getattr(T, dtypes[1]))
        call = {"layer_norm": lambda: fn.layer_norm(xt, (3,), w),
                "group_norm": lambda: fn.group_norm(xt, 2, w),
                "instance_norm": lambda: fn.instance_norm(xt, weight=w)}[name]
        with pytest.raises(RuntimeError) as info:
            call()
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]
