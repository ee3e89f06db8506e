"""Gradients at singular points against PyTorch: a table generated from the op definitions.

Every differentiable elementwise op, reduction, scan, softmax and sort in
``ember.dispatcher.schema.OPS`` runs forward and backward in ember and in PyTorch on inputs
holding 0, -0, ±inf, NaN and the points where an op has a kink, a pole or the edge of its
domain (0 for abs/sqrt/sign/relu/norm, ±1, ±pi/2, rounding ties, overflow). Gradients are
compared element by element: NaN exactly where PyTorch has NaN, the same infinities (sign
included), finite values within a few ulps, and ``.grad`` None exactly where PyTorch's is.

- Elementwise ops get every combination of special operands, and of special upstream
  gradients (0, inf, NaN) too; then each operand as a Python scalar, each rounding mode
  and each scalar attribute (``value=0``).
- Reductions, scans, softmax and sorts get rows of special patterns (constant, zeros, one
  inf, inf and -inf, NaN, ...) reduced along each row, over a multi-dim block and over a
  whole tensor, with each attribute varied by parameter name (``p``, ``correction``, ...),
  rows of one element included (``n - correction <= 0``).
- nn.functional's activations (not schema ops, but gradients with kinks) get the specials.

A new op joins the table by itself. Inputs are padded to a multiple of 64 elements so that
PyTorch runs its vectorised CPU kernels throughout (its scalar tail loop disagrees with
them at NaN for some backward kernels: elu, softshrink, hardtanh).

Allowed differences (elements excused from the comparison, each with its reason): ALLOWED.
Among equal values, which one ``sort``/``topk`` selects is PyTorch's implementation
detail, so their gradients are compared summed over each group of tied values.
"""
from __future__ import annotations

import itertools
import math
import operator
import warnings
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember.dispatcher import OPS
from ember.dispatcher.expr import BOOL
from ember.dispatcher.schema import parse_signature

inf, nan = math.inf, math.nan


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not _installed("opencl"), reason="ember-opencl is not installed"))]
DTYPES = {"float64": (np.float64, ember.float64, torch.float64, 1e-10, 1e-300),
          "float32": (np.float32, ember.float32, torch.float32, 2e-5, 2.5e-7)}

#: operand values: signed zeros, infinities, NaN, ±1 (acos/atanh-like edges, pow), rounding
#: ties, ±pi/2 (tan's poles), tiny and large magnitudes (underflow, exp overflow)
SPECIALS = (0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 2.0, -2.0,
            math.pi / 2, -math.pi / 2, 1e-30, 40.0, -40.0, 800.0)
#: fewer for ternary ops (their table is the cube of this)
SPECIALS3 = (0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, 2.0)
#: upstream gradients: plain, negative, zero, infinite, NaN
UPSTREAM = (1.0, -0.75, 0.0, inf, nan)
#: Python scalar operands
SCALARS = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -2.5, 3.0, inf, -inf, nan)
#: Python operators, for the scalar-first forms (``2 ** x``)
OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "div": operator.truediv, "pow": operator.pow, "remainder": operator.mod}


def _rows_like(pattern):
    """For ALLOWED: the elements of reduction rows equal to ``pattern``."""
    return lambda c: np.isin(c[0], [i for i, r in enumerate(ROWS) if r == pattern])


#: (case prefix, device or None: all, dtype or None: all) -> dict(where: fn(inputs) -> mask
#: of the elements excused, or rtol: a looser tolerance; reason)
_POCL_TANH = ("PoCL's float32 tanh saturates at 0.99999994, not 1 (a forward difference of "
              "the OpenCL tanh body, reported): 1 - tanh^2 is 1.2e-7, not 0; times an "
              "infinite x or upstream gradient it is inf, not NaN")
