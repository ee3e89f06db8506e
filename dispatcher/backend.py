"""The base class a backend plugin fills in (see ``hookspecs.ember_backend``)."""
from __future__ import annotations

__all__ = ["Backend", "API_VERSION"]

#: The backend API this ember implements. A plugin declaring another one is rejected.
API_VERSION = 1


class Backend:
    """One device type's implementation: memory, copies, synchronisation and kernels.

    Subclass it, set the class attributes, and return an instance from the plugin's
    ``ember_backend`` hook::

        class MyBackend(Backend):
            name = "mydevice"
            device_type = "mydevice"
            version = "0.1"
            def device_count(self): return 1
            def allocate(self, nbytes, index): ...
            kernels = {"add": my_add, ...}
    """
    name: str = ""
    version: str = "0"
    api_version: int = API_VERSION
    device_type: str = ""
    #: host-addressable storage (CPU-like): numpy views and from_numpy share memory.
    host_accessible: bool = False
    kernels: dict = {}
    #: optional: an object (usually the plugin's package) whose functions users reach as
    #: ``ember.<device_type>.<name>`` — is_available, device_count, synchronize,
    #: memory_stats, empty_cache, Stream, ... (see ``ember.device_namespace``).
    device_api: object = None
    #: whether a child made by ``os.fork`` may go on using this backend once the parent
    #: started it (a driver with threads or device contexts: no). A backend that is not
    #: fork-safe and was started in the parent raises "Cannot re-initialize <type> in
    #: forked subprocess" in the child; DataLoader workers then use 'spawn'.
    fork_safe: bool = False
    #: optional (``ember.compile``'s default compiler): ``compile_elementwise(group)`` gets
    #: an ``ember.dispatcher.fusion.FusedGroup`` (consecutive elementwise calls, as functor
    #: applications on operands) and returns a callable ``(storages, byte_offsets, values,
    #: n)`` that runs them over ``n`` elements as one kernel, or None to leave them to the
    #: kernels one by one (docs/plugins.md).
    compile_elementwise = None
    #: optional: ``prepare_elementwise(groups)`` gets all of a graph's groups for this device
    #: before ``compile_elementwise`` is asked for each one, so that their kernels can be
    #: built together (the CPU backend runs its C++ compiler on the uncached ones in
    #: parallel); errors are left to ``compile_elementwise``
    prepare_elementwise = None
    #: whether ``compile_elementwise`` takes groups with a two-level layout
    #: (``FusedGroup.inner`` set: broadcast rows and columns, outer-strided operands; see
    #: ``ember.dispatcher.fusion``); without it, groups only hold contiguous and
    #: single-element operands
    fuses_broadcasts: bool = False
    #: whether ``compile_elementwise`` takes groups that end in a reduction
    #: (``FusedGroup.reduction`` set: a sum or mean over rows of ``inner`` elements, then
    #: elementwise calls over the outputs; see ``ember.dispatcher.fusion``)
    fuses_reductions: bool = False
    #: optional (``ember.profiler``'s device-time columns): an object with ``start()``
    #: (record the device time of the kernels launched from now on), ``mark()`` (an int
    #: marking this point: opencl counts launches, cuda records an event),
    #: ``elapsed_ns(begin, end)`` (the device time of the kernels queued between two marks,
    #: waiting for them) and ``stop()``. Without one, an asynchronous backend's ops show
    #: only the time their launch took on the host.
    device_timer = None

    def record_launches(self, fn):
        """``ember.compile``'s replay plans (``mode="reduce-overhead"``): run ``fn()``, one
        recorded kernel call or fused kernel whose memory and arguments are the same on
        every run of the plan, and return a function of no arguments that repeats what it
        enqueued without running its Python code (CUDA graphs' idea), or None: the plan
        then runs ``fn`` each time. A backend returns None when the call did something a
        repeat would not redo (a wait, a host transfer, an error record, memory it
        allocated and freed). The default records nothing."""
        fn()
        return None

    def is_initialized(self) -> bool:
        """Whether the device driver has started in this process (default: yes once the
        backend is loaded, the safe answer for a backend that does not say)."""
        return True

    def device_count(self) -> int:
        return 0

    def device_name(self, index: int) -> str:
        return f"{self.device_type}:{index}"

    def allocate(self, nbytes: int, index: int):
        raise NotImplementedError(f"backend {self.name!r} does not implement allocate()")

    def allocator(self, index: int):
        """A one-argument ``alloc(nbytes)`` for device ``index`` (the dispatcher's hot path
        caches it); backends may return their storage constructor directly."""
        return lambda nbytes: self.allocate(nbytes, index)

    def copy_from_host(self, storage, byte_offset: int, host_buffer) -> None:
        raise NotImplementedError(f"backend {self.name!r} does not implement copy_from_host()")

    def copy_to_host(self, storage, byte_offset: int, nbytes: int):
        raise NotImplementedError(f"backend {self.name!r} does not implement copy_to_host()")

    def wrap_host_buffer(self, obj):
        """Host backends only: a storage viewing ``obj``'s memory without a copy."""
        raise NotImplementedError(f"backend {self.name!r} cannot wrap host memory")

    def synchronize(self, index: int | None = None) -> None:
        return None

    # ---- sharing storage between processes (optional; ember.multiprocessing) -------------
    #: the Python types of this backend's storage objects, which ember.multiprocessing
    #: teaches multiprocessing's pickler to send as share_storage handles
    storage_types: tuple = ()

    def share_storage(self, storage):
        """Move ``storage``'s bytes into memory other processes can map, in place (every
        tensor viewing this storage object sees the move; idempotent), and return a
        picklable handle that ``storage_from_handle`` maps in another process without a
        copy.

        A handle ``("fd", fd, nbytes)`` names a file descriptor owned by the storage (valid
        while it lives): ``ember.multiprocessing`` passes such descriptors to the receiving
        process itself (SCM_RIGHTS), so the memory needs no name and dies with its last
        holder. Any other handle (say ``("cuda_ipc", bytes, ...)``) is pickled as is.
        """
        raise RuntimeError(f"tensors of device {self.device_type!r} cannot be shared between "
                           f"processes: backend {self.name!r} has no sharing path. Move them "
                           "to the CPU first (tensor.cpu()).")

    def storage_from_handle(self, handle):
        """The storage a ``share_storage`` handle names, mapped without a copy. For an
        ``("fd", fd, nbytes)`` handle, ``fd`` belongs to the caller (which closes it); the
        storage keeps its own duplicate."""
        raise RuntimeError(f"backend {self.name!r} cannot open storage shared by another "
                           f"process (handle kind {handle[0]!r})")

    def is_shared(self, storage) -> bool:
        """Whether ``storage`` already lives in memory other processes can map."""
        return False

    def set_num_threads(self, n: int) -> None:
        return None

    def get_num_threads(self) -> int:
        return 1
