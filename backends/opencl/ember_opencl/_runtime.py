"""Devices, contexts, queues, compiled programs and kernel errors.

Every OpenCL device on every platform becomes ``opencl:<i>`` in discovery order. A
device gets one context and one in-order command queue (its default stream) the first
time it is used, a caching allocator (``_memory.py``) and one compiled program per
kernel family, built from ``kernels/<family>.cl`` for the dtypes the device supports.

Kernels only enqueue work. The host waits in exactly two places, both counted in
``Device.host_waits``: reading memory back (``copy_to_host``) and ``synchronize``.

Errors found inside kernels (an index out of bounds, an integer division by zero) cannot
be raised by the kernel. Each launch that can report one gets its own *error record* (a
small slot of device memory, :meth:`Device.kernel_errors`), and the host remembers which
op wrote to it, with what arguments (shapes, dtypes), from which thread. At the next wait
on the device's queue, the records of the launches that have completed are read: an
error is raised in the thread that launched the failing op — at once if that thread is
the one waiting, else at that thread's own next wait (``synchronize``, ``.item()``,
``.cpu()``...) — so a thread never receives another thread's error, and the message names
the op that failed. (PyTorch's CUDA reports a device-side assert at the next
synchronisation, in whichever thread; this is the precise form of that.) With
``EMBER_OPENCL_LAUNCH_BLOCKING=1`` every op waits and raises at once (PyTorch's
``CUDA_LAUNCH_BLOCKING``).
"""
from __future__ import annotations

import os
import threading

import numpy as np
from ember.dispatcher.allocator import OutOfMemoryError
from ember.dispatcher.codegen import opencl as gen

from ._source import CTYPES, render

__all__ = ["Device", "devices", "device", "device_count", "LAUNCH_BLOCKING", "enqueue",
           "copy_buffer", "scratch", "record_launches", "not_repeatable", "KernelErrors",
           "KernelIndexError"]

try:  # the plugin must import (and report 0 devices) even where pyopencl cannot load
    import pyopencl as cl
    _IMPORT_ERROR = None
except Exception as e:  # pragma: no cover - depends on the machine
    cl = None
    _IMPORT_ERROR = f"{type(e).__name__}: {e}"

#: every op waits for completion and raises kernel errors at once (debugging, tests)
LAUNCH_BLOCKING = os.environ.get("EMBER_OPENCL_LAUNCH_BLOCKING", "") not in ("", "0")

_lock = threading.RLock()

#: family -> spec(device): the keyword arguments of ``_source.render`` for that family's
#: program on ``device`` (which dtypes, dtype pairs or element sizes to instantiate, and
#: constants). Filled by the ops modules.
SPECS: dict = {}
_devices: list | None = None
_discovery_error: str | None = None


class KernelIndexError(IndexError, RuntimeError):
    """An index out of range, found by a kernel. PyTorch raises a ``RuntimeError`` for it
    in ``gather``/``scatter`` and an ``IndexError`` in ``x[idx]``; a kernel serves both
    and cannot tell them apart, so the error is both."""


# Kernel error codes (kernels/common.cl) -> exception type and message.
_ERRORS = {
    1: (KernelIndexError, "{op}(): index {bad} is out of bounds for dimension {arg} with "
                          "size {size}"),
    2: (RuntimeError, "{op}(): ZeroDivisionError: integer division by zero"),
    3: (RuntimeError, "{op}(): Integers to negative integer powers are not allowed."),
}
#: op ids kernels report errors with (the ``op`` argument of report_error's callers): the
#: indexing kernels, then the elementwise ops whose definitions have checks
ERROR_OPS = ["gather", "scatter"] + gen.error_ops()


def _discover() -> list:
    global _devices, _discovery_error
    if _devices is not None:
        return _devices
    with _lock:
        if _devices is not None:
            return _devices
        found = []
        if cl is None:
            _discovery_error = f"pyopencl could not be imported ({_IMPORT_ERROR})"
        else:
            try:
                for platform in cl.get_platforms():
                    try:
                        found += [(platform, d) for d in platform.get_devices()
                                  if _can_compile(d)]
                    except cl.Error:  # a platform without devices
                        continue
            except Exception as e:  # no ICD loader / no platform: 0 devices, not an error
                _discovery_error = f"{type(e).__name__}: {e}"
        _devices = [Device(i, p, d) for i, (p, d) in enumerate(found)]
        return _devices


