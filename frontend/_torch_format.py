"""PyTorch's checkpoint format (the zip archive ``torch.save`` writes), read and written
without importing torch.

The archive holds, under one top-level folder (the file's stem, or ``archive``)::

    data.pkl              the object, pickled (protocol 2); each storage is a persistent id
                          ('storage', <torch.FloatStorage-style type>, key, location, numel)
    data/<key>            each storage's bytes, little-endian, stored uncompressed
    byteorder             b"little"
    version               b"3\\n"
    .format_version       b"1"
    .storage_alignment    b"64"   (every record's data starts at a multiple of 64)

A tensor is pickled as the call ``torch._utils._rebuild_tensor_v2(storage, storage_offset,
size, stride, requires_grad, backward_hooks)`` (``_rebuild_tensor_v3`` adds the dtype, over
a ``torch.storage.UntypedStorage``, for dtypes without a legacy storage class), a Parameter
as ``torch._utils._rebuild_parameter(tensor, requires_grad, backward_hooks)``; dtypes are the
globals ``torch.float32`` etc., sizes and devices the calls ``torch.Size((2, 3))`` and
``torch.device('cpu')``. Views of one storage are saved once, as offsets and strides into it.

Reading maps every ``torch.*`` name to its ember equivalent (``TORCH_NAMES``), so torch is
never imported; ``ember._weights_only`` holds the unpicklers. Every size a file declares
(records, storages, views) is checked against the bytes actually there before anything
is allocated.
"""
from __future__ import annotations

import codecs
import collections
import io
import os
import pickle
import re
import struct
import zipfile
import zlib
from typing import Any

import numpy as np

import ember
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.plugins import backend_for
from ember.nn.parameter import Parameter

__all__ = ["TORCH_NAMES", "BUILTIN_SAFE", "write_archive", "Archive", "StorageLoader",
           "place", "archive_name"]

#: torch's legacy storage classes (``torch.FloatStorage``) by the dtype they hold
STORAGE_CLASSES = {"float32": "FloatStorage", "float64": "DoubleStorage",
                   "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                   "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                   "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                   "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
                   "qint8": "QInt8Storage", "quint8": "QUInt8Storage",
                   "qint32": "QInt32Storage", "quint4x2": "QUInt4x2Storage",
                   "quint2x4": "QUInt2x4Storage"}
#: every dtype name torch may write as a ``torch.<name>`` global
TORCH_DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                     "int8", "uint8", "bool", "complex32", "complex64", "complex128",
                     "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
                     "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "qint8",
                     "quint8", "qint32", "quint4x2", "quint2x4")
#: the largest size, stride, offset or element count: PyTorch's int64
MAX_INT = 2 ** 63 - 1
#: PyTorch's limit on a tensor's number of dimensions
MAX_DIMS = 64
#: deflate can't expand data more than this (its longest match per bit pair)
MAX_DEFLATE_RATIO = 1032
_KEY_RE = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_LOCATION_RE = re.compile(r"[a-z][a-z0-9_]*(?::[0-9]{1,3})?")


class TorchGlobal:
    """A stand-in that ``ember.save`` pickles as the global ``module.name`` (torch's names),
    so torch reads the file, without torch being imported to write it."""
    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args):   # pickle wants reduce functions callable; never called
        raise TypeError(f"{self!r} is a name for pickling only")


class StorageType:
    """What a ``torch.FloatStorage``-style global loads as: the dtype of a storage."""
    __slots__ = ("dtype_name", "torch_name")

    def __init__(self, dtype_name: str, torch_name: str):
        self.dtype_name, self.torch_name = dtype_name, torch_name

    def __repr__(self):
        return self.torch_name


class LoadedStorage:
    """One storage record of the archive, read and placed: a 1-D tensor over its bytes."""
    __slots__ = ("base", "nbytes", "dtype_name")

    def __init__(self, base, nbytes: int, dtype_name: str):
        self.base, self.nbytes, self.dtype_name = base, nbytes, dtype_name


