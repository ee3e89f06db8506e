"""Fuzz every op in ember's op table against PyTorch.

Each op of ``ember.dispatcher.schema.OPS`` has a *case generator* below: hypothesis draws
shapes (empty and 0-d included), dtypes, memory layouts (transposed, step-sliced, offset,
expanded zero-stride, overlapping ``as_strided`` inputs), special values (0, -0, +-inf,
NaN, huge, tiny, integer extremes) and the op's arguments (dims as int / negative / tuple /
None, keepdim, out=, in-place forms). The same call runs in ember (on one device) and in
PyTorch (CPU) and the two are compared:

* both raise                          -> agree (messages are not compared)
* one raises, the other does not      -> mismatch (``NotImplementedError`` from ember is
  counted apart: it is ember saying what it lacks)
* results: dtype, shape, then values (floats with NaN/inf positions, ints exact)

This file is both a library (``tests/fuzz/test_fuzz.py`` drives it in CI) and the worker
program the driver runs in a child process, so that a crash (a signal) or a hang (a case
over its time limit, ended by ``faulthandler``) is recorded, with the case, instead of
killing the run::

    python tests/fuzz/opfuzz.py --device cpu --examples 50 --seed 123 --log out.jsonl

Every line of the log is one JSON record: ``{"event": "case", ...}`` before each case runs
(the driver reads the last one after a crash), ``{"event": "op", "op":..., "cases":...,
"status": "ok" | "mismatch" | "unsupported", "detail":...}`` after each op.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import math
import os
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

import ember
from ember.dispatcher.schema import OPS

INF, NAN = math.inf, math.nan
ALL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")
NUM_DTYPES = INT_DTYPES + FLOAT_DTYPES
SPECIAL_FLOATS = (0.0, -0.0, INF, -INF, NAN, 1e30, -1e30, 1e-30, 65504.0, 1.0, -1.0, 0.5)
#: relative tolerance per result dtype (PyTorch and ember may order a sum differently)
RTOL = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 2e-5, "float64": 1e-10}
#: kinds whose results add up many inputs: their absolute tolerance grows with the inputs
ACCUMULATING = {"reduction", "matmul", "conv", "norm", "loss", "scan", "attention", "softmax",
                "pool", "embedding"}


# ---------------------------------------------------------------------------------------
# tensors: described by hypothesis, built the same way in both libraries
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TSpec:
    """A tensor to build: values from ``seed``, then a layout applied by view ops."""
    shape: tuple
    dtype: str
    layout: str = "contiguous"
    seed: int = 0
    specials: float = 0.0  # fraction of elements replaced by special values
    low: int | None = None  # integer tensors with values in [low, high)
    high: int | None = None
    unique_dim: int | None = None  # index tensors: distinct values along this dim

    def __repr__(self):
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in ("low", "high", "unique_dim")
                        if getattr(self, k) is not None)
        return (f"T({self.shape}, {self.dtype}, {self.layout}, seed={self.seed}, "
                f"specials={self.specials}{extra})")


def _values(spec: TSpec, shape: tuple) -> np.ndarray:
    rng = np.random.default_rng(spec.seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = spec.dtype
    if spec.low is not None:
        if spec.unique_dim is not None and len(shape) > 0 and n:
            d = spec.unique_dim
            keys = rng.random(shape)
            v = np.argsort(keys, axis=d) % max(spec.high - spec.low, 1) + spec.low
        else:
            v = rng.integers(spec.low, spec.high, size=shape) if spec.high > spec.low else \
                np.full(shape, spec.low)
        return v.astype(np.int64)
    if dt == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt in INT_DTYPES:
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -20), min(info.max, 20) + 1, size=shape)
        if spec.specials and n:
            hit = rng.random(shape) < spec.specials
            pick = rng.choice([info.min, info.max, 0, -1 if info.min < 0 else 1], size=shape)
            v = np.where(hit, pick, v)
        return v.astype(dt)
    scale = rng.choice([1.0, 1.0, 8.0, 1e-3])
    v = rng.standard_normal(size=shape) * scale
    if spec.specials and n:
        hit = rng.random(shape) < spec.specials
        v = np.where(hit, rng.choice(SPECIAL_FLOATS, size=shape), v)
    return v.astype(np.float64)


def _base_shape(spec: TSpec) -> tuple:
    s = list(spec.shape)
    if spec.layout == "transposed":
        return tuple(reversed(s))
    if spec.layout == "strided" and s:
        s[-1] = 2 * s[-1]
    elif spec.layout == "offset" and s:
        s[0] += 1
    elif spec.layout == "expanded" and s:
        s[0] = 1
    elif spec.layout == "overlapping":
        return (max(int(np.prod(spec.shape)) // 2 + len(s) + 1, 1),)
    return tuple(s)


def _overlap_strides(shape: tuple) -> tuple:
    """Strides that make a read-only window view: dims step by 1 element, so rows share."""
    return tuple(1 for _ in shape)


def build(lib, spec: TSpec, device=None):
    """``spec`` as a ``lib`` tensor (lib: ember or torch), on ``device`` for ember."""
    base = _base_shape(spec)
    arr = _values(spec, base)
    if lib is torch:
        t = torch.from_numpy(np.array(arr, order="C")).clone()  # resizable, as usual
    else:
        t = ember.from_numpy(np.array(arr, order="C"))
        if device is not None and device != "cpu":
            t = t.to(device)
    if spec.low is None:
        t = t.to(getattr(lib, spec.dtype))
    s = spec.shape
    if spec.layout == "transposed":
        t = t.permute(*reversed(range(len(s)))) if s else t
    elif spec.layout == "strided" and s:
        t = t[..., ::2]
    elif spec.layout == "offset" and s:
        t = t[1:]
    elif spec.layout == "expanded" and s:
        t = t.expand(*s)
    elif spec.layout == "overlapping":
        t = t.as_strided(s, _overlap_strides(s))
    return t


# ---------------------------------------------------------------------------------------
# hypothesis strategies
# ---------------------------------------------------------------------------------------
LAYOUTS = ("contiguous", "contiguous", "transposed", "strided", "offset", "expanded",
           "overlapping")


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return st.lists(st.integers(min_side, max_side), min_size=min_dims,
                    max_size=max_dims).map(tuple)


@st.composite
def tensors(draw, shape=None, dtypes=ALL_DTYPES, layouts=LAYOUTS, min_dims=0, max_dims=4,
            max_side=5, specials=True):
    if shape is None:
        shape = draw(shapes(min_dims, max_dims, 0, max_side))
    layout = draw(st.sampled_from(layouts))
    if layout == "overlapping" and len(shape) < 2:
        layout = "contiguous"
    return TSpec(tuple(shape), draw(st.sampled_from(dtypes)), layout,
                 draw(st.integers(0, 2**31 - 1)),
                 draw(st.sampled_from((0.0, 0.0, 0.1, 0.5))) if specials else 0.0)


@st.composite
def index_tensors(draw, shape, high, low=0, unique_dim=None, bad=True):
    """int64 indices in [low, high); now and then one out of range (an error case)."""
    if bad and draw(st.integers(0, 19)) == 0:
        low, high = (high, high + 1) if draw(st.booleans()) else (-high - 2, -high - 1)
        unique_dim = None
    return TSpec(tuple(shape), "int64", draw(st.sampled_from(("contiguous", "transposed"))),
                 draw(st.integers(0, 2**31 - 1)), 0.0, low, max(high, low), unique_dim)


def broadcastable(draw, shape):
    """A shape that broadcasts with ``shape``: dims dropped from the front or set to 1."""
    k = draw(st.integers(0, len(shape)))
    out = [1 if draw(st.integers(0, 3)) == 0 else s for s in shape[k:]]
    return tuple(out)


def dims(draw, ndim, allow_none=True, allow_tuple=True, allow_bad=True):
    """A ``dim`` argument: None, an int (negative too), a tuple, now and then out of range."""
    choices = ["int"] + (["none"] if allow_none else []) + (["tuple"] if allow_tuple else [])
    kind = draw(st.sampled_from(choices))
    span = max(ndim, 1)
    if kind == "none":
        return None
    if kind == "int":
        lo, hi = (-span - 1, span) if allow_bad else (-span, span - 1)
        return draw(st.integers(lo, hi))
    return tuple(draw(st.lists(st.integers(-span, span - 1), max_size=span, unique=True)))


# ---------------------------------------------------------------------------------------
# cases: an op's call, written once, run with lib = ember and lib = torch
# ---------------------------------------------------------------------------------------
@dataclass
class Case:
    op: str
    fn: object  # fn(lib, *tensors) -> result
    args: tuple  # TSpecs and plain values, in fn's order after lib
    text: str  # the call, for reports
    compare: str = "exact"  # "exact", "values" (indices checked by gathering), "stats"
    inplace_arg: int | None = None  # which arg an in-place form writes (compared too)
    kw: dict = field(default_factory=dict)

    def __repr__(self):
        return f"{self.text}  with  " + ", ".join(map(repr, self.args))


def _inputs(case, lib, device):
    return [build(lib, a, device) if isinstance(a, TSpec) else
            [build(lib, b, device) for b in a] if isinstance(a, list) else a for a in case.args]


GEN = {}


def gen(*names):
    def deco(f):
        for n in names:
            GEN[n] = f
        return f
    return deco


# ---- elementwise: every op with a scalar body, from its definition -------------------
_EXTRA = {  # keyword arguments PyTorch's functions take, drawn per op
    "div": lambda d: {"rounding_mode": d(st.sampled_from([None, "trunc", "floor"]))},
    "round": lambda d: {"decimals": d(st.sampled_from([0, 0, 1, -1, 2]))},
    "addcmul": lambda d: {"value": d(st.sampled_from([1, 2, -0.5]))},
    "addcdiv": lambda d: {"value": d(st.sampled_from([1, 2, -0.5]))},
    "add": lambda d: {"alpha": d(st.sampled_from([1, 1, 2, -1]))},
    "sub": lambda d: {"alpha": d(st.sampled_from([1, 1, 2, -1]))},
}


def public_function(lib, name):
    """The library's function of schema op ``name``: ``lib.special.<x>`` for the
    ``special_<x>`` ops (PyTorch's python_module: special), else ``lib.<name>``."""
    if name.startswith("special_"):
        return getattr(lib.special, name[len("special_"):])
    if OPS[name].variants == ():  # internal ops (tanh_backward): aten's, the dispatcher's
        if lib.__name__ == "torch":
            return getattr(lib.ops.aten, name)
        return lib._functions.INTERNAL[name]
    return getattr(lib, name)


def _elementwise(name):
    o = OPS[name]
    bools = [v.value[2] == "bool" for v in o.body_inputs()]

    @st.composite
    def case(draw):
        shape = draw(shapes())
        dt = draw(st.sampled_from(ALL_DTYPES))
        args, texts = [], []
        for i, is_bool in enumerate(bools):
            s = shape if i == 0 else broadcastable(draw, shape)
            if i > 0 and name not in ("clamp",) and draw(st.integers(0, 4)) == 0:
                v = draw(st.sampled_from([2, -1, 0, 1.5, -0.25, True, INF, NAN]))
                args.append(v)
                texts.append(repr(v))
                continue
            d = "bool" if is_bool else (dt if draw(st.integers(0, 5)) else
                                        draw(st.sampled_from(ALL_DTYPES)))
            args.append(draw(tensors(shape=s, dtypes=(d,))))
            texts.append(f"t{i}")
        kw = _EXTRA[name](draw) if name in _EXTRA else {}
        if name == "clamp":
            args = args[:1]
            lo = draw(st.sampled_from([None, -1, 0, 0.5, -INF]))
            hi = draw(st.sampled_from([None, 1, 2.5, INF, NAN]))
            kw = {"min": lo, "max": hi}
        form = draw(st.sampled_from(["function", "function", "method", "inplace", "out"]))
        # (writing in place into a self-overlapping as_strided view is undefined behaviour
        # in PyTorch: the result depends on the order of the writes)
        if form == "inplace" and (not isinstance(args[0], TSpec) or
                                  args[0].layout == "overlapping"):
            form = "function"
        n_args = len(args)

        # polygamma's order n comes first (a number, not an operand)
        lead = (draw(st.sampled_from([0, 1, 2, 3])),) if name == "polygamma" else ()
        if form == "function":
            def fn(lib, *a):
                return public_function(lib, name)(*lead, *a, **kw)
        elif form == "method":
            def fn(lib, *a):
                return getattr(a[0], name)(*lead, *a[1:], **kw)
        elif form == "inplace":
            def fn(lib, *a):
                return getattr(a[0], name + "_")(*lead, *a[1:], **kw)
        else:
            out_dt = draw(st.sampled_from(ALL_DTYPES))
            out_shape = draw(st.sampled_from([shape, (0,), shape[1:]]))
            args.append(draw(tensors(shape=out_shape, dtypes=(out_dt,),
                                     layouts=("contiguous", "contiguous", "expanded",
                                              "strided"))))

            def fn(lib, *a):
                return public_function(lib, name)(*lead, *a[:n_args], **kw, out=a[n_args])
        text = f"{form} {name}({', '.join(map(str, lead + tuple(texts)))}, **{kw})"
        return Case(name, fn, tuple(args), text,
                    inplace_arg=0 if form == "inplace" else
                    (n_args if form == "out" else None))
    return case()


for _o in OPS.values():
    if _o.kind == "elementwise":
        GEN[_o.name] = _elementwise(_o.name)


# ---- reductions ---------------------------------------------------------------------
@gen("sum", "mean", "prod", "logsumexp", "all", "any", "max", "min", "argmax", "argmin",
     "var", "std", "norm")
@st.composite
def _reduction(draw, name):
    x = draw(tensors(dtypes=ALL_DTYPES))
    nd = len(x.shape)
    keep = draw(st.booleans())
    kw = {}
    if name in ("prod", "argmax", "argmin", "max", "min"):
        dim = dims(draw, nd, allow_tuple=False)
    elif name == "logsumexp":
        dim = dims(draw, nd, allow_none=False)
    else:
        dim = dims(draw, nd)
    if name in ("var", "std"):
        kw["correction"] = draw(st.sampled_from([0, 1, 2]))
    if name == "norm":
        kw["p"] = draw(st.sampled_from([2, 1, INF, -INF, 0, 3, 0.5, "fro"]))
        if kw["p"] == "fro" and isinstance(dim, int):
            dim = None
    if name in ("sum", "mean", "prod") and draw(st.integers(0, 4)) == 0:
        kw["dtype"] = draw(st.sampled_from(NUM_DTYPES))
    compare = "exact"
    if dim is None and name in ("max", "min", "argmax", "argmin", "prod"):
        def fn(lib, t):
            if "dtype" in kw:
                return getattr(lib, name)(t, dtype=getattr(lib, kw["dtype"]))
            return getattr(lib, name)(t)
        text = f"{name}(x)"
    else:
        def fn(lib, t):
            k = dict(kw)
            if "dtype" in k:
                k["dtype"] = getattr(lib, k["dtype"])
            return getattr(lib, name)(t, dim=dim, keepdim=keep, **k)
        text = f"{name}(x, dim={dim!r}, keepdim={keep}, **{kw})"
    if name in ("max", "min") and dim is not None:
        compare = "values"
    if name in ("argmax", "argmin"):
        compare = "argindex"
    return Case(name, fn, (x,), text, compare=compare, kw={"dim": dim, "keepdim": keep})


# ---- scans, softmax -----------------------------------------------------------------
@gen("cumsum", "cumprod", "softmax", "log_softmax")
@st.composite
def _scan(draw, name):
    x = draw(tensors(dtypes=NUM_DTYPES + ("bool",)))
    dim = dims(draw, len(x.shape), allow_none=False, allow_tuple=False)
    dtype = draw(st.sampled_from([None, None, "float32", "float64", "int64"]))

    def fn(lib, t):
        return getattr(lib, name)(t, dim, dtype=getattr(lib, dtype) if dtype else None)
    return Case(name, fn, (x,), f"{name}(x, {dim}, dtype={dtype})")


# ---- sort, topk ----------------------------------------------------------------------
@gen("sort")
@st.composite
def _sort(draw, name):
    x = draw(tensors(dtypes=NUM_DTYPES + ("bool",)))
    dim = dims(draw, len(x.shape), allow_none=False, allow_tuple=False)
    desc = draw(st.booleans())

    def fn(lib, t):
        return lib.sort(t, dim=dim, descending=desc, stable=True)
    return Case(name, fn, (x,), f"sort(x, dim={dim}, descending={desc}, stable=True)")


@gen("topk")
@st.composite
def _topk(draw, name):
    x = draw(tensors(dtypes=NUM_DTYPES, min_dims=0))
    dim = dims(draw, len(x.shape), allow_none=False, allow_tuple=False)
    size = x.shape[dim] if x.shape and -len(x.shape) <= dim < len(x.shape) else 1
    k = draw(st.integers(0, size + 1))
    largest = draw(st.booleans())

    def fn(lib, t):
        return lib.topk(t, k, dim=dim, largest=largest, sorted=True)
    return Case(name, fn, (x,), f"topk(x, {k}, dim={dim}, largest={largest})",
                compare="values", kw={"dim": dim, "keepdim": True})


# ---- matmul family ---------------------------------------------------------------------
MM_DTYPES = FLOAT_DTYPES + ("int64", "int32")


@gen("mm", "bmm", "matmul", "mv", "dot", "outer", "addmm", "linear")
@st.composite
def _matmul(draw, name):
    dt = draw(st.sampled_from(MM_DTYPES))
    n, k, m, b = (draw(st.integers(0, 6)) for _ in range(4))
    bad = draw(st.integers(0, 9)) == 0
    k2 = k + 1 if bad else k
    T = lambda s: draw(tensors(shape=s, dtypes=(dt,), layouts=LAYOUTS[:5]))  # noqa: E731
    if name == "mm":
        args, f = (T((n, k)), T((k2, m))), lambda lib, x, y: lib.mm(x, y)
    elif name == "bmm":
        args, f = (T((b, n, k)), T((b, k2, m))), lambda lib, x, y: lib.bmm(x, y)
    elif name == "mv":
        args, f = (T((n, k)), T((k2,))), lambda lib, x, y: lib.mv(x, y)
    elif name == "dot":
        args, f = (T((k,)), T((k2,))), lambda lib, x, y: lib.dot(x, y)
    elif name == "outer":
        args, f = (T((n,)), T((m,))), lambda lib, x, y: lib.outer(x, y)
    elif name == "addmm":
        beta, alpha = draw(st.sampled_from([1, 0, 0.5])), draw(st.sampled_from([1, 2]))
        args = (T(broadcastable(draw, (n, m))), T((n, k)), T((k2, m)))

        def f(lib, c, x, y):
            return lib.addmm(c, x, y, beta=beta, alpha=alpha)
    elif name == "linear":
        bias = draw(st.booleans())
        lead = draw(shapes(0, 2, 0, 3))
        args = (T(lead + (k,)), T((m, k2))) + ((T((m,)),) if bias else ())

        def f(lib, x, w, *bb):
            return lib.nn.functional.linear(x, w, *bb)
    else:  # matmul: 1-d .. 4-d with batch broadcasting
        lead = draw(shapes(0, 2, 0, 3))
        ra, rb = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        sa = ((n, k) if ra == 2 else (k,))
        sb = ((k2, m) if rb == 2 else (k2,))
        if ra == 2:
            sa = lead + sa
        if rb == 2 and draw(st.booleans()):
            sb = broadcastable(draw, lead) + sb
        args, f = (T(sa), T(sb)), lambda lib, x, y: lib.matmul(x, y)
    return Case(name, f, args, f"{name}({', '.join(repr(a.shape) for a in args)})")


EINSUMS = {"ij,jk->ik": ((0, 1), (1, 2)), "bij,bjk->bik": ((3, 0, 1), (3, 1, 2)),
           "ii->i": ((0, 0),), "ij->": ((0, 1),), "i,i->": ((0,), (0,)), "ij,ij->ij":
           ((0, 1), (0, 1)), "i,j->ij": ((0,), (1,)), "ij->ji": ((0, 1),),
           "bhqd,bhkd->bhqk": ((3, 4, 0, 1), (3, 4, 2, 1)), "...ij->...ji": ((3, 0, 1),)}


@gen("einsum")
@st.composite
def _einsum(draw, name):
    eq = draw(st.sampled_from(sorted(EINSUMS)))
    sizes = [draw(st.integers(0, 4)) for _ in range(5)]
    dt = draw(st.sampled_from(FLOAT_DTYPES + ("int64",)))
    args = tuple(draw(tensors(shape=tuple(sizes[i] for i in idx), dtypes=(dt,),
                              layouts=LAYOUTS[:5])) for idx in EINSUMS[eq])

    def fn(lib, *ts):
        return lib.einsum(eq, *ts)
    return Case(name, fn, args, f"einsum({eq!r}, ...)")


# ---- indexing ---------------------------------------------------------------------------
@gen("gather", "scatter", "index_select", "index_add")
@st.composite
def _gather(draw, name):
    x = draw(tensors(min_dims=1, dtypes=NUM_DTYPES, layouts=LAYOUTS[:6]))
    nd = len(x.shape)
    dim = draw(st.integers(-nd, nd - 1))
    size = x.shape[dim]
    if name == "index_select":
        idx = draw(index_tensors((draw(st.integers(0, 6)),), max(size, 1)))
        return Case(name, lambda lib, t, i: lib.index_select(t, dim, i), (x, idx),
                    f"index_select(x, {dim}, idx)")
    if name == "index_add":
        n = draw(st.integers(0, size))
        idx = draw(index_tensors((n,), max(size, 1), unique_dim=0))
        src_shape = list(x.shape)
        src_shape[dim] = n
        src = draw(tensors(shape=tuple(src_shape), dtypes=(x.dtype,), layouts=LAYOUTS[:5]))
        alpha = draw(st.sampled_from([1, 2]))
        return Case(name, lambda lib, t, i, s: t.index_add_(dim, i, s, alpha=alpha),
                    (x, idx, src), f"x.index_add_({dim}, idx, src, alpha={alpha})",
                    inplace_arg=0)
    ishape = tuple(draw(st.integers(0, s)) for s in x.shape)
    if name == "gather":
        idx = draw(index_tensors(ishape, max(size, 1)))
        return Case(name, lambda lib, t, i: lib.gather(t, dim, i), (x, idx),
                    f"gather(x, {dim}, idx)")
    # scatter: indices distinct along dim (PyTorch leaves duplicate writes unspecified)
    ishape = list(ishape)
    ishape[dim] = min(ishape[dim], size)
    idx = draw(index_tensors(tuple(ishape), max(size, 1), unique_dim=dim % nd))
    if draw(st.booleans()):
        src = draw(tensors(shape=tuple(ishape), dtypes=(x.dtype,), layouts=LAYOUTS[:5]))
        return Case(name, lambda lib, t, i, s: lib.scatter(t, dim, i, s), (x, idx, src),
                    f"scatter(x, {dim}, idx, src)")
    v = draw(st.sampled_from([0, 1.5, -2]))
    return Case(name, lambda lib, t, i: lib.scatter(t, dim, i, v), (x, idx),
                f"scatter(x, {dim}, idx, value={v})")


@gen("index", "index_put", "masked_fill", "nonzero")
@st.composite
def _index(draw, name):
    x = draw(tensors(min_dims=1, dtypes=NUM_DTYPES + ("bool",), layouts=LAYOUTS[:6]))
    if name == "nonzero":
        return Case(name, lambda lib, t: lib.nonzero(t), (x,), "nonzero(x)")
    if name == "masked_fill":
        m = draw(tensors(shape=broadcastable(draw, x.shape), dtypes=("bool",)))
        v = draw(st.sampled_from([0, -1.5, INF, True]))
        inplace = draw(st.booleans())
        if inplace:
            return Case(name, lambda lib, t, mm: t.masked_fill_(mm, v), (x, m),
                        f"x.masked_fill_(m, {v})", inplace_arg=0)
        return Case(name, lambda lib, t, mm: lib.masked_fill(t, mm, v), (x, m),
                    f"masked_fill(x, m, {v})")
    kind = draw(st.sampled_from(["int", "bool", "slice+int"]))
    size = x.shape[0]
    if kind == "bool":
        idx = draw(tensors(shape=x.shape[:draw(st.integers(1, len(x.shape)))],
                           dtypes=("bool",)))
    else:
        idx = draw(index_tensors(draw(shapes(0, 2, 0, 4)), max(size, 1),
                                 low=-max(size, 1), unique_dim=None))
    if name == "index":
        if kind == "slice+int" and len(x.shape) > 1 and idx.dtype == "int64":
            idx = draw(index_tensors(idx.shape, max(x.shape[1], 1)))
            return Case(name, lambda lib, t, i: t[:, i], (x, idx), "x[:, idx]")
        return Case(name, lambda lib, t, i: t[i], (x, idx), "x[idx]")
    acc = draw(st.booleans())
    if kind != "bool":  # distinct indices unless accumulating (else the result is unspecified)
        idx = TSpec(idx.shape[-1:] if idx.shape else (), "int64", "contiguous", idx.seed, 0.0,
                    0, max(size, 1), 0) if not acc else idx
    vals = draw(tensors(shape=draw(st.sampled_from([(), (1,)])), dtypes=(x.dtype,)))
    return Case(name, lambda lib, t, i, v: t.index_put_((i,), v, accumulate=acc),
                (x, idx, vals), f"x.index_put_((idx,), v, accumulate={acc})", inplace_arg=0)


@gen("flip", "roll", "repeat", "tril", "triu")
@st.composite
def _shape_index(draw, name):
    x = draw(tensors(dtypes=ALL_DTYPES))
    nd = len(x.shape)
    if name == "flip":
        d = tuple(draw(st.lists(st.integers(-max(nd, 1), max(nd, 1) - 1), max_size=nd,
                                unique=True)))
        return Case(name, lambda lib, t: lib.flip(t, d), (x,), f"flip(x, {d})")
    if name == "roll":
        sh = draw(st.integers(-7, 7))
        d = draw(st.sampled_from([None, 0, -1])) if nd else None
        return Case(name, lambda lib, t: lib.roll(t, sh, d), (x,), f"roll(x, {sh}, {d})")
    if name == "repeat":
        reps = tuple(draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd + 2)))
        return Case(name, lambda lib, t: t.repeat(*reps), (x,), f"x.repeat{reps}")
    diag = draw(st.integers(-3, 3))
    return Case(name, lambda lib, t: getattr(lib, name)(t, diag), (x,), f"{name}(x, {diag})")


