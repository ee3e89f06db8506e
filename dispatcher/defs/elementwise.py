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

from .. import core as C
from .. import dtypes as D
from .. import expr as X
from .. import ops as O
from ..expr import (BOOL, T, attr, call, cast, erf, exp, floor, fmod, inputs, log, nan_max,
                    nan_min, precise, sin, cos, sqrt, where)
from ..schema import CHECK_MESSAGES, OPS, Check, composite, defop, gradient

__all__ = ["unary", "binary", "ternary", "pow_scalar", "POW_SPECIAL"]

_NO_INPLACE = ("function", "method", "out")


def unary(name, scalar, *, promotion="int_to_float", primitive=False, differentiable=True,
          domain=None, doc="", variants=None, barebones=False):
    # PyTorch builds the unary ops that keep their dtype with every operand of one dtype:
    # their out= must have the result's dtype (floating-point math casts to out's)
    # (and the predicates' out= must be bool: "does not support non-boolean outputs")
    out_dtype = "exact" if promotion in ("default", "integral", "bool_out") else None
    return defop(name, "elementwise", f"{name}(Tensor self) -> Tensor", promotion=promotion,
                 primitive=primitive, differentiable=differentiable, scalar=scalar,
                 domain=domain, doc=doc, variants=variants, out_dtype=out_dtype,
                 barebones=barebones)


def binary(name, scalar, *, promotion="default", primitive=False, differentiable=True,
           checks=(), modes=None, signature=None, domain=None, doc="", node=None,
           variants=None, self_type="Tensor", other_type="Tensor|Scalar", barebones=False):
    """``self_type`` / ``other_type``: ``Tensor|Scalar`` where PyTorch takes a number too."""
    return defop(name, "elementwise",
                 signature or f"{name}({self_type} self, {other_type} other) -> Tensor",
                 promotion=promotion, primitive=primitive, differentiable=differentiable,
                 scalar=scalar, checks=checks, modes=modes, domain=domain, doc=doc, node=node,
                 variants=variants, barebones=barebones)


def ternary(name, signature, scalar, *, promotion="default", primitive=False, attrs=None,
            differentiable=True, doc="", variants=None, out_dtype=None, meta=None, node=None,
            barebones=False):
    return defop(name, "elementwise", signature, promotion=promotion, primitive=primitive,
                 differentiable=differentiable, scalar=scalar, attrs=attrs, doc=doc,
                 variants=variants, out_dtype=out_dtype, meta=meta, node=node,
                 barebones=barebones)


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


def _tanh(v):
    """tanh(v): libm's, or 1 - 2 / (exp(2v) + 1), which saturates cleanly to ±1 where exp
    overflows or underflows."""
    return precise("tanh", (v,), 1 - 2 / (exp(2 * v) + 1))


unary("tanh", {"float": _tanh(x)})
unary("sigmoid", {"float": 1 / (1 + exp(-x))})
unary("reciprocal", {"float": 1 / x})



# ---- unary: inverse and hyperbolic trigonometry, exp2, log10 ----------------------------------
# (the fallbacks compute with the primitives only; kernels call libm)
def _signed_like(x, r):
    """``r`` (computed for |x|) with x's sign; ±0 and NaN stay themselves."""
    return where(x < 0, -r, where(x == 0, x, r))


def _atan_fallback(x):
    """atan from square roots and a series: fold |x| > 1 onto 1/|x| (atan = pi/2 - atan(1/x)),
    halve the angle three times (atan t = 2 atan(t / (1 + sqrt(1 + t^2)))), leaving
    |t| <= tan(pi/32), where nine terms of the Taylor series reach double precision."""
    ax = absolute(x)
    big = ax > 1
    t = where(big, 1 / ax, ax)
    for _ in range(3):
        t = t / (1 + sqrt(1 + t * t))
    t2 = t * t
    s = X.const(1 / 17)                      # the series' coefficients (-1)^k / (2k + 1)
    for k in range(7, -1, -1):
        s = s * t2 + (-1) ** k / (2 * k + 1)
    r = 8 * t * s
    return _signed_like(x, where(big, math.pi / 2 - r, r))


def _atan2_fallback(y, x):
    """C's atan2 from atan: the angle of (|x|, |y|), then the quadrant from the signs (of
    signed zeros too)."""
    r = _atan_fallback((absolute(y) + 0.0) / (absolute(x) + 0.0))   # (+0.0: |-0| is +0)
    r = where(X.isinf(y) & X.isinf(x), math.pi / 4, where((y == 0) & (x == 0), 0.0, r))
    x_neg = (x < 0) | ((x == 0) & (1 / x < 0))
    y_neg = (y < 0) | ((y == 0) & (1 / y < 0))
    r = where(x_neg, math.pi - r, r)
    r = where(y_neg, -r, r)
    return where(X.isnan(x) | X.isnan(y), x + y, r)


def _expm1_x(v):
    return call("expm1", v)     # (composites: the expm1 op, accurate near 0)


def _log1p_x(v):
    return call("log1p", v)


_LN2_C = math.log(2.0)
_atan_x = precise("atan", (x,), _atan_fallback(x))
unary("atan", {"float": _atan_x})
unary("asin", {"float": precise("asin", (x,), _atan_fallback(x / sqrt((1 - x) * (1 + x))))},
      domain=(-0.95, 0.95))
