"""``ember.save`` / ``ember.load`` as PyTorch >= 2.6 has them, plus safetensors.

``ember.save`` writes PyTorch's own checkpoint format (a zip archive holding a pickle and
one raw record per tensor storage; ``ember._torch_format`` describes it), so ``torch.load``
reads ember's files and ``ember.load`` reads torch's, without importing torch.
``ember.load(weights_only=True)`` (the default) unpickles with a restricted unpickler that
can't run code; see ``docs/serialization.md``.

``ember.load`` also reads safetensors files and ember's earlier data-only format, which
older embers wrote (this module still holds its reader, and a private writer
``_save_ember`` for tests). That format is data only, in the spirit of safetensors::

    offset 0   magic   b"\\x89EMBER\\r\\n"   (8 bytes; the high byte and CR-LF catch files
                                          mangled by text-mode transfers)
           8   version  uint32 little-endian (2; version 1 files, without the checksums,
                        still load)
          12   header   uint64 little-endian: the header's length in bytes
          20   checksum uint32 little-endian: CRC-32 of the header bytes
          24   header   UTF-8 JSON (below)
               zero padding up to a multiple of 64
               data     each tensor's elements, C-contiguous, little-endian, at 64-byte
                        aligned offsets from the start of the data section
               trailer  uint32 little-endian CRC-32 of each tensor's bytes, in table order

The header is ``{"format": "ember.save", "tensors": [entry, ...], "data_size": n,
"root": node}``. A tensor entry is ``{"dtype", "shape", "offset", "nbytes", "device",
"requires_grad"}`` (plus ``"parameter": true`` for an ``nn.Parameter``); bfloat16 is
stored as its raw 2-byte words, bool as bytes 0 and 1. ``root`` is the saved object as a
tree of nodes: JSON null/bool/int/string/finite number for the Python values of the same
kind, otherwise an object tagged by ``"$"``: ``float`` (nan/inf), ``bytes`` (base64),
``list``, ``tuple``, ``dict`` and ``odict`` (``[[key, value], ...]``, so keys need not be
strings), ``tensor`` (index into ``tensors``), ``dtype``, ``device``, ``size``.

Every tensor object is stored once: two references to it load as one tensor. The format
has no storages: views and tensors sharing storage are stored as independent tensors, each
with bytes of its own (PyTorch instead saves each storage once and its views as offsets
into it), so no two entries ever share bytes.

Loading trusts nothing in the file: it reads only regular files by path (a FIFO would
block forever), checks the magic, version, checksums and sizes, every header field's type
and range, that every tensor's bytes lie inside the data section and overlap no other
tensor's (so the tensors built never add up to more than the file's size), and reads a
bool byte other than 0 as True. Problems raise a ``RuntimeError`` that names them.

Saving to a path writes a temporary ``.NAME.HOST-PID.XXXXXXXX.tmp`` next to the target and
renames it over the target when complete; the temporaries of saves of the same target
whose process died (killed mid-write) are removed by the next save.
"""
from __future__ import annotations

import base64
import collections
import contextlib
import errno
import io
import json
import math
import os
import pickle
import pickletools
import re
import socket
import stat
import struct
import sys
import tempfile
import zlib
from typing import Any, BinaryIO, Callable, Union

import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks, so no stale-temporary cleanup
    fcntl = None

import safetensors

import ember
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher.plugins import backend_for
from ember.nn.parameter import Parameter

from . import _torch_format as TF
from ._weights_only import (FullUnpickler, WeightsUnpickler, _py2_name, add_safe_globals,
                            clear_safe_globals, get_safe_globals, safe_globals)

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals", "get_unsafe_globals_in_checkpoint", "save_safetensors",
           "load_safetensors", "WeightsUnpickler", "DEFAULT_PROTOCOL"]

