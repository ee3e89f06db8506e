"""``ember.futures``: the result of work that finishes later (``torch.futures``).

ember runs eagerly, so its own futures (``ember.jit.fork``) are finished when returned;
code written for PyTorch also makes them by hand, sets their results and chains callbacks
(captum wraps asynchronous forward functions in one).

>>> import ember
>>> fut = ember.futures.Future()
>>> doubled = fut.then(lambda f: f.value() * 2)
>>> fut.set_result(21)
>>> doubled.wait()
42
"""
from __future__ import annotations

import threading
from concurrent.futures import Future as _ConcurrentFuture

__all__ = ["Future", "collect_all", "wait_all"]


class Future(_ConcurrentFuture):
    """A value, or an exception, that is set once and read by ``wait()`` (blocking until
    it is set). ``Future[T]`` is a generic alias, as in PyTorch's annotations.

    Example:
        >>> f = ember.futures.Future()
        >>> f.done()
        False
        >>> f.set_result(ember.ones(2))
        >>> f.wait()
        tensor([1., 1.])
    """

    def wait(self):
        """The value, once set (blocking until then); an exception set with
        ``set_exception`` is raised here instead.

        Example:
            >>> f = ember.futures.Future()
            >>> f.set_result(3)
            >>> f.wait()
            3
        """
        return self.result()

    def value(self):
        """The value of a finished future (its exception is raised here).

        Example:
            >>> f = ember.futures.Future()
            >>> f.set_result("done")
            >>> f.value()
            'done'
        """
        return self.result()

    def then(self, callback) -> Future:
        """A new future holding ``callback(self)``, run when this one finishes (at once if
        it already has). An exception in the callback is set on the new future as a
        ``RuntimeError`` naming it, as PyTorch's.

        Example:
            >>> f = ember.futures.Future()
            >>> g = f.then(lambda fut: fut.value() + 1)
            >>> f.set_result(1)
            >>> g.wait()
            2
        """
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:  # (re-raised by out.wait())
                err = RuntimeError(f"the callback passed to Future.then() raised "
                                   f"{type(e).__name__}: {e}")
                err.__cause__ = e
                out.set_exception(err)
        self.add_done_callback(run)
        return out


def collect_all(futures) -> Future:
    """A future that finishes when every one of ``futures`` has, holding the list of them.

    Example:
        >>> a, b = ember.futures.Future(), ember.futures.Future()
        >>> both = ember.futures.collect_all([a, b])
        >>> a.set_result(1); b.set_result(2)
        >>> [f.value() for f in both.wait()]
        [1, 2]
    """
    futures = list(futures)
    out = Future()
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)
    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures) -> list:
    """The values of ``futures``, waiting for each (the first exception is raised).

    Example:
        >>> a = ember.futures.Future(); a.set_result(1)
        >>> ember.futures.wait_all([a])
        [1]
    """
    return [f.wait() for f in futures]