unary("acos", {"float": precise("acos", (x,), 2 * _atan_fallback(sqrt((1 - x) / (1 + x))))},
      domain=(-0.95, 0.95))
unary("sinh", {"float": precise("sinh", (x,), where(
    x == 0, x, (_expm1_x(x) - _expm1_x(-x)) * 0.5))})
unary("cosh", {"float": precise("cosh", (x,), (exp(x) + exp(-x)) * 0.5)})
_ax = absolute(x)
unary("asinh", {"float": precise("asinh", (x,), _signed_like(x, where(
    _ax > 1e8, log(_ax) + _LN2_C, _log1p_x(_ax + _ax * _ax / (1 + sqrt(1 + _ax * _ax))))))})
unary("acosh", {"float": precise("acosh", (x,), where(x < 1, math.nan, where(
    x > 1e8, log(x) + _LN2_C, _log1p_x((x - 1) + sqrt(2 * (x - 1) + (x - 1) * (x - 1))))))},
      domain=(1.1, 4.0))
unary("atanh", {"float": precise("atanh", (x,), _signed_like(
    x, 0.5 * _log1p_x(2 * _ax / (1 - _ax))))}, domain=(-0.9, 0.9))
unary("exp2", {"float": precise("exp2", (x,), X.pow(2.0, x))})
unary("log10", {"float": precise("log10", (x,), log(x) * (1 / math.log(10.0)))}, domain=POS)
unary("deg2rad", {"float": x * (math.pi / 180)})
unary("rad2deg", {"float": x * (180 / math.pi)})
unary("frac", {"float": x - precise("trunc", (x,), where(x < 0, -floor(-x), floor(x)))},
      promotion="default")
unary("sinc", {"float": where(x == 0, 1.0, sin(math.pi * x) / (math.pi * x))},
      doc="sin(pi x) / (pi x), 1 at 0")
unary("signbit", {"float": precise("copysign", (1.0, x), where(
    (x < 0) | ((x == 0) & (1 / x < 0)), -1.0, 1.0)) < 0, "sint": x < 0, "uint": x != x,
                  "bool": x != x}, promotion="bool_out", differentiable=False,
      variants=("function", "method", "out"), doc="the sign bit (of -0.0 and NaN too)",
      barebones=True)
unary("isposinf", {"float": x == math.inf, "integral": x != x}, promotion="bool_out",
      differentiable=False, variants=("function", "method", "out"), barebones=True)
unary("isneginf", {"float": x == -math.inf, "integral": x != x}, promotion="bool_out",
      differentiable=False, variants=("function", "method", "out"), barebones=True)

# ---- unary: keep the dtype (rounding is the identity on integers) --------------------------
# (PyTorch rounds integers to themselves, uint16 / uint32 / uint64 too, and rejects bool)
unary("floor", {"float": floor(x), "int": x}, promotion="default", primitive=True,
      barebones=True)
unary("ceil", {"float": precise("ceil", (x,), -floor(-x)), "int": x}, promotion="default",
      barebones=True)
unary("trunc", {"float": precise("trunc", (x,), where(x < 0, -floor(-x), floor(x))),
                "int": x}, promotion="default", barebones=True)
unary("round", {"float": precise("rint", (x,), _round_half_even(x)), "int": x},
      promotion="default", doc="half to even", barebones=True)
unary("neg", {"num": -x}, promotion="default")
unary("abs", {"float": absolute(x), "sint": where(x < 0, -x, x), "uint": x},
      promotion="default")
unary("sign", {"num": cast(x > 0, T) - cast(x < 0, T), "uint": cast(x > 0, T),
               "bool": x}, promotion="default", doc="sign(nan) is 0, as PyTorch")
unary("bitwise_not", {"integral": ~x}, promotion="integral", primitive=True,
      differentiable=False)
for _n in ("isnan", "isinf", "isfinite"):
    unary(_n, {"any": call(_n, x)}, promotion="bool_out", differentiable=False,
          variants=("function", "method"), barebones=True)  # (no out= in PyTorch)
unary("logical_not", {"bool": ~x}, promotion="logical", differentiable=False)

# ---- binary arithmetic (integers wrap; bool: + is or, * is and) -----------------------------
binary("add", {"num": a + b, "bool": a | b}, primitive=True, self_type="Tensor|Scalar")
binary("sub", {"num": a - b}, primitive=True, self_type="Tensor|Scalar",
       # (a number first is PyTorch's rsub(Tensor, Scalar): ``2 - t``)
       node=lambda ins: "SubBackward0" if isinstance(ins[0], C.TensorBase) else "RsubBackward1")
binary("mul", {"num": a * b, "bool": a & b}, primitive=True, self_type="Tensor|Scalar",
       barebones=True)
# the gradients of tanh and sigmoid from their outputs, one pass each (PyTorch's
# tanh_backward and sigmoid_backward; internal: no function or method of their own)
for _n, _body in (("tanh_backward", a * (1 - b * b)), ("sigmoid_backward", a * ((1 - b) * b))):
    binary(_n, {"float": _body}, other_type="Tensor", variants=(),
           signature=f"{_n}(Tensor grad_output, Tensor output) -> Tensor",
           doc="grad_output * (1 - output^2)" if _n == "tanh_backward"
           else "grad_output * (1 - output) * output")

