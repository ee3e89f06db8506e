"""``ember.utils.benchmark`` against ``torch.utils.benchmark``: the same measurements
print, summarise and tabulate the same (times are made up, so that both see the same);
``Timer`` runs the statement with ember in its globals and one thread by default."""
import re

import pytest
import torch
import torch.utils.benchmark as TB

import ember
import ember.utils.benchmark as EB

# (per-run times, runs per block, task fields)
CASES = [
    ([2.7e-6, 2.71e-6, 2.69e-6, 2.7e-6], 1000, dict(label="sin", sub_label="100",
                                                  description="d")),
    ([2.4e-6, 2.41e-6, 2.39e-6, 2.4e-6], 1000, dict(label="sin", sub_label="100",
                                                  description="e")),
    ([5.5e-3, 5.6e-3], 10, dict(label="sin", sub_label="1000", description="d")),
    ([1.234e-4] * 5, 10, dict(label="sin", sub_label="1000", description="e", num_threads=4)),
    ([1e-3], 10, dict()),
    ([1e-3, 1.01e-3, 1.02e-3, 0.99e-3, 1e-3], 10, dict(setup="x = 1")),
    ([2.5, 2.6, 2.4, 2.5], 1, dict(env="E", setup="a = 1\nb = 2")),
    ([1e-6, 1.5e-6, 0.9e-6, 2e-6, 1e-6], 100, dict(stmt="a\nb")),
]


def _measure(B, times, n, fields):
    fields = dict(fields)
    spec = B.TaskSpec(stmt=fields.pop("stmt", "x.sin()"), setup=fields.pop("setup", "pass"),
                      **fields)
    return B.Measurement(n, [t * n for t in times], spec)


def _text(m) -> str:
    return re.sub(r"<[\w.]+Measurement object at 0x[0-9a-f]+>", "<Measurement>", repr(m))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_measurement_as_pytorch(case):
    t, e = _measure(TB, *CASES[case]), _measure(EB, *CASES[case])
    assert _text(e) == _text(t)
    assert e.significant_figures == t.significant_figures
    assert e.has_warnings == t.has_warnings
    for attr in ("median", "mean", "iqr"):
        assert getattr(e, attr) == pytest.approx(float(getattr(t, attr)), rel=1e-9)
    assert e.times == pytest.approx(t.times)
    assert e.title == t.title and e.as_row_name == t.as_row_name


def test_compare_table_as_pytorch():
    for trim in (False, True):
        tables = []
        for B in (TB, EB):
            c = B.Compare([_measure(B, *case) for case in CASES[:4]])
            if trim:
                c.trim_significant_figures()
            tables.append(str(c))
        assert tables[1] == tables[0]
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        EB.Compare([1])


@pytest.mark.parametrize("t", [3e-10, 3e-8, 3e-4, 0.02, 5.0])
def test_units_as_pytorch(t):
    assert EB.select_unit(t) == TB.select_unit(t)
    unit = EB.select_unit(t)[0]
    assert EB.unit_to_english(unit) == TB.unit_to_english(unit)
    assert EB.trim_sigfig(t * 1.2345, 3) == pytest.approx(TB.trim_sigfig(t * 1.2345, 3),
                                                         rel=1e-6)


def test_timer_runs_the_statement_with_ember_and_one_thread():
    before = ember.get_num_threads()
    seen = []
    m = EB.Timer("seen.append((ember.get_num_threads(), x.sum().item()))",
                 setup="x = ember.ones(4)", globals={"seen": seen}).timeit(50)
    assert m.number_per_run == 50 and len(m.times) == 1 and m.times[0] > 0
    assert set(seen) == {(1, 4.0)} and len(seen) == 50 + 2   # (a warm-up of 2 runs)
    assert ember.get_num_threads() == before
    m = EB.Timer("y = x * 2", globals={"x": ember.ones(8)}, num_threads=2,
                 label="mul").blocked_autorange(min_run_time=0.05)
    assert sum(m.raw_times) >= 0.05 and m.num_threads == 2 and "2 threads" in repr(m)
    m = EB.Timer("y = x * 2", globals={"x": ember.ones(8)}).adaptive_autorange(
        max_run_time=0.5)
    assert len(m.times) >= 3
    for f in (EB.Timer().repeat, EB.Timer().autorange):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            f()
    with pytest.raises(ValueError, match="only a `str` stmt"):
        EB.Timer(lambda: 1)
    assert torch.utils.benchmark.Timer is not EB.Timer
