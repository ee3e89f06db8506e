"""ember's top-level functions and Tensor methods: sparse (see frontend/__init__.py)."""
from __future__ import annotations

__all__: list = []          # names exported as ember.<name>
TENSOR_METHODS: dict = {}   # name -> function (or property) installed on ember.Tensor
