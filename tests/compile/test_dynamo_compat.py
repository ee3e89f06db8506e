"""The names programs use around ``torch.compile``: ``torch._dynamo``'s markers,
``optimize`` and ``graph_break``, the AOTAutograd debug backends, and the settings modules
``torch._dynamo.config`` / ``torch._inductor.config``. PyTorch is the oracle for defaults,
errors and break counts; eager mode for the values."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.dispatcher import lazy

torch = pytest.importorskip("torch")
pytest.importorskip("torch._dynamo")
pytest.importorskip("torch._inductor.config")



@pytest.fixture(autouse=True)
def _keep_torch_distribution_validation():
    """TorchDynamo turns off PyTorch's distribution argument checks when it compiles;
    later tests compare those checks' errors with ember's."""
    was = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(was)


CONFIGS = [(ember._dynamo.config, torch._dynamo.config),
           (ember._inductor.config, torch._inductor.config)]


# ---- settings modules ---------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::FutureWarning")    # PyTorch's deprecated settings
@pytest.mark.parametrize("mine,theirs", CONFIGS, ids=["dynamo", "inductor"])
def test_every_setting_has_pytorchs_name_and_default(mine, theirs):
    values = mine.get_config_copy()
    assert len(values) >= 30
    for key, value in values.items():
        obj = theirs
        for part in key.split("."):
            obj = getattr(obj, part)
        assert obj == value, key


@pytest.mark.parametrize("mine,theirs", CONFIGS, ids=["dynamo", "inductor"])
def test_unknown_settings_raise_attribute_error_as_pytorch(mine, theirs):
    for cfg in (mine, theirs):
        with pytest.raises(AttributeError, match="no_such_setting does not exist"):
            cfg.no_such_setting = 1
        with pytest.raises(AttributeError, match="no_such_setting does not exist"):
            cfg.no_such_setting
        with pytest.raises(AttributeError, match="no_such_setting does not exist"):
            with cfg.patch(no_such_setting=1):
                pass


def test_inductor_sections_are_strict_and_patchable():
    cfg = ember._inductor.config
    for c in (cfg, torch._inductor.config):
        with pytest.raises(AttributeError, match=r"triton\.nope does not exist"):
            c.triton.nope = 1
    assert cfg.triton.cudagraphs is False
    with cfg.patch("triton.cudagraphs", True):
        assert cfg.triton.cudagraphs is True
    assert cfg.triton.cudagraphs is False
    with cfg.patch({"triton.unique_kernel_names": False, "max_autotune": True}):
        assert cfg.triton.unique_kernel_names is False and cfg.max_autotune is True
    assert cfg.triton.unique_kernel_names is True and cfg.max_autotune is False
    # a bad key among good ones changes nothing
    with pytest.raises(AttributeError):
        cfg.patch({"max_autotune": True, "triton.nope": 1})
    assert cfg.max_autotune is False
    # assignments as public programs write them
    cfg.coordinate_descent_tuning = True
    try:
        assert cfg.coordinate_descent_tuning is True
    finally:
        cfg.coordinate_descent_tuning = False


def test_patch_as_decorator_restores_after_each_call_and_on_error():
    cfg = ember._dynamo.config

    @cfg.patch(cache_size_limit=3)
    def limit(fail=False):
        if fail:
            raise ValueError("boom")
        return cfg.cache_size_limit
    assert limit() == 3 and limit() == 3
    with pytest.raises(ValueError):
        limit(fail=True)
    assert cfg.cache_size_limit == 8


def test_config_disable_runs_compiled_functions_eagerly():
    seen = []

    def f(x):
        seen.append(ember.compiler.is_compiling())
        return x * 2 + 1
    g = ember.compile(f)
    x = ember.randn(8)
    with ember._dynamo.config.patch(disable=True):
        np.testing.assert_array_equal(g(x).numpy(), f(x).numpy())
    g(x)
    assert seen == [False, False, True]


# ---- backends -----------------------------------------------------------------------------

AOT = ["aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"]


def test_aot_debug_backends_are_listed_as_pytorch_lists_them():
    for name in AOT:
        assert name in torch._dynamo.list_backends(exclude_tags=())
        assert name not in torch._dynamo.list_backends()
        assert name in ember._dynamo.list_backends(exclude_tags=())
        assert name not in ember._dynamo.list_backends()


@pytest.mark.parametrize("backend", AOT)
def test_aot_debug_backends_give_eagers_values_and_gradients(backend):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 1))
    x = ember.randn(4, 6)
    compiled = ember.compile(model, backend=backend)
    for _ in range(2):
        loss_c = compiled(x).pow(2).mean()
        loss_c.backward()
        grads_c = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        loss_e = model(x).pow(2).mean()
        loss_e.backward()
        grads_e = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        np.testing.assert_array_equal(loss_c.detach().numpy(), loss_e.detach().numpy())
        for a, b in zip(grads_c, grads_e):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---- optimize and graph_break -------------------------------------------------------------

def test_optimize_is_a_compile_decorator():
    @ember._dynamo.optimize("inductor")
    def f(x):
        return (x * 3).exp().sum()
    x = ember.randn(16)
    np.testing.assert_allclose(f(x).item(), (x * 3).exp().sum().item(), rtol=1e-6)
    with pytest.raises(ember._dynamo.exc.InvalidBackend, match="nope"):
        ember._dynamo.optimize("nope")
    with pytest.raises(torch._dynamo.exc.InvalidBackend, match="nope"):
        torch._dynamo.optimize("nope")


def _with_break(lib):
    def f(x):
        x = x.sin() + 1
        lib._dynamo.graph_break()
        return x * 2
    return f


def test_graph_break_splits_the_graph_as_in_pytorch():
    mine = ember._dynamo.explain(_with_break(ember))(ember.randn(5))
    theirs = torch._dynamo.explain(_with_break(torch))(torch.randn(5))
    assert mine.graph_break_count == theirs.graph_break_count == 1
    assert mine.graph_count == theirs.graph_count == 2
    assert "graph_break" in mine.break_reasons[0].reason


def test_graph_break_values_and_fullgraph():
    x = ember.randn(7)
    before = lazy.STATS["breaks"]
    out = ember.compile(_with_break(ember))(x)
    assert lazy.STATS["breaks"] == before + 1
    np.testing.assert_array_equal(out.numpy(), ((x.sin() + 1) * 2).numpy())
    with pytest.raises(ember._dynamo.exc.Unsupported, match="graph_break"):
        ember.compile(_with_break(ember), fullgraph=True)(x)

    def first(x):           # a break before anything was captured raises too
        ember._dynamo.graph_break()
        return x + 1
    with pytest.raises(ember._dynamo.exc.Unsupported, match="test_dynamo_compat"):
        ember.compile(first, fullgraph=True)(x)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(_with_break(torch), fullgraph=True)(torch.randn(7))
    assert ember._dynamo.graph_break() is None      # outside a compiled function


def _counted(lib, counters):
    """Counters after three calls of a function with a break and a data-dependent branch
    (the second call reuses every graph, the third takes the other branch)."""
    def f(x):
        y = x.sin() * 2
        lib._dynamo.graph_break()
        if y.sum() > 0:
            return y.cos() + 1
        return y.tan() - 1
    counters.clear()
    cf = lib.compile(f, **({"backend": "eager"} if lib is torch else {}))
    x = np.linspace(-1, 2, 8).astype(np.float32)
    for v in (x, x, -x):
        cf(lib.from_numpy(v))
    return dict(counters["stats"]), dict(counters["graph_break"])


def test_counters_count_graphs_ops_and_breaks_as_pytorch():
    import torch._dynamo.utils
    mine, mine_breaks = _counted(ember, ember._dynamo.utils.counters)
    theirs, theirs_breaks = _counted(torch, torch._dynamo.utils.counters)
    assert mine["unique_graphs"] == theirs["unique_graphs"]
    assert mine["calls_captured"] == theirs["calls_captured"]
    # the explicit break is met once, while the first call compiles
    assert sum(v for k, v in theirs_breaks.items() if "graph_break" in k) == 1
    assert sum(v for k, v in mine_breaks.items() if "graph_break" in k) == 1


# ---- shape markers ------------------------------------------------------------------------

def test_markers_record_and_check_as_pytorch():
    t = ember.randn(2, 3)
    ember._dynamo.mark_dynamic(t, 0)
    ember._dynamo.mark_dynamic(t, [1], min=2, max=64)
    ember._dynamo.maybe_mark_dynamic(t, 1)
    ember._dynamo.mark_static_address(t)
    m = ember._dynamo.marked(t)
    assert m["dynamic"] == {0, 1} and m["maybe_dynamic"] == {1} and m["static_address"]
    u = ember.randn(2, 3)
    ember._dynamo.mark_static(u)
    assert ember._dynamo.marked(u)["static"] == {0, 1}
    assert ember._dynamo.marked(ember.randn(1))["dynamic"] == set()
    ember._dynamo.mark_static(nn.Linear(2, 2))
    ember._dynamo.mark_static(nn.Linear)
    with pytest.raises(TypeError, match="mark_static_address expects a tensor"):
        ember._dynamo.mark_static_address(3)
    with pytest.raises(TypeError, match="mark_static_address expects a tensor"):
        torch._dynamo.mark_static_address(3)
    with pytest.raises(TypeError):
        ember._dynamo.mark_dynamic(3, 0)


def test_marked_dims_take_any_size():
    f = ember.compile(lambda x: (x * 2).tanh().sum(-1))
    for n in (3, 5, 9):
        x = ember.randn(4, n)
        ember._dynamo.mark_dynamic(x, 1)
        np.testing.assert_allclose(f(x).numpy(), (x * 2).tanh().sum(-1).numpy(), rtol=1e-6)
