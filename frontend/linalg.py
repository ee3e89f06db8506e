"""``ember.linalg``: PyTorch's ``torch.linalg`` namespace."""
from __future__ import annotations

__all__: list = []
