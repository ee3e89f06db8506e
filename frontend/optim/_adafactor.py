"""``Adafactor`` (Shazeer & Stern, 2018), as ``torch.optim.Adafactor``."""
from __future__ import annotations

from collections.abc import Iterable

from .. import _creation as K
from .. import _functions as F
from .._ops_misc import finfo
from .optimizer import (Optimizer, _check_lr, _check_not_sparse, _get_scalar_dtype,
                        _get_value, _use_grad_for_differentiable)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    r"""Adafactor, as ``torch.optim.Adafactor``: second moments of a matrix gradient are
    kept factored, as a row and a column mean, so their memory is ``O(n + m)``.

    Per step ``t``, with ``g`` the gradient (negated when ``maximize``), ``b = t**beta2_decay``
    and ``eps1`` (``None``: the parameter dtype's machine epsilon)::

        rho = min(lr, 1 / sqrt(t));  alpha = max(eps2, rms(p)) * rho
        p = p * (1 - lr * weight_decay)
        matrices (dim > 1):  R = lerp(R, mean(g*g, dim=-1), b);  C = lerp(C, mean(g*g, dim=-2), b)
                             V = R @ C / max(mean(R, dim=-2), eps1)
        vectors:             V = lerp(V, g*g, b)
        u = g / sqrt(max(V, eps1**2))
        p = p - alpha / max(1, rms(u) / d) * u

    State per parameter: ``step`` and either ``row_var`` and ``col_var`` (matrices and higher)
    or ``variance`` (vectors and scalars).
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _get_value(group["lr"])
            eps1, eps2 = group["eps"]
            beta2_decay, d, weight_decay = group["beta2_decay"], group["d"], group["weight_decay"]
            params = []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                _check_not_sparse("Adafactor", p.grad)
                params.append(p)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = K.tensor(0.0, dtype=_get_scalar_dtype())
                    if p.grad.dim() > 1:
                        row_shape = list(p.grad.shape)
                        row_shape[-1] = 1
                        state["row_var"] = p.grad.new_zeros(row_shape)
                        col_shape = list(p.grad.shape)
                        col_shape[-2] = 1
                        state["col_var"] = p.grad.new_zeros(col_shape)
                    else:
                        state["variance"] = K.zeros_like(p.grad)
            for p in params:
                state = self.state[p]
                grad = -p.grad if group["maximize"] else p.grad
                if eps1 is None:
                    # as PyTorch: the first parameter's dtype fixes eps1 for the group's step
                    eps1 = finfo(p.dtype).eps
                state["step"] += 1
                step = state["step"].item()
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_norm = F.norm(grad, dim=-1, keepdim=True)
                    row_mean = (row_norm * row_norm).div_(grad.size(-1))
                    row_var.lerp_(row_mean, one_minus_beta2_t)
                    col_norm = F.norm(grad, dim=-2, keepdim=True)
                    col_mean = (col_norm * col_norm).div_(grad.size(-2))
                    col_var.lerp_(col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2_t)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
                update.mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
