"""Devices, contexts, queues, compiled programs and kernel errors.

Every OpenCL device on every platform becomes ``opencl:<i>`` in discovery order. A
device gets one context and one in-order command queue (its default stream) the first
time it is used, a caching allocator (``_memory.py``) and one compiled program per
kernel family, built from ``kernels/<family>.cl`` for the dtypes the device supports.

Kernels only enqueue work. The host waits in exactly two places, both counted in
``Device.host_waits``: reading memory back (``copy_to_host``) and ``synchronize``.
Errors found inside kernels (an index out of bounds, an integer division by zero) are
recorded in a small device buffer and raised at the next wait; with
``EMBER_OPENCL_LAUNCH_BLOCKING=1`` every op waits and raises at once (PyTorch's
``CUDA_LAUNCH_BLOCKING``).
"""
from __future__ import annotations

import os
import threading

import numpy as np
from ember.dispatcher.codegen import opencl as gen

from ._source import CTYPES, render

__all__ = ["Device", "devices", "device", "device_count", "LAUNCH_BLOCKING", "enqueue"]

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

# Kernel error codes (kernels/common.cl) -> exception type and message.
_ERRORS = {
    1: (IndexError, "{op}(): index {bad} is out of bounds for dimension {arg} with size "
                    "{size}"),
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
                        found += [(platform, d) for d in platform.get_devices()]
                    except cl.Error:  # a platform without devices
                        continue
            except Exception as e:  # no ICD loader / no platform: 0 devices, not an error
                _discovery_error = f"{type(e).__name__}: {e}"
        _devices = [Device(i, p, d) for i, (p, d) in enumerate(found)]
        return _devices


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
        self.host_waits = 0          # blocking waits of the host (tests count them)
        self._ctx = None
        self._programs: dict = {}
        self._kernels: dict = {}
        self._pending: list = []     # (event, host buffer) of async uploads in flight
        self._init_lock = threading.Lock()

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
            self.queue = cl.CommandQueue(ctx)
            self.err = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 32)
            self._err_host = np.zeros(8, np.int32)
            cl.enqueue_fill_buffer(self.queue, self.err, np.int32(0), 0, 32)
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
                    src = render(family, fp64=self.fp64, **SPECS[family](self))
                    try:
                        prg = cl.Program(self.ctx, src).build(options=["-cl-std=CL1.2"])
                    except cl.Error as e:
                        raise RuntimeError(f"opencl:{self.index} ({self.name}): the {family!r} "
                                           f"kernels failed to compile:\n{e}") from None
                    self._programs[family] = prg
                k = self._kernels[(family, name)] = cl.Kernel(prg, name)
        return k

    # -- waiting --------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait for every queued op, then raise the first kernel error, if any."""
        if self._ctx is None:
            return
        self.host_waits += 1
        self.queue.finish()
        self._pending.clear()
        self.check_errors()

    def check_errors(self) -> None:
        """Read the error buffer (the queue must be drained) and raise what it holds."""
        cl.enqueue_copy(self.queue, self._err_host, self.err, is_blocking=True)
        code = int(self._err_host[0])
        if code:
            cl.enqueue_fill_buffer(self.queue, self.err, np.int32(0), 0, 32)
            raise_kernel_error(self, self._err_host)

    def keep_alive(self, event, host) -> None:
        """Hold ``host`` until the upload ``event`` completes (pyopencl would otherwise
        wait when the event is collected)."""
        done = cl.command_execution_status.COMPLETE
        pend = self._pending
        while pend and pend[0][0].command_execution_status == done:
            pend.pop(0)
        pend.append((event, host))


def raise_kernel_error(dev: Device, rec) -> None:
    code, arg = int(rec[0]), int(rec[1])
    bad, size = int(rec[2:4].view(np.int64)[0]), int(rec[4:6].view(np.int64)[0])
    exc, msg = _ERRORS.get(code, (RuntimeError, "a kernel reported error {code}"))
    op = ERROR_OPS[arg >> 8] if (arg >> 8) < len(ERROR_OPS) else "kernel"
    text = msg.format(op=op, bad=bad, arg=arg & 0xff, size=size, code=code)
    if not LAUNCH_BLOCKING:
        text += (f" (found by a kernel on opencl:{dev.index} and reported at the next "
                 "synchronisation; set EMBER_OPENCL_LAUNCH_BLOCKING=1 to raise it at the "
                 "op that failed)")
    raise exc(text)


def enqueue(dev: Device, kernel, gsize, lsize, *args) -> None:
    """Set ``args`` on ``kernel`` and enqueue it; returns at once."""
    kernel.set_args(*args)
    cl.enqueue_nd_range_kernel(dev.queue, kernel, gsize, lsize)


def round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m
