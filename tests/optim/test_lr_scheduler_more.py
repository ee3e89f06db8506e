"""ember.optim.lr_scheduler against torch.optim.lr_scheduler, part two: CyclicLR and
CosineAnnealingWarmRestarts (rates, momenta, state dicts, errors), and every scheduler
driving one of the newer optimizers."""
import inspect
import math
import warnings

import pytest
import torch

import ember
from ember.optim import lr_scheduler as esched
from torch.optim import lr_scheduler as tsched

STEPS = 40


def make_optimizer(lib, kind="SGD"):
    """Two param groups with different rates, so per-group handling is exercised."""
    groups = [{"params": [lib.zeros(2, requires_grad=True)]},
              {"params": [lib.zeros(3, requires_grad=True)], "lr": 0.05}]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    if kind == "SGD-nomomentum":
        return lib.optim.SGD(groups, lr=0.1)
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=0.1, betas=(0.9, 0.99))
    return getattr(lib.optim, kind)(groups, lr=0.1)


class Scale:
    """A callable object: its attributes go into CyclicLR's state_dict."""

    def __init__(self, base):
        self.base = base

    def __call__(self, x):
        return self.base ** x


# name -> (optimizer kind, factory(scheduler module, optimizer))
CASES = {
    "CyclicLR-triangular": ("SGD", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                           step_size_up=4)),
    "CyclicLR-triangular2": ("SGD", lambda m, o: m.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3, step_size_down=5,
        mode="triangular2", base_momentum=0.7, max_momentum=0.95)),
    "CyclicLR-exp_range": ("Adam", lambda m, o: m.CyclicLR(o, base_lr=0.001, max_lr=0.01,
                                                           step_size_up=5, mode="exp_range",
                                                           gamma=0.97)),
    "CyclicLR-no-momentum": ("SGD-nomomentum", lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=2, cycle_momentum=False)),
    "CyclicLR-scale_fn-cycle": ("SGD", lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=Scale(0.8))),
    "CyclicLR-scale_fn-iterations": ("SGD", lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=Scale(0.95),
        scale_mode="iterations")),
    "CosineAnnealingWarmRestarts": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=7)),
    "CosineAnnealingWarmRestarts-mult": ("Adam", lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001)),
    # the older schedulers on the optimizers added in this round
    "StepLR-NAdam": ("NAdam", lambda m, o: m.StepLR(o, step_size=4, gamma=0.5)),
    "OneCycleLR-RAdam": ("RAdam", lambda m, o: m.OneCycleLR(o, max_lr=0.5,
                                                             total_steps=STEPS)),
    "CosineAnnealingLR-Adadelta": ("Adadelta", lambda m, o: m.CosineAnnealingLR(o, T_max=9)),
    "SequentialLR-warm-restarts": ("SGD", lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
            m.CosineAnnealingWarmRestarts(o, T_0=6)], milestones=[5])),
    "ChainedScheduler-cyclic": ("Adamax", lambda m, o: m.ChainedScheduler(
        [m.ExponentialLR(o, gamma=0.95), m.ConstantLR(o, factor=0.5, total_iters=3)])),
}


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum", -1.0)
            for g in opt.param_groups]