MAGIC = b"\x89EMBER\r\n"
VERSION = 2
_PREAMBLE = struct.Struct("<IQ")          # version, header length
_PRE_LEN = len(MAGIC) + _PREAMBLE.size    # 20 (version 1's whole preamble)
_HEADER_CRC = struct.Struct("<I")         # version 2: CRC-32 of the header
_CRC = np.dtype("<u4")                    # version 2: the trailer's per-tensor CRC-32s
ALIGN = 64
#: the largest size (and numel) a dimension may have: PyTorch's int64 sizes
_MAX_DIM = 2 ** 63 - 1
#: the largest device index: PyTorch's DeviceIndex is an int8
_MAX_DEVICE_INDEX = 127
_DEVICE_RE = re.compile(r"[a-z][a-z0-9_]*(?::(0|[1-9][0-9]*))?")

FileLike = Union[str, bytes, os.PathLike, BinaryIO]
MapLocation = Union[None, str, "ember.device", dict, Callable]


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


# ---- save ---------------------------------------------------------------------------------
class _Encoder:
    """Turns the object into a JSON-able node tree and a table of tensors."""

    def __init__(self):
        self.tensors: list = []         # tensors in table order
        self.entries: list[dict] = []
        self._index: dict[int, int] = {}  # id(tensor) -> table index
        self._active: set[int] = set()    # containers on the current path (cycle check)
        self.size = 0                     # bytes of the data section so far

    def node(self, x: Any, path: str):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            x = float(x)
            return x if math.isfinite(x) else {"$": "float", "v": repr(x)}
        if isinstance(x, ember.Tensor):
            return {"$": "tensor", "i": self.tensor(x)}
        if isinstance(x, (bytes, bytearray)):
            return {"$": "bytes", "v": base64.b64encode(bytes(x)).decode("ascii")}
        if isinstance(x, D.DType):
            return {"$": "dtype", "v": x.name}
        if isinstance(x, ember.device):
            return {"$": "device", "v": str(x)}
        if isinstance(x, np.generic) and x.dtype.kind in "biuf":
            return self.node(x.item(), path)
        if isinstance(x, (dict, list, tuple)):
            if id(x) in self._active:
                raise ValueError(f"ember.save: the object contains a reference cycle at "
                                 f"{path}; checkpoints must be trees")
            self._active.add(id(x))
            try:
                return self._container(x, path)
            finally:
                self._active.discard(id(x))
        hint = (" (convert it with ember.from_numpy first)" if isinstance(x, np.ndarray)
                else "")
        raise TypeError(f"ember.save: can't save {type(x).__module__}.{type(x).__qualname__}"
                        f" at {path}{hint}. Checkpoints hold tensors, dicts, lists, tuples "
                        "and None/bool/int/float/str/bytes values (plus dtypes and devices),"
                        " so that loading one can never run code.")

    def _container(self, x, path: str):
        if isinstance(x, dict):
            kind = "odict" if isinstance(x, collections.OrderedDict) else "dict"
            items = []
            for k, v in x.items():
                if isinstance(k, (dict, list, ember.Tensor)):
                    raise TypeError(f"ember.save: unsupported dict key of type "
                                    f"{type(k).__name__} at {path}")
                items.append([self.node(k, f"{path} key {k!r}"),
                              self.node(v, f"{path}[{k!r}]")])
            return {"$": kind, "v": items}
        kind = "list" if isinstance(x, list) else "size" if isinstance(x, ember.Size) \
            else "tuple"
        return {"$": kind, "v": [self.node(v, f"{path}[{i}]") for i, v in enumerate(x)]}

    def tensor(self, t) -> int:
        i = self._index.get(id(t))
        if i is not None:
            return i
        nbytes = t.numel() * t.dtype.itemsize
        offset = _align(self.size)
        entry = {"dtype": t.dtype.name, "shape": list(t.shape), "offset": offset,
                 "nbytes": nbytes, "device": str(t.device),
                 "requires_grad": bool(t.requires_grad)}
        if type(t).__name__ == "Parameter" and type(t).__module__ == "ember.nn.parameter":
            entry["parameter"] = True
        self.size = offset + nbytes
        i = self._index[id(t)] = len(self.tensors)
        self.tensors.append(t)
        self.entries.append(entry)
        return i


