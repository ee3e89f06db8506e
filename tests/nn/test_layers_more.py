"""The rest of ``torch.nn`` and ``torch.nn.functional`` (3-d transposed convolution, LP /
fractional / unpooling, pixel and channel shuffles, embedding bags, CTC and margin losses,
spatial transformers, lazy modules, ...) against PyTorch: outputs and gradients (each
input's and each parameter's, from the same random cotangent)."""
import copy
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from nn_helpers import close, e, load_from_torch, randn

GTOL = dict(rtol=1e-4, atol=1e-5)


class Const:
    """An argument of ``check`` that takes no gradient (running statistics, ...)."""

    def __init__(self, t):
        self.t = t


def _to_ember(x, grad):
    if isinstance(x, Const):
        return e(x.t)
    if isinstance(x, torch.Tensor):
        t = e(x)
        return t.requires_grad_() if grad and x.is_floating_point() else t
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, torch.Tensor) for v in x):
        return type(x)(_to_ember(v, grad) for v in x)
    return x


def _to_torch(x, grad):
    if isinstance(x, Const):
        return x.t.clone()
    if isinstance(x, torch.Tensor):
        t = x.detach().clone()
        return t.requires_grad_() if grad and x.is_floating_point() else t
    return x


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def check(fn_t, fn_e, *args, grad=True, tol=GTOL, **kwargs):
    """``fn_e(*args)`` equals ``fn_t(*args)`` (every output), and, with ``grad``, the
    gradients of every floating input from one random cotangent on the first output."""
    at = [_to_torch(a, grad) for a in args]
    ae = [_to_ember(a, grad) for a in args]
    # private arguments (``_random_samples``) and class weights of losses take no gradient
    # in PyTorch
    frozen = {k for k in kwargs if k.startswith("_") or k == "weight"}
    kt = {k: _to_torch(v, grad and k not in frozen) for k, v in kwargs.items()}
    ke = {k: _to_ember(v, grad and k not in frozen) for k, v in kwargs.items()}
    out_t, out_e = fn_t(*at, **kt), fn_e(*ae, **ke)
    close(out_e, out_t, **tol)
    if not grad:
        return
    ot, oe = _first(out_t), _first(out_e)
    if not ot.requires_grad:
        return
    cot = randn(*ot.shape, seed=123) if ot.dim() else torch.tensor(0.7, dtype=ot.dtype)
    (ot * cot).sum().backward()
    (oe * e(cot)).sum().backward()
    for a, b in zip(at + list(kt.values()), ae + list(ke.values())):
        if isinstance(a, torch.Tensor) and a.requires_grad:
            if a.grad is None:      # not differentiable there in PyTorch
                assert b.grad is None or not b.grad.numpy().any()
                continue
            assert b.grad is not None, "no gradient reached an input"
            close(b.grad, a.grad, **tol)


# ---- module paths ----------------------------------------------------------------------
def _public_classes(mod):
    return sorted(n for n, v in vars(mod).items() if inspect.isclass(v)
                  and not n.startswith("_") and v.__module__ == mod.__name__)


TORCH_MODULE_FILES = [m.name for m in pkgutil.iter_modules(tnn.modules.__path__)
                      if not m.name.startswith("_")]


@pytest.mark.parametrize("name", TORCH_MODULE_FILES)
def test_module_files_have_torchs_classes(name):
    theirs = importlib.import_module(f"torch.nn.modules.{name}")
    ours = importlib.import_module(f"ember.nn.modules.{name}")
    missing = [c for c in _public_classes(theirs) if not inspect.isclass(getattr(ours, c, None))]
    assert not missing, f"ember.nn.modules.{name} lacks {missing}"


# torch.nn's subpackages for quantisation and its typing helpers are not layers
NOT_LAYERS = {"attention", "common_types", "grad", "intrinsic", "qat", "quantizable",
              "quantized"}
# typing names, modules and notes torch.nn.functional imports for its own use
NOT_FUNCTIONS = {"BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Callable",
                 "DType", "Optional", "ScalingType", "SwizzleType", "TYPE_CHECKING",
                 "dataclasses", "grad", "importlib", "np", "warnings", "reproducibility_notes",
                 "sparse_support_notes", "tf32_notes", "torch"}


def test_every_torch_nn_name_exists():
    missing = [n for n in dir(tnn) if not n.startswith("_") and n not in NOT_LAYERS
               and not hasattr(nn, n)]
    assert not missing
    missing = [n for n in dir(TF) if not n.startswith("_") and n not in NOT_FUNCTIONS
               and not hasattr(F, n)]
    assert not missing


def test_every_torch_level_nn_function_exists():
    names = ("conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d conv_tbc "
             "avg_pool1d max_pool1d max_pool2d max_pool3d max_pool1d_with_indices "
             "adaptive_avg_pool1d adaptive_max_pool1d batch_norm layer_norm group_norm "
             "instance_norm rms_norm dropout dropout_ alpha_dropout alpha_dropout_ "
             "feature_alpha_dropout feature_alpha_dropout_ feature_dropout feature_dropout_ "
             "embedding embedding_bag bilinear celu celu_ selu selu_ prelu rrelu rrelu_ relu_ "
             "threshold threshold_ hardshrink pixel_shuffle pixel_unshuffle channel_shuffle "
             "native_channel_shuffle pairwise_distance cosine_similarity pdist kl_div "
             "margin_ranking_loss hinge_embedding_loss cosine_embedding_loss "
             "triplet_margin_loss poisson_nll_loss binary_cross_entropy_with_logits ctc_loss "
             "constant_pad_nd affine_grid_generator grid_sampler grid_sampler_2d "
             "grid_sampler_3d native_batch_norm native_layer_norm native_group_norm "
             "native_dropout native_norm norm_except_dim embedding_renorm_ convolution "
             "rnn_tanh_cell rnn_relu_cell lstm_cell gru_cell batch_norm_update_stats "
             "rnn_tanh rnn_relu lstm gru")
    assert [n for n in names.split() if not hasattr(ember, n)] == []
    assert all(hasattr(ember.Tensor, n) for n in ("prelu", "hardshrink", "relu_"))


# ---- functional: table of forms with gradients -------------------------------------------
def _pool_idx(shape, k, seed=0):
    x = randn(*shape, seed=seed)
    nd = len(shape) - 2
    fn = (TF.max_pool1d, TF.max_pool2d, TF.max_pool3d)[nd - 1]
    return fn(x, k, return_indices=True)


