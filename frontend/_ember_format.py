"""ember's earlier data-only checkpoint format, which older embers wrote: its reader
(``ember.load`` dispatches to :func:`_load`), a private writer :func:`_save_ember` for
tests, and the byte helpers the safetensors code in ``ember.serialization`` shares.
Re-exported by ``ember.serialization``. The format is data only, in the spirit of
safetensors::

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
stored as its raw 2-byte words, complex32 as its (real, imaginary) float16 pairs, bool as
bytes 0 and 1. ``root`` is the saved object as a
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
"""
from __future__ import annotations

import base64
import collections
import io
import json
import math
import os
import re
import struct
import zlib
from typing import Any, BinaryIO

import numpy as np

import ember
from ember.dispatcher import dtypes as D
from ember.nn.parameter import Parameter

from . import _torch_format as TF
from ._atomic_save import FileLike, _save_atomic

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
    elif t.dtype is ember.complex32:   # (NumPy has no complex32: its float16 pairs)
        a = np.ascontiguousarray(ember.view_as_real(t).numpy(), dtype="<f2")
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
        elif dtype is ember.complex32:
            arr = buf.view("<f2").reshape(list(e["shape"]) + [2]).astype(np.float16)
            t = ember.view_as_complex(ember.from_numpy(arr))
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
