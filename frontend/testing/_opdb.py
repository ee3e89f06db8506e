"""The op database: for every op in ``ember.dispatcher.schema.OPS``, how a user calls it and
sample calls to try.

Each :class:`OpInfo` names a schema op, the public call that reaches it (``ember.add``,
``Tensor.sum``, ``ember.nn.functional.unfold`` for ``im2col``, ...), and samples. The kit
runs every sample in every applicable layout and dtype on the device under test and on
the CPU (the reference), forward, backward (differentiable ops), in place and with
``out=`` where the op has those forms. Which dtypes an op supports is decided by the
reference: a dtype whose contiguous samples run on the CPU is tested everywhere.

A new schema op without an entry here makes ``test_every_schema_op_has_an_entry`` fail.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

import ember
import ember.nn.functional as F
from ember.dispatcher import OPS
from ember.dispatcher.defs import conv as CV
from ember.dispatcher.defs import nn as NN
from ember.dispatcher.defs import optim as _OPT
from ember.dispatcher.defs import rnn as RNN
from ember.dispatcher.schema import elementwise_ops

from ._compare import assert_close, to_numpy
from ._samples import DEVICE, DTYPE, GEN, Fixed, Idx, Mask, Sample as S, T

__all__ = ["OpInfo", "OP_DB", "op_db"]

F32, F64 = ember.float32, ember.float64


@dataclass
class OpInfo:
    """How to test one schema op.

    - ``fn``: the public callable; ``fn(*args, **kwargs)`` for each sample (a sample may
      bring its own ``fn``).
    - ``inplace``: the in-place form, called with the same arguments (self first).
    - ``out``: ``fn`` accepts ``out=``.
    - ``zero_d``/``empty``: derive 0-d / empty-size samples from the samples (True), use
      these samples (a list), or skip (False).
    - ``special``: also try nan, ±inf, ±0 (floating dtypes).
    - ``dtypes``: try only these (default: every dtype of ``_samples.ALL_DTYPES``).
    - ``scale``: multiplies the dtype's tolerance (long composites round more).
    - ``check``: ``check(actual, expected, sample, built)`` replaces the plain comparison
      where a result is not unique (sort indices among equal values).
    - ``skip_layouts``: layouts that do not apply to this op.
    - ``grad``: run gradient cases (default: the schema's ``differentiable``).
    """
    name: str
    fn: object
    samples: list
    inplace: object = None
    out: bool = False
    zero_d: object = True
    empty: object = True
    special: bool = False
    dtypes: tuple | None = None
    scale: float = 1.0
    check: object = None
    skip_layouts: tuple = ()
    grad: bool = field(default=None)

    def __post_init__(self):
        if self.grad is None:
            self.grad = OPS[self.name].differentiable if self.name in OPS else False


OP_DB: dict[str, OpInfo] = {}


def _add(info: OpInfo) -> None:
    if info.name in OP_DB:
        raise ValueError(f"op {info.name!r} listed twice in the op database")
    OP_DB[info.name] = info


def op_db() -> dict[str, OpInfo]:
    return OP_DB


def _method(name):
    """``lambda self, *a, **k: self.<name>(*a, **k)``, named for error messages."""
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = f"Tensor.{name}"
    return call


# ---- sort-like checks: values exact, indices consistent -----------------------------
def _check_sorted(actual, expected, sample, built, *, permutation=True):
    values, indices = actual[0], actual[1]
    assert_close(values, expected[0], what="values")
    if sample.kwargs.get("stable"):
        assert_close(indices, expected[1], what="indices")
        return
    dim = sample.kwargs.get("dim", -1)
    x = to_numpy(built.tensors[0].logical)
    idx = to_numpy(indices)
    assert idx.dtype == np.int64, f"indices: dtype {idx.dtype}, expected int64"
    if x.ndim:
        picked = np.take_along_axis(x, idx, axis=dim)
        got = to_numpy(values)
        same = (picked == got) | (np.isnan(picked) & np.isnan(got))
        assert same.all(), "indices: the values at the returned indices are not the values"
        srt = np.sort(idx, axis=dim)
        assert (np.diff(srt, axis=dim) > 0).all(), "indices: an index appears twice"
        if permutation:
            n = x.shape[dim]
            assert srt.size == 0 or (srt.min() >= 0 and srt.max() < n), "indices out of range"


def _check_topk(actual, expected, sample, built):
    _check_sorted(actual, expected, sample, built, permutation=False)


# ---- copy, creation, random -----------------------------------------------------------
_CAST_TARGETS = (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
                 ember.float16, ember.bfloat16, ember.float32, ember.float64)


def _casts(x, y):
    """``x.clone()``, ``x.contiguous()`` and ``x`` cast to every dtype (floats to uint8 only
    when non-negative: C leaves negative floats to unsigned undefined)."""
    out = [x.clone(), x.contiguous()]
    for d in _CAST_TARGETS:
        src = x.abs() if d is ember.uint8 and x.dtype.is_floating_point else x
        out.append(src.to(d))
    return out


_add(OpInfo("copy", _casts, [S(T(3, 4, low=-5, high=5), T(3, 4)),
                             S(T(2, 3, 4, low=-100, high=100), T(2, 3, 4))],
            inplace=lambda x, y: x.copy_(y)))
_add(OpInfo("to", lambda x, **k: x.to(**k), [S(T(3, 4), dtype=F64), S(T(3, 4), dtype=F32),
                                              S(T(2, 3), fn=lambda x: x.double())]))
_add(OpInfo("clone", lambda x: x.clone(), [S(T(3, 4)), S(T(2, 3, 4))]))
_add(OpInfo("fill", lambda x: ember.full_like(x, 3), [S(T(3, 4))],
            inplace=lambda x: x.fill_(2.5 if x.dtype.is_floating_point else 2),
            zero_d=True, empty=True))
_add(OpInfo("arange", None, [
    S(fn=lambda **k: ember.arange(0, 11, 3, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.arange(7, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.arange(-2.5, 3, 0.5, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.arange(5, -3, -2, **k), dtype=DTYPE, device=DEVICE),
], zero_d=False, empty=[S(fn=lambda **k: ember.arange(0, **k), dtype=DTYPE, device=DEVICE)]))


def _uniform_(x, generator):
    return x.uniform_(-2, 3, generator=generator)


def _normal_(x, generator):
    return x.normal_(1.0, 2.0, generator=generator)


# the op-level call is the in-place form on a tensor; ``rand``/``randn`` are samples
_add(OpInfo("uniform", _uniform_, [
    S(T(3, 4), generator=GEN(5), mutates=True),
    S(fn=lambda **k: ember.rand(4, 5, **k), dtype=DTYPE, device=DEVICE, generator=GEN(7)),
    S(fn=lambda **k: ember.rand(3, **k), dtype=DTYPE, device=DEVICE,
      generator=GEN(2 ** 63 + 5)),
    S(fn=lambda **k: (ember.rand(3, **k), ember.rand(2, 2, **k)), dtype=DTYPE, device=DEVICE,
      generator=GEN(8)),        # the second draw continues the stream at a new offset
], inplace=_uniform_,
    zero_d=[S(fn=lambda **k: ember.rand((), **k), dtype=DTYPE, device=DEVICE,
              generator=GEN(3))],
    empty=[S(fn=lambda **k: ember.rand(0, 3, **k), dtype=DTYPE, device=DEVICE,
             generator=GEN(3))]))
_add(OpInfo("normal", _normal_, [
    S(T(3, 4), generator=GEN(5), mutates=True),
    S(fn=lambda **k: ember.randn(4, 5, **k), dtype=DTYPE, device=DEVICE, generator=GEN(11)),
    S(fn=lambda **k: (ember.randn(3, **k), ember.randn(5, **k)), dtype=DTYPE, device=DEVICE,
      generator=GEN(12)),
], inplace=_normal_, zero_d=False,
    empty=[S(fn=lambda **k: ember.randn(0, **k), dtype=DTYPE, device=DEVICE,
             generator=GEN(1))], scale=4))

# ---- elementwise -------------------------------------------------------------------------
# Every op with a scalar body gets generic samples from its definition (arity, domain,
# variants) at the end of this section; the entries here are the ones that need more.
_SCALE = {"expm1": 4, "log1p": 4, "tan": 4, "erf": 4}     # long libm chains round more
_add(OpInfo("reciprocal", ember.reciprocal, [S(T(3, 4, nonzero=True))],
            inplace=_method("reciprocal_"), out=True, special=True))
_add(OpInfo("bitwise_not", ember.bitwise_not, [S(T(3, 4, low=-100, high=100))],
            inplace=_method("bitwise_not_"), out=True))
_add(OpInfo("logical_not", ember.logical_not, [S(T(3, 4, low=-1, high=1, zeros=0.3))],
            inplace=_method("logical_not_"), out=True, special=True))


def _binary_samples(**kw):
    small = dict(kw)
    return [S(T(3, 4, **kw), T(3, 4, **kw)),
            S(T(3, 1, **kw), T(1, 4, **kw)),            # broadcasting against each other
            S(T(3, 4, **kw), 2),                         # a Python scalar
            S(T(2, 3, 4, **kw), Fixed(F64, 4, **small))]  # promotion to float64


for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _add(OpInfo(_n, getattr(ember, _n), _binary_samples(low=-100, high=100),
                inplace=_method(_n + "_"), out=True, special=True))
for _n in ("add", "sub", "eq"):
    _add(OpInfo(_n, getattr(ember, _n), _binary_samples(), inplace=_method(_n + "_"),
                out=True, special=True))
OP_DB["add"].samples.append(S(T(3, 4), T(3, 4), alpha=2))
OP_DB["sub"].samples.append(S(T(3, 4), T(4), alpha=3))
OP_DB["eq"].samples.append(S(T(3, 4, low=-1, high=1), T(3, 4, low=-1, high=1)))
_add(OpInfo("div", ember.div, [
    S(T(3, 4), T(3, 4, nonzero=True)),
    S(T(3, 1), T(1, 4, nonzero=True)),
    S(T(3, 4), 3),
    S(T(3, 4, low=-20, high=20), T(3, 4, nonzero=True), rounding_mode="trunc"),
    S(T(3, 4, low=-20, high=20), T(3, 4, nonzero=True), rounding_mode="floor"),
    S(T(3, 4, low=-20, high=20), -3, rounding_mode="floor"),
], inplace=_method("div_"), out=True, special=True))
for _n in ("fmod", "remainder"):
    _add(OpInfo(_n, getattr(ember, _n), [
        S(T(3, 4, low=-20, high=20), T(3, 4, nonzero=True)),
        S(T(3, 1, low=-20, high=20), T(1, 4, nonzero=True)),
        S(T(3, 4, low=-20, high=20), -3),
    ], inplace=_method(_n + "_"), out=True, special=True))
_add(OpInfo("pow", ember.pow, [
    S(T(3, 4, low=0, high=3), T(3, 4, low=0, high=3)),
    S(T(3, 1, low=-3, high=3), T(1, 4, low=0, high=3)),
    S(T(3, 4, low=0.5, high=2), 2),
    S(T(3, 4, low=0.5, high=2), -1.5, fn=lambda x, e: x ** e),
    S(T(3, 4, low=1, high=2), T(3, 4, low=0, high=3), fn=lambda x, e: 2 ** e),
], inplace=_method("pow_"), out=True, special=True, scale=2))

# ---- elementwise: ternary -------------------------------------------------------------------
_add(OpInfo("where", ember.where, [
    S(Mask(3, 4), T(3, 4), T(3, 4)),
    S(Mask(3, 1), T(1, 4), T(3, 4)),
    S(Mask(3, 4), T(3, 4), 0),
    S(Mask(2, 3, 4), T(4), Fixed(F64, 3, 1)),
], out=True, special=True))
_add(OpInfo("lerp", ember.lerp, [
    S(T(3, 4), T(3, 4), T(3, 4, low=0, high=1)),
    S(T(3, 4), T(4), 0.3),
    S(T(3, 4), T(3, 4), 0.7),
], inplace=_method("lerp_"), out=True, special=True))
for _n in ("addcmul", "addcdiv"):
    _add(OpInfo(_n, getattr(ember, _n), [
        S(T(3, 4), T(3, 4), T(3, 4, nonzero=True), value=0.5),
        S(T(3, 4), T(3, 1), T(1, 4, nonzero=True)),
    ], inplace=_method(_n + "_"), out=True, special=True))
_add(OpInfo("clamp", ember.clamp, [
    S(T(3, 4), 1, 2),
    S(T(3, 4), min=0),
    S(T(3, 4), max=1),
    S(T(3, 4), T(4, low=-3, high=0), T(3, 1, low=0, high=3)),
], inplace=_method("clamp_"), out=True, special=True))



_add(OpInfo("polygamma", lambda x, n=1, **k: ember.polygamma(n, x, **k), [
    S(T(3, 4, low=0.5, high=3)), S(T(3, 4, low=0.5, high=3), n=0),
    S(T(3, 4, low=0.5, high=3), n=3)], inplace=lambda x, n=1: x.polygamma_(n), out=True,
    special=True))
_add(OpInfo("logit", ember.logit, [S(T(3, 4, low=0.05, high=0.95)),
                                   S(T(3, 4, low=-0.5, high=1.5), eps=0.1)],
            inplace=_method("logit_"), out=True, special=True))


def _generic_elementwise(o):
    """Samples for an op from its definition alone: its arity, domain and variants."""
    lo, hi = o.domain or (-3, 3)
    n = len(o.inputs)
    if n == 1:
        samples = [S(T(3, 4, low=lo, high=hi))]
    elif n == 2:
        samples = _binary_samples(low=lo, high=hi)
    else:
        samples = [S(*[T(3, 4, low=lo, high=hi) for _ in range(n)]),
                   S(T(3, 4, low=lo, high=hi), *[T(4, low=lo, high=hi) for _ in range(n - 1)])]
    fn = getattr(ember.special, o.name[len("special_"):]) if o.name.startswith("special_") \
        else getattr(ember, o.name)
    return OpInfo(o.name, fn, samples,
                  inplace=_method(o.name + "_") if "inplace" in o.variants else None,
                  out="out" in o.variants, special=True, scale=_SCALE.get(o.name, 1))


# zeta(x, q): PyTorch differentiates only in q (its derivative in x is not implemented)
_add(OpInfo("special_zeta", ember.special.zeta,
            [S(T(3, 4, low=1.5, high=4.0, grad=False), T(3, 4, low=0.5, high=3.0)),
             S(T(3, 4, low=1.5, high=4.0, grad=False), T(4, low=0.5, high=3.0))],
            out=True, special=True))

# igamma / igammac(a, x): tensors only; PyTorch differentiates only in x
for _n in ("igamma", "igammac"):
    _add(OpInfo(_n, getattr(ember, _n),
                [S(T(3, 4, low=0.5, high=4.0, grad=False), T(3, 4, low=0.2, high=5.0)),
                 S(T(3, 1, low=0.5, high=4.0, grad=False), T(1, 4, low=0.2, high=5.0))],
                inplace=_method(_n + "_"), out=True, special=True))
# the orthogonal polynomials f(x, n): degrees 0 to 12, n a tensor or a number
for _o in elementwise_ops():
    if _o.name.startswith("special_") and _o.name.endswith(("_polynomial_t", "_polynomial_u",
                                                            "_polynomial_v", "_polynomial_w",
                                                            "_polynomial_h", "_polynomial_he",
                                                            "_polynomial_l", "_polynomial_p")):
        _add(OpInfo(_o.name, getattr(ember.special, _o.name[len("special_"):]),
                    [S(T(3, 4, low=-1.5, high=1.5), T(3, 4, low=0, high=12)),
                     S(T(3, 1, low=-1.5, high=1.5), T(1, 4, low=0, high=12)),
                     S(T(3, 4, low=-1.5, high=1.5), 7)], out=True, special=True))

# tanh's and sigmoid's gradients from their outputs (internal ops: no public function)
for _n in ("tanh_backward", "sigmoid_backward"):
    _add(OpInfo(_n, lambda g, y, _n=_n: ember.dispatcher.ops.elementwise(_n, g, y),
                [S(T(3, 4), T(3, 4, low=-1, high=1)), S(T(3, 4), T(4, low=-1, high=1))],
                special=True, dtypes=(F32, F64, ember.float16, ember.bfloat16)))

# GELU and its gradient, both approximations (internal ops: F.gelu and nn.GELU call them)
_add(OpInfo("gelu", lambda x, **k: ember.dispatcher.ops.elementwise("gelu", x, **k),
            [S(T(3, 4, low=-4, high=4)), S(T(3, 4, low=-4, high=4), approximate="tanh")],
            special=True, dtypes=(F32, F64, ember.float16, ember.bfloat16)))
_add(OpInfo("gelu_backward",
            lambda g, x, **k: ember.dispatcher.ops.elementwise("gelu_backward", g, x, **k),
            [S(T(3, 4), T(3, 4, low=-4, high=4)),
             S(T(3, 4), T(4, low=-4, high=4), approximate="tanh")],
            special=True, dtypes=(F32, F64, ember.float16, ember.bfloat16)))

for _o in elementwise_ops():
    if _o.name not in OP_DB:
        _add(_generic_elementwise(_o))

# ---- reductions ---------------------------------------------------------------------------
_REDUCE = [S(T(3, 4)), S(T(3, 4), dim=1), S(T(2, 3, 4), dim=(0, 2), keepdim=True),
           S(T(3, 4), dim=-2, keepdim=True)]
_add(OpInfo("sum", ember.sum, _REDUCE + [S(T(3, 4), dim=0, dtype=F64)], out=True,
            special=True))
_add(OpInfo("max", ember.amax, [
    S(T(3, 4, distinct=True)), S(T(3, 4, distinct=True), dim=1),
    S(T(2, 3, 4, distinct=True), dim=(0, 2), keepdim=True),
    S(T(3, 4, distinct=True), fn=lambda x: ember.max(x)),
    S(T(3, 4, distinct=True), 1, fn=lambda x, d: ember.max(x, d)),
], out=True, special=True, empty=[S(T(0, 3), dim=1)]))
_add(OpInfo("min", ember.amin, [
    S(T(3, 4, distinct=True)), S(T(3, 4, distinct=True), dim=0),
    S(T(2, 3, 4, distinct=True), dim=(1, 2), keepdim=True),
    S(T(3, 4, distinct=True), fn=lambda x: ember.min(x)),
    S(T(3, 4, distinct=True), 1, fn=lambda x, d: ember.min(x, d)),
], out=True, special=True, empty=[S(T(0, 3), dim=1)]))
for _n in ("argmax", "argmin"):
    _add(OpInfo(_n, getattr(ember, _n), [
        S(T(3, 4)), S(T(3, 4), dim=1), S(T(2, 3, 4), dim=0, keepdim=True),
        S(T(3, 4, low=-1, high=1), dim=1),      # ties: the first index wins
    ], out=True, special=True, empty=[S(T(0, 3), dim=1)]))
_add(OpInfo("prod", ember.prod, [
    S(T(3, 4, low=0.5, high=1.5)), S(T(3, 4, low=-2, high=2), dim=1),
    S(T(2, 3, 4, low=0.5, high=1.5), dim=0, keepdim=True),
], out=True, special=True))
_add(OpInfo("mean", ember.mean, _REDUCE, out=True, special=True))
_add(OpInfo("logsumexp", ember.logsumexp, [
    S(T(3, 4), 1), S(T(2, 3, 4), (0, 2), keepdim=True), S(T(3, 4), -2)], special=True,
    scale=2))
for _n in ("var", "std"):
    _add(OpInfo(_n, getattr(ember, _n), [
        S(T(3, 4)), S(T(3, 4), dim=1), S(T(3, 4), dim=0, correction=0),
        S(T(2, 3, 4), dim=(0, 2), keepdim=True),
    ], special=True, scale=4))
_add(OpInfo("norm", ember.norm, [
    S(T(3, 4)), S(T(3, 4), p=1, dim=1), S(T(3, 4), p=3, dim=0),
    S(T(3, 4), p=math.inf, dim=1, keepdim=True), S(T(3, 4), p=0),
], special=True, scale=4))
for _n in ("all", "any"):
    _add(OpInfo(_n, getattr(ember, _n), [
        S(T(3, 4, low=-1, high=1, zeros=0.2)), S(T(3, 4, low=-1, high=1, zeros=0.2), dim=1),
        S(T(3, 4, low=-1, high=1, zeros=0.2), dim=0, keepdim=True),
    ], special=True))

# ---- scans, sort, softmax -------------------------------------------------------------------
_add(OpInfo("cumsum", ember.cumsum, [S(T(3, 4), 1), S(T(3, 4), 0), S(T(2, 3, 4), -1)],
            out=True, special=True, scale=2))
_add(OpInfo("cumprod", ember.cumprod, [
    S(T(3, 4, low=0.5, high=1.5), 1), S(T(3, 4, low=-2, high=2), 0)], out=True,
    special=True, scale=2))
_add(OpInfo("sort", ember.sort, [
    S(T(3, 5, distinct=True), dim=1),
    S(T(4, 3, distinct=True), dim=0, descending=True),
    S(T(3, 6, low=-2, high=2), dim=1, stable=True),
    S(T(3, 6, low=-2, high=2), dim=1, descending=True, stable=True),
    S(T(3, 6, low=-2, high=2), dim=-1),
], special=True, check=_check_sorted))
_add(OpInfo("topk", ember.topk, [
    S(T(3, 6, distinct=True), 2, dim=1),
    S(T(5, 3, distinct=True), 3, dim=0, largest=False),
    S(T(3, 6, low=-2, high=2), 4),
], check=_check_topk, zero_d=[S(T(), 1)], empty=[S(T(0, 4), 2, dim=1)]))
for _n in ("softmax", "log_softmax"):
    _add(OpInfo(_n, getattr(ember, _n), [S(T(3, 4), 1), S(T(2, 3, 4), 0), S(T(3, 4), -1)],
                special=True, scale=2))


def _safe_softmax(x, dim, hide=None):
    """``_safe_softmax`` with the rows named by ``hide`` set to -inf (they give zeros)."""
    if hide is not None:
        rows = [[i in hide] for i in range(x.shape[0])]
        x = ember.where(ember.tensor(rows, device=x.device), -math.inf, x)
    return ember.dispatcher.ops.softmax_op("_safe_softmax", x, dim)


_add(OpInfo("_safe_softmax", _safe_softmax, [
    S(T(3, 4), 1), S(T(2, 3, 4), 0), S(T(3, 4), -1, hide=(0, 2)), S(T(4, 5), 1, hide=(1,))],
    special=True, scale=2, zero_d=[S(T(), 0)]))

# ---- indexing -----------------------------------------------------------------------------
_add(OpInfo("gather", ember.gather, [
    S(T(3, 4), 1, Idx(3, 5, high=4)),
    S(T(3, 4), 0, Idx(2, 3, high=3)),
    S(T(2, 3, 4), 2, Idx(2, 3, 2, high=4)),
], out=True, zero_d=[S(T(), 0, Idx(2, high=1))], empty=[S(T(3, 4), 1, Idx(3, 0, high=4))]))
_add(OpInfo("scatter", ember.scatter, [
    S(T(3, 4), 0, Idx(2, 4, high=3, distinct_dim=0), T(2, 4)),
    S(T(3, 4), 1, Idx(3, 2, high=4, distinct_dim=1), T(3, 5)),
    S(T(3, 4), 1, Idx(3, 2, high=4, distinct_dim=1), value=1.5),
    S(T(3, 4), 0, Idx(5, 4, high=3), T(5, 4), fn=ember.scatter_add),
    S(T(3, 4), 1, Idx(3, 6, high=4), T(3, 6), reduce="add"),
], inplace=_method("scatter_"), zero_d=False,
    empty=[S(T(3, 4), 0, Idx(0, 4, high=3), T(0, 4))]))
_add(OpInfo("nonzero", ember.nonzero, [
    S(T(3, 4, low=-1, high=1, zeros=0.4)),
    S(T(2, 3, 4, low=-2, high=2, zeros=0.4)),
    S(T(3, 4, low=-1, high=1, zeros=0.4), as_tuple=True),
    S(T(5, low=-1, high=1, zeros=0.4), fn=ember.argwhere),
], special=True))
_add(OpInfo("index_select", ember.index_select, [
    S(T(3, 4), 0, Idx(5, high=3)), S(T(3, 4), 1, Idx(2, high=4)),
    S(T(2, 3, 4), 2, Idx(6, high=4)),
], out=True, zero_d=[S(T(), 0, Idx(3, high=1))], empty=[S(T(3, 4), 0, Idx(0, high=3))]))
_add(OpInfo("index_add", ember.index_add, [
    S(T(3, 4), 0, Idx(5, high=3), T(5, 4)),
    S(T(3, 4), 1, Idx(2, high=4), T(3, 2), alpha=2),
], inplace=_method("index_add_"), zero_d=False,
    empty=[S(T(3, 4), 0, Idx(0, high=3), T(0, 4))]))
_add(OpInfo("masked_fill", ember.masked_fill, [
    S(T(3, 4), Mask(3, 4), 1.5), S(T(3, 4), Mask(4), 0),
    S(T(2, 3, 4), Mask(3, 1), -2),
], inplace=_method("masked_fill_"), special=True))
_add(OpInfo("index", lambda x, *i: x[i if len(i) > 1 else i[0]], [
    S(T(4, 3), Idx(5, high=4)),
    S(T(4, 3), Idx(2, 3, high=4)),
    S(T(4, 3), Mask(4, 3)),
    S(T(4, 3), Idx(5, high=4), Idx(5, high=3)),
    S(T(4, 3, 2), Idx(2, 1, high=4), Idx(3, high=3)),
    S(T(4, 3), Idx(2, high=3), fn=lambda x, i: x[1:, i]),
    S(T(4, 3), Mask(4), fn=lambda x, m: x[m, 1]),
], zero_d=False, empty=[S(T(4, 3), Idx(0, high=4)), S(T(0, 3), Mask(0, 3))]))


def _setitem(x, i, v):
    x[i] = v
    return x


_add(OpInfo("index_put", lambda x, i, v, **k: x.index_put((i,), v, **k), [
    S(T(4, 3), Idx(2, high=4, distinct_dim=0), T(2, 3)),
    S(T(4, 3), Idx(6, high=4), T(6, 3), accumulate=True),
    S(T(4, 3), Idx(3, high=4, distinct_dim=0), T(3), fn=_setitem, mutates=True),
    S(T(4, 3), Mask(4, 3), 2, fn=_setitem, mutates=True),
], inplace=lambda x, i, v, **k: x.index_put_((i,), v, **k), zero_d=False, empty=False))
_add(OpInfo("flip", ember.flip, [S(T(3, 4), (0,)), S(T(2, 3, 4), (0, 2)), S(T(3, 4), (-1,))],
            zero_d=[S(T(), ())]))
_add(OpInfo("roll", ember.roll, [S(T(3, 4), 1, 0), S(T(3, 4), (1, -1), (0, 1)),
                                 S(T(3, 4), 5)]))
_add(OpInfo("repeat", lambda x, *r: x.repeat(*r), [S(T(2, 3), 2, 1), S(T(2, 3), 2, 1, 3),
                                                    S(T(3), 2, 2)],
            zero_d=[S(T(), 3)], empty=[S(T(0, 3), 2, 2)]))
for _n in ("tril", "triu"):
    _add(OpInfo(_n, getattr(ember, _n), [S(T(3, 4)), S(T(3, 4), -1), S(T(2, 3, 4), 1)],
                zero_d=False))
_add(OpInfo("cat", lambda a, b, **k: ember.cat([a, b], **k), [
    S(T(2, 3), T(4, 3)), S(T(2, 3), T(2, 1), dim=1), S(T(2, 3, 2), Fixed(F64, 2, 3, 1), dim=-1),
], zero_d=False, out=True))
OP_DB["cat"].samples.append(S(T(2, 3), T(0), fn=lambda a, b: ember.cat([a, b])))
_add(OpInfo("stack", lambda a, b, **k: ember.stack([a, b], **k), [
    S(T(2, 3), T(2, 3)), S(T(2, 3), T(2, 3), dim=1), S(T(2, 3), T(2, 3), dim=-1),
], out=True))

# ---- convolution and pooling building blocks ---------------------------------------------
_add(OpInfo("im2col", F.unfold, [
    S(T(2, 2, 5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
    S(T(1, 3, 4, 4), 2),
    S(T(2, 5, 6), (3, 2), padding=(0, 1)),
], zero_d=False, empty=[S(T(0, 2, 4, 4), 2)]))
_add(OpInfo("col2im", F.fold, [
    S(T(2, 12, 12), (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
    S(T(1, 8, 9), (4, 4), 2),
], zero_d=False, empty=[S(T(0, 8, 9), (4, 4), 2)]))
_add(OpInfo("max_pool", F.max_pool2d, [
    S(T(2, 2, 6, 7, distinct=True), 3, 2, padding=1, ceil_mode=True),
    S(T(1, 3, 5, 5, distinct=True), 2, return_indices=True),
    S(T(2, 3, 9, distinct=True), 3, 2, padding=1, return_indices=True, fn=F.max_pool1d),
    S(T(2, 3, 9, distinct=True), 2, 1, dilation=2, fn=F.max_pool1d),
], zero_d=False, empty=[S(T(0, 2, 4, 4), 2)], special=True,
    dtypes=(F32, F64, ember.float16, ember.bfloat16, ember.int64, ember.int32, ember.int16)))

# ---- neural-network ops ------------------------------------------------------------------
_add(OpInfo("convolution", F.conv2d, [
    S(T(2, 3, 6, 7), T(4, 3, 3, 2), T(4), stride=(2, 1), padding=1),
    S(T(2, 4, 5, 5), T(4, 2, 3, 3), groups=2, dilation=(1, 2)),
    S(T(3, 6, 6), T(2, 3, 2, 2), padding="same"),
    S(T(2, 4, 9), T(6, 2, 3), T(6), padding=1, groups=2, fn=F.conv1d),
    S(T(1, 2, 4, 4), T(2, 3, 3, 3), T(3), stride=2, padding=1, output_padding=1,
      fn=F.conv_transpose2d),
], zero_d=False, empty=False, scale=2, dtypes=(F32, F64, ember.float16, ember.bfloat16)))
_FLOATS = (F32, F64, ember.float16, ember.bfloat16)


def _dw_input(grad, weight, size, stride=1, padding=0, dilation=1):
    nd = len(size)
    return CV.depthwise_conv_input(grad, weight, tuple(weight.shape[2:]), (dilation,) * nd,
                                   (padding,) * nd, (stride,) * nd, size)


def _dw_weight(grad, input, kernel, stride=1, padding=0, dilation=1):
    nd = len(kernel)
    return CV.depthwise_conv_weight(grad, input, kernel, (dilation,) * nd, (padding,) * nd,
                                    (stride,) * nd)


def _dc_input(grad, weight, size, stride=1, padding=0, dilation=1, groups=1):
    nd = len(size)
    return CV.dense_conv_input(grad, weight, tuple(weight.shape[2:]), (dilation,) * nd,
                               (padding,) * nd, (stride,) * nd, size, groups)


def _dc_weight(grad, input, kernel, stride=1, padding=0, dilation=1, groups=1):
    nd = len(kernel)
    return CV.dense_conv_weight(grad, input, kernel, (dilation,) * nd, (padding,) * nd,
                                (stride,) * nd, groups)


def _lstm_cell(gates, c):
    return ember.stack(RNN.lstm_cell(gates, c))


def _lstm_cell_backward(grad, gates, c):
    return RNN.lstm_cell_backward_of(grad, gates, c)


# the LSTM cell's gate math (nn.LSTM's step), and its backward
_add(OpInfo("lstm_cell", _lstm_cell, [S(T(3, 8), T(3, 2)), S(T(1, 20), T(1, 5))],
            zero_d=False, empty=False, dtypes=_FLOATS))
_add(OpInfo("lstm_cell_backward", _lstm_cell_backward, [S(T(2, 3, 2), T(3, 8), T(3, 2))],
            zero_d=False, empty=False, dtypes=_FLOATS))


def _lstm_layer(gi, w, h, c, reverse=False):
    return RNN.lstm_layer(gi, w, h, c, reverse)


def _lstm_layer_backward(grad, gi, w, h, c, reverse=False):
    return RNN.lstm_layer_backward_of(grad, gi, w, h, c, reverse)


# an LSTM layer direction's time loop (nn.LSTM without projections), and its backward
_LAYER = (T(3, 2, 8), T(8, 2), T(2, 2), T(2, 2))
_add(OpInfo("lstm_layer", _lstm_layer, [S(*_LAYER), S(*_LAYER, reverse=True),
                                        S(T(1, 4, 12), T(12, 3), T(4, 3), T(4, 3))],
            zero_d=False, empty=[S(T(0, 2, 8), T(8, 2), T(2, 2), T(2, 2))], dtypes=_FLOATS))
_add(OpInfo("lstm_layer_backward", _lstm_layer_backward,
            [S(T(2, 3, 2, 2), *_LAYER), S(T(2, 3, 2, 2), *_LAYER, reverse=True)],
            zero_d=False, empty=[S(T(2, 0, 2, 2), T(0, 2, 8), T(8, 2), T(2, 2), T(2, 2))],
            dtypes=_FLOATS))


def _gru_layer(gi, w, b, h, reverse=False):
    return RNN.gru_layer(gi, w, b, h, reverse)


def _gru_layer_backward(grad, gi, w, b, h, reverse=False):
    return RNN.gru_layer_backward_of(grad, gi, w, b, h, reverse)


# a GRU layer direction's time loop (nn.GRU), and its backward
_GRU = (T(3, 2, 6), T(6, 2), T(6), T(2, 2))
_add(OpInfo("gru_layer", _gru_layer, [S(*_GRU), S(*_GRU, reverse=True),
                                      S(T(1, 4, 9), T(9, 3), T(9), T(4, 3))],
            zero_d=False, empty=[S(T(0, 2, 6), T(6, 2), T(6), T(2, 2))], dtypes=_FLOATS))
_add(OpInfo("gru_layer_backward", _gru_layer_backward,
            [S(T(3, 2, 2), *_GRU), S(T(3, 2, 2), *_GRU, reverse=True)],
            zero_d=False, empty=[S(T(0, 2, 2), T(0, 2, 6), T(6, 2), T(6), T(2, 2))],
            dtypes=_FLOATS))


# depthwise convolution: F.conv*d with groups = channels (the op the convolution routes to)
_add(OpInfo("depthwise_conv", F.conv2d, [
    S(T(2, 3, 6, 7), T(3, 1, 3, 2), T(3), stride=(2, 1), padding=1, groups=3),
    S(T(2, 4, 5, 5), T(4, 1, 3, 3), dilation=(1, 2), padding=(2, 1), groups=4),
    S(T(2, 4, 9), T(4, 1, 3), padding=1, dilation=2, groups=4, fn=F.conv1d),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("depthwise_conv_input", _dw_input, [
    S(T(2, 3, 4, 4), T(3, 1, 3, 3), (6, 6)),
    S(T(2, 3, 3, 3), T(3, 1, 3, 3), (6, 6), stride=2, padding=1),
    S(T(2, 2, 5), T(2, 1, 2), (8,), dilation=2, padding=1),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("depthwise_conv_weight", _dw_weight, [
    S(T(2, 3, 4, 4), T(2, 3, 6, 6), (3, 3)),
    S(T(2, 3, 3, 3), T(2, 3, 6, 6), (3, 3), stride=2, padding=1),
    S(T(2, 2, 5), T(2, 2, 8), (2,), dilation=2, padding=1),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
# dense (grouped) convolution: F.conv*d (the op the convolution routes to), its adjoints
_add(OpInfo("dense_conv", F.conv2d, [
    S(T(2, 4, 6, 7), T(6, 2, 3, 2), T(6), stride=(2, 1), padding=1, groups=2),
    S(T(3, 2, 5, 5), T(4, 2, 1, 1)),
    S(T(2, 3, 5, 5), T(4, 3, 3, 3), dilation=(1, 2), padding=(2, 1)),
    S(T(2, 3, 9), T(4, 3, 3), padding=1, dilation=2, fn=F.conv1d),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("dense_conv_input", _dc_input, [
    S(T(2, 4, 4, 4), T(4, 3, 3, 3), (6, 6)),
    S(T(2, 4, 3, 3), T(4, 1, 3, 3), (6, 6), stride=2, padding=1, groups=2),
    S(T(3, 4, 5), T(4, 2, 1), (5,)),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("dense_conv_weight", _dc_weight, [
    S(T(2, 4, 4, 4), T(2, 3, 6, 6), (3, 3)),
    S(T(2, 4, 3, 3), T(2, 2, 6, 6), (3, 3), stride=2, padding=1, groups=2),
    S(T(3, 4, 5), T(3, 2, 5), (1,)),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("avg_pool", F.avg_pool2d, [
    S(T(2, 2, 6, 7), 3, 2, padding=1, ceil_mode=True),
    S(T(2, 2, 6, 7), 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
    S(T(1, 3, 5, 5), (2, 3), divisor_override=4),
    S(T(3, 5, 5), 2),
    S(T(2, 3, 9), 3, 2, padding=1, fn=F.avg_pool1d),
], zero_d=False, empty=False, dtypes=_FLOATS))
_add(OpInfo("adaptive_avg_pool", F.adaptive_avg_pool2d, [
    S(T(2, 3, 6, 4), (3, 2)),               # equal windows: a reshape and a mean
    S(T(2, 3, 7, 5), (3, 4)),               # unequal windows: averaging matrices
    S(T(3, 5, 6), (None, 4)),
    S(T(2, 3, 7), 3, fn=F.adaptive_avg_pool1d),
], zero_d=False, empty=False, dtypes=_FLOATS))
_add(OpInfo("adaptive_max_pool", F.adaptive_max_pool2d, [
    S(T(2, 3, 6, 4, distinct=True), (3, 2), return_indices=True),
    S(T(2, 3, 7, 5, distinct=True), (3, 4), return_indices=True),
    S(T(3, 5, 6, distinct=True), 4),
    S(T(2, 3, 7, distinct=True), 3, True, fn=F.adaptive_max_pool1d),
], zero_d=False, empty=False,
    dtypes=(F32, F64, ember.float16, ember.bfloat16, ember.int64, ember.int32)))


def _stats(c, low):
    """A running mean / var: updated in place, so never a broadcast view."""
    return T(c, low=low, high=2.0, grad=False, bcast=False)


_add(OpInfo("batch_norm", F.batch_norm, [
    S(T(4, 3, 5), _stats(3, -1.0), _stats(3, 0.5), T(3), T(3), training=True, momentum=0.2),
    S(T(4, 3, 2, 3), _stats(3, -1.0), _stats(3, 0.5), T(3), T(3), eps=1e-3),
    S(T(5, 3), None, None, training=True),
    S(T(2, 3, 4), _stats(3, -1.0), _stats(3, 0.5), None, T(3)),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))


def _bn_inference(x, mean, var, w=None, b=None, eps=1e-5):
    return NN.batch_norm_inference(x, w, b, mean, var, eps)


_add(OpInfo("batch_norm_inference", _bn_inference, [
    S(T(4, 3, 5), _stats(3, -1.0), _stats(3, 0.5), T(3), T(3)),
    S(T(2, 3, 2, 3), _stats(3, -1.0), _stats(3, 0.5), eps=1e-3),
    S(T(5, 3), _stats(3, -1.0), _stats(3, 0.5), None, T(3)),
], zero_d=False, empty=[S(T(0, 3, 2), _stats(3, -1.0), _stats(3, 0.5), T(3), T(3))],
    scale=2, dtypes=_FLOATS))


def _bn_train(x, w=None, b=None, eps=1e-5):
    return NN.batch_norm_train(x, w, b, eps)


def _bn_train_backward(grad, x, w=None, eps=1e-5):
    _, mean, var = NN.batch_norm_train(x, w, None, eps)
    return NN.batch_norm_train_backward(grad, x, w, mean, var, eps)


# relu and hardtanh under autograd (clamp's values, thresholds' gradients), their backward
_add(OpInfo("relu", F.relu, [S(T(3, 4)), S(T(2, 3, 4))], zero_d=True, empty=True,
            special=True, dtypes=_FLOATS))
_add(OpInfo("hardtanh", F.hardtanh, [S(T(3, 4)), S(T(2, 5), -0.5, 0.5)], zero_d=True,
            empty=True, special=True, dtypes=_FLOATS))
_add(OpInfo("threshold_backward", NN.threshold_backward,
            [S(T(3, 4), T(3, 4)), S(T(2, 3), T(2, 3), threshold=0.3)], zero_d=True,
            empty=True, dtypes=_FLOATS))
_add(OpInfo("hardtanh_backward", NN.hardtanh_backward, [S(T(3, 4), T(3, 4), -0.5, 0.5)],
            zero_d=True, empty=True, dtypes=_FLOATS))


# batch_norm's training mode (the op it runs), and its backward
_add(OpInfo("batch_norm_train", _bn_train, [
    S(T(4, 3, 5), T(3), T(3)), S(T(4, 3, 2, 3), T(3), eps=1e-3), S(T(5, 3)),
    S(T(2, 3, 4), None, T(3)),
], zero_d=False, empty=[S(T(0, 3, 2), T(3), T(3))], scale=2, dtypes=_FLOATS))
_add(OpInfo("batch_norm_train_backward", _bn_train_backward, [
    S(T(4, 3, 5), T(4, 3, 5), T(3)), S(T(2, 3, 2, 3), T(2, 3, 2, 3), eps=1e-3),
    S(T(5, 3), T(5, 3)),
], zero_d=False, empty=False, scale=4, dtypes=_FLOATS))
_add(OpInfo("layer_norm", F.layer_norm, [
    S(T(2, 3, 4), (4,), T(4), T(4)),
    S(T(2, 3, 4), (3, 4), T(3, 4), T(3, 4), eps=1e-3),
    S(T(3, 5), 5),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))


def _ln_backward(grad, x, w=None, normalized_shape=(4,), eps=1e-5):
    return NN.layer_norm_backward(grad, x, w, normalized_shape, eps)


_add(OpInfo("layer_norm_backward", _ln_backward, [
    S(T(2, 3, 4), T(2, 3, 4), T(4)),
    S(T(2, 3, 4), T(2, 3, 4), T(3, 4), normalized_shape=(3, 4), eps=1e-3),
    S(T(3, 5), T(3, 5), normalized_shape=(5,)),
], zero_d=False, empty=False, scale=4, dtypes=_FLOATS))
_add(OpInfo("group_norm", F.group_norm, [
    S(T(2, 6, 3), 3, T(6), T(6)),
    S(T(2, 4, 2, 3), 2, eps=1e-3),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("embedding", F.embedding, [
    S(Idx(2, 3, high=10), T(10, 4)),
    S(Idx(5, high=6), T(6, 3), padding_idx=1),
    S(Idx(3, 4, high=5), T(5, 2), scale_grad_by_freq=True),
], zero_d=[S(Idx(high=4), T(4, 3))], empty=[S(Idx(0, high=4), T(4, 3))]))


def _weight(c):
    return T(c, low=0.5, high=2.0)


# (input, class indices, weight, reduction, ignore_index): nll_loss of log-probabilities,
# cross_entropy_indices of logits
_CLASS_INDEX_SAMPLES = [
    S(T(4, 5), Idx(4, high=5)),
    S(T(4, 5), Idx(4, high=5), _weight(5), reduction="sum"),
    S(T(4, 5), Idx(4, high=5), ignore_index=2, reduction="none"),
    S(T(2, 4, 3), Idx(2, 3, high=4), _weight(4), ignore_index=0),
    S(T(5), Idx(high=5)),
]
_add(OpInfo("nll_loss", F.nll_loss, _CLASS_INDEX_SAMPLES, zero_d=False, empty=False,
            dtypes=_FLOATS))
_add(OpInfo("cross_entropy_indices", NN.cross_entropy_indices, _CLASS_INDEX_SAMPLES,
            zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
_add(OpInfo("cross_entropy", F.cross_entropy, [
    S(T(4, 5), Idx(4, high=5)),
    S(T(4, 5), Idx(4, high=5), _weight(5), label_smoothing=0.1, ignore_index=1),
    S(T(2, 4, 3), Idx(2, 3, high=4), reduction="none", label_smoothing=0.2),
    S(T(4, 5), T(4, 5, low=0.0, high=1.0), reduction="sum"),
    S(T(4, 5), T(4, 5, low=0.0, high=1.0), _weight(5), label_smoothing=0.1),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))
# (probabilities, targets in [0, 1], weight, reduction): inside (0, 1), away from the
# clamps, so finite differences see the formula
_add(OpInfo("binary_cross_entropy", F.binary_cross_entropy, [
    S(T(4, 5, low=0.05, high=0.95), T(4, 5, low=0.0, high=1.0)),
    S(T(3, 2, 4, low=0.05, high=0.95), T(3, 2, 4, low=0.0, high=1.0), reduction="sum"),
    S(T(4, 5, low=0.05, high=0.95), T(4, 5, low=0.0, high=1.0), T(4, 5, low=0.5, high=2.0),
      reduction="none"),
    S(T(6, low=0.05, high=0.95), T(6, low=0.0, high=1.0), T(6, low=0.5, high=2.0)),
], zero_d=False, empty=False, dtypes=_FLOATS))
# dropout_p=0 only: the reference and the device draw from their own generators
_add(OpInfo("scaled_dot_product_attention", F.scaled_dot_product_attention, [
    S(T(2, 3, 4, 5), T(2, 3, 6, 5), T(2, 3, 6, 4)),
    S(T(2, 4, 5), T(2, 4, 5), T(2, 4, 3), is_causal=True),
    S(T(2, 3, 4, 5), T(2, 3, 6, 5), T(2, 3, 6, 4), Mask(4, 6), scale=0.5),
    S(T(2, 4, 5), T(2, 6, 5), T(2, 6, 3), T(4, 6)),
    S(T(2, 4, 3, 5), T(2, 2, 6, 5), T(2, 2, 6, 5), enable_gqa=True),
], zero_d=False, empty=False, scale=2, dtypes=_FLOATS))

# ---- linear algebra -------------------------------------------------------------------------
_add(OpInfo("bmm", ember.bmm, [S(T(2, 3, 4), T(2, 4, 5)), S(T(1, 1, 3), T(1, 3, 2))],
            out=True, zero_d=False, empty=[S(T(2, 0, 4), T(2, 4, 5)), S(T(2, 3, 0), T(2, 0, 5))]))
_add(OpInfo("mm", ember.mm, [S(T(3, 4), T(4, 5)), S(T(1, 4), T(4, 1))], out=True,
            zero_d=False, empty=[S(T(0, 4), T(4, 5)), S(T(3, 0), T(0, 2))]))
_add(OpInfo("matmul", ember.matmul, [
    S(T(2, 1, 3, 4), T(3, 4, 2)), S(T(4), T(4, 3)), S(T(2, 3, 4), T(4)), S(T(3, 4), T(4, 2)),
    S(T(4), T(4)), S(T(2, 3, 4), T(4, 5)),
], out=True, zero_d=False, empty=[S(T(0, 3, 4), T(4, 2))]))
_add(OpInfo("mv", ember.mv, [S(T(3, 4), T(4))], zero_d=False, empty=[S(T(0, 4), T(4))]))
_add(OpInfo("dot", ember.dot, [S(T(5), T(5))], zero_d=False, empty=[S(T(0), T(0))]))
_add(OpInfo("outer", ember.outer, [S(T(3), T(4))], zero_d=False))
_add(OpInfo("addmm", ember.addmm, [
    S(T(3, 5), T(3, 4), T(4, 5), beta=0.5, alpha=2),
    S(T(5), T(3, 4), T(4, 5)),
    S(T(3, 5), T(3, 4), T(4, 5), beta=0),
], zero_d=False, empty=[S(T(0, 5), T(0, 4), T(4, 5))]))
_add(OpInfo("linear", F.linear, [S(T(2, 3, 4), T(5, 4), T(5)), S(T(3, 4), T(2, 4))],
            zero_d=False, empty=[S(T(0, 4), T(2, 4), T(2))]))
_add(OpInfo("einsum", None, [
    S(T(2, 3, 4), T(2, 4, 5), fn=lambda a, b: ember.einsum("bij,bjk->bik", a, b)),
    S(T(3, 3), fn=lambda a: ember.einsum("ii->i", a)),
    S(T(3, 4), fn=lambda a: ember.einsum("ij->ji", a)),
    S(T(3), T(4), fn=lambda a, b: ember.einsum("i,j->ij", a, b)),
    S(T(2, 3), T(3, 4), T(4), fn=lambda a, b, c: ember.einsum("ij,jk,k->i", a, b, c)),
], zero_d=False, empty=False, scale=2))

# ---- creation -------------------------------------------------------------------------------
_add(OpInfo("linspace", None, [
    S(fn=lambda **k: ember.linspace(-1, 2, 7, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.linspace(0, 10, 5, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.linspace(3, 3, 1, **k), dtype=DTYPE, device=DEVICE),
], zero_d=False, empty=[S(fn=lambda **k: ember.linspace(0, 1, 0, **k), dtype=DTYPE,
                          device=DEVICE)]))
_add(OpInfo("eye", None, [
    S(fn=lambda **k: ember.eye(3, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.eye(2, 4, **k), dtype=DTYPE, device=DEVICE),
], zero_d=False, empty=[S(fn=lambda **k: ember.eye(0, 3, **k), dtype=DTYPE, device=DEVICE)]))
_add(OpInfo("randint", None, [
    S(fn=lambda **k: ember.randint(-5, 7, (4, 5), **k), dtype=DTYPE, device=DEVICE,
      generator=GEN(3)),
    S(fn=lambda **k: ember.randint(0, 2, (9,), **k), dtype=DTYPE, device=DEVICE,
      generator=GEN(4)),
], zero_d=False, empty=[S(fn=lambda **k: ember.randint(0, 3, (0,), **k), dtype=DTYPE,
                          device=DEVICE, generator=GEN(1))]))
_add(OpInfo("randperm", None, [
    S(fn=lambda **k: ember.randperm(10, **k), dtype=DTYPE, device=DEVICE, generator=GEN(9)),
], zero_d=False, empty=[S(fn=lambda **k: ember.randperm(0, **k), dtype=DTYPE, device=DEVICE,
                          generator=GEN(1))]))


# ---- reductions, scans, statistics, search (dispatcher/defs/reduction.py) -----------------
def _values_only(actual, expected, sample, built):
    assert_close(actual[0], expected[0], what="values")


def _first(fn):
    def call(*a, **k):
        return fn(*a, **k)[0]
    call.__name__ = fn.__name__
    return call


_add(OpInfo("cummax", ember.cummax, [S(T(3, 5), 1), S(T(2, 3, 4), 0)], out=True,
            special=True))
_add(OpInfo("cummin", ember.cummin, [S(T(3, 5), 1), S(T(4, 3), -2)], out=True, special=True))
_add(OpInfo("logcumsumexp", ember.logcumsumexp, [S(T(3, 5), 1), S(T(2, 3, 4), 0)], out=True,
            special=True, scale=4))
_add(OpInfo("median", ember.median, [S(T(3, 5)), S(T(2, 3, 4, distinct=True))],
            special=True))
_add(OpInfo("nanmedian", ember.nanmedian, [S(T(3, 5)), S(T(2, 3, 4, distinct=True))],
            special=True))
_add(OpInfo("median_dim", ember.median, [S(T(3, 5, distinct=True), 1),
                                         S(T(2, 3, 4, distinct=True), 0, keepdim=True)],
            check=_values_only, out=True))
_add(OpInfo("nanmedian_dim", ember.nanmedian, [S(T(3, 5, distinct=True), 1),
                                               S(T(4, 3, distinct=True), -2, True)],
            check=_values_only, special=True))
_add(OpInfo("kthvalue", ember.kthvalue, [S(T(3, 5, distinct=True), 2),
                                         S(T(4, 3, distinct=True), 1, 0, True)],
            check=_values_only, zero_d=[S(T(), 1)], empty=[S(T(0, 4), 1, dim=1)]))
_add(OpInfo("mode", ember.mode, [S(T(3, 6, low=-2, high=2), 1), S(T(4, 3, distinct=True), 0)],
            check=_values_only))
_add(OpInfo("quantile", ember.quantile, [
    S(T(3, 5), 0.3), S(T(3, 5), 0.3, 1, True), S(T(2, 3, 4), 0.7, -1, interpolation="lower"),
    S(T(4, 5), 0.5, 0, interpolation="midpoint"), S(T(4, 5), 0.25, 1, interpolation="nearest"),
    S(T(4, 5), 0.35, 1, interpolation="higher")],
    dtypes=(ember.float32, ember.float64), empty=False, special=True))
_add(OpInfo("nanquantile", ember.nanquantile, [S(T(3, 5), 0.3), S(T(3, 5), 0.6, 1)],
            dtypes=(ember.float32, ember.float64), empty=False, special=True))
_add(OpInfo("aminmax", ember.aminmax, [S(T(3, 5)), S(T(3, 5), dim=1),
                                       S(T(2, 3, 4), dim=-1, keepdim=True)],
            out=True, special=True, empty=[S(T(0, 4), dim=1)]))
_add(OpInfo("bincount", ember.bincount, [
    S(Idx(7, high=5)), S(Idx(7, high=5), minlength=8), S(Idx(6, high=4), T(6))],
    dtypes=(ember.float32, ember.float64), zero_d=False))
_add(OpInfo("histc", ember.histc, [S(T(3, 5), 4), S(T(20), 6, -1, 2)],
            dtypes=(ember.float32, ember.float64), out=True))
_add(OpInfo("histogramdd", ember.histogramdd, [
    S(T(12, 2), [3, 4]), S(T(10, 2), 3, range=[-1., 1., -2., 2.], density=True),
    S(T(10, 1), T(10, low=0, high=1),
      fn=lambda x, w: ember.histogramdd(x, 3, weight=w)),
    S(T(30), 5, fn=ember.histogram)],
    dtypes=(ember.float32, ember.float64), zero_d=False, empty=False))
_add(OpInfo("searchsorted", ember.searchsorted, [
    S(Fixed(F64, 6, low=-3, high=3, distinct=True, grad=False), T(3, 4),
      fn=lambda s, v, **k: ember.searchsorted(s.sort().values, v, **k)),
    S(T(4, 5), T(4, 3), fn=lambda s, v, **k: ember.searchsorted(s.sort().values, v, **k),
      right=True)], zero_d=False, empty=False))
_add(OpInfo("bucketize", ember.bucketize, [
    S(T(3, 4), T(5, distinct=True), fn=lambda v, b, **k: ember.bucketize(v, b.sort().values,
                                                                           **k)),
    S(T(6), T(4, distinct=True), fn=lambda v, b, **k: ember.bucketize(v, b.sort().values,
                                                                       right=True))],
    zero_d=False, empty=False))
_add(OpInfo("isin", ember.isin, [S(T(3, 4, low=-3, high=3), T(5, low=-3, high=3)),
                                 S(T(6), T(3), invert=True)],
            dtypes=(ember.int8, ember.int16, ember.int32, ember.int64, ember.float32,
                    ember.float64)))
_add(OpInfo("unique", ember.unique, [
    S(T(3, 5, low=-3, high=3), return_inverse=True, return_counts=True),
    S(T(6, 2, low=-1, high=1), dim=0)],
    dtypes=(ember.int8, ember.int16, ember.int32, ember.int64, ember.uint8), zero_d=False,
    empty=False))
_add(OpInfo("unique_consecutive", ember.unique_consecutive, [
    S(T(12, low=-1, high=1), return_inverse=True, return_counts=True),
    S(T(6, 2, low=0, high=1), dim=0)],
    dtypes=(ember.int8, ember.int16, ember.int32, ember.int64, ember.uint8), zero_d=False,
    empty=False))
_add(OpInfo("cdist", ember.cdist, [S(T(4, 3), T(5, 3)), S(T(2, 4, 3), T(5, 3), p=1.),
                                   S(T(4, 3), T(5, 3), p=3.),
                                   S(T(30, 3), T(5, 3))],
            dtypes=(ember.float32, ember.float64), zero_d=False, empty=False, scale=4))
_add(OpInfo("dist", ember.dist, [S(T(3, 4), T(4)), S(T(3, 4), T(3, 4), 1)],
            dtypes=(ember.float16, ember.bfloat16, ember.float32, ember.float64), zero_d=False,
            scale=4))
_add(OpInfo("diff", ember.diff, [S(T(3, 5)), S(T(4, 5), 2, 0), S(T(3, 4), T(3, 2), T(3, 1),
                                                                  fn=lambda x, p, a: ember.diff(
                                                                      x, prepend=p, append=a))],
            out=True, zero_d=False))
_add(OpInfo("trace", ember.trace, [S(T(3, 4)), S(T(5, 5))], zero_d=False,
            dtypes=(ember.int32, ember.int64, ember.float32, ember.float64)))
_add(OpInfo("cov", ember.cov, [S(T(3, 6)), S(T(6), correction=0),
                               S(T(3, 5), Fixed(ember.int64, 5, low=1, high=3, grad=False),
                                 Fixed(F64, 5, low=0.1, high=1, grad=False),
                                 fn=lambda x, f, a: ember.cov(x, fweights=f, aweights=a))],
            dtypes=(ember.float32, ember.float64), zero_d=False, empty=False, scale=4))
_add(OpInfo("corrcoef", ember.corrcoef, [S(T(3, 6)), S(T(2, 5))],
            dtypes=(ember.float32, ember.float64), zero_d=False, empty=False, scale=4))
_add(OpInfo("renorm", ember.renorm, [S(T(3, 4), 2, 0, 1.), S(T(2, 3, 4), 1, 2, 2.)],
            inplace=_method("renorm_"), out=True, zero_d=False,
            dtypes=(ember.float32, ember.float64)))
_add(OpInfo("trapezoid", ember.trapezoid, [S(T(3, 5)), S(T(3, 5), dx=0.5, dim=0),
                                           S(T(3, 5), T(5, distinct=True))],
            zero_d=False, dtypes=(ember.float32, ember.float64)))
_add(OpInfo("cumulative_trapezoid", ember.cumulative_trapezoid, [
    S(T(3, 5)), S(T(3, 5), dx=0.5, dim=0), S(T(3, 5), T(5, distinct=True))],
    zero_d=False, dtypes=(ember.float32, ember.float64)))
_add(OpInfo("gradient", _first(ember.gradient), [
    S(T(4, 5)), S(T(4, 5), spacing=2., dim=1, edge_order=2)],
    zero_d=False, empty=False, dtypes=(ember.float32, ember.float64), scale=4))
_add(OpInfo("scatter_reduce", ember.scatter_reduce, [
    S(T(3, 4), 1, Idx(3, 5, high=4), T(3, 5), r) for r in ("sum", "prod", "mean", "amax",
                                                              "amin")
] + [S(T(3, 4), 0, Idx(2, 4, high=3), T(2, 4), "amax", include_self=False)],
    inplace=_method("scatter_reduce_"), zero_d=False, empty=False,
    dtypes=(ember.int32, ember.int64, ember.float32, ember.float64)))
_add(OpInfo("index_reduce", ember.index_reduce, [
    S(T(4, 3), 0, Fixed(ember.int64, 5, low=0, high=3, grad=False), T(5, 3), r)
    for r in ("prod", "mean", "amax", "amin")],
    inplace=_method("index_reduce_"), zero_d=False, empty=False,
    dtypes=(ember.int64, ember.float32, ember.float64)))

# ---- shape and index ops (dispatcher/defs/index.py) ----------------------------------------
_add(OpInfo("repeat_interleave", ember.repeat_interleave, [
    S(T(3, 4), 2, dim=1), S(T(2, 3), 3),
    S(T(3, 4), Idx(3, high=3), dim=0),
    S(T(2, 3), Idx(3, high=4), 1, output_size=None),
    S(Idx(4, high=3), fn=ember.repeat_interleave),          # repeats alone: index of each
    S(T(3, 2), 2, fn=lambda x, r: x.repeat_interleave(r, dim=-1)),
], zero_d=[S(T(), 3)], empty=[S(T(0, 3), 2, dim=0)]))
_add(OpInfo("diag", ember.diag, [S(T(4)), S(T(3), 1), S(T(3), -2), S(T(3, 4)),
                                 S(T(4, 3), -1), S(T(3, 4), 2)],
            out=True, zero_d=False, empty=[S(T(0)), S(T(0, 3))]))
_add(OpInfo("diag_embed", ember.diag_embed, [S(T(3)), S(T(2, 3), 1), S(T(2, 3), -1, 0, 2),
                                             S(T(2, 3), fn=lambda x: x.diag_embed(0, -1, 0))],
            zero_d=False))
_add(OpInfo("diagonal_scatter", ember.diagonal_scatter, [
    S(T(3, 4), T(3)), S(T(3, 4), T(3), 1), S(T(3, 4), T(2), -1),
    S(T(2, 3, 4), T(2, 3), 0, 1, 2), S(T(4, 3), T(3), fn=lambda x, s: x.diagonal_scatter(s)),
], zero_d=False, empty=False))
_add(OpInfo("select_scatter", ember.select_scatter, [
    S(T(3, 4), T(4), 0, 1), S(T(2, 3, 4), T(2, 4), 1, -1), S(T(3, 4), T(3), -1, 2),
], zero_d=False, empty=[S(T(3, 0), T(0), 0, 1)]))
_add(OpInfo("slice_scatter", ember.slice_scatter, [
    S(T(5, 4), T(2, 4), 0, 1, 5, 2), S(T(3, 6), T(3, 2), 1, None, None, 3),
    S(T(4, 3), T(4, 3)), S(T(4, 5), T(4, 2), dim=-1, start=-2),
], zero_d=False, empty=[S(T(0, 3), T(0, 2), 1, 1)]))
_add(OpInfo("as_strided_scatter", ember.as_strided_scatter, [
    S(T(3, 4), T(2, 2), (2, 2), (1, 2)), S(T(12), T(3, 2), (3, 2), (2, 1), 1),
    S(T(2, 3), T(3), (3,), (2,)),
], zero_d=False, empty=False))
_add(OpInfo("index_copy", ember.index_copy, [
    S(T(4, 3), 0, Idx(2, high=4, distinct_dim=0), T(2, 3)),
    S(T(3, 5), 1, Idx(3, high=5, distinct_dim=0), T(3, 3)),
    S(T(2, 4, 3), -2, Idx(4, high=4, distinct_dim=0), T(2, 4, 3)),
], inplace=_method("index_copy_"), zero_d=False,
    empty=[S(T(4, 3), 0, Idx(0, high=4), T(0, 3))]))
_add(OpInfo("index_fill", ember.index_fill, [
    S(T(4, 3), 0, Idx(2, high=4), 1.5), S(T(3, 5), 1, Idx(3, high=5), -2),
    S(T(2, 3, 4), -1, Idx(5, high=4), 0),
], inplace=_method("index_fill_"), zero_d=False, special=True,
    empty=[S(T(4, 3), 0, Idx(0, high=4), 1)]))
_add(OpInfo("masked_scatter", ember.masked_scatter, [
    S(T(3, 4), Mask(3, 4), T(12)), S(T(3, 4), Mask(4), T(3, 4)),
    S(T(2, 3), Mask(2, 1), T(7)),
], inplace=_method("masked_scatter_"), special=True))
_add(OpInfo("put", ember.put, [
    S(T(3, 4), Idx(5, high=12, distinct_dim=0), T(5)),
    S(T(3, 4), Idx(2, 3, high=12), T(2, 3), accumulate=True),
    S(T(3, 4), Idx(4, high=12, distinct_dim=0), T(4), fn=lambda x, i, s: x.put(i, s)),
], inplace=_method("put_"), zero_d=False, empty=[S(T(3, 4), Idx(0, high=12), T(0))]))
_add(OpInfo("take_along_dim", ember.take_along_dim, [
    S(T(3, 4), Idx(3, 2, high=4), 1), S(T(3, 4), Idx(5, high=12)),
    S(T(3, 4), Idx(1, 4, high=3), 0), S(T(2, 3, 4), Idx(2, 3, 1, high=4), -1),
], out=True, zero_d=False, empty=[S(T(3, 4), Idx(3, 0, high=4), 1)]))
_add(OpInfo("rot90", ember.rot90, [S(T(3, 4)), S(T(3, 4), 2), S(T(2, 3, 4), -1, (1, 2)),
                                   S(T(3, 4), 3, (1, 0)), S(T(3, 4), 4)],
            zero_d=False))
_add(OpInfo("kron", ember.kron, [S(T(2, 3), T(3, 2)), S(T(3), T(2, 2)),
                                 S(T(2, 1, 2), T(2, 3))], out=True, zero_d=[S(T(), T(2))]))
_add(OpInfo("block_diag", lambda *t: ember.block_diag(*t), [
    S(T(2, 3), T(3, 2)), S(T(2), T(3, 1)), S(T(2, 2), T(1, 3), T(2, 1)),
], zero_d=[S(T(), T())], empty=[S(T(0, 2), T(2, 0))]))
_add(OpInfo("cartesian_prod", lambda *t: ember.cartesian_prod(*t), [
    S(T(3), T(2)), S(T(4)), S(T(2), T(3), T(2)),
], zero_d=False, empty=[S(T(0), T(3))]))
_add(OpInfo("combinations", ember.combinations, [
    S(T(4)), S(T(5), 3), S(T(4), with_replacement=True), S(T(3), r=1), S(T(3), 4),
], zero_d=False, empty=[S(T(0))]))
_add(OpInfo("vander", ember.vander, [
    S(T(4, low=-2, high=2)), S(T(3, low=-2, high=2), 5),
    S(T(4, low=-2, high=2), increasing=True), S(T(3), N=1),
], zero_d=False, empty=[S(T(0))]))
_add(OpInfo("tensordot", ember.tensordot, [
    S(T(2, 3, 4), T(3, 4, 5)), S(T(3, 4), T(4, 5), 1), S(T(2, 3), T(3, 2), 0),
    S(T(2, 3, 4), T(4, 2), ([0, 2], [1, 0])),
], out=True, zero_d=False, empty=False))

# ---- more creation: index grids, log-spaced values, ranges, windows -------------------------
for _n in ("tril_indices", "triu_indices"):
    _f = getattr(ember, _n)
    _add(OpInfo(_n, None, [
        S(fn=lambda _f=_f, **k: _f(4, 3, **k), dtype=DTYPE, device=DEVICE),
        S(fn=lambda _f=_f, **k: _f(3, 5, 1, **k), dtype=DTYPE, device=DEVICE),
        S(fn=lambda _f=_f, **k: _f(4, 4, -1, **k), dtype=DTYPE, device=DEVICE),
        S(fn=lambda _f=_f, **k: _f(3, 4, -5, **k), dtype=DTYPE, device=DEVICE),
    ], zero_d=False, empty=[S(fn=lambda _f=_f, **k: _f(0, 3, **k), dtype=DTYPE,
                              device=DEVICE)]))
_add(OpInfo("logspace", None, [
    S(fn=lambda **k: ember.logspace(-1, 2, 7, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.logspace(0, 3, 4, base=2, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.logspace(2, 2, 1, **k), dtype=DTYPE, device=DEVICE),
], zero_d=False, empty=[S(fn=lambda **k: ember.logspace(0, 1, 0, **k), dtype=DTYPE,
                          device=DEVICE)]))
def _range(*args, **kwargs):
    """``ember.range`` without its deprecation warning (PyTorch's, tested elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ember.range(*args, **kwargs)


_add(OpInfo("range", None, [
    S(fn=lambda **k: _range(0, 5, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: _range(-1.5, 2, 0.5, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: _range(5, -3, -2, **k), dtype=DTYPE, device=DEVICE),
], zero_d=False, empty=False))
_add(OpInfo("window", None, [
    S(fn=lambda **k: ember.hann_window(8, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.hann_window(7, periodic=False, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.hamming_window(6, True, 0.5, 0.4, **k), dtype=DTYPE,
      device=DEVICE),
    S(fn=lambda **k: ember.blackman_window(9, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.bartlett_window(5, periodic=False, **k), dtype=DTYPE,
      device=DEVICE),
    S(fn=lambda **k: ember.kaiser_window(6, beta=5.0, **k), dtype=DTYPE, device=DEVICE),
    S(fn=lambda **k: ember.hann_window(1, **k), dtype=DTYPE, device=DEVICE),
], zero_d=False, empty=[S(fn=lambda **k: ember.hann_window(0, **k), dtype=DTYPE,
                          device=DEVICE)], scale=2))

# ---- sampling: the device's stream must be the CPU's (same seed, same values) ---------------
_add(OpInfo("bernoulli", ember.bernoulli, [
    S(T(3, 4, low=0, high=1), generator=GEN(5)),
    S(T(3, 4), 0.3, generator=GEN(6)),
    S(T(3, 4), T(3, 4, low=0, high=1), generator=GEN(7)),
], inplace=_method("bernoulli_"), out=True))
_add(OpInfo("multinomial", ember.multinomial, [
    S(T(5, low=0.1, high=1), 3, generator=GEN(5)),
    S(T(3, 5, low=0.1, high=1), 8, replacement=True, generator=GEN(6)),
    S(T(3, 6, low=0, high=1, zeros=0.3), 2, generator=GEN(7)),
], out=True, zero_d=False, empty=False))
_add(OpInfo("poisson", ember.poisson, [
    S(T(3, 4, low=0, high=5), generator=GEN(3)), S(T(20, low=10, high=40), generator=GEN(4)),
]))
_add(OpInfo("binomial", ember.binomial, [
    S(T(3, 4, low=0, high=10), T(3, 4, low=0, high=1), generator=GEN(3)),
    S(T(8, low=20, high=60), T(8, low=0, high=1), generator=GEN(4)),
]))


def _sampler(name, *args):
    def call(x, generator, **kwargs):
        return getattr(x, name + "_")(*args, generator=generator, **kwargs)
    call.__name__ = f"Tensor.{name}_"
    return call


for _n, _a in (("exponential", (2.0,)), ("geometric", (0.3,)), ("log_normal", (0.5, 0.4)),
               ("cauchy", (0.5, 2.0)), ("random", ())):
    _add(OpInfo(_n, _sampler(_n, *_a), [S(T(3, 4), generator=GEN(5), mutates=True),
                                        S(T(2, 3, 4), generator=GEN(6), mutates=True)],
                inplace=_sampler(_n, *_a), scale=4))
OP_DB["random"].samples += [S(T(3, 4), generator=GEN(7), mutates=True,
                              fn=lambda x, **k: x.random_(-3, 10, **k)),
                            S(T(3, 4), generator=GEN(8), mutates=True,
                              fn=lambda x, **k: x.random_(5, **k))]

# ---- linear algebra: factorizations and solvers (dispatcher/defs/linalg.py) --------------
# The LAPACK kernels run on the CPU for every device; the inputs are made well conditioned
# (diagonally dominant, symmetric positive definite) inside the call, so the layouts still
# reach the op.
_LA = ember.linalg
_FLT = (F32, F64)


def _eye_like(a):
    return ember.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _wc(a):
    """``a + 4 I``: for entries in [-1, 1] and n <= 4, diagonally dominant."""
    return a + 4 * _eye_like(a)


def _sym(a):
    return a + a.mT


def _spd(a):
    return a @ a.mT + a.shape[-1] * _eye_like(a)


def _sq(*shape):
    return T(*shape, low=-1, high=1)


def _la(name, fn, samples, **kw):
    _add(OpInfo(name, fn, samples, zero_d=False, empty=kw.pop("empty", False),
                dtypes=_FLT, scale=kw.pop("scale", 4), **kw))


_la("linalg_det", _LA.det, [S(T(3, 3)), S(T(2, 4, 4)), S(T(1, 1))], empty=[S(T(0, 0))])
_la("linalg_slogdet_packed", _LA.slogdet, [S(T(3, 3)), S(T(2, 4, 4))])
_la("linalg_inv", lambda a: _LA.inv(_wc(a)), [S(_sq(3, 3)), S(_sq(2, 4, 4))])
_la("linalg_solve", lambda a, b, **k: _LA.solve(_wc(a), b, **k), [
    S(_sq(3, 3), T(3, 2)), S(_sq(2, 3, 3), T(2, 3, 1)), S(_sq(3, 3), T(2, 3), left=False)])
_la("linalg_solve_triangular", lambda a, b, **k: _LA.solve_triangular(_wc(a), b, **k), [
    S(_sq(3, 3), T(3, 2), upper=True), S(_sq(3, 3), T(3, 2), upper=False, unitriangular=True),
    S(_sq(2, 3, 3), T(2, 2, 3), upper=True, left=False)])
_la("linalg_trsm", lambda a, b, **k: _LA.solve_triangular(_wc(a), b, **k), [
    S(_sq(3, 3), T(3, 2), upper=False), S(_sq(3, 3), T(2, 3), upper=True, left=False)],
    grad=False)
_la("linalg_cholesky", lambda a, **k: _LA.cholesky(_spd(a), **k), [
    S(_sq(3, 3)), S(_sq(2, 3, 3), upper=True)])
_la("linalg_cholesky_ex", lambda a, **k: _LA.cholesky_ex(_spd(a), **k), [
    S(_sq(3, 3)), S(_sq(2, 3, 3), upper=True),
    S(T(3, 3), fn=lambda a: _LA.cholesky_ex(-_spd(a)))])       # not positive definite: info
_la("linalg_qr_packed", _LA.qr, [S(T(4, 3)), S(T(3, 4)), S(T(2, 4, 3), mode="complete")])
_la("linalg_qr", _LA.qr, [S(T(4, 3), mode="r"), S(T(3, 4), "complete")], grad=False)
_la("geqrf", ember.geqrf, [S(T(4, 3)), S(T(3, 4)), S(T(2, 3, 3))])
_la("linalg_householder_product", _LA.householder_product, [
    S(T(4, 3), T(3)), S(T(4, 3), T(2)), S(T(2, 3, 3), T(2, 3))])
_la("ormqr", ember.ormqr, [
    S(T(4, 3), T(3), T(4, 2)), S(T(4, 3), T(2), T(4, 2), transpose=True),
    S(T(3, 3), T(3), T(2, 3), left=False)])
_la("linalg_svd_packed", _LA.svd, [S(T(4, 3)), S(T(3, 4), full_matrices=False),
                                   S(T(2, 3, 3))])
_la("linalg_svd", _LA.svd, [S(T(4, 3), full_matrices=False), S(T(3, 4))], grad=False)
_la("linalg_svdvals", _LA.svdvals, [S(T(4, 3)), S(T(2, 3, 5))])
_la("linalg_eigh_packed", lambda a, *r, **k: _LA.eigh(_sym(a), *r, **k), [
    S(T(3, 3)), S(T(2, 4, 4), "U")])
_la("linalg_eigh", lambda a, *r, **k: _LA.eigh(_sym(a), *r, **k), [S(T(3, 3))], grad=False)
_la("linalg_eigvalsh", lambda a, *r, **k: _LA.eigvalsh(_sym(a), *r, **k), [
    S(T(3, 3)), S(T(2, 4, 4), UPLO="U")])
_la("linalg_pinv", _LA.pinv, [
    S(T(4, 3)), S(T(3, 4)), S(T(3, 3), fn=lambda a: _LA.pinv(_sym(a), hermitian=True))])
_la("linalg_lstsq_solution", lambda a, b: _LA.lstsq(a, b).solution, [
    S(T(5, 3), T(5, 2)), S(T(2, 4, 3), T(2, 4, 1))])
_la("linalg_lstsq", _LA.lstsq, [S(T(5, 3), T(5, 2), driver="gelsd"),
                                S(T(5, 3), T(5, 2), driver="gelsy")], grad=False)
_la("linalg_matrix_exp", _LA.matrix_exp, [S(_sq(3, 3)), S(_sq(2, 4, 4)), S(T(2, 2))])


def _fft_pairs_call(x, sign):
    """fft_pairs through ember.fft: real pairs (..., n, 2) as complex, transformed."""
    z = ember.view_as_complex(x.contiguous())
    return ember.view_as_real(ember.fft.fft(z) if sign < 0 else ember.fft.ifft(z, norm="forward"))


_la("rfft_real", lambda x: ember.view_as_real(ember.fft.rfft(x)),
    [S(T(4, 8)), S(T(2, 3, 70)), S(T(131)), S(T(3, 13))])
_la("fft_pairs", _fft_pairs_call, [S(T(4, 8, 2), -1), S(T(2, 3, 70, 2), 1), S(T(131, 2), -1),
                                   S(T(3, 12, 2), 1)])
_la("linalg_lu_factor_ex", _LA.lu_factor_ex, [S(T(3, 3)), S(T(2, 4, 4)), S(T(3, 4))])
_la("linalg_lu_solve", lambda a, b, **k: _LA.lu_solve(*_LA.lu_factor(_wc(a)), b, **k), [
    S(_sq(3, 3), T(3, 2)), S(_sq(3, 3), T(2, 3), left=False),
    S(_sq(2, 3, 3), T(2, 3, 1), adjoint=True)])
_la("linalg_lu_pivots_to_permutation", _LA.lu, [S(T(3, 3)), S(T(4, 3)), S(T(2, 3, 4))],
    grad=False)
_la("linalg_ldl_factor_ex", lambda a, **k: _LA.ldl_factor_ex(_sym(a), **k), [
    S(T(3, 3)), S(T(2, 4, 4))])
_la("linalg_ldl_solve", lambda a, b: _LA.ldl_solve(*_LA.ldl_factor(_sym(_wc(a))), b), [
    S(_sq(3, 3), T(3, 2)), S(_sq(2, 4, 4), T(2, 4, 1))])

del _n, _o, _f, _a


# ---- optimizer updates (multi-tensor, in place): the updated tensors are the result ------
def _adam_step(p, g, m, v, p2, g2, *, amsgrad=False, **kw):
    """Two parameters (the second of another shape) through ``adam_step_``, two steps."""
    state = [t.clone() for t in (p, m, v.abs(), p2, g2 * 0.5, g2.abs())]
    p, m, v, p2, m2, v2 = state
    mx = [v * 1.5, v2 * 0.5] if amsgrad else []
    steps = [ember.tensor(3.0), ember.tensor(0.0, dtype=F64)]
    attrs = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-3,
                 maximize=False, decoupled_weight_decay=False)
    attrs.update(kw)
    for _ in range(2):
        _OPT.adam_step_([p, p2], [g, g2], [m, m2], [v, v2], mx, steps, amsgrad=amsgrad,
                        **attrs)
    return (p, m, v, p2, m2, v2, *mx, *(s.to(p.device) for s in steps))  # (host counters)


def _sgd_step(p, g, b, *, first=False, **kw):
    p, b = p.clone(), b.clone()
    attrs = dict(lr=0.1, weight_decay=0.0, momentum=0.9, dampening=0.0, nesterov=False,
                 maximize=False)
    attrs.update(kw)
    _OPT.sgd_step_([p], [g], [b], is_first_step=first, **attrs)
    _OPT.sgd_step_([p], [g], [b], is_first_step=False, **attrs)
    return p, b


_add(OpInfo("adam_step_", _adam_step, [
    S(T(3, 4), T(3, 4), T(3, 4), T(3, 4), T(5), T(5)),
    S(T(3, 4), T(3, 4), T(3, 4), T(3, 4), T(2, 2), T(2, 2), amsgrad=True, weight_decay=0.1),
    S(T(6), T(6), T(6), T(6), T(1), T(1), maximize=True, weight_decay=0.2,
      decoupled_weight_decay=True),
], zero_d=False, grad=False, dtypes=(F32, F64)))
_add(OpInfo("sgd_step_", _sgd_step, [
    S(T(3, 4), T(3, 4), T(3, 4)), S(T(3, 4), T(3, 4), T(3, 4), first=True, nesterov=True,
                                    weight_decay=0.1),
    S(T(5), T(5), T(5), momentum=0.0, maximize=True),
    S(T(5), T(5), T(5), momentum=0.5, dampening=0.3),
], grad=False, dtypes=(F32, F64)))
