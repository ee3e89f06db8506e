"""out= parity with PyTorch beyond tests/parity/test_signatures.py: (values, indices) outs
with a wrong dtype in either place, refusal under autograd, the resize warning, the dtype
rules ("exact" vs "same kind" casting), sum/prod's overloads and the creation functions taking
out='s dtype. Every expectation comes from running the same call on torch."""
import warnings

import numpy as np
import pytest
import torch

import ember

X = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
M = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)


def _x(lib, a=X, grad=False):
    t = lib.tensor(a)
    return t.requires_grad_(True) if grad else t


#: name -> (call(lib, x, out), out factory(lib) -> out); x is a float32 (2, 3, 4) tensor
CASES = {
    "max_dim": (lambda lib, x, o: lib.max(x, 1, out=o), "pair"),
    "min_dim_keep": (lambda lib, x, o: lib.min(x, 2, True, out=o), "pair"),
    "sort": (lambda lib, x, o: lib.sort(x, 1, descending=True, out=o), "pair"),
    "topk": (lambda lib, x, o: lib.topk(x, 2, out=o), "pair"),
    "kthvalue": (lambda lib, x, o: lib.kthvalue(x, 2, 1, out=o), "pair"),
    "max_all": (lambda lib, x, o: lib.max(x, out=o), "one"),
    "argmax": (lambda lib, x, o: lib.argmax(x, 1, out=o), "one"),
    "sum_dim_none": (lambda lib, x, o: lib.sum(x, None, out=o), "one"),
    "prod_dim": (lambda lib, x, o: lib.prod(x, 1, out=o), "one"),
    "nansum": (lambda lib, x, o: lib.nansum(x, 1, out=o), "one"),
    "nanmean": (lambda lib, x, o: lib.nanmean(x, out=o), "one"),
    "std": (lambda lib, x, o: lib.std(x, (0, 2), out=o), "one"),
    "var": (lambda lib, x, o: lib.var(x, 1, out=o), "one"),
    "logsumexp": (lambda lib, x, o: lib.logsumexp(x, 1, out=o), "one"),
    "all": (lambda lib, x, o: lib.all(x, 1, out=o), "one"),
    "cat": (lambda lib, x, o: lib.cat([x, x], 1, out=o), "one"),
    "stack": (lambda lib, x, o: lib.stack([x, x], out=o), "one"),
    "square": (lambda lib, x, o: lib.square(x, out=o), "one"),
    "float_power": (lambda lib, x, o: lib.float_power(x, 2, out=o), "one"),
    "outer": (lambda lib, x, o: lib.outer(x[0, 0], x[1, 1], out=o), "one"),
    "mv": (lambda lib, x, o: lib.mv(x[0], x[1, 0], out=o), "one"),
    "tril": (lambda lib, x, o: lib.tril(x, out=o), "one"),
    "masked_select": (lambda lib, x, o: lib.masked_select(x, x > 0, out=o), "one"),
    "take": (lambda lib, x, o: lib.take(x, lib.tensor([0, 5, 7]), out=o), "one"),
}
#: out dtypes tried (values[, indices])
ONE = ("float32", "float64", "float16", "int64", "int32", "bool")
PAIR = (("float32", "int64"), ("float64", "int64"), ("float32", "int32"), ("int64", "int64"),
        ("float32", "bool"))


def _outs(lib, dts, shape):
    if isinstance(dts, tuple):
        return tuple(lib.empty(shape, dtype=getattr(lib, d)) for d in dts)
    return lib.empty(shape, dtype=getattr(lib, dts))


def _builtin(exc):
    """The first built-in class of an exception (torch's own subclasses -> RuntimeError...)."""
    return next(c for c in type(exc).__mro__ if c.__module__ == "builtins")


