"""Kernel errors are raised precisely: in the thread that launched the failing op, naming
the op and its arguments.

A kernel cannot raise; it writes an error record that the host reads at its next wait on
the device's queue (like PyTorch's CUDA device-side asserts). Each launch that can fail
has its own record, tagged with the op, its arguments' shapes and dtypes, and the thread
that launched it: a thread waiting on the queue raises its own errors, never another
thread's, and an error waits for its thread's next wait (``synchronize``, ``.item()``,
``.cpu()``). The oracle is PyTorch's CPU error for the same call (message and type).
"""
import re
import threading

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.allocator import OutOfMemoryError
from ocl_helpers import DEV, N, T, rt


def sync():
    ember.opencl.synchronize(DEV)


def torch_error(fn):
    """PyTorch's (type, message) for the same call on the CPU."""
    try:
        fn()
    except (IndexError, RuntimeError) as e:
        return type(e), str(e).split("\n")[0]
    raise AssertionError("PyTorch accepted the call")


X = np.arange(12, dtype=np.float32).reshape(3, 4)

#: case -> (ember call on opencl tensors, the same call in PyTorch, the op and its
#: arguments as the error names them)
CASES = {
    "gather": (lambda: ember.gather(T(X), 1, T([[0, 4]])),
               lambda: torch.gather(torch.tensor(X), 1, torch.tensor([[0, 4]])),
               "gather(out: float32 [1, 2], input: float32 [3, 4], index: int64 [1, 2])"),
    "scatter_": (lambda: T(X).scatter_(0, T([[1, 3]]), T(X[:1, :2])),
                 lambda: torch.tensor(X).scatter_(0, torch.tensor([[1, 3]]),
                                                  torch.tensor(X[:1, :2])),
                 "scatter(self: float32 [3, 4], index: int64 [1, 2], src: float32 [1, 2])"),
    "scatter_add_": (lambda: T(X).scatter_add_(1, T([[-1]]), T(X[:1, :1])),
                     lambda: torch.tensor(X).scatter_add_(1, torch.tensor([[-1]]),
                                                          torch.tensor(X[:1, :1])),
                     "scatter(self: float32 [3, 4], index: int64 [1, 1], src: float32 "
                     "[1, 1])"),
    "div floor": (lambda: ember.div(T([4, 5]), T([2, 0]), rounding_mode="floor"),
                  lambda: torch.div(torch.tensor([4, 5]), torch.tensor([2, 0]),
                                    rounding_mode="floor"),
                  "div(out: int64 [2], a: int64 [2], b: int64 [2])"),
    "remainder": (lambda: ember.remainder(T(np.array([4, 5], np.int32)),
                                          T(np.array([0, 1], np.int32))),
                  lambda: torch.remainder(torch.tensor([4, 5], dtype=torch.int32),
                                          torch.tensor([0, 1], dtype=torch.int32)),
                  "remainder(out: int32 [2], a: int32 [2], b: int32 [2])"),
}
# (integer pow by a negative Python number is refused before any kernel runs, as in
# PyTorch; a negative tensor exponent computes: neither is a kernel error)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_error_names_the_op_and_its_arguments(case):
    run, oracle, op = CASES[case]
    etype, _ = torch_error(oracle)
    res = run()                     # enqueued: the error is found later, at the wait
    with pytest.raises(etype) as info:
        N(res)
    msg = str(info.value)
    assert f"[the op: {op}" in msg and "launched by thread 'MainThread'" in msg, msg
    sync()                          # reported once
    N(res)


def test_messages_follow_pytorch():
    for case in ("gather", "scatter_", "div floor"):
        run, oracle, _ = CASES[case]
        etype, tmsg = torch_error(oracle)
        res = run()
        with pytest.raises(etype) as info:
            sync()
        # PyTorch's sentence (the kernel cannot know every detail PyTorch prints)
        key = {"gather": "out of bounds", "scatter_": "out of bounds",
               "div floor": "ZeroDivisionError"}[case]
        assert key in tmsg and key in str(info.value), (tmsg, str(info.value))
        del res