_PROBE = "__kernel void ember_probe(__global float* x) { x[get_global_id(0)] = 1.0f; }"


def _can_compile(cl_device) -> bool:
    """False for a device that cannot build a kernel: PoCL whose LLVM does not know the
    host CPU reports the target ``generic`` (its version string ends so) and then fails
    every build ("unknown target CPU 'generic'"). Such a device is left out, with the
    reason kept for the error that names it, rather than offered and failing every op.
    Other devices are not probed."""
    global _discovery_error
    version = cl_device.version or ""
    if "PoCL" not in version or not version.rstrip().endswith("-generic"):
        return True
    try:
        ctx = cl.Context([cl_device])
        cl.Program(ctx, _PROBE).build()
        return True
    except Exception as e:  # (cl.RuntimeError, cl.LogicError, ...)
        _discovery_error = (f"the OpenCL device {cl_device.name!r} cannot compile kernels: its "
                            f"PoCL's LLVM does not recognise this host CPU (target 'generic'; "
                            f"{str(e).strip().splitlines()[0][:120]})")
        return False


def devices() -> list:
    return _discover()


def device_count() -> int:
    """How many OpenCL devices ember can use (0 when there is no OpenCL platform)."""
    try:
        return len(_discover())
    except Exception:  # never raise here (the plugin contract)
        return 0


def device(index: int | None) -> "Device":
    """The :class:`Device` for ``opencl:<index>``, or a clear error."""
    devs = _devices if _devices is not None else _discover()
    i = 0 if index is None else index
    if 0 <= i < len(devs):
        return devs[i]
    if not devs:
        why = f" ({_discovery_error})" if _discovery_error else ""
        raise RuntimeError(f"opencl:{i}: no OpenCL device is available{why}. Install an "
                           "OpenCL driver (ICD), e.g. `pip install pocl-binary-distribution` "
                           "for a CPU device.")
    raise RuntimeError(f"opencl:{i}: invalid device ordinal (there are {len(devs)} OpenCL "
                       f"device(s): opencl:0..opencl:{len(devs) - 1})")


#: LLVM CPU models with AVX-512 (PoCL names the one it compiles for in its version string)
_AVX512_CPUS = ("skylake-avx512", "skx", "cascadelake", "cooperlake", "cannonlake",
                "icelake", "tigerlake", "rocketlake", "sapphirerapids", "graniterapids",
                "emeraldrapids", "diamondrapids", "knl", "knm", "znver4", "znver5",
                "x86-64-v4")


def _float_lanes(cl_device) -> int:
    """The float lanes of the vectors the device's compiler targets. PoCL reports the
    host's width (16 with AVX-512) even when the LLVM it ships compiles for an older CPU
    model (a Zen 4 seen as ``znver3``); 16-float vectors there abort LLVM ("Do not know
    how to scalarize") or come back from PoCL's kernel cache without kernels. So on PoCL
    the width is 16 only for a CPU model known to have AVX-512, and at most 8 otherwise."""
    lanes = max(1, int(cl_device.native_vector_width_float or 1))
    version = cl_device.version or ""
    if lanes > 8 and "PoCL" in version and bool(cl_device.type & cl.device_type.CPU):
        target = version.split("HSTR:")[-1].strip()   # pthread-<triple>-<cpu model>
        if not any("-" + cpu in target for cpu in _AVX512_CPUS):
            lanes = 8
    return lanes


