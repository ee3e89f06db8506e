"""Top-level switches and helpers (finfo/iinfo, print options, determinism, random state,
...), ember.jit, ember.hub, ember.profiler, ember.utils.tensorboard and
ember.testing.make_tensor, against PyTorch."""
import os
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.hub
import ember.jit
import ember.profiler
from ember.testing import assert_allclose, make_tensor

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                 "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)


def test_finfo_default_and_errors():
    assert ember.finfo().dtype == torch.finfo().dtype == "float32"
    for mod in (ember, torch):
        with pytest.raises(TypeError, match="requires a floating point input type"):
            mod.finfo(mod.int32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)


def test_iinfo_errors():
    for mod in (ember, torch):
        with pytest.raises(TypeError, match="requires an integer input type"):
            mod.iinfo(mod.float32)
        with pytest.raises(TypeError, match="bool is not supported by"):
            mod.iinfo(mod.bool)


@pytest.mark.parametrize("obj", [lambda T: T.ones(1), lambda T: T.ones(1, dtype=T.int64),
                                 lambda T: 3, lambda T: "s", lambda T: T.nn.Linear,
                                 lambda T: T.nn.Linear(1, 1)])
def test_typename(obj):
    e, t = ember.typename(obj(ember)), torch.typename(obj(torch))
    assert e == t.replace("torch.", "ember.")


def test_deterministic_switches_match_torch():
    try:
        for mod in (ember, torch):
            assert mod.are_deterministic_algorithms_enabled() is False
            mod.use_deterministic_algorithms(True, warn_only=True)
            assert mod.are_deterministic_algorithms_enabled()
            assert mod.is_deterministic_algorithms_warn_only_enabled()
            assert mod.get_deterministic_debug_mode() == 1
            mod.set_deterministic_debug_mode("error")
            assert mod.get_deterministic_debug_mode() == 2
            mod.set_deterministic_debug_mode(0)
            assert not mod.are_deterministic_algorithms_enabled()
            with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
                mod.set_deterministic_debug_mode("loud")
            with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
                mod.set_deterministic_debug_mode(3)
            with pytest.raises(TypeError):
                mod.use_deterministic_algorithms("yes")
    finally:
        ember.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)


def test_matmul_precision_and_threads():
    for mod in (ember, torch):
        assert mod.get_float32_matmul_precision() == "highest"
        mod.set_float32_matmul_precision("high")
        assert mod.get_float32_matmul_precision() == "high"
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            mod.set_float32_matmul_precision("fastest")
        assert mod.get_float32_matmul_precision() == "high" and w
        mod.set_float32_matmul_precision("highest")
        assert mod.get_num_interop_threads() >= 1
        assert mod.init_num_threads() is None
        assert mod.is_warn_always_enabled() is False
        mod.set_warn_always(True)
        assert mod.is_warn_always_enabled() is True
        mod.set_warn_always(False)
    assert isinstance(ember.set_flush_denormal(False), bool)


def test_rng_state_round_trip():
    s = ember.get_rng_state()
    assert s.dtype is ember.uint8 and s.dim() == 1
    a = ember.rand(5)
    ember.set_rng_state(s)
    assert ember.rand(5).tolist() == a.tolist()
    for mod in (ember, torch):
        with pytest.raises(TypeError, match="RNG state must be a"):
            mod.set_rng_state(mod.zeros(3))


PRINT_CASES = [
    (dict(precision=2), [1.23456, -2.5]),
    (dict(precision=6), [1.23456789]),
    (dict(sci_mode=True), [1.5, 20.0]),
    (dict(sci_mode=False), [1e-6, 1e6]),
    (dict(threshold=5, edgeitems=2), list(range(10))),
    (dict(profile="short"), [3.14159, 2.71828]),
]


@pytest.mark.parametrize("opts,values", PRINT_CASES)
def test_set_printoptions_changes_repr_as_torch(opts, values):
    try:
        ember.set_printoptions(**opts)
        torch.set_printoptions(**opts)
        e = repr(ember.tensor(values, dtype=ember.float32))
        t = repr(torch.tensor(values, dtype=torch.float32))
    finally:
        ember.set_printoptions(profile="default", sci_mode=None)
        torch.set_printoptions(profile="default", sci_mode=None)
    assert e == t


