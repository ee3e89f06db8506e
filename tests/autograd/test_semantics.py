"""Autograd semantics: graph structure, backward/grad, grad modes, version counters, hooks,
custom Functions, gradcheck and error messages.

PyTorch's behaviour is the spec. Expected values come from PyTorch (run side by side),
closed-form derivatives, or float64 finite differences -- never from ember itself.
Where a test needs a constant factor it uses a tensor constant (``C(2.0)``) so that each
test exercises one feature; Python-scalar operands have their own test below.
"""
import gc
import math
import threading
import weakref

import numpy as np
import pytest
import torch

import ember
from ember import autograd


def E(data, requires_grad=False, dtype=ember.float64):
    return ember.tensor(np.asarray(data, dtype=np.float64), dtype=dtype,
                        requires_grad=requires_grad)


def C(value):
    """A constant (non-grad) float64 tensor."""
    return ember.tensor(np.asarray(value, dtype=np.float64))


def N(t):
    """An ember tensor's values as a NumPy array (never touches the graph)."""
    return np.array(t.detach().numpy(), copy=True)


def close(actual, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(N(actual) if isinstance(actual, ember.Tensor) else actual,
                               expected, rtol=rtol, atol=atol)


X3 = np.array([0.5, -1.25, 2.0])


# =========================================================================================
# graph structure
# =========================================================================================
class TestGraphStructure:
    def test_leaf_flags(self):
        x = E(X3, requires_grad=True)
        c = E(X3)
        assert x.is_leaf and x.requires_grad and x.grad_fn is None and x.grad is None
        assert c.is_leaf and not c.requires_grad and c.grad_fn is None

    def test_op_output_is_non_leaf_with_named_node(self):
        x = E(X3, requires_grad=True)
        w = E([2.0, 3.0, 4.0], requires_grad=True)
        y = x * w
        assert not y.is_leaf
        assert y.requires_grad
        assert type(y.grad_fn).__name__ == "MulBackward0"
        assert y.grad_fn.name() == "MulBackward0"
        assert type((x + w).grad_fn).__name__ == "AddBackward0"
        assert type(x.exp().grad_fn).__name__ == "ExpBackward0"
        assert type(y.sum().grad_fn).__name__ == "SumBackward0"

    def test_output_of_non_grad_inputs_is_a_leaf(self):
        a, b = E(X3), E(X3)
        y = a * b
        assert y.is_leaf and not y.requires_grad and y.grad_fn is None

    def test_requires_grad_propagates_from_any_input(self):
        x = E(X3, requires_grad=True)
        c = E(X3)
        assert (c * x).requires_grad and (x * c).requires_grad
        assert (c + c).requires_grad is False

    def test_integer_and_bool_results_do_not_require_grad(self):
        x = E(X3, requires_grad=True)
        for t in (x > 0, x == x, x.argmax()):
            assert not t.requires_grad and t.grad_fn is None

    def test_next_functions_pytorch_layout(self):
        # PyTorch: next_functions is a tuple of (node, input_nr) pairs; a leaf that
        # requires grad is reached through an AccumulateGrad whose .variable is the leaf;
        # an input that does not require grad gives (None, 0).
        x = E(X3, requires_grad=True)
        c = E(X3)
        y = x * c
        t = torch.tensor(X3, requires_grad=True) * torch.tensor(X3)
        nf = y.grad_fn.next_functions
        assert len(nf) == len(t.grad_fn.next_functions) == 2
        assert isinstance(nf[0], tuple) and len(nf[0]) == 2, \
            f"next_functions entries should be (node, input_nr) pairs, got {nf!r}"
        node, nr = nf[0]
        assert type(node).__name__ == "AccumulateGrad" and nr == 0
        assert node.variable is x
        assert nf[1] == (None, 0)

    def test_next_functions_chain_and_shared_accumulate_grad(self):
        x = E(X3, requires_grad=True)
        y = x.exp()
        z = y.sin()
        nodes = [e[0] if isinstance(e, tuple) else e for e in z.grad_fn.next_functions]
        assert nodes[0] is y.grad_fn
        # while the graph is alive, every use of a leaf goes through the same AccumulateGrad
        a = x.sin()
        b = x.cos()
        na = [e[0] if isinstance(e, tuple) else e for e in a.grad_fn.next_functions][0]
        nb = [e[0] if isinstance(e, tuple) else e for e in b.grad_fn.next_functions][0]
        assert na is nb and na.variable is x

    @pytest.mark.parametrize("op", [
        "mul", "add", "sub", "div", "neg", "exp", "log", "sin", "tanh", "sigmoid", "sum",
        "mean", "pow_tensor", "reshape", "permute", "expand", "clone", "cat", "softmax",
        "log_softmax", "bmm", "gather", "where", "index", "slice", "select", "unsqueeze",
        "transpose", "mm", "amax", "std", "var", "maximum", "cumsum", "logsumexp"])
    def test_node_names_match_pytorch(self, op):
        a = np.array([[0.5, 1.5, 2.5], [1.0, 2.0, 3.0]])

        def prog(lib, x):
            return {
                "mul": lambda: x * x, "add": lambda: x + x, "sub": lambda: x - x,
                "div": lambda: x / x, "neg": lambda: -x, "exp": lambda: x.exp(),
                "log": lambda: x.log(), "sin": lambda: x.sin(), "tanh": lambda: x.tanh(),
                "sigmoid": lambda: x.sigmoid(), "sum": lambda: x.sum(),
                "mean": lambda: x.mean(), "pow_tensor": lambda: x.pow(x),
                "reshape": lambda: x.reshape(3, 2), "permute": lambda: x.permute(1, 0),
                "expand": lambda: x.unsqueeze(0).expand(2, 2, 3),
                "clone": lambda: x.clone(), "cat": lambda: lib.cat([x, x]),
                "softmax": lambda: x.softmax(1), "log_softmax": lambda: x.log_softmax(1),
                "bmm": lambda: lib.bmm(x.unsqueeze(0), x.t().unsqueeze(0)),
                "gather": lambda: x.gather(1, lib.tensor([[0], [1]])),
                "where": lambda: lib.where(x > 1, x, x),
                "index": lambda: x[lib.tensor([1, 0])],
                "slice": lambda: x[:, 1:], "select": lambda: x[0],
                "unsqueeze": lambda: x.unsqueeze(0), "transpose": lambda: x.transpose(0, 1),
                "mm": lambda: lib.mm(x, x.t()), "amax": lambda: x.amax(1),
                "std": lambda: x.std(), "var": lambda: x.var(),
                "maximum": lambda: lib.maximum(x, x), "cumsum": lambda: x.cumsum(1),
                "logsumexp": lambda: x.logsumexp(1),
            }[op]()
        want = type(prog(torch, torch.tensor(a, requires_grad=True)).grad_fn).__name__
        got = type(prog(ember, E(a, requires_grad=True)).grad_fn).__name__
        assert got == want

    def test_repr_shows_grad_fn_and_requires_grad(self):
        x = E([1.0, 2.0], requires_grad=True)
        assert "requires_grad=True" in repr(x)
        y = x * x
        assert "grad_fn=<MulBackward0>" in repr(y)
        assert "grad_fn" not in repr(y.detach())

    @pytest.mark.parametrize("factory", ["zeros", "ones", "randn", "rand", "empty"])
    def test_creation_with_requires_grad(self, factory):
        t = getattr(ember, factory)(2, 3, requires_grad=True)
        assert t.requires_grad and t.is_leaf and t.grad_fn is None
        t2 = ember.tensor([1.0, 2.0], requires_grad=True)
        assert t2.requires_grad and t2.is_leaf

    def test_requires_grad_(self):
        x = E(X3)
        r = x.requires_grad_()
        assert r is x and x.requires_grad and x.is_leaf
        x.requires_grad_(False)
        assert not x.requires_grad
        x.requires_grad_(True)
        y = x * x
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of "
                                               "leaf variables"):
            y.requires_grad_(False)
        # turning it on for a non-leaf is allowed (it already requires grad)
        assert y.requires_grad_(True) is y

    def test_requires_grad_on_int_tensor_raises(self):
        i = ember.tensor([1, 2, 3])
        with pytest.raises(RuntimeError, match="only Tensors of floating point"):
            i.requires_grad_()
        with pytest.raises(RuntimeError, match="only Tensors of floating point"):
            ember.tensor([1, 2], requires_grad=True)

    def test_detach_shares_storage_and_has_no_graph(self):
        x = E(X3, requires_grad=True)
        y = x * C(2.0)
        d = y.detach()
        assert not d.requires_grad and d.grad_fn is None and d.is_leaf
        v0 = y._version
        d.add_(C(1.0))  # d does not require grad: in-place is allowed, and is seen by y
        close(y, X3 * 2 + 1)
        assert y._version == v0 + 1 == d._version  # shared version counter
        # detaching a leaf: a write through the detached alias changes the leaf's values
        xd = x.detach()
        xd.mul_(C(0.0))
        close(x, np.zeros(3))

    def test_detach_cuts_the_gradient(self):
        x = E(X3, requires_grad=True)
        y = x * x.detach()  # d/dx = x.detach(), not 2x
        y.sum().backward()
        close(x.grad, X3)

    def test_detach_(self):
        x = E(X3, requires_grad=True)
        y = x * x
        r = y.detach_()
        assert r is y and y.grad_fn is None and not y.requires_grad and y.is_leaf
        close(y, X3 * X3)


