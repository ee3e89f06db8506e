"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the same scheduler settings,
driving an ember and a torch optimizer with the same settings, must produce the same
learning-rate (and momentum) sequence, step by step."""
import copy
import math
import warnings

import pytest
import torch

import ember
import ember.optim as eoptim
from ember.optim import lr_scheduler as esched
from torch.optim import lr_scheduler as tsched

STEPS = 30


def make_optimizer(lib, kind="SGD"):
    """Two param groups with different rates, so per-group handling is exercised."""
    optim = eoptim if lib == "ember" else torch.optim
    mod = ember if lib == "ember" else torch
    groups = [{"params": [mod.zeros(2, requires_grad=True)]},
              {"params": [mod.zeros(3, requires_grad=True)], "lr": 0.05}]
    if kind == "SGD":
        return optim.SGD(groups, lr=0.1, momentum=0.9)
    return optim.Adam(groups, lr=0.1, betas=(0.9, 0.99))


class Halve:
    """A callable object: its attributes go into LambdaLR's state_dict."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 ** (epoch // self.every)


# name -> (optimizer kind, factory(module, optimizer)); module is ember's or torch's
# lr_scheduler, so the very same arguments build both
CASES = {
    "StepLR": ("SGD", lambda m, o: m.StepLR(o, step_size=4, gamma=0.5)),
    "MultiStepLR": ("SGD", lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3)),
    "ExponentialLR": ("SGD", lambda m, o: m.ExponentialLR(o, gamma=0.9)),
    "CosineAnnealingLR": ("SGD", lambda m, o: m.CosineAnnealingLR(o, T_max=10)),
    "CosineAnnealingLR-eta_min": ("SGD", lambda m, o: m.CosineAnnealingLR(o, T_max=7,
                                                                         eta_min=0.01)),
    "LambdaLR": ("SGD", lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 1 / (1 + e))),
    "LambdaLR-per-group": ("SGD", lambda m, o: m.LambdaLR(
        o, lr_lambda=[lambda e: 0.9 ** e, Halve(5)])),
    "MultiplicativeLR": ("SGD", lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.95)),
    "ConstantLR": ("SGD", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4)),
    "LinearLR": ("SGD", lambda m, o: m.LinearLR(o, start_factor=0.1, total_iters=8)),
    "PolynomialLR": ("SGD", lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0)),
    "OneCycleLR-cos": ("SGD", lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5],
                                                         total_steps=STEPS)),
    "OneCycleLR-linear": ("SGD", lambda m, o: m.OneCycleLR(
        o, max_lr=0.8, epochs=3, steps_per_epoch=10, anneal_strategy="linear", pct_start=0.25,
        base_momentum=0.8, max_momentum=0.9)),
    "OneCycleLR-three-phase": ("SGD", lambda m, o: m.OneCycleLR(
        o, max_lr=1.0, total_steps=STEPS, three_phase=True, div_factor=10.0,
        final_div_factor=100.0)),
    "OneCycleLR-adam-betas": ("Adam", lambda m, o: m.OneCycleLR(o, max_lr=0.01,
                                                                total_steps=STEPS)),
    "OneCycleLR-no-momentum": ("SGD", lambda m, o: m.OneCycleLR(
        o, max_lr=0.3, total_steps=STEPS, cycle_momentum=False)),
    "SequentialLR": ("SGD", lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.2, total_iters=5), m.CosineAnnealingLR(o, T_max=20)],
        milestones=[5])),
    "ChainedScheduler": ("SGD", lambda m, o: m.ChainedScheduler(
        [m.ExponentialLR(o, gamma=0.95), m.StepLR(o, step_size=6, gamma=0.5)])),
}


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def assert_same_schedule(e_opt, t_opt, e_sched, t_sched, msg):
    assert e_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12), msg
    assert [g["lr"] for g in e_opt.param_groups] == pytest.approx(
        [g["lr"] for g in t_opt.param_groups], rel=1e-12), msg
    assert momenta(e_opt) == pytest.approx(momenta(t_opt), rel=1e-12), msg