class Device:
    """One OpenCL device: context, in-order queue, allocator, programs, error buffer."""

    def __init__(self, index: int, platform, cl_device):
        self.index = index
        self.platform = platform
        self.cl_device = cl_device
        self.name = cl_device.name.strip()
        ext = cl_device.extensions.split()
        self.fp64 = "cl_khr_fp64" in ext
        self.dtypes = frozenset(n for n in CTYPES if n != "float64" or self.fp64)
        self.max_work_group = cl_device.max_work_group_size
        # CPU devices (PoCL) run a work-group as a loop: there serial per-output loops
        # beat local-memory trees, which GPUs want
        self.is_cpu = bool(cl_device.type & cl.device_type.CPU)
        #: float lanes of the device's vector registers (16 on AVX-512, 8 on AVX2)
        self.float_lanes = _float_lanes(cl_device)
        self.host_waits = 0          # blocking waits of the host (tests count them)
        self._ctx = None
        self._programs: dict = {}
        self._kernels: dict = {}
        self._pending: list = []     # (event, host buffer) of async uploads in flight
        self._init_lock = threading.Lock()
        # error records (see the module docstring and KernelErrors)
        self._rec_lock = threading.Lock()
        self._rec_chunks: list = []  # (parent cl.Buffer, [one sub-buffer per record])
        self._rec_free: list = []    # record ids ready for a launch (all zero on the device)
        self._rec_launched: dict = {}  # record id -> its KernelErrors, once enqueued
        self._rec_stride = 0         # bytes between records (the sub-buffer alignment)
        #: thread -> errors of its launches, found while another thread waited
        self._thread_errors: dict = {}

    def __repr__(self):
        return f"<opencl:{self.index} {self.name!r}>"

    # -- lazy context ---------------------------------------------------------------------
    def __getattr__(self, name):
        # queue, err, allocator: created with the context on first use
        if name in ("queue", "err", "allocator", "_err_host") and self._ctx is None:
            self._init()
            return getattr(self, name)
        raise AttributeError(name)

    def _init(self):
        with self._init_lock:
            if self._ctx is not None:
                return
            from ._memory import make_allocator
            ctx = cl.Context([self.cl_device])
            # (timestamps on: ember.profiler's device time; no measurable cost on PoCL)
            self.queue = cl.CommandQueue(
                ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
            # a record no kernel writes to: the error argument of launches that cannot
            # fail (elementwise ops without checks) and a placeholder buffer argument
            self.err = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 32)
            self._err_host = np.zeros(8, np.int32)
            cl.enqueue_fill_buffer(self.queue, self.err, np.int32(0), 0, 32)
            align = int(self.cl_device.mem_base_addr_align) // 8
            self._rec_stride = max(_RECORD_BYTES, align)
            self.allocator = make_allocator(self, ctx)
            self._ctx = ctx

    @property
    def ctx(self):
        if self._ctx is None:
            self._init()
        return self._ctx

    @property
    def started(self) -> bool:
        return self._ctx is not None

    def allocator_(self):
        """The device's caching allocator (starting the device if needed)."""
        if self._ctx is None:
            self._init()
        return self.allocator

    # -- dtypes ---------------------------------------------------------------------------
    def check_dtype(self, dtype, op: str) -> None:
        if dtype.name not in self.dtypes:
            if dtype.name not in CTYPES:    # (uint16, uint32, uint64: copies only)
                raise TypeError(f"{op}(): not implemented for dtype {dtype.name} on opencl "
                                "(its tensors only copy there; compute on the cpu)")
            raise TypeError(f"{op}(): dtype {dtype.name} is not supported on opencl:"
                            f"{self.index} ({self.name}): the device does not report "
                            f"cl_khr_fp64")

    # -- programs -------------------------------------------------------------------------
    def kernel(self, family: str, name: str):
        """The compiled kernel ``name`` of ``family`` (the family's program is built on
        first use, from ``SPECS[family]``)."""
        k = self._kernels.get((family, name))
        if k is None:
            with _lock:
                prg = self._programs.get(family)
                if prg is None:
                    prg = self._programs[family] = self._build(family)
                k = self._kernels[(family, name)] = cl.Kernel(prg, name)
        return k

    def _build(self, family: str):
        src = render(family, fp64=self.fp64, **SPECS[family](self))
        try:
            # (EMBER_HOST_CPU: common.cl's inline math for CPU devices)
            opts = ["-cl-std=CL1.2"] + (["-DEMBER_HOST_CPU=1"] if self.is_cpu else [])
            prg = cl.Program(self.ctx, src).build(options=opts)
        except cl.Error as e:
            raise RuntimeError(f"opencl:{self.index} ({self.name}): the {family!r} "
                               f"kernels failed to compile:\n{e}") from None
        if prg.num_kernels == 0 and "__kernel" in src:
            raise RuntimeError(f"opencl:{self.index} ({self.name}): the {family!r} program "
                               f"built without its kernels (a broken driver kernel cache? for "
                               f"PoCL, try POCL_KERNEL_CACHE=0 or remove ~/.cache/pocl)")
        return prg

    # -- waiting --------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait for every queued op, then raise the first error of this thread's kernels."""
        if self._ctx is None:
            return
        self.host_waits += 1
        not_repeatable("a wait on the queue")
        self.queue.finish()
        self._pending.clear()
        self.check_errors()

    # -- kernel errors --------------------------------------------------------------------
    def kernel_errors(self, op: str, /, **tensors) -> "KernelErrors":
        """An error record for one op's launches, used as a context manager around them::

            with dev.kernel_errors("gather", out=out, x=x, index=index) as err:
                enqueue(dev, kernel, gsize, lsize, ..., err)

        ``err`` is the ``__global int*`` the kernels report into (``report_error``); the
        tensors name the op's arguments in the error message."""
        return KernelErrors(self, op, tensors)

    def _take_record(self) -> int:
        with self._rec_lock:
            if not self._rec_free:
                self._grow_records()
            return self._rec_free.pop()

    def _grow_records(self) -> None:
        """Another chunk of zeroed records (called with ``_rec_lock`` held)."""
        if len(self._rec_launched) >= _MAX_OUTSTANDING:
            # that many launches that may fail and no wait since: wait once, so that the
            # records can be read and reused (the errors found wait for their threads)
            self.host_waits += 1
            self.queue.finish()
            self._collect_locked()
            if self._rec_free:
                return
        ctx = self.ctx      # (starts the device: the stride is known from then on)
        stride = self._rec_stride
        parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, stride * _CHUNK)
        cl.enqueue_fill_buffer(self.queue, parent, np.int32(0), 0, stride * _CHUNK)
        subs = [parent.get_sub_region(i * stride, _RECORD_BYTES) for i in range(_CHUNK)]
        base = len(self._rec_chunks) * _CHUNK
        self._rec_chunks.append((parent, subs))
        self._rec_free.extend(range(base + _CHUNK - 1, base - 1, -1))

    def _record_buffer(self, rid: int):
        return self._rec_chunks[rid // _CHUNK][1][rid % _CHUNK]

    def _collect_locked(self) -> None:
        """Read the records of every launch enqueued so far, park the errors they hold
        with the threads that launched them, and free the records (``_rec_lock`` held).

        The blocking read comes after those launches in the in-order queue, so they have
        completed when it returns; records taken meanwhile are not looked at."""
        done = self._rec_launched
        if not done:
            return
        self._rec_launched = {}
        stride = self._rec_stride
        per_chunk: dict = {}
        for rid in done:
            per_chunk.setdefault(rid // _CHUNK, []).append(rid % _CHUNK)
        for c, slots in per_chunk.items():
            lo, hi = min(slots), max(slots)
            host = np.empty(((hi - lo) * stride + _RECORD_BYTES) // 4, np.int32)
            cl.enqueue_copy(self.queue, host, self._rec_chunks[c][0],
                            src_offset=lo * stride, is_blocking=True)
            for i in slots:
                rec = host[(i - lo) * stride // 4:][:_RECORD_BYTES // 4]
                rid = c * _CHUNK + i
                if rec[0]:
                    launch = done[rid]
                    self._thread_errors.setdefault(launch.thread, []).append(
                        kernel_error(self, rec.copy(), launch))
                    cl.enqueue_fill_buffer(self.queue, self._rec_chunks[c][0], np.int32(0),
                                           i * stride, _RECORD_BYTES)
                self._rec_free.append(rid)

    def check_errors(self) -> None:
        """After a wait (the queue drained): raise the first error of this thread's kernels
        found so far — or of a thread that has ended, which cannot receive it any more."""
        with self._rec_lock:    # (also waits for a collection another thread is doing)
            if self._rec_launched:
                self._collect_locked()
            if not self._thread_errors:
                return      # the common case: nothing launched could fail, no read at all
            me = threading.current_thread()
            errors = self._thread_errors.pop(me, [])
            for t in [t for t in self._thread_errors if not t.is_alive()]:
                errors += self._thread_errors.pop(t)
        if errors:
            first = errors[0]
            if len(errors) > 1:
                first.args = (f"{first.args[0]} ({len(errors) - 1} more kernel error(s) of "
                              f"this thread were found at the same time and are not shown)",)
            raise first

    def keep_alive(self, event, host) -> None:
        """Hold ``host`` until the upload ``event`` completes (pyopencl would otherwise
        wait when the event is collected)."""
        not_repeatable("an upload from the host")
        done = cl.command_execution_status.COMPLETE
        pend = self._pending
        while pend and pend[0][0].command_execution_status == done:
            pend.pop(0)
        pend.append((event, host))


#: bytes of one error record: int code, int arg, long bad, long size (kernels/common.cl)
_RECORD_BYTES = 32
#: records made at a time (one device buffer, one sub-buffer each)
_CHUNK = 64
#: launches that may fail, between two waits, before the host waits to reuse records
_MAX_OUTSTANDING = 1 << 14


class KernelErrors:
    """The error record of one op's launches (from :meth:`Device.kernel_errors`): which op,
    which arguments, which thread; entering gives the record's buffer, leaving marks it
    enqueued (read at the next wait on the queue)."""
    __slots__ = ("dev", "rid", "op", "args", "thread")

    def __init__(self, dev: Device, op: str, tensors: dict):
        self.dev = dev
        self.op = op
        self.args = tuple((name, tuple(t.shape), t.dtype.name) for name, t in tensors.items())
        self.thread = threading.current_thread()
        self.rid = None

    def __enter__(self):
        not_repeatable("an error record")
        self.rid = self.dev._take_record()
        return self.dev._record_buffer(self.rid)

    def __exit__(self, *exc):
        dev = self.dev
        with dev._rec_lock:
            dev._rec_launched[self.rid] = self
        return False

    def describe(self) -> str:
        args = ", ".join(f"{n}: {dt} {list(shape)}" for n, shape, dt in self.args)
        return f"{self.op}({args}) on opencl:{self.dev.index}"


def kernel_error(dev: Device, rec, launch: KernelErrors | None = None) -> Exception:
    """The exception for an error record ``rec`` (int32 array) written by ``launch``."""
    code, arg = int(rec[0]), int(rec[1])
    bad, size = int(rec[2:4].view(np.int64)[0]), int(rec[4:6].view(np.int64)[0])
    exc, msg = _ERRORS.get(code, (RuntimeError, "a kernel reported error {code}"))
    op = ERROR_OPS[arg >> 8] if (arg >> 8) < len(ERROR_OPS) else "kernel"
    text = msg.format(op=op, bad=bad, arg=arg & 0xff, size=size, code=code)
    if launch is not None:
        who = launch.thread
        text += (f" [the op: {launch.describe()}, launched by thread {who.name!r}"
                 f"{'' if who.is_alive() else ', which has ended'}]")
    if not LAUNCH_BLOCKING:
        text += (" (found by the kernel and reported at the next wait on the device's "
                 "queue; set EMBER_OPENCL_LAUNCH_BLOCKING=1 to raise it at the op that "
                 "failed)")
    return exc(text)


def _out_of_memory(dev: Device, what: str, e: Exception) -> Exception:
    """An ``ember.OutOfMemoryError`` for a driver that ran out of memory while ``what``."""
    err = OutOfMemoryError(f"Out of memory on opencl:{dev.index}: the OpenCL driver ran out "
                           f"of memory {what} ({e}). Free tensors you no longer need.")
    err.nbytes = err.alloc_size = 0
    err.device = f"opencl:{dev.index}"
    return err


_OOM_STATUS = frozenset() if cl is None else frozenset(
    getattr(cl.status_code, n) for n in ("MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_RESOURCES",
                                         "OUT_OF_HOST_MEMORY") if hasattr(cl.status_code, n))


#: the events of the kernels launched while ember.profiler runs (None: not profiling)
_TIMED: list | None = None


class KernelTimer:
    """``ember.profiler``'s device time (the backend's ``device_timer``): while a session
    runs, each kernel launch keeps its event, whose start and end timestamps the queue
    records (``PROFILING_ENABLE``). Launches are counted for the whole process: with
    several threads launching at once, an op's count may include another thread's
    kernels."""

    def start(self) -> None:
        global _TIMED
        if _TIMED is None:
            _TIMED = []

    def mark(self) -> int:
        """How many kernels have been launched since :meth:`start`."""
        return len(_TIMED) if _TIMED is not None else 0

    def elapsed_ns(self, begin: int, end: int) -> int:
        """The device time of launches ``begin`` to ``end`` (waits for them to finish)."""
        events = (_TIMED or [])[begin:end]
        if not events:
            return 0
        cl.wait_for_events(events)
        return sum(e.profile.end - e.profile.start for e in events)

    def stop(self) -> None:
        global _TIMED
        _TIMED = None


#: kernels whose argument types are declared (see _typed)
_TYPED: set = set()


def _typed(kernel, args) -> None:
    """Declare ``kernel``'s argument types from its first call's arguments (numpy scalars:
    their dtype; geometry structs, numpy arrays: a record of that many bytes; buffers:
    None), so that pyopencl packs them with its generated setter. Untyped, pyopencl's
    generic path costs about 6 us per scalar or struct argument: 45 us of host time for
    an elementwise launch, several times the kernel's own time on PoCL."""
    dtypes = []
    for a in args:
        if isinstance(a, np.generic):
            dtypes.append(a.dtype)
        elif isinstance(a, np.ndarray):
            dtypes.append(np.dtype([("v", a.dtype, a.shape)]))
        else:
            dtypes.append(None)
    kernel.set_scalar_arg_dtypes(dtypes)
    _TYPED.add(kernel)


def enqueue(dev: Device, kernel, gsize, lsize, *args) -> None:
    """Set ``args`` on ``kernel`` and enqueue it; returns at once. A driver that allocates
    memory lazily and runs out here raises ``ember.OutOfMemoryError``."""
    if kernel not in _TYPED:
        _typed(kernel, args)
    kernel.set_args(*args)
    _launch(dev, kernel, gsize, lsize)
    rec = _REC.recording
    if rec is not None:
        rec.items.append((dev, kernel, gsize, lsize,
                          tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)))


def _launch(dev, kernel, gsize, lsize) -> None:
    try:
        ev = cl.enqueue_nd_range_kernel(dev.queue, kernel, gsize, lsize)
        if _TIMED is not None:
            _TIMED.append(ev)
    except cl.Error as e:
        if isinstance(e, cl.MemoryError) or getattr(e, "code", None) in _OOM_STATUS:
            raise _out_of_memory(dev, f"launching {kernel.function_name}", e) from None
        raise


def copy_buffer(dev: Device, dst, src, nbytes: int, dst_offset: int, src_offset: int):
    """Enqueue a device-to-device copy of ``nbytes`` (byte offsets into the buffers)."""
    _copy(dev, dst, src, (nbytes, dst_offset, src_offset))
    rec = _REC.recording
    if rec is not None:
        rec.items.append((dev, None, dst, src, (nbytes, dst_offset, src_offset)))


def _copy(dev, dst, src, sizes) -> None:
    nbytes, dst_offset, src_offset = sizes
    cl.enqueue_copy(dev.queue, dst, src, byte_count=nbytes, src_offset=src_offset,
                    dst_offset=dst_offset)


def scratch(dev: Device, nbytes: int):
    """Temporary device memory for one op's launches: a storage of the caching allocator,
    which the op drops when it returns (the in-order queue runs its kernels before any
    later use of the block). While launches are recorded, the recording keeps it."""
    st = dev.allocator_().storage(nbytes)
    rec = _REC.recording
    if rec is not None:
        rec.keep.append(st)
    return st


# ---- recorded launches (ember.compile's replay plans) --------------------------------------

class _Recording:
    __slots__ = ("items", "keep", "why")

    def __init__(self):
        self.items: list = []   # (dev, kernel, gsize, lsize, args) | (dev, None, dst, src, n)
        self.keep: list = []    # scratch storages the launches use
        self.why = None         # what made the launches unrepeatable, if anything


class _RecordingState(threading.local):
    recording = None


_REC = _RecordingState()


def not_repeatable(why: str) -> None:
    """Mark the launches being recorded (if any) as unrepeatable: ``why`` happened (a wait,
    a host transfer, an error record...)."""
    rec = _REC.recording
    if rec is not None and rec.why is None:
        rec.why = why


def record_launches(fn):
    """Run ``fn()`` (one kernel call of a replay plan: its memory is the same on every run)
    and return a function that enqueues the same launches again, with the same arguments,
    without running the op's Python code; None when ``fn`` did something that a repeat of
    its launches would not (see ``not_repeatable``), or allocated memory other than through
    ``scratch``. The returned function keeps the scratch memory the launches use."""
    if _REC.recording is not None:
        fn()
        return None
    rec = _REC.recording = _Recording()
    allocators = [d.allocator for d in (_devices or ()) if d.started]
    counts = [a.memory_stats().get("allocation.all.allocated", 0) for a in allocators]
    try:
        fn()
    finally:
        _REC.recording = None
    after = [a.memory_stats().get("allocation.all.allocated", 0) for a in allocators]
    if sum(after) - sum(counts) != len(rec.keep):
        rec.why = "memory was allocated other than as scratch"
    if rec.why is not None or not rec.items:
        return None
    items, keep = tuple(rec.items), tuple(rec.keep)

    def repeat(_keep=keep):
        for dev, kernel, a, b, c in items:
            if kernel is None:
                _copy(dev, a, b, c)
            else:
                kernel.set_args(*c)
                _launch(dev, kernel, a, b)
    repeat.launches = len(items)
    return repeat


def round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m
