"""In-place writes of constants (zero_, fill_, random fills) inside a graph: the overwritten
values get a gradient of zeros and a tensor fill value gets the gradient's sum, as in
PyTorch (ZeroBackward0 / FillBackward); PyTorch is the oracle."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

WRITES = ["zero_()", "fill_(3.0)", "fill_(L.tensor(2.))", "uniform_()", "normal_()",
          "bernoulli_(0.5)", "random_(0, 3)", "exponential_()"]


def _grads(L, write, view):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    target = y[:2] if view else y
    eval("target." + write, {"L": L, "target": target})  # noqa: S307 - the writes above
    (y * L.tensor([1., 10., 100.])).sum().backward()
    return None if x.grad is None else np.asarray(x.grad.tolist())


@pytest.mark.parametrize("view", [False, True])
@pytest.mark.parametrize("write", WRITES)
def test_overwritten_values_get_zero_gradient(write, view):
    want, got = _grads(torch, write, view), _grads(ember, write, view)
    assert got is not None
    np.testing.assert_array_equal(got, want)


def test_fill_value_tensor_gets_the_gradients_sum():
    res = []
    for L in (torch, ember):
        v = L.tensor(2., requires_grad=True)
        x = L.ones(3, requires_grad=True)
        y = x * 2
        y.fill_(v)
        (y * L.tensor([1., 2., 4.])).sum().backward()
        z = L.zeros(3).fill_(v)         # a fill of a plain tensor joins the graph too
        res.append((v.grad.item(), x.grad.tolist(), z.requires_grad, z.tolist()))
    assert res[0] == res[1]
