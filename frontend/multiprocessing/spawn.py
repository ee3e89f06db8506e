"""``spawn(fn, args, nprocs)``: run ``fn(i, *args)`` in ``nprocs`` processes and report the
first failure with its traceback, as ``torch.multiprocessing.spawn``."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback

__all__ = ["ProcessContext", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "start_processes"]


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is shutting the processes down
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one ``spawn(..., join=False)``; ``join()`` waits for them."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the processes. True when all have exited
        successfully; False while some still run. The first failure terminates the others
        and raises ``ProcessRaisedException`` (with the child's traceback) or
        ``ProcessExitedException``."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0:
                failed = i
                break
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        self.sentinels.clear()
        p = self.processes[failed]
        q = self.error_queues[failed]
        if q.empty():
            code = p.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(f"process {failed} terminated with signal {name}",
                                             failed, p.pid, code, name)
            raise ProcessExitedException(f"process {failed} terminated with exit code {code}",
                                         failed, p.pid, code)
        tb = q.get()
        raise ProcessRaisedException(
            f"\n\n-- Process {failed} terminated with the following error:\n{tb}", failed, p.pid)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; join them
    (``join=True``) or return their ``ProcessContext``."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        error_queues.append(q)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process.

    >>> import ember.multiprocessing as mp
    >>> mp.spawn(print, args=("hello",), nprocs=2)  # doctest: +SKIP
    0 hello
    1 hello
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
