"""Behaviours that PyTorch-based registry packages rely on (tests/programs/
test_registry_packages.py), each checked against PyTorch in this process.

- ``Tensor.data`` has its own version counter (torchdiffeq's Runge-Kutta steps write the
  stage buffer through ``scratch.data[index] = value`` after autograd saved it);
- a tensor's arithmetic operators return NotImplemented for an operand they do not take,
  so Python tries its reflected method (zuko's ``NestedTensor.__rmul__``);
- einsum broadcasts ellipses of different lengths right-aligned (zuko's
  ``einsum("...ij,...j->...i", W, x)`` with a batched ``x``);
- ``torch.distributions.utils._sum_rightmost`` and ``euler_constant`` (zuko imports them).
"""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def both(fn):
    return fn(ember), fn(torch)


# ---- Tensor.data's version counter ----

def test_data_has_its_own_version_counter():
    def probe(M):
        x = M.ones(3, requires_grad=True).clone()
        x.add_(1)
        d = x.data
        before = (x._version, d._version)
        d.add_(1)
        after = (x._version, d._version)
        y = x.detach()
        y.add_(1)  # detach shares the counter
        return before, after, x._version
    assert both(probe)[0] == both(probe)[1]


def test_write_through_data_passes_the_saved_tensor_check():
    """The pattern of torchdiffeq's _UncheckedAssign: write a saved tensor through .data."""
    def run(M):
        class Assign(M.autograd.Function):
            @staticmethod
            def forward(ctx, scratch, value, i):
                ctx.i = i
                scratch.data[..., i] = value
                return scratch

            @staticmethod
            def backward(ctx, g):
                return g, g[..., ctx.i], None

        v = M.tensor([1.0, 2.0], requires_grad=True)
        k = M.zeros(2, 3)
        k = Assign.apply(k, v, 0)
        s = (k * k).sum()  # saves k
        k = Assign.apply(k, v * 3, 1)  # writes into k after the save
        (s + k.sum()).backward()
        return v.grad.numpy()
    e, t = both(run)
    np.testing.assert_allclose(e, t)


def test_data_of_a_parameter_leaves_its_version():
    def probe(M):
        p = M.nn.Parameter(M.ones(2))
        p.data.mul_(2)
        return p._version, p.data._version, p.tolist()
    assert both(probe)[0] == both(probe)[1]


# ---- operators and foreign operands ----

class Nested(tuple):
    """A tuple of tensors with reflected arithmetic, as zuko.utils.NestedTensor."""

    def __radd__(self, other):
        return "radd"

    def __rsub__(self, other):
        return "rsub"

    def __rmul__(self, other):
        return "rmul"

    def __rtruediv__(self, other):
        return "rtruediv"

    def __rfloordiv__(self, other):
        return "rfloordiv"

    def __rmod__(self, other):
        return "rmod"

    def __rpow__(self, other):
        return "rpow"

    def __add__(self, other):
        return "add"

    def __sub__(self, other):
        return "sub"

    def __mul__(self, other):
        return "mul"

    def __truediv__(self, other):
        return "truediv"


OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b, "pow": lambda a, b: a ** b,
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_tensor_op_foreign_operand_defers_to_its_reflected_method(op):
    f = OPS[op]
    e, t = both(lambda M: f(M.ones(2), Nested((M.ones(2),))))
    assert e == t == "r" + op


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv"])
def test_foreign_operand_first_is_unchanged(op):
    f = OPS[op]
    e, t = both(lambda M: f(Nested((M.ones(2),)), M.ones(2)))
    assert e == t == op


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("other", [None, object(), "s", [1.0, 2.0], (1.0, 2.0)],
                         ids=["none", "object", "str", "list", "tuple"])
def test_tensor_op_unsupported_operand_raises_type_error_as_torch(op, other):
    f = OPS[op]
    with pytest.raises(TypeError) as t_err:
        f(torch.ones(2), other)
    with pytest.raises(TypeError) as e_err:
        f(ember.ones(2), other)
    assert str(e_err.value) == str(t_err.value)


def test_numbers_and_numpy_scalars_still_work():
    for other in (2, 2.5, np.float32(2.0), np.int64(3)):
        for name, f in OPS.items():
            e, t = f(ember.ones(2) * 3, other), f(torch.ones(2) * 3, other)
            np.testing.assert_allclose(e.numpy(), t.numpy(), err_msg=f"{name} {other!r}")
            e, t = f(other, ember.ones(2) * 3), f(other, torch.ones(2) * 3)
            np.testing.assert_allclose(np.asarray(e), np.asarray(t), err_msg=f"r{name}")