def _run(fn, lib, x, out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return "ok", fn(lib, x, out), [str(w.message) for w in caught]
        except Exception as exc:  # noqa: BLE001 - the class is compared
            return "raised", exc, []


def _check_same(name, dts, shape):
    fn, _ = CASES[name]
    ot, oe = _outs(torch, dts, shape), _outs(ember, dts, shape)
    kt, rt, wt = _run(fn, torch, _x(torch), ot)
    ke, re, we = _run(fn, ember, _x(ember), oe)
    assert kt == ke, (name, dts, shape, rt, re)
    if kt == "raised":
        assert _builtin(re) is _builtin(rt), (name, dts, rt, re)
        return
    assert bool(wt) == bool(we), (wt, we)
    outs_t = ot if isinstance(ot, tuple) else (ot,)
    outs_e = oe if isinstance(oe, tuple) else (oe,)
    res_t = rt if isinstance(rt, tuple) else (rt,)
    res_e = re if isinstance(re, tuple) else (re,)
    for o_t, o_e, r_t, r_e in zip(outs_t, outs_e, res_t, res_e):
        assert r_e is o_e and r_t is o_t
        assert str(o_e.dtype).split(".")[-1] == str(o_t.dtype).split(".")[-1]
        assert tuple(o_e.shape) == tuple(o_t.shape)
        np.testing.assert_allclose(o_e.numpy().astype(np.float64),
                                   o_t.numpy().astype(np.float64), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_dtypes_resize_and_values(name):
    kind = CASES[name][1]
    for dts in (PAIR if kind == "pair" else ONE):
        if name in SUM_PROD and dts in INT_OUTS:
            continue  # (test_sum_prod_integer_out below)
        for shape in ((0,), (5,)):   # resized silently / with torch's warning
            _check_same(name, dts, shape)


SUM_PROD = ("sum_dim_none", "prod_dim")
INT_OUTS = ("int64", "int32", "bool")


@pytest.mark.parametrize("name", SUM_PROD)
def test_sum_prod_integer_out(name):
    for dts in INT_OUTS:
        _check_same(name, dts, (0,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_refused_under_autograd(name):
    fn, kind = CASES[name]
    dts = PAIR[0] if kind == "pair" else "float32"
    raised = {}
    for lib in (torch, ember):
        dt = dts if kind == "pair" else ("int64" if name == "argmax" else
                                         "bool" if name == "all" else
                                         "float64" if name == "float_power" else dts)
        k, r, _ = _run(fn, lib, _x(lib, grad=True), _outs(lib, dt, (0,)))
        raised[lib] = (k, _builtin(r) if k == "raised" else None)
    assert raised[torch] == raised[ember]
    with torch.no_grad(), ember.no_grad():
        _check_same(name, dts if kind == "pair" else "float32", (0,))


def test_out_that_requires_grad_is_refused():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="out="):
            lib.sort(_x(lib), out=(lib.empty(0, requires_grad=True),
                                   lib.empty(0, dtype=lib.int64)))


def test_sum_prod_overloads():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.sum(_x(lib), out=lib.empty(0))
        with pytest.raises(TypeError):
            lib.prod(_x(lib), out=lib.empty(0))
        with pytest.raises(TypeError):
            lib.max(_x(lib), 1, out=lib.empty(0))   # (values, indices) needed with dim
    assert ember.sum(ember.tensor(X)).shape == ()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("call", ["arange", "eye", "linspace", "arange_dtype"])
def test_creation_out_takes_its_dtype(call, dtype):
    fns = {"arange": lambda lib, o: lib.arange(1, 7, 2, out=o),
           "eye": lambda lib, o: lib.eye(2, 3, out=o),
           "linspace": lambda lib, o: lib.linspace(-1, 2, 4, out=o),
           "arange_dtype": lambda lib, o: lib.arange(4, dtype=lib.float32, out=o)}
    got = {}
    for lib in (torch, ember):
        out = lib.empty(0, dtype=getattr(lib, dtype))
        k, r, _ = _run(lambda lib_, x, o: fns[call](lib_, o), lib, None, out)
        got[lib] = (k, _builtin(r) if k == "raised" else (r is out, out.tolist()))
    assert got[torch][0] == got[ember][0], got
    if got[torch][0] == "ok":
        np.testing.assert_allclose(np.array(got[ember][1][1], dtype=np.float64),
                                   np.array(got[torch][1][1], dtype=np.float64), rtol=1e-6)
        assert got[ember][1][0] and got[torch][1][0]
    else:
        assert got[torch][1] is got[ember][1]
