"""``ember.utils``: helpers around the tensor library — ``data`` (datasets and loaders),
``checkpoint`` (activation checkpointing), ``benchmark`` (``Timer``, ``Compare``),
``offload`` (activations to host memory during training, vDNN), ``memory_viz`` (a memory
snapshot as an HTML page) and ``tensorboard`` (``SummaryWriter``; imported on demand, it
needs the optional ``tensorboard`` package)."""
from . import benchmark, checkpoint, data, dlpack, memory_viz, offload  # noqa: F401

__all__ = ["benchmark", "data", "checkpoint", "dlpack", "memory_viz", "offload"]
