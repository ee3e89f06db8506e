"""ember.library / ember.ops (PyTorch's torch.library custom operators), each behaviour
written once per framework and compared with PyTorch's."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_COUNT = [0]


def fresh(prefix):
    """A namespace no earlier test used (operators live for the process, in both)."""
    _COUNT[0] += 1
    return f"{prefix}{_COUNT[0]}"


def make_sin(lib, ns):
    @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.sin(x.detach().numpy()))
    return numpy_sin


def test_a_custom_op_runs_directly_and_through_ops():
    for lib in (ember, torch):
        ns = fresh("sin")
        op = make_sin(lib, ns)
        x = lib.tensor([0.0, 1.0, 2.0])
        want = np.sin(np.array([0.0, 1.0, 2.0], np.float32))
        np.testing.assert_array_equal(op(x).numpy(), want)
        packet = getattr(getattr(lib.ops, ns), "numpy_sin")
        np.testing.assert_array_equal(packet(x).numpy(), want)
        np.testing.assert_array_equal(packet.default(x).numpy(), want)
        assert packet.overloads() == ["default"]
        assert repr(packet) == f"<OpOverloadPacket(op='{ns}.numpy_sin')>"
        assert repr(op) == f"<CustomOpDef({ns}::numpy_sin)>"
        with pytest.raises(AttributeError, match="has no attribute 'nosuch'"):
            getattr(lib.ops, ns).nosuch


def test_backward_needs_a_registered_formula_and_then_uses_it():
    grads = {}
    for lib in (ember, torch):
        op = make_sin(lib, fresh("grad"))
        x = lib.tensor([0.5, 1.0, -2.0], requires_grad=True)
        y = op(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            y.sum().backward()

        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()
        op.register_autograd(backward, setup_context=setup_context)
        op(x).sum().backward()
        grads[lib.__name__] = x.grad.numpy().copy()
    np.testing.assert_allclose(grads["ember"], grads["torch"], rtol=1e-6)
    np.testing.assert_allclose(grads["ember"], np.cos([0.5, 1.0, -2.0]), rtol=1e-6)


def test_mutated_arguments_bump_their_version_and_others_are_caught_by_opcheck():
    for lib in (ember, torch):
        ns = fresh("mut")

        @lib.library.custom_op(f"{ns}::inc", mutates_args={"x"})
        def inc(x: lib.Tensor) -> None:
            x.add_(1)
        t = lib.zeros(2)
        v = t._version
        assert inc(t) is None
        assert t.tolist() == [1.0, 1.0] and t._version - v == 2

        @lib.library.custom_op(f"{ns}::sneaky", mutates_args=())
        def sneaky(x: lib.Tensor) -> lib.Tensor:
            x.add_(1)
            return x.clone()
        report = lib.library.opcheck(sneaky, (lib.zeros(2),), test_utils="test_schema",
                                     raise_exception=False)
        assert isinstance(report["test_schema"], RuntimeError)
        assert "Argument x is not defined as mutable but was mutated" in \
            str(report["test_schema"])
        ok = lib.library.opcheck(inc, (lib.zeros(2),), test_utils="test_schema")
        assert ok == {"test_schema": "SUCCESS"}


def test_errors_as_pytorch():
    for lib in (ember, torch):
        ns = fresh("err")
        with pytest.raises(ValueError, match="No return type annotation"):
            @lib.library.custom_op(f"{ns}::noret", mutates_args=())
            def noret(x: lib.Tensor):
                return x.clone()
        with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
            @lib.library.custom_op(f"{ns}::noann", mutates_args=())
            def noann(x) -> lib.Tensor:
                return x
        with pytest.raises(ValueError, match="unsupported type"):
            @lib.library.custom_op(f"{ns}::baddict", mutates_args=())
            def baddict(x: dict) -> lib.Tensor:
                return x
        with pytest.raises(TypeError, match="mutates_args"):
            lib.library.custom_op(f"{ns}::nomut")(lambda x: x)

        @lib.library.custom_op(f"{ns}::alias", mutates_args=())
        def alias(x: lib.Tensor) -> lib.Tensor:
            return x
        with pytest.raises(RuntimeError, match="may not alias any inputs"):
            alias(lib.ones(2))


def test_several_outputs_defaults_lists_and_optionals():
    for lib in (ember, torch):
        ns = fresh("multi")

        @lib.library.custom_op(f"{ns}::two", mutates_args=())
        def two(x: lib.Tensor, k: float = 2.0) -> tuple[lib.Tensor, lib.Tensor]:
            return x * k, x + k
        a, b = two(lib.ones(2))
        assert a.tolist() == [2.0, 2.0] and b.tolist() == [3.0, 3.0]
        assert two(lib.ones(2), k=3.0)[0].tolist() == [3.0, 3.0]

        @lib.library.custom_op(f"{ns}::total", mutates_args=())
        def total(xs: list[lib.Tensor], y: lib.Tensor | None = None) -> lib.Tensor:
            s = lib.stack(xs).sum(0)
            return s if y is None else s + y
        assert total([lib.ones(2), lib.ones(2)]).tolist() == [2.0, 2.0]
        assert total([lib.ones(2)], lib.ones(2)).tolist() == [2.0, 2.0]


def test_register_kernel_fake_and_infer_schema():
    for lib in (ember, torch):
        ns = fresh("kern")

        @lib.library.custom_op(f"{ns}::f", mutates_args=())
        def f(x: lib.Tensor, k: float) -> lib.Tensor:
            return x * k

        @f.register_kernel("cpu")
        def _(x, k):
            return x * k + 100
        assert f(lib.ones(1), 2.0).tolist() == [102.0]
        with f.set_kernel_enabled("cpu", False):
            assert f(lib.ones(1), 2.0).tolist() == [2.0]
        assert f(lib.ones(1), 2.0).tolist() == [102.0]

        @f.register_fake
        def _(x, k):
            return lib.empty_like(x)
        m = f(lib.ones(3, device="meta"), 2.0)
        assert m.device.type == "meta" and tuple(m.shape) == (3,)

        def g(x: lib.Tensor, k: float, n: int = 1) -> lib.Tensor:
            return x
        assert lib.library.infer_schema(g, mutates_args=()) == \
            "(Tensor x, float k, SymInt n=1) -> Tensor"


def test_library_define_and_impl():
    for lib in (ember, torch):
        ns = fresh("deflib")
        L = lib.library.Library(ns, "DEF")
        L.define("mul2(Tensor x) -> Tensor")
        L.impl("mul2", lambda x: x * 2, "CompositeExplicitAutograd")
        op = getattr(getattr(lib.ops, ns), "mul2")
        assert op(lib.ones(2)).tolist() == [2.0, 2.0]
        lib.library.define(f"{ns}::add3", "(Tensor x) -> Tensor")
        lib.library.impl(f"{ns}::add3", "default", lambda x: x + 3)
        assert getattr(lib.ops, ns).add3(lib.zeros(1)).tolist() == [3.0]


def test_aten_namespace_reaches_the_functions():
    for lib in (ember, torch):
        x = lib.tensor([-1.0, 2.0])
        assert lib.ops.aten.add.Tensor(x, x, alpha=2).tolist() == [-3.0, 6.0]
        assert lib.ops.aten.relu.default(x).tolist() == [0.0, 2.0]
        assert lib.ops.aten.mm(x[None], x[:, None]).tolist() == [[5.0]]


def test_a_custom_op_inside_ember_compile_gives_eager_results():
    op = make_sin(ember, fresh("comp"))
    f = ember.compile(lambda x: op(x * 2) + 1)
    for _ in range(3):
        x = ember.randn(5)
        np.testing.assert_array_equal(f(x).numpy(), (op(x * 2) + 1).numpy())
    assert ember.library.opcheck(op, (ember.randn(4),)) == {
        "test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
        "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}
