"""The conformance kit ``ember.testing``, as a plugin author runs it: one pytest command per
device, in a fresh process, from outside the repository.

It must pass on "cpu" (the reference checked against itself in every layout: strided
inputs against contiguous ones) and on "example", the NumPy template plugin of
``examples/plugin-template`` that implements only the primitives, when it is installed
(``pip install -e examples/plugin-template``).
"""
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import ember
from ember.dispatcher import OPS
from ember.testing import OP_DB, compile_cases, forward_cases, grad_cases, pytest_args


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


def _run_kit(device, cwd, *extra):
    cmd = [sys.executable, "-m", "pytest", *pytest_args(device), "-q", "-p",
           "no:cacheprovider", *extra]
    env = dict(os.environ)
    env.pop("EMBER_BACKENDS", None)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _summary(stdout):
    m = re.search(r"(\d+) cases generated for device '([^']+)'", stdout)
    assert m, f"no case summary in the kit's output:\n{stdout[-3000:]}"
    return int(m.group(1)), m.group(2)


def _opencl_usable() -> bool:
    """ember-opencl installed and offering a device (PoCL cannot compile for every host CPU:
    the runtime leaves such a device out and says why)."""
    return _installed("opencl") and ember.opencl.is_available()


_KIT_DEVICES = [d for d in ("cpu", "example", "opencl")
                if d == "cpu" or (_opencl_usable() if d == "opencl" else _installed(d))]


@pytest.fixture(scope="module")
def kit_runs(tmp_path_factory):
    """The kit on every installed device at once (each run is mostly one thread: side by
    side they take the time of the longest, not the sum), started when first needed."""
    procs = {}
    env = dict(os.environ)
    env.pop("EMBER_BACKENDS", None)
    for device in _KIT_DEVICES:
        cwd = tmp_path_factory.mktemp(f"kit-{device}")
        cmd = [sys.executable, "-m", "pytest", *pytest_args(device), "-q", "-p",
               "no:cacheprovider"]
        procs[device] = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)
    yield procs
    for p in procs.values():
        if p.poll() is None:
            p.kill()
        p.communicate()


@pytest.mark.parametrize("device", [
    "cpu",
    pytest.param("example", marks=pytest.mark.skipif(
        not _installed("example"),
        reason="the template plugin is not installed (pip install -e "
               "examples/plugin-template)")),
    pytest.param("opencl", marks=pytest.mark.skipif(
        not _opencl_usable(),
        reason="ember-opencl is not installed (pip install -e backends/opencl) or this "
               "machine offers no usable OpenCL device")),
])
def test_kit_passes(device, kit_runs):
    proc = kit_runs[device]
    try:
        stdout, _ = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, _ = proc.communicate()
    tail = stdout[-6000:]
    assert proc.returncode == 0, f"the conformance kit failed on {device!r}:\n{tail}"
    cases, dev = _summary(stdout)
    assert dev == device and cases > 5000


def test_xfail_file_is_strict(tmp_path):
    """A listed test that fails is expected; a listed test that passes is reported."""
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("# id, then the reason\n"
                     "test_forward[add-float32-contiguous]  passes, so strict xfail fails\n"
                     "test_forward[no-such-*]  matches nothing\n")
    r = _run_kit("cpu", tmp_path, f"--ember-xfail={xfail}", "-k", "add-float32-contiguous")
    assert r.returncode == 1
    assert "XPASS(strict)" in r.stdout
    assert "1 match no test: test_forward[no-such-*]" in r.stdout


def test_op_database_covers_every_schema_op():
    assert sorted(set(OPS) - set(OP_DB)) == []
    assert sorted(set(OP_DB) - set(OPS)) == []


def test_every_op_has_forward_cases_and_differentiable_ops_gradient_cases():
    assert {c.op for c in forward_cases()} == set(OPS)
    assert {c.op for c in compile_cases()} == set(OPS)      # each one inside ember.compile
    differentiable = {n for n, o in OPS.items() if o.differentiable}
    assert differentiable <= {c.op for c in grad_cases()}


