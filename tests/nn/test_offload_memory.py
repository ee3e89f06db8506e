"""Device memory tools (issue 17): a per-process limit that makes out-of-memory
reproducible on opencl (PoCL), the allocator's event history with its snapshot format and
HTML view, and activation offloading (``ember.utils.offload``) — gradients and losses
bit-identical to training without it, less device memory held between forward and
backward, in-place changes still caught. Saved-tensor hooks keep version checks and give
unpacked fresh tensors their place in the graph."""
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.utils import memory_viz
from ember.utils import offload as OF

opencl = pytest.mark.skipif(not ember.opencl.is_available(), reason="no OpenCL device")


@pytest.fixture
def no_limit():
    yield
    if ember.opencl.is_available():
        ember.opencl.set_per_process_memory_fraction(1.0)
        ember.opencl.memory._record_memory_history(enabled=None)


# ---- the limit ---------------------------------------------------------------------------

@opencl
def test_memory_fraction_makes_out_of_memory_reproducible(no_limit):
    ember.opencl.empty_cache()
    total = ember.opencl.mem_get_info()[1]
    ember.opencl.set_per_process_memory_fraction(0.001)
    assert ember.opencl.get_per_process_memory_fraction() == 0.001
    free, limited = ember.opencl.mem_get_info()
    assert limited == int(total * 0.001) and free <= limited
    # more than the limit and than any free block the cache holds (earlier tests'
    # segments): a new segment is needed, and the limit refuses it
    cached = max([b["size"] for s in ember.opencl.memory_snapshot() for b in s["blocks"]
                  if b["state"] == "inactive"] + [0])
    n = max(limited, cached) + (1 << 20)
    with pytest.raises(ember.OutOfMemoryError, match=r"set_per_process_memory_fraction\("
                                                      r"0.001\).*ember.utils.offload"):
        ember.empty(n // 4, device="opencl")
    ember.opencl.set_per_process_memory_fraction(1.0)
    ember.empty(n // 4, device="opencl")      # fits again


@opencl
def test_memory_fraction_arguments_as_pytorch(no_limit):
    with pytest.raises(TypeError, match="must be `float`"):
        ember.opencl.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        ember.opencl.set_per_process_memory_fraction(1.5)


# ---- history, snapshot, picture ----------------------------------------------------------

def _train_step(device="opencl"):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 16 * 16, 4)).to(device)
    x = ember.randn(4, 3, 16, 16, device=device)
    loss = m(x).square().mean()
    loss.backward()
    return m


@opencl
def test_history_records_allocations_with_stacks_and_phases(no_limit, tmp_path):
    ember.opencl.memory._record_memory_history()
    _train_step()
    snap = ember.opencl.memory._snapshot()
    assert set(snap) == {"segments", "device_traces"}
    trace = snap["device_traces"][0]
    actions = {e["action"] for e in trace}
    assert {"alloc", "free_requested", "free_completed"} <= actions
    for e in trace:
        assert {"action", "addr", "size", "stream", "time_us", "phase", "frames"} <= set(e)
    phases = {e["phase"] for e in trace if e["action"] == "alloc"}
    assert phases == {"forward", "backward"}
    nodes = {e.get("node") for e in trace if e["phase"] == "backward"}
    assert "DenseConvBackward0" in nodes
    # the stack leads to this file's line, then to the ember function it called
    here = [e for e in trace if e["action"] == "alloc" and any(
        f["filename"] == __file__ and not f["ember"] for f in e["frames"])]
    assert here and here[0]["frames"][-1]["ember"]
    # a freed block's free follows its allocation
    first = next(e for e in trace if e["action"] == "alloc")
    assert any(e["action"] == "free_requested" and e["addr"] == first["addr"]
               for e in trace[trace.index(first):])
    path = tmp_path / "snap.json"
    ember.opencl.memory._dump_snapshot(str(path))
    loaded = json.loads(path.read_text())
    assert len(loaded["device_traces"][0]) == len(trace)
    ember.opencl.memory._record_memory_history(enabled=None)
    _train_step()
    assert ember.opencl.memory._snapshot()["device_traces"][0] == []


