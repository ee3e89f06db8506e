"""``ember.utils``: helpers around the tensor library — ``data`` (datasets and loaders),
``checkpoint`` (activation checkpointing), ``benchmark`` (``Timer``, ``Compare``; imported
on demand, as PyTorch's: ``import ember.utils.benchmark``),
``hooks`` (``RemovableHandle``), ``offload`` (activations to host memory during training,
vDNN), ``memory_viz`` (a memory
snapshot as an HTML page) and ``tensorboard`` (``SummaryWriter``; imported on demand, it
needs the optional ``tensorboard`` package); ``swap_tensors`` swaps two tensor objects'
contents."""
from . import checkpoint, data, dlpack, hooks, memory_viz, offload  # noqa: F401
from .._swap import swap_tensors

__all__ = ["data", "checkpoint", "dlpack", "hooks", "memory_viz", "offload", "swap_tensors"]
