"""Host memory running out is an ``ember.OutOfMemoryError``, never a crash.

A child process lowers its address-space limit (``RLIMIT_AS``, soft limit only, so it can
try several) a few hundred MiB above what it already maps, then allocates 256 MiB tensors
(``ember.empty(64 << 20).fill_(1)``, the issue's example) until memory runs out, on the CPU
and on OpenCL (PoCL's device memory is host memory: it used to allocate a buffer at its
first use and segfault in the fill kernel when that failed). Every allocation path is
driven into the limit: tensor storage, the caching allocator's segments, and the host
staging buffers of copies to and from a device. After each failure the allocator must be
consistent (its statistics add up, a smaller allocation works, freed memory is reused).

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
