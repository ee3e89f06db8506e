"""The CPU backend as an ember plugin: host memory, the thread pool and C++ kernels.

This module imports only ``ember.dispatcher`` (the dependency rule) and the compiled
extension ``ember_cpu._C``.
"""
from __future__ import annotations

import os

from ember.dispatcher import Backend, hookimpl
from ember.dispatcher.codegen.cxx import check_extension
from ember.dispatcher.schema import OPS

from . import __version__
from . import _C, fusion
from ember.dispatcher.warn import warn as _warn


def _load_blas() -> None:
    """OpenBLAS from the scipy-openblas32 wheel (a dependency). Without it (an offline
    machine that lacks the wheel) GEMMs fall back to ember's C++ loop, with a warning."""
    try:
        import scipy_openblas32 as sob
    except ImportError:
        _warn("ember-cpu: scipy-openblas32 is not installed; matrix products use "
              "ember's slow C++ loop (pip install scipy-openblas32)", RuntimeWarning)
        return
    _C.load_blas(os.path.join(sob.get_lib_dir(), sob.get_library(True)))


def _onednn_library() -> str | None:
    """libdnnl.so.3 from the onednn-cpu-gomp wheel (the ``ember-cpu[onednn]`` extra), or the
    file EMBER_ONEDNN_LIBRARY names; None when neither is there."""
    path = os.environ.get("EMBER_ONEDNN_LIBRARY")
    if path:
        return path
    from importlib import metadata
    try:
        files = metadata.distribution("onednn-cpu-gomp").files or ()
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == "libdnnl.so.3":
            return str(f.locate())
    return None


def _load_onednn() -> None:
    """oneDNN for float32 dense convolutions and matrix products when it is installed
    (optional); EMBER_ONEDNN=0 keeps ember's own kernels."""
    if os.environ.get("EMBER_ONEDNN", "1") == "0":
        return
    path = _onednn_library()
    if path is None:
        return
    try:
        _C.load_onednn(path)
    except OSError as e:
        _warn(f"ember-cpu: oneDNN not used ({e}); convolutions run ember's own kernels",
              RuntimeWarning)


class CPUBackend(Backend):
    """Host memory (``_C.Storage``, shared with NumPy and between processes) and the
    kernels of ``_C``: every schema op it implements; the others run as composites."""
    name = "cpu"
    version = __version__
    device_type = "cpu"
    host_accessible = True
    #: host memory, and a thread pool that is rebuilt in a forked child (pthread_atfork in
    #: threadpool.cpp): a child forked at any time can use the CPU
    fork_safe = True

    def __init__(self):
        check_extension("ember-cpu", _C.KERNELS, _C.OPS_TABLE_HASH, helpers={"storage_copy"})
        _load_blas()
        _load_onednn()
        # every kernel _C registered (generated or hand-written), by op name
        self.kernels = {name: getattr(_C, name) for name in _C.KERNELS if name in OPS}

    def device_count(self) -> int:
        return 1

    #: fused groups may hold broadcast and outer-strided operands (ember.dispatcher.fusion)
    fuses_broadcasts = True
    fuses_reductions = True

    def compile_elementwise(self, group):
        """ember.compile's fused groups as generated C++ (``ember_cpu.fusion``)."""
        return fusion.compile_elementwise(group)

    def prepare_elementwise(self, groups):
        """A graph's groups before ``compile_elementwise``: their C++ compiled in parallel."""
        fusion.prepare_elementwise(groups)

    # oneDNN for float32 convolution and matrix products, when installed
    # (ember.backends.mkldnn)
    def onednn_available(self) -> bool:
        return _C.onednn_loaded()

    def onednn_enabled(self) -> bool:
        return _C.onednn_enabled()

    def set_onednn_enabled(self, on: bool) -> None:
        _C.set_onednn_enabled(bool(on))

    def device_name(self, index: int) -> str:
        extra = ", oneDNN" if _C.onednn_enabled() else ""
        return f"cpu ({os.cpu_count()} cores, {_C.get_num_threads()} threads{extra})"

    def allocate(self, nbytes: int, index: int):
        return _C.Storage(nbytes)

    def allocator(self, index: int):
        return _C.Storage

    def copy_from_host(self, storage, byte_offset: int, host_buffer) -> None:
        src = _C.Storage.from_buffer(host_buffer)
        _C.storage_copy(storage, byte_offset, src, 0, src.nbytes)

    def copy_to_host(self, storage, byte_offset: int, nbytes: int):
        # host memory already: a zero-copy window of the storage
        return memoryview(storage)[byte_offset:byte_offset + nbytes]

    def wrap_host_buffer(self, obj):
        return _C.Storage.from_buffer(obj)

    # shared memory: an anonymous shared-memory file per storage, passed as a descriptor
    storage_types = (_C.Storage,)

    def share_storage(self, storage):
        return ("fd", storage.share_(), storage.nbytes)

    def storage_from_handle(self, handle):
        kind, fd, nbytes = handle
        if kind != "fd":
            raise RuntimeError(f"the CPU backend cannot open a {kind!r} shared-storage handle")
        return _C.Storage.from_shared_fd(fd, nbytes)

    def is_shared(self, storage) -> bool:
        return storage.is_shared

    def set_num_threads(self, n: int) -> None:
        _C.set_num_threads(n)

    def get_num_threads(self) -> int:
        return _C.get_num_threads()


@hookimpl
def ember_backend():
    return CPUBackend()
