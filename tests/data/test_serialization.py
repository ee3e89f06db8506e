"""ember.save / ember.load: exact round trips, a format that never runs code, atomic writes.

NumPy is the oracle for values (bit-for-bit, so NaN payloads, infinities and -0.0 count);
bfloat16 is checked through its exact float32 widening.
"""
import collections
import io
import json
import os
import pathlib
import pickle
import stat
import struct
import zlib

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
import ember._ember_format as ember_format
import ember.serialization as S
from ember.dispatcher import BACKENDS, ensure_loaded, register_backend, unregister_backend
from ember.serialization import _save_ember as save
from ember.serialization import load

RNG = np.random.default_rng(0)

NP_DTYPES = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
             "int32": np.int32, "int64": np.int64, "float16": np.float16,
             "float32": np.float32, "float64": np.float64}
ALL = list(NP_DTYPES) + ["bfloat16"]
SHAPES = [(), (0,), (2, 0, 3), (7,), (3, 4), (2, 3, 5)]


def sample(dtype: str, shape) -> np.ndarray:
    """Values covering the dtype's range (extremes, NaN/inf/-0.0 for floats)."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return RNG.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in ("float16", "float32", "float64", "bfloat16"):
        npd = np.float32 if dtype == "bfloat16" else NP_DTYPES[dtype]
        a = (RNG.standard_normal(n) * 100).astype(npd)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, np.finfo(npd).tiny], npd)
        a[:min(n, 5)] = special[:min(n, 5)]
        return a.reshape(shape)
    info = np.iinfo(NP_DTYPES[dtype])
    a = RNG.integers(info.min, info.max, n, endpoint=True, dtype=NP_DTYPES[dtype])
    a[:min(n, 2)] = [info.min, info.max][:min(n, 2)]
    return a.reshape(shape)


def make(a: np.ndarray, dtype: str):
    t = ember.from_numpy(a.copy())  # (np.ascontiguousarray would make 0-d 1-d)
    return t.to(ember.bfloat16) if dtype == "bfloat16" else t


def values(t) -> np.ndarray:
    return (t.float() if t.dtype is ember.bfloat16 else t).detach().cpu().numpy()


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        a, b = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    return np.array_equal(a, b)


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **kw)


def assert_same(a, b):
    """Deep equality with exact container types and bitwise tensor values."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ember.Tensor):
        assert a.dtype is b.dtype and a.shape == b.shape and a.device == b.device
        assert a.requires_grad == b.requires_grad
        assert same_bits(values(a), values(b))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b


# ---- round trips ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_dtype_roundtrips_exactly(dtype, shape):
    a = sample(dtype, shape)
    t = make(a, dtype)
    out = roundtrip({"t": t})["t"]
    assert out.dtype is getattr(ember, dtype if dtype != "bool" else "bool")
    assert out.shape == shape and out.device.type == "cpu"
    # C-contiguous strides (PyTorch counts a zero-size dim as 1); is_contiguous() itself is
    # not asserted: ember reports False for some zero-element tensors
    assert out.stride() == tuple(int(np.prod([max(n, 1) for n in shape[i + 1:]]))
                                 for i in range(len(shape)))
    if out.numel():
        assert out.is_contiguous()
    want = values(t)  # bfloat16: the rounded values, widened exactly
    assert same_bits(values(out), want)
    if dtype != "bfloat16":
        assert same_bits(values(out), a)


