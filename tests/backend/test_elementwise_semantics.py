"""Elementwise ops' PyTorch semantics beyond their values, generated from the op table.

- which ``out=`` dtypes, and which in-place ``self`` dtypes, an op accepts
  (``OpDef.out_dtype``: ``cast``, ``exact``, ``any``), and that results are computed in the
  inputs' dtype and then cast;
- which arguments must be tensors (a positional ``Tensor`` parameter of the signature) and
  which take Python numbers (``Tensor|Scalar``), in the function, method, in-place and
  ``out=`` forms;
- which of those forms exist (``OpDef.variants``);
- add/sub's ``alpha``, bool subtraction, addcmul's ``value``, addcdiv on integers, lerp's
  dtype rules, pow of integer and bool tensors by numbers, trunc / floor division of
  16-bit floats, ``round(decimals=)``, argmax/argmin on bool, ``out=`` with internal
  overlap.

Every case runs in PyTorch 2.13 (the oracle) and in ember on each device; they must agree
on whether the call raises (and with which exception type, for the classes above), and
otherwise on dtype and values.
"""
from __future__ import annotations

import inspect
import math
import warnings
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.schema import OPS, OUT_DTYPE_RULES, parse_signature


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not _installed("opencl"), reason="ember-opencl is not installed"))]

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64")
# (torch.special's ops (special_<name>) and the ops taking a non-tensor argument first or
# as an attribute (polygamma's order, logit's eps) are covered form by form in
# tests/ops/test_special.py and tests/ops/test_elementwise_family.py)
ELEMENTWISE = [n for n, o in OPS.items() if o.kind == "elementwise"
               and not n.startswith("special_") and n not in ("polygamma", "logit")]
#: ops defined on integers only although their promotion is the default one
_INTEGER_ONLY = {"gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"}
#: positional parameters of each op, as (name, type) from its signature
POSITIONAL = {n: [(p[1], p[0]) for p in parse_signature(OPS[n].signature)[1] if not p[3]]
              for n in ELEMENTWISE}


# ---- helpers ------------------------------------------------------------------------------
def pair(values, dtype, device, shape=None):
    """The same values as a torch tensor and an ember tensor on ``device`` (bfloat16 through
    float32, which holds it exactly)."""
    t = torch.tensor(values).to(getattr(torch, dtype))
    if shape is not None:
        t = t.reshape(shape)
    host = t.float() if dtype == "bfloat16" else t
    e = ember.tensor(host.numpy()).to(getattr(ember, dtype))
    return t, e.to(device)


