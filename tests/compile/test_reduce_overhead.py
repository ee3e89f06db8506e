"""``mode="reduce-overhead"``: after a warm-up call and a captured call, calls whose
arguments match replay the captured kernels without running Python (PyTorch's CUDA-graph
mode, on every device). Checked against the same function run eagerly: results, parameter
updates and random numbers over several steps; the guard (a new shape captures again);
arguments rebound on each replay; and the calls that cannot be replayed (graph breaks,
tensors returned that require grad) running in the default mode instead."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from compile_helpers import requires_opencl
from ember.dispatcher import lazy


@pytest.fixture(autouse=True)
def _fresh():
    lazy.clear_cache()
    yield


def same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def counted(fn):
    """``fn`` and a list that grows by one each time its Python body runs."""
    runs = []

    def body(*a, **k):
        runs.append(1)
        return fn(*a, **k)
    return body, runs


def test_small_op_chain_replays_with_eager_gradients():
    rng = np.random.default_rng(0)
    ws = [ember.tensor(rng.standard_normal((16, 16)) * 0.3, dtype=ember.float32,
                       requires_grad=True) for _ in range(20)]
    x = ember.tensor(rng.standard_normal((16, 16)), dtype=ember.float32)

    def step():
        h = x
        for w in ws:
            h = (h @ w).tanh()
        h.sum().backward()
        g = [w.grad.clone() for w in ws]
        for w in ws:
            w.grad = None
        return g
    want = step()
    body, runs = counted(step)
    cstep = ember.compile(body, mode="reduce-overhead")
    for _ in range(5):
        got = cstep()
        for a, b in zip(got, want):
            same(a, b)
    assert len(runs) == 2          # a warm-up and a capture; then replays


DEVICES = ["cpu", pytest.param("opencl", marks=requires_opencl)]


def _model_and_opt(kind, device="cpu"):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2),
                      nn.Linear(16, 4)).to(device)
    opt = (ember.optim.Adam(m.parameters(), lr=1e-2) if kind == "adam"
           else ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9))
    return m, opt


def _train_step(m, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_training_steps_replay_to_eager_parameters(kind, device):
    (m1, o1), (m2, o2) = _model_and_opt(kind, device), _model_and_opt(kind, device)
    x, y = ember.randn(32, 8).to(device), ember.randint(0, 4, (32,)).to(device)
    cstep = ember.compile(_train_step, mode="reduce-overhead")
    for i in range(6):
        if i >= 3:          # a new batch in new memory: the arguments' steps rebind it
            x, y = ember.randn(32, 8).to(device), ember.randint(0, 4, (32,)).to(device)
        ember.manual_seed(100 + i)        # dropout's masks: the same draws either way
        got = cstep(m1, o1, x, y).clone()
        ember.manual_seed(100 + i)
        want = _train_step(m2, o2, x, y)
        same(got.cpu(), want.cpu())
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        same(p1.cpu(), p2.cpu())


def _plan_steps(cstep):
    (plan,) = cstep._ember_replayer.plans
    return plan.run.steps


@requires_opencl
def test_opencl_replays_repeat_recorded_launches():
    """On opencl the launches of steps whose memory is fixed are recorded once and
    enqueued again without the kernels' Python code; the steps that read the arguments,
    draw random numbers or may report a kernel error run their code on every replay."""
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5)).to("opencl")
    opt = ember.optim.SGD(m.parameters(), lr=0.05)
    m2 = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5)).to("opencl")
    m2.load_state_dict(m.state_dict())
    opt2 = ember.optim.SGD(m2.parameters(), lr=0.05)
    x, y = ember.randn(16, 20).to("opencl"), ember.randint(0, 5, (16,)).to("opencl")
    body, runs = counted(_train_step)
    cstep = ember.compile(body, mode="reduce-overhead")
    for _ in range(5):
        same(cstep(m, opt, x, y).cpu(), _train_step(m2, opt2, x, y).cpu())
    assert len(runs) == 2
    steps = _plan_steps(cstep)
    recorded = [s for s in steps if s[2] is not None]
    # the matmuls, the bias and ReLU groups, the gradients and the updates are recorded;
    # the loss's steps on the labels (an argument), gather and scatter (error records) not
    assert len(recorded) >= len(steps) // 2
    assert any(s[2].launches > 1 for s in recorded)          # a GEMM packs, then multiplies
    for p1, p2 in zip(m.parameters(), m2.parameters()):
        same(p1.cpu(), p2.cpu())


@requires_opencl
def test_opencl_replayed_kernel_errors_are_still_reported():
    x = ember.randn(4, 6).to("opencl")

    def f(i):
        # gather reads fixed memory only (x, and the buffer i + 1 is written to): a
        # candidate for recording, which its error record rules out
        return x.gather(1, i + 1) * 2
    cf = ember.compile(f, mode="reduce-overhead")
    for _ in range(3):
        i = ember.randint(0, 5, (4, 3)).to("opencl")
        same(cf(i).cpu(), f(i).cpu())
    with pytest.raises(IndexError, match="out of bounds"):
        cf(ember.full((4, 3), 5).to("opencl")).cpu()


@pytest.mark.parametrize("device", DEVICES)
def test_replays_allocate_no_buffers(device, monkeypatch):
    """A plan holds memory for all its buffers (outputs and intermediates) for its life:
    replays ask for none. (Kernels whose code runs on each replay may still take scratch
    memory of their own.)"""
    m = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 3)).to(device)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    x, y = ember.randn(8, 10).to(device), ember.randint(0, 3, (8,)).to(device)
    cstep = ember.compile(_train_step, mode="reduce-overhead")
    for _ in range(3):
        cstep(m, opt, x, y)
    asked = []
    real = lazy.allocate
    monkeypatch.setattr(lazy, "allocate", lambda *a: asked.append(a) or real(*a))
    for _ in range(20):
        cstep(m, opt, x, y)
    assert asked == []


def test_arguments_are_rebound_on_each_replay():
    body, runs = counted(lambda a, b: (a * b).exp() + a)
    f = ember.compile(body, mode="reduce-overhead")
    for i in range(5):
        a, b = ember.randn(100), ember.randn(100)
        same(f(a, b).clone(), (a * b).exp() + a)
    assert len(runs) == 2


def test_outputs_are_static_memory_overwritten_by_the_next_replay():
    f = ember.compile(lambda a: a * 2, mode="reduce-overhead")
    f(ember.ones(3))
    first = f(ember.ones(3))
    second = f(ember.full((3,), 5.0))       # a replay writes the same memory
    assert second is first
    same(first, ember.full((3,), 10.0))


def test_a_guard_miss_captures_again():
    body, runs = counted(lambda a: (a + 1).sin())
    f = ember.compile(body, mode="reduce-overhead")
    for n in (4, 4, 4, 7, 7, 7, 4):
        a = ember.randn(n)
        same(f(a).clone(), (a + 1).sin())
    # 4: warm-up, capture, replay; 7: capture, replays; 4 again: 4's capture replays
    assert len(runs) == 3


def test_non_tensor_arguments_are_guarded():
    body, runs = counted(lambda a, k: a * k)
    f = ember.compile(body, mode="reduce-overhead")
    a = ember.ones(2)
    for k in (2.0, 2.0, 2.0, 3.0):
        same(f(a, k).clone(), a * k)
    assert len(runs) == 3


def test_graph_breaks_run_in_the_default_mode():
    body, runs = counted(lambda a: a * a.sum().item())
    f = ember.compile(body, mode="reduce-overhead")
    for _ in range(4):
        a = ember.randn(5)
        same(f(a), a * a.sum().item())
    assert len(runs) == 4


def test_returning_a_tensor_that_requires_grad_is_not_replayed():
    w = ember.randn(3, requires_grad=True)
    body, runs = counted(lambda a: (a * w).sum())
    f = ember.compile(body, mode="reduce-overhead")
    for _ in range(4):
        out = f(ember.ones(3))
        out.backward()
    same(w.grad, ember.full((3,), 4.0))
    assert len(runs) == 4


def test_grad_mode_is_guarded():
    w = ember.randn(3, requires_grad=True)
    body, runs = counted(lambda a: (a * w).detach() * 2)
    f = ember.compile(body, mode="reduce-overhead")
    for _ in range(3):
        f(ember.ones(3))
    with ember.no_grad():
        same(f(ember.ones(3)), w.detach() * 2)
    assert len(runs) == 3
