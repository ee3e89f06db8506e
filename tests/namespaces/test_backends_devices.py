"""ember.backends.*, ember.cuda without a GPU and ember.accelerator, against PyTorch 2.13
(a CPU-only build: the oracle for "no GPU here")."""
import warnings

import pytest
import torch

import ember
import ember.accelerator
from ember.backends import cuda as ecuda_flags, cudnn, mkldnn, mps, openmp, opt_einsum

# ---- flag namespaces: the attributes exist, keep what is assigned, restore in flags() ----
FLAGS = [
    ("cudnn", "enabled", True), ("cudnn", "benchmark", False), ("cudnn", "deterministic", False),
    ("cudnn", "allow_tf32", True), ("cudnn", "benchmark_limit", None),
    ("mkldnn", "enabled", True),
]


@pytest.mark.parametrize("module,name,default", FLAGS)
def test_flag_defaults_and_assignment(module, name, default):
    emod = getattr(ember.backends, module)
    tmod = getattr(torch.backends, module)
    assert getattr(emod, name) == getattr(tmod, name) == default
    old = getattr(emod, name)
    new = (not old) if isinstance(old, bool) else ("greedy" if isinstance(old, str) else 5)
    setattr(emod, name, new)
    try:
        assert getattr(emod, name) == new
    finally:
        setattr(emod, name, old)


def test_opt_einsum_defaults_follow_availability():
    assert opt_einsum.is_available() == torch.backends.opt_einsum.is_available()
    assert opt_einsum.enabled == torch.backends.opt_einsum.enabled
    assert opt_einsum.strategy == torch.backends.opt_einsum.strategy


def test_cudnn_flags_context_restores():
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)


@pytest.mark.parametrize("name", ["cudnn", "mps", "openmp"])
def test_is_available_is_honest(name):
    assert getattr(ember.backends, name).is_available() is False


def test_mkldnn_is_available_when_onednn_is_installed():
    from importlib import metadata
    import os
    try:
        metadata.distribution("onednn-cpu-gomp")
        installed = os.environ.get("EMBER_ONEDNN", "1") != "0"
    except metadata.PackageNotFoundError:
        installed = bool(os.environ.get("EMBER_ONEDNN_LIBRARY"))
    assert mkldnn.is_available() is installed


def test_cudnn_version_and_mps_built_as_torch_without_them():
    assert cudnn.version() is None and mps.is_built() is False
    assert openmp.is_available() is False and isinstance(opt_einsum.is_available(), bool)
    assert mkldnn.VERBOSE_ON == torch.backends.mkldnn.VERBOSE_ON


@pytest.mark.parametrize("name", ["allow_tf32", "allow_fp16_reduced_precision_reduction",
                                  "allow_bf16_reduced_precision_reduction"])
def test_cuda_matmul_flags(name):
    assert getattr(ecuda_flags.matmul, name) == getattr(torch.backends.cuda.matmul, name)
    old = getattr(ecuda_flags.matmul, name)
    setattr(ecuda_flags.matmul, name, not old)
    assert getattr(ecuda_flags.matmul, name) is (not old)
    setattr(ecuda_flags.matmul, name, old)
    with pytest.raises(AttributeError):
        ecuda_flags.matmul.allow_tf33 = True


@pytest.mark.parametrize("kind", ["flash", "mem_efficient", "math", "cudnn"])
def test_sdp_switches(kind):
    enabled = getattr(ecuda_flags, f"{kind}_sdp_enabled")
    assert enabled() == getattr(torch.backends.cuda, f"{kind}_sdp_enabled")()
    getattr(ecuda_flags, f"enable_{kind}_sdp")(False)
    assert enabled() is False
    getattr(ecuda_flags, f"enable_{kind}_sdp")(True)
    with ecuda_flags.sdp_kernel(enable_flash=False, enable_math=True,
                                enable_mem_efficient=False, enable_cudnn=False):
        assert ecuda_flags.math_sdp_enabled() and not ecuda_flags.flash_sdp_enabled()
    assert enabled() is True


def test_preferred_linalg_library():
    assert ecuda_flags.preferred_linalg_library() == "default"
    with pytest.raises(RuntimeError):
        ecuda_flags.preferred_linalg_library("lapack-of-the-moon")


