"""Storages as PyTorch's Python API shows them: ``UntypedStorage`` (bytes) and the
deprecated ``TypedStorage`` (elements of one dtype, and its legacy names ``FloatStorage``,
``LongStorage``, ...).

A tensor's memory is its backend's storage object (``Tensor._storage``: a block of host
or device memory, the unit that views share). These classes wrap one for the code that
reads storages the way PyTorch programs do: ``t.untyped_storage().data_ptr()`` and
``.nbytes()`` (safetensors' shared-tensor check), ``t.storage().tolist()``,
``UntypedStorage(n)``, ``Tensor.set_(storage, offset, size, stride)``. As in PyTorch, every
view of one storage gives the same ``UntypedStorage`` object while one is alive.

Element reads and writes go through a tensor over the storage's bytes, so they run the
backend's kernels (and flush a pending ``ember.compile`` capture first). Resizing a
storage in place is not supported: ``resize_`` raises ``NotImplementedError``.
"""
from __future__ import annotations

import os
import weakref

import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.device import to_device
from ember.dispatcher.plugins import backend_for
from ember.dispatcher.warn import warn

from . import _creation as K

__all__ = ["UntypedStorage", "TypedStorage", "LEGACY", "untyped_of", "typed_of", "is_storage",
           "as_tensor_of"]

#: id(backend storage) -> weak reference to its live UntypedStorage (one object per block)
_LIVE: dict = {}
_TYPED_WARNED = [False]


def _forget(key):
    return lambda _ref: _LIVE.pop(key, None)


def untyped_of(storage, device) -> "UntypedStorage":
    """The ``UntypedStorage`` of a backend storage object (the live one if there is one)."""
    key = id(storage)
    ref = _LIVE.get(key)
    s = ref() if ref is not None else None
    if s is None or s._s is not storage:
        s = object.__new__(UntypedStorage)
        s._s, s.device = storage, device
        _LIVE[key] = weakref.ref(s, _forget(key))
    return s


def typed_of(t) -> "TypedStorage":
    """``t.storage()``: its storage as a ``TypedStorage`` of ``t``'s dtype (PyTorch's
    deprecation warning, once per process)."""
    if not _TYPED_WARNED[0]:
        _TYPED_WARNED[0] = True
        warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
             "will be the only storage class. This should only matter to you if you are using "
             "storages directly.  To access UntypedStorage directly, use "
             "tensor.untyped_storage() instead of tensor.storage()", stacklevel=3)
    return TypedStorage._wrap(untyped_of(t._storage, t.device), t.dtype)


def _bytes_of(s: "UntypedStorage", dtype=D.uint8):
    """A 1-dim tensor of ``dtype`` over all of ``s``'s bytes."""
    n = s.nbytes() // dtype.itemsize
    return C.new_tensor(s._s, (n,), (1,), 0, dtype, s.device, [0])


def _new(nbytes: int, device) -> "UntypedStorage":
    t = C.empty((nbytes,), D.uint8, device)
    return untyped_of(t._storage, device)


