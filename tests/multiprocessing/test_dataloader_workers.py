"""DataLoader(num_workers > 0): worker processes, seeding, order, errors and shutdown.

The oracle is the loader itself with ``num_workers=0``: for the same seed, workers must
yield exactly the same batches."""
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset,
                              get_worker_info)


class Items(Dataset):
    """Item i is (a tensor of i's, i, a string); some items take longer, so workers finish
    out of order."""

    def __init__(self, n=23, slow=()):
        self.n, self.slow = n, set(slow)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.slow:
            time.sleep(0.05)
        return {"x": ember.full((2, 3), float(i)), "i": i, "name": f"s{i}"}


def plain(batch):
    return {"x": batch["x"].tolist(), "i": batch["i"].tolist(), "name": batch["name"]}


def batches(loader, epochs=1):
    return [plain(b) for _ in range(epochs) for b in loader]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_yield_the_batches_of_the_main_process(method):
    def run(num_workers, **kw):
        g = ember.Generator().manual_seed(7)
        ctx = method if num_workers else None
        return batches(DataLoader(Items(slow={1, 2}), batch_size=4, shuffle=True, generator=g,
                                  num_workers=num_workers, multiprocessing_context=ctx,
                                  **kw), epochs=2)
    expected = run(0)
    assert sorted(i for b in expected[:6] for i in b["i"]) == list(range(23))
    assert run(2) == expected
    if method == "fork":  # (spawn: the same code path; start-up is slow on 2 cores)
        assert run(3, prefetch_factor=1, persistent_workers=True) == expected


def test_default_manual_seed_reproducible_whatever_num_workers():
    def run(num_workers):
        ember.manual_seed(11)
        loader = DataLoader(Items(), batch_size=5, shuffle=True, num_workers=num_workers)
        return batches(loader)
    assert run(0) == run(2) == run(1)


def test_batches_arrive_through_shared_memory():
    x = ember.arange(2 * 64 * 1024.).view(2, 64, 1024)  # 256 KiB items
    loader = DataLoader(TensorDataset(x, ember.arange(2)), batch_size=1, num_workers=2)
    (x0, y0), (x1, y1) = list(loader)
    assert x0.is_shared() and x1.is_shared()
    assert (x0[0] == x[0]).all().item() and (x1[0] == x[1]).all().item()
    # small tensors are cheaper to copy through the pipe than to share
    assert not y0.is_shared() and y0.tolist() == [0] and y1.tolist() == [1]


def test_unbatched_and_custom_collate():
    loader = DataLoader(list(range(5)), batch_size=None, num_workers=2)
    assert list(loader) == [0, 1, 2, 3, 4]
    loader = DataLoader(list(range(7)), batch_size=3, num_workers=2, collate_fn=tuple)
    assert list(loader) == [(0, 1, 2), (3, 4, 5), (6,)]
    np_loader = DataLoader([np.full(2, i) for i in range(4)], batch_size=2, num_workers=2)
    assert [b.tolist() for b in np_loader] == [[[0, 0], [1, 1]], [[2, 2], [3, 3]]]


# ---- worker info, seeding, init ---------------------------------------------------------------
class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.num_workers, info.seed, random.random(), np.random.rand(),
                float(ember.rand(1)), os.getpid())


def test_worker_info_and_per_worker_seeds():
    assert get_worker_info() is None
    g = ember.Generator().manual_seed(3)
    rows = [r for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=g,
                                  collate_fn=list) for r in b]
    by_worker = {}
    for wid, n, seed, *_, pid in rows:
        by_worker.setdefault(wid, set()).add((n, seed, pid))
    assert sorted(by_worker) == [0, 1]
    (n0, s0, p0), = by_worker[0]
    (n1, s1, p1), = by_worker[1]
    assert n0 == n1 == 2 and s1 == s0 + 1 and p0 != p1 != os.getpid()
    # batches 0 and 1 are the first draws of workers 0 and 1: different streams everywhere
    first0, first1 = rows[0], rows[2]
    assert all(a != b for a, b in zip(first0[3:6], first1[3:6]))
    # and reproducible: the same generator seed gives the same draws
    g = ember.Generator().manual_seed(3)
    again = [r for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=g,
                                   collate_fn=list) for r in b]
    assert [r[:6] for r in again] == [r[:6] for r in rows]


def _init(worker_id):
    info = get_worker_info()
    info.dataset.offset = 100 * (worker_id + 1)


class Offset(Dataset):
    offset = 0

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i + self.offset


