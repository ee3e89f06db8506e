"""``ember._inductor``: the settings module of PyTorch's Inductor, ``config``, which
programs assign around ``torch.compile`` (``config.coordinate_descent_tuning = True``).
ember's default compiler (docs/compile.md) plays Inductor's part."""
from . import config

__all__ = ["config"]