def test_bfloat16_is_stored_as_raw_words():
    t = ember.tensor([1.0, -2.0, 0.5]).to(ember.bfloat16)
    buf = io.BytesIO()
    save(t, buf)
    raw = buf.getvalue()
    hlen = struct.unpack("<Q", raw[12:20])[0]
    header = json.loads(raw[24:24 + hlen])
    e = header["tensors"][0]
    assert e["dtype"] == "bfloat16" and e["nbytes"] == 6
    start = -(-(24 + hlen) // 64) * 64 + e["offset"]
    words = np.frombuffer(raw[start:start + 6], "<u2")
    assert words.tolist() == [0x3F80, 0xC000, 0x3F00]   # bfloat16 bit patterns
    # and PyTorch, given the same words, reads the same numbers
    tt = torch.from_numpy(words.astype(np.int16)).view(torch.bfloat16)
    assert tt.float().tolist() == [1.0, -2.0, 0.5]


@pytest.mark.parametrize("make_view", [
    lambda x: x.t(),
    lambda x: x[:, ::2],
    lambda x: x[1:, 1:3],
    lambda x: x[0].unsqueeze(0).expand(3, 6),
    lambda x: x.view(3, 2, 3).permute(2, 0, 1),
    lambda x: x[2],
])
def test_non_contiguous_tensors_are_saved_contiguous(make_view):
    x = ember.arange(18.).view(3, 6)
    v = make_view(x)
    out = roundtrip(v)
    assert out.is_contiguous() and out.shape == v.shape
    assert same_bits(out.numpy(), np.ascontiguousarray(v.numpy()))
    out.add_(1)  # an independent copy
    assert x[0, 0].item() == 0.0


def test_nested_state_like_objects():
    w = ember.randn(4, 3)
    state = collections.OrderedDict([("fc.weight", w), ("fc.bias", ember.zeros(4)),
                                     ("bn.num_batches_tracked", ember.tensor(7))])
    optim = {"state": {0: {"step": ember.tensor(3.), "exp_avg": ember.randn(4, 3),
                           "exp_avg_sq": ember.rand(4, 3)},
                       1: {"step": ember.tensor(3.), "momentum_buffer": None}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                               "weight_decay": 0, "amsgrad": False, "params": [0, 1],
                               "name": "décodeur ✓", "maximize": None}]}
    obj = {"model": state, "optim": optim, "epoch": 12, "big": 2 ** 80, "neg": -(2 ** 70),
           "floats": [float("nan"), float("inf"), float("-inf"), -0.0, 1e-310, 0.1],
           "blob": b"\x00\xffbytes", "empty": ([], {}, (), ""), "nested": [[[[{}]]]],
           "keys": {None: 1, True: 2, 3: 3, 2.5: 4, "s": 5, (1, "a"): 6, b"k": 7},
           "meta": (ember.float16, ember.device("cpu"), ember.Size([2, 3]))}
    out = roundtrip(obj)
    assert_same(out, obj)
    assert type(out["model"]) is collections.OrderedDict
    assert type(out["meta"][2]) is ember.Size
    assert str(out["floats"][3]) == "-0.0"


def test_top_level_values():
    for obj in (None, 3, "s", [ember.ones(1)], ember.tensor(2.5), (1, 2)):
        assert_same(roundtrip(obj), obj)


def test_one_tensor_object_loads_as_one_object():
    w = ember.randn(3)
    v = w[1:]  # a view of w: stored on its own
    out = roundtrip({"a": w, "b": [w, v], "c": (w,)})
    assert out["a"] is out["b"][0] is out["c"][0]
    assert out["b"][1] is not out["a"]
    assert out["b"][1].tolist() == w[1:].tolist()
    buf = io.BytesIO()
    save([w, w, w], buf)
    one = len(buf.getvalue())
    buf2 = io.BytesIO()
    save([w], buf2)
    assert one - len(buf2.getvalue()) < 64   # stored once


def test_requires_grad_is_kept():
    a = ember.randn(3, requires_grad=True)
    b = (a * 2)  # a non-leaf: its data is saved, it loads as a leaf
    out = roundtrip({"a": a, "b": b, "d": a.detach()})
    assert out["a"].requires_grad and out["a"].is_leaf and out["a"].grad is None
    assert out["b"].requires_grad and out["b"].grad_fn is None
    assert not out["d"].requires_grad
    (out["a"] * out["a"]).sum().backward()
    assert np.allclose(out["a"].grad.numpy(), 2 * a.detach().numpy())


def test_parameters_load_as_parameters():
    nnp = pytest.importorskip("ember.nn.parameter")
    p = nnp.Parameter(ember.randn(2, 2))
    frozen = nnp.Parameter(ember.randn(2), requires_grad=False)
    out = roundtrip({"p": p, "f": frozen})
    assert isinstance(out["p"], nnp.Parameter) and out["p"].requires_grad
    assert isinstance(out["f"], nnp.Parameter) and not out["f"].requires_grad
    assert out["p"].tolist() == p.tolist()


