"""Plugins found through entry points, from a real distribution installed with pip.

The fixture distribution holds one valid plugin ("fakedev") and four broken ones: one
that fails to import, one written for another API version, one with a kernel of the
wrong signature, and one claiming the device type "fakedev" a second time. Each broken
one is reported by name with a sentence saying what is wrong; the others keep working.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ember-test-plugins"

PROBE = r"""
import json, sys
import ember
from ember.dispatcher import plugin_records
recs = {r.name: {"status": r.status, "error": r.error, "device_type": r.device_type,
                 "distribution": r.distribution, "devices": len(r.devices)}
        for r in plugin_records()}
out = {"records": recs}
if recs.get("fakedev", {}).get("status") == "loaded":
    x = ember.arange(6.).view(2, 3).to("fakedev:1")
    y = (ember.sigmoid(x) * 2).softmax(dim=1).sum(dim=1)   # composites on a plugin device
    out["device"] = str(y.device)
    out["values"] = y.cpu().tolist()
    out["cumsum"] = ember.cumsum(x, 1).cpu().tolist()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    target = tmp_path_factory.mktemp("plugins")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(FIXTURE)],
                   check=True)
    return target


def _probe(plugin_path, **env):
    e = dict(os.environ, PYTHONPATH=str(plugin_path), **env)
    r = subprocess.run([sys.executable, "-c", PROBE], env=e, capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_third_party_plugin_is_discovered_and_runs_ops(plugin_path):
    out = _probe(plugin_path)
    rec = out["records"]["fakedev"]
    assert rec["status"] == "loaded" and rec["device_type"] == "fakedev"
    assert rec["distribution"] == "ember-test-plugins" and rec["devices"] == 2
    assert out["device"] == "fakedev:1"
    # oracle: softmax of a row sums to 1
    assert out["values"] == pytest.approx([1.0, 1.0], rel=1e-6)
    assert out["cumsum"] == [[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]]


def test_broken_plugins_are_reported_and_do_not_break_ember(plugin_path):
    out = _probe(plugin_path)
    recs = out["records"]
    assert recs["cpu"]["status"] == "loaded"
    assert recs["brokenplugin"]["status"] == "error"
    assert "broken on purpose" in recs["brokenplugin"]["error"]
    assert recs["oldapi"]["status"] == "error"
    assert "plugin 'oldapi' was written for ember backend API version 99" in \
        recs["oldapi"]["error"]
    # the rest keep working: the valid third-party plugin runs ops in the same process
    assert recs["fakedev"]["status"] == "loaded" and out["device"] == "fakedev:1"


def test_bad_kernel_signature_is_reported(plugin_path):
    rec = _probe(plugin_path)["records"]["badsig"]
    assert rec["status"] == "error"
    # names the plugin, the op, the signature found and the calling convention expected
    assert rec["error"] == ("TypeError: plugin 'badsig': kernel for 'add' has signature "
                            "(out, a), expected (out, a, b)")


def test_two_plugins_claiming_one_device_type_are_reported(plugin_path):
    out = _probe(plugin_path)
    recs = out["records"]
    twin = recs["fakedev_twin"]
    assert twin["status"] == "error"
    assert twin["distribution"] == "ember-test-plugins"
    assert twin["error"] == ("RuntimeError: plugin 'fakedev_twin' claims device type "
                             "'fakedev', already provided by plugin 'fakedev'")
    # the first claim stands and works
    assert recs["fakedev"]["status"] == "loaded" and recs["fakedev"]["devices"] == 2
    assert out["values"] == pytest.approx([1.0, 1.0], rel=1e-6)


def test_ember_backends_env_restricts_loading(plugin_path):
    recs = _probe(plugin_path, EMBER_BACKENDS="cpu")["records"]
    assert recs["cpu"]["status"] == "loaded"
    for name in ("fakedev", "brokenplugin", "oldapi", "badsig", "fakedev_twin"):
        assert recs[name]["status"] == "disabled"


def test_cli_lists_plugins(plugin_path):
    e = dict(os.environ, PYTHONPATH=str(plugin_path))
    r = subprocess.run([sys.executable, "-m", "ember", "backends", "--coverage"], env=e,
                       capture_output=True, text=True, check=True)
    assert "cpu" in r.stdout and "fakedev" in r.stdout
    assert "error" in r.stdout and "broken on purpose" in r.stdout
    assert "kernel for 'add' has signature (out, a), expected (out, a, b)" in r.stdout
    assert "claims device type 'fakedev', already provided by plugin 'fakedev'" in r.stdout
    assert "native (" in r.stdout and "composite (" in r.stdout


def test_missing_device_type_is_a_clear_error():
    import ember
    with pytest.raises(RuntimeError, match="no ember backend provides device type 'nosuchdev'"):
        ember.zeros(2, device="nosuchdev")


@pytest.mark.parametrize("device_type", ["cpu", "opencl", "cuda"])
def test_first_party_backends_run_every_primitive_and_every_body_natively(device_type):
    """Every primitive and every op with a scalar body (generated) has a kernel on each
    first-party backend that is installed (cuda: built, with or without a GPU)."""
    from ember.dispatcher import BACKENDS, OPS, PRIMITIVES, ensure_loaded
    from ember.dispatcher.schema import elementwise_ops
    ensure_loaded()
    if device_type not in BACKENDS:
        pytest.skip(f"the {device_type} plugin is not installed here")
    if device_type == "cuda":
        from ember_cuda._ext import _C
        if _C is None:
            pytest.skip("ember-cuda is installed without its extension (no nvcc at build)")
    native = {n for n, o in OPS.items() if device_type in o.kernels}
    assert sorted(PRIMITIVES - native) == []
    assert sorted({o.name for o in elementwise_ops()} - native) == []
