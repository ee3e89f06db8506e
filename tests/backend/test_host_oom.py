"""Host memory running out is an ``ember.OutOfMemoryError``, never a crash.

A child process lowers its address-space limit (``RLIMIT_AS``, soft limit only, so it can
try several) a few hundred MiB above what it already maps, then allocates 256 MiB tensors
(``ember.empty(64 << 20).fill_(1)``, the issue's example) until memory runs out, on the CPU
and on OpenCL (PoCL's device memory is host memory: it used to allocate a buffer at its
first use and segfault in the fill kernel when that failed). Every allocation path is
driven into the limit: tensor storage, the caching allocator's segments, and the host
staging buffers of copies to and from a device; then, one child process for all of them,
index tensors made from NumPy arrays, the CPU fallback's host copies and its kernel's
scratch memory, shared memory of ``ember.multiprocessing`` (sending, receiving, by value)
and ``pin_memory``. After each failure the allocator must be consistent (its statistics
add up, a smaller allocation works, freed memory is reused) and everything still works.
Failures no address-space limit can cause here (an OpenCL driver refusing a copy with its
own out-of-memory status, ``cudaHostAlloc`` refusing pinned memory without a GPU) are
simulated with the errors those drivers raise.

The oracle is the contract, not PyTorch (whose CPU allocator raises a plain RuntimeError):
``ember.OutOfMemoryError`` is a ``RuntimeError`` like ``torch.OutOfMemoryError`` and a
``MemoryError`` like Python's own.
"""
import json
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest
import torch

import ember
from ember.dispatcher import allocator as allocator_module
from ember.dispatcher.allocator import CachingAllocator, DeviceMemory, OutOfMemoryError
from ember.dispatcher.schema import OPS


def _opencl_installed() -> bool:
    """ember-opencl is installed (asked of the entry points: looking for a device here would
    start OpenCL in the test process at collection, before tests that fork)."""
    return any(ep.name == "opencl" for ep in entry_points(group="ember.backends"))


WORKER = textwrap.dedent('''
    import faulthandler, gc, json, resource, sys
    faulthandler.enable()
    import numpy as np
    import ember

    dev = sys.argv[1]
    limits = [int(v) for v in sys.argv[2:]]
    BIG = 64 << 20                        # float32 elements: 256 MiB
    # compile and warm every op used below before memory gets short
    w = ember.empty(4, device=dev).fill_(1)
    w.sum().item(); w.cpu(); ember.ones(4).to(dev); (w * 3).sum().item()
    src = np.ones(BIG // 2, np.float32)   # the host array of the upload (128 MiB)
    alloc = None                          # the caching allocator (opencl)
    if dev == "opencl":
        import ember_opencl
        alloc = ember_opencl._runtime.device(0).allocator

    def vm_size():
        with open("/proc/self/status") as f:
            return int(f.read().split("VmSize:")[1].split()[0]) << 10

    def stats_add_up():
        if alloc is None:
            return True
        segs = alloc.memory_snapshot()
        stats = alloc.memory_stats()
        return (sum(s["total_size"] for s in segs) == stats["reserved_bytes.all.current"]
                and sum(s["allocated_size"] for s in segs) == alloc.memory_allocated()
                and stats["allocated_bytes.all.current"] == alloc.memory_allocated())

    def oom(fn):
        """fn()'s result, or "OOM: <message>" when it ran out of memory."""
        try:
            return fn()
        except MemoryError as e:
            assert isinstance(e, ember.OutOfMemoryError), type(e)
            assert isinstance(e, RuntimeError)
            return "OOM: " + str(e)[:60]

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    report = []
    for extra in limits:
        r = {"extra_mib": extra}
        base = alloc.memory_allocated() if alloc is not None else 0
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + (extra << 20), hard))
        keep = []
        err = None
        for _ in range(64):
            try:
                keep.append(ember.empty(BIG, device=dev).fill_(1))
            except MemoryError as e:
                err = e
                break
        r["kept"] = len(keep)
        r["error"] = type(err).__name__ if err else None
        r["is_runtime_and_memory_error"] = isinstance(err, RuntimeError) and isinstance(
            err, MemoryError)
        if alloc is not None:
            r["allocated_after_oom"] = alloc.memory_allocated() - base
            r["num_ooms"] = alloc.memory_stats()["num_ooms"]
        r["stats_add_up"] = stats_add_up()
        # the tensors made before the failure are intact and usable
        r["sum_of_last"] = oom(lambda: keep[-1].sum().item()) if keep else None
        # host staging: room for the 256 MiB result, not for a second copy of it
        if keep:
            keep.pop()
        gc.collect()
        r["download"] = oom(lambda: float(keep[0].cpu()[0])) if keep else None
        r["upload"] = oom(lambda: float(ember.tensor(src).to(dev)[-1].item()))
        r["stats_add_up_after_copies"] = stats_add_up()
        # free everything: a smaller tensor works, and a big one again (the cache)
        del keep
        gc.collect()
        r["small"] = ember.ones(1 << 20, device=dev).sum().item()
        r["big_again"] = ember.empty(BIG, device=dev).fill_(2)[BIG - 1].item()
        if alloc is not None:
            gc.collect()
            r["allocated_at_end"] = alloc.memory_allocated() - base
        r["stats_add_up_at_end"] = stats_add_up()
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        report.append(r)
    print(json.dumps(report))
''')


