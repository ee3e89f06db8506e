"""ember.load against hostile and damaged checkpoints, and ember.save against the debris of
killed saves.

The hostile files are written here byte by byte from the format's description (the
``ember.serialization`` docstring), with correct checksums, so that each case is wrong in
exactly the way it claims. Oracles: NumPy for bool payloads (nonzero is True, as PyTorch's
kernels count it), the original object for loads of damaged files (a load either raises
``RuntimeError`` or returns exactly what was saved), the file system for temporaries.
"""
import io
import json
import os
import re
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import pytest
import torch

import ember
import ember.serialization as S
from ember.serialization import _save_ember as save
from ember.serialization import load

ALIGN = 64
PRE_V2 = 24          # magic, version, header length, header CRC-32


# ---- writing the format by hand -------------------------------------------------------------
def entry(dtype="float32", shape=(2,), offset=0, nbytes=None, device="cpu",
          requires_grad=False, **extra):
    itemsize = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "float16": 2, "bfloat16": 2,
                "int32": 4, "float32": 4, "int64": 8, "float64": 8}.get(dtype, 4)
    if nbytes is None:
        nbytes = int(np.prod(shape)) * itemsize if all(type(s) is int for s in shape) else 0
    e = {"dtype": dtype, "shape": list(shape), "offset": offset, "nbytes": nbytes,
         "device": device, "requires_grad": requires_grad}
    e.update(extra)
    return e


def header(entries, root=None, data_size=None, **extra):
    if data_size is None:
        data_size = max([e["offset"] + e["nbytes"] for e in entries
                         if isinstance(e, dict) and type(e.get("offset")) is int
                         and type(e.get("nbytes")) is int] + [0])
    h = {"format": "ember.save", "tensors": entries, "data_size": data_size,
         "root": {"$": "list", "v": [{"$": "tensor", "i": i} for i in range(len(entries))]}
         if root is None else root}
    h.update(extra)
    return h


def record(h, data=b"", version=2, crcs=None) -> bytes:
    """A record with correct checksums unless ``crcs`` overrides the trailer."""
    raw = h if isinstance(h, bytes) else json.dumps(h).encode()
    if version == 1:
        pre = S.MAGIC + struct.pack("<IQ", 1, len(raw)) + raw
        return pre + b"\0" * (-len(pre) % ALIGN) + data
    pre = S.MAGIC + struct.pack("<IQI", version, len(raw), zlib.crc32(raw)) + raw
    if crcs is None:
        crcs = [zlib.crc32(data[e["offset"]:e["offset"] + e["nbytes"]])
                if isinstance(e.get("offset"), int) and isinstance(e.get("nbytes"), int)
                and not isinstance(e.get("offset"), bool) else 0 for e in h["tensors"]]
    return pre + b"\0" * (-len(pre) % ALIGN) + data + struct.pack(f"<{len(crcs)}I", *crcs)


def refused(raw, phrase):
    with pytest.raises(RuntimeError, match=phrase):
        load(io.BytesIO(raw))


# ---- non-regular files ----------------------------------------------------------------------
def test_a_fifo_path_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "ck.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.ember"
    link.symlink_to(fifo)
    for path in (fifo, link):
        outcome = []

        def attempt(p=path):
            try:
                load(p)
            except Exception as e:   # noqa: BLE001 - the outcome is checked below
                outcome.append(e)

        th = threading.Thread(target=attempt, daemon=True)
        th.start()
        th.join(10)
        if th.is_alive():            # blocked in open(): release it, then fail
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            th.join(5)
            pytest.fail("ember.load blocked on a FIFO")
        assert isinstance(outcome[0], RuntimeError), outcome
        assert re.search(r"is a FIFO \(named pipe\), not a regular file", str(outcome[0]))


def test_devices_sockets_and_directories_are_refused(tmp_path):
    with pytest.raises(RuntimeError, match="is a character device, not a regular file"):
        load("/dev/null")
    with pytest.raises(IsADirectoryError):
        load(tmp_path)
    sock_path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(sock_path)
        with pytest.raises(RuntimeError, match="is a socket, not a regular file"):
            load(sock_path)


