"""``ember.nn.parallel``: data-parallel training over ``ember.distributed``."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
