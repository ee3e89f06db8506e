"""Elementwise ops: each one's signature, promotion and scalar body.

The bodies are the single source of every backend's elementwise kernels (C++ for cpu and
cuda, OpenCL C) and, for a backend without a kernel, of the op's composite. A body is
given per dtype kind where semantics differ (see ``expr.py``). ``precise(name, args,
fallback)`` names the library function that computes ``fallback`` more accurately;
kernels call the function, composites compute the fallback from primitives.

Adding an op: one ``unary``/``binary``/``ternary`` line here (plus its gradient formula),
a line in ``docs/ops.md``; kernels, frontend functions and tests follow from the table.
"""
from __future__ import annotations

import math

from ..expr import (BOOL, T, attr, call, cast, inputs, nan_max, nan_min, precise, where)
from ..schema import Check, defop

__all__ = ["unary", "binary", "ternary"]

exp, log, sin, cos, sqrt, erf, floor, fmod, pow_ = (
    lambda v: call("exp", v), lambda v: call("log", v), lambda v: call("sin", v),
    lambda v: call("cos", v), lambda v: call("sqrt", v), lambda v: call("erf", v),
    lambda v: call("floor", v), lambda a_, b_: call("fmod", a_, b_),
    lambda a_, b_: call("pow", a_, b_))


def unary(name, scalar, *, promotion="int_to_float", primitive=False, differentiable=True,
          domain=None, doc=""):
    return defop(name, "elementwise", f"{name}(Tensor self) -> Tensor", promotion=promotion,
                 primitive=primitive, differentiable=differentiable, scalar=scalar,
                 domain=domain, doc=doc)


def binary(name, scalar, *, promotion="default", primitive=False, differentiable=True,
           checks=(), modes=None, signature=None, domain=None, doc=""):
    return defop(name, "elementwise",
                 signature or f"{name}(Tensor self, Tensor other) -> Tensor",
                 promotion=promotion, primitive=primitive, differentiable=differentiable,
                 scalar=scalar, checks=checks, modes=modes, domain=domain, doc=doc)


def ternary(name, signature, scalar, *, promotion="default", primitive=False, attrs=None,
            differentiable=True, doc=""):
    return defop(name, "elementwise", signature, promotion=promotion, primitive=primitive,
                 differentiable=differentiable, scalar=scalar, attrs=attrs, doc=doc)


def absolute(v):
    """|v| (libm's fabs; the fallback for backends computing it from primitives)."""
    return precise("fabs", (v,), where(v < 0, -v, v))


def _round_half_even(v):
    r = floor(v)
    frac = v - r
    up = r + 1
    tie = where(fmod(r, 2) != 0, up, r)
    return where(frac > 0.5, up, where(frac < 0.5, r, tie))


x = inputs("x")
a, b = inputs("a", "b")
POS = (0.1, 4.0)

# ---- unary: floating-point math (integers compute in the default float dtype) -------------
unary("exp", {"float": exp(x)}, primitive=True)
unary("log", {"float": log(x)}, primitive=True, domain=POS)
unary("sin", {"float": sin(x)}, primitive=True)
unary("cos", {"float": cos(x)}, primitive=True)
unary("sqrt", {"float": sqrt(x)}, primitive=True, domain=(0.0, 4.0))
unary("erf", {"float": erf(x)}, primitive=True)
unary("expm1", {"float": precise("expm1", (x,), exp(x) - 1)})
unary("log1p", {"float": precise("log1p", (x,), log(1 + x))}, domain=(-0.9, 3.0))
unary("log2", {"float": precise("log2", (x,), log(x) * (1 / math.log(2.0)))}, domain=POS)
unary("rsqrt", {"float": precise("rsqrt", (x,), 1 / sqrt(x))}, domain=POS)
unary("tan", {"float": precise("tan", (x,), sin(x) / cos(x))}, domain=(-1.2, 1.2))
# 1 - 2 / (exp(2x) + 1) saturates cleanly to ±1 where exp overflows or underflows
unary("tanh", {"float": precise("tanh", (x,), 1 - 2 / (exp(2 * x) + 1))})
unary("sigmoid", {"float": 1 / (1 + exp(-x))})
unary("reciprocal", {"float": 1 / x})

# ---- unary: keep the dtype (rounding is the identity on integers) --------------------------
unary("floor", {"float": floor(x), "integral": x}, promotion="default", primitive=True)
unary("ceil", {"float": precise("ceil", (x,), -floor(-x)), "integral": x},
      promotion="default")
unary("trunc", {"float": precise("trunc", (x,), where(x < 0, -floor(-x), floor(x))),
                "integral": x}, promotion="default")
