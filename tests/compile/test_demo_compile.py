"""``make demo ARGS=--compile`` (issue 16's acceptance): the demo's training step under
``ember.compile`` trains to the same model as eager mode. Dropout draws the same numbers
compiled (the graph takes the generator's counters eager mode would), so one epoch
compiled in each mode gives eager mode's losses and test accuracy."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytest.importorskip("sklearn")      # (the demo's data; the [demo] extra)


def _run(tmp_path, *extra):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_digits.py"),
                        "--epochs", "2", *extra], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    losses = re.findall(r"train loss ([\d.]+), test accuracy ([\d.]+)%", out)
    assert len(losses) == 2, out
    assert "predictions identical: True" in out
    return losses, out


def test_demo_compiled_trains_as_eager(tmp_path):
    eager, _ = _run(tmp_path)
    for mode in ([], ["reduce-overhead"]):
        compiled, out = _run(tmp_path, "--compile", *mode)
        assert "training step compiled" in out
        for (le, ae), (lc, ac) in zip(eager, compiled):
            assert abs(float(lc) - float(le)) <= 1e-5 * float(le) + 1e-4
            assert ac == ae