# =========================================================================================
# backward
# =========================================================================================
class TestBackward:
    def test_scalar_default_gradient(self):
        x = E(X3, requires_grad=True)
        (x * x).sum().backward()
        close(x.grad, 2 * X3)
        assert x.grad.shape == (3,) and x.grad.dtype is ember.float64
        assert x.grad.grad_fn is None and not x.grad.requires_grad

    def test_non_scalar_needs_gradient(self):
        x = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError,
                           match="grad can be implicitly created only for scalar outputs"):
            (x * x).backward()

    def test_single_element_non_0d_output_is_ok(self):
        x = E(X3, requires_grad=True)
        (x * x).sum().reshape(1, 1).backward()
        close(x.grad, 2 * X3)

    def test_explicit_gradient(self):
        x = E(X3, requires_grad=True)
        g = np.array([1.0, -2.0, 0.5])
        (x * x).backward(gradient=E(g))
        close(x.grad, 2 * X3 * g)

    def test_gradient_shape_mismatch(self):
        x = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            (x * x).backward(E([1.0, 2.0]))

    def test_backward_on_tensor_without_grad(self):
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad "
                                               "and does not have a grad_fn"):
            (E(X3) * E(X3)).sum().backward()

    def test_accumulates_across_calls_in_place(self):
        x = E(X3, requires_grad=True)
        (x * x).sum().backward()
        g1 = x.grad
        (x * x * x).sum().backward()
        close(x.grad, 2 * X3 + 3 * X3 ** 2)
        assert x.grad is g1  # PyTorch accumulates into the existing .grad in place

    def test_grad_reset_to_none(self):
        x = E(X3, requires_grad=True)
        x.sin().sum().backward()
        x.grad = None
        x.cos().sum().backward()
        close(x.grad, -np.sin(X3))

    def test_leaf_grad_does_not_alias_the_callers_gradient(self):
        x = E(X3, requires_grad=True)
        g = E([1.0, 1.0, 1.0])
        x.backward(g)
        g.mul_(C(5.0))
        close(x.grad, np.ones(3))

    def test_inputs_restricts_accumulation(self):
        x = E(X3, requires_grad=True)
        w = E([2.0, 3.0, 4.0], requires_grad=True)
        (x * w).sum().backward(inputs=[x])
        close(x.grad, [2.0, 3.0, 4.0])
        assert w.grad is None
        (x * w).sum().backward(inputs=w)
        close(w.grad, X3)
        close(x.grad, [2.0, 3.0, 4.0])

    def test_inputs_non_leaf_accumulates_into_its_grad(self):
        # torch: y = x*2; (y*y).sum().backward(inputs=[y]) -> y.grad == 2y, x.grad None
        x = E(X3, requires_grad=True)
        y = x * C(2.0)
        (y * y).sum().backward(inputs=[y])
        assert x.grad is None
        assert y.grad is not None, "backward(inputs=[non_leaf]) should fill non_leaf.grad"
        close(y.grad, 4 * X3)

    def test_empty_inputs_raises(self):
        x = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError, match="empty"):
            (x * x).sum().backward(inputs=[])

    def test_multiple_roots(self):
        x = E(X3, requires_grad=True)
        a, b = x.sin(), x * x
        autograd.backward([a, b], [E(np.ones(3)), E([1.0, 2.0, 3.0])])
        close(x.grad, np.cos(X3) + 2 * X3 * np.array([1.0, 2.0, 3.0]))

    def test_diamond_graph_sums_paths(self):
        x = E(X3, requires_grad=True)
        w = E([0.3, 0.7, -1.1], requires_grad=True)
        y = x * w
        (y.sin() + y.cos() + y).sum().backward()
        dy = np.cos(X3 * [0.3, 0.7, -1.1]) - np.sin(X3 * [0.3, 0.7, -1.1]) + 1
        close(x.grad, dy * [0.3, 0.7, -1.1])
        close(w.grad, dy * X3)

    def test_unreached_branch_leaves_grad_none(self):
        x = E(X3, requires_grad=True)
        w = E(X3, requires_grad=True)
        _ = w * w  # a separate graph
        (x * x).sum().backward()
        assert w.grad is None

    def test_deep_chain_python_scalar(self):
        # 10,000 recorded ops: no RecursionError, and the analytic gradient 1.0001**10000
        x = E([1.0, 2.0], requires_grad=True)
        y = x
        for _ in range(10_000):
            y = y * 1.0001
        y.sum().backward()
        close(x.grad, np.full(2, 1.0001 ** 10_000), rtol=1e-9)

    def test_deep_chain_tensor_factor(self):
        x = E([1.0, 2.0], requires_grad=True)
        c = C(1.0001)
        y = x
        for _ in range(10_000):
            y = y * c
        y.sum().backward()
        close(x.grad, np.full(2, 1.0001 ** 10_000), rtol=1e-9)

    def test_deep_chain_grad_and_create_graph(self):
        x = E([0.5], requires_grad=True)
        y = x
        for _ in range(3000):
            y = y.sin()
        (g,) = autograd.grad(y.sum(), x)
        # analytic: product of cos over the forward iterates
        v, d = 0.5, 1.0
        for _ in range(3000):
            d *= math.cos(v)
            v = math.sin(v)
        close(g, [d], rtol=1e-9)

    def test_second_backward_raises(self):
        x = E(X3, requires_grad=True)
        z = x.exp().sum()
        z.backward()
        with pytest.raises(RuntimeError,
                           match="Trying to backward through the graph a second time"):
            z.backward()

    def test_second_backward_without_saved_tensors_is_allowed(self):
        # PyTorch only fails when a freed saved tensor is needed; add and sum save none.
        x = E(X3, requires_grad=True)
        z = (x + C(1.0)).sum()
        z.backward()
        z.backward()
        close(x.grad, 2 * np.ones(3))

    def test_retain_graph(self):
        x = E(X3, requires_grad=True)
        z = (x.exp() * x).sum()
        z.backward(retain_graph=True)
        z.backward()
        close(x.grad, 2 * (np.exp(X3) * X3 + np.exp(X3)))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            z.backward()

    def test_saved_tensors_are_released_after_backward(self):
        x = E(X3, requires_grad=True)
        w = E([1.0, 2.0, 3.0], requires_grad=True)
        h = x * w               # intermediate, saved by sin (as its input)
        z = h.sin().sum()
        ref = weakref.ref(h)
        del h
        gc.collect()
        assert ref() is not None, "the graph should keep the saved intermediate alive"
        z.backward()
        gc.collect()
        assert ref() is None, "saved intermediate still alive after backward"
        close(x.grad, np.cos(X3 * [1, 2, 3]) * [1, 2, 3])

    def test_saved_tensors_kept_with_retain_graph(self):
        x = E(X3, requires_grad=True)
        h = x * C(2.0)
        z = h.sin().sum()
        ref = weakref.ref(h)
        del h
        z.backward(retain_graph=True)
        gc.collect()
        assert ref() is not None

    def test_create_graph_backward_gives_differentiable_grad(self):
        x = E(X3, requires_grad=True)
        (x * x * x).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        close(g, 3 * X3 ** 2)
        x.grad = None
        g.sum().backward()
        close(x.grad, 6 * X3)