def test_default_device():
    assert ember.get_default_device() == ember.device("cpu")
    assert str(ember.get_default_device()) == str(torch.get_default_device())
    ember.set_default_device("cpu")
    ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")


# ---- jit ---------------------------------------------------------------------------------
def test_jit_script_and_trace_return_the_eager_code():
    def f(x):
        return x * 2
    assert ember.jit.script(f) is f
    lin = ember.nn.Linear(2, 2)
    assert ember.jit.script(lin) is lin
    seen = []

    def g(x):
        seen.append(ember.jit.is_tracing())
        return x + 1
    assert ember.jit.trace(g, (ember.ones(2),)) is g and seen == [True]
    assert ember.jit.is_tracing() is False and ember.jit.is_scripting() is False
    assert ember.jit.trace_module(lin, {"forward": ember.ones(1, 2)}) is lin
    assert ember.jit.ignore(f) is f and ember.jit.unused(f) is f and ember.jit.export(f) is f
    assert ember.jit.ignore(drop=True)(f) is f
    assert ember.jit.Final is torch.jit.Final
    assert ember.jit.annotate(int, 3) == torch.jit.annotate(int, 3) == 3
    assert ember.jit.wait(ember.jit.fork(lambda a: a + 1, 1)) == 2
    fut = ember.jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        fut.wait()
    for fn in (ember.jit.save, ember.jit.load):
        with pytest.raises(NotImplementedError, match="ember"):
            fn(lin, "x.pt") if fn is ember.jit.save else fn("x.pt")


# ---- hub -----------------------------------------------------------------------------------
HUBCONF = '''
dependencies = ["numpy"]
import ember


def tiny(out_features=2):
    """A one-layer model."""
    return ember.nn.Linear(3, out_features)


def _private():
    pass
'''


