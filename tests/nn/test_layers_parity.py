"""Every layer gives PyTorch's output for the same weights and input (float32,
rtol 1e-4 / atol 1e-5), including non-default arguments."""
import pytest
import torch
import torch.nn as tnn

import ember
import ember.nn as nn
from nn_helpers import close, e, load_from_torch, randn

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")


def check(make, *shapes, train=False, inputs=None, seed=0):
    """Build the layer in both libraries, copy the weights, compare the outputs."""
    torch.manual_seed(seed)
    theirs = make(tnn)
    ours = load_from_torch(make(nn), theirs)
    theirs.train(train)
    ours.train(train)
    xs = inputs if inputs is not None else [randn(*s, seed=seed + i) for i, s in
                                            enumerate(shapes)]
    out_t = theirs(*xs)
    out_e = ours(*[e(x) for x in xs])
    close(out_e, out_t)
    return ours, theirs


# ---- linear ---------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 7), (7,)])
def test_linear(bias, shape):
    check(lambda L: L.Linear(7, 4, bias=bias), shape)


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(bias):
    check(lambda L: L.Bilinear(3, 5, 4, bias=bias), (6, 3), (6, 5))
    check(lambda L: L.Bilinear(3, 5, 4, bias=bias), (2, 6, 3), (2, 6, 5))


def test_identity_flatten_unflatten():
    check(lambda L: L.Identity(54, unused=1), (2, 3))
    check(lambda L: L.Flatten(), (2, 3, 4, 5))
    check(lambda L: L.Flatten(0, 2), (2, 3, 4, 5))
    check(lambda L: L.Unflatten(1, (3, 4)), (2, 12, 5))


# ---- convolution ----------------------------------------------------------------------
CONV2D = [
    dict(),
    dict(stride=2),
    dict(stride=(2, 1), padding=(1, 2)),
    dict(padding=1, dilation=2),
    dict(padding="same", dilation=(1, 2)),
    dict(padding="same", kernel_size=4),
    dict(padding="valid"),
    dict(groups=2, padding=1),
    dict(groups=4, out_channels=8, stride=2),            # depthwise
    dict(bias=False, kernel_size=(1, 3)),
    dict(padding=2, padding_mode="reflect"),
    dict(padding=1, padding_mode="replicate"),
    dict(padding=(1, 2), padding_mode="circular"),
]


@pytest.mark.parametrize("kw", CONV2D)
def test_conv2d(kw):
    kw = dict(kw)
    args = dict(in_channels=4, out_channels=kw.pop("out_channels", 6),
                kernel_size=kw.pop("kernel_size", 3))
    check(lambda L: L.Conv2d(**args, **kw), (2, 4, 9, 8))


def test_conv_outputs_are_contiguous():
    for bias in (True, False):
        y = nn.Conv2d(3, 4, 3, bias=bias)(ember.randn(2, 3, 6, 6))
        assert y.is_contiguous()
        assert y.view(2, -1).shape == (2, 64)


def test_conv2d_unbatched():
    check(lambda L: L.Conv2d(3, 2, 3, padding=1), (3, 6, 6))


@pytest.mark.parametrize("kw", [dict(), dict(stride=3, padding=2), dict(dilation=3),
                                dict(groups=2, bias=False), dict(padding="same"),
                                dict(padding=1, padding_mode="circular")])
def test_conv1d(kw):
    check(lambda L: L.Conv1d(4, 6, 3, **kw), (2, 4, 17))
    check(lambda L: L.Conv1d(4, 6, 3, **kw), (4, 17))


def test_conv3d():
    check(lambda L: L.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=1), (2, 2, 5, 6, 4))


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2)),
    dict(dilation=2, padding=1),
    dict(groups=2, stride=2, bias=False),
    dict(kernel_size=4, stride=2, padding=1),
])
def test_conv_transpose2d(kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    check(lambda L: L.ConvTranspose2d(4, 6, k, **kw), (2, 4, 5, 6))
    check(lambda L: L.ConvTranspose2d(4, 6, k, **kw), (4, 5, 6))


def test_conv_transpose2d_output_size():
    torch.manual_seed(0)
    theirs = tnn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    ours = load_from_torch(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), theirs)
    x = randn(1, 3, 4, 4)
    close(ours(e(x), output_size=[8, 8]), theirs(x, output_size=[8, 8]))
    with pytest.raises(ValueError, match="requested an output size"):
        ours(e(x), output_size=[10, 10])


