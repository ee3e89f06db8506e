"""ember.multiprocessing: tensors cross process boundaries as handles to shared memory.

Oracles: NumPy copies of the values, and the storages themselves (a round trip that maps
the same memory comes back as the very same storage object)."""
import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember.dispatcher import Backend
from ember.dispatcher import dtypes as D
from ember.nn import Linear, Parameter

TIMEOUT = 30
METHODS = ["fork", "spawn"]
DTYPES = sorted(set(D._BY_NAME.values()), key=lambda d: d.name)


# ---- children (module level: spawn pickles them by name) ------------------------------------
def echo(qin, qout):
    """Send back everything received until None."""
    while True:
        item = qin.get(timeout=TIMEOUT)
        if item is None:
            return
        qout.put(item)


def add_one_and_report(qin, qout):
    t = qin.get(timeout=TIMEOUT)
    t.add_(1)
    qout.put("done")


def add_to_args(t, view, done):
    t.add_(1)       # the whole tensor
    view.mul_(10)   # a strided view of it
    done.put("done")


def make_and_send(qout, release):
    t = ember.arange(6, dtype=ember.int32).view(2, 3)
    qout.put((t, t.t()))
    release.get(timeout=TIMEOUT)


def sample_tensors():
    """Every dtype, and views of every kind, keyed by what they test."""
    rng = np.random.default_rng(0)
    out = {}
    for dt in DTYPES:
        if dt is D.bool_:
            base = ember.tensor(rng.random(12) > 0.5)
        elif dt is D.bfloat16:
            base = ember.tensor(rng.standard_normal(12), dtype=ember.float32).to(dt)
        elif dt.is_floating_point:
            base = ember.tensor(rng.standard_normal(12), dtype=dt)
        else:
            base = ember.tensor(rng.integers(0, 100, 12), dtype=dt)
        out[f"dtype:{dt.name}"] = base.view(3, 4)
    x = ember.arange(24.).view(4, 6)
    out["transpose"] = x.t()
    out["offset_slice"] = x[1:3, 2:]
    out["step"] = x[:, ::2]
    out["expand"] = ember.arange(3.).view(3, 1).expand(3, 5)
    out["scalar"] = ember.tensor(7.5)
    out["empty"] = ember.zeros(0, 3)
    leaf = ember.arange(4.).requires_grad_()
    (leaf * leaf).sum().backward()
    out["requires_grad_with_grad"] = leaf
    out["parameter"] = Parameter(ember.ones(2, 2))
    return out


def assert_same_tensor(a, b):
    assert type(a) is type(b)
    assert a.dtype is b.dtype and a.shape == b.shape
    assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
    assert a.requires_grad == b.requires_grad
    assert a.float().tolist() == b.float().tolist() if a.dtype is D.bfloat16 else \
        a.tolist() == b.tolist()
    assert (a.grad is None) == (b.grad is None)
    if a.grad is not None:
        assert a.grad.tolist() == b.grad.tolist()


# ---- round trips ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_round_trip_every_dtype_and_view(method, procs):
    ctx = mp.get_context(method)
    qin, qout = ctx.Queue(), ctx.Queue()
    p = procs.start(method, echo, qin, qout)
    tensors = sample_tensors()
    for name, t in tensors.items():
        qin.put(t)
        back = qout.get(timeout=TIMEOUT)
        assert_same_tensor(t, back)
        # the data was shared, not copied: the round trip maps the very same memory, which
        # this process knows as the original storage object
        assert t.is_shared() and back._storage is t._storage, name
    # a message holding two views of one storage keeps them views of one storage
    x = ember.arange(10.)
    qin.put((x[:5], x[5:]))
    a, b = qout.get(timeout=TIMEOUT)
    assert a._storage is b._storage is x._storage
    qin.put(None)
    assert procs.join(p) == 0


@pytest.mark.parametrize("method", METHODS)
def test_child_in_place_update_is_seen_by_parent(method, procs):
    ctx = mp.get_context(method)
    qin, qout = ctx.Queue(), ctx.Queue()
    p = procs.start(method, add_one_and_report, qin, qout)
    t = ember.zeros(2, 3)
    qin.put(t[1])  # a view: the child updates the parent's row through it
    assert qout.get(timeout=TIMEOUT) == "done"
    assert t.tolist() == [[0, 0, 0], [1, 1, 1]]
    assert procs.join(p) == 0


@pytest.mark.parametrize("method", METHODS)
def test_process_arguments_share_memory(method, procs):
    t = ember.zeros(2, 4).share_memory_()  # before fork: the child inherits the mapping
    done = mp.get_context(method).Queue()
    p = procs.start(method, add_to_args, t, t[:, 1::2], done)
    assert done.get(timeout=TIMEOUT) == "done"
    assert procs.join(p) == 0
    assert t.tolist() == [[1, 10, 1, 10]] * 2


def test_tensor_made_by_child_arrives_and_stays_valid(procs):
    ctx = mp.get_context("fork")
    qout, release = ctx.Queue(), ctx.Queue()
    p = procs.start("fork", make_and_send, qout, release)
    t, tt = qout.get(timeout=TIMEOUT)
    release.put(None)
    assert procs.join(p) == 0
    # the child is gone; its memory lives on in this process's mapping
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]] and tt.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert t._storage is tt._storage and t.is_shared()
    t.add_(1)
    assert tt.tolist() == [[1, 4], [2, 5], [3, 6]]


def test_sender_may_exit_before_the_receiver_reads(procs):
    # the sender waits at exit until its descriptors are collected
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = procs.start("fork", _put_and_exit, q)
    p.join(0.5)
    assert p.is_alive()  # done, but holding on until the parent takes the tensor
    assert q.get(timeout=TIMEOUT).tolist() == [1.0, 2.0]
    assert procs.join(p) == 0


def _put_and_exit(q):
    q.put(ember.tensor([1.0, 2.0]))


# ---- share_memory_ ----------------------------------------------------------------------------
def test_share_memory_moves_storage_in_place_for_every_view():
    x = ember.arange(6.).view(2, 3)
    v = x[:, 1]
    arr = x.numpy()  # an export of the old memory, which must stay valid
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and v.is_shared() and x.tolist() == [[0, 1, 2], [3, 4, 5]]
    v.fill_(9)
    assert x.tolist() == [[0, 9, 2], [3, 9, 5]]
    assert arr.tolist() == [[0, 1, 2], [3, 4, 5]]  # still readable (the old copy)
    ptr = x.data_ptr()
    x.share_memory_()  # idempotent
    assert x.data_ptr() == ptr


def test_share_memory_of_numpy_backed_tensor():
    a = np.arange(4, dtype=np.float32)
    t = ember.from_numpy(a).share_memory_()
    assert t.is_shared() and t.tolist() == [0, 1, 2, 3]


def test_module_share_memory_covers_parameters_grads_and_buffers():
    m = Linear(3, 2)
    m(ember.ones(1, 3)).sum().backward()
    m.register_buffer("steps", ember.zeros(1))
    assert m.share_memory() is m
    assert all(p.is_shared() and p.grad.is_shared() for p in m.parameters())
    assert m.steps.is_shared()


def test_non_leaf_requiring_grad_is_refused():
    y = ember.ones(2, requires_grad=True) * 2
    q = mp.get_context("fork").SimpleQueue()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        q.put(y)
    q.put(y.detach())
    assert q.get().tolist() == [2.0, 2.0]


def test_device_without_sharing_path_raises_a_clear_error():
    class NoShare(Backend):
        name = device_type = "noshare"

    with pytest.raises(RuntimeError, match="tensors of device 'noshare' cannot be shared"):
        NoShare().share_storage(object())
    from ember.dispatcher import BACKENDS
    others = [dt for dt, b in BACKENDS.items()
              if type(b).share_storage is Backend.share_storage and b.device_count() > 0]
    if others:
        t = ember.zeros(2, device=others[0])
        with pytest.raises(RuntimeError, match=f"device '{others[0]}' cannot be shared"):
            t.share_memory_()
        with pytest.raises(RuntimeError, match="cannot be shared"):
            mp.get_context("fork").SimpleQueue().put(t)


# ---- spawn ------------------------------------------------------------------------------------
def _spawned(i, q):
    q.put(i * 10)


def _spawned_fails(i):
    if i == 1:
        raise ValueError("bad rank 1")


def _spawned_dies(i):
    import os
    import signal
    if i == 0:
        os.kill(os.getpid(), signal.SIGKILL)


def test_spawn_runs_fn_and_reports_failures():
    q = mp.get_context("fork").SimpleQueue()
    mp.spawn(_spawned, args=(q,), nprocs=2, start_method="fork")
    assert sorted([q.get(), q.get()]) == [0, 10]
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: bad rank 1") as e:
        mp.spawn(_spawned_fails, nprocs=2, start_method="fork")
    assert e.value.error_index == 1 and "Traceback" in str(e.value)
    with pytest.raises(mp.ProcessExitedException, match="signal SIGKILL") as e:
        mp.spawn(_spawned_dies, nprocs=1, start_method="fork")
    assert e.value.exit_code == -9


def test_drop_in_api():
    import multiprocessing
    for name in ("Process", "Queue", "Pool", "Pipe", "get_context", "set_start_method",
                 "cpu_count", "Event"):
        assert hasattr(mp, name), name
    assert mp.get_context is not None and mp.cpu_count() == multiprocessing.cpu_count()
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    with pytest.raises(ValueError, match="not supported"):
        mp.set_sharing_strategy("file_system")


def _square_sum(t):
    return float((t * t).sum().item())


def test_pool_map_with_tensors():
    with mp.get_context("fork").Pool(2) as pool:
        out = pool.map(_square_sum, [ember.full((3,), float(i)) for i in range(4)])
    assert out == [0.0, 3.0, 12.0, 27.0]
