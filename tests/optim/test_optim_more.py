"""ember.optim against torch.optim, part two: every optimizer (the ones added here, and the
flags of the older ones) trains the same tiny MLP regression from the same initial
parameters in both frameworks, and the parameter trajectories, the state dicts and the
errors must agree with PyTorch's. Also: LBFGS on Rosenbrock, step / state-dict hooks,
torch-saved state dicts loaded into ember."""
import inspect
import math

import numpy as np
import pytest
import torch
from torch.optim.optimizer import (
    register_optimizer_step_pre_hook as torch_register_optimizer_step_pre_hook)

import ember
import ember.optim as eoptim
from ember.optim import optimizer as eoptimizer

STEPS = 20
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-7, atol=1e-9)}

# (optimizer, hyper-parameters): a table of argument combinations per optimizer
CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, fused=True)),
    ("SGD", dict(lr=0.02, momentum=0.5, maximize=True, foreach=False)),
    ("Adam", dict(lr=0.01, fused=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, amsgrad=True)),
    ("Adam", dict(lr=0.01, foreach=True, maximize=True)),
    ("AdamW", dict(lr=0.01, amsgrad=True, fused=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, fused=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, foreach=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True, foreach=False)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("Adamax", dict(lr=0.02, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.9), maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), eps=1e-6)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05))),
    ("Rprop", dict(lr=0.01, maximize=True)),
    ("Adafactor", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.02, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5,
                       weight_decay=0.1)),
    ("Adafactor", dict(lr=0.01, maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for name, kw in CASES]


def mlp_data(dtype):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal((4, 6)) * 0.5, rng.standard_normal(6) * 0.1,
            rng.standard_normal((6, 2)) * 0.5, rng.standard_normal((2, 3, 2)) * 0.5]
    x = rng.standard_normal((10, 4))
    y = rng.standard_normal((10, 2))
    return [a.astype(dtype) for a in init], x.astype(dtype), y.astype(dtype)


def mlp_loss(lib, params, x, y):
    w1, b1, w2, w3 = params
    hidden = lib.tanh(x @ w1 + b1)
    out = hidden @ w2
    # a 3-d parameter, so Adafactor's factored statistics see more than a matrix
    return ((out - y) ** 2).mean() + ((w3 * out.mean() - 0.5) ** 2).mean()


def torch_grads(params, x, y):
    """The MLP's gradients at ``params`` computed by torch (for float32 runs, so that the
    comparison sees the optimizers' rounding, not the two autograds')."""
    tparams = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    mlp_loss(torch, tparams, torch.tensor(x), torch.tensor(y)).backward()
    return [p.grad.numpy() for p in tparams]


def run(lib, name, kwargs, dtype, steps=STEPS):
    """Train the MLP ``steps`` times; returns (parameter trajectory, optimizer, params).
    In float64 each framework differentiates the loss itself; in float32 ember's
    gradients come from torch at ember's own parameters."""
    init, x_np, y_np = mlp_data(dtype)
    params = [lib.tensor(a.copy(), requires_grad=True) for a in init]
    x, y = lib.tensor(x_np), lib.tensor(y_np)
    opt = getattr(lib.optim, name)(params, **kwargs)
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        if lib is ember and dtype is np.float32:
            for p, g in zip(params, torch_grads(params, x_np, y_np)):
                p.grad = ember.tensor(g.copy())
        else:
            mlp_loss(lib, params, x, y).backward()
        opt.step()
        traj.append([p.detach().numpy().copy() for p in params])
    return traj, opt, params


def assert_close_traj(got, want, tol):
    for s, (g_step, w_step) in enumerate(zip(got, want)):
        for i, (g, w) in enumerate(zip(g_step, w_step)):
            np.testing.assert_allclose(g, w, err_msg=f"step {s} param {i}", **tol)


