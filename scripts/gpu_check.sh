#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (no network). Usage:
#
#     scripts/gpu_check.sh RESULTS_DIR
#
# Builds ember + ember-cpu + ember-cuda (pip --no-build-isolation --no-deps), runs the
# conformance kit on cuda, trains the MLP and the CNN on cuda checking parity with CPU,
# counts cudaMalloc/cudaFree over 50 steps (allocator stats), checks that a step never
# blocks the host, runs ember.compile's NVRTC-built fused kernels against eager,
# benchmarks side by side with PyTorch CUDA, and runs the activation-offload benchmark. Results go to
# RESULTS_DIR (summary.md, results.json, logs). Budget: under 8 minutes.
set -uo pipefail

OUT="${1:?usage: scripts/gpu_check.sh RESULTS_DIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PY="${PYTHON:-python}"
START=$(date +%s)
STATUS=0
log() { echo "[gpu_check $(( $(date +%s) - START ))s] $*" | tee -a "$OUT/gpu_check.log"; }

log "machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
log "nvcc: $(nvcc --version 2>&1 | tail -1)"
# build only for this GPU's architecture (halves the compile time)
CC="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
export EMBER_CUDA_ARCHITECTURES="${EMBER_CUDA_ARCHITECTURES:-${CC:-90}}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

# ---- 1. build (about 1-2 minutes) --------------------------------------------------------
log "building (sm_${EMBER_CUDA_ARCHITECTURES})"
if ! timeout 300 "$PY" -m pip install --no-build-isolation --no-deps -e backends/cpu -e backends/cuda -e . \
        > "$OUT/build.log" 2>&1; then
  # offline machines may lack scikit-build-core (or a recent setuptools): build with plain
  # CMake and register the distributions' entry points directly
  log "pip build failed (see build.log); falling back to scripts/dev_install.py --build"
  if ! timeout 360 "$PY" scripts/dev_install.py --build >> "$OUT/build.log" 2>&1; then
    log "BUILD FAILED (see build.log)"; tail -40 "$OUT/build.log"; exit 1
  fi
fi
"$PY" - <<'PYEOF' 2>&1 | tee -a "$OUT/gpu_check.log"
import ember_cuda, ember_cuda.plugin as p
print("ember_cuda built:", ember_cuda.is_built(), "available:", ember_cuda.is_available(),
      "devices:", ember_cuda.device_count(), "cublas:", p.load_cublas() or "NOT FOUND")
if ember_cuda.is_available():
    print("device:", ember_cuda.get_device_name(0))
PYEOF
"$PY" -c "import ember_cuda, sys; sys.exit(0 if ember_cuda.is_available() else 1)" || {
  log "CUDA NOT AVAILABLE after the build"; exit 1; }

# ---- 2. unit tests of the plugin (policy on the fake device) ----------------------------
log "plugin tests (backends/cuda/tests)"
timeout 120 "$PY" -m pytest -q -x backends/cuda/tests -p no:cacheprovider > "$OUT/plugin_tests.log" 2>&1
log "plugin tests: $(tail -1 "$OUT/plugin_tests.log")"

# ---- 3. the conformance kit on cuda (at most 3 minutes) ----------------------------------
log "conformance kit on cuda"
timeout 180 "$PY" -m pytest -q --pyargs ember.testing --ember-device=cuda -p no:cacheprovider \
    -x --maxfail=50 > "$OUT/conformance.log" 2>&1
CONF_RC=$?
log "conformance kit (rc=$CONF_RC): $(tail -1 "$OUT/conformance.log")"
[ $CONF_RC -eq 0 ] || STATUS=1

# ---- 4. parity, allocator counts, async, benchmarks (about 2 minutes) --------------------
log "training parity, cudaMalloc counts, host syncs, benchmarks vs PyTorch CUDA"
timeout 240 "$PY" - "$OUT" <<'PYEOF' 2>&1 | tee "$OUT/checks.log"
import json, sys, time
import numpy as np
import torch
import ember
import ember_cuda
from ember_cuda import _C

OUT = sys.argv[1]
res = {"device": ember_cuda.get_device_name(0), "torch": torch.__version__}
ok = True


def build(lib, kind, weights=None):
    nn = lib.nn
    if kind == "mlp":
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    else:
        m = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 14 * 14, 128), nn.ReLU(), nn.Linear(128, 10))
    if weights is not None:
        with lib.no_grad():
            for p, w in zip(m.parameters(), weights):
                p.copy_(lib.from_numpy(w.copy()))
    return m


