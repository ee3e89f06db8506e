"""``ASGD``: averaged stochastic gradient descent (Polyak & Juditsky, 1992), as
``torch.optim.ASGD``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_not_sparse,
                        _get_scalar_dtype, _get_value, _use_grad_for_differentiable, _view_as_real)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    r"""Averaged SGD, as ``torch.optim.ASGD``.

    Per step ``t``, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p                      while mu == 1
        ax = ax + mu * (p - ax)     afterwards (the running average of p)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)

    State per parameter: ``step``, ``eta``, ``mu`` (scalar tensors) and ``ax``, the average
    of the iterates, which is the result ASGD is meant to give.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.ASGD([w], lr=0.1, lambd=0.0)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> round(w.item(), 4)
    0.8
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
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
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _check_not_sparse("ASGD", p.grad)
                state = self.state[p]
                if len(state) == 0:
                    dtype = _get_scalar_dtype()
                    state["step"] = K.zeros((), dtype=dtype, device=p.device)
                    state["eta"] = K.tensor(lr, dtype=dtype, device=p.device)
                    state["mu"] = K.ones((), dtype=dtype, device=p.device)
                    state["ax"] = K.zeros_like(p)
            for p in params:
                if group["capturable"]:
                    _check_capturable([p], what="params, mus, etas, and state_steps")
                state = self.state[p]
                mu, ax, eta = state["mu"], state["ax"], state["eta"]
                grad = -p.grad if group["maximize"] else p.grad
                if p.dtype.is_complex:
                    p, grad, ax = _view_as_real(p, grad, ax)
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                eta_value = _get_value(eta)
                p.mul_(1 - lambd * eta_value)
                p.add_(grad, alpha=-eta_value)
                if mu.item() != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                step = _get_value(state["step"])
                eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
                mu.fill_(1 / max(1, step - t0))
        return loss
