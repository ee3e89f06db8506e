"""Fork after a device started, killed workers, dead parents, leftover files.

- A child forked after a backend that does not survive fork (opencl; a fake in-process
  backend declaring ``fork_safe = False``; one declaring nothing) started in the parent
  raises PyTorch's "Cannot re-initialize CUDA in forked subprocess" error for that device
  type on first use, within seconds, instead of hanging in the driver; devices that never
  started in the parent, and fork-safe ones (cpu), keep working there.
- DataLoader workers start with 'spawn' (saying so once) when such a backend has started,
  and finish the epoch.
- A SIGKILLed worker surfaces as PyTorch's "DataLoader worker (pid N) is killed by signal:
  Killed.", even when the batch it sent lives in its shared memory.
- Workers die with their main process, even one killed by SIGKILL and even while they are
  stuck; and no /tmp/pymp-* directory is left behind.

Everything that forks from an initialised driver runs in a fresh interpreter (a script
run with a timeout), so a regression fails a test instead of hanging the suite.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import ember
from ember.utils.data import DataLoader, Dataset

TIMEOUT = 120  # for a whole script on a loaded 2-core machine; a hang would be forever

PYTORCH_FORK_ERROR = ("Cannot re-initialize {dt} in forked subprocess. To use {dt} with "
                      "multiprocessing, you must use the 'spawn' start method")

# fake devices a script registers in-process: memory and kernels are the CPU backend's
BACKENDS_SRC = '''
from ember.dispatcher import Backend, register_backend
from ember_cpu.plugin import CPUBackend


class Forkless(CPUBackend):
    """Declares that it does not survive fork, and says when it has started."""
    name = device_type = "forkless"
    host_accessible = False
    fork_safe = False
    started = False

    def is_initialized(self):
        return self.started

    def allocator(self, index):
        self.started = True
        return super().allocator(index)


class Unstarted(Forkless):
    name = device_type = "unstarted"


class Undeclared(Backend):
    """Declares nothing about fork: not fork-safe, started as soon as it is loaded."""
    name = device_type = "undeclared"
    host_accessible = False

    def __init__(self):
        self._cpu = CPUBackend()
        self.kernels = dict(self._cpu.kernels)

    def device_count(self):
        return 1

    def allocator(self, index):
        return self._cpu.allocator(index)

    def allocate(self, nbytes, index):
        return self._cpu.allocate(nbytes, index)

    def copy_from_host(self, storage, byte_offset, host_buffer):
        self._cpu.copy_from_host(storage, byte_offset, host_buffer)

    def copy_to_host(self, storage, byte_offset, nbytes):
        return self._cpu.copy_to_host(storage, byte_offset, nbytes)


def register_fakes():
    for cls in (Forkless, Unstarted, Undeclared):
        register_backend(cls())
'''


def run_script(tmp_path, body, env=None, timeout=TIMEOUT):
    """Run ``body`` (after BACKENDS_SRC) as a main script; its last stdout line is JSON."""
    path = tmp_path / "script.py"
    path.write_text(BACKENDS_SRC + textwrap.dedent(body))
    start = time.monotonic()
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                       timeout=timeout, cwd=tmp_path, env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr, time.monotonic() - start


# ---- fork ------------------------------------------------------------------------------------
FORK_CHILD = """
import json, os, time
import ember
from ember.dispatcher.plugins import fork_unsafe_devices


def attempt(fn):
    try:
        return ["ok", fn()]
    except Exception as e:
        return [type(e).__name__, str(e)]


def in_child(fn):
    \"\"\"fn() run in a forked child; its JSON result and how long the child took.\"\"\"
    r, w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, json.dumps(fn()).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data), time.monotonic() - start


def uses(dt, inherited=None):
    \"\"\"Every way a child reaches a device: a new tensor, an op on an inherited tensor,
    reading one back.\"\"\"
    out = {"new": attempt(lambda: ember.arange(4., device=dt).mul(2).cpu().tolist())}
    if inherited is not None:
        out["op"] = attempt(lambda: (inherited + 1).sum().item())
        out["read"] = attempt(lambda: inherited.cpu().tolist())
    return out


if __name__ == "__main__":
    register_fakes()
    ember.ones(2).sum().item()                 # plugins loaded, the cpu used
    out = {"before": fork_unsafe_devices()}

    def fresh():  # forked before any accelerator started
        res = {"forkless": uses("forkless"), "opencl_available": ember.opencl.is_available()}
        if res["opencl_available"]:
            res["opencl"] = uses("opencl")
        return res
    out["fresh"], _ = in_child(fresh)
    touched = ["forkless"] + (["opencl"] if out["fresh"]["opencl_available"] else [])
    kept = {dt: ember.arange(3.).to(dt) for dt in touched}   # start them here
    out["after"] = fork_unsafe_devices()

    def late():
        res = {"unsafe": fork_unsafe_devices()}
        res.update({dt: uses(dt, kept.get(dt)) for dt in
                    ["cpu", "forkless", "unstarted", "undeclared"] + touched[1:]})
        if "opencl" in touched:
            res["namespace"] = {
                "device_count": attempt(lambda: ember.opencl.device_count()),
                "synchronize": attempt(lambda: ember.opencl.synchronize())}
        return res
    out["late"], out["seconds"] = in_child(late)
    print(json.dumps(out))
