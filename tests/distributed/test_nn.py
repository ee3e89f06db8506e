"""ember.distributed.nn: the differentiable collectives against PyTorch's own.

nn_worker.py runs every function of ``distributed.nn.functional`` (forward, backward, and a
backward of the backward) on N ranks twice at the same time: on ember over MPI, and on
PyTorch over gloo, the oracle. Each rank's results and input gradients must match
PyTorch's on the same rank. N = 1 is the world-size-1 case of an initialised group. The
names, signatures, errors and the ``torch.distributed.nn`` import under ``ember.as_torch``
are checked in this process (no group)."""
import inspect
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.distributed as tdist
import torch.distributed.nn as tnn
import torch.distributed.nn.functional as tF

import ember
import ember.distributed as dist
import ember.distributed.nn as enn
import ember.distributed.nn.functional as F

from _side_by_side import run_both  # (this folder)

HERE = os.path.dirname(__file__)
WORKER = os.path.join(HERE, "nn_worker.py")
COLLECTIVES = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
               "all_to_all", "all_to_all_single", "all_reduce"]


def _run_both(n, out, timeout=120):
    return run_both(WORKER, "NN", n, out, timeout)


@pytest.fixture(scope="module", params=[1, 3], ids=["world1", "world3"])
def runs(request, tmp_path_factory):
    if not dist.is_available():
        pytest.skip("mpi4py not installed")
    return request.param, _run_both(request.param, tmp_path_factory.mktemp("nn"))


def _unspecified(key, rank):
    """reduce's result on ranks other than dst: unspecified (gloo uses it as scratch)."""
    case, what = key.split("/")
    return (case.startswith("reduce_") and case[len("reduce_"):].isdigit()
            and what.startswith("out") and rank != int(case[len("reduce_"):]))


def test_values_and_gradients_match_pytorch(runs):
    n, res = runs
    for rank in range(n):
        ours, theirs = res["ember"][rank], res["torch"][rank]
        assert set(theirs) <= set(ours), sorted(set(theirs) - set(ours))
        assert len(theirs) > 50
        for key in sorted(theirs):
            if _unspecified(key, rank):
                continue
            assert ours[key].shape == theirs[key].shape, (rank, key)
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-5,
                                       err_msg=f"rank {rank}: {key}")


def test_uneven_all_to_all_matches_its_definition(runs):
    """(gloo's all_to_all needs pieces of one size, so here NumPy is the oracle.)"""
    n, res = runs

    def normal(seed, size, dtype):
        return np.random.default_rng(seed).standard_normal(size).astype(dtype)

    def sizes(r, j):
        return 1 + r + 2 * j

    pieces = [np.split(normal(81 + r, sum(sizes(r, j) for j in range(n)), "float32"),
                       np.cumsum([sizes(r, j) for j in range(n)])[:-1]) for r in range(n)]
    for rank in range(n):
        got = res["ember"][rank]
        for i in range(n):       # rank i's piece for this rank, times 3
            np.testing.assert_allclose(got[f"all_to_all_uneven/out{i}"], 3 * pieces[i][rank],
                                       rtol=1e-6)
        # this rank's piece j went to rank j, whose loss weighs its output `rank` by W
        weights = [normal(1000 + 100 * j + rank, sizes(rank, j), "float64").astype("float32")
                   for j in range(n)]
        np.testing.assert_allclose(got["all_to_all_uneven/grad"], 3 * np.concatenate(weights),
                                   rtol=1e-6)


# ---- in this process: names, signatures and errors (no process group) -------------------
def test_names_are_pytorchs():
    for name in COLLECTIVES:
        assert name in F.__all__ and getattr(enn, name) is getattr(F, name), name
        assert hasattr(tF, name) and hasattr(tnn, name)
    assert enn.functional is F
    assert F.ReduceOp is dist.ReduceOp and F.group is dist.group
    assert issubclass(enn.RemoteModule, ember.nn.Module)


@pytest.mark.parametrize("name", COLLECTIVES)
def test_signature_is_pytorchs(name):
    ours = inspect.signature(getattr(F, name)).parameters
    theirs = inspect.signature(getattr(tF, name)).parameters
    assert list(ours) == list(theirs)
    for p in theirs:
        if p == "op":   # (PyTorch's enum member, ember's ReduceOp constant)
            assert ours[p].default == dist.ReduceOp.SUM and theirs[p].default == \
                tdist.ReduceOp.SUM
        else:
            assert ours[p].default == theirs[p].default, p


def test_every_name_has_a_docstring():
    for name in enn.__all__:
        assert (getattr(enn, name).__doc__ or "").strip(), name


@pytest.mark.parametrize("name,args,warns", [
    ("all_reduce", lambda m: (m.ones(2),), True),
    ("broadcast", lambda m: (m.ones(2), 0), True),
    ("all_gather", lambda m: (m.ones(2),), True),
    ("reduce_scatter", lambda m: (m.ones(1), [m.ones(1)]), True),
    ("all_to_all_single", lambda m: (m.ones(2), m.ones(2)), True),
    ("reduce", lambda m: (m.ones(2), 0), False),
    ("gather", lambda m: (m.ones(2),), False),
    ("all_to_all", lambda m: ([m.ones(1)], [m.ones(1)]), False),
    ("scatter", lambda m: ([m.ones(1)],), False),
])
def test_before_init_pytorchs_error_after_its_deprecation_warning(name, args, warns):
    assert not dist.is_initialized()
    for module, fn in ((ember, getattr(F, name)), (torch, getattr(tF, name))):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="Default process group has not been "
                                                 "initialized"):
                fn(*args(module))
        deprecated = [w for w in seen if issubclass(w.category, FutureWarning)
                      and "is deprecated" in str(w.message)]
        assert len(deprecated) == warns, (module.__name__, [str(w.message) for w in seen])
        if warns:     # attributed to this file, not to the library
            assert deprecated[0].filename == __file__


def test_scatter_needs_tensors_of_one_shape_on_every_rank():
    for module, fn in ((ember, F.scatter), (torch, tF.scatter)):
        with pytest.raises(AssertionError):
            fn([module.ones(2), module.ones(3)])
        with pytest.raises(TypeError):
            fn(None)


def test_refused_under_compile():
    @ember.compile
    def step(x):
        return F.all_gather(x * 2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(RuntimeError, match="all_gather is not supported under "
                                               "ember.compile"):
            step(ember.ones(2))


def test_remote_module_says_ember_has_no_rpc():
    assert list(inspect.signature(enn.RemoteModule).parameters) == \
        list(inspect.signature(tnn.RemoteModule).parameters)
    with pytest.raises(NotImplementedError, match="no RPC"):
        enn.RemoteModule("worker0/cpu", ember.nn.Linear, (2, 2))


def test_imports_as_torch_distributed_nn(tmp_path):
    """``from torch.distributed import nn`` (vector-quantize-pytorch does it at import)."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import torch\n"
        "from torch.distributed import nn as dist_nn\n"
        "import torch.distributed.nn.functional as F\n"
        "print(dist_nn.__name__, dist_nn.all_reduce is F.all_reduce, F.__name__)\n")
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ember.distributed.nn", "True",
                                "ember.distributed.nn.functional"]
