"""``ember.profiler``: where the time goes, op by op, with ``torch.profiler``'s API.

``profile`` times every kernel call (through ``ember.dispatcher.profiling``, which wraps
the kernel table only while a profiler records) and every ``record_function`` range.
``key_averages().table()`` prints PyTorch's table — name, self and total CPU time, their
shares, the average and the number of calls — and ``export_chrome_trace`` writes a trace
``chrome://tracing`` / Perfetto read. Op names are ``ember::<op>`` for the kernel that ran
(a composite op shows as the primitives it ran); ember has no Kineto, so
``kineto_available()`` is False and device activities are timed from the host.

>>> x = ember.ones(2, 3)
>>> with ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CPU]) as prof:
...     with ember.profiler.record_function("forward"):
...         y = (x * 2).sum()
>>> sorted(e.key for e in prof.key_averages())
['ember::mul', 'ember::sum', 'forward']
>>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))  # doctest: +SKIP
"""
from __future__ import annotations

import functools
import gzip
import json
import os
import socket
import time
from collections import OrderedDict
from enum import Enum

from ember.dispatcher import profiling as P
from ember.dispatcher.plugins import BACKENDS, ensure_loaded
from ember.dispatcher.warn import warn as _warn

# the frontend's plumbing between a user's call and the kernel: not in recorded stacks
P.hide_frames("ember.profiler", "ember.autograd._record", "ember.autograd.profiler",
              "ember._autocast_entries")

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "DeviceType",
           "schedule",
           "tensorboard_trace_handler", "supported_activities", "kineto_available",
           "EventList", "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(Enum):
    """The kinds of activity a profiler can record (PyTorch's members)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class DeviceType(Enum):
    """The device kinds events are attributed to (PyTorch's ``DeviceType``)."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    MTIA = 19
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    PrivateUse1 = 20


class ProfilerAction(Enum):
    """What a ``schedule`` asks the profiler to do at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def kineto_available() -> bool:
    """False: ember's profiler is its own (no Kineto / CUPTI)."""
    return False


def supported_activities() -> set:
    """CPU, plus CUDA when ember's CUDA plugin has a device (its kernels are timed from
    the host)."""
    acts = {ProfilerActivity.CPU}
    ensure_loaded()
    b = BACKENDS.get("cuda")
    try:
        if b is not None and int(b.device_count()) > 0:
            acts.add(ProfilerActivity.CUDA)
    except Exception:
        pass
    return acts


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A step → :class:`ProfilerAction` function: after ``skip_first`` steps, cycles of
    ``wait`` idle steps, ``warmup`` steps and ``active`` recorded steps (the last of which
    saves), ``repeat`` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        _warn("Profiler won't be using warmup, this can skew profiler results",
              UserWarning)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError("step must be non-negative")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait and step < wait:
            return ProfilerAction.NONE
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)
    return schedule_fn


def _default_schedule(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False):
    """An ``on_trace_ready`` callback writing each trace into ``dir_name`` as
    ``<worker>.<time>.pt.trace.json[.gz]`` (what TensorBoard's profiler plugin reads)."""
    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler_fn