def data(kind, batch, seed=0):
    rng = np.random.default_rng(seed)
    shape = (batch, 784) if kind == "mlp" else (batch, 1, 28, 28)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, batch).astype(np.int64)


def make_opt(lib, kind, params):
    return lib.optim.SGD(params, lr=0.01, momentum=0.9) if kind == "mlp" else lib.optim.Adam(params, lr=1e-3)


def ember_setup(kind, batch, device, weights):
    m = build(ember, kind, weights).to(device)
    opt = make_opt(ember, kind, m.parameters())
    x, y = data(kind, batch)
    x, y = ember.from_numpy(x).to(device), ember.from_numpy(y).to(device)
    loss_fn = ember.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
        return loss
    return m, step


def torch_setup(kind, batch, weights):
    m = build(torch, kind, weights).cuda()
    opt = make_opt(torch, kind, m.parameters())
    x, y = data(kind, batch)
    x, y = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
        return loss
    return m, step


CFG = {"mlp": 128, "cnn": 64}
for kind, batch in CFG.items():
    torch.manual_seed(0)
    weights = [p.detach().numpy().copy() for p in build(torch, kind).parameters()]
    # ---- parity with CPU: 5 steps, same weights and data
    mc, sc = ember_setup(kind, batch, "cpu", weights)
    mg, sg = ember_setup(kind, batch, "cuda", weights)
    lc = [float(sc().item()) for _ in range(5)]
    lg = [float(sg().item()) for _ in range(5)]
    pdiff = max(float(np.max(np.abs(a.detach().numpy() - b.detach().cpu().numpy())))
                for a, b in zip(mc.parameters(), mg.parameters()))
    par = bool(np.allclose(lc, lg, rtol=2e-3, atol=2e-4) and pdiff < 5e-3)
    res[f"{kind}_parity"] = {"loss_cpu": lc, "loss_cuda": lg, "max_param_diff": pdiff, "ok": par}
    ok &= par
    print(f"{kind}: parity {'OK' if par else 'FAIL'} losses cpu {lc[-1]:.5f} cuda {lg[-1]:.5f} "
          f"max param diff {pdiff:.2e}")

    # ---- cudaMalloc / cudaFree over 50 steps: none after step 1
    ember_cuda.synchronize()
    _, s = ember_setup(kind, batch, "cuda", weights)
    s()
    st1 = ember_cuda.memory_stats()
    for _ in range(49):
        s()
    ember_cuda.synchronize()
    st50 = ember_cuda.memory_stats()
    allocs = st50["num_device_alloc"] - st1["num_device_alloc"]
    frees = st50["num_device_free"] - st1["num_device_free"]
    res[f"{kind}_cudaMalloc_after_step1"] = allocs
    res[f"{kind}_cudaFree_after_step1"] = frees
    res[f"{kind}_reserved_MiB"] = st50["reserved_bytes.all.current"] / 2**20
    ok &= allocs == 0 and frees == 0
    print(f"{kind}: cudaMalloc after step 1: {allocs}, cudaFree: {frees} "
          f"(total {st50['num_device_alloc']}, reserved {res[f'{kind}_reserved_MiB']:.1f} MiB)")

    # ---- no host sync inside a step: the host-sync counter does not move, and a step
    # queued behind a 200 ms GPU spin returns long before the spin ends
    syncs = ember_cuda.host_sync_count()
    s()
    s()
    no_sync = ember_cuda.host_sync_count() == syncs
    ember_cuda.synchronize()
    _C.spin(0, int(1.5e9 * 0.2))             # ~200 ms at ~1.5 GHz
    t0 = time.perf_counter()
    s()
    host_ms = (time.perf_counter() - t0) * 1e3
    busy = not _C.stream_query(0)
    ember_cuda.synchronize()
    res[f"{kind}_no_host_sync"] = {"sync_counter_unchanged": no_sync, "step_host_ms_behind_spin": host_ms,
                                   "stream_still_busy_after_step": busy}
    ok &= no_sync and busy
    print(f"{kind}: host syncs in a step: {'none' if no_sync else 'SOME'}; step returned after "
          f"{host_ms:.1f} ms with the GPU still busy: {busy}")

# ---- benchmarks, side by side with PyTorch CUDA ---------------------------------------
def bench(fn, sync, n, reps=5):
    best = float("inf")
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


