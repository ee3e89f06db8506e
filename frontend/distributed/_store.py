"""Key-value stores (PyTorch's ``Store`` API): ``HashStore`` in this process and
``PrefixStore`` over another store. ember's ranks meet through MPI, so
``init_process_group`` needs no store; these serve code that uses a store directly.
``FileStore`` and ``TCPStore`` (stores shared between processes) are not implemented.

Keys are strings; values are given as ``str`` or ``bytes`` and returned as ``bytes``.
"""
from __future__ import annotations

import collections
import threading
import time
from datetime import timedelta

from ._backend import DistStoreError, QueueEmptyError

__all__ = ["Store", "HashStore", "PrefixStore", "FileStore", "TCPStore"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)


def _bytes(value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):       # PyTorch's stores also take lists of bytes
        return bytes(value)
    raise TypeError(f"store values are str or bytes, got {type(value).__name__}")


class Store:
    """The key-value store interface: ``set``/``get``, ``add`` (a counter),
    ``compare_set``, ``wait``/``check`` for keys, ``delete_key``, ``num_keys``, ``append``,
    ``multi_get``/``multi_set``, queues (``queue_push``/``queue_pop``/``queue_len``) and a
    ``timeout`` for the waiting calls. Subclasses implement the methods; here each raises
    ``NotImplementedError``.
    """

    def __init__(self):
        self._timeout = _DEFAULT_TIMEOUT

    @property
    def timeout(self) -> timedelta:
        """How long ``get``, ``wait`` and blocking ``queue_pop`` wait for a key."""
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        """Set :attr:`timeout`."""
        self._timeout = timeout

    def _missing(self, name):
        raise NotImplementedError(f"{type(self).__name__}.{name}() is not implemented: "
                                  "subclasses of Store implement the store's methods")

    def set(self, key: str, value) -> None:
        """Set ``key`` to ``value`` (str or bytes)."""
        self._missing("set")

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the store's ``timeout`` for it to be set
        (``DistStoreError`` after that)."""
        self._missing("get")

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the counter ``key`` (0 if unset) and return the new value."""
        self._missing("add")

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if its value is ``expected_value`` (or if it is
        unset and ``expected_value`` is empty); returns the value it has afterwards
        (``expected_value`` when unset and not set)."""
        self._missing("compare_set")

    def wait(self, keys, timeout: timedelta | None = None) -> None:
        """Wait until every key of ``keys`` is set (``DistStoreError`` after ``timeout``,
        default :attr:`timeout`)."""
        self._missing("wait")

    def check(self, keys) -> bool:
        """Whether every key of ``keys`` is set (no waiting)."""
        self._missing("check")

    def delete_key(self, key: str) -> bool:
        """Delete ``key``; whether it was there."""
        self._missing("delete_key")

    def num_keys(self) -> int:
        """The number of keys set."""
        self._missing("num_keys")

    def append(self, key: str, value) -> None:
        """Append ``value`` to the value of ``key`` (set it if unset)."""
        self._missing("append")

    def multi_get(self, keys) -> list:
        """The values of ``keys`` (waiting for each as :meth:`get` does)."""
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values) -> None:
        """Set each key of ``keys`` to the value at the same position of ``values``."""
        if len(keys) != len(values):
            raise ValueError(f"multi_set(): {len(keys)} keys but {len(values)} values")
        for k, v in zip(keys, values):
            self.set(k, v)

    def queue_push(self, key: str, value) -> None:
        """Append ``value`` to the queue ``key``."""
        self._missing("queue_push")

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        """Remove and return the first value of the queue ``key``: waits up to
        :attr:`timeout` for one if ``block``, else raises ``QueueEmptyError``."""
        self._missing("queue_pop")

    def queue_len(self, key: str) -> int:
        """The number of values in the queue ``key``."""
        self._missing("queue_len")

    def list_keys(self) -> list:
        """The keys set."""
        self._missing("list_keys")

    def has_extended_api(self) -> bool:
        """Whether the store has ``append``, ``multi_get`` and ``multi_set``."""
        return False


class HashStore(Store):
    """A thread-safe in-memory store for the threads of one process.

    >>> import ember.distributed as dist
    >>> store = dist.HashStore()
    >>> store.set("epoch", "3")
    >>> store.get("epoch"), store.add("steps", 5), store.add("steps", 2)
    (b'3', 5, 7)
    """

    def __init__(self):
        super().__init__()
        self._data: dict = {}
        self._queues: dict = collections.defaultdict(collections.deque)
        self._changed = threading.Condition()

    def _wait_for(self, ready, timeout: timedelta | None, what: str):
        limit = (timeout or self._timeout).total_seconds()
        deadline = time.monotonic() + limit
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                raise DistStoreError(f"{what}: Wait timeout after {limit:g} s")
            self._changed.wait(left)

    def set(self, key: str, value) -> None:
        """Set ``key`` to ``value`` (str or bytes)."""
        with self._changed:
            self._data[key] = _bytes(value)
            self._changed.notify_all()

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the store's ``timeout`` for it to be set."""
        with self._changed:
            self._wait_for(lambda: key in self._data, None, f"HashStore.get({key!r})")
            return self._data[key]

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the counter ``key`` (0 if unset) and return the new value."""
        with self._changed:
            try:
                value = int(self._data.get(key, b"0")) + int(amount)
            except ValueError:
                raise ValueError(f"HashStore.add({key!r}): the key holds "
                                 f"{self._data[key]!r}, not a number") from None
            self._data[key] = str(value).encode()
            self._changed.notify_all()
            return value

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is unset and
        ``expected_value`` is empty); returns the value afterwards."""
        expected, desired = _bytes(expected_value), _bytes(desired_value)
        with self._changed:
            current = self._data.get(key)
            if (current is None and expected == b"") or current == expected:
                self._data[key] = desired
                self._changed.notify_all()
                return desired
            return expected if current is None else current

    def wait(self, keys, timeout: timedelta | None = None) -> None:
        """Wait until every key of ``keys`` is set."""
        with self._changed:
            self._wait_for(lambda: all(k in self._data for k in keys), timeout,
                           f"HashStore.wait({list(keys)!r})")

    def check(self, keys) -> bool:
        """Whether every key of ``keys`` is set."""
        with self._changed:
            return all(k in self._data for k in keys)

    def delete_key(self, key: str) -> bool:
        """Delete ``key``; whether it was there."""
        with self._changed:
            return self._data.pop(key, None) is not None

    def num_keys(self) -> int:
        """The number of keys set."""
        with self._changed:
            return len(self._data)

    def append(self, key: str, value) -> None:
        """Append ``value`` to the value of ``key`` (set it if unset)."""
        with self._changed:
            self._data[key] = self._data.get(key, b"") + _bytes(value)
            self._changed.notify_all()

    def queue_push(self, key: str, value) -> None:
        """Append ``value`` to the queue ``key``."""
        with self._changed:
            self._queues[key].append(_bytes(value))
            self._changed.notify_all()

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        """Remove and return the first value of the queue ``key``."""
        with self._changed:
            if not block and not self._queues[key]:
                raise QueueEmptyError(f"HashStore.queue_pop({key!r}): queue is empty")
            self._wait_for(lambda: bool(self._queues[key]), None,
                           f"HashStore.queue_pop({key!r})")
            return self._queues[key].popleft()

    def queue_len(self, key: str) -> int:
        """The number of values in the queue ``key``."""
        with self._changed:
            return len(self._queues.get(key, ()))

    def list_keys(self) -> list:
        """The keys set."""
        with self._changed:
            return list(self._data)

    def has_extended_api(self) -> bool:
        """True: ``append``, ``multi_get`` and ``multi_set`` are there."""
        return True


