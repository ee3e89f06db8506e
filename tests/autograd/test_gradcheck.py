"""Every differentiable op in the schema passes gradcheck (float64 finite differences).

Elementwise ops are checked from their definitions alone (``ember.<name>`` on inputs drawn
from the op's ``domain``); RECIPES gives a call for every other differentiable op, and for
elementwise ops whose generic call would sit on a kink (rounding, abs, max/min). A new
differentiable op without a recipe (or without a gradient formula) makes this file fail.
"""
import math

import numpy as np
import pytest

import ember
from ember.dispatcher.defs import spectral as SP
from ember.autograd import gradcheck, gradgradcheck
from ember.dispatcher import OPS
from ember.dispatcher.defs import conv as CV
from ember.dispatcher.defs import nn as NN
from ember.dispatcher.defs import rnn as RNN
from ember.dispatcher.schema import elementwise_ops

rng = np.random.default_rng(0)


def X(*shape, low=-1.0, high=1.0, requires_grad=True):
    t = ember.from_numpy(rng.uniform(low, high, shape))
    return t.requires_grad_(requires_grad)


def away_from_ties(*shape):
    """Distinct values well apart (for max/min/sort/round-like ops)."""
    n = int(np.prod(shape))
    vals = rng.permutation(n).astype(np.float64) * 0.37 + 0.05
    return ember.from_numpy(vals.reshape(shape)).requires_grad_()


IDX = ember.tensor([[0, 2, 1], [1, 0, 0]])
EYE3 = ember.eye(3, dtype=ember.float64)
F = ember.nn.functional
#: batch_norm's running mean and variance (inputs that do not require grad)
RUNNING = (X(3, requires_grad=False), X(3, low=0.5, high=2.0, requires_grad=False))

