"""ember.compile's default compiler: elementwise calls fused into generated C++ kernels.

Each fused kernel applies the same functors the CPU backend's own kernels are generated
from, so a fused chain computes the same bits as eager mode; results are compared with
eager ember exactly and with NumPy in float64 within float32 rounding. The planner's
decisions (what is fused, what is stored) are read from ``fusion.plan`` and the counters."""
import numpy as np
import pytest

import ember
from compile_helpers import requires_opencl
from ember.dispatcher import fusion, lazy
from ember.dispatcher.plugins import backend_for


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path_factory.getbasetemp() / "cc"))
    lazy.clear_cache()
    yield


def has_compiler():
    import ember_cpu.fusion as F
    return F._compiler() is not None


pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C++ compiler on this machine")


def same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(_np(a), _np(b))


def _np(t):
    t = t.detach()
    return (t.float() if t.dtype == ember.bfloat16 else t).numpy()


def fused_counts(fn):
    before = dict(fusion.STATS)
    out = fn()
    return out, {k: fusion.STATS[k] - before[k] for k in before}


def gelu_tanh(x):
    return 0.5 * x * (1 + ember.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@pytest.mark.parametrize("n", [1, 7, 1000, 70_001])
def test_gelu_chain_is_one_kernel_with_eager_bits(n):
    x = ember.randn(n)
    got, d = fused_counts(lambda: ember.compile(gelu_tanh)(x))
    assert d["groups"] == 1 and d["fused_calls"] >= 9 and d["kernel_calls"] == 0
    same(got, gelu_tanh(x))
    xd = x.numpy().astype(np.float64)
    ref = 0.5 * xd * (1 + np.tanh(0.7978845608 * (xd + 0.044715 * xd ** 3)))
    np.testing.assert_allclose(got.numpy(), ref, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32",
                                   "int64", "uint8"])
