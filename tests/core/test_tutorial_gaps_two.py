"""Gaps found by running more pytorch/tutorials programs (recipes, intermediate and
advanced tutorials) under ``python -m ember.as_torch``; each test checks ember against
PyTorch run the same way."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _exp_fn(lib):
    """The forward-AD tutorial's Function: ``exp`` with a ``jvp`` and no ``backward``."""

    class Fn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            result = lib.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result
            del ctx.result
            return gO

    return Fn


def test_function_with_jvp_only_carries_tangents():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    t = rng.standard_normal((4, 3))
    got = []
    for lib in (torch, ember):
        fwad = lib.autograd.forward_ad
        primal = lib.tensor(x, requires_grad=True)
        with fwad.dual_level():
            out = _exp_fn(lib).apply(fwad.make_dual(primal, lib.tensor(t)))
            got.append(fwad.unpack_dual(out).tangent.detach().numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], t * np.exp(x), rtol=1e-12)


def test_function_with_jvp_only_still_refuses_backward():
    errors = []
    for lib in (torch, ember):
        y = _exp_fn(lib).apply(lib.ones(2, dtype=lib.float64, requires_grad=True))
        with pytest.raises(NotImplementedError) as info:
            y.sum().backward()
        errors.append(str(info.value))
    assert errors[1] == errors[0]


def test_gradcheck_forward_mode_only():
    x = np.random.default_rng(1).standard_normal((3, 2))
    for lib in (torch, ember):
        primal = lib.tensor(x, requires_grad=True)
        assert lib.autograd.gradcheck(_exp_fn(lib).apply, (primal,), check_forward_ad=True,
                                      check_backward_ad=False, check_undefined_grad=False,
                                      check_batched_grad=False)


def test_gradcheck_forward_mode_catches_a_wrong_jvp():
    results = []
    for lib in (torch, ember):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t * 3

        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(Bad.apply, (a,))     # reverse mode is right
        results.append(lib.autograd.gradcheck(Bad.apply, (a,), check_forward_ad=True,
                                              raise_exception=False))
        with pytest.raises(lib.autograd.gradcheck.GradcheckError
                           if hasattr(lib.autograd.gradcheck, "GradcheckError")
                           else RuntimeError):
            lib.autograd.gradcheck(Bad.apply, (a,), check_forward_ad=True)
    assert results == [False, False]


def test_unbound_dual_of_a_primal_requiring_grad_keeps_its_tangent():
    got = []
    for lib in (torch, ember):
        fwad = lib.autograd.forward_ad
        p = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with fwad.dual_level():
            out = fwad.make_dual(p, lib.tensor([1.0, 0.5, -1.0])).sin() * 2
            got.append(fwad.unpack_dual(out).tangent.detach().numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)


def _sinh_fn(lib):
    """The double-backward tutorial's Sinh: three outputs, two of them saved."""

    class Sinh(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = lib.exp(x)
            expnegx = lib.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, grad_exp, grad_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += grad_exp * expx
            grad_input -= grad_negexp * expnegx
            return grad_input

    return Sinh


def test_saved_outputs_of_a_multi_output_function_whose_outputs_are_dropped():
    x = np.random.default_rng(2).random((3, 3))
    got = []
    for lib in (torch, ember):
        t = lib.tensor(x, requires_grad=True)
        out = _sinh_fn(lib).apply(t)[0]      # the other two outputs are gone at once
        (g1,) = lib.autograd.grad(out.sum(), t, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), t)
        got.append((g1.detach().numpy(), g2.numpy()))
        assert lib.autograd.gradgradcheck(lambda a: _sinh_fn(lib).apply(a)[0], (t,))
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-12)
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-12)
    np.testing.assert_allclose(got[1][1], np.sinh(x), rtol=1e-12)