def to_np(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if isinstance(v, ember.Tensor):
        return v.detach().numpy()
    return v


def assert_same_state_dict(esd, tsd, tol):
    """Same structure as PyTorch's (param indices, group keys, state keys) and values."""
    assert list(esd) == list(tsd) == ["state", "param_groups"]
    assert len(esd["param_groups"]) == len(tsd["param_groups"])
    for eg, tg in zip(esd["param_groups"], tsd["param_groups"]):
        assert sorted(eg) == sorted(tg)
        for key in tg:
            assert to_np(eg[key]) == to_np(tg[key]) or key == "lr", key
    assert sorted(esd["state"]) == sorted(tsd["state"])
    for idx, tstate in tsd["state"].items():
        estate = esd["state"][idx]
        assert sorted(estate) == sorted(tstate), idx
        for key, tval in tstate.items():
            eval_ = estate[key]
            assert isinstance(eval_, ember.Tensor) == isinstance(tval, torch.Tensor), key
            if isinstance(tval, torch.Tensor):
                assert eval_.shape == tuple(tval.shape), key
                assert str(eval_.dtype).split(".")[-1] == str(tval.dtype).split(".")[-1], key
                np.testing.assert_allclose(to_np(eval_), to_np(tval), err_msg=key, **tol)
            else:
                assert eval_ == tval, key


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_trajectory_matches_torch(name, kwargs, dtype):
    tol = TOL[dtype]
    t_traj, t_opt, _ = run(torch, name, kwargs, dtype)
    e_traj, e_opt, _ = run(ember, name, kwargs, dtype)
    assert_close_traj(e_traj, t_traj, tol)
    if dtype is np.float64:
        assert_same_state_dict(e_opt.state_dict(), t_opt.state_dict(), tol)


def torch_state_to_ember(sd):
    """A state dict saved by torch, with its tensors converted to ember tensors."""
    def conv(v):
        if isinstance(v, torch.Tensor):
            return ember.tensor(v.detach().numpy().copy())
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v
    return conv(sd)


@pytest.mark.parametrize("name,kwargs", CASES[::3], ids=IDS[::3])
def test_torch_state_dict_loads_and_continues(name, kwargs):
    """Train 10 steps in torch, load its state dict into a fresh ember optimizer over the
    same parameters, train both 8 more steps: the parameters stay equal."""
    dtype = np.float64
    _, t_opt, t_params = run(torch, name, kwargs, dtype, steps=10)
    init, x, y = mlp_data(dtype)
    e_params = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in t_params]
    e_opt = getattr(ember.optim, name)(e_params, **kwargs)
    e_opt.load_state_dict(torch_state_to_ember(t_opt.state_dict()))
    tx, ty, ex, ey = torch.tensor(x), torch.tensor(y), ember.tensor(x), ember.tensor(y)
    for _ in range(8):
        for opt, params, lib, xx, yy in ((t_opt, t_params, torch, tx, ty),
                                         (e_opt, e_params, ember, ex, ey)):
            opt.zero_grad()
            mlp_loss(lib, params, xx, yy).backward()
            opt.step()
    for e, t in zip(e_params, t_params):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL[dtype])


def test_muon_matches_torch():
    """Muon orthogonalizes in bfloat16, so the comparison allows bfloat16 rounding."""
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((6, 4)).astype(np.float32)
    target = rng.standard_normal((6, 4)).astype(np.float32)
    for kwargs in (dict(lr=0.02), dict(lr=0.02, nesterov=False, weight_decay=0.0,
                                        adjust_lr_fn="match_rms_adamw", momentum=0.8)):
        results = []
        for lib in (torch, ember):
            w = lib.tensor(w0.copy(), requires_grad=True)
            opt = lib.optim.Muon([w], **kwargs)
            for _ in range(5):
                opt.zero_grad()
                ((w - lib.tensor(target)) ** 2).sum().backward()
                opt.step()
            results.append(w.detach().numpy().copy())
        np.testing.assert_allclose(results[1], results[0], atol=kwargs["lr"] * 0.05)
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            lib.optim.Muon([lib.zeros(3, requires_grad=True)])


