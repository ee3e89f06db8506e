"""bmm and einsum (which contracts through bmm) on complex tensors, values and gradients,
against PyTorch (the FNO's spectral layer: einsum("bix,iox->box") of complex modes)."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(0)


def _c(*shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _pair(a):
    return torch.from_numpy(a).requires_grad_(), ember.from_numpy(a).requires_grad_()


@pytest.mark.parametrize("fn,sa,sb", [
    (lambda lib, a, b: lib.bmm(a, b), (2, 3, 4), (2, 4, 5)),
    (lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b), (2, 3, 4), (2, 4, 5)),
    (lambda lib, a, b: lib.einsum("bix,iox->box", a, b), (2, 3, 6), (3, 4, 6)),
    (lambda lib, a, b: a @ b.real.to(a.dtype), (2, 3, 4), (2, 4, 5)),
])
def test_complex_bmm_and_einsum_match_torch(fn, sa, sb):
    a, b = _c(*sa), _c(*sb)
    (ta, ea), (tb, eb) = _pair(a), _pair(b)
    want, got = fn(torch, ta, tb), fn(ember, ea, eb)
    assert got.dtype == ember.complex64 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    w = _c(*want.shape)
    gt = torch.autograd.grad((want * torch.from_numpy(w)).real.sum(), (ta, tb))
    ge = ember.autograd.grad((got * ember.from_numpy(w)).real.sum(), (ea, eb))
    for g, t in zip(ge, gt):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_complex_bmm_shape_errors_match_torch():
    for sa, sb in [((2, 3, 4), (2, 5, 5)), ((3, 4), (2, 4, 5))]:
        with pytest.raises(RuntimeError) as te:
            torch.bmm(torch.from_numpy(_c(*sa)), torch.from_numpy(_c(*sb)))
        with pytest.raises(RuntimeError) as ee:
            ember.bmm(ember.from_numpy(_c(*sa)), ember.from_numpy(_c(*sb)))
        assert str(te.value) in str(ee.value)     # (ember names the op first)