# =========================================================================================
# broadcasting
# =========================================================================================
class TestBroadcasting:
    def test_column_plus_row(self):
        a = E(np.arange(3.0).reshape(3, 1), requires_grad=True)
        b = E(np.arange(4.0).reshape(1, 4), requires_grad=True)
        (a + b).sum().backward()
        assert a.grad.shape == (3, 1) and b.grad.shape == (1, 4)
        close(a.grad, np.full((3, 1), 4.0))
        close(b.grad, np.full((1, 4), 3.0))

    def test_column_times_row_vs_torch(self):
        an, bn = np.array([[1.0], [2.0], [-3.0]]), np.array([[0.5, 1.5, -2.0, 4.0]])
        gn = np.arange(12.0).reshape(3, 4)
        a, b = E(an, requires_grad=True), E(bn, requires_grad=True)
        (a * b).backward(E(gn))
        ta, tb = torch.tensor(an, requires_grad=True), torch.tensor(bn, requires_grad=True)
        (ta * tb).backward(torch.tensor(gn))
        close(a.grad, ta.grad.numpy())
        close(b.grad, tb.grad.numpy())

    def test_zero_dim_tensor(self):
        s = E(2.5, requires_grad=True)
        x = E(np.arange(6.0).reshape(2, 3), requires_grad=True)
        (s * x).sum().backward()
        assert s.grad.shape == () and x.grad.shape == (2, 3)
        close(s.grad, 15.0)
        close(x.grad, np.full((2, 3), 2.5))

    def test_zero_dim_only(self):
        s = E(1.5, requires_grad=True)
        y = s * s
        assert y.shape == ()
        y.backward()
        close(s.grad, 3.0)

    def test_leading_dims_and_size_one(self):
        a = E(np.ones(4), requires_grad=True)
        b = E(np.ones((2, 1, 4)), requires_grad=True)
        c = E(np.ones((2, 3, 1)), requires_grad=True)
        (a * b * c).sum().backward()
        assert a.grad.shape == (4,) and b.grad.shape == (2, 1, 4) and c.grad.shape == (2, 3, 1)
        close(a.grad, np.full(4, 6.0))
        close(b.grad, np.full((2, 1, 4), 3.0))
        close(c.grad, np.full((2, 3, 1), 4.0))