def test_dtypes(dtype):
    dt = getattr(ember, dtype)
    if dt.is_floating_point:
        x = ember.randn(300).to(dt)

        def f(t):
            return ((t * 3 - 1).abs() + t.neg()).maximum(t) * 0.5
    else:
        x = ember.arange(300).to(dt)

        def f(t):
            return ((t * 3 + 1) % 7) * t - (t // 3)
    got, d = fused_counts(lambda: ember.compile(f)(x))
    assert d["groups"] == 1
    same(got, f(x))


def test_comparisons_where_and_bool_operands():
    def f(a, b):
        m = (a > b) & (a.abs() < 2)
        return ember.where(m, a * b, a - b), m
    a, b = ember.randn(500), ember.randn(500)
    (g, gm), d = fused_counts(lambda: ember.compile(f)(a, b))
    w, wm = f(a, b)
    same(g, w)
    same(gm, wm)
    assert d["groups"] == 1


def test_runtime_attributes_and_modes():
    def f(a, b, c, v):
        return ember.addcmul(a, b, c, value=v).div(b, rounding_mode="floor")
    a, b, c = ember.randn(64), ember.randn(64) + 3, ember.randn(64)
    cf = ember.compile(f)
    for v in (0.5, -2.0):       # a Python float is a runtime value: no recompile
        same(cf(a, b, c, v), f(a, b, c, v))


def test_temporaries_are_not_stored_or_allocated():
    x = ember.randn(10_000)
    info = {}
    # the plan of (x.sin() * 2).exp(): one group; the two intermediate buffers are
    # neither loaded nor stored
    region = lazy.Region(lambda i, s, v: _keep(info, i) or lazy.replay(i), "spy")
    with lazy.capture(region):
        y = (x.sin() * 2).exp()
    steps = fusion.plan(info["info"])
    groups = [g for k, g in steps if k == "group"]
    assert len(groups) == 1
    stored = [op for op in groups[0].operands if op.store is not None]
    assert len(stored) == 1 and stored[0].slot in info["info"].outputs
    same(y, (x.sin() * 2).exp())


def _keep(d, info):
    d["info"] = info


def test_intermediate_read_later_is_stored():
    def f(x):
        a = x.exp()            # kept: returned
        b = (a * 2).sin()
        return a, b
    x = ember.randn(100)
    (a, b), d = fused_counts(lambda: ember.compile(f)(x))
    same(a, x.exp())
    same(b, (x.exp() * 2).sin())


def test_in_place_on_an_input_inside_a_group():
    def f(x, y):
        x.mul_(2).add_(y)
        return (x * y).tanh()
    x1, y = ember.randn(1000), ember.randn(1000)
    x2 = x1.clone()
    got = ember.compile(f)(x1, y)
    same(got, f(x2, y))
    same(x1, x2)


def test_views_of_other_elements_end_the_group():
    def f(x):
        y = x * 2
        y[1:].add_(y[:-1])     # reads other elements of what it writes: not fused together
        return y.exp()
    x = ember.randn(50)
    same(ember.compile(f)(x), f(x.clone()))


def groups_in(fn, *args):
    d = {}
    region = lazy.Region(lambda i, s, v: _keep(d, i) or lazy.replay(i), ("spy", id(d)))
    with lazy.capture(region):
        out = fn(*args)
    del out
    lazy.forget(("spy", id(d)))
    return [g for k, g in fusion.plan(d["info"]) if k == "group"]


def test_broadcasts_rows_columns_and_slices_fuse_on_cpu():
    def f(x, bias, r, big):
        # bias: one row for all rows (col); r: a value per row (row); big[:, 2:10]: a row
        # per row at another outer stride (strided)
        return ((x + bias).sigmoid() * (x - r) + big[:, 2:10]).tanh()
    x, bias, r, big = ember.randn(33, 8), ember.randn(8), ember.randn(33, 1), ember.randn(33, 12)
    groups = groups_in(f, x, bias, r, big)
    assert [(g.inner, len(g.calls)) for g in groups] == [(8, 6)]
    assert {op.kind for op in groups[0].operands if op.load} == {"flat", "col", "row",
                                                                 "strided"}
    got, d = fused_counts(lambda: ember.compile(f)(x, bias, r, big))
    assert d["groups"] == 1 and d["fused_calls"] == 6
    same(got, f(x, bias, r, big))


@pytest.mark.parametrize("rows", [1, 3, 64, 1000])
def test_one_library_serves_every_row_count_and_length(rows):
    def f(x, s, b):
        return (x * s + b).sigmoid() - b
    for inner in (1, 7, 129):
        x, s, b = ember.randn(rows, inner), ember.randn(rows, 1), ember.randn(inner)
        same(ember.compile(f)(x, s, b), f(x, s, b))


def test_writes_into_a_slice_of_a_larger_buffer_fuse():
    def f(buf, x):
        view = buf[:, 1:5]
        view.mul_(2).add_(x.exp())
        return buf
    b1, x = ember.randn(9, 6), ember.randn(9, 4)
    b2 = b1.clone()
    (g,) = groups_in(f, b1.clone(), x)
    assert any(op.kind == "strided" and op.store is not None for op in g.operands)
    same(ember.compile(f)(b1, x), f(b2, x))


def test_layouts_that_need_three_levels_or_other_strides_are_left_to_kernels():
    def f(x, y):
        return (x + y).exp() * 2
    x = ember.randn(4, 5, 6)
    y3 = ember.randn(4, 1, 6).expand(4, 5, 6)       # broadcast in the middle: 3 levels
    # (the add runs its kernel; exp and mul, contiguous, fuse)
    assert [(g.inner, len(g.calls)) for g in groups_in(f, x, y3)] == [(None, 2)]
    same(ember.compile(f)(x, y3), f(x, y3))
    yt = ember.randn(6, 5).t()                       # inner stride 6
    x2 = ember.randn(5, 6)
    assert [(g.inner, len(g.calls)) for g in groups_in(f, x2, yt)] == [(None, 2)]
    same(ember.compile(f)(x2, yt), f(x2, yt))


def test_devices_without_broadcast_fusion_keep_flat_groups(monkeypatch):
    cpu = backend_for("cpu")
    monkeypatch.setattr(type(cpu), "fuses_broadcasts", False)
    x, b = ember.randn(8, 16), ember.randn(16)
    groups = groups_in(lambda x, b: ((x * 2).exp() + b).relu(), x, b)
    assert [g.inner for g in groups] == [None] and len(groups[0].calls) == 2


# ---- reductions: a chain ending in a sum or mean, and the epilogue over its outputs -----

def rms_norm(x, w):
    return x * ember.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


@pytest.mark.parametrize("shape", [(64, 256), (3, 2050), (5, 17), (2, 4099), (1, 300)])
def test_rms_norm_statistics_fuse_with_their_epilogue(shape):
    x, w = ember.randn(*shape), ember.randn(shape[-1])
    groups = groups_in(rms_norm, x, w)
    # pow, mean; add, rsqrt (the epilogue, per row); mul, mul (the row pass): one kernel.
    # With one row (a full reduction, summed in blocks) the row pass is a group of its own.
    calls = [6] if shape[0] > 1 else [4, 2]
    assert [len(g.calls) for g in groups] == calls and groups[0].inner == shape[-1]
    assert groups[0].reduction.row_pass == (4 if shape[0] > 1 else None)
    got, d = fused_counts(lambda: ember.compile(rms_norm)(x, w))
    same(got, rms_norm(x, w))
    xd = x.numpy().astype(np.float64)
    ref = xd / np.sqrt((xd ** 2).mean(-1, keepdims=True) + 1e-6) * w.numpy()
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [15, 1000, 2048 + 37, 65536, 65537, 200_003])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_full_reductions_add_in_eager_order(n, dtype, op):
    # one output: blocks of 65,536 summed apart and added in order, as the kernel does
    def f(a, b):
        return getattr((a - b) * (a - b), op)()
    dt = getattr(ember, dtype)
    a, b = ember.randn(n, dtype=dt), ember.randn(n, dtype=dt)
    got, d = fused_counts(lambda: ember.compile(f)(a, b))
    assert d["groups"] == 1 and d["kernel_calls"] == 0
    same(got, f(a, b))
    ad, bd = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    ref = getattr(np, op)((ad - bd) ** 2)
    np.testing.assert_allclose(got.item(), ref, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("keepdim", [False, True])
def test_trailing_dims_of_a_3d_tensor_and_a_reduction_that_starts_a_group(keepdim):
    def f(x):
        return (x.sum((1, 2), keepdim=keepdim) * 0.5).exp(), x.abs().mean((-1, -2))
    x = ember.randn(6, 5, 70)
    groups = groups_in(f, x)
    assert [len(g.calls) for g in groups] == [3, 2]
    got, want = ember.compile(f)(x), f(x)
    same(got[0], want[0])
    same(got[1], want[1])


def test_row_pass_in_place_with_the_statistics_returned():
    def f(x, g):
        ms = x.pow(2).mean(-1, keepdim=True)      # returned: stored by the epilogue
        r = (ms + 1e-5).rsqrt()
        x.mul_(r).mul_(g)                          # the row pass writes the input in place
        return ms
    x, g = ember.randn(37, 300), ember.randn(300)
    groups = groups_in(f, x.clone(), g)
    assert [len(g.calls) for g in groups] == [6] and groups[0].reduction.row_pass == 4
    x1, x2 = x.clone(), x.clone()
    same(ember.compile(f)(x1, g), f(x2, g))
    same(x1, x2)
    xd = x.numpy().astype(np.float64)
    ref = xd / np.sqrt((xd ** 2).mean(-1, keepdims=True) + 1e-5) * g.numpy()
    np.testing.assert_allclose(x1.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_a_row_pass_starts_only_at_a_read_of_the_epilogue():
    # x.abs() reads no statistic: it starts a group of its own, which its mean joins
    def f(x):
        return x.sum(-1, keepdim=True).exp(), x.abs().mean(-1)
    x = ember.randn(9, 40)
    assert [len(g.calls) for g in groups_in(f, x)] == [2, 2]
    got, want = ember.compile(f)(x), f(x)
    same(got[0], want[0])
    same(got[1], want[1])


def softmax_by_hand(x):
    m = x.amax(-1, keepdim=True)        # (amax is not fused: its kernel runs first)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize("device", ["cpu", pytest.param("opencl", marks=requires_opencl)])
@pytest.mark.parametrize("shape", [(40, 130), (3, 2050), (1, 300)])
def test_costly_values_the_chain_made_are_stored_for_the_ops_after_it(shape, device):
    x = ember.randn(*shape).to(device)
    groups = groups_in(softmax_by_hand, x)
    # sub, exp, sum; e stored for the division, which runs apart: computing exp again in
    # a row pass would cost more than storing and loading it
    assert [len(g.calls) for g in groups] == [3]
    assert groups[0].reduction is not None and groups[0].reduction.row_pass is None
    got = ember.compile(softmax_by_hand)(x).cpu()
    same(got, softmax_by_hand(x).cpu())
    xd = x.cpu().numpy().astype(np.float64)
    ed = np.exp(xd - xd.max(-1, keepdims=True))
    np.testing.assert_allclose(got.numpy(), ed / ed.sum(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("device", ["cpu", pytest.param("opencl", marks=requires_opencl)])
def test_cheap_values_are_computed_again_and_keep_their_inputs_unwritten(device):
    def f(x, b):
        e = x * 2 - b                   # cheap: computed again by the row pass ...
        s = e.sum(-1, keepdim=True)
        y = (e * s).tanh()
        x.mul_(3)                       # ... so x may not be written in the group
        return y, s
    x, b = ember.randn(6, 70).to(device), ember.randn(70).to(device)
    groups = groups_in(f, x.clone(), b)
    assert [len(g.calls) for g in groups if g.reductions] == [5]
    assert groups[0].rematerialized(2) == [0, 1]
    assert sum(op.store is not None for op in groups[0].operands) == 2     # y and s
    x1, x2 = x.clone(), x.clone()
    got, want = ember.compile(f)(x1, b), f(x2, b)
    same(got[0].cpu(), want[0].cpu())
    same(got[1].cpu(), want[1].cpu())
    same(x1.cpu(), x2.cpu())
    xd, bd = x.cpu().numpy().astype(np.float64), b.cpu().numpy().astype(np.float64)
    ed = xd * 2 - bd
    np.testing.assert_allclose(got[0].cpu().numpy(), np.tanh(ed * ed.sum(-1, keepdims=True)),
                               rtol=1e-4, atol=1e-5)


def layer_norm_by_hand(x, w, b, eps=1e-12):
    # as BERT's original PyTorch port writes it (trailing dim, x - u twice)
    u = x.mean(-1, keepdim=True)
    s = (x - u).pow(2).mean(-1, keepdim=True)
    x = (x - u) / ember.sqrt(s + eps)
    return w * x + b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 256), (3, 2050), (5, 17), (2, 4099), (4, 3, 40)])
def test_a_layer_norm_by_hand_is_one_kernel_of_two_reductions(shape, dtype):
    dt = getattr(ember, dtype)
    x, w, b = (ember.randn(*s, dtype=dt) for s in (shape, shape[-1:], shape[-1:]))
    groups = groups_in(layer_norm_by_hand, x, w, b)
    # mean; sub, pow (row pass 1), mean; add, sqrt (its epilogue: the add and the sqrt
    # come after the second x - u, which starts row pass 2, and move before it); sub,
    # div, mul, add (row pass 2)
    assert [len(g.calls) for g in groups] == [10]
    assert [(r.index, r.row_pass) for r in groups[0].reductions] == [(0, 1), (3, 6)]
    got, d = fused_counts(lambda: ember.compile(layer_norm_by_hand)(x, w, b))
    assert d["groups"] == 1 and d["kernel_calls"] == 0
    same(got, layer_norm_by_hand(x, w, b))
    xd = x.numpy().astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    ref = (xd - mu) / np.sqrt(((xd - mu) ** 2).mean(-1, keepdims=True) + 1e-12)
    ref = ref * w.numpy() + b.numpy()
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol)


