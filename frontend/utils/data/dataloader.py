"""``DataLoader``: batches from a dataset through a sampler and a collate function.

With ``num_workers=0`` loading runs in the calling process; with ``num_workers > 0`` worker
processes (``_worker.py``) load batches ahead and return them through shared memory, in
order. The option checks (which combinations are mutually exclusive), the iteration rules
and the worker protocol follow ``torch.utils.data.DataLoader``.
"""
from __future__ import annotations

import functools
import itertools
import math
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from multiprocessing import util as mp_util

import numpy.random  # noqa: F401  (workers seed it: imported once, not in each fork)

import ember
from ember._device_ns import pinning_api
from ember.dispatcher.plugins import BACKENDS, ensure_loaded, fork_unsafe_devices
from ember.multiprocessing import reductions

from . import _worker
from ._collate import default_collate, default_convert
from ._worker import ExceptionWrapper, get_worker_info
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ember.dispatcher.warn import warn as _warn

__all__ = ["DataLoader", "get_worker_info"]

# PyTorch's type aliases of the two callbacks (opacus annotates with _collate_fn_t)
_collate_fn_t = Callable[[list], Any]
_worker_init_fn_t = Callable[[int], None]

# how often (seconds) the main process, waiting for a batch, checks that its workers live
_STATUS_INTERVAL = 0.1
# how long shutting down waits for a worker to finish its current batch before killing it
_SHUTDOWN_TIMEOUT = 5.0
# how long a failed read of a batch waits for the worker that sent it to be seen dead
_DEATH_GRACE = 2.0


class _InfiniteConstantSampler(Sampler):
    # an iterable dataset ignores indices; this only paces the batch sampler
    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``, as ``torch.utils.data.DataLoader``.

    >>> from ember.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(ember.arange(6.).view(3, 2))
    >>> [b[0].shape for b in DataLoader(ds, batch_size=2)]
    [ember.Size([2, 2]), ember.Size([1, 2])]

    ``shuffle=True`` draws a new permutation each epoch from ``generator`` (ember's
    default generator when ``None``, so ``ember.manual_seed`` makes it reproducible).
    ``batch_size=None`` turns batching off: each sample passes through
    ``default_convert`` alone.

    ``num_workers > 0`` loads in that many worker processes (started by Python's default
    start method, ``fork`` on Linux, unless ``multiprocessing_context`` says otherwise;
    ``spawn``, with a warning, when a backend that does not survive fork, such as
    opencl, has started in this process), each keeping ``prefetch_factor`` batches in
    flight; batches come back through shared memory in sampler order, identical to
    ``num_workers=0`` for the same seed. Worker ``i`` seeds
    ``random``, NumPy and ember with ``base_seed + i`` (``base_seed`` drawn from
    ``generator`` per epoch) and then calls ``worker_init_fn(i)``; ``get_worker_info()``
    tells dataset code which worker it runs in. A worker's exception is re-raised here
    with its traceback; a worker that dies raises ``RuntimeError`` (PyTorch's "DataLoader
    worker (pid N) is killed by signal: Killed."); ``timeout`` bounds the wait for one
    batch. ``persistent_workers=True`` keeps the workers between epochs. Workers die with
    the main process, even when it is killed.
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
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing. let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        multiprocessing_context = _context(multiprocessing_context, num_workers)

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
        self._iterator = None  # the persistent workers' iterator

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _SingleProcessDataLoaderIter | _MultiProcessingDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        if not self.persistent_workers:
            return _MultiProcessingDataLoaderIter(self)
        if self._iterator is None or self._iterator._shutdown:  # first, or after a failure
            self._iterator = _MultiProcessingDataLoaderIter(self)
        else:
            self._iterator._reset(self)
        return self._iterator

    def _base_seed(self) -> int:
        # drawn once per epoch whatever num_workers is, so the sampler's random stream (and
        # with it the batches) does not depend on the number of workers
        return int(ember.randint(0, 2**63 - 1, (), generator=self.generator).item())

    def _fetcher_factory(self):
        return functools.partial(_Fetcher, iterable=self._iterable, auto=self._auto_collation,
                                 collate_fn=self.collate_fn, drop_last=self.drop_last)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # TypeError if the iterable dataset has no __len__
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)