def rosenbrock(lib, xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


# (hyper-parameters, outer steps): plain L-BFGS (lr=1) bounces around Rosenbrock's valley
# and amplifies dot-product rounding, so it is compared over fewer steps
@pytest.mark.parametrize("kwargs,steps", [
    (dict(), 2),
    (dict(line_search_fn="strong_wolfe"), 6),
    (dict(lr=0.5, history_size=3, max_iter=7), 5),
    (dict(line_search_fn="strong_wolfe", history_size=2, max_iter=5, max_eval=9), 6),
    (dict(lr=0.1, tolerance_change=1e-4, max_iter=10), 4),
], ids=["plain", "strong_wolfe", "short_history", "wolfe_short", "tol_change"])
def test_lbfgs_rosenbrock(kwargs, steps):
    results = {}
    for lib in (torch, ember):
        xy = lib.tensor(np.array([-1.5, 2.0]), requires_grad=True)
        opt = lib.optim.LBFGS([xy], **kwargs)
        traj, losses = [], []

        def closure(lib=lib, xy=xy, opt=opt):
            opt.zero_grad()
            loss = rosenbrock(lib, xy)
            loss.backward()
            return loss

        for _ in range(steps):
            losses.append(float(opt.step(closure).detach()))
            traj.append(xy.detach().numpy().copy())
        state = opt.state[xy]
        results[lib.__name__] = (np.array(traj), losses, state["func_evals"], state["n_iter"])
    (t_traj, t_loss, t_evals, t_iter), (e_traj, e_loss, e_evals, e_iter) = (
        results["torch"], results["ember"])
    np.testing.assert_allclose(e_traj, t_traj, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(e_loss, t_loss, rtol=1e-7, atol=1e-9)
    assert (e_evals, e_iter) == (t_evals, t_iter)
    if kwargs.get("line_search_fn") == "strong_wolfe" and "history_size" not in kwargs:
        np.testing.assert_allclose(e_traj[-1], [1.0, 1.0], atol=1e-4)


def test_lbfgs_errors():
    for lib in (torch, ember):
        a, b = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
        with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
            lib.optim.LBFGS([{"params": [a]}, {"params": [b]}])
        opt = lib.optim.LBFGS([a], line_search_fn="armijo")
        with pytest.raises(TypeError):
            opt.step()

        def closure(lib=lib, a=a, opt=opt):
            opt.zero_grad()
            loss = ((a - 1) ** 2).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(closure)


def exc_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result compared
        return type(e).__name__, str(e)
    return None


P = np.zeros(3, dtype=np.float32)
# (optimizer, bad hyper-parameters): the constructor must raise as PyTorch does
BAD_ARGS = [(name, kw) for name in ("SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta",
                                    "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "SparseAdam",
                                    "Adafactor", "LBFGS", "Muon")
            for kw in (dict(lr=-1), dict(lr=-0.5))] + [
    ("Adam", dict(eps=-1)), ("Adam", dict(betas=(1.0, 0.9))), ("Adam", dict(betas=(0.9, -1.0))),
    ("Adam", dict(weight_decay=-1)), ("AdamW", dict(betas=(0.9, 1.5))),
    ("Adam", dict(fused=True, foreach=True)), ("Adam", dict(fused=True, differentiable=True)),
    ("SGD", dict(fused=True, foreach=True)), ("SGD", dict(fused=True, differentiable=True)),
    ("Adagrad", dict(fused=True, foreach=True)), ("Adagrad", dict(fused=True, differentiable=True)),
    ("SGD", dict(nesterov=True)), ("SGD", dict(nesterov=True, momentum=0.9, dampening=0.1)),
    ("SGD", dict(momentum=-1)), ("SGD", dict(weight_decay=-0.1)),
    ("RMSprop", dict(fused=True)), ("Adadelta", dict(fused=True)), ("RAdam", dict(fused=True)),
    ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1)), ("Adadelta", dict(weight_decay=-1)),
    ("Adamax", dict(betas=(0.9, 1.0))), ("Adamax", dict(eps=-1)),
    ("NAdam", dict(momentum_decay=-1)), ("NAdam", dict(betas=(-0.1, 0.9))),
    ("RAdam", dict(betas=(0.9, 1.0))), ("RAdam", dict(weight_decay=-1)),
    ("ASGD", dict(weight_decay=-1)), ("Rprop", dict(etas=(1.5, 1.2))),
    ("Rprop", dict(etas=(0.5, 0.9))), ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0)),
    ("SparseAdam", dict(betas=(0.9, 1.0))), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1, 1e-3))), ("Adafactor", dict(eps=(None, -1))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1)),
    ("Adam", dict(betas=(0, 0.9))), ("Muon", dict(momentum=-1)),
    ("Muon", dict(adjust_lr_fn="bad")), ("Adam", dict(amsgrad=True, capturable=True)),
    ("Adam", dict(lr=[0.1])), ("SGD", dict(lr=np.array([0.1, 0.2]))),
]


@pytest.mark.parametrize("name,kwargs", BAD_ARGS,
                         ids=[f"{n}-{k}" for n, k in BAD_ARGS])
def test_constructor_errors_match_torch(name, kwargs):
    shape = (3, 2)
    want = exc_of(lambda: getattr(torch.optim, name)(
        [torch.zeros(shape, requires_grad=True)], **kwargs))
    got = exc_of(lambda: getattr(ember.optim, name)(
        [ember.zeros(shape, requires_grad=True)], **kwargs))
    assert got == want