# =========================================================================================
# Python scalar operands (a very common PyTorch idiom)
# =========================================================================================
@pytest.mark.parametrize("name", ["x*2", "2*x", "x/2", "2/x", "x**2", "2**x", "x-2", "2-x",
                                  "x+2", "clamp_min0", "lerp_scalar_w", "fmod_scalar",
                                  "remainder_scalar", "sub_alpha", "add_alpha"])
def test_python_scalar_operands_vs_torch(name):
    xn = np.array([0.5, -1.25, 2.0, 3.5])
    end = np.array([1.0, 2.0, -1.0, 0.0])

    def prog(lib, x):
        e = lib.tensor(end)
        return {
            "x*2": lambda: x * 2, "2*x": lambda: 2 * x, "x/2": lambda: x / 2,
            "2/x": lambda: 2 / x, "x**2": lambda: x ** 2, "2**x": lambda: 2 ** x,
            "x-2": lambda: x - 2, "2-x": lambda: 2 - x, "x+2": lambda: x + 2,
            "clamp_min0": lambda: x.clamp(min=0), "lerp_scalar_w": lambda: x.lerp(e, 0.3),
            "fmod_scalar": lambda: lib.fmod(x, 1.5),
            "remainder_scalar": lambda: lib.remainder(x, 1.5),
            "sub_alpha": lambda: lib.sub(x, x * x, alpha=2),
            "add_alpha": lambda: lib.add(x, x * x, alpha=3),
        }[name]()
    tx = torch.tensor(xn, requires_grad=True)
    ty = prog(torch, tx)
    gn = np.array([1.0, -2.0, 0.5, 3.0])
    ty.backward(torch.tensor(gn))
    x = E(xn, requires_grad=True)
    y = prog(ember, x)
    close(y, ty.detach().numpy())
    y.backward(E(gn))
    close(x.grad, tx.grad.numpy())