class UntypedStorage:
    """A block of memory that tensors view, in bytes (PyTorch's ``torch.UntypedStorage``).

    ``UntypedStorage(n, device=None)`` allocates ``n`` uninitialised bytes;
    ``UntypedStorage(sequence)`` holds the given byte values. ``tensor.untyped_storage()``
    gives the storage a tensor views (one object for all its views).

    Example:
        >>> x = ember.arange(4, dtype=ember.float32)
        >>> s = x.untyped_storage()
        >>> s.nbytes(), s.data_ptr() == x.data_ptr(), s is x[1:].untyped_storage()
        (16, True, True)
    """
    __slots__ = ("_s", "device", "__weakref__")

    def __new__(cls, *args, device=None):
        dev = to_device(device if device is not None else "cpu")
        if not args:
            return _new(0, dev)
        if len(args) != 1:
            raise TypeError(f"UntypedStorage(): expected a size or a sequence, got {len(args)} "
                            "arguments")
        (arg,) = args
        if isinstance(arg, int):
            if arg < 0:
                raise RuntimeError(f"Storage size must be non-negative, but got {arg}")
            return _new(arg, dev)
        values = list(arg)
        s = _new(len(values), dev)
        if values:
            _bytes_of(s).copy_(K.tensor(values, dtype=D.uint8).to(dev))
        return s

    # ---- what it is -----------------------------------------------------------------------
    def nbytes(self) -> int:
        """The size in bytes."""
        return int(self._s.nbytes)

    def size(self) -> int:
        """The size in bytes (as ``nbytes()``)."""
        return int(self._s.nbytes)

    def __len__(self) -> int:
        return int(self._s.nbytes)

    def element_size(self) -> int:
        """1: an untyped storage's elements are bytes."""
        return 1

    def data_ptr(self) -> int:
        """The address of the first byte."""
        return _bytes_of(self).data_ptr()

    @property
    def is_cuda(self) -> bool:
        """Whether the storage is on a CUDA device."""
        return self.device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        """False: storages are dense."""
        return False

    def type(self, dtype=None, non_blocking=False):
        """The storage's class name (``'torch.storage.UntypedStorage'`` in PyTorch)."""
        if dtype is not None:
            raise NotImplementedError("UntypedStorage.type(dtype): converting a storage's "
                                      "type is not supported; convert a tensor instead")
        return f"{D.module_name}.storage.UntypedStorage"

    def is_shared(self) -> bool:
        """Whether the storage lives in memory other processes can map."""
        return bool(backend_for(self.device.type).is_shared(self._s))

    def share_memory_(self):
        """Move the storage into shared memory, in place (every tensor viewing it moves
        too), and return it."""
        backend_for(self.device.type).share_storage(self._s)
        return self

    def is_pinned(self, device=None) -> bool:
        """Whether the storage is in page-locked host memory."""
        return bool(_bytes_of(self).is_pinned())

    # ---- contents -------------------------------------------------------------------------
    def tolist(self) -> list:
        """The bytes as a list of ints."""
        return _bytes_of(self).tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise RuntimeError("slices with steps are not supported by storages")
            if self.device.type == "cpu":   # a storage over the same bytes, as PyTorch's
                host = np.frombuffer(C.host_storage(_bytes_of(self)),
                                     np.uint8)[start:max(start, stop)]
                return untyped_of(backend_for("cpu").wrap_host_buffer(host), self.device)
            out = _new(max(stop - start, 0), self.device)
            if stop > start:
                _bytes_of(out).copy_(_bytes_of(self)[start:stop])
            return out
        return int(_bytes_of(self)[i].item())

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """A CPU storage of ``nbytes`` bytes mapped from ``filename``: with ``shared``
        writes go to the file (which is created or extended as needed), without it the
        mapping is private (copy on write) and the file must hold ``nbytes`` bytes."""
        nbytes = int(nbytes)
        if shared:
            with open(filename, "ab") as f:      # (created if needed, then extended)
                if os.path.getsize(filename) < nbytes:
                    f.truncate(nbytes)
        elif os.path.getsize(filename) < nbytes:
            raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: file "
                               f"too short")
        if nbytes == 0:
            return _new(0, to_device("cpu"))
        arr = np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c",
                        shape=(nbytes,))
        return untyped_of(backend_for("cpu").wrap_host_buffer(arr), to_device("cpu"))

    def __setitem__(self, i, value):
        _bytes_of(self)[i] = value

    def fill_(self, value):
        """Set every byte to ``value``; returns the storage."""
        _bytes_of(self).fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        """Copy ``source``'s bytes (a storage of the same size) into this one."""
        src = source.untyped() if isinstance(source, TypedStorage) else source
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch, m1: [{self.nbytes()}], m2: [{src.nbytes()}]")
        if self.nbytes():
            _bytes_of(self).copy_(_bytes_of(src))
        return self

    def clone(self):
        """A copy in new memory on the same device."""
        return self.to(self.device, copy=True)

    def cpu(self):
        """This storage if it is on the CPU, else a copy there."""
        return self.to("cpu")

    def to(self, device=None, non_blocking=False, copy=False):
        """The storage on ``device`` (itself when it is there already and not ``copy``)."""
        dev = to_device(device if device is not None else self.device)
        if dev == self.device and not copy:
            return self
        out = _new(self.nbytes(), dev)
        if self.nbytes():
            _bytes_of(out).copy_(_bytes_of(self).to(dev))
        return out

    def untyped(self):
        """This storage."""
        return self

    def resize_(self, size):
        """Not supported: ember's storages keep their size (PyTorch can grow or free one in
        place)."""
        if int(size) == self.nbytes():
            return self
        raise NotImplementedError("UntypedStorage.resize_: ember cannot resize a storage in "
                                  "place; allocate a new tensor instead")

    def __repr__(self):
        body = "\n".join(f" {b}" for b in self.tolist())
        return (f"{body}\n[{D.module_name}.storage.UntypedStorage(device={self.device}) of "
                f"size {self.nbytes()}]").lstrip("\n")

    def __iter__(self):
        return iter(self.tolist())

    def __reduce__(self):
        raise NotImplementedError("pickling a storage object is not supported by ember; "
                                  "pickle or save the tensor instead")


