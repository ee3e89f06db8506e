"""The example backend: discovered through its entry point, the primitives and one native
kernel for a composite (layer_norm), trains like the CPU, manages memory through ember's
caching allocator, and passes the conformance kit.

Run from this folder after ``pip install -e .``::

    python -m pytest tests
"""
import gc
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.dispatcher import OPS, PRIMITIVES, backend_for, coverage, plugin_records

import ember_example


def test_discovered_through_the_entry_point():
    rec = {r.name: r for r in plugin_records()}["example"]
    assert rec.status == "loaded", rec.error
    assert rec.distribution == "ember-example"
    assert rec.device_type == "example" and len(rec.devices) == 2


def test_implements_the_primitives_and_one_composite():
    backend = backend_for("example")
    assert set(backend.kernels) == set(PRIMITIVES) | {"layer_norm"}
    cov = coverage("example")
    assert {n for n, k in cov.items() if k == "native"} == set(PRIMITIVES) | {"layer_norm"}
    assert [n for n, k in cov.items() if k == "missing"] == []   # the rest: composites


def test_layer_norm_runs_the_native_kernel_and_matches_the_composite(monkeypatch):
    backend_for("example")
    native = OPS["layer_norm"].kernels["example"]
    calls = []

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return native(*args, **kwargs)
    monkeypatch.setitem(OPS["layer_norm"].kernels, "example", counted)
    rng = np.random.default_rng(2)
    x, w, b = (ember.tensor(rng.standard_normal(s), dtype=ember.float32).to("example")
               for s in ((4, 3, 8), (3, 8), (3, 8)))
    got = F.layer_norm(x, (3, 8), w, b)
    assert calls == [(4, 3, 8)] and str(got.device) == "example:0"
    composite = OPS["layer_norm"].composite(x, w, b, normalized_shape=(3, 8), eps=1e-5)
    np.testing.assert_allclose(got.cpu().numpy(), composite.cpu().numpy(), rtol=1e-5,
                               atol=1e-5)
    # under autograd, layer_norm records one node (its gradient formula), whose forward is
    # the native kernel again
    x.requires_grad_()
    F.layer_norm(x, (3, 8), w, b).sum().backward()
    assert len(calls) == 2 and x.grad is not None


def test_tensors_live_on_the_device():
    x = ember.arange(6.0).view(2, 3).to("example:1")
    y = (x.softmax(dim=1) * 2).sum(dim=1)       # softmax runs as a composite here
    assert str(y.device) == "example:1"
    assert y.cpu().tolist() == pytest.approx([2.0, 2.0])
    assert not backend_for("example").host_accessible
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        x.numpy()


def _train(device, steps=5):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(20, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    model.to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((64, 20)), dtype=ember.float32).to(device)
    y = ember.tensor(rng.integers(0, 3, 64)).to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_mlp_trains_to_the_same_loss_as_on_cpu():
    cpu, example = _train("cpu"), _train("example")
    assert example == pytest.approx(cpu, rel=1e-5)
    assert example[-1] < example[0]


def test_memory_goes_through_the_caching_allocator():
    gc.collect()
    stats = ember_example.memory_stats()
    before = stats["allocated_bytes.all.current"]
    t = ember.empty(1000, device="example")       # 4000 bytes, rounded to 4096
    assert ember_example.memory_allocated() - before == 4096
    assert ember_example.memory_reserved() >= 2 << 20    # one 2 MiB small-pool segment
    del t
    gc.collect()
    assert ember_example.memory_allocated() == before
    for _ in range(3):
        _train("example", steps=2)
    allocs = ember_example.memory_stats()["num_device_alloc"]
    _train("example", steps=4)
    assert ember_example.memory_stats()["num_device_alloc"] == allocs   # all from the cache


def test_out_of_memory_names_the_numbers():
    with pytest.raises(ember.OutOfMemoryError, match=r"Tried to allocate 5\.00 GiB"):
        ember.empty(5 << 30, dtype=ember.uint8, device="example")
    assert ember_example.memory_stats()["num_ooms"] >= 1


def test_conformance_kit():
    r = subprocess.run([sys.executable, "-m", "ember.testing", "example", "-q",
                        "-p", "no:cacheprovider"], capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert "cases generated for device 'example'" in r.stdout


def test_compile_runs_fused_groups_through_the_plugin_compiler():
    from ember_example import compiler

    def f(a, b):
        return (a * b + a).exp().sqrt() - b

    a = ember.rand(100).to("example")
    b = ember.rand(100).to("example")
    before = compiler.STATS["groups"]
    got = ember.compile(f)(a, b)
    assert compiler.STATS["groups"] == before + 1
    np.testing.assert_array_equal(got.cpu().numpy(), f(a, b).cpu().numpy())
    np.testing.assert_allclose(got.cpu().numpy(), f(a.cpu(), b.cpu()).numpy(), rtol=1e-6)