# GELU and its gradient, one pass each (PyTorch's gelu and gelu_backward, the constants and
# the order of operations of its CPU kernels; internal: F.gelu and nn.GELU call them).
# approximate="tanh" is a mode; the default (PyTorch's "none", None here) is the erf form.
_GELU_A = math.sqrt(0.5)                              # 1 / sqrt(2)
_GELU_PDF = 2 / math.sqrt(math.pi) * math.sqrt(0.5) * 0.5   # 1 / sqrt(2 pi)
_GELU_B = math.sqrt(2.0) * 2 / math.sqrt(math.pi) * 0.5    # sqrt(2 / pi)
_GELU_K = 0.044715


def _gelu_tanh_inner(v):
    return _tanh(_GELU_B * (v + _GELU_K * (v * v * v)))


def _gelu_tanh_grad(g, v):
    t = _gelu_tanh_inner(v)
    right = 1 + t
    dright = (1 - t * t) * _GELU_B * (1 + 3 * _GELU_K * (v * v))
    return g * (0.5 * right + 0.5 * v * dright)


defop("gelu", "elementwise", "gelu(Tensor self, *, str? approximate=None) -> Tensor",
      promotion="default", variants=(),
      scalar={"float": x * 0.5 * (1 + erf(x * _GELU_A))},
      modes={"approximate": {"tanh": {"float": 0.5 * x * (1 + _gelu_tanh_inner(x))}}},
      doc="x Phi(x) (approximate='tanh': 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))))")
defop("gelu_backward", "elementwise",
      "gelu_backward(Tensor grad_output, Tensor x, *, str? approximate=None) -> Tensor",
      promotion="default", variants=(),
      scalar={"float": a * (0.5 * (1 + erf(b * _GELU_A))
                            + b * (_GELU_PDF * exp(-0.5 * (b * b))))},
      modes={"approximate": {"tanh": {"float": _gelu_tanh_grad(a, b)}}},
      doc="grad_output * gelu'(x)")
_ZERO_DIV = Check(1, b == 0, ("sint", "uint"), "zero_div")
binary("div", {"float": a / b}, primitive=True, checks=(_ZERO_DIV,),
       signature="div(Tensor|Scalar self, Tensor|Scalar other, *, str? rounding_mode=None) "
                 "-> Tensor",
       modes={"rounding_mode": {
           "trunc": {"float": call("trunc", a / b), "int": call("idiv_trunc", a, b)},
           "floor": {"float": call("fdiv_floor", a, b), "int": call("idiv_floor", a, b)}}})
binary("maximum", {"any": nan_max(a, b)}, primitive=True, variants=_NO_INPLACE,
       other_type="Tensor")
binary("minimum", {"any": nan_min(a, b)}, primitive=True, variants=_NO_INPLACE,
       other_type="Tensor")
binary("fmod", {"float": fmod(a, b), "int": call("imod", a, b)}, primitive=True,
       checks=(_ZERO_DIV,), doc="C's fmod: the result takes the dividend's sign")
binary("pow", {"float": call("pow", a, b), "int": call("ipow", a, b)}, primitive=True,
       self_type="Tensor|Scalar",
       # (a negative *tensor* exponent computes, as PyTorch: 1, -1 or 0; a negative Python
       # number exponent of an integer tensor raises in the entry point)
       node=lambda ins: (
           "PowBackward1" if all(isinstance(v, C.TensorBase) for v in ins) else
           "PowBackward0" if isinstance(ins[0], C.TensorBase) else "PowBackward2"))


def _remainder(m):  # Python's %: the result takes the divisor's sign
    return where((m != 0) & ((m < 0) != (b < 0)), m + b, m)


binary("remainder", {"float": _remainder(fmod(a, b)), "sint": _remainder(call("imod", a, b)),
                     "uint": call("imod", a, b)}, checks=(_ZERO_DIV,),
       self_type="Tensor|Scalar")

binary("hypot", {"float": precise("hypot", (a, b), sqrt(a * a + b * b))},
       other_type="Tensor", doc="sqrt(a^2 + b^2) without overflow or underflow in the squares")
binary("copysign", {"float": precise("copysign", (a, b), where(
    (b < 0) | ((b == 0) & (1 / b < 0)), -absolute(a), absolute(a)))},
       promotion="int_to_float", doc="|a| with b's sign bit (-0.0 counts as negative)")

binary("atan2", {"float": precise("atan2", (a, b), _atan2_fallback(a, b))},
       promotion="int_to_float", other_type="Tensor",
       doc="the angle of (b, a), in (-pi, pi], as C's atan2")
_hi = where(a < b, b, a)                                 # (std::max: NaN b loses)
binary("logaddexp", {"float": where(X.isinf(a) & (a == b), a,
                                    _hi + _log1p_x(exp(-absolute(a - b))))},
       other_type="Tensor", variants=_NO_INPLACE, doc="log(exp(a) + exp(b)) without overflow")