def outcome(fn, *args, **kwargs):
    """``fn``'s result, or the exception it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every outcome is compared
        return e


def as_numpy(t):
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()
    if t.dtype in (ember.bfloat16, ember.float16):
        t = t.float()
    return t.cpu().numpy()


def dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def agree(want, got, ctx, *, exc_type=True, rtol=None):
    """``got`` (ember) matches ``want`` (torch): both raise (the same exception type unless
    ``exc_type`` is False), or both return tensors of one dtype and shape with the same
    values (integers and bools exactly; floats within ``rtol``, NaN and ±inf in place)."""
    if isinstance(want, Exception) or isinstance(got, Exception):
        assert isinstance(want, Exception) and isinstance(got, Exception), (
            f"{ctx}: PyTorch {want!r} vs ember {got!r}")
        if exc_type:
            assert type(got) is type(want), f"{ctx}: PyTorch {want!r} vs ember {got!r}"
        return
    assert dtype_name(got) == dtype_name(want), f"{ctx}: dtype {got.dtype} vs {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{ctx}: shape {got.shape} vs {want.shape}"
    g, w = as_numpy(got), as_numpy(want)
    if w.dtype.kind == "f":
        if rtol is None:
            rtol = {"float16": 2e-3, "bfloat16": 8e-3, "float32": 2e-6}.get(dtype_name(want),
                                                                            1e-12)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True, err_msg=ctx)
        assert (np.signbit(g[np.isinf(w)]) == np.signbit(w[np.isinf(w)])).all(), ctx
    else:
        np.testing.assert_array_equal(g, w, err_msg=ctx)


def bitwise_equal(want, got, ctx):
    """Floats equal bit for bit (the sign of zero included; any NaN matches NaN)."""
    assert dtype_name(got) == dtype_name(want), ctx
    g, w = as_numpy(got).astype(np.float64), as_numpy(want).astype(np.float64)
    same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    assert same.all(), f"{ctx}: ember {g[~same][:4]} vs PyTorch {w[~same][:4]}"


def _inputs(name):
    """Input dtype combinations for one op: each dtype for all operands, and mixed ones."""
    n = len(POSITIONAL[name])
    combos = [(d,) * n for d in DTYPES]
    if n == 2:
        combos += [("int8", "uint8"), ("int32", "float16"), ("bool", "int64"),
                   ("bfloat16", "float16"), ("float32", "float64")]
    elif n == 3:
        combos += [("float32", "float32", "float64"), ("int32", "float32", "float32")]
    return combos


#: out= dtypes tried against each combination (bool, integers, 16-bit and 64-bit floats)
OUT_DTYPES = ("bool", "uint8", "int16", "int64", "float16", "bfloat16", "float32", "float64")
#: values every op accepts in every dtype (nonzero: no integer division by zero)
VALUES = [1, 2, 3, 1]


def _call(lib, name, args, **kw):
    if name == "where":
        args = (args[0] != 0,) + tuple(args[1:])
    if name == "clamp":
        return getattr(lib, name)(args[0], 0, 2, **kw)
    return getattr(lib, name)(*args, **kw)


def _inplace(name, self, args):
    if name == "clamp":
        return self.clamp_(0, 2)
    return getattr(self, name + "_")(*args)


# ---- out= and in-place dtype rules ----------------------------------------------------------
def test_out_dtype_rules_are_known():
    for name in ELEMENTWISE:
        rule = OPS[name].out_dtype
        assert rule in OUT_DTYPE_RULES or callable(rule), name


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if "out" in OPS[n].variants])
def test_out_dtype_follows_pytorch(name, device):
    """Every out= dtype is accepted or refused as PyTorch does (``Found dtype Byte but
    expected Short``, ``result type Float can't be cast ...``, or any dtype for
    comparisons), and what is written is the value PyTorch writes."""
    base = {d: pair(VALUES, d, device) for d in DTYPES}
    for ins in _inputs(name):
        targs = [base[d][0] for d in ins]
        eargs = [base[d][1] for d in ins]
        for od in OUT_DTYPES:
            want = outcome(_call, torch, name, targs, out=torch.empty(4, dtype=getattr(torch, od)))
            got = outcome(_call, ember, name, eargs,
                          out=ember.empty(4, dtype=getattr(ember, od), device=device))
            # (values of float math computed in float32 and written to float64 may differ by
            # an ulp of float32: the tolerance is bfloat16's, the dtypes are exact)
            agree(want, got, f"{name}{ins} out={od}", exc_type=False, rtol=8e-3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if "inplace" in OPS[n].variants])
def test_inplace_dtype_follows_pytorch(name, device):
    """The in-place form writes into ``self``: the same rule as out=, with self's dtype."""
    base = {d: pair(VALUES, d, device) for d in DTYPES}
    for ins in _inputs(name):
        for sd in OUT_DTYPES:
            ts, es = pair(VALUES, sd, device)
            want = outcome(_inplace, name, ts, [base[d][0] for d in ins[1:]])
            got = outcome(_inplace, name, es, [base[d][1] for d in ins[1:]])
            agree(want, got, f"{sd}.{name}_{ins[1:]}", exc_type=False, rtol=8e-3)
            if not isinstance(want, Exception):
                agree(ts, es, f"{sd}.{name}_{ins[1:]}: self", rtol=8e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_results_are_computed_in_the_inputs_dtype_then_cast(device):
    """out= casts the result: int8 arithmetic wraps before it lands in int16, float32 math
    is float32 math even when written to float64, logical ops write 0/1 in any dtype."""
    ta, ea = pair([100, -100, 7], "int8", device)
    want = torch.add(ta, ta, out=torch.empty(3, dtype=torch.int16))
    got = ember.add(ea, ea, out=ember.empty(3, dtype=ember.int16, device=device))
    agree(want, got, "int8 + int8 into int16")
    tx, ex = pair([7.0, 0.3, 1e-3], "float32", device)
    got = ember.log(ex, out=ember.empty(3, dtype=ember.float64, device=device))
    agree(torch.log(tx, out=torch.empty(3, dtype=torch.float64)), got, "log float32 -> f64",
          rtol=2e-6)
    g = as_numpy(got)
    assert (g.astype(np.float32).astype(np.float64) == g).all()  # a float32 value
    ti, ei = pair([0, 3, -2, 1], "int32", device)
    for dt in ("int32", "float16", "uint8"):
        want = torch.logical_not(ti, out=torch.empty(4, dtype=getattr(torch, dt)))
        got = ember.logical_not(ei, out=ember.empty(4, dtype=getattr(ember, dt), device=device))
        agree(want, got, f"logical_not into {dt}")
    ti2, ei2 = pair([0, 3, -2, 1], "int32", device)
    agree(ti2.logical_not_(), ei2.logical_not_(), "int32.logical_not_()")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("call", ["add", "eq", "neg", "minimum", "where", "clamp", "round"])
def test_out_with_internal_overlap_raises(call, device):
    """An out= tensor whose elements share memory (stride 0) is refused before it would be
    resized, as PyTorch does."""
    for shape, out_shape in (((3, 3), (3,)), ((3,), (3,))):
        ts, es = pair(list(range(math.prod(shape))), "float32", device, shape)
        tout = torch.zeros(1).expand(*out_shape)
        eout = ember.zeros(1, device=device).expand(*out_shape)
        args = {"add": (ts, ts), "eq": (ts, ts), "neg": (ts,), "minimum": (ts, ts),
                "where": (ts > 1, ts, ts), "clamp": (ts,), "round": (ts,)}[call]
        eargs = [es > 1 if a is not ts else es for a in args]
        want = outcome(_call, torch, call, list(args), out=tout)
        got = outcome(_call, ember, call, eargs, out=eout)
        agree(want, got, f"{call} out={out_shape}")


# ---- arguments that must be tensors -------------------------------------------------------
def _tensor_args(name, dtype, device):
    """Tensors for each positional parameter, both libraries (where's condition bool)."""
    out = []
    for i, (pname, _) in enumerate(POSITIONAL[name]):
        d = "bool" if (name == "where" and i == 0) or OPS[name].promotion == "logical" \
            else dtype
        out.append(pair([1, 2], d, device))
    return out


def _forms(name):
    o = OPS[name]
    forms = [f for f in ("function", "method", "inplace", "out") if f in o.variants]
    return forms


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if n != "clamp"])
def test_number_arguments_follow_signature(name, device):
    """A number where the signature says ``Tensor`` raises TypeError in every form, as in
    PyTorch (``hypot(x, 2)``, ``x.logical_and_(1)``, ``addcmul(x, 2, t)``); where it says
    ``Tensor|Scalar`` both libraries take it."""
    dtype = "int32" if OPS[name].promotion == "integral" or name in _INTEGER_ONLY else "float32"
    params = POSITIONAL[name]
    for form in _forms(name):
        if name == "where" and form == "method":
            continue  # (Tensor.where(condition, other): self is the input, not the condition)
        for i, (pname, ptype) in enumerate(params):
            if i == 0 and form in ("method", "inplace"):
                continue  # (self of a method)
            for number in (2, 1.5, True):
                pairs = _tensor_args(name, dtype, device)
                targs = [p[0] for p in pairs]
                eargs = [p[1] for p in pairs]
                targs[i] = eargs[i] = number
                ctx = f"{form} {name} with {number!r} as {pname}"
                if form == "function":
                    want = outcome(getattr(torch, name), *targs)
                    got = outcome(getattr(ember, name), *eargs)
                elif form == "out":
                    rt = pairs[0][0].dtype if name != "where" else pairs[1][0].dtype
                    want = outcome(getattr(torch, name), *targs, out=torch.empty(2, dtype=rt))
                    got = outcome(getattr(ember, name), *eargs,
                                  out=ember.empty(2, dtype=getattr(ember, str(rt)[6:]),
                                                  device=device))
                else:
                    method = name + ("_" if form == "inplace" else "")
                    want = outcome(lambda: getattr(targs[0], method)(*targs[1:]))
                    got = outcome(lambda: getattr(eargs[0], method)(*eargs[1:]))
                if ptype == "Tensor":
                    assert isinstance(want, TypeError), f"{ctx}: the signature says Tensor"
                    assert isinstance(got, TypeError), f"{ctx}: {got!r}"
                    assert f"'{'input' if pname == 'self' else pname}'" in str(got), str(got)
                elif form == "out" and isinstance(want, TypeError):
                    # PyTorch's Scalar overloads of where, remainder and the bitwise ops have
                    # no out= form: ember's where refuses numbers with out= too; its
                    # number-first remainder and bitwise ops take out= (a known extension)
                    assert isinstance(got, TypeError) or (i == 0 and name != "where"), ctx
                else:
                    assert not isinstance(want, TypeError), (
                        f"{ctx}: PyTorch refuses a number ({want}); the signature says {ptype}")
                    agree(want, got, ctx, exc_type=False)


