"""``ember.utils.data``: datasets, samplers and the ``DataLoader``, as ``torch.utils.data``.

>>> import ember
>>> from ember.utils.data import TensorDataset, DataLoader
>>> ds = TensorDataset(ember.arange(10.).view(5, 2), ember.arange(5))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=2)]
[[0, 1], [2, 3], [4]]
"""
from ._collate import collate, default_collate, default_collate_fn_map, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
    "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
    "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "collate",
    "default_collate", "default_collate_fn_map", "default_convert", "get_worker_info",
    "random_split",
]
