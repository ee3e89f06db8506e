"""How ``multiprocessing`` pickles tensors once ``ember.multiprocessing`` is imported.

A tensor crossing a process boundary (``Queue``, ``Pipe``, ``Pool``, ``Process`` arguments
under ``spawn``) is not copied into the pickle. Its storage moves to shared memory once
(``Tensor.share_memory_``, through the backend's ``share_storage``), and only a handle and
the view's metadata (shape, strides, offset, dtype, ``requires_grad``, ``.grad``) are sent;
the receiver maps the same memory (``storage_from_handle``), so in-place updates are seen
by both sides. PyTorch's ``torch.multiprocessing.reductions`` works the same way.

For CPU storage the handle is a file descriptor of an anonymous shared-memory file, passed
to the receiver over a Unix socket (``multiprocessing.reduction.DupFd``): the memory has no
name, and the kernel frees it when the last process holding it exits or is killed.

Within one process, every handle of the same memory maps to the same storage object
(``_SHARED``, keyed by the file's device and inode), so two views of one storage stay
views of one storage after the trip, and a tensor sent back to its owner is its own
storage again.
"""
from __future__ import annotations

import errno
import os
import threading
import time
import weakref
from multiprocessing import resource_sharer, util
from multiprocessing.queues import Queue
from multiprocessing.reduction import DupFd, ForkingPickler

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.allocator import OutOfMemoryError
from ember.dispatcher.device import to_device
from ember.dispatcher.plugins import backend_for, on_install

from .._tensor import Tensor
from ..nn import Parameter

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor", "reduce_storage",
           "rebuild_storage"]

# (st_dev, st_ino) of a shared-memory file -> weak reference to this process's storage
_SHARED: dict[tuple[int, int], weakref.ref] = {}
_LOCK = threading.RLock()

#: tensors whose storage is smaller than this many bytes, and not yet shared, are pickled
#: by value instead (0: never). Setting up shared memory costs a few hundred microseconds
#: (a new shared-memory file, its first page faults, a descriptor hand-over), more than
#: copying a small tensor through the pipe; but a copy is not shared, so only senders that
#: give their tensors away set it (DataLoader workers returning fresh batches).
inline_below_bytes = 0

#: seconds a process that sent tensors waits at exit for receivers to collect the
#: descriptors still pending (they are served by this process, so it must outlive the
#: hand-over); 0 turns the wait off (DataLoader workers: their unread batches are dropped)
exit_wait_s = 5.0


def _file_key(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def _remember(key, storage) -> None:
    def forget(ref, key=key):
        with _LOCK:
            if _SHARED.get(key) is ref:
                del _SHARED[key]
    try:
        ref = weakref.ref(storage, forget)
    except TypeError:  # a storage type without weak references: no de-duplication
        return
    with _LOCK:
        _SHARED[key] = ref


def _cached(key):
    with _LOCK:
        ref = _SHARED.get(key)
    return ref() if ref is not None else None


# ---- host memory running out ------------------------------------------------------------
def _is_out_of_memory(err: BaseException) -> bool:
    """A ``MemoryError``, or the ``OSError`` of a shared-memory file that could not be sized
    or mapped for lack of memory (``ENOMEM``: the address-space limit, ``ENOSPC``: no
    memory left for shared memory)."""
    if isinstance(err, MemoryError):
        return True
    if not isinstance(err, OSError):
        return False
    # the CPU backend's OSError carries the reason in its text (no errno attribute)
    return err.errno in (errno.ENOMEM, errno.ENOSPC) or "not enough shared memory" in str(err)


def _guard(what: str, nbytes: int, fn, *args):
    """``fn(*args)``, with running out of host memory reported as ``ember.OutOfMemoryError``
    naming ``what``; other errors pass unchanged."""
    try:
        return fn(*args)
    except OutOfMemoryError:
        raise
    except (MemoryError, OSError) as e:
        if not _is_out_of_memory(e):
            raise
        raise C.host_out_of_memory(what, nbytes, e) from None


def _share(backend, storage):
    """``backend.share_storage(storage)``: moves the storage into shared memory (once)."""
    return _guard(f"moving a tensor's storage into shared memory on {backend.device_type} "
                  f"(to send it to another process)", storage.nbytes, backend.share_storage,
                  storage)


# ---- storage --------------------------------------------------------------------------------
def reduce_storage(device_type: str, storage):
    """Pickle ``storage`` as a shared-memory handle (moving it there first, once)."""
    handle = _share(backend_for(device_type), storage)
    if handle[0] != "fd":
        return (rebuild_storage, (device_type, handle))
    _, fd, nbytes = handle
    _remember(_file_key(fd), storage)
    # DupFd: while a spawned child's arguments are pickled, the descriptor is inherited by
    # the child; otherwise this process serves it to the receiver over a Unix socket
    return (rebuild_storage, (device_type, ("fd", DupFd(fd), nbytes)))


def rebuild_storage(device_type: str, handle):
    backend = backend_for(device_type)
    what = f"mapping a {device_type} tensor's storage received from another process"
    if handle[0] != "fd":
        return _guard(what, None, backend.storage_from_handle, handle)
    _, dup, nbytes = handle
    fd = dup.detach()  # a descriptor of our own
    try:
        key = _file_key(fd)
        storage = _cached(key)
        if storage is None:
            storage = _guard(what, nbytes, backend.storage_from_handle, ("fd", fd, nbytes))
            _remember(key, storage)
        return storage
    finally:
        os.close(fd)


# ---- tensor ---------------------------------------------------------------------------------
def reduce_tensor(t):
    """Pickle a tensor as (storage handle, view metadata, requires_grad, grad)."""
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., putting "
            "it on the queue).")
    backend = backend_for(t.device.type)
    storage = C.host_storage(t)
    if (storage.nbytes < inline_below_bytes and backend.host_accessible
            and not backend.is_shared(storage)):
        data = _guard(f"the copy of a {t.device} tensor's storage sent by value to another "
                      f"process", storage.nbytes,
                      lambda: bytes(backend.copy_to_host(storage, 0, storage.nbytes)))
        return (rebuild_inline_tensor, (t.device.type, data, type(t), t.shape, t._stride,
                                        t._offset, t.dtype.name, str(t.device),
                                        t.requires_grad, t.grad))
    # raises, naming the device, where the backend has no sharing path
    _share(backend, storage)
    _register_storage_type(type(storage), t.device.type)
    # the storage object itself goes into the pickle, so the pickler's memo sends it once
    # per message however many views of it the message holds
    return (rebuild_tensor, (type(t), storage, t.shape, t._stride, t._offset, t.dtype.name,
                             str(t.device), t.requires_grad, t.grad))