# ---- the torch names a checkpoint may use, and what each means in ember ---------------------
def _ember_dtype(name: str, what: str):
    dt = D._BY_NAME.get(name)
    if dt is None or dt.name != name:
        raise pickle.UnpicklingError(
            f"{what} has dtype {name}, which ember does not support (ember's dtypes: "
            f"{', '.join(sorted({d.name for d in D._BY_NAME.values()}))})")
    return dt


def _check_int(v, what: str, lo: int = 0) -> int:
    if type(v) is not int or not lo <= v <= MAX_INT:
        raise RuntimeError(f"ember.load: a tensor's {what} {str(v)[:60]} is not an integer in "
                           f"{lo}..{MAX_INT}")
    return v


def _check_ints(v, what: str) -> tuple:
    if not isinstance(v, (tuple, list)) or len(v) > MAX_DIMS:
        raise RuntimeError(f"ember.load: a tensor's {what} {str(v)[:80]} is not a sequence of "
                           f"at most {MAX_DIMS} integers")
    return tuple(_check_int(x, what) for x in v)


def _view(storage, offset, size, stride, dtype_name: str):
    """A tensor over ``storage`` after checking the view lies inside its bytes (as PyTorch's
    ``set_``): sizes, strides and offset are non-negative integers, and the last element
    reachable is inside the storage."""
    if not isinstance(storage, LoadedStorage):
        raise pickle.UnpicklingError(f"a tensor is rebuilt from {type(storage).__name__}, not "
                                     "from a storage record of the archive")
    dtype = _ember_dtype(dtype_name, "a tensor")
    size, stride = _check_ints(size, "size"), _check_ints(stride, "stride")
    offset = _check_int(offset, "storage offset")
    if len(size) != len(stride):
        raise RuntimeError(f"ember.load: a tensor has size {list(size)} but stride "
                           f"{list(stride)} (their lengths differ)")
    numel = 1
    for s in size:
        numel *= s
    if numel > MAX_INT:
        raise RuntimeError(f"ember.load: a tensor of size {list(size)} has more than {MAX_INT} "
                           "elements")
    item = dtype.itemsize
    if numel:
        need = (offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))) * item
        if need > storage.nbytes:
            raise RuntimeError(
                f"ember.load: a tensor with sizes {list(size)}, strides {list(stride)}, storage "
                f"offset {offset} and itemsize {item} needs a storage of {need} bytes, but its "
                f"storage holds {storage.nbytes} bytes (out of bounds)")
    elif offset * item > storage.nbytes:
        offset = 0        # nothing is read through an empty tensor: keep its offset in bounds
    base = storage.base      # 1-D, contiguous, offset 0 (StorageLoader makes it so)
    return C.new_tensor(base._storage, size, stride, offset, dtype, base.device, [0])


def rebuild_tensor(storage, storage_offset, size, stride):
    return _view(storage, storage_offset, size, stride, storage.dtype_name
                 if isinstance(storage, LoadedStorage) else "float32")


def _grad(t, requires_grad):
    if type(requires_grad) is not bool:
        raise pickle.UnpicklingError(f"a tensor's requires_grad is "
                                     f"{type(requires_grad).__name__}, not bool")
    if requires_grad:
        t.requires_grad_(True)   # raises as PyTorch for a dtype that can't require grad
    return t


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      metadata=None):
    """``torch._utils._rebuild_tensor_v2``: a view of ``storage``. Backward hooks and
    metadata are not restored (PyTorch saves them empty)."""
    return _grad(rebuild_tensor(storage, storage_offset, size, stride), requires_grad)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      dtype, metadata=None):
    """``torch._utils._rebuild_tensor_v3``: as v2 over an untyped storage, with the dtype."""
    if not isinstance(dtype, D.DType):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v3's dtype is {type(dtype).__name__}")
    return _grad(_view(storage, storage_offset, size, stride, dtype.name), requires_grad)