def test_conv_transpose1d():
    check(lambda L: L.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
          (2, 3, 7))


# ---- pooling --------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2)),
    dict(kernel_size=3, dilation=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
])
def test_max_pool2d(kw):
    check(lambda L: L.MaxPool2d(**kw), (2, 3, 9, 10))
    check(lambda L: L.MaxPool2d(**kw), (3, 9, 10))
    check(lambda L: L.MaxPool2d(**kw, return_indices=True), (2, 3, 9, 10))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, dilation=2, ceil_mode=True),
                                dict(kernel_size=4, stride=3, ceil_mode=True)])
def test_max_pool1d(kw):
    check(lambda L: L.MaxPool1d(**kw), (2, 3, 13))
    check(lambda L: L.MaxPool1d(**kw, return_indices=True), (2, 3, 13))


@pytest.mark.parametrize("kw", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(2, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, padding=1, divisor_override=2),
])
def test_avg_pool2d(kw):
    check(lambda L: L.AvgPool2d(**kw), (2, 3, 9, 10))
    check(lambda L: L.AvgPool2d(**kw), (3, 9, 10))


def test_avg_pool1d():
    check(lambda L: L.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), (2, 3, 11))
    check(lambda L: L.AvgPool1d(4, stride=3, ceil_mode=True), (2, 3, 11))


@pytest.mark.parametrize("size", [1, 3, (2, 4), (3, None), (5, 7), (8, 6)])
def test_adaptive_avg_pool2d(size):
    check(lambda L: L.AdaptiveAvgPool2d(size), (2, 3, 8, 6))
    check(lambda L: L.AdaptiveAvgPool2d(size), (3, 7, 9))


@pytest.mark.parametrize("size", [1, 3, 5])
def test_adaptive_pool1d(size):
    check(lambda L: L.AdaptiveAvgPool1d(size), (2, 3, 10))
    check(lambda L: L.AdaptiveMaxPool1d(size), (2, 3, 10))
    check(lambda L: L.AdaptiveMaxPool1d(size, return_indices=True), (2, 3, 11))


@pytest.mark.parametrize("size", [1, (2, 3), (3, 4)])
def test_adaptive_max_pool2d(size):
    check(lambda L: L.AdaptiveMaxPool2d(size), (2, 3, 6, 9))
    check(lambda L: L.AdaptiveMaxPool2d(size, return_indices=True), (2, 3, 7, 10))
    check(lambda L: L.AdaptiveMaxPool2d(size, return_indices=True), (3, 7, 10))


# ---- normalisation --------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(elementwise_affine=False), dict(bias=False),
                                dict(eps=1e-2)])
def test_layer_norm(kw):
    ours, theirs = check(lambda L: L.LayerNorm(6, **kw), (3, 4, 6))
    check(lambda L: L.LayerNorm([4, 6], **kw), (3, 4, 6))


def test_layer_norm_trained_affine():
    torch.manual_seed(1)
    theirs = tnn.LayerNorm(5)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = load_from_torch(nn.LayerNorm(5), theirs)
    x = randn(4, 5)
    close(ours(e(x)), theirs(x))


@pytest.mark.parametrize("kw", [dict(), dict(affine=False), dict(eps=1e-3)])
def test_group_norm(kw):
    check(lambda L: L.GroupNorm(2, 6, **kw), (3, 6, 4, 5))
    check(lambda L: L.GroupNorm(3, 6, **kw), (3, 6, 7))
    check(lambda L: L.GroupNorm(1, 6, **kw), (3, 6))


@pytest.mark.parametrize("kw", [dict(), dict(eps=1e-3), dict(elementwise_affine=False)])
def test_rms_norm(kw):
    check(lambda L: L.RMSNorm(5, **kw), (3, 4, 5))
    check(lambda L: L.RMSNorm((4, 5), **kw), (3, 4, 5))


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 5)), ("BatchNorm1d", (8, 5, 3)),
                                       ("BatchNorm2d", (4, 5, 3, 3)),
                                       ("BatchNorm3d", (2, 5, 2, 3, 2))])
@pytest.mark.parametrize("kw", [dict(), dict(momentum=0.3, eps=1e-3), dict(momentum=None),
                                dict(affine=False), dict(track_running_stats=False)])