@opencl
def test_memory_viz_draws_every_allocation(no_limit, tmp_path):
    ember.opencl.memory._record_memory_history(max_entries=100000)
    _train_step()
    path = tmp_path / "s.json"
    ember.opencl.memory._dump_snapshot(str(path))
    out = tmp_path / "m.html"
    assert memory_viz.main(["trace_plot", str(path), "-o", str(out)]) == 0
    page = out.read_text()
    svg = ET.fromstring(re.search(r"<svg.*?</svg>", page, re.S).group(0))
    polys = [e for e in svg if e.tag.endswith("polygon")]
    allocs = memory_viz.allocations(json.loads(path.read_text()))
    assert len(polys) == len(allocs) > 0
    assert any("backward" in (p.find("{http://www.w3.org/2000/svg}title").text or "")
               for p in polys)
    assert "Largest allocations alive at the peak" in page


def test_memory_viz_stacks_bands_in_allocation_order():
    trace = [{"action": "alloc", "addr": 0, "size": 100, "phase": "forward"},
             {"action": "alloc", "addr": 512, "size": 50, "phase": "forward"},
             {"action": "free_requested", "addr": 0, "size": 100},
             {"action": "alloc", "addr": 1024, "size": 10, "phase": "backward"}]
    allocs = memory_viz.allocations({"segments": [], "device_traces": [trace]})
    assert [(a["start"], a["end"], a["size"]) for a in allocs] == \
        [(0, 2, 100), (1, None, 50), (3, None, 10)]
    page = memory_viz.trace_plot({"segments": [], "device_traces": [trace]})
    assert "peak 150 B at event 1" in page


# ---- saved-tensor hooks ------------------------------------------------------------------

def test_hooks_keep_version_checks_and_graph_places():
    x = ember.randn(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(),
                                                  lambda t: t):
        y = x * 2
        z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    # an unpacked fresh copy stands for the saved tensor: gradients reach x
    x = ember.randn(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(),
                                                  lambda t: t.clone()):
        (x.sin() * x).sum().backward()
    want = x.detach().sin() + x.detach() * x.detach().cos()
    np.testing.assert_allclose(x.grad.numpy(), want.numpy(), rtol=1e-6)


def test_relu_saves_its_output_as_pytorch():
    for lib in (ember, torch):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = lib.relu(x * 1)
        y.mul_(2)
        with pytest.raises(RuntimeError, match="inplace operation"):
            y.sum().backward()


# ---- offloading --------------------------------------------------------------------------

def vgg(depth=3, width=16):
    layers, c = [], 3
    for w in (width, width * 2):
        for _ in range(depth):
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU()]
            c = w
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c * 4 * 4, 5))


def _train(policy, steps=3, prefetch=True, device="opencl"):
    ember.manual_seed(0)
    m = vgg().to(device)
    opt = ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((8, 3, 16, 16)).astype(np.float32)).to(device)
    y = ember.tensor(rng.integers(0, 5, 8)).to(device)
    losses, held = [], []
    for _ in range(steps):
        opt.zero_grad()
        if policy is None:
            loss = nn.functional.cross_entropy(m(x), y)
        else:
            with OF.offload(m, policy=policy, prefetch=prefetch, min_bytes=0):
                loss = nn.functional.cross_entropy(m(x), y)
        ember.opencl.synchronize()
        held.append(ember.opencl.memory_allocated())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().numpy() for p in m.parameters()], held


@opencl
@pytest.mark.parametrize("policy,prefetch", [("conv", True), ("all", True),
                                             (("conv", "linear"), False), ("auto", True)])
def test_offloaded_training_is_bit_identical(policy, prefetch):
    base_losses, base_params, base_held = _train(None)
    before = dict(OF.STATS)
    losses, params, held = _train(policy, prefetch=prefetch)
    assert losses == base_losses
    for a, b in zip(params, base_params):
        np.testing.assert_array_equal(a, b)
    if policy != "auto":        # (auto: this small model never nears the limit)
        assert OF.STATS["offloaded"] > before["offloaded"]
        assert OF.STATS["bytes_in"] - before["bytes_in"] == \
            OF.STATS["bytes_out"] - before["bytes_out"]
        # between forward and backward, the offloaded activations are not on the device
        assert held[-1] < base_held[-1]