def test_hub_local_list_help_load(tmp_path):
    (tmp_path / "hubconf.py").write_text(HUBCONF)
    assert ember.hub.list(str(tmp_path), source="local") == ["tiny"]
    assert ember.hub.help(str(tmp_path), "tiny", source="local") == "A one-layer model."
    m = ember.hub.load(str(tmp_path), "tiny", source="local", out_features=4)
    assert isinstance(m, ember.nn.Linear) and m.out_features == 4
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        ember.hub.load(str(tmp_path), "nope", source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        ember.hub.load(str(tmp_path), "tiny", source="ftp")


def test_hub_exports_tqdm_as_torch_hub():
    """``from torch.hub import tqdm`` (pytorch/examples vision_transformer): the same
    progress bar class as PyTorch's hub gives, the stand-in where tqdm is missing."""
    from ember.hub import tqdm
    assert tqdm is torch.hub.tqdm
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ember.hub.nope  # noqa: B018
    fake = ember.hub._Faketqdm(total=4)
    with fake:
        fake.update(1)
    assert fake.n == 1


def test_hub_dir_and_download_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    assert ember.hub.get_dir() == str(tmp_path / "home" / "hub")
    ember.hub.set_dir(tmp_path / "hub")
    assert ember.hub.get_dir() == str(tmp_path / "hub")
    with pytest.raises(ember.hub.DownloadRequiredError, match="does not download"):
        ember.hub.load("owner/repo", "tiny")
    with pytest.raises(ember.hub.DownloadRequiredError, match="resnet18-f37072fd.pth"):
        ember.hub.load_state_dict_from_url("https://example.com/resnet18-f37072fd.pth")
    with pytest.raises(ember.hub.DownloadRequiredError):
        ember.hub.download_url_to_file("https://example.com/w.pth", str(tmp_path / "w.pth"))
    # a cached repository and cached weights are used
    repo = tmp_path / "hub" / "owner_repo_main"
    repo.mkdir(parents=True)
    (repo / "hubconf.py").write_text(HUBCONF)
    assert isinstance(ember.hub.load("owner/repo", "tiny", trust_repo=True), ember.nn.Linear)
    ckpt = tmp_path / "hub" / "checkpoints"
    ckpt.mkdir()
    ember.save({"w": ember.ones(2)}, str(ckpt / "w.pth"))
    sd = ember.hub.load_state_dict_from_url("https://example.com/w.pth")
    assert sd["w"].tolist() == [1.0, 1.0]
    # file:// URLs are read from disk
    src = tmp_path / "local-abc.pth"
    ember.save({"v": ember.zeros(1)}, str(src))
    assert ember.hub.load_state_dict_from_url(src.as_uri())["v"].tolist() == [0.0]


# ---- profiler ------------------------------------------------------------------------------
def test_profiler_table_lists_ops_counts_and_times():
    from ember.profiler import ProfilerActivity, profile, record_function
    x = ember.randn(16, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("my_block"):
            for _ in range(3):
                y = (x @ x).relu()
            y.sum()
    avgs = {e.key: e for e in prof.key_averages()}
    assert avgs["my_block"].count == 1
    assert avgs["ember::mm"].count == 3 and avgs["ember::sum"].count == 1
    block = avgs["my_block"]
    assert block.cpu_time_total >= sum(e.cpu_time_total for k, e in avgs.items()
                                       if k != "my_block")
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls", "ember::mm", "my_block", "Self CPU time total:"):
        assert col in table
    assert table.splitlines()[3].split()[0] == "my_block"     # sorted: the range first
    shapes = prof.key_averages(group_by_input_shape=True)
    assert any(e.input_shapes == [[16, 16], [16, 16]] for e in shapes)


def test_profiler_restores_kernels_and_helpers(tmp_path):
    from ember.dispatcher.schema import OPS
    ember.ones(1) + 1      # plugins loaded
    before = {(o.name, d): k for o in OPS.values() for d, k in o.kernels.items()}
    with ember.profiler.profile() as prof:
        ember.ones(3).exp()
    after = {(o.name, d): k for o in OPS.values() for d, k in o.kernels.items()}
    assert all(after[key] is k for key, k in before.items())
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    assert '"traceEvents"' in path.read_text()
    assert ember.profiler.kineto_available() is False
    assert ember.profiler.ProfilerActivity.CPU in ember.profiler.supported_activities()
    assert list(ember.profiler.ProfilerActivity.__members__) == list(
        torch.profiler.ProfilerActivity.__members__)
    assert {k: v.value for k, v in ember.profiler.DeviceType.__members__.items()} == {
        k: int(v) for k, v in torch.profiler.DeviceType.__members__.items()}
    ours = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    theirs = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [ours(i).name for i in range(12)] == [theirs(i).name for i in range(12)]


def test_autograd_profiler_legacy_entry_points():
    for mod in (ember, torch):
        with mod.autograd.profiler.profile(record_shapes=True) as prof:
            with mod.autograd.profiler.record_function("blk"):
                mod.ones(4).exp()
        keys = [e.key for e in prof.key_averages()]
        assert "blk" in keys and any(k.endswith("exp") for k in keys)
    off = ember.autograd.profiler.profile(enabled=False)
    with off:
        ember.ones(2).exp()
    assert len(off.events()) == 0


def test_profiler_schedule_and_trace_handler(tmp_path):
    from ember.profiler import profile, schedule, tensorboard_trace_handler
    x = ember.randn(4, 4)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path), "w")) as p:
        for _ in range(6):
            (x @ x).sum()
            p.step()
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")
    counts = {e.key: e.count for e in p.key_averages()}
    assert counts["ember::mm"] == 2          # the two active steps only


# ---- tensorboard -------------------------------------------------------------------------
def test_summary_writer_events_read_back(tmp_path):
    pytest.importorskip("tensorboard")     # an optional dependency: ember-tensor[tensorboard]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from ember.utils.tensorboard import SummaryWriter
    with SummaryWriter(str(tmp_path / "e")) as w:
        for i in range(3):
            w.add_scalar("loss", ember.tensor(1.0 / (i + 1)), i)
        w.add_scalars("pair", {"a": 1.0, "b": 2.0}, 0)
        w.add_histogram("h", ember.arange(100.0), 0)
        w.add_image("img", ember.rand(3, 8, 6), 0)
        w.add_text("note", "hello", 0)
        w.flush()
    tw = TorchWriter(str(tmp_path / "t"))
    tw.add_histogram("h", torch.arange(100.0), 0)
    tw.close()
    ea = EventAccumulator(str(tmp_path / "e"))
    ea.Reload()
    assert [round(s.value, 6) for s in ea.Scalars("loss")] == [1.0, 0.5, 0.333333]
    assert (ea.Images("img")[0].width, ea.Images("img")[0].height) == (6, 8)
    assert "note/text_summary" in ea.Tags()["tensors"]
    ta = EventAccumulator(str(tmp_path / "t"))
    ta.Reload()
    assert ea.Histograms("h")[0].histogram_value == ta.Histograms("h")[0].histogram_value
    pa = EventAccumulator(str(tmp_path / "e" / "pair_a"))
    pa.Reload()
    assert pa.Scalars("pair")[0].value == 1.0


