"""``torch.utils.benchmark``: time a statement the way PyTorch's benchmark utilities do.

``Timer(stmt, setup, globals=...)`` runs ``stmt`` under :mod:`timeit` with ember's thread
count set to ``num_threads`` (1 by default, as PyTorch) and returns a :class:`Measurement`
(per-run times, median, IQR, printed as PyTorch prints them); :class:`Compare` prints a
table of several measurements. ``ember`` (and ``torch``, when ``ember.as_torch`` maps it)
is in the statement's globals.

>>> from ember.utils.benchmark import Timer
>>> m = Timer("x.sin()", setup="x = ember.ones(100)").timeit(100)
>>> m.number_per_run, len(m.times)
(100, 1)

Callgrind collection (``collect_callgrind``) and the fuzzers are not provided.
"""
from __future__ import annotations

import enum
import math
import statistics
import sys
import textwrap
import timeit
from dataclasses import dataclass

import numpy as np

from ember.dispatcher import dtypes as _dtypes

from .. import _threads

__all__ = ["Timer", "Measurement", "TaskSpec", "Compare", "Language", "select_unit",
           "trim_sigfig", "unit_to_english"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_ENGLISH = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}
#: the narrowest confidence interval a measurement is credited with, and the most
#: significant figures it is given
_MIN_CI = 25e-9
_MAX_SIGFIGS = 4
#: an IQR above this fraction of the median is reported as a warning (and above the
#: second, as a strong one)
_IQR_WARN = 0.1
_IQR_SEVERE = 0.25


class Language(enum.Enum):
    """The statement's language (only Python is supported)."""
    PYTHON = 0
    CPP = 1