# =========================================================================================
# autograd.grad
# =========================================================================================
class TestGrad:
    def test_basic_and_no_accumulation(self):
        x = E(X3, requires_grad=True)
        (g,) = autograd.grad((x.sin() * x).sum(), x)
        close(g, np.cos(X3) * X3 + np.sin(X3))
        assert x.grad is None
        assert not g.requires_grad

    def test_grad_outputs(self):
        x = E(X3, requires_grad=True)
        v = np.array([1.0, 0.5, -2.0])
        (g,) = autograd.grad(x.exp(), [x], grad_outputs=[E(v)])
        close(g, np.exp(X3) * v)

    def test_multiple_inputs_returns_tuple(self):
        x = E(X3, requires_grad=True)
        w = E([2.0, 3.0, 4.0], requires_grad=True)
        gx, gw = autograd.grad((x * w).sum(), (x, w))
        close(gx, [2.0, 3.0, 4.0])
        close(gw, X3)

    def test_with_respect_to_intermediate(self):
        x = E(X3, requires_grad=True)
        y = x.exp()
        (gy,) = autograd.grad((y * y).sum(), y)
        close(gy, 2 * np.exp(X3))

    def test_hvp_cubic(self):
        # f(x) = sum(x^3): grad 3x^2, Hessian diag(6x), so H v = 6 x v
        x = E(X3, requires_grad=True)
        v = np.array([1.0, -1.0, 0.5])
        f = (x * x * x).sum()
        (g,) = autograd.grad(f, x, create_graph=True)
        assert g.requires_grad
        close(g, 3 * X3 ** 2)
        (hv,) = autograd.grad(g, x, grad_outputs=E(v))
        close(hv, 6 * X3 * v)

    def test_hvp_mlp_vs_torch(self):
        rng = np.random.default_rng(0)
        xn, w1n, w2n, vn = (rng.standard_normal(s) for s in [(4, 3), (3, 5), (5, 1), (3, 5)])

        def hvp(lib, grad_fn):
            x = lib.tensor(xn)
            w1 = lib.tensor(w1n, requires_grad=True)
            w2 = lib.tensor(w2n, requires_grad=True)
            loss = (lib.tanh(x @ w1) @ w2).sigmoid().sum()
            g1, g2 = grad_fn(loss, (w1, w2), create_graph=True)
            dot = (g1 * lib.tensor(vn)).sum()
            h1, h2 = grad_fn(dot, (w1, w2))
            return g1.detach().numpy(), h1.numpy(), h2.numpy()
        for got, want in zip(hvp(ember, autograd.grad), hvp(torch, torch.autograd.grad)):
            close(got, want, rtol=1e-9, atol=1e-12)

    def test_gradient_penalty_vs_torch(self):
        rng = np.random.default_rng(1)
        xn, wn = rng.standard_normal((5, 3)), rng.standard_normal((3, 2))

        def run(lib, grad_fn):
            x = lib.tensor(xn, requires_grad=True)
            w = lib.tensor(wn, requires_grad=True)
            out = lib.tanh(x @ w).sum()
            (gx,) = grad_fn(out, x, create_graph=True)
            norm = (gx * gx).sum(1).sqrt()
            d = norm - lib.ones_like(norm)
            penalty = (d * d).mean()
            penalty.backward()
            return penalty.detach().numpy(), w.grad.numpy(), x.grad.numpy()
        for got, want in zip(run(ember, autograd.grad), run(torch, torch.autograd.grad)):
            close(got, want, rtol=1e-9, atol=1e-12)

    def test_allow_unused(self):
        x = E(X3, requires_grad=True)
        w = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError,
                           match="appears to not have been used in the graph"):
            autograd.grad((x * x).sum(), [x, w])
        gx, gw = autograd.grad((x * x).sum(), [x, w], allow_unused=True)
        close(gx, 2 * X3)
        assert gw is None
        gx, gw = autograd.grad((x * x).sum(), [x, w], materialize_grads=True)
        close(gw, np.zeros(3))

    def test_grad_runs_only_the_branches_leading_to_inputs(self):
        """grad() and backward(inputs=...) run only the nodes with an input below them, as
        PyTorch's engine: another branch's backward (a custom Function's, its hooks, its
        errors) never runs, and an input not in the graph raises before anything runs."""
        def run(lib):
            ran = []

            class Probe(lib.autograd.Function):
                @staticmethod
                def forward(ctx, a):
                    return a * 2

                @staticmethod
                def backward(ctx, g):
                    ran.append("probe")
                    return g * 2

            x = lib.tensor([1.0, 2.0], requires_grad=True)
            w = lib.tensor([3.0, 4.0], requires_grad=True)
            y = x * x
            y.register_hook(lambda g: ran.append("y hook"))
            out = (Probe.apply(w) + y).sum()
            (gx,) = lib.autograd.grad(out, x, retain_graph=True)
            (gy,) = lib.autograd.grad(out, y, retain_graph=True)  # stops at y's node
            out.backward(inputs=[x])
            with pytest.raises(RuntimeError, match="appears to not have been used"):
                lib.autograd.grad(Probe.apply(w).sum(), x)
            return gx.tolist(), gy.tolist(), x.grad.tolist(), w.grad, ran
        assert run(ember) == run(torch)

    def test_input_not_requiring_grad(self):
        x = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError,
                           match="One of the differentiated Tensors does not require grad"):
            autograd.grad((x * x).sum(), E(X3))

    def test_grad_frees_graph_unless_retained(self):
        x = E(X3, requires_grad=True)
        f = x.exp().sum()
        autograd.grad(f, x, retain_graph=True)
        autograd.grad(f, x)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            autograd.grad(f, x)

    def test_third_derivative(self):
        x = E([0.3, 1.2], requires_grad=True)
        (g1,) = autograd.grad(x.sin().sum(), x, create_graph=True)
        (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = autograd.grad(g2.sum(), x)
        close(g3, -np.cos([0.3, 1.2]))


# =========================================================================================
# grad modes
# =========================================================================================
class TestGradModes:
    def test_no_grad_context(self):
        x = E(X3, requires_grad=True)
        assert ember.is_grad_enabled()
        with ember.no_grad():
            assert not ember.is_grad_enabled()
            y = x * x
        assert ember.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None

    def test_no_grad_decorator(self):
        x = E(X3, requires_grad=True)

        @ember.no_grad()
        def f(t):
            assert not ember.is_grad_enabled()
            return t * t
        assert not f(x).requires_grad
        assert ember.is_grad_enabled()

    def test_no_grad_bare_decorator(self):
        # torch 2.x accepts @torch.no_grad without parentheses
        x = E(X3, requires_grad=True)

        @ember.no_grad
        def f(t):
            return t * t
        assert not f(x).requires_grad

    def test_no_grad_restores_on_exception(self):
        with pytest.raises(ValueError):
            with ember.no_grad():
                raise ValueError
        assert ember.is_grad_enabled()

    def test_enable_grad_inside_no_grad(self):
        x = E(X3, requires_grad=True)
        with ember.no_grad():
            with ember.enable_grad():
                assert ember.is_grad_enabled()
                y = x * x
            assert not ember.is_grad_enabled()
            z = x * x
        assert y.requires_grad and y.grad_fn is not None
        assert not z.requires_grad

    def test_enable_grad_decorator(self):
        x = E(X3, requires_grad=True)

        @ember.enable_grad()
        def f(t):
            return t * t
        with ember.no_grad():
            assert f(x).requires_grad

    def test_set_grad_enabled_function_and_context(self):
        x = E(X3, requires_grad=True)
        try:
            ember.set_grad_enabled(False)
            assert not ember.is_grad_enabled()
            assert not (x * x).requires_grad
        finally:
            ember.set_grad_enabled(True)
        assert ember.is_grad_enabled()
        with ember.set_grad_enabled(False):
            assert not (x * x).requires_grad
        assert ember.is_grad_enabled()
        with ember.no_grad():
            with ember.set_grad_enabled(True):
                assert (x * x).requires_grad
            assert not ember.is_grad_enabled()

    def test_inference_mode(self):
        x = E(X3, requires_grad=True)
        assert not ember.is_inference_mode_enabled()
        with ember.inference_mode():
            assert ember.is_inference_mode_enabled()
            assert not ember.is_grad_enabled()
            y = x * x
        assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None
        close(y, X3 * X3)
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled()
            assert (x * x).requires_grad

    def test_inference_mode_decorator(self):
        x = E(X3, requires_grad=True)

        @ember.inference_mode()
        def f(t):
            assert ember.is_inference_mode_enabled()
            return t * t
        assert not f(x).requires_grad
        assert not ember.is_inference_mode_enabled()

    def test_grad_mode_is_thread_local(self):
        seen = []
        with ember.no_grad():
            t = threading.Thread(target=lambda: seen.append(ember.is_grad_enabled()))
            t.start()
            t.join()
        assert seen == [True]

    def test_backward_works_inside_no_grad(self):
        # the graph was built with grad on; running backward under no_grad is allowed
        x = E(X3, requires_grad=True)
        z = (x * x).sum()
        with ember.no_grad():
            z.backward()
        close(x.grad, 2 * X3)


# =========================================================================================
# version counters and in-place
# =========================================================================================
class TestInplace:
    def test_modified_saved_input_raises(self):
        x = E(X3, requires_grad=True)
        h = x * C(2.0)
        s = h.sin()           # saves h
        h.mul_(C(2.0))
        with pytest.raises(RuntimeError) as ei:
            s.sum().backward()
        msg = str(ei.value)
        assert "modified by an inplace operation" in msg
        assert "is at version 1; expected version 0 instead" in msg
        assert "[3]" in msg

    def test_modified_saved_output_raises(self):
        # as in PyTorch: exp saves its result, so modifying it breaks z's backward too
        x = E(X3, requires_grad=True)
        y = x.exp()
        z = y + C(1.0)
        y.mul_(C(2.0))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()

    def test_version_counter_increments(self):
        x = E(X3)
        v = x._version
        x.add_(C(1.0))
        x.mul_(C(2.0))
        assert x._version == v + 2
        view = x[1:]
        view.add_(C(1.0))
        assert x._version == v + 3 == view._version

    @pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "pow_", "exp_", "zero_",
                                    "fill_", "clamp_", "copy_", "setitem", "setitem_index",
                                    "masked_fill_", "index_add_", "scatter_", "iadd", "itruediv"])
    def test_inplace_on_leaf_requiring_grad_raises(self, op):
        x = E(X3, requires_grad=True)
        c = C([1.0, 2.0, 3.0])
        f = {
            "add_": lambda: x.add_(c), "sub_": lambda: x.sub_(c), "mul_": lambda: x.mul_(c),
            "div_": lambda: x.div_(c), "pow_": lambda: x.pow_(c), "exp_": lambda: x.exp_(),
            "zero_": lambda: x.zero_(), "fill_": lambda: x.fill_(1.0),
            "clamp_": lambda: x.clamp_(min=0.0), "copy_": lambda: x.copy_(c),
            "setitem": lambda: x.__setitem__(0, 1.0),
            "setitem_index": lambda: x.__setitem__(ember.tensor([0, 2]), 1.0),
            "masked_fill_": lambda: x.masked_fill_(ember.tensor([True, False, True]), 0.0),
            "index_add_": lambda: x.index_add_(0, ember.tensor([0]), C([1.0])),
            "scatter_": lambda: x.scatter_(0, ember.tensor([1]), C([1.0])),
            "iadd": lambda: x.__iadd__(c), "itruediv": lambda: x.__itruediv__(c),
        }[op]
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            f()
        close(x, X3)
        assert x.is_leaf and x.grad_fn is None

    def test_inplace_on_view_of_leaf_requiring_grad_raises(self):
        # torch: RuntimeError "a view of a leaf Variable that requires grad is being used
        # in an in-place operation."
        x = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            x[0:2].add_(C(1.0))
        close(x, X3)

    def test_benign_inplace_after_mul(self):
        x = E(X3, requires_grad=True)
        y = x * C(2.0)
        y.add_(C(1.0))
        assert type(y.grad_fn).__name__ == "AddBackward0"
        y.sum().backward()
        close(x.grad, np.full(3, 2.0))
        close(y, 2 * X3 + 1)

    def test_benign_inplace_literal_scalars(self):
        # the brief's literal idiom: y = x * 2; y.add_(1)
        x = E(X3, requires_grad=True)
        y = x * 2
        y.add_(1)
        y.sum().backward()
        close(x.grad, np.full(3, 2.0))

    def test_inplace_on_tensor_not_saved_by_consumer(self):
        # mul saves its inputs (x, w), not its output y; add saves nothing
        x = E(X3, requires_grad=True)
        w = E([2.0, 3.0, 4.0])
        y = x * w
        z = y + C(1.0)
        y.mul_(C(2.0))
        z.sum().backward()
        close(x.grad, [2.0, 3.0, 4.0])

    def test_inplace_chain_gradient(self):
        x = E(X3, requires_grad=True)
        w = E([2.0, 3.0, 4.0], requires_grad=True)
        y = x * C(1.0)
        y.mul_(w)
        y.exp_()
        y.sum().backward()
        close(x.grad, np.exp(X3 * [2, 3, 4]) * [2, 3, 4])
        close(w.grad, np.exp(X3 * [2, 3, 4]) * X3)

    def test_no_grad_inplace_on_leaf_optimizer_step(self):
        x = E(X3, requires_grad=True)
        (x * x).sum().backward()
        v = x._version
        with ember.no_grad():
            x.sub_(x.grad * C(0.1))
        assert x.is_leaf and x.requires_grad and x.grad_fn is None
        assert x._version == v + 1
        close(x, X3 - 0.1 * 2 * X3)
        with ember.no_grad():
            x.zero_()
            x.add_(C(1.0))
        x.grad = None
        (x * x).sum().backward()
        close(x.grad, np.full(3, 2.0))

    def test_grad_zero_(self):
        x = E(X3, requires_grad=True)
        (x * x).sum().backward()
        x.grad.zero_()
        (x * x).sum().backward()
        close(x.grad, 2 * X3)