def test_three_reductions_and_values_read_across_stages():
    def f(x):
        m1 = x.sum(-1, keepdim=True)                 # stage 1
        a = (x * m1).mean(-1, keepdim=True)          # row pass 1, stage 2
        s = a - m1                                   # epilogue 2 reads epilogue 1's value
        c = (x - s).abs().sum(-1, keepdim=True)      # row pass 2, stage 3
        return (x / c + s).tanh(), c                 # row pass 3
    x = ember.randn(21, 700)
    groups = groups_in(f, x)
    assert [len(g.reductions) for g in groups] == [3] and len(groups[0].calls) == 10
    got, want = ember.compile(f)(x), f(x)
    same(got[0], want[0])
    same(got[1], want[1])
    xd = x.numpy().astype(np.float64)
    m1 = xd.sum(-1, keepdims=True)
    s = (xd * m1).mean(-1, keepdims=True) - m1
    c = np.abs(xd - s).sum(-1, keepdims=True)
    np.testing.assert_allclose(got[1].numpy(), c, rtol=1e-4)
    np.testing.assert_allclose(got[0].numpy(), np.tanh(xd / c + s), rtol=1e-4, atol=1e-5)


def test_a_late_epilogue_write_moves_before_the_row_pass_that_read_the_old_value():
    def f(x):
        u = x.mean(-1, keepdim=True)
        y = x - u           # the row pass starts, reading u
        u.mul_(2)           # an epilogue call after it: runs before it, as a new value
        return y * u, u
    x = ember.randn(6, 50)
    groups = groups_in(f, x)
    assert [len(g.calls) for g in groups] == [4]
    got, want = ember.compile(f)(x), f(x)
    same(got[0], want[0])
    same(got[1], want[1])
    xd = x.numpy().astype(np.float64)
    u = xd.mean(-1, keepdims=True)
    np.testing.assert_allclose(got[0].numpy(), (xd - u) * 2 * u, rtol=1e-5, atol=1e-6)


