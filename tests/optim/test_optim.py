"""ember.optim against torch.optim: the same parameters and the same gradients, step after
step, must give the same parameters; plus the Optimizer base class's contract (param
groups, zero_grad, state_dict layout and round trip, PyTorch's errors)."""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.optim as eoptim

SHAPES = [(3, 4), (5,), (2, 3)]
STEPS = 6
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}

# (optimizer name, hyper-parameters): several combinations per optimizer
CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, eps=1e-6, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.3, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.02, eps=1e-6, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.05, eps=1e-6, maximize=True, lr_decay=0.01)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for name, kw in CONFIGS]


def grad_schedule(rng, dtype, steps=STEPS):
    """Per step, one gradient per parameter; parameter 2 has none on steps 0, 1 and 4 (its
    state must start late and the step must skip it)."""
    return [[None if (i == 2 and s in (0, 1, 4)) else rng.standard_normal(shape).astype(dtype)
             for i, shape in enumerate(SHAPES)] for s in range(steps)]


def make_params(rng, dtype):
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    return ([ember.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def set_grads(params, grads, lib):
    for p, g in zip(params, grads):
        p.grad = None if g is None else lib.tensor(g.copy())


def assert_params_close(eparams, tparams, dtype, msg=""):
    for i, (e, t) in enumerate(zip(eparams, tparams)):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL[dtype],
                                   err_msg=f"{msg} param {i}")


def to_numpy(v):
    return v.detach().cpu().numpy() if isinstance(v, (ember.Tensor, torch.Tensor)) else v


def assert_state_dicts_match(esd, tsd, dtype):
    """The same layout as PyTorch's, with the same values."""
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"])
    for idx, tstate in tsd["state"].items():
        estate = esd["state"][idx]
        assert list(estate) == list(tstate), f"state keys of param {idx}"
        for key, tval in tstate.items():
            if key == "step":
                assert isinstance(estate[key], ember.Tensor) and estate[key].shape == ()
                assert estate[key].dtype is ember.float32
            np.testing.assert_allclose(to_numpy(estate[key]), to_numpy(tval), **TOL[dtype],
                                       err_msg=f"state[{idx}][{key!r}]")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_steps_match_torch(name, kwargs, dtype):
    rng = np.random.default_rng(0)
    eparams, tparams = make_params(rng, dtype)
    eopt = getattr(eoptim, name)(eparams, **kwargs)
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    for s, grads in enumerate(grad_schedule(rng, dtype)):
        set_grads(eparams, grads, ember)
        set_grads(tparams, grads, torch)
        assert eopt.step() is None
        topt.step()
        assert_params_close(eparams, tparams, dtype, f"{name} step {s}")
    assert_state_dicts_match(eopt.state_dict(), topt.state_dict(), dtype)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
])
def test_state_dict_round_trip(name, kwargs):
    """Save after 3 steps, load into a fresh optimizer over copies of the parameters and
    continue: the result is that of the uninterrupted run."""
    rng = np.random.default_rng(1)
    grads = grad_schedule(rng, np.float32, steps=7)
    start = [rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]

    ref = [ember.tensor(a, requires_grad=True) for a in start]
    ref_opt = getattr(eoptim, name)(ref, **kwargs)
    for g in grads:
        set_grads(ref, g, ember)
        ref_opt.step()

    first = [ember.tensor(a, requires_grad=True) for a in start]
    opt1 = getattr(eoptim, name)(first, **kwargs)
    for g in grads[:3]:
        set_grads(first, g, ember)
        opt1.step()
    saved = copy.deepcopy(opt1.state_dict())
    assert sorted(saved["state"]) == [0, 1, 2]
    assert saved["param_groups"][0]["params"] == [0, 1, 2]

    second = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in first]
    opt2 = getattr(eoptim, name)(second, **{**kwargs, "lr": 123.0})
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    assert all(a is b for a, b in zip(opt2.param_groups[0]["params"], second, strict=True))
    for g in grads[3:]:
        set_grads(second, g, ember)
        opt2.step()
    for a, b in zip(second, ref):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_load_state_dict_casts_state_to_param_dtype():
    p64 = ember.tensor(np.ones(3), requires_grad=True)
    opt64 = eoptim.Adam([p64])
    p64.grad = ember.ones(3, dtype=ember.float64)
    opt64.step()
    p32 = ember.ones(3, requires_grad=True)
    opt32 = eoptim.Adam([p32])
    opt32.load_state_dict(opt64.state_dict())
    st = opt32.state[p32]
    assert st["exp_avg"].dtype is ember.float32 and st["exp_avg_sq"].dtype is ember.float32
    assert st["step"].item() == 1.0


