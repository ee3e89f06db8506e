"""ember.save / ember.load against PyTorch: each framework reads the other's checkpoints.

Oracle: PyTorch 2.13 (torch.save / torch.load / torch's own load_state_dict messages) and the
files torch writes; values compared bit for bit through NumPy.
"""
import collections
import io
import pickle
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import safetensors.torch
import torch

import ember
import ember.serialization as S

RNG = np.random.default_rng(1)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def torch_sample(dtype: str, shape) -> torch.Tensor:
    n = int(np.prod(shape))
    if dtype == "bool":
        return torch.from_numpy(RNG.integers(0, 2, n).astype(bool).reshape(shape))
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        a = torch.from_numpy((RNG.standard_normal(n) * 100).reshape(shape))
        a = a.to(getattr(torch, dtype))
        flat = a.view(-1)
        special = [float("nan"), float("inf"), float("-inf"), -0.0]
        for i in range(min(n, 4)):
            flat[i] = special[i]
        return a
    info = np.iinfo(dtype)
    return torch.from_numpy(RNG.integers(info.min, info.max, n, endpoint=True,
                                         dtype=dtype).reshape(shape))


def bits_torch(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    a = t.contiguous().numpy().reshape(-1)
    return a.astype(np.uint8) if a.dtype == bool else a.view(np.uint8)


def bits_ember(t) -> np.ndarray:
    t = t.detach()
    if t.dtype is ember.bfloat16:
        f = t.float().contiguous().numpy().reshape(-1)
        return (f.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    a = np.ascontiguousarray(t.numpy()).reshape(-1)
    return a.astype(np.uint8) if a.dtype == bool else a.view(np.uint8)


def assert_matches(e, t):
    """An ember tensor equal to a torch tensor in dtype, shape, strides, offset, bits, flags."""
    assert isinstance(e, ember.Tensor)
    assert e.dtype.name == str(t.dtype).removeprefix("torch.")
    assert tuple(e.shape) == tuple(t.shape)
    assert tuple(e.stride()) == tuple(t.stride())
    assert e.storage_offset() == t.storage_offset()
    assert e.requires_grad == t.requires_grad
    assert isinstance(e, ember.nn.Parameter) == isinstance(t, torch.nn.Parameter)
    assert np.array_equal(bits_ember(e), bits_torch(t))


def torch_roundtrip_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def ember_bytes(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


# ---- torch.save -> ember.load -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 0, 3)])
def test_torch_tensors_load_exactly(dtype, shape):
    t = torch_sample(dtype, shape)
    e = ember.load(io.BytesIO(torch_roundtrip_bytes(t)))
    assert_matches(e, t)


def test_torch_views_keep_their_storage_sharing():
    base = torch.arange(24.).view(4, 6)
    views = {"base": base, "t": base.t(), "row": base[1], "col": base[:, 2],
             "step": base[::2, 1::3], "expanded": base[0:1].expand(3, 6),
             "empty": base[2:2],
             "other": torch.ones(3)}
    out = ember.load(io.BytesIO(torch_roundtrip_bytes(views)))
    for k, t in views.items():
        assert_matches(out[k], t)
    storages = {k: v.untyped_storage() for k, v in out.items()}
    for k in ("t", "row", "col", "step", "expanded", "empty"):
        assert storages[k] is storages["base"]
    assert storages["other"] is not storages["base"]
    out["row"].fill_(-1.0)          # one storage: a write through one view shows in all
    assert out["base"][1].tolist() == [-1.0] * 6 and out["t"][2, 1].item() == -1.0


def test_parameters_requires_grad_and_plain_objects():
    obj = collections.OrderedDict(
        p=torch.nn.Parameter(torch.randn(2, 3)),
        frozen=torch.nn.Parameter(torch.randn(2), requires_grad=False),
        leaf=torch.randn(3).requires_grad_(),
        size=torch.Size([2, 5]), dtype=torch.bfloat16, device=torch.device("cpu"),
        nested=[1, 2.5, "s", b"bytes", None, True, (1, {"k": {3, 4}}), complex(1, 2),
                bytearray(b"ba"), float("inf")],
        counter=collections.Counter("abca"))
    out = ember.load(io.BytesIO(torch_roundtrip_bytes(obj)))
    assert type(out) is collections.OrderedDict and list(out) == list(obj)
    for k in ("p", "frozen", "leaf"):
        assert_matches(out[k], obj[k])
    assert type(out["size"]) is ember.Size and out["size"] == (2, 5)
    assert out["dtype"] is ember.bfloat16 and out["device"] == ember.device("cpu")
    assert out["nested"] == obj["nested"] and out["counter"] == obj["counter"]
    assert type(out["counter"]) is collections.Counter


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class EmberNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ember.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = ember.nn.BatchNorm2d(4)
        self.fc = ember.nn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        return self.fc(ember.relu(self.bn(self.conv(x))).flatten(1))


def _trained_torch_net():
    torch.manual_seed(0)
    net = TorchNet()
    net(torch.randn(8, 3, 5, 5))     # moves BatchNorm's running stats and its counter
    return net.eval()


def test_a_torch_checkpoint_loads_into_an_ember_model(tmp_path):
    net = _trained_torch_net()
    path = tmp_path / "resnet.pt"
    torch.save(net.state_dict(), path)
    model = EmberNet()
    result = model.load_state_dict(ember.load(path))
    assert result.missing_keys == [] and result.unexpected_keys == []
    model.eval()
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 5)).astype(np.float32)
    want = net(torch.from_numpy(x)).detach().numpy()
    got = model(ember.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert model.bn.num_batches_tracked.item() == net.bn.num_batches_tracked.item() == 1
    # the state dict's per-module metadata came along, as in torch
    assert getattr(ember.load(path), "_metadata", None) == net.state_dict()._metadata


def test_reading_a_torch_checkpoint_never_imports_torch(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.arange(6.).view(2, 3), "p": torch.nn.Parameter(torch.ones(2)),
                "dt": torch.int8, "size": torch.Size([1])}, path)
    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None          # any import of torch now raises ImportError
        import ember
        out = ember.load({str(path)!r})
        assert out["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert isinstance(out["p"], ember.nn.Parameter) and out["dt"] is ember.int8
        buf = __import__("io").BytesIO()
        ember.save(out, buf)                 # writing torch's format needs no torch either
        assert ember.load(__import__("io").BytesIO(buf.getvalue()))["size"] == (1,)
        assert sys.modules["torch"] is None
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


# ---- ember.save -> torch.load -----------------------------------------------------------------
def ember_of(t: torch.Tensor):
    if t.dtype == torch.bfloat16:
        return ember.from_numpy(t.float().numpy()).to(ember.bfloat16)
    return ember.from_numpy(t.numpy().copy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)])
