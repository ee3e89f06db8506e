"""``RMSprop`` (Hinton's lecture 6e; Graves 2013 for the centered form), as
``torch.optim.RMSprop``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_not_sparse,
                        _get_scalar_dtype, _get_value, _use_grad_for_differentiable, _view_as_real)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop, as ``torch.optim.RMSprop``.

    Per step, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g          (centered)
        d = sqrt(v - a * a) + eps if centered else sqrt(v) + eps
        b = momentum * b + g / d;  p = p - lr * b     (momentum > 0)
        p = p - lr * g / d                            (otherwise)

    State per parameter: ``step``, ``square_avg``, ``momentum_buffer`` (momentum > 0) and
    ``grad_avg`` (centered).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.RMSprop([w], lr=0.01, alpha=0.75)
    >>> w.grad = ember.tensor([3.0]); opt.step()
    >>> w
    tensor([0.9800], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("momentum", 0), ("centered", False), ("foreach", None),
                                 ("maximize", False), ("differentiable", False),
                                 ("capturable", False)):
                group.setdefault(key, default)

    def _init_state(self, p, group) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = K.zeros((), dtype=_get_scalar_dtype())
            state["square_avg"] = K.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = K.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = K.zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)

        for group in self.param_groups:
            lr = _get_value(group["lr"])
            alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
            params = [p for p in group["params"] if p.grad is not None]
            if group["capturable"]:
                _check_capturable(params)
            for p in params:
                _check_not_sparse("RMSprop", p.grad)
                state = self._init_state(p, group)
                grad = -p.grad if group["maximize"] else p.grad
                square_avg = state["square_avg"]
                if p.dtype.is_complex:
                    p, grad, square_avg = _view_as_real(p, grad, square_avg)
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])

                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if group["centered"]:
                    (grad_avg,) = _view_as_real(state["grad_avg"])
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)

                if momentum > 0:
                    (buf,) = _view_as_real(state["momentum_buffer"])
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)
        return loss