def test_worker_init_fn_runs_in_each_worker_with_its_id():
    loader = DataLoader(Offset(), batch_size=1, num_workers=2, worker_init_fn=_init)
    assert [b.item() for b in loader] == [100, 201, 102, 203]
    with pytest.raises(RuntimeError, match="Cannot assign attributes"):
        DataLoader(Offset(), num_workers=1, worker_init_fn=_set_info).__iter__().__next__()


def _set_info(worker_id):
    get_worker_info().id = 5


class Shards(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_sharded_through_worker_info():
    for workers, bs in [(2, 3), (3, 2), (3, None)]:
        loader = DataLoader(Shards(10), batch_size=bs, num_workers=workers)
        seen = [x for b in loader for x in (b.tolist() if bs else [b])]
        assert sorted(seen) == list(range(10)), (workers, bs)
    persistent = DataLoader(Shards(7), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert sorted(x for b in persistent for x in b.tolist()) == list(range(7))


# ---- order, persistence, early exit -----------------------------------------------------------
def test_in_order_delivery_with_uneven_work():
    loader = DataLoader(Items(slow={0, 1, 4}), batch_size=2, num_workers=3, prefetch_factor=2)
    assert [i for b in batches(loader) for i in b["i"]] == list(range(23))


def test_persistent_workers_survive_epochs_and_early_break():
    loader = DataLoader(Items(12), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    pids = {w.pid for w in it._workers}
    next(it)  # abandon the epoch after one batch
    assert [i for b in batches(loader) for i in b["i"]] == list(range(12))
    assert iter(loader) is it and {w.pid for w in it._workers} == pids
    assert all(w.is_alive() for w in it._workers)
    workers = it._workers
    del it, loader
    for w in workers:
        w.join(10)
        assert not w.is_alive()


def test_workers_shut_down_after_epoch_and_when_abandoned():
    loader = DataLoader(Items(8), batch_size=2, num_workers=2)
    it = iter(loader)
    workers = it._workers
    list(it)
    assert all(not w.is_alive() for w in workers)  # joined at the end of the epoch
    it = iter(loader)
    next(it)
    workers = it._workers
    del it
    for w in workers:
        w.join(10)
        assert not w.is_alive()


# ---- errors -----------------------------------------------------------------------------------
class Failing(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"cannot load item {i}")
        if i == 7:
            raise KeyError("missing")
        return i


def test_worker_exception_is_reraised_with_its_traceback():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(ValueError) as e:
        next(it)
    msg = str(e.value)
    assert "Caught ValueError in DataLoader worker process 0" in msg
    assert "Traceback" in msg and "__getitem__" in msg and "cannot load item 5" in msg
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        next(it)  # later batches still arrive, in order
    assert next(it).tolist() == [8, 9]


def _fail_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def test_worker_init_fn_exception_is_reraised():
    loader = DataLoader(Offset(), batch_size=1, num_workers=1, worker_init_fn=_fail_init)
    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(loader)


class Dies(Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 4:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return i


@pytest.mark.parametrize("how,why", [("kill", "killed by signal SIGKILL"),
                                     ("exit", "exit code 3")])
def test_dead_worker_is_reported_not_waited_for(how, why):
    loader = DataLoader(Dies(how), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=f"DataLoader worker .* exited unexpectedly.*{why}"):
        list(loader)
    assert time.monotonic() - start < 10


class Sleepy(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(1.5 if i == 2 else 0)
        return i


def test_timeout():
    loader = DataLoader(Sleepy(), batch_size=1, num_workers=1, timeout=0.3)
    it = iter(loader)
    assert next(it).item() == 0 and next(it).item() == 1
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - start < 5


# ---- options ----------------------------------------------------------------------------------
def test_pin_memory_is_accepted_and_warns_like_pytorch():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = [b.tolist() for b in DataLoader(list(range(4)), batch_size=2, num_workers=2,
                                             pin_memory=True)]
    assert out == [[0, 1], [2, 3]]
    assert any("pin_memory" in str(x.message) for x in w)


def test_option_checks():
    with pytest.raises(ValueError, match="prefetch_factor option should be non-negative"):
        DataLoader(Items(), num_workers=1, prefetch_factor=-1)
    with pytest.raises(ValueError, match="valid start method"):
        DataLoader(Items(), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="context object"):
        DataLoader(Items(), num_workers=1, multiprocessing_context=3)
    loader = DataLoader(Items(), num_workers=2, multiprocessing_context=mp.get_context("fork"))
    assert loader.prefetch_factor == 2