# =========================================================================================
# hooks, retain_grad
# =========================================================================================
class TestHooks:
    def test_leaf_hook_modifies_grad(self):
        x = E(X3, requires_grad=True)
        seen = []

        def hook(g):
            seen.append(N(g))
            return g * C(2.0)
        x.register_hook(hook)
        (x * x).sum().backward()
        close(seen[0], 2 * X3)
        close(x.grad, 4 * X3)

    def test_non_leaf_hook_modifies_upstream(self):
        x = E(X3, requires_grad=True)
        w = E([2.0, 3.0, 4.0])
        y = x * w
        seen = []

        def hook(g):
            seen.append(N(g))
            return g * C(3.0)
        y.register_hook(hook)
        (y * y).sum().backward()
        close(seen[0], 2 * X3 * [2, 3, 4])
        close(x.grad, 3 * 2 * X3 * np.array([2.0, 3.0, 4.0]) ** 2)

    def test_gradient_a_leaf_hook_kept_is_not_accumulated_into(self):
        """The tensor a hook saw does not become .grad (PyTorch steals a gradient only when
        nothing else holds it): a second backward leaves the kept tensor as it was."""
        results = []
        for lib in (torch, ember):
            x = lib.ones(3, requires_grad=True)
            saved = []
            x.register_hook(lambda g: saved.append(g))
            (x * 2).sum().backward()
            (x * 3).sum().backward()
            results.append((saved[0].tolist(), saved[1].tolist(), x.grad.tolist(),
                            saved[0] is x.grad))
        assert results[1] == results[0] == ([2.0] * 3, [3.0] * 3, [5.0] * 3, False)

    def test_hook_returning_none_keeps_grad(self):
        x = E(X3, requires_grad=True)
        calls = []
        x.register_hook(lambda g: calls.append(1))
        (x * x).sum().backward()
        assert calls == [1]
        close(x.grad, 2 * X3)

    def test_non_leaf_hook_called_once_with_total_grad(self):
        x = E(X3, requires_grad=True)
        y = x * C(1.0)
        seen = []
        y.register_hook(lambda g: seen.append(N(g)))
        (y.sin() + y).sum().backward()
        assert len(seen) == 1
        close(seen[0], np.cos(X3) + 1)

    def test_handle_remove(self):
        x = E(X3, requires_grad=True)
        h = x.register_hook(lambda g: g * C(10.0))
        h.remove()
        (x * x).sum().backward()
        close(x.grad, 2 * X3)
        y = x * C(1.0)
        h2 = y.register_hook(lambda g: g * C(10.0))
        h2.remove()
        x.grad = None
        y.sum().backward()
        close(x.grad, np.ones(3))

    def test_hook_on_tensor_without_grad_raises(self):
        with pytest.raises(RuntimeError,
                           match="cannot register a hook on a tensor that doesn't require"):
            E(X3).register_hook(lambda g: g)

    def test_retain_grad(self):
        x = E(X3, requires_grad=True)
        y = x.exp()
        y.retain_grad()
        z = y * C(1.0)
        (z * z).sum().backward()
        close(y.grad, 2 * np.exp(X3))
        assert not y.grad.requires_grad
        close(x.grad, 2 * np.exp(X3) ** 2)
        assert z.grad is None  # non-leaf without retain_grad

    def test_retain_grad_on_leaf_is_noop(self):
        x = E(X3, requires_grad=True)
        x.retain_grad()
        (x * x).sum().backward()
        close(x.grad, 2 * X3)

    def test_retain_grad_accumulates(self):
        x = E(X3, requires_grad=True)
        y = x * C(2.0)
        y.retain_grad()
        s = (y * y).sum()
        s.backward(retain_graph=True)
        s.backward()
        close(y.grad, 2 * 2 * (2 * X3))


