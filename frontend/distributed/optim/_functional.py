"""Functional optimizers (``as_functional_optim``): an optimizer stepped with gradients
passed in, rather than read from ``param.grad``, as ``torch.distributed.optim``'s.

PyTorch writes one TorchScript class per optimizer (``_FunctionalSGD``, ...) for its
DDP communication hooks. Here one class wraps the ordinary optimizer: the gradients are
put in ``.grad`` for the duration of its ``step`` (the parameters' own gradients are put
back afterwards), so every update is exactly ``ember.optim``'s.
"""
from __future__ import annotations

from typing import Any

from ember import Tensor, optim

__all__ = ["as_functional_optim", "functional_optim_map"]


class _FunctionalOptimizer:
    """An ``optimizer_class`` over one group of ``params`` whose ``step(gradients)`` takes
    the gradients as a list (``None``: leave that parameter alone), and whose
    ``step_param(param, grad)`` updates one parameter (added on first use)."""

    optimizer_class: type[optim.Optimizer]

    def __init__(self, params: list[Tensor], *args: Any,
                 _allow_empty_param_list: bool = False, **kwargs: Any):
        if len(params) == 0 and not _allow_empty_param_list:
            raise ValueError("optimizer got an empty parameter list")
        self._args, self._kwargs = args, kwargs
        self.param_group = {"params": list(params)}
        self._group_optimizer: optim.Optimizer | None = None      # made at the first step
        self._param_optimizers: dict[Tensor, optim.Optimizer] = {}

    @property
    def state(self) -> dict[Tensor, dict[str, Any]]:
        """Every parameter's optimizer state (momentum buffers, moments, step counts)."""
        state = dict(self._group_optimizer.state) if self._group_optimizer else {}
        for opt in self._param_optimizers.values():
            state.update(opt.state)
        return state

    @staticmethod
    def _step_with(opt: optim.Optimizer, params: list[Tensor], grads: list) -> None:
        saved = [p.grad for p in params]
        try:
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()
        finally:
            for p, g in zip(params, saved):
                p.grad = g

    def step(self, gradients: list[Tensor | None]) -> None:
        """Update the group's parameters, ``gradients[i]`` being parameter i's gradient."""
        params = self.param_group["params"]
        if len(params) != len(gradients):
            raise ValueError("the gradients passed in does not equal to the size of the "
                             f"parameters!Params length: {len(params)}. Gradients length: "
                             f"{len(gradients)}")
        if self._group_optimizer is None:
            self._group_optimizer = self.optimizer_class(params, *self._args, **self._kwargs)
        self._step_with(self._group_optimizer, params, gradients)

    def step_param(self, param: Tensor, grad: Tensor | None) -> None:
        """Update one parameter with its gradient (nothing happens for ``None``)."""
        if grad is None:
            return
        if param not in self._param_optimizers:
            self._param_optimizers[param] = self.optimizer_class([param], *self._args,
                                                                 **self._kwargs)
        self._step_with(self._param_optimizers[param], [param], [grad])


def _functional(optimizer_class: type) -> type:
    """The functional counterpart of ``optimizer_class`` (``_FunctionalAdam``, ...)."""
    name = optimizer_class.__name__
    return type(f"_Functional{name}", (_FunctionalOptimizer,), {
        "optimizer_class": optimizer_class, "__module__": __name__,
        "__doc__": f"``ember.optim.{name}`` stepped with gradients passed in."})


#: each optimizer class that has a functional counterpart, and that counterpart
functional_optim_map: dict[type, type[_FunctionalOptimizer]] = {
    cls: _functional(cls)
    for cls in (optim.Adagrad, optim.Adam, optim.AdamW, optim.SGD, optim.Adadelta,
                optim.RMSprop, optim.Rprop, optim.Adamax)}


def as_functional_optim(optim_cls: type, *args: Any, **kwargs: Any) -> _FunctionalOptimizer:
    """The functional counterpart of ``optim_cls`` with no parameters yet (``*args`` and
    ``**kwargs`` are its hyper-parameters); ``ValueError`` if it has none.

    >>> import ember
    >>> from ember.distributed.optim import as_functional_optim
    >>> sgd = as_functional_optim(ember.optim.SGD, lr=0.5)
    >>> w = ember.ones(2)
    >>> sgd.step_param(w, ember.ones(2)); w
    tensor([0.5000, 0.5000])
    """
    try:
        functional_cls = functional_optim_map[optim_cls]
    except KeyError as e:
        raise ValueError(f"Optimizer {optim_cls} does not have a functional "
                         "counterpart!") from e
    return functional_cls([], *args, _allow_empty_param_list=True, **kwargs)
