"""Hostile plugins, installed with pip as real distributions: ember reports or refuses each,
by name, and keeps working.

``ember-hostile-plugins`` (tests/fixtures/ember-test-plugins/hostile) is installed next to
``ember-test-plugins``; it holds a plugin that calls ``sys.exit()`` at import, one whose
hook raises ``SystemExit``, one claiming ember-cpu's device type ``cpu`` under a name that
sorts first, one claiming ``fakedev`` (ember-test-plugins' device type), and a device whose
``copy_to_host`` returns the wrong number of bytes. The oracles are the plugins' own
definitions (what they claim, what they return) and the values of the tensors they copy.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ember-test-plugins"

PROBE = r"""
import json, os, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import ember
    from ember.dispatcher import BACKENDS, plugin_records
    recs = {r.name: {"status": r.status, "error": r.error, "device_type": r.device_type,
                     "distribution": r.distribution}
            for r in plugin_records()}
out = {"records": recs, "warnings": [str(w.message) for w in caught],
       "cpu_backend": type(BACKENDS["cpu"]).__module__}
x = ember.arange(6.)
out["cpu_sum"] = x.sum().item()
out["fakedev"] = x.to("fakedev").mul(2).cpu().tolist()
copies = {}
for mode in ("short", "long", "list"):
    os.environ["EMBER_SHORTCOPY_MODE"] = mode
    y = ember.arange(6.).to("shortdev")
    for what, read in (("cpu", lambda: y.cpu().tolist()), ("item", lambda: y[1].item())):
        try:
            copies[f"{mode}-{what}"] = ["ok", read()]
        except Exception as e:
            copies[f"{mode}-{what}"] = [type(e).__name__, str(e)]
out["copies"] = copies
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    target = tmp_path_factory.mktemp("hostile_plugins")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(FIXTURES),
                    str(FIXTURES / "hostile")], check=True)
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr  # SystemExit in a plugin must not end the program
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_plugin_calling_sys_exit_at_import_is_reported_not_obeyed(probe):
    rec = probe["records"]["exit_at_import"]
    assert rec["status"] == "error" and rec["distribution"] == "ember-hostile-plugins"
    assert rec["error"] == ("import failed: SystemExit: ember_hostile.exit_at_import exits "
                            "on purpose (plugin isolation test)")
    rec = probe["records"]["exit_in_hook"]
    assert rec["status"] == "error"
    assert rec["error"] == ("SystemExit: ember_hostile.exit_in_hook exits on purpose (plugin "
                            "isolation test)")
    # and everything else still works in the same process
    assert probe["cpu_sum"] == 15.0
    assert probe["fakedev"] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]


def test_third_party_plugin_cannot_take_a_first_party_device_type(probe):
    recs = probe["records"]
    assert recs["cpu"]["status"] == "loaded" and recs["cpu"]["distribution"] == "ember-cpu"
    assert probe["cpu_backend"] == "ember_cpu.plugin"
    clone = recs["a_cpu_clone"]
    assert clone["status"] == "error"
    assert clone["error"] == ("RuntimeError: plugin 'a_cpu_clone' claims device type 'cpu', "
                              "already provided by plugin 'cpu'")
    # the CPU is ember-cpu's: the clone's copy_to_host (which raises) is never called
    assert probe["cpu_sum"] == 15.0
    warned = [w for w in probe["warnings"] if "'a_cpu_clone'" in w]
    assert len(warned) == 1
    assert "'ember-hostile-plugins'" in warned[0] and "'ember-cpu'" in warned[0]
    assert "ember's own backends keep their device types" in warned[0]


def test_conflict_between_third_party_plugins_names_both_distributions(probe):
    recs = probe["records"]
    assert recs["fakedev"]["status"] == "loaded"
    assert recs["fakedev"]["distribution"] == "ember-test-plugins"
    assert recs["fakedev_rival"]["status"] == "error"
    assert recs["fakedev_rival"]["error"] == ("RuntimeError: plugin 'fakedev_rival' claims "
                                              "device type 'fakedev', already provided by "
                                              "plugin 'fakedev'")
    warned = [w for w in probe["warnings"] if "'fakedev_rival'" in w]
    assert len(warned) == 1
    assert ("ember plugin 'fakedev_rival' from distribution 'ember-hostile-plugins' claims "
            "device type 'fakedev', already provided by plugin 'fakedev' from distribution "
            "'ember-test-plugins'") in warned[0]


@pytest.mark.parametrize("mode", ["short", "long", "list"])
@pytest.mark.parametrize("what", ["cpu", "item"])
def test_copy_to_host_of_the_wrong_length_is_an_error(probe, mode, what):
    exc, msg = probe["copies"][f"{mode}-{what}"]
    nbytes = 6 * 4 if what == "cpu" else 4  # the whole float32 tensor, or one element
    if mode == "list":
        assert exc == "TypeError"
        assert msg == ("the 'shortcopy' backend's copy_to_host (device type 'shortdev') "
                       "returned list, not a host buffer (an object with the buffer protocol: "
                       "bytes, memoryview, a NumPy array)")
        return
    returned = nbytes // 2 if mode == "short" else nbytes + 1
    assert exc == "RuntimeError"
    assert msg.startswith(f"the 'shortcopy' backend's copy_to_host (device type 'shortdev') "
                          f"returned {returned} bytes for a read of {nbytes} bytes at byte "
                          f"offset ")
    assert "refuses to use a copy of the wrong length" in msg
    assert "a bug in the plugin 'shortcopy'" in msg