def _tensor_bytes(t) -> np.ndarray:
    """``t``'s elements as C-contiguous little-endian bytes (a 1-D uint8 array)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype is ember.bfloat16:
        # bfloat16 -> float32 is exact and bfloat16's bits are float32's upper half
        f32 = np.ascontiguousarray(t.float().numpy(), dtype="<f4")
        a = np.right_shift(f32.reshape(-1).view("<u4"), 16).astype("<u2")
    elif t.dtype is ember.bool:
        # a bool tensor built over foreign bytes may hold 2..255; files hold 0 and 1
        a = np.not_equal(t.numpy().view(np.uint8), 0)
    else:
        a = t.numpy()
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return a.reshape(-1).view(np.uint8)


def _write_all(f: BinaryIO, data) -> None:
    # a raw (unbuffered) file may write less than asked; buffered ones write it all
    view = memoryview(data).cast("B")
    while len(view):
        n = f.write(view)
        if n is None or n >= len(view):
            return
        view = view[n:]


def _read_exact(f: BinaryIO, buf) -> int:
    """Fill ``buf`` from ``f``; returns the bytes read (fewer only at end of file)."""
    view = memoryview(buf).cast("B")
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def _write_tensor_data(f: BinaryIO, t, nbytes: int) -> int:
    """Write ``t``'s bytes; returns their CRC-32."""
    data = _tensor_bytes(t)
    if data.nbytes != nbytes:
        raise RuntimeError(f"ember.save: a tensor of shape {tuple(t.shape)} changed size while "
                           "being saved")
    _write_all(f, data)
    return zlib.crc32(data)


def _write_record(f: BinaryIO, enc: _Encoder, header: bytes) -> None:
    pre_len = _PRE_LEN + _HEADER_CRC.size
    pad = _align(pre_len + len(header)) - pre_len - len(header)
    _write_all(f, MAGIC + _PREAMBLE.pack(VERSION, len(header))
               + _HEADER_CRC.pack(zlib.crc32(header)) + header + b"\0" * pad)
    pos = 0
    crcs = []
    for t, e in zip(enc.tensors, enc.entries):
        _write_all(f, b"\0" * (e["offset"] - pos))
        crcs.append(_write_tensor_data(f, t, e["nbytes"]))
        pos = e["offset"] + e["nbytes"]
    _write_all(f, b"\0" * (enc.size - pos))
    _write_all(f, np.array(crcs, dtype=_CRC).tobytes())


def _umask() -> int:
    # the only way to read the umask is to set it; restored at once
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(d: str) -> None:
    # makes the rename itself durable; not every platform can open a directory
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: this machine in temporary names (with the pid: whose save it is)
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"
#: a temporary left older than this (by the file system's clock) whose lock is free is
#: stale even when its writer's liveness can't be checked (another machine, an old name)
STALE_TEMPORARY_S = 60.0


def _temporary_pattern(name: str):
    # .NAME.HOST-PID.XXXXXXXX.tmp, or .NAME.XXXXXXXX.tmp as older embers named them
    # (XXXXXXXX: tempfile.mkstemp's eight random characters)
    return re.compile(rf"\.{re.escape(name)}\.(?:([A-Za-z0-9-]+)-(\d+)\.)?[a-z0-9_]{{8}}\.tmp")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True                 # someone else's process (or not a pid we can check)
    return True