def _context(ctx, num_workers):
    if ctx is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process "
                         f"loading (num_workers > 0), but got num_workers={num_workers}")
    if isinstance(ctx, str):
        methods = multiprocessing.get_all_start_methods()
        if ctx not in methods:
            raise ValueError("multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context={ctx!r}")
        return multiprocessing.get_context(ctx)
    if not isinstance(ctx, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or "
                        "a string specifying the start method, but got "
                        f"multiprocessing_context={ctx}")
    return ctx


class _Fetcher:
    """Turns what the index sampler yields into a batch: indexing (or drawing from the
    iterable dataset) and collating. One per process that loads."""

    def __init__(self, dataset, *, iterable: bool, auto: bool, collate_fn, drop_last: bool):
        self.dataset = dataset
        self._auto = auto
        self._collate = collate_fn
        self._drop_last = drop_last
        self._data_iter = iter(dataset) if iterable else None
        self._ended = False

    def fetch(self, index):
        """The batch for ``index``; ``StopIteration`` when an iterable dataset is done."""
        if self._data_iter is not None:
            return self._collate(self._next_from_stream(index))
        ds = self.dataset
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


_warned_spawn: list = []


def _start_context(ctx):
    """The context workers start in: the user's, else Python's default, except that a
    default ``fork`` becomes ``spawn`` once a backend that does not survive fork (opencl,
    cuda) has started here, since a forked worker could not use it (and would hang in the
    OpenCL driver without ember's guard). Said once per process."""
    if ctx is not None:
        return ctx
    ctx = multiprocessing.get_context()
    if ctx.get_start_method() != "fork":
        return ctx
    unsafe = fork_unsafe_devices()
    if not unsafe:
        return ctx
    if not _warned_spawn:
        _warned_spawn.append(True)
        names = ", ".join(unsafe)
        _warn(
            f"DataLoader: {names} has been initialised in this process and does not survive "
            f"fork, so worker processes start with the 'spawn' start method instead of "
            f"'fork' (the dataset, collate_fn and worker_init_fn are pickled, and the main "
            f"module must guard its entry point with `if __name__ == '__main__':`). Pass "
            f"multiprocessing_context='fork' to keep fork for workers that never use "
            f"{names}, or 'spawn' to silence this warning.")
    return multiprocessing.get_context("spawn")


_warned_fallback: list = []


def _warn_fork_fallback(error: Exception) -> None:
    if _warned_fallback:
        return
    _warned_fallback.append(True)
    names = ", ".join(fork_unsafe_devices())
    _warn(
        f"DataLoader: the workers cannot start with 'spawn' ({type(error).__name__}: "
        f"{error}), so they start with 'fork' after all; a worker that uses {names} raises "
        "an error. Make the dataset, collate_fn and worker_init_fn picklable (no lambdas or "
        "local classes) to load with 'spawn'.")


def _device_count(backend) -> int:
    try:
        return int(backend.device_count())
    except Exception:
        return 0


def _pin(data):
    """Batches copied into pinned memory (tensors inside tuples, lists and dicts)."""
    if isinstance(data, ember.Tensor):
        return data.pin_memory() if data.device.type == "cpu" else data
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(d) for d in data)
    if isinstance(data, dict):
        return {k: _pin(v) for k, v in data.items()}
    return data


def _pin_memory_fn():
    """``_pin`` when an accelerator offers pinned memory, else None after PyTorch's
    warning."""
    if pinning_api() is not None:
        return _pin
    _warn_pin_memory()
    return None


