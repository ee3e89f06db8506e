"""``Muon``: momentum orthogonalized by Newton-Schulz (Jordan et al., 2024), as
``torch.optim.Muon``."""
from __future__ import annotations

import math
from collections.abc import Iterable

from ember.dispatcher import dtypes as D

from .. import _creation as K
from .. import _functions as F
from .optimizer import Optimizer, _check_lr, _check_not_sparse, _get_value, _use_no_grad

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """Approximately orthogonalize a matrix (``U S V^T -> U S' V^T`` with ``S'`` near 1)
    by ``ns_steps`` quintic Newton-Schulz iterations ``X = a X + (b A + c A^2) X`` with
    ``A = X X^T``, in bfloat16 on the wider orientation, as PyTorch."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    ortho = grad.to(D.bfloat16)
    tall = grad.size(0) > grad.size(1)
    if tall:
        ortho = ortho.T
    ortho = ortho / ortho.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = ortho @ ortho.T
        gram_update = F.addmm(gram, gram, gram, beta=b, alpha=c)
        ortho = F.addmm(ortho, gram_update, ortho, beta=a)
    return ortho.T if tall else ortho


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    r"""Muon, as ``torch.optim.Muon``, for 2-D parameters (hidden-layer weights; optimize
    biases and embeddings with e.g. ``AdamW``).

    Per step, with ``g`` the gradient::

        B = mu * B + (1 - mu) * g                  (momentum buffer, as a lerp)
        U = lerp(g, B, mu) if nesterov else B
        O = NewtonSchulz(U)                        (``ns_steps`` iterations, bfloat16)
        p = p * (1 - lr * weight_decay)
        p = p - lr * ratio * O    (ratio: sqrt(max(1, rows/cols)) for "original",
                                   0.2 * sqrt(max(rows, cols)) for "match_rms_adamw")

    State per parameter: ``momentum_buffer``.
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_use_no_grad
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _get_value(group["lr"])
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                _check_not_sparse("Muon", p.grad)
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = K.zeros_like(p.grad)
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf = self.state[p]["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                     group["ns_steps"], group["eps"])
                adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-adjusted_lr)
        return loss
