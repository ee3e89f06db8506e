"""PyTorch's module of the chunked ``linear_cross_entropy`` implementation; it has no public
names (``ember.nn.functional.linear_cross_entropy`` computes the reference definition)."""
from __future__ import annotations

__all__: list = []