CASES = [
    ("conv3d", lambda m: m.conv3d,
     (randn(2, 4, 5, 6, 5), randn(6, 2, 2, 3, 2, seed=1), randn(6, seed=2)),
     dict(stride=(1, 2, 1), padding=1, dilation=(2, 1, 1), groups=2)),
    ("conv_transpose3d", lambda m: m.conv_transpose3d,
     (randn(2, 4, 3, 4, 3), randn(4, 3, 2, 3, 2, seed=1), randn(6, seed=2)),
     dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2,
          dilation=(1, 2, 1))),
    ("conv_transpose3d_unbatched", lambda m: m.conv_transpose3d,
     (randn(2, 3, 3, 3), randn(2, 1, 2, 2, 2, seed=1)), {}),
    ("conv_tbc", lambda m: m.conv_tbc,
     (randn(7, 2, 3), randn(3, 3, 4, seed=1), randn(4, seed=2)), dict(pad=1)),
    ("max_pool3d_indices", lambda m: m.max_pool3d_with_indices,
     (randn(2, 2, 5, 6, 5), 2), dict(stride=(1, 2, 2), padding=1, ceil_mode=True)),
    ("max_pool1d_indices", lambda m: m.max_pool1d_with_indices, (randn(2, 3, 9), 3), {}),
    ("adaptive_max_pool3d_indices", lambda m: m.adaptive_max_pool3d_with_indices,
     (randn(2, 2, 5, 6, 7), (2, 3, None)), {}),
    ("avg_pool3d", lambda m: m.avg_pool3d, (randn(2, 2, 5, 6, 5), (2, 3, 2)),
     dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("lp_pool1d", lambda m: m.lp_pool1d, (randn(2, 3, 9).abs() + 0.1, 2.0, 3), {}),
    ("lp_pool2d", lambda m: m.lp_pool2d, (randn(2, 3, 6, 7), 2.0, (2, 3)),
     dict(stride=(1, 2), ceil_mode=True)),
    ("lp_pool2d_p3", lambda m: m.lp_pool2d, (randn(2, 3, 6, 6), 3, 2), {}),
    ("lp_pool3d", lambda m: m.lp_pool3d, (randn(1, 2, 4, 5, 4).abs() + 0.1, 1.5, 2), {}),
    ("max_unpool1d", lambda m: m.max_unpool1d, (*_pool_idx((2, 3, 8), 2), 2), {}),
    ("max_unpool2d", lambda m: m.max_unpool2d, (*_pool_idx((2, 3, 6, 7), 2), 2),
     dict(output_size=(7, 7))),
    ("max_unpool3d", lambda m: m.max_unpool3d, (*_pool_idx((1, 2, 4, 4, 6), 2), 2), {}),
    ("fractional_max_pool2d", lambda m: m.fractional_max_pool2d,
     (randn(2, 3, 9, 11), 2),
     dict(output_size=(5, 4), return_indices=True,
          _random_samples=torch.rand(2, 3, 2, generator=torch.Generator().manual_seed(3)))),
    ("fractional_max_pool2d_ratio", lambda m: m.fractional_max_pool2d,
     (randn(3, 10, 10), (3, 2)),
     dict(output_ratio=(0.5, 0.5),
          _random_samples=torch.rand(1, 3, 2, generator=torch.Generator().manual_seed(4)))),
    ("fractional_max_pool3d", lambda m: m.fractional_max_pool3d_with_indices,
     (randn(1, 2, 7, 8, 9), 2),
     dict(output_size=(3, 4, 5),
          _random_samples=torch.rand(1, 2, 3, generator=torch.Generator().manual_seed(5)))),
    ("pixel_shuffle", lambda m: m.pixel_shuffle, (randn(2, 3, 8, 4, 5), 2), {}),
    ("pixel_unshuffle", lambda m: m.pixel_unshuffle, (randn(3, 4, 6), 2), {}),
    # PyTorch's native_channel_shuffle has no gradient: compared on a detached input
    ("native_channel_shuffle", lambda m: lambda x, g: m.native_channel_shuffle(x.detach(), g),
     (randn(2, 6, 3), 3), {}),
    ("pdist", lambda m: m.pdist, (randn(5, 4),), {}),
    ("pdist_p1", lambda m: m.pdist, (randn(4, 3), 1.0), {}),
    ("pdist_inf", lambda m: m.pdist, (randn(4, 3), float("inf")), {}),
    ("multi_margin_loss", lambda m: m.multi_margin_loss,
     (randn(5, 4), torch.tensor([0, 3, 1, 1, 2])), {}),
    ("multi_margin_loss_p2_weight", lambda m: m.multi_margin_loss,
     (randn(5, 4), torch.tensor([0, 3, 1, 1, 2])),
     dict(p=2, margin=0.7, weight=torch.tensor([1.0, 2.0, 0.5, 3.0]), reduction="none")),
    ("multi_margin_loss_1d", lambda m: m.multi_margin_loss,
     (randn(4), torch.tensor(2)), dict(reduction="sum")),
    ("multilabel_margin_loss", lambda m: m.multilabel_margin_loss,
     (randn(3, 5), torch.tensor([[3, 0, -1, 1, 2], [1, 1, 4, -1, -1], [-1, 2, 0, 0, 0]])),
     dict(reduction="none")),
    ("multilabel_margin_loss_1d", lambda m: m.multilabel_margin_loss,
     (randn(4), torch.tensor([2, 1, -1, 0])), {}),
    ("triplet_margin_with_distance", lambda m: m.triplet_margin_with_distance_loss,
     (randn(4, 5), randn(4, 5, seed=1), randn(4, 5, seed=2)), dict(swap=True, margin=0.5)),
    ("linear_cross_entropy", lambda m: m.linear_cross_entropy,
     (randn(6, 4), randn(5, 4, seed=1), torch.tensor([0, 4, 2, -100, 1, 3])),
     dict(linear_bias=randn(5, seed=2), label_smoothing=0.1, ignore_index=-100)),
    ("celu_", lambda m: lambda x: m.celu_(x * 1.0, 0.7), (randn(3, 4),), {}),
    ("selu_", lambda m: lambda x: m.selu_(x * 1.0), (randn(3, 4),), {}),
    ("rrelu_eval", lambda m: lambda x: m.rrelu_(x * 1.0, 0.1, 0.3), (randn(3, 4),), {}),
    ("feature_alpha_dropout_eval", lambda m: m.feature_alpha_dropout, (randn(2, 3, 4),),
     dict(training=False)),
    ("normalize_p0", lambda m: m.normalize, (torch.tensor([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]]),),
     dict(p=0)),
    ("relu_at_zero", lambda m: m.relu, (torch.tensor([-1.0, 0.0, 0.0, 2.0]),), {}),
]


def _double(x):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.double()
    if isinstance(x, dict):
        return {k: _double(v) for k, v in x.items()}
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_functional_matches_torch(name, fn, args, kwargs, dtype):
    if dtype == "float64":
        args, kwargs = [_double(a) for a in args], _double(kwargs)
    check(fn(TF), fn(F), *args, **kwargs)


