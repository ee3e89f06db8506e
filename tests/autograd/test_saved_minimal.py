"""Autograd saves only what the gradients of inputs that require grad read (PyTorch's rule:
``x * 2`` saves nothing of ``x``; ``x @ w`` with a constant ``w`` saves ``w`` but not
``x``). What was not saved may be written in place before backward: the public
differentiable-physics example (``positions[0] = ...`` after ``positions * dt``) relies on
it. Each case runs in PyTorch and in ember: both must fail the same way or give the same
gradients."""
import gc
import weakref

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(7)
A = R.standard_normal((3, 4)).astype(np.float32)
B = R.standard_normal((3, 4)).astype(np.float32) + 3
W = R.standard_normal((4, 5)).astype(np.float32)
BA = R.standard_normal((2, 3, 4)).astype(np.float32)
BW = R.standard_normal((2, 4, 5)).astype(np.float32)


# name -> (arrays, which require grad, forward(lib, *tensors), index of the tensor then
# written in place)
CASES = {
    "mul_scalar": ((A,), (True,), lambda L, a: a.exp() * 2, None),
    "mul_const_tensor": ((A, B), (True, False), lambda L, a, b: a * b, 0),
    "mul_const_tensor_b_written": ((A, B), (True, False), lambda L, a, b: a * b, 1),
    "mul_grad_other": ((A, B), (False, True), lambda L, a, b: a * b, 1),
    "div_const_den": ((A, B), (True, False), lambda L, a, b: a / b, 0),
    "div_den_written": ((A, B), (True, False), lambda L, a, b: a / b, 1),
    "div_grad_den": ((A, B), (False, True), lambda L, a, b: a / b, 0),
    "rtruediv_scalar": ((B,), (True,), lambda L, b: 2.0 / b, 0),
    "mm_const_rhs": ((A, W), (True, False), lambda L, a, w: a @ w, 0),
    "mm_const_lhs": ((A, W), (False, True), lambda L, a, w: a @ w, 1),
    "mm_rhs_written": ((A, W), (True, False), lambda L, a, w: a @ w, 1),
    "linear_const_weight": ((A, W.T.copy()), (True, False),
                            lambda L, a, w: L.nn.functional.linear(a, w), 0),
    "linear_const_input": ((A, W.T.copy()), (False, True),
                           lambda L, a, w: L.nn.functional.linear(a, w), 1),
    "bmm_const_rhs": ((BA, BW), (True, False), lambda L, a, w: L.bmm(a, w), 0),
    "addcmul_t1_only": ((A, A, B), (True, True, False),
                        lambda L, s, t1, t2: L.addcmul(s, t1, t2, value=0.5), 1),
    "addcdiv_t1_only": ((A, A, B), (True, True, False),
                        lambda L, s, t1, t2: L.addcdiv(s, t1, t2, value=0.5), 1),
    "addcdiv_t2_written": ((A, A, B), (True, True, False),
                           lambda L, s, t1, t2: L.addcdiv(s, t1, t2, value=0.5), 2),
}


def _run(lib, case):
    arrays, req, fwd, written = CASES[case]
    leaves = [lib.tensor(a.copy(), requires_grad=r) for a, r in zip(arrays, req)]
    # non-leaf copies, so that an in-place write is allowed on each
    ins = [t * 1.0 if t.requires_grad else t.clone() for t in leaves]
    out = fwd(lib, *ins)
    if written is not None:
        ins[written].add_(1.0)
    try:
        out.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return "error"
    return [None if t.grad is None else np.asarray(t.grad.tolist()) for t in leaves]


@pytest.mark.parametrize("case", sorted(CASES))
def test_saved_as_pytorch(case):
    expect, got = _run(torch, case), _run(ember, case)
    if expect == "error":
        assert got == "error"
        return
    assert got != "error", "ember saved an input PyTorch does not save"
    for e, g in zip(expect, got):
        assert (e is None) == (g is None)
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lib", [torch, ember])
def test_inplace_mul_copies_self_only_when_read(lib):
    # x.mul_(2): self's old value is not needed, and the result's gradient is 2
    a = lib.tensor(A.copy(), requires_grad=True)
    x = a * 1.0
    x.mul_(2.0)
    x.sum().backward()
    np.testing.assert_allclose(np.asarray(a.grad.tolist()), np.full(A.shape, 2.0))
    # x.mul_(w) with w requiring grad: w's gradient reads x's value from before the write
    a = lib.tensor(A.copy(), requires_grad=True)
    w = lib.tensor(B.copy(), requires_grad=True)
    x = a * 1.0
    x.mul_(w)
    x.sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad.tolist()), A, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(a.grad.tolist()), B, rtol=1e-6)