@opencl
def test_auto_policy_plans_from_a_profiling_step(no_limit):
    """auto: the first step profiles (moves every layer's activations, times each layer);
    without a limit the plan then moves nothing; under a limit between what the step keeps
    and its projected peak it moves some layers, not all, and training is unchanged."""
    base_losses, base_params, _ = _train(None, steps=4)
    ember.manual_seed(0)
    m = vgg().to("opencl")
    opt = ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((8, 3, 16, 16)).astype(np.float32)).to("opencl")
    y = ember.tensor(rng.integers(0, 5, 8)).to("opencl")
    losses, moved = [], []
    for step in range(4):
        if step == 2:       # a limit the plan made without one does not know of: re-plan
            made = OF.plan(m)
            moved_all = sum(n for _, n, _ in made.layers)
            total = ember.opencl.mem_get_info()[1]
            ember.opencl.set_per_process_memory_fraction(
                (made.projected - moved_all / 3) / 0.9 / total)
            OF.forget(m)
        before = OF.STATS["bytes_out"]
        opt.zero_grad()
        with OF.offload(m, policy="auto", min_bytes=0):
            loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        moved.append(OF.STATS["bytes_out"] - before)
        if step == 0:
            made = OF.plan(m)
            kinds = [type(mod).__name__ for mod, _, _ in made.layers]
            assert kinds == ["Conv2d"] * 6 + ["Linear"]
            assert all(n > 0 and t > 0 for _, n, t in made.layers[1:])
            assert made.chosen == [] and made.projected < made.limit
    assert losses == base_losses
    for a, b in zip([p.detach().cpu().numpy() for p in m.parameters()], base_params):
        np.testing.assert_array_equal(a, b)
    assert moved[0] == moved[2] > 0 and moved[1] == 0    # profiling steps; nothing
    made = OF.plan(m)
    assert 0 < len(made.chosen) < len(made.layers) and made.projected > made.limit
    assert 0 < moved[3] < moved[2]


@opencl
def test_offload_keeps_in_place_errors():
    m = vgg().to("opencl")
    x = ember.randn(2, 3, 16, 16, device="opencl")
    with OF.offload(m, policy="all", min_bytes=0):
        h = m[1](m[0](x))
        out = m[2](h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@opencl
def test_offload_frees_memory_by_reference_counting():
    """Once a step's model, activations and copies go out of scope, the device memory is
    freed at once, without the garbage collector (as PyTorch frees it)."""
    import gc

    def step():
        m = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(128 * 8 * 8, 10)).to("opencl")
        x = ember.randn(2, 3, 32, 32, device="opencl")
        with OF.offload(m, policy="conv"):
            loss = m(x).sum()
        loss.backward()

    step()      # (what the kernels cache on the device on their first call stays)
    gc.collect()
    start = ember.opencl.memory_allocated()
    gc.disable()
    try:
        step()
        assert ember.opencl.memory_allocated() == start
    finally:
        gc.enable()


def test_offload_arguments_and_devices():
    m = vgg()
    with pytest.raises(ValueError, match="policy must be one of"):
        OF.offload(m, policy="everything")
    with pytest.raises(ValueError, match="unknown layer kind"):
        OF.offload(m, policy=("conv", "pool"))
    with pytest.raises(TypeError, match="must be an ember.nn.Module"):
        OF.offload(lambda x: x)
    with pytest.raises(RuntimeError, match="host memory already"):
        with OF.offload(m):
            pass


# ---- checkpointing -----------------------------------------------------------------------

class _Stack(nn.Module):
    def __init__(self, ckpt):
        super().__init__()
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(
            32, 4, 128, dropout=0.0, batch_first=True) for _ in range(12)])
        self.ckpt = ckpt

    def forward(self, x):
        for layer in self.layers:
            x = ember.utils.checkpoint.checkpoint(layer, x, use_reentrant=False) \
                if self.ckpt else layer(x)
        return x


@opencl
@pytest.mark.parametrize("compiled", [False, True])
def test_checkpoint_cuts_peak_memory_of_a_transformer_stack(compiled):
    x = ember.randn(8, 32, 32, device="opencl")
    peaks, grads, after = {}, {}, {}
    for ckpt in (False, True):
        ember.manual_seed(0)
        m = _Stack(ckpt).to("opencl")
        f = ember.compile(m) if compiled and ckpt else m
        ember.opencl.synchronize()
        ember.opencl.empty_cache()
        ember.opencl.reset_peak_memory_stats()
        base = ember.opencl.memory_allocated()
        f(x).square().mean().backward()
        ember.opencl.synchronize()
        peaks[ckpt] = ember.opencl.max_memory_allocated() - base
        after[ckpt] = ember.opencl.memory_allocated() - base
        grads[ckpt] = [p.grad.cpu().numpy() for p in m.parameters()]
        del m, f
    assert peaks[True] <= 0.4 * peaks[False], peaks       # at least 60 % less
    for a, b in zip(grads[True], grads[False]):
        np.testing.assert_array_equal(a, b)
    # nothing the recomputation made outlives the backward pass (the gradients stay)
    assert after[True] <= after[False] + (1 << 20)
