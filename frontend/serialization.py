"""``ember.save`` / ``ember.load``: checkpoints that can never run code when loaded.

PyTorch's ``torch.save`` pickles, and unpickling a file can execute anything its author
chose. An ember checkpoint is data only, in the spirit of safetensors::

    offset 0   magic   b"\\x89EMBER\\r\\n"   (8 bytes; the high byte and CR-LF catch files
                                          mangled by text-mode transfers)
           8   version  uint32 little-endian (1)
          12   header   uint64 little-endian: the header's length in bytes
          20   header   UTF-8 JSON (below)
               zero padding up to a multiple of 64
               data     each tensor's elements, C-contiguous, little-endian, at 64-byte
                        aligned offsets from the start of the data section

The header is ``{"format": "ember.save", "tensors": [entry, ...], "data_size": n,
"root": node}``. A tensor entry is ``{"dtype", "shape", "offset", "nbytes", "device",
"requires_grad"}`` (plus ``"parameter": true`` for an ``nn.Parameter``); bfloat16 is
stored as its raw 2-byte words. ``root`` is the saved object as a tree of nodes: JSON
null/bool/int/string/finite number for the Python values of the same kind, otherwise an
object tagged by ``"$"``: ``float`` (nan/inf), ``bytes`` (base64), ``list``, ``tuple``,
``dict`` and ``odict`` (``[[key, value], ...]``, so keys need not be strings),
``tensor`` (index into ``tensors``), ``dtype``, ``device``, ``size``.

Every tensor object is stored once: two references to it load as one tensor. Views and
tensors sharing storage are stored as independent tensors.

Loading checks everything against the file before trusting it (magic, version, sizes,
every header field, every tensor's bytes lying inside the data section) and raises a
``RuntimeError`` that names the problem.
"""
from __future__ import annotations

import base64
import collections
import contextlib
import io
import json
import math
import os
import stat
import struct
import tempfile
from typing import Any, BinaryIO, Callable, Union

import numpy as np

import ember
from ember.dispatcher import dtypes as D
from ember.nn.parameter import Parameter

__all__ = ["save", "load"]

MAGIC = b"\x89EMBER\r\n"
VERSION = 1
_PREAMBLE = struct.Struct("<IQ")          # version, header length
_PRE_LEN = len(MAGIC) + _PREAMBLE.size    # 20
ALIGN = 64

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


def _write_tensor_data(f: BinaryIO, t, nbytes: int) -> None:
    data = _tensor_bytes(t)
    if data.nbytes != nbytes:
        raise RuntimeError(f"ember.save: a tensor of shape {tuple(t.shape)} changed size while "
                           "being saved")
    _write_all(f, data)


def _write_record(f: BinaryIO, enc: _Encoder, header: bytes) -> None:
    pad = _align(_PRE_LEN + len(header)) - _PRE_LEN - len(header)
    _write_all(f, MAGIC + _PREAMBLE.pack(VERSION, len(header)) + header + b"\0" * pad)
    pos = 0
    for t, e in zip(enc.tensors, enc.entries):
        _write_all(f, b"\0" * (e["offset"] - pos))
        _write_tensor_data(f, t, e["nbytes"])
        pos = e["offset"] + e["nbytes"]
    _write_all(f, b"\0" * (enc.size - pos))


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


