"""The ``meta`` device: tensors with a shape, strides and a dtype but no data, as PyTorch's.

Every op runs on meta tensors by its meta function alone (the schema computes the output's
shape and dtype, its checks and errors included) and its kernel does nothing, so a model
can be built, traced or moved (``module.to("meta")``, ``nn.Linear(..., device="meta")``)
without memory. Nothing can be read back: copying a meta tensor to another device or to the
host raises PyTorch's error (``Module.to_empty()`` is the way off the meta device), as do
ops whose result depends on the data (``nonzero``, ``item``).

The backend is built in (PyTorch's is too): it has no device memory and no kernels to
load, so it is installed the first time the ``meta`` device type is asked for, and not
listed among the plugins' devices (``device_count()`` is 0: it is no accelerator).

>>> import ember
>>> ember.ones(2, 3, device="meta").sum(0).shape
ember.Size([3])
"""
from __future__ import annotations

from .backend import Backend
from .schema import OPS

__all__ = ["MetaBackend", "MetaStorage", "COPY_OUT_MESSAGE"]

#: PyTorch's error for reading a meta tensor's (nonexistent) bytes
#: (``Module.to`` adds that ``Module.to_empty()`` is the way off the meta device)
COPY_OUT_MESSAGE = "Cannot copy out of meta tensor; no data!"


class MetaStorage:
    """A meta tensor's storage: a byte count and nothing else."""
    __slots__ = ("nbytes", "__weakref__")
    readonly = False

    def __init__(self, nbytes: int):
        self.nbytes = nbytes

    def __repr__(self):
        return f"<MetaStorage {self.nbytes} bytes, no data>"


def _nothing(*args, **kwargs) -> None:
    """Every op's kernel on the meta device: the output's metadata is all there is."""
    return None


class MetaBackend(Backend):
    """The built-in ``meta`` device type (see the module docstring)."""
    name = "meta"
    version = "1"
    device_type = "meta"
    host_accessible = False
    fork_safe = True

    def __init__(self):
        # (built when installed: every op known by then, primitives and composites alike,
        # so that no composite runs on data that does not exist)
        self.kernels = {name: _nothing for name in OPS}

    def device_count(self) -> int:
        return 0

    def allocate(self, nbytes: int, index: int) -> MetaStorage:
        return MetaStorage(nbytes)

    def allocator(self, index: int):
        return MetaStorage

    def copy_from_host(self, storage, byte_offset: int, host_buffer) -> None:
        return None

    def copy_to_host(self, storage, byte_offset: int, nbytes: int):
        raise NotImplementedError(COPY_OUT_MESSAGE)