# ---- the forms each op has ------------------------------------------------------------------
def _torch_takes_out(name) -> bool:
    integral = OPS[name].promotion == "integral" or name in _INTEGER_ONLY
    dtype = torch.int32 if integral else torch.float32
    args = [torch.ones(2, dtype=dtype) for _ in POSITIONAL[name]]
    if name == "where":
        args[0] = args[0] > 0
    if name == "clamp":
        args = [args[0], 0, 1]
    out_dtype = torch.bool if OPS[name].promotion == "bool_out" else \
        dtype if name != "where" else torch.float32
    try:
        getattr(torch, name)(*args, out=torch.empty(2, dtype=out_dtype))
    except TypeError as e:
        assert "out" in str(e), e
        return False
    return True


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_variants_match_pytorch(name):
    """``OpDef.variants`` lists exactly the forms PyTorch has (isnan has no out=, maximum
    no in-place form), and ember exposes exactly those."""
    if OPS[name].variants == ():  # internal ops (tanh_backward): in neither namespace
        assert not hasattr(torch, name) and not hasattr(ember, name), name
        assert hasattr(torch.ops.aten, name), name
        return
    torch_forms = {"function": hasattr(torch, name), "method": hasattr(torch.Tensor, name),
                   "inplace": hasattr(torch.Tensor, name + "_"),
                   "out": _torch_takes_out(name)}
    variants = OPS[name].variants
    for form, present in torch_forms.items():
        assert (form in variants) == present, (name, form)
    assert hasattr(ember, name) == torch_forms["function"]
    assert hasattr(ember.Tensor, name) == torch_forms["method"]
    assert hasattr(ember.Tensor, name + "_") == torch_forms["inplace"]
    assert ("out" in inspect.signature(getattr(ember, name)).parameters) == \
        torch_forms["out"]