def _warn_pin_memory():
    ensure_loaded()
    accelerators = sorted(dt for dt, b in BACKENDS.items()
                          if not b.host_accessible and _device_count(b) > 0)
    if not accelerators:
        msg = ("'pin_memory' argument is set as true but no accelerator is found, then device "
               "pinned memory won't be used.")
    else:
        msg = (f"'pin_memory' argument is set as true, but no ember backend "
               f"({', '.join(accelerators)}) offers pinned host memory yet, so batches stay in "
               "ordinary pageable memory.")
    _warn(msg)


class _BaseDataLoaderIter:
    """The base of a DataLoader's two iterators. They carry PyTorch's class names, which
    libraries test with ``isinstance`` and which error messages print."""

    def __iter__(self):
        return self


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """One pass over a DataLoader, fetching and collating in the calling process."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._pin = _pin_memory_fn() if loader.pin_memory else None
        self._index_iter = iter(loader._index_sampler)
        loader._base_seed()  # consumed as with workers: the same seed gives the same batches
        self._fetcher = loader._fetcher_factory()(loader.dataset)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        index = next(self._index_iter)  # StopIteration ends the epoch
        data = self._fetcher.fetch(index)
        return self._pin(data) if self._pin is not None else data


def _death_message(dead) -> str:
    """PyTorch's messages for dead workers ("DataLoader worker (pid 7) is killed by signal:
    Killed."), then the summary naming each worker and the likely cause."""
    sentences, reasons = [], []
    for wid, w in dead:
        code = w.exitcode
        if code is not None and code < 0:
            sig = signal.Signals(-code)
            sentence = (f"DataLoader worker (pid {w.pid}) is killed by signal: "
                        f"{signal.strsignal(sig)}.")
            if sig == signal.SIGBUS:
                sentence += (" It is possible that dataloader's workers are out of shared "
                             "memory. Please try to raise your shared memory limit.")
            reasons.append(f"worker {wid} (pid {w.pid}): killed by signal {sig.name}")
        else:
            sentence = (f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code "
                        f"{code}. Details are lost due to multiprocessing. Rerunning with "
                        "num_workers=0 may give better error trace.")
            reasons.append(f"worker {wid} (pid {w.pid}): exit code {code}")
        sentences.append(sentence)
    return (f"{' '.join(sentences)} DataLoader worker (pid(s) "
            f"{', '.join(str(w.pid) for _, w in dead)}) exited unexpectedly: "
            f"{'; '.join(reasons)}. A worker killed by SIGKILL may have run out of memory; an "
            "exit code comes from the dataset code calling sys.exit() or os._exit().")


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """One pass (or, with persistent workers, every pass) over a DataLoader whose batches
    are loaded by worker processes.

    Task ``k`` (the k-th item of the index sampler) goes to the next active worker's index
    queue; at most ``prefetch_factor * num_workers`` tasks are in flight. Results arrive on
    one shared queue in any order and are handed out in task order: ``_task_info[k]`` is
    ``(worker,)`` while task ``k`` is pending and ``(worker, data)`` once it arrived early.
    With an iterable dataset each worker iterates its own replica and reports its end; its
    remaining tasks are skipped.
    """

    def __init__(self, loader: DataLoader) -> None:
        reductions.init_reductions()  # batches travel through shared memory
        self._shutdown = True  # until the workers exist
        self._workers, self._index_queues = [], []
        # no reference to the loader: a persistent loader holds this iterator, and without
        # a cycle the iterator's __del__ shuts the workers down while its queues still work
        try:
            self._len = len(loader)
        except TypeError:
            self._len = None
        # chosen before pinning memory, which may start an accelerator's driver
        ctx = _start_context(loader.multiprocessing_context)
        self._pin = _pin_memory_fn() if loader.pin_memory else None
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._iterable = loader._iterable
        self._index_iter = iter(loader._index_sampler)
        base_seed = loader._base_seed()
        # the workers' shared-memory hand-overs listen on sockets in multiprocessing's
        # temporary directory; made here, the workers inherit it instead of each making
        # their own, which a killed (or terminated) worker would leave in /tmp, and this
        # process removes it, whatever became of them, when it exits
        mp_util.get_temp_dir()
        # a worker is killed with its parent by the kernel (prctl) only if the thread that
        # starts it lives as long as the process: the main thread; else it polls
        parent_watch = (os.getpid(), threading.current_thread() is threading.main_thread())
        self._shutdown = False
        try:
            try:
                self._start_workers(ctx, loader, base_seed, parent_watch)
            except Exception as e:
                if loader.multiprocessing_context is not None or self._workers or (
                        ctx.get_start_method() == "fork"):
                    raise
                # 'spawn' was our choice, and what spawn pickles (the dataset, collate_fn,
                # worker_init_fn) cannot be pickled: fork as the user's code expects, where
                # using the device in a worker raises an error instead of hanging
                _warn_fork_fallback(e)
                self._close_queues()
                self._start_workers(multiprocessing.get_context("fork"), loader, base_seed,
                                    parent_watch)
            self._reset(loader, first_iter=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def _start_workers(self, ctx, loader, base_seed, parent_watch) -> None:
        n = self._num_workers
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        for wid in range(n):
            iq = ctx.Queue()
            iq.cancel_join_thread()  # only indices: never worth waiting for at exit
            self._index_queues.append(iq)
            w = ctx.Process(
                target=_worker._worker_loop,
                args=(loader._fetcher_factory(), loader.dataset, iq, self._result_queue,
                      self._done_event, base_seed, loader.worker_init_fn, wid, n,
                      self._iterable, parent_watch),
                daemon=True)  # so they are terminated if the main process exits
            w.start()
            self._workers.append(w)

    def _close_queues(self) -> None:
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        if self._len is None:
            raise TypeError("this DataLoader's dataset has no len()")
        return self._len

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        n = self._num_workers
        self._send_idx = 0   # next task to hand out
        self._rcvd_idx = 0   # next task to return
        self._task_info: dict = {}
        self._active = [True] * n
        self._worker_cycle = itertools.cycle(range(n))
        if not first_iter:
            self._index_iter = iter(loader._index_sampler)
            loader._base_seed()  # keeps the generator in step with num_workers=0 runs
            # every worker acknowledges; results of an abandoned epoch come first and go
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            pending = n
            while pending:
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch * n):
            self._try_put_index()

    def _try_put_index(self) -> None:
        try:
            index = next(self._index_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._active[wid]:
                break
        else:
            return  # every worker's replica is exhausted
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._send_idx += 1

    def __next__(self):
        while True:
            # skip the tasks of workers whose iterable replica has ended
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # arrived earlier, out of order
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._active[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return self._pin(data) if self._pin is not None else data

    def _get_data(self):
        """The next ``(task, data)`` from any worker, within ``timeout``; a dead worker is
        reported instead of waited for."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _STATUS_INTERVAL
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            except Exception as e:
                # a batch in shared memory is fetched from the worker that sent it
                # (ConnectionRefusedError, ConnectionResetError, EOFError when it died):
                # say which worker died and how, as PyTorch does
                self._check_workers(grace=_DEATH_GRACE, cause=e)
                raise
            self._check_workers()
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _check_workers(self, grace: float = 0, cause: BaseException | None = None) -> None:
        """Raise if a worker died (waiting up to ``grace`` seconds for one to be seen
        dead): PyTorch's sentence per worker, then which workers and how."""
        deadline = time.monotonic() + grace
        while True:
            dead = [(wid, w) for wid, w in enumerate(self._workers)
                    if self._active[wid] and not w.is_alive()]
            if dead or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if not dead:
            return
        self._shutdown_workers()
        raise RuntimeError(_death_message(dead)) from cause

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            for w in self._workers:
                w.join(_SHUTDOWN_TIMEOUT)
            for q in self._index_queues:
                q.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.kill()
                    w.join(1)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
