"""``ember._foreach_*`` (frontend/_foreach.py), the list-at-a-time ops EMA helpers and
optimizers call, against PyTorch's: the operand forms, the return types, in-place results,
autograd, and the errors."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(3)
SHAPES = [(3,), (2, 2), ()]
BASE = [RNG.standard_normal(s).astype(np.float32) + 2.5 for s in SHAPES]
OTHER = [RNG.standard_normal(s).astype(np.float32) + 1.5 for s in SHAPES]


def lists(lib):
    return ([lib.tensor(a.copy()) for a in BASE], [lib.tensor(a.copy()) for a in OTHER])


def same(ours, theirs):
    assert type(ours) is type(theirs) and len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"]


@pytest.mark.parametrize("form", ["scalar", "scalar_list", "tensor", "tensor_list"])
@pytest.mark.parametrize("name", _BINARY)
def test_binary_forms_match_torch(name, form):
    results = []
    for lib in (torch, ember):
        a, b = lists(lib)
        other = {"scalar": 1.5, "scalar_list": [0.5, 2.0, 3.0], "tensor": lib.tensor(2.5),
                 "tensor_list": b}[form]
        out = getattr(lib, f"_foreach_{name}")(a, other)
        ret = getattr(lib, f"_foreach_{name}_")(a, other)
        results.append((out, ret is a, tuple(a)))
    same(results[1][0], results[0][0])
    assert results[1][1] and results[0][1]
    same(results[1][2], results[0][2])


@pytest.mark.parametrize("name", ["exp", "sqrt", "neg", "sigmoid", "log", "abs", "reciprocal",
                                  "sign", "tanh", "rsqrt", "frac", "round"])
def test_unary_match_torch(name):
    got, want = [], []
    for lib, res in ((torch, want), (ember, got)):
        a, _ = lists(lib)
        res.append(getattr(lib, f"_foreach_{name}")(a))
        getattr(lib, f"_foreach_{name}_")(a)
        res.append(tuple(a))
    for g, w in zip(got, want):
        same(g, w)


def test_alpha_lerp_addcmul_norm_copy_zero_match_torch():
    def run(lib):
        a, b = lists(lib)
        out = [lib._foreach_add(a, b, alpha=2), lib._foreach_sub(a, b, alpha=0.5),
               lib._foreach_lerp(a, b, 0.3), lib._foreach_lerp(a, b, [lib.tensor(0.1)] * 3),
               lib._foreach_addcmul(a, b, b, 0.5), lib._foreach_addcdiv(a, b, a, [1., 2., 3.]),
               lib._foreach_addcmul(a, b, a, lib.tensor([1., -1., 2.])),
               lib._foreach_pow(2.0, b), lib._foreach_norm(a),
               lib._foreach_norm(b, ord=float("inf")), lib._foreach_norm(a, ord=1),
               lib._foreach_max(b), lib._foreach_clone(b)]
        lib._foreach_lerp_(a, b, 1 - 0.9)         # timm's ModelEmaV3 update
        lib._foreach_sub_(a, lib._foreach_sub(a, b), alpha=0.1)   # diffusers' EMAModel
        out.append(tuple(a))
        lib._foreach_copy_(a, b)
        out.append(tuple(a))
        lib._foreach_zero_(b)
        out.append(tuple(b))
        return out
    for g, w in zip(run(ember), run(torch)):
        same(g, w)


def test_out_of_place_forms_are_differentiable():
    grads = []
    for lib in (torch, ember):
        a, b = lists(lib)
        for t in a + b:
            t.requires_grad_()
        sum(r.sum() for r in lib._foreach_addcmul(lib._foreach_mul(a, b), a, b, 0.5)).backward()
        sum(n for n in lib._foreach_norm(b)).backward()
        grads.append(tuple(t.grad for t in a + b))
    same(grads[1], grads[0])


def test_errors_match_torch():
    for lib in (torch, ember):
        a, b = lists(lib)
        with pytest.raises(RuntimeError, match="at least one tensor"):
            lib._foreach_add([], 1)
        with pytest.raises(RuntimeError, match="same number of tensors, got 3 and 2"):
            lib._foreach_add(a, b[:2])
        with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
            lib._foreach_mul(a, [1.0])
        with pytest.raises(RuntimeError, match="expected to be 0 dim but it has 1 dimensions"):
            lib._foreach_mul(a, lib.ones(2))
        leaf = [lib.ones(2, requires_grad=True)]
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib._foreach_mul_(leaf, 2)