# ---- add / sub with alpha, bool subtraction ------------------------------------------------
ALPHA_DTYPES = [("bool", "bool"), ("uint8", "uint8"), ("int8", "int8"), ("int8", "int64_0d"),
                ("int8", "bool"), ("int64", "int64"), ("float16", "float16"),
                ("bfloat16", "bfloat16"), ("bfloat16", "int64"), ("float32", "int32"),
                ("float64", "float32"), ("bool", "int32")]
ALPHAS = (2, -1, -128, 0, 1000, 70000, 0.5, 1.0, True, False, 1e6, 1e39)


def _alpha_operand(dtype, device):
    values = [3, -7, 120, 1, 9223372036854775807] if dtype.startswith("int64") else \
        [3, -7, 120, 1, 2]
    if dtype.endswith("_0d"):
        return pair(values[1], dtype[:-3], device)
    return pair(values, dtype, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["add", "sub"])
@pytest.mark.parametrize("form", ["function", "method", "inplace", "out"])
def test_alpha_takes_no_part_in_promotion(name, form, device):
    """``add(int8, int8, alpha=2)`` stays int8, ``add(bool, bool, alpha=2)`` stays bool; a
    float alpha with integer results, a bool alpha with non-bool results and an alpha the
    dtype cannot hold raise as in PyTorch; float16/bfloat16 round ``a + alpha * b`` once."""
    for da, db in ALPHA_DTYPES:
        ta, ea = _alpha_operand(da, device)
        tb, eb = _alpha_operand(db, device)
        for alpha in ALPHAS:
            ctx = f"{form} {name}({da}, {db}, alpha={alpha!r})"
            if form == "function":
                want = outcome(getattr(torch, name), ta, tb, alpha=alpha)
                got = outcome(getattr(ember, name), ea, eb, alpha=alpha)
            elif form == "method":
                want = outcome(getattr(ta, name), tb, alpha=alpha)
                got = outcome(getattr(ea, name), eb, alpha=alpha)
            elif form == "inplace":
                tc, ec = ta.clone(), ea.clone()
                want = outcome(getattr(tc, name + "_"), tb, alpha=alpha)
                got = outcome(getattr(ec, name + "_"), eb, alpha=alpha)
            else:
                rt = torch.result_type(ta, tb)
                want = outcome(getattr(torch, name), ta, tb, alpha=alpha,
                               out=torch.empty(0, dtype=rt))
                got = outcome(getattr(ember, name), ea, eb, alpha=alpha,
                              out=ember.empty(0, dtype=getattr(ember, str(rt)[6:]),
                                              device=device))
            agree(want, got, ctx)


