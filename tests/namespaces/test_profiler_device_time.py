"""ember.profiler's device time (issue 18): a backend with a ``device_timer`` (opencl: the
queue's kernel timestamps) fills the device columns; checked against the wall-clock time of
the same synchronised work and against the sums the table shows."""
import time
from importlib.metadata import entry_points

import pytest

import ember
from ember.profiler import profile, record_function

pytestmark = pytest.mark.skipif(
    not any(ep.name == "opencl" for ep in entry_points(group="ember.backends")),
    reason="ember-opencl is not installed (make installs it)")


def test_device_time_of_matrix_products_is_within_the_wall_time():
    a = ember.randn(384, 384, device="opencl")
    b = ember.randn(384, 384, device="opencl")
    (a @ b).sum().item()                    # (kernels built before timing)
    with profile() as prof:
        ember.opencl.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(5):
            a @ b
        ember.opencl.synchronize()
        wall_us = (time.perf_counter_ns() - t0) / 1000
    rows = {e.key: e for e in prof.key_averages()}
    mm = [e for k, e in rows.items() if k in ("ember::mm", "ember::bmm", "ember::matmul")]
    assert mm, list(rows)
    device_us = sum(e.self_device_time_total for e in mm)
    # the kernels ran one after another inside the measured interval, and were most of it
    assert 0.3 * wall_us < device_us <= wall_us, (device_us, wall_us)
    assert sum(e.count for e in mm) == 5
    assert all(e.device_time == pytest.approx(e.device_time_total / e.count) for e in mm)


def test_ranges_add_up_the_device_time_of_the_ops_inside():
    import ember.nn as nn
    m = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to("opencl")
    x = ember.randn(32, 64, device="opencl")
    m(x).sum().backward()
    with profile() as prof:
        with record_function("step"):
            m(x).sum().backward()
    events = prof.events()
    step = next(e for e in events if e.name == "step")
    ops = [e for e in events if e.name != "step"]
    assert step.self_device_time_total == 0
    assert step.device_time_total == pytest.approx(sum(e.self_device_time_total for e in ops))
    assert step.device_time_total > 0
    table = prof.key_averages().table(sort_by="self_device_time_total")
    assert "Self Device" in table and "Self Device time total:" in table


def test_the_cpu_has_no_device_columns():
    x = ember.randn(64, 64)
    with profile() as prof:
        (x @ x).sum()
    assert all(e.device_time_total == 0 for e in prof.key_averages())
    assert "Self Device" not in prof.key_averages().table()
