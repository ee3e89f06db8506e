"""The demo with ``--profile`` (issue 18's acceptance): it prints the profiler's table, the
recorded steps' self times add up to their measured wall time within 5 %, and the trace
is Chrome trace-event JSON that Perfetto reads (complete events with the fields it
needs, non-negative times, each nested inside its step)."""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytest.importorskip("sklearn")      # (the demo's data; the [demo] extra)


def test_demo_profile_writes_a_valid_trace_and_a_table_that_adds_up(tmp_path):
    trace = tmp_path / "trace.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_digits.py"),
                        "--epochs", "1", "--profile", str(trace)], capture_output=True,
                       text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Self CPU time total" in r.stdout and "ember::dense_conv" in r.stdout
    m = re.search(r"profiled (\d+) steps: measured ([\d.]+) ms, the table's self times add "
                  r"up to ([\d.]+) ms", r.stdout)
    assert m, r.stdout
    steps, measured, total = int(m[1]), float(m[2]), float(m[3])
    assert steps == 10
    assert abs(total - measured) <= 0.05 * measured

    data = json.loads(trace.read_text())
    events = data["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert e["ph"] == "X" and isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert isinstance(e.get("args", {}), dict)
    steps_ev = [e for e in events if e["name"].startswith("ProfilerStep#")]
    assert len(steps_ev) == 10
    ops = [e for e in events if e["cat"] == "cpu_op"]
    for e in ops:       # every op ran inside a recorded step
        assert any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3
                   for s in steps_ev), e