# ---- copies -----------------------------------------------------------------------------
@gen("copy", "to", "clone", "cat", "stack")
@st.composite
def _copy(draw, name):
    x = draw(tensors(dtypes=ALL_DTYPES))
    if name == "clone":
        return Case(name, lambda lib, t: t.clone(), (x,), "x.clone()")
    if name == "to":
        d = draw(st.sampled_from(ALL_DTYPES))
        return Case(name, lambda lib, t: t.to(getattr(lib, d)), (x,), f"x.to({d})")
    if name == "copy":
        dst = draw(tensors(shape=draw(st.sampled_from([x.shape, x.shape + (2,),
                                                       (3,) + x.shape])),
                           dtypes=ALL_DTYPES, layouts=LAYOUTS[:6]))
        return Case(name, lambda lib, d, s: d.copy_(s), (dst, x), "dst.copy_(x)",
                    inplace_arg=0)
    n = draw(st.integers(1, 3))
    xs = [x] + [draw(tensors(shape=x.shape if draw(st.integers(0, 5)) else
                             draw(shapes()), dtypes=(x.dtype,) if draw(st.integers(0, 3))
                             else ALL_DTYPES)) for _ in range(n - 1)]
    nd = len(x.shape) + (1 if name == "stack" else 0)
    dim = draw(st.integers(-max(nd, 1), max(nd, 1) - 1))
    return Case(name, lambda lib, *ts: getattr(lib, name)(list(ts), dim), tuple(xs),
                f"{name}([...{n}], {dim})")


