"""Op-level profiling: timed kernel calls and user ranges, for ``ember.profiler``.

While a profiling session is active every kernel in the kernel table is replaced by a
timing wrapper (and put back when the last session stops), so the per-op hot path of
the dispatcher is untouched when nobody profiles: no flag is tested on it. Each call
becomes an :class:`Event` (the op's name, start and end in nanoseconds, the thread, the
input shapes when asked, and its parent: the innermost open range of that thread), and
``range_push``/``range_pop`` open and close named ranges (``record_function``).

Ops that run as composites appear as the primitives they are made of; a backend's
asynchronous kernels (OpenCL, CUDA) are timed as their launches (what PyTorch reports as
CPU time too). A backend with a ``device_timer`` also reports the device time of the
kernels each op launched: the event keeps the range of launches, and :func:`stop` reads
their durations (waiting for them) into ``device_ns``, adding them to the enclosing
ranges' ``device_total_ns``.
"""
from __future__ import annotations

import sys
import threading
import time

from . import core as _core
from .core import TensorBase
from .plugins import BACKENDS, backend_for, ensure_loaded
from .schema import KERNELS_GENERATION, OPS

__all__ = ["Event", "Session", "start", "stop", "range_push", "range_pop", "active",
           "hide_frames"]


class Event:
    """One timed op call or user range (with ``profile_memory``: the bytes allocated for
    it, host and device, its own and its children's; with ``with_stack``: the Python stack
    it was called from, innermost first)."""
    __slots__ = ("name", "start_ns", "end_ns", "thread", "shapes", "parent", "kind",
                 "device_type", "children_ns", "id", "launches", "device_ns",
                 "device_total_ns", "mem", "mem_children", "device_mem",
                 "device_mem_children", "stack")

    def __init__(self, name, kind, thread, parent, device_type="cpu", shapes=None):
        self.name = name
        self.kind = kind            # "op" (a kernel call) or "user" (record_function)
        self.thread = thread
        self.parent = parent
        self.device_type = device_type
        self.shapes = shapes
        self.start_ns = time.perf_counter_ns()
        self.end_ns = None
        self.children_ns = 0
        self.id = 0
        self.launches = None        # (timer, first, end): the kernels it launched
        self.device_ns = 0          # their device time (an op's own)
        self.device_total_ns = 0    # with the device time of the ops inside (ranges)
        self.mem = self.mem_children = self.device_mem = self.device_mem_children = 0
        self.stack = None

    @property
    def duration_ns(self) -> int:
        return (self.end_ns or time.perf_counter_ns()) - self.start_ns

    @property
    def self_ns(self) -> int:
        return self.duration_ns - self.children_ns


