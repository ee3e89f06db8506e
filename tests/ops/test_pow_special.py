"""PyTorch's pow with the exponents its CPU kernel computes without C's pow (2, 3, ±0.5, -1,
-2): the same bits as PyTorch (x ** 3 is x * x * x), one PowBackward0 node, and gradients
as PyTorch's."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("e", [2, 3, 0.5, -0.5, -1, -2, 2.0, 3.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_exponents_give_pytorch_bits(e, dtype):
    x = np.random.default_rng(0).standard_normal(5000).astype(dtype)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30]
    if e in (0.5, -0.5):
        x = np.abs(x)
    want = (torch.from_numpy(x) ** e).numpy()
    if e in (0.5, -0.5):
        # PyTorch computes these as sqrt and rsqrt, whose vector loops on this machine are
        # not always correctly rounded: compare with the correctly rounded NumPy value
        with np.errstate(divide="ignore"):
            ref = np.sqrt(x) if e > 0 else 1 / np.sqrt(x)
        np.testing.assert_allclose(want, ref, rtol=4e-16 if dtype == "float64" else 2e-7)
        want = np.sqrt(x) if e > 0 else (ember.from_numpy(x).rsqrt()).numpy()
    for got in (ember.from_numpy(x) ** e, ember.pow(ember.from_numpy(x), e),
                ember.from_numpy(x).pow(e)):
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("e", [3, 0.5, -2])
def test_special_exponents_record_one_pow_node(e):
    x = np.abs(np.random.default_rng(1).standard_normal(7)) + 0.5
    a = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ya, yt = a ** e, t ** e
    assert type(ya.grad_fn).__name__ == type(yt.grad_fn).__name__ == "PowBackward0"
    ya.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12)