def test_batch_norm_train_then_eval(cls, shape, kw):
    torch.manual_seed(0)
    theirs = getattr(tnn, cls)(5, **kw)
    ours = load_from_torch(getattr(nn, cls)(5, **kw), theirs)
    for step in range(3):                         # running stats follow PyTorch's
        x = randn(*shape, seed=step) * (step + 1) + step
        close(ours(e(x)), theirs(x))
    for name, buf in theirs.named_buffers():
        close(ours.get_buffer(name), buf)
    theirs.eval()
    ours.eval()
    x = randn(*shape, seed=9)
    close(ours(e(x)), theirs(x))


@pytest.mark.parametrize("kw", [dict(), dict(affine=True), dict(track_running_stats=True)])
def test_instance_norm(kw):
    ours, theirs = check(lambda L: L.InstanceNorm2d(3, **kw), (2, 3, 4, 5), train=True)
    for name, buf in theirs.named_buffers():
        close(ours.get_buffer(name), buf)
    check(lambda L: L.InstanceNorm1d(3, **kw), (2, 3, 6), train=True)
    check(lambda L: L.InstanceNorm1d(3, **kw), (3, 6), train=True)


def test_local_response_norm():
    check(lambda L: L.LocalResponseNorm(3), (2, 6, 4, 4))
    check(lambda L: L.LocalResponseNorm(4, alpha=0.1, beta=0.5, k=2.0), (2, 6, 5))


# ---- embedding, dropout ---------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=3), dict(padding_idx=-1),
                                dict(scale_grad_by_freq=True)])
def test_embedding(kw):
    idx = torch.tensor([[1, 3, 0], [9, 3, 3]])
    check(lambda L: L.Embedding(10, 4, **kw), inputs=[idx])
    check(lambda L: L.Embedding(10, 4, **kw), inputs=[torch.tensor(3)])


def test_embedding_max_norm_renormalises_weight_in_place():
    torch.manual_seed(0)
    theirs = tnn.Embedding(6, 3, max_norm=1.0)
    ours = load_from_torch(nn.Embedding(6, 3, max_norm=1.0), theirs)
    idx = torch.tensor([0, 2, 2, 5])
    close(ours(e(idx)), theirs(idx))
    close(ours.weight, theirs.weight)


def test_embedding_from_pretrained():
    w = randn(4, 3)
    ours = nn.Embedding.from_pretrained(e(w))
    assert not ours.weight.requires_grad
    close(ours(ember.tensor([3, 0])), tnn.Embedding.from_pretrained(w)(torch.tensor([3, 0])))


def test_dropout_modes():
    check(lambda L: L.Dropout(0.3), (4, 5))       # eval: identity
    check(lambda L: L.Dropout2d(0.3), (2, 4, 3, 3))
    x = ember.ones(200, 50)
    d = nn.Dropout(0.25)
    y = d(x)
    kept = (y != 0).float()
    assert abs(kept.mean().item() - 0.75) < 0.03
    assert ember.allclose(y[y != 0], ember.full((int(kept.sum().item()),), 1 / 0.75))
    d.eval()
    assert d(x) is x
    assert nn.Dropout(1.0)(x).abs().sum().item() == 0
    y2 = nn.Dropout2d(0.5)(ember.ones(20, 30, 4, 4))
    per_channel = y2.amax(dim=(2, 3)) - y2.amin(dim=(2, 3))
    assert per_channel.abs().max().item() == 0    # whole channels kept or dropped


# ---- activations ----------------------------------------------------------------------
ACTIVATIONS = [
    lambda L: L.ReLU(), lambda L: L.ReLU6(), lambda L: L.LeakyReLU(),
    lambda L: L.LeakyReLU(0.2), lambda L: L.GELU(), lambda L: L.GELU(approximate="tanh"),
    lambda L: L.SiLU(), lambda L: L.ELU(), lambda L: L.ELU(alpha=0.5), lambda L: L.Tanh(),
    lambda L: L.Sigmoid(), lambda L: L.Softmax(dim=1), lambda L: L.Softmax(dim=-1),
    lambda L: L.LogSoftmax(dim=1), lambda L: L.Softmin(dim=0), lambda L: L.Softplus(),
    lambda L: L.Softplus(beta=2, threshold=1.5), lambda L: L.Hardswish(),
    lambda L: L.Hardsigmoid(), lambda L: L.Hardtanh(-0.5, 0.7), lambda L: L.Mish(),
    lambda L: L.SELU(), lambda L: L.CELU(alpha=0.7), lambda L: L.LogSigmoid(),
    lambda L: L.Softsign(), lambda L: L.Tanhshrink(), lambda L: L.Threshold(0.2, -1.0),
    lambda L: L.Hardshrink(0.3), lambda L: L.Softshrink(0.3), lambda L: L.GLU(dim=1),
    lambda L: L.PReLU(), lambda L: L.PReLU(4), lambda L: L.RReLU(),
    lambda L: L.Softmax2d(),
]


