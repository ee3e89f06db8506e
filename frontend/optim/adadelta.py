"""``Adadelta`` (Zeiler, 2012), as ``torch.optim.Adadelta``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_not_sparse,
                        _get_scalar_dtype, _get_value, _use_grad_for_differentiable, _view_as_real)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta, as ``torch.optim.Adadelta``.

    Per step, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    State per parameter: ``step``, ``square_avg`` (``v``) and ``acc_delta`` (``u``).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adadelta([w], lr=1.0)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> round(w.item(), 4)
    0.9968
    """

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
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
            rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _check_not_sparse("Adadelta", p.grad)
            if group["capturable"]:
                _check_capturable(params, supports_xla=False)
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = K.zeros((), dtype=_get_scalar_dtype())
                    state["square_avg"] = K.zeros_like(p)
                    state["acc_delta"] = K.zeros_like(p)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                if p.dtype.is_complex:
                    p, grad, square_avg, acc_delta = _view_as_real(p, grad, square_avg, acc_delta)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
