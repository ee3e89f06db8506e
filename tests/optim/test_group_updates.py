"""Adam / AdamW / SGD update a parameter group with one op (``adam_step_``, ``sgd_step_``):
the CPU's multi-tensor kernel gives the per-tensor loop's results bit for bit (the loop is
the op's composite, run here by taking the kernel away), and both follow PyTorch."""
import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import OPS

SHAPES = [(37,), (5, 7), (3000,), ()]

ADAM = [dict(), dict(weight_decay=0.1), dict(amsgrad=True), dict(maximize=True,
                                                                 weight_decay=0.01),
        dict(betas=(0.5, 0.9), eps=1e-3, lr=0.3), dict(amsgrad=True, betas=(0.2, 0.7))]
SGD = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True,
                                                      weight_decay=0.01),
       dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)]


def _data(dtype, steps=5, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(a.shape).astype(dtype) for a in init] for _ in range(steps)]
    grads[2][1][...] = np.nan  # a NaN gradient in one step (amsgrad's maximum keeps it)
    return init, grads


def _train(lib, cls, kw, init, grads):
    ps = [lib.tensor(a.copy(), requires_grad=True) for a in init]
    opt = getattr(lib.optim, cls)(ps, **kw)
    for g in grads:
        for p, gg in zip(ps, g):
            p.grad = lib.tensor(gg.copy())
        opt.step()
    state = [v for p in ps for k, v in sorted(opt.state[p].items())
             if isinstance(v, lib.Tensor)]
    return [np.array(p.detach().numpy()) for p in ps + state]


def _without_kernel(op, fn):
    k = OPS[op].kernels.pop("cpu")
    try:
        return fn()
    finally:
        OPS[op].kernels["cpu"] = k


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw,op", [("Adam", kw, "adam_step_") for kw in ADAM]
                         + [("AdamW", dict(weight_decay=0.2), "adam_step_")]
                         + [("SGD", kw, "sgd_step_") for kw in SGD])
def test_kernel_is_the_loop_bit_for_bit_and_follows_pytorch(cls, kw, op, dtype):
    init, grads = _data(dtype)
    ember.zeros(1)  # (the cpu plugin's kernels are installed)
    native = _train(ember, cls, kw, init, grads)
    loop = _without_kernel(op, lambda: _train(ember, cls, kw, init, grads))
    for a, b in zip(native, loop):
        np.testing.assert_array_equal(a, b)
    want = _train(torch, cls, kw, init, grads)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(native, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("flags", [dict(fused=True), dict(foreach=True), dict(foreach=False)])
def test_flags_give_the_same_update(flags):
    init, grads = _data(np.float32)
    base = _train(ember, "Adam", dict(weight_decay=0.1), init, grads)
    for a, b in zip(_train(ember, "Adam", dict(weight_decay=0.1, **flags), init, grads), base):
        np.testing.assert_array_equal(a, b)
    base = _train(ember, "SGD", dict(lr=0.1, momentum=0.9), init, grads)
    for a, b in zip(_train(ember, "SGD", dict(lr=0.1, momentum=0.9, **flags), init, grads),
                    base):
        np.testing.assert_array_equal(a, b)


def test_mixed_groups_and_late_parameters():
    """A parameter that gets its first gradient later starts its own counter and buffer
    (SGD's first step and later steps in one group); half-precision and non-contiguous
    parameters take the loop; all match PyTorch."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    h = rng.standard_normal(3).astype(np.float16)
    res = {}
    for lib in (ember, torch):
        pa = lib.tensor(a.copy()).t().requires_grad_()  # (non-contiguous)
        pb, ph = lib.tensor(b.copy(), requires_grad=True), lib.tensor(h.copy(),
                                                                     requires_grad=True)
        out = []
        for cls, kw in (("Adam", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9))):
            opt = getattr(lib.optim, cls)([pa, pb, ph], **kw)
            for step in range(3):
                pa.grad = lib.ones_like(pa) * (step + 1)
                pb.grad = lib.ones_like(pb) * 0.5 if step > 0 else None
                ph.grad = lib.ones_like(ph) * 0.25
                opt.step()
            out += [np.array(t.detach().float().numpy()) for t in (pa, pb, ph)]
        res[lib.__name__] = out
    for x, y in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-3)


def test_versions_bumped_and_errors():
    p = ember.zeros(3, requires_grad=True)
    opt = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(3)
    v0 = p._version
    opt.step()
    assert p._version > v0
    assert opt.state[p]["step"].item() == 1.0
    k = OPS["adam_step_"].kernels["cpu"]
    t = [ember.zeros(3)]
    with pytest.raises(ValueError, match="'grads'\\[0\\] is float32 \\[2\\]"):
        k(t, [ember.zeros(2)], t, t, [], [ember.tensor(0.0)], lr=0.1, beta1=0.9, beta2=0.9,
          weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
          decoupled_weight_decay=False)
    with pytest.raises(TypeError, match="kernel takes float32 and float64"):
        k([ember.zeros(3, dtype=ember.float16)], t, t, t, [], [ember.tensor(0.0)], lr=0.1,
          beta1=0.9, beta2=0.9, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
          decoupled_weight_decay=False)
