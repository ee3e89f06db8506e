"""``parameters_to_vector`` / ``vector_to_parameters``."""
from __future__ import annotations

import ember
from ember import Tensor

from ..parameter import _set_data

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor (a copy)."""
    vec = []
    device = None
    for param in parameters:
        if device is None:
            device = param.device
        elif param.device != device:
            raise TypeError(f"Found two parameters on different devices, this is currently "
                            f"not supported. ({device}, {param.device})")
        vec.append(param.reshape(-1))
    return ember.cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Make each parameter view its slice of ``vec`` (``param.data = ...``, as PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        _set_data(param, vec[pointer:pointer + n].detach().view(param.shape))
        pointer += n