def test_opcheck_of_a_mutating_op_with_device_types():
    results = []
    for lib, ns in ((torch, "gaps_two_t"), (ember, "gaps_two_e")):
        @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args={"output"},
                               device_types="cpu")
        def numpy_sin(input: lib.Tensor, output: lib.Tensor) -> None:
            np.sin(input.numpy(), out=output.numpy())

        x = lib.tensor([0.5, 1.0, 2.0])
        out = lib.empty(3)
        numpy_sin(x, out)
        np.testing.assert_allclose(out.numpy(), np.sin(x.numpy()), rtol=1e-6)
        results.append(lib.library.opcheck(numpy_sin, [x, lib.empty(3)],
                                           test_utils="test_schema"))
    assert results[0] == results[1] == {"test_schema": "SUCCESS"}


_KEYS = [0, (0, 1), (slice(None), 0), slice(1, 3), (Ellipsis, 2), slice(None), slice(0, 100),
         Ellipsis, None, (0, None), (None, 0), (0, slice(1, 3)), (slice(1, 3), 0),
         (0, slice(None)), (slice(-100, None),), (Ellipsis, slice(0, 6)),
         (Ellipsis, slice(0, 5)), (1, None, slice(None)), slice(None, None, 2)]


@pytest.mark.parametrize("key", _KEYS, ids=[repr(k) for k in _KEYS])
def test_basic_index_node_names(key):
    # (printed tensors show them: ``cnn.weight[0, 1]`` is ``grad_fn=<SelectBackward0>``)
    names = []
    for lib in (torch, ember):
        x = lib.ones(4, 5, 6, requires_grad=True) * 1
        names.append(type(x[key].grad_fn).__name__)
    assert names[1] == names[0]


def _compare_tables(lib):
    bench = lib.utils.benchmark

    def m(env, sub, desc, threads, t, label="L"):
        spec = bench.TaskSpec(stmt="x*x", setup="pass", global_setup="", label=label,
                              sub_label=sub, description=desc, env=env,
                              num_threads=threads)
        return bench.Measurement(number_per_run=1, raw_times=[t, t, t], task_spec=spec)

    with_envs = [m("a", "[1]", "mul", 1, 1e-6), m("bbbb", "[1]", "mul", 1, 2e-6),
                 m("a", "[64]", "mul", 1, 3e-6), m("bbbb", "[64]", "bmm", 1, 4e-6),
                 m("a", "[1]", "mul", 2, 5e-6), m("a", None, "mul", 2, 6e-6, label="M"),
                 m("a", "s", "bmm", 2, 6e-6, label="M")]
    threads_out_of_order = [m(None, "[1]", "mul", 2, 1e-6), m(None, "[64]", "mul", 1, 3e-6),
                            m(None, "[1]", "bmm", 1, 2e-6)]
    return str(bench.Compare(with_envs)), str(bench.Compare(threads_out_of_order))


def test_benchmark_compare_shows_environments_and_orders_rows_by_threads():
    # (the benchmark recipe's A/B comparison across two environments)
    import torch.utils.benchmark  # noqa: F401
    import ember.utils.benchmark  # noqa: F401
    assert _compare_tables(ember) == _compare_tables(torch)


def _cycle_warnings(lib, acc_events):
    prof = lib.profiler
    sched = prof.schedule(wait=1, warmup=1, active=2)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with prof.profile(activities=[prof.ProfilerActivity.CPU], schedule=sched,
                          on_trace_ready=lambda p: None, acc_events=acc_events) as p:
            for _ in range(8):
                lib.ones(3).sum()
                p.step()
    return [str(w.message) for w in seen if "cycle" in str(w.message)]


@pytest.mark.parametrize("acc_events", [False, True])
def test_profiler_warns_when_a_second_cycle_clears_events(acc_events):
    # (the profiler recipe's schedule with on_trace_ready)
    import torch.profiler.profiler as torch_profiler_impl
    got = []
    for lib in (torch, ember):
        torch_profiler_impl._WARNINGS_SHOWN.clear()
        ember.profiler._CYCLE_WARNED.clear()
        got.append(_cycle_warnings(lib, acc_events))
    assert got[1] == got[0]
    assert len(got[0]) == (0 if acc_events else 1)


