"""``SGD``: stochastic gradient descent with momentum, as ``torch.optim.SGD``."""
from __future__ import annotations

from collections.abc import Iterable

from ember.dispatcher.defs import optim as _optim

from .. import _creation as K
from .optimizer import (Optimizer, _check_fused_flags, _check_fused_param, _check_lr,
                        _get_value, _use_grad_for_differentiable)

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent, optionally with (Nesterov) momentum, as
    ``torch.optim.SGD``.

    Per step, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p
        b = g                                 on the first step (momentum != 0)
        b = momentum * b + (1 - dampening) * g    afterwards
        g = g + momentum * b if nesterov else b
        p = p - lr * g

    State per parameter: ``momentum_buffer`` (when ``momentum != 0``).

    Each group is updated by one ``sgd_step_`` op: a multi-tensor kernel where the device has
    one (the CPU's, bit-identical to the per-tensor loop of elementwise ops that is the
    op's composite), whatever ``foreach`` and ``fused`` say (PyTorch's ``fused=True``
    checks still apply). ``differentiable=True`` runs the loop under autograd.

    >>> import ember
    >>> w = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.5, momentum=0.9)
    >>> w.grad = ember.tensor([1.0, 1.0]); opt.step()
    >>> w
    tensor([0.5000, 1.5000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_flags(fused, differentiable, foreach)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)

        for group in self.param_groups:
            lr = _get_value(group["lr"])
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            dampening, nesterov = group["dampening"], group["nesterov"]
            if not group["differentiable"] and self._group_update(group, lr):
                continue
            for p in group["params"]:
                if p.grad is None:
                    continue
                if group["fused"]:
                    _check_fused_param(p)
                grad = -p.grad if group["maximize"] else p.grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = grad.detach().clone()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                if getattr(grad, "is_sparse", False):
                    grad._add_into_(p, alpha=-lr)   # dense += sparse
                else:
                    p.add_(grad, alpha=-lr)
        return loss

    def _group_update(self, group, lr) -> bool:
        """The group's update as ``sgd_step_`` ops (a multi-tensor kernel where the device
        has one, bit-identical to the per-tensor loop, its composite), whatever ``foreach``
        and ``fused`` say; False (nothing done) for sparse gradients, which the loop adds."""
        params = [p for p in group["params"] if p.grad is not None]
        if any(getattr(p.grad, "is_sparse", False) for p in params):
            return False
        momentum = group["momentum"]
        calls = {False: ([], [], []), True: ([], [], [])}  # by is_first_step
        for p in params:
            if group["fused"]:
                _check_fused_param(p)
            buf = None
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                first = buf is None
                if first:
                    buf = state["momentum_buffer"] = K.empty_like(p.grad)  # (contiguous)
            else:
                first = False
            for lst, t in zip(calls[first], (p, p.grad, buf)):
                lst.append(t)
        for first, (ps, gs, bufs) in calls.items():
            if ps:
                _optim.sgd_step_(ps, gs, bufs, lr=lr, weight_decay=group["weight_decay"],
                                 momentum=momentum, dampening=group["dampening"],
                                 nesterov=group["nesterov"], maximize=group["maximize"],
                                 is_first_step=first)
        return True