@pytest.mark.parametrize("make", ACTIVATIONS)
def test_activation(make):
    x = randn(3, 4, 6) * 3
    check(make, inputs=[x])


def test_activation_inplace():
    for make in (lambda L: L.ReLU(inplace=True), lambda L: L.LeakyReLU(0.1, inplace=True),
                 lambda L: L.ELU(inplace=True), lambda L: L.SiLU(inplace=True),
                 lambda L: L.Hardswish(inplace=True)):
        x = randn(4, 5)
        xe = e(x)
        out = make(nn)(xe)
        ref = make(tnn)(x.clone())
        close(out, ref)
        close(xe, ref)                            # the input itself was overwritten


def test_softplus_large_values_are_linear():
    x = torch.tensor([-100.0, -5.0, 0.0, 5.0, 30.0, 100.0])
    check(lambda L: L.Softplus(), inputs=[x])
    check(lambda L: L.ELU(), inputs=[x])


# ---- upsampling, padding --------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(5, 7)),
                                dict(scale_factor=2, mode="bilinear"),
                                dict(size=(5, 7), mode="bilinear", align_corners=True),
                                dict(scale_factor=1.5, mode="bilinear")])
def test_upsample(kw):
    check(lambda L: L.Upsample(**kw), (2, 3, 4, 5))


@pytest.mark.parametrize("make", [lambda L: L.ZeroPad2d((1, 2, 0, 3)),
                                  lambda L: L.ConstantPad1d((2, 1), 1.5),
                                  lambda L: L.ReflectionPad2d((1, 2, 2, 1)),
                                  lambda L: L.ReplicationPad1d(3),
                                  lambda L: L.CircularPad2d(1)])
def test_padding_layers(make):
    check(make, (2, 3, 4, 5)) if "1d" not in repr(make(tnn)).lower() else None
    check(make, (2, 3, 5))


# ---- randomised configurations (hypothesis) ---------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 4), s=st.integers(1, 3), p=st.integers(0, 2), d=st.integers(1, 2),
       g=st.sampled_from([1, 2]), h=st.integers(5, 9), w=st.integers(5, 9))
def test_conv2d_random_configs(k, s, p, d, g, h, w):
    if d * (k - 1) + 1 > min(h, w) + 2 * p:
        return
    check(lambda L: L.Conv2d(4, 6, k, stride=s, padding=p, dilation=d, groups=g),
          (2, 4, h, w))


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 4), s=st.integers(1, 3), p=st.integers(0, 2), op=st.integers(0, 2),
       d=st.integers(1, 2), h=st.integers(2, 5))
def test_conv_transpose2d_random_configs(k, s, p, op, d, h):
    if op >= max(s, d) or (h - 1) * s - 2 * p + d * (k - 1) + op + 1 <= 0:
        return
    check(lambda L: L.ConvTranspose2d(4, 2, k, stride=s, padding=p, output_padding=op,
                                      dilation=d), (2, 4, h, h + 1))


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 4), s=st.integers(1, 3), p=st.integers(0, 2), d=st.integers(1, 2),
       ceil=st.booleans(), cip=st.booleans(), h=st.integers(4, 9))
def test_pool2d_random_configs(k, s, p, d, ceil, cip, h):
    if 2 * p > k or d * (k - 1) + 1 > h + 2 * p:
        return
    check(lambda L: L.MaxPool2d(k, s, p, d, ceil_mode=ceil, return_indices=True),
          (2, 3, h, h + 2))
    check(lambda L: L.AvgPool2d(k, s, p, ceil_mode=ceil, count_include_pad=cip),
          (2, 3, h, h + 2))
