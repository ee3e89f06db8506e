"""ember.compile's CUDA generator, without a GPU: the source of fused groups (planned from
captured traces; a plan does not depend on the device) compiles with NVRTC to PTX for the
GPUs ember targets, through the in-memory standard-header shims; without the driver the
plugin declines to fuse, with one warning, and graphs run op by op. Launching the kernels
is checked on a GPU by scripts/gpu_check.sh (fused results against eager ones)."""
import itertools
import re
import warnings

import pytest

import ember
import ember.nn.functional as F
from ember.dispatcher.plugins import backend_for
from ember.dispatcher import fusion, lazy
import ember_cuda.fusion as CF

needs_nvrtc = pytest.mark.skipif(
    CF._nvrtc() is None or not any("cccl" in d or d.endswith("include")
                                   for d in CF.include_dirs()[1:]),
    reason="NVRTC or the CUDA toolkit's headers are not installed here "
           "(pip install 'ember-cuda[nvrtc]' and a CUDA toolkit)")


_KEYS = itertools.count()


def groups_of(fn, *args):
    seen = {}

    def spy(info, storages, values):
        seen.setdefault("infos", []).append(info)
        return lazy.replay(info)
    key = ("cuda-fusion-test", next(_KEYS))     # (a fresh key: never a cache hit)
    with lazy.capture(lazy.Region(spy, key)):
        result = fn(*args)      # (held: a live result is stored by the kernel)
    del result
    lazy.forget(key)
    return [g for info in seen["infos"] for kind, g in fusion.plan(info) if kind == "group"]