class PrefixStore(Store):
    """``store`` seen through a key prefix: key ``k`` is ``prefix + "/" + k`` in
    ``store`` (so that several users of one store do not collide).

    >>> import ember.distributed as dist
    >>> base = dist.HashStore()
    >>> dist.PrefixStore("trainer", base).set("step", "1")
    >>> base.get("trainer/step")
    b'1'
    """

    def __init__(self, prefix: str, store: Store):
        super().__init__()
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore(): store must be an ember.distributed.Store, got "
                            f"{type(store).__name__}")
        self._prefix = prefix
        self._store = store
        self._timeout = store.timeout

    @property
    def underlying_store(self) -> Store:
        """The store the keys go to."""
        return self._store

    def _key(self, key: str) -> str:
        return f"{self._prefix}/{key}"

    def set_timeout(self, timeout: timedelta) -> None:
        """Set the timeout (of the underlying store too)."""
        self._timeout = timeout
        self._store.set_timeout(timeout)

    def set(self, key: str, value) -> None:
        """Set ``key`` to ``value``."""
        self._store.set(self._key(key), value)

    def get(self, key: str) -> bytes:
        """The value of ``key``."""
        return self._store.get(self._key(key))

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the counter ``key``."""
        return self._store.add(self._key(key), amount)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """``compare_set`` on the prefixed key."""
        return self._store.compare_set(self._key(key), expected_value, desired_value)

    def wait(self, keys, timeout: timedelta | None = None) -> None:
        """Wait until every key of ``keys`` is set."""
        self._store.wait([self._key(k) for k in keys], timeout)

    def check(self, keys) -> bool:
        """Whether every key of ``keys`` is set."""
        return self._store.check([self._key(k) for k in keys])

    def delete_key(self, key: str) -> bool:
        """Delete ``key``; whether it was there."""
        return self._store.delete_key(self._key(key))

    def num_keys(self) -> int:
        """The number of keys of the underlying store (all prefixes), as PyTorch's."""
        return self._store.num_keys()

    def append(self, key: str, value) -> None:
        """Append ``value`` to the value of ``key``."""
        self._store.append(self._key(key), value)

    def queue_push(self, key: str, value) -> None:
        """Append ``value`` to the queue ``key``."""
        self._store.queue_push(self._key(key), value)

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        """Remove and return the first value of the queue ``key``."""
        return self._store.queue_pop(self._key(key), block)

    def queue_len(self, key: str) -> int:
        """The number of values in the queue ``key``."""
        return self._store.queue_len(self._key(key))

    def list_keys(self) -> list:
        """The keys under this prefix, without it."""
        start = self._key("")
        return [k[len(start):] for k in self._store.list_keys() if k.startswith(start)]

    def has_extended_api(self) -> bool:
        """Whether the underlying store has the extended API."""
        return self._store.has_extended_api()


class FileStore(Store):
    """PyTorch's store in a shared file: not implemented (ember's ranks meet through MPI,
    so ``init_process_group`` needs no store); constructing one raises
    ``NotImplementedError``."""

    def __init__(self, file_name: str, world_size: int = -1):
        raise NotImplementedError(
            "ember.distributed.FileStore is not implemented: ember's processes meet through "
            "MPI (launch with `python -m ember.distributed.run -n N script.py`), so "
            "init_process_group needs no store; use HashStore within one process")


class TCPStore(Store):
    """PyTorch's store served over TCP: not implemented (ember's ranks meet through MPI);
    constructing one raises ``NotImplementedError``."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout: timedelta = _DEFAULT_TIMEOUT,
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True):
        raise NotImplementedError(
            "ember.distributed.TCPStore is not implemented: ember's processes meet through "
            "MPI (launch with `python -m ember.distributed.run -n N script.py`), not a "
            "TCP rendezvous, so init_process_group needs no store; use HashStore within one "
            "process")