@gen("fill", "arange", "linspace", "eye")
@st.composite
def _creation(draw, name):
    dt = draw(st.sampled_from((None,) + NUM_DTYPES))
    kw = lambda lib: {"dtype": getattr(lib, dt)} if dt else {}  # noqa: E731
    if name == "fill":
        s = draw(shapes())
        v = draw(st.sampled_from([0, 1, -2.5, INF, NAN, True, 300]))
        return Case(name, lambda lib: lib.full(s, v, **kw(lib)), (), f"full({s}, {v}, {dt})")
    if name == "arange":
        a = draw(st.sampled_from([0, 1, -3, 0.5, 2.25]))
        b = draw(st.sampled_from([5, 10, -1, 7.5, 0]))
        step = draw(st.sampled_from([1, 2, -1, 0.5, 0.3, 3]))
        return Case(name, lambda lib: lib.arange(a, b, step, **kw(lib)), (),
                    f"arange({a}, {b}, {step}, {dt})")
    if name == "linspace":
        a, b = draw(st.sampled_from([0, -1, 2.5])), draw(st.sampled_from([1, 10, -4]))
        n = draw(st.integers(0, 9))
        return Case(name, lambda lib: lib.linspace(a, b, n, **kw(lib)), (),
                    f"linspace({a}, {b}, {n}, {dt})")
    n, m = draw(st.integers(0, 5)), draw(st.sampled_from([None, 0, 2, 6]))
    if m is None:
        return Case(name, lambda lib: lib.eye(n, **kw(lib)), (), f"eye({n}, {dt})")
    return Case(name, lambda lib: lib.eye(n, m, **kw(lib)), (), f"eye({n}, {m}, {dt})")