def gelu_tanh(x):
    return 0.5 * x * (1 + ember.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


CASES = {
    "gelu_float32": (gelu_tanh, lambda: (ember.randn(64),)),
    "float16_math": (lambda x: (x.exp() * 2 - x.sigmoid()).sqrt(),
                     lambda: (ember.rand(64).half(),)),
    "bfloat16": (lambda x: F.silu(x) + x * x, lambda: (ember.randn(64).bfloat16(),)),
    "int64_floor_division_and_compare": (
        lambda a, b: ((a // b) * 3 + a % b) > a,
        lambda: (ember.randint(-50, 50, (64,)), ember.randint(1, 9, (64,)))),
    "bool_logic": (lambda a, b: (a & b) | (a ^ ~b), lambda: (ember.rand(64) > 0.5,
                                                             ember.rand(64) > 0.3)),
    "runtime_scalars_and_single_operands": (
        lambda x, s: (x.clamp(-0.5, 0.7) * s + 2.5).addcmul(x, x, value=0.25),
        lambda: (ember.randn(64), ember.tensor(1.5))),
    "float64_precise_functions": (lambda x: x.expm1().log1p() + x.erf(),
                                  lambda: (ember.rand(64, dtype=ember.float64),)),
    "broadcast_rows_columns_and_slices": (
        lambda x, b, big: ((x + b).relu() * (x - x.mean(-1, keepdim=True)) + big[:, 2:10]
                           ).tanh(),
        lambda: (ember.randn(8, 8), ember.randn(8), ember.randn(8, 12))),
}


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
def test_generated_kernels_compile_with_nvrtc(name, arch, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    # (the groups are planned on cpu traces: planned as for cuda, which fuses broadcasts
    # and reductions too)
    fn, make = CASES[name]
    groups = groups_of(fn, *make())
    assert groups, "the trace fused nothing"
    for g in groups:
        src = CF.render_group(g)
        assert 'extern "C" __global__ void ember_fused' in src
        ptx = CF.compile_ptx(src, arch).decode()
        assert re.search(r"\.entry ember_fused\(", ptx), ptx[:500]
        assert f".target sm_{arch[-2:]}" in ptx
        # one parameter block (operand pointers, runtime values, layout), then n
        k, m = len(g.operands), max(len(g.runtime_values), 1)
        assert f".param .align 8 .b8 ember_fused_param_0[{8 * (2 * k + m + 1)}]" in ptx
        assert ".param .u64 ember_fused_param_1" in ptx
        # the kernel loads its inputs and stores its kept results in global memory
        assert "ld.global" in ptx and "st.global" in ptx


def _layer_norm(x):
    u = x.mean(-1, keepdim=True)
    s = (x - u).pow(2).mean(-1, keepdim=True)
    return (x - u) / (s + 1e-5).sqrt()


REDUCTIONS = {
    "rms_norm": (lambda x, w: x * ember.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
                 lambda: (ember.randn(8, 48), ember.randn(48)), 1),
    "layer_norm_written_out": (_layer_norm, lambda: (ember.randn(6, 40),), 2),
    "float64_sum_with_a_stored_epilogue": (
        lambda x: (x.exp().sum(-1, keepdim=True) * 2, (x * 3).sum(-1)),
        lambda: (ember.randn(5, 7, dtype=ember.float64),), 1),
    "full_mean": (lambda x: (x * x + 1).mean(), lambda: (ember.randn(3, 33),), 1),
}


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_fused_reductions_compile_with_nvrtc(name, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    fn, make, most = REDUCTIONS[name]
    groups = [g for g in groups_of(fn, *make()) if g.reductions]
    assert groups and max(len(g.reductions) for g in groups) == most
    for g in groups:
        src = CF.render_group(g)
        ptx = CF.compile_ptx(src, "compute_90").decode()
        assert re.search(r"\.entry ember_fused\(", ptx)
        # the reduce kernels' order: warp shuffles, and the block's barrier per sum
        assert "shfl.sync.down" in ptx and "bar.sync" in ptx
        assert src.count("block_sum(acc") == len(g.reductions)
        mean = "/ (double)inner" if g.reductions[0].dtype == ember.float64 else \
            "/ (float)inner"
        assert (mean in src) == any(r.op == "mean" for r in g.reductions)


def test_fused_reductions_use_the_reduce_kernels_block():
    # reduce.cu's run_reduce: a power of two from 32, up to 512, reaching the row
    want = {1: 32, 2: 32, 32: 32, 33: 64, 64: 64, 65: 128, 200: 256, 256: 256, 257: 512,
            512: 512, 513: 512, 100000: 512}
    assert {n: CF.reduction_threads(n) for n in want} == want
    assert backend_for("cuda").fuses_reductions


@needs_nvrtc
def test_ptx_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    src = CF.render_group(groups_of(gelu_tanh, ember.randn(8))[0])
    before = dict(CF.STATS)
    first = CF.compile_ptx(src)
    second = CF.compile_ptx(src)
    assert first == second
    assert CF.STATS["compiled"] == before["compiled"] + 1
    assert CF.STATS["hits"] == before["hits"] + 1
    assert list(tmp_path.glob("fused_*.ptx"))


@needs_nvrtc
def test_nvrtc_errors_show_the_log_and_the_source():
    with pytest.raises(RuntimeError, match="(?s)NVRTC failed.*--- source ---"):
        CF.compile_ptx('extern "C" __global__ void ember_fused() { undefined_name(); }')


def test_without_the_driver_groups_run_op_by_op(monkeypatch):
    monkeypatch.setattr(CF, "_UNAVAILABLE", [])
    monkeypatch.setattr(CF, "_driver", lambda: None)
    g = groups_of(gelu_tanh, ember.randn(8))[0]
    with pytest.warns(RuntimeWarning, match="libcuda"):
        assert CF.compile_elementwise(g, lambda index: 0) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert CF.compile_elementwise(g, lambda index: 0) is None   # warned once


def test_the_cpu_and_cuda_generators_share_the_loop():
    g = groups_of(gelu_tanh, ember.randn(8))[0]
    import ember_cpu.fusion as cpu
    body = [ln for ln in CF.render_group(g).splitlines() if ln.startswith("    const ")]
    assert body and all(ln in cpu.render_group(g).splitlines() for ln in body)