esync, tsync = ember_cuda.synchronize, torch.cuda.synchronize
a_e = ember.ones(1000, device="cuda"); b_e = ember.ones(1000, device="cuda")
a_t = torch.ones(1000, device="cuda"); b_t = torch.ones(1000, device="cuda")
ov_e = bench(lambda: a_e + b_e, esync, 2000) * 1e6
ov_t = bench(lambda: a_t + b_t, tsync, 2000) * 1e6
res["launch_overhead_us"] = {"ember": ov_e, "torch": ov_t, "ratio": ov_e / ov_t}
print(f"per-op overhead (add, 1000 elems): ember {ov_e:.1f} us, torch {ov_t:.1f} us, x{ov_e/ov_t:.2f}")

# ---- the profiler's device time on cuda (timing events around each op) -----------------
from ember.profiler import profile as _profile
pa, pb = ember.randn(2048, 2048, device="cuda"), ember.randn(2048, 2048, device="cuda")
(pa @ pb).sum().item()
with _profile() as _prof:
    esync(); _t0 = time.perf_counter()
    for _ in range(5):
        pa @ pb
    esync(); _wall_us = (time.perf_counter() - _t0) * 1e6
_dev_us = sum(e.self_device_time_total for e in _prof.key_averages())
res["profiler_device_time"] = {"device_us": _dev_us, "wall_us": _wall_us,
                               "ok": 0.3 * _wall_us < _dev_us <= 1.05 * _wall_us}
print(f"profiler: device time of 5 matmuls {_dev_us:.0f} us within wall {_wall_us:.0f} us: "
      f"{res['profiler_device_time']['ok']}")

# ---- ember.compile on cuda: NVRTC-built fused kernels against eager -------------------
import ember_cuda.fusion as CF
from ember.dispatcher import fusion as FU


