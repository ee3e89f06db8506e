"""``DistributedSampler``: each rank of a data-parallel job reads its own share.

PyTorch's semantics: the index list (shuffled with ``seed + epoch`` when ``shuffle``) is
padded by repeating its start (or truncated with ``drop_last``) to a multiple of the
number of replicas, then rank ``r`` takes every ``num_replicas``-th index from ``r``, so
every rank gets the same count. Call ``set_epoch(e)`` each epoch for a new shuffle.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import ember
import ember.distributed as dist

from .sampler import Sampler


class DistributedSampler(Sampler[int]):
    """Gives each of ``num_replicas`` processes its own share of the indices of ``dataset``.

    Rank r takes every ``num_replicas``-th index starting at r. Without ``drop_last`` the
    index list is padded with its first indices to a multiple of ``num_replicas`` (every
    rank gets the same number); with it, the tail is dropped. With ``shuffle`` the order
    is a permutation seeded by ``seed + epoch``: call :meth:`set_epoch` at the start of
    each epoch so the ranks agree on a new one.

    Args:
        dataset: a sized dataset.
        num_replicas (int, optional): the number of processes; the world size of the
            default process group if None.
        rank (int, optional): this process's rank; the default group's if None.
        shuffle (bool): permute the indices each epoch. Default: True.
        seed (int): the base seed of the permutation (the same on every rank). Default: 0.
        drop_last (bool): drop the tail instead of padding. Default: False.

    Example:
        >>> from ember.utils.data import DistributedSampler
        >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
        [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            if not dist.is_initialized():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the shuffle (with ``seed``): call it before each
        epoch so that every epoch draws a new order, the same on every rank."""
        self.epoch = epoch