binary("logaddexp2", {"float": where(X.isinf(a) & (a == b), a, _hi + _log1p_x(precise(
    "exp2", (-absolute(a - b),), X.pow(2.0, -absolute(a - b)))) * (1 / _LN2_C))},
       other_type="Tensor", variants=_NO_INPLACE, doc="log2(2^a + 2^b) without overflow")
binary("fmax", {"any": where(X.isnan(b), a, where(X.isnan(a), b, where(a < b, b, a)))},
       other_type="Tensor", variants=_NO_INPLACE, doc="the larger; a NaN operand loses")
binary("fmin", {"any": where(X.isnan(b), a, where(X.isnan(a), b, where(b < a, b, a)))},
       other_type="Tensor", variants=_NO_INPLACE, doc="the smaller; a NaN operand loses")
binary("nextafter", {"float": precise("nextafter", (a, b), b)}, other_type="Tensor",
       differentiable=False,  # (the fallback is unused: the composite below computes it)
       doc="the next representable value after a towards b")


def _same_dtype_meta(args, attrs):
    if all(_is_t(v) for v in args) and args[0].dtype is not args[1].dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")


binary("heaviside", {"num": where(a == 0, b, cast(a > 0, T)), "bool": a | b},
       signature="heaviside(Tensor self, Tensor values) -> Tensor", differentiable=False,
       doc="values where self is 0, else (self > 0)")
OPS["heaviside"].meta = _same_dtype_meta
binary("gcd", {"int": X.igcd(a, b)}, other_type="Tensor", differentiable=False,
       doc="non-negative, gcd(0, 0) = 0")
_g = X.igcd(a, b)
_l = X.idiv_trunc(a, _g) * b
binary("lcm", {"sint": where(_l < 0, -_l, _l), "uint": _l}, other_type="Tensor",
       differentiable=False, doc="|a / gcd(a, b) * b|, 0 where gcd(a, b) is 0")
# (PyTorch: a shift by a negative amount or by the bit width or more gives 0, or the sign
# fill for >>; a * 2^b and floor(a / 2^b) wrap exactly as the shifts do)
_p2 = X.ipow(2, b)
binary("bitwise_left_shift", {"int": where(b < 0, 0, a * _p2)}, differentiable=False,
       self_type="Tensor|Scalar")
binary("bitwise_right_shift", {
    "sint": where((b < 0) | (_p2 <= 0), where(a < 0, -1, 0), X.idiv_floor(a, _p2)),
    "uint": X.idiv_floor(a, _p2)}, differentiable=False, self_type="Tensor|Scalar")
binary("xlogy", {"float": where(X.isnan(b), b, where(a == 0, 0.0, a * log(b)))},
       promotion="int_to_float", self_type="Tensor|Scalar", domain=(0.1, 3.0),
       doc="a * log(b), 0 where a is 0")

# ---- comparisons, bitwise and logical ops ----------------------------------------------------
# (uint16 / uint32 / uint64: PyTorch compares them for equality only)
for _n, _e in (("eq", a == b), ("lt", a < b)):
    binary(_n, {"any": _e}, promotion="bool_out", primitive=True, differentiable=False,
           barebones=_n == "eq")
for _n, _e in (("ne", a != b), ("le", a <= b), ("gt", a > b), ("ge", a >= b)):
    binary(_n, {"any": _e}, promotion="bool_out", differentiable=False, barebones=_n == "ne")
for _n, _e in (("bitwise_and", a & b), ("bitwise_or", a | b), ("bitwise_xor", a ^ b)):
    binary(_n, {"integral": _e}, promotion="integral", primitive=True, differentiable=False,
           self_type="Tensor|Scalar", barebones=True)
for _n, _e in (("logical_and", a & b), ("logical_or", a | b), ("logical_xor", a ^ b)):
    binary(_n, {"bool": _e}, promotion="logical", differentiable=False, other_type="Tensor")

# ---- ternary -----------------------------------------------------------------------------------
_c, _p, _q = inputs("cond", "a", "b", types={"cond": BOOL})
ternary("where", "where(Tensor condition, Tensor|Scalar self, Tensor|Scalar other) -> Tensor",
        {"any": where(_c, _p, _q)}, promotion="none", primitive=True, variants=_NO_INPLACE,
        out_dtype="exact", barebones=True)


def _is_t(v) -> bool:
    return isinstance(v, C.TensorBase)


def _lerp_meta(args, attrs):
    """PyTorch's lerp: ``end``, and a weight tensor with dims, of ``self``'s dtype; a 0-d
    weight joins type promotion (an int tensor with a 0-d float16 weight gives float16),
    a number does not and converts to the compute type; floats only."""
    x, end, w = args
    if not _is_t(x):
        return
    for arg, v in (("end", end), ("weight", w)):
        if _is_t(v) and (arg == "end" or v.shape) and v.dtype is not x.dtype:
            raise RuntimeError(f"lerp(): expected dtype {O.CPP_TYPE_NAMES[x.dtype.name]} for "
                               f"`{arg}` but got dtype {O.CPP_TYPE_NAMES[v.dtype.name]}")
    rt = D.result_type(x, end, w) if _is_t(w) else x.dtype
    if not rt.is_floating_point:
        raise NotImplementedError(f"lerp(): \"lerp_kernel_{'tensor' if _is_t(w) else 'scalar'}"
                                  f"\" not implemented for '{D.torch_name(rt)}' (lerp needs "
                                  f"floating-point tensors)")
    if not _is_t(w):
        O.checked_scalar(w, x.dtype, opmath=True)


