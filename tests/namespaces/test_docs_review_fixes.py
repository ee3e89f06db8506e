"""Differences from PyTorch found while writing the API reference's docstrings, fixed, each
against PyTorch."""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
import torch.nn.functional as TF


def _same(e, t, tol=1e-6):
    e = e if isinstance(e, (tuple, list)) else (e,)
    t = t if isinstance(t, (tuple, list)) else (t,)
    assert len(e) == len(t)
    for a, b in zip(e, t):
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kwargs", [
    ("t", {}), ("diagonal", {"offset": 1}), ("unbind", {"dim": 1}),
    ("as_strided", {"size": (2, 2), "stride": (1, 2)}), ("broadcast_to", {"size": (2, 2, 3)}),
    ("transpose", {"dim0": 0, "dim1": 1}), ("select", {"dim": 1, "index": 2}),
    ("narrow", {"dim": 1, "start": 1, "length": 2}), ("movedim", {"source": 0,
                                                                 "destination": 1}),
])
def test_view_functions_take_input_by_keyword(name, kwargs):
    e = getattr(ember, name)(input=ember.arange(6.).view(2, 3), **kwargs)
    t = getattr(torch, name)(input=torch.arange(6.).view(2, 3), **kwargs)
    _same(e, t)


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("args", [(True,), (False,), (1, True), (0, False, True)])
def test_var_mean_std_mean_positional_unbiased(fn, args):
    x = [[1., 2., 4.], [3., 5., 11.]]
    _same(getattr(ember, fn)(ember.tensor(x), *args), getattr(torch, fn)(torch.tensor(x), *args))


def test_huber_loss_weighted_mean_divides_by_the_element_count():
    x, w = [1., 2., 3., 4.], [1., 2., 3., .5]
    for red in ("mean", "sum", "none"):
        _same(F.huber_loss(ember.tensor(x), ember.zeros(4), reduction=red, weight=ember.tensor(w)),
              TF.huber_loss(torch.tensor(x), torch.zeros(4), reduction=red,
                            weight=torch.tensor(w)))


@pytest.mark.parametrize("p", [float("inf"), -float("inf"), 2.0])
@pytest.mark.parametrize("nd,shape", [(1, (2, 3, 7)), (2, (2, 3, 5, 6)), (3, (1, 2, 4, 4, 4))])
def test_lp_pool_infinite_norm_is_max_pooling_of_the_magnitude(p, nd, shape):
    a = np.random.default_rng(nd).standard_normal(shape).astype(np.float32)
    e = getattr(F, f"lp_pool{nd}d")(ember.tensor(a), p, 2)
    t = getattr(TF, f"lp_pool{nd}d")(torch.tensor(a), p, 2)
    _same(e, t, 1e-5)


def test_threshold_inplace_takes_threshold_by_keyword():
    x, tx = ember.tensor([1., 2.]), torch.tensor([1., 2.])
    F.threshold_(x, threshold=1.5, value=0.)
    TF.threshold_(tx, threshold=1.5, value=0.)
    _same(x, tx)


def test_bfloat16_can_be_the_default_dtype():
    try:
        ember.set_default_dtype(ember.bfloat16)
        torch.set_default_dtype(torch.bfloat16)
        for make in (lambda m: m.tensor([1.5]), lambda m: m.ones(2), lambda m: m.arange(0., 2),
                     lambda m: m.tensor([1, 2]) / 2, lambda m: m.linspace(0, 1, 3)):
            assert make(ember).dtype.name == str(make(torch).dtype).split(".")[1]
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


def test_norm_nuc():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    _same(ember.norm(ember.tensor(a), p="nuc", dim=(1, 2)),
          torch.norm(torch.tensor(a), p="nuc", dim=(1, 2)), 1e-5)
    _same(ember.tensor(a[0]).norm(p="nuc", keepdim=True),
          torch.tensor(a[0]).norm(p="nuc", keepdim=True), 1e-5)
    for args in ((a, {}), (a[0], {"dim": 1})):
        with pytest.raises(RuntimeError, match="dim must be a 2-tuple") as e:
            ember.norm(ember.tensor(args[0]), p="nuc", **args[1])
        with pytest.raises(RuntimeError) as t:
            torch.norm(torch.tensor(args[0]), p="nuc", **args[1])
        assert str(e.value) == str(t.value)


def test_T_of_other_than_a_matrix_warns_once():
    import ember._tensor as ET
    ET._T_WARNED = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.ones(2, 3).T
        assert not w
        ember.ones(2, 3, 4).T
        ember.ones(3).T
    assert len(w) == 1 and w[0].category is UserWarning and "x.mT" in str(w[0].message)


CLONES = [lambda m: m.ones(2, 3).t(), lambda m: m.ones(4, 6)[:, ::2],
          lambda m: m.ones(2, 3, 4).permute(2, 0, 1), lambda m: m.ones(2, 3).expand(4, 2, 3),
          lambda m: m.ones(2, 3, 4, 5).contiguous(memory_format=m.channels_last),
          lambda m: m.ones(6)[::2], lambda m: m.ones(3, 1, 4).transpose(0, 2)]


@pytest.mark.parametrize("make", CLONES)
def test_clone_preserves_the_layout_of_a_dense_tensor(make):
    for e in (make(ember).clone(), ember.clone(make(ember))):
        t = make(torch).clone()
        # (a size-1 dimension's stride is free: compare the others)
        assert [s for s, n in zip(e.stride(), e.shape) if n > 1] == \
               [s for s, n in zip(t.stride(), t.shape) if n > 1]
        assert e._base is None
    x = ember.arange(12.).view(3, 4).requires_grad_()
    y = x.t().clone()
    assert y.stride() == (1, 4)
    (y * ember.arange(12.).view(4, 3)).sum().backward()
    tx = torch.arange(12.).view(3, 4).requires_grad_()
    (tx.t().clone() * torch.arange(12.).view(4, 3)).sum().backward()
    _same(x.grad, tx.grad)


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:          # noqa: BLE001 - the outcome is compared with PyTorch's
        return (type(e).__name__, None)


@pytest.mark.parametrize("name,args", [("split_copy", (2,)), ("unbind_copy", ()),
                                       ("split_with_sizes_copy", ([2, 4],))])
def test_copies_returning_several_tensors_write_out(name, args):
    """PyTorch's out= of the *_copy ops that return several tensors: a list written in
    place, None returned; split_copy copies (casting, broadcasting), the others resize each
    output and want its dtype; the list's length is checked."""
    x, tx = ember.arange(6.), torch.arange(6.)
    if name == "unbind_copy":
        x, tx = x.view(3, 2), tx.view(3, 2)
    good = [tuple(t.shape) for t in getattr(torch, name)(tx, *args)]
    n = len(good)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # (resizing an output that had elements warns)
        for shapes, int_out in ((good, False), ([(1,)] * n, False), ([(2, 2)] * n, False),
                                (good[:1], False), (good, True)):
            eo = [ember.empty(s, dtype=ember.int64 if int_out else ember.float32)
                  for s in shapes]
            to = [torch.empty(s, dtype=torch.int64 if int_out else torch.float32)
                  for s in shapes]
            e = _outcome(lambda: getattr(ember, name)(x, *args, out=eo))
            t = _outcome(lambda: getattr(torch, name)(tx, *args, out=to))
            assert e[0] == t[0], (shapes, int_out, e, t)
            if t[0] == "ok":
                assert e[1] is None and [v.tolist() for v in eo] == [v.tolist() for v in to]
