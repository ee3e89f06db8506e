"""PyTorch's deprecated positional overloads (the scale first: ``p.add_(-lr, g)``,
``v.addcmul_(1 - b2, g, g)``, ``torch.addmm(beta, M, alpha, m1, m2)``), which PyTorch 2.13
still accepts with a warning and old optimizers (torch-optimizer's Ranger) still call.
PyTorch is the oracle for every value and error type."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CALLS = [
    "a.add_(2.0, b)", "L.add(a, 2.0, b)", "a.add(-3, b)", "a.sub(2, b)", "a.sub_(2, b)",
    "L.sub(a, 2, b)", "a.add_(2.0, 3.0)", "L.add(a, 2, 3)", "L.add(a, 2.0, b, out=L.empty(3))",
    "L.addcdiv(a, 0.5, b, c)", "a.addcmul(0.5, b, c)", "a.addcmul_(0.5, b, c)",
    "a.addcdiv_(-0.5, b, c)", "L.addcmul(a, 2, b, c, out=L.empty(3))",
    "L.addmm(0.5, M, 2.0, N, N)", "L.addmm(0.5, M, N, N)", "M.addmm_(0.5, 2.0, N, N)",
    "M.addmm(0.5, N, N)", "L.addmv(0.5, a, N, b)", "a.addmv_(0.5, 2.0, N, b)",
    "M.addr(0.5, a, b)", "M.addr_(2, 0.5, a, b)", "L.addbmm(0.5, M, 2, B, B2)",
    "M.addbmm_(0.5, B, B2)", "L.baddbmm(0.5, C, B, B2)", "C.baddbmm_(2, 0.5, B, B2)",
    # not deprecated forms: errors as PyTorch's
    "L.add(a, 2.0, b, alpha=2)", "L.addcmul(a, 0.5, b, c, value=2)", "L.add(a, b, 2.0)",
    "a.addcmul_(b, 0.5, c)", "L.addmm(M, M, M, M)", "L.addmm(0.5, M, N, N, beta=2)",
]


def _run(L, call):
    env = dict(L=L, a=L.tensor([0., 1, 2]), b=L.tensor([1., -2, 3]), c=L.tensor([2., 4, -8]),
               M=L.arange(9.).reshape(3, 3), N=L.arange(9.).reshape(3, 3).flip(0),
               B=L.arange(18.).reshape(2, 3, 3), B2=L.arange(18.).reshape(2, 3, 3) - 4,
               C=L.ones(2, 3, 3))
    a, M, C = env["a"], env["M"], env["C"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = eval(call, {}, env)  # noqa: S307 - the calls above
        except TypeError as e:
            return TypeError, str(e)
    assert len(w) <= 1 and all("deprecated" in str(x.message) for x in w)
    return np.asarray(r.tolist()), np.asarray(a.tolist()), np.asarray(M.tolist()), \
        np.asarray(C.tolist())


@pytest.mark.parametrize("call", CALLS)
def test_deprecated_overload_as_pytorch(call):
    want, got = _run(torch, call), _run(ember, call)
    if want[0] is TypeError:
        assert got[0] is TypeError, f"ember accepted {call}"
        return
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_deprecated_overload_warns_as_pytorch():
    """The warning names the old and the new signature (PyTorch warns once per process;
    which call warns first depends on the tests before, so the text is checked on a call
    whose warning is recorded)."""
    text = "This overload of addcmul_ is deprecated:\n\taddcmul_(Number value, Tensor tensor1"
    from ember import _deprecated_overloads as DO
    DO._warned = False
    with pytest.warns(UserWarning, match="This overload of addcmul_ is deprecated") as rec:
        ember.zeros(2).addcmul_(0.5, ember.ones(2), ember.ones(2))
    assert text in str(rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.zeros(2).add_(0.5, ember.ones(2))   # once per process, as PyTorch