@gen("uniform", "normal", "randint", "randperm")
@st.composite
def _random(draw, name):
    s = draw(shapes(0, 3))
    if name == "randperm":
        n = draw(st.integers(0, 50))
        return Case(name, lambda lib: lib.randperm(n), (), f"randperm({n})", compare="perm")
    if name == "randint":
        lo, hi = draw(st.sampled_from([(0, 1), (0, 10), (-5, 5), (3, 3)]))
        return Case(name, lambda lib: lib.randint(lo, hi, s), (), f"randint({lo},{hi},{s})",
                    compare="range", kw={"range": (lo, hi)})
    dt = draw(st.sampled_from(FLOAT_DTYPES))
    x = draw(tensors(shape=s, dtypes=(dt,), layouts=("contiguous", "transposed")))
    if name == "uniform":
        lo, hi = draw(st.sampled_from([(0, 1), (-2, 2), (5, 5.5)]))
        return Case(name, lambda lib, t: t.uniform_(lo, hi), (x,), f"x.uniform_({lo},{hi})",
                    compare="range", kw={"range": (lo, hi)})
    return Case(name, lambda lib, t: t.normal_(0, 2), (x,), "x.normal_(0, 2)",
                compare="finite")


# ---- nn ops -------------------------------------------------------------------------------
def F(lib):
    return lib.nn.functional