# ---- einsum with ellipses of different lengths ----

@pytest.mark.parametrize("eq, shapes", [
    ("...ij,...j->...i", [(3, 4, 5), (2, 3, 5)]),
    ("...ij,...j", [(3, 4, 5), (2, 3, 5)]),
    ("...ij,...j->...i", [(2, 3, 4, 5), (3, 5)]),
    ("...,...->...", [(3,), (2, 3)]),
    ("i...,...->i...", [(2, 3), (4, 3)]),
    ("...ij,...jk->...ik", [(4, 2, 3), (5, 4, 3, 2)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (5, 4, 3, 2)]),
])
def test_einsum_ellipses_broadcast_right_aligned(eq, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    e = ember.einsum(eq, *[ember.tensor(a) for a in arrays])
    t = torch.einsum(eq, *[torch.tensor(a) for a in arrays])
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_ellipsis_gradient():
    rng = np.random.default_rng(1)
    w0, x0 = rng.standard_normal((3, 4, 5)), rng.standard_normal((2, 3, 5))
    grads = []
    for M in (ember, torch):
        w, x = M.tensor(w0, requires_grad=True), M.tensor(x0, requires_grad=True)
        M.einsum("...ij,...j->...i", w, x).square().sum().backward()
        grads.append((w.grad.numpy(), x.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ---- torch.distributions.utils names ----

def test_distributions_utils_private_names():
    from torch.distributions import utils as TU

    from ember.distributions import utils as EU
    assert EU.euler_constant == TU.euler_constant
    x = np.arange(24.0).reshape(2, 3, 4)
    for dim in (0, 1, 2, 3):
        np.testing.assert_allclose(EU._sum_rightmost(ember.tensor(x), dim).numpy(),
                                   TU._sum_rightmost(torch.tensor(x), dim).numpy())


def test_distributions_utils_standard_normal():
    from torch.distributions import utils as TU

    from ember.distributions import utils as EU
    e = EU._standard_normal((2, 3), dtype=ember.float64, device="cpu")
    t = TU._standard_normal((2, 3), dtype=torch.float64, device="cpu")
    assert (tuple(e.shape), str(e.dtype).split(".")[1]) == (tuple(t.shape),
                                                             str(t.dtype).split(".")[1])


def test_serialization_map_location_alias():
    import torch.serialization as TS

    import ember.serialization as ES
    assert hasattr(TS, "MAP_LOCATION") and ES.MAP_LOCATION is ES.MapLocation


# ---- a tensor takes attributes (pyro: ``value.unconstrained = weakref.ref(param)``) ----

def test_tensor_takes_attributes_as_torch():
    import weakref

    def probe(M):
        p = M.ones(2, requires_grad=True)
        c = p.exp()
        c.unconstrained = weakref.ref(p)
        leaf = M.zeros(3)
        leaf.tag = "x"
        param = M.nn.Parameter(M.ones(1))
        param.note = 5
        return (c.unconstrained() is p, leaf.tag, param.note, sorted(vars(leaf)),
                hasattr(M.ones(1), "tag"))
    e, t = both(probe)
    assert e == t


# ---- LogNormal is a TransformedDistribution (pyro's LogNormal calls its __init__) ----

def test_lognormal_is_a_transformed_distribution():
    E, T = ember.distributions, torch.distributions
    assert issubclass(E.LogNormal, E.TransformedDistribution)
    assert issubclass(T.LogNormal, T.TransformedDistribution)

    def build(M):
        D = M.distributions

        class PyroStyle(D.LogNormal):
            def __init__(self, loc, scale):
                super(D.LogNormal, self).__init__(D.Normal(loc, scale), D.ExpTransform())

            def expand(self, batch_shape, _instance=None):
                new = self._get_checked_instance(PyroStyle, _instance)
                return super(D.LogNormal, self).expand(batch_shape, _instance=new)

        loc, scale = M.tensor([0.1, -0.4, 1.0]), M.tensor([0.5, 1.0, 2.0])
        v = M.tensor([0.3, 1.2, 4.0])
        out = []
        for d in (D.LogNormal(loc, scale), PyroStyle(loc, scale)):
            ex = d.expand((2, 3))
            out.append([d.log_prob(v), d.cdf(v), d.icdf(M.tensor([0.1, 0.5, 0.9])), d.mean,
                        d.variance, d.mode, d.entropy(), ex.log_prob(v)])
        return out, repr(D.LogNormal(loc, scale)), type(D.LogNormal(loc, scale).expand((2, 3)))
    (e, e_repr, e_type), (t, t_repr, t_type) = both(build)
    assert e_repr == t_repr and e_type.__name__ == t_type.__name__ == "LogNormal"
    for e_vals, t_vals in zip(e, t):
        for a, b in zip(e_vals, t_vals):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


# ---- Tensor.to(None), legacy constructors from a range, torch._prims_common ----

def test_to_none_is_no_conversion():
    def probe(M):
        x = M.ones(2, dtype=M.float32)
        a, b = x.to(None), x.to(None, M.float64)
        m = M.nn.Linear(2, 2).to(None)
        return a is x, str(b.dtype).split(".")[1], str(m.weight.dtype).split(".")[1]
    assert both(probe)[0] == both(probe)[1]


@pytest.mark.parametrize("name, r", [("LongTensor", range(3)), ("LongTensor", range(4, -1, -2)),
                                     ("FloatTensor", range(2)), ("LongTensor", range(0))])
def test_legacy_constructor_takes_a_range_as_data(name, r):
    e, t = getattr(ember, name)(r), getattr(torch, name)(r)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_prims_common_device_like_type_under_the_alias(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "p.py"
    script.write_text("from torch._prims_common import DeviceLikeType\n"
                      "import typing, torch\n"
                      "print(sorted(a.__name__ for a in typing.get_args(DeviceLikeType)))\n")
    outs = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                           timeout=300) for pre in (["-m", "ember.as_torch"], [])]
    assert all(r.returncode == 0 for r in outs), [r.stderr for r in outs]
    assert outs[0].stdout == outs[1].stdout


# ---- deepcopy and pickling keep a tensor's attributes and gradient; non-leaves refuse ----

def test_deepcopy_keeps_grad_and_attributes_as_torch():
    import copy

    def probe(M):
        x = M.ones(2, requires_grad=True)
        (x * 3).sum().backward()
        x.tag = ["a"]
        y = copy.deepcopy(x)
        plain = M.arange(3.0)
        pair = copy.deepcopy([plain, plain])
        return (y.grad.tolist(), y.tag, y.tag is x.tag, y.is_leaf, y.requires_grad,
                pair[0] is pair[1], hasattr(copy.deepcopy(plain), "tag"))
    assert both(probe)[0] == both(probe)[1]


def test_pickle_keeps_attributes_as_torch():
    import pickle

    def probe(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        x.tag = {"k": 1}
        y = pickle.loads(pickle.dumps(x))
        return y.tag, y.tolist(), y.requires_grad, y.is_leaf, y.grad is None
    assert both(probe)[0] == both(probe)[1]


def test_deepcopy_of_a_non_leaf_raises_as_torch():
    import copy
    for M in (torch, ember):
        x = M.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf|leaves"):
            copy.deepcopy(x * 2)
        assert copy.deepcopy((x * 2).detach()).tolist() == [2.0, 2.0]


# ---- torch.futures / torch.Future (captum), torch.__config__ (torch_geometric) ----

def test_futures_as_torch():
    def probe(M):
        f = M.futures.Future()
        g = f.then(lambda fut: fut.value() + 1)
        before = (f.done(), g.done())
        f.set_result(3)
        bad = M.futures.Future()
        bad.set_exception(ValueError("boom"))
        chained = bad.then(lambda fut: fut.value())
        try:
            chained.wait()
            err = None
        except Exception as e:  # (a RuntimeError naming the callback's error)
            err = (type(e).__name__, "ValueError" in str(e) and "boom" in str(e))
        try:
            bad.wait()
        except Exception as e:
            err = (err, type(e).__name__, str(e))
        both_done = M.futures.collect_all([f, g]).wait()
        return (before, f.wait(), g.value(), err, [x.value() for x in both_done],
                M.futures.wait_all([f, g]), issubclass(M.futures.Future, M.Future),
                M.jit.Future is M.futures.Future, isinstance(M.jit.fork(lambda: 1), M.Future))
    assert both(probe)[0] == both(probe)[1]


def test_config_show_and_parallel_info():
    for M in (ember, torch):
        text = M.__config__.show()
        assert isinstance(text, str) and "USE_MKL=" in text
        assert isinstance(M.__config__.parallel_info(), str)
    assert ("USE_MKLDNN=ON" in ember.__config__.show()) == ember.backends.mkldnn.is_available()


# ---- torch.distributions' one-module-per-distribution paths (captum) ----

def test_distribution_submodules_as_torch():
    import importlib
    import pkgutil

    import torch.distributions as TD
    for info in pkgutil.iter_modules(TD.__path__):
        t_mod = importlib.import_module(f"torch.distributions.{info.name}")
        e_mod = importlib.import_module(f"ember.distributions.{info.name}")
        names = [n for n in getattr(t_mod, "__all__", []) if n[0].isupper()]
        for n in names:
            assert getattr(e_mod, n).__name__ == getattr(t_mod, n).__name__, (info.name, n)


def test_old_lr_scheduler_name():
    from torch.optim import lr_scheduler as TL

    from ember.optim import lr_scheduler as EL
    assert issubclass(TL._LRScheduler, TL.LRScheduler)
    assert issubclass(EL._LRScheduler, EL.LRScheduler)

    def run(M, L):
        opt = M.optim.SGD([M.nn.Parameter(M.ones(1))], lr=0.5)

        class Half(L._LRScheduler):
            def get_lr(self):
                return [g["lr"] * 0.5 for g in self.optimizer.param_groups]
        sched = Half(opt)
        lrs = [opt.param_groups[0]["lr"]]
        for _ in range(2):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        return lrs
    assert run(ember, EL) == run(torch, TL)


# ---- torch.nn.parallel.scatter_gather (captum imports scatter) ----

def test_scatter_gather_on_the_cpu_as_torch():
    from torch.nn.parallel import scatter_gather as TS

    from ember.nn.parallel import scatter_gather as ES
    assert ES.scatter_kwargs((), {}, []) == TS.scatter_kwargs((), {}, [])
    assert ES.scatter(3, []) == TS.scatter(3, [])
    with pytest.raises(AssertionError):
        TS.gather([torch.ones(1), torch.zeros(1)], -1)
    with pytest.raises(AssertionError):
        ES.gather([ember.ones(1), ember.zeros(1)], -1)
    if not ember.accelerator.is_available():
        with pytest.raises(RuntimeError, match="accelerator"):
            ES.scatter(ember.arange(4.0), [0, 1])


# ---- names opacus and monai import: private data/FSDP/DTensor paths, model_zoo ----

def test_alias_resolves_more_private_paths(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "p.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.data._utils.collate import (default_collate, default_collate_fn_map,\n"
        "    collate_tensor_fn, np_str_obj_array_pattern, default_convert)\n"
        "from torch.utils.data.dataloader import _collate_fn_t, _worker_init_fn_t\n"
        "from torch.distributed._tensor.experimental import implicit_replication\n"
        "from torch.distributed._composable.fsdp import FSDPModule\n"
        "from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n"
        "from torch.distributed.tensor import DTensor\n"
        "from torch.utils import model_zoo\n"
        "b = default_collate([{'a': torch.ones(2)}, {'a': torch.zeros(2)}])\n"
        "print(b['a'].tolist(), bool(np_str_obj_array_pattern.search('U')))\n"
        "print(isinstance(torch.nn.Linear(1, 1), FSDPModule), type(torch.ones(1)) is DTensor,\n"
        "      issubclass(DTensor, torch.Tensor), MixedPrecisionPolicy().cast_forward_inputs)\n"
        "with implicit_replication():\n"
        "    print((torch.ones(1) + 1).tolist())\n"
        "print(callable(model_zoo.load_url), callable(collate_tensor_fn))\n")
    outs = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                           timeout=300) for pre in (["-m", "ember.as_torch"], [])]
    assert all(r.returncode == 0 for r in outs), [r.stderr[-2000:] for r in outs]
    assert outs[0].stdout == outs[1].stdout


def test_fsdp_and_dtensor_raise_not_implemented():
    from ember.distributed.fsdp import fully_shard
    from ember.distributed.tensor import DTensor
    with pytest.raises(NotImplementedError, match="fully_shard"):
        fully_shard(ember.nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="DTensor"):
        DTensor()
    # defining DTensor armed no __torch_function__ dispatch
    assert not ember.overrides._overrides(DTensor)


# ---- bitwise ReduceOps (ignite maps its "AND"/"OR" reductions to them at import) ----

def test_bitwise_reduce_ops_over_two_ranks(tmp_path):
    import os
    import subprocess
    import sys
    import ember.distributed as dist
    from torch import distributed as tdist
    if not dist.is_available():
        pytest.skip("mpi4py not installed")
    for name in ("BAND", "BOR", "BXOR"):
        assert dist.supports_complex(getattr(dist.ReduceOp, name)) is \
            tdist.supports_complex(getattr(tdist.ReduceOp, name))
    script = tmp_path / "w.py"
    script.write_text(
        "import numpy as np, ember, ember.distributed as dist\n"
        "dist.init_process_group('mpi')\n"
        "r = dist.get_rank()\n"
        "vals = [np.array([12, 10, 7, 0]), np.array([10, 6, 1, 5])]\n"
        "out = []\n"
        "for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):\n"
        "    t = ember.tensor(vals[r])\n"
        "    dist.all_reduce(t, op=op)\n"
        "    out.append(t.tolist())\n"
        "b = ember.tensor([r == 0, True, False])\n"
        "dist.all_reduce(b, op=dist.ReduceOp.BOR)\n"
        "try:\n"
        "    dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND)\n"
        "    err = None\n"
        "except RuntimeError as e:\n"
        "    err = 'bitwise' in str(e)\n"
        "print('rank', r, out, b.tolist(), err)\n")
    r = subprocess.run([sys.executable, "-m", "ember.distributed.run", "-n", "2", "--timeout",
                        "120", str(script)], capture_output=True, text=True, timeout=200,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    a, b = np.array([12, 10, 7, 0]), np.array([10, 6, 1, 5])
    want = f"{[(a & b).tolist(), (a | b).tolist(), (a ^ b).tolist()]} [True, True, False] True"
    for rank in (0, 1):
        assert f"rank {rank} {want}" in r.stdout, r.stdout + r.stderr


# ---- torch.types (ignite imports Number from it) ----

def test_types_module_as_torch():
    import typing

    import torch.types as TT

    import ember.types as ET
    assert ET.__all__ == TT.__all__
    for name in ("Number", "_Number", "_int", "_float", "_bool", "_complex", "_str", "_bytes"):
        e, t = getattr(ET, name), getattr(TT, name)
        if isinstance(t, tuple):
            assert e == t
        elif isinstance(t, type):
            assert e is t
        else:
            assert set(typing.get_args(e)) == set(typing.get_args(t)), name
    assert len(typing.get_args(ET.Device)) == len(typing.get_args(TT.Device))


# ---- vmap over autograd.grad (torchjd's Jacobians: one vjp per row, batched by vmap) ----

def test_vmap_of_autograd_grad_as_torch():
    def run(M):
        x = M.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = M.stack([x.prod(), (x * x).sum()])

        def vjp(v):
            return M.autograd.grad(y, x, v, retain_graph=False)[0]
        jac = M.vmap(vjp)(M.eye(2))
        try:
            M.autograd.grad(y, x, M.ones(2))
            freed = False
        except RuntimeError:
            freed = True  # the batched call freed the graph, as one grad() does
        return jac.tolist(), freed
    assert run(ember) == run(torch)


# ---- Size slices and broadcast_shapes are Sizes; numpy() under no_grad (botorch) ----

def test_size_slices_and_broadcast_shapes_are_sizes_as_torch():
    def probe(M):
        s = M.ones(2, 3, 4).shape
        return [(type(v).__name__, tuple(v), v.numel()) for v in
                (s[:-1], s[1:], s[::2], s[5:], M.broadcast_shapes((2, 1), (3,)),
                 M.broadcast_shapes(3, (2, 1)))] + [type(s[0]).__name__, s[-1]]
    assert both(probe)[0] == both(probe)[1]


def test_numpy_of_a_tensor_requiring_grad_under_no_grad_as_torch():
    for M in (ember, torch):
        p = M.nn.Parameter(M.ones(3))
        with M.no_grad():
            assert p.view(-1).numpy().tolist() == [1.0, 1.0, 1.0]
        with M.inference_mode():
            assert p.numpy().tolist() == [1.0, 1.0, 1.0]
        with pytest.raises(RuntimeError, match="requires grad"):
            p.numpy()
