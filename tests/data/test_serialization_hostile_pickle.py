"""ember.load under the default weights_only=True against crafted PyTorch-format archives and
safetensors files: no code runs, nothing unbounded is allocated, every problem is a clear
exception (``pickle.UnpicklingError`` for the pickle, ``RuntimeError`` for the data).

The files are written here opcode by opcode and record by record. Oracles: the file system
(a payload that ran leaves a marker file), PyTorch's own weights-only loader for what a
well-formed file holds, and the file's size for what a load may allocate.
"""
import io
import json
import os
import pickle
import struct
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest
import torch

import ember
import ember.serialization as S

REFUSED = (pickle.UnpicklingError, RuntimeError)


# ---- writing pickles and archives by hand ---------------------------------------------------
def G(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def U(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def INT(n: int) -> bytes:
    if 0 <= n < 2 ** 31:
        return b"J" + struct.pack("<i", n)
    nbytes = (n.bit_length() + 8) // 8
    return b"\x8a" + bytes([nbytes]) + n.to_bytes(nbytes, "little", signed=True)


def T(items) -> bytes:
    return b"(" + b"".join(INT(x) if isinstance(x, int) else x for x in items) + b"t"


def pid(numel, key="0", stype="FloatStorage", location="cpu") -> bytes:
    return b"(" + U("storage") + G("torch", stype) + U(key) + U(location) + \
        (INT(numel) if isinstance(numel, int) else numel) + b"tQ"


def tensor_pkl(numel=4, offset=0, size=(4,), stride=(1,), key="0", stype="FloatStorage",
               storage=None) -> bytes:
    """The opcodes torch.save writes for one tensor (``_rebuild_tensor_v2``)."""
    st = pid(numel, key, stype) if storage is None else storage
    return (G("torch._utils", "_rebuild_tensor_v2") + b"(" + st + INT(offset) + T(size)
            + T(stride) + b"\x89" + G("collections", "OrderedDict") + b")Rt" + b"R")


def program(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def archive(pkl: bytes, records=None, prefix="archive") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{prefix}/data.pkl", pkl)
        z.writestr(f"{prefix}/byteorder", b"little")
        for k, v in (records or {}).items():
            z.writestr(f"{prefix}/data/{k}", v)
        z.writestr(f"{prefix}/version", b"3\n")
    return buf.getvalue()


def load(raw: bytes, **kw):
    return ember.load(io.BytesIO(raw), **kw)


F4 = np.arange(4, dtype="<f4").tobytes()


def test_the_hand_written_archive_is_what_torch_reads():
    raw = archive(program(tensor_pkl()), {"0": F4})
    assert torch.load(io.BytesIO(raw)).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert load(raw).tolist() == [0.0, 1.0, 2.0, 3.0]


# ---- no code runs -------------------------------------------------------------------------------
class Evil:
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def payloads(marker: str) -> dict:
    cmd = f"touch {marker}"
    c = cmd.encode()
    code = f"__import__('os').system({cmd!r})"
    return {
        "reduce-os.system-proto0": b"cos\nsystem\n(S'" + c + b"'\ntR.",
        "reduce-evil-proto2": pickle.dumps(Evil(cmd), protocol=2),
        "stack-global-proto4": pickle.dumps(Evil(cmd), protocol=4),
        "inst": b"(" + U(cmd) + b"ios\nsystem\n.",
        "inst-allowed-class": b"(" + U(cmd) + b"icollections\nOrderedDict\n.",
        "obj": b"(cos\nsystem\n" + U(cmd) + b"o.",
        "obj-allowed-class": b"(ccollections\nOrderedDict\no.",
        "builtins-eval": program(G("builtins", "eval") + b"(" + U(code) + b"tR"),
        "py2-builtin-eval": program(G("__builtin__", "eval") + b"(" + U(code) + b"tR"),
        "getattr-chain": program(G("builtins", "getattr") + b"(" + G("collections", "OrderedDict")
                                 + U("__init__") + b"tR"),
        "nested-in-state-dict": program(b"}(" + U("w") + tensor_pkl() + U("x")
                                        + pickle.dumps(Evil(cmd), protocol=2)[2:-1] + b"u"),
        "global-in-persistent-id": program(b"(" + U("storage") + G("os", "system") + U("0")
                                           + U("cpu") + INT(4) + b"tQ"),
        "ext1-opcode": program(b"\x82\x01"),
        "text-persid": b"Pos.system\n.",
        "newobj-subprocess": program(G("subprocess", "Popen") + b"(" + U("touch") + b"t\x81"),
        "reduce-non-callable": program(G("torch", "float32") + b")R"),
        "encode-zlib": program(G("_codecs", "encode") + b"(" + U("x") + U("zlib_codec") + b"tR"),
        "build-tensor-shape": program(tensor_pkl() + b"N}(" + U("shape") + T([10 ** 9])
                                      + b"u\x86b"),
        "build-tensor-dict": program(tensor_pkl() + b"}(" + U("shape") + T([10 ** 9]) + b"ub"),
        "build-ordereddict-slots": program(G("collections", "OrderedDict") + b")R" + b"N}("
                                           + U("__class__") + G("os", "system") + b"u\x86b"),
        "build-ordereddict-dunder": program(G("collections", "OrderedDict") + b")R" + b"}("
                                            + U("__class__") + INT(1) + b"ub"),
        "newobj-tensor": program(G("torch", "Tensor") + b")\x81"),
        "rebuild-from-type-os": program(G("torch._tensor", "_rebuild_from_type_v2") + b"("
                                        + G("os", "system") + G("torch", "Tensor") + b")}tR"),
        "append-to-non-list": program(G("collections", "OrderedDict") + b")R" + U("x") + b"a"),
    }


@pytest.mark.parametrize("name", list(payloads("m")))
def test_crafted_pickles_never_run_code(name, tmp_path):
    marker = tmp_path / "pwned"
    raw = payloads(str(marker))[name]
    for data in (archive(raw, {"0": F4}), raw):
        with pytest.raises(REFUSED):
            load(data)
        path = tmp_path / "f.pt"
        path.write_bytes(data)
        with pytest.raises(REFUSED):
            ember.load(path)
    assert not marker.exists()


def test_the_payloads_are_real(tmp_path):
    # the same files do run code where everything is unpickled: that is what the default
    # weights_only=True prevents, and why weights_only=False is only for trusted files
    marker = tmp_path / "ran"
    raw = archive(pickle.dumps(Evil(f"touch {marker}"), protocol=2))
    ember.load(io.BytesIO(raw), weights_only=False)
    assert marker.exists()


def test_the_refusal_names_the_global_and_the_remedy():
    with pytest.raises(pickle.UnpicklingError) as err:
        load(archive(payloads("m")["reduce-evil-proto2"]))
    msg = str(err.value)
    assert "Unsupported global: GLOBAL posix.system" in msg or \
        "Unsupported global: GLOBAL os.system" in msg
    assert "ember.serialization.add_safe_globals" in msg and "weights_only" in msg


# ---- storages and views: declared sizes are checked against the bytes -----------------------
@pytest.mark.parametrize("name,body,phrase", [
    ("numel beyond the record", tensor_pkl(numel=10 ** 12, size=(4,)), "record has 16"),
    ("numel of 2**62", tensor_pkl(numel=2 ** 62), "elements|record has"),
    ("numel of 2**70", tensor_pkl(numel=2 ** 70), "elements"),
    ("negative numel", tensor_pkl(numel=-1), "elements"),
    ("numel not an int", program(tensor_pkl(storage=pid(U("4")))), "elements"),
    ("view past the storage", tensor_pkl(size=(5,)), "out of bounds"),
    ("huge size", tensor_pkl(size=(10 ** 12,)), "out of bounds"),
    ("huge stride", tensor_pkl(size=(2,), stride=(2 ** 62,)), "out of bounds"),
    ("overflowing stride", tensor_pkl(size=(2,), stride=(2 ** 64,)), "stride"),
    ("negative stride", tensor_pkl(size=(2,), stride=(-1,)), "stride"),
    ("negative offset", tensor_pkl(offset=-1, size=(1,)), "offset"),
    ("overflowing offset", tensor_pkl(offset=2 ** 64, size=(1,)), "offset"),
    ("offset past the storage", tensor_pkl(offset=4, size=(1,)), "out of bounds"),
    ("negative size", tensor_pkl(size=(-4,)), "size"),
    ("size/stride lengths differ", tensor_pkl(size=(2, 2), stride=(1,)), "lengths differ"),
    ("65 dimensions", tensor_pkl(size=(1,) * 65, stride=(1,) * 65), "at most 64"),
    ("numel overflowing int64", tensor_pkl(size=(2 ** 32, 2 ** 32), stride=(0, 0)), "more than"),
    ("missing record", tensor_pkl(key="7"), "no record"),
    ("key with a path", tensor_pkl(key="../../etc/passwd"), "invalid storage key"),
    ("unknown storage type", tensor_pkl(stype="QUInt2x4Storage"), "does not support"),
    ("storage is a string", program(tensor_pkl(storage=U("0"))), "rebuilt from str"),
])
def test_hostile_storage_declarations_are_refused(name, body, phrase):
    body = body if body.startswith(b"\x80") else program(body)
    tracemalloc.start()
    try:
        with pytest.raises(REFUSED, match=phrase):
            load(archive(body, {"0": F4}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{name}: {peak} bytes allocated"


def test_a_stride_zero_view_loads_as_a_view_as_in_torch():
    raw = archive(program(tensor_pkl(size=(2 ** 40,), stride=(0,))), {"0": F4})
    want = torch.load(io.BytesIO(raw))
    got = load(raw)
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    assert got.untyped_storage().nbytes() == 16     # nothing was materialised


HUGE_VIEW = tensor_pkl(size=(2 ** 40,), stride=(0,))     # 2**40 elements over 16 bytes


@pytest.mark.parametrize("name,body", [
    ("set of a huge view", G("builtins", "set") + b"(" + HUGE_VIEW + b"tR"),
    ("py2 set of a huge view", G("__builtin__", "set") + b"(" + HUGE_VIEW + b"tR"),
    ("Counter of a huge view", G("collections", "Counter") + b"(" + HUGE_VIEW + b"tR"),
    ("OrderedDict of a huge view", G("collections", "OrderedDict") + b"(" + HUGE_VIEW
     + b"tR"),
    ("Size of a huge view", G("torch", "Size") + b"(" + HUGE_VIEW + b"tR"),
    ("Size.__new__ of a huge view", G("torch", "Size") + b"(" + HUGE_VIEW + b"t\x81"),
    ("bytearray(2**40)", G("builtins", "bytearray") + b"(" + INT(2 ** 40) + b"tR"),
    ("complex of a huge view", G("builtins", "complex") + b"(" + HUGE_VIEW + b"tR"),
])
def test_allowed_constructors_take_only_plain_data(name, body):
    # each would iterate 2**40 elements or allocate a TiB if it ran
    tracemalloc.start()
    try:
        with pytest.raises(pickle.UnpicklingError, match="only plain values|Can only create"):
            load(archive(program(body), {"0": F4}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


# ---- zip-level attacks ---------------------------------------------------------------------------
def test_a_deflate_bomb_declaring_a_huge_size_is_refused_before_reading():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", program(tensor_pkl(numel=1 << 18, size=(1 << 18,))))
        z.writestr("archive/data/0", b"\0" * (1 << 20), compress_type=zipfile.ZIP_DEFLATED)
    raw = bytearray(buf.getvalue())
    # declare 2**40 uncompressed bytes in both headers (a bomb, or a lie)
    name = b"archive/data/0"
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        i = raw.find(sig)
        while i >= 0:
            n = struct.unpack("<H", raw[i + (26 if sig == b"PK\x03\x04" else 28):][:2])[0]
            start = i + (30 if sig == b"PK\x03\x04" else 46)
            if raw[start:start + n] == name:
                raw[i + size_at:i + size_at + 4] = struct.pack("<I", 0xFFFFFFF0)
            i = raw.find(sig, i + 4)
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="zip bomb|malformed|truncated|declared"):
            load(bytes(raw))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_a_record_expanding_past_its_declared_size_is_caught():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", program(tensor_pkl()))
        z.writestr("archive/data/0", F4 + b"\0" * 4096, compress_type=zipfile.ZIP_DEFLATED)
    raw = bytearray(buf.getvalue())
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        i = raw.find(sig)
        while i >= 0:
            if struct.unpack("<I", raw[i + size_at:i + size_at + 4])[0] == 16 + 4096:
                raw[i + size_at:i + size_at + 4] = struct.pack("<I", 16)   # the lie
            i = raw.find(sig, i + 4)
    with pytest.raises(RuntimeError, match="corrupted|truncated|malformed"):
        load(bytes(raw))


def test_overlapping_records_are_refused():
    # a second central-directory entry pointing at the first record's bytes (the
    # overlapping-files zip bomb): many storages out of one record
    good = bytearray(archive(program(b"(" + tensor_pkl(key="0") + tensor_pkl(key="1") + b"t"),
                             {"0": F4, "1": F4}))
    cd0 = good.find(b"PK\x01\x02")
    entries = []
    i = cd0
    while good[i:i + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack("<HHH", good[i + 28:i + 34])
        entries.append((i, bytes(good[i + 46:i + 46 + n])))
        i += 46 + n + m + k
    offsets = {name: struct.unpack("<I", good[j + 42:j + 46])[0] for j, name in entries}
    j1 = next(j for j, name in entries if name == b"archive/data/1")
    good[j1 + 42:j1 + 46] = struct.pack("<I", offsets[b"archive/data/0"])
    with pytest.raises(RuntimeError, match="overlap|malformed"):
        load(bytes(good))


def test_every_truncation_is_refused():
    buf = io.BytesIO()
    ember.save({"w": ember.arange(6.).view(2, 3), "b": ember.ones(2, dtype=ember.int64)}, buf)
    raw = buf.getvalue()
    for n in range(len(raw)):
        with pytest.raises(REFUSED):
            load(raw[:n])


def test_random_damage_is_refused_or_harmless():
    buf = io.BytesIO()
    obj = {"w": ember.arange(6.).view(2, 3), "b": ember.ones(2, dtype=ember.int64), "n": 3}
    ember.save(obj, buf)
    raw = buf.getvalue()
    rng = np.random.default_rng(0)
    for _ in range(300):
        data = bytearray(raw)
        for pos in rng.integers(0, len(data), rng.integers(1, 4)):
            data[pos] = rng.integers(0, 256)
        try:
            out = load(bytes(data))
        except REFUSED:
            continue
        # the damage hit bytes nothing reads (padding, timestamps): the object is intact
        assert out["w"].tolist() == obj["w"].tolist() and out["n"] == 3
        assert out["b"].tolist() == [1, 1]


def test_a_torchscript_archive_and_foreign_zips_are_named(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("m/constants.pkl", b"")
        z.writestr("m/code/m.py", b"")
    with pytest.raises(RuntimeError, match="TorchScript"):
        load(buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", b"hi")
    with pytest.raises(RuntimeError, match="not a PyTorch checkpoint"):
        load(buf.getvalue())


# ---- pickle-level bounds -------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    b"\x80\x02\x8e" + struct.pack("<Q", 2 ** 62) + b"x.",        # BINBYTES8 of 2**62 bytes
    b"\x80\x02\x8d" + struct.pack("<Q", 2 ** 63) + b"x.",        # BINUNICODE8
    b"\x80\x02\x8b" + struct.pack("<i", 2 ** 30) + b"x.",        # LONG4 of 1 GiB
    b"\x80\x02X" + struct.pack("<I", 2 ** 32 - 1) + b"x.",       # BINUNICODE
    b"\x80\x02h\x05.",                                           # BINGET of a missing memo
    b"\x80\x02t.",                                               # TUPLE without MARK
    b"\x80\x02]]]",                                              # no STOP
    b"\x80\x02" + b"]" * 20000 + b"a" * 19999 + b".",           # deep nesting: iterative
])
def test_pickle_lengths_are_bounded(body):
    tracemalloc.start()
    try:
        try:
            load(archive(body))
        except REFUSED:
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


# ---- safetensors headers -------------------------------------------------------------------------
def st_file(header, data=b"", hlen=None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if hlen is None else hlen) + raw + data


@pytest.mark.parametrize("name,raw,phrase", [
    ("header longer than the file", st_file({}, hlen=10 ** 6), "truncated|malformed"),
    ("header of 2**63", st_file(b"{}", hlen=2 ** 63), "not a checkpoint|truncated"),
    ("not JSON", st_file(b"{not json"), "malformed"),
    ("deep JSON", st_file(b"{" + b'"a":[' * 100000 + b"]" * 100000 + b"}"), "malformed"),
    ("offsets outside", st_file({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
                                b"\0" * 8), "outside"),
    ("size mismatch", st_file({"w": {"dtype": "F32", "shape": [2 ** 40],
                                     "data_offsets": [0, 16]}}, b"\0" * 16), "needs"),
    ("negative shape", st_file({"w": {"dtype": "F32", "shape": [-4],
                                      "data_offsets": [0, 16]}}, b"\0" * 16), "invalid shape"),
    ("reversed offsets", st_file({"w": {"dtype": "F32", "shape": [0],
                                        "data_offsets": [16, 0]}}, b"\0" * 16), "invalid"),
    ("unknown dtype", st_file({"w": {"dtype": "F128", "shape": [1],
                                     "data_offsets": [0, 16]}}, b"\0" * 16), "dtype"),
    ("overlap", st_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}},
                        b"\0" * 16), "overlap"),
    ("extra field", st_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4],
                                   "exec": "x"}}, b"\0" * 4), "exactly"),
])
def test_hostile_safetensors_headers_are_refused(name, raw, phrase, tmp_path):
    path = tmp_path / "x.safetensors"
    path.write_bytes(raw)
    tracemalloc.start()
    try:
        for fn in (ember.load, S.load_safetensors):
            with pytest.raises(RuntimeError, match=phrase):
                fn(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_old_ember_checkpoints_still_load(tmp_path):
    path = tmp_path / "old.ember"
    obj = {"w": ember.arange(4.), "p": ember.nn.Parameter(ember.ones(2)), "step": 7}
    S._save_ember(obj, path)
    out = ember.load(path)
    assert out["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and out["step"] == 7
    assert isinstance(out["p"], ember.nn.Parameter)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