def _remove_stale_temporaries(directory: str, name: str, now: float) -> list:
    """Remove the temporaries of earlier saves of ``directory/name`` whose writer is gone;
    returns their paths. A live writer holds an ``flock`` on its temporary, so only
    unlocked files of this user go, and only when their writer's process is known to be
    dead (same machine) or they are older than ``STALE_TEMPORARY_S`` by the file system's
    clock (``now`` is the fresh temporary's mtime)."""
    if fcntl is None:
        return []
    pattern = _temporary_pattern(name)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    removed = []
    for n in names:
        m = pattern.fullmatch(n)
        if not m:
            continue
        p = os.path.join(directory, n)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            continue
        writer_dead = m.group(1) == _HOST and not _pid_alive(int(m.group(2)))
        if not writer_dead and now - st.st_mtime < STALE_TEMPORARY_S:
            continue
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # fails while a writer holds it
            now_st = os.fstat(fd)
            if (now_st.st_dev, now_st.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(p)
                removed.append(p)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _save_atomic(path: str, write: Callable[[BinaryIO], None]) -> None:
    path = os.path.realpath(path)   # through a symlink, replace its target
    directory, name = os.path.split(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    else:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "ember.save: the target is a directory",
                                    path)
        if not stat.S_ISREG(st.st_mode):
            # a device or a FIFO (``/dev/null``, a pipe a reader waits on): write into it,
            # as torch.save does; replacing it with a renamed file would destroy it
            with open(path, "wb") as fh:
                write(fh)
            return
        mode = stat.S_IMODE(st.st_mode)
    prefix = f".{name}.{_HOST}-{os.getpid()}."
    if len(os.fsencode(prefix)) + 12 > 255:      # keep the name within NAME_MAX
        prefix = f".{name}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    lock = -1
    try:
        with os.fdopen(fd, "wb") as fh:
            if fcntl is not None:
                # held (through a duplicate, so closing the file keeps it) until the
                # rename: no concurrent save takes this temporary for a stale one
                lock = os.dup(fh.fileno())
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    pass    # a file system without locks: leave other temporaries alone
                else:
                    _remove_stale_temporaries(directory, name, os.fstat(lock).st_mtime)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        if lock >= 0:
            os.close(lock)
    _fsync_dir(directory)


def _save_ember(obj: Any, f: FileLike) -> None:
    """Write ``obj`` in ember's earlier data-only format (which :func:`load` still reads):
    tensors in nested dicts/lists/tuples with plain Python values. Kept for tests and for
    tools that need a file that holds no pickle at all."""
    enc = _Encoder()
    root = enc.node(obj, "obj")
    header = json.dumps({"format": "ember.save", "tensors": enc.entries,
                         "data_size": enc.size, "root": root},
                        separators=(",", ":"), allow_nan=False).encode("utf-8")
    if isinstance(f, (str, bytes, os.PathLike)):
        _save_atomic(os.fsdecode(f), lambda fh: _write_record(fh, enc, header))
    elif hasattr(f, "write"):
        _write_record(f, enc, header)
    else:
        raise TypeError(f"ember.save: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")


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


# ---- load ---------------------------------------------------------------------------------
def _fail(src: str, problem: str):
    raise RuntimeError(f"ember.load: {src} {problem}")


def _looks_like(head: bytes) -> str:
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle (as written by pickle.dump or a legacy torch.save)"
    if head[:4] == b"PK\x03\x04":
        return "a zip archive (PyTorch's torch.save writes a zip of pickles)"
    if head[:6] == b"\x93NUMPY":
        return "a NumPy .npy file"
    if len(head) >= 9 and head[8:9] == b"{":
        return "a safetensors file"
    if head[:6] == b"\x89EMBER":
        return "an ember checkpoint damaged by a text-mode transfer (line endings changed)"
    return f"an unknown format (it starts with {head[:8]!r})"


def _device_string(s) -> bool:
    """Whether ``s`` is a canonical device string (``type`` or ``type:index``, the index
    without sign or leading zeros, at most PyTorch's largest device index)."""
    if not isinstance(s, str):
        return False
    m = _DEVICE_RE.fullmatch(s)
    return m is not None and (m.group(1) is None or int(m.group(1)) <= _MAX_DEVICE_INDEX)


def _size_value(v) -> bool:
    return type(v) is int and 0 <= v <= _MAX_DIM


class _Decoder:
    """Rebuilds the object tree, materializing each tensor the first time it is named."""

    def __init__(self, f, src, base, entries, crcs, map_location):
        self.f, self.src, self.base = f, src, base
        self.entries = entries
        self.crcs = crcs              # version 2: each tensor's CRC-32; version 1: None
        self.map_location = map_location
        self.loaded: dict[int, Any] = {}

    def node(self, n):
        if n is None or isinstance(n, (bool, int, float, str)):
            return n
        if not isinstance(n, dict) or not isinstance(n.get("$"), str):
            _fail(self.src, f"has a malformed header: unexpected node {str(n)[:80]}")
        kind, v = n["$"], n.get("v")
        if not n.keys() <= {"$", "v", "i"}:
            _fail(self.src, f"has a malformed header: a {kind!r} node has unknown fields "
                            f"{sorted(n.keys() - {'$', 'v', 'i'})}")
        if kind == "tensor":
            i = n.get("i")
            if type(i) is not int or not 0 <= i < len(self.entries):
                _fail(self.src, f"has a malformed header: tensor index {i!r} is not in "
                                f"0..{len(self.entries) - 1}")
            if i not in self.loaded:
                self.loaded[i] = self.tensor(i)
            return self.loaded[i]
        if kind in ("list", "tuple", "size"):
            self._expect(isinstance(v, list), kind)
            if kind == "size":
                self._expect(all(_size_value(x) for x in v) and len(v) <= 64, kind)
                return ember.Size(v)
            items = [self.node(x) for x in v]
            return items if kind == "list" else tuple(items)
        if kind in ("dict", "odict"):
            self._expect(isinstance(v, list) and all(isinstance(p, list) and len(p) == 2
                                                     for p in v), kind)
            out = {} if kind == "dict" else collections.OrderedDict()
            for k, x in v:
                key, value = self.node(k), self.node(x)
                try:
                    out[key] = value
                except TypeError:
                    _fail(self.src, f"has a malformed header: unhashable dict key {k!r}")
            return out
        if kind == "float":
            self._expect(v in ("nan", "inf", "-inf"), kind)
            return float(v)
        if kind == "bytes":
            self._expect(isinstance(v, str), kind)
            try:
                return base64.b64decode(v.encode("ascii"), validate=True)
            except (ValueError, UnicodeEncodeError):
                _fail(self.src, "has a malformed header: invalid base64 in a bytes value")
        if kind == "dtype":
            self._expect(isinstance(v, str) and v in D._BY_NAME, kind)
            return D.to_dtype(v)
        if kind == "device":
            self._expect(isinstance(v, str), kind)
            return self._device(v)
        _fail(self.src, f"has a malformed header: unknown node kind {kind!r}")

    def _expect(self, ok: bool, kind: str) -> None:
        if not ok:
            _fail(self.src, f"has a malformed header: bad value for a {kind!r} node")

    def _device(self, s: str):
        if not _device_string(s):
            _fail(self.src, f"has a malformed header: invalid device string {s[:80]!r}")
        try:
            return ember.device(s)
        except (RuntimeError, ValueError, TypeError):
            _fail(self.src, f"has a malformed header: invalid device string {s!r}")

    def tensor(self, i: int):
        e = self.entries[i]
        dtype = D.to_dtype(e["dtype"])
        self.f.seek(self.base + e["offset"])
        buf = np.empty(e["nbytes"], dtype=np.uint8)
        got = _read_exact(self.f, buf)
        if got != e["nbytes"]:
            _fail(self.src, f"is truncated: tensor {i} needs {e['nbytes']} bytes, found {got}")
        if self.crcs is not None and zlib.crc32(buf) != int(self.crcs[i]):
            _fail(self.src, f"is corrupted: the bytes of tensor {i} ({dtype.name}, shape "
                            f"{e['shape']}) do not match their CRC-32 checksum")
        if not e["nbytes"]:
            t = ember.empty(e["shape"], dtype=dtype)  # standard strides, whatever the shape
        elif dtype is ember.bfloat16:
            # bfloat16's bits are the upper half of the float32 it widens to exactly
            f32 = np.left_shift(buf.view("<u2").astype(np.uint32), 16).view(np.float32)
            t = ember.from_numpy(f32.reshape(e["shape"])).to(ember.bfloat16)
        elif dtype is ember.bool:
            # any nonzero byte is True (kernels assume bool bytes are 0 or 1: a 2 would
            # count twice in a sum); what PyTorch's kernels make of such a byte
            t = ember.from_numpy(np.not_equal(buf, 0).reshape(e["shape"]))
        else:
            arr = buf.view(dtype.to_numpy().newbyteorder("<")).reshape(e["shape"])
            if not arr.dtype.isnative:
                arr = arr.astype(arr.dtype.newbyteorder("="))
            t = ember.from_numpy(arr)
        t = self._place(t, e["device"])
        if e.get("parameter"):
            return Parameter(t, requires_grad=e["requires_grad"])
        if e["requires_grad"]:
            t.requires_grad_(True)
        return t

    def _place(self, t, saved: str):
        return TF.place(t, saved, self.map_location)


_ENTRY_KEYS = {"dtype", "shape", "offset", "nbytes", "device", "requires_grad"}
_HEADER_KEYS = {"format", "tensors", "data_size", "root"}


def _check_entry(src: str, i: int, e, data_size: int) -> None:
    def bad(what):
        _fail(src, f"has a malformed header: tensor {i} {what}")

    if not isinstance(e, dict) or not _ENTRY_KEYS <= e.keys():
        bad(f"must be an object with the fields {sorted(_ENTRY_KEYS)}")
    unknown = e.keys() - _ENTRY_KEYS - {"parameter"}
    if unknown:
        bad(f"has unknown fields {sorted(unknown)[:8]}")
    if not isinstance(e["dtype"], str) or e["dtype"] not in D._BY_NAME:
        bad(f"has an unknown dtype {str(e['dtype'])[:80]!r}")
    shape = e["shape"]
    if not isinstance(shape, list) or len(shape) > 64 or \
            not all(_size_value(s) for s in shape):
        bad(f"has an invalid shape {str(shape)[:80]} (expected at most 64 integer sizes in "
            f"0..{_MAX_DIM})")
    for k in ("offset", "nbytes"):
        if type(e[k]) is not int or not 0 <= e[k] <= _MAX_DIM:
            bad(f"has an invalid {k} {str(e[k])[:80]} (expected an integer in 0..{_MAX_DIM})")
    dtype = D.to_dtype(e["dtype"])
    numel = math.prod(shape)
    if numel > _MAX_DIM:
        bad(f"has shape {shape} with {numel} elements, more than PyTorch's limit {_MAX_DIM}")
    want = numel * dtype.itemsize
    if e["nbytes"] != want:
        bad(f"says it holds {e['nbytes']} bytes but shape {shape} of {dtype.name} needs "
            f"{want}")
    if e["offset"] + e["nbytes"] > data_size:
        bad(f"points outside the data section (bytes {e['offset']}..{e['offset'] + want} of "
            f"{data_size})")
    if not isinstance(e["device"], str):
        bad("has a device that is not a string")
    if not _device_string(e["device"]):
        bad(f"has an invalid device {e['device'][:80]!r} (expected 'type' or 'type:index' "
            f"with an index in 0..{_MAX_DEVICE_INDEX})")
    try:
        ember.device(e["device"])
    except (RuntimeError, ValueError, TypeError):
        bad(f"has an invalid device {e['device']!r}")
    if type(e["requires_grad"]) is not bool or type(e.get("parameter", False)) is not bool:
        bad("has a requires_grad/parameter flag that is not a boolean")
    if e["requires_grad"] and not dtype.is_floating_point:
        bad(f"requires grad but has the non-floating dtype {dtype.name}")


def _check_no_shared_bytes(src: str, entries: list) -> None:
    """No two tensors may share bytes: ember.save gives each its own, and aliased entries
    would let a small file expand into many tensors (600 entries over the same 4 MiB make
    2.3 GiB). With this, the tensors built add up to at most the data section's size."""
    spans = sorted((e["offset"], e["offset"] + e["nbytes"], i)
                   for i, e in enumerate(entries) if e["nbytes"])
    end, owner = 0, -1
    for lo, hi, i in spans:
        if lo < end:
            _fail(src, f"has a malformed header: tensors {owner} and {i} share the bytes "
                       f"{lo}..{min(hi, end)} of the data section (every tensor of an ember "
                       "checkpoint has bytes of its own)")
        end, owner = hi, i


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):     # 1e999: ember.save writes non-finite floats as nodes
        raise ValueError(f"number {text[:40]} is out of range")
    return x