def _functorch_run(lib, ft):
    rng = np.random.default_rng(4)
    x = lib.tensor(rng.standard_normal((6, 3)).astype(np.float32))
    models = []
    for _ in range(3):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
        models.append(m.eval())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fmodel, params, buffers = ft.make_functional_with_buffers(models[0])
        out = fmodel(params, buffers, x)
        grads = ft.grad(lambda p: fmodel(p, buffers, x).square().sum())(params)
        lin, lin_params = ft.make_functional(lib.nn.Linear(3, 2))
        efmodel, eparams, ebuffers = ft.combine_state_for_ensemble(models)
        ens = ft.vmap(efmodel, in_dims=(0, 0, None))(eparams, ebuffers, x)
    return {
        "out": out.detach().numpy(), "grads": [g.detach().numpy() for g in grads],
        "ens": ens.detach().numpy(),
        "kinds": (type(fmodel).__name__, type(lin).__name__, type(params).__name__,
                  [type(p).__name__ for p in params], params[0].requires_grad,
                  params[0] is models[0][0].weight, eparams[0].requires_grad,
                  tuple(eparams[0].shape), len(ebuffers), len(lin_params),
                  fmodel.stateless_model[0].weight.device.type),
        "warnings": [(w.category, str(w.message)) for w in seen],
    }


def test_functorch_package():
    # (forward_ad_usage's functorch cell; older per-sample-gradient and ensembling code)
    import functorch
    import ember.functorch
    want, got = _functorch_run(torch, functorch), _functorch_run(ember, ember.functorch)
    assert got["kinds"] == want["kinds"]
    assert got["warnings"] == want["warnings"]
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-5, atol=1e-6)
    for g, w in zip(got["grads"], want["grads"]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["ens"], want["ens"], rtol=1e-5, atol=1e-6)


def test_make_functional_refuses_a_model_with_buffers():
    import functorch
    import ember.functorch
    messages = []
    for lib, ft in ((torch, functorch), (ember, ember.functorch)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as info:
                ft.make_functional(lib.nn.BatchNorm1d(2))
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_as_torch_import_functorch(tmp_path):
    script = tmp_path / "ft.py"
    script.write_text("import warnings\nwarnings.simplefilter('ignore')\n"
                      "import torch, functorch\n"
                      "f, p = functorch.make_functional(torch.nn.Linear(2, 1))\n"
                      "print(type(f).__module__.split('.')[0], f(p, torch.ones(1, 2)).shape)\n")
    out = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ember torch.Size([1, 1])"


@pytest.mark.parametrize("op", ["solve", "inv", "cholesky", "inverse"])
def test_linalg_ex_node_names(op):
    # (the parametrizations tutorial prints a Cayley-map weight: grad_fn=<LinalgSolveExBackward0>)
    names = []
    for lib in (torch, ember):
        a = lib.tensor([[2.0, 0.5, 0.0], [0.5, 3.0, 0.2], [0.0, 0.2, 1.5]], requires_grad=True)
        b = lib.ones(3, 2, requires_grad=True)
        out = {"solve": lambda: lib.linalg.solve(a, b), "inv": lambda: lib.linalg.inv(a),
               "cholesky": lambda: lib.linalg.cholesky(a), "inverse": lambda: lib.inverse(a)}[op]()
        names.append(type(out.grad_fn).__name__)
        out.sum().backward()
    assert names[1] == names[0]


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, float("inf")])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 1))])
def test_dist_is_one_node_with_pytorchs_gradients(p, shapes):
    # (the parametrizations tutorial prints torch.dist(...): grad_fn=<DistBackward0>)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    got = []
    for lib in (torch, ember):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        d = lib.dist(x, y, p)
        gx, gy = lib.autograd.grad(d, (x, y), create_graph=True)
        (hy,) = lib.autograd.grad(gx.sum(), y, allow_unused=True)
        got.append((type(d.grad_fn).__name__, d.item(), gx.detach().numpy(),
                    gy.detach().numpy(), None if hy is None else hy.numpy()))
    assert got[1][0] == got[0][0]
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-12)
    for u, v in zip(got[1][2:], got[0][2:]):
        if v is None or u is None:
            assert u is None or not np.any(u), u
            continue
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