def test_interpolate_bicubic_and_uint8():
    x = randn(2, 3, 5, 7) * 10
    for kw in (dict(size=(9, 4)), dict(scale_factor=(1.7, 0.6)),
               dict(scale_factor=2.5, align_corners=True)):
        check(lambda t: TF.interpolate(t, mode="bicubic", **kw),
              lambda t: F.interpolate(t, mode="bicubic", **kw), x, tol=dict(rtol=1e-4,
                                                                             atol=1e-4))
    for mode in ("bilinear", "bicubic"):
        for kw in (dict(size=(3, 4)), dict(scale_factor=(0.37, 1.6), align_corners=True),
                   dict(size=(4, 3), align_corners=False)):
            check(lambda t: TF.interpolate(t, mode=mode, antialias=True, **kw),
                  lambda t: F.interpolate(t, mode=mode, antialias=True, **kw), x,
                  tol=dict(rtol=1e-4, atol=1e-4))
    with pytest.raises(ValueError):
        F.interpolate(e(x), scale_factor=0.5, mode="nearest", antialias=True)
    u = torch.randint(0, 256, (2, 3, 6, 7), dtype=torch.uint8,
                      generator=torch.Generator().manual_seed(0))
    # uint8: PyTorch's fixed-point kernels, bit for bit
    for mode in ("bilinear", "bicubic", "nearest", "nearest-exact"):
        for ac in ((None,) if mode.startswith("nearest") else (False, True)):
            for aa in ((False,) if mode.startswith("nearest") else (False, True)):
                for size in (dict(scale_factor=(1.6, 0.7)), dict(size=(3, 4)),
                             dict(size=(13, 20))):
                    kw = dict(mode=mode, antialias=aa, align_corners=ac, **size)
                    close(F.interpolate(e(u), **kw), TF.interpolate(u, **kw), rtol=0, atol=0)


@pytest.mark.parametrize("mode,nd", [("nearest", 1), ("nearest", 2), ("nearest", 3),
                                     ("nearest-exact", 2), ("linear", 1), ("bilinear", 2),
                                     ("bicubic", 2), ("trilinear", 3), ("area", 2),
                                     ("area", 3)])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_interpolate_integer_input_errors_as_torch(mode, nd, dtype):
    x = torch.zeros((1, 2) + (4,) * nd, dtype=dtype)
    try:
        expected = TF.interpolate(x, scale_factor=2, mode=mode)
    except NotImplementedError as err:
        with pytest.raises(NotImplementedError, match=str(err).replace('"', '.')):
            F.interpolate(e(x), scale_factor=2, mode=mode)
    else:
        close(F.interpolate(e(x), scale_factor=2, mode=mode), expected)


def test_non_constant_padding_with_negative_pads():
    x = torch.arange(5.0).reshape(1, 1, 5)
    for mode in ("reflect", "replicate", "circular"):
        for pad in [(lo, hi) for lo in (-6, -5, -4, -2, 0, 1, 3, 4, 5, 6)
                    for hi in (-6, -5, -3, -1, 0, 2, 4, 5, 6)]:
            if mode == "circular" and 5 - max(-pad[0], 0) - max(-pad[1], 0) <= 0:
                continue   # nothing left to wrap: PyTorch reads uninitialised memory
            try:
                expected = TF.pad(x, pad, mode=mode)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    F.pad(e(x), pad, mode=mode)
                continue
            close(F.pad(e(x), pad, mode=mode), expected)
    x3 = randn(2, 3, 4, 5, 6)
    for mode in ("reflect", "replicate", "circular"):
        check(lambda t: TF.pad(t, (-1, 2, 1, -2, -1, -1), mode=mode),
              lambda t: F.pad(t, (-1, 2, 1, -2, -1, -1), mode=mode), x3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("padded", [True, False])
def test_ctc_loss(reduction, padded):
    g = torch.Generator().manual_seed(0)
    t, n, c = 12, 3, 5
    logits = torch.randn(t, n, c, generator=g)
    lengths_in = torch.tensor([12, 10, 7])
    lengths_t = torch.tensor([4, 3, 0])
    targets = torch.randint(1, c, (n, 4), generator=g)
    targets[0, 1] = targets[0, 2]          # a repeated label needs a blank between
    if not padded:
        targets = torch.cat([targets[i, :lengths_t[i]] for i in range(n)])
    # the gradient of the logits (through log_softmax) and of log_probs directly
    check(lambda z, *a: TF.ctc_loss(z.log_softmax(2), *a, reduction=reduction),
          lambda z, *a: F.ctc_loss(z.log_softmax(2), *a, reduction=reduction), logits,
          targets, lengths_in, lengths_t)
    lp = logits.log_softmax(2)
    check(lambda z, *a: TF.ctc_loss(z, *a, reduction=reduction),
          lambda z, *a: F.ctc_loss(z, *a, reduction=reduction), lp, targets, lengths_in,
          lengths_t)
    check(lambda z, *a: torch.ctc_loss(z, *a, 0, 2), lambda z, *a: ember.ctc_loss(z, *a, 0, 2),
          lp, targets, lengths_in, lengths_t)


def test_ctc_loss_impossible_and_unbatched():
    lp = randn(3, 1, 4).log_softmax(2)
    targets = torch.tensor([[1, 1, 1]])        # needs 5 frames
    for zero_inf in (False, True):
        check(lambda z, t: TF.ctc_loss(z, t, [3], [3], zero_infinity=zero_inf,
                                       reduction="sum"),
              lambda z, t: F.ctc_loss(z, t, [3], [3], zero_infinity=zero_inf,
                                      reduction="sum"), lp, targets)
    lp1 = randn(6, 4).log_softmax(1)
    check(lambda z, t: TF.ctc_loss(z, t, (6,), (2,)),
          lambda z, t: F.ctc_loss(z, t, (6,), (2,)), lp1, torch.tensor([1, 2]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    w = randn(10, 3)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])
    offs = torch.tensor([0, 2, 2, 5])
    check(lambda wt, i, o: TF.embedding_bag(i, wt, o, mode=mode),
          lambda we, i, o: F.embedding_bag(i, we, o, mode=mode), w, idx, offs)
    last = torch.tensor([0, 2, 2, 5, 9])
    check(lambda wt, i, o: TF.embedding_bag(i, wt, o, mode=mode, include_last_offset=True,
                                            padding_idx=4),
          lambda we, i, o: F.embedding_bag(i, we, o, mode=mode, include_last_offset=True,
                                           padding_idx=4), w, idx, last)
    check(lambda wt, i: TF.embedding_bag(i, wt, mode=mode),
          lambda we, i: F.embedding_bag(i, we, mode=mode), w, idx.reshape(3, 3))
    # 2-D input (bags of one length) with a padding index, one bag all padding
    pad2d = torch.tensor([[1, 4, 2], [4, 4, 4], [9, 0, 4], [3, 3, 5]])
    check(lambda wt, i: TF.embedding_bag(i, wt, mode=mode, padding_idx=4),
          lambda we, i: F.embedding_bag(i, we, mode=mode, padding_idx=4), w, pad2d)
    check(lambda wt, i: TF.embedding_bag(i, wt, mode=mode, padding_idx=-6, max_norm=1.0),
          lambda we, i: F.embedding_bag(i, we, mode=mode, padding_idx=-6, max_norm=1.0),
          w, pad2d)
    for lib, fn in ((torch, TF), (ember, F)):     # bags of length 0: PyTorch's arange error
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            fn.embedding_bag(lib.zeros(2, 0, dtype=lib.int64), lib.ones(10, 3), mode=mode)
    if mode == "sum":
        check(lambda wt, p, i: TF.embedding_bag(i, wt, mode="sum", per_sample_weights=p,
                                                padding_idx=4),
              lambda we, p, i: F.embedding_bag(i, we, mode="sum", per_sample_weights=p,
                                               padding_idx=4), w, randn(4, 3, seed=4), pad2d)
    with pytest.raises(RuntimeError, match="not in the valid range"):
        F.embedding_bag(e(torch.tensor([[1, 10]])), e(w), mode=mode)
    if mode == "sum":
        check(lambda wt, p, i, o: TF.embedding_bag(i, wt, o, mode="sum", per_sample_weights=p),
              lambda we, p, i, o: F.embedding_bag(i, we, o, mode="sum", per_sample_weights=p),
              w, randn(9, seed=3), idx, offs)
    else:
        with pytest.raises(NotImplementedError):
            F.embedding_bag(e(idx), e(w), e(offs), mode=mode, per_sample_weights=e(idx * 1.0))
    code = ["sum", "mean", "max"].index(mode)
    check(lambda wt, i, o: torch.embedding_bag(wt, i, o, False, code)[0],
          lambda we, i, o: ember.embedding_bag(we, i, o, False, code)[0], w, idx, offs)


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(align):
    check(lambda th: TF.affine_grid(th, [2, 3, 4, 5], align_corners=align),
          lambda th: F.affine_grid(th, [2, 3, 4, 5], align_corners=align), randn(2, 2, 3))
    check(lambda th: TF.affine_grid(th, (2, 1, 3, 4, 2), align_corners=align),
          lambda th: F.affine_grid(th, (2, 1, 3, 4, 2), align_corners=align), randn(2, 3, 4))
    with pytest.raises(ValueError):
        F.affine_grid(e(randn(2, 3, 3)), [2, 3, 4, 5], align_corners=align)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d(mode, padding_mode, align):
    x = randn(2, 3, 5, 6)
    grid = randn(2, 4, 7, 2, seed=1) * 0.8    # some positions fall outside [-1, 1]
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align)
    # nearest has no gradient for the grid; leave that input's gradient out there
    check(lambda a, g: TF.grid_sample(a, g, **kw), lambda a, g: F.grid_sample(a, g, **kw),
          x, grid, tol=dict(rtol=1e-4, atol=1e-4))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d(mode, padding_mode):
    x = randn(1, 2, 4, 5, 3)
    grid = randn(1, 3, 2, 4, 3, seed=1)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=False)
    check(lambda a, g: TF.grid_sample(a, g, **kw), lambda a, g: F.grid_sample(a, g, **kw),
          x, grid, tol=dict(rtol=1e-4, atol=1e-4))
    check(lambda a, g: torch.grid_sampler(a, g, 0, 1, True),
          lambda a, g: ember.grid_sampler(a, g, 0, 1, True), x, grid,
          tol=dict(rtol=1e-4, atol=1e-4))