# ---- ember.testing additions ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_make_tensor_ranges_as_torch(dtype):
    e = make_tensor(200, dtype=getattr(ember, dtype), device="cpu")
    t = torch.testing.make_tensor(200, dtype=getattr(torch, dtype), device="cpu")
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
    if dtype != "bool":
        lo = float(t.min()) if dtype == "uint8" else -9
        hi = 10 if dtype in INTS else 9
        ev = e.float().numpy()
        # (a low-precision float may round up onto `high`, as PyTorch's uniform_ does)
        assert ev.min() >= lo and (ev.max() < hi if dtype in INTS + ["float32", "float64"]
                                   else ev.max() <= hi)
    ez = make_tensor(50, dtype=getattr(ember, dtype), device="cpu", exclude_zero=True)
    assert (ez.float().numpy() != 0).all()


def test_make_tensor_options():
    e = make_tensor((3, 4), dtype=ember.float32, device="cpu", low=2, high=3,
                    noncontiguous=True, requires_grad=True)
    assert tuple(e.shape) == (3, 4) and not e.is_contiguous() and e.requires_grad
    assert ((e.detach().numpy() >= 2) & (e.detach().numpy() < 3)).all()
    for mk, T in ((make_tensor, ember), (torch.testing.make_tensor, torch)):
        with pytest.raises(ValueError, match="low"):
            mk(2, dtype=T.float32, device="cpu", low=3, high=1)
        with pytest.raises(TypeError):
            mk(2, device="cpu")


def test_assert_allclose_deprecated_alias():
    with pytest.warns(FutureWarning):
        assert_allclose(ember.tensor([1.0, 2.0]), [1.0, 2.0 + 1e-6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError):
            assert_allclose(ember.tensor([1.0]), [1.1])
        with pytest.raises(AssertionError):
            torch.testing.assert_allclose(torch.tensor([1.0]), [1.1])
        assert_allclose(ember.tensor([float("nan")]), [float("nan")])


def test_default_device_reaches_creation_functions():
    """As torch.set_default_device: factories without device= build there; *_like and
    explicit devices do not change."""
    try:
        ember.set_default_device("opencl")
        for t in (ember.zeros(2), ember.ones(2), ember.empty(2), ember.full((2,), 1.0),
                  ember.arange(3), ember.linspace(0, 1, 3), ember.eye(2), ember.rand(2),
                  ember.randn(2), ember.randint(3, (2,)), ember.randperm(3),
                  ember.tensor([1.0]), ember.as_tensor([1.0])):
            assert t.device.type == "opencl"
        assert ember.zeros(2, device="cpu").device.type == "cpu"
        assert ember.zeros_like(ember.zeros(2, device="cpu")).device.type == "cpu"
    finally:
        ember.set_default_device(None)
    assert ember.zeros(2).device.type == "cpu"


def test_xpu_and_mps_namespaces_say_unavailable_as_torch():
    for name in ("xpu", "mps"):
        assert getattr(ember, name).is_available() == getattr(torch, name).is_available()
        assert getattr(ember, name).device_count() == getattr(torch, name).device_count()


def test_dense_tensor_mm_method_takes_a_sparse_argument():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    s = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 4, 0]], np.float32)
    want = torch.tensor(a).mm(torch.tensor(s).to_sparse())
    for got in (ember.tensor(a).mm(ember.tensor(s).to_sparse()),
                ember.tensor(a).matmul(ember.tensor(s).to_sparse())):
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_private_assert_and_ambiguous_bool_messages_as_torch():
    ember._assert(ember.tensor(True), "not raised")
    for lib in (ember, torch):
        with pytest.raises(AssertionError, match="bad size"):
            lib._assert(lib.tensor(False), "bad size")
    for data in ([1, 2], []):
        with pytest.raises(RuntimeError) as want:
            bool(torch.tensor(data))
        with pytest.raises(RuntimeError) as got:
            bool(ember.tensor(data))
        assert str(got.value) == str(want.value)
