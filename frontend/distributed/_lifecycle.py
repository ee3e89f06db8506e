"""How an ember.distributed job ends, normally or not, and where Open MPI keeps its files.

Open MPI ends a whole job by itself when a rank is killed by a signal, or exits with a
non-zero status without finalizing MPI. Two endings it does not catch, because the rank
finalizes MPI on its way out and ``MPI_Finalize`` waits for every other rank:

- **an uncaught exception**: the other ranks wait for the failed one in their next
  collective and it waits for them in ``MPI_Finalize``, until the collective timeout. The
  ``sys.excepthook`` installed by ``init_process_group`` prints the traceback as usual,
  then calls ``MPI_Abort``, which ends the job at once.
- **a rank that leaves early** (returns from its script or calls ``sys.exit``, whatever
  the status) while the others will still wait for it: at exit each rank sends every other
  rank a departure notice on a private communicator, then finalizes. A rank waiting on an
  operation whose group includes a departed rank fails with a ``RuntimeError`` naming it
  (after a short grace period, in case the departed rank's last contribution is still in
  flight); left uncaught, that error aborts the job through the same hook.

Open MPI keeps each job's shared-memory segments in ``/dev/shm`` (``sm_segment.*``, 16 MiB
a rank) and a session directory in ``/tmp`` (``ompi.*``); a job that is killed, and a
single-process ("singleton") run even when it ends normally, leave them there for good.
``python -m ember.distributed.run`` and a singleton ``init_process_group`` therefore point
Open MPI at a private :class:`JobDir` (``/dev/shm/ember-mpi-PID-XXXX``) that is removed
when the job ends; one left by a launcher that was itself killed is removed by the next
one (its owner held a lock on it; the lock is free once every holder is gone).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time

import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks, no stale-directory cleanup
    fcntl = None

__all__ = ["JobDir", "launched_by_mpi", "mpi_files_in", "install", "departed"]

#: a private job directory: ``ember-mpi-<creator pid>-<random>``
JOB_DIR_PREFIX = "ember-mpi-"
_JOB_DIR_NAME = re.compile(rf"^{re.escape(JOB_DIR_PREFIX)}\d+-[A-Za-z0-9_]+$")
_LOCK_NAME = ".lock"
#: a directory younger than this may be between its creation and its lock
_STALE_AFTER_S = 10.0

#: environment variables that mark a process started by an MPI launcher
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "PMI_FD")


def shm_base() -> str:
    """Where job directories go: ``EMBER_DIST_SHM_DIR``, else ``/dev/shm`` (memory-backed,
    as Open MPI's segments should be), else the temporary directory."""
    base = os.environ.get("EMBER_DIST_SHM_DIR")
    if base:
        return base
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


class JobDir:
    """A private directory for one job's Open MPI files, locked while the job runs.

    The lock is an ``flock`` on ``.lock`` inside it, held by this process and by any child
    the descriptor ``lock_fd`` is passed to (the launcher passes it to ``mpiexec``), so a
    later job can tell a live directory from one whose owners all died.
    """

    def __init__(self, base: str | None = None):
        base = base or shm_base()
        remove_stale_job_dirs(base)
        self.path = tempfile.mkdtemp(prefix=f"{JOB_DIR_PREFIX}{os.getpid()}-", dir=base)
        self.lock_fd = os.open(os.path.join(self.path, _LOCK_NAME),
                               os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is not None:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1

    def __repr__(self):
        return f"JobDir({self.path!r})"


def remove_stale_job_dirs(base: str) -> list:
    """Remove this user's job directories in ``base`` whose lock nobody holds (their
    launcher and job are gone); returns the paths removed."""
    if fcntl is None:
        return []
    try:
        names = os.listdir(base)
    except OSError:
        return []
    removed = []
    for name in names:
        if not _JOB_DIR_NAME.match(name):
            continue
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or \
                time.time() - st.st_mtime < _STALE_AFTER_S:
            continue
        try:
            fd = os.open(os.path.join(path, _LOCK_NAME), os.O_RDWR)
        except FileNotFoundError:
            fd = None               # never locked: its creator died before locking it
        except OSError:
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue        # held: the job is alive
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def launched_by_mpi() -> bool:
    """Whether this process is a rank started by an MPI launcher (else MPI_Init makes a
    one-process "singleton" job)."""
    return any(v in os.environ for v in _LAUNCHER_VARS)


def job_environment(path: str) -> dict:
    """The Open MPI settings that put a job's shared-memory segments (btl/sm backing
    files) and session directories (PRRTE's, and a singleton's, which follows TMPDIR)
    under ``path``."""
    return {"OMPI_MCA_btl_sm_backing_directory": path,
            "PRTE_MCA_prte_tmpdir_base": path}


@contextlib.contextmanager
def mpi_files_in(job: JobDir | None):
    """While MPI initialises, point Open MPI's files at ``job`` (a no-op for ``None``); the
    environment is restored afterwards so that child processes do not inherit it."""
    if job is None:
        yield
        return
    changes = dict(job_environment(job.path), TMPDIR=job.path)
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- ending the job --------------------------------------------------------------------
_DEPART_TAG = 7001
_MPI = None                 # the mpi4py.MPI module, once installed
_CTRL = None                # a private duplicate of COMM_WORLD for departure notices
_OWNS_MPI = False           # ember initialised MPI, so ember finalizes it
_JOB: JobDir | None = None  # a singleton's private directory, removed after finalize
_DEPARTED: set = set()      # world ranks that announced their exit
_POLL = threading.Lock()    # one thread drains the notices at a time


def install(mpi, owns_mpi: bool, job: JobDir | None) -> None:
    """Called by ``init_process_group`` once MPI is initialised (idempotent): makes the
    control communicator and installs the exception hook and the exit handler."""
    global _MPI, _CTRL, _OWNS_MPI, _JOB
    if _CTRL is not None:
        return
    _MPI, _OWNS_MPI, _JOB = mpi, owns_mpi, job
    _CTRL = mpi.COMM_WORLD.Dup()
    sys.excepthook = _abort_on_uncaught(sys.excepthook)
    atexit.register(_at_exit)


def _live() -> bool:
    return _MPI is not None and _MPI.Is_initialized() and not _MPI.Is_finalized()


def _abort_on_uncaught(previous):
    def excepthook(tp, value, tb):
        try:
            previous(tp, value, tb)      # the traceback, printed as usual
        finally:
            if _live() and _MPI.COMM_WORLD.Get_size() > 1:
                world = _MPI.COMM_WORLD
                sys.stderr.write(
                    f"ember.distributed: rank {world.Get_rank()} of {world.Get_size()} "
                    f"stopped on an uncaught {tp.__name__} (traceback above); aborting the "
                    "job so that the other ranks do not wait for it\n")
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                world.Abort(1)
    excepthook.__wrapped__ = previous
    return excepthook


def _at_exit() -> None:
    try:
        if _live():
            if _CTRL.Get_size() > 1:
                _announce_departure()
            if _OWNS_MPI:
                _MPI.Finalize()
    finally:
        if _JOB is not None and (_MPI is None or _MPI.Is_finalized()):
            _JOB.remove()


def _announce_departure() -> None:
    me, n = _CTRL.Get_rank(), _CTRL.Get_size()
    note = np.array([me], np.int64)
    reqs = [_CTRL.Isend(note, dest=r, tag=_DEPART_TAG) for r in range(n) if r != me]
    # small messages go out eagerly; don't let a peer that can't take them hold us here
    deadline = time.monotonic() + 2.0
    while not _MPI.Request.Testall(reqs) and time.monotonic() < deadline:
        time.sleep(0.001)


def departed() -> frozenset:
    """World ranks that have announced their exit (drains pending notices; thread-safe)."""
    if _CTRL is None or not _live():
        return frozenset(_DEPARTED)
    if _POLL.acquire(blocking=False):
        try:
            status = _MPI.Status()
            while _CTRL.Iprobe(source=_MPI.ANY_SOURCE, tag=_DEPART_TAG, status=status):
                note = np.empty(1, np.int64)
                _CTRL.Recv(note, source=status.Get_source(), tag=_DEPART_TAG)
                _DEPARTED.add(int(note[0]))
        finally:
            _POLL.release()
    return frozenset(_DEPARTED)