def test_gumbel_softmax_and_feature_alpha_dropout():
    logits = e(randn(6, 5)).requires_grad_()
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), np.ones(6), rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    hard.sum().backward()
    assert logits.grad is not None
    x = e(randn(4, 6, 3, 3)) + 5.0
    out = F.feature_alpha_dropout(x, 0.5, training=True).numpy()
    # every (sample, channel) plane is either kept (affine in x) or the constant alpha' a + b
    dropped = np.isclose(out.std(axis=(2, 3)), 0.0)
    assert dropped.any() and (~dropped).any()


def test_grouped_mm():
    a, b = randn(10, 4), randn(3, 4, 5, seed=1)
    offs = torch.tensor([2, 6, 10], dtype=torch.int32)
    out = F.grouped_mm(e(a), e(b), offs=e(offs)).numpy()
    ref = torch.cat([a[0:2] @ b[0], a[2:6] @ b[1], a[6:10] @ b[2]]).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    check(TF.grouped_mm, F.grouped_mm, randn(2, 3, 4), randn(2, 4, 8, seed=1))


@pytest.mark.filterwarnings("ignore:LSTM with projections")
def test_torch_level_forms():
    x, w = randn(2, 3, 7), randn(4, 3, 2, seed=1)
    check(torch.conv1d, ember.conv1d, x, w, None, 2, 1)
    check(lambda a, b: torch.convolution(a, b, None, [1], [0], [1], True, [0], 1),
          lambda a, b: ember.convolution(a, b, None, [1], [0], [1], True, [0], 1),
          randn(2, 4, 5), randn(4, 3, 2, seed=1))
    check(torch.max_pool1d, ember.max_pool1d, x, 2)
    check(torch.max_pool1d_with_indices, ember.max_pool1d_with_indices, x, 3, [2])
    check(torch.adaptive_max_pool1d, ember.adaptive_max_pool1d, x, 3)
    check(torch.avg_pool1d, ember.avg_pool1d, x, 3, [], 1)
    bn = (randn(3, seed=2), randn(3, seed=3), Const(torch.zeros(3)), Const(torch.ones(3)))
    check(torch.batch_norm, ember.batch_norm, x, *bn, True, 0.1, 1e-5, False)
    check(lambda *a: torch.native_batch_norm(*a, True, 0.1, 1e-5),
          lambda *a: ember.native_batch_norm(*a, True, 0.1, 1e-5), x, *bn)
    rm_t, rv_t, rm_e, rv_e = torch.zeros(3), torch.ones(3), ember.zeros(3), ember.ones(3)
    close(ember.batch_norm_update_stats(e(x), rm_e, rv_e, 0.1),
          torch.batch_norm_update_stats(x, rm_t, rv_t, 0.1))
    close(rm_e, rm_t)
    close(rv_e, rv_t)
    check(torch.native_layer_norm, ember.native_layer_norm, x, [7], randn(7), None, 1e-5)
    check(torch.native_group_norm, ember.native_group_norm, randn(2, 4, 5), None, None, 2, 4,
          5, 2, 1e-5)
    check(torch.instance_norm, ember.instance_norm, x, None, None, None, None, True, 0.1, 1e-5,
          False)
    check(torch.embedding, ember.embedding, randn(6, 3), torch.tensor([[0, 5], [2, 2]]), 2)
    check(torch.kl_div, ember.kl_div, randn(3, 4), randn(3, 4, seed=1).softmax(1))
    check(torch.kl_div, ember.kl_div, randn(3, 4), randn(3, 4, seed=1), 0, log_target=True)
    check(torch.margin_ranking_loss, ember.margin_ranking_loss, randn(5), randn(5, seed=1),
          torch.tensor([1.0, -1, 1, -1, 1]), 0.2, 2)
    check(torch.hinge_embedding_loss, ember.hinge_embedding_loss, randn(5),
          torch.tensor([1.0, -1, 1, -1, 1]), 1.0, 0)
    check(torch.cosine_embedding_loss, ember.cosine_embedding_loss, randn(4, 3),
          randn(4, 3, seed=1), torch.tensor([1.0, -1, 1, -1]))
    check(torch.triplet_margin_loss, ember.triplet_margin_loss, randn(4, 3), randn(4, 3, seed=1),
          randn(4, 3, seed=2), 1.0, 2, 1e-6, True, 1)
    check(torch.poisson_nll_loss, ember.poisson_nll_loss, randn(6), randn(6, seed=1).abs(),
          True, True, 1e-8, 1)
    check(torch.binary_cross_entropy_with_logits, ember.binary_cross_entropy_with_logits,
          randn(6), torch.rand(6), None, Const(torch.full((6,), 2.0)), 2)
    check(torch.constant_pad_nd, ember.constant_pad_nd, randn(2, 3), [1, -1, 2, 0], 1.5)
    check(torch.affine_grid_generator, ember.affine_grid_generator, randn(2, 2, 3),
          [2, 1, 3, 4], False)
    check(torch.bilinear, ember.bilinear, randn(3, 2), randn(3, 4, seed=1),
          randn(5, 2, 4, seed=2), randn(5, seed=3))
    check(torch.pairwise_distance, ember.pairwise_distance, randn(3, 4), randn(3, 4, seed=1))
    check(torch.cosine_similarity, ember.cosine_similarity, randn(3, 4), randn(3, 4, seed=1))
    check(torch.pdist, ember.pdist, randn(4, 3))
    check(torch.prelu, ember.prelu, randn(2, 3, 4), torch.tensor([0.1, 0.2, 0.3]))
    check(torch.hardshrink, ember.hardshrink, randn(3, 4), 0.3)
    check(lambda a: a.hardshrink(0.3), lambda a: a.hardshrink(0.3), randn(3, 4))
    check(lambda a, b: a.prelu(b), lambda a, b: a.prelu(b), randn(3, 4), torch.tensor([0.2]))
    check(torch.threshold, ember.threshold, randn(3, 4), 0.1, -2.0)
    check(torch.celu, ember.celu, randn(3, 4), 0.5)
    check(torch.selu, ember.selu, randn(3, 4))
    check(torch.rrelu, ember.rrelu, randn(3, 4))
    check(torch.norm_except_dim, ember.norm_except_dim, randn(3, 4, 2), 2, 1)
    check(torch.conv_tbc, ember.conv_tbc, randn(5, 2, 3), randn(2, 3, 4, seed=1),
          randn(4, seed=2))
    check(torch.pixel_shuffle, ember.pixel_shuffle, randn(1, 4, 2, 3), 2)
    check(torch.channel_shuffle, ember.channel_shuffle, randn(1, 4, 2, 3), 2)
    for fn in ("dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
        check(getattr(torch, fn), getattr(ember, fn), randn(2, 3, 4), 0.5, False)
    xs, hs, cs = randn(2, 3), randn(2, 4, seed=1), randn(2, 4, seed=2)
    for name, gates in (("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3)):
        check(getattr(torch, name), getattr(ember, name), xs, hs, randn(4 * gates, 3, seed=3),
              randn(4 * gates, 4, seed=4), randn(4 * gates, seed=5), randn(4 * gates, seed=6))
    check(lambda x, h, c, *w: torch.lstm_cell(x, (h, c), *w),
          lambda x, h, c, *w: ember.lstm_cell(x, (h, c), *w), xs, hs, cs, randn(16, 3, seed=3),
          randn(16, 4, seed=4), randn(16, seed=5))
    for name, gates, batch_first, bidir, proj in (("rnn_tanh", 1, False, True, 0),
                                                  ("rnn_relu", 1, True, False, 0),
                                                  ("gru", 3, False, True, 0),
                                                  ("lstm", 4, True, True, 0),
                                                  ("lstm", 4, False, False, 2)):
        dirs, layers, hid = 1 + bidir, 2, 3
        out_h = proj or hid
        params, seed = [], 10
        for layer in range(layers):
            for _ in range(dirs):
                inp = 4 if layer == 0 else out_h * dirs
                params += [randn(gates * hid, inp, seed=seed),
                           randn(gates * hid, out_h, seed=seed + 1),
                           randn(gates * hid, seed=seed + 2), randn(gates * hid, seed=seed + 3)]
                if proj:
                    params.append(randn(proj, hid, seed=seed + 4))
                seed += 5
        seq = randn(2, 5, 4) if batch_first else randn(5, 2, 4)
        h0 = randn(layers * dirs, 2, out_h, seed=7)
        hx = [h0, randn(layers * dirs, 2, hid, seed=8)] if name == "lstm" else h0
        check(lambda s_, h_, *p: getattr(torch, name)(s_, h_, list(p), True, layers, 0.0, False,
                                                      bidir, batch_first),
              lambda s_, h_, *p: getattr(ember, name)(s_, h_, list(p), True, layers, 0.0, False,
                                                      bidir, batch_first),
              seq, hx, *params)
    x2 = e(randn(3, 4))
    ember.relu_(x2)
    assert (x2.numpy() >= 0).all()
    out, mask = ember.native_dropout(e(randn(50, 40)), 0.5, True)
    m = mask.numpy()
    assert m.dtype == np.bool_ and 0.3 < m.mean() < 0.7


# ---- modules -----------------------------------------------------------------------------
MODULES = [
    ("ConvTranspose3d", lambda m: m.ConvTranspose3d(4, 6, (2, 3, 2), stride=2, padding=1,
                                                    output_padding=1, groups=2),
     [(2, 4, 3, 3, 3)]),
    ("MaxPool3d", lambda m: m.MaxPool3d(2, stride=1, padding=1, dilation=2), [(2, 3, 5, 5, 5)]),
    ("AvgPool3d", lambda m: m.AvgPool3d(3, stride=2, padding=1, divisor_override=5),
     [(2, 3, 5, 6, 5)]),
    ("AdaptiveAvgPool3d", lambda m: m.AdaptiveAvgPool3d((2, None, 3)), [(2, 3, 5, 6, 7)]),
    ("AdaptiveMaxPool3d", lambda m: m.AdaptiveMaxPool3d(2), [(2, 3, 5, 6, 7)]),
    ("LPPool1d", lambda m: m.LPPool1d(2, 3, stride=2), [(2, 3, 9)]),
    ("LPPool2d", lambda m: m.LPPool2d(2, (2, 3)), [(2, 3, 6, 7)]),
    ("LPPool3d", lambda m: m.LPPool3d(2, 2), [(2, 3, 4, 4, 4)]),
    ("PixelShuffle", lambda m: m.PixelShuffle(2), [(2, 8, 3, 4)]),
    ("PixelUnshuffle", lambda m: m.PixelUnshuffle(2), [(2, 2, 4, 6)]),
    ("ChannelShuffle", lambda m: m.ChannelShuffle(3), [(2, 6, 3, 2)]),
    ("PairwiseDistance", lambda m: m.PairwiseDistance(p=1.5, keepdim=True), [(4, 5), (4, 5)]),
    ("CosineSimilarity", lambda m: m.CosineSimilarity(dim=0), [(4, 5), (4, 5)]),
    ("Fold", lambda m: m.Fold((4, 5), (2, 2), padding=1, stride=(1, 2)), [(2, 12, 15)]),
    ("Unfold", lambda m: m.Unfold((2, 3), dilation=(1, 2), padding=1), [(2, 3, 5, 6)]),
    ("ReflectionPad3d", lambda m: m.ReflectionPad3d((1, 2, 0, 1, 2, 1)), [(1, 2, 3, 4, 4)]),
    ("ReplicationPad3d", lambda m: m.ReplicationPad3d(2), [(1, 2, 3, 4, 4)]),
    ("CircularPad3d", lambda m: m.CircularPad3d((1, -1, 2, 0, 1, 1)), [(1, 2, 3, 4, 4)]),
    ("ConstantPad3d", lambda m: m.ConstantPad3d((1, 0, 2, 1, 0, 1), 2.5), [(2, 3, 2, 2)]),
    ("ZeroPad3d", lambda m: m.ZeroPad3d(1), [(1, 2, 2, 3, 2)]),
    ("CrossMapLRN2d", lambda m: m.CrossMapLRN2d(3, alpha=0.5, beta=0.7, k=2.0),
     [(2, 5, 3, 4)]),
    ("CrossMapLRN2d_even", lambda m: m.CrossMapLRN2d(4), [(1, 6, 2, 2)]),
    ("SyncBatchNorm_local", lambda m: m.SyncBatchNorm(3), [(4, 3, 5)]),
    ("DataParallel", lambda m: m.DataParallel(m.Linear(4, 3)), [(5, 4)]),
    ("FeatureAlphaDropout_eval", lambda m: m.FeatureAlphaDropout(0.3), [(2, 3, 4)]),
]


@pytest.mark.parametrize("name,make,shapes", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(name, make, shapes):
    torch.manual_seed(0)
    theirs = make(tnn)
    ours = load_from_torch(make(nn), theirs)
    train = name.startswith("SyncBatchNorm")
    theirs.train(train)
    ours.train(train)
    check(lambda *xs: theirs(*xs), lambda *xs: ours(*xs),
          *[randn(*s, seed=i) for i, s in enumerate(shapes)])
    for (key, pt), (key2, pe) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert key == key2
        close(pe.grad, pt.grad, **GTOL)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours).replace("ember.", "torch.") == repr(theirs)


def test_max_unpool_and_fractional_modules():
    x = randn(2, 3, 6, 8)
    out_t, idx_t = tnn.MaxPool2d(2, return_indices=True)(x)
    out_e, idx_e = nn.MaxPool2d(2, return_indices=True)(e(x))
    close(idx_e, idx_t)
    check(lambda a, i: tnn.MaxUnpool2d(2)(a, i, output_size=x.shape),
          lambda a, i: nn.MaxUnpool2d(2)(a, i, output_size=x.shape), out_t, idx_t)
    samples = torch.rand(2, 3, 2, generator=torch.Generator().manual_seed(1))
    check(lambda a: tnn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.6),
                                            _random_samples=samples)(a),
          lambda a: nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.6),
                                           _random_samples=e(samples))(a), x)
    with pytest.raises(ValueError):
        nn.FractionalMaxPool3d(2)