@pytest.mark.parametrize("device", DEVICES)
def test_alpha_with_python_number_operands(device):
    tx, ex = pair([1, 2, 3], "int16", device)
    for alpha in (2, -3, 0.5, True):
        for other in (3, 2.5, True):
            for name in ("add", "sub"):
                agree(outcome(getattr(torch, name), tx, other, alpha=alpha),
                      outcome(getattr(ember, name), ex, other, alpha=alpha),
                      f"{name}(int16, {other!r}, alpha={alpha!r})")
                agree(outcome(getattr(torch, name), other, tx, alpha=alpha),
                      outcome(getattr(ember, name), other, ex, alpha=alpha),
                      f"{name}({other!r}, int16, alpha={alpha!r})")


@pytest.mark.parametrize("device", DEVICES)
def test_subtraction_with_a_bool_operand_raises(device):
    """Either operand bool (a tensor or a Python bool) refuses ``-`` in every form, with
    PyTorch's messages."""
    operands = {"bool": pair([True, False], "bool", device),
                "int64": pair([1, 2], "int64", device), "float32": pair([1.0, 2.0], "float32",
                                                                        device)}
    numbers = (True, False, 1, 1.5)
    calls = {
        "sub": lambda lib, a, b: lib.sub(a, b), "-": lambda lib, a, b: a - b,
        "method": lambda lib, a, b: a.sub(b), "sub_": lambda lib, a, b: a.clone().sub_(b),
        "-=": lambda lib, a, b: a.clone().__isub__(b),
        "out": lambda lib, a, b: lib.sub(a, b, out=(a if isinstance(a, lib.Tensor) else b)
                                         .new_empty(0, dtype=lib.float32)),
        "alpha": lambda lib, a, b: lib.sub(a, b, alpha=2)}
    for ka, (ta, ea) in operands.items():
        for kb, (tb, eb) in list(operands.items()) + [(repr(n), (n, n)) for n in numbers]:
            for cname, call in calls.items():
                want, got = outcome(call, torch, ta, tb), outcome(call, ember, ea, eb)
                agree(want, got, f"{ka} {cname} {kb}")
                if isinstance(want, RuntimeError) and "Subtraction" in str(want):
                    assert str(want) in str(got)
        for n in numbers:  # a number minus a tensor
            want, got = outcome(lambda: n - ta), outcome(lambda: n - ea)
            agree(want, got, f"{n!r} - {ka}")