def rebuild_parameter(data, requires_grad, backward_hooks):
    """``torch._utils._rebuild_parameter``."""
    if not isinstance(data, ember.Tensor):
        raise pickle.UnpicklingError(f"a Parameter is rebuilt from {type(data).__name__}, not "
                                     "a tensor")
    if type(requires_grad) is not bool:
        raise pickle.UnpicklingError("a Parameter's requires_grad is not a bool")
    return Parameter(data, requires_grad)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """``torch._utils._rebuild_parameter_with_state``; ember tensors hold no Python
    attributes, so only an empty state loads."""
    _no_state(state)
    return rebuild_parameter(data, requires_grad, backward_hooks)


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: ``func(*args)`` as ``new_type``."""
    if func not in _REBUILDS or not isinstance(args, tuple):
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2 calls {func!r}, not one of "
                                     "torch's tensor rebuild functions")
    if new_type not in (ember.Tensor, Parameter):
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2 builds a {new_type!r}; ember loads "
                                     "torch.Tensor and torch.nn.Parameter only")
    _no_state(state)
    t = func(*args)
    return Parameter(t, t.requires_grad) if new_type is Parameter and \
        not isinstance(t, Parameter) else t


def _no_state(state):
    if state is None or (isinstance(state, dict) and not state) or \
            (isinstance(state, tuple) and not any(state)):
        return
    raise pickle.UnpicklingError(
        "a tensor in the checkpoint carries Python attributes "
        f"({str(state)[:80]}); ember tensors can't hold attributes of their own")


def get_layout(name):
    """``torch.serialization._get_layout``: only the strided layout exists in ember."""
    if name != "torch.strided":
        raise pickle.UnpicklingError(f"ember supports only the strided layout, not {name!r}")
    return name


def encode(obj, encoding="latin1"):
    """``_codecs.encode`` as protocol 2 uses it for bytes: ``encode(str, 'latin1')``."""
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "ascii"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only to turn a str into bytes "
                                     "with latin1, utf-8 or ascii")
    return codecs.encode(obj, encoding)


_REBUILDS = (rebuild_tensor, rebuild_tensor_v2, rebuild_tensor_v3, rebuild_parameter,
             rebuild_parameter_with_state)


def _torch_names() -> dict:
    names: dict[str, Any] = {
        "torch._utils._rebuild_tensor": rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.serialization._get_layout": get_layout,
        "torch.Tensor": ember.Tensor,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Size": _plain(ember.Size),
        "torch.device": ember.device,
        "torch.storage.UntypedStorage": StorageType("uint8", "torch.storage.UntypedStorage"),
    }
    for dtype_name, cls in STORAGE_CLASSES.items():
        names[f"torch.{cls}"] = StorageType(dtype_name, f"torch.{cls}")
    for name in TORCH_DTYPE_NAMES:
        dt = D._BY_NAME.get(name)
        if dt is not None and dt.name == name:
            names[f"torch.{name}"] = dt
    return names


#: what a pickled container or value is built from: data already in the pickle
PLAIN_ARGS = (list, tuple, dict, set, frozenset, str, bytes, bytearray, int, float, bool,
              type(None), collections.OrderedDict)


def check_plain_args(what: str, args: tuple, no_ints: bool = False) -> None:
    """Constructors reached from a pickle take only plain data: iterating a tensor (an
    expanded one may claim 2**40 elements over 4 bytes) or ``bytearray(n)`` (n bytes)
    could take unbounded time and memory."""
    for a in args:
        if type(a) not in PLAIN_ARGS or (no_ints and type(a) in (int, bool)):
            raise pickle.UnpicklingError(f"{what}() is called from the pickle with a "
                                         f"{type(a).__name__} argument; only plain values "
                                         "and containers are allowed")


def _plain(cls, no_ints: bool = False):
    def build(*args):
        check_plain_args(cls.__name__, args, no_ints)
        return cls(*args)
    build.__name__ = build.__qualname__ = cls.__name__
    return build


#: the other globals weights_only allows, as PyTorch's weights-only unpickler does (the
#: constructors take plain data only)
BUILTIN_SAFE = {"collections.OrderedDict": _plain(collections.OrderedDict),
                "collections.Counter": _plain(collections.Counter),
                "_codecs.encode": encode,
                "builtins.bytearray": _plain(bytearray, no_ints=True),
                "builtins.set": _plain(set),
                "builtins.complex": _plain(complex)}
#: ``torch.*`` globals -> their ember equivalents (also what weights_only allows from torch)
TORCH_NAMES = _torch_names()


# ---- writing ----------------------------------------------------------------------------------
_REBUILD_V2 = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_V3 = TorchGlobal("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
_TORCH_SIZE = TorchGlobal("torch", "Size")
_TORCH_DEVICE = TorchGlobal("torch", "device")
_UNTYPED = TorchGlobal("torch.storage", "UntypedStorage")
_STORAGE_GLOBALS = {k: TorchGlobal("torch", v) for k, v in STORAGE_CLASSES.items()}


class SavedStorage:
    __slots__ = ("key", "data", "dtype", "location", "owner")

    def __init__(self, key, data, dtype, location, owner):
        self.key, self.data, self.dtype, self.location = key, data, dtype, location
        self.owner = owner   # keeps the storage alive while saving (ids must stay unique)


def _storage_bytes(t) -> tuple:
    """``(storage id, bytes, storage offset, strides, owner)`` of ``t``'s storage: CPU tensors save
    their whole storage (views share it); others save a contiguous host copy of their own."""
    if t.device.type == "cpu":
        storage = C.host_storage(t, False)      # (saving reads the bytes)
        data = np.frombuffer(storage, dtype=np.uint8)
        return id(storage), data, t._offset, tuple(t._stride), storage
    host = t.detach().contiguous().cpu()
    start = host._offset * host.dtype.itemsize
    data = np.frombuffer(host._storage, dtype=np.uint8)[
        start:start + host.numel() * host.dtype.itemsize]
    return id(host), data, 0, tuple(host._stride), host


class Pickler(pickle._Pickler):
    """Pickles like ``torch.save``: tensors become rebuild calls on persistent storage ids,
    dtypes/sizes/devices torch's globals; everything else pickles as usual. The pure-Python
    pickler is used because it can write a global without importing its module."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol: int = 2):
        super().__init__(file, protocol=protocol)
        self.storages: dict[int, SavedStorage] = {}

    def persistent_id(self, obj):
        if type(obj) is SavedStorage:
            s = obj
            if s.dtype is None:
                glob, numel = _UNTYPED, len(s.data)
            else:
                glob, numel = _STORAGE_GLOBALS[s.dtype.name], len(s.data) // s.dtype.itemsize
            return ("storage", glob, s.key, s.location, numel)
        return None

    def _storage(self, t, typed: bool):
        sid, data, offset, stride, owner = _storage_bytes(t)
        s = self.storages.get(sid)
        dtype = t.dtype if typed else None
        if s is None:
            if t.dtype is ember.bool:
                data = np.not_equal(data, 0).view(np.uint8)   # files hold bools as 0/1
            s = SavedStorage(str(len(self.storages)), data, dtype, str(t.device), owner)
            self.storages[sid] = s
        elif s.dtype is not dtype:
            raise RuntimeError("ember.save: can't save tensors that view the same storage as "
                               f"different dtypes ({s.dtype and s.dtype.name} and "
                               f"{t.dtype.name}), as torch.save can't either; clone one of them")
        return s, offset, stride

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is Parameter:
            plain = C.new_tensor(obj._storage, obj.shape, obj._stride, obj._offset, obj.dtype,
                                 obj.device, obj._vc)
            return (_REBUILD_PARAMETER, (plain, obj.requires_grad, collections.OrderedDict()))
        if isinstance(obj, ember.Tensor):
            typed = obj.dtype.name in STORAGE_CLASSES
            ref, offset, stride = self._storage(obj, typed)
            args = (ref, offset, tuple(obj.shape), stride, bool(obj.requires_grad),
                    collections.OrderedDict())
            if typed:
                return (_REBUILD_V2, args)
            return (_REBUILD_V3, args + (obj.dtype,))
        if cls is ember.Size:
            return (_TORCH_SIZE, (tuple(obj),))
        if cls is ember.device:
            return (_TORCH_DEVICE, (str(obj),))
        return NotImplemented

    def _save_torch_global(self, obj):
        if isinstance(obj, D.DType):
            module, name = "torch", obj.name
        else:
            module, name = obj.module, obj.name
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[TorchGlobal] = _save_torch_global
    dispatch[D.DType] = _save_torch_global