@pytest.mark.parametrize("name,make,shapes", [
    ("EmbeddingBag", lambda m: m.EmbeddingBag(10, 3, mode="max", padding_idx=2), None),
    ("MultiMarginLoss", lambda m: m.MultiMarginLoss(p=2, weight=torch.tensor(
        [1.0, 0.5, 2.0, 1.0]) if m is tnn else ember.tensor([1.0, 0.5, 2.0, 1.0])), None),
    ("MultiLabelMarginLoss", lambda m: m.MultiLabelMarginLoss(), None),
    ("TripletMarginWithDistanceLoss", lambda m: m.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: (a - b).abs().sum(-1), swap=True), None),
    ("CTCLoss", lambda m: m.CTCLoss(blank=4, reduction="sum"), None),
    ("LinearCrossEntropyLoss", lambda m: m.LinearCrossEntropyLoss(4, 5, bias=True), None),
])
def test_loss_and_bag_modules(name, make, shapes):
    torch.manual_seed(0)
    theirs = make(tnn)
    ours = load_from_torch(make(nn), theirs)
    inputs = {
        "EmbeddingBag": (torch.tensor([1, 2, 4, 5, 2, 3]), torch.tensor([0, 2, 3])),
        "MultiMarginLoss": (randn(5, 4), torch.tensor([0, 3, 1, 1, 2])),
        "MultiLabelMarginLoss": (randn(2, 4), torch.tensor([[3, 0, -1, 1], [2, -1, 0, 0]])),
        "TripletMarginWithDistanceLoss": (randn(4, 5), randn(4, 5, seed=1),
                                          randn(4, 5, seed=2)),
        "CTCLoss": (randn(8, 2, 5).log_softmax(2), torch.tensor([[0, 1, 1], [2, 3, 0]]),
                    torch.tensor([8, 6]), torch.tensor([3, 2])),
        "LinearCrossEntropyLoss": (randn(6, 4), torch.tensor([0, 4, 2, 1, 1, 3])),
    }[name]
    check(lambda *xs: theirs(*xs), lambda *xs: ours(*xs), *inputs)
    for (key, pt), (_, pe) in zip(theirs.named_parameters(), ours.named_parameters()):
        close(pe.grad, pt.grad, **GTOL)


