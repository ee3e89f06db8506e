"""The plugin on a machine without a usable GPU (this CI machine): it loads, reports no
device, never crashes, and using ``cuda`` raises a RuntimeError that says why.

On a GPU machine these tests are skipped (scripts/gpu_check.sh covers that case).
"""
import subprocess
import sys
import textwrap

import pytest

import ember
import ember_cuda
from ember.dispatcher.plugins import backend_for, plugin_records
from ember.dispatcher.schema import PRIMITIVES

pytestmark = pytest.mark.skipif(ember_cuda.is_available(), reason="a CUDA device is present")


def test_plugin_loads_and_reports_no_device():
    rec = next(r for r in plugin_records() if r.name == "cuda")
    assert rec.status == "loaded", rec.error
    assert rec.device_type == "cuda" and rec.devices == []
    backend = backend_for("cuda")
    assert backend.device_count() == 0
    assert backend.status() != "available"


def test_is_available_and_device_count_never_raise():
    assert ember_cuda.is_available() is False
    assert ember_cuda.device_count() == 0
    ember_cuda.empty_cache()            # a no-op without a GPU
    assert ember_cuda.host_sync_count() == 0


def test_every_primitive_has_a_kernel():
    kernels = backend_for("cuda").kernels
    assert set(PRIMITIVES) <= set(kernels)


@pytest.mark.skipif(not ember_cuda.is_built(), reason="the CUDA extension was not built")
def test_extension_was_built_and_says_why_there_is_no_device():
    from ember_cuda import _C
    assert _C.device_count() == 0
    assert _C.device_init_error()       # e.g. "cudaErrorInsufficientDriver: ..."
    assert {"add", "bmm", "sum", "softmax", "im2col", "max_pool", "sort"} <= set(_C.KERNELS)


@pytest.mark.parametrize("make", [
    lambda: ember.empty(3, device="cuda"),
    lambda: ember.zeros(2, 2, device="cuda:0"),
    lambda: ember.ones(4).to("cuda"),
    lambda: ember.ones(4).cuda(),
])
def test_using_cuda_raises_a_clear_error(make):
    with pytest.raises(RuntimeError, match=r"cuda(:0)?"):
        make()


def test_allocator_error_names_the_reason():
    with pytest.raises(RuntimeError,
                       match="cuda:0 is not available: (no usable CUDA device|not built)"):
        backend_for("cuda").allocate(16, 0)


def test_streams_and_memory_api_raise_clearly():
    for call in (ember_cuda.Stream, ember_cuda.current_stream, ember_cuda.memory_stats,
                 ember_cuda.synchronize, lambda: ember_cuda.pinned_buffer(64),
                 lambda: ember_cuda.set_per_process_memory_fraction(0.5)):
        with pytest.raises(RuntimeError, match="is not available"):
            call()
    e = ember_cuda.Event(enable_timing=True)      # created lazily: fine without a GPU
    assert e.query() is True
    with pytest.raises(RuntimeError, match="recorded"):
        e.elapsed_time(ember_cuda.Event(enable_timing=True))


def test_offload_finds_the_copies_it_needs():
    """ember.utils.offload's device check passes for cuda (it has the transfer-stream
    copies); without a GPU the model cannot be moved there, which says why."""
    from ember.utils.offload import offload
    api = backend_for("cuda").device_api
    assert all(callable(getattr(api, f)) for f in ("offload_copy_out", "offload_copy_in",
                                                     "offload_ready"))
    with pytest.raises(TypeError, match="must be `float`"):
        ember_cuda.set_per_process_memory_fraction(1)
    with pytest.raises(RuntimeError, match="cuda:0: invalid device ordinal"):
        offload(ember.nn.Linear(2, 2).to("cuda"))


def test_cpu_keeps_working_next_to_the_cuda_plugin():
    assert ember.ones(3).sum().item() == 3.0


def test_plugin_without_the_extension_loads_and_reports_not_built():
    """As on a machine where nvcc was absent at install time: ember_cuda._C is missing."""
    code = textwrap.dedent("""
        import sys
        sys.modules["ember_cuda._C"] = None          # import of the extension fails
        import ember, ember_cuda
        from ember.dispatcher.plugins import backend_for, plugin_records
        from ember.dispatcher.schema import PRIMITIVES
        rec = next(r for r in plugin_records() if r.name == "cuda")
        assert rec.status == "loaded", rec.error
        b = backend_for("cuda")
        assert b.device_count() == 0 and set(PRIMITIVES) <= set(b.kernels)
        assert not ember_cuda.is_built() and not ember_cuda.is_available()
        assert b.status().startswith("not built"), b.status()
        try:
            ember.zeros(2, device="cuda")
        except RuntimeError as e:
            assert "not built" in str(e) or "device" in str(e), e
        else:
            raise AssertionError("no error")
        try:
            b.kernels["add"](None, None, None)
        except RuntimeError as e:
            assert "not built" in str(e), e
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