class Session:
    """The events of one profiler (several sessions may record at once)."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list = []
        self.recording = True


_SESSIONS: list = []
_LOCK = threading.Lock()
_ORIGINAL: dict = {}        # (op name, device type) -> the unwrapped kernel
_COUNTER = [0]


class _Stack(threading.local):
    def __init__(self):
        self.open: list = []


_STACK = _Stack()


class _Pending(threading.local):
    """Bytes allocated on this thread since they were last given to an event."""

    def __init__(self):
        self.host = 0
        self.device = 0


_PENDING = _Pending()
_MEMORY = [False]           # some session profiles memory: allocations are counted
_STACKS = [False]           # some session records Python stacks
_UNCOUNTED: list = []       # core's allocator lookup, while counting replaces it


def active() -> bool:
    return bool(_SESSIONS)


def _counting(alloc, device_str):
    on_host = device_str.partition(":")[0] == "cpu"

    def counted(nbytes):
        storage = alloc(nbytes)
        if on_host:
            _PENDING.host += nbytes
        else:
            _PENDING.device += nbytes
        return storage
    counted.__wrapped__ = alloc
    return counted


def _count_allocations():
    """Wrap every allocator ``core.empty`` uses (and those it looks up later) to count
    the bytes allocated."""
    lookup = _core._allocator

    def allocator(device):
        alloc = _core._ALLOCATORS[device._str] = _counting(lookup(device), device._str)
        return alloc
    for key, alloc in list(_core._ALLOCATORS.items()):
        _core._ALLOCATORS[key] = _counting(alloc, key)
    _UNCOUNTED.append(lookup)
    _core._allocator = allocator
    _PENDING.host = _PENDING.device = 0


def _stop_counting():
    _core._allocator = _UNCOUNTED.pop()
    for key, alloc in list(_core._ALLOCATORS.items()):
        _core._ALLOCATORS[key] = getattr(alloc, "__wrapped__", alloc)


def _take_pending(ev) -> None:
    p = _PENDING
    if p.host or p.device:
        ev.mem += p.host
        ev.device_mem += p.device
        p.host = p.device = 0


#: the modules whose frames recorded stacks leave out: the dispatcher, and what the
#: frontend names with :func:`hide_frames` (its plumbing: PyTorch's C++ side)
_HIDDEN_FRAMES = ["ember.dispatcher"]


def hide_frames(*module_prefixes: str) -> None:
    """Leave the frames of modules named ``module_prefixes`` (``"ember.profiler"``) out of
    the Python stacks sessions record (``with_stack``)."""
    _HIDDEN_FRAMES.extend(p for p in module_prefixes if p not in _HIDDEN_FRAMES)


def _python_stack() -> list:
    out = []
    hidden = tuple(_HIDDEN_FRAMES)
    f = sys._getframe(3)
    while f is not None:
        if not f.f_globals.get("__name__", "").startswith(hidden):
            out.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _shapes(args):
    out = []
    for a in args:
        if isinstance(a, TensorBase):
            out.append(list(a.shape))
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], TensorBase):
            out.append([list(t.shape) for t in a])
        else:
            out.append([])
    return out


def _begin(name, kind, device_type="cpu", args=None):
    stack = _STACK.open
    parent = stack[-1] if stack else None
    shapes = None
    if args is not None and any(s.record_shapes for s in _SESSIONS):
        shapes = _shapes(args)
    ev = Event(name, kind, threading.get_ident(), parent, device_type, shapes)
    _COUNTER[0] += 1
    ev.id = _COUNTER[0]
    if _MEMORY[0]:
        # the dispatcher allocates an op's outputs just before its kernel runs: they are
        # the op's; before a range, what was allocated belongs to the enclosing event
        if kind == "op":
            _take_pending(ev)
        elif parent is not None:
            _take_pending(parent)
    if _STACKS[0]:
        ev.stack = _python_stack()
    stack.append(ev)
    return ev


def _end(ev):
    ev.end_ns = time.perf_counter_ns()
    stack = _STACK.open
    if stack and stack[-1] is ev:
        stack.pop()
    elif ev in stack:
        stack.remove(ev)
    if _MEMORY[0]:
        _take_pending(ev)
    if ev.parent is not None:
        ev.parent.children_ns += ev.duration_ns
        ev.parent.mem_children += ev.mem + ev.mem_children
        ev.parent.device_mem_children += ev.device_mem + ev.device_mem_children
    for s in _SESSIONS:
        if s.recording:
            s.events.append(ev)


def range_push(name: str):
    """Open a named range on this thread (``record_function``); returns its event."""
    return _begin(name, "user")


def range_pop(ev) -> None:
    _end(ev)


def _timed(name, device_type, kernel, timer=None):
    if timer is not None:
        def timed_kernel(*args, **kwargs):
            ev = _begin(name, "op", device_type, args[1:])
            first = timer.mark()
            try:
                return kernel(*args, **kwargs)
            finally:
                ev.launches = (timer, first, timer.mark())
                _end(ev)
    else:
        def timed_kernel(*args, **kwargs):
            # (args[0] is the output the dispatcher allocated; the inputs follow)
            ev = _begin(name, "op", device_type, args[1:])
            try:
                return kernel(*args, **kwargs)
            finally:
                _end(ev)
    timed_kernel.__wrapped__ = kernel
    return timed_kernel


_TIMERS: dict = {}          # device type -> its backend's device_timer, while profiling


def _wrap_all():
    ensure_loaded()
    for t in list(BACKENDS):
        try:
            b = backend_for(t)
        except Exception:  # a broken plugin is reported elsewhere; profile the others
            continue
        if getattr(b, "device_timer", None) is not None:
            _TIMERS[t] = b.device_timer
            b.device_timer.start()
    for o in OPS.values():
        for dev, k in list(o.kernels.items()):
            if (o.name, dev) not in _ORIGINAL:
                _ORIGINAL[(o.name, dev)] = k
                o.kernels[dev] = _timed(o.name, dev, k, _TIMERS.get(dev))
    KERNELS_GENERATION[0] += 1


def _unwrap_all():
    for (name, dev), k in _ORIGINAL.items():
        o = OPS.get(name)
        if o is not None and getattr(o.kernels.get(dev), "__wrapped__", None) is k:
            o.kernels[dev] = k
    _ORIGINAL.clear()
    for timer in _TIMERS.values():
        timer.stop()
    _TIMERS.clear()
    KERNELS_GENERATION[0] += 1


def _device_times(events) -> None:
    """Read the device time of the events' kernels (waiting for them) into ``device_ns``,
    and add it to every enclosing range's ``device_total_ns``."""
    for ev in events:
        if ev.launches is None:
            continue
        timer, first, end = ev.launches
        ev.launches = None
        ns = timer.elapsed_ns(first, end)
        ev.device_ns += ns
        ev.device_total_ns += ns
        p = ev.parent
        while p is not None:
            p.device_total_ns += ns
            p = p.parent


def _update_flags() -> None:
    memory = any(s.profile_memory for s in _SESSIONS)
    if memory and not _MEMORY[0]:
        _count_allocations()
    elif _MEMORY[0] and not memory:
        _stop_counting()
    _MEMORY[0] = memory
    _STACKS[0] = any(s.with_stack for s in _SESSIONS)


def start(record_shapes: bool = False, profile_memory: bool = False,
          with_stack: bool = False) -> Session:
    """Begin a session: kernels are timed until :func:`stop` (``profile_memory``: the
    bytes each event allocated are counted; ``with_stack``: its Python stack recorded)."""
    s = Session(record_shapes, profile_memory, with_stack)
    with _LOCK:
        if not _SESSIONS:
            _wrap_all()
        _SESSIONS.append(s)
        _update_flags()
    return s


def stop(session: Session) -> list:
    """End ``session``; returns its events (kernels are restored with the last one)."""
    with _LOCK:
        _device_times(session.events)     # (before the timers stop)
        if session in _SESSIONS:
            _SESSIONS.remove(session)
        _update_flags()
        if not _SESSIONS:
            _unwrap_all()
    session.recording = False
    return session.events