class TypedStorage:
    """A storage seen as elements of one dtype (PyTorch's deprecated ``torch.TypedStorage``;
    ``tensor.storage()`` gives one, with PyTorch's deprecation warning).

    ``TypedStorage(n, dtype=..., device=...)``, ``TypedStorage(sequence, dtype=...)`` or
    ``TypedStorage(wrap_storage=untyped, dtype=...)``. The legacy classes
    (``FloatStorage``, ``LongStorage``, ...) are TypedStorages of a fixed dtype.

    Example:
        >>> x = ember.tensor([1., 2., 3.])
        >>> s = x.storage()
        >>> s.dtype, s.size(), s.tolist()
        (ember.float32, 3, [1.0, 2.0, 3.0])
    """
    __slots__ = ("_untyped_storage", "dtype")
    _fixed_dtype = None

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None):
        dtype = self._fixed_dtype or (D.to_dtype(dtype) if dtype is not None
                                      else D.get_default_dtype())
        self.dtype = dtype
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage(): wrap_storage takes no positional "
                                   "arguments")
            self._untyped_storage = (wrap_storage.untyped()
                                     if isinstance(wrap_storage, TypedStorage) else wrap_storage)
            return
        dev = to_device(device if device is not None else "cpu")
        if not args:
            self._untyped_storage = _new(0, dev)
        elif len(args) == 1 and isinstance(args[0], int):
            self._untyped_storage = _new(args[0] * dtype.itemsize, dev)
        elif len(args) == 1:
            values = list(args[0])
            self._untyped_storage = _new(len(values) * dtype.itemsize, dev)
            if values:
                self._tensor().copy_(K.tensor(values, dtype=dtype).to(dev))
        else:
            raise TypeError(f"TypedStorage(): expected a size or a sequence, got {len(args)} "
                            "arguments")

    @classmethod
    def from_file(cls, filename, shared=False, size=0):
        """A CPU storage of ``size`` elements mapped from ``filename`` (see
        ``UntypedStorage.from_file``)."""
        dtype = cls._fixed_dtype or D.get_default_dtype()
        return TypedStorage._wrap(
            UntypedStorage.from_file(filename, shared, int(size) * dtype.itemsize), dtype)

    @classmethod
    def _wrap(cls, untyped, dtype):
        s = TypedStorage.__new__(TypedStorage)
        s._untyped_storage, s.dtype = untyped, dtype
        return s

    def _tensor(self):
        return _bytes_of(self._untyped_storage, self.dtype)

    @property
    def device(self):
        """The device the storage is on."""
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        """Whether the storage is on a CUDA device."""
        return self.device.type == "cuda"

    def untyped(self) -> UntypedStorage:
        """The underlying ``UntypedStorage``."""
        return self._untyped_storage

    def size(self) -> int:
        """The number of elements."""
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        """The size in bytes."""
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        """The address of the first element."""
        return self._untyped_storage.data_ptr()

    def type(self, dtype=None, non_blocking=False):
        """The legacy class name (``'torch.FloatStorage'``)."""
        if dtype is not None:
            raise NotImplementedError("TypedStorage.type(dtype): converting a storage's type "
                                      "is not supported; convert a tensor instead")
        name = _LEGACY_NAMES.get(self.dtype.name)
        return f"{D.module_name}.{name}" if name else f"{D.module_name}.TypedStorage"

    def is_shared(self) -> bool:
        """Whether the storage lives in memory other processes can map."""
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        """Move the storage into shared memory in place; returns it."""
        self._untyped_storage.share_memory_()
        return self

    def tolist(self) -> list:
        """The elements as Python numbers."""
        return self._tensor().tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return TypedStorage(self._tensor()[i].tolist(), dtype=self.dtype,
                                device=self.device)
        return self._tensor()[i].item()

    def __setitem__(self, i, value):
        self._tensor()[i] = value

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value):
        """Set every element to ``value``; returns the storage."""
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        """Copy ``source``'s elements (a storage of the same size) into this one."""
        src = source._tensor() if isinstance(source, TypedStorage) else None
        if src is None:
            self._untyped_storage.copy_(source)
            return self
        if src.numel() != self.size():
            raise RuntimeError(f"size mismatch, m1: [{self.size()}], m2: [{src.numel()}]")
        self._tensor().copy_(src)
        return self

    def clone(self):
        """A copy in new memory."""
        return TypedStorage._wrap(self._untyped_storage.clone(), self.dtype)

    def cpu(self):
        """This storage if it is on the CPU, else a copy there."""
        return TypedStorage._wrap(self._untyped_storage.cpu(), self.dtype)

    def resize_(self, size):
        """Not supported (see ``UntypedStorage.resize_``)."""
        self._untyped_storage.resize_(int(size) * self.dtype.itemsize)
        return self

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[{self.type()}(dtype={self.dtype}, device={self.device}) of size "
                f"{self.size()}]").lstrip("\n")

    def __reduce__(self):
        raise NotImplementedError("pickling a storage object is not supported by ember; "
                                  "pickle or save the tensor instead")


_LEGACY_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage",
                 "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                 "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                 "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}


def _legacy(name, dtype):
    cls = type(name, (TypedStorage,), {"__slots__": (), "_fixed_dtype": dtype,
                                       "__doc__": f"A TypedStorage of {dtype.name} "
                                                  f"(PyTorch's legacy ``torch.{name}``)."})
    cls.__module__ = "ember"
    return cls


#: legacy class name -> class (``ember.FloatStorage``, ...)
LEGACY = {name: _legacy(name, D.to_dtype(dt)) for dt, name in _LEGACY_NAMES.items()}
LEGACY_BY_DTYPE = {cls._fixed_dtype: cls for cls in LEGACY.values()}


def as_tensor_of(storage, dtype):
    """``ember.asarray(storage, dtype=...)``: a 1-dim tensor over all of the storage's bytes
    read as ``dtype`` (its bytes: a TypedStorage keeps its own dtype unless given one)."""
    if isinstance(storage, TypedStorage):
        dtype = dtype or storage.dtype
        storage = storage.untyped()
    return _bytes_of(storage, dtype or D.int64)


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage object (``ember.is_storage``)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))
