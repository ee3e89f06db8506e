"""``Adamax`` (Kingma & Ba, 2015, section 7), as ``torch.optim.Adamax``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _functions as F
from .optimizer import (Optimizer, _check_capturable, _check_lr, _get_value, _params_with_state,
                        _use_grad_for_differentiable, _view_as_real)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax, Adam with the infinity norm, as ``torch.optim.Adamax``.

    Per step ``t``, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    State per parameter: ``step``, ``exp_avg`` (``m``) and ``exp_inf`` (``u``).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adamax([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> round(w.item(), 4)
    0.9
    """

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
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
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("foreach", None), ("maximize", False),
                                 ("differentiable", False), ("capturable", False)):
                group.setdefault(key, default)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _get_value(group["lr"])
            beta1, beta2 = group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            params = _params_with_state(self, group, "Adamax", ("exp_avg", "exp_inf"))
            for p in params:
                if group["capturable"]:
                    _check_capturable([p])
                state = self.state[p]
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                grad = -p.grad if group["maximize"] else p.grad
                if p.dtype.is_complex:
                    p, grad, exp_avg, exp_inf = _view_as_real(p, grad, exp_avg, exp_inf)
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                F.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                clr = lr / (1 - beta1 ** _get_value(state["step"]))
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
