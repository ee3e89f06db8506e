"""``ember.save`` / ``ember.load`` as PyTorch >= 2.6 has them, plus safetensors.

``ember.save`` writes PyTorch's own checkpoint format (a zip archive holding a pickle and
one raw record per tensor storage; ``ember._torch_format`` describes it), so ``torch.load``
reads ember's files and ``ember.load`` reads torch's, without importing torch.
``ember.load(weights_only=True)`` (the default) unpickles with a restricted unpickler that
can't run code; see ``docs/serialization.md``.

``ember.load`` also reads safetensors files and ember's earlier data-only format, which
older embers wrote (``ember._ember_format`` holds its reader, and a private writer
``_save_ember`` for tests, re-exported here).

Saving to a path writes a temporary next to the target and renames it over the target
when complete (``ember._atomic_save``).
"""
from __future__ import annotations

import errno
import io
import json
import math
import os
import pickle
import pickletools
import stat
import struct
import sys
from typing import Any, Callable, Union

import numpy as np

import safetensors

import ember
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.plugins import backend_for

from . import _torch_format as TF
from ._weights_only import (FullUnpickler, WeightsUnpickler, _py2_name, add_safe_globals,
                            clear_safe_globals, get_safe_globals, safe_globals)
from ._atomic_save import _HOST, STALE_TEMPORARY_S, FileLike, _save_atomic  # noqa: F401
# the earlier format's names stay importable from here (tests use them)
from ._ember_format import (ALIGN, MAGIC, VERSION, _fail, _load, _read_exact,  # noqa: F401
                            _reject_constant, _save_ember, _size_value, _tensor_bytes,
                            _write_all)

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals", "get_unsafe_globals_in_checkpoint", "save_safetensors",
           "load_safetensors", "WeightsUnpickler", "DEFAULT_PROTOCOL"]