def _load(f, src: str, map_location):
    start = f.tell()
    end = f.seek(0, io.SEEK_END)
    f.seek(start)
    avail = end - start
    pre = bytearray(_PRE_LEN)
    pre = bytes(pre[:_read_exact(f, pre)])
    if len(pre) == 0:
        _fail(src, "is empty")
    if pre[:len(MAGIC)] != MAGIC:
        _fail(src, f"is not a checkpoint ember.load reads: it looks like {_looks_like(pre)}. "
                   "ember.load reads PyTorch's zip checkpoints (torch.save, ember.save), "
                   "safetensors files and ember's earlier format.")
    if len(pre) < _PRE_LEN:
        _fail(src, f"is truncated: {len(pre)} bytes, shorter than the {_PRE_LEN}-byte preamble")
    version, hlen = _PREAMBLE.unpack(pre[len(MAGIC):])
    if version not in (1, VERSION):
        _fail(src, f"has format version {version}; this ember reads versions 1 and {VERSION} "
                   "(was it written by a newer ember, or is the file damaged?)")
    pre_len, header_crc = _PRE_LEN, None
    if version >= 2:
        raw_crc = bytearray(_HEADER_CRC.size)
        if _read_exact(f, raw_crc) != _HEADER_CRC.size:
            _fail(src, f"is truncated: {avail} bytes, shorter than the "
                       f"{_PRE_LEN + _HEADER_CRC.size}-byte preamble")
        header_crc = _HEADER_CRC.unpack(raw_crc)[0]
        pre_len += _HEADER_CRC.size
    if hlen > avail - pre_len:
        _fail(src, f"is truncated: its header should be {hlen} bytes but only "
                   f"{avail - pre_len} bytes follow the preamble")
    raw = bytearray(hlen)
    if _read_exact(f, raw) != hlen:
        _fail(src, f"is truncated: its header should be {hlen} bytes")
    if header_crc is not None and zlib.crc32(raw) != header_crc:
        _fail(src, "is corrupted: its header does not match its CRC-32 checksum")
    try:
        header = json.loads(bytes(raw).decode("utf-8"), parse_constant=_reject_constant,
                            parse_float=_finite_float)
    except RecursionError:
        _fail(src, "has a malformed header: its JSON is nested too deeply")
    except (UnicodeDecodeError, ValueError) as err:
        _fail(src, f"has a malformed header: not valid UTF-8 JSON ({str(err)[:200]})")
    if not isinstance(header, dict) or header.get("format") != "ember.save" \
            or header.keys() != _HEADER_KEYS:
        _fail(src, "has a malformed header: expected an object with format 'ember.save', "
                   "'tensors', 'data_size' and 'root' (and nothing else)")
    entries, data_size = header["tensors"], header["data_size"]
    if not isinstance(entries, list):
        _fail(src, "has a malformed header: 'tensors' must be a list")
    if type(data_size) is not int or not 0 <= data_size <= _MAX_DIM:
        _fail(src, f"has a malformed header: invalid data_size {str(data_size)[:80]}")
    for i, e in enumerate(entries):
        _check_entry(src, i, e, data_size)
    _check_no_shared_bytes(src, entries)
    data_start = _align(pre_len + hlen)
    trailer = _CRC.itemsize * len(entries) if version >= 2 else 0
    record_end = data_start + data_size + trailer
    if record_end > avail:
        _fail(src, f"is truncated: it should hold {record_end} bytes but has {avail}")
    crcs = None
    if version >= 2:
        f.seek(start + data_start + data_size)
        raw_crcs = bytearray(trailer)
        if _read_exact(f, raw_crcs) != trailer:
            _fail(src, "is truncated: its checksum trailer is missing")
        crcs = np.frombuffer(bytes(raw_crcs), dtype=_CRC)
    dec = _Decoder(f, src, start + data_start, entries, crcs, map_location)
    try:
        obj = dec.node(header["root"])
    except RecursionError:
        _fail(src, "has a malformed header: its object tree is nested too deeply")
    f.seek(start + record_end)
    return obj


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
                "\n\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely "
                "succeed, but it can result in arbitrary code execution. Do it only if you got "
                "the file from a trusted source.\n\t(2) Alternatively, to load with "
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
