"""Devices, asynchrony (no host waits inside ops), the caching allocator, plugin contract."""
import numpy as np
import pytest

import ember
import ember_opencl
from ocl_helpers import DEV, N, T
from ember_opencl import _runtime as rt


def test_devices_and_names():
    n = ember_opencl.device_count()
    assert n >= 1 and ember_opencl.is_available()
    for i in range(n):
        assert ember_opencl.get_device_name(i) == rt.device(i).name
    from ember.dispatcher import backend_for
    b = backend_for("opencl")
    assert b.device_count() == n and rt.device(0).name in b.device_name(0)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        rt.device(n)


def test_no_platform_means_zero_devices_and_a_clear_error(monkeypatch):
    monkeypatch.setattr(rt, "_devices", None)
    monkeypatch.setattr(rt.cl, "get_platforms",
                        lambda: (_ for _ in ()).throw(rt.cl.LogicError("no platforms")))
    assert rt.device_count() == 0
    with pytest.raises(RuntimeError, match="no OpenCL device is available"):
        rt.device(0)


def test_float64_needs_the_extension():
    d = rt.device(0)

    class NoFp64:
        index, name, dtypes = 0, d.name, frozenset({"float32"})
        check_dtype = rt.Device.check_dtype
    with pytest.raises(TypeError, match="float64 is not supported on opencl:0.*cl_khr_fp64"):
        NoFp64().check_dtype(ember.float64, "add")


def test_ops_enqueue_without_waiting(device):
    a = ember.randn(512, 512, device=DEV)
    N(a)
    waits = device.host_waits
    b = a @ a
    for _ in range(5):
        b = ember.softmax(b @ a, 1) + a.sum(0) * 0.5
        b = ember.where(b > 0, b, -b).amax(1, keepdim=True) + b
    ev = rt.cl.enqueue_marker(device.queue)
    assert device.host_waits == waits, "an op waited for the device"
    # the work is still running when the ops have returned
    assert ev.command_execution_status != rt.cl.command_execution_status.COMPLETE
    N(b)
    assert device.host_waits == waits + 1


def test_synchronize_and_item(device):
    t = ember.ones(1000, device=DEV) * 2
    ember_opencl.synchronize()
    ember_opencl.synchronize(DEV)
    assert t.sum().item() == 2000


def test_allocator_steady_state_and_stats(device):
    x = ember.randn(256, 256, device=DEV)
    w = ember.randn(256, 256, device=DEV)
    for _ in range(3):                                   # warm-up
        y = ember.nn.functional.relu(x @ w).sum(0)
    N(y)
    stats = ember_opencl.memory_stats()
    before = stats["num_device_alloc"]
    for _ in range(20):
        y = ember.nn.functional.relu(x @ w).sum(0)
    N(y)
    assert ember_opencl.memory_stats()["num_device_alloc"] == before
    assert ember_opencl.memory_allocated() > 0
    assert ember_opencl.memory_reserved() >= ember_opencl.memory_allocated()
    assert ember_opencl.max_memory_allocated() >= ember_opencl.memory_allocated()
    ember_opencl.reset_peak_memory_stats()
    assert ember_opencl.max_memory_allocated() == ember_opencl.memory_allocated()
    assert "opencl:0" in ember_opencl.memory_summary()
    del x, w, y
    ember_opencl.empty_cache()
    assert ember_opencl.memory_reserved() <= before * (20 << 20)


def test_out_of_memory_is_a_clear_error():
    from ember.dispatcher.allocator import OutOfMemoryError
    total = rt.device(0).cl_device.global_mem_size
    with pytest.raises(OutOfMemoryError):
        ember.empty(total // 4 + 1, dtype=ember.float64, device=DEV)


def test_every_primitive_is_native_and_coverage():
    from ember.dispatcher import PRIMITIVES, coverage
    cov = coverage("opencl")
    assert all(cov[p] == "native" for p in PRIMITIVES)
    for op in ("softmax", "log_softmax", "mean", "cumsum", "clamp", "addcdiv", "lerp", "argmin",
               "min", "sigmoid", "tanh"):
        assert cov[op] == "native", op


def test_launch_blocking_wrapper_raises_at_the_op(monkeypatch):
    from ember_opencl.plugin import _blocking
    from ember.dispatcher.schema import OPS
    gather = _blocking(OPS["gather"].kernels["opencl"])
    x = T(np.zeros((2, 2), np.float32))
    out = ember.empty(1, 1, device=DEV)
    with pytest.raises(IndexError, match="out of bounds"):
        gather(out, x, 1, T([[5]]))


class _FakeCL:
    def __init__(self, version, lanes=16, cpu=True):
        import pyopencl as cl
        self.version = version
        self.native_vector_width_float = lanes
        self.type = cl.device_type.CPU if cpu else cl.device_type.GPU


@pytest.mark.parametrize("version,cpu,lanes", [
    # PoCL's LLVM compiling for a model without AVX-512 on an AVX-512 host: 8 lanes
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3", True, 8),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-haswell", True, 8),
    ("OpenCL 3.0 PoCL", True, 8),
    # models with AVX-512 keep the reported 16
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-skylake-avx512", True, 16),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver4", True, 16),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-icelake-server", True, 16),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-sapphirerapids", True, 16),
    # other drivers, and GPUs, are taken at their word
    ("OpenCL 3.0 (Build 0)", True, 16),
    ("OpenCL 3.0 CUDA", False, 16),
])
def test_float_lanes_follow_the_compiler_target(version, cpu, lanes):
    from ember_opencl._runtime import _float_lanes
    assert _float_lanes(_FakeCL(version, 16, cpu)) == lanes
    assert _float_lanes(_FakeCL(version, 8, cpu)) == 8