def test_adaptive_log_softmax_with_loss():
    torch.manual_seed(0)
    theirs = tnn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3, 7], div_value=2.0,
                                            head_bias=True)
    ours = load_from_torch(nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3, 7], div_value=2.0,
                                                         head_bias=True), theirs)
    x, target = randn(6, 8), torch.tensor([0, 9, 4, 2, 7, 5])
    check(lambda a, t: tuple(theirs(a, t)), lambda a, t: tuple(ours(a, t)), x, target)
    for (_, pt), (_, pe) in zip(theirs.named_parameters(), ours.named_parameters()):
        close(pe.grad, pt.grad, **GTOL)
    close(ours.log_prob(e(x)), theirs.log_prob(x))
    close(ours.predict(e(x)), theirs.predict(x))
    check(lambda a, t: tuple(theirs(a, t)), lambda a, t: tuple(ours(a, t)), randn(8),
          torch.tensor(4))
    with pytest.raises(ValueError):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[7, 3])


LAZY = [
    ("LazyLinear", lambda m: m.LazyLinear(3), "Linear", (4, 5)),
    ("LazyConv1d", lambda m: m.LazyConv1d(4, 3, padding=1), "Conv1d", (2, 3, 7)),
    ("LazyConv2d", lambda m: m.LazyConv2d(4, 3, groups=1), "Conv2d", (2, 3, 5, 5)),
    ("LazyConv3d", lambda m: m.LazyConv3d(2, 2), "Conv3d", (1, 3, 3, 4, 3)),
    ("LazyConvTranspose1d", lambda m: m.LazyConvTranspose1d(2, 3, stride=2),
     "ConvTranspose1d", (2, 3, 4)),
    ("LazyConvTranspose2d", lambda m: m.LazyConvTranspose2d(2, 3), "ConvTranspose2d",
     (2, 4, 3, 3)),
    ("LazyConvTranspose3d", lambda m: m.LazyConvTranspose3d(2, 2, bias=False),
     "ConvTranspose3d", (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", lambda m: m.LazyBatchNorm1d(), "BatchNorm1d", (4, 3)),
    ("LazyBatchNorm2d", lambda m: m.LazyBatchNorm2d(momentum=None), "BatchNorm2d",
     (2, 3, 4, 4)),
    ("LazyBatchNorm3d", lambda m: m.LazyBatchNorm3d(affine=False), "BatchNorm3d",
     (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", lambda m: m.LazyInstanceNorm1d(affine=True), "InstanceNorm1d",
     (2, 3, 5)),
    ("LazyInstanceNorm2d", lambda m: m.LazyInstanceNorm2d(track_running_stats=True),
     "InstanceNorm2d", (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", lambda m: m.LazyInstanceNorm3d(), "InstanceNorm3d",
     (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("name,make,becomes,shape", LAZY, ids=[c[0] for c in LAZY])
def test_lazy_modules(name, make, becomes, shape):
    torch.manual_seed(0)
    theirs = make(tnn)
    ours = make(nn)
    assert ours.has_uninitialized_params()
    assert any(isinstance(p, nn.UninitializedParameter) for p in ours.parameters()) or \
        any(isinstance(b, nn.UninitializedBuffer) for b in ours.buffers())
    x = randn(*shape)
    theirs(x)                                     # materialise torch's, then copy its state
    ours(e(x))
    assert type(ours).__name__ == becomes and type(ours) is getattr(nn, becomes)
    assert not any(isinstance(p, nn.UninitializedParameter) for p in ours.parameters())
    assert [tuple(p.shape) for p in ours.parameters()] == \
        [tuple(p.shape) for p in theirs.parameters()]
    # a state dict materialises too (also in a deep copy); an uninitialized one does not
    fresh = load_from_torch(copy.deepcopy(make(nn)), theirs)
    assert not fresh.has_uninitialized_params()
    blank = make(nn)
    blank.load_state_dict(make(nn).state_dict())
    assert blank.has_uninitialized_params()
    fresh_t = make(tnn)
    fresh_t.load_state_dict(theirs.state_dict())
    x1 = randn(*shape, seed=1)
    try:
        expected = fresh_t(x1)
    except ValueError:
        # PyTorch's lazy instance norms keep num_features=0 after a state dict load
        with pytest.raises(ValueError):
            fresh(e(x1))
        return
    close(fresh(e(x1)), expected)


def test_sync_batchnorm_convert_and_fallback():
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(
        nn.BatchNorm1d(2)))
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], nn.SyncBatchNorm)
    assert isinstance(converted[2][0], nn.SyncBatchNorm)
    assert converted[1].weight is model[1].weight
    with pytest.raises(ValueError):
        nn.SyncBatchNorm(3)(ember.randn(3))


def test_container_nllloss2d_and_factory_kwargs():
    with pytest.warns(FutureWarning):
        c = nn.Container(a=nn.Linear(2, 2))
    assert list(dict(c.named_children())) == ["a"]
    with pytest.warns(FutureWarning):
        nn.NLLLoss2d()
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": ember.float64}}) \
        == {"device": "cpu", "dtype": ember.float64}
    with pytest.raises(TypeError):
        nn.factory_kwargs({"bogus": 1})
    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=4)
    assert opts.acc_policy == "auto"
    with pytest.raises(ValueError):
        nn.LinearCrossEntropyOptions(acc_policy="fast")


def test_upsample_modes_against_torch():
    x = randn(1, 2, 4, 5)
    for mode, ac in (("nearest", None), ("nearest-exact", None), ("bilinear", False),
                     ("bilinear", True), ("bicubic", False), ("bicubic", True), ("area", None)):
        for kw in (dict(scale_factor=1.5), dict(size=(3, 7)),
                   dict(scale_factor=(2.3, 0.7), recompute_scale_factor=True)):
            check(lambda a: tnn.Upsample(mode=mode, align_corners=ac, **kw)(a),
                  lambda a: nn.Upsample(mode=mode, align_corners=ac, **kw)(a), x,
                  tol=dict(rtol=1e-4, atol=1e-4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda a: TF.upsample_bilinear(a, scale_factor=2),
              lambda a: F.upsample_bilinear(a, scale_factor=2), x)
        check(lambda a: TF.upsample_nearest(a, size=(5, 5)),
              lambda a: F.upsample_nearest(a, size=(5, 5)), x)


@pytest.mark.skipif(not ember.distributed.is_available(), reason="mpi4py not installed")
def test_sync_batchnorm_over_two_ranks_matches_batchnorm_on_the_whole_batch():
    worker = os.path.join(os.path.dirname(__file__), "syncbn_worker.py")
    r = subprocess.run([sys.executable, "-m", "ember.distributed.run", "-n", "2", "--timeout",
                        "90", worker], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("syncbn ok") == 2, r.stdout + r.stderr


ERRORS = [
    ("pixel_shuffle_channels", lambda m, X: m.pixel_shuffle(X(torch.zeros(1, 5, 2, 2)), 2)),
    ("pixel_shuffle_dims", lambda m, X: m.pixel_shuffle(X(torch.zeros(4, 2)), 2)),
    ("pixel_unshuffle_height", lambda m, X: m.pixel_unshuffle(X(torch.zeros(1, 1, 3, 4)), 2)),
    ("channel_shuffle_groups", lambda m, X: m.channel_shuffle(X(torch.zeros(1, 5, 2)), 2)),
    ("channel_shuffle_dims", lambda m, X: m.channel_shuffle(X(torch.zeros(1, 4)), 2)),
    ("pdist_1d", lambda m, X: m.pdist(X(torch.zeros(4)))),
    ("multi_margin_p3", lambda m, X: m.multi_margin_loss(X(torch.zeros(2, 3)),
                                                         X(torch.tensor([0, 1])), p=3)),
    ("multi_margin_target", lambda m, X: m.multi_margin_loss(X(torch.zeros(2, 3)),
                                                             X(torch.tensor([0, 3])))),
    ("unpool_index", lambda m, X: m.max_unpool2d(X(torch.ones(1, 1, 2, 2)),
                                                 X(torch.tensor([[[[0, 1], [2, 99]]]])), 2)),
    ("grid_sample_batch", lambda m, X: m.grid_sample(X(torch.zeros(2, 1, 3, 3)),
                                                     X(torch.zeros(1, 2, 2, 2)),
                                                     align_corners=False)),
    ("grid_sample_mode", lambda m, X: m.grid_sample(X(torch.zeros(1, 1, 3, 3)),
                                                    X(torch.zeros(1, 2, 2, 2)), mode="area",
                                                    align_corners=False)),
    ("affine_grid_dtype", lambda m, X: m.affine_grid(X(torch.zeros(1, 2, 3, dtype=torch.int64)),
                                                     [1, 1, 2, 2], align_corners=False)),
    ("embedding_bag_3d", lambda m, X: m.embedding_bag(X(torch.zeros(1, 1, 1, dtype=torch.int64)),
                                                      X(torch.zeros(3, 2)))),
    ("embedding_bag_offsets", lambda m, X: m.embedding_bag(X(torch.zeros(3, dtype=torch.int64)),
                                                           X(torch.zeros(3, 2)))),
    ("embedding_bag_index", lambda m, X: m.embedding_bag(X(torch.tensor([5])),
                                                         X(torch.zeros(3, 2)),
                                                         X(torch.tensor([0])))),
    ("ctc_blank", lambda m, X: m.ctc_loss(X(torch.zeros(3, 1, 2)), X(torch.tensor([[1]])), [3],
                                          [1], blank=5)),
    ("ctc_input_length", lambda m, X: m.ctc_loss(X(torch.zeros(3, 1, 2)),
                                                 X(torch.tensor([[1]])), [4], [1])),
    ("fractional_no_size", lambda m, X: m.fractional_max_pool2d(X(torch.zeros(1, 1, 4, 4)), 2)),
    ("fractional_too_big", lambda m, X: m.fractional_max_pool2d(X(torch.zeros(1, 1, 4, 4)), 3,
                                                                output_size=3)),
    ("conv_transpose3d_weight", lambda m, X: m.conv_transpose3d(X(torch.zeros(1, 2, 3, 3, 3)),
                                                                X(torch.zeros(2, 2, 2, 2)))),
    ("conv_tbc_channels", lambda m, X: m.conv_tbc(X(torch.zeros(3, 2, 3)),
                                                  X(torch.zeros(2, 4, 5)), X(torch.zeros(5)))),
    ("triplet_dims", lambda m, X: m.triplet_margin_with_distance_loss(
        X(torch.zeros(2, 3)), X(torch.zeros(3)), X(torch.zeros(2, 3)))),
    ("gumbel_integer", lambda m, X: m.gumbel_softmax(X(torch.zeros(2, 3, dtype=torch.int64)))),
    ("reflect_pad_size", lambda m, X: m.pad(X(torch.zeros(1, 1, 3, 3)), (3, 0, 0, 0),
                                            mode="reflect")),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_input_raises_as_torch(name, call):
    with pytest.raises(Exception) as theirs:
        call(TF, lambda t: t)
    with pytest.raises(theirs.type):
        call(F, e)


EMPTY = [
    ("conv_transpose3d", lambda m, X: m.conv_transpose3d(X(torch.zeros(0, 2, 3, 3, 3)),
                                                         X(torch.zeros(2, 3, 2, 2, 2)))),
    ("max_unpool2d", lambda m, X: m.max_unpool2d(X(torch.zeros(0, 2, 2, 2)),
                                                 X(torch.zeros(0, 2, 2, 2, dtype=torch.int64)),
                                                 2)),
    ("grid_sample_batch", lambda m, X: m.grid_sample(X(torch.zeros(0, 2, 3, 3)),
                                                     X(torch.zeros(0, 2, 2, 2)),
                                                     align_corners=False)),
    ("grid_sample_points", lambda m, X: m.grid_sample(X(torch.ones(1, 2, 3, 3)),
                                                      X(torch.zeros(1, 0, 2, 2)),
                                                      align_corners=False)),
    ("embedding_bag_sum", lambda m, X: m.embedding_bag(X(torch.zeros(0, dtype=torch.int64)),
                                                       X(torch.ones(3, 2)),
                                                       X(torch.tensor([0, 0])))),
    ("embedding_bag_max", lambda m, X: m.embedding_bag(X(torch.zeros(0, dtype=torch.int64)),
                                                       X(torch.ones(3, 2)),
                                                       X(torch.tensor([0, 0])), mode="max")),
    ("pdist_one_row", lambda m, X: m.pdist(X(torch.ones(1, 3)))),
    ("lp_pool2d", lambda m, X: m.lp_pool2d(X(torch.zeros(0, 2, 4, 4)), 2, 2)),
    ("fractional_max_pool2d", lambda m, X: m.fractional_max_pool2d(
        X(torch.zeros(0, 2, 5, 5)), 2, output_size=2)),
    ("affine_grid", lambda m, X: m.affine_grid(X(torch.zeros(0, 2, 3)), [0, 1, 2, 2],
                                               align_corners=False)),
    ("ctc_loss", lambda m, X: m.ctc_loss(X(torch.zeros(0, 1, 3)),
                                         X(torch.zeros(1, 0, dtype=torch.int64)), [0], [0])),
    ("bicubic", lambda m, X: m.interpolate(X(torch.zeros(0, 2, 3, 3)), scale_factor=2,
                                           mode="bicubic")),
]


@pytest.mark.parametrize("name,call", EMPTY, ids=[c[0] for c in EMPTY])
def test_empty_inputs_as_torch(name, call):
    try:
        expected = call(TF, lambda t: t)
    except (RuntimeError, ValueError) as err:
        with pytest.raises(type(err)):
            call(F, e)
        return
    close(call(F, e), expected)
