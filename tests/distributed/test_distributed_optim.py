"""ember.distributed.optim: ZeroRedundancyOptimizer against PyTorch's own.

optim_worker.py trains a small model with ``ZeroRedundancyOptimizer`` (AdamW, SGD with
momentum and an added group, SGD with ``parameters_as_bucket_view``) on N ranks twice at
the same time: on ember over MPI, and on PyTorch over gloo, the oracle. After every step
each rank's parameters must match PyTorch's on the same rank (and be the same on every
rank), each rank's share of the partition must be PyTorch's, and the consolidated
``state_dict`` and a reload from it must match. N = 1 is the world-size-1 case. Names,
signatures, errors and the ``torch.distributed.optim`` import under ``ember.as_torch`` are
checked in this process (no group)."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.distributed.optim as toptim

import ember
import ember.distributed as dist
import ember.distributed.optim as eoptim

from _side_by_side import run_both  # (this folder)

HERE = os.path.dirname(__file__)
WORKER = os.path.join(HERE, "optim_worker.py")


def _run_both(n, out, timeout=120):
    return run_both(WORKER, "OPT", n, out, timeout)


@pytest.fixture(scope="module", params=[1, 3], ids=["world1", "world3"])
def runs(request, tmp_path_factory):
    if not dist.is_available():
        pytest.skip("mpi4py not installed")
    return request.param, _run_both(request.param, tmp_path_factory.mktemp("optim"))


def test_every_result_matches_pytorch(runs):
    n, res = runs
    for rank in range(n):
        ours, theirs = res["ember"][rank], res["torch"][rank]
        assert set(ours) == set(theirs), sorted(set(ours) ^ set(theirs))
        assert len(theirs) > 80
        for key in sorted(theirs):
            assert ours[key].shape == theirs[key].shape, (rank, key)
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6,
                                       err_msg=f"rank {rank}: {key}")


def test_partition_is_pytorchs(runs):
    """The sorted-greedy shares (compared exactly): 30, 6, 18, 3, 3, 1 elements."""
    n, res = runs
    for rank in range(n):
        for case in ("adamw", "sgd", "sgd_added"):
            key = f"{case}/share"
            assert res["ember"][rank][key].tolist() == res["torch"][rank][key].tolist(), key
    shares = [res["ember"][r]["adamw/share"][0] for r in range(n)]
    assert sum(shares) == 6 and (n == 1 or min(shares) >= 1)


def test_every_rank_leaves_step_with_the_same_parameters(runs):
    n, res = runs
    keys = [k for k in res["ember"][0] if "/step" in k]
    assert len(keys) >= 6 * 12
    for rank in range(1, n):
        for key in keys:
            np.testing.assert_array_equal(res["ember"][rank][key], res["ember"][0][key],
                                          err_msg=f"rank {rank}: {key}")


def test_state_dict_round_trip(runs):
    n, res = runs
    last = res["ember"][n - 1]
    # the global state: AdamW's moments and step for all six parameters
    assert {k.split("/")[1] for k in last if k.startswith("adamw_consolidated/state")} == \
        {f"state{i}" for i in range(6)}
    assert float(last["adamw_consolidated/state0/step"]) == 4
    for rank in range(n):
        got = res["ember"][rank]
        assert float(got["adamw_reloaded/lr"]) == float(got["adamw_reloaded/local_lr"]) == 0.005
        for i in range(6):     # the reloaded optimizer's step is the original one's
            np.testing.assert_array_equal(got[f"adamw_reloaded/step4/param{i}"],
                                          got[f"adamw/step4/param{i}"])
        if rank != n - 1:
            assert bool(got["adamw/unconsolidated_error"])


# ---- in this process: names, signatures and errors (no process group) -------------------
def test_names_are_pytorchs():
    assert sorted(eoptim.__all__) == sorted(toptim.__all__)
    for name in eoptim.__all__:
        assert (getattr(eoptim, name).__doc__ or "").strip(), name


def test_signature_is_pytorchs():
    ours = inspect.signature(eoptim.ZeroRedundancyOptimizer).parameters
    theirs = inspect.signature(toptim.ZeroRedundancyOptimizer).parameters
    assert list(ours) == list(theirs)
    for p in theirs:
        assert ours[p].default == theirs[p].default, p
        assert ours[p].kind == theirs[p].kind, p
    for method in ("step", "consolidate_state_dict", "state_dict", "load_state_dict",
                   "add_param_group", "zero_grad", "join_hook"):
        assert list(inspect.signature(getattr(eoptim.ZeroRedundancyOptimizer, method))
                    .parameters) == list(inspect.signature(
                        getattr(toptim.ZeroRedundancyOptimizer, method)).parameters), method


@pytest.mark.parametrize("params,error,match", [
    (lambda m: m.ones(2), TypeError, "should be an iterable of Tensors, but got"),
    (lambda m: [], ValueError, "got an empty parameter list"),
    (lambda m: [m.ones(2), {"params": [m.ones(2)]}], TypeError, "Tensors or dicts"),
    (lambda m: [{"lr": 1}], ValueError, "must have a 'params' key"),
    (lambda m: [m.ones(2), m.ones(2, dtype=m.float64)], ValueError, "same dense type"),
])
def test_pytorchs_errors_before_any_group_is_needed(params, error, match):
    for module, cls in ((ember, eoptim.ZeroRedundancyOptimizer),
                        (torch, toptim.ZeroRedundancyOptimizer)):
        with pytest.raises(error, match=match):
            cls(params(module), optimizer_class=module.optim.SGD, lr=0.1)


def test_overlap_with_ddp_is_not_supported():
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        eoptim.ZeroRedundancyOptimizer([ember.ones(2, requires_grad=True)],
                                       optimizer_class=ember.optim.SGD,
                                       overlap_with_ddp=True, lr=0.1)


def test_distributed_optimizer_says_ember_has_no_rpc():
    assert list(inspect.signature(eoptim.DistributedOptimizer).parameters) == \
        list(inspect.signature(toptim.DistributedOptimizer).parameters)
    with pytest.raises(NotImplementedError, match="no RPC"):
        eoptim.DistributedOptimizer(ember.optim.SGD, [], lr=0.1)


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                         ("AdamW", {"lr": 0.01}), ("Adam", {"lr": 0.01})])
def test_functional_optimizers_match_pytorchs(name, kwargs):
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal(3), [rng.standard_normal(3) for _ in range(3)]
    finals = []
    for module, make in ((ember, eoptim.as_functional_optim),
                         (torch, toptim.as_functional_optim)):
        w = module.tensor(w0)
        opt = make(getattr(module.optim, name), **kwargs)
        for g in grads:
            opt.step_param(w, module.tensor(g))
        finals.append(w.numpy())
    np.testing.assert_allclose(*finals, rtol=1e-6)
    for module, make in ((ember, eoptim.as_functional_optim),
                         (torch, toptim.as_functional_optim)):
        with pytest.raises(ValueError, match="does not have a functional counterpart"):
            make(module.optim.LBFGS)


# (PyTorch's _FunctionalAdagrad fails on a None gradient, so Adagrad is not compared)
@pytest.mark.parametrize("name", ["RMSprop", "Rprop", "Adadelta", "Adamax"])
def test_functional_step_with_gradients_matches_pytorchs(name):
    """``step(gradients)`` over a group; a ``None`` gradient leaves its parameter alone."""
    import torch.distributed.optim.utils as tutils

    from ember.distributed.optim import _functional
    rng = np.random.default_rng(1)
    w0, grads = rng.standard_normal((2, 3)), [rng.standard_normal(3) for _ in range(3)]
    finals = []
    for module, table in ((ember, _functional.functional_optim_map),
                          (torch, tutils.functional_optim_map)):
        ws = [module.tensor(w) for w in w0]
        opt = table[getattr(module.optim, name)](ws, lr=0.01)
        for g in grads:
            opt.step([module.tensor(g), None])
        finals.append(np.stack([w.numpy() for w in ws]))
    np.testing.assert_allclose(*finals, rtol=1e-6)
    np.testing.assert_array_equal(finals[0][1], w0[1])


def test_post_local_sgd_steps_then_averages():
    class Averager:
        step = 0

        def average_parameters(self, params):
            self.seen = [p for g in params for p in g["params"]]
            self.step += 1

    w = ember.ones(2, requires_grad=True)
    opt = eoptim.PostLocalSGDOptimizer(ember.optim.SGD([w], lr=0.5), Averager())
    w.grad = ember.ones(2)
    opt.step()
    assert w.tolist() == [0.5, 0.5] and opt.averager.seen[0] is w
    sd = opt.state_dict()
    assert sd["step"] == 1
    opt.averager.step = 7
    opt.load_state_dict(sd)
    assert opt.averager.step == 1
    with pytest.warns(UserWarning, match="does not contain a step counter"):
        opt.load_state_dict({k: v for k, v in sd.items() if k != "step"})


def test_imports_as_torch_distributed_optim(tmp_path):
    """``from torch.distributed.optim import ZeroRedundancyOptimizer`` (llm.c's
    train_gpt2.py does it at import)."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import torch\n"
        "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
        "print(ZeroRedundancyOptimizer.__module__)\n")
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ember.distributed.optim._zero"]