def _save_atomic(path: str, enc: _Encoder, header: bytes) -> None:
    path = os.path.realpath(path)   # through a symlink, replace its target
    directory, name = os.path.split(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_record(fh, enc, header)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def save(obj: Any, f: FileLike) -> None:
    """Write ``obj`` (tensors in nested dicts/lists/tuples with plain Python values) to
    ``f``, a path or a binary file object.

    Saving to a path is atomic: the data goes to a temporary file in the same directory,
    which is flushed, fsynced and then renamed over ``f``, so a crash mid-save leaves any
    previous file intact.

    >>> import ember, io
    >>> buf = io.BytesIO()
    >>> ember.save({"w": ember.ones(2), "step": 3}, buf)
    >>> _ = buf.seek(0)
    >>> ember.load(buf)["w"]
    tensor([1., 1.])
    """
    enc = _Encoder()
    root = enc.node(obj, "obj")
    header = json.dumps({"format": "ember.save", "tensors": enc.entries,
                         "data_size": enc.size, "root": root},
                        separators=(",", ":"), allow_nan=False).encode("utf-8")
    if isinstance(f, (str, bytes, os.PathLike)):
        _save_atomic(os.fsdecode(f), enc, header)
    elif hasattr(f, "write"):
        _write_record(f, enc, header)
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


class _Decoder:
    """Rebuilds the object tree, materializing each tensor the first time it is named."""

    def __init__(self, f, src, base, entries, map_location):
        self.f, self.src, self.base = f, src, base
        self.entries = entries
        self.map_location = map_location
        self.loaded: dict[int, Any] = {}

    def node(self, n):
        if n is None or isinstance(n, (bool, int, float, str)):
            return n
        if not isinstance(n, dict) or not isinstance(n.get("$"), str):
            _fail(self.src, f"has a malformed header: unexpected node {str(n)[:80]}")
        kind, v = n["$"], n.get("v")
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
            items = [self.node(x) for x in v]
            return items if kind == "list" else tuple(items) if kind == "tuple" \
                else ember.Size(items)
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
        if not e["nbytes"]:
            t = ember.empty(e["shape"], dtype=dtype)  # standard strides, whatever the shape
        elif dtype is ember.bfloat16:
            # bfloat16's bits are the upper half of the float32 it widens to exactly
            f32 = np.left_shift(buf.view("<u2").astype(np.uint32), 16).view(np.float32)
            t = ember.from_numpy(f32.reshape(e["shape"])).to(ember.bfloat16)
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
        ml = self.map_location
        target: Any = saved
        if callable(ml):
            out = ml(t, saved)
            if out is not None:
                return out
        elif isinstance(ml, dict):
            hit = ml.get(saved)
            if hit is None:
                hit = ml.get(ember.device(saved).type, saved)
            target = hit
        elif ml is not None:
            target = ml
        target = ember.device(target) if not isinstance(target, ember.device) else target
        if target.type == "cpu":
            return t
        try:
            return t.to(target)
        except RuntimeError as err:
            how = ("Pass map_location='cpu' (or a dict such as "
                   f"{{{saved!r}: 'cpu'}}) to load it elsewhere.")
            raise RuntimeError(f"ember.load: a tensor saved on {saved!r} can't be placed on "
                               f"{str(target)!r}: {err} {how}") from None


_ENTRY_KEYS = {"dtype", "shape", "offset", "nbytes", "device", "requires_grad"}


def _check_entry(src: str, i: int, e, data_size: int) -> None:
    def bad(what):
        _fail(src, f"has a malformed header: tensor {i} {what}")

    if not isinstance(e, dict) or not _ENTRY_KEYS <= e.keys():
        bad(f"must be an object with the fields {sorted(_ENTRY_KEYS)}")
    if not isinstance(e["dtype"], str) or e["dtype"] not in D._BY_NAME:
        bad(f"has an unknown dtype {e['dtype']!r}")
    shape = e["shape"]
    if not isinstance(shape, list) or len(shape) > 64 or \
            not all(type(s) is int and s >= 0 for s in shape):
        bad(f"has an invalid shape {str(shape)[:80]}")
    for k in ("offset", "nbytes"):
        if type(e[k]) is not int or e[k] < 0:
            bad(f"has an invalid {k} {e[k]!r}")
    dtype = D.to_dtype(e["dtype"])
    want = math.prod(shape) * dtype.itemsize
    if e["nbytes"] != want:
        bad(f"says it holds {e['nbytes']} bytes but shape {shape} of {dtype.name} needs "
            f"{want}")
    if e["offset"] + e["nbytes"] > data_size:
        bad(f"points outside the data section (bytes {e['offset']}..{e['offset'] + want} of "
            f"{data_size})")
    if not isinstance(e["device"], str):
        bad("has a device that is not a string")
    try:
        ember.device(e["device"])
    except (RuntimeError, ValueError, TypeError):
        bad(f"has an invalid device {e['device']!r}")
    if type(e["requires_grad"]) is not bool or type(e.get("parameter", False)) is not bool:
        bad("has a requires_grad/parameter flag that is not a boolean")
    if e["requires_grad"] and not dtype.is_floating_point:
        bad(f"requires grad but has the non-floating dtype {dtype.name}")


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


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
        _fail(src, f"is not an ember checkpoint: it looks like {_looks_like(pre)}. ember.load "
                   "reads only files written by ember.save and never unpickles anything, "
                   "because unpickling can run arbitrary code.")
    if len(pre) < _PRE_LEN:
        _fail(src, f"is truncated: {len(pre)} bytes, shorter than the {_PRE_LEN}-byte preamble")
    version, hlen = _PREAMBLE.unpack(pre[len(MAGIC):])
    if version != VERSION:
        _fail(src, f"has format version {version}; this ember reads version {VERSION} "
                   "(was it written by a newer ember?)")
    if hlen > avail - _PRE_LEN:
        _fail(src, f"is truncated: its header should be {hlen} bytes but only "
                   f"{avail - _PRE_LEN} bytes follow the preamble")
    raw = bytearray(hlen)
    if _read_exact(f, raw) != hlen:
        _fail(src, f"is truncated: its header should be {hlen} bytes")
    try:
        header = json.loads(bytes(raw).decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        _fail(src, "has a malformed header: its JSON is nested too deeply")
    except (UnicodeDecodeError, ValueError) as err:
        _fail(src, f"has a malformed header: not valid UTF-8 JSON ({err})")
    if not isinstance(header, dict) or header.get("format") != "ember.save" \
            or not {"tensors", "data_size", "root"} <= header.keys():
        _fail(src, "has a malformed header: expected an object with format 'ember.save', "
                   "'tensors', 'data_size' and 'root'")
    entries, data_size = header["tensors"], header["data_size"]
    if not isinstance(entries, list):
        _fail(src, "has a malformed header: 'tensors' must be a list")
    if type(data_size) is not int or data_size < 0:
        _fail(src, f"has a malformed header: invalid data_size {data_size!r}")
    data_start = _align(_PRE_LEN + hlen)
    if data_start + data_size > avail:
        _fail(src, f"is truncated: it should hold {data_start + data_size} bytes but has "
                   f"{avail}")
    for i, e in enumerate(entries):
        _check_entry(src, i, e, data_size)
    dec = _Decoder(f, src, start + data_start, entries, map_location)
    try:
        obj = dec.node(header["root"])
    except RecursionError:
        _fail(src, "has a malformed header: its object tree is nested too deeply")
    f.seek(start + data_start + data_size)
    return obj


def load(f: FileLike, map_location: MapLocation = None, weights_only: bool = True) -> Any:
    """Read an object written by :func:`save` from a path or a binary file object.

    ``map_location`` says where tensors go: ``None`` (the device each was saved from), a
    device (``"cpu"``, ``ember.device("opencl:0")``), a dict from saved device to target
    (``{"opencl:0": "cpu"}``; a key may also be a bare device type), or a callable
    ``fn(cpu_tensor, saved_device_str)`` returning a tensor (or ``None`` for the default).
    Tensors come back with their saved ``requires_grad`` flag.

    The format holds data only, so loading never runs code whatever ``weights_only`` says
    (it is accepted for PyTorch compatibility). Files of another format, truncated or
    inconsistent files raise ``RuntimeError``.

    >>> import ember, io
    >>> buf = io.BytesIO(); ember.save([ember.tensor(1), None], buf); _ = buf.seek(0)
    >>> ember.load(buf, map_location="cpu")
    [tensor(1), None]
    """
    del weights_only  # there is nothing but data to load either way
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with open(path, "rb") as fh:
            return _load(fh, repr(path), map_location)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    src = f"file {getattr(f, 'name', type(f).__name__)!r}" if hasattr(f, "name") \
        else f"the {type(f).__name__} object"
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    if not hasattr(f, "readinto"):
        f = io.BytesIO(f.read())
    return _load(f, src, map_location)

