"""``ember.nn.parallel``: data-parallel training over ``ember.distributed``."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