@pytest.mark.parametrize("case", list(CASES))
def test_schedule_matches_torch(case):
    kind, build = CASES[case]
    e_opt, t_opt = make_optimizer("ember", kind), make_optimizer("torch", kind)
    e_sched, t_sched = build(esched, e_opt), build(tsched, t_opt)
    assert_same_schedule(e_opt, t_opt, e_sched, t_sched, "after construction")
    if hasattr(t_sched, "base_lrs"):
        assert e_sched.base_lrs == pytest.approx(t_sched.base_lrs, rel=1e-12)
    for step in range(1, STEPS):
        e_opt.step()
        t_opt.step()
        e_sched.step()
        t_sched.step()
        assert_same_schedule(e_opt, t_opt, e_sched, t_sched, f"step {step}")
        assert getattr(e_sched, "last_epoch", None) == getattr(t_sched, "last_epoch", None)
    assert [g["initial_lr"] for g in e_opt.param_groups] == pytest.approx(
        [g["initial_lr"] for g in t_opt.param_groups], rel=1e-12)


def state_keys(sd):
    """The key layout of a scheduler state dict (nested for container schedulers)."""
    return {k: [state_keys(s) for s in v] if k == "_schedulers" else None for k, v in sd.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_state_dict_layout_matches_torch(case):
    kind, build = CASES[case]
    e_sched = build(esched, make_optimizer("ember", kind))
    t_sched = build(tsched, make_optimizer("torch", kind))
    assert state_keys(e_sched.state_dict()) == state_keys(t_sched.state_dict())


@pytest.mark.parametrize("case", ["StepLR", "MultiStepLR", "ExponentialLR",
                                  "CosineAnnealingLR-eta_min", "LinearLR", "PolynomialLR"])
def test_step_with_epoch_uses_the_closed_form(case):
    kind, build = CASES[case]
    e_opt, t_opt = make_optimizer("ember", kind), make_optimizer("torch", kind)
    e_sched, t_sched = build(esched, e_opt), build(tsched, t_opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (3, 9, 4, 15):
            e_opt.step()
            t_opt.step()
            e_sched.step(epoch)
            t_sched.step(epoch)
            assert_same_schedule(e_opt, t_opt, e_sched, t_sched, f"epoch {epoch}")


PLATEAU = [
    dict(),
    dict(mode="min", factor=0.5, patience=2, cooldown=1),
    dict(mode="max", factor=0.5, patience=1, threshold=0.05, threshold_mode="abs",
         min_lr=[0.02, 0.01]),
    dict(mode="min", factor=0.2, patience=0, threshold=0.1, threshold_mode="rel",
         cooldown=2, min_lr=0.001, eps=1e-3),
    dict(mode="max", patience=3, threshold_mode="rel"),
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=[str(i) for i in range(len(PLATEAU))])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = [1.0, 0.9, 0.9, 0.95, 0.89, 0.9, 0.91, 0.95, 0.7, 0.71, 0.72, 0.72, 0.73, 0.69,
               0.69, 0.69, 0.5, 0.6, 0.61, 0.62, 0.63, 0.64, 0.65, 0.4, 0.41, 0.5, 0.5, 0.5,
               0.3, 0.3]
    e_opt, t_opt = make_optimizer("ember"), make_optimizer("torch")
    e_sched = esched.ReduceLROnPlateau(e_opt, **kwargs)
    t_sched = tsched.ReduceLROnPlateau(t_opt, **kwargs)
    for i, m in enumerate(metrics):
        e_opt.step()
        t_opt.step()
        e_sched.step(ember.tensor(m, dtype=ember.float64) if i % 2 else m)
        t_sched.step(m)
        assert_same_schedule(e_opt, t_opt, e_sched, t_sched, f"step {i}")
        assert (e_sched.num_bad_epochs, e_sched.cooldown_counter, e_sched.best) == (
            t_sched.num_bad_epochs, t_sched.cooldown_counter, t_sched.best)


def test_reduce_lr_on_plateau_state_dict():
    opt = make_optimizer("ember")
    sched = esched.ReduceLROnPlateau(opt, mode="max", patience=1)
    for m in (1.0, 0.5, 0.4):
        sched.step(m)
    state = sched.state_dict()
    assert "optimizer" not in state and state["best"] == 1.0 and state["mode"] == "max"
    fresh = esched.ReduceLROnPlateau(make_optimizer("ember"))
    fresh.load_state_dict(copy.deepcopy(state))
    assert (fresh.mode, fresh.best, fresh.mode_worse, fresh.last_epoch) == ("max", 1.0,
                                                                           -math.inf, 3)


@pytest.mark.parametrize("case", ["StepLR", "CosineAnnealingLR", "LambdaLR-per-group",
                                  "OneCycleLR-cos", "SequentialLR"])
def test_state_dict_round_trip(case):
    """Save after 10 steps, load into a fresh scheduler on a restored optimizer and carry
    on: the schedule is that of an uninterrupted run."""
    kind, build = CASES[case]
    ref_opt = make_optimizer("ember", kind)
    ref = build(esched, ref_opt)
    expected = [ref.get_last_lr()]
    for _ in range(STEPS - 1):
        ref_opt.step()
        ref.step()
        expected.append(ref.get_last_lr())

    opt = make_optimizer("ember", kind)
    sched = build(esched, opt)
    for _ in range(10):
        opt.step()
        sched.step()
    opt_state = copy.deepcopy(opt.state_dict())
    sched_state = copy.deepcopy(sched.state_dict())
    assert "optimizer" not in sched_state and sched_state["last_epoch"] == 10

    opt2 = make_optimizer("ember", kind)
    sched2 = build(esched, opt2)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    assert sched2.get_last_lr() == pytest.approx(expected[10], rel=1e-12)
    for step in range(11, STEPS):
        opt2.step()
        sched2.step()
        assert sched2.get_last_lr() == pytest.approx(expected[step], rel=1e-12), step


def test_lambda_state_dict_saves_callable_objects_only():
    opt = make_optimizer("ember")
    sched = esched.LambdaLR(opt, lr_lambda=[lambda e: 1.0, Halve(5)])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"every": 5}]
    other = esched.LambdaLR(make_optimizer("ember"), lr_lambda=[lambda e: 1.0, Halve(2)])
    other.load_state_dict(state)
    assert other.lr_lambdas[1].every == 5


