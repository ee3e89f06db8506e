"""Samplers: iterables of dataset indices (or of lists of indices, for ``BatchSampler``).

Randomness comes from ember's RNG: pass a ``generator`` for a private stream, or leave
it ``None`` to draw from the default one, which ``ember.manual_seed`` resets.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import numpy as np

import ember

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses implement ``__iter__`` and, where they can, ``__len__``."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``.

    Example:
        >>> from ember.utils.data import SequentialSampler
        >>> list(SequentialSampler("abc"))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


_REPLACEMENT_BLOCK = 4096


class RandomSampler(Sampler[int]):
    """A random permutation of the indices, or ``num_samples`` indices drawn with
    ``replacement``.

    Example:
        >>> from ember.utils.data import RandomSampler
        >>> sorted(RandomSampler(range(4), generator=ember.Generator().manual_seed(0)))
        [0, 1, 2, 3]
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: ember.Generator | None = None
                 ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        n = self.num_samples
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={n}")

    @property
    def num_samples(self) -> int:
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        g = self.generator
        if self.replacement:
            # drawn lazily in blocks, as PyTorch does: num_samples may be far larger than
            # memory (an "infinite" sampler)
            for start in range(0, self.num_samples, _REPLACEMENT_BLOCK):
                size = min(_REPLACEMENT_BLOCK, self.num_samples - start)
                yield from ember.randint(0, n, (size,), generator=g).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from ember.randperm(n, generator=g).tolist()
        rest = self.num_samples % n
        if rest:
            yield from ember.randperm(n, generator=g).tolist()[:rest]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order.

    Example:
        >>> from ember.utils.data import SubsetRandomSampler
        >>> sorted(SubsetRandomSampler([5, 7, 9]))
        [5, 7, 9]
    """

    def __init__(self, indices: Sequence[int], generator: ember.Generator | None = None
                 ) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in ember.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``weights``, each drawn with probability proportional to
    its weight (``torch.multinomial`` semantics).

    Example:
        >>> from ember.utils.data import WeightedRandomSampler
        >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], 3))
        [1, 1, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: ember.Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = ember.as_tensor(weights, dtype=ember.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        wn = w.cpu().numpy()
        if not np.all(np.isfinite(wn)) or np.any(wn < 0):
            raise RuntimeError("WeightedRandomSampler: weights must be finite and "
                               "non-negative")
        if wn.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: the weights sum to zero, so no index "
                               "can be drawn")
        if not replacement and num_samples > int(np.count_nonzero(wn)):
            raise RuntimeError(f"cannot sample n_sample={num_samples} > "
                               f"{int(np.count_nonzero(wn))} non-zero weights without "
                               "replacement")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        w = self.weights.cpu().numpy()
        u = ember.rand(self.num_samples if self.replacement else len(w), dtype=ember.float64,
                       generator=self.generator).numpy()
        if self.replacement:
            # inverse CDF: the first index whose cumulative weight exceeds u * total
            cdf = np.cumsum(w)
            idx = np.searchsorted(cdf, u * cdf[-1], side="right")
            idx = np.minimum(idx, len(w) - 1)
        else:
            # Efraimidis-Spirakis: the k largest u**(1/w) are a weighted sample without
            # replacement; zero weights get -inf and are never picked
            with np.errstate(divide="ignore"):
                keys = np.where(w > 0, np.log(np.maximum(u, 1e-300)) / w, -np.inf)
            idx = np.argsort(-keys, kind="stable")[:self.num_samples]
        yield from idx.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Example:
        >>> from ember.utils.data import BatchSampler, SequentialSampler
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