@gen("convolution")
@st.composite
def _conv(draw, name):
    d = draw(st.sampled_from([1, 2]))
    g = draw(st.sampled_from([1, 1, 2]))
    cin, cout = g * draw(st.integers(1, 2)), g * draw(st.integers(1, 2))
    ks = tuple(draw(st.integers(1, 3)) for _ in range(d))
    sp = tuple(draw(st.integers(0, 6)) for _ in range(d))
    n = draw(st.integers(0, 2))
    dt = draw(st.sampled_from(FLOAT_DTYPES))
    x = draw(tensors(shape=(n, cin) + sp, dtypes=(dt,), layouts=LAYOUTS[:5]))
    w = draw(tensors(shape=(cout, cin // g) + ks, dtypes=(dt,), layouts=LAYOUTS[:3]))
    b = draw(tensors(shape=(cout,), dtypes=(dt,)))
    stride, dil = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad = draw(st.sampled_from([0, 1, "same", "valid"]))
    if pad == "same":
        stride = 1

    def fn(lib, xx, ww, bb):
        return getattr(F(lib), f"conv{d}d")(xx, ww, bb, stride=stride, padding=pad,
                                             dilation=dil, groups=g)
    return Case(name, fn, (x, w, b), f"conv{d}d(stride={stride}, padding={pad!r}, "
                f"dilation={dil}, groups={g})")


@gen("avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "max_pool")
@st.composite
def _pool(draw, name):
    d = draw(st.sampled_from([1, 2]))
    sp = tuple(draw(st.integers(1, 7)) for _ in range(d))
    lead = draw(st.sampled_from([(2, 3), (1,), (0, 2)]))
    dt = draw(st.sampled_from(FLOAT_DTYPES))
    x = draw(tensors(shape=lead + sp, dtypes=(dt,), layouts=LAYOUTS[:5]))
    if name.startswith("adaptive"):
        out = tuple(draw(st.integers(1, 5)) for _ in range(d))
        fname = f"{name}{d}d"
        return Case(name, lambda lib, t: getattr(F(lib), fname)(t, out), (x,),
                    f"{fname}(x, {out})", compare="values" if "max" in name else "exact")
    k = draw(st.integers(1, 3))
    stride = draw(st.sampled_from([None, 1, 2]))
    pad = draw(st.integers(0, (k // 2)))
    ceil = draw(st.booleans())
    if name == "max_pool":
        dil = draw(st.integers(1, 2))
        fname = f"max_pool{d}d"

        def fn(lib, t):
            return getattr(F(lib), fname)(t, k, stride, pad, dil, ceil_mode=ceil)
        return Case(name, fn, (x,), f"{fname}(x, {k}, {stride}, {pad}, {dil}, ceil={ceil})")
    cip = draw(st.booleans())
    div = draw(st.sampled_from([None, None, 2])) if d == 2 else None
    fname = f"avg_pool{d}d"
    extra = {"divisor_override": div} if d == 2 else {}

    def fn(lib, t):
        return getattr(F(lib), fname)(t, k, stride, pad, ceil_mode=ceil,
                                      count_include_pad=cip, **extra)
    return Case(name, fn, (x,), f"{fname}(x, {k}, {stride}, {pad}, ceil={ceil}, "
                f"count_include_pad={cip}, {extra})")


@gen("im2col", "col2im")
@st.composite
def _unfold(draw, name):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dil, pad, stride = draw(st.integers(1, 2)), draw(st.integers(0, 1)), draw(st.integers(1, 2))
    dt = draw(st.sampled_from(FLOAT_DTYPES))
    c = draw(st.integers(1, 3))
    if name == "im2col":
        x = draw(tensors(shape=(draw(st.integers(0, 2)), c, draw(st.integers(1, 6)),
                                draw(st.integers(1, 6))), dtypes=(dt,), layouts=LAYOUTS[:5]))
        return Case(name, lambda lib, t: F(lib).unfold(t, k, dil, pad, stride), (x,),
                    f"unfold(x, {k}, {dil}, {pad}, {stride})")
    out = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    nb = [(out[i] + 2 * pad - dil * (k[i] - 1) - 1) // stride + 1 for i in range(2)]
    L = max(nb[0], 0) * max(nb[1], 0) + (1 if draw(st.integers(0, 9)) == 0 else 0)
    x = draw(tensors(shape=(draw(st.integers(1, 2)), c * k[0] * k[1], L), dtypes=(dt,),
                     layouts=LAYOUTS[:5]))
    return Case(name, lambda lib, t: F(lib).fold(t, out, k, dil, pad, stride), (x,),
                f"fold(x, {out}, {k}, {dil}, {pad}, {stride})")


@gen("batch_norm", "layer_norm", "group_norm")
@st.composite
def _norm(draw, name):
    dt = draw(st.sampled_from(("float32", "float64")))
    n, c = draw(st.integers(1, 4)), 2 * draw(st.integers(1, 2))
    sp = draw(shapes(0, 2, 1, 4))
    x = draw(tensors(shape=(n, c) + sp, dtypes=(dt,), layouts=LAYOUTS[:5]))
    affine = draw(st.booleans())
    if name == "batch_norm":
        training = draw(st.booleans())
        rm = TSpec((c,), dt, seed=1)
        rv = TSpec((c,), dt, seed=2, low=None)
        w, b = TSpec((c,), dt, seed=3), TSpec((c,), dt, seed=4)

        def fn(lib, t, m, v, ww, bb):
            v = v.abs() + 0.5
            return F(lib).batch_norm(t, m, v, ww if affine else None, bb if affine else None,
                                     training=training, momentum=0.1, eps=1e-5)
        return Case(name, fn, (x, rm, rv, w, b), f"batch_norm(training={training}, "
                    f"affine={affine})")
    if name == "layer_norm":
        k = draw(st.integers(1, len(x.shape) - 1))
        ns = x.shape[-k:]
        w, b = TSpec(ns, dt, seed=3), TSpec(ns, dt, seed=4)

        def fn(lib, t, ww, bb):
            return F(lib).layer_norm(t, ns, ww if affine else None, bb if affine else None)
        return Case(name, fn, (x, w, b), f"layer_norm(x, {ns}, affine={affine})")
    g = draw(st.sampled_from([1, 2, 3]))
    w, b = TSpec((c,), dt, seed=3), TSpec((c,), dt, seed=4)

    def fn(lib, t, ww, bb):
        return F(lib).group_norm(t, g, ww if affine else None, bb if affine else None)
    return Case(name, fn, (x, w, b), f"group_norm(x, {g}, affine={affine})")


@gen("nll_loss", "cross_entropy")
@st.composite
def _loss(draw, name):
    dt = draw(st.sampled_from(("float32", "float64")))
    n, c = draw(st.integers(0, 5)), draw(st.integers(1, 5))
    sp = draw(shapes(0, 1, 1, 3))
    x = draw(tensors(shape=(n, c) + sp, dtypes=(dt,), layouts=LAYOUTS[:5]))
    ign = draw(st.sampled_from([-100, 0, 1]))
    tgt = draw(index_tensors((n,) + sp, c, low=0))
    if draw(st.integers(0, 5)) == 0:
        tgt = TSpec((n,) + sp, "int64", seed=tgt.seed, low=ign, high=ign + 1)
    red = draw(st.sampled_from(["mean", "sum", "none"]))
    weighted = draw(st.booleans())
    w = TSpec((c,), dt, seed=7, low=None)
    if name == "nll_loss":
        def fn(lib, t, y, ww):
            return F(lib).nll_loss(t, y, ww.abs() if weighted else None, ignore_index=ign,
                                   reduction=red)
        return Case(name, fn, (x, tgt, w), f"nll_loss(reduction={red}, ignore_index={ign}, "
                    f"weighted={weighted})")
    ls = draw(st.sampled_from([0.0, 0.0, 0.1]))
    if draw(st.integers(0, 3)) == 0:  # class probabilities as the target
        tgt = draw(tensors(shape=x.shape, dtypes=(dt,), specials=False))

        def fn(lib, t, y, ww):
            return F(lib).cross_entropy(t, y.softmax(1), ww.abs() if weighted else None,
                                        reduction=red, label_smoothing=ls)
        return Case(name, fn, (x, tgt, w), f"cross_entropy(probs, reduction={red}, "
                    f"label_smoothing={ls}, weighted={weighted})")

    def fn(lib, t, y, ww):
        return F(lib).cross_entropy(t, y, ww.abs() if weighted else None, ignore_index=ign,
                                    reduction=red, label_smoothing=ls)
    return Case(name, fn, (x, tgt, w), f"cross_entropy(reduction={red}, ignore_index={ign}, "
                f"label_smoothing={ls}, weighted={weighted})")


@gen("embedding")
@st.composite
def _embedding(draw, name):
    num, dim = draw(st.integers(1, 6)), draw(st.integers(0, 4))
    w = draw(tensors(shape=(num, dim), dtypes=FLOAT_DTYPES, layouts=LAYOUTS[:5]))
    idx = draw(index_tensors(draw(shapes(0, 2, 0, 4)), num))
    pad = draw(st.sampled_from([None, 0, -1]))
    return Case(name, lambda lib, ww, i: F(lib).embedding(i, ww, padding_idx=pad), (w, idx),
                f"embedding(idx, w, padding_idx={pad})")


@gen("scaled_dot_product_attention")
@st.composite
def _sdpa(draw, name):
    dt = draw(st.sampled_from(("float32", "float64")))
    b, h, lq, lk, e = (draw(st.integers(1, 3)), draw(st.integers(1, 2)),
                       draw(st.integers(1, 5)), draw(st.integers(1, 5)),
                       draw(st.integers(1, 4)))
    q = draw(tensors(shape=(b, h, lq, e), dtypes=(dt,), layouts=LAYOUTS[:5], specials=False))
    k = draw(tensors(shape=(b, h, lk, e), dtypes=(dt,), layouts=LAYOUTS[:5], specials=False))
    v = draw(tensors(shape=(b, h, lk, e), dtypes=(dt,), layouts=LAYOUTS[:5], specials=False))
    causal = draw(st.booleans())
    mask = draw(st.sampled_from([None, "bool", "float"])) if not causal else None
    scale = draw(st.sampled_from([None, 0.5]))
    args = (q, k, v) + ((draw(tensors(shape=(lq, lk), dtypes=(
        "bool" if mask == "bool" else dt,), specials=False)),) if mask else ())

    def fn(lib, qq, kk, vv, *m):
        return F(lib).scaled_dot_product_attention(qq, kk, vv, m[0] if m else None,
                                                   is_causal=causal, scale=scale)
    return Case(name, fn, args, f"sdpa(causal={causal}, mask={mask}, scale={scale})")


def strategy(name):
    g = GEN[name]
    return g if OPS[name].kind == "elementwise" else g(name)


# ---------------------------------------------------------------------------------------
# running and comparing
# ---------------------------------------------------------------------------------------
class Mismatch(AssertionError):
    pass


def _squares_overflow(case, detail):
    """A float32 input holding a finite value whose square overflows float32."""
    x = case.args[0]
    if not isinstance(x, TSpec) or x.dtype != "float32" or "values differ" not in detail:
        return False
    v = np.abs(build(torch, x).double().numpy())
    return bool((np.isfinite(v) & (v > 1.8e19)).any())


def _float_to_int_out_of_range(case, detail):
    """A float source converted to an integer dtype holding NaN, inf or values the integer
    type cannot hold (C++ and PyTorch leave the result undefined; x86 gives INT_MIN)."""
    if "values differ" not in detail:
        return False
    src = case.args[-1] if case.op == "copy" else case.args[0]
    if not isinstance(src, TSpec) or src.dtype not in FLOAT_DTYPES:
        return False
    v = build(torch, src).double().numpy()
    return bool((~np.isfinite(v) | (np.abs(v) >= 2.0 ** 31)).any() or (v < 0).any())


def _float32_math_into_float64_out(case, detail):
    """A float math op on lower-precision inputs written to a float64 ``out=``: both
    libraries compute in the inputs' dtype and cast, so their math libraries' last-ulp
    differences in that dtype show at float64 tolerance."""
    if not case.text.startswith("out ") or "(float64): values differ" not in detail:
        return False
    ins = [a for a in case.args[:-1] if isinstance(a, TSpec)]
    return bool(ins) and all(a.dtype != "float64" for a in ins) and \
        case.args[-1].dtype == "float64"


#: differences that are known and explained: (op, predicate(case, detail), reason).
#: Each entry states why ember differs; an entry is removed when the difference is fixed.
ALLOWED: list = [
    (op, _squares_overflow,
     f"{op} of a float32 group holding |x| > 1.8e19: PyTorch's fused CPU moments overflow "
     "x*x to NaN and return NaN for the group; ember's variance runs in double (inf), so "
     "the group normalises to +-0")
    for op in ("layer_norm", "group_norm", "batch_norm")] + [
    ("index", lambda case, detail: detail.startswith("ember raises IndexError") and
     0 in case.args[0].shape,
     "advanced indexing whose result has no elements: PyTorch skips the bounds check of the "
     "index (nothing is read); ember checks it"),
    ("masked_fill", lambda case, detail: "more than one element of the written-to" in detail
     and case.args[0].layout == "expanded",
     "masked_fill_ into an expanded (stride 0) tensor: PyTorch only warns that this is "
     "deprecated and writes; ember refuses every write through internal overlap "
     "(tests/backend/test_overlap.py)")] + [
    (op, _float_to_int_out_of_range,
     "float -> integer conversion of NaN, inf, negative (into uint8) or out-of-range values: "
     "undefined in C++ and in PyTorch (whose x86 build gives INT_MIN); ember's kernels "
     "differ there") for op in ("to", "copy")] + [
    (o.name, _float32_math_into_float64_out,
     "float math on float32/half inputs written to a float64 out=: computed in the input "
     "dtype as PyTorch does, where ember's and PyTorch's (SLEEF) math libraries may differ "
     "by one ulp of that dtype") for o in OPS.values() if o.kind == "elementwise"] + [
    ("logsumexp", lambda case, detail: "dim=()" in case.text and
     detail.startswith("PyTorch raises RuntimeError"),
     "logsumexp(x, dim=()) on a tensor with dims: PyTorch reduces everything and then fails "
     "to write the 0-d result into its [1, ...] buffer (an internal shape error); ember "
     "reduces over all dims, as sum(x, dim=()) does in both")]


def _np(t):
    """A result as float64/int64/bool NumPy (bfloat16 via float32)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16 or t.dtype == torch.float16:
            t = t.float()
        return t.numpy()
    if t.dtype in (ember.bfloat16, ember.float16):
        t = t.to(ember.float32)
    return t.cpu().numpy()


def _dtname(t):
    return str(t.dtype).replace("torch.", "").replace("ember.", "")


def _flatten(r):
    if isinstance(r, (tuple, list)):
        return [y for x in r for y in _flatten(x)]
    return [r]


def _scale(case, inputs):
    """Sum of |finite input| (the size of what an accumulating op may add up)."""
    total = 1.0
    for a in inputs:
        for t in (a if isinstance(a, list) else [a]):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel():
                v = t.detach().double().abs()
                v = v[torch.isfinite(v)]
                total += float(v.sum()) if v.numel() else 0.0
    return total


def compare(case, got, want, tinputs, einputs):
    kind = OPS[case.op].kind
    if case.compare == "perm":
        g = np.sort(_np(got))
        if not np.array_equal(g, np.arange(len(g))) or tuple(got.shape) != tuple(want.shape):
            raise Mismatch(f"randperm: not a permutation of {len(g)}: {g}")
        return
    if case.compare in ("range", "finite"):
        if tuple(got.shape) != tuple(want.shape) or _dtname(got) != _dtname(want):
            raise Mismatch(f"shape/dtype {tuple(got.shape)} {_dtname(got)} vs "
                           f"{tuple(want.shape)} {_dtname(want)}")
        g = _np(got).astype(np.float64)
        if case.compare == "finite":
            if not np.isfinite(g).all():
                raise Mismatch("normal_: non-finite sample")
            return
        lo, hi = case.kw["range"]
        # (a half-type sample may round up to ``hi``, in PyTorch too)
        if not g.size:
            return
        top = g.max() > hi if _dtname(got) in ("float16", "bfloat16") else g.max() >= hi
        if g.min() < lo or (top and hi > lo) or hi == lo:
            if not (hi == lo and isinstance(want, torch.Tensor) and want.numel() == 0):
                raise Mismatch(f"sample outside [{lo}, {hi}): {g.min()} .. {g.max()}")
        return
    gs, ws = _flatten(got), _flatten(want)
    if len(gs) != len(ws):
        raise Mismatch(f"{len(gs)} results vs PyTorch's {len(ws)}")
    for i, (g, w) in enumerate(zip(gs, ws)):
        if not isinstance(w, torch.Tensor):
            if isinstance(g, (int, float, bool)) and (g == w or (g != g and w != w)):
                continue
            raise Mismatch(f"result {i}: {g!r} vs PyTorch {w!r}")
        if not isinstance(g, ember.Tensor):
            raise Mismatch(f"result {i}: {type(g).__name__} vs a tensor")
        if tuple(g.shape) != tuple(w.shape):
            raise Mismatch(f"result {i}: shape {tuple(g.shape)} vs PyTorch {tuple(w.shape)}")
        if _dtname(g) != _dtname(w):
            raise Mismatch(f"result {i}: dtype {_dtname(g)} vs PyTorch {_dtname(w)}")
        if (case.compare in ("values", "argindex")) and w.dtype == torch.int64 and (
                i == 1 or case.compare == "argindex"):
            _check_indices(case, g, w, tinputs)
            continue
        a, b = _np(g), _np(w)
        if b.dtype.kind == "f":
            rtol = RTOL[_dtname(w)]
            atol = rtol * (_scale(case, tinputs) if kind in ACCUMULATING else 1.0)
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            same_special = (np.isnan(a64) == np.isnan(b64)).all() and (
                a64[np.isinf(b64)] == b64[np.isinf(b64)]).all() and (
                np.isinf(a64) == np.isinf(b64)).all()
            close = np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
            if not same_special or not close.all():
                bad = np.argwhere(~close | (np.isnan(a64) != np.isnan(b64)))[:3]
                raise Mismatch(f"result {i} ({_dtname(w)}): values differ at "
                               f"{bad.tolist()}: ember {a64[tuple(bad.T)] if bad.size else a64}"
                               f" vs PyTorch {b64[tuple(bad.T)] if bad.size else b64}")
        elif not np.array_equal(a, b):
            bad = np.argwhere(a != b)[:3] if a.shape == b.shape and a.ndim else []
            raise Mismatch(f"result {i} ({_dtname(w)}): values differ at "
                           f"{np.asarray(bad).tolist()}: {a.ravel()[:8]} vs {b.ravel()[:8]}")


def _check_indices(case, g, w, tinputs):
    """Index results where ties make more than one answer right: the indexed values must
    equal PyTorch's (NaN matching NaN)."""
    x = tinputs[0].detach()
    gi = torch.from_numpy(_np(g).astype(np.int64))
    dim = case.kw.get("dim")
    if dim is None:
        flat = x.reshape(-1)
        if gi.numel() and (gi.min() < 0 or gi.max() >= max(flat.numel(), 1)):
            raise Mismatch(f"index out of range: {gi}")
        a, b = flat[gi.reshape(-1)], flat[w.reshape(-1)]
    else:
        gg, ww = gi, w
        if not case.kw.get("keepdim") and x.dim():
            gg, ww = gi.unsqueeze(dim), w.unsqueeze(dim)
        if x.dim() == 0:
            if gi.numel() and gi.item() != 0:
                raise Mismatch(f"index {gi.item()} into a 0-d tensor")
            return
        if gi.numel() and (gi.min() < 0 or gi.max() >= x.shape[dim]):
            raise Mismatch(f"index out of range: {gi}")
        a, b = x.gather(dim, gg), x.gather(dim, ww)
    a, b = a.double(), b.double()
    if not ((a == b) | (a.isnan() & b.isnan())).all():
        raise Mismatch(f"indices pick different values: ember {gi.tolist()} vs {w.tolist()}")


def run_case(case: Case, device: str):
    """Run one case in both libraries; returns "ok", "both-raise", "not-implemented";
    raises Mismatch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tin = _inputs(case, torch, None)
        try:
            want = case.fn(torch, *tin)
            terr = None
        except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError,
                AttributeError) as e:
            want, terr = None, e
        ein = _inputs(case, ember, device)
        try:
            got = case.fn(ember, *ein)
            if device != "cpu":  # an asynchronous device's kernel errors belong to this case
                getattr(ember, device.split(":")[0]).synchronize()
            eerr = None
        except NotImplementedError as e:
            if terr is not None:
                return "both-raise"
            return f"not-implemented: {str(e)[:120]}"
        except Exception as e:  # noqa: BLE001 - every exception ember raises is compared
            got, eerr = None, e
    if terr is not None and eerr is not None:
        return "both-raise"
    if terr is not None:
        raise Mismatch(f"PyTorch raises {type(terr).__name__}: {str(terr)[:200]}; "
                       "ember returns a result")
    if eerr is not None:
        raise Mismatch(f"ember raises {type(eerr).__name__}: {str(eerr)[:300]}; PyTorch "
                       "returns a result")
    compare(case, got, want, tin, ein)
    if case.inplace_arg is not None:  # the written tensor itself, too
        compare(case, ein[case.inplace_arg], tin[case.inplace_arg], tin, ein)
    return "ok"


def _allowed(case, detail):
    for op, pred, reason in ALLOWED:
        if op == case.op and pred(case, detail):
            return reason
    return None


# ---------------------------------------------------------------------------------------
# the worker program
# ---------------------------------------------------------------------------------------
def fuzz_op(name, device, examples, seed, log, case_timeout, shrink, collect=False):
    """Run ``examples`` hypothesis cases of op ``name``; log one op record. ``collect``:
    go on after a mismatch (each one logged as a "finding") instead of stopping."""
    stats = {"cases": 0, "both-raise": 0, "not-implemented": [], "allowed": {}, "found": 0}
    failure = {}

    def write(rec):
        log.write(json.dumps(rec) + "\n")
        log.flush()

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck),
              phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
              report_multiple_bugs=False)
    @hyp_seed(seed)
    @given(case=strategy(name))
    def check(case):
        stats["cases"] += 1
        write({"event": "case", "op": name, "device": device, "case": repr(case)})
        faulthandler.dump_traceback_later(case_timeout, exit=True)
        try:
            res = run_case(case, device)
        except Mismatch as e:
            reason = _allowed(case, str(e))
            if reason is None:
                failure.update(case=repr(case), detail=str(e))
                if collect:
                    stats["found"] += 1
                    write({"event": "finding", "op": name, "device": device,
                           "case": repr(case), "detail": str(e)})
                    return
                raise
            stats["allowed"][reason] = stats["allowed"].get(reason, 0) + 1
            return
        except Exception as e:  # noqa: BLE001 - a harness error is a finding too
            failure.update(case=repr(case), detail="harness: " + "".join(
                traceback.format_exception_only(type(e), e)).strip())
            raise
        finally:
            faulthandler.cancel_dump_traceback_later()
        if res == "both-raise":
            stats["both-raise"] += 1
        elif res.startswith("not-implemented"):
            stats["not-implemented"].append(res)

    status = "ok"
    try:
        check()
    except Exception:  # noqa: BLE001 - the failure is logged, the next op runs
        status = "mismatch"
    nie = sorted(set(stats["not-implemented"]))
    if stats["found"]:
        status = "mismatch"
    if status == "ok" and nie:
        status = "unsupported"
    write({"event": "op", "op": name, "device": device, "status": status,
           "cases": stats["cases"], "both_raise": stats["both-raise"],
           "not_implemented": nie[:5], "allowed": stats["allowed"], **failure})


def drive(device, examples, seed, log_path, ops=(), case_timeout=20.0, shrink=False,
          total_timeout=3600.0, collect=False):
    """Run the worker program for ``device`` in child processes until every op has run:
    after a crash or a hang the child's last logged case is recorded as that op's result
    and a new child goes on with the next op. Returns the op records."""
    names = list(ops) or sorted(GEN)
    done, records = set(), []
    deadline = time.monotonic() + total_timeout
    while len(done) < len(names):
        rest = [n for n in names if n not in done]
        start = sum(1 for _ in open(log_path)) if os.path.exists(log_path) else 0
        cmd = [sys.executable, os.path.abspath(__file__), "--device", device,
               "--examples", str(examples), "--seed", str(seed), "--log", log_path,
               "--ops", ",".join(rest), "--case-timeout", str(case_timeout)]
        if shrink:
            cmd.append("--shrink")
        if collect:
            cmd.append("--collect")
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=max(deadline - time.monotonic(), 1))
        lines = [json.loads(x) for x in open(log_path).read().splitlines()[start:]]
        last_case = None
        for rec in lines:
            if rec["event"] == "case":
                last_case = rec
            elif rec["event"] == "op":
                records.append(rec)
                done.add(rec["op"])
                last_case = None
        if proc.returncode != 0:
            if last_case is None:
                raise RuntimeError(f"fuzz worker failed outside a case (exit "
                                   f"{proc.returncode}):\n{proc.stderr[-3000:]}")
            hang = "Timeout" in proc.stderr
            rec = {"event": "op", "op": last_case["op"], "device": device,
                   "status": "hang" if hang else "crash", "case": last_case["case"],
                   "detail": f"exit {proc.returncode}: {proc.stderr[-2000:]}"}
            with open(log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
            records.append(rec)
            done.add(last_case["op"])
    return records


def summary(records):
    """(text, number of crashes + hangs + mismatches)."""
    lines, bad = [], 0
    cases = sum(r.get("cases", 0) for r in records)
    for r in records:
        if r["status"] in ("crash", "hang", "mismatch"):
            bad += 1
            lines.append(f"{r['status'].upper()} {r['device']} {r['op']}: {r.get('detail')}\n"
                         f"    case: {r.get('case')}")
    nie = {r["op"]: r["not_implemented"] for r in records if r.get("not_implemented")}
    allowed = {}
    for r in records:
        for k, v in r.get("allowed", {}).items():
            allowed[k] = allowed.get(k, 0) + v
    head = (f"{cases} cases over {len(records)} op runs: {bad} failing; "
            f"{sum(r.get('both_raise', 0) for r in records)} cases where both raise; "
            f"NotImplementedError in {len(nie)} ops {sorted(nie)}; allowed differences "
            f"{allowed or 'none'}")
    return "\n".join([head] + lines), bad


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--examples", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    p.add_argument("--skip", default="", help="comma-separated ops not to run")
    p.add_argument("--log", required=True)
    p.add_argument("--case-timeout", type=float, default=20.0)
    p.add_argument("--shrink", action="store_true")
    p.add_argument("--collect", action="store_true", help="log every mismatch, go on")
    p.add_argument("--drive", action="store_true",
                   help="run workers in child processes (crash/hang isolation), summarise")
    a = p.parse_args(argv)
    if a.drive:
        if os.path.exists(a.log):
            os.remove(a.log)
        ops = [n for n in a.ops.split(",") if n]
        print(f"ember op fuzz: device={a.device} seed={a.seed} examples/op={a.examples}",
              flush=True)
        text, bad = summary(drive(a.device, a.examples, a.seed, a.log, ops, a.case_timeout,
                                  a.shrink, collect=a.collect))
        print(text)
        return 1 if bad else 0
    torch.set_num_threads(1)
    names = [n for n in (a.ops.split(",") if a.ops else sorted(GEN)) if n]
    skip = set(a.skip.split(",")) - {""}
    with open(a.log, "a") as log:
        for i, n in enumerate(names):
            if n in skip:
                continue
            fuzz_op(n, a.device, a.examples, a.seed + i, log, a.case_timeout, a.shrink,
                    a.collect)
    return 0


if __name__ == "__main__":
    sys.exit(main())
