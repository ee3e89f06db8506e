"""The backward pass of a compiled region is captured and compiled too: autograd nodes
recorded inside ``ember.compile`` carry their region's compiler, and a backward pass that
reaches one records the rest of the pass (fused like a forward graph) instead of running
it op by op. Results are checked against eager mode bit for bit (the fused kernels
compute what the op-by-op kernels compute), through hooks that read values, double
backward, ``autograd.grad``, ``retain_graph`` and ``fullgraph``."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatcher import fusion, lazy


def same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.GELU(approximate="tanh"), nn.Linear(32, 32),
                         nn.SiLU(), nn.LayerNorm(32), nn.Linear(32, 3))


def cnn():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10), nn.Tanh(),
                         nn.Linear(10, 3))


def counts(fn):
    before = dict(fusion.STATS)
    fn()
    return {k: fusion.STATS[k] - before[k] for k in before}


# (the CNN's backward has no run of same-sized elementwise calls to fuse: it is captured
# and replayed; the MLP's GELU, SiLU and LayerNorm backward chains fuse)
@pytest.mark.parametrize("make,shape,fuses", [(mlp, (16, 10), True),
                                              (cnn, (8, 1, 8, 8), False)])
def test_training_a_compiled_model_matches_eager_bit_for_bit(make, shape, fuses):
    lazy.clear_cache()
    ember.manual_seed(1)
    x, y = ember.randn(*shape), ember.randint(0, 3, (shape[0],))
    eager, compiled = make(), make()
    run = ember.compile(compiled)
    opts = [ember.optim.Adam(m.parameters(), lr=1e-2) for m in (eager, compiled)]
    backward_fused = 0
    for step in range(4):
        losses = []
        for f, opt in zip((eager, run), opts):
            opt.zero_grad()
            loss = F.cross_entropy(f(x), y)
            d = counts(loss.backward)
            if f is run:
                backward_fused += d["fused_calls"]
            opt.step()
            losses.append(loss)
        same(losses[0], losses[1])
    for a, b in zip(eager.parameters(), compiled.parameters()):
        same(a, b)
        same(a.grad, b.grad)
    for a, b in zip(eager.buffers(), compiled.buffers()):
        same(a, b)
    assert (backward_fused > 0) == fuses


def test_backward_graphs_are_cached_by_structure():
    lazy.clear_cache()
    m = mlp()
    run = ember.compile(m)
    x = ember.randn(4, 10)
    run(x).sum().backward()
    compiles = lazy.STATS["compiles"]
    hits = lazy.STATS["hits"]
    for _ in range(3):
        m.zero_grad()
        run(x).sum().backward()
    assert lazy.STATS["compiles"] == compiles
    assert lazy.STATS["hits"] >= hits + 6      # a forward and a backward graph per step


def test_hooks_that_read_values_break_the_backward_graph_and_agree():
    seen_c, seen_e = [], []

    def f(x, seen):
        h = (x * 3).tanh()
        h.register_hook(lambda g: seen.append(float(g.abs().sum())))
        return (h * h).sum()
    x_c = ember.randn(6, requires_grad=True)
    x_e = x_c.detach().clone().requires_grad_()
    ember.compile(lambda x: f(x, seen_c))(x_c).backward()
    f(x_e, seen_e).backward()
    assert seen_c == seen_e
    same(x_c.grad, x_e.grad)


def test_double_backward_and_autograd_grad():
    def f(x):
        return (x.sin() * x.exp()).sum()
    x = ember.randn(5, requires_grad=True)
    (g_c,) = ember.autograd.grad(ember.compile(f)(x), x, create_graph=True)
    (g_e,) = ember.autograd.grad(f(x), x, create_graph=True)
    same(g_c, g_e)
    (h_c,) = ember.autograd.grad(g_c.sum(), x)
    (h_e,) = ember.autograd.grad(g_e.sum(), x)
    same(h_c, h_e)


def test_retain_graph_runs_the_captured_backward_twice():
    x = ember.randn(7, requires_grad=True)
    loss = ember.compile(lambda t: (t.tanh() * 2 + t).pow(2).sum())(x)
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()
    same(x.grad, first * 2)


def test_fullgraph_applies_to_the_forward_only():
    seen = []

    def f(x):
        h = x.exp()
        h.register_hook(lambda g: seen.append(g.sum().item()))
        return h.sum()
    x = ember.randn(3, requires_grad=True)
    ember.compile(f, fullgraph=True)(x).backward()
    assert len(seen) == 1
    same(x.grad, x.detach().exp())


def test_backward_inside_a_compiled_step_joins_its_graph():
    m = mlp()
    x = ember.randn(4, 10)

    @ember.compile
    def step():
        loss = ember.compile(m)(x).sum()
        loss.backward()
        return loss
    step()
    grads = [p.grad.clone() for p in m.parameters()]
    m2 = mlp()
    m2(x).sum().backward()
    for a, b in zip(grads, m2.parameters()):
        same(a, b.grad)


def test_errors_in_the_backward_are_raised_and_the_region_is_left():
    class Boom(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")
    x = ember.randn(3, requires_grad=True)
    loss = ember.compile(lambda t: Boom.apply(t.sin()).sum())(x)
    with pytest.raises(ValueError, match="boom"):
        loss.backward()
    assert not lazy.capturing()
    y = ember.randn(3, requires_grad=True)
    (y * 2).sum().backward()          # eager autograd works after the failure
    same(y.grad, ember.full((3,), 2.0))


@pytest.mark.parametrize("make", [
    lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    lambda p: ember.optim.Adam(p, lr=1e-2),
    lambda p: ember.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    lambda p: ember.optim.RMSprop(p, lr=1e-2),
    lambda p: ember.optim.Adagrad(p, lr=1e-2)], ids=["sgd", "adam", "adamw", "rmsprop",
                                                     "adagrad"])
def test_compiled_optimizer_steps_match_eager(make):
    """``ember.compile(opt.step)``: SGD and Adam run their one fused kernel for every
    parameter; the optimizers written with elementwise ops get fused groups."""
    results = []
    for compiled in (False, True):
        lazy.clear_cache()
        ember.manual_seed(0)
        m = nn.Linear(8, 4)
        opt = make(m.parameters())
        step = ember.compile(opt.step) if compiled else opt.step
        x = ember.randn(16, 8)
        for _ in range(4):
            opt.zero_grad()
            m(x).square().mean().backward()
            step()
        results.append(list(m.parameters()))
    for a, b in zip(*results):
        same(a, b)


# ---- recomputing instead of saving -------------------------------------------------------

def gelu(x):
    return 0.5 * x * (1 + ember.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


opencl = pytest.mark.skipif(not ember.opencl.is_available(), reason="no OpenCL device")


@opencl
def test_elementwise_values_saved_for_backward_are_recomputed_not_kept():
    """What only autograd saves, made by elementwise ops from the graph's inputs, is left
    out of the forward graph and recomputed inside the backward one: between forward and
    backward a compiled GELU holds its output alone, eager mode its five intermediates
    too (device memory, the allocator's count); gradients are bit-identical."""
    held, grads = {}, {}
    for mode in ("eager", "compiled"):
        lazy.clear_cache()
        ember.manual_seed(0)
        x = ember.randn(4096, device="opencl", requires_grad=True)
        f = ember.compile(gelu) if mode == "compiled" else gelu
        ember.opencl.synchronize()
        start = ember.opencl.memory_allocated()
        before = dict(lazy.STATS)
        y = f(x)
        held[mode] = ember.opencl.memory_allocated() - start
        y.sum().backward()
        grads[mode] = x.grad
        del x, y
        if mode == "compiled":
            assert lazy.STATS["recomputable"] - before["recomputable"] >= 5
            assert lazy.STATS["recomputed"] - before["recomputed"] >= 5
    nbytes = 4096 * 4
    assert held["compiled"] == nbytes            # y
    assert held["eager"] >= 6 * nbytes           # y and what the ops saved
    same(grads["eager"].cpu(), grads["compiled"].cpu())


def test_recomputed_values_agree_through_double_backward_and_retain_graph():
    results = []
    for f in (gelu, ember.compile(gelu)):
        ember.manual_seed(0)
        x = ember.randn(64, requires_grad=True)
        y = f(x)
        (g,) = ember.autograd.grad(y.sum(), x, create_graph=True, retain_graph=True)
        (gg,) = ember.autograd.grad(g.sum(), x, retain_graph=True)
        y.sum().backward()
        results.append((g, gg, x.grad))
    for a, b in zip(*results):
        same(a, b)


def test_recomputation_refuses_inputs_changed_in_place():
    """sin saves its input x * 2; the compiled graph recomputes it from x instead, so an
    in-place change of x before backward is reported (eager mode, which kept x * 2, would
    not mind: torch.compile's saved inputs behave the same way)."""
    f = ember.compile(lambda x: (x * 2).sin())
    w = ember.randn(8, requires_grad=True)
    a, b = w * 1, w * 1
    y, y2 = f(a), f(b)
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.sum().backward()
    y.sum().backward()      # (its input was not changed)
    same(w.grad, (w * 2).cos() * 2)


def test_a_backward_that_cannot_be_captured_recomputes_eagerly():
    """When the backward runs eagerly (here: another capture holds the lock), the saved
    tensor is recomputed when it is unpacked."""
    results = []
    for compiled in (False, True):
        ember.manual_seed(0)
        x = ember.randn(256, requires_grad=True)
        y = (ember.compile(gelu) if compiled else gelu)(x)
        if compiled:
            assert lazy._LOCK.acquire(blocking=False)
            before = lazy.STATS["recomputed"]
            try:
                y.sum().backward()
            finally:
                lazy._LOCK.release()
            assert lazy.STATS["recomputed"] > before
        else:
            y.sum().backward()
        results.append(x.grad)
    same(*results)