def test_ember_tensors_load_in_torch_exactly(dtype, shape):
    t = torch_sample(dtype, shape)
    back = torch.load(io.BytesIO(ember_bytes(ember_of(t))), weights_only=True)
    assert back.dtype == t.dtype and back.shape == t.shape
    assert np.array_equal(bits_torch(back), bits_torch(t))


def test_ember_views_and_parameters_load_in_torch_as_saved():
    base = ember.arange(24.).view(4, 6)
    obj = {"base": base, "t": base.t(), "row": base[1], "step": base[::2, 1::3],
           "p": ember.nn.Parameter(ember.ones(2, 2)),
           "frozen": ember.nn.Parameter(ember.zeros(3), requires_grad=False),
           "leaf": ember.ones(2).requires_grad_(), "i": ember.tensor([1, 2], dtype=ember.int16),
           "size": ember.Size([3, 1]), "dtype": ember.float16, "device": ember.device("cpu")}
    back = torch.load(io.BytesIO(ember_bytes(obj)), weights_only=True)
    for k in ("base", "t", "row", "step", "p", "frozen", "leaf", "i"):
        assert_matches(obj[k], back[k])
    ptr = back["base"].untyped_storage().data_ptr()
    assert all(back[k].untyped_storage().data_ptr() == ptr for k in ("t", "row", "step"))
    assert back["p"].untyped_storage().data_ptr() != ptr
    assert back["size"] == torch.Size([3, 1]) and type(back["size"]) is torch.Size
    assert back["dtype"] is torch.float16 and back["device"] == torch.device("cpu")


