"""``ember.sparse``: PyTorch's ``torch.sparse`` namespace."""
from __future__ import annotations

__all__: list = []