# =========================================================================================
# custom autograd.Function
# =========================================================================================
class MyExp(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        r = x.exp()
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r


class ScaledMul(autograd.Function):
    """out = a * b * k; records ctx.needs_input_grad."""
    log = []

    @staticmethod
    def forward(ctx, a, b, k):
        ScaledMul.log.append(ctx.needs_input_grad)
        ctx.save_for_backward(a, b)
        ctx.k = k
        return a * b * C(k)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g * b * C(ctx.k) if ctx.needs_input_grad[0] else None
        gb = g * a * C(ctx.k) if ctx.needs_input_grad[1] else None
        return ga, gb, None


class Cube(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * C(3.0) * x * x


class TestFunction:
    def test_custom_exp(self):
        x = E(X3, requires_grad=True)
        y = MyExp.apply(x)
        assert type(y.grad_fn).__name__ == "MyExpBackward"
        close(y, np.exp(X3))
        (y * E([1.0, 2.0, 3.0])).sum().backward()
        close(x.grad, np.exp(X3) * [1, 2, 3])

    def test_forward_runs_without_recording(self):
        class Probe(autograd.Function):
            inner = []

            @staticmethod
            def forward(ctx, x):
                y = x * x
                Probe.inner.append((ember.is_grad_enabled(), y.requires_grad))
                return y

            @staticmethod
            def backward(ctx, g):
                return g
        x = E(X3, requires_grad=True)
        Probe.apply(x)
        assert Probe.inner == [(False, False)]

    def test_needs_input_grad_and_none_gradient(self):
        ScaledMul.log.clear()
        a = E(X3, requires_grad=True)
        b = E([2.0, 3.0, 4.0])
        ScaledMul.apply(a, b, 0.5).sum().backward()
        assert ScaledMul.log == [(True, False, False)]
        close(a.grad, 0.5 * np.array([2.0, 3.0, 4.0]))
        assert b.grad is None

    def test_both_inputs(self):
        a = E(X3, requires_grad=True)
        b = E([2.0, 3.0, 4.0], requires_grad=True)
        ScaledMul.apply(a, b, 2.0).sum().backward()
        close(a.grad, [4.0, 6.0, 8.0])
        close(b.grad, 2 * X3)

    def test_apply_without_grad_inputs_records_nothing(self):
        y = MyExp.apply(E(X3))
        assert not y.requires_grad and y.grad_fn is None
        with ember.no_grad():
            y = MyExp.apply(E(X3, requires_grad=True))
        assert not y.requires_grad

    def test_mark_non_differentiable_single_output(self):
        class Mask(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                m = (x > 0).to(x.dtype)
                ctx.mark_non_differentiable(m)
                return m

            @staticmethod
            def backward(ctx, g):
                return g * C(0.0)
        m = Mask.apply(E(X3, requires_grad=True))
        assert not m.requires_grad and m.grad_fn is None

    def test_mark_non_differentiable_second_output(self):
        class SortLike(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * C(2.0)
                flag = (x > 0).to(x.dtype)
                ctx.mark_non_differentiable(flag)
                return y, flag

            @staticmethod
            def backward(ctx, gy, gflag):  # PyTorch passes one gradient per output
                return gy * C(2.0)
        x = E(X3, requires_grad=True)
        y, flag = SortLike.apply(x)
        assert y.requires_grad and not flag.requires_grad
        y.sum().backward()
        close(x.grad, np.full(3, 2.0))

    def test_two_differentiable_outputs(self):
        class Two(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * C(2.0), x * C(3.0)

            @staticmethod
            def backward(ctx, ga, gb):
                return ga * C(2.0) + gb * C(3.0)
        x = E(X3, requires_grad=True)
        a, b = Two.apply(x)
        assert a.requires_grad and b.requires_grad
        (a.sum() + b.sum()).backward()
        close(x.grad, np.full(3, 5.0))

    def test_once_differentiable(self):
        """``@once_differentiable`` (torch.autograd.function): the backward runs without
        recording; with create_graph its gradients require grad and a second backward
        through them raises PyTorch's error."""
        def run(lib):
            modes = []

            class Cube(lib.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x ** 3

                @staticmethod
                @lib.autograd.function.once_differentiable
                def backward(ctx, g):
                    (x,) = ctx.saved_tensors
                    modes.append(lib.is_grad_enabled())
                    return 3 * x ** 2 * g

            x = lib.tensor([2.0, 3.0], requires_grad=True)
            Cube.apply(x).sum().backward()
            (plain,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
            w = lib.tensor([1.0, 1.0], requires_grad=True)
            (g,) = lib.autograd.grad((Cube.apply(x) * w).sum(), x, create_graph=True)
            with pytest.raises(RuntimeError, match="trying to differentiate twice a function "
                                                   "that was marked with @once_differentiable"):
                g.sum().backward()
            return x.grad.tolist(), plain.requires_grad, g.requires_grad, g.tolist(), modes
        assert run(ember) == run(torch)

    def test_wrong_number_of_gradients_raises(self):
        class Bad(autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g
        a = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect "
                                               r"number of gradients \(expected 2, got 1\)"):
            Bad.apply(a, a).sum().backward()

    @pytest.mark.parametrize("extra", ["nones", "tensor"])
    def test_extra_gradients_past_the_inputs(self, extra):
        """Trailing Nones past the inputs are dropped (the custom_function_conv_bn tutorial
        returns seven gradients for three inputs); anything else there raises, as PyTorch."""
        def run(lib):
            class Scale(lib.autograd.Function):
                @staticmethod
                def forward(ctx, x, k=2.0):
                    return x * k

                @staticmethod
                def backward(ctx, g):
                    return (g * 2, None, None, None) if extra == "nones" else (g * 2, None, g)
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            try:
                Scale.apply(x).sum().backward()
            except RuntimeError as e:
                return str(e)
            return x.grad.tolist()
        assert run(ember) == run(torch)

    def test_saved_tensors_freed_after_backward(self):
        holder = {}

        class Keep(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                holder["ctx"] = ctx
                return x * C(2.0)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * C(2.0)
        x = E(X3, requires_grad=True)
        Keep.apply(x).sum().backward()
        close(x.grad, np.full(3, 2.0))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            holder["ctx"].saved_tensors

    def test_saved_input_modified_in_place_raises(self):
        x = E(X3, requires_grad=True)
        h = x * C(1.0)
        y = Cube.apply(h)
        h.add_(C(1.0))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    def test_double_backward_through_function(self):
        x = E(X3, requires_grad=True)
        (g,) = autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        close(g, 3 * X3 ** 2)
        (h,) = autograd.grad(g.sum(), x)
        close(h, 6 * X3)

    def test_function_in_larger_graph(self):
        x = E(X3, requires_grad=True)
        y = MyExp.apply(x.sin()) * x
        y.sum().backward()
        e = np.exp(np.sin(X3))
        close(x.grad, e * np.cos(X3) * X3 + e)


# =========================================================================================
# gradcheck
# =========================================================================================
class WrongExp(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        r = x.exp()
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r * C(1.1)  # deliberately wrong


class TestGradcheck:
    def test_passes_for_correct_functions(self):
        x = E([[0.3, -0.7], [1.2, 0.4]], requires_grad=True)
        w = E([[0.5, 1.5], [-0.2, 0.9]], requires_grad=True)
        assert autograd.gradcheck(lambda a, b: (a @ b).tanh() * a, (x, w))
        assert autograd.gradcheck(MyExp.apply, (x,))
        assert autograd.gradcheck(Cube.apply, (x,))

    def test_fails_for_wrong_backward(self):
        x = E([[0.3, -0.7], [1.2, 0.4]], requires_grad=True)
        assert autograd.gradcheck(WrongExp.apply, (x,), raise_exception=False) is False
        with pytest.raises(RuntimeError):
            autograd.gradcheck(WrongExp.apply, (x,))

    def test_gradgradcheck(self):
        x = E([0.3, -0.7, 1.2], requires_grad=True)
        assert autograd.gradgradcheck(lambda a: (a.sin() * a).sum() * a, (x,))


# =========================================================================================
# numpy interop errors
# =========================================================================================
class TestNumpy:
    def test_numpy_on_requires_grad(self):
        x = E(X3, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires "
                                               r"grad. Use tensor.detach\(\).numpy\(\) instead"):
            x.numpy()
        y = x * x
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            y.numpy()
        np.testing.assert_array_equal(x.detach().numpy(), X3)
        np.testing.assert_array_equal(y.detach().numpy(), X3 * X3)

    def test_grad_is_plain_numpy_convertible(self):
        x = E(X3, requires_grad=True)
        (x * x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * X3)


def test_writes_through_views_pass_gradcheck_and_gradgradcheck():
    """CopySlices: the base's gradient after an in-place write through a view is checked
    against float64 finite differences, to second order."""
    from ember.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(3)

    def f(x):
        y = x * 2
        y[1:].mul_(x[:-1])           # a write through a view, reading the leaf
        y.t()[0].add_(1.5)           # through a transposed view
        return (y ** 2).sum(1)

    x = ember.from_numpy(rng.uniform(-1, 1, (4, 3))).requires_grad_()
    assert gradcheck(f, [x], eps=1e-6, atol=1e-6, rtol=1e-4)
    assert gradgradcheck(f, [x], eps=1e-6, atol=1e-5, rtol=1e-3)


def test_write_through_view_of_leaf_is_refused_like_torch():
    import torch
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            x[1:].mul_(2)


def test_expanding_a_leaf_to_its_own_shape_makes_a_view_not_a_node_on_the_leaf():
    # matmul expands batched operands to their own shape: the leaf must stay a leaf
    x = ember.tensor(np.arange(6.0).reshape(1, 2, 3), requires_grad=True)
    y = x.expand(1, 2, 3)
    assert y is not x and x.grad_fn is None and y._base is x
    ((y * 2).sum() + (x * 3).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 2, 3), 5.0))


# grad() / backward() argument errors: PyTorch's order of checks and its words
_ARG_ERRORS = {
    "grad_empty_inputs": lambda T, x, c: T.autograd.grad(c.sum(), []),
    "grad_second_output_constant": lambda T, x, c: T.autograd.grad([x.sum(), c.sum()], x),
    "grad_output_before_input": lambda T, x, c: T.autograd.grad(c.sum(), [c]),
    "grad_input_constant": lambda T, x, c: T.autograd.grad(x.sum(), [x, c]),
    "grad_unused_input_index": lambda T, x, c: T.autograd.grad(
        (x * 2).sum(), [x.detach().requires_grad_(), x]),
    "backward_empty_inputs": lambda T, x, c: c.sum().backward(inputs=[]),
    "backward_second_tensor_constant": lambda T, x, c: T.autograd.backward([x.sum(),
                                                                            c.sum()]),
    "backward_input_constant": lambda T, x, c: x.sum().backward(inputs=[c.view(2)]),
}


@pytest.mark.parametrize("name", sorted(_ARG_ERRORS))
def test_grad_and_backward_argument_errors_match_torch(name):
    msgs = []
    for T in (torch, ember):
        x, c = T.ones(2, requires_grad=True), T.ones(2)
        with pytest.raises(RuntimeError) as info:
            _ARG_ERRORS[name](T, x, c)
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]


def test_next_functions_of_scalar_overloads_and_where_as_pytorch():
    """PyTorch's nodes for ``2 - t``, ``t ** 2``, ``2 ** t`` and clamp with number bounds
    (its Scalar overloads) have no edge for the number; ``where`` none for its condition;
    ``t * 2`` keeps one (a wrapped number)."""
    def graph(lib):
        t = lib.ones(2, requires_grad=True)
        ys = [t * 2, 2 - t, t - 2, t ** 2, 2 ** t, t.clamp(0, 1), t.clamp(lib.zeros(2)),
              lib.where(t > 0, t, 0.0), 2 / t]
        return [(type(y.grad_fn).__name__,
                 [None if f is None else type(f).__name__ for f, _ in
                  y.grad_fn.next_functions]) for y in ys]
    assert graph(ember) == graph(torch)
