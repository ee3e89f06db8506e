"""The pytest plugin of the conformance kit: ``--ember-device``, ``--ember-xfail`` and the
case summary.

Loaded through the ``pytest11`` entry point of the ``ember`` distribution (or with
``-p ember.testing.plugin``), so that::

    pytest --pyargs ember.testing --ember-device=mydevice [--ember-xfail=FILE]

runs the kit against ``mydevice``. It only acts on the kit's own tests: other test suites
see two extra options and nothing else.

The kit's test modules are imported by their package name (``ember.testing.test_ops``),
never by file path: in a source checkout the path would name them ``frontend.testing``
and load a second copy of ember.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

KIT_DIR = Path(__file__).resolve().parent
_KIT_TESTS: list = []         # every kit test collected
_SELECTED: list = []          # ... and those selected to run (-k, -m, ids)


def pytest_addoption(parser):
    group = parser.getgroup("ember", "ember conformance kit (ember.testing)")
    group.addoption("--ember-device", default="cpu", metavar="DEVICE",
                    help="device the conformance kit tests, e.g. 'opencl' or 'example:1' "
                         "(default: cpu)")
    group.addoption("--ember-xfail", default=None, metavar="FILE",
                    help="expected failures: one test id per line, then the reason; "
                         "'*' matches any text; a listed test that passes is an error "
                         "(strict xfail)")


def _in_kit(path) -> bool:
    try:
        return Path(path).resolve().parent == KIT_DIR
    except OSError:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    # the kit's folder and the packages above it are collected as plain directories: a
    # Package node would import their __init__.py by file path
    p = Path(path).resolve()
    if p == KIT_DIR or (p in KIT_DIR.parents and (p / "__init__.py").is_file()):
        return pytest.Dir.from_parent(parent, path=Path(path))
    return None


class KitModule(pytest.Module):
    """A kit test module, imported under its package name."""

    def _getobj(self):
        return importlib.import_module(f"ember.testing.{self.path.stem}")


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    if _in_kit(module_path):
        return KitModule.from_parent(parent, path=module_path)
    return None


@pytest.fixture(scope="session")
def ember_device(request) -> str:
    """The device under test, as given by ``--ember-device``; skips the session with a
    sentence when no backend provides it."""
    import ember
    from ember.dispatcher import backend_for, to_device
    name = request.config.getoption("--ember-device")
    dev = to_device(name)
    try:
        backend = backend_for(dev.type)
    except RuntimeError as e:
        pytest.exit(f"ember.testing: {e}", returncode=4)
    count = backend.device_count()
    if (dev.index or 0) >= count:
        pytest.exit(f"ember.testing: device {name!r} is not available (the "
                    f"{backend.name!r} backend reports {count} device(s))", returncode=4)
    ember.manual_seed(0)
    return str(dev) if dev.type != "cpu" else "cpu"


# ---- expected failures -----------------------------------------------------------------
class XfailList:
    """``--ember-xfail`` entries: ``test_id  reason``, ``#`` comments, blank lines."""

    def __init__(self, path: str):
        self.path = path
        self.entries: list[tuple[str, str, re.Pattern]] = []
        self.used: set = set()
        for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            test_id, _, reason = line.partition(" ")
            reason = reason.strip() or f"listed in {path}:{lineno}"
            pattern = re.compile(".*".join(re.escape(p) for p in test_id.split("*")))
            self.entries.append((test_id, reason, pattern))

    def match(self, item) -> str | None:
        names = (item.name, item.nodeid.split("::", 1)[-1], item.nodeid)
        for test_id, reason, pattern in self.entries:
            if any(pattern.fullmatch(n) for n in names) or item.nodeid.endswith(test_id):
                self.used.add(test_id)
                return reason
        return None


def pytest_configure(config):
    path = config.getoption("--ember-xfail", default=None)
    config._ember_xfail = XfailList(path) if path else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    kit = [it for it in items if _in_kit(it.path)]
    _KIT_TESTS[:] = kit
    xf = config._ember_xfail
    if xf is None:
        return
    for item in kit:
        reason = xf.match(item)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_collection_finish(session):
    _SELECTED[:] = [it for it in session.items if _in_kit(it.path)]


def _runs_kit(config) -> bool:
    return any(a.split("::")[0] == "ember.testing" or a.startswith("ember.testing.")
               or _in_kit(a) or Path(a).resolve() == KIT_DIR for a in config.args)


def pytest_report_header(config):
    if not _runs_kit(config):
        return None
    from ember.dispatcher import backend_for, to_device
    name = config.getoption("--ember-device")
    try:
        b = backend_for(to_device(name).type)
        where = f"backend {b.name!r} {b.version}"
    except RuntimeError:
        where = "no backend provides it"
    return f"ember.testing: device {name} ({where}); reference: cpu"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _KIT_TESTS:
        return
    counts: dict = {}
    for item in _KIT_TESTS:
        kind = item.originalname if hasattr(item, "originalname") else item.name
        kind = kind.replace("test_", "", 1)
        key = kind if kind in ("forward", "grad", "inplace", "out", "compiled") else "device"
        counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    detail = ", ".join(f"{k} {counts[k]}" for k in ("forward", "grad", "inplace", "out",
                                                     "compiled", "device") if k in counts)
    device = config.getoption("--ember-device")
    tr = terminalreporter
    tr.write_sep("-", "ember.testing")
    selected = "" if len(_SELECTED) == total else f" ({len(_SELECTED)} selected)"
    tr.write_line(f"{total} cases generated for device {device!r}{selected}: {detail}")
    xf = config._ember_xfail
    if xf is not None:
        stale = [t for t, _, _ in xf.entries if t not in xf.used]
        tr.write_line(f"expected failures from {xf.path}: {len(xf.used)} matched"
                      + (f"; {len(stale)} match no test: {', '.join(stale)}" if stale else ""))
