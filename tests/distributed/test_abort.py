"""A rank that ends abnormally ends the whole 2-rank job within seconds (not after the
300 s collective timeout), with the reason printed, no rank left running and nothing of
Open MPI's left in the shared-memory directory; the launcher's own timeout and a one-process
job clean up too."""
import os
import re
import subprocess
import sys
import time

import pytest

import ember.distributed as dist
from ember.distributed import _lifecycle as lifecycle

HERE = os.path.dirname(__file__)
pytestmark = pytest.mark.skipif(not dist.is_available(), reason="mpi4py not installed")

#: how each way of failing shows in the job's output: the failing rank's traceback where
#: Python has one, else Open MPI's report or the waiting rank's error naming rank 1
EVIDENCE = {
    "sigkill": r"rank 1 with PID \d+ on node \S+ exited on\s+signal 9",
    "sigterm": r"rank 1 with PID \d+ on node \S+ exited on\s+signal 15",
    "raise": r"Traceback \(most recent call last\):(.|\n)*ValueError: rank 1 failed on purpose"
             r"(.|\n)*rank 1 of 2 stopped on an uncaught ValueError",
    "exit0": r"RuntimeError: all_reduce: rank 1 exited \(it returned from its script or "
             r"called sys.exit\(\)\) while rank 0 waits for it",
    "os_exit1": r"exited with non-zero status(.|\n)*Exit code:\s+1",
}


def launch(tmp_path, how, timeout=None):
    shm = tmp_path / "shm"
    shm.mkdir(exist_ok=True)
    env = dict(os.environ, EMBER_DIST_SHM_DIR=str(shm))
    env.pop("EMBER_DIST_TIMEOUT", None)          # the default 300 s timeout applies
    cmd = [sys.executable, "-m", "ember.distributed.run", "-n", "2"]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    # the tmp_path argument marks this job's processes, to look for survivors
    cmd += [os.path.join(HERE, "abort_worker.py"), how, str(tmp_path)]
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env)
    return r, start, time.time(), shm


def survivors(marker: str) -> list:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{pid}: {cmdline}")
    return found


def assert_clean(shm, marker):
    deadline = time.time() + 5
    while survivors(marker) and time.time() < deadline:
        time.sleep(0.1)
    assert not survivors(marker)
    assert os.listdir(shm) == []


@pytest.mark.parametrize("how", list(EVIDENCE))
def test_an_abnormal_exit_of_one_rank_ends_the_job_within_seconds(tmp_path, how):
    r, start, end, shm = launch(tmp_path, how)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "rank 0: no error" not in out
    # Open MPI's shared memory went to the launcher's private directory...
    assert re.search(rf"backing directory {re.escape(str(shm))}/ember-mpi-\d+-\S+ holds 2 "
                     "segments", out), out
    failed_at = float(re.search(r"rank 1 fails at ([\d.]+)", out).group(1))
    assert end - failed_at <= 10, f"the job took {end - failed_at:.1f} s to end\n{out}"
    assert re.search(EVIDENCE[how], out), out
    # ...which is gone, and so is every process of the job
    assert_clean(shm, str(tmp_path))


def test_the_launcher_timeout_stops_the_job_and_cleans_up(tmp_path):
    r, start, end, shm = launch(tmp_path, "hang", timeout=4)
    out = r.stdout + r.stderr
    assert r.returncode == 124, out
    assert "job killed after 4" in out
    assert end - start < 4 + 15, out
    assert_clean(shm, str(tmp_path))


def test_a_one_process_job_leaves_no_files(tmp_path):
    script = ("import os, ember, ember.distributed as dist\n"
              "dist.init_process_group('mpi')\n"
              "t = ember.ones(3); dist.all_reduce(t); assert t.tolist() == [1.0, 1.0, 1.0]\n"
              "d = os.environ['EMBER_DIST_SHM_DIR']\n"
              "print(sorted(os.listdir(os.path.join(d, n)) for n in os.listdir(d)))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in lifecycle._LAUNCHER_VARS and not k.startswith(("OMPI_", "PRTE_"))}
    env["EMBER_DIST_SHM_DIR"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    # while it ran, Open MPI's segment and session directory were in the private directory
    assert "sm_segment" in r.stdout and "ompi." in r.stdout, r.stdout
    assert os.listdir(tmp_path) == []


def test_is_available_does_not_start_mpi():
    script = ("import sys, ember.distributed as dist\n"
              "assert dist.is_available()\n"
              "assert 'mpi4py.MPI' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_stale_job_directories_are_removed_and_live_ones_kept(tmp_path):
    live = lifecycle.JobDir(str(tmp_path))
    stale = tmp_path / "ember-mpi-999999-dead"
    (stale / "ompi.1").mkdir(parents=True)
    (stale / ".lock").touch()
    (stale / "sm_segment.x.0").write_bytes(b"\0" * 64)
    young = tmp_path / "ember-mpi-999998-young"
    young.mkdir()
    other = tmp_path / "not-ours"
    other.mkdir()
    old = time.time() - 3600
    for p in (stale, live.path):
        os.utime(p, (old, old))
    try:
        removed = lifecycle.remove_stale_job_dirs(str(tmp_path))
        assert removed == [str(stale)]
        assert sorted(os.listdir(tmp_path)) == sorted(
            [os.path.basename(live.path), "ember-mpi-999998-young", "not-ours"])
    finally:
        live.remove()
    assert not os.path.exists(live.path)