def test_state_dict_loads_torch_layout():
    """A torch state dict whose tensors are converted to ember loads and continues like the
    torch optimizer it came from."""
    rng = np.random.default_rng(2)
    eparams, tparams = make_params(rng, np.float32)
    grads = grad_schedule(rng, np.float32)
    topt = torch.optim.Adam(tparams, lr=0.01, amsgrad=True)
    for g in grads[:3]:
        set_grads(tparams, g, torch)
        topt.step()
    tsd = topt.state_dict()
    esd = {"param_groups": copy.deepcopy(tsd["param_groups"]),
           "state": {i: {k: ember.tensor(v.numpy().copy()) for k, v in s.items()}
                     for i, s in tsd["state"].items()}}
    for e, t in zip(eparams, tparams):
        e.data = ember.tensor(t.detach().numpy().copy())
    eopt = eoptim.Adam(eparams)
    eopt.load_state_dict(esd)
    for g in grads[3:]:
        set_grads(eparams, g, ember)
        set_grads(tparams, g, torch)
        eopt.step()
        topt.step()
        assert_params_close(eparams, tparams, np.float32)


def test_param_groups_with_different_lrs():
    rng = np.random.default_rng(3)
    eparams, tparams = make_params(rng, np.float32)

    def groups(ps):
        return [{"params": ps[:2], "lr": 0.1}, {"params": [ps[2]], "momentum": 0.5}]
    eopt = eoptim.SGD(groups(eparams), lr=0.01, momentum=0.9, weight_decay=0.01)
    topt = torch.optim.SGD(groups(tparams), lr=0.01, momentum=0.9, weight_decay=0.01)
    assert [g["lr"] for g in eopt.param_groups] == [0.1, 0.01]
    assert [g["momentum"] for g in eopt.param_groups] == [0.9, 0.5]
    for g in grad_schedule(rng, np.float32):
        set_grads(eparams, g, ember)
        set_grads(tparams, g, torch)
        eopt.step()
        topt.step()
        assert_params_close(eparams, tparams, np.float32)
    assert_state_dicts_match(eopt.state_dict(), topt.state_dict(), np.float32)


def test_add_param_group():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    opt = eoptim.Adagrad([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert len(opt.param_groups[1]["params"]) == 1 and opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["lr_decay"] == 0
    assert b not in opt.state          # Adagrad's late parameters get state on first step
    a.grad, b.grad = ember.ones(2), ember.ones(3)
    opt.step()
    np.testing.assert_allclose(b.detach().numpy(), -0.5 * np.ones(3), rtol=1e-6)
    assert opt.state_dict()["param_groups"][1]["params"] == [1]


def test_named_parameters():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(1, requires_grad=True)
    opt = eoptim.SGD([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    a, b = ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)
    opt = eoptim.SGD([a, b], lr=0.1, momentum=0.9)
    (a * a).sum().backward()
    grad = a.grad
    opt.zero_grad(set_to_none=set_to_none)
    assert b.grad is None
    if set_to_none:
        assert a.grad is None
    else:
        assert a.grad is grad and not a.grad.requires_grad
        np.testing.assert_array_equal(a.grad.numpy(), np.zeros(2, np.float32))
    # the next step skips a parameter whose grad is None, but moves one with zero grad
    opt.step()
    np.testing.assert_array_equal(a.detach().numpy(), np.ones(2, np.float32))
    assert (a in opt.state) is (not set_to_none)


def test_zero_grad_default_sets_none():
    a = ember.ones(2, requires_grad=True)
    a.grad = ember.ones(2)
    eoptim.Adam([a]).zero_grad()
    assert a.grad is None


def test_step_with_closure_matches_torch():
    rng = np.random.default_rng(4)
    start = rng.standard_normal(5).astype(np.float32)
    target = rng.standard_normal(5).astype(np.float32)
    e = ember.tensor(start, requires_grad=True)
    t = torch.tensor(start, requires_grad=True)
    eopt = eoptim.Adam([e], lr=0.1)
    topt = torch.optim.Adam([t], lr=0.1)
    et, tt = ember.tensor(target), torch.tensor(target)

    def closure(opt, p, tgt):
        def fn():
            opt.zero_grad()
            loss = ((p - tgt) ** 2).sum()
            loss.backward()
            return loss
        return fn
    for _ in range(5):
        eloss = eopt.step(closure(eopt, e, et))
        tloss = topt.step(closure(topt, t, tt))
        assert eloss.item() == pytest.approx(tloss.item(), rel=1e-5)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_step_does_not_record_graph():
    a = ember.ones(3, requires_grad=True)
    a.grad = ember.ones(3)
    opt = eoptim.SGD([a], lr=0.1, momentum=0.9)
    opt.step()
    assert a.grad_fn is None and a.is_leaf and a.requires_grad
    assert not opt.state[a]["momentum_buffer"].requires_grad


def second_device():
    """A device other than "cpu": the CPU backend's primitives registered as "primcpu", as
    in tests/backend (its tensors are not host-accessible, so nothing can silently go
    through NumPy)."""
    from ember.dispatcher import BACKENDS, PRIMITIVES, ensure_loaded, register_backend
    ensure_loaded()
    if "primcpu" not in BACKENDS:
        from ember_cpu.plugin import CPUBackend

        class PrimitivesOnlyCPU(CPUBackend):
            name, version, device_type, host_accessible = "primcpu", "test", "primcpu", False

            def __init__(self):
                super().__init__()
                self.kernels = {n: k for n, k in self.kernels.items() if n in PRIMITIVES}
        register_backend(PrimitivesOnlyCPU())
    return "primcpu"


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
])
def test_updates_run_on_the_parameter_device(name, kwargs):
    """On another device the state lives beside the parameter (``step`` counters stay on
    the CPU, as PyTorch's) and the result is still torch's."""
    device = second_device()
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    eparams = [ember.tensor(a).to(device).requires_grad_() for a in arrays]
    tparams = [torch.tensor(a, requires_grad=True) for a in arrays]
    eopt = getattr(eoptim, name)(eparams, **kwargs)
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    for g in grad_schedule(rng, np.float32, steps=4):
        for p, gi in zip(eparams, g):
            p.grad = None if gi is None else ember.tensor(gi).to(device)
        set_grads(tparams, g, torch)
        eopt.step()
        topt.step()
    for e, t in zip(eparams, tparams):
        assert e.device.type == device
        np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(),
                                   **TOL[np.float32])
        for key, value in eopt.state[e].items():
            assert value.device == (ember.device("cpu") if key == "step" else e.device), key