def test_a_row_pass_value_read_by_the_next_row_pass_is_computed_again():
    def f(x):
        d = x - x.mean(-1, keepdim=True)             # d: made by row pass 1
        v = (d * d).mean(-1, keepdim=True)
        return d * (v + 1e-5).rsqrt()                # d again, in row pass 2
    x = ember.randn(8, 300)
    groups = groups_in(f, x)
    assert [len(g.calls) for g in groups] == [7] and len(groups[0].reductions) == 2
    assert groups[0].rematerialized(4) == [1]        # x - mean, from x and the mean
    got = ember.compile(f)(x)
    same(got, f(x))
    xd = x.numpy().astype(np.float64)
    dd = xd - xd.mean(-1, keepdims=True)
    np.testing.assert_allclose(got.numpy(), dd / np.sqrt((dd * dd).mean(-1, keepdims=True)
                                                         + 1e-5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["columns", "middle", "int", "half", "dtype", "strided"])
def test_reductions_eager_mode_sums_otherwise_run_their_kernel(case):
    x = ember.randn(12, 34)
    f = {"columns": lambda x: (x * 2).sum(0),
         "middle": lambda x: (x * 2).view(3, 4, 34).sum(1),
         "int": lambda x: (x * 2).int().sum(-1),
         "half": lambda x: (x.half() * 2).sum(-1),
         "dtype": lambda x: (x * 2).sum(-1, dtype=ember.float64),
         "strided": lambda x: (x.t() * 2).t().sum(-1)}[case]
    assert all(g.reduction is None for g in groups_in(f, x))
    same(ember.compile(f)(x), f(x))


def test_devices_without_reduction_fusion_keep_the_kernel(monkeypatch):
    monkeypatch.setattr(type(backend_for("cpu")), "fuses_reductions", False)
    x, w = ember.randn(8, 16), ember.randn(16)
    assert all(g.reduction is None for g in groups_in(rms_norm, x, w))


@pytest.mark.parametrize("norm", ["rms", "layer_norm_by_hand"])
def test_reduction_groups_in_a_training_step(norm):
    ember.manual_seed(0)
    lin = ember.nn.Linear(32, 32)
    w = ember.ones(32, requires_grad=True)
    b = ember.zeros(32, requires_grad=True)
    params = (*lin.parameters(), w) + ((b,) if norm != "rms" else ())

    def step(x, y):
        h = rms_norm(lin(x), w) if norm == "rms" else layer_norm_by_hand(lin(x), w, b)
        loss = ((h - y) ** 2).mean()
        loss.backward()
        return loss.detach()
    x, y = ember.randn(16, 32), ember.randn(16, 32)
    got = ember.compile(step)(x, y)
    grads = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    same(got, step(x, y))
    for g, p in zip(grads, params):
        same(g, p.grad)


def test_the_disk_cache_is_reused(tmp_path, monkeypatch):
    import ember_cpu.fusion as F
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    F._LOADED.clear()
    x = ember.randn(33)
    ember.compile(lambda t: (t * 3).cos() + 1)(x)
    built = F.STATS["compiled"]
    assert list(tmp_path.glob("fused_*.so"))
    F._LOADED.clear()
    lazy.clear_cache()
    ember.compile(lambda t: (t * 3).cos() + 1)(x)
    assert F.STATS["compiled"] == built      # loaded from disk, not compiled again


def test_a_graphs_new_kernels_are_built_in_parallel(tmp_path, monkeypatch):
    # a cold graph with several fused groups waits for its slowest build, not their sum:
    # every compiler run starts before the first one is waited for (on 2 or more cores)
    import os
    import ember_cpu.fusion as F
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    events = []
    real = F._Build

    class Logged(real):
        def __init__(self, *a):
            events.append("start")
            super().__init__(*a)

        def finish(self):
            events.append("finish")
            super().finish()
    monkeypatch.setattr(F, "_Build", Logged)
    F._LOADED.clear()
    lazy.clear_cache()
    x, w = ember.randn(8, 8), ember.randn(8, 8)

    def f(t, w):
        h = ((t * 3).cos() + 1) @ w
        return ((h.sin() * 2) @ w).exp() - 1
    before = F.STATS["compiled"]
    same(ember.compile(f)(x, w), f(x, w))
    assert F.STATS["compiled"] - before == 3
    assert events == ["start"] * 3 + ["finish"] * 3
    assert len(list(tmp_path.glob("fused_*.so"))) == 3
    # GCC gets ember's headers precompiled once, next to the libraries
    if F._pch_flags(F._compiler(), F._FLAGS + [f"-I{ember.dispatcher.get_include()}"]):
        assert len(list(tmp_path.glob("prelude_*.h.gch"))) == 1


def test_a_header_change_is_not_served_from_the_disk_cache(tmp_path, monkeypatch):
    # a library built against other headers (an ember upgrade) is compiled again
    import ember.dispatcher as D
    import ember_cpu.fusion as F
    monkeypatch.setenv("EMBER_COMPILE_CACHE", str(tmp_path))
    x = ember.randn(33)
    f = lambda t: (t * 3).sin() + 1     # noqa: E731
    F._LOADED.clear()
    lazy.clear_cache()
    ember.compile(f)(x)
    built = F.STATS["compiled"]
    F._LOADED.clear()
    lazy.clear_cache()
    monkeypatch.setattr(D, "_INCLUDE_DIGEST", "0" * 64)
    same(ember.compile(f)(x), f(x))
    assert F.STATS["compiled"] == built + 1
    assert len(list(tmp_path.glob("fused_*.so"))) == 2


def test_generated_source_is_readable():
    import ember_cpu.fusion as F
    region = lazy.Region(lambda i, s, v: _keep(d, i) or lazy.replay(i), "spy")
    d = {}
    x = ember.randn(10)
    with lazy.capture(region):
        (x * 2).tanh()
    group = [g for k, g in fusion.plan(d["info"]) if k == "group"][0]
    src = F.render_group(group)
    assert "gen::tanh_op" in src and "gen::mul_op" in src and 'extern "C"' in src


def test_no_cpu_compiler_falls_back(monkeypatch):
    cpu = backend_for("cpu")
    monkeypatch.setattr(type(cpu), "compile_elementwise", None)
    x = ember.randn(100)
    got, d = fused_counts(lambda: ember.compile(gelu_tanh)(x))
    assert d["groups"] == 0
    same(got, gelu_tanh(x))


def test_training_step_with_fused_optimizer_math():
    import ember.nn as nn
    import ember.nn.functional as F

    def make():
        ember.manual_seed(0)
        m = nn.Sequential(nn.Linear(10, 20), nn.GELU(approximate="tanh"), nn.Linear(20, 3))
        return m, ember.optim.AdamW(m.parameters(), lr=1e-2, foreach=False)
    (m1, o1), (m2, o2) = make(), make()
    x, y = ember.randn(16, 10), ember.randint(0, 3, (16,))

    def step(m, opt):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    cstep = ember.compile(step)
    for _ in range(3):
        same(cstep(m1, o1), step(m2, o2))
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        same(p1, p2)


@requires_opencl
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_opencl_groups_are_one_kernel_with_eager_bits(dtype):
    import ember_opencl.fusion as OF
    dt = getattr(ember, dtype)
    x = ember.randn(3001).to(dt).to("opencl")
    before = OF.STATS["groups"]
    got = ember.compile(gelu_tanh)(x)
    fused = OF.STATS["groups"] - before
    # float16 computes in float: values kept in registers would skip the rounding to half
    # each op does, so its groups run op by op
    assert fused == (0 if dtype == "float16" else 1)
    same(got.cpu(), gelu_tanh(x).cpu())


@requires_opencl
@pytest.mark.parametrize("rows,inner", [(33, 8), (1, 300), (128, 10), (7, 129)])
def test_opencl_broadcasts_fuse_in_a_two_level_launch(rows, inner):
    import ember_opencl.fusion as OF

    def f(x, bias, r, big):
        # a bias row (col), a value per row (row), a slice at another outer stride
        # (strided), and an in-place write through the slice
        y = ((x + bias).sigmoid() * (x - r) + big[:, 2:inner + 2]).tanh()
        big[:, 2:inner + 2].mul_(0.5)
        return y
    x, bias, r = ember.randn(rows, inner), ember.randn(inner), ember.randn(rows, 1)
    big = ember.randn(rows, inner + 5)
    dev = [t.to("opencl") for t in (x, bias, r, big)]
    big1, big2 = dev[3].clone(), dev[3].clone()
    groups = groups_in(f, *dev[:3], big1.clone())
    # (one row is contiguous throughout: a flat group)
    assert [(g.inner, len(g.calls)) for g in groups] == [(inner if rows > 1 else None, 7)]
    before = OF.STATS["groups"]
    got = ember.compile(f)(*dev[:3], big1)
    assert OF.STATS["groups"] - before == 1
    # eager opencl's bits, and NumPy's values in float64
    same(got.cpu(), f(*dev[:3], big2).cpu())
    same(big1.cpu(), big2.cpu())
    xd, bd, rd, gd = (t.numpy().astype(np.float64) for t in (x, bias, r, big))
    ref = np.tanh(1 / (1 + np.exp(-(xd + bd))) * (xd - rd) + gd[:, 2:inner + 2])
    np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-5, atol=1e-6)


