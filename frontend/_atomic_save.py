"""Atomic saves: writing a temporary ``.NAME.HOST-PID.XXXXXXXX.tmp`` next to the target and
renaming it over the target when complete; the temporaries of saves of the same target
whose process died (killed mid-write) are removed by the next save."""
from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import stat
import tempfile
from typing import BinaryIO, Callable, Union

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks, so no stale-temporary cleanup
    fcntl = None


FileLike = Union[str, bytes, os.PathLike, BinaryIO]


def _umask() -> int:
    # the only way to read the umask is to set it; restored at once
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(d: str) -> None:
    # makes the rename itself durable; not every platform can open a directory
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: this machine in temporary names (with the pid: whose save it is)
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"
#: a temporary left older than this (by the file system's clock) whose lock is free is
#: stale even when its writer's liveness can't be checked (another machine, an old name)
STALE_TEMPORARY_S = 60.0


def _temporary_pattern(name: str):
    # .NAME.HOST-PID.XXXXXXXX.tmp, or .NAME.XXXXXXXX.tmp as older embers named them
    # (XXXXXXXX: tempfile.mkstemp's eight random characters)
    return re.compile(rf"\.{re.escape(name)}\.(?:([A-Za-z0-9-]+)-(\d+)\.)?[a-z0-9_]{{8}}\.tmp")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True                 # someone else's process (or not a pid we can check)
    return True


def _remove_stale_temporaries(directory: str, name: str, now: float) -> list:
    """Remove the temporaries of earlier saves of ``directory/name`` whose writer is gone;
    returns their paths. A live writer holds an ``flock`` on its temporary, so only
    unlocked files of this user go, and only when their writer's process is known to be
    dead (same machine) or they are older than ``STALE_TEMPORARY_S`` by the file system's
    clock (``now`` is the fresh temporary's mtime)."""
    if fcntl is None:
        return []
    pattern = _temporary_pattern(name)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    removed = []
    for n in names:
        m = pattern.fullmatch(n)
        if not m:
            continue
        p = os.path.join(directory, n)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            continue
        writer_dead = m.group(1) == _HOST and not _pid_alive(int(m.group(2)))
        if not writer_dead and now - st.st_mtime < STALE_TEMPORARY_S:
            continue
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # fails while a writer holds it
            now_st = os.fstat(fd)
            if (now_st.st_dev, now_st.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(p)
                removed.append(p)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _save_atomic(path: str, write: Callable[[BinaryIO], None]) -> None:
    path = os.path.realpath(path)   # through a symlink, replace its target
    directory, name = os.path.split(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    else:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "ember.save: the target is a directory",
                                    path)
        if not stat.S_ISREG(st.st_mode):
            # a device or a FIFO (``/dev/null``, a pipe a reader waits on): write into it,
            # as torch.save does; replacing it with a renamed file would destroy it
            with open(path, "wb") as fh:
                write(fh)
            return
        mode = stat.S_IMODE(st.st_mode)
    prefix = f".{name}.{_HOST}-{os.getpid()}."
    if len(os.fsencode(prefix)) + 12 > 255:      # keep the name within NAME_MAX
        prefix = f".{name}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    lock = -1
    try:
        with os.fdopen(fd, "wb") as fh:
            if fcntl is not None:
                # held (through a duplicate, so closing the file keeps it) until the
                # rename: no concurrent save takes this temporary for a stale one
                lock = os.dup(fh.fileno())
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    pass    # a file system without locks: leave other temporaries alone
                else:
                    _remove_stale_temporaries(directory, name, os.fstat(lock).st_mtime)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        if lock >= 0:
            os.close(lock)
    _fsync_dir(directory)
