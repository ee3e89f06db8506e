"""``SparseAdam``: Adam for sparse gradients, as ``torch.optim.SparseAdam``."""
from __future__ import annotations

from collections.abc import Iterable

import ember

from .. import _sparse_tensor
from .optimizer import Optimizer, _check_lr, _use_grad_for_differentiable

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""Masked Adam for dense parameters with sparse (COO) gradients, as
    ``torch.optim.SparseAdam`` (for ``nn.Embedding(sparse=True)``): only the moments and
    parameter entries present in the gradient are updated.

    ember has no sparse tensor layout yet, so no gradient can be sparse: as in PyTorch, a
    dense gradient makes ``step()`` raise ``RuntimeError`` (use ``Adam`` instead).
    """

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if getattr(p, "is_sparse", False):
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One step of Adam over the sparse gradients' entries (dense gradients raise)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = ember.zeros_like(p)
                    state["exp_avg_sq"] = ember.zeros_like(p)
                state["step"] += 1
                _sparse_tensor.sparse_adam_step_(p, p.grad, state["exp_avg"],
                                                 state["exp_avg_sq"], state["step"], group["lr"],
                                                 beta1, beta2, group["eps"], group["maximize"])
        return loss