def run_worker(device, limits):
    proc = subprocess.run([sys.executable, "-c", WORKER, device, *map(str, limits)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (f"the worker died (rc {proc.returncode}):\n"
                                  f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_out_of_memory_error_is_a_runtime_error_and_a_memory_error():
    assert issubclass(torch.OutOfMemoryError, RuntimeError)    # PyTorch's
    assert ember.OutOfMemoryError is OutOfMemoryError
    assert issubclass(OutOfMemoryError, RuntimeError)
    assert issubclass(OutOfMemoryError, MemoryError)


def test_cpu_storage_failure_is_out_of_memory():
    """Far beyond any machine: the CPU storage's MemoryError becomes OutOfMemoryError."""
    with pytest.raises(OutOfMemoryError, match=r"Out of host memory: tried to allocate "
                                               r"1024\.00 TiB|Out of host memory"):
        ember.empty(1 << 48, dtype=ember.uint8)
    assert ember.ones(3).sum().item() == 3


LIMITS_MIB = [300, 700]


@pytest.mark.parametrize("device", ["cpu"] + (["opencl"] if _opencl_installed() else []))
def test_allocation_under_an_address_space_limit(device):
    for r in run_worker(device, LIMITS_MIB):
        what = f"{device} with {r['extra_mib']} MiB to spare: {r}"
        assert r["error"] == "OutOfMemoryError" and r["is_runtime_and_memory_error"], what
        assert r["stats_add_up"] and r["stats_add_up_after_copies"], what
        assert r["stats_add_up_at_end"], what
        if r["kept"]:
            assert r["sum_of_last"] == float(64 << 20), what
        for copy in ("download", "upload"):   # done, or refused: never a crash
            v = r[copy]
            assert v == 1.0 or (v is None and copy == "download") or str(v).startswith(
                "OOM: Out of"), what
        assert r["small"] == float(1 << 20) and r["big_again"] == 2.0, what
        if device != "cpu":
            assert r["allocated_after_oom"] == r["kept"] * (256 << 20), what
            assert r["num_ooms"] >= 1 and r["allocated_at_end"] == 0, what


@pytest.mark.skipif(not _opencl_installed(), reason="ember-opencl is not installed")
def test_host_staging_of_a_download_runs_out():
    """Room for a download's result but not for its staging buffer: an OutOfMemoryError
    that names the copy."""
    code = textwrap.dedent('''
        import resource, sys, numpy as np, ember
        x = ember.empty(64 << 20, device="opencl").fill_(1); x[:4].cpu()
        with open("/proc/self/status") as f:
            vm = int(f.read().split("VmSize:")[1].split()[0]) << 10
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (vm + (400 << 20), hard))
        try:
            x.cpu()
        except ember.OutOfMemoryError as e:
            print("OOM", e)
        print("after", x[:2].sum().item())
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OOM Out of host memory" in proc.stdout, proc.stdout
    assert "moving from opencl:0 to cpu" in proc.stdout, proc.stdout
    assert "after 2.0" in proc.stdout


# ---- the other host allocations, each driven into the limit -------------------------------
PATHS_WORKER = textwrap.dedent(r"""
    import faulthandler, gc, json, os, resource, sys, warnings
    faulthandler.enable()
    os.environ["EMBER_FALLBACK"] = "cpu"     # (read when the holey backend registers)
    # no host block cache: the limit is set above what is mapped, and cached blocks would
    # be mapped memory that allocations of their size reuse
    os.environ["EMBER_CPU_CACHE"] = "0"
    import numpy as np
    import ember
    import ember.multiprocessing
    from ember.dispatcher import register_backend
    from ember.multiprocessing import reductions
    from multiprocessing.reduction import ForkingPickler
    from ember_cpu.plugin import CPUBackend

    warnings.simplefilter("ignore")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]

    def vm_size():
        with open("/proc/self/status") as f:
            return int(f.read().split("VmSize:")[1].split()[0]) << 10

    def limited(extra_mib, fn):
        # fn() under an address-space limit extra_mib above what is mapped now: what it
        # returned, or what it raised
        gc.collect()
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + (extra_mib << 20), hard))
        try:
            fn()
            return {"error": None}
        except BaseException as e:
            return {"error": type(e).__name__, "message": str(e)[:400],
                    "oom": isinstance(e, ember.OutOfMemoryError)
                    and isinstance(e, RuntimeError) and e.device == "cpu"}
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))

    report = {}
    MIB = 1 << 18                            # float32 elements in 1 MiB

    # advanced indexing with a NumPy array: its int64 conversion needs 256 MiB
    x = ember.zeros(4)
    idx = np.zeros(32 << 20, np.int32)      # 128 MiB
    report["index: x[array]"] = limited(100, lambda: x[idx])
    report["index: x[array] = 1"] = limited(100, lambda: x.__setitem__(idx, 1.0))
    del idx
    report["index: after"] = {"ok": x[np.array([1, 2])].tolist() == [0.0, 0.0]}

    # the CPU fallback: sort() of a backend that lacks it (64 MiB of values, 192 MiB of
    # outputs on that backend; then 256 MiB of host copies and 256 MiB of sort scratch)
    class HoleyCPU(CPUBackend):
        name = "holey"
        version = "test"
        device_type = "holey"
        host_accessible = False

        def __init__(self):
            super().__init__()
            self.kernels = {n: k for n, k in self.kernels.items() if n != "sort"}
    register_backend(HoleyCPU())
    h = ember.empty(64 * MIB, device="holey").uniform_()
    report["fallback: host copies"] = limited(300, lambda: ember.sort(h))
    report["fallback: cpu kernel scratch"] = limited(580, lambda: ember.sort(h))
    small = h[:5].cpu().numpy()
    report["fallback: after"] = {"ok": ember.sort(h[:5]).values.cpu().numpy().tolist()
                                 == np.sort(small).tolist()}
    del h

    # kernels whose scratch memory is taken outside the dispatcher's run(): sort's scratch
    # (256 MiB) after its outputs (192 MiB)
    c = ember.rand(64 * MIB)
    report["scratch: sort"] = limited(300, lambda: ember.sort(c))
    report["scratch: topk"] = limited(300, lambda: ember.topk(c, 3))
    del c

    # ember.multiprocessing: moving a 256 MiB storage into shared memory (the mapping)
    t = ember.empty(256 * MIB).fill_(1)
    report["shared memory: send"] = limited(100, lambda: ForkingPickler.dumps(t))
    report["shared memory: after"] = {"ok": not t.is_shared() and t[-1].item() == 1.0}
    # ... mapping one received from another process
    handle = ember.dispatcher.plugins.backend_for("cpu").share_storage(t._storage)
    fd = os.dup(handle[1])
    del t, handle

    class Dup:
        def detach(self):
            return fd
    report["shared memory: receive"] = limited(
        100, lambda: reductions.rebuild_storage("cpu", ("fd", Dup(), 1 << 28)))
    # ... a tensor sent by value (copied into the pickle), and received by value
    reductions.inline_below_bytes = 1 << 40
    t = ember.empty(256 * MIB).fill_(1)
    report["by value: send"] = limited(100, lambda: reductions.reduce_tensor(t))
    del t
    reductions.inline_below_bytes = 0
    data = bytes(1 << 28)
    report["by value: receive"] = limited(100, lambda: reductions.rebuild_inline_tensor(
        "cpu", data, ember.Tensor, (256 * MIB,), (1,), 0, "float32", "cpu", False, None))
    del data
    small = ember.ones(3).share_memory_()
    report["shared memory: after all"] = {
        "ok": ForkingPickler.loads(ForkingPickler.dumps(small)).tolist() == [1.0] * 3}

    # pin_memory() with a plugin whose page-locked memory is plain host memory
    class Pinning:
        def is_available(self):
            return True

        def pinned_buffer(self, nbytes):
            return bytearray(nbytes)
    ember._device_ns.pinning_api = lambda: Pinning()
    t = ember.empty(256 * MIB).fill_(1)
    report["pin_memory"] = limited(100, lambda: t.pin_memory())
    p = t[:3].pin_memory()
    report["pin_memory: after"] = {"ok": p.is_pinned() and p.tolist() == [1.0] * 3}
    print(json.dumps(report))
""")

#: case -> what its OutOfMemoryError's message must say
PATHS = {
    "index: x[array]": "index tensor of 33554432 elements made from a ndarray",
    "index: x[array] = 1": "index tensor of 33554432 elements made from a ndarray",
    "fallback: host copies": "sort() falls back to the CPU",
    "fallback: cpu kernel scratch": "scratch memory of sort() on cpu (falling back from "
                                    "holey:0)",
    "shared memory: send": "moving a tensor's storage into shared memory",
    "shared memory: receive": "tensor's storage received from another process",
    "by value: send": "sent by value to another process",
    "by value: receive": "received by value from another process",
    "pin_memory": "page-locked (pinned) copy of a float32 tensor of shape [67108864]",
}
#: kernels the dispatcher calls directly, outside ``run()``
SCRATCH_OUTSIDE_RUN = {"scratch: sort": "scratch memory of sort()",
                       "scratch: topk": "scratch memory of sort()"}


@pytest.fixture(scope="module")
def paths_report():
    """One child process drives every path into its limit (one interpreter start)."""
    proc = subprocess.run([sys.executable, "-c", PATHS_WORKER], capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, (f"the worker died (rc {proc.returncode}):\n"
                                  f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(PATHS))
def test_host_allocation_paths_under_an_address_space_limit(paths_report, case):
    """Index tensors from NumPy, the CPU fallback's host copies and its kernel's scratch,
    shared memory (sending, receiving, by value) and ``pin_memory``: each raises
    ``ember.OutOfMemoryError`` (a RuntimeError, device "cpu") naming what it was for."""
    r = paths_report[case]
    assert r["error"] == "OutOfMemoryError" and r["oom"], r
    assert r["message"].startswith("Out of host memory: tried to allocate"), r
    assert PATHS[case] in r["message"], r


def test_everything_works_after_those_failures(paths_report):
    after = {k: v for k, v in paths_report.items() if k.endswith(("after", "after all"))}
    assert len(after) == 5 and all(v["ok"] for v in after.values()), after


@pytest.mark.parametrize("case", sorted(SCRATCH_OUTSIDE_RUN))
def test_scratch_of_kernels_called_outside_run(paths_report, case):
    r = paths_report[case]
    assert r["error"] == "OutOfMemoryError" and r["oom"], r
    assert SCRATCH_OUTSIDE_RUN[case] in r["message"], r


def test_max_pool_scratch_running_out_is_out_of_memory(monkeypatch):
    """The CPU max_pool kernel needs no heap scratch, so a starving kernel is simulated."""
    def starving(*args, **kwargs):
        raise MemoryError("std::bad_alloc")
    monkeypatch.setitem(OPS["max_pool"].kernels, "cpu", starving)
    with pytest.raises(OutOfMemoryError, match=r"scratch memory of max_pool\(\) on cpu"):
        ember.nn.functional.max_pool2d(ember.ones(1, 1, 4, 4), 2)


# ---- an OpenCL driver that runs out of memory in a copy ------------------------------------
def _cl_error(cls_name, code_name):
    """A pyopencl error as the driver wrapper raises it (with its status code)."""
    import pyopencl as cl
    code = getattr(cl.status_code, code_name)
    record = cl._cl._ErrorRecord(routine="clEnqueueReadBuffer", code=code, msg="")
    return getattr(cl, cls_name)(record)


@pytest.mark.skipif(not _opencl_installed(), reason="ember-opencl is not installed")
@pytest.mark.parametrize("direction", ["download", "upload"])
@pytest.mark.parametrize("error", [("RuntimeError", "OUT_OF_HOST_MEMORY"),
                                   ("MemoryError", "MEM_OBJECT_ALLOCATION_FAILURE"),
                                   ("RuntimeError", "OUT_OF_RESOURCES")])
def test_opencl_copy_out_of_memory(monkeypatch, direction, error):
    """pyopencl's own out-of-memory errors from ``enqueue_copy`` (what pyopencl raises for
    those status codes; a real one needs a driver that allocates at that point) become
    ``ember.OutOfMemoryError``; the device works afterwards."""
    import ember_opencl
    rt = ember_opencl._runtime
    x = ember.arange(6.0, device="opencl")
    real = rt.cl.enqueue_copy
    calls = []

    def failing_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise _cl_error(*error)
        return real(*args, **kwargs)
    monkeypatch.setattr(rt.cl, "enqueue_copy", failing_once)
    with pytest.raises(OutOfMemoryError) as info:
        x.cpu() if direction == "download" else ember.ones(4).to("opencl")
    assert isinstance(info.value, RuntimeError)
    msg = str(info.value)
    assert ("copying 24 bytes to the host" if direction == "download" else
            "copying 16 bytes from the host") in msg, msg
    assert error[1] in msg, msg
    if error[1] == "OUT_OF_HOST_MEMORY":
        assert msg.startswith("Out of host memory") and info.value.device == "cpu", msg
    else:
        assert msg.startswith("Out of memory on opencl:0"), msg
        assert info.value.device == "opencl:0", msg
    monkeypatch.undo()
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert ember.ones(2).to("opencl").sum().item() == 2.0


@pytest.mark.skipif(not _opencl_installed(), reason="ember-opencl is not installed")
def test_opencl_copy_other_errors_pass_unchanged(monkeypatch):
    import pyopencl as cl
    import ember_opencl
    x = ember.arange(3.0, device="opencl")

    def invalid(*args, **kwargs):
        raise _cl_error("LogicError", "INVALID_VALUE")
    monkeypatch.setattr(ember_opencl._runtime.cl, "enqueue_copy", invalid)
    with pytest.raises(cl.LogicError):
        x.cpu()


def test_cuda_pinned_buffer_out_of_memory(monkeypatch):
    """``cudaHostAlloc`` refusing for lack of memory (simulated: no GPU here) raises
    ``ember.OutOfMemoryError`` from ``ember_cuda.pinned_buffer``; other CUDA errors pass."""
    api = pytest.importorskip("ember_cuda._api")

    class Ext:
        def __init__(self, message):
            self.message = message

        def PinnedBuffer(self, nbytes):
            raise RuntimeError(self.message)
    monkeypatch.setattr(api, "require", lambda index=0: Ext(
        "cudaHostAlloc: CUDA error 2 (cudaErrorMemoryAllocation): out of memory"))
    with pytest.raises(OutOfMemoryError, match=r"Out of host memory: tried to allocate 1024\.00 "
                                               r"MiB \(1073741824 bytes\) for page-locked"):
        api.pinned_buffer(1 << 30)
    monkeypatch.setattr(api, "require", lambda index=0: Ext(
        "cudaHostAlloc: CUDA error 1 (cudaErrorInvalidValue): invalid argument"))
    with pytest.raises(RuntimeError, match="cudaErrorInvalidValue") as info:
        api.pinned_buffer(1)
    assert not isinstance(info.value, OutOfMemoryError)


def test_pin_memory_out_of_memory_from_a_plugin(monkeypatch):
    """A plugin's ``pinned_buffer`` raising a plain ``MemoryError``."""
    class Starved:
        def is_available(self):
            return True

        def pinned_buffer(self, nbytes):
            raise MemoryError("no page-locked memory")
    monkeypatch.setattr(ember._device_ns, "pinning_api", lambda: Starved())
    with pytest.raises(OutOfMemoryError, match=r"tried to allocate 24 bytes \(24 bytes\) "
                                               r"for the page-locked"):
        ember.ones(2, 3).pin_memory()


# ---- the caching allocator stays consistent when Python itself runs out --------------------
class FakeMemory(DeviceMemory):
    """Raw memory that hands out numbered handles, up to ``total`` bytes."""
    name = "fake:0"

    def __init__(self, total):
        self.total, self.held, self.live = total, 0, {}

    def alloc(self, nbytes):
        if self.held + nbytes > self.total:
            return None
        self.held += nbytes
        h = len(self.live) + 1000 * (self.held + 1)
        self.live[h] = nbytes
        return h

    def free(self, handle):
        self.held -= self.live.pop(handle)

    def mem_get_info(self):
        return self.total - self.held, self.total


def _consistent(alloc, mem):
    segs = alloc.memory_snapshot()
    stats = alloc.memory_stats()
    assert sum(s["total_size"] for s in segs) == stats["reserved_bytes.all.current"] == mem.held
    assert sum(s["allocated_size"] for s in segs) == alloc.memory_allocated()
    assert stats["active_bytes.all.current"] == alloc.memory_allocated()


@pytest.mark.parametrize("fail_at", [1, 2])
def test_allocator_survives_a_memory_error_in_its_bookkeeping(monkeypatch, fail_at):
    """A ``MemoryError`` while the allocator records a new segment (``fail_at`` 1) or
    splits a block (2) — Python's own allocations can fail under a hard limit — leaves no
    leaked device memory and statistics that add up; the next allocations work."""
    mem = FakeMemory(64 << 20)
    alloc = CachingAllocator(mem)
    keep = alloc.malloc(3 << 20)             # a large segment, split
    calls = {"n": 0}
    real_block = allocator_module.Block

    def flaky_block(*args):
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise MemoryError("injected")
        return real_block(*args)
    monkeypatch.setattr(allocator_module, "Block", flaky_block)
    with pytest.raises(MemoryError):
        alloc.malloc(1000)                   # a new small segment, then a split
    monkeypatch.undo()
    _consistent(alloc, mem)
    blocks = [alloc.malloc(n) for n in (1000, 5000, 2 << 20)]
    _consistent(alloc, mem)
    for b in blocks + [keep]:
        alloc.free(b)
    alloc.empty_cache()
    _consistent(alloc, mem)
    assert mem.held == 0 and alloc.memory_allocated() == 0


def test_allocator_out_of_memory_then_smaller_works():
    mem = FakeMemory(64 << 20)
    alloc = CachingAllocator(mem)
    a = alloc.malloc(30 << 20)
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(40 << 20)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, RuntimeError)
    _consistent(alloc, mem)
    assert alloc.memory_stats()["num_ooms"] == 1
    b = alloc.malloc(1 << 20)
    _consistent(alloc, mem)
    alloc.free(a)
    alloc.free(b)
    c = alloc.malloc(40 << 20)               # the cache is given back, and this fits
    _consistent(alloc, mem)
    alloc.free(c)


def test_a_kernels_scratch_memory_running_out_is_out_of_memory(monkeypatch):
    """A kernel that cannot get its scratch memory (C++ ``std::bad_alloc``, which pybind11
    turns into ``MemoryError``) raises ``ember.OutOfMemoryError`` naming the op."""
    def starving(out, *args, **kwargs):
        raise MemoryError("std::bad_alloc")
    monkeypatch.setitem(OPS["cumsum"].kernels, "cpu", starving)
    with pytest.raises(OutOfMemoryError, match=r"scratch memory of cumsum\(\) on cpu"):
        ember.cumsum(ember.ones(4), 0)
