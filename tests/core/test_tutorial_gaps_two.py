"""Gaps found by running more pytorch/tutorials programs (recipes, intermediate and
advanced tutorials) under ``python -m ember.as_torch``; each test checks ember against
PyTorch run the same way."""
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