def _aligned_extra(pos: int, name: bytes, zip64: bool, align: int = 64) -> bytes:
    """A local-header extra field ('FB' + padding, as PyTorch writes) that puts the record's
    data at a multiple of ``align``."""
    header = 30 + len(name) + 4 + (20 if zip64 else 0)
    pad = -(pos + header) % align
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad


def write_archive(f, obj, archive_name: str, protocol: int = 2) -> None:
    """Pickle ``obj`` and write PyTorch's zip archive to the binary file ``f``."""
    buf = io.BytesIO()
    pickler = Pickler(buf, protocol=protocol)
    pickler.dump(obj)
    records = [("data.pkl", buf.getbuffer()), (".format_version", b"1"),
               (".storage_alignment", b"64"), ("byteorder", b"little")]
    records += [(f"data/{s.key}", s.data) for s in pickler.storages.values()]
    records += [("version", b"3\n")]
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            full = f"{archive_name}/{name}"
            data = memoryview(data).cast("B")
            info = zipfile.ZipInfo(full, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = len(data)
            zip64 = len(data) * 1.05 > zipfile.ZIP64_LIMIT
            info.extra = _aligned_extra(zf.fp.tell(), full.encode("utf-8"), zip64)
            with zf.open(info, "w", force_zip64=zip64) as w:
                for i in range(0, len(data), 1 << 24):
                    w.write(data[i:i + (1 << 24)])


# ---- reading ----------------------------------------------------------------------------------
def _fail(src: str, problem: str):
    raise RuntimeError(f"ember.load: {src} {problem}")


class Archive:
    """A torch zip checkpoint opened for reading, with every record's bytes located and
    checked (no two records overlap, compressed ones expand within deflate's bounds)."""

    def __init__(self, f, src: str, path: str | None = None):
        self.src, self.path = src, path
        self.f = f
        try:
            self.zf = zipfile.ZipFile(f)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError,
                struct.error, EOFError, NotImplementedError) as err:
            _fail(src, f"is not a readable zip archive ({err})")
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            _fail(src, "is malformed: a zip record name appears twice")
        pkls = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkls:
            if any(n.endswith("/constants.pkl") or "/code/" in n for n in names):
                _fail(src, "is a TorchScript archive (torch.jit.save); ember.load reads "
                           "checkpoints written by torch.save or ember.save")
            _fail(src, "is a zip archive but not a PyTorch checkpoint (no <name>/data.pkl)")
        self.prefix = pkls[0][:-len("data.pkl")]
        self.infos = {i.filename: i for i in infos}
        self.data_offsets: dict[str, int] = {}
        self._check_spans(infos)
        order = self._read_small("byteorder", 16)
        self.byteorder = "little" if order is None else order.decode("ascii", "replace")
        if self.byteorder not in ("little", "big"):
            _fail(src, f"has an invalid byteorder record {self.byteorder[:20]!r}")
        self._mmap = None

    def _check_spans(self, infos) -> None:
        spans = []
        end_of_records = getattr(self.zf, "start_dir", None)
        for info in infos:
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                _fail(self.src, f"has record {info.filename!r} compressed with method "
                                f"{info.compress_type}; only stored and deflated records "
                                "are read")
            if info.compress_type == zipfile.ZIP_STORED and \
                    info.file_size != info.compress_size:
                _fail(self.src, f"is malformed: stored record {info.filename!r} declares "
                                f"{info.file_size} bytes but occupies {info.compress_size}")
            if info.file_size > info.compress_size * MAX_DEFLATE_RATIO + 64:
                _fail(self.src, f"is malformed: record {info.filename!r} declares "
                                f"{info.file_size} bytes from {info.compress_size} compressed "
                                "bytes, more than deflate can expand (a zip bomb?)")
            if not 0 <= info.header_offset <= MAX_INT:
                _fail(self.src, f"is malformed: record {info.filename!r} starts at offset "
                                f"{info.header_offset}")
            self.f.seek(info.header_offset)
            head = self.f.read(30)
            if len(head) != 30 or head[:4] != b"PK\x03\x04":
                _fail(self.src, f"is malformed: record {info.filename!r} has no local header")
            n, e = struct.unpack("<HH", head[26:30])
            start = info.header_offset + 30 + n + e
            end = start + info.compress_size
            if end_of_records is not None and end > end_of_records:
                _fail(self.src, f"is malformed: record {info.filename!r} extends past the "
                                "end of the records (truncated?)")
            self.data_offsets[info.filename] = start
            spans.append((info.header_offset, end, info.filename))
        spans.sort()
        for (_, end, a), (lo, _, b) in zip(spans, spans[1:]):
            if lo < end:
                _fail(self.src, f"is malformed: zip records {a!r} and {b!r} overlap (a zip "
                                "bomb?)")

    def _read_small(self, name: str, limit: int):
        info = self.infos.get(self.prefix + name)
        if info is None:
            return None
        if info.file_size > limit:
            _fail(self.src, f"has a {name} record of {info.file_size} bytes (at most {limit})")
        return self._read(info, bytearray(info.file_size))

    def _read(self, info, buf):
        """Fill ``buf`` with the first ``len(buf)`` bytes of record ``info`` (its CRC-32 is
        checked when that is the whole record)."""
        view = memoryview(buf).cast("B")
        got = 0
        try:
            if info.compress_type == zipfile.ZIP_STORED:
                # straight from the file into buf: no copies through zipfile's reader
                self.f.seek(self.data_offsets[info.filename])
                while got < len(view):
                    n = self.f.readinto(view[got:])
                    if not n:
                        break
                    got += n
                if got == info.file_size and zlib.crc32(view) != info.CRC:
                    _fail(self.src, f"is corrupted: record {info.filename!r} does not match "
                                    "its CRC-32 checksum")
            else:
                with self.zf.open(info) as r:
                    while got < len(view):
                        n = r.readinto(view[got:])
                        if not n:
                            break
                        got += n
                    if got == info.file_size:
                        r.read(1)   # at the end: lets zipfile check the CRC-32
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, ValueError) as err:
            _fail(self.src, f"is corrupted: record {info.filename!r} can't be read ({err})")
        if got != len(view):
            _fail(self.src, f"is truncated: record {info.filename!r} holds {got} bytes, "
                            f"{len(view)} expected")
        return buf

    def pickle_bytes(self) -> bytes:
        info = self.infos[self.prefix + "data.pkl"]
        return bytes(self._read(info, bytearray(info.file_size)))

    def storage_bytes(self, key: str, nbytes: int, mmap: bool) -> np.ndarray:
        name = f"{self.prefix}data/{key}"
        info = self.infos.get(name)
        if info is None:
            _fail(self.src, f"is malformed: the pickle names storage {key!r} but the archive "
                            f"has no record {name!r}")
        if info.file_size < nbytes:
            _fail(self.src, f"is malformed: storage {key!r} is declared to hold {nbytes} "
                            f"bytes but its record has {info.file_size}")
        if mmap and info.compress_type == zipfile.ZIP_STORED:
            if self._mmap is None:
                self._mmap = np.memmap(self.path, dtype=np.uint8, mode="c")
            start = self.data_offsets[name]
            return self._mmap[start:start + nbytes]
        if mmap:
            _fail(self.src, f"has compressed record {name!r}, which can't be memory-mapped; "
                            "load it with mmap=False")
        return self._read(info, np.empty(nbytes, dtype=np.uint8))


