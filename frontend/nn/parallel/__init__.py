"""``ember.nn.parallel``: data-parallel training over ``ember.distributed``."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from . import scatter_gather  # noqa: F401  (torch.nn.parallel.scatter_gather, loaded with the package)

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
