"""ember.utils.checkpoint: gradients equal to the plain forward's (and PyTorch's), the
activations are really not kept, random numbers are replayed."""
import gc
import warnings
import weakref

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import ember
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _mlp_pair(seed=0):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal((4, 4)).astype(np.float32) * 0.5 for _ in range(3)]

    def build(mod, T):
        layers = []
        for w in ws:
            lin = mod.Linear(4, 4, bias=False)
            with T.no_grad():
                lin.weight.copy_(T.tensor(w))
            layers += [lin, mod.Tanh()]
        return mod.Sequential(*layers)
    return build(ember.nn, ember), build(torch.nn, torch)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradients_equal_plain_and_torch(use_reentrant):
    em, tm = _mlp_pair()
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    checkpoint(em, ex, use_reentrant=use_reentrant).pow(2).sum().backward()
    tcp.checkpoint(tm, tx, use_reentrant=use_reentrant).pow(2).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for pe, pt in zip(em.parameters(), tm.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-5, atol=1e-6)
    # and equal to the un-checkpointed forward
    grads = [p.grad.clone() for p in em.parameters()]
    em.zero_grad()
    ex2 = ember.tensor(x, requires_grad=True)
    em(ex2).pow(2).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), ex2.grad.numpy(), rtol=1e-6)
    for g, p in zip(grads, em.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_activations_are_not_kept(use_reentrant):
    lin = ember.nn.Linear(4, 4)
    inner = []
    recomputed = []

    def block(x):
        h = lin(x).tanh()            # tanh saves its result for backward
        inner.append(weakref.ref(h))
        recomputed.append(1)
        return (h * h).sum(-1)

    x = ember.randn(3, 4, requires_grad=True)
    y = checkpoint(block, x, use_reentrant=use_reentrant)
    gc.collect(0)
    assert inner[0]() is None         # nothing holds the forward's activation
    assert len(recomputed) == 1
    y.sum().backward()
    assert len(recomputed) == 2       # backward ran the block again
    # without checkpointing the activation is alive until backward
    inner.clear()
    y = block(x)
    gc.collect(0)
    assert inner[0]() is not None


def test_non_reentrant_gives_parameter_grads_without_input_grad():
    lin = ember.nn.Linear(4, 2)
    checkpoint(lin, ember.randn(3, 4), use_reentrant=False).sum().backward()
    assert lin.weight.grad is not None
    # autograd.grad works through it
    x = ember.randn(3, 4, requires_grad=True)
    (g,) = ember.autograd.grad(checkpoint(lin, x, use_reentrant=False).sum(), x)
    np.testing.assert_allclose(g.numpy(), np.tile(lin.weight.detach().numpy().sum(0), (3, 1)),
                               rtol=1e-6)


def test_reentrant_without_grad_inputs_warns_like_torch():
    for cp, T in ((checkpoint, ember), (tcp.checkpoint, torch)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cp(lambda a: a * 2, T.ones(2), use_reentrant=True)
        assert any("None of the inputs have requires_grad=True" in str(m.message) for m in w)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_rng_state_is_replayed(use_reentrant):
    drop = ember.nn.Dropout(0.5)
    x = ember.ones(1000, requires_grad=True)
    y = checkpoint(lambda a: drop(a) * 3, x, use_reentrant=use_reentrant)
    y.sum().backward()
    # the recomputation drew the same mask: the gradient is 3 * mask / 0.5 = y / x * ...
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_argument_errors_match_torch():
    for cp, T in ((checkpoint, ember), (tcp.checkpoint, torch)):
        x = T.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
            cp(lambda a, foo=None: a, x, use_reentrant=True, foo=1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = cp(lambda a: a * 2, x)
        assert any("use_reentrant parameter should be passed explicitly" in str(m.message)
                   for m in w)
        assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"


def test_kwargs_reach_the_function_non_reentrant():
    x = ember.ones(2, requires_grad=True)
    y = checkpoint(lambda a, scale=1.0: a * scale, x, use_reentrant=False, scale=4.0)
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches_torch(segments):
    em, tm = _mlp_pair(1)
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo = checkpoint_sequential(em, segments, ex, use_reentrant=False)
    to = tcp.checkpoint_sequential(tm, segments, tx, use_reentrant=False)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_helpers_exist_as_torch():
    for name in ("check_backward_validity", "get_device_states", "set_device_states",
                 "set_checkpoint_debug_enabled", "CheckpointPolicy",
                 "create_selective_checkpoint_contexts", "detach_variable", "noop_context_fn"):
        assert hasattr(tcp, name) and hasattr(ember.utils.checkpoint, name), name
    assert [p.name for p in ember.utils.checkpoint.CheckpointPolicy] == \
        [p.name for p in tcp.CheckpointPolicy]
    for cp, T in ((ember.utils.checkpoint, ember), (tcp, torch)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
            cp.check_backward_validity((T.ones(1),))
        assert cp.get_device_states(T.ones(1)) == ([], [])


def test_selective_checkpoint_policy_gives_the_same_gradients():
    from ember.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE

    lin = ember.nn.Linear(3, 3)
    x = ember.randn(2, 3, requires_grad=True)
    checkpoint(lambda a: lin(a).relu().sum(), x, use_reentrant=False,
               context_fn=lambda: create_selective_checkpoint_contexts(policy)).backward()
    g = x.grad.clone()
    x.grad = None
    lin(x).relu().sum().backward()
    np.testing.assert_allclose(g.numpy(), x.grad.numpy())


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_recomputation_runs_under_the_forwards_autocast(use_reentrant):
    """A block checkpointed inside ``autocast`` is recomputed in the same dtypes when
    backward runs outside it (the recomputation used to run in float32 and fail on the
    bfloat16 activations); gradients equal PyTorch's."""
    em, tm = _mlp_pair(2)
    x = np.random.default_rng(5).standard_normal((6, 4)).astype(np.float32)
    grads = []
    for T, cp, model in ((ember, checkpoint, em), (torch, tcp.checkpoint, tm)):
        xt = T.tensor(x, requires_grad=True)
        with T.autocast("cpu", dtype=T.bfloat16):
            y = cp(model, xt, use_reentrant=use_reentrant)
        assert str(y.dtype).endswith("bfloat16")
        y.float().pow(2).sum().backward()
        grads.append([xt.grad.numpy()] + [p.grad.numpy() for p in model.parameters()])
    for ours, ref in zip(*grads):
        assert ours.dtype == ref.dtype
        np.testing.assert_allclose(ours, ref, rtol=1e-2, atol=1e-2)
    # and autocast switched off inside a region is switched off in the recomputation too
    x2 = ember.tensor(x, requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        def block(a):
            with ember.autocast("cpu", enabled=False):
                return em(a)
        y = checkpoint(block, x2, use_reentrant=use_reentrant)
    assert y.dtype == ember.float32
    y.sum().backward()
    assert x2.grad.dtype == ember.float32
