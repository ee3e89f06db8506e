import glob
import multiprocessing
import os

import pytest

# keep the suite deterministic and quiet about deprecation noise from the oracle
os.environ.setdefault("OMP_NUM_THREADS", "2")

#: what ember's processes may leave in shared places if they die badly: DataLoader /
#: multiprocessing temporaries, Open MPI shared-memory segments and session dirs, and
#: ember.save's temporaries (``.NAME.<pid>.tmp``, which tests write under tmp_path)
LEAK_PATTERNS = ("/dev/shm/sm_segment.*", "/dev/shm/vader_segment.*", "/tmp/pymp-*",
                 "/tmp/ompi.*", "/tmp/prte.*", "/dev/shm/ember*", "/tmp/ember-*",
                 "/dev/shm/sem.mp-*")


def _shared_entries():
    return {p for pat in LEAK_PATTERNS for p in glob.glob(pat)}


def pytest_sessionstart(session):
    session.config._ember_shared_before = _shared_entries()


def pytest_sessionfinish(session, exitstatus):
    """The suite's own processes (workers killed on purpose, ranks that die) must leave
    nothing behind in /dev/shm or /tmp: a leak fails the run."""
    # pytest restores its captured stdin onto descriptor 0 after this hook; a test that
    # closed it (a half-built storage once did) makes that crash, so name the cause here
    if not os.path.exists("/proc/self/fd/0") and os.path.exists("/proc/self/fd"):
        print("\nDESCRIPTOR 0 CLOSED: a test (or the code it ran) closed this process's "
              "stdin descriptor")
        if session.exitstatus == 0:
            session.exitstatus = 1
    before = getattr(session.config, "_ember_shared_before", None)
    if before is None or os.environ.get("EMBER_NO_LEAK_CHECK"):
        return
    # (this process's own multiprocessing temp dir goes at interpreter exit, after us)
    own = multiprocessing.current_process()._config.get("tempdir")
    leaked = sorted(_shared_entries() - before - {own})
    if leaked:
        print(f"\nLEAK: the test run left {len(leaked)} entries in shared places: "
              f"{leaked[:20]}")
        if session.exitstatus == 0:
            session.exitstatus = 1


# ---- an OpenCL device that cannot compile on this machine -----------------------------------
#: what ember says when a test reaches for an opencl device that is not there
_NO_OPENCL = ("no OpenCL device is available",
              "invalid device ordinal (the 'opencl' backend has 0 device(s))")


def _opencl_unusable_reason():
    """Why ember-opencl, installed, offers no device here (PoCL whose LLVM does not know
    the host CPU cannot compile a kernel: ember_opencl leaves such a device out and says
    why), or None when it has a device or is not installed."""
    try:
        from ember_opencl import _runtime  # noqa: PLC0415 (optional plugin)
    except ImportError:
        return None
    if _runtime.device_count() > 0:
        return None
    return _runtime._discovery_error


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that fails only because it reached for the opencl device this machine cannot
    offer (see ``_opencl_unusable_reason``) is reported as skipped, with the reason; any
    other failure stays a failure."""
    outcome = yield
    rep = outcome.get_result()
    if not rep.failed or call.excinfo is None:
        return
    text = str(call.excinfo.value)
    if not any(m in text for m in _NO_OPENCL):
        return
    reason = _opencl_unusable_reason()
    if reason:
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: opencl: {reason}")
