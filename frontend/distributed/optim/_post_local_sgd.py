"""``PostLocalSGDOptimizer``: a local optimizer followed by model averaging, as
``torch.distributed.optim.PostLocalSGDOptimizer``."""
from __future__ import annotations

import warnings
from typing import Any

from ember.optim import Optimizer

__all__ = ["PostLocalSGDOptimizer"]


class PostLocalSGDOptimizer(Optimizer):
    """Run ``optim``'s step, then ``averager.average_parameters(params=self.param_groups)``
    (post-local SGD: ranks train on their own and average their models every few steps).

    ``averager`` is a model averager as PyTorch's
    ``torch.distributed.algorithms.model_averaging.averagers`` (ember has none of its own):
    any object with an ``average_parameters(params)`` method and a ``step`` counter, which
    ``state_dict`` saves beside the optimizer's state.

    Example (averaging every 4 steps over all ranks)::

        class EveryFourSteps:
            step = 0
            def average_parameters(self, params):
                if self.step % 4 == 3:
                    for p in (p for g in params for p in g["params"]):
                        dist.all_reduce(p.data, op=dist.ReduceOp.AVG)
                self.step += 1

        opt = PostLocalSGDOptimizer(ember.optim.SGD(model.parameters(), lr=0.01),
                                    EveryFourSteps())
    """

    def __init__(self, optim: Optimizer, averager: Any):
        self.optim = optim
        self.param_groups = self.optim.param_groups
        self.averager = averager

    @property
    def state(self):
        """The local optimizer's state."""
        return self.optim.state

    def __repr__(self) -> str:
        return self.optim.__repr__()

    def state_dict(self) -> dict[str, Any]:
        """The local optimizer's ``state_dict`` with the averager's step count as
        ``"step"``, so that a reload does not warm up again."""
        state_dict = self.optim.state_dict()
        state_dict["step"] = self.averager.step
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load the local optimizer's state and the averager's step count (0, with a
        warning, if ``state_dict`` has none)."""
        self.optim.load_state_dict(state_dict)
        if "step" in state_dict:
            self.averager.step = state_dict["step"]
        else:
            warnings.warn("Loaded state dict does not contain a step counter for an averager. "
                          "Setting step counter to 0.", stacklevel=2)
            self.averager.step = 0

    def step(self) -> None:
        """One step of the local optimizer, then the averager's turn."""
        self.optim.step()
        self.averager.average_parameters(params=self.param_groups)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The local optimizer's ``zero_grad``."""
        self.optim.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group to the local optimizer."""
        self.optim.add_param_group(param_group)