# ---- ember.cuda on a machine without a GPU ---------------------------------------------
@pytest.mark.parametrize("name", ["is_available", "device_count", "memory_allocated",
                                  "max_memory_allocated", "memory_reserved",
                                  "max_memory_reserved", "is_initialized",
                                  "get_rng_state_all", "get_arch_list"])
def test_cuda_queries_answer_as_torch(name):
    assert getattr(ember.cuda, name)() == getattr(torch.cuda, name)()


@pytest.mark.parametrize("name", ["manual_seed", "manual_seed_all"])
def test_cuda_seeding_works_without_gpu(name):
    assert getattr(ember.cuda, name)(123) is None
    assert getattr(torch.cuda, name)(123) is None
    assert ember.cuda.initial_seed() == 123


@pytest.mark.parametrize("name", ["seed", "seed_all", "empty_cache", "reset_peak_memory_stats"])
def test_cuda_no_op_calls(name):
    assert getattr(ember.cuda, name)() is None


def test_cuda_rng_state_round_trip():
    s = ember.cuda.get_rng_state()
    assert s.dtype is ember.uint8
    ember.cuda.manual_seed(5)
    ember.cuda.set_rng_state(s)
    assert bytes(ember.cuda.get_rng_state().tolist()) == bytes(s.tolist())


@pytest.mark.parametrize("name", ["synchronize", "get_device_name", "current_device",
                                  "get_device_capability", "mem_get_info"])
def test_cuda_device_functions_raise_like_torch(name):
    with pytest.raises(AssertionError):
        getattr(torch.cuda, name)()
    with pytest.raises(AssertionError, match="is_available"):
        getattr(ember.cuda, name)()
    with pytest.raises(RuntimeError):     # also a RuntimeError (what a CUDA build raises)
        getattr(ember.cuda, name)()


def test_cuda_stream_needs_a_device():
    with pytest.raises(RuntimeError):
        torch.cuda.Stream()
    with pytest.raises(RuntimeError):
        ember.cuda.Stream()


def test_cuda_amp_aliases_disable_without_gpu():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        scaler = ember.cuda.amp.GradScaler()
        ctx = ember.cuda.amp.autocast()
    assert scaler.is_enabled() is False
    assert any("not available" in str(m.message) for m in w)
    with ctx:
        assert ember.amp.is_autocast_enabled("cuda") is False
    x = ember.ones(2)
    assert scaler.scale(x) is x and scaler.get_scale() == 1.0


def test_unknown_attribute_is_attribute_error():
    with pytest.raises(AttributeError):
        ember.cuda.no_such_function_here


# ---- ember.accelerator -------------------------------------------------------------------
def test_accelerator_none_on_cpu_only_machine(monkeypatch):
    monkeypatch.delenv("EMBER_ACCELERATOR", raising=False)
    assert ember.accelerator.is_available() is torch.accelerator.is_available() is False
    assert ember.accelerator.current_accelerator() is None
    assert torch.accelerator.current_accelerator() is None
    assert ember.accelerator.device_count() == torch.accelerator.device_count() == 0
    for name in ("current_device_index", "synchronize"):
        with pytest.raises(RuntimeError, match="none is available"):
            getattr(torch.accelerator, name)()
        with pytest.raises(RuntimeError, match="none is available"):
            getattr(ember.accelerator, name)()
    with pytest.raises(RuntimeError, match="none is available"):
        ember.accelerator.set_device_index(0)


def test_accelerator_chosen_explicitly(monkeypatch):
    monkeypatch.setenv("EMBER_ACCELERATOR", "opencl")
    if ember.opencl.device_count() == 0:
        assert ember.accelerator.current_accelerator() is None
        return
    assert ember.accelerator.current_accelerator() == ember.device("opencl")
    assert ember.accelerator.device_count() == ember.opencl.device_count()
    ember.accelerator.set_device_index(0)
    assert ember.accelerator.current_device_index() == 0
    ember.accelerator.synchronize()
    monkeypatch.setenv("EMBER_ACCELERATOR", "none")
    assert ember.accelerator.is_available() is False
