"""``ember.autograd.forward_ad`` against ``torch.autograd.forward_ad``: the tangents that
dual tensors carry through functions, modules (dual parameters, functional_call) and
reverse mode, and PyTorch's errors; and what ember refuses instead of returning a wrong
tangent (ops under no_grad inside a level)."""
import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _fw(L):
    return importlib.import_module(L.__name__ + ".autograd.forward_ad")


def _t(L, rng, *shape):
    return L.tensor(rng.standard_normal(shape).astype(np.float32))


FUNCTIONS = {
    "elementwise_reduce_softmax": lambda L, d, w: (d.sin() * d.exp()).sum(1).softmax(0),
    "matmul": lambda L, d, w: d @ w,
    "zero_jacobian": lambda L, d, w: d * 0,
    "view_index_cat": lambda L, d, w: L.cat([d.t()[1:], d.reshape(4, 3)[:2] ** 2]),
    "norms_and_where": lambda L, d, w: L.where(d > 0, d, d.abs().sqrt()).norm(dim=0),
    "layer_norm_gelu": lambda L, d, w: L.nn.functional.gelu(
        L.nn.functional.layer_norm(d, (4,))),
    "logsumexp_cumsum": lambda L, d, w: d.logsumexp(1) + d.cumsum(0).sum(1),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_tangents_match_pytorch(name):
    res = []
    for L in (torch, ember):
        fw, rng = _fw(L), np.random.default_rng(3)
        x, v, w = _t(L, rng, 3, 4), _t(L, rng, 3, 4), _t(L, rng, 4, 5)
        with fw.dual_level():
            y = FUNCTIONS[name](L, fw.make_dual(x, v), w)
            p, tan = fw.unpack_dual(y)
            res.append((p.detach().numpy(), tan.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-4, atol=1e-5)


def test_dual_parameters_functional_call_and_reverse_mode_match_pytorch():
    res = []
    for L in (torch, ember):
        fw, rng = _fw(L), np.random.default_rng(5)
        model = L.nn.Linear(4, 2)
        with L.no_grad():
            model.weight.copy_(_t(L, rng, 2, 4))
            model.bias.copy_(_t(L, rng, 2))
        inp = _t(L, rng, 5, 4)
        tangents = {n: _t(L, rng, *p.shape) for n, p in model.named_parameters()}
        got = {}
        with fw.dual_level():
            dp = {n: fw.make_dual(p, tangents[n]) for n, p in model.named_parameters()}
            got["fcall"] = fw.unpack_dual(L.func.functional_call(model, dp, (inp,))).tangent
            for n in list(tangents):
                delattr(model, n)
                setattr(model, n, dp[n])
            got["module"] = fw.unpack_dual(L.tanh(model(inp))).tangent
        xr = _t(L, rng, 3).requires_grad_()
        with fw.dual_level():
            d = fw.make_dual(xr, _t(L, rng, 3))
            y = (d ** 3).sum()
            got["tangent_of_requires_grad"] = fw.unpack_dual(y).tangent
            y.backward()     # reverse mode still reaches the primal
        got["grad"] = xr.grad
        res.append({k: v.detach().numpy() for k, v in got.items()})
    for k in res[0]:
        np.testing.assert_allclose(res[1][k], res[0][k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_unpack_of_plain_and_dual_tensors_as_pytorch():
    for L in (torch, ember):
        fw = _fw(L)
        x, v = L.tensor([1., 2.]), L.tensor([3., 4.])
        assert fw.unpack_dual(x).tangent is None          # no level
        with fw.dual_level():
            d = fw.make_dual(x, v)
            assert fw.unpack_dual(d).tangent.tolist() == [3., 4.]
            assert fw.unpack_dual(d).primal.tolist() == [1., 2.]
            assert fw.unpack_dual(L.ones(2)).tangent is None
            assert type(fw.unpack_dual(d)).__name__ == "UnpackedDualTensor"
        assert fw.unpack_dual(d).tangent is None          # the level is closed


@pytest.mark.parametrize("call", [
    lambda L, fw: fw.make_dual(L.ones(2), L.ones(2)),                  # no level
    lambda L, fw: (fw.dual_level().__enter__(), fw.make_dual(L.ones(2), L.ones(3))),
    lambda L, fw: (fw.dual_level().__enter__(), fw.make_dual(
        L.ones(2, dtype=L.int64), L.ones(2))),
    lambda L, fw: [fw.dual_level().__enter__(), fw.dual_level().__enter__()],  # nested
])
def test_errors_as_pytorch(call):
    types = []
    for L in (torch, ember):
        fw = _fw(L)
        try:
            call(L, fw)
            types.append(None)
        except Exception as e:  # noqa: BLE001 - the types are compared
            types.append(type(e))
        finally:
            try:
                fw.exit_dual_level()
            except RuntimeError:
                pass
    assert types[0] is not None and types[1] is types[0]


def test_ops_under_no_grad_refuse_instead_of_dropping_the_tangent():
    fw = ember.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(ember.ones(2), ember.ones(2))
        with ember.no_grad():
            y = d * 2
        with pytest.raises(NotImplementedError, match="no_grad"):
            fw.unpack_dual(y)


def test_import_under_as_torch_spelling():
    import ember.autograd.forward_ad as fwAD
    assert fwAD is ember.autograd.forward_ad and callable(fwAD.make_dual)