def select_unit(t: float) -> tuple:
    """The unit ``t`` seconds is best printed in, and that unit's length in seconds."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s") if t > 0 else "s"
    return unit, _UNITS[unit]


def unit_to_english(u: str) -> str:
    """``"us"`` -> ``"microsecond"``."""
    return _ENGLISH[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if x == 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (math.ceil(math.log10(abs(x))) - n)
    return float(round(x / scale) * scale)


@dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and how it is labelled."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (and sub-label), or the statement when it has no label."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{'' if self.sub_label is None else ' (' + self.sub_label + ')'}\n" \
            + textwrap.indent(self.stmt, "  ")

    def summarize(self) -> str:
        """The title and description, a line each."""
        parts = [self.title, self.description or ""]
        return "\n".join(f"{p}\n" if "\n" in p else p for p in parts if p)


class Measurement:
    """The times of ``number_per_run`` runs of a statement, once per block
    (``raw_times`` in seconds per block; ``times`` per run)."""

    def __init__(self, number_per_run: int, raw_times, task_spec: TaskSpec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata
        self._sorted = sorted(t / number_per_run for t in self.raw_times)

    def __getattr__(self, name):
        # the task's fields read through (m.stmt, m.label, m.num_threads ...)
        if name.startswith("_") or name not in TaskSpec.__dataclass_fields__:
            raise AttributeError(name)
        return getattr(self.task_spec, name)

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return statistics.fmean(self._sorted)

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self._sorted, dtype=np.float64), q))

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread of the middle half supports (a 90 %
        confidence interval of the mean of the middle half; 1 to 4)."""
        n = len(self._sorted)
        mid = self._sorted[n // 4: math.ceil(3 * n / 4)]
        std = statistics.stdev(mid) if len(mid) > 1 else 0.0
        ci = max(1.645 * std / math.sqrt(len(mid)), _MIN_CI)
        figures = int(math.floor(math.log10(self.median / ci))) if self.median > 0 else 1
        return min(max(figures, 1), _MAX_SIGFIGS)

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def _warnings(self) -> list:
        rel = self.iqr / self.median if self.median > 0 else 0.0
        if rel <= _IQR_WARN:
            return []
        why = ("This suggests significant environmental influence." if rel > _IQR_SEVERE
               else "This could indicate system fluctuation.")
        return [f"Interquartile range is {rel * 100:.1f}% of the median measurement.\n"
                f"           {why}"]

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    @staticmethod
    def merge(measurements) -> list:
        """Measurements of the same task joined into one (its blocks' times normalised to
        one run per block)."""
        groups: dict = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).append(m)
        return [Measurement(1, [t for m in ms for t in m.times], spec)
                for spec, ms in groups.items()]

    def __repr__(self) -> str:
        spec = self.task_spec
        # PyTorch's module path while ember.as_torch is installed
        where = ("torch.utils.benchmark.utils.common" if _dtypes.module_name == "torch"
                 else type(self).__module__)
        lines = [f"<{where}.{type(self).__qualname__} object at {id(self):#x}>",
                 spec.summarize()]
        if spec.setup != "pass":
            # (a setup of several lines is followed by an empty one)
            lines.append("setup:\n" + textwrap.indent(spec.setup, "  ") + "\n"
                         if "\n" in spec.setup else f"setup: {spec.setup}")
        unit, scale = select_unit(self.median)
        n = len(self._sorted)
        if n > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            if n >= 4:
                lo, hi = self._quantile(0.25) / scale, self._quantile(0.75) / scale
                lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({lo:.2f} to {hi:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        threads = spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        lines += [f"  WARNING: {w}" for w in self._warnings()]
        return "\n".join(lines)


class Timer:
    """``torch.utils.benchmark.Timer``: times ``stmt`` (after ``setup``) in ``globals``,
    with ``num_threads`` threads for ember's kernels."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer=timeit.default_timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language=Language.PYTHON):
        if language not in (Language.PYTHON, "py", "python"):
            raise NotImplementedError("ember.utils.benchmark.Timer times Python statements "
                                      "only (no C++ statements)")
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        env_globals = dict(globals or {})
        ember_mod = sys.modules["ember"]
        env_globals.setdefault("ember", ember_mod)
        if sys.modules.get("torch") is ember_mod:    # (under ember.as_torch)
            env_globals.setdefault("torch", ember_mod)
        self._globals = env_globals
        self._timer = timer
        self._task_spec = TaskSpec(stmt=textwrap.dedent(stmt).strip() or "pass",
                                   setup=textwrap.dedent(setup).strip() or "pass",
                                   global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env,
                                   num_threads=num_threads)
        self._inner = timeit.Timer(stmt=self._task_spec.stmt, setup=self._task_spec.setup,
                                   timer=timer, globals=self._globals)

    def _timeit(self, number: int) -> float:
        before = _threads.get_num_threads()
        _threads.set_num_threads(self._task_spec.num_threads)
        try:
            return max(self._inner.timeit(number), 1e-9)
        finally:
            _threads.set_num_threads(before)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a warm-up of ``number // 100`` runs)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        """Runs per block: a block must take over a thousandth of ``min_run_time`` and
        dwarf the timer's own overhead."""
        overhead = statistics.median(self._timeit(0) for _ in range(5))
        number = 1
        while True:
            t = self._timeit(number)
            if (overhead / t <= 1e-4 and t >= min_run_time / 1000) or t > min_run_time:
                return number
            number *= 10

    def _blocks(self, number: int, stop, callback) -> list:
        times, total = [], 0.0
        while True:
            t = self._timeit(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
            if stop(times, total):
                return times

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed number of runs until ``min_run_time`` seconds are spent."""
        number = self._block_size(min_run_time)
        times = self._blocks(number, lambda ts, total: total >= min_run_time, callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        """Blocks until the IQR is within ``threshold`` of the median (after at least
        ``min_run_time`` seconds and 3 blocks) or ``max_run_time`` seconds are spent."""
        number = self._block_size(min_run_time=0.05)

        def stop(ts, total):
            if total >= max_run_time:
                return True
            if total < min_run_time or len(ts) < 3:
                return False
            m = Measurement(number, ts, self._task_spec)
            return m.iqr / m.median < threshold
        return Measurement(number, self._blocks(number, stop, callback), self._task_spec)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("ember.utils.benchmark has no Callgrind collection")


class Compare:
    """A table of measurements: a table per label, a row per sub-label (or statement), a
    column per description, grouped by thread count; times in one unit."""

    def __init__(self, results):
        self._results = []
        self._trim = False
        self.extend_results(results)

    def extend_results(self, results) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 "instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour is not drawn (plain text tables)."""

    def highlight_warnings(self) -> None:
        """Warnings are not marked in the table."""

    def __str__(self) -> str:
        return "\n".join(self._render())

    def print(self) -> None:
        print(str(self))

    def _render(self) -> list:
        out = []
        labels: dict = {}
        for m in Measurement.merge(self._results):
            labels.setdefault(m.label, []).append(m)
        for label, ms in labels.items():
            unit, scale = select_unit(min(m.median for m in ms))
            columns = list(dict.fromkeys(m.description for m in ms))
            # rows by thread count, then environment (statement order kept within)
            rows = sorted(dict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in ms),
                          key=lambda r: (r[0], r[1] or ""))
            cell = {(m.num_threads, m.env, m.as_row_name, m.description): m for m in ms}
            # trimmed, a row's values keep the fewest figures any of them supports
            row_figures = {r: min(m.significant_figures for m in ms
                                  if (m.num_threads, m.env, m.as_row_name) == r)
                           for r in rows}
            # environments are named (on each group's first row) when a table has several
            envs = {m.env for m in ms}
            env_width = max(len(e or "") for e in envs) + 4 if len(envs) > 1 else 4

            def fmt(m, r):
                if m is None:
                    return ""
                v = m.median / scale
                if not self._trim:
                    return f"{v:.1f}"
                figures = row_figures[r]
                v = trim_sigfig(v, figures)
                digits = max(0, figures - math.ceil(math.log10(abs(v)))) if v else 0
                return f"{v:.{digits}f}"
            body = [[fmt(cell.get((*r, c)), r) for c in columns] for r in rows]
            names = max(len(r[2]) for r in rows)
            widths = [max([len(c or "")] + [len(b[i]) for b in body])
                      for i, c in enumerate(columns)]
            head = " " * (2 + env_width + names) + "".join(
                "  |  " + (c or "").center(w) for c, w in zip(columns, widths))
            width = len(head)
            out.append("[" + f" {label or ''} ".center(width - 2, "-") + "]")
            out.append(head)
            threads = env = None
            for r, cells in zip(rows, body):
                if r[0] != threads:
                    threads, env = r[0], None
                    tag = f"{threads} threads: "
                    out.append(tag + "-" * max(width - len(tag), 0))
                shown = f"({r[1]})" if len(envs) > 1 and r[1] != env else ""
                env = r[1]
                out.append("  " + shown.ljust(env_width) + r[2].ljust(names) + "".join(
                    "  |  " + v.rjust(w) for v, w in zip(cells, widths)))
            out += ["", f"Times are in {unit_to_english(unit)}s ({unit}).", ""]
        return out
