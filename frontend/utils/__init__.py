"""``ember.utils``: helpers around the tensor library — ``data`` (datasets and loaders),
``checkpoint`` (activation checkpointing) and ``tensorboard`` (``SummaryWriter``; imported
on demand, it needs the optional ``tensorboard`` package)."""
from . import checkpoint, data, dlpack  # noqa: F401

__all__ = ["data", "checkpoint", "dlpack"]