"""


def _check_fork_error(result, dt, declared=True):
    exc, msg = result
    assert exc == "RuntimeError", result
    assert msg.startswith(PYTORCH_FORK_ERROR.format(dt=dt)), msg
    assert f"The '{dt}' backend was initialised in the parent process, pid " in msg
    assert ("declares fork_safe = False" if declared else
            "does not declare fork_safe = True") in msg


def test_forked_child_raises_on_devices_started_in_the_parent(tmp_path):
    out, _, _ = run_script(tmp_path, FORK_CHILD)
    doubled = ["ok", [0.0, 2.0, 4.0, 6.0]]
    # forked before they started: fake device and opencl both work in the child
    assert out["before"] == ["undeclared"]  # counts as started from the moment it loaded
    assert out["fresh"]["forkless"]["new"] == doubled
    opencl = out["fresh"]["opencl_available"]
    if opencl:
        assert out["fresh"]["opencl"]["new"] == doubled
    # forked after: every use of those devices raises PyTorch's error, at once
    touched = ["forkless"] + (["opencl"] if opencl else [])
    assert out["after"] == sorted(touched + ["undeclared"])  # cpu survives fork
    late = out["late"]
    assert out["seconds"] < 30  # an error, not a wait in the driver
    assert late["unsafe"] == out["after"]
    for dt in touched:
        for use in ("new", "op", "read"):
            _check_fork_error(late[dt][use], dt)
    _check_fork_error(late["undeclared"]["new"], "undeclared", declared=False)
    # the cpu and a device that never started in the parent work in the child
    assert late["cpu"]["new"] == doubled
    assert late["unstarted"]["new"] == doubled
    if opencl:
        # counting devices works in the child, as torch.cuda.device_count() does there
        assert late["namespace"]["device_count"][0] == "ok"
        assert late["namespace"]["device_count"][1] >= 1
        _check_fork_error(late["namespace"]["synchronize"], "opencl")


# ---- DataLoader after a device started -------------------------------------------------------
LOADER_AFTER_INIT = """
import json, os, warnings
import ember
from ember.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return ember.tensor([float(i * i)])


class UsesDevice(Dataset):
    def __init__(self, dt):
        self.dt = dt

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return ember.ones(1, device=self.dt).cpu()


def epoch(num_workers):
    it = iter(DataLoader(Squares(), batch_size=3, num_workers=num_workers))
    return type(it._workers[0]).__name__, [b.flatten().tolist() for b in it]


if __name__ == "__main__":
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out["before"] = epoch(2)     # nothing fork-unsafe started: fork, as Python's default
        register_fakes()
        opencl = ember.opencl.is_available()
        started = ["forkless"] + (["opencl"] if opencl else [])
        for dt in started:
            ember.ones(2, device=dt).sum().item()
        out["after"] = [epoch(2), epoch(1)]
        # what spawn cannot pickle (a lambda): fork after all, as PyTorch would
        it = iter(DataLoader(Squares(), batch_size=3, num_workers=1,
                             collate_fn=lambda b: [x.item() for x in b]))
        out["unpicklable"] = [type(it._workers[0]).__name__, list(it)]
    out["opencl"] = opencl
    out["warnings"] = [str(w.message) for w in caught if "DataLoader" in str(w.message)]
    # fork asked for explicitly: a worker that uses the device gets the error, not a hang
    errors = {}
    for dt in started:
        try:
            list(DataLoader(UsesDevice(dt), batch_size=2, num_workers=1,
                            multiprocessing_context="fork"))
            errors[dt] = "no error"
        except RuntimeError as e:
            errors[dt] = str(e)
    out["errors"] = errors
    print(json.dumps(out))
"""


def test_dataloader_workers_spawn_after_a_fork_unsafe_device_started(tmp_path):
    out, _, _ = run_script(tmp_path, LOADER_AFTER_INIT)
    expected = [[float(i * i) for i in range(j, min(j + 3, 10))] for j in range(0, 10, 3)]
    assert out["before"] == ["ForkProcess", expected]
    assert out["after"] == [["SpawnProcess", expected]] * 2
    assert out["unpicklable"] == ["ForkProcess", expected]
    started = ["forkless"] + (["opencl"] if out["opencl"] else [])
    # said once per process, naming every backend started that does not survive fork
    assert len(out["warnings"]) == 2
    names = ", ".join(sorted(started + ["undeclared"]))
    assert out["warnings"][0].startswith(
        f"DataLoader: {names} has been initialised in this process and does not survive "
        "fork, so worker processes start with the 'spawn' start method instead of 'fork'")
    assert out["warnings"][1].startswith("DataLoader: the workers cannot start with 'spawn' (")
    assert (f"so they start with 'fork' after all; a worker that uses {names} raises an "
            "error") in out["warnings"][1]
    for dt in started:
        msg = out["errors"][dt]
        assert "Caught RuntimeError in DataLoader worker process 0" in msg
        assert PYTORCH_FORK_ERROR.format(dt=dt) in msg


# ---- killed workers --------------------------------------------------------------------------
class KilledAfterSending(Dataset):
    """Item 2 arms a timer that SIGKILLs its worker shortly after the batch was sent, so
    that the batch (shared memory, 512 KiB) is still to be fetched from the dead worker."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 2:
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
        return ember.full((1 << 17,), float(i))


