"""``Adagrad`` (Duchi, Hazan & Singer, 2011), as ``torch.optim.Adagrad``."""
from __future__ import annotations

from collections.abc import Iterable

from ember.dispatcher import dtypes as D

from .. import _creation as K
from .optimizer import (Optimizer, _check_fused_flags, _check_fused_param, _check_lr,
                        _check_not_sparse, _get_scalar_dtype, _get_value,
                        _use_grad_for_differentiable, _view_as_real)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad``.

    Per step ``t``, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g                     (s starts at initial_accumulator_value)
        p = p - clr * g / (sqrt(s) + eps)

    State per parameter: ``step`` and ``sum``. As in PyTorch, the state of every parameter
    given to the constructor exists from the start (parameters added later with
    ``add_param_group`` get theirs on their first step).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adagrad([w], lr=0.5)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> w
    tensor([0.5000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        _check_fused_flags(fused, differentiable, foreach)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def _init_state(self, p, group) -> dict:
        state = self.state[p]
        if len(state) == 0:
            step_dtype = D.float32 if group["fused"] else _get_scalar_dtype()
            state["step"] = K.tensor(0.0, dtype=step_dtype)
            state["sum"] = K.full_like(p, self.defaults["initial_accumulator_value"])
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)

        for group in self.param_groups:
            lr = _get_value(group["lr"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                _check_not_sparse("Adagrad", p.grad)
                if group["fused"]:
                    _check_fused_param(p)
                state = self._init_state(p, group)
                state["step"] += 1
                step = _get_value(state["step"])
                grad = -p.grad if group["maximize"] else p.grad
                state_sum = state["sum"]
                if p.dtype.is_complex:
                    p, grad, state_sum = _view_as_real(p, grad, state_sum)
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                clr = lr / (1 + (step - 1) * group["lr_decay"])

                state_sum.addcmul_(grad, grad, value=1)
                std = state_sum.sqrt().add_(group["eps"])
                p.addcdiv_(grad, std, value=-clr)
        return loss