def test_initial_lr_and_base_lrs():
    opt = make_optimizer("ember")
    sched = esched.StepLR(opt, step_size=2)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert sched.base_lrs == [0.1, 0.05] and sched.last_epoch == 0


def test_resume_needs_initial_lr():
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in "
                                       r"param_groups\[0\] when resuming"):
        esched.StepLR(make_optimizer("ember"), step_size=2, last_epoch=5)


def test_resume_with_last_epoch_matches_torch():
    e_opt, t_opt = make_optimizer("ember"), make_optimizer("torch")
    for opt in (e_opt, t_opt):
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
    e_sched = esched.CosineAnnealingLR(e_opt, T_max=10, last_epoch=4)
    t_sched = tsched.CosineAnnealingLR(t_opt, T_max=10, last_epoch=4)
    for _ in range(8):
        assert_same_schedule(e_opt, t_opt, e_sched, t_sched, "resumed")
        e_opt.step()
        t_opt.step()
        e_sched.step()
        t_sched.step()


def test_warns_when_scheduler_steps_before_optimizer():
    opt = make_optimizer("ember")
    sched = esched.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        sched.step()

    opt = make_optimizer("ember")
    sched = esched.ExponentialLR(opt, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_get_lr_outside_step_warns():
    sched = esched.StepLR(make_optimizer("ember"), step_size=2)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_tensor_learning_rate_is_updated_in_place():
    lr = ember.tensor(0.1)
    opt = eoptim.SGD([ember.zeros(2, requires_grad=True)], lr=lr)
    sched = esched.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.05)


def test_errors():
    opt = make_optimizer("ember")
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        esched.StepLR([], step_size=1)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        esched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        esched.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        esched.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        esched.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="max_lr must have the same length as "
                                         "optimizer.param_groups"):
        esched.OneCycleLR(opt, max_lr=[1.0], total_steps=10)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        esched.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        esched.LambdaLR(opt, lr_lambda=[abs, abs, abs])
    sched = esched.OneCycleLR(make_optimizer("ember"), max_lr=1.0, total_steps=3)
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of "
                                         "total steps is 3"):
        for _ in range(4):
            sched.optimizer.step()
            sched.step()
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        esched.OneCycleLR(eoptim.Adagrad([ember.zeros(1, requires_grad=True)]), max_lr=1.0,
                          total_steps=10)
