"""The worker side of a multi-process ``DataLoader``, as ``torch.utils.data._utils.worker``.

A worker process runs ``_worker_loop``: it seeds its random number generators, runs
``worker_init_fn``, then answers ``(task index, sampler indices)`` requests from its index
queue with ``(task index, batch)`` on the shared result queue. Batches travel through
shared memory (``ember.multiprocessing``). An exception is sent back as an
``ExceptionWrapper`` holding the worker's traceback, and re-raised by the main process.

A worker dies with the main process, even one killed by SIGKILL and even while the worker
is stuck inside a dataset call: on Linux the kernel kills it (``prctl(PR_SET_PDEATHSIG)``),
elsewhere a watchdog thread polls the main process.
"""
from __future__ import annotations

import ctypes
import os
import queue
import random
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np

import ember
from ember.multiprocessing import reductions

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

#: how often (seconds) a waiting worker checks that the main process is still alive
STATUS_INTERVAL = 0.5
#: batch tensors smaller than this are copied through the result pipe rather than moved to
#: shared memory: below about 256 KiB the copy is the faster of the two (measured by
#: bench/bench_multiprocessing.py's cheap-items case), and a batch belongs to nobody else
INLINE_BELOW_BYTES = 128 << 10


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``
    and ``dataset`` (this worker's copy). Read-only."""
    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a ``DataLoader`` worker process, its ``WorkerInfo``; ``None`` in the main process.

    An ``IterableDataset`` uses it to give each worker a different shard::

        def __iter__(self):
            info = get_worker_info()
            if info is None:                      # loading in the main process
                return iter(range(self.n))
            return iter(range(info.id, self.n, info.num_workers))
    """
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, with its formatted traceback, picklable."""

    def __init__(self, exc_info=None, where: str = "in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the exception again, in the main process, with the worker's traceback in
        its message."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)  # KeyError would repr() the message
        try:
            exception = self.exc_type(msg)
        except Exception:
            # the type cannot be built from a single message: keep the text at least
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # no cycle exception -> traceback -> this frame -> exception: the iterator the
            # traceback holds (and its workers) goes as soon as the caller drops the error
            del exception


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's ``IterableDataset`` replica is exhausted."""
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Start a new epoch (persistent workers); the worker echoes it back."""


class _ManagerWatchdog:
    # a worker whose main process died (even by SIGKILL) exits instead of lingering. The
    # main process is usually the parent (fork, spawn), whose death re-parents the worker;
    # under forkserver the parent is the server, and the main process is polled instead
    def __init__(self, manager_pid: int | None = None):
        self.manager_pid = os.getppid() if manager_pid is None else manager_pid
        self.is_parent = os.getppid() == self.manager_pid
        self.manager_dead = False

    def is_alive(self) -> bool:
        if not self.manager_dead:
            if self.is_parent:
                self.manager_dead = os.getppid() != self.manager_pid
            else:
                self.manager_dead = not _pid_alive(self.manager_pid)
        return not self.manager_dead


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else (the pid was reused)
        return True
    return True


_PR_SET_PDEATHSIG = 1


def _kill_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent's thread that started it
    ends (Linux); False where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _die_with_manager(manager_pid: int, started_by_main_thread: bool) -> None:
    """Make sure this worker does not outlive the main process ``manager_pid``."""
    watchdog = _ManagerWatchdog(manager_pid)
    if watchdog.is_parent and started_by_main_thread and _kill_with_parent():
        if not watchdog.is_alive():  # it died before the request was made
            os._exit(1)
        return

    def watch():
        while watchdog.is_alive():
            time.sleep(STATUS_INTERVAL)
        os._exit(1)  # even if the worker's main thread is stuck in a dataset call
    threading.Thread(target=watch, name="ember-dataloader-watchdog", daemon=True).start()


def _seed_worker(base_seed: int, worker_id: int) -> int:
    # as PyTorch: base_seed + id for Python's random and ember; NumPy's global RNG from a
    # SeedSequence of both, so it never mirrors the other streams
    seed = base_seed + worker_id
    random.seed(seed)
    ember.manual_seed(seed)
    ss = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32])
    np.random.seed(ss.generate_state(4))
    return seed


def _worker_loop(fetcher_factory, dataset, index_queue, data_queue, done_event, base_seed,
                 init_fn, worker_id, num_workers, iterable, parent_watch=None):
    global _worker_info
    manager_pid, started_by_main_thread = parent_watch or (os.getppid(), False)
    _die_with_manager(manager_pid, started_by_main_thread)
    try:
        # unread batches are dropped at shutdown: do not wait for them at exit
        reductions.exit_wait_s = 0
        reductions.inline_below_bytes = INLINE_BELOW_BYTES
        ember.set_num_threads(1)  # N workers x all cores would oversubscribe the machine
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_factory(dataset)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        iteration_end = False
        watchdog = _ManagerWatchdog(manager_pid)
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=STATUS_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break  # the shutdown request itself may have been lost with its queue
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if init_exception is None:
                    fetcher = fetcher_factory(dataset)  # a fresh pass over the dataset
                continue
            if r is None:  # shut down
                break
            if done_event.is_set() or iteration_end:
                continue  # the main process no longer wants data from this epoch
            idx, index = r
            if init_exception is not None:
                data = init_exception  # this worker cannot load anything
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if iterable and isinstance(e, StopIteration):
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(
                            where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r  # free the batch now, not at the next request
    except KeyboardInterrupt:
        pass  # the main process is being interrupted too and shuts the workers down
    if done_event.is_set():
        # the main process stopped reading: exit without flushing what it will never take
        data_queue.cancel_join_thread()
        data_queue.close()