def _addcmul_meta(args, attrs):
    """``value`` converts into the type the kernel computes in (the dtype; float for
    float16 and bfloat16)."""
    v = attrs.get("value", 1)
    if type(v) is int and -128 <= v <= 127:
        return  # (every dtype holds it: uint8 wraps negatives)
    if _is_t(args[0]) and args[0].dtype.is_floating_point and not abs(v) > 3.4e38:
        return  # (a float result computes in float or double: both hold it, NaN included)
    O.checked_scalar(v, D.result_type(*args), opmath=True)


def _addcdiv_meta(args, attrs):
    if all(_is_t(t) and not t.dtype.is_floating_point for t in args[1:]):
        raise RuntimeError(
            "addcdiv(): Integer division with addcdiv is no longer supported, and in a future "
            "release addcdiv will perform a true division of tensor1 and tensor2. The historic "
            "addcdiv behavior can be implemented as (input + value * ember.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    _addcmul_meta(args, attrs)


_s, _e, _w = inputs("a", "b", "w")
_d = _e - _s
ternary("lerp", "lerp(Tensor self, Tensor end, Tensor|Scalar weight) -> Tensor",
        {"float": where(absolute(_w) < 0.5, _s + _w * _d, _e - _d * (1 - _w))},
        doc="exact at both ends: a + w (b - a) for |w| < 0.5, b - (b - a)(1 - w) above",
        meta=_lerp_meta,  # a weight tensor with dims: one dtype for all (PyTorch's overloads)
        out_dtype=lambda args: "exact" if _is_t(args[2]) and args[2].shape else "cast")
_s, _t1, _t2 = inputs("a", "t1", "t2")
ternary("addcmul",
        "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        {"num": _s + attr("value") * (_t1 * _t2)}, attrs={"value": 1}, meta=_addcmul_meta)
ternary("addcdiv",
        "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        {"float": _s + attr("value") * (_t1 / _t2)}, attrs={"value": 1}, meta=_addcdiv_meta)
_v, _lo, _hi = inputs("x", "lo", "hi")
ternary("clamp", "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
        {"num": nan_min(nan_max(_v, _lo), _hi)}, doc="a NaN input or bound gives NaN",
        # number bounds: out= of the result's dtype; tensor bounds: any it casts to
        out_dtype=lambda args: "cast" if any(map(_is_t, args[1:])) else "exact",
        # (PyTorch's clamp.Tensor and clamp(Scalar) overloads)
        node=lambda ins: "ClampBackward0" if any(map(_is_t, ins[1:])) else "ClampBackward1")


# ---- composites: a body computed with tensor ops, unless given here -----------------------------
@composite("expm1")
def _expm1_composite(x):
    """Kahan: (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of u."""
    E = O.elementwise
    u = E("exp", x)
    um1 = E("sub", u, 1)
    accurate = E("div", E("mul", um1, x), E("log", u))
    res = O.where(E("eq", u, 1), x, accurate)
    return O.where(E("eq", um1, -1), um1, O.where(E("eq", u, math.inf), u, res))


@composite("log1p")
def _log1p_composite(x):
    """Kahan: log(u) * x / (u - 1) with u = 1 + x."""
    E = O.elementwise
    u = E("add", x, 1)
    accurate = E("div", E("mul", E("log", u), x), E("sub", u, 1))
    return O.where(E("eq", u, 1), x, O.where(E("eq", u, math.inf), u, accurate))


def _any(mask) -> bool:
    return bool(O.item(O.reduce("sum", mask)))


@composite("gcd")
def _gcd(a, b):
    """Euclid's algorithm on whole tensors: the remainder step where a is not yet 0."""
    E = O.elementwise
    a, b = E("abs", a), E("abs", b)
    while True:
        live = E("ne", a, 0)
        if not _any(live):
            return b
        r = E("fmod", b, O.where(live, a, 1))
        b = O.where(live, a, b)
        a = O.where(live, r, 0)


@composite("lcm")
def _lcm(a, b):
    E = O.elementwise
    g = _gcd(a, b)
    q = E("mul", E("div", a, O.where(E("eq", g, 0), 1, g), rounding_mode="trunc"), b)
    return E("abs", q) if a.dtype.is_signed else q


# (mantissa bits, least normal exponent, smallest subnormal, largest finite) per float dtype
_FLOAT_BITS = {"float64": (52, -1022, 2.0 ** -1074, 1.7976931348623157e308),
               "float32": (23, -126, 2.0 ** -149, 3.4028234663852886e38),
               "float16": (10, -14, 2.0 ** -24, 65504.0),
               "bfloat16": (7, -126, 2.0 ** -133, 3.3895313892515355e38)}


@composite("nextafter")
def _nextafter(a, b):
    """One step of a's spacing, found from its binary exponent: half a step where a is a
    power of two and moves towards 0; the subnormal minimum from 0; the largest finite
    value from an infinity."""
    E = O.elementwise
    bits, emin, tiny, big = _FLOAT_BITS[a.dtype.name]
    ax = E("abs", a)
    safe = O.where(E("eq", E("sub", ax, ax), 0), O.where(E("eq", ax, 0), 1.0, ax), 1.0)
    e = E("floor", E("log2", safe))
    p2 = E("pow", 2.0, e)
    e = O.where(E("gt", p2, safe), E("sub", e, 1), O.where(E("le", E("mul", p2, 2), safe),
                                                           E("add", e, 1), e))
    e = E("maximum", e, O.full(e.shape, float(emin), e.dtype, e.device))
    ulp = E("pow", 2.0, E("sub", e, bits))
    up = E("gt", b, a)
    shrink = E("ne", up, E("gt", a, 0))
    exact = E("logical_and", E("eq", safe, E("pow", 2.0, e)), E("gt", e, float(emin)))
    step = O.where(E("logical_and", shrink, exact), E("mul", ulp, 0.5), ulp)
    res = O.where(up, E("add", a, step), E("sub", a, step))
    def const(v):  # (in a's dtype: the float32 default would flush tiny and overflow big)
        return O.full(a.shape, v, a.dtype, a.device)
    res = O.where(E("eq", a, 0), O.where(up, const(tiny), const(-tiny)), res)
    res = O.where(E("isinf", a), O.where(E("gt", a, 0), const(big), const(-big)), res)
    res = O.where(E("eq", a, b), b, res)
    res = O.where(E("logical_or", E("isnan", a), E("isnan", b)), E("add", a, b), res)
    return O.cast(res, a.dtype)   # (the number branches above are in the default dtype)


_TENSOR_OPS = X.TensorOps(
    ew=O.elementwise, where=O.where, cast=O.cast,
    full=lambda like, v, is_bool: O.full(like.shape, v, D.bool_ if is_bool else like.dtype,
                                         like.device))


def _body_composite(o):
    """The op computed from its body with tensor ops (for backends without its kernel)."""
    bodies = o.bodies()
    mode_attr = o.mode_attr
    value_inputs = [v.value[0] for v in o.body_inputs() if v.value[2] != BOOL]

    def run(*ins, **attrs):
        mode = attrs.pop(mode_attr, None) if mode_attr else None
        ref = next(ins[i] for i in value_inputs if isinstance(ins[i], C.TensorBase))
        body = X.body_for(bodies[mode], X.kind_of(ref.dtype))
        if body is None:
            raise NotImplementedError(f"{o.name}(): not implemented for dtype "
                                      f"{ref.dtype.name}")
        kind = X.kind_of(ref.dtype)
        for c in o.checks:  # (a kernel checks its operands before it runs; so does this)
            if kind in c.kinds:
                bad = X.evaluate(c.pred, ins, attrs, _TENSOR_OPS)
                if bad if isinstance(bad, bool) else _any(bad):
                    raise RuntimeError(f"{o.name}(): {CHECK_MESSAGES[c.error]}")
        if ref.dtype in (D.float16, D.bfloat16):  # (kernels compute half types in float32)
            ins = tuple(O.cast(t, D.float32) if isinstance(t, C.TensorBase)
                        and t.dtype is ref.dtype else t for t in ins)
        return X.evaluate(body, ins, attrs, _TENSOR_OPS)
    run.__name__ = o.name
    return run


for _o in OPS.values():
    if _o.scalar is not None and not _o.primitive and _o.composite is None:
        _o.composite = _body_composite(_o)


# ---- gradient formulas (one vector-Jacobian product per op; see schema.Formula) --------------
E = O.elementwise
_LN2 = math.log(2.0)


@gradient("add")
def _(g):
    return g, g


@gradient("sub")
def _(g):
    return g, -g


# The formulas follow PyTorch's derivatives.yaml term for term (same products in the same
# order, the same masks), so that at 0, ±inf and NaN they give PyTorch's values, NaN and
# infinities included (tests/autograd/test_singular_grads.py compares them all).
def _zeros(g):
    """PyTorch's ``zeros_like(grad)``: 0 even where ``g`` is inf or NaN (``g * 0`` is not)."""
    return O.zeros(g.shape, g.dtype, g.device)


# (each input's gradient computed only when it requires grad: what it would read was not
# saved otherwise)
@gradient("mul", needs={"self": ("other",), "other": ("self",)})
def _(g, self, other):
    return (g * other if _requires(self) else None), (g * self if _requires(other) else None)


@gradient("div", needs={"self": ("other",), "other": ("self", "other")})
def _(g, self, other, rounding_mode=None):
    if rounding_mode is not None:  # piecewise constant: zeros, as PyTorch
        return (_zeros(g) if _requires(self) else None,
                _zeros(g) if _requires(other) else None)
    return ((g / other if _requires(self) else None),
            (-g * ((self / other) / other) if _requires(other) else None))


def _requires(v) -> bool:
    return getattr(v, "requires_grad", False) is True


def pow_scalar(x, e):
    """``x ** e`` for a number ``e`` as PyTorch computes it: sqrt, rsqrt, reciprocal and
    products for e = ±0.5, -1, 2, 3, -2 (sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where
    C's pow gives +0.0 and +inf)."""
    special = POW_SPECIAL.get(e)
    if special is not None:
        return special(x)
    return E("pow", x, e)


#: the exponents PyTorch's CPU pow computes without pow(): its results' bits
POW_SPECIAL = {0.5: lambda x: E("sqrt", x), -0.5: lambda x: E("rsqrt", x),
               -1: lambda x: E("reciprocal", x), 2: lambda x: x * x,
               3: lambda x: x * x * x, -2: lambda x: 1 / (x * x)}


@gradient("pow", needs={"self": ("self", "other"), "other": ("self", "other", "result")})
def _(g, self, other, result):
    """PyTorch's pow_backward / pow_backward_self / pow_backward_exponent: no gradient to
    the base where the exponent is 0; none to the exponent where the base is 0 and the
    exponent is >= 0; log of a negative base is NaN."""
    ga = gb = None
    if _requires(self):
        if isinstance(other, (int, float)):
            ga = _zeros(g) if other == 0 else g * (other * pow_scalar(self, other - 1))
        else:
            ga = O.where(other == 0, 0.0, g * (other * E("pow", self, other - 1)))
    if _requires(other):
        if isinstance(self, (int, float)):
            if self == 0:
                gb = g * O.where(other >= 0, 0.0, result * -math.inf)
            else:
                gb = g * (result * (math.log(self) if self > 0 else math.nan))
        else:
            gb = g * O.where((self == 0) & (other >= 0), 0.0, result * E("log", self))
    return ga, gb


@gradient("maximum")
def _(g, self, other):
    """Ties share the gradient; where either is NaN both get all of it (PyTorch)."""
    tie = O.where(self == other, g / 2, g)
    return O.where(self < other, 0.0, tie), O.where(self > other, 0.0, tie)


@gradient("minimum")
def _(g, self, other):
    tie = O.where(self == other, g / 2, g)
    return O.where(self > other, 0.0, tie), O.where(self < other, 0.0, tie)


@gradient("fmod")
def _(g, self, other):
    return g, -g * E("div", self, other, rounding_mode="trunc")


@gradient("remainder")
def _(g, self, other):
    return g, -g * E("div", self, other, rounding_mode="floor")


@gradient("hypot")
def _(g, self, other, result):
    return g * self / result, g * other / result


@gradient("copysign")
def _(g, self, other, result):
    # result / self is the sign flip (0 where self is 0); nothing flows to other's sign
    ratio = O.where(self == 0, 0.0, result / O.where(self == 0, 1.0, self))
    return g * ratio, (_zeros(g) if _requires(other) else None)


@gradient("neg")
def _(g):
    return (-g,)


@gradient("exp")
def _(g, result):
    return (g * result,)


@gradient("expm1")
def _(g, result):
    return (g * (result + 1),)


@gradient("log")
def _(g, self):
    return (g / self,)


@gradient("log1p")
def _(g, self):
    return (g / (self + 1),)


@gradient("log2")
def _(g, self):
    return (g / (self * _LN2),)


@gradient("sqrt")
def _(g, result):
    return (g / (2 * result),)


@gradient("rsqrt")
def _(g, result):
    return (-0.5 * g * (result * result * result),)


@gradient("sin")
def _(g, self):
    return (g * E("cos", self),)


@gradient("cos")
def _(g, self):
    return (-g * E("sin", self),)


@gradient("tan")
def _(g, result):
    return (g * (1 + result * result),)


@gradient("tanh")
def _(g, result):
    return (E("tanh_backward", g, result),)


@gradient("sigmoid")
def _(g, result):
    return (E("sigmoid_backward", g, result),)


@gradient("tanh_backward")
def _(g, grad_output, output):
    return (E("tanh_backward", g, output) if _requires(grad_output) else None,
            g * (-2 * output * grad_output) if _requires(output) else None)


@gradient("sigmoid_backward")
def _(g, grad_output, output):
    return (E("sigmoid_backward", g, output) if _requires(grad_output) else None,
            g * grad_output * (1 - 2 * output) if _requires(output) else None)


@gradient("gelu")
def _(g, self, approximate=None):
    return (E("gelu_backward", g, self, approximate=approximate),)


@gradient("gelu_backward")
def _(g, grad_output, x, approximate=None):
    # d/d(grad_output): gelu'(x); d/d(x): grad_output gelu''(x)
    gi = E("gelu_backward", g, x, approximate=approximate) if _requires(grad_output) \
        else None
    if not _requires(x):
        return gi, None
    if approximate == "tanh":
        t = E("tanh", _GELU_B * (x + _GELU_K * (x * x * x)))
        sech2 = 1 - t * t
        h = _GELU_B * (1 + 3 * _GELU_K * (x * x))
        second = sech2 * h + 0.5 * x * (sech2 * (6 * _GELU_K * _GELU_B) * x
                                        - 2 * t * sech2 * h * h)
    else:
        pdf = _GELU_PDF * E("exp", -0.5 * (x * x))
        second = pdf * (2 - x * x)
    return gi, g * grad_output * second


@gradient("erf")
def _(g, self):
    return (2.0 / math.sqrt(math.pi) * E("exp", -(self * self)) * g,)


@gradient("reciprocal")
def _(g, result):
    return (-g * (result * result),)


@gradient("abs")
def _(g, self):
    return (g * E("sign", self),)


@gradient("floor", "ceil", "round", "trunc", "sign")
def _(g):  # piecewise constant
    return (_zeros(g),)


@gradient("where")
def _(g, condition):
    return None, O.where(condition, g, 0.0), O.where(condition, 0.0, g)


@gradient("lerp")
def _(g, self, end, weight):
    return g * (1 - weight), g * weight, g * (end - self)


@gradient("addcmul", needs={"tensor1": ("tensor2",), "tensor2": ("tensor1",)})
def _(g, tensor1, tensor2, value=1):
    return (g, (g * (tensor2 * value) if _requires(tensor1) else None),
            (g * (tensor1 * value) if _requires(tensor2) else None))


@gradient("addcdiv", needs={"tensor1": ("tensor2",), "tensor2": ("tensor1", "tensor2")})
def _(g, tensor1, tensor2, value=1):
    return (g, (g * (value / tensor2) if _requires(tensor1) else None),
            (-g * (value * tensor1 / (tensor2 * tensor2)) if _requires(tensor2) else None))


@gradient("clamp")
def _(g, self, min, max):
    inside = None
    if min is not None:
        inside = self >= min
    if max is not None:
        below = self <= max
        inside = below if inside is None else inside & below
    gx = O.where(inside, g, 0.0)
    # PyTorch's clamp_backward_min_max: where min > max the result is max, so the gradient
    # goes to max and none to min
    glo = ghi = None
    if _requires(min):
        glo = self < min
        if max is not None:
            glo = glo & (min < max)
        glo = O.where(glo, g, 0.0)
    if _requires(max):
        ghi = self > max
        if min is not None:
            ghi = ghi | (max < min)
        ghi = O.where(ghi, g, 0.0)
    return gx, glo, ghi


# (the formulas below are PyTorch's derivatives.yaml entries, term for term)
@gradient("asin")
def _(g, self):
    return (g * E("rsqrt", -self * self + 1),)


@gradient("acos")
def _(g, self):
    return (g * -E("rsqrt", -self * self + 1),)


@gradient("atan")
def _(g, self):
    return (g / (self * self + 1),)


@gradient("sinh")
def _(g, self):
    return (g * E("cosh", self),)


@gradient("cosh")
def _(g, self):
    return (g * E("sinh", self),)


@gradient("asinh")
def _(g, self):
    return (g * E("rsqrt", self * self + 1),)


@gradient("acosh")
def _(g, self):
    return (g * E("rsqrt", self * self - 1),)


@gradient("atanh")
def _(g, self):
    return (g * 1 / (1 - self * self),)


@gradient("exp2")
def _(g, result):
    return (g * result * _LN2,)


@gradient("log10")
def _(g, self):
    return (g / (self * math.log(10.0)),)


@gradient("deg2rad")
def _(g):
    return (g * (math.pi / 180),)


@gradient("rad2deg")
def _(g):
    return (g * (180 / math.pi),)


@gradient("frac")
def _(g):
    return (g,)


@gradient("sinc")
def _(g, self):
    self_pi = self * math.pi
    self_squared_pi = self * self * math.pi
    out = g * ((self_pi * E("cos", self_pi)) - E("sin", self_pi)) / self_squared_pi
    return (O.where(self_squared_pi == 0.0, 0.0, out),)


@gradient("atan2")
def _(g, self, other):
    recip = E("reciprocal", self * self + other * other)
    recip = O.where(E("isinf", recip), 0.0, recip)   # (PyTorch's: 0 at the origin)
    return g * other * recip, g * -self * recip


@gradient("logaddexp")
def _(g, self, other):
    return g / (1 + E("exp", other - self)), g / (1 + E("exp", self - other))


@gradient("logaddexp2")
def _(g, self, other):
    return g / (1 + E("pow", 2.0, other - self)), g / (1 + E("pow", 2.0, self - other))


@gradient("fmax")
def _(g, self, other):
    keep = E("logical_or", self >= other, E("isnan", other))
    return O.where(keep, g, 0.0), O.where(keep, 0.0, g)


@gradient("fmin")
def _(g, self, other):
    keep = E("logical_or", self <= other, E("isnan", other))
    return O.where(keep, g, 0.0), O.where(keep, 0.0, g)


def _masked_zero(v, self, other, bound):
    """``v`` with 0 where self == 0 and other <= bound (either may be a Python number)."""
    zero = self == 0.0
    # (PyTorch's number overload masks where other is NaN too)
    low = other <= bound or math.isnan(other) if isinstance(other, float) else other <= bound
    if isinstance(low, bool):
        if not low:
            return v
        mask = zero
    elif isinstance(zero, bool):
        if not zero:
            return v
        mask = low
    else:
        mask = E("logical_and", zero, low)
    return O.where(mask, 0.0, v)


@gradient("xlogy")
def _(g, self, other):
    gs = go = None
    if _requires(self):
        gs = _masked_zero(E("xlogy", g, other), self, other, 0.0)
    if _requires(other):
        go = g * self / other
    return gs, go