# ---- events and their table -----------------------------------------------------------------
class FunctionEvent:
    """One recorded call (times in microseconds, as PyTorch's)."""

    def __init__(self, ev, t0_ns):
        self.id = ev.id
        self.name = self.key = ev.name if ev.kind == "user" else f"ember::{ev.name}"
        self.thread = ev.thread
        self.time_range_start = (ev.start_ns - t0_ns) / 1000.0
        self.cpu_time_total = ev.duration_ns / 1000.0
        self.self_cpu_time_total = ev.self_ns / 1000.0
        self.input_shapes = ev.shapes or []
        self.device_type = ev.device_type
        self.is_user_annotation = ev.kind == "user"
        self.count = 1
        # the device time of the kernels it launched (backends with a device_timer: opencl)
        self.device_time_total = ev.device_total_ns / 1000.0
        self.self_device_time_total = ev.device_ns / 1000.0
        # bytes allocated (profile_memory): by the event itself, and with what ran inside
        self.self_cpu_memory_usage = ev.mem
        self.cpu_memory_usage = ev.mem + ev.mem_children
        self.self_device_memory_usage = ev.device_mem
        self.device_memory_usage = ev.device_mem + ev.device_mem_children
        # the Python stack it was called from, innermost first (with_stack)
        self.stack = list(ev.stack) if ev.stack else []
        self.cpu_parent = None
        self.cpu_children: list = []

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def device_time(self) -> float:
        return self.device_time_total

    cuda_time = device_time

    @property
    def cuda_time_total(self) -> float:
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time="
                f"{_fmt_us(self.cpu_time_total)} self_cpu_time={_fmt_us(self.self_cpu_time_total)}"
                f" input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one name (and, when grouped, one input shape) added up."""

    def __init__(self, key, input_shapes=None):
        self.key = self.name = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.input_shapes = input_shapes
        self.stack = None
        self.is_user_annotation = False

    def add(self, e):
        self.count += e.count
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.device_time_total += e.device_time_total
        self.self_device_time_total += e.self_device_time_total
        self.cuda_time_total, self.self_cuda_time_total = (self.device_time_total,
                                                           self.self_device_time_total)
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage
        self.device_memory_usage += e.device_memory_usage
        self.self_device_memory_usage += e.self_device_memory_usage
        self.is_user_annotation = e.is_user_annotation
        if self.input_shapes is None:
            self.input_shapes = e.input_shapes
        if self.stack is None:
            self.stack = e.stack
        return self

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time = device_time

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_fmt_us(self.self_cpu_time_total)} cpu_time={_fmt_us(self.cpu_time)} "
                f"input_shapes={self.input_shapes}>")


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(nbytes: int) -> str:
    """Bytes as PyTorch's profiler tables print them (``3.75 MB``, ``640 B``)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _pct(part: float, whole: float) -> str:
    return f"{(100.0 * part / whole) if whole else 0.0:.2f}%"


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "device_time",
              "device_time_total", "self_device_time_total", "cuda_time", "cuda_time_total",
              "self_cuda_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
              "device_memory_usage", "self_device_memory_usage", "cuda_memory_usage",
              "self_cuda_memory_usage")
_STACK_METRICS = ("self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                  "self_privateuse1_time_total")


def _trim_path(entry: str, width: int) -> str:
    return entry if len(entry) <= width else "..." + entry[len(entry) - width + 3:]


class EventList(list):
    """A list of :class:`FunctionEvent` (or averages) that prints as PyTorch's table
    (with memory columns when it comes from a ``profile_memory`` profile)."""

    def __init__(self, *args, profile_memory: bool = False, **kwargs):
        super().__init__(*args)
        self._profile_memory = profile_memory

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The table: one row per entry, sorted by ``sort_by`` (descending)."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"'FunctionEventAvg' object has no attribute {sort_by!r}")
            rows.sort(key=lambda e: getattr(e, sort_by, 0.0), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        self_total = sum(e.self_cpu_time_total for e in self)
        with_shapes = any(getattr(e, "input_shapes", None) for e in rows) and any(
            isinstance(e, FunctionEventAvg) and e.input_shapes for e in rows)
        names = [e.key for e in rows]
        name_w = min(max([len("Name")] + [len(n) for n in names]) + 4, max_name_column_width)
        device_total = sum(e.self_device_time_total for e in self)
        memory = self._profile_memory
        device_mem = memory and any(e.self_device_memory_usage > 0 for e in self)
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if device_total:        # (PyTorch's columns when a device recorded kernel times)
            cols += ["Self Device", "Self Device %", "Device total", "Device time avg"]
        if memory:
            cols += ["CPU Mem", "Self CPU Mem"]
            if device_mem:
                cols += ["Device Mem", "Self Device Mem"]
        cols.append("# of Calls")
        widths = [max(12, len(c)) for c in cols]
        if with_shapes:
            cols.append("Input Shapes")
            widths.append(min(max([12] + [len(str(e.input_shapes)) for e in rows]) + 2,
                              max_shapes_column_width))
        stacks = [e.stack for e in rows if getattr(e, "stack", None)]
        if stacks:
            cols.append("Source Location")
            widths.append(min(max(len(x) for st in stacks for x in st) + 4,
                              max_src_column_width))
        line = "-" * name_w + "  " + "  ".join("-" * w for w in widths) + "  "
        head = "Name".rjust(name_w) + "  " + "  ".join(c.rjust(w) for c, w in
                                                        zip(cols, widths)) + "  "
        out = []
        if header:
            out.append("=" * len(line))
            out.append(header)
        out += [line, head, line]
        for e in rows:
            name = e.key if len(e.key) <= name_w else e.key[:name_w - 3] + "..."
            vals = [_pct(e.self_cpu_time_total, self_total), _fmt_us(e.self_cpu_time_total),
                    _pct(e.cpu_time_total, self_total), _fmt_us(e.cpu_time_total),
                    _fmt_us(e.cpu_time)]
            if device_total:
                vals += [_fmt_us(e.self_device_time_total),
                         _pct(e.self_device_time_total, device_total),
                         _fmt_us(e.device_time_total), _fmt_us(e.device_time)]
            if memory:
                vals += [_fmt_mem(e.cpu_memory_usage), _fmt_mem(e.self_cpu_memory_usage)]
                if device_mem:
                    vals += [_fmt_mem(e.device_memory_usage),
                             _fmt_mem(e.self_device_memory_usage)]
            vals.append(str(e.count))
            if with_shapes:
                vals.append(str(e.input_shapes)[:widths[len(vals)]])
            stack = getattr(e, "stack", None) or []
            if stacks:
                vals.append(_trim_path(stack[0], widths[-1]) if stack else "")
            out.append(name.rjust(name_w) + "  " + "  ".join(v.rjust(w) for v, w in
                                                             zip(vals, widths)) + "  ")
            if stacks:
                # the rest of the stack on lines of its own, then an empty line
                blank = " " * name_w + "  " + "  ".join(" " * w for w in widths[:-1]) + "  "
                for entry in stack[1:]:
                    out.append(blank + _trim_path(entry, widths[-1]).rjust(widths[-1]) + "  ")
                out.append(blank + " " * widths[-1] + "  ")
        out.append(line)
        out.append(f"Self CPU time total: {_fmt_us(self_total)}")
        if device_total:
            out.append(f"Self Device time total: {_fmt_us(device_total)}")
        return "\n".join(out) + "\n"

    def key_averages(self, group_by_input_shapes: bool = False,
                     group_by_stack_n: int = 0) -> "EventList":
        """One :class:`FunctionEventAvg` per name (and input shapes; and the innermost
        ``group_by_stack_n`` frames of the call's stack, which the table then shows)."""
        groups: dict = OrderedDict()
        for e in self:
            key = (e.key, str(e.input_shapes) if group_by_input_shapes else None,
                   tuple(e.stack[:group_by_stack_n]) if group_by_stack_n > 0 else None)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shapes else None)
            avg.add(e)
        for avg in groups.values():
            if not group_by_input_shapes:
                avg.input_shapes = None
            avg.stack = list(avg.stack or [])[:group_by_stack_n]
        return EventList(groups.values(), profile_memory=self._profile_memory)

    def export_stacks(self, path: str, metric: str) -> None:
        """Write each event's stack (outermost frame first, ``;``-separated) and its
        ``metric`` in microseconds, one line per event: the input of flame-graph tools."""
        if metric not in _STACK_METRICS:
            raise ValueError("metric should be one of: " + str(list(_STACK_METRICS)))
        table = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device").replace(
            "privateuse1", "device")
        with open(path, "w") as f:
            for e in self:
                value = int(getattr(e, attr, 0))
                if e.stack and value > 0:
                    frames = ";".join(x.translate(table) for x in reversed(e.stack))
                    f.write(f"{frames} {value}\n")

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        total.input_shapes = None
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def export_chrome_trace(self, path: str) -> None:
        _write_trace(self, path)