def test_the_archive_has_torchs_layout(tmp_path):
    path = tmp_path / "model.pt"
    ember.save({"w": ember.ones(3), "v": ember.zeros(2, dtype=ember.int64)}, path)
    ours = zipfile.ZipFile(path)
    torch.save({"w": torch.ones(3), "v": torch.zeros(2, dtype=torch.int64)},
               tmp_path / "ref.pt")
    ref = zipfile.ZipFile(tmp_path / "ref.pt")
    def records(z):
        return sorted(n.split("/", 1)[1] for n in z.namelist() if "serialization_id" not in n)

    assert records(ours) == records(ref)
    assert {n.split("/")[0] for n in ours.namelist()} == {"model"}
    for info in ours.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        if "/data/" in info.filename:
            # records aligned to 64 bytes, as torch writes them (and mmap wants)
            with open(path, "rb") as fh:
                fh.seek(info.header_offset + 26)
                n, e = np.frombuffer(fh.read(4), "<u2")
            assert (info.header_offset + 30 + n + e) % 64 == 0
    for name in ("byteorder", "version", ".format_version", ".storage_alignment"):
        assert ours.read(f"model/{name}") == ref.read(f"ref/{name}")


def test_torch_loads_ember_module_state_dicts_into_torch_models(tmp_path):
    model = EmberNet()
    path = tmp_path / "m.pt"
    ember.save(model.state_dict(), path)
    net = TorchNet()
    net.load_state_dict(torch.load(path))          # weights_only=True, torch's default
    for k, v in model.state_dict().items():
        assert np.array_equal(bits_ember(v), bits_torch(net.state_dict()[k])), k


# ---- any object, and the restricted unpickler ------------------------------------------------
class Config:
    def __init__(self, lr):
        self.lr = lr

    def __eq__(self, other):
        return type(other) is Config and other.lr == self.lr


def test_any_object_round_trips_with_weights_only_false(tmp_path):
    model = EmberNet()
    obj = {"model": model, "array": np.arange(6).reshape(2, 3), "config": Config(0.1),
           "fn": np.sqrt}
    path = tmp_path / "all.pt"
    ember.save(obj, path)
    back = ember.load(path, weights_only=False)
    assert type(back["model"]) is EmberNet
    x = ember.randn(1, 3, 5, 5)
    model.eval()
    back["model"].eval()
    assert np.array_equal(back["model"](x).detach().numpy(), model(x).detach().numpy())
    assert np.array_equal(back["array"], obj["array"]) and back["config"] == Config(0.1)
    assert back["fn"] is np.sqrt
    # torch reads the same file back (ember's classes are importable)
    t = torch.load(path, weights_only=False)
    assert np.array_equal(t["array"], obj["array"])