def rebuild_tensor(cls, storage, shape, stride, offset, dtype, device, requires_grad, grad):
    t = C.new_tensor(storage, tuple(shape), tuple(stride), offset, D.to_dtype(dtype),
                     to_device(device), [0])
    if cls is not type(t):
        if issubclass(cls, Parameter):
            t = Parameter(t, requires_grad)
        else:
            t.__class__ = cls  # subclasses without slots of their own (as Parameter)
    t.requires_grad = requires_grad
    if grad is not None:
        t.grad = grad
    return t


def rebuild_inline_tensor(device_type, data, cls, shape, stride, offset, dtype, device,
                          requires_grad, grad):
    """A tensor sent by value (``inline_below_bytes``): a new storage holding ``data``."""
    backend = backend_for(device_type)

    def rebuild():
        storage = backend.allocate(len(data), to_device(device).index or 0)
        backend.copy_from_host(storage, 0, data)
        return storage
    storage = _guard(f"a {device} tensor's storage received by value from another process",
                     len(data), rebuild)
    return rebuild_tensor(cls, storage, shape, stride, offset, dtype, device, requires_grad,
                          grad)


# ---- registration ---------------------------------------------------------------------------
_STORAGE_TYPES: dict[type, str] = {}


def _register_storage_type(storage_type: type, device_type: str) -> None:
    if storage_type not in _STORAGE_TYPES:
        _STORAGE_TYPES[storage_type] = device_type

        def reduce(storage, device_type=device_type):
            return reduce_storage(device_type, storage)
        ForkingPickler.register(storage_type, reduce)


_INITIALISED: list = []


def init_reductions() -> None:
    """Teach ``multiprocessing``'s pickler (``ForkingPickler``, used by every ``Queue``,
    ``Pipe``, ``Pool`` and spawned ``Process``) to send tensors through shared memory.
    Called on import of ``ember.multiprocessing``; idempotent."""
    if _INITIALISED:
        return
    _INITIALISED.append(True)
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
    # a pickler copies the registry when it is made, so every backend's storage types are
    # registered as the backend loads (without loading plugins early)
    on_install(_register_backend_storage)


def _register_backend_storage(backend) -> None:
    for st in getattr(backend, "storage_types", ()):
        _register_storage_type(st, backend.device_type)


# ---- sender lifetime ------------------------------------------------------------------------
# A descriptor offered to another process is served by this process's resource sharer, so
# at exit it waits (at most exit_wait_s) until every one has been collected: `q.put(t)`
# followed by the sender's exit still delivers `t`. The hook runs among multiprocessing's
# exit finalizers after the queues were told to close (priority 10) and before the sharer's
# socket is unlinked (0). A queue's feeder thread pickles (and so offers descriptors) until
# it has flushed, so the hook first waits for the feeders that multiprocessing itself joins
# at exit (not those of queues with cancel_join_thread()). It is registered up front in
# every process (forked children clear the inherited registry).
def _joined_feeders() -> list:
    threads = []
    for f in list(getattr(util, "_finalizer_registry", {}).values()):
        if getattr(f, "_callback", None) is Queue._finalize_join:
            t = f._args[0]() if f._args else None
            if t is not None and t is not threading.current_thread():
                threads.append(t)
    return threads


def _drain_pending_descriptors() -> None:
    if exit_wait_s <= 0:
        return
    deadline = time.monotonic() + exit_wait_s
    for t in _joined_feeders():
        t.join(max(deadline - time.monotonic(), 0))
    cache = getattr(resource_sharer._resource_sharer, "_cache", None)
    if not cache:
        return
    while cache and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)  # the last descriptor leaves the cache just before it is sent


class _ExitHook:
    def install(self, _=None) -> None:
        util.Finalize(None, _drain_pending_descriptors, exitpriority=5)


_EXIT_HOOK = _ExitHook()
_EXIT_HOOK.install()
util.register_after_fork(_EXIT_HOOK, _ExitHook.install)