def test_an_error_goes_to_the_thread_that_launched_the_op():
    """The worker's out-of-range gather is not raised where the main thread waits, but at
    the worker's own next wait; the main thread's error likewise stays with it."""
    x = T(X)
    launched, waited = threading.Event(), threading.Event()
    got = {}

    def worker():
        ember.gather(x, 0, T([[7, 0, 0, 0]]))
        launched.set()
        waited.wait(30)
        try:
            sync()
            got["worker"] = None
        except IndexError as e:
            got["worker"] = str(e)

    t = threading.Thread(target=worker, name="loader")
    t.start()
    launched.wait(30)
    mine = ember.gather(x, 1, T([[9]]))
    with pytest.raises(IndexError, match=r"index 9 is out of bounds.*thread 'MainThread'"):
        N(mine)                     # only my error, although the worker's came first
    N(x)
    waited.set()
    t.join(30)
    assert got["worker"] is not None, "the worker's error was lost"
    assert re.search(r"index 7 is out of bounds for dimension 0 with size 3 \[the op: "
                     r"gather\(out: float32 \[1, 4\], input: float32 \[3, 4\], index: "
                     r"int64 \[1, 4\]\) on opencl:0, launched by thread 'loader'\]",
                     got["worker"]), got["worker"]


def test_threads_each_receive_their_own_error():
    x = T(X)
    barrier = threading.Barrier(3)
    got = {}

    def worker(i):
        ember.gather(x, 1, T([[10 + i] * (i + 1)]))
        barrier.wait(30)
        try:
            sync()
        except IndexError as e:
            got[i] = str(e)

    threads = [threading.Thread(target=worker, args=(i,), name=f"w{i}") for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for i in range(3):
        assert f"index {10 + i} is out of bounds" in got[i], got
        assert f"index: int64 [1, {i + 1}]" in got[i] and f"thread 'w{i}'" in got[i], got
    sync()


def test_the_error_of_a_thread_that_ended_is_raised_by_the_next_waiter():
    """A thread that launched a failing op and ended without waiting cannot receive its
    error: the next thread that waits does, told whose it was."""
    x = T(X)
    t = threading.Thread(target=lambda: ember.gather(x, 0, T([[3, 0, 0, 0]])),
                         name="short-lived")
    t.start()
    t.join(30)
    with pytest.raises(IndexError, match=r"index 3 .*thread 'short-lived', which has ended"):
        sync()
    sync()


def test_many_launches_between_waits_keep_their_records(monkeypatch):
    """Hundreds of launches that may fail between two waits: each error is attributed to
    its own launch; past a bound the host waits once to reuse the records, instead of
    growing them forever."""
    dev = rt.device(0)
    x = T(X)
    good = T([[0, 1]])
    sync()
    monkeypatch.setattr(rt, "_MAX_OUTSTANDING", 64)
    chunks = len(dev._rec_chunks)
    waits = dev.host_waits
    for i in range(400):
        ember.gather(x, 1, good if i != 150 else T([[0, 1, 2, 3, 6]]))
    assert len(dev._rec_chunks) <= chunks + 2
    assert dev.host_waits > waits, "the bound did not make the host wait"
    with pytest.raises(IndexError, match=r"index 6 .*index: int64 \[1, 5\]"):
        sync()
    sync()


def test_a_driver_out_of_memory_at_launch_is_out_of_memory(monkeypatch):
    """A driver that allocates lazily and runs out when a kernel is enqueued (some GPUs):
    ``ember.OutOfMemoryError``, not a bare pyopencl error."""
    x = T(X)
    N(x + 1)

    def refuse(*args, **kwargs):
        raise rt.cl.MemoryError("clEnqueueNDRangeKernel", rt.cl.status_code.
                                MEM_OBJECT_ALLOCATION_FAILURE, "out of device memory")
    monkeypatch.setattr(rt.cl, "enqueue_nd_range_kernel", refuse)
    with pytest.raises(OutOfMemoryError, match="opencl:0: the OpenCL driver ran out of "
                                               "memory launching"):
        x + 1
    monkeypatch.undo()
    assert N(x + 1)[0, 0] == 1