def test_a_pickled_torch_module_loads_as_the_ember_module_with_weights_only_false():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    model = ember.load(io.BytesIO(torch_roundtrip_bytes(net)), weights_only=False)
    assert type(model) is ember.nn.Sequential and type(model[0]) is ember.nn.Linear
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(model(ember.from_numpy(x)).detach().numpy(),
                               net(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.container.Sequential"):
        ember.load(io.BytesIO(torch_roundtrip_bytes(net)))


def test_weights_only_refuses_unknown_globals_as_torch_does(tmp_path):
    obj = {"config": Config(0.5)}
    ours, theirs = tmp_path / "e.pt", tmp_path / "t.pt"
    ember.save(obj, ours)
    torch.save(obj, theirs)
    name = f"{Config.__module__}.Config"
    for path in (ours, theirs):
        with pytest.raises(pickle.UnpicklingError) as ember_err:
            ember.load(path)
        with pytest.raises(pickle.UnpicklingError) as torch_err:
            torch.load(path)
        for err in (ember_err, torch_err):
            assert f"Unsupported global: GLOBAL {name} was not an allowed global" in \
                str(err.value)
            assert "add_safe_globals" in str(err.value) and "weights_only" in str(err.value)
        assert "ember.serialization.add_safe_globals([" in str(ember_err.value)


def test_safe_globals_allowlist():
    data = ember_bytes({"config": Config(0.25), "w": ember.ones(1)})
    S.clear_safe_globals()
    try:
        with pytest.raises(pickle.UnpicklingError):
            ember.load(io.BytesIO(data))
        with S.safe_globals([Config]):
            assert S.get_safe_globals() == [Config]
            assert ember.load(io.BytesIO(data))["config"] == Config(0.25)
        assert S.get_safe_globals() == []
        S.add_safe_globals([Config])
        assert ember.load(io.BytesIO(data))["config"] == Config(0.25)
        S.clear_safe_globals()
        S.add_safe_globals([(Config, f"{Config.__module__}.Config")])
        assert ember.load(io.BytesIO(data))["config"] == Config(0.25)
    finally:
        S.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        ember.load(io.BytesIO(data))


def test_numpy_arrays_need_weights_only_false_as_in_torch():
    data = torch_roundtrip_bytes({"a": np.arange(4.0)})
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        ember.load(io.BytesIO(data))
    out = ember.load(io.BytesIO(data), weights_only=False)
    assert np.array_equal(out["a"], np.arange(4.0))


def test_pickle_module_and_legacy_arguments():
    data = ember_bytes([ember.ones(1)])
    with pytest.raises(RuntimeError, match="pickle_module") as want:
        torch.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    with pytest.raises(RuntimeError, match=str(want.value)):
        ember.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    # an explicit pickle module without weights_only means weights_only=False, as in torch
    assert ember.load(io.BytesIO(data), pickle_module=pickle)[0].tolist() == [1.0]
    assert torch.load(io.BytesIO(data), pickle_module=pickle)[0].tolist() == [1.0]
    with pytest.raises(NotImplementedError, match="legacy"):
        ember.save([1], io.BytesIO(), _use_new_zipfile_serialization=False)
    for proto in (2, 3, 4, 5):
        buf = io.BytesIO()
        ember.save({"w": ember.arange(3.)}, buf, pickle_protocol=proto)
        # (torch's own weights-only unpickler reads protocol 2 only; so does torch.save's)
        assert torch.load(io.BytesIO(buf.getvalue()), weights_only=proto == 2)["w"].tolist() \
            == [0.0, 1.0, 2.0]
        assert ember.load(io.BytesIO(buf.getvalue()))["w"].tolist() == [0.0, 1.0, 2.0]


# ---- map_location and mmap -----------------------------------------------------------------------
@pytest.mark.parametrize("ml", ["cpu", torch.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"},
                                lambda storage, loc: storage, lambda storage, loc: None, None])
def test_map_location_forms_as_torch(ml):
    x = torch.arange(4.)
    data = torch_roundtrip_bytes({"a": x, "b": x[1:]})
    ember_ml = ember.device("cpu") if isinstance(ml, torch.device) else ml
    out = ember.load(io.BytesIO(data), map_location=ember_ml)
    ref = torch.load(io.BytesIO(data), map_location=ml)
    for k in ref:
        assert_matches(out[k], ref[k])
    assert out["a"].untyped_storage() is out["b"].untyped_storage()


def test_map_location_sends_cuda_tensors_to_the_cpu():
    # a checkpoint saved on a GPU: the same file with the storage's location rewritten
    data = ember_bytes({"w": ember.arange(3.)})
    raw = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(raw, "w") as zout:
        for info in zin.infolist():
            body = zin.read(info)
            if info.filename.endswith("data.pkl"):
                body = body.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            zout.writestr(info.filename, body)
    data = raw.getvalue()
    ref = torch.load(io.BytesIO(data), map_location="cpu")
    out = ember.load(io.BytesIO(data), map_location="cpu")
    assert_matches(out["w"], ref["w"])
    seen = []
    ember.load(io.BytesIO(data), map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cuda:0"]
    assert ember.load(io.BytesIO(data), map_location={"cuda:0": "cpu"})["w"].tolist() == \
        [0.0, 1.0, 2.0]


def test_mmap(tmp_path):
    path = tmp_path / "big.pt"
    t = torch.arange(1000, dtype=torch.float64).view(10, 100)
    torch.save({"t": t, "v": t[2:, ::3]}, path)
    out = ember.load(path, mmap=True)
    assert_matches(out["t"], t)
    assert_matches(out["v"], t[2:, ::3])
    out["t"][0, 0] = 5.0                 # copy-on-write: the file keeps its bytes
    assert torch.load(path)["t"][0, 0].item() == 0.0
    with pytest.raises(ValueError, match="f must be a file path"):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)


# ---- safetensors ---------------------------------------------------------------------------------
def test_safetensors_both_ways(tmp_path):
    tensors = {d: torch_sample(d, (2, 3)) for d in DTYPES}
    theirs = tmp_path / "t.safetensors"
    safetensors.torch.save_file(tensors, str(theirs), metadata={"format": "pt"})
    for out in (S.load_safetensors(theirs), ember.load(theirs)):
        assert sorted(out) == sorted(tensors)
        for k, t in tensors.items():
            assert_matches(out[k], t)
    ours = tmp_path / "e.safetensors"
    S.save_safetensors({k: ember_of(t) for k, t in tensors.items()}, ours,
                       metadata={"source": "ember"})
    back = safetensors.torch.load_file(str(ours))
    for k, t in tensors.items():
        assert back[k].dtype == t.dtype and np.array_equal(bits_torch(back[k]), bits_torch(t))
    with safetensors.safe_open(str(ours), "pt") as fh:
        assert fh.metadata() == {"source": "ember"}
    view = ember.arange(12.).view(3, 4).t()
    S.save_safetensors({"v": view}, ours)
    assert S.load_safetensors(ours)["v"].tolist() == view.tolist()


# ---- load_state_dict with DLPack values --------------------------------------------------------
def test_load_state_dict_takes_torch_tensors_and_numpy_arrays():
    net = _trained_torch_net()
    model = EmberNet()
    model.load_state_dict(net.state_dict())
    for k, v in net.state_dict().items():
        assert np.array_equal(bits_ember(model.state_dict()[k]), bits_torch(v)), k
    params = dict(net.named_parameters())           # Parameters that require grad
    assert all(p.requires_grad for p in params.values())
    model.load_state_dict(params, strict=False)
    assert np.array_equal(bits_ember(model.fc.weight), bits_torch(net.fc.weight))
    arrays = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    model2 = EmberNet()
    model2.load_state_dict(arrays)
    assert np.array_equal(model2.conv.weight.detach().numpy(), arrays["conv.weight"])
    lin = ember.nn.Linear(2, 2, dtype=ember.bfloat16)
    src = torch.nn.Linear(2, 2).to(torch.bfloat16)
    lin.load_state_dict(src.state_dict())
    assert np.array_equal(bits_ember(lin.weight), bits_torch(src.weight))


def test_load_state_dict_assign_keeps_requires_grad_like_torch():
    arrays = {"weight": np.ones((2, 3), np.float32), "bias": np.zeros(2, np.float32)}
    lin = ember.nn.Linear(3, 2)
    ref = torch.nn.Linear(3, 2)
    lin.load_state_dict(arrays, assign=True)
    ref.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()}, assign=True)
    assert isinstance(lin.weight, ember.nn.Parameter) and lin.weight.requires_grad
    assert lin.weight.requires_grad == ref.weight.requires_grad
    assert lin.weight.tolist() == ref.weight.tolist()