def place(t, saved: str, map_location):
    """Where a storage loaded from device ``saved`` goes, as ``torch.load``'s
    ``map_location`` says (see :func:`ember.load`)."""
    ml = map_location
    target: Any = saved
    if callable(ml) and not isinstance(ml, (str, ember.device)):
        out = ml(t, saved)
        if out is not None:
            if not isinstance(out, ember.Tensor):
                raise TypeError(f"ember.load: map_location returned {type(out).__name__}, not a "
                                "tensor (or None)")
            return out
    elif isinstance(ml, dict):
        hit = ml.get(saved)
        if hit is None:
            hit = ml.get(saved.partition(":")[0], saved)
        target = hit
    elif ml is not None:
        target = ml
    try:
        target = target if isinstance(target, ember.device) else ember.device(target)
    except (RuntimeError, ValueError, TypeError) as err:
        raise RuntimeError(f"ember.load: invalid map_location target {target!r}: {err}") \
            from None
    if target.type == "cpu":
        return t
    try:
        return t.to(target)
    except RuntimeError as err:
        how = ("Pass map_location='cpu' (or a dict such as "
               f"{{{saved!r}: 'cpu'}}) to load it elsewhere.")
        raise RuntimeError(f"ember.load: a tensor saved on {saved!r} can't be placed on "
                           f"{str(target)!r}: {err} {how}") from None