@requires_opencl
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opencl_groups_pass_bool_values_between_float_ops(dtype):
    import ember_opencl.fusion as OF

    def f(x, g, keep):
        mask = x <= 0.25                    # a bool value, stored: it is returned
        y = ember.where(mask, g * 0.5, x.exp())
        return y.where(keep, -y), mask      # a bool input read from memory
    dt = getattr(ember, dtype)
    x, g = ember.randn(37, 19, dtype=dt), ember.randn(37, 19, dtype=dt)
    keep = ember.randn(19) > 0
    dev = [t.to("opencl") for t in (x, g, keep)]
    before = OF.STATS["groups"]
    y, mask = ember.compile(f)(*dev)
    assert OF.STATS["groups"] - before == 1
    y2, mask2 = f(*dev)
    same(y.cpu(), y2.cpu())
    assert mask.dtype == ember.bool and mask.cpu().tolist() == mask2.cpu().tolist()
    xd, gd = x.numpy().astype(np.float64), g.numpy().astype(np.float64)
    yd = np.where(xd <= 0.25, gd * 0.5, np.exp(xd))
    np.testing.assert_allclose(y.cpu().numpy(), np.where(keep.numpy(), yd, -yd), rtol=1e-6)


@requires_opencl
@pytest.mark.parametrize("plan", ["wi", "wg"])
@pytest.mark.parametrize("shape", [(64, 256), (3, 2050), (5, 17), (40, 70000), (1, 300)])
def test_opencl_reductions_fuse_and_sum_as_the_reduce_kernels(shape, plan, monkeypatch):
    """Fused sums follow the plan eager mode's reduce kernels take for the shape: a
    work-item per row in order ("wi", CPU devices), or a work-group per row and its
    local-memory tree ("wg", GPUs: forced here on PoCL, for eager and compiled alike)."""
    import ember_opencl.fusion as OF
    from ember_opencl import _runtime as rt
    from ember_opencl.ops.reduce import plan_of
    for d in rt.devices():
        monkeypatch.setattr(d, "is_cpu", plan == "wi")
    dev = [t.to("opencl") for t in (ember.randn(*shape), ember.randn(shape[-1]),
                                    ember.randn(shape[-1]))]
    eager_plan = plan_of(rt.device(0), shape[0], shape[-1])
    for f, args in ((rms_norm, dev[:2]), (layer_norm_by_hand, dev)):
        before = OF.STATS["groups"]
        got = ember.compile(f)(*args)
        # one kernel (with one row, the row passes are groups of their own)
        assert OF.STATS["groups"] - before == (1 if shape[0] > 1 else
                                               2 if f is rms_norm else 3)
        same(got.cpu(), f(*args).cpu())
    x, w, b = (t.cpu().numpy().astype(np.float64) for t in dev)
    mu = x.mean(-1, keepdims=True)
    ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-12) * w + b
    np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    # (rows of 32 or fewer elements are walked by one work-item on every device)
    assert eager_plan == ("wi" if plan == "wi" or shape[-1] <= 32 else "wg")