MapLocation = Union[None, str, "ember.device", dict, Callable]
# PyTorch's name of that type alias (pyro annotates with ``torch.serialization.MAP_LOCATION``)
MAP_LOCATION = MapLocation


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` to ``f`` (a path or a binary file object) as ``torch.save`` does.

    Any picklable object can be saved: tensors, modules, optimizers' state, NumPy arrays,
    your own classes. The object is pickled into PyTorch's zip format, with every tensor
    storage written once as a raw little-endian record (views of one storage stay views of
    one storage), so ``torch.load`` reads the file too. Tensors on other devices are saved
    from a host copy, with their device as the location.

    Saving to a path is atomic: the data goes to a temporary file in the same directory,
    which is flushed, fsynced and then renamed over ``f``, so a crash mid-save leaves any
    previous file intact (and the temporaries of saves of ``f`` that were killed
    mid-write are removed by the next one). An existing FIFO or device is written into.

    >>> import ember, io
    >>> buf = io.BytesIO()
    >>> ember.save({"w": ember.ones(2), "step": 3}, buf)
    >>> _ = buf.seek(0)
    >>> ember.load(buf)["w"]
    tensor([1., 1.])
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("ember.save pickles with the standard pickle module only "
                                  "(it must write storages as PyTorch does)")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ember.save writes only PyTorch's zip format; the legacy "
                                  "format (_use_new_zipfile_serialization=False) is not "
                                  "written")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"ember.save: pickle_protocol must be an int in 2.."
                         f"{pickle.HIGHEST_PROTOCOL}, got {pickle_protocol!r}")
    # the pickle is made in memory before anything is written: an object that can't be
    # pickled leaves a file object untouched (and a path's temporary is removed)
    name = TF.archive_name(f)
    if isinstance(f, (str, bytes, os.PathLike)):
        _save_atomic(os.fsdecode(f),
                     lambda fh: TF.write_archive(fh, obj, name, pickle_protocol))
    elif hasattr(f, "write"):
        TF.write_archive(f, obj, name, pickle_protocol)
    else:
        raise TypeError(f"ember.save: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "ember.load: the path is a directory", path)
    if not stat.S_ISREG(mode):
        kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
        raise RuntimeError(f"ember.load: {path!r} is {kind}, not a regular file. ember.load "
                           "reads checkpoints from regular files (reading a pipe or device "
                           "by path could block forever); to read from a stream, open it "
                           "and pass the file object")


def _open_regular(path: str):
    """Open ``path`` for reading only if it is a regular file. It is opened without
    blocking (opening a FIFO would wait for a writer) and checked through the open
    descriptor, so a file swapped in after the check can't slip through."""
    _check_regular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_BINARY", 0))
    try:
        _check_regular(path, os.fstat(fd).st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_ZIP_MAGIC = b"PK\x03\x04"
#: the pickle protocol ember.save (like torch.save) uses by default
DEFAULT_PROTOCOL = 2


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list:
    """The globals in a checkpoint that ``weights_only=True`` would refuse (neither allowed
    by default nor by :func:`add_safe_globals`), as ``"module.name"`` strings; nothing is
    unpickled. Review them before allowlisting.

    >>> import ember, io, collections
    >>> buf = io.BytesIO(); ember.save(collections.OrderedDict(w=ember.ones(1)), buf)
    >>> ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue()))
    []
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with _open_regular(path) as fh:
            return get_unsafe_globals_in_checkpoint(io.BytesIO(fh.read()))
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    archive = TF.Archive(f, f"the {type(f).__name__} object")
    unsafe: list = []
    allowed = WeightsUnpickler(b"", None).allowed
    # the two values pushed last (strings, else None), through the memo: enough to name
    # the operands of STACK_GLOBAL (protocol 4 fetches a repeated module name from the memo)
    last: list = [None, None]
    memo: dict = {}
    try:
        for op, arg, _ in pickletools.genops(archive.pickle_bytes()):
            name = None
            if op.name in ("GLOBAL", "INST"):
                name = ".".join(_py2_name(*arg.split(" ", 1)))
            elif op.name == "STACK_GLOBAL" and all(isinstance(x, str) for x in last):
                name = ".".join(_py2_name(*last))
            if op.name == "MEMOIZE":
                memo[len(memo)] = last[-1]
            elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = last[-1]
            elif op.name not in ("FRAME", "PROTO", "MARK"):
                value = memo.get(arg) if op.name in ("GET", "BINGET", "LONG_BINGET") else \
                    arg if isinstance(arg, str) and "UNICODE" in op.name else None
                last = [last[-1], value]
            if name is not None and name not in allowed and name not in unsafe:
                unsafe.append(name)
    except (ValueError, TypeError) as err:
        raise pickle.UnpicklingError(f"get_unsafe_globals_in_checkpoint: the pickle is "
                                     f"malformed ({err})") from None
    return unsafe


def load(f: FileLike, map_location: MapLocation = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Load an object saved with :func:`save` or ``torch.save`` from a path or a binary file
    object, as ``torch.load`` does; safetensors files (a dict of tensors) and ember's earlier
    format load too. torch is never imported.

    ``weights_only=True`` (the default, as in PyTorch >= 2.6) unpickles with a restricted
    unpickler: only tensors, Parameters, containers (list, tuple, dict, set, OrderedDict,
    Counter), primitive values, dtypes, devices, sizes and the globals allowlisted with
    :func:`add_safe_globals` / :class:`safe_globals` load; anything else raises
    ``pickle.UnpicklingError`` naming the global and how to allow it. A file can't run code
    this way, and every size it declares is checked against the bytes there before memory
    is allocated. ``weights_only=False`` unpickles everything (modules, NumPy arrays, your
    classes) and is **dangerous**: unpickling runs whatever code the file's author chose,
    so use it only for files you trust.

    ``map_location`` says where tensors go: ``None`` (the device each was saved from), a
    device (``"cpu"``, ``ember.device("opencl:0")``), a dict from saved location to target
    (``{"cuda:0": "cpu"}``; a key may also be a bare device type), or a callable
    ``fn(storage, location)`` given each storage as a 1-D CPU tensor, returning a tensor
    (or ``None`` for the default). ``mmap=True`` maps a path's storages into memory
    (copy-on-write) instead of reading them. Bad, truncated or hostile files raise
    ``RuntimeError`` or ``pickle.UnpicklingError``.

    >>> import ember, io
    >>> buf = io.BytesIO(); ember.save([ember.tensor(1), None], buf); _ = buf.seek(0)
    >>> ember.load(buf, map_location="cpu")
    [tensor(1), None]
    """
    if weights_only is None:     # as torch: an explicit pickle module means a full unpickle
        weights_only = pickle_module is None
    if pickle_module is not None:
        if weights_only:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                               "specified")
        if pickle_module is not pickle:
            raise NotImplementedError("ember.load unpickles with the standard pickle module "
                                      "only")
    path = None
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with _open_regular(path) as fh:
            return _dispatch(fh, repr(path), path, map_location, weights_only, mmap,
                             pickle_load_args)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    src = f"file {getattr(f, 'name', type(f).__name__)!r}" if hasattr(f, "name") \
        else f"the {type(f).__name__} object"
    if not (hasattr(f, "seekable") and f.seekable()) or not hasattr(f, "readinto"):
        f = io.BytesIO(f.read())
    return _dispatch(f, src, None, map_location, weights_only, mmap, pickle_load_args)


def _dispatch(f, src, path, map_location, weights_only, mmap, pickle_load_args):
    start = f.tell()
    head = f.read(16)
    f.seek(start)
    if head[:4] == _ZIP_MAGIC:
        if start:      # zipfile finds records by absolute offsets: read from here on
            f = io.BytesIO(f.read())
        return _load_archive(f, src, map_location, bool(weights_only), bool(mmap), path,
                               pickle_load_args)
    if mmap:
        raise NotImplementedError("ember.load: mmap=True is supported for PyTorch's zip "
                                  f"format only, and {src} is not a zip archive")
    if _is_safetensors(head):
        return _load_safetensors_file(f, src, map_location)
    return _load(f, src, map_location)


def _load_archive(f, src: str, map_location, weights_only: bool, mmap: bool,
                 path: str | None, pickle_load_args: dict):
    archive = TF.Archive(f, src, path)
    loader = TF.StorageLoader(archive, map_location, mmap)
    data = archive.pickle_bytes()
    if weights_only:
        encoding = pickle_load_args.get("encoding", "ASCII")
        unknown = set(pickle_load_args) - {"encoding", "errors"}
        if unknown:
            raise TypeError(f"ember.load: unexpected pickle load arguments {sorted(unknown)}")
        try:
            return WeightsUnpickler(data, loader, encoding).load()
        except pickle.UnpicklingError as err:
            raise pickle.UnpicklingError(
                "Weights only load failed. This file can still be loaded, to do so you have "
                "two options, do those steps only if you trust the source of the checkpoint. "
                f"\n\t(1) Re-running `{D.module_name}.load` with `weights_only` set to `False` "
                "will likely succeed, but it can result in arbitrary code execution. Do it only "
                "if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
                "`weights_only=True` please check the recommended steps in the following error "
                f"message.\n\tWeightsUnpickler error: {err}") from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError,
                UnicodeDecodeError, OverflowError, RecursionError) as err:
            raise pickle.UnpicklingError(
                f"Weights only load failed: {src} holds a malformed pickle "
                f"({type(err).__name__}: {str(err)[:200]})") from None
    return FullUnpickler(io.BytesIO(data), loader, **pickle_load_args).load()


# ---- safetensors ------------------------------------------------------------------------------
#: safetensors' dtype codes and the ember dtypes they hold
_ST_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
              "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
              "BOOL": "bool", "U16": "uint16", "U32": "uint32", "U64": "uint64",
              "C64": "complex64"}
#: the safetensors library's limit on a header's size
_ST_MAX_HEADER = 100_000_000


def _is_safetensors(head: bytes) -> bool:
    return len(head) >= 9 and head[8:9] == b"{" and \
        struct.unpack("<Q", head[:8])[0] <= _ST_MAX_HEADER


def _check_safetensors_header(raw: bytes, src: str, data_size: int) -> dict:
    """The header as a dict after checking every entry (dtype, shape, offsets inside the
    data section, sizes consistent, no two tensors overlapping) so nothing is allocated on
    the file's word."""
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        _fail(src, "has a malformed safetensors header: its JSON is nested too deeply")
    except (UnicodeDecodeError, ValueError) as err:
        _fail(src, f"has a malformed safetensors header ({str(err)[:200]})")
    if not isinstance(header, dict):
        _fail(src, "has a malformed safetensors header: not a JSON object")
    spans = []
    for name, e in header.items():
        if name == "__metadata__":
            if not isinstance(e, dict) or not all(isinstance(v, str) for v in e.values()):
                _fail(src, "has malformed safetensors metadata (expected str -> str)")
            continue
        bad = f"has a malformed safetensors header: tensor {name[:80]!r}"
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            _fail(src, f"{bad} must have exactly dtype, shape and data_offsets")
        dt_name = _ST_DTYPES.get(e["dtype"]) if isinstance(e["dtype"], str) else None
        dt = D._BY_NAME.get(dt_name) if dt_name else None
        if dt is None or dt.name != dt_name:
            _fail(src, f"{bad} has dtype {str(e['dtype'])[:20]!r}, which ember does not load")
        shape, offs = e["shape"], e["data_offsets"]
        if not isinstance(shape, list) or len(shape) > TF.MAX_DIMS or \
                not all(_size_value(s) for s in shape):
            _fail(src, f"{bad} has an invalid shape {str(shape)[:80]}")
        if not isinstance(offs, list) or len(offs) != 2 or \
                not all(_size_value(o) for o in offs) or offs[0] > offs[1]:
            _fail(src, f"{bad} has invalid data_offsets {str(offs)[:80]}")
        if offs[1] > data_size:
            _fail(src, f"{bad} points outside the data ({offs} of {data_size} bytes)")
        if offs[1] - offs[0] != math.prod(shape) * dt.itemsize:
            _fail(src, f"{bad} holds {offs[1] - offs[0]} bytes but shape {shape} of "
                       f"{dt.name} needs {math.prod(shape) * dt.itemsize}")
        if offs[1] > offs[0]:
            spans.append((offs[0], offs[1], name))
    spans.sort()
    for (_, end, a), (lo, _, b) in zip(spans, spans[1:]):
        if lo < end:
            _fail(src, f"has a malformed safetensors header: tensors {a!r} and {b!r} overlap")
    return header


def _load_safetensors_file(f, src: str, map_location) -> dict:
    start = f.tell()
    size = f.seek(0, io.SEEK_END) - start
    f.seek(start)
    head = f.read(8)
    if len(head) < 8:
        _fail(src, "is truncated: shorter than a safetensors header length")
    n = struct.unpack("<Q", head)[0]
    if n > min(_ST_MAX_HEADER, size - 8):
        _fail(src, f"is truncated or malformed: its safetensors header claims {n} bytes, the "
                   f"file has {size - 8} after the length")
    raw = f.read(n)
    header = _check_safetensors_header(raw, src, size - 8 - n)
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        f.seek(start + 8 + n + lo)
        buf = np.empty(hi - lo, dtype=np.uint8)
        if _read_exact(f, buf) != hi - lo:
            _fail(src, f"is truncated: tensor {name!r}'s bytes are missing")
        dt = D.to_dtype(_ST_DTYPES[e["dtype"]])
        out[name] = TF.place(_tensor_from_bytes(buf, dt, tuple(e["shape"])), "cpu",
                             map_location)
    return out


def _tensor_from_bytes(buf: np.ndarray, dtype, shape: tuple):
    """A CPU tensor over ``buf`` (little-endian bytes of ``dtype``, C order)."""
    if dtype is ember.bool:
        np.not_equal(buf, 0, out=buf.view(np.bool_))
    elif sys.byteorder == "big" and dtype.itemsize > 1:
        buf.view(f"u{dtype.itemsize}").byteswap(inplace=True)
    storage = backend_for("cpu").wrap_host_buffer(buf)
    return C.new_tensor(storage, shape, C.contiguous_strides(shape), 0, dtype,
                        ember.device("cpu"), [0])


def save_safetensors(tensors: dict, path: FileLike, metadata: dict | None = None) -> None:
    """Write a dict of tensors as a safetensors file (through the ``safetensors`` package),
    as ``safetensors.torch.save_file`` does. Tensors are saved contiguous from the host;
    ``metadata`` is a dict of strings.

    >>> import ember, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> ember.serialization.save_safetensors({"w": ember.ones(2)}, p)
    >>> ember.serialization.load_safetensors(p)["w"]
    tensor([1., 1.])
    """
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors: expected a dict of tensors, got "
                        f"{type(tensors).__name__}")
    specs, keep = {}, []
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, ember.Tensor):
            raise TypeError(f"save_safetensors: entries must be str -> ember.Tensor, got "
                            f"{type(name).__name__} -> {type(t).__name__}")
        data = _tensor_bytes(t)      # C-contiguous little-endian bytes, bool as 0/1
        keep.append(data)
        specs[name] = safetensors.TensorSpec(dtype=t.dtype.name, shape=list(t.shape),
                                             data_ptr=data.ctypes.data if data.size else 0,
                                             data_len=data.nbytes)
    blob = bytes(safetensors.serialize(specs, metadata=metadata))
    if isinstance(path, (str, bytes, os.PathLike)):
        _save_atomic(os.fsdecode(path), lambda fh: _write_all(fh, blob))
    elif hasattr(path, "write"):
        _write_all(path, blob)
    else:
        raise TypeError(f"save_safetensors: path must be a path or a binary file object, got "
                        f"{type(path).__name__}")


def load_safetensors(path: FileLike, device: Any = "cpu") -> dict:
    """Read a safetensors file into a dict of tensors on ``device``, as
    ``safetensors.torch.load_file`` does. The header is checked (size, dtypes, shapes,
    offsets inside the file, no overlaps) before anything is allocated."""
    if isinstance(path, (str, bytes, os.PathLike)):
        p = os.fsdecode(path)
        with _open_regular(p) as fh:
            return _load_safetensors_file(fh, repr(p), device)
    if not hasattr(path, "read"):
        raise TypeError(f"load_safetensors: path must be a path or a binary file object, got "
                        f"{type(path).__name__}")
    f = path if hasattr(path, "seekable") and path.seekable() else io.BytesIO(path.read())
    return _load_safetensors_file(f, f"the {type(path).__name__} object", device)