def trajectory(lib, case, steps=STEPS):
    kind, build = CASES[case]
    opt = make_optimizer(lib, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = build(esched if lib is ember else tsched, opt)
    out = [(list(sched.get_last_lr()), momenta(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((list(sched.get_last_lr()), momenta(opt)))
    return out, sched, opt


def assert_close_seq(got, want):
    assert len(got) == len(want)
    for i, ((g_lr, g_m), (w_lr, w_m)) in enumerate(zip(got, want)):
        assert g_lr == pytest.approx(w_lr, rel=1e-12, abs=1e-15), f"step {i}"
        assert g_m == pytest.approx(w_m, rel=1e-12, abs=1e-15), f"step {i}"


@pytest.mark.parametrize("case", CASES)
def test_schedule_matches_torch(case):
    want, _, _ = trajectory(torch, case)
    got, _, _ = trajectory(ember, case)
    assert_close_seq(got, want)


def layout(sd):
    return sorted((k, layout(v) if isinstance(v, dict) else
                   [layout(x) for x in v] if isinstance(v, list) and v and
                   isinstance(v[0], dict) else None) for k, v in sd.items())


@pytest.mark.parametrize("case", CASES)
def test_state_dict_matches_torch(case):
    _, t_sched, _ = trajectory(torch, case, steps=5)
    _, e_sched, _ = trajectory(ember, case, steps=5)
    t_sd, e_sd = t_sched.state_dict(), e_sched.state_dict()
    assert layout(e_sd) == layout(t_sd)
    for key in ("last_epoch", "_step_count", "base_lrs", "T_cur", "T_i", "max_lrs",
                "total_size", "step_ratio", "scale_mode", "_scale_fn_custom"):
        if key in t_sd:
            assert e_sd[key] == pytest.approx(t_sd[key]) if key != "_scale_fn_custom" \
                else e_sd[key] == t_sd[key], key


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith(("Cyclic", "Cosine"))])
def test_state_dict_round_trip(case):
    """Save after 7 steps, load into a fresh scheduler over a restored optimizer, and go
    on: the rates continue as if uninterrupted (and as torch's do)."""
    kind, build = CASES[case]
    results = []
    for lib, mod in ((torch, tsched), (ember, esched)):
        opt = make_optimizer(lib, kind)
        sched = build(mod, opt)
        for _ in range(7):
            opt.step()
            sched.step()
        opt_sd, sched_sd = opt.state_dict(), sched.state_dict()
        opt2 = make_optimizer(lib, kind)
        opt2.load_state_dict(opt_sd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched2 = build(mod, opt2)
        sched2.load_state_dict(sched_sd)
        seq = []
        for _ in range(10):
            opt2.step()
            sched2.step()
            seq.append((list(sched2.get_last_lr()), momenta(opt2)))
        results.append(seq)
    assert_close_seq(results[1], results[0])


@pytest.mark.parametrize("epochs", [
    [0.5, 1.0, 2.7, 3.0, 3.5, 10.2, 20.0, 2.0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 45, 46],
])
@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_with_epoch(epochs, T_mult):
    """``step(epoch)`` with fractional / jumping epochs, and plain steps after it."""
    results = []
    for lib, mod in ((torch, tsched), (ember, esched)):
        opt = make_optimizer(lib)
        sched = mod.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=T_mult, eta_min=0.001)
        seq = []
        for e in epochs:
            opt.step()
            sched.step(e)
            seq.append((list(sched.get_last_lr()), sched.last_epoch, sched.T_cur, sched.T_i))
        sched.step()
        seq.append((list(sched.get_last_lr()), sched.last_epoch, sched.T_cur, sched.T_i))
        results.append(seq)
    for (e_lr, *e_rest), (t_lr, *t_rest) in zip(results[1], results[0]):
        assert e_lr == pytest.approx(t_lr, rel=1e-12)
        assert e_rest == pytest.approx(t_rest, rel=1e-12)


def test_cyclic_lr_sets_initial_values():
    """Construction puts base_lr into the groups and max_momentum into momentum/betas."""
    for kind in ("SGD", "Adam"):
        seen = []
        for lib, mod in ((torch, tsched), (ember, esched)):
            opt = make_optimizer(lib, kind)
            mod.CyclicLR(opt, base_lr=[0.2, 0.3], max_lr=1.0, base_momentum=0.6,
                         max_momentum=0.85)
            seen.append([{k: v for k, v in g.items() if k != "params"}
                         for g in opt.param_groups])
        assert seen[1] == seen[0]


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result compared
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("kind,build", [
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="sawtooth")),
    ("Adagrad", lambda m, o: m.CyclicLR(o, base_lr=0.1, max_lr=1.0)),
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=[0.1], max_lr=1.0)),
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=0.1, max_lr=[1.0, 2.0, 3.0])),
    ("SGD", lambda m, o: m.CyclicLR(object(), base_lr=0.1, max_lr=1.0)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2.5)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=0)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=1.5)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, eta_min="0")),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3).step(-1)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, last_epoch=4)),
], ids=["bad-mode", "adagrad-no-momentum", "short-base_lr", "long-max_lr",
        "not-an-optimizer", "T_0=0", "T_0-float", "T_mult=0", "T_mult-float", "eta_min-str",
        "negative-epoch", "resume-without-initial_lr"])
def test_errors_match_torch(kind, build):
    want = error_of(lambda: build(tsched, make_optimizer(torch, kind)))
    got = error_of(lambda: build(esched, make_optimizer(ember, kind)))
    assert want is not None
    assert got == want


def test_get_lr_outside_step_warns():
    for lib, mod in ((torch, tsched), (ember, esched)):
        sched = mod.CosineAnnealingWarmRestarts(make_optimizer(lib), T_0=3)
        with pytest.warns(UserWarning, match="get_last_lr"):
            sched.get_lr()


def test_warm_restarts_tensor_lr_updated_in_place():
    for lib, mod in ((torch, tsched), (ember, esched)):
        lr = lib.tensor(0.1)
        opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=lr)
        sched = mod.CosineAnnealingWarmRestarts(opt, T_0=4)
        for _ in range(2):
            opt.step()
            sched.step()
        assert opt.param_groups[0]["lr"] is lr
        assert math.isclose(float(lr), 0.1 * (1 + math.cos(math.pi * 2 / 4)) / 2,
                            rel_tol=1e-6)


@pytest.mark.parametrize("name", tsched.__all__)
def test_signatures_match_torch(name):
    """Every scheduler exists and takes PyTorch's arguments (names, order, defaults)."""
    def sig(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    for meth in ("__init__", "step", "get_last_lr", "state_dict", "load_state_dict"):
        assert sig(getattr(getattr(esched, name), meth)) == \
            sig(getattr(getattr(tsched, name), meth)), meth