@requires_opencl
@pytest.mark.parametrize("n", [300, 65535, 65536])
def test_opencl_full_reductions_fuse_unless_the_kernel_splits_them(n):
    import ember_opencl.fusion as OF

    def f(x):
        return (x * 2 - 1).sum(), x.exp().mean()
    x = ember.randn(n).to("opencl")
    before = OF.STATS["groups"]
    got = ember.compile(f)(x)
    # 65,536 elements and more: the reduce kernel sums chunks, then their partials; the
    # group is left to it
    assert OF.STATS["groups"] - before == (2 if n < 65536 else 0)
    for a, b in zip(got, f(x)):
        same(a.cpu(), b.cpu())


@requires_opencl
def test_opencl_runtime_attributes_and_in_place_inputs():
    def f(a, b, v):
        a.mul_(2)
        return ember.addcmul(a, b, a, value=v).sigmoid() * b
    b = ember.randn(500).to("opencl")
    for v in (0.5, -3.0):
        a1 = ember.randn(500).to("opencl")
        a2 = a1.clone()
        same(ember.compile(f)(a1, b, v).cpu(), f(a2, b, v).cpu())
        same(a1.cpu(), a2.cpu())


def test_output_code_log_shows_the_generated_kernel(ember_logs):
    import ember_cpu.fusion as F
    F._LOADED.clear()
    with ember_logs("ember.compile.output_code", output_code=True) as seen:
        ember.compile(lambda t: (t * 5).cos() - t)(ember.randn(17))
    text = "\n".join(seen)
    assert "generated kernel of a fused group" in text and "gen::cos_op" in text
