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
    _failures_by_primitive(tr, device)
    xf = config._ember_xfail
    if xf is not None:
        stale = [t for t, _, _ in xf.entries if t not in xf.used]
        tr.write_line(f"expected failures from {xf.path}: {len(xf.used)} matched"
                      + (f"; {len(stale)} match no test: {', '.join(stale)}" if stale else ""))


def _kernels_of(case, device):
    """``(kernels, failed_in)``: the kernels a case's first sample runs on ``device`` (in
    order, each once; traced with the profiler's kernel wrappers, the inputs built before)
    and the one running when it raised (None if it did not raise in a kernel)."""
    from ember.dispatcher import profiling as P
    from ._samples import build, rng_for
    index, sample = case.samples[0]
    try:
        b = build(sample, case.dtype, case.layout, device,
                  rng_for(case.op, index, case.dtype.name, case.layout))
    except Exception:
        return [], None
    fn = sample.fn or case.info.fn
    session = P.start()
    raised = False
    try:
        fn(*b.dev_args, **b.dev_kwargs)
    except Exception:   # (the failure being explained; the kernels before it still count)
        raised = True
    finally:
        events = P.stop(session)
    ops = sorted((e for e in events if e.kind == "op"), key=lambda e: e.start_ns)
    names = []
    for e in ops:
        if e.name not in names:
            names.append(e.name)
    # a kernel that raised is the last one started
    failed_in = ops[-1].name if raised and ops and ops[-1].end_ns is not None and \
        ops[-1].end_ns >= max(e.end_ns or 0 for e in ops) else None
    return names, failed_in


def _failures_by_primitive(tr, device) -> None:
    """Failed cases grouped by the kernels (primitives, or a backend's native kernels)
    their op runs on the device. A broken primitive shows as one line naming every op it
    breaks: the kernels the cases raised in come first, then those most ops share."""
    reports = tr.stats.get("failed", [])
    if not reports:
        return
    by_id = {it.nodeid: it for it in _KIT_TESTS}
    ops: dict = {}          # op -> [case, failures]
    for r in reports:
        item = by_id.get(r.nodeid)
        case = getattr(getattr(item, "callspec", None), "params", {}).get("case")
        if case is None:
            continue
        hit = ops.setdefault(case.op, [case, 0])
        hit[1] += 1
    if not ops:
        return
    groups: dict = {}       # kernel -> {op: failures}
    raised_in: dict = {}    # kernel -> ops that raised in it
    for op, (case, n) in ops.items():
        kernels, failed_in = _kernels_of(case, device)
        for k in kernels or ["(no kernel ran)"]:
            groups.setdefault(k, {})[op] = n
        if failed_in is not None:
            raised_in.setdefault(failed_in, set()).add(op)
    tr.write_line("failures by the kernel their op runs (raised in first, then the most "
                  "shared):")
    ranked = sorted(groups.items(), key=lambda kv: (-len(raised_in.get(kv[0], ())),
                                                    -len(kv[1]), kv[0]))
    for kernel, failing in ranked[:15]:
        names = ", ".join(sorted(failing))
        where = f"raised in it for {len(raised_in[kernel])}, " if kernel in raised_in else ""
        tr.write_line(f"  {kernel}: {len(failing)} failing ops ({where}"
                      f"{sum(failing.values())} cases): "
                      f"{names if len(names) < 150 else names[:147] + '...'}")