def test_scaled_activation_is_not_kept_alive():
    # y = x * 2 keeps no reference to x (PyTorch's MulBackward0 saves only the scalar)
    a = ember.tensor(A.copy(), requires_grad=True)
    x = a.exp()
    ref = weakref.ref(x)
    y = x * 2
    del x
    gc.collect()
    assert ref() is None
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(a.grad.tolist()), 2 * np.exp(A), rtol=1e-5)


def test_differentiable_physics_pattern():
    # the public mass-spring example's step: a state scaled by dt, then a row of it
    # overwritten in place, then backward through both
    def run(lib):
        p0 = lib.tensor([[0.3, -0.7], [1.2, 0.4]], requires_grad=True)
        pos = lib.cat([lib.zeros(1, 2), p0], dim=0)
        vel = lib.zeros(3, 2)
        for _ in range(5):
            forces = lib.zeros_like(pos)
            d = pos[1] - pos[0]
            f = 10.0 * (d.norm() - 1.0) * d / (d.norm() + 1e-6)
            forces[0] += f
            forces[1] -= f
            forces[:, 1] -= 9.81
            vel = vel + forces * 0.01
            pos = pos + vel * 0.01
            pos[0] = lib.zeros(2)
            vel[0] = lib.tensor([0.0, 0.0])
        (pos ** 2).mean().backward()
        return np.asarray(p0.grad.tolist())
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", ["rmul", "radd", "mul", "add"])
def test_number_on_the_left_keeps_the_tensor_edge_first(op):
    # 2 * t is t * 2 for PyTorch: the tensor's edge comes first in next_functions
    def edges(lib):
        b = lib.tensor([1.0, 2.0], requires_grad=True).exp()
        y = {"rmul": lambda: 2 * b, "radd": lambda: 2 + b, "mul": lambda: b * 2,
             "add": lambda: b + 2}[op]()
        return [(None if f is None else type(f).__name__, i)
                for f, i in y.grad_fn.next_functions]
    assert edges(ember) == edges(torch)


# what each op saves, counted through saved_tensors_hooks: the same number as PyTorch
PACKED = {
    "pow_scalar": lambda L, x, w: x.pow(2),
    "pow_tensor_base_only": lambda L, x, w: x ** w,
    "rpow": lambda L, x, w: 2 ** x,
    "mul_const": lambda L, x, w: x * w,
    "mul_number": lambda L, x, w: x * 3,
    "div_const": lambda L, x, w: x / (w + 3),
    "exp": lambda L, x, w: x.exp(),
    "matmul_const": lambda L, x, w: x @ w.T,
    "linear": lambda L, x, w: L.nn.functional.linear(x, w),
}


@pytest.mark.parametrize("case", sorted(PACKED))
def test_tensors_saved_count_as_pytorch(case):
    def count(lib):
        n = []
        x = lib.tensor(A.copy(), requires_grad=True)
        w = lib.tensor(B.copy())
        with lib.autograd.graph.saved_tensors_hooks(lambda t: n.append(1) or t, lambda t: t):
            y = PACKED[case](lib, x, w)
        y.sum().backward()
        return len(n), np.asarray(x.grad.tolist())
    (n_t, g_t), (n_e, g_e) = count(torch), count(ember)
    if case == "pow_tensor_base_only":
        # PyTorch's tensor ** tensor saves its result even when the exponent needs no
        # gradient (only the exponent's gradient reads it); ember does not
        assert n_e == n_t - 1
    else:
        assert n_e == n_t
    np.testing.assert_allclose(g_e, g_t, rtol=1e-5, atol=1e-6)


def test_saved_attributes_as_pytorch():
    # grad_fn._saved_<name>, as the saved-tensor hooks tutorial reads them
    for lib in (torch, ember):
        x = lib.ones(5, requires_grad=True)
        y = x.pow(2)
        assert y.grad_fn._saved_self.tolist() == [1.0] * 5
        z = x * lib.full((5,), 2.0)
        assert z.grad_fn._saved_other.tolist() == [2.0] * 5 and z.grad_fn._saved_self is None
        assert x.exp().grad_fn._saved_result.tolist() == pytest.approx([np.e] * 5)
        with pytest.raises(AttributeError):
            x.sum().grad_fn._saved_nothing
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.grad_fn._saved_self
