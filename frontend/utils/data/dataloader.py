"""``DataLoader``: batches from a dataset through a sampler and a collate function.

Loading runs in the calling process. The option checks (which combinations are
mutually exclusive) and the iteration rules follow ``torch.utils.data.DataLoader``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import ember

from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """Information about the current loader worker; ``None`` in the main process (and
    every sample is loaded in the main process until ember.multiprocessing exists)."""
    return None


class _InfiniteConstantSampler(Sampler):
    # an iterable dataset ignores indices; this only paces the batch sampler
    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``, as ``torch.utils.data.DataLoader``.

    >>> import ember
    >>> from ember.utils.data import TensorDataset
    >>> ds = TensorDataset(ember.arange(6.).view(3, 2))
    >>> [b[0].shape for b in DataLoader(ds, batch_size=2)]
    [(2, 2), (1, 2)]

    ``shuffle=True`` draws a new permutation each epoch from ``generator`` (ember's
    default generator when ``None``, so ``ember.manual_seed`` makes it reproducible).
    ``batch_size=None`` turns batching off: each sample passes through
    ``default_convert`` alone. ``num_workers`` must be 0 for now.
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator: ember.Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False
                 ) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if num_workers > 0:
            raise NotImplementedError(
                f"DataLoader(num_workers={num_workers}): loading in worker processes arrives "
                "with ember.multiprocessing; use num_workers=0 (the default) to load in the "
                "main process.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing. let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            raise ValueError("multiprocessing_context can only be used with multi-process "
                             f"loading (num_workers > 0), but got num_workers={num_workers}")

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            # an iterable dataset decides its own order: no sampler can reorder it
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _SingleProcessIter:
        return _SingleProcessIter(self)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # TypeError if the iterable dataset has no __len__
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)


class _SingleProcessIter:
    """One pass over a DataLoader, fetching and collating in the calling process."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._auto = loader._auto_collation
        self._collate = loader.collate_fn
        self._drop_last = loader.drop_last
        self._index_iter = iter(loader._index_sampler)
        self._data_iter = iter(loader.dataset) if loader._iterable else None
        self._ended = False

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        index = next(self._index_iter)  # StopIteration ends the epoch
        if self._data_iter is not None:
            return self._collate(self._next_from_stream(index))
        ds = self._loader.dataset
        if not self._auto:
            return self._collate(ds[index])
        getitems = getattr(ds, "__getitems__", None)
        data = getitems(index) if getitems else [ds[i] for i in index]
        return self._collate(data)

    def _next_from_stream(self, index):
        if self._ended:
            raise StopIteration
        if not self._auto:
            return next(self._data_iter)
        data = []
        for _ in index:
            try:
                data.append(next(self._data_iter))
            except StopIteration:
                self._ended = True
                break
        if not data or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return data