def test_streams_still_load_as_file_objects():
    buf = io.BytesIO()
    save({"x": ember.arange(5.)}, buf)
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, buf.getvalue()), os.close(w)))
    writer.start()
    with os.fdopen(r, "rb") as pipe:
        assert load(pipe)["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    writer.join()


def test_saving_to_a_fifo_writes_into_it_and_keeps_it(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    save({"x": ember.ones(3)}, fifo)
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)      # not replaced by a regular file
    assert load(io.BytesIO(got[0]))["x"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(IsADirectoryError):
        save({"x": 1}, tmp_path)


# ---- aliasing and size bombs ----------------------------------------------------------------
def test_600_entries_over_the_same_4_mib_are_refused_quickly(tmp_path):
    n = 1 << 20                                     # float32 elements: 4 MiB
    entries = [entry(shape=(n,), offset=0) for _ in range(600)]
    path = tmp_path / "bomb.ember"
    path.write_bytes(record(header(entries), b"\0" * (4 * n)))
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="tensors 0 and 1 share the bytes 0..4194304"):
        load(path)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("spans,pair", [
    ([(0, 64), (32, 64)], (0, 1)),                  # partial overlap
    ([(0, 256), (64, 8), (128, 8)], (0, 1)),        # one entry inside another
    ([(128, 64), (0, 64), (64, 128)], (2, 0)),      # out of table order
    ([(0, 8), (0, 8)], (0, 1)),                     # the same bytes twice
])
def test_entries_sharing_bytes_are_refused(spans, pair):
    entries = [entry("uint8", (nb,), offset=off) for off, nb in spans]
    data = bytes(range(256)) * 2
    refused(record(header(entries), data),
            rf"tensors {pair[0]} and {pair[1]} share the bytes")


def test_zero_size_entries_and_repeated_references_are_fine():
    entries = [entry(shape=(0,), offset=0), entry(shape=(0, 3), offset=0),
               entry(shape=(2,), offset=0)]
    data = np.array([1.5, -2.0], "<f4").tobytes()
    refs = [{"$": "tensor", "i": 2}] * 50 + [{"$": "tensor", "i": 0}, {"$": "tensor", "i": 1}]
    out = load(io.BytesIO(record(header(entries, root={"$": "list", "v": refs}), data)))
    assert all(t is out[0] for t in out[:50])       # one tensor, named 50 times
    assert out[0].tolist() == [1.5, -2.0]
    assert out[50].shape == (0,) and out[51].shape == (0, 3)


def test_materialised_bytes_never_exceed_the_file():
    """Random layouts of entries over a data section: whatever loads adds up to at most
    the file's size (sharing is refused, and everything lies inside the file)."""
    rng = np.random.default_rng(0)
    loaded = 0
    for _ in range(300):
        size = int(rng.integers(1, 512))
        entries = []
        for _ in range(int(rng.integers(1, 6))):
            nb = int(rng.integers(0, 96))
            entries.append(entry("uint8", (nb,), offset=int(rng.integers(0, size))))
        raw = record(header(entries, data_size=size), bytes(size))
        try:
            out = load(io.BytesIO(raw))
        except RuntimeError:
            continue
        loaded += 1
        assert sum(t.numel() for t in out) <= len(raw)
    assert loaded > 10


# ---- bool payloads --------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 2])
def test_bool_bytes_other_than_0_and_1_read_as_true(version):
    payload = bytes([2, 1, 0, 255, 0x80, 0, 7])
    raw = record(header([entry("bool", (7,))]), payload, version=version)
    t = load(io.BytesIO(raw))[0]
    want = np.frombuffer(payload, np.uint8) != 0
    assert t.dtype is ember.bool
    assert t.numpy().view(np.uint8).tolist() == want.astype(np.uint8).tolist()
    assert t.sum().item() == int(want.sum()) == 5
    # what PyTorch's kernels make of the same bytes
    tt = torch.frombuffer(bytearray(payload), dtype=torch.bool)
    assert t.sum().item() == tt.sum().item()
    assert t.int().tolist() == tt.int().tolist()
    assert (~t).tolist() == (~want).tolist()


def test_bool_tensors_over_foreign_bytes_are_saved_as_0_and_1():
    t = ember.from_numpy(np.array([2, 0, 1, 9], np.uint8).view(np.bool_))
    buf = io.BytesIO()
    save(t, buf)
    raw = buf.getvalue()
    hlen = struct.unpack("<Q", raw[12:20])[0]
    start = -(-(PRE_V2 + hlen) // ALIGN) * ALIGN
    assert raw[start:start + 4] == bytes([1, 0, 1, 1])
    assert load(io.BytesIO(raw)).tolist() == [True, False, True, True]


# ---- every field's type and range ----------------------------------------------------------
BAD_ENTRIES = [
    ("float size", entry(shape=(1.5,), nbytes=6), "invalid shape"),
    ("string size", entry(shape=("2",), nbytes=8), "invalid shape"),
    ("bool size", entry(shape=(True,), nbytes=4), "invalid shape"),
    ("nested size", entry(shape=([2],), nbytes=8), "invalid shape"),
    ("null size", entry(shape=(None,), nbytes=0), "invalid shape"),
    ("size past int64", entry(shape=(2 ** 63, 0), nbytes=0), "invalid shape"),
    ("10^40 with a zero", entry(shape=(10 ** 40, 0), nbytes=0), "invalid shape"),
    ("numel past int64", entry(shape=(2 ** 62, 4), nbytes=0), "elements, more than"),
    ("65 dims", entry(shape=(1,) * 65, nbytes=4), "invalid shape"),
    ("shape not a list", entry(shape=(2,), nbytes=8) | {"shape": 2}, "invalid shape"),
    ("float offset", entry(offset=0.0), "invalid offset"),
    ("string offset", entry(offset="0"), "invalid offset"),
    ("negative offset", entry(offset=-64), "invalid offset"),
    ("offset 10^40", entry(offset=10 ** 40), "invalid offset"),
    ("bool nbytes", entry(shape=(1,), nbytes=True, dtype="uint8"), "invalid nbytes"),
    ("float nbytes", entry(nbytes=8.0), "invalid nbytes"),
    ("device index 10^40", entry(device="cpu:" + "1" * 41), "invalid device"),
    ("device index 128", entry(device="cpu:128"), "invalid device"),
    ("device index -1", entry(device="cpu:-1"), "invalid device"),
    ("leading zero", entry(device="cpu:01"), "invalid device"),
    ("non-ASCII digit", entry(device="cpu:\u0661"), "invalid device"),
    ("upper case", entry(device="CPU"), "invalid device"),
    ("device not a string", entry(device=0), "device that is not a string"),
    ("dtype not a string", entry() | {"dtype": 3}, "unknown dtype"),
    ("int requires_grad", entry(requires_grad=1), "not a boolean"),
    ("string parameter", entry(parameter="yes"), "not a boolean"),
    ("unknown field", entry(strides=[1]), "unknown fields \\['strides'\\]"),
    ("not an object", ["float32", [2]], "must be an object"),
]


@pytest.mark.parametrize("name,e,phrase", BAD_ENTRIES, ids=[b[0] for b in BAD_ENTRIES])
def test_bad_entry_fields_are_refused(name, e, phrase):
    h = header([e], data_size=64)
    refused(record(h, b"\0" * 64, crcs=[0]), phrase)
    refused(record(h, b"\0" * 64, version=1), phrase)


BAD_HEADERS = [
    ("float data_size", header([], data_size=0.0), "invalid data_size"),
    ("bool data_size", header([], data_size=False), "invalid data_size"),
    ("data_size 10^40", header([], data_size=10 ** 40), "invalid data_size"),
    ("unknown top-level field", header([], extra=1), "and nothing else"),
    ("float tensor index", header([entry()], root={"$": "tensor", "i": 0.0}), "tensor index"),
    ("size of floats", header([], root={"$": "size", "v": [2, 1.5]}), "'size' node"),
    ("size of strings", header([], root={"$": "size", "v": ["x"]}), "'size' node"),
    ("device node 10^40", header([], root={"$": "device", "v": "cpu:1" + "0" * 40}),
     "invalid device string"),
    ("unknown node field", header([], root={"$": "list", "v": [], "w": 1}), "unknown fields"),
    ("number out of range", b'{"format":"ember.save","tensors":[],"data_size":0,'
                            b'"root":1e400}', "out of range"),
    ("4301-digit number", b'{"format":"ember.save","tensors":[],"data_size":0,"root":'
                          + b"9" * 4301 + b"}", "not valid UTF-8 JSON"),
]


@pytest.mark.parametrize("name,h,phrase", BAD_HEADERS, ids=[b[0] for b in BAD_HEADERS])
def test_bad_header_fields_are_refused(name, h, phrase):
    if isinstance(h, bytes):
        raw = record(h, crcs=[])
    elif h["tensors"]:
        h["data_size"] = 64
        raw = record(h, b"\0" * 64)
    else:
        raw = record(h)
    refused(raw, phrase)


# ---- damage: bit flips and truncation -------------------------------------------------------
def _small_checkpoint():
    obj = {"w": ember.randn(3, 2), "i": ember.arange(5, dtype=ember.int16),
           "m": ember.tensor([True, False, True]), "bf": ember.ones(2, dtype=ember.bfloat16),
           "h": ember.tensor([0.5, -1.0], dtype=ember.float16), "s": ember.Size([2, 3]),
           "n": [1, 2.5, None, "x", float("nan")], "d": ember.float16,
           "p": ember.nn.Parameter(ember.ones(2))}
    buf = io.BytesIO()
    save(obj, buf)
    return obj, buf.getvalue()


def _same(a, b):
    if isinstance(a, ember.Tensor):
        return (type(a) is type(b) and a.dtype is b.dtype and a.shape == b.shape
                and a.requires_grad == b.requires_grad
                and np.array_equal(a.detach().float().numpy(), b.detach().float().numpy(),
                                   equal_nan=True))
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    return type(a) is type(b) and a == b


def test_every_bit_flip_is_refused_or_harmless():
    """Each of the file's bits flipped in turn: the load raises RuntimeError or (a flip in
    the zero padding, which nothing reads) returns exactly the saved object."""
    obj, raw = _small_checkpoint()
    hlen = struct.unpack("<Q", raw[12:20])[0]
    data_start = -(-(PRE_V2 + hlen) // ALIGN) * ALIGN
    padding = set(range(PRE_V2 + hlen, data_start))
    entries = json.loads(raw[PRE_V2:PRE_V2 + hlen])["tensors"]
    used = set()
    for e in entries:
        used.update(range(data_start + e["offset"], data_start + e["offset"] + e["nbytes"]))
    data_end = data_start + json.loads(raw[PRE_V2:PRE_V2 + hlen])["data_size"]
    padding |= set(range(data_start, data_end)) - used
    refused_at = set()
    for pos in range(len(raw)):
        for bit in range(8):
            bad = bytearray(raw)
            bad[pos] ^= 1 << bit
            try:
                out = load(io.BytesIO(bytes(bad)))
            except RuntimeError:
                refused_at.add(pos)
                continue
            assert pos in padding, f"flipping bit {bit} of byte {pos} loaded silently"
            assert _same(out, obj), f"flipping bit {bit} of byte {pos} changed the object"
    # everything that is not padding is covered
    assert refused_at == set(range(len(raw))) - padding


def test_random_byte_damage_is_refused_or_harmless():
    obj, raw = _small_checkpoint()
    rng = np.random.default_rng(7)
    for _ in range(2000):
        bad = bytearray(raw)
        for _ in range(int(rng.integers(1, 5))):
            bad[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        try:
            out = load(io.BytesIO(bytes(bad)))
        except RuntimeError:
            continue
        assert _same(out, obj)


def test_every_truncation_is_refused(tmp_path):
    _, raw = _small_checkpoint()
    path = tmp_path / "t.ember"
    for cut in range(len(raw)):
        with pytest.raises(RuntimeError, match="is truncated|is empty|not a checkpoint"):
            load(io.BytesIO(raw[:cut]))
    for cut in (0, 5, 20, 23, 24, len(raw) // 2, len(raw) - 4, len(raw) - 1):
        path.write_bytes(raw[:cut])
        with pytest.raises(RuntimeError):
            load(path)


def test_checksum_mismatches_are_named():
    _, raw = _small_checkpoint()
    hlen = struct.unpack("<Q", raw[12:20])[0]
    bad = bytearray(raw)
    bad[PRE_V2 + 3] ^= 0x01
    refused(bytes(bad), "header does not match its CRC-32 checksum")
    bad = bytearray(raw)
    bad[-1] ^= 0x80                                  # the last tensor's checksum
    refused(bytes(bad), r"the bytes of tensor \d+ \(float32, shape \[2\]\) do not match")
    assert hlen > 0


# ---- temporaries of killed saves ------------------------------------------------------------
PAUSING_SAVER = """
import sys
import ember
import ember._ember_format as ember_format
import ember.serialization as S

real = ember_format._write_tensor_data


def pause(f, t, nbytes):
    crc = real(f, t, nbytes)
    f.flush()
    print("paused", flush=True)
    sys.stdin.readline()
    return crc


ember_format._write_tensor_data = pause
S._save_ember({"w": ember.full((4096,), 2.0)}, sys.argv[1])
print("saved", flush=True)
"""


def _temporaries(d, name):
    return sorted(n for n in os.listdir(d) if n.startswith(f".{name}.") and n.endswith(".tmp"))


def test_stale_temporaries_of_the_target_are_removed_and_live_ones_kept(tmp_path):
    target = tmp_path / "ck.ember"
    host = S._HOST
    # debris: a killed save of another target, an old-style (pid-less) temporary of this
    # target that is fresh and one that is old, and files that only look similar
    others = [f".other.ember.{host}-999999.abcdefgh.tmp", ".ck.ember.notours.tmp",
              ".ck.ember.abcdefgh.tmp.bak", "ck.ember.abcdefgh.tmp"]
    for n in others + [".ck.ember.fresh123.tmp", ".ck.ember.old12345.tmp"]:
        (tmp_path / n).write_bytes(b"x" * 100)
    old = time.time() - 2 * S.STALE_TEMPORARY_S
    os.utime(tmp_path / ".ck.ember.old12345.tmp", (old, old))

    live = subprocess.Popen([sys.executable, "-c", PAUSING_SAVER, str(target)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    killed = subprocess.Popen([sys.executable, "-c", PAUSING_SAVER, str(target)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline() == "paused\n"
        assert killed.stdout.readline() == "paused\n"
        tmps = _temporaries(tmp_path, "ck.ember")
        live_tmp = [n for n in tmps if f"-{live.pid}." in n]
        killed_tmp = [n for n in tmps if f"-{killed.pid}." in n]
        assert len(live_tmp) == 1 and len(killed_tmp) == 1
        # even made to look old, a temporary whose writer holds its lock stays
        os.utime(tmp_path / live_tmp[0], (old, old))
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)

        save({"w": ember.ones(3)}, target)
        left = sorted(os.listdir(tmp_path))
        assert killed_tmp[0] not in left                       # its writer is dead
        assert ".ck.ember.old12345.tmp" not in left             # old and unlocked
        assert live_tmp[0] in left and ".ck.ember.fresh123.tmp" in left
        assert all(n in left for n in others)
        assert load(target)["w"].tolist() == [1.0, 1.0, 1.0]

        # the paused save then completes normally
        live.stdin.write("\n")
        live.stdin.flush()
        assert live.stdout.readline() == "saved\n"
        assert live.wait(30) == 0
    finally:
        for p in (live, killed):
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdin.close()
            p.stdout.close()
    assert load(target)["w"].tolist() == [2.0] * 4096
    assert _temporaries(tmp_path, "ck.ember") == [".ck.ember.fresh123.tmp",
                                                  ".ck.ember.notours.tmp"]