unary("round", {"float": precise("rint", (x,), _round_half_even(x)), "integral": x},
      promotion="default", doc="half to even")
unary("neg", {"num": -x}, promotion="default")
unary("abs", {"float": absolute(x), "sint": where(x < 0, -x, x), "uint": x},
      promotion="default")
unary("sign", {"num": cast(x > 0, T) - cast(x < 0, T), "uint": cast(x > 0, T),
               "bool": x}, promotion="default", doc="sign(nan) is 0, as PyTorch")
unary("bitwise_not", {"integral": ~x}, promotion="integral", primitive=True,
      differentiable=False)
for _n in ("isnan", "isinf", "isfinite"):
    unary(_n, {"any": call(_n, x)}, promotion="bool_out", differentiable=False)
unary("logical_not", {"bool": ~x}, promotion="logical", differentiable=False)

# ---- binary arithmetic (integers wrap; bool: + is or, * is and) -----------------------------
binary("add", {"num": a + b, "bool": a | b}, primitive=True)
binary("sub", {"num": a - b}, primitive=True)
binary("mul", {"num": a * b, "bool": a & b}, primitive=True)
_ZERO_DIV = Check(1, b == 0, ("sint", "uint"), "zero_div")
binary("div", {"float": a / b}, primitive=True, checks=(_ZERO_DIV,),
       signature="div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor",
       modes={"rounding_mode": {
           "trunc": {"float": call("trunc", a / b), "int": call("idiv_trunc", a, b)},
           "floor": {"float": call("fdiv_floor", a, b), "int": call("idiv_floor", a, b)}}})
binary("maximum", {"any": nan_max(a, b)}, primitive=True)
binary("minimum", {"any": nan_min(a, b)}, primitive=True)
binary("fmod", {"float": fmod(a, b), "int": call("imod", a, b)}, primitive=True,
       checks=(_ZERO_DIV,), doc="C's fmod: the result takes the dividend's sign")
binary("pow", {"float": pow_(a, b), "int": call("ipow", a, b)}, primitive=True,
       checks=(Check(1, b < 0, ("sint",), "neg_pow"),))


def _remainder(m):  # Python's %: the result takes the divisor's sign
    return where((m != 0) & ((m < 0) != (b < 0)), m + b, m)


binary("remainder", {"float": _remainder(fmod(a, b)), "sint": _remainder(call("imod", a, b)),
                     "uint": call("imod", a, b)}, checks=(_ZERO_DIV,))

# ---- comparisons, bitwise and logical ops ----------------------------------------------------
for _n, _e in (("eq", a == b), ("lt", a < b)):
    binary(_n, {"any": _e}, promotion="bool_out", primitive=True, differentiable=False)
for _n, _e in (("ne", a != b), ("le", a <= b), ("gt", a > b), ("ge", a >= b)):
    binary(_n, {"any": _e}, promotion="bool_out", differentiable=False)
for _n, _e in (("bitwise_and", a & b), ("bitwise_or", a | b), ("bitwise_xor", a ^ b)):
    binary(_n, {"integral": _e}, promotion="integral", primitive=True, differentiable=False)
for _n, _e in (("logical_and", a & b), ("logical_or", a | b), ("logical_xor", a ^ b)):
    binary(_n, {"bool": _e}, promotion="logical", differentiable=False)

# ---- ternary -----------------------------------------------------------------------------------
_c, _p, _q = inputs("cond", "a", "b", types={"cond": BOOL})
ternary("where", "where(Tensor condition, Tensor self, Tensor other) -> Tensor",
        {"any": where(_c, _p, _q)}, promotion="none", primitive=True)
_s, _e, _w = inputs("a", "b", "w")
_d = _e - _s
ternary("lerp", "lerp(Tensor self, Tensor end, Tensor weight) -> Tensor",
        {"float": where(absolute(_w) < 0.5, _s + _w * _d, _e - _d * (1 - _w))},
        doc="exact at both ends: a + w (b - a) for |w| < 0.5, b - (b - a)(1 - w) above")
_s, _t1, _t2 = inputs("a", "t1", "t2")
ternary("addcmul",
        "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        {"num": _s + attr("value") * (_t1 * _t2)}, attrs={"value": 1})
ternary("addcdiv",
        "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        {"float": _s + attr("value") * (_t1 / _t2)}, attrs={"value": 1})
_v, _lo, _hi = inputs("x", "lo", "hi")
ternary("clamp", "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
        {"num": nan_min(nan_max(_v, _lo), _hi)}, doc="a NaN input or bound gives NaN")