def test_tensor_learning_rate():
    rng = np.random.default_rng(6)
    eparams, tparams = make_params(rng, np.float32)
    eopt = eoptim.SGD(eparams, lr=ember.tensor(0.1), momentum=0.9)
    topt = torch.optim.SGD(tparams, lr=torch.tensor(0.1), momentum=0.9)
    for g in grad_schedule(rng, np.float32, steps=3):
        set_grads(eparams, g, ember)
        set_grads(tparams, g, torch)
        eopt.step()
        topt.step()
        assert_params_close(eparams, tparams, np.float32)


def test_defaults_match_torch():
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
        e = getattr(eoptim, name)([ember.zeros(1, requires_grad=True)])
        t = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)])
        tgroup = {k: v for k, v in t.param_groups[0].items() if k != "params"}
        egroup = {k: v for k, v in e.param_groups[0].items() if k != "params"}
        assert egroup == tgroup, name


def test_repr():
    opt = eoptim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text


# ---- errors ----------------------------------------------------------------------------
def test_empty_parameter_list():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        eoptim.SGD([], lr=0.1)


def test_params_must_be_an_iterable_not_a_tensor():
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        eoptim.SGD(ember.zeros(2, requires_grad=True), lr=0.1)


def test_parameter_in_two_groups():
    a = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        eoptim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)


def test_duplicate_parameter_in_one_group_warns():
    a = ember.zeros(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        eoptim.SGD([a, a], lr=0.1)


def test_non_tensor_and_non_leaf_params():
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        eoptim.SGD([1], lr=0.1)
    a = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        eoptim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        eoptim.SGD([{"params": {a}}], lr=0.1)


@pytest.mark.parametrize("build,message", [
    (lambda p: eoptim.SGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: eoptim.SGD(p, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: eoptim.SGD(p, nesterov=True), "Nesterov momentum requires a momentum and zero "
                                             "dampening"),
    (lambda p: eoptim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: eoptim.Adam(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: eoptim.AdamW(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: eoptim.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
    (lambda p: eoptim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
])
def test_invalid_hyper_parameters(build, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        build([ember.zeros(1, requires_grad=True)])


def test_tensor_lr_must_have_one_element():
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        eoptim.SGD([ember.zeros(1, requires_grad=True)], lr=ember.tensor([0.1, 0.2]))


def test_fused_is_accepted_like_torch():
    eoptim.Adam([ember.zeros(1, requires_grad=True)], fused=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        eoptim.Adam([ember.zeros(1, requires_grad=True)], fused=True, foreach=True)


def test_load_state_dict_mismatches():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    saved = eoptim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of "
                                         "parameter groups"):
        eoptim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(saved)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group"):
        eoptim.SGD([a], lr=0.1).load_state_dict(saved)


def test_required_parameter():
    from ember.optim.optimizer import required

    class Needy(eoptim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": required})
    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        Needy([ember.zeros(1, requires_grad=True)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Needy([{"params": [ember.zeros(1, requires_grad=True)], "lr": 1}])
