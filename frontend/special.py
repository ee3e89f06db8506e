"""``ember.special``: PyTorch's ``torch.special`` namespace."""
from __future__ import annotations

__all__: list = []