def test_killed_worker_holding_a_shared_batch_raises_pytorchs_message():
    loader = DataLoader(KilledAfterSending(), batch_size=1, num_workers=2,
                        multiprocessing_context="fork")
    it = iter(loader)
    pids = [w.pid for w in it._workers]
    time.sleep(1.5)  # the worker has sent batches 0 and 2, then died
    start = time.monotonic()
    with pytest.raises(RuntimeError) as e:
        for _ in it:
            pass
    assert time.monotonic() - start < 10
    msg = str(e.value)
    # PyTorch: "DataLoader worker (pid 1234) is killed by signal: Killed. "
    assert msg.startswith(f"DataLoader worker (pid {pids[0]}) is killed by signal: Killed.")
    assert f"worker 0 (pid {pids[0]}): killed by signal SIGKILL" in msg
    assert not any(w.is_alive() for w in it._workers)


# ---- workers die with their parent -----------------------------------------------------------
STUCK_WORKERS = '''
import ctypes, json, os, signal, sys, threading, time
import ember
from ember.utils.data import DataLoader, Dataset


class Stuck(Dataset):
    """A worker stuck for good: in C, holding the GIL (no Python thread of the worker can
    run), or in Python sleeping. It leaves a file named by its pid first."""
    def __init__(self, in_c):
        self.in_c = in_c

    def __len__(self):
        return 8

    def __getitem__(self, i):
        open(os.path.join("stuck", str(os.getpid())), "w").close()
        if self.in_c:
            ctypes.PyDLL(None).sleep(120)
        time.sleep(120)
        return i


if __name__ == "__main__":
    os.mkdir("stuck")
    iters = [iter(DataLoader(Stuck(True), num_workers=2, multiprocessing_context="fork")),
             iter(DataLoader(Stuck(True), num_workers=1, multiprocessing_context="spawn"))]

    def in_thread():  # started by a thread: the workers watch the main process themselves
        iters.append(iter(DataLoader(Stuck(False), num_workers=1,
                                     multiprocessing_context="fork")))
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    pids = [w.pid for it in iters for w in it._workers]
    deadline = time.monotonic() + 60
    while len(os.listdir("stuck")) < len(pids) and time.monotonic() < deadline:
        time.sleep(0.05)  # until every worker is inside __getitem__
    print(json.dumps(pids), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
'''


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # zombie or dead
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_their_killed_parent_even_when_stuck(tmp_path):
    path = tmp_path / "stuck.py"
    path.write_text(textwrap.dedent(STUCK_WORKERS))
    # (TMPDIR: the killed main process cannot remove its multiprocessing directory)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == -signal.SIGKILL, r.stderr
    pids = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(pids) == 4
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.1)
    alive = [p for p in pids if not _gone(p)]
    for p in alive:  # do not leave them behind if the test fails
        os.kill(p, signal.SIGKILL)
    assert alive == []


# ---- no /tmp/pymp-* left ---------------------------------------------------------------------
LEFTOVERS = '''
import json, os, signal, sys, time
import ember
from ember.utils.data import DataLoader, Dataset


class Big(Dataset):
    """512 KiB items (shared memory, so workers serve descriptors from a socket in
    multiprocessing's temporary directory); item 5 raises, item 6 kills its worker."""
    def __init__(self, fail):
        self.fail = fail

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5 and self.fail == "raise":
            raise ValueError("item 5 is bad")
        if i == 6 and self.fail == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        return ember.full((1 << 17,), float(i))


if __name__ == "__main__":
    seen = []
    for method, fail in (("fork", "raise"), ("fork", "kill"), ("spawn", "raise")):
        try:
            for _ in DataLoader(Big(fail), num_workers=2, multiprocessing_context=method):
                pass
        except (ValueError, RuntimeError) as e:
            seen.append(type(e).__name__)
    # an iterator abandoned mid-epoch, still alive at exit
    it = iter(DataLoader(Big(None), num_workers=2, multiprocessing_context="fork"))
    next(it)
    print(json.dumps(seen))
'''


def test_no_pymp_directories_left_by_failing_workers(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out, _, _ = run_script(tmp_path, LEFTOVERS, {"TMPDIR": str(tmp)})
    assert out == ["ValueError", "RuntimeError", "ValueError"]
    assert sorted(os.listdir(tmp)) == []