@pytest.mark.parametrize("state", [
    {"weight": np.ones((3, 3), np.float32), "x": np.ones(1, np.float32)},
    {"weight": np.ones((3, 2), np.float32)},
    {"weight": np.ones((3, 2), np.float32), "bias": np.ones(3, np.float32), "extra.a": 1.0},
    {"weight": "not a tensor", "bias": np.ones(3, np.float32)},
])
def test_load_state_dict_errors_read_as_torchs(state):
    with pytest.raises(Exception) as want:
        torch.nn.Linear(2, 3).load_state_dict(
            {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
             for k, v in state.items()})
    with pytest.raises(type(want.value)) as got:
        ember.nn.Linear(2, 3).load_state_dict(state)
    def norm(s):
        return (s.replace("torch.Size", "Size").replace("ember.Size", "Size")
                .replace("torch.Tensor", "Tensor").replace("ember.Tensor", "Tensor"))
    assert norm(str(got.value)) == norm(str(want.value))
    result = ember.nn.Linear(2, 3).load_state_dict(
        {k: v for k, v in state.items() if k not in ("weight", "bias")}, strict=False) \
        if "weight" in state and not isinstance(state["weight"], str) else None
    if result is not None:
        assert result.missing_keys == ["weight", "bias"]


def test_get_unsafe_globals_in_checkpoint_as_torch():
    obj = {"a": np.arange(3), "c": Config(1.0), "w": torch.ones(1), "sd": TorchNet().state_dict()}
    data = torch_roundtrip_bytes(obj)
    want = torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    got = S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    assert sorted(got) == sorted(want) and f"{Config.__module__}.Config" in got
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(ember_bytes(EmberNet().state_dict()))) \
        == []
    with S.safe_globals([Config]):
        assert f"{Config.__module__}.Config" not in \
            S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    buf = io.BytesIO()
    ember.save({"c": Config(2.0), "a": np.ones(2)}, buf, pickle_protocol=4)   # STACK_GLOBAL
    assert sorted(S.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue()))) == sorted(
        torch.serialization.get_unsafe_globals_in_checkpoint(
            io.BytesIO(torch_roundtrip_bytes({"c": Config(2.0), "a": np.ones(2)}))))
