"""``NAdam`` (Dozat, 2016: Adam with Nesterov momentum), as ``torch.optim.NAdam``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_not_sparse,
                        _get_scalar_dtype, _get_value, _use_grad_for_differentiable, _view_as_real)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    r"""NAdam, as ``torch.optim.NAdam``.

    Per step ``t``, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p        (or p = p * (1 - lr * weight_decay) when
                                         decoupled_weight_decay, as NAdamW)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));  P = P * mu_t
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / d
              - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    State per parameter: ``step``, ``mu_product`` (``P``), ``exp_avg`` and ``exp_avg_sq``.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.NAdam([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> round(w.item(), 4)
    0.8944
    """

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("maximize", False), ("foreach", None), ("capturable", False),
                                 ("differentiable", False), ("decoupled_weight_decay", False)):
                group.setdefault(key, default)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _get_value(group["lr"])
            beta1, beta2 = group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _check_not_sparse("NAdam", p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = K.tensor(0.0, dtype=_get_scalar_dtype())
                    state["mu_product"] = K.tensor(1.0, dtype=_get_scalar_dtype())
                    state["exp_avg"] = K.zeros_like(p)
                    state["exp_avg_sq"] = K.zeros_like(p)
            for p in params:
                if group["capturable"]:
                    _check_capturable([p], what="params, mu_products and state_steps")
                state = self.state[p]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                grad = -p.grad if group["maximize"] else p.grad
                if p.dtype.is_complex:
                    p, grad, exp_avg, exp_avg_sq = _view_as_real(p, grad, exp_avg, exp_avg_sq)
                state["step"] += 1
                step = _get_value(state["step"])
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                state["mu_product"] *= mu
                mu_product = _get_value(state["mu_product"])
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if group["differentiable"]:
                    # as PyTorch: the coefficients stay tensors (the dtype of mu_product)
                    mu_product_t = state["mu_product"]
                    denom = exp_avg_sq.div(bias_correction2).sqrt().add(eps)
                    mu_product_next_t = mu_product_t * mu_next
                    # (``number / tensor`` is ``tensor.reciprocal() * number`` in PyTorch)
                    coef_grad = (1.0 - mu_product_t).reciprocal() * (-lr * (1.0 - mu))
                    coef_avg = (1.0 - mu_product_next_t).reciprocal() * (-lr * mu_next)
                    p.addcdiv_(grad * coef_grad, denom)
                    p.addcdiv_(exp_avg * coef_avg, denom)
                    continue
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                mu_product_next = mu_product * mu_next
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
        return loss