ALLOWED = {
    ("tanh", "opencl", "float32"): dict(where=lambda c: np.abs(c[0]) >= 9, reason=_POCL_TANH),
    ("mish", "opencl", "float32"): dict(where=lambda c: np.abs(c[0]) >= 9, reason=_POCL_TANH),
    ("gelu_tanh", "opencl", "float32"): dict(where=lambda c: np.abs(c[0]) >= 5,
                                             reason=_POCL_TANH),
    **{(f"{zero} truediv x", None, "float32"): dict(
        where=lambda c: np.abs(c[0]) < 1e-19,
        reason="PyTorch computes s / x as x.reciprocal() * s: for tiny x the gradient "
               "(1/x)^2 * 0 overflows to inf * 0 = NaN in float32; ember's -g * (0 / x) / x "
               "is 0") for zero in ("0.0", "-0.0")},
    ("special_zeta", None, "float32"): dict(
        where=lambda c: c[1] < 0,
        reason="float32 zeta(x, q) of a negative q: the Hurwitz sum's terms cancel, and "
               "PyTorch's CPU kernel sums in double where ember's kernels sum in float"),
    ("hardsigmoid", None, "float64"): dict(
        rtol=1e-7,
        reason="PyTorch's hardsigmoid_backward multiplies by the float32 constant 1/6 in "
               "float64 too (relative error 3e-8)"),
    ("std", None, "float32"): dict(
        where=lambda c: _rows_like([1e-30, 0, 0, 0])(c),
        reason="a forward difference: PyTorch takes the square root of the variance before "
               "rounding it to float32 (std 5e-31), ember rounds first (variance 0, std 0), "
               "and the gradient follows the result"),
}


# ---- comparison -------------------------------------------------------------------------------
def _numpy(t):
    """A gradient (ember or torch) as float64 NumPy, or None."""
    return None if t is None else t.detach().cpu().double().numpy()


def _mismatches(got, want, rtol, atol):
    """Mask of elements where ``got`` differs from the oracle ``want``."""
    same_nan = np.isnan(got) == np.isnan(want)
    exact = (got == want) | (np.isnan(got) & np.isnan(want))
    finite = np.isfinite(got) & np.isfinite(want)
    with np.errstate(invalid="ignore", over="ignore"):
        close = finite & (np.abs(got - want) <= atol + rtol * np.abs(want))
    return ~(same_nan & (exact | close))


def _check(what, got, want, columns, rtol, atol, allowed=None, groups=None):
    """Assert ember's gradient ``got`` equals PyTorch's ``want`` (NumPy arrays or None);
    ``columns`` are the flat inputs, reported for each mismatch."""
    if got is None or want is None:
        assert (got is None) == (want is None), (
            f"{what}: ember's .grad is {'None' if got is None else 'a tensor'}, PyTorch's is "
            f"{'None' if want is None else 'a tensor'}")
        return
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    if groups is not None:
        got, want = groups(got), groups(want)
    allowed = allowed or {}
    bad = _mismatches(got.reshape(-1), want.reshape(-1), allowed.get("rtol", rtol), atol)
    if "where" in allowed:
        bad &= ~allowed["where"](columns)
    if bad.any():
        idx = np.flatnonzero(bad)
        rows = [f"  inputs {tuple(float(c[i]) for c in columns)}: ember {got.reshape(-1)[i]!r}"
                f", PyTorch {want.reshape(-1)[i]!r}" for i in idx[:12]]
        raise AssertionError(f"{what}: {len(idx)} of {bad.size} gradients differ from "
                             f"PyTorch's\n" + "\n".join(rows))


def _allowed(case, device, dtype):
    for (prefix, dev, dt), entry in ALLOWED.items():
        if case.startswith(prefix) and dev in (None, device) and dt in (None, dtype):
            return entry
    return None


def _padded(columns, n=64):
    """Columns extended (with 1.0) to a multiple of ``n`` elements."""
    size = len(columns[0])
    extra = (-size) % n
    return [np.concatenate([c, np.ones(extra, c.dtype)]) for c in columns]


def _leaves(columns, kinds, np_dt, e_dt, t_dt, device):
    """Ember and torch leaves (float columns require grad; bool columns are masks)."""
    es, ts = [], []
    for c, kind in zip(columns, kinds):
        if kind == "bool":
            es.append(ember.tensor(c.astype(bool)).to(device))
            ts.append(torch.tensor(c.astype(bool)))
        else:
            arr = c.astype(np_dt)
            es.append(ember.tensor(arr, dtype=e_dt).to(device).requires_grad_())
            ts.append(torch.tensor(arr, dtype=t_dt, requires_grad=True))
    return es, ts