def _write_trace(events, path: str) -> None:
    trace = {"traceEvents": [
        {"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
         "name": e.name, "pid": os.getpid(), "tid": e.thread, "ts": e.time_range_start,
         "dur": e.cpu_time_total, "args": {"Input Dims": e.input_shapes} if e.input_shapes
         else {}} for e in events], "displayTimeUnit": "ms"}
    data = json.dumps(trace).encode()
    if path.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


# ---- the profiler ---------------------------------------------------------------------------
class profile:
    """Context manager recording op timings (see the module docstring).

    With a ``schedule``, call ``prof.step()`` once per training step: recording follows
    the schedule and ``on_trace_ready(prof)`` runs at each RECORD_AND_SAVE step."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False, use_cuda=None,
                 custom_trace_id_callback=None):
        acts = set(activities) if activities else supported_activities()
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise ValueError(f"activities must be ProfilerActivity values, got {a!r}")
        self.activities = acts
        self.schedule = schedule or _default_schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._session = None
        self._t0 = None
        self._events: list = []
        self._step_ranges: list = []
        self._step_ev = None        # the open "ProfilerStep#N" range (after a step() call)
        self._cycles = 0            # recording sessions started

    # recording on and off
    def _start_session(self):
        if self._session is None:
            if self._cycles and not self.acc_events and not _CYCLE_WARNED:
                # a later cycle of a schedule starts (once per process, as PyTorch)
                _CYCLE_WARNED.append(True)
                _warn("Warning: Profiler clears events at the end of each cycle. Only "
                      "events from the current cycle will be reported. To keep events "
                      "across cycles, set acc_events=True.")
            self._cycles += 1
            self._session = P.start(self.record_shapes, self.profile_memory,
                                    self.with_stack)
            if self._t0 is None:
                self._t0 = time.perf_counter_ns()

    def _stop_session(self):
        if self._session is not None:
            self._events = ([] if not self.acc_events else self._events) + P.stop(
                self._session)
            self._session = None

    def start(self):
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._events = []
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                   ProfilerAction.WARMUP):
            self._start_session()
        return self

    def _close_step(self):
        if self._step_ev is not None:
            P.range_pop(self._step_ev)
            self._step_ev = None

    def stop(self):
        self._close_step()
        if self._session is not None:
            if self.current_action is ProfilerAction.WARMUP:
                P.stop(self._session)
                self._session = None
            else:
                self._stop_session()
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """Advance the schedule by one step. Each recorded step is a range named
        ``ProfilerStep#N`` (as PyTorch's): its self time is what ran outside ops and
        ``record_function`` ranges, so the table's self times add up to the steps' time."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev is ProfilerAction.RECORD_AND_SAVE:
            self._stop_session()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        elif prev is ProfilerAction.WARMUP and self.current_action not in recording + (
                ProfilerAction.WARMUP,):
            if self._session is not None:
                P.stop(self._session)
                self._session = None
        if prev is ProfilerAction.WARMUP and self.current_action in recording:
            # warm-up events are not part of the trace
            if self._session is not None:
                self._session.events.clear()
        if self.current_action in recording + (ProfilerAction.WARMUP,):
            self._start_session()
            self._step_ev = P.range_push(f"ProfilerStep#{self.step_num}")

    # results
    def events(self) -> EventList:
        """Every recorded call, in the order they finished."""
        t0 = self._t0 or 0
        evs = self._events if self._session is None else self._session.events
        return EventList((FunctionEvent(e, t0) for e in evs),
                         profile_memory=self.profile_memory)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One entry per op name (and input shapes, if asked)."""
        if group_by_input_shape and not self.record_shapes:
            raise AssertionError("Set record_shapes=True to group events by input shape")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the trace as Chrome's trace-event JSON (``.gz``: compressed)."""
        _write_trace(self.events(), path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the recorded stacks (``with_stack=True``) with ``metric`` per call, one
        line each, for flame-graph tools (Brendan Gregg's ``flamegraph.pl``)."""
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    @property
    def profiler(self):
        return self


_CYCLE_WARNED: list = []     # (the later-cycle warning was given)


class record_function:
    """Context manager (and decorator) labelling a range of code in the profile.

    Example:
        >>> x = ember.ones(2, 2)
        >>> with ember.profiler.profile() as prof:
        ...     with ember.profiler.record_function("attention"):
        ...         y = x @ x
        >>> "attention" in [e.key for e in prof.key_averages()]
        True
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._ev = None

    def __enter__(self):
        if P.active():
            self._ev = P.range_push(self.name)
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            P.range_pop(self._ev)
            self._ev = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper
