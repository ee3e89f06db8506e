"""ember.compile's capture against eager mode: a compiled function must give what the same
function gives uncompiled (the recorded kernels are the ones eager mode runs, so results are
bit-identical), whatever Python does around the ops: control flow on tensor values, side
effects, mutation of inputs and buffers, views, random numbers, autograd and grad mode.
Graph breaks, the structure cache and ``fullgraph`` are checked by what the capture
machinery counts (``lazy.STATS``) and by the errors it raises."""
import gc

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatcher import lazy
from ember.dispatcher.core import LazyStorage


def same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def compiled_and_eager(fn, *make_args, backend="eager"):
    """``fn``'s results compiled and eagerly, on equal fresh arguments."""
    ember.manual_seed(0)
    args_c = [m() for m in make_args]
    ember.manual_seed(0)
    args_e = [m() for m in make_args]
    ember.manual_seed(1)
    got = ember.compile(fn, backend=backend)(*args_c)
    ember.manual_seed(1)
    want = fn(*args_e)
    return got, want, args_c, args_e


def no_lazy(*ts):
    for t in ts:
        assert not isinstance(t._storage, LazyStorage)


@pytest.fixture(autouse=True)
def _fresh():
    lazy.clear_cache()
    ember.compiler.set_stance("default")
    yield
    ember.compiler.set_stance("default")


def stats():
    return {k: lazy.STATS[k] for k in ("flushes", "compiles", "hits", "breaks", "replays")}


def delta(before):
    return {k: lazy.STATS[k] - before[k] for k in before}


# ---- results ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_elementwise_chain_matches_eager(backend):
    def gelu_tanh(x):
        return 0.5 * x * (1 + ember.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    got, want, _, _ = compiled_and_eager(gelu_tanh, lambda: ember.randn(1000),
                                         backend=backend)
    same(got, want)
    no_lazy(got)


def test_results_are_real_tensors_after_the_call():
    def f(x):
        y = x.exp()
        return y, y[1:], {"s": y.sum()}
    y, v, d = ember.compile(f)(ember.arange(4.0))
    no_lazy(y, v, d["s"])
    assert v._storage is y._storage       # a view stays a view of its base
    same(y, ember.arange(4.0).exp())


def test_mlp_forward_matches_eager():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
    x = ember.randn(8, 16)
    same(ember.compile(m)(x), m(x))


def test_conv_net_forward_matches_eager():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 10)).eval()
    x = ember.randn(2, 3, 8, 8)
    same(ember.compile(m)(x), m(x))


def test_integer_and_bool_ops():
    def f(a, b):
        return (a // 3) * b, (a > 2) & (b < 5), a.sum(dtype=ember.int64)
    a = ember.arange(10, dtype=ember.int32)
    b = ember.arange(10, 0, -1, dtype=ember.int32)
    for g, w in zip(ember.compile(f)(a, b), f(a, b)):
        same(g, w)


def test_matches_pytorch_on_a_chain():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(257).astype(np.float32)

    def chain(lib):
        return lambda t: (lib.sin(t) * 2 + t.exp()).tanh().sum(0)
    got = ember.compile(chain(ember))(ember.tensor(x))
    want = chain(torch)(torch.tensor(x))     # (not torch.compile: importing it changes
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)   # global defaults)


# ---- Python around the ops ----------------------------------------------------------------

def test_control_flow_on_tensor_values_breaks_the_graph():
    def f(x):
        y = x * 2
        if y.sum() > 0:            # a data-dependent branch
            return y + 1
        return y - 1
    cf = ember.compile(f)
    for v in (1.0, -1.0):
        x = ember.full((3,), v)
        before = stats()
        same(cf(x), f(x))
        d = delta(before)
        assert d["breaks"] == 1 and d["flushes"] == 2


def test_item_tolist_numpy_and_print_inside(capsys):
    def f(x):
        y = x.exp()
        s = y.sum().item()
        print(y)
        lst = y.tolist()
        arr = y.numpy().copy()
        return y * s, lst, arr
    x = ember.arange(3.0)
    got = ember.compile(f)(x)
    want = f(x)
    same(got[0], want[0])
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[2], want[2])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == out[1]       # printed the same tensor both times


def test_python_side_effects_run_every_call():
    seen = []
    counter = {"n": 0}

    def f(x):
        counter["n"] += 1
        seen.append(counter["n"])
        return x * counter["n"]     # a Python value baked into the graph each call
    cf = ember.compile(f)
    x = ember.ones(2)
    for n in (1, 2, 3):
        same(cf(x), ember.full((2,), float(n)))
    assert seen == [1, 2, 3]


def test_globals_and_closures_are_read_each_call():
    state = {"scale": 2.0}

    def f(x):
        return x * state["scale"]
    cf = ember.compile(f)
    x = ember.ones(2)
    same(cf(x), ember.full((2,), 2.0))
    state["scale"] = 5.0
    same(cf(x), ember.full((2,), 5.0))


def test_exceptions_inside_keep_eager_side_effects():
    def f(x):
        x.add_(1)
        raise ValueError("stop")
    x = ember.zeros(3)
    with pytest.raises(ValueError, match="stop"):
        ember.compile(f)(x)
    same(x, ember.ones(3))
    assert not lazy.capturing()


def test_errors_are_raised_at_the_line_that_made_them():
    def f(x):
        return x + ember.ones(4)
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.compile(f)(ember.ones(3))
    assert not lazy.capturing()


# ---- mutation and aliasing ------------------------------------------------------------

def test_in_place_mutation_of_inputs():
    def f(x, y):
        x.mul_(2)
        y[1:].add_(x[:2])
        return x.sum() + y.sum()
    got, want, (xc, yc), (xe, ye) = compiled_and_eager(f, lambda: ember.arange(3.0),
                                                       lambda: ember.ones(3))
    same(got, want)
    same(xc, xe)
    same(yc, ye)


def test_inputs_that_alias_each_other():
    def f(a, b):
        a.add_(1)           # b views a's memory: it sees the write
        return b * 2
    base_c = ember.arange(6.0)
    base_e = ember.arange(6.0)
    same(ember.compile(f)(base_c[:4], base_c[2:]), f(base_e[:4], base_e[2:]))
    same(base_c, base_e)


def test_aliasing_is_part_of_the_cache_key():
    def f(a, b):
        a.mul_(2)
        return a + b
    cf = ember.compile(f)
    x = ember.ones(3)
    cf(ember.ones(3), ember.ones(3))           # distinct inputs
    got = cf(x, x)                             # the same tensor twice
    same(got, ember.full((3,), 4.0))


def test_out_argument_and_resize():
    def f(x, out):
        ember.exp(x, out=out)
        return out
    out_c = ember.empty(0)
    out_e = ember.empty(0)
    x = ember.arange(4.0)
    ember.compile(f)(x, out_c)      # an empty out= is resized without a warning
    f(x, out_e)
    same(out_c, out_e)
    no_lazy(out_c)


def test_batchnorm_running_stats_update_as_in_eager():
    ember.manual_seed(0)
    m_c = nn.BatchNorm1d(5)
    m_e = nn.BatchNorm1d(5)
    x = ember.randn(7, 5)
    cm = ember.compile(m_c)
    for _ in range(3):
        same(cm(x), m_e(x))
    same(m_c.running_mean, m_e.running_mean)
    same(m_c.running_var, m_e.running_var)
    assert m_c.num_batches_tracked.item() == 3
    no_lazy(m_c.running_mean, m_c.running_var)


def test_tensors_stored_on_objects_are_computed():
    class Cache:
        pass
    c = Cache()

    def f(x):
        c.saved = x.exp()
        c.view = c.saved.t()
        return None
    ember.compile(f)(ember.ones(2, 3))
    no_lazy(c.saved, c.view)
    same(c.view, ember.ones(2, 3).exp().t())


# ---- random numbers ----------------------------------------------------------------------

def test_random_ops_draw_what_eager_draws():
    def f(x):
        return F.dropout(x, 0.5, training=True) + ember.randn(4, 4) + ember.rand_like(x)
    got, want, _, _ = compiled_and_eager(f, lambda: ember.ones(4, 4))
    same(got, want)


def test_random_counters_are_runtime_values_not_constants():
    cf = ember.compile(lambda x: x + ember.randn(3))
    x = ember.zeros(3)
    ember.manual_seed(3)
    a, b = cf(x), cf(x)
    ember.manual_seed(3)
    same(a, ember.randn(3))
    same(b, ember.randn(3))
    assert not ember.equal(a, b)


# ---- autograd ------------------------------------------------------------------------------

def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))


def test_backward_outside_the_compiled_forward():
    m_c, m_e = _mlp(), _mlp()
    x = ember.randn(4, 6)
    loss_c = ember.compile(m_c)(x).pow(2).mean()
    loss_e = m_e(x).pow(2).mean()
    same(loss_c, loss_e)
    loss_c.backward()
    loss_e.backward()
    for pc, pe in zip(m_c.parameters(), m_e.parameters()):
        same(pc.grad, pe.grad)


def test_training_step_compiled_whole():
    m_c, m_e = _mlp(), _mlp()
    opt_c = ember.optim.SGD(m_c.parameters(), lr=0.1, momentum=0.9)
    opt_e = ember.optim.SGD(m_e.parameters(), lr=0.1, momentum=0.9)
    x, y = ember.randn(8, 6), ember.randint(0, 3, (8,))

    def step(m, opt):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    cstep = ember.compile(step)
    for _ in range(4):
        same(cstep(m_c, opt_c), step(m_e, opt_e))
    for pc, pe in zip(m_c.parameters(), m_e.parameters()):
        same(pc, pe)
        no_lazy(pc, pc.grad)


def test_adam_step_compiled():
    m_c, m_e = _mlp(), _mlp()
    opt_c = ember.optim.Adam(m_c.parameters(), lr=1e-2)
    opt_e = ember.optim.Adam(m_e.parameters(), lr=1e-2)
    x = ember.randn(5, 6)
    for m, opt in ((m_c, opt_c), (m_e, opt_e)):
        m(x).sum().backward()
    ember.compile(opt_c.step)()
    opt_e.step()
    for pc, pe in zip(m_c.parameters(), m_e.parameters()):
        same(pc, pe)
    st = opt_c.state[next(iter(m_c.parameters()))]
    no_lazy(st["exp_avg"], st["exp_avg_sq"])


def test_grad_mode_inside_and_around():
    w = ember.randn(3, requires_grad=True)

    def f(x):
        with ember.no_grad():
            a = x * w
        b = x * w
        return a, b
    a, b = ember.compile(f)(ember.ones(3))
    assert not a.requires_grad and b.requires_grad
    with ember.no_grad():
        a2, b2 = ember.compile(f)(ember.ones(3))
    assert not b2.requires_grad
    same(b2, b)


def test_version_counter_errors_still_raise():
    def f(x):
        y = x.sigmoid()
        y.add_(1)          # sigmoid saved its result: backward must refuse
        return y
    x = ember.randn(3, requires_grad=True)
    y = ember.compile(f)(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---- the cache, breaks and fullgraph -----------------------------------------------------

def test_second_call_reuses_the_compiled_graph():
    cf = ember.compile(lambda x: (x * 2).sin())
    x = ember.randn(10)
    cf(x)
    before = stats()
    cf(ember.randn(10))
    # a straight-line function replays its graph without capture (a "replay"); others
    # capture again and find the graph in the cache (a "hit")
    assert delta(before) == {"flushes": 0, "compiles": 0, "hits": 0, "breaks": 0,
                             "replays": 1}


def test_second_call_of_a_function_with_control_flow_hits_the_cache():
    def f(x, scale):
        if scale > 1:           # Python control flow: captured on every call
            x = x * scale
        return x.sin()
    cf = ember.compile(f)
    x = ember.randn(10)
    cf(x, 2.0)
    before = stats()
    cf(ember.randn(10), 2.0)
    assert delta(before) == {"flushes": 1, "compiles": 0, "hits": 1, "breaks": 0,
                             "replays": 0}


def test_a_new_shape_or_dtype_compiles_a_new_graph():
    cf = ember.compile(lambda x: (x * 2).sin())
    cf(ember.randn(10))
    for x in (ember.randn(11), ember.randn(10, dtype=ember.float64), ember.randn(10).t()):
        before = stats()
        same(cf(x), (x * 2).sin())
        assert delta(before)["compiles"] <= 1
    before = stats()
    cf(ember.randn(11))
    assert delta(before)["compiles"] == 0


def test_fullgraph_names_the_breaking_line():
    def f(x):
        y = x + 1
        return y * y.max().item()
    with pytest.raises(ember._dynamo.exc.Unsupported) as e:
        ember.compile(f, fullgraph=True)(ember.ones(2))
    assert "y.max().item()" in str(e.value) and "line" in str(e.value)
    assert not lazy.capturing()
    same(ember.compile(f)(ember.ones(2)), f(ember.ones(2)))


def test_disable_runs_eagerly_between_graphs():
    calls = []

    @ember.compiler.disable
    def helper(t):
        calls.append(ember.compiler.is_compiling())
        return t * 3

    def f(x):
        assert ember.compiler.is_compiling()
        return helper(x + 1) - 1
    same(ember.compile(f)(ember.ones(2)), ember.full((2,), 5.0))
    assert calls == [False]
    assert not ember.compiler.is_compiling()


def test_nested_compiled_functions_share_one_region():
    inner = ember.compile(lambda t: t.exp())
    outer = ember.compile(lambda t: inner(t) + 1)
    before = stats()
    same(outer(ember.zeros(3)), ember.full((3,), 2.0))
    assert delta(before)["flushes"] == 1


def test_stances():
    cf = ember.compile(lambda x: x + 1)
    ember.compiler.set_stance("force_eager")
    before = stats()
    cf(ember.ones(2))
    assert delta(before)["flushes"] == 0
    ember.compiler.set_stance("fail_on_recompile")
    cf(ember.ones(2))       # the first compile is not a recompile
    cf(ember.ones(2))
    with pytest.raises(RuntimeError, match="fail_on_recompile"):
        cf(ember.ones(5))


def test_no_memory_growth_across_recompiles():
    import tracemalloc
    cf = ember.compile(lambda x: (x * 2 + 1).relu().sum())
    for n in range(1, 30):
        cf(ember.ones(n))
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for n in range(30, 130):
        cf(ember.ones(n))
        lazy.clear_cache()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 200_000, grown


def test_another_thread_runs_eagerly_meanwhile():
    import threading
    out = {}

    def other():
        out["t"] = ember.ones(3) * 2
        out["compiling"] = ember.compiler.is_compiling()

    def f(x):
        th = threading.Thread(target=other)
        th.start()
        th.join()
        return x + 1
    ember.compile(f)(ember.ones(3))
    no_lazy(out["t"])
    same(out["t"], ember.full((3,), 2.0))
    assert out["compiling"] is False


def test_saving_inside_a_region(tmp_path):
    def f(x):
        y = x * 3
        ember.save({"y": y}, tmp_path / "y.pt")
        return y
    ember.compile(f)(ember.arange(3.0))
    same(ember.load(tmp_path / "y.pt")["y"], ember.arange(3.0) * 3)


@pytest.mark.parametrize("read, reason", [
    (lambda y: bool(y.sum() > 0), "data-dependent branch"),
    (lambda y: y.sum().item(), "Tensor.item()"),
    (lambda y: y.tolist(), "Tensor.tolist()"),
    (lambda y: y.numpy(), "Tensor.numpy()"),
    (lambda y: repr(y), "printing a tensor"),
    (lambda y: float(y.sum()), "float() of a tensor"),
])
def test_explain_names_each_break(read, reason):
    def f(x):
        y = x * 2
        read(y)
        return y + 1
    out = ember.compiler.explain(f, ember.ones(3))
    assert out.graph_count == 2 and out.graph_break_count == 1
    assert reason in out.break_reasons[0].reason
    assert "lambda y:" in out.break_reasons[0].user_stack    # the innermost user frame


def test_reads_break_the_graph_only_after_pending_writes():
    def f(x, z):
        x.sum().item()          # the sum is pending: a break
        y = x * 2
        x.tolist()              # the pending graph reads x but does not write it: no break
        z.add_(1)
        z.tolist()              # z has a pending write: a break
        return y.exp()
    z = ember.zeros(2)
    out = ember.compiler.explain(f, ember.ones(3), z)
    assert out.graph_break_count == 2
    assert [b.reason for b in out.break_reasons] == ["Tensor.item()", "Tensor.tolist()"]
    same(z, ember.ones(2))


def test_recompiles_log_says_what_changed(ember_logs):
    with ember_logs("ember.compile", recompiles=True) as seen:
        f = ember.compile(lambda x, y: (x * 3).sin() + y)
        f(ember.randn(4), ember.randn(4))
        f(ember.randn(5), ember.randn(5))
        f(ember.randn(5, dtype=ember.float64), ember.randn(5, dtype=ember.float64))
        a = ember.randn(5, dtype=ember.float64)
        f(a, a)
    assert len(seen) == 3
    assert "shape (4,) -> (5,)" in seen[0]
    assert "dtype ember.float32 -> ember.float64" in seen[1]
    assert "aliasing changed" in seen[2]


def test_functions_whose_graphs_fuse_nothing_run_eagerly_after_three_calls():
    from ember.dispatcher import fusion

    relu = ember.compile(lambda t: t.relu())            # one kernel: nothing to fuse
    chain = ember.compile(lambda t: (t * 2).sin())       # a fused group
    x = ember.randn(50)
    flushes = []
    for _ in range(5):
        before = stats()
        same(relu(x), x.relu())
        same(chain(x), (x * 2).sin())
        d = delta(before)
        flushes.append(d["flushes"] + d["replays"])
    assert flushes == [2, 2, 2, 1, 1]       # relu's calls stop compiling after three
    ember.compiler.reset()
    before = stats()
    relu(x)
    assert delta(before)["flushes"] == 1    # reset forgets it
    assert fusion.STATS["groups"] > 0


def _python(v):
    """A plain Python function: a compiled function calling it is captured on every call
    (it is not straight-line code ember.compile may replay without running it)."""
    return v


@pytest.mark.timed_trial
def test_a_function_that_fuses_but_runs_faster_eagerly_goes_eager_after_a_timed_trial():
    from ember import _compile
    # tiny tensors: capture costs several times what the fused kernel saves (the calls
    # of a Python function keep them from straight-line replay, which skips capture)
    small = ember.compile(lambda t: _python(((t * 2).sin() + 1).cos() * t))
    # a million elements: the fused kernel saves far more than capture costs
    big = ember.compile(lambda t: _python(0.5 * t * (1 + ((t + 0.044715 * t * t * t) *
                                                          0.79).tanh())))
    xs, xb = ember.randn(8), ember.randn(1 << 20)
    n = _compile.EAGER_AFTER + 2 * _compile.TRIAL_CALLS + 2
    for _ in range(n):
        same(small(xs), ((xs * 2).sin() + 1).cos() * xs)   # eager's bits either way
        same(big(xb), 0.5 * xb * (1 + ((xb + 0.044715 * xb * xb * xb) * 0.79).tanh()))
    ws, wb = small._ember_watch, big._ember_watch
    assert ws.tried and wb.tried
    assert ws.eager_for(_compile._size_class((xs,), {}))
    assert not wb.eager_for(_compile._size_class((xb,), {}))
    before = stats()
    small(xs)
    assert delta(before)["flushes"] == 0        # no capture any more
    ember.compiler.reset()
    assert not ws.eager_for(_compile._size_class((xs,), {})) and not ws.tried


@pytest.mark.timed_trial
def test_the_timed_trial_decides_per_size_class_and_tries_a_larger_input_anew():
    # the same function: capture costs more than fusion saves on 8 elements and far
    # less on a million; going eager at 8 must not make the million-element calls eager
    from ember import _compile
    f = ember.compile(lambda t: _python(0.5 * t * (1 + ((t + 0.044715 * t * t * t) *
                                                        0.79).tanh())))
    xs, xb = ember.randn(8), ember.randn(1 << 20)
    n = _compile.EAGER_AFTER + 2 * _compile.TRIAL_CALLS + 2
    w = f._ember_watch
    for x in (xs, xb):
        for _ in range(n):
            same(f(x), 0.5 * x * (1 + ((x + 0.044715 * x * x * x) * 0.79).tanh()))
    small, big = _compile._size_class((xs,), {}), _compile._size_class((xb,), {})
    assert small in w.decided and big in w.decided
    assert not w.eager_for(big)
    before = stats()
    f(xb)
    assert delta(before)["flushes"] == 1        # the large input is still captured


def test_a_kernel_argument_that_cannot_be_hashed_is_compiled_uncached():
    from ember.dispatcher.schema import KERNELS_GENERATION, OPS
    calls = []
    o = OPS["exp"]
    real = o.kernels["cpu"]

    def exp_with_options(out, x, options=None):     # a plugin kernel taking a dict
        calls.append(options)
        real(out, x)

    def f(x):
        out = ember.empty_like(x)
        o.kernels["cpu"](out, x, options={"fast": False})
        return out
    x = ember.randn(4)
    want = x.exp()
    o.kernels["cpu"] = exp_with_options
    KERNELS_GENERATION[0] += 1          # (the capture rebuilds its recorders)
    try:
        same(ember.compile(f, backend="eager")(x), want)
    finally:
        o.kernels["cpu"] = real
        KERNELS_GENERATION[0] += 1
    assert calls == [{"fast": False}]
