"""``Adam`` and ``AdamW`` (Kingma & Ba, 2015; Loshchilov & Hutter, 2019), as
``torch.optim.Adam`` / ``torch.optim.AdamW``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .. import _functions as F
from ember.dispatcher import dtypes as D
from ember.dispatcher.defs import optim as _optim

from .._tensor import Tensor
from .optimizer import (Optimizer, _check_capturable, _check_fused_flags, _check_fused_param,
                        _check_lr, _check_not_sparse, _get_scalar_dtype, _get_value,
                        _use_grad_for_differentiable)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam, optionally with the AMSGrad variant, as ``torch.optim.Adam``.

    Per step ``t``, with ``g`` the gradient (negated when ``maximize``)::

        g = g + weight_decay * p         (or p = p * (1 - lr * weight_decay) when
                                          decoupled_weight_decay, as AdamW)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)            (amsgrad; used in place of v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    State per parameter: ``step`` (a CPU scalar tensor), ``exp_avg``, ``exp_avg_sq`` and,
    with ``amsgrad``, ``max_exp_avg_sq``.

    Each group is updated by one ``adam_step_`` op: a multi-tensor kernel where the device has
    one (the CPU's, bit-identical to the per-tensor loop of elementwise ops that is the
    op's composite), whatever ``foreach`` and ``fused`` say (PyTorch's ``fused=True``
    checks still apply). ``differentiable=True`` runs the loop under autograd.

    >>> import ember
    >>> w = ember.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = ember.optim.Adam([w], lr=0.1)
    >>> w.grad = ember.tensor([0.5, -2.0]); opt.step()
    >>> w
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and "
                                 "foreach=True")
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
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                     "capturable=False and foreach=True")
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused_flags(fused, differentiable, foreach)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("amsgrad", False), ("maximize", False), ("foreach", None),
                                 ("capturable", False), ("differentiable", False),
                                 ("decoupled_weight_decay", False), ("fused", None)):
                group.setdefault(key, default)

    def _init_state(self, p, amsgrad: bool, fused=False) -> dict:
        state = self.state[p]
        if len(state) == 0:
            # the step counter stays on the CPU: its value feeds Python-side bias corrections
            # (float32 for fused, as PyTorch's fused kernels keep it)
            state["step"] = K.tensor(0.0, dtype=D.float32 if fused else _get_scalar_dtype())
            state["exp_avg"] = K.zeros_like(p)
            state["exp_avg_sq"] = K.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = K.zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)

        for group in self.param_groups:
            lr = _get_value(group["lr"])
            beta1, beta2 = (_get_value(b) for b in group["betas"])
            weight_decay, eps, amsgrad = group["weight_decay"], group["eps"], group["amsgrad"]
            params = [p for p in group["params"] if p.grad is not None]
            if group["capturable"]:
                _check_capturable(params)
            if not group["differentiable"]:
                self._group_update(group, params, lr, beta1, beta2, weight_decay, eps, amsgrad)
                continue
            for p in params:
                _check_not_sparse(type(self).__name__, p.grad)
                state = self._init_state(p, amsgrad, group["fused"])
                grad = -p.grad if group["maximize"] else p.grad
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1

                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)

                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                # as PyTorch: bias corrections from the step tensor (its dtype), and
                # nothing updated in place that autograd saved
                self._differentiable_update(p, state, lr, beta1, beta2, eps, amsgrad)
        return loss

    def _group_update(self, group, params, lr, beta1, beta2, weight_decay, eps, amsgrad):
        """The group's update as one ``adam_step_`` op: a multi-tensor kernel where the
        device has one (bit-identical to the per-tensor loop, its composite), whatever
        ``foreach`` and ``fused`` say."""
        lists = ([], [], [], [], [], [])
        for p in params:
            _check_not_sparse(type(self).__name__, p.grad)
            if group["fused"]:
                _check_fused_param(p)
            state = self._init_state(p, amsgrad, group["fused"])
            for lst, t in zip(lists, (p, p.grad, state["exp_avg"], state["exp_avg_sq"],
                                      state.get("max_exp_avg_sq"), state["step"])):
                lst.append(t)
        _optim.adam_step_(*lists, lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay,
                          eps=eps, amsgrad=amsgrad, maximize=group["maximize"],
                          decoupled_weight_decay=group["decoupled_weight_decay"])

    @staticmethod
    def _differentiable_update(p, state, lr, beta1, beta2, eps, amsgrad) -> None:
        step = state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        # (``number / tensor`` is ``tensor.reciprocal() * number`` in PyTorch)
        step_size_neg = (bias_correction1.reciprocal() * lr).neg()
        bias_correction2_sqrt = bias_correction2.sqrt()
        if amsgrad:
            max_exp_avg_sq = state["max_exp_avg_sq"]
            max_exp_avg_sq.copy_(F.maximum(max_exp_avg_sq.clone(), exp_avg_sq))
            second = max_exp_avg_sq
        else:
            second = exp_avg_sq
        denom = (second.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
            step_size_neg.reciprocal() * eps)
        p.addcdiv_(exp_avg.clone(), denom)


class AdamW(Adam):
    r"""Adam with decoupled weight decay, as ``torch.optim.AdamW``: each step first shrinks
    the parameter, ``p = p * (1 - lr * weight_decay)``, then applies the Adam update to
    the plain gradient. Note the default ``weight_decay=1e-2``.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = ember.tensor([1.0]); opt.step()
    >>> w
    tensor([0.8500], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
