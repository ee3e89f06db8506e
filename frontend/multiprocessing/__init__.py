"""``ember.multiprocessing``: Python's ``multiprocessing`` that sends tensors through shared
memory, as ``torch.multiprocessing``.

It is a drop-in replacement: everything ``multiprocessing`` exports is here (``Process``,
``Queue``, ``Pipe``, ``Pool``, ``get_context``, ...), plus ``spawn``. Importing it teaches
multiprocessing's pickler to move a tensor's storage into shared memory once and send a
handle, which the receiver maps without a copy, so in-place updates are seen by every
process (Hogwild! training)::

    import ember
    import ember.multiprocessing as mp

    def work(t):
        t.add_(1)                      # the parent sees this

    if __name__ == "__main__":
        t = ember.zeros(3).share_memory_()
        p = mp.get_context("spawn").Process(target=work, args=(t,))
        p.start(); p.join()
        assert t.tolist() == [1.0, 1.0, 1.0]

Shared memory is an anonymous file handed over as a descriptor: nothing appears in
``/dev/shm``, and it is freed when the last process using it exits, even when killed.
A process that sent tensors must live until the receivers have taken them from the queue
(at exit it waits up to ``reductions.exit_wait_s`` seconds for them).
See ``docs/multiprocessing.md``.
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403  (the drop-in part)

from . import reductions
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, spawn,
                    start_processes)

_STRATEGIES = frozenset({"file_descriptor"})
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    """The ways tensors can be shared; only ``"file_descriptor"`` (descriptors passed over
    a Unix socket, no names in ``/dev/shm``)."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current strategy for sharing tensors between processes: ``"file_descriptor"``.

    Example:
        >>> import ember.multiprocessing
        >>> ember.multiprocessing.get_sharing_strategy()
        'file_descriptor'
    """
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how tensors are shared (see ``get_all_sharing_strategies``)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported; ember shares "
                         f"tensors by {sorted(_STRATEGIES)}")
    _strategy = new_strategy


__all__ = ["ProcessContext", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "start_processes", "get_all_sharing_strategies", "get_sharing_strategy",
           "set_sharing_strategy", "reductions"]
__all__ += multiprocessing.__all__

reductions.init_reductions()