# optimizers that accept ``capturable``: on the CPU, PyTorch refuses it at step() time
CAPTURABLE = ["Adam", "AdamW", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
              "Rprop"]


@pytest.mark.parametrize("name", CAPTURABLE)
def test_capturable_on_cpu_raises_at_step(name):
    results = []
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        opt = getattr(lib.optim, name)([w], capturable=True)
        w.grad = lib.ones(3)
        results.append(exc_of(opt.step))
    assert results[0] is not None and results[1] == results[0]


def test_sparse_adam_refuses_dense_gradients():
    results = []
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        opt = lib.optim.SparseAdam([w])
        opt.step()  # no gradient: nothing to do
        w.grad = lib.ones(3)
        results.append(exc_of(opt.step))
    assert results[0] == ("RuntimeError", "SparseAdam does not support dense gradients, "
                                          "please consider Adam instead")
    assert results[1] == results[0]


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1)), ("Rprop", dict(lr=0.1)),
    ("NAdam", dict(lr=0.1)), ("Adadelta", dict(lr=1.0)), ("RMSprop", dict(centered=True)),
    ("Adagrad", dict(lr=0.1)), ("RAdam", dict(lr=0.1)), ("ASGD", dict(lr=0.1)),
    ("Adamax", dict(lr=0.1)), ("AdamW", dict(lr=0.1, amsgrad=True))])
def test_differentiable_step_matches_torch(name, kwargs):
    """With ``differentiable=True`` the update is recorded by autograd: the gradient of a
    function of the updated parameter flows back to the parameter before the step."""
    grads = []
    for lib in (torch, ember):
        leaf = lib.tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
        p = leaf * 1.0
        p.retain_grad()
        opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
        p.grad = lib.tensor(np.array([0.3, -0.1, 0.2]))
        opt.step()
        (p ** 2).sum().backward()
        grads.append((p.detach().numpy().copy(), leaf.grad.numpy().copy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)


def test_maximize_negates():
    """``maximize=True`` ascends: the same as minimizing with the gradient negated."""
    for name in ("Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"):
        a = ember.tensor(np.array([[1.0, 2.0], [3.0, -1.0]]), requires_grad=True)
        b = ember.tensor(a.detach().numpy().copy(), requires_grad=True)
        opt_a = getattr(ember.optim, name)([a], maximize=True)
        opt_b = getattr(ember.optim, name)([b])
        for _ in range(3):
            a.grad = ember.tensor(np.array([[0.5, -1.0], [0.25, 2.0]]))
            b.grad = -a.grad
            opt_a.step()
            opt_b.step()
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_step_hooks():
    calls = []
    for lib in (torch, ember):
        w = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=1.0)
        log = []

        def pre(o, args, kwargs, log=log, opt=opt):
            assert o is opt
            log.append(("pre", len(args), dict(kwargs)))

        def post(o, args, kwargs, log=log):
            log.append(("post", len(args), sorted(kwargs)))

        h1 = opt.register_step_pre_hook(pre)
        h2 = opt.register_step_post_hook(post)
        if lib is torch:
            g1 = torch_register_optimizer_step_pre_hook(
                lambda o, a, k, log=log: log.append("global-pre"))
        else:
            g1 = eoptimizer.register_optimizer_step_pre_hook(
                lambda o, a, k, log=log: log.append("global-pre"))
        w.grad = lib.ones(2)
        opt.step()
        opt.step(closure=None)
        h1.remove()
        g1.remove()
        opt.step()
        h2.remove()
        opt.step()

        # a pre-hook may replace the arguments
        def swap(o, args, kwargs):
            return args, {"closure": lambda: 42.0}
        opt.register_step_pre_hook(swap)
        out = opt.step()
        calls.append((log, out, w.detach().numpy().tolist()))
    assert calls[1] == calls[0]


def test_state_dict_hooks():
    results = []
    for lib in (torch, ember):
        w = lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([w], lr=0.1)
        w.grad = lib.ones(2)
        opt.step()
        log = []
        opt.register_state_dict_pre_hook(lambda o, log=log: log.append("sd-pre"))
        opt.register_state_dict_post_hook(
            lambda o, sd, log=log: log.append(("sd-post", sorted(sd))))
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}, prepend=False)
        sd = opt.state_dict()

        def load_pre(o, sd, log=log):
            log.append(("load-pre", sorted(sd)))
            sd = dict(sd)
            sd.pop("extra")
            sd["param_groups"][0]["lr"] = 0.5
            return sd
        opt.register_load_state_dict_pre_hook(load_pre)
        opt.register_load_state_dict_post_hook(
            lambda o, log=log: log.append(("load-post", o.param_groups[0]["lr"])))
        opt.register_load_state_dict_pre_hook(lambda o, sd, log=log: log.append("first"),
                                              prepend=True)
        opt.load_state_dict(sd)
        results.append((log, sorted(sd)))
    assert results[1] == results[0]