# ---- addcmul, addcdiv, lerp -----------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv_value_and_dtypes(name, device):
    """``value`` must fit the type the kernel computes in (int8 for int8; float for
    float16), addcdiv refuses integer tensor1 and tensor2, as in PyTorch."""
    values = (2, -1, 1000, -0.5, 0.5, True, 1e6, 1e40, math.inf, math.nan)
    for d in DTYPES:
        ts, es = pair([1, 0, 3], d, device)
        t1, e1 = pair([2, 1, 1], d, device)
        t2, e2 = pair([1, 3, 2], d, device)
        for v in values:
            want = outcome(getattr(torch, name), ts, t1, t2, value=v)
            got = outcome(getattr(ember, name), es, e1, e2, value=v)
            agree(want, got, f"{name}({d}, value={v!r})", exc_type=d != "bool")
            tc, ec = ts.clone(), es.clone()
            want = outcome(getattr(tc, name + "_"), t1, t2, value=v)
            got = outcome(getattr(ec, name + "_"), e1, e2, value=v)
            agree(want, got, f"{d}.{name}_(value={v!r})", exc_type=d != "bool")
    for d1, d2 in (("int32", "int64"), ("bool", "uint8"), ("int8", "float32"),
                   ("float16", "int16")):
        ts, es = pair([1.0, 2.0], "float32", device)
        t1, e1 = pair([3, 1], d1, device)
        t2, e2 = pair([2, 1], d2, device)
        agree(outcome(getattr(torch, name), ts, t1, t2), outcome(getattr(ember, name), es, e1,
                                                                  e2), f"{name}(f32, {d1}, {d2})")


LERP_DTYPES = [("float32",) * 3, ("float16",) * 3, ("bfloat16",) * 3, ("float64",) * 3,
               ("int16", "float16", "float16"), ("float16", "int32", "float16"),
               ("float16", "float16", "float32"), ("bool", "bool", "bool"),
               ("int32", "int32", "int32"), ("float32", "float64", "float64"),
               ("int64", "int64", "float16"), ("bool", "bool", "float32"),
               ("float32", "float32", "int64")]


