"""Loss modules (``reduction`` = 'mean' | 'sum' | 'none'), wrappers over
``nn.functional``. ``weight`` / ``pos_weight`` are registered as buffers, as in PyTorch.

>>> import ember, ember.nn as nn
>>> loss = nn.CrossEntropyLoss(label_smoothing=0.1)
>>> loss(ember.randn(4, 3), ember.tensor([0, 2, 1, 0])).shape
ember.Size([])
"""
from __future__ import annotations

import math

from ember import Tensor

from .. import functional as F
from .linear import Linear
from .module import Module
from ember.dispatcher.warn import warn as _warn

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "TripletMarginLoss", "MultiLabelSoftMarginLoss", "NLLLoss2d", "MultiLabelMarginLoss",
           "MultiMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
           "LinearCrossEntropyLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = F._legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.weight: Tensor | None


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss: squared error for small differences, absolute error for large ones.

    With ``d = |input - target|`` each element contributes ``0.5 * d^2 / beta`` where
    ``d < beta`` and ``d - 0.5 * beta`` elsewhere. It is less sensitive to outliers than
    ``MSELoss``; ``beta = 0`` makes it ``L1Loss``, and ``HuberLoss(delta=b)`` is ``b``
    times ``SmoothL1Loss(beta=b)``.

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'`` of the
            element losses. Default: ``'mean'``.
        beta (float): where the quadratic part turns linear; non-negative. Default: 1.0.

    Shape:
        - Input: (*), any number of dimensions.
        - Target: (*), the shape of the input.
        - Output: a scalar, or (*) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.SmoothL1Loss()
        >>> loss(ember.tensor([0.0, 2.0]), ember.tensor([0.5, 0.0]))
        tensor(0.8125)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss: squared error for small differences, scaled absolute error for large ones.

    With ``d = |input - target|`` each element contributes ``0.5 * d^2`` where
    ``d < delta`` and ``delta * (d - 0.5 * delta)`` elsewhere. Unlike ``SmoothL1Loss`` the
    linear part has slope ``delta`` rather than 1.

    Args:
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'`` of the
            element losses. Default: ``'mean'``.
        delta (float): where the quadratic part turns linear; positive. Default: 1.0.

    Shape:
        - Input: (*), any number of dimensions.
        - Target: (*), the shape of the input.
        - Output: a scalar, or (*) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.HuberLoss(delta=0.5, reduction="none")
        >>> loss(ember.tensor([0.0, 2.0]), ember.tensor([0.25, 0.0]))
        tensor([0.0312, 0.8750])
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities at the target classes."""

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """``log_softmax`` + ``nll_loss``; targets are class indices or class probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy in one numerically stable step."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight: Tensor | None = None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """Pointwise KL divergence; ``input`` is log-probabilities."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss for targets of 1 or -1.

    Each element contributes ``log(1 + exp(-target * input))``.

    Args:
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'`` of the
            element losses. Default: ``'mean'``.

    Shape:
        - Input: (*), any number of dimensions.
        - Target: (*), the shape of the input, values 1 or -1.
        - Output: a scalar, or (*) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.SoftMarginLoss()
        >>> loss(ember.tensor([0.0, 2.0]), ember.tensor([1.0, -1.0]))
        tensor(1.4100)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """Ranking loss: asks ``input1`` to rank above ``input2`` (``target = 1``) or below it
    (``target = -1``) by at least ``margin``.

    Each element contributes ``max(0, -target * (input1 - input2) + margin)``.

    Args:
        margin (float): the required gap. Default: 0.0.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per pair), ``'mean'`` or ``'sum'`` of the
            pair losses. Default: ``'mean'``.

    Shape:
        - Input1: (N) or ().
        - Input2: the shape of ``input1``.
        - Target: the shape of ``input1``, values 1 or -1.
        - Output: a scalar, or (N) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.MarginRankingLoss(margin=0.5)
        >>> x1, x2 = ember.tensor([1.0, 2.0]), ember.tensor([2.0, 1.0])
        >>> loss(x1, x2, ember.tensor([1.0, 1.0]))
        tensor(0.7500)
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge loss on distances: small for similar pairs (``target = 1``), at least
    ``margin`` for dissimilar ones (``target = -1``).

    ``input`` is usually a distance between two embeddings. Each element contributes
    ``input`` where the target is 1 and ``max(0, margin - input)`` where it is -1.

    Args:
        margin (float): the distance dissimilar pairs should reach. Default: 1.0.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'`` of the
            element losses. Default: ``'mean'``.

    Shape:
        - Input: (*), any number of dimensions.
        - Target: (*), the shape of the input, values 1 or -1.
        - Output: a scalar, or (*) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.HingeEmbeddingLoss()
        >>> loss(ember.tensor([0.25, 0.5]), ember.tensor([1.0, -1.0]))
        tensor(0.3750)
    """

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine-similarity loss for pairs of vectors labelled similar (1) or dissimilar (-1).

    With ``cos`` the cosine similarity of ``input1`` and ``input2`` along the last
    dimension, a pair contributes ``1 - cos`` when the target is 1 and
    ``max(0, cos - margin)`` when it is -1.

    Args:
        margin (float): the similarity below which dissimilar pairs cost nothing; between
            -1 and 1, 0 to 0.5 suggested. Default: 0.0.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per pair), ``'mean'`` or ``'sum'`` of the
            pair losses. Default: ``'mean'``.

    Shape:
        - Input1: (N, D) or (D).
        - Input2: the shape of ``input1``.
        - Target: (N) or (), values 1 or -1.
        - Output: a scalar, or (N) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.CosineEmbeddingLoss(reduction="none")
        >>> x1 = ember.tensor([[1.0, 0.0], [1.0, 0.0]])
        >>> x2 = ember.tensor([[0.0, 1.0], [1.0, 1.0]])
        >>> loss(x1, x2, ember.tensor([1.0, -1.0]))
        tensor([1.0000, 0.7071])
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log likelihood of a Poisson-distributed target.

    With ``log_input=True`` the input is the log of the rate and an element contributes
    ``exp(input) - target * input``; otherwise the input is the rate itself and it
    contributes ``input - target * log(input + eps)``. The constant ``log(target!)`` is left
    out unless ``full``, which adds its Stirling approximation
    ``target * log(target) - target + 0.5 * log(2 * pi * target)`` where ``target > 1``.

    Args:
        log_input (bool): the input is the log-rate. Default: True.
        full (bool): add the Stirling term. Default: False.
        size_average (bool, optional): deprecated, use ``reduction``.
        eps (float): keeps ``log`` finite when ``log_input=False``. Default: 1e-8.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'`` of the
            element losses. Default: ``'mean'``.

    Shape:
        - Input: (*), any number of dimensions.
        - Target: (*), the shape of the input.
        - Output: a scalar, or (*) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.PoissonNLLLoss()
        >>> loss(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 2.0]))
        tensor(0.8591)
    """

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log likelihood of the target under a Gaussian with a predicted mean and
    variance.

    ``forward(input, target, var)``: ``input`` is the mean and ``var`` the variance. Each
    element contributes ``0.5 * (log(v) + (input - target)^2 / v)`` with
    ``v = max(var, eps)``; ``full`` adds the constant ``0.5 * log(2 * pi)``. The clamp to
    ``eps`` does not stop gradients from reaching ``var``.

    Args:
        full (bool): add the constant term. Default: False.
        eps (float): the smallest variance used. Default: 1e-6.
        reduction (str): ``'none'`` (one loss per element), ``'mean'`` or ``'sum'`` of the
            element losses. Default: ``'mean'``.

    Shape:
        - Input: (N, *) or (*).
        - Target: the shape of the input, or that shape with one dimension of size 1
          (broadcast).
        - Var: the shape of the input, or with its last dimension of size 1 or left out
          (one variance shared across that dimension).
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.GaussianNLLLoss(reduction="none")
        >>> mean, target = ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0])
        >>> loss(mean, target, ember.tensor([1.0, 2.0]))
        tensor([0.0000, 1.3466])
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss: the anchor should be closer to the positive than to the negative by
    ``margin``.

    Per sample ``max(d(a, p) - d(a, n) + margin, 0)``, with ``d(x, y) = ||x - y + eps||_p``
    (``F.pairwise_distance``). With ``swap`` the distance to the negative is the smaller of
    ``d(a, n)`` and ``d(p, n)``.

    Args:
        margin (float): the required gap; positive. Default: 1.0.
        p (float): the norm degree of the distance. Default: 2.0.
        eps (float): added to the differences to keep the norm differentiable.
            Default: 1e-6.
        swap (bool): use the distance swap of Balntas et al. (2016). Default: False.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per triplet), ``'mean'`` or ``'sum'`` of the
            triplet losses. Default: ``'mean'``.

    Shape:
        - Anchor, Positive, Negative: (N, D) or (D).
        - Output: a scalar, or (N) with ``reduction='none'`` and batched input.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.TripletMarginLoss(margin=1.0)
        >>> a = ember.tensor([[0.0, 0.0]])
        >>> loss(a, ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 1.0]]))
        tensor(5.0000)
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all loss: a logistic loss for every class, averaged over the
    classes.

    For one sample with logits ``x`` and 0/1 targets ``y`` over ``C`` classes the loss is
    ``-(1 / C) * sum_i w_i * (y_i * log(sigmoid(x_i)) + (1 - y_i) * log(sigmoid(-x_i)))``.

    Args:
        weight (Tensor, optional): a weight per class, shape (C). Default: all ones.
        size_average (bool, optional): deprecated, use ``reduction``.
        reduce (bool, optional): deprecated, use ``reduction``.
        reduction (str): ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'`` of the
            sample losses. Default: ``'mean'``.

    Shape:
        - Input: (N, C) or (C).
        - Target: the shape of the input, values 0 or 1.
        - Output: a scalar, or (N) with ``reduction='none'``.

    Example:
        >>> import ember.nn as nn
        >>> loss = nn.MultiLabelSoftMarginLoss()
        >>> loss(ember.zeros(1, 3), ember.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.6931)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of ``NLLLoss`` (warns, as PyTorch)."""

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean") -> None:
        _warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
              "drop-in replacement and see https://pytorch.org/docs/main/nn.html"
              "#torch.nn.NLLLoss for more details.", FutureWarning)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss; ``target`` lists class indices, ended by -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C``."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (default: pairwise Euclidean)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function if distance_function is not None \
            else F.pairwise_distance
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss over (T, N, C) log-probabilities."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths,
                target_lengths) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear`` projection to ``num_classes`` logits followed by cross entropy, as one
    loss module (``self.linear`` holds the projection)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features=(),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight: Tensor | None = None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0, options=None) -> None:
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        weight = self.linear.weight.reshape((self.num_classes, *self.out_features,
                                             self.linear.in_features))
        bias = self.linear.bias.reshape((self.num_classes, *self.out_features)) \
            if self.linear.bias is not None else None
        return F.linear_cross_entropy(input, weight, target, linear_bias=bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