def _run_case(case, efn, tfn, columns, kinds, upstream, dtype, device, atol=None):
    """``efn`` / ``tfn`` on the leaves, backward with ``upstream``, gradients compared."""
    np_dt, e_dt, t_dt, rtol, default_atol = DTYPES[dtype]
    atol = default_atol if atol is None else atol
    es, ts = _leaves(columns, kinds, np_dt, e_dt, t_dt, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tfn(*ts)
        got = efn(*es)
    assert tuple(got.shape) == tuple(want.shape), f"{case}: output shape"
    g = upstream.astype(np_dt).reshape(tuple(want.shape))
    want.backward(torch.tensor(g, dtype=t_dt))
    got.backward(ember.tensor(g, dtype=e_dt).to(device))
    allowed = _allowed(case, device, dtype)
    for i, (e, t, kind) in enumerate(zip(es, ts, kinds)):
        if kind != "bool":
            _check(f"{case} [{dtype}, {device}] d/d input {i}", _numpy(e.grad), _numpy(t.grad),
                   columns + [upstream], rtol, atol, allowed)


# ---- elementwise ops, from their definitions -------------------------------------------------
def _differentiable(kinds):
    return sorted(n for n, o in OPS.items() if o.kind in kinds and o.differentiable)


ELEMENTWISE = _differentiable(("elementwise",))


def _operand_values(o):
    """The specials, plus the edges of the op's sample domain and tan's poles."""
    extra = tuple(v for v in (o.domain or ()) if v not in SPECIALS)
    return SPECIALS + extra


def _table(values_per_input, upstream=UPSTREAM):
    """Every combination of the inputs' values and the upstream gradients, as flat columns
    (the upstream last), padded."""
    rows = np.array(list(itertools.product(*values_per_input, upstream)), dtype=np.float64)
    cols = _padded([rows[:, i] for i in range(rows.shape[1])])
    return cols[:-1], cols[-1]


def _kinds(o):
    return ["bool" if v.value[2] == BOOL else "float" for v in o.body_inputs()]


def _public(lib, name):
    """The library's function of schema op ``name`` (``lib.special.<x>`` for the
    ``special_<x>`` ops; polygamma of order 1 and 3, as one-operand functions)."""
    if name == "special_zeta":  # (no derivative in x, in PyTorch either: x held constant)
        return lambda x, q: lib.special.zeta(x.detach() if hasattr(x, "detach") else x, q)
    if name in ("igamma", "igammac"):   # (no derivative in a, in PyTorch either)
        return lambda a, x: getattr(lib, name)(a.detach() if hasattr(a, "detach") else a, x)
    if name.startswith("special_"):
        return getattr(lib.special, name[len("special_"):])
    if name == "polygamma":
        return lambda x, n=1: lib.polygamma(n, x)
    if name in ("tanh_backward", "sigmoid_backward", "gelu", "gelu_backward"):
        # internal ops in both libraries
        if lib is torch:
            return getattr(torch.ops.aten, name)
        return lambda *a, **k: lib.dispatcher.ops.elementwise(name, *a, **k)
    return getattr(lib, name)


def _elementwise_variants(o):
    """(case id, ember fn, torch fn, per-input values or a Python scalar) for one op."""
    name = o.name
    efn, tfn = _public(ember, name), _public(torch, name)
    kinds = _kinds(o)
    n = len(kinds)
    vals = _operand_values(o) if n < 3 else SPECIALS3
    per_input = [(True, False) if k == "bool" else vals for k in kinds]
    yield name, efn, tfn, per_input, {}
    for attr, modes in (o.modes or {}).items():
        for mode in modes:
            if mode is not None:
                yield f"{name}({attr}={mode!r})", efn, tfn, per_input, {attr: mode}
    _, params = parse_signature(o.signature)
    for ptype, pname, _default, kwonly in params:
        if kwonly and ptype.startswith("Scalar"):
            for v in (0.0, -2.5):
                yield f"{name}({pname}={v})", efn, tfn, per_input, {pname: v}
    for i, k in enumerate(kinds):
        if k == "bool":
            continue
        for s in SCALARS:
            scalar_in = list(per_input)
            scalar_in[i] = s
            if i == 0 and name in OPERATORS:
                fn = OPERATORS[name]
                yield f"{s!r} {fn.__name__} x", fn, fn, scalar_in, {}
            elif i > 0:
                yield f"{name}(..., {s!r} at {i})", efn, tfn, scalar_in, {}


def _with_scalars(fn, per_input, kw):
    """``fn`` with the Python-scalar operands of ``per_input`` put back in place."""
    slots = [i for i, v in enumerate(per_input) if not isinstance(v, float)]

    def call(*tensors):
        args = list(per_input)
        for i, t in zip(slots, tensors):
            args[i] = t
        return fn(*args, **kw)
    return call, slots


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_gradients_at_singular_points(name, dtype, device):
    o = OPS[name]
    kinds = _kinds(o)
    ran = 0
    for case, efn, tfn, per_input, kw in _elementwise_variants(o):
        tcall, slots = _with_scalars(tfn, per_input, kw)
        columns, upstream = _table([per_input[i] for i in slots])
        probe = [torch.tensor(c[:1].astype(np.float64), requires_grad=True)
                 if kinds[i] != "bool" else torch.tensor(c[:1].astype(bool))
                 for i, c in zip(slots, columns)]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tcall(*probe).sum().backward()
        except (TypeError, RuntimeError):
            # PyTorch has no such form (torch.maximum(x, 2.0)) or no gradient for it
            # (2 % x): nothing to compare
            continue
        ecall, _ = _with_scalars(efn, per_input, kw)
        _run_case(case, ecall, tcall, columns, [kinds[i] for i in slots], upstream, dtype,
                  device)
        ran += 1
    assert ran >= 1


# ---- reductions, scans, softmax, sorts, from their definitions -------------------------------
REDUCTIONS = _differentiable(("reduction", "scan", "softmax", "sort"))

#: rows of four: what a reduction sees along one line
ROWS = [[0, 0, 0, 0], [-0.0, 0, -0.0, 0], [2, 2, 2, 2], [1e30, 1e30, 1e30, 1e30],
        [1, 2, 3, 4], [0, 1, 2, 0], [0, 0, 0, 1], [-1, 0, 1, 0], [5, 5, 5, -5], [3, -3, 3, -3],
        [inf, 1, 2, 3], [-inf, 1, 2, 3], [inf, inf, 1, 2], [inf, -inf, 1, 2], [0, inf, 2, 3],
        [0, 2, 0, inf], [nan, 1, 2, 3], [nan, inf, 0, 1], [1, nan, 0, nan], [-inf] * 4,
        [inf] * 4, [1e-30, 0, 0, 0], [40, -40, 40, 2], [-1, 1, -1, 1]]
#: rows of one element (n - correction <= 0 for var/std)
SHORT = [[0.0], [-0.0], [2.0], [inf], [nan]]
#: each attribute's alternatives, by parameter name
ATTRS = {"p": (1, 1.5, 3, 0.5, 0, inf, -inf), "correction": (0, 2), "keepdim": (True,),
         "descending": (True,), "largest": (False,), "k": (2,)}


def _first(out):
    return out[0] if isinstance(out, tuple) else out


#: the reductions whose signature is not (self, dim, ...): their calls on the rows (x has
#: one row of ROWS per line; constant operands are made with ``x.new_tensor``)
_POINTS = [[0, 0, 0, 0], [1, 2, 3, 4], [0, 0, 0, 1]]     # rows of ROWS: zero distances
_QUANTILE = [("rows", lambda lib, x, f: f(x, 0.3, 1)),
             ("rows q=0.5 keepdim", lambda lib, x, f: f(x, 0.5, 1, keepdim=True))] + [
    (f"rows {m}", lambda lib, x, f, m=m: f(x, 0.4, 1, interpolation=m))
    for m in ("lower", "higher", "midpoint", "nearest")] + [
    ("rows two q", lambda lib, x, f: f(x, x.new_tensor([0.25, 1.0]), 1))]
CALLS = {
    "_safe_softmax": [  # (internal in both libraries; ROWS has a row of -inf)
        ("rows", lambda lib, x: torch._safe_softmax(x, 1) if lib is torch else
         lib.dispatcher.ops.softmax_op("_safe_softmax", x, 1))],
    "median": [("whole", lambda lib, x: lib.median(x))],
    "nanmedian": [("whole", lambda lib, x: lib.nanmedian(x))],
    "median_dim": [("rows", lambda lib, x: lib.median(x, 1).values),
                   ("rows keepdim", lambda lib, x: lib.median(x, -1, True)[0])],
    "nanmedian_dim": [("rows", lambda lib, x: lib.nanmedian(x, 1).values),
                      ("rows keepdim", lambda lib, x: lib.nanmedian(x, -1, True)[0])],
    "quantile": [(c, lambda lib, x, fn=fn: fn(lib, x, lib.quantile)) for c, fn in _QUANTILE],
    "nanquantile": [(c, lambda lib, x, fn=fn: fn(lib, x, lib.nanquantile))
                    for c, fn in _QUANTILE],
    "renorm": [(f"rows p={p}", lambda lib, x, p=p: lib.renorm(x, p, 0, 1.0))
               for p in (1, 2, 3, inf)],
    "trace": [("rows", lambda lib, x: lib.trace(x)),
              ("columns", lambda lib, x: lib.trace(x.t()))],
    "cdist": [(f"to rows p={p}", lambda lib, x, p=p: lib.cdist(x, x.new_tensor(_POINTS), p))
              for p in (2.0, 1.0, 0.0, 3.0, 0.5, inf)],
    "dist": [(f"p={p}", lambda lib, x, p=p: lib.dist(x, x.new_tensor([0, 1, 2, 0]), p))
             for p in (2, 1, 3, 0, inf)],
    "cov": [("rows", lambda lib, x: lib.cov(x)),
            ("rows correction=0", lambda lib, x: lib.cov(x, correction=0))],
    "corrcoef": [("rows", lambda lib, x: lib.corrcoef(x))],
}
#: which of several equal values these return (and so which gets the gradient) PyTorch
#: leaves unspecified: their gradients are compared summed over equal values, as sort's
TIES_UNSPECIFIED = {"kthvalue", "median", "median_dim", "nanmedian", "nanmedian_dim", "mode"}


def _reduction_variants(o):
    """(case id, call(lib, x) -> tensor, input rows, dims reshaping) for one op."""
    if o.name in CALLS:
        for case, call in CALLS[o.name]:
            yield case, call, ROWS, None
        return
    name, params = parse_signature(o.signature)
    params = {p[1]: p for p in params[1:]}
    positional = [p for p in params.values() if not p[3]]
    dim = params.get("dim")
    base = {}
    if "k" in params:
        base["k"] = 2

    def call_with(kw):
        def call(lib, x):
            args = [kw[p[1]] for p in positional if p[1] in kw]
            rest = {k: v for k, v in kw.items() if k not in [p[1] for p in positional]}
            out = getattr(lib, name)(x, *args, **rest)
            return out[0] if isinstance(out, tuple) else out
        return call

    def kwargs(**kw):
        out = dict(base)
        # fill positional parameters up to the last one given
        names = [p[1] for p in positional]
        last = max((names.index(k) for k in kw if k in names), default=-1)
        for p in positional[:last + 1]:
            if p[1] not in kw and p[1] not in out:
                out[p[1]] = _default(p)
        out.update(kw)
        return out

    one_dim = dim is not None and dim[0] in ("int", "int?")
    yield "rows", call_with(kwargs(dim=1)), ROWS, None
    for pname, alternatives in ATTRS.items():
        if pname in params and pname != "k":
            for v in alternatives:
                yield f"rows {pname}={v}", call_with(kwargs(dim=1, **{pname: v})), ROWS, None
    if not one_dim:
        yield "blocks (1, 2)", call_with(kwargs(dim=(1, 2))), ROWS, (len(ROWS), 2, 2)
    if dim is not None and ("?" in dim[0] or dim[2] == "()"):
        whole = kwargs() if "?" in dim[0] else kwargs(dim=())
        for r in ROWS[:2] + ROWS[5:7] + ROWS[10:11] + ROWS[13:14] + ROWS[16:17]:
            yield f"whole {r}", call_with(whole), [r], None
    if "correction" in params:
        for c in (1, 2):
            yield f"one element, correction={c}", call_with(kwargs(dim=1, correction=c)), \
                SHORT, None
            yield f"one element whole, correction={c}", call_with(
                kwargs(correction=c)), [SHORT[2]], None


def _default(p):
    text = p[2]
    if text in (None, "None"):
        return None
    try:
        return eval(text, {"inf": inf})  # noqa: S307 - a literal from a signature
    except Exception:  # noqa: BLE001 - e.g. "()" for amax's dim
        return None


def _tie_groups(x):
    """For sort/topk: a function summing gradients over equal values of each row."""
    def groups(g):
        out = np.zeros_like(g)
        for r in range(x.shape[0]):
            row = x[r].reshape(-1)
            key = np.where(np.isnan(row), np.inf, row)  # NaNs form one group
            nan_group = np.isnan(row)
            for i in range(row.size):
                same = (key == key[i]) & (nan_group == nan_group[i])
                out.reshape(x.shape[0], -1)[r, i] = g.reshape(x.shape[0], -1)[r, same].sum()
        return out
    return groups


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_gradients_at_singular_points(name, dtype, device):
    o = OPS[name]
    np_dt, e_dt, t_dt, rtol, atol = DTYPES[dtype]
    for case, call, rows, shape in _reduction_variants(o):
        x = np.array(rows, dtype=np.float64)
        if shape is not None:
            x = x.reshape(shape)
        if len(rows) == 1:
            x = x.reshape(-1)
        tx = torch.tensor(x.astype(np_dt), dtype=t_dt, requires_grad=True)
        ex = ember.tensor(x.astype(np_dt), dtype=e_dt).to(device).requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = call(torch, tx)
            got = call(ember, ex)
        what = f"{name} {case} [{dtype}, {device}]"
        assert tuple(got.shape) == tuple(want.shape), f"{what}: output shape"
        # an uneven upstream gradient, so a formula that drops a factor shows
        g = np.linspace(0.5, 1.5, max(want.numel(), 1))[:want.numel()].reshape(
            tuple(want.shape)).astype(np_dt)
        if not want.requires_grad:  # PyTorch's norm p=0 has no gradient at all
            assert not got.requires_grad, f"{what}: ember records a gradient, PyTorch does not"
            continue
        want.backward(torch.tensor(g, dtype=t_dt))
        got.backward(ember.tensor(g, dtype=e_dt).to(device))
        groups = _tie_groups(x.reshape(x.shape[0], -1) if x.ndim > 1 else x.reshape(1, -1)) \
            if o.kind == "sort" or name in TIES_UNSPECIFIED else None
        flat = x.reshape(x.shape[0], -1) if x.ndim > 1 else x.reshape(1, -1)
        column = [np.repeat(np.arange(flat.shape[0]), flat.shape[1]), flat.reshape(-1)]
        _check(what + " (inputs: row, value)", _numpy(ex.grad), _numpy(tx.grad), column,
               rtol, atol, _allowed(f"{name} {case}", device, dtype), groups=groups)


# ---- nn.functional activations ---------------------------------------------------------------
#: name -> call(F, x); kinks at 0 (relu, relu6, leaky_relu, elu, celu, selu, threshold 0),
#: 6 (relu6), ±1 (hardtanh), ±3 (hardswish, hardsigmoid), ±0.5 (shrinks), 20 (softplus)
ACTIVATIONS = {
    "relu": lambda F, x: F.relu(x), "relu6": lambda F, x: F.relu6(x),
    "hardtanh": lambda F, x: F.hardtanh(x), "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1),
    "elu": lambda F, x: F.elu(x), "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 0.5), "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"), "silu": lambda F, x: F.silu(x),
    "mish": lambda F, x: F.mish(x), "hardswish": lambda F, x: F.hardswish(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x), "softplus": lambda F, x: F.softplus(x),
    "softplus_beta": lambda F, x: F.softplus(x, beta=2, threshold=10),
    "softsign": lambda F, x: F.softsign(x), "tanhshrink": lambda F, x: F.tanhshrink(x),
    "hardshrink": lambda F, x: F.hardshrink(x), "softshrink": lambda F, x: F.softshrink(x),
    "logsigmoid": lambda F, x: F.logsigmoid(x), "threshold": lambda F, x: F.threshold(x, 1, 0.5),
    "relu_inplace": lambda F, x: F.relu(x * 1, inplace=True),
}
KINKS = (3.0, -3.0, 6.0, 20.0, 21.0, 10.0, 5.0, 100.0, -100.0, 1000.0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_gradients_at_kinks(name, dtype, device):
    """The activations are composites of schema ops, so their gradient is a sum of partial
    products: with an upstream gradient of 0, inf or NaN a product of 0 and inf is NaN
    where PyTorch's fused backward kernels select a branch (an allowed difference: the
    upstream gradients here are finite and nonzero). Absolute tolerance one ulp of 1:
    elu's exp(x) comes from expm1(x) + 1, 0 for x = -40 where PyTorch's is 4e-18."""
    fn = ACTIVATIONS[name]
    columns, upstream = _table([SPECIALS + KINKS], upstream=(1.0, -0.75))
    _run_case(name, lambda x: fn(EF, x), lambda x: fn(TF, x), columns, ["float"], upstream,
              dtype, device, atol=float(np.finfo(DTYPES[dtype][0]).eps))


# ---- the examples of the issue ---------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_std_and_norm_of_constant_or_zero_input_have_zero_gradient(device):
    for make in (lambda: ember.zeros(5), lambda: ember.full((5,), 3.0)):
        for f in (lambda x: x.std(), lambda x: x.std(0, keepdim=True),
                  lambda x: x.std(correction=0)):
            x = make().to(device).requires_grad_()
            f(x).sum().backward()
            assert x.grad.cpu().numpy().tolist() == [0.0] * 5
    for p in (2, 1.5, 3, 0.5, math.inf):
        x = ember.zeros(2, 5, device=device, requires_grad=True)
        x.norm(p).backward()
        x.norm(p, dim=1).sum().backward()
        assert x.grad.cpu().numpy().tolist() == [[0.0] * 5] * 2


@pytest.mark.parametrize("device", DEVICES)
def test_negative_zero_scalar_operand_keeps_its_sign(device):
    x = ember.tensor([1.0, -2.0]).to(device)
    assert (x / 0.0).cpu().numpy().tolist() == [inf, -inf]
    assert (x / -0.0).cpu().numpy().tolist() == [-inf, inf]
    assert ember.copysign(x, -0.0).cpu().numpy().tolist() == [-1.0, -2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_relu_gradient_at_zero_is_zero(device):
    x = ember.tensor([-1.0, 0.0, -0.0, 2.0]).to(device).requires_grad_()
    y = EF.relu(x)
    y.sum().backward()
    assert x.grad.cpu().numpy().tolist() == [0.0, 0.0, 0.0, 1.0]
    assert np.signbit(y.detach().cpu().numpy()).tolist() == [False, False, True, False]


@pytest.mark.parametrize("device", DEVICES)
def test_ember_relu_function_and_method_gradient_at_zero_is_zero(device):
    for relu in (ember.relu, lambda t: t.relu(), lambda t: (t * 1).relu_()):
        x = ember.tensor([-1.0, 0.0, 2.0]).to(device).requires_grad_()
        relu(x).sum().backward()
        assert x.grad.cpu().numpy().tolist() == [0.0, 0.0, 1.0]