@pytest.mark.parametrize("device", DEVICES)
def test_lerp_dtype_rules(device):
    """end (and a weight tensor with dims) must have self's dtype; a 0-d weight joins type
    promotion (int64 with a 0-d float16 weight gives float16), a number converts to the
    compute type (1e40 overflows float); floats only; out= takes the result's dtype with a
    weight tensor, any it casts to with a number or 0-d weight."""
    for ds, de, dw in LERP_DTYPES:
        ts, es = pair([0.0, 1.0, -2.0], ds, device)
        te, ee = pair([1.0, 3.0, 2.0], de, device)
        for wkind in ("tensor", "0-d", 0.25, 0.75, True, 1e40):
            if wkind == "tensor":
                tw, ew = pair([0.0, 0.5, 1.0], dw, device)
            elif wkind == "0-d":
                tw, ew = pair(0.5, dw, device)
            else:
                tw = ew = wkind
            ctx = f"lerp({ds}, {de}, {wkind} {dw})"
            agree(outcome(torch.lerp, ts, te, tw), outcome(ember.lerp, es, ee, ew), ctx,
                  rtol=1e-2)
            tc, ec = ts.clone(), es.clone()
            agree(outcome(tc.lerp_, te, tw), outcome(ec.lerp_, ee, ew), "inplace " + ctx,
                  rtol=1e-2)
            for od in ("float32", "float64"):
                # (a non-float lerp into an out= of another dtype: PyTorch names the dtype,
                # ember first says that lerp needs floats; both raise)
                agree(outcome(torch.lerp, ts, te, tw, out=torch.empty(3, dtype=getattr(
                    torch, od))), outcome(ember.lerp, es, ee, ew, out=ember.empty(
                        3, dtype=getattr(ember, od), device=device)),
                      f"{ctx} out={od}", exc_type=ds.startswith("float"), rtol=1e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_pow_of_bool_by_a_number(device):
    """PyTorch gives ones for a 0 (False) exponent and a copy for 1 (True) whatever the
    dtype, so a bool tensor takes a bool power; a bool tensor exponent is refused."""
    tb, eb = pair([True, False], "bool", device)
    for e in (True, False, 0, 1, 2, 1.5):
        calls = {"pow": lambda lib, x: lib.pow(x, e), "method": lambda lib, x: x.pow(e),
                 "**": lambda lib, x: x ** e, "pow_": lambda lib, x: x.clone().pow_(e),
                 "**=": lambda lib, x: x.clone().__ipow__(e),
                 "out": lambda lib, x: lib.pow(x, e, out=x.new_empty(2, dtype=lib.int64))}
        for cname, call in calls.items():
            agree(outcome(call, torch, tb), outcome(call, ember, eb), f"bool {cname} {e!r}",
                  exc_type=False)
    agree(outcome(torch.pow, tb, tb), outcome(ember.pow, eb, eb), "bool ** bool tensor",
          exc_type=False)


@pytest.mark.parametrize("device", DEVICES)
def test_pow_by_a_negative_integer_number(device):
    """Integer and bool tensors refuse a negative integer exponent, empty ones too; a
    negative float exponent gives floats."""
    for d in ("bool", "uint8", "int32", "int64", "float32"):
        for shape in ((0,), (3,)):
            tx, ex = pair(np.ones(shape).tolist(), d, device, shape)
            for e in (-1, -2, -1.0, 0, 2):
                for form, call in (("pow", lambda lib, x: lib.pow(x, e)),
                                   ("**", lambda lib, x: x ** e),
                                   ("pow_", lambda lib, x: x.clone().pow_(e))):
                    agree(outcome(call, torch, tx), outcome(call, ember, ex),
                          f"{d}{shape} {form} {e!r}", exc_type=False)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rounded_division_of_16bit_floats(dtype, device):
    """PyTorch's trunc and floor division of float16 / bfloat16 step in the dtype (each
    step rounds to it: trunc(-4.998) is -5 there, as -4.998 rounds to -5.0 first): the
    same bits in every form, specials included."""
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.standard_normal(3000) * 8, [math.inf, -math.inf, math.nan, 0.0,
                                                        -0.0, 7.0, -7.0, 1.0]])
    b = np.concatenate([rng.standard_normal(3000), [2.0, -3.0, 1.0, -2.0, 5.0, 0.0, -0.0,
                                                   math.inf]])
    ta, ea = pair(a.tolist(), dtype, device)
    tb, eb = pair(b.tolist(), dtype, device)
    for mode in ("trunc", "floor"):
        want = torch.div(ta, tb, rounding_mode=mode)
        bitwise_equal(want, ember.div(ea, eb, rounding_mode=mode), f"div {mode}")
        bitwise_equal(want, ea.div(eb, rounding_mode=mode), f"method {mode}")
        bitwise_equal(want, ea.clone().div_(eb, rounding_mode=mode), f"div_ {mode}")
        out = ember.empty(0, dtype=ember.float32, device=device)
        ember.div(ea, eb, rounding_mode=mode, out=out)
        bitwise_equal(want.float(), out, f"out=float32 {mode}")
    bitwise_equal(ta // tb, ea // eb, "//")
    bitwise_equal(ta // 0.3, ea // 0.3, "// number")
    bitwise_equal(2.5 // ta, 2.5 // ea, "number //")
    tc, ec = ta.clone(), ea.clone()
    tc //= tb
    ec //= eb
    bitwise_equal(tc, ec, "//=")


# ---- round(decimals=) ----------------------------------------------------------------------
ROUND_VALUES = [0.5, 1.5, 2.5, -0.5, -2.5, 0.125, 0.375, -0.625, 1.005, 2.675, 0.045,
                12345.675, 1234.5678, -3.55, 1e-5, 5e-8, 1e20, -1e20, 65504.0, 3e38,
                math.inf, -math.inf, math.nan, -0.0, 0.0, 7.0, 15.0, 25.0, 150.0]
DECIMALS = (0, 1, 2, 3, -1, -2, 5, 10, 16, 38, 39, 308, 309, 400, -38, -39, -300)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_round_decimals_bit_for_bit(dtype, device):
    """``rint(x * 10**n) / 10**n`` (``rint(x / 10**-n) * 10**-n`` for n < 0) in float (double
    for float64), as PyTorch: halfway cases, huge n (inf scale: NaN) and special values
    give PyTorch's bits, in the function, method, in-place and out= forms."""
    tx, ex = pair(ROUND_VALUES, dtype, device)
    for n in DECIMALS:
        want = torch.round(tx, decimals=n)
        ctx = f"round({dtype}, decimals={n})"
        bitwise_equal(want, ember.round(ex, decimals=n), ctx)
        bitwise_equal(want, ex.round(decimals=n), "method " + ctx)
        bitwise_equal(want, ex.clone().round_(decimals=n), "inplace " + ctx)
        out = ember.empty(0, dtype=ex.dtype, device=device)
        assert ember.round(ex, decimals=n, out=out) is out
        bitwise_equal(want, out, "out " + ctx)


@pytest.mark.parametrize("device", DEVICES)
def test_round_decimals_refusals(device):
    """Integer and bool tensors (even with decimals=0), a float or bool ``decimals`` and an
    out= of another dtype raise as in PyTorch; without decimals integers round to
    themselves."""
    for d in ("bool", "uint8", "int32", "int64"):
        tx, ex = pair([1, 2, 3], d, device)
        for n in (0, 1, -1):
            agree(outcome(torch.round, tx, decimals=n), outcome(ember.round, ex, decimals=n),
                  f"round({d}, decimals={n})")
            agree(outcome(tx.clone().round_, decimals=n), outcome(ex.clone().round_,
                                                                  decimals=n),
                  f"{d}.round_(decimals={n})")
        agree(outcome(torch.round, tx), outcome(ember.round, ex), f"round({d})",
              exc_type=False)
    tx, ex = pair([1.25, 2.5], "float32", device)
    for n in (1.5, True, None, 2 ** 70):
        if n is None:
            continue
        agree(outcome(torch.round, tx, decimals=n), outcome(ember.round, ex, decimals=n),
              f"decimals={n!r}")
    agree(outcome(torch.round, tx, 1), outcome(ember.round, ex, 1), "positional decimals")
    for od in ("float64", "float16", "int32"):
        for n in (0, 1):
            agree(outcome(torch.round, tx, decimals=n, out=torch.empty(2, dtype=getattr(
                torch, od))), outcome(ember.round, ex, decimals=n, out=ember.empty(
                    2, dtype=getattr(ember, od), device=device)), f"out={od} decimals={n}")


# ---- argmax / argmin on bool -----------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_refuse_bool(name, device):
    for shape in ((), (3,), (2, 3)):
        tx, ex = pair(np.zeros(shape, dtype=bool).tolist(), "bool", device)
        for kw in ({}, {"dim": 0}, {"dim": -1, "keepdim": True}):
            if not shape and kw:
                kw = {"dim": 0}
            for form in ("function", "method"):
                fn_t = getattr(torch, name) if form == "function" else getattr(tx, name)
                fn_e = getattr(ember, name) if form == "function" else getattr(ex, name)
                args_t = (tx,) if form == "function" else ()
                args_e = (ex,) if form == "function" else ()
                want, got = outcome(fn_t, *args_t, **kw), outcome(fn_e, *args_e, **kw)
                agree(want, got, f"{form} {name}(bool {shape}, {kw})")
                assert str(want) in str(got)