def test_zero_grad_set_to_none_false():
    for lib in (torch, ember):
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.Adamax([w])
        w.grad = lib.ones(2)
        opt.zero_grad(set_to_none=False)
        assert w.grad is not None and w.grad.numpy().tolist() == [0.0, 0.0]
        opt.zero_grad()
        assert w.grad is None


def test_add_param_group_new_optimizers():
    """A group added later gets the defaults and its own state once it has a gradient."""
    results = []
    for lib in (torch, ember):
        a = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
        b = lib.tensor(np.array([3.0]), requires_grad=True)
        opt = lib.optim.NAdam([a], lr=0.1)
        opt.add_param_group({"params": [b], "lr": 0.01, "momentum_decay": 0.1})
        for _ in range(3):
            a.grad, b.grad = lib.ones(2, dtype=a.dtype), lib.ones(1, dtype=b.dtype)
            opt.step()
        results.append((a.detach().numpy().copy(), b.detach().numpy().copy(),
                        sorted(opt.param_groups[1])))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)
    assert results[1][2] == results[0][2]


def test_public_names():
    assert sorted(n for n in torch.optim.__all__
                  if n != "swap_in_optimizer_params_and_state") == sorted(eoptim.__all__)
    assert eoptim.swa_utils.__all__ == torch.optim.swa_utils.__all__
    assert math.isclose(eoptim.Muon([ember.zeros((2, 2), requires_grad=True)]).defaults["eps"],
                        torch.optim.Muon([torch.zeros((2, 2), requires_grad=True)]).defaults["eps"])


def test_lbfgs_state_dict_matches_torch_and_loads():
    """The state has PyTorch's keys and value types; torch's state dict, loaded into ember,
    continues the same iterations."""
    runs = {}
    for lib in (torch, ember):
        xy = lib.tensor(np.array([-1.2, 1.0]), requires_grad=True)
        opt = lib.optim.LBFGS([xy], history_size=4, max_iter=6,
                              line_search_fn="strong_wolfe")

        def closure(lib=lib, xy=xy, opt=opt):
            opt.zero_grad()
            loss = rosenbrock(lib, xy)
            loss.backward()
            return loss
        opt.step(closure)
        runs[lib.__name__] = (xy, opt, closure)
    t_sd, e_sd = runs["torch"][1].state_dict(), runs["ember"][1].state_dict()

    def kinds(v):
        if isinstance(v, list):
            return ["list"] + sorted({k for x in v for k in kinds(x)})
        return ["tensor" if isinstance(v, (torch.Tensor, ember.Tensor)) else type(v).__name__]
    assert {k: kinds(v) for k, v in e_sd["state"][0].items()} == \
        {k: kinds(v) for k, v in t_sd["state"][0].items()}
    assert e_sd["param_groups"] == t_sd["param_groups"]

    t_xy, t_opt, t_closure = runs["torch"]
    e_xy = ember.tensor(t_xy.detach().numpy().copy(), requires_grad=True)
    e_opt = ember.optim.LBFGS([e_xy], history_size=4, max_iter=6,
                              line_search_fn="strong_wolfe")
    e_opt.load_state_dict(torch_state_to_ember(t_sd))

    def e_closure():
        e_opt.zero_grad()
        loss = rosenbrock(ember, e_xy)
        loss.backward()
        return loss
    for _ in range(2):
        t_opt.step(t_closure)
        e_opt.step(e_closure)
    np.testing.assert_allclose(e_xy.detach().numpy(), t_xy.detach().numpy(),
                               rtol=1e-7, atol=1e-9)