class StorageLoader:
    """``persistent_load`` for the archive's storages: each key is read once (tensors that
    shared a storage when saved share it again), checked and placed by ``map_location``."""

    def __init__(self, archive: Archive, map_location, mmap: bool):
        self.archive, self.map_location, self.mmap = archive, map_location, mmap
        self.loaded: dict[str, LoadedStorage] = {}

    def __call__(self, pid):
        src = self.archive.src
        if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unknown persistent id {str(pid)[:80]} (expected "
                                         "('storage', type, key, location, numel))")
        _, stype, key, location, numel = pid
        if not isinstance(stype, StorageType):
            raise pickle.UnpicklingError(f"a storage's type is {str(stype)[:60]}, not a torch "
                                         "storage class")
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            raise pickle.UnpicklingError(f"invalid storage key {str(key)[:60]!r}")
        if not isinstance(location, str) or not _LOCATION_RE.fullmatch(location):
            raise pickle.UnpicklingError(f"invalid storage location {str(location)[:60]!r}")
        hit = self.loaded.get(key)
        if hit is not None:
            return hit
        dtype = _ember_dtype(stype.dtype_name, f"storage {key!r}")
        if type(numel) is not int or not 0 <= numel <= MAX_INT // dtype.itemsize:
            raise RuntimeError(f"ember.load: {src} declares storage {key!r} with "
                               f"{str(numel)[:40]} elements")
        nbytes = numel * dtype.itemsize
        buf = self.archive.storage_bytes(key, nbytes, self.mmap)
        if dtype is ember.bool:
            np.not_equal(buf, 0, out=buf.view(np.bool_))   # kernels assume bytes 0 and 1
        elif self.archive.byteorder == "big" and dtype.itemsize > 1:
            if stype.dtype_name == "uint8" and stype.torch_name.endswith("UntypedStorage"):
                raise NotImplementedError("ember.load: big-endian untyped storages are not "
                                          "supported (save the checkpoint on a little-endian "
                                          "machine)")
            buf.view(f"u{dtype.itemsize}").byteswap(inplace=True)
        storage = backend_for("cpu").wrap_host_buffer(buf) if nbytes else \
            backend_for("cpu").wrap_host_buffer(np.empty(0, np.uint8))
        base = C.new_tensor(storage, (numel,), (1,), 0, dtype, ember.device("cpu"), [0])
        placed = place(base, location, self.map_location)
        if placed.dtype is not dtype or placed.numel() != numel or placed._offset or \
                (numel and placed._stride != (1,)):
            placed = placed.to(dtype).contiguous().reshape(numel)
            if placed._offset:
                placed = placed.clone()
        out = self.loaded[key] = LoadedStorage(placed, nbytes, dtype.name)
        return out


def archive_name(f) -> str:
    """The archive's top-level folder: the file's stem, as torch.save names it."""
    if isinstance(f, (str, bytes, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fsdecode(f)))[0]
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
        return stem or "archive"
    return "archive"

