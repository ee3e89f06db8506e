"""EMBER_FALLBACK=cpu: a backend lacking primitives runs them on the CPU, with a report;
without it, the missing op is a clear error naming the op, the device, the plugin and the
switch."""
import warnings

import numpy as np
import pytest

import ember
from ember.dispatcher import BACKENDS, register_backend, unregister_backend
from ember_cpu.plugin import CPUBackend

MISSING = ("exp", "sort", "scatter", "copy", "sum")


class HoleyCPU(CPUBackend):
    """The CPU backend as a separate device with some primitives removed."""
    name = "holey"
    version = "test"
    device_type = "holey"
    host_accessible = False

    def __init__(self):
        super().__init__()
        self.kernels = {n: k for n, k in self.kernels.items() if n not in MISSING}


@pytest.fixture
def holey(monkeypatch):
    monkeypatch.setenv("EMBER_FALLBACK", "cpu")
    ember.backends.reset_fallback_report()
    with pytest.warns(RuntimeWarning, match="missing required primitives"):
        register_backend(HoleyCPU())
    yield "holey"
    unregister_backend("holey")
    ember.backends.reset_fallback_report()


def test_missing_primitives_are_rejected_without_the_switch(monkeypatch):
    monkeypatch.delenv("EMBER_FALLBACK", raising=False)
    with pytest.raises(ValueError, match=r"missing required primitives: copy, exp.*"
                                         r"EMBER_FALLBACK=cpu"):
        register_backend(HoleyCPU())
    assert "holey" not in BACKENDS


def test_ops_fall_back_and_match_numpy(holey):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    x = ember.tensor(a).to(holey)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = ember.exp(x.t())                      # non-contiguous input
        s = ember.sort(x, dim=1)
        total = x.sum()
        z = ember.zeros(4, 5).to(holey)
        z[:, ::2] = x[:, ::2]                     # copy into a strided view
    assert y.device.type == "holey"
    np.testing.assert_allclose(y.cpu().numpy(), np.exp(a.T), rtol=1e-6)
    np.testing.assert_array_equal(s.values.cpu().numpy(), np.sort(a, axis=1))
    np.testing.assert_allclose(total.item(), a.sum(), rtol=1e-5)
    ref = np.zeros((4, 5), np.float32)
    ref[:, ::2] = a[:, ::2]
    np.testing.assert_array_equal(z.cpu().numpy(), ref)
    msgs = [str(m.message) for m in w if issubclass(m.category, RuntimeWarning)]
    assert any("exp()" in m and "EMBER_FALLBACK=cpu" in m for m in msgs)
    assert sum("exp()" in m for m in msgs) == 1          # one warning per op
    report = ember.backends.fallback_report()
    assert {"exp", "sort", "sum", "copy"} <= set(report)
    assert report["exp"]["calls"] >= 1 and report["exp"]["bytes"] >= 2 * 4 * 20
    assert report["exp"]["seconds"] > 0 and report["exp"]["devices"] == ["holey:0"]


def test_training_step_with_fallback_matches_cpu(holey):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(6, 4), ember.nn.Tanh(), ember.nn.Linear(4, 3))
    ref = ember.nn.Sequential(ember.nn.Linear(6, 4), ember.nn.Tanh(), ember.nn.Linear(4, 3))
    ref.load_state_dict(model.state_dict())
    model.to(holey)
    x = ember.randn(8, 6)
    y = ember.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    losses = []
    for m, dev in ((model, holey), (ref, "cpu")):
        opt = ember.optim.SGD(m.parameters(), lr=0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for _ in range(3):
                opt.zero_grad()
                loss = ember.nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
                loss.backward()
                opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)


def test_missing_kernel_at_run_time_is_a_clear_error(holey, monkeypatch):
    x = ember.ones(3).to(holey)
    monkeypatch.delenv("EMBER_FALLBACK")
    with pytest.raises(NotImplementedError, match=r"exp\(\): the 'holey' backend \(device "
                                                  r"holey:0\) has no kernel.*EMBER_FALLBACK=cpu"):
        ember.exp(x)