OPTIMIZERS = [n for n in eoptim.__all__ if n not in ("lr_scheduler", "swa_utils")]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_signatures_match_torch(name):
    """Every constructor takes PyTorch's arguments (names, order, kinds, defaults)."""
    def sig(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    for meth in ("__init__", "step", "zero_grad", "state_dict", "load_state_dict",
                 "add_param_group", "register_step_pre_hook", "register_step_post_hook",
                 "register_state_dict_pre_hook", "register_state_dict_post_hook",
                 "register_load_state_dict_pre_hook", "register_load_state_dict_post_hook"):
        assert sig(getattr(getattr(eoptim, name), meth)) == \
            sig(getattr(getattr(torch.optim, name), meth)), meth


def small_net(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Tanh(),
                             lib.nn.Linear(4, 2))


def copy_weights(src, dst):
    """torch module -> ember module (same architecture), through NumPy."""
    for (_, s), (_, d) in zip(src.state_dict().items(), dst.state_dict().items()):
        d.copy_(ember.tensor(s.detach().numpy().copy()))


@pytest.mark.parametrize("make_kwargs", [
    lambda su: {},
    lambda su: dict(avg_fn=su.get_ema_avg_fn(0.9)),
    lambda su: dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.8)),
    lambda su: dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.7), use_buffers=True),
    lambda su: dict(use_buffers=True),
], ids=["swa", "ema", "ema-multi", "ema-multi-buffers", "swa-buffers"])
def test_averaged_model_matches_torch(make_kwargs):
    """Train a small BatchNorm net with SGD in both frameworks, averaging its weights
    after every step; then ``update_bn`` the averaged model: everything agrees."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    y = rng.standard_normal((16, 2)).astype(np.float32)
    t_net = small_net(torch)
    e_net = small_net(ember)
    copy_weights(t_net, e_net)
    out = []
    for lib, net in ((torch, t_net), (ember, e_net)):
        su = lib.optim.swa_utils
        avg = su.AveragedModel(net, **make_kwargs(su))
        opt = lib.optim.SGD(net.parameters(), lr=0.1)
        sched = su.SWALR(opt, swa_lr=0.01, anneal_epochs=3)
        xx, yy = lib.tensor(x), lib.tensor(y)
        lrs = []
        for _ in range(6):
            opt.zero_grad()
            ((net(xx) - yy) ** 2).mean().backward()
            opt.step()
            sched.step()
            avg.update_parameters(net)
            lrs.append(sched.get_last_lr())
        with lib.no_grad():
            before_bn = avg(xx).numpy().copy()
        su.update_bn([(xx[:8], 0), (xx[8:], 1)], avg)
        avg.eval()
        with lib.no_grad():
            after_bn = avg(xx).numpy().copy()
        state = {k: v.detach().numpy().copy() for k, v in avg.state_dict().items()}
        out.append((lrs, before_bn, after_bn, state))
    (t_lrs, t_before, t_after, t_state), (e_lrs, e_before, e_after, e_state) = out
    assert np.allclose(e_lrs, t_lrs, rtol=1e-12, atol=0)
    assert list(e_state) == list(t_state)
    for key in t_state:
        np.testing.assert_allclose(e_state[key], t_state[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)
    np.testing.assert_allclose(e_before, t_before, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e_after, t_after, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.2, 0.01],
                                                             anneal_epochs=4,
                                                             anneal_strategy="linear"),
                                    dict(swa_lr=0.3, anneal_epochs=0)])
def test_swalr_matches_torch(kwargs):
    seqs = []
    for lib in (torch, ember):
        opt = lib.optim.SGD([{"params": [lib.zeros(2, requires_grad=True)]},
                             {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.5}],
                            lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
        seq = [sched.get_last_lr()]
        for _ in range(14):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        seqs.append((seq, sorted(sched.state_dict())))
    assert np.allclose(seqs[1][0], seqs[0][0], rtol=1e-12, atol=0)
    assert seqs[1][1] == seqs[0][1]


def test_swa_errors_match_torch():
    cases = [lambda su, lib, o: su.SWALR(o, swa_lr=0.1, anneal_strategy="exp"),
             lambda su, lib, o: su.SWALR(o, swa_lr=0.1, anneal_epochs=-1),
             lambda su, lib, o: su.SWALR(o, swa_lr=[0.1, 0.2]),
             lambda su, lib, o: su.get_ema_avg_fn(1.5),
             lambda su, lib, o: su.get_ema_multi_avg_fn(-0.1),
             lambda su, lib, o: su.AveragedModel(lib.nn.Linear(2, 2), avg_fn=su.get_swa_avg_fn(),
                                                 multi_avg_fn=su.get_swa_multi_avg_fn())]
    for case in cases:
        got = []
        for lib in (torch, ember):
            opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
            got.append(exc_of(lambda lib=lib, opt=opt: case(lib.optim.swa_utils, lib, opt)))
        assert got[0] is not None and got[1] == got[0]