def gelu_tanh(x):
    return 0.5 * x * (1 + ember.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


fused_ok = True
for name, fn, make in [
        ("gelu_f32", gelu_tanh, lambda: (ember.randn(1 << 20, device="cuda"),)),
        ("half_math", lambda x: (x.exp() * 2 - x.sigmoid()).sqrt(),
         lambda: (ember.rand(4096, device="cuda").half(),)),
        ("int_floor_div", lambda a, b: (a // b) * 3 + a % b,
         lambda: (ember.randint(-50, 50, (4096,), device="cuda"),
                  ember.randint(1, 9, (4096,), device="cuda"))),
        ("scalars", lambda x: (x.clamp(-0.5, 0.7) * 1.5 + 2.5).addcmul(x, x, value=0.25),
         lambda: (ember.randn(4096, device="cuda"),)),
        # fused reductions (reduce.cu's block order): one, and two with a row pass between
        ("rms_norm", lambda x: x * ember.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6),
         lambda: (ember.randn(512, 1000, device="cuda"),)),
        ("layer_norm_written_out",
         lambda x: (x - x.mean(-1, keepdim=True)) / ((x - x.mean(-1, keepdim=True)).pow(2)
                                                     .mean(-1, keepdim=True) + 1e-5).sqrt(),
         lambda: (ember.randn(300, 2048, device="cuda"),)),
        ("full_sum", lambda x: (x * x).sum(), lambda: (ember.randn(100000, device="cuda"),))]:
    args = make()
    groups = FU.STATS["groups"]
    got = ember.compile(fn)(*args)
    want = fn(*args)
    ember_cuda.synchronize()
    g, w = got.float().cpu().numpy(), want.float().cpu().numpy()
    same = bool(np.allclose(g, w, rtol=1e-6 if got.dtype != ember.float16 else 1e-3, atol=1e-6))
    made = FU.STATS["groups"] > groups
    fused_ok &= same and made
    print(f"compile on cuda, {name}: fused {made}, matches eager {same} "
          f"(max diff {float(np.max(np.abs(g - w))):.2e})")
x = ember.randn(1 << 22, device="cuda")
cg = ember.compile(gelu_tanh)
cg(x)
te = bench(lambda: gelu_tanh(x), esync, 50) * 1e6
tc = bench(lambda: cg(x), esync, 50) * 1e6
xt = torch.randn(1 << 22, device="cuda")
tg = lambda t: 0.5 * t * (1 + torch.tanh(0.7978845608 * (t + 0.044715 * t * t * t)))  # noqa
tt = bench(lambda: tg(xt), tsync, 50) * 1e6
res["compile_cuda"] = {"ok": bool(fused_ok), "ptx_compiled": CF.STATS["compiled"],
                       "gelu_4M_us": {"eager": te, "compiled": tc, "torch_eager": tt}}
ok &= fused_ok
print(f"GELU-tanh 4M float32: ember eager {te:.0f} us, ember.compile {tc:.0f} us "
      f"(x{te / tc:.2f}), torch eager {tt:.0f} us")

# __cuda_array_interface__ (numba, CuPy): the same description as PyTorch's
ce = ember.ones(3, 4, device="cuda")[:, ::2]
ct = torch.ones(3, 4, device="cuda")[:, ::2]
ai, at = ce.__cuda_array_interface__, ct.__cuda_array_interface__
cai_ok = all(ai[k] == at[k] for k in ("typestr", "shape", "strides")) and ai["data"][0] != 0
res["cuda_array_interface"] = bool(cai_ok)
ok &= cai_ok
print(f"__cuda_array_interface__ as PyTorch's: {cai_ok} ({ai})")

# DLPack from a cuda tensor: PyTorch shares the memory (same address, same values)
de = ember.arange(12.0, device="cuda").view(3, 4).t()
dt = torch.from_dlpack(de)
dl_ok = (dt.device.type == "cuda" and tuple(dt.stride()) == de.stride()
         and dt.data_ptr() == de.__cuda_array_interface__["data"][0]
         and bool((dt.cpu() == torch.arange(12.0).view(3, 4).t()).all()))
res["dlpack_cuda_export"] = bool(dl_ok)
ok &= dl_ok
print(f"DLPack export of a cuda tensor to PyTorch, zero-copy: {dl_ok}")

n = 4096
ge = ember.randn(n, n, device="cuda"); he = ember.randn(n, n, device="cuda")
gt = torch.randn(n, n, device="cuda"); ht = torch.randn(n, n, device="cuda")
te = bench(lambda: ge @ he, esync, 10, 3)
tt = bench(lambda: gt @ ht, tsync, 10, 3)
res["gemm4096_fp32_tflops"] = {"ember": 2 * n**3 / te / 1e12, "torch": 2 * n**3 / tt / 1e12}
print(f"GEMM 4096 fp32: ember {2*n**3/te/1e12:.1f} TFLOP/s, torch {2*n**3/tt/1e12:.1f} TFLOP/s")
del ge, he, gt, ht

for kind, batch in CFG.items():
    torch.manual_seed(0)
    weights = [p.detach().numpy().copy() for p in build(torch, kind).parameters()]
    _, se = ember_setup(kind, batch, "cuda", weights)
    _, st = torch_setup(kind, batch, weights)
    for _ in range(3):
        se(); st()
    te = bench(se, esync, 20) * 1e3
    tt = bench(st, tsync, 20) * 1e3
    res[f"{kind}_step_ms"] = {"ember": te, "torch": tt, "ratio": te / tt, "target": 1.5}
    ok &= te / tt <= 1.5
    print(f"{kind} step: ember {te:.2f} ms, torch {tt:.2f} ms, x{te/tt:.2f} (target <= 1.5)")

res["ok"] = bool(ok)
json.dump(res, open(f"{OUT}/results.json", "w"), indent=2)
print("checks:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PYEOF
CHK_RC=${PIPESTATUS[0]}
[ $CHK_RC -eq 0 ] || STATUS=1

# ---- 5. activation offload (vDNN's setting: a GPU and PCIe/NVLink copies), at most 2 min --
# It must print: N (activations), that the run without offload fails under the limit
# parameters + N/4 and the one with offload trains to identical losses, the peak with
# offload as a fraction of the peak without (target <= 20 %), and the step times (offload
# vs none vs the copies alone: the overlap).
log "activation offload: bench/bench_memory.py --device cuda"
timeout 120 "$PY" bench/bench_memory.py --device cuda --depth 16 --batch 256 --steps 4 \
    --json "$OUT/memory.json" > "$OUT/memory.log" 2>&1
MEM_RC=$?
while IFS= read -r line; do log "  $line"; done < <(grep -v Warning "$OUT/memory.log" | tail -6)
[ $MEM_RC -eq 0 ] || { log "offload benchmark failed (rc=$MEM_RC, memory.log)"; STATUS=1; }

{
  echo "# ember CUDA backend: gpu_check ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo
  echo '```'
  cat "$OUT/gpu_check.log"
  echo
  cat "$OUT/checks.log"
  echo '```'
} > "$OUT/summary.md"
log "done in $(( $(date +%s) - START ))s, status $STATUS (summary.md, results.json)"
exit $STATUS
