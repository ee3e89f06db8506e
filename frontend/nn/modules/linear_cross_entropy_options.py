"""``LinearCrossEntropyOptions``: the settings of PyTorch's chunked ``linear_cross_entropy``.

ember computes ``linear_cross_entropy`` by its reference definition whatever the options
say (the result is the same); the class exists so code that builds options runs unchanged,
with PyTorch's validation.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

import ember

__all__ = ["LinearCrossEntropyOptions"]


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Chunking and accumulation settings (validated as PyTorch validates them)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (
                ember.float16, ember.bfloat16, ember.float32, ember.float64):
            raise ValueError(f"acc_dtype must be one of {{None, ember.float16, ember.bfloat16, "
                             f"ember.float32, ember.float64}}, got {self.acc_dtype!r}. Pass "
                             "acc_dtype=None to let the op pick automatically.")