def test_paths_and_file_objects(tmp_path):
    obj = {"x": ember.arange(5), "y": [1, "two"]}
    for target in (str(tmp_path / "a.ember"), tmp_path / "b.ember"):
        save(obj, target)
        assert_same(load(target), obj)
        assert_same(load(str(target)), obj)
    with open(tmp_path / "c.ember", "wb") as fh:
        save(obj, fh)
    with open(tmp_path / "c.ember", "rb") as fh:
        assert_same(load(fh), obj)


def test_records_back_to_back_in_one_stream():
    buf = io.BytesIO()
    save({"first": ember.ones(3)}, buf)
    save([ember.zeros(2, dtype=ember.int16)], buf)
    buf.write(b"trailer")
    buf.seek(0)
    assert load(buf)["first"].tolist() == [1.0, 1.0, 1.0]
    assert load(buf)[0].tolist() == [0, 0]
    assert buf.read() == b"trailer"


def test_non_seekable_stream():
    class Pipe(io.RawIOBase):
        def __init__(self, data):
            self._src = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._src.readinto(b)

    buf = io.BytesIO()
    save({"x": ember.arange(4.)}, buf)
    assert load(Pipe(buf.getvalue()))["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_unsupported_objects_are_refused_before_writing(tmp_path):
    path = tmp_path / "ck.ember"
    save({"old": ember.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"can't save .*Foo at obj\['x'\]\[1\]"):
        save({"x": [1, Foo()]}, path)
    with pytest.raises(TypeError, match="ember.from_numpy"):
        save({"a": np.zeros(2)}, path)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="reference cycle"):
        save({"loop": loop}, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ck.ember"]


class Foo:
    pass


# ---- devices: map_location ------------------------------------------------------------------
@pytest.fixture
def stash():
    """A second device type, 'stash': the CPU kernels behind a non-host-accessible backend,
    registered for one test only."""
    from ember_cpu.plugin import CPUBackend

    class StashBackend(CPUBackend):
        name = "stash"
        version = "test"
        device_type = "stash"
        host_accessible = False

    ensure_loaded()
    assert "stash" not in BACKENDS
    register_backend(StashBackend())
    yield "stash"
    unregister_backend("stash")


def test_map_location_cpu_forms():
    t = ember.randn(3)
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, {"opencl:0": "cpu"},
               lambda tensor, loc: None):
        out = roundtrip(t, map_location=ml)
        assert out.device.type == "cpu" and out.tolist() == t.tolist()


def test_map_location_other_device(stash):
    t = ember.arange(6.).view(2, 3).to("stash")
    g = ember.ones(2, requires_grad=True)
    saved = {"t": t, "g": g}
    back = roundtrip(saved)  # None: back where each was saved
    assert back["t"].device == t.device and back["g"].device.type == "cpu"
    assert back["t"].cpu().tolist() == t.cpu().tolist()
    on_cpu = roundtrip(saved, map_location={str(t.device): "cpu"})
    assert on_cpu["t"].device.type == "cpu"
    assert roundtrip(saved, map_location={"stash": "cpu"})["t"].device.type == "cpu"
    moved = roundtrip(saved, map_location="stash")
    assert moved["g"].device.type == "stash" and moved["g"].requires_grad
    assert moved["g"].is_leaf
    seen = []
    out = roundtrip(saved, map_location=lambda tensor, loc: seen.append(loc) or tensor)
    assert sorted(seen) == ["cpu", str(t.device)] and out["t"].device.type == "cpu"


def test_map_location_unavailable_device_is_a_clear_error():
    raw = _rewrite(_saved({"w": ember.ones(2)}),
                   lambda h: h["tensors"][0].update(device="nosuchdev:1"))
    with pytest.raises(RuntimeError, match=r"saved on 'nosuchdev:1'.*map_location='cpu'"):
        load(io.BytesIO(raw))
    out = load(io.BytesIO(raw), map_location={"nosuchdev:1": "cpu"})
    assert out["w"].tolist() == [1.0, 1.0]
    assert load(io.BytesIO(raw), map_location="cpu")["w"].device.type == "cpu"


# ---- loading never runs code ----------------------------------------------------------------
class Evil:
    """Unpickling this creates the file at ``marker``: a stand-in for arbitrary code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_malicious_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"weights": Evil(str(marker))}, protocol=2)
    # the payload is real: unpickling it does create the marker
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(Evil(str(probe)))).close()
    assert probe.exists()

    path = tmp_path / "model.pt"
    path.write_bytes(payload)
    # a bare pickle is not a checkpoint (torch.load refuses it too): never unpickled
    for weights_only in (True, False):
        with pytest.raises(RuntimeError, match="not a checkpoint.*pickle"):
            load(path, weights_only=weights_only)
        with pytest.raises(RuntimeError, match="pickle"):
            load(io.BytesIO(payload), weights_only=weights_only)
    assert not marker.exists()


def test_a_torch_checkpoint_loads(tmp_path):
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert load(path)["w"].tolist() == [1.0, 1.0]


def test_a_failed_save_leaves_the_old_file(tmp_path):
    path = tmp_path / "ck.pt"
    ember.save({"old": ember.ones(2)}, path)
    before = path.read_bytes()
    # torch's C pickler raises AttributeError here, ember's pure-Python one PicklingError
    unpicklable = (AttributeError, pickle.PicklingError)
    with pytest.raises(unpicklable):
        torch.save({"f": lambda: 0}, io.BytesIO())
    with pytest.raises(unpicklable):
        ember.save({"f": lambda: 0}, path)
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["ck.pt"]
    buf = io.BytesIO()
    with pytest.raises(unpicklable):
        ember.save({"f": lambda: 0}, buf)
    assert buf.getvalue() == b""          # nothing written before the pickle was complete


@pytest.mark.parametrize("data,phrase", [
    (b"", "is empty"),
    (b"hello, world\n" * 4, "unknown format"),
    (bytes(RNG.integers(0, 256, 300, dtype=np.uint8)), "not a checkpoint"),
    (b"\x93NUMPY\x01\x00" + b"\x00" * 40, "npy"),
    (struct.pack("<Q", 2) + b"{", "safetensors header"),
    (b"\x89EMBER\n" + b"\x00" * 30, "text-mode"),
    (S.MAGIC[:5], "not a checkpoint"),
    (S.MAGIC + b"\x01\x00", "truncated"),
])
def test_foreign_and_garbage_files(data, phrase, tmp_path):
    path = tmp_path / "f"
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match=phrase):
        load(path)


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


def _trailer(header, data: bytes) -> bytes:
    """Version 2's per-tensor CRC-32s of ``data`` as ``header``'s entries place them (0 for
    an entry too malformed to place)."""
    entries = header.get("tensors") if isinstance(header, dict) else None
    crcs = []
    for e in entries if isinstance(entries, list) else []:
        try:
            crcs.append(zlib.crc32(data[e["offset"]:e["offset"] + e["nbytes"]]))
        except (TypeError, KeyError, IndexError, ValueError, OverflowError):
            crcs.append(0)
    return struct.pack(f"<{len(crcs)}I", *crcs)


def _record(header, data=b"", version=S.VERSION, hlen=None) -> bytes:
    """A record written byte by byte: version 2 with correct checksums (so that only the
    property under test is wrong), or version 1 (no checksums)."""
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(h) if hlen is None else hlen
    if version >= 2:
        pre = S.MAGIC + struct.pack("<IQI", version, n, zlib.crc32(h)) + h
        parsed = header if not isinstance(header, bytes) else None
        return pre + b"\0" * (-len(pre) % 64) + data + _trailer(parsed, data)
    pre = S.MAGIC + struct.pack("<IQ", version, n) + h
    return pre + b"\0" * (-len(pre) % 64) + data


def _rewrite(raw: bytes, edit) -> bytes:
    """``raw`` (version 2) with its header passed through ``edit`` (data section kept,
    checksums recomputed)."""
    hlen = struct.unpack("<Q", raw[12:20])[0]
    header = json.loads(raw[24:24 + hlen])
    start = -(-(24 + hlen) // 64) * 64
    data = raw[start:start + header["data_size"]]
    edit(header)
    return _record(header, data)


def _entry(**kw):
    e = {"dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8, "device": "cpu",
         "requires_grad": False}
    e.update(kw)
    return e


def _header(entries, root=None, data_size=None):
    if data_size is None:
        data_size = 64 if entries else 0
    return {"format": "ember.save", "tensors": entries, "data_size": data_size,
            "root": {"$": "tensor", "i": 0} if root is None else root}


CRAFTED = [
    ("offset past the data", _record(_header([_entry(offset=60)]), b"\0" * 64),
     "points outside the data section"),
    ("huge shape", _record(_header([_entry(shape=[2 ** 40, 2 ** 40],
                                           nbytes=4 * 2 ** 80)]), b"\0" * 64),
     "invalid nbytes"),
    ("nbytes disagrees", _record(_header([_entry(nbytes=4)]), b"\0" * 64), "needs 8"),
    ("negative dim", _record(_header([_entry(shape=[-2], nbytes=-8)]), b"\0" * 64),
     "invalid shape"),
    ("unknown dtype", _record(_header([_entry(dtype="complex256")]), b"\0" * 64),
     "unknown dtype"),
    ("object dtype", _record(_header([_entry(dtype=["float32"])]), b"\0" * 64),
     "unknown dtype"),
    ("bad device", _record(_header([_entry(device="CPU!")]), b"\0" * 64), "invalid device"),
    ("int requires grad", _record(_header([_entry(dtype="int32", requires_grad=True)]),
                                  b"\0" * 64), "requires grad"),
    ("missing field", _record(_header([{"dtype": "float32"}]), b"\0" * 64), "must be an object"),
    ("index out of range", _record(_header([], root={"$": "tensor", "i": 3}), b""),
     "tensor index 3"),
    ("bool index", _record(_header([_entry()], root={"$": "tensor", "i": True}), b"\0" * 64),
     "tensor index True"),
    ("unknown node", _record(_header([], root={"$": "pickle", "v": "cos\nsystem"}), b""),
     "unknown node kind 'pickle'"),
    ("bad node", _record(_header([], root=[1, 2]), b""), "unexpected node"),
    ("unhashable key", _record(_header([], root={"$": "dict", "v": [[{"$": "list", "v": []},
                                                                        1]]}), b""),
     "unhashable dict key"),
    ("bad dtype node", _record(_header([], root={"$": "dtype", "v": []}), b""),
     "bad value for a 'dtype' node"),
    ("bad base64", _record(_header([], root={"$": "bytes", "v": "!!"}), b""), "base64"),
    ("data truncated", _record(_header([_entry()], data_size=64), b"\0" * 10), "is truncated"),
    ("negative data_size", _record(_header([], data_size=-1), b""), "invalid data_size"),
    ("header past the end", _record(_header([]), hlen=10 ** 12), "is truncated"),
    ("not json", _record(b"{not json"), "not valid UTF-8 JSON"),
    ("not utf-8", _record(b"\xff\xfe{}"), "not valid UTF-8 JSON"),
    ("NaN constant", _record(b'{"format": NaN}'), "not valid UTF-8 JSON"),
    ("deep json", _record(b"[" * 200000 + b"]" * 200000), "nested too deeply"),
    ("deep tree", _record(b'{"format":"ember.save","tensors":[],"data_size":0,"root":'
                          + b'{"$":"list","v":[' * 900 + b"1" + b"]}" * 900 + b"}"),
     "nested too deeply"),
    ("wrong format tag", _record({"format": "other", "tensors": [], "data_size": 0,
                                  "root": None}), "format 'ember.save'"),
    ("future version", _record(_header([]), version=3), "format version 3"),
    ("version 1 future field", _record(_header([_entry(crc32=0)]), b"\0" * 64, version=1),
     "unknown fields"),
]


@pytest.mark.parametrize("name,raw,phrase", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_crafted_headers_are_rejected(name, raw, phrase):
    with pytest.raises(RuntimeError, match=phrase):
        load(io.BytesIO(raw))


def test_every_truncation_is_detected(tmp_path):
    raw = _saved({"a": ember.arange(10, dtype=ember.int16), "b": [ember.ones(3, 2), "x"]})
    path = tmp_path / "t"
    for cut in range(len(raw)):
        path.write_bytes(raw[:cut])
        with pytest.raises(RuntimeError):
            load(path)


def test_corrupted_files_raise_only_runtime_errors():
    raw = bytearray(_saved({"w": ember.randn(3, 2), "b": ember.arange(4), "n": [1, 2.5, None],
                            "bf": ember.ones(2, dtype=ember.bfloat16), "s": "text"}))
    rng = np.random.default_rng(1)
    hlen = struct.unpack("<Q", bytes(raw[12:20]))[0]
    outcomes = collections.Counter()
    for _ in range(1500):
        bad = bytearray(raw)
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(0, 20 + hlen + 8))  # mostly the preamble and header
            bad[pos] = int(rng.integers(0, 256))
        try:
            load(io.BytesIO(bytes(bad)))
            outcomes["loaded"] += 1
        except RuntimeError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.sampled_from(
        [0, 1, -1, 3, 8, 64, "cpu", "float32", "bfloat16", "tensor", "list", "dict", "nan"])
    | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["$", "v", "i", "dtype", "shape", "offset", "nbytes"]), inner,
        max_size=3),
    max_leaves=6)


def _slots(x, out):
    """Every (container, key) in a JSON tree."""
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        out.append((x, k))
        _slots(v, out)
    return out


_FUZZ_BASE = _saved({"w": ember.randn(3, 2), "b": ember.arange(4), "n": [1, 2.5, None],
                     "k": {3: (b"x", ember.float16)}, "bf": ember.ones(2, dtype=ember.bfloat16)})


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_structurally_mutated_headers_load_or_raise_runtime_error(data):
    def edit(header):
        slots = _slots(header, [])
        container, key = slots[data.draw(st.integers(0, len(slots) - 1))]
        if isinstance(container, dict) and data.draw(st.booleans()):
            del container[key]
        else:
            container[key] = data.draw(JSON_VALUES)

    raw = _rewrite(_FUZZ_BASE, edit)
    try:
        load(io.BytesIO(raw))
    except RuntimeError:
        pass


# ---- atomic writes --------------------------------------------------------------------------
def test_crash_mid_save_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.ember"
    save({"w": ember.ones(1000), "step": 1}, path)
    before = path.read_bytes()

    def crash(f, t, nbytes):
        f.write(b"\x01" * (nbytes // 2))
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(ember_format, "_write_tensor_data", crash)
    with pytest.raises(OSError, match="simulated"):
        save({"w": ember.zeros(1000), "step": 2}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ck.ember"]
    monkeypatch.undo()
    assert load(path)["step"] == 1
    # with no old file, a failed save leaves nothing behind
    monkeypatch.setattr(ember_format, "_write_tensor_data", crash)
    with pytest.raises(OSError):
        save({"w": ember.zeros(10)}, tmp_path / "new.ember")
    assert os.listdir(tmp_path) == ["ck.ember"]


def test_interrupt_mid_save_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ck.ember"

    def interrupt(f, t, nbytes):
        raise KeyboardInterrupt

    monkeypatch.setattr(ember_format, "_write_tensor_data", interrupt)
    with pytest.raises(KeyboardInterrupt):
        save([ember.ones(3)], path)
    assert os.listdir(tmp_path) == []


def test_overwrite_replaces_and_keeps_mode(tmp_path):
    path = tmp_path / "ck.ember"
    save({"v": 1}, path)
    os.chmod(path, 0o640)
    save({"v": 2, "w": ember.ones(2)}, path)
    assert load(path)["v"] == 2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(tmp_path) == ["ck.ember"]


def test_fresh_file_gets_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        save({"v": 1}, tmp_path / "a.ember")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.ember").st_mode) == 0o640


def test_save_through_a_symlink_replaces_the_target(tmp_path):
    real = tmp_path / "real.ember"
    save({"v": 1}, real)
    link = tmp_path / "link.ember"
    link.symlink_to(real)
    save({"v": 2}, link)
    assert link.is_symlink() and load(real)["v"] == 2


def test_fsync_is_called(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    save({"v": 1}, tmp_path / "a.ember")
    assert synced


def test_bad_arguments():
    with pytest.raises(TypeError, match="path or a binary file object"):
        save({}, 3)
    with pytest.raises(TypeError, match="path or a binary file object"):
        load(3.5)
    with pytest.raises(FileNotFoundError):
        load(pathlib.Path("/nonexistent/dir/x.ember"))
