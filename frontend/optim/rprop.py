"""``Rprop``: resilient backpropagation (Riedmiller & Braun, 1993), as
``torch.optim.Rprop``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .. import _functions as F
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_not_sparse,
                        _get_scalar_dtype, _get_value, _use_grad_for_differentiable, _view_as_real)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Rprop, as ``torch.optim.Rprop``: only the sign of the gradient is used; each element
    has its own step size, grown by ``etaplus`` while the gradient keeps its sign and shrunk
    by ``etaminus`` when it flips (that element then skips one update).

    Per step, with ``g`` the gradient (negated when ``maximize``)::

        s = sign(g * prev)
        step_size = clamp(step_size * (etaplus if s > 0 else etaminus if s < 0 else 1),
                          step_size_min, step_size_max)
        g = 0 where s < 0
        p = p - sign(g) * step_size;  prev = g

    State per parameter: ``step``, ``prev`` and ``step_size`` (starting at ``lr``).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Rprop([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> round(w.item(), 4)
    0.9
    """

    def __init__(self, params: Iterable, lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
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
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _check_not_sparse("Rprop", p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = K.zeros((), dtype=_get_scalar_dtype())
                    state["prev"] = K.zeros_like(p)
                    lr = _get_value(group["lr"])  # (both parts of a complex one: PyTorch's)
                    state["step_size"] = K.full_like(p.grad, complex(lr, lr)
                                                     if p.dtype.is_complex else lr)
            for p in params:
                if group["capturable"]:
                    _check_capturable([p])
                state = self.state[p]
                prev, step_size = state["prev"], state["step_size"]
                grad = -p.grad if group["maximize"] else p.grad
                if p.dtype.is_complex:
                    p, grad, prev, step_size = _view_as_real(p, grad, prev, step_size)
                state["step"] += 1
                sign = grad.mul(prev).sign()
                flipped = sign < 0
                factor = F.where(sign > 0, K.full_like(sign, etaplus),
                                 F.where(flipped, K.full_like(sign, etaminus),
                                         K.ones_like(sign)))
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = F.where(flipped, K.zeros_like(grad), grad)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