def test_cases_cover_layouts_and_dtypes():
    layouts = {c.layout for c in forward_cases()}
    assert layouts == {"contiguous", "transposed", "sliced", "broadcast", "0-d", "empty",
                       "special"}
    dtypes = {c.dtype.name for c in forward_cases() if c.op == "add"}
    assert dtypes == {"bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                      "bfloat16", "float32", "float64"}


def test_plugin_guide_lists_every_primitive_with_its_kernel():
    """docs/plugins.md's table of primitives is the schema's (regenerate it when the
    schema changes)."""
    from pathlib import Path

    from ember.dispatcher import PRIMITIVES
    text = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| \w+ \| `(\([^`]*\))` \|", text, re.M))
    assert set(rows) == set(PRIMITIVES)
    for name, kernel in rows.items():
        assert kernel == OPS[name].kernel.split("#")[0].strip(), name


def test_failure_messages_name_the_public_op_and_how_to_reproduce(monkeypatch):
    """A plugin author reads the op's public name (not ``<lambda>``) and a command that
    runs that one test again."""
    from ember.testing.test_ops import _context
    case, index, sample = next(
        (c, i, smp) for c in forward_cases() for i, smp in c.samples
        if (smp.fn or c.info.fn).__name__ == "<lambda>" and c.layout == "contiguous")
    monkeypatch.setenv("PYTEST_CURRENT_TEST",
                       f"ember/testing/test_ops.py::test_forward[{case.id}] (call)")
    text = _context(case, index, sample, "mydevice")
    assert "<lambda>" not in text
    assert re.search(rf"forward {re.escape(case.op)} \(\w+, contiguous\), sample \d+: "
                     rf"{re.escape(case.op)}\(", text), text
    assert text.endswith(f'reproduce: python -m ember.testing mydevice -k '
                         f'"test_forward[{case.id}]"')


def test_failure_messages_show_the_inputs_at_the_first_mismatch():
    import ember
    from ember.testing.test_ops import _inputs_at

    class Built:
        ref_args = (ember.tensor([[1.0, 2.0], [3.0, 4.0]]), ember.tensor([10.0, 20.0]), 3,
                    ember.tensor(5.0), ember.ones(3, 3))
    msg = "out: 1 of 4 values differ (float32, exact); first at (1, 0): 5.0 != expected 6.0"
    assert _inputs_at(msg, Built, (2, 2)) == (
        "\ninputs there: arg 0[1, 0] = 3.0, arg 1[0] = 10.0, arg 3 = 5.0, "
        "arg 4: (3, 3) float32")
    assert _inputs_at("no index here", Built, (2, 2)) == ""


def test_failures_are_grouped_by_the_kernel_they_depend_on(tmp_path):
    """A broken primitive on a plugin's device: the summary names it first, with every
    op it breaks (ops composed of it included)."""
    (tmp_path / "break_exp.py").write_text(
        "from ember.dispatcher import OPS, backend_for\n"
        "backend_for('example')\n"
        "def broken(*a, **kw):\n"
        "    raise RuntimeError('exp is broken')\n"
        "OPS['exp'].kernels['example'] = broken\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "break_exp", "--pyargs",
                        "ember.testing", "--ember-device=example", "-q", "-p",
                        "no:cacheprovider", "-k", "test_forward and float32-contiguous and "
                        "(exp or sigmoid or softmax or tanh)"], capture_output=True,
                       text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 1, r.stdout[-2000:]
    lines = r.stdout.split("failures by the kernel their op runs")[1].splitlines()
    first = lines[1].strip()
    assert first.startswith("exp: ") and "raised in it for" in first, r.stdout[-2000:]
    for op in ("softmax", "sigmoid", "tanh", "log_softmax"):
        assert op in first