RECIPES = {
    # through float32 and back: finite differences need a step float32 can resolve
    "to": (lambda x: x.float().double() * 1 + x.to(ember.float64), [X(3)],
           dict(eps=1e-3, atol=1e-4, rtol=1e-3)),
    "copy": (lambda x: ember.zeros(2, 3, dtype=ember.float64).copy_(x) * 2, [X(3)]),
    "clone": (lambda x: x.clone() * 2, [X(3)]),
    "linear": (ember.nn.functional.linear, [X(2, 3, 4), X(5, 4), X(5)]),
    "floor": (lambda x: ember.floor(x) + x, [away_from_ties(4)]),
    "ceil": (lambda x: ember.ceil(x) + x, [away_from_ties(4)]),
    "round": (lambda x: ember.round(x) * 0 + x, [away_from_ties(4)]),
    "trunc": (lambda x: ember.trunc(x) + x, [away_from_ties(4)]),
    "sign": (lambda x: ember.sign(x) * x, [away_from_ties(4)]),
    "neg": (lambda x: -x, [X(4)]),
    "abs": (ember.abs, [away_from_ties(4)]),
    "add": (lambda a, b: a + b, [X(3, 1), X(1, 4)]),
    "sub": (lambda a, b: a - b, [X(3, 4), X(4)]),
    "mul": (lambda a, b: a * b, [X(3, 4), X(3, 1)]),
    "div": (lambda a, b: a / b, [X(3, 4), X(4, low=0.5, high=2)]),
    "pow": (lambda a, b: a ** b, [X(3, low=0.5, high=2), X(3)]),
    "maximum": (ember.maximum, [away_from_ties(5), away_from_ties(5)]),
    "minimum": (ember.minimum, [away_from_ties(5), away_from_ties(5)]),
    "fmod": (lambda a, b: ember.fmod(a, b), [X(5, low=0.1, high=0.9),
                                           X(5, low=1.1, high=2.0)]),
    "remainder": (lambda a, b: ember.remainder(a, b), [X(5, low=0.1, high=0.9),
                                                      X(5, low=1.1, high=2.0)]),
    "where": (lambda a, b: ember.where(ember.tensor([True, False, True]), a, b),
              [X(3), X(3)]),
    "addcmul": (lambda a, b, c: ember.addcmul(a, b, c, value=0.5), [X(3), X(3), X(3)]),
    "addcdiv": (lambda a, b, c: ember.addcdiv(a, b, c, value=0.5),
                [X(3), X(3), X(3, low=0.5, high=2)]),
    "clamp": (lambda x: ember.clamp(x, -0.5, 0.5), [away_from_ties(6) - 1.2]),
    "sum": (lambda x: x.sum(dim=(0, 2), keepdim=True), [X(2, 3, 4)]),
    "max": (lambda x: ember.amax(x, dim=1), [away_from_ties(3, 4)]),
    "min": (lambda x: ember.amin(x, dim=0), [away_from_ties(3, 4)]),
    "prod": (lambda x: x.prod(dim=1), [X(3, 4, low=0.5, high=1.5)]),
    "mean": (lambda x: x.mean(dim=-1), [X(3, 4)]),
    "logsumexp": (lambda x: ember.logsumexp(x, dim=1), [X(3, 4)]),
    "var": (lambda x: x.var(dim=1, correction=1), [X(3, 4)]),
    "cumsum": (lambda x: ember.cumsum(x, 1), [X(3, 4)]),
    "cumprod": (lambda x: ember.cumprod(x, 1), [X(3, 4, low=0.5, high=1.5)]),
    "sort": (lambda x: ember.sort(x, dim=1).values, [away_from_ties(3, 4)]),
    "softmax": (lambda x: ember.softmax(x, dim=1), [X(3, 4)]),
    "_safe_softmax": (lambda x: ember.dispatcher.ops.softmax_op(
        "_safe_softmax", ember.where(ember.tensor([[True], [False], [False]]), -math.inf, x),
        1), [X(3, 4)]),
    "log_softmax": (lambda x: ember.log_softmax(x, dim=0), [X(3, 4)]),
    "gather": (lambda x: ember.gather(x, 1, IDX), [X(2, 3)]),
    "scatter": (lambda x, s: ember.scatter_add(x, 1, IDX, s), [X(2, 3), X(2, 3)]),
    "bmm": (ember.bmm, [X(2, 3, 4), X(2, 4, 5)]),
    "mm": (ember.mm, [X(3, 4), X(4, 2)]),
    "matmul": (ember.matmul, [X(2, 1, 3, 4), X(3, 4, 2)]),
    "mv": (ember.mv, [X(3, 4), X(4)]),
    "dot": (ember.dot, [X(4), X(4)]),
    "outer": (ember.outer, [X(3), X(4)]),
    "addmm": (lambda a, b, c: ember.addmm(a, b, c, beta=0.5, alpha=2.0),
              [X(3, 2), X(3, 4), X(4, 2)]),
    "einsum": (lambda a, b: ember.einsum("bij,bjk->bik", a, b)
               + ember.einsum("bii->b", a[:, :, :3])[:, None, None],
               [X(2, 3, 4), X(2, 4, 2)]),
    "cat": (lambda a, b: ember.cat([a, b], 1), [X(2, 3), X(2, 2)]),
    "stack": (lambda a, b: ember.stack([a, b], 0), [X(2, 3), X(2, 3)]),
    "flip": (lambda x: ember.flip(x, (0, 1)), [X(2, 3)]),
    "roll": (lambda x: ember.roll(x, (1, -1), (0, 1)), [X(3, 4)]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [X(2, 2)]),
    "tril": (lambda x: ember.tril(x, -1), [X(3, 4)]),
    "triu": (lambda x: ember.triu(x, 1), [X(3, 4)]),
    "index_select": (lambda x: ember.index_select(x, 0, ember.tensor([2, 0, 2])), [X(3, 2)]),
    "index_add": (lambda x, s: ember.index_add(x, 0, ember.tensor([0, 2, 0]), s, alpha=2.0),
                  [X(3, 2), X(3, 2)]),
    "masked_fill": (lambda x: ember.masked_fill(x, x > 0.3, 2.0) * x,
                    [X(3, 4)]),
    "index": (lambda x: x[ember.tensor([0, 2, 2]), 1:] + x[x > 0.2].sum(), [X(3, 4)]),
    "index_put": (lambda x, v: x.index_put((ember.tensor([0, 2]),), v), [X(3, 2), X(2, 2)]),
    "topk": (lambda x: ember.topk(x, 2, dim=1).values, [away_from_ties(3, 4)]),
    "std": (lambda x: x.std(dim=0), [X(3, 4)]),
    "norm": (lambda x: ember.norm(x, p=2, dim=1) + ember.norm(x, p=1) + ember.norm(x, p=3),
             [X(3, 4)]),
    # the convolution building blocks, reached through nn.functional
    "im2col": (lambda x: ember.nn.functional.unfold(x, (2, 3), dilation=(1, 2), padding=1,
                                                    stride=(2, 1)), [X(2, 2, 5, 6)]),
    "col2im": (lambda c: ember.nn.functional.fold(c, (5, 6), (2, 3), dilation=(1, 2),
                                                  padding=1, stride=(2, 1)), [X(2, 12, 12)]),
    "max_pool": (lambda x: ember.nn.functional.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
                 [away_from_ties(2, 2, 6, 7)]),
    "convolution": (lambda x, w, b, wt: ember.nn.functional.conv2d(x, w, b, stride=(2, 1),
                                                                   padding=1, groups=2)
                    + ember.nn.functional.conv_transpose2d(x, wt, stride=2)[:, :, :2, :5],
                    [X(2, 4, 3, 4), X(6, 2, 3, 2), X(6), X(4, 6, 2, 2)]),
    # depthwise convolution (groups = channels) and its two adjoints, which its gradient
    # formulas chain (so second order too: test_conv_second_order)
    "depthwise_conv": (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1,
                                                dilation=(1, 2), groups=3),
                       [X(2, 3, 5, 6), X(3, 1, 3, 2), X(3)]),
    "depthwise_conv_input": (lambda g, w: CV.depthwise_conv_input(
        g, w, (3, 3), (1, 1), (1, 1), (2, 2), (6, 6)), [X(2, 3, 3, 3), X(3, 1, 3, 3)]),
    "depthwise_conv_weight": (lambda g, x: CV.depthwise_conv_weight(
        g, x, (3, 3), (1, 1), (1, 1), (2, 2)), [X(2, 3, 3, 3), X(2, 3, 6, 6)]),
    # dense (grouped) convolution and its two adjoints (second order: test_conv_second_order)
    "dense_conv": (lambda x, w: F.conv2d(x, w, None, stride=(2, 1), padding=1,
                                         dilation=(1, 2), groups=2),
                   [X(2, 4, 5, 6), X(4, 2, 3, 2)]),
    "dense_conv_input": (lambda g, w: CV.dense_conv_input(
        g, w, (3, 3), (1, 1), (1, 1), (2, 2), (6, 6), 2), [X(2, 4, 3, 3), X(4, 1, 3, 3)]),
    "dense_conv_weight": (lambda g, x: CV.dense_conv_weight(
        g, x, (3, 3), (1, 1), (1, 1), (2, 2)), [X(2, 3, 3, 3), X(2, 2, 6, 6)]),
    # the LSTM cell's gate math (its backward differentiated through its composite)
    "lstm_cell": (lambda gates, c: RNN.lstm_cell(gates, c), [X(3, 8), X(3, 2)]),
    "lstm_cell_backward": (lambda g, gates, c: RNN.lstm_cell_backward_of(g, gates, c),
                           [X(2, 3, 2), X(3, 8), X(3, 2)]),
    # an LSTM layer's time loop, both directions (its backward through its composite)
    "lstm_layer": (lambda gi, w, h, c: (RNN.lstm_layer(gi, w, h, c),
                                        RNN.lstm_layer(gi, w, h, c, True)),
                   [X(3, 2, 8), X(8, 2), X(2, 2), X(2, 2)]),
    "lstm_layer_backward": (lambda g, gi, w, h, c: RNN.lstm_layer_backward_of(g, gi, w, h, c,
                                                                              True),
                            [X(2, 3, 2, 2), X(3, 2, 8), X(8, 2), X(2, 2), X(2, 2)]),
    # a GRU layer's time loop, both directions
    "gru_layer": (lambda gi, w, b, h: (RNN.gru_layer(gi, w, b, h),
                                       RNN.gru_layer(gi, w, b, h, True)),
                  [X(3, 2, 6), X(6, 2), X(6), X(2, 2)]),
    "gru_layer_backward": (lambda g, gi, w, b, h: RNN.gru_layer_backward_of(g, gi, w, b, h,
                                                                            True),
                           [X(3, 2, 2), X(3, 2, 6), X(6, 2), X(6), X(2, 2)]),
    # the nn ops, differentiated through their composites
    "avg_pool": (lambda x: (F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True,
                                         count_include_pad=False),
                            F.avg_pool2d(x, (2, 3), 2, divisor_override=5),
                            F.avg_pool1d(x[0], 2, 1, padding=1)), [X(2, 2, 5, 6)]),
    "adaptive_avg_pool": (lambda x, y, z: (F.adaptive_avg_pool2d(x, (3, 2)),
                                           F.adaptive_avg_pool2d(y, (4, 3)),
                                           F.adaptive_avg_pool1d(z, 3)),
                          [X(2, 2, 6, 4), X(2, 2, 6, 4), X(2, 3, 5)]),
    "adaptive_max_pool": (lambda x: (F.adaptive_max_pool2d(x, (3, 5)),
                                     F.adaptive_max_pool2d(x, (4, 3))),
                          [away_from_ties(2, 2, 6, 5)]),
    "batch_norm": (lambda x, w, b: (F.batch_norm(x, RUNNING[0].clone(), RUNNING[1].clone(),
                                                 w, b, training=True, momentum=0.2),
                                    F.batch_norm(x, *RUNNING, w, b, eps=1e-3)),
                   [X(4, 3, 2), X(3), X(3)]),
    # relu / hardtanh (inputs away from the kinks) and their backward (linear in grad)
    "relu": (lambda x: F.relu(x), [away_from_ties(3, 4)]),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.5), [away_from_ties(3, 4)]),
    "threshold_backward": (lambda g, x: NN.threshold_backward(g, x.detach(), 0.2),
                           [X(3, 4), X(3, 4)]),
    "hardtanh_backward": (lambda g, x: NN.hardtanh_backward(g, x.detach(), -0.5, 0.5),
                          [X(3, 4), X(3, 4)]),
    # tanh's and sigmoid's gradients from their outputs (both inputs differentiable)
    "tanh_backward": (lambda g, y: ember.dispatcher.ops.elementwise("tanh_backward", g, y),
                      [X(3, 4), X(3, 4)]),
    "sigmoid_backward": (lambda g, y: ember.dispatcher.ops.elementwise("sigmoid_backward",
                                                                       g, y), [X(3, 4), X(4)]),
    # GELU (both forms) and its gradient (both inputs differentiable: double backward)
    "gelu": (lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")), [X(3, 4, low=-3, high=3)]),
    "gelu_backward": (lambda g, x: (
        ember.dispatcher.ops.elementwise("gelu_backward", g, x),
        ember.dispatcher.ops.elementwise("gelu_backward", g, x, approximate="tanh")),
        [X(3, 4), X(3, 4, low=-3, high=3)]),
    "batch_norm_inference": (lambda x, w, b, m, v: NN.batch_norm_inference(x, w, b, m, v, 1e-3),
                             [X(4, 3, 2), X(3), X(3), X(3), X(3, low=0.5, high=2.0)]),
    "batch_norm_train": (lambda x, w, b: NN.batch_norm_train(x, w, b, 1e-5)[0],
                         [X(4, 3, 2), X(3), X(3)]),
    "batch_norm_train_backward": (
        lambda g, x, w: NN.batch_norm_train_backward(g, x, w, x.mean((0, 2)),
                                                     x.var((0, 2), correction=0), 1e-3),
        [X(4, 3, 2), X(4, 3, 2), X(3)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
                   [X(2, 3, 4), X(3, 4), X(3, 4)]),
    "layer_norm_backward": (lambda g, x, w: NN.layer_norm_backward(g, x, w, (3, 4), 1e-3),
                            [X(2, 3, 4), X(2, 3, 4), X(3, 4)]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [X(2, 4, 3), X(4), X(4)]),
    # padding_idx and scale_grad_by_freq change the gradient on purpose: here they may not
    "embedding": (lambda w: (F.embedding(ember.tensor([[1, 2, 1], [4, 3, 1]]), w,
                                         padding_idx=0),
                             F.embedding(ember.tensor([3, 2, 1, 0]), w,
                                         scale_grad_by_freq=True)), [X(5, 3)]),
    "nll_loss": (lambda x, w: (F.nll_loss(x, ember.tensor([[0, 3], [2, 1]]), w,
                                          ignore_index=2),
                               F.nll_loss(x[:, :, 0], ember.tensor([1, 3]), reduction="none")),
                 [X(2, 4, 2), X(4, low=0.5, high=2.0)]),
    # probabilities away from the clamps; the target is differentiable too
    "binary_cross_entropy": (
        lambda x, t: (F.binary_cross_entropy(x, t), F.binary_cross_entropy(
            x, t, ember.tensor([[0.5], [2.0], [1.5]], dtype=ember.float64), reduction="sum")),
        [X(3, 4, low=0.1, high=0.9), X(3, 4, low=0.0, high=1.0)]),
    "cross_entropy_indices": (
        lambda x, y: (NN.cross_entropy_indices(x, ember.tensor([1, 0, 3]), ignore_index=0),
                      NN.cross_entropy_indices(y, ember.tensor([[0, 3], [2, 1]]),
                                               ember.tensor([0.5, 1.0, 2.0, 1.5]),
                                               reduction="none")),
        [X(3, 4), X(2, 4, 2)]),
    "cross_entropy": (lambda x, w, p: (F.cross_entropy(x, ember.tensor([1, 0, 3]), w,
                                                       ignore_index=0, label_smoothing=0.1),
                                       F.cross_entropy(x, p, reduction="none",
                                                       label_smoothing=0.2)),
                      [X(3, 4), X(4, low=0.5, high=2.0), X(3, 4, low=0.0, high=1.0)]),
    "scaled_dot_product_attention": (
        lambda q, k, v, m, q1, k1, v1, q2, k2, v2: (
            F.scaled_dot_product_attention(q, k, v, m, scale=0.7),
            F.scaled_dot_product_attention(q1, k1, v1, is_causal=True),
            F.scaled_dot_product_attention(q2, k2, v2, enable_gqa=True)),
        [X(2, 2, 3, 4), X(2, 2, 5, 4), X(2, 2, 5, 3), X(3, 5),
         X(2, 3, 4), X(2, 5, 4), X(2, 5, 3),
         X(2, 2, 3, 4), X(2, 1, 5, 4), X(2, 1, 5, 3)]),
    # reductions, scans, statistics
    "cummax": (lambda x: ember.cummax(x, 1).values, [away_from_ties(3, 4)]),
    "cummin": (lambda x: ember.cummin(x, 0).values, [away_from_ties(3, 4)]),
    "logcumsumexp": (lambda x: ember.logcumsumexp(x, 1), [X(3, 4)]),
    "median": (lambda x: ember.median(x), [away_from_ties(3, 4)]),
    "nanmedian": (lambda x: ember.nanmedian(x), [away_from_ties(3, 4)]),
    "median_dim": (lambda x: ember.median(x, 1).values, [away_from_ties(3, 4)]),
    "nanmedian_dim": (lambda x: ember.nanmedian(x, 0, keepdim=True).values,
                      [away_from_ties(3, 4)]),
    "kthvalue": (lambda x: ember.kthvalue(x, 2, 1).values, [away_from_ties(3, 4)]),
    "mode": (lambda x: ember.mode(x, 1).values, [away_from_ties(3, 4)]),
    "quantile": (lambda x: ember.quantile(x, ember.tensor([0.25, 0.6], dtype=ember.float64),
                                          1), [away_from_ties(3, 4)]),
    "nanquantile": (lambda x: ember.nanquantile(x, 0.4, 0, interpolation="midpoint"),
                    [away_from_ties(3, 4)]),
    "aminmax": (lambda x: ember.aminmax(x, dim=1).max, [away_from_ties(3, 4)]),
    "cdist": (lambda a, b: ember.cdist(a, b), [X(3, 2), X(4, 2)]),
    "dist": (lambda a, b: ember.dist(a, b, 3), [X(3, 4), X(4)]),
    "diff": (lambda x: ember.diff(x, 2, 1), [X(3, 5)]),
    "trace": (lambda x: ember.trace(x), [X(3, 4)]),
    "cov": (lambda x: ember.cov(x), [X(3, 5)]),
    "corrcoef": (lambda x: ember.corrcoef(x), [X(3, 5)]),
    "renorm": (lambda x: ember.renorm(x, 2, 0, 0.5), [X(3, 4)]),
    "trapezoid": (lambda y, x: ember.trapezoid(y, x), [X(3, 4), X(4)]),
    "cumulative_trapezoid": (lambda y: ember.cumulative_trapezoid(y, dx=0.5), [X(3, 4)]),
    "gradient": (lambda x: ember.gradient(x, edge_order=2)[1], [X(3, 4)]),
    "scatter_reduce": (lambda x, s: ember.scatter_reduce(
        x, 1, ember.tensor([[0, 2, 1, 2], [1, 0, 0, 2]]), s, "prod"), [X(2, 3), X(2, 4)]),
    "index_reduce": (lambda x, s: ember.index_reduce(x, 0, ember.tensor([0, 2, 0]), s, "amax"),
                     [away_from_ties(3, 2), away_from_ties(3, 2) + 0.1]),
    # shape and index ops
    "repeat_interleave": (lambda x: (ember.repeat_interleave(x, ember.tensor([1, 0, 2]), 0),
                                     x.repeat_interleave(2)), [X(3, 2)]),
    "diag": (lambda v, m: (ember.diag(v, 1), ember.diag(m, -1)), [X(3), X(3, 4)]),
    "diag_embed": (lambda x: ember.diag_embed(x, -1, 0, 2), [X(2, 3)]),
    "diagonal_scatter": (lambda x, s: ember.diagonal_scatter(x, s, 1), [X(3, 4), X(3)]),
    "select_scatter": (lambda x, s: ember.select_scatter(x, s, 1, -1), [X(2, 3, 4), X(2, 4)]),
    "slice_scatter": (lambda x, s: ember.slice_scatter(x, s, 0, 1, 5, 2), [X(5, 3), X(2, 3)]),
    "as_strided_scatter": (lambda x, s: ember.as_strided_scatter(x, s, (2, 2), (1, 2), 1),
                           [X(3, 4), X(2, 2)]),
    "index_copy": (lambda x, s: ember.index_copy(x, 0, ember.tensor([2, 0]), s),
                   [X(3, 2), X(2, 2)]),
    "index_fill": (lambda x: ember.index_fill(x, 1, ember.tensor([0, 2]), -1.0), [X(2, 3)]),
    "masked_scatter": (lambda x, s: ember.masked_scatter(
        x, ember.tensor([[True, False, True], [False, True, True]]), s), [X(2, 3), X(5)]),
    "put": (lambda x, s: (ember.put(x, ember.tensor([4, 0, 2]), s),
                          ember.put(x, ember.tensor([1, 1, 5]), s, accumulate=True)),
            [X(2, 3), X(3)]),
    "take_along_dim": (lambda x: ember.take_along_dim(x, ember.tensor([[0, 2], [1, 1]]), 1),
                       [X(2, 3)]),
    "rot90": (lambda x: (ember.rot90(x), ember.rot90(x, -1, (1, 0))), [X(2, 3)]),
    "kron": (ember.kron, [X(2, 3), X(3, 2)]),
    "block_diag": (lambda a, b: ember.block_diag(a, b), [X(2, 3), X(2)]),
    "cartesian_prod": (lambda a, b: ember.cartesian_prod(a, b), [X(3), X(2)]),
    "combinations": (lambda x: (ember.combinations(x), ember.combinations(
        x, 2, with_replacement=True)), [X(4)]),
    "vander": (lambda x: ember.vander(x, 4, increasing=True), [X(3)]),
    "tensordot": (lambda a, b: ember.tensordot(a, b, ([0, 2], [1, 0])), [X(2, 3, 4), X(4, 2)]),
    # linear algebra (well-conditioned inputs: diagonally dominant, positive definite)
    "linalg_det": (ember.linalg.det, [X(3, 3)]),
    "linalg_slogdet_packed": (lambda a: ember.linalg.slogdet(a).logabsdet, [X(2, 3, 3)]),
    "linalg_inv": (lambda a: ember.linalg.inv(a + 4 * EYE3), [X(3, 3)]),
    "linalg_solve": (lambda a, b: (ember.linalg.solve(a + 4 * EYE3, b),
                                   ember.linalg.solve(a + 4 * EYE3, b.mT, left=False)),
                     [X(3, 3), X(3, 2)]),
    "linalg_solve_triangular": (lambda a, b: (
        ember.linalg.solve_triangular(a + 4 * EYE3, b, upper=True),
        ember.linalg.solve_triangular(a + 4 * EYE3, b.mT, upper=False, left=False,
                                      unitriangular=True)), [X(3, 3), X(3, 2)]),
    "linalg_cholesky": (lambda a: ember.linalg.cholesky(a @ a.mT + 3 * EYE3, upper=True),
                        [X(3, 3)]),
    "linalg_qr_packed": (lambda a: ember.linalg.qr(a), [X(4, 3)]),
    "linalg_svd_packed": (lambda a: (ember.linalg.svd(a, full_matrices=False).S,
                                     ember.linalg.svd(a, full_matrices=False).U.abs().sum()),
                          [X(4, 3)]),
    "linalg_svdvals": (ember.linalg.svdvals, [X(3, 4)]),
    "linalg_eigh_packed": (lambda a: (ember.linalg.eigh(a + a.mT).eigenvalues,
                                      ember.linalg.eigh(a + a.mT).eigenvectors.abs()),
                           [X(3, 3)]),
    "linalg_eigvalsh": (lambda a: ember.linalg.eigvalsh(a + a.mT, "U"), [X(3, 3)]),
    "linalg_pinv": (ember.linalg.pinv, [X(4, 3)]),
    "linalg_lstsq_solution": (lambda a, b: ember.linalg.lstsq(a, b).solution,
                              [X(5, 3), X(5, 2)]),
    "linalg_matrix_exp": (ember.linalg.matrix_exp, [X(3, 3)]),
}

def _generic_recipe(o):
    """``ember.<name>`` on float64 inputs from the op's domain, the later inputs broadcast."""
    low, high = o.domain or (-1.0, 1.0)
    shapes = [(3, 4), (4,), (3, 1)][:len(o.inputs)]
    if o.name.startswith("special_"):   # (ember.special.<name>)
        return getattr(ember.special, o.name[len("special_"):]), [
            X(*s, low=low, high=high) for s in shapes]
    return getattr(ember, o.name), [X(*s, low=low, high=high) for s in shapes]


RECIPES["polygamma"] = (lambda x, y: (ember.polygamma(1, x), ember.polygamma(3, y)),
                       [X(3, 4, low=0.5, high=3.0), X(4, low=0.5, high=3.0)])
RECIPES["special_zeta"] = (lambda q: ember.special.zeta(2.5, q), [X(3, 4, low=0.5, high=3.0)])
# (no derivative in a, in PyTorch either: a held constant)
_A = X(3, 4, low=0.5, high=3.0, requires_grad=False)
# the DFT of real pairs (its kernel on cpu, the composite elsewhere), both signs, a length
# that splits (12) and one that goes through Bluestein's algorithm (67)
RECIPES["fft_pairs"] = (lambda a, b: (SP.fft_pairs(a, -1), SP.fft_pairs(b, 1)),
                        [X(2, 12, 2), X(67, 2)])
RECIPES["rfft_real"] = (lambda a, b: (SP.rfft_real(a), SP.rfft_real(b)), [X(2, 12), X(2, 9)])
RECIPES["igamma"] = (lambda x: ember.igamma(_A, x), [X(3, 4, low=0.5, high=3.0)])
RECIPES["igammac"] = (lambda x: ember.igammac(_A, x), [X(3, 4, low=0.5, high=3.0)])
for _o in elementwise_ops():
    if _o.differentiable and _o.name not in RECIPES:
        RECIPES[_o.name] = _generic_recipe(_o)

DIFFERENTIABLE = sorted(n for n, o in OPS.items() if o.differentiable)
COMPOSITE_ONLY = {n for n, o in OPS.items() if o.kernel == "(composite only)"}
#: ops of these kinds run through ops.composite_op: under autograd their composite runs
#: and records itself (a native kernel serves calls that need no gradient)
THROUGH_COMPOSITE = {n for n, o in OPS.items()
                     if o.kind in ("conv", "pool", "norm", "embedding", "loss", "attention")}


def test_every_differentiable_op_has_a_recipe_and_a_formula():
    assert sorted(set(DIFFERENTIABLE) - set(RECIPES)) == []
    needs_formula = [n for n in DIFFERENTIABLE
                     if n not in COMPOSITE_ONLY and n not in THROUGH_COMPOSITE]
    assert sorted(n for n in needs_formula if OPS[n].grad is None) == []


def test_only_differentiable_ops_have_formulas():
    assert sorted(n for n, o in OPS.items() if o.grad is not None and not o.differentiable) \
        == []


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradcheck(name):
    fn, inputs, *opts = RECIPES[name]
    kw = dict(eps=1e-6, atol=1e-6, rtol=1e-4)
    kw.update(*opts)
    assert gradcheck(fn, inputs, **kw)


VIEWS = {
    "view": (lambda x: x.view(4, 3), [X(2, 6)]),
    "transpose": (lambda x: x.transpose(0, 2) * 2, [X(2, 3, 4)]),
    "permute": (lambda x: x.permute(2, 0, 1), [X(2, 3, 4)]),
    "expand": (lambda x: x.expand(3, 2, 4), [X(2, 1)]),
    "narrow": (lambda x: x.narrow(1, 1, 2), [X(3, 4)]),
    "select": (lambda x: x.select(0, 1), [X(3, 4)]),
    "getitem": (lambda x: x[1:, ::2, None, 0], [X(3, 4, 2)]),
    "unfold": (lambda x: x.unfold(1, 3, 1), [X(2, 5)]),
    "diagonal": (lambda x: x.diagonal(1), [X(3, 4)]),
    "as_strided": (lambda x: x.as_strided((3, 3), (1, 1)), [X(6)]),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(0).squeeze(2), [X(3, 1, 2)]),
    "reshape_noncontig": (lambda x: x.t().reshape(-1), [X(3, 4)]),
    "split": (lambda x: x.split([1, 3], 1)[1] * 2, [X(2, 4)]),
    "chunk_unbind": (lambda x: x.chunk(2, 0)[1] + x.unbind(0)[0], [X(2, 3)]),
    "flatten": (lambda x: x.flatten(1), [X(2, 3, 2)]),
    "movedim": (lambda x: x.movedim(0, 2), [X(2, 3, 4)]),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_gradcheck_views(name):
    fn, inputs = VIEWS[name]
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name", ["depthwise_conv", "depthwise_conv_input",
                                  "depthwise_conv_weight", "dense_conv", "dense_conv_input",
                                  "dense_conv_weight"])
def test_conv_second_order(name):
    fn, inputs = RECIPES[name]
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", ["exp", "mul", "tanh", "sigmoid", "softmax", "matmul",
                                  "logsumexp", "div", "pow", "sqrt", "log_softmax", "var",
                                  "binary_cross_entropy"])
def test_second_order(name):
    fn, inputs, *_ = RECIPES[name]
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
