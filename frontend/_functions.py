"""ember's functional API (``ember.add``, ``ember.sum``, ...), PyTorch's names and signatures.

Each function normalises PyTorch-style arguments and calls the dispatcher, whose entry
points record autograd themselves. The elementwise ops are generated from the op table
(``ember.dispatcher.schema``): for each one, ``ember.<name>`` with PyTorch's parameter
names and ``out=``, and the ``Tensor.<name>_`` in-place form (``INPLACE``), as the
definition's ``variants`` say. The few with extra argument handling (``add``'s
``alpha``, true ``div``, ``where``'s one-argument form, ``clamp``) are written below.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ember.dispatcher import complex_ops as CX
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import elementwise as EW
from ember.dispatcher.defs import index as IX
from ember.dispatcher.defs import linalg as LA
from ember.dispatcher.defs import nn as NN
from ember.dispatcher.defs import reduction as RD
from ember.dispatcher.grad_mode import MODE, below_autograd
from ember.dispatcher.schema import OPS, elementwise_ops, parse_signature

from .return_types import return_type
from . import _deprecated_overloads as DO
from . import _views as VW
from . import _ops_shape as _SH
from . import linalg as _linalg

E = O.elementwise


class _NoDim:
    """The default of ``sum``'s ``dim``: PyTorch's sum(input, *, dtype) overload, told apart
    from sum(input, dim=None, ..., out=)."""

    def __repr__(self):
        return "None"


_NO_DIM = _NoDim()

values_indices = namedtuple("return_types", ["values", "indices"])
max_ret = return_type("max", ["values", "indices"])
min_ret = return_type("min", ["values", "indices"])
sort_ret = return_type("sort", ["values", "indices"])
topk_ret = return_type("topk", ["values", "indices"])


def _s(v):
    """Python/NumPy scalars become Python numbers; tensors pass through."""
    if isinstance(v, TensorBase) or isinstance(v, (bool, int, float, complex)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        raise TypeError(f"expected a Tensor or a number, got {type(v).__name__}; wrap it with "
                        "ember.tensor(...)")
    raise TypeError(f"unsupported operand type {type(v).__name__}")


def _t(x, op, arg="input", position=None):
    """``x``, which must be a tensor: PyTorch's TypeError naming the argument otherwise."""
    if not isinstance(x, TensorBase):
        at = f" (position {position})" if position is not None else ""
        raise TypeError(f"{op}(): argument '{arg}'{at} must be Tensor, not {type(x).__name__}")
    return x


# ---- elementwise: generated from the op table ------------------------------------------------
#: ops whose public forms are written by hand below
_HANDWRITTEN = {"add", "sub", "div", "neg", "where", "clamp", "round", "pow", "polygamma",
                "logit", "nextafter", "lcm", "heaviside"}
INPLACE: dict = {}
METHODS: dict = {}
ELEMENTWISE: list = []
#: the ops of ``torch.special`` only (schema ``special_<name>``): ``ember.special.<name>``
SPECIAL: dict = {}


#: one-line summaries of the generated elementwise functions (``_ew_doc``); an op without
#: one gets a generic sentence
_EW_SUMMARY = {
    "exp": "Computes the exponential, e ** x, of each element of input.",
    "exp2": "Computes 2 ** x for each element of input.",
    "expm1": "Computes exp(x) - 1 for each element of input, accurate for x near 0.",
    "log": "Computes the natural logarithm of each element of input.",
    "log2": "Computes the base-2 logarithm of each element of input.",
    "log10": "Computes the base-10 logarithm of each element of input.",
    "log1p": "Computes log(1 + x) for each element of input, accurate for x near 0.",
    "sqrt": "Computes the square root of each element of input.",
    "rsqrt": "Computes the reciprocal of the square root of each element of input.",
    "reciprocal": "Computes 1 / x for each element of input.",
    "sin": "Computes the sine of each element of input (in radians).",
    "cos": "Computes the cosine of each element of input (in radians).",
    "tan": "Computes the tangent of each element of input (in radians).",
    "asin": "Computes the arcsine of each element of input, in radians.",
    "acos": "Computes the arccosine of each element of input, in radians.",
    "atan": "Computes the arctangent of each element of input, in radians.",
    "sinh": "Computes the hyperbolic sine of each element of input.",
    "cosh": "Computes the hyperbolic cosine of each element of input.",
    "tanh": "Computes the hyperbolic tangent of each element of input.",
    "asinh": "Computes the inverse hyperbolic sine of each element of input.",
    "acosh": "Computes the inverse hyperbolic cosine of each element of input.",
    "atanh": "Computes the inverse hyperbolic tangent of each element of input.",
    "sigmoid": "Computes the logistic sigmoid, 1 / (1 + exp(-x)), of each element of input.",
    "deg2rad": "Converts each element of input from degrees to radians.",
    "rad2deg": "Converts each element of input from radians to degrees.",
    "frac": "Computes the fractional part, x - trunc(x), of each element of input.",
    "sinc": "Computes the normalized sinc function of each element of input.",
    "signbit": "Tests whether the sign bit of each element of input is set.",
    "isposinf": "Tests whether each element of input is positive infinity.",
    "isneginf": "Tests whether each element of input is negative infinity.",
    "isnan": "Tests whether each element of input is NaN.",
    "isinf": "Tests whether each element of input is positive or negative infinity.",
    "isfinite": "Tests whether each element of input is finite (neither infinite nor NaN).",
    "floor": "Rounds each element of input down to the nearest integer.",
    "ceil": "Rounds each element of input up to the nearest integer.",
    "trunc": "Rounds each element of input towards zero, dropping its fractional part.",
    "abs": "Computes the absolute value of each element of input.",
    "sign": "Computes the sign (-1, 0 or 1) of each element of input.",
    "bitwise_not": "Computes the bitwise NOT of each element of input (logical NOT for bool).",
    "logical_not": "Computes the logical NOT of each element of input (zero is False).",
    "mul": "Multiplies input by other, elementwise.",
    "maximum": "Computes the elementwise maximum of input and other.",
    "minimum": "Computes the elementwise minimum of input and other.",
    "fmod": "Computes the elementwise remainder of input / other, with the dividend's sign.",
    "remainder": "Computes the elementwise remainder of input / other, with the divisor's sign.",
    "hypot": "Computes sqrt(input ** 2 + other ** 2), elementwise.",
    "copysign": "Returns the magnitude of input with the sign of other, elementwise.",
    "atan2": "Computes the arctangent of input / other elementwise, in the right quadrant.",
    "logaddexp": "Computes log(exp(input) + exp(other)), elementwise.",
    "logaddexp2": "Computes log2(2 ** input + 2 ** other), elementwise.",
    "fmax": "Computes the elementwise maximum of input and other, ignoring NaN.",
    "fmin": "Computes the elementwise minimum of input and other, ignoring NaN.",
    "gcd": "Computes the greatest common divisor of input and other, elementwise.",
    "bitwise_left_shift": "Shifts the bits of input left by other places, elementwise.",
    "bitwise_right_shift": "Shifts the bits of input right by other places, elementwise.",
    "bitwise_and": "Computes the bitwise AND of input and other (logical AND for bool).",
    "bitwise_or": "Computes the bitwise OR of input and other (logical OR for bool).",
    "bitwise_xor": "Computes the bitwise XOR of input and other (logical XOR for bool).",
    "logical_and": "Computes the logical AND of input and other, elementwise (nonzero is True).",
    "logical_or": "Computes the logical OR of input and other, elementwise (nonzero is True).",
    "logical_xor": "Computes the logical XOR of input and other, elementwise (nonzero is True).",
    "xlogy": "Computes input * log(other), elementwise.",
    "eq": "Tests input == other, elementwise.",
    "ne": "Tests input != other, elementwise.",
    "lt": "Tests input < other, elementwise.",
    "le": "Tests input <= other, elementwise.",
    "gt": "Tests input > other, elementwise.",
    "ge": "Tests input >= other, elementwise.",
    "lerp": "Interpolates linearly from input to end: input + weight * (end - input).",
    "addcmul": "Computes input + value * tensor1 * tensor2, elementwise.",
    "addcdiv": "Computes input + value * tensor1 / tensor2, elementwise.",
    "erf": "Computes the error function of each element of input.",
    "erfc": "Computes the complementary error function, 1 - erf(x), of each element of input.",
    "erfinv": "Computes the inverse error function of each element of input.",
    "lgamma": "Computes the log of the absolute value of the gamma function of each element.",
    "digamma": "Computes the digamma function, the derivative of lgamma, of each element.",
    "i0": "Computes the modified Bessel function of the first kind, order 0, of each element.",
    "tanh_backward": "Computes tanh's input gradient from the output gradient and tanh's output.",
    "sigmoid_backward": "Computes sigmoid's input gradient from the output gradient and output.",
    "special_erfcx": "Computes the scaled complementary error function, exp(x ** 2) * erfc(x).",
    "special_ndtri": "Computes the inverse of the standard normal CDF of each element of input.",
    "special_ndtr": "Computes the standard normal CDF of each element of input.",
    "special_log_ndtr": "Computes the log of the standard normal CDF of each element of input.",
    "special_i0e": "Computes the exponentially scaled Bessel function exp(-|x|) * i0(x).",
    "special_i1": "Computes the modified Bessel function of the first kind, order 1.",
    "special_i1e": "Computes the exponentially scaled Bessel function exp(-|x|) * i1(x).",
    "special_entr": "Computes the entropy term -x * log(x) of each element of input.",
    "special_spherical_bessel_j0": "Computes the spherical Bessel function j0(x) = sin(x) / x.",
    "special_xlog1py": "Computes input * log1p(other), elementwise.",
    "special_zeta": "Computes the Hurwitz zeta function zeta(input, other), elementwise.",
    "special_airy_ai": "Computes the Airy function Ai of each element of input.",
    "special_bessel_j0": "Computes the Bessel function of the first kind J0 of each element.",
    "special_bessel_j1": "Computes the Bessel function of the first kind J1 of each element.",
    "special_bessel_y0": "Computes the Bessel function of the second kind Y0 of each element.",
    "special_bessel_y1": "Computes the Bessel function of the second kind Y1 of each element.",
    "special_modified_bessel_i0": "Computes the modified Bessel function I0 of each element.",
    "special_modified_bessel_i1": "Computes the modified Bessel function I1 of each element.",
    "special_modified_bessel_k0": "Computes the modified Bessel function K0 of each element.",
    "special_modified_bessel_k1": "Computes the modified Bessel function K1 of each element.",
    "special_scaled_modified_bessel_k0": "Computes exp(x) * K0(x) for each element of input.",
    "special_scaled_modified_bessel_k1": "Computes exp(x) * K1(x) for each element of input.",
    "igamma": "Computes the regularized lower incomplete gamma function P(input, other).",
    "igammac": "Computes the regularized upper incomplete gamma function Q(input, other).",
}
#: the Args lines of ``_ew_doc``: schema types and parameter names in words
_EW_TYPES = {"Tensor|Scalar": "Tensor or Number", "Scalar": "Number", "Scalar?": "Number, optional",
             "float?": "float, optional", "str?": "str, optional"}
_EW_PARAMS = {"other": "the second operand", "end": "the tensor to interpolate towards",
              "weight": "the interpolation weight", "tensor1": "the first tensor of the term",
              "tensor2": "the second tensor of the term", "value": "the multiplier of the term",
              "grad_output": "the gradient of the output", "output": "the op's output"}


def _ew_doc(o):
    """The docstring of the generated elementwise op ``o``: a summary from ``_EW_SUMMARY``
    (a generic one otherwise), the schema signature with ``o.doc``, and Args."""
    _, params = parse_signature(o.signature)
    special = o.name.startswith("special_")
    name = "special." + o.name[len("special_"):] if special else o.name
    summary = _EW_SUMMARY.get(o.name, f"Computes ``{name}`` elementwise.")
    sig = o.signature.replace("self", "input").replace(o.name + "(", name + "(", 1)
    note = f"; {o.doc}" if o.doc else ""
    args = []
    for i, (ptype, pname, default, _) in enumerate(params):
        pname = "input" if pname == "self" else pname
        if pname == "input":
            text = "the input tensor" if len(params) == 1 else "the first operand"
        else:
            text = _EW_PARAMS.get(pname, f"the ``{pname}`` argument")
        dflt = f" Default: {default}." if default is not None else ""
        args.append(f"    {pname} ({_EW_TYPES.get(ptype, ptype)}): {text}.{dflt}")
    if "out" in o.variants:
        args.append("    out (Tensor, optional): the output tensor.")
    return (f"{summary}\n\n``ember.{sig}``, as PyTorch's ``torch.{name}``{note}.\n\n"
            "Args:\n" + "\n".join(args) + "\n")


def _generate(o):
    """``ember.<name>``, ``Tensor.<name>`` and ``Tensor.<name>_`` for one elementwise op, as
    Python source compiled once (no per-call argument binding). A positional parameter of
    type ``Tensor`` in the op's signature must be a tensor (PyTorch's TypeError, naming it
    and its position in that form); ``Tensor|Scalar`` takes a Python number too."""
    _, params = parse_signature(o.signature)
    pos = [(p[1], p[0]) for p in params if not p[3]]
    kws = [(p[1], p[2]) for p in params if p[3]]
    kw_decl = "".join(f", {n}={d}" for n, d in kws)
    kw_pass = "".join(f", {n}={n}" for n, _ in kws)
    has_out = "out" in o.variants

    def args(form, shift):
        """The argument expressions of one form: self / input first, then the rest."""
        out = []
        for i, (pname, ptype) in enumerate(pos):
            name = "input" if i == 0 else pname
            if i == 0 and shift:
                out.append("self")
            elif ptype == "Tensor":
                out.append(f"_t({name}, {form!r}, {name!r}, {i + 1 - shift})")
            else:
                out.append(f"_s({name})")
        return ", ".join(out)

    rest = "".join(f", {n}" for n, _ in pos[1:])
    dep = o.name in DO.SCALE    # (PyTorch's deprecated order: the scale first)
    star = f", *{kw_decl}{', out=None' if has_out else ''}" if kws or has_out else ""
    if dep:
        star = star.replace("*", "*args", 1)
    ops, scale = rest[2:], DO.SCALE.get(o.name)

    def rebind(first, inplace):
        return ([f"    if args: {first}, ({ops},), {scale} = _dep({o.name!r}, {inplace}, "
                 f"({first}{rest}, *args), {len(pos)}, {scale})"] if dep else [])
    src = [f"def {o.name}(input{rest}{star}):", *rebind("input", False),
           f"    return _ew({o.name!r}, {args(o.name, 0)}"
           f"{', out=out' if has_out else ''}{kw_pass})"]
    star = (f", *args{kw_decl}" if dep else f", *{kw_decl}") if kws else ""
    src += [f"def {o.name}__method(self{rest}{star}):", *rebind("self", False),
            f"    return _ew({o.name!r}, {args(o.name, 1)}{kw_pass})",
            f"def {o.name}_(self{rest}{star}):", *rebind("self", True),
            f"    return _ew({o.name!r}, {args(o.name + '_', 1)}, inplace=True{kw_pass})"]
    env = {"_ew": E, "_s": _s, "_t": _t, "_dep": DO.scaled}
    exec("\n".join(src), env)  # noqa: S102 - source built from the op table above
    fn, method, fn_ = env[o.name], env[o.name + "__method"], env[o.name + "_"]
    fn.__doc__ = _ew_doc(o)
    public = o.name[len("special_"):] if o.name.startswith("special_") else o.name
    where = "ember.special" if o.name.startswith("special_") else "ember"
    method.__doc__ = f"See :func:`{where}.{public}`."   # (PyTorch's wording)
    method.__name__ = method.__qualname__ = o.name
    return fn, method, fn_


#: the internal elementwise ops (no function or method of their own), as
#: ``torch.ops.aten.<name>``: positional tensors must be tensors
INTERNAL: dict = {}
for _o in elementwise_ops():
    if _o.name in _HANDWRITTEN:
        continue
    _fn, _method, _fn_ = _generate(_o)
    if _o.name.startswith("special_"):  # (PyTorch's python_module: special)
        _fn.__name__ = _fn.__qualname__ = _o.name[len("special_"):]
        SPECIAL[_fn.__name__] = _fn
        continue
    if not _o.variants:     # internal ops (tanh_backward, gelu): aten's typed entry points
        INTERNAL[_o.name] = _fn
    if "function" in _o.variants:
        globals()[_o.name] = _fn
        ELEMENTWISE.append(_o.name)
    if "method" in _o.variants:
        METHODS[_o.name] = _method
    if "inplace" in _o.variants:
        INPLACE[_o.name + "_"] = _fn_
del _o, _fn, _method, _fn_

# PyTorch aliases
multiply, greater, greater_equal, less, less_equal, not_equal = mul, gt, ge, lt, le, ne  # noqa: F821
absolute = abs  # noqa: F821
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2  # noqa: F821
arcsinh, arccosh, arctanh = asinh, acosh, atanh  # noqa: F821
fix = trunc  # noqa: F821
#: alias -> op: the method and in-place forms of the aliases are the op's
_ALIASES = {"multiply": "mul", "greater": "gt", "greater_equal": "ge", "less": "lt",
            "less_equal": "le", "not_equal": "ne", "absolute": "abs", "arcsin": "asin",
            "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "fix": "trunc"}
for _alias, _name in _ALIASES.items():
    if _name in METHODS:
        METHODS[_alias] = METHODS[_name]
    if _name + "_" in INPLACE:
        INPLACE[_alias + "_"] = INPLACE[_name + "_"]
del _alias, _name


def neg(input, *, out=None):
    """Returns the negation of each element of input, ``-input``.

    Bool tensors are refused (invert a mask with ``~`` or ``ember.logical_not``), as in PyTorch.
    Alias: ``ember.negative``.

    Args:
        input (Tensor): the input tensor.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.neg(ember.tensor([1, -2]))
        tensor([-1,  2])
    """
    if _t(input, "neg", "input", 1).dtype is D.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return E("neg", input, out=out)


def neg_(self):
    """In-place version of :func:`ember.neg` (also ``negative_``)."""
    return E("neg", self, inplace=True)


negative = neg


def add(input, other, *args, alpha=1, out=None):
    """Adds ``other``, scaled by ``alpha``, to ``input``: ``input + alpha * other``.

    The operands broadcast to a common shape and their dtypes are promoted by PyTorch's rules;
    either may be a Python number. ``alpha`` takes no part in the promotion: it must be an
    integer for integer results and may be a bool only for bool results.

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the operand to add.
        alpha (Number): the multiplier of ``other``. Default: 1.
        out (Tensor, optional): the output tensor.
        *args: PyTorch's deprecated order ``add(input, alpha, other)``, accepted with its
            warning (as for ``sub``, ``addcmul`` and ``addcdiv``).

    Example:
        >>> ember.add(ember.tensor([1, 2]), ember.tensor([10, 20]), alpha=2)
        tensor([21, 42])
        >>> ember.add(ember.tensor([1, 2]), 1.5)
        tensor([2.5000, 3.5000])
    """
    if args:
        input, (other,), alpha = DO.scaled("add", False, (input, other, *args), 2, alpha)
    if type(alpha) is int and alpha == 1:
        return E("add", _s(input), _s(other), out=out)
    return _add_sub("add", _s(input), _s(other), alpha, out=out)


def sub(input, other, *args, alpha=1, out=None):
    """Subtracts ``other``, scaled by ``alpha``, from ``input``: ``input - alpha * other``.

    Broadcasting, type promotion and the rules for ``alpha`` are those of :func:`ember.add`.
    A bool operand (tensor or number) is refused, as in PyTorch. Alias: ``ember.subtract``.

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the operand to subtract.
        alpha (Number): the multiplier of ``other``. Default: 1.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.sub(ember.tensor([5., 6.]), 1, alpha=2)
        tensor([3., 4.])
    """
    if args:
        input, (other,), alpha = DO.scaled("sub", False, (input, other, *args), 2, alpha)
    a, b = _s(input), _s(other)
    if (type(a) is bool or type(b) is bool or getattr(a, "dtype", None) is _BOOL
            or getattr(b, "dtype", None) is _BOOL):
        _no_bool_subtraction(a, b)
    if type(alpha) is int and alpha == 1:
        return E("sub", a, b, out=out)
    return _add_sub("sub", a, b, alpha, out=out)


subtract = sub
_BOOL = D.bool_  # (sub's check: a bool dtype or a Python bool operand)


def add_(self, other, *args, alpha=1):
    """In-place version of :meth:`ember.Tensor.add`: ``self += alpha * other``."""
    if args:
        self, (other,), alpha = DO.scaled("add", True, (self, other, *args), 2, alpha)
    if type(alpha) is int and alpha == 1:
        return E("add", self, _s(other), inplace=True)
    return _add_sub("add", self, _s(other), alpha, inplace=True)


def sub_(self, other, *args, alpha=1):
    """In-place version of :meth:`ember.Tensor.sub` (also ``subtract_``)."""
    if args:
        self, (other,), alpha = DO.scaled("sub", True, (self, other, *args), 2, alpha)
    other = _s(other)
    _no_bool_subtraction(self, other)
    return _add_sub("sub", self, other, alpha, inplace=True)


def _is_bool(v) -> bool:
    return v.dtype is D.bool_ if isinstance(v, TensorBase) else isinstance(v, bool)


def _no_bool_subtraction(a, b):
    """PyTorch refuses ``-`` with a bool operand (tensor or number)."""
    if _is_bool(a) or _is_bool(b):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _add_sub(name, a, b, alpha, out=None, inplace=False):
    """``a + alpha * b`` / ``a - alpha * b`` as PyTorch computes it: ``alpha`` takes no part
    in type promotion (``add(int8, int8, alpha=2)`` stays int8); it must be an integer for
    integer results and may be a bool only for bool results; it converts into the result's
    dtype (overflow raises); floats compute ``alpha * b`` and the sum in one pass (float16
    and bfloat16 round once, in float)."""
    if type(alpha) is int and alpha == 1:  # (True and 1.0 take the checks below)
        return E(name, a, b, out=out, inplace=inplace)
    alpha = _s(alpha)
    rt = a.dtype if (isinstance(a, TensorBase) and isinstance(b, TensorBase)
                     and a.dtype is b.dtype) else D.result_type(a, b)
    if isinstance(alpha, bool):
        if rt is not D.bool_:
            raise RuntimeError(f"{name}(): Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and not rt.is_floating_point and not rt.is_complex:
        raise RuntimeError(f"{name}(): For integral input tensors, argument alpha must not be a "
                           f"floating point number.")
    # PyTorch subtracts by adding -alpha: that is what must fit (-(-128) does not in int8)
    value = alpha if name == "add" or isinstance(alpha, bool) else -alpha
    O.checked_scalar(value, rt)
    if rt is D.bool_:  # a | (alpha & b)
        b = E("mul", b, bool(alpha)) if isinstance(b, TensorBase) else b and bool(alpha)
        return E(name, a, b, out=out, inplace=inplace)
    if (getattr(a, "requires_grad", False) or getattr(b, "requires_grad", False)) and (
            MODE.grad):  # recorded as PyTorch's graph has it: one add/sub node at the top
        scaled = E("mul", O.to(b, dtype=rt) if isinstance(b, TensorBase) else b, alpha)
        return E(name, a, scaled, out=out, inplace=inplace)
    if rt.is_complex:   # (complex_ops scales b by alpha; complex32 in complex64, as PyTorch)
        return E(name, a, b, out=out, inplace=inplace, alpha=alpha)
    one = C.scalar_like(1, a) if inplace and a.dtype is rt else 1
    return E("addcmul", a, b, one, value=value, out=out, inplace=inplace)


def div(input, other, *, rounding_mode=None, out=None):
    """Divides ``input`` by ``other`` elementwise, optionally rounding the quotient.

    With ``rounding_mode=None`` this is true division: integer and bool operands are converted
    to the default floating dtype first, so the result is floating point. ``'trunc'`` rounds
    the quotient towards zero (C's integer division) and ``'floor'`` rounds it down (Python's
    ``//``); these keep the operands' promoted dtype. The operands broadcast and either may be
    a Python number. Aliases: ``ember.divide``, ``ember.true_divide``.

    Args:
        input (Tensor or Number): the dividend.
        other (Tensor or Number): the divisor.
        rounding_mode (str, optional): None, ``'trunc'`` or ``'floor'``. Default: None.
        out (Tensor, optional): the output tensor.

    Example:
        >>> a = ember.tensor([7, -7])
        >>> ember.div(a, 2)
        tensor([ 3.5000, -3.5000])
        >>> ember.div(a, 2, rounding_mode='trunc')
        tensor([ 3, -3])
        >>> ember.div(a, 2, rounding_mode='floor')
        tensor([ 3, -4])
    """
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    a, b = _s(input), _s(other)
    if rounding_mode is None:
        # true division always produces a floating result
        dt = D.result_type(a, b)
        if dt._kind < 2:
            f = D.get_default_dtype()
            a = O.cast(a, f) if isinstance(a, TensorBase) else float(a)
            b = O.cast(b, f) if isinstance(b, TensorBase) else float(b)
        return E("div", a, b, out=out)
    rt = D.result_type(a, b)
    if rt in (D.float16, D.bfloat16) and not _grad(a, b):
        res = _div_rounded_16bit(a, b, rounding_mode, rt)
        if out is None:
            return res
        if not O.can_cast(rt, out.dtype):
            raise RuntimeError(f"div(): result type {D.torch_name(rt)} can't be cast to the "
                               f"desired output type {D.torch_name(out.dtype)}")
        if 0 in out._stride:
            C.check_writable(out, "div")
        return O.copy_(O._resize_out("div", out, res.shape), res)
    return E("div", a, b, out=out, rounding_mode=rounding_mode)


true_divide = divide = div


def _div_rounded_16bit(a, b, mode, dt):
    """Trunc / floor division of float16 and bfloat16 as PyTorch computes it: step by step
    in that dtype, each step rounding to it (``trunc(a / b)``; floor: c10's
    ``div_floor_floating``), where ember's kernels compute the whole body in float and
    round once (``trunc(-4.998)`` is -4, PyTorch's -5 from ``trunc(half(-4.998))``). Until
    the bodies round their intermediates, this composes ops that each round to ``dt``. A
    number divisor is PyTorch's other path: in float, the number not rounded to ``dt``."""
    if not isinstance(b, TensorBase):  # a number divisor: PyTorch computes in float with it
        return O.to(E("div", O.to(a, dtype=D.float32), b, rounding_mode=mode), dtype=dt)
    dev = (a if isinstance(a, TensorBase) else b).device
    a = O.to(a, dtype=dt) if isinstance(a, TensorBase) else O.full((), a, dt, dev)
    b = O.to(b, dtype=dt) if isinstance(b, TensorBase) else O.full((), b, dt, dev)
    q = E("div", a, b)
    if mode == "trunc":
        return E("trunc", q)
    mod = E("fmod", a, b)
    d = E("div", E("sub", a, mod), b)
    step = E("logical_and", E("ne", mod, 0), E("ne", E("lt", b, 0), E("lt", mod, 0)))
    d = O.where(step, E("sub", d, 1), d)
    low = E("floor", d)
    low = O.where(E("gt", E("sub", d, low), 0.5), E("add", low, 1), low)
    res = O.where(E("ne", d, 0), low, E("copysign", O.zeros(q.shape, dt, dev), q))
    return O.where(E("eq", b, 0), q, res)


def pow(input, exponent, *, out=None):
    """``ember.pow(input, exponent, *, out=None)``: ``input ** exponent`` (PyTorch's
    ``torch.pow``); either may be a number."""
    return _pow(_s(input), _s(exponent), out=out)


def pow_(self, exponent):
    """In-place version of :meth:`ember.Tensor.pow`."""
    return _pow(self, _s(exponent), inplace=True)


def _pow(a, b, out=None, inplace=False):
    if (out is None and not inplace and (type(b) is int or type(b) is float)
            and b in EW.POW_SPECIAL and isinstance(a, TensorBase)
            and (a.dtype is D.float32 or a.dtype is D.float64)):
        # PyTorch's pow computes these exponents as products, sqrt, rsqrt or reciprocal:
        # its bits (x ** 3 is x * x * x, not C's pow), recorded as one pow node
        if MODE.grad and a.requires_grad:
            return O.record(OPS["pow"], lambda: EW.pow_scalar(a, b), (a, b), {})
        return EW.pow_scalar(a, b)
    if isinstance(a, TensorBase) and not a.dtype.is_floating_point:
        # PyTorch refuses a negative integer exponent for integer and bool tensors (empty
        # ones too), and gives ones for a 0 (False) exponent and a copy for 1 (True) in any
        # dtype: a bool tensor takes a bool power (a or not b) though pow has no bool kernel
        if type(b) is int and b < 0:
            raise RuntimeError("pow(): Integers to negative integer powers are not allowed.")
        if type(b) is bool and a.dtype is D.bool_:
            return E("logical_or", a, not b, out=out, inplace=inplace)
    return E("pow", a, b, out=out, inplace=inplace)


def floor_divide(input, other, *, out=None):
    """Divides ``input`` by ``other`` and rounds the quotient down (Python's ``//``).

    The same as ``ember.div(input, other, rounding_mode='floor')``: the result keeps the
    operands' promoted dtype.

    Args:
        input (Tensor or Number): the dividend.
        other (Tensor or Number): the divisor.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.floor_divide(ember.tensor([7., -7.]), 2)
        tensor([ 3., -4.])
    """
    return div(input, other, rounding_mode="floor", out=out)


def div_(self, other, *, rounding_mode=None):
    """In-place version of :meth:`ember.Tensor.div` (also ``divide_``, ``true_divide_``).

    The quotient must be castable to ``self``'s dtype: true division of an integer tensor
    raises, as in PyTorch.
    """
    C.check_writable(self, "div_")     # (the write below is a copy_)
    src = O.clone(self) if _grad(self, other) else self  # keep the pre-write value for backward
    res = div(src, other, rounding_mode=rounding_mode)
    if not O.can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {D.torch_name(res.dtype)} can't be cast to the desired "
                           f"output type {D.torch_name(self.dtype)}")
    return O.copy_(self, res)


def floor_divide_(self, other):
    """In-place version of :meth:`ember.Tensor.floor_divide`."""
    if self.dtype in (D.float16, D.bfloat16):  # (PyTorch's steps in the dtype: see div)
        return div_(self, other, rounding_mode="floor")
    return E("div", self, _s(other), inplace=True, rounding_mode="floor")


def where(condition, input=None, other=None, *, out=None):
    """Takes each element from ``input`` where ``condition`` is True, else from ``other``.

    ``condition``, ``input`` and ``other`` broadcast together; ``input`` and ``other`` may be
    Python numbers and their dtypes are promoted. With ``condition`` alone,
    ``ember.where(condition)`` is ``ember.nonzero(condition, as_tuple=True)``.

    Args:
        condition (Tensor): the bool tensor choosing between the two.
        input (Tensor or Number): the values where ``condition`` is True.
        other (Tensor or Number): the values where ``condition`` is False.
        out (Tensor, optional): the output tensor (``input`` and ``other`` must then be
            tensors).

    Example:
        >>> ember.where(ember.tensor([True, False]), ember.tensor([1., 2.]), 0.)
        tensor([1., 0.])
        >>> ember.where(ember.tensor([0, 1, 1]))
        (tensor([1, 2]),)
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    _t(condition, "where", "condition", 1)
    if out is not None:  # (PyTorch's where with out= takes tensors only)
        _t(input, "where", "input", 2)
        _t(other, "where", "other", 3)
    return O.where(condition, _s(input), _s(other), out=out)


def _bounds(min, max):
    # (PyTorch takes two numbers or two tensors; ember also takes one of each)
    return (_s(min) if min is not None else None), (_s(max) if max is not None else None)


def clamp(input, min=None, max=None, *, out=None):
    """Limits each element of ``input`` to the range [``min``, ``max``].

    Elements below ``min`` become ``min`` and elements above ``max`` become ``max``; one of
    the bounds may be None, not both. Where ``min > max`` every element becomes ``max``. A NaN
    in ``input`` or in a bound gives NaN. The bounds may be numbers or tensors that broadcast
    with ``input``; PyTorch takes two numbers or two tensors, ember also one of each.
    Alias: ``ember.clip``.

    Args:
        input (Tensor): the input tensor.
        min (Number or Tensor, optional): the lower bound. Default: None.
        max (Number or Tensor, optional): the upper bound. Default: None.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.clamp(ember.tensor([-2., 0.5, 3.]), min=-1, max=1)
        tensor([-1.0000,  0.5000,  1.0000])
    """
    return O.clamp(_t(input, "clamp", "input", 1), *_bounds(min, max), out=out)


def clamp_(self, min=None, max=None):
    """In-place version of :func:`ember.clamp` (also ``clip_``)."""
    return O.clamp(self, *_bounds(min, max), inplace=True)


def round(input, *, decimals=None, out=None):
    """``ember.round(input, *, decimals=0, out=None)``: to the nearest integer, ties to even
    (PyTorch's ``torch.round``). ``decimals`` rounds to that many decimal places as PyTorch
    does, ``rint(x * 10**decimals) / 10**decimals`` (``rint(x / 10**-decimals) *
    10**-decimals`` for negative ones) in float (double for float64); it needs
    floating-point tensors, even for ``decimals=0``."""
    _t(input, "round", "input", 1)
    if decimals is None:
        return E("round", input, out=out)
    res = _round_decimals(input, decimals)
    if out is None:
        return res
    if out.dtype is not res.dtype:  # (round's out= takes the result's dtype only)
        raise RuntimeError(f"round(): Found dtype {D.torch_name(out.dtype)} but expected "
                           f"{D.torch_name(res.dtype)}")
    if _grad(input):
        raise RuntimeError("round(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if 0 in out._stride:
        C.check_writable(out, "round")
    return O.copy_(O._resize_out("round", out, res.shape), res)


def round_(self, *, decimals=None):
    """In-place version of :func:`ember.round`."""
    if decimals is None:
        return E("round", self, inplace=True)
    return O.copy_(self, _round_decimals(self, decimals))


def _round_decimals(x, decimals):
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round(): argument 'decimals' must be int, not "
                        f"{type(decimals).__name__}")
    decimals = int(decimals)
    if not -(1 << 63) <= decimals < 1 << 63:
        raise ValueError(f"round(): decimals={decimals} overflows int64 (Overflow when "
                         f"unpacking long long)")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"round(): \"round_cpu\" not implemented for "
                                  f"'{D.torch_name(x.dtype)}' (round with decimals needs a "
                                  f"floating-point tensor)")
    if decimals == 0:
        return E("round", x)
    opmath = D.float32 if x.dtype.itemsize == 2 else x.dtype
    try:
        scale = 10.0 ** (decimals if decimals > 0 else -decimals)  # (abs is ember.abs here)
    except OverflowError:
        scale = math.inf
    if opmath is D.float32:
        with np.errstate(over="ignore"):
            scale = float(np.float32(scale))  # (inf beyond float's range, as C++'s cast)
    y = O.to(x, dtype=opmath)
    if decimals > 0:
        res = E("div", E("round", E("mul", y, scale)), scale)
    else:
        res = E("mul", E("round", E("div", y, scale)), scale)
    return O.to(res, dtype=x.dtype)


clip, clip_ = clamp, clamp_


def relu(input):
    """max(input, 0) (``torch.relu``); the gradient is 0 where ``input <= 0``."""
    return NN.relu(_t(input, "relu"))


def relu_(input):
    """In-place version of :func:`ember.relu`."""
    C.check_writable(input, "relu_")
    if input.requires_grad and MODE.grad:  # the graph keeps a copy, not the overwritten one
        return input.copy_(NN.relu(input.clone()))
    if NN.activation_("relu", input, {}) is not None:
        return input
    return clamp_(input, min=0)


def clamp_min(input, min):
    """Limits each element of ``input`` from below: ``ember.clamp(input, min=min)``.

    Args:
        input (Tensor): the input tensor.
        min (Number or Tensor): the lower bound.

    Example:
        >>> ember.clamp_min(ember.tensor([-2., 0.5, 3.]), 0)
        tensor([0.0000, 0.5000, 3.0000])
    """
    return clamp(input, min=min)


def clamp_max(input, max):
    """Limits each element of ``input`` from above: ``ember.clamp(input, max=max)``.

    Args:
        input (Tensor): the input tensor.
        max (Number or Tensor): the upper bound.

    Example:
        >>> ember.clamp_max(ember.tensor([-2., 0.5, 3.]), 0)
        tensor([-2.,  0.,  0.])
    """
    return clamp(input, max=max)


_FP_ARGS = (TensorBase, int, float, np.number, np.bool_)


def float_power(input, exponent, *, out=None):
    """Raises ``input`` to the power ``exponent`` elementwise, in double precision.

    Both operands are converted to float64 before the power is taken, so the result is always
    float64. One of them may be a Python number, not both.

    Args:
        input (Tensor or Number): the base.
        exponent (Tensor or Number): the exponent.
        out (Tensor, optional): the output tensor (float64).

    Example:
        >>> ember.float_power(ember.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=ember.float64)
    """
    if not (isinstance(input, _FP_ARGS) and isinstance(exponent, _FP_ARGS)) or not (
            isinstance(input, TensorBase) or isinstance(exponent, TensorBase)):
        raise TypeError(f"float_power() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(exponent).__name__}), but expected "
                        "one of: (Tensor input, Tensor exponent), (Scalar self, Tensor "
                        "exponent), (Tensor input, Scalar exponent)")
    a = O.to(input, None, D.float64) if isinstance(input, TensorBase) else float(input)
    b = O.to(exponent, None, D.float64) if isinstance(exponent, TensorBase) else float(exponent)
    if out is not None:
        return O.write_out("float_power", out, E("pow", a, b), "exact")
    return E("pow", a, b)


def square(input, *, out=None):
    """Returns the square of each element of ``input``.

    A bool input gives an int64 result, as PyTorch's ``pow(input, 2)``.

    Args:
        input (Tensor): the input tensor.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.square(ember.tensor([1, -2, 3]))
        tensor([1, 4, 9])
    """
    # (PyTorch's square is pow(input, 2): a bool input gives int64; uint16 has no pow)
    O.refuse_barebones("pow", input)
    CX.check_half("pow", input)
    if isinstance(input, TensorBase) and input.dtype is D.bool_:
        input = O.cast(input, D.int64)
    return E("mul", input, input, out=out)


def float_power_(self, exponent):
    """In-place version of :meth:`ember.Tensor.float_power`; ``self`` must be float64."""
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{D.torch_name(self.dtype)} but the operation's result requires "
                           f"dtype Double")
    b = O.to(exponent, None, D.float64) if isinstance(exponent, TensorBase) else float(exponent)
    return E("pow", self, b, inplace=True)


def square_(self):
    """In-place version of :func:`ember.square`."""
    return E("mul", self, self, inplace=True)


def clamp_min_(self, min):
    """In-place version of :func:`ember.clamp_min`."""
    return clamp_(self, min=min)


def clamp_max_(self, max):
    """In-place version of :func:`ember.clamp_max`."""
    return clamp_(self, max=max)


def positive(input):
    """``input`` itself (PyTorch's ``torch.positive``; bool tensors raise)."""
    if _t(input, "positive", "input", 1).dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def isreal(input):
    """Whether each element is real: its imaginary part is 0 (True everywhere for a real
    dtype; PyTorch's ``torch.isreal``).

    Example:
        >>> ember.isreal(ember.tensor([1 + 0j, 1j]))
        tensor([ True, False])
    """
    if _t(input, "isreal", "input", 1).dtype._kind == 3:
        return E("eq", V.complex_part(input, 1), 0)
    return O.full(input.shape, True, D.bool_, input.device)


def polygamma(n, input, *, out=None):
    """``ember.polygamma(n, input, *, out=None)``: the n-th derivative of the digamma
    function (PyTorch's ``torch.polygamma``)."""
    return E("polygamma", _t(input, "polygamma", "input", 2), n=_polygamma_n(n), out=out)


def _polygamma_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


def _polygamma_method(self, n):
    return polygamma(n, self)


def polygamma_(self, n):
    """In-place version of :meth:`ember.Tensor.polygamma`: ``self.polygamma_(n)``."""
    return E("polygamma", self, n=_polygamma_n(n), inplace=True)


def _logit_eps(eps):
    if eps is None:
        return -1.0          # (the kernel's "no clamp", as PyTorch's)
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.number)):
        raise TypeError(f"logit(): argument 'eps' must be float, not {type(eps).__name__}")
    return float(eps)


def logit(input, eps=None, *, out=None):
    """``ember.logit(input, eps=None, *, out=None)``: log(p / (1 - p)), with p clamped to
    [eps, 1 - eps] when eps is given (PyTorch's ``torch.logit``)."""
    return E("logit", _t(input, "logit", "input", 1), eps=_logit_eps(eps), out=out)


def logit_(self, eps=None):
    """In-place version of :func:`ember.logit`."""
    return E("logit", self, eps=_logit_eps(eps), inplace=True)


def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p (PyTorch's ``torch.mvlgamma``):
    sum over i < p of lgamma(input - i / 2), plus p (p - 1) / 4 log(pi)."""
    x = _t(input, "mvlgamma", "input", 1)
    if x.dtype is D.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not x.dtype.is_floating_point:
        x = O.to(x, None, D.get_default_dtype())
    res = None
    for i in range(int(p)):
        term = E("lgamma", E("sub", x, i / 2) if i else x)
        res = term if res is None else E("add", res, term)
    res = E("add", res, p * (p - 1) * math.log(math.pi) * 0.25)
    if out is None:
        return res
    return O.copy_(O._resize_out("mvlgamma", out, res.shape), res)


def mvlgamma_(self, p):
    """In-place version of :meth:`ember.Tensor.mvlgamma`."""
    return O.copy_(self, mvlgamma(self, p))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
    dtype's largest and lowest finite values), PyTorch's ``torch.nan_to_num``."""
    x = _t(input, "nan_to_num", "input", 1)
    for arg, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.number))):
            raise TypeError(f"nan_to_num(): argument '{arg}' must be float, not "
                            f"{type(v).__name__}")
    if not x.dtype.is_floating_point:
        res = O.clone(x)
    else:
        big = _FLOAT_MAX[x.dtype.name]
        hi = big if posinf is None else posinf
        lo = -big if neginf is None else neginf
        res = O.where(E("isnan", x), float(nan),
                      O.where(E("eq", x, math.inf), float(hi),
                              O.where(E("eq", x, -math.inf), float(lo), x)))
    if out is None:
        return res
    if out.dtype is not x.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {D.torch_name(out.dtype)} should be same "
                           f"as input: {D.torch_name(x.dtype)}")
    return O.copy_(O._resize_out("nan_to_num", out, res.shape), res)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    """In-place version of :func:`ember.nan_to_num`."""
    return O.copy_(self, nan_to_num(self, nan, posinf, neginf))


_FLOAT_MAX = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38,
              "float16": 65504.0, "bfloat16": 3.3895313892515355e38}
frexp_ret = return_type("frexp", ["mantissa", "exponent"])


def frexp(input, *, out=None):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` and
    0.5 <= |mantissa| < 1 (0, inf and NaN: themselves and 0), PyTorch's ``torch.frexp``."""
    x = _t(input, "frexp", "input", 1)
    if not x.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with below_autograd():
        ax = E("abs", x)
        regular = E("logical_and", E("isfinite", x), E("ne", x, 0))
        safe = O.where(regular, ax, 1.0)
        wide = O.to(safe, None, D.float64) if x.dtype is not D.float64 else safe
        e = E("add", E("floor", E("log2", wide)), 1)
        for _ in range(2):  # (log2 rounds: put |x| / 2^e into [0.5, 1))
            m = E("div", wide, E("pow", 2.0, e))
            e = O.where(E("ge", m, 1.0), E("add", e, 1),
                        O.where(E("lt", m, 0.5), E("sub", e, 1), e))
        e = O.where(regular, e, 0.0)
        exponent = O.to(e, None, D.int32)
    mantissa = E("div", x, O.to(E("pow", 2.0, O.to(exponent, None, D.float64)), None,
                                 x.dtype) if x.dtype is not D.float64 else
                 E("pow", 2.0, O.to(exponent, None, D.float64)))
    if out is not None:
        O.copy_(O._resize_out("frexp", out[0], mantissa.shape), mantissa)
        O.copy_(O._resize_out("frexp", out[1], exponent.shape), exponent)
        return frexp_ret(out[0], out[1])
    return frexp_ret(mantissa, exponent)


def _ldexp(x, other):
    """x * 2 ** other, rounded once to the result's floating dtype: the product is formed
    in float64 (2 ** 800 overflows float, 0 * 2 ** 800 is still 0, as PyTorch's)."""
    rt = D.result_type(x, other)
    if not rt.is_floating_point:
        rt = D.get_default_dtype()
    wide = E("mul", O.to(x, None, D.float64), E("pow", 2.0, O.to(other, None, D.float64)))
    return O.to(wide, None, rt)


def ldexp(input, other, *, out=None):
    """``input * 2 ** other`` (PyTorch's ``torch.ldexp``)."""
    res = _ldexp(_t(input, "ldexp", "input", 1), _t(other, "ldexp", "other", 2))
    if out is None:
        return res
    if not O.can_cast(res.dtype, out.dtype):
        raise RuntimeError(f"ldexp(): result type {D.torch_name(res.dtype)} can't be cast to "
                           f"the desired output type {D.torch_name(out.dtype)}")
    return O.copy_(O._resize_out("ldexp", out, res.shape), res)


def ldexp_(self, other):
    """In-place version of :func:`ember.ldexp`."""
    res = _ldexp(self, _t(other, "ldexp_", "other", 2))
    if not O.can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {D.torch_name(res.dtype)} can't be cast to the desired "
                           f"output type {D.torch_name(self.dtype)}")
    return O.copy_(self, res)


# the shift operators (PyTorch's __lshift__ / __rshift__ are bitwise_left/right_shift)
def _lshift(self, other):
    return E("bitwise_left_shift", self, _s(other))


def _rlshift(self, other):
    return E("bitwise_left_shift", _s(other), self)


def _rshift(self, other):
    return E("bitwise_right_shift", self, _s(other))


def _rrshift(self, other):
    return E("bitwise_right_shift", _s(other), self)


def _ilshift(self, other):
    return E("bitwise_left_shift", self, _s(other), inplace=True)


def _irshift(self, other):
    return E("bitwise_right_shift", self, _s(other), inplace=True)


def nextafter(input, other, *, out=None):
    """The next floating-point value after ``input`` towards ``other`` (PyTorch's
    ``torch.nextafter``). float16 and bfloat16 step in their own spacing: the kernels
    compute in float, so those run the op's composite, which knows the dtype."""
    _t(input, "nextafter", "input", 1)
    _t(other, "nextafter", "other", 2)
    rt = D.result_type(input, other)
    if rt not in (D.float16, D.bfloat16):
        return E("nextafter", input, other, out=out)
    res = OPS["nextafter"].composite(O.to(input, None, rt), O.to(other, None, rt))
    if out is None:
        return res
    if not O.can_cast(rt, out.dtype):
        raise RuntimeError(f"nextafter(): result type {D.torch_name(rt)} can't be cast to the "
                           f"desired output type {D.torch_name(out.dtype)}")
    return O.copy_(O._resize_out("nextafter", out, res.shape), res)


def nextafter_(self, other):
    """In-place version of :meth:`ember.Tensor.nextafter`."""
    if self.dtype in (D.float16, D.bfloat16):
        return O.copy_(self, nextafter(self, other))
    return E("nextafter", self, _t(other, "nextafter_", "other", 2), inplace=True)


def heaviside(input, values, *, out=None):
    """``values`` where ``input`` is 0, else ``input > 0`` (PyTorch's ``torch.heaviside``);
    ``input``, ``values`` and ``out`` must have one dtype."""
    _t(input, "heaviside", "input", 1)
    _t(values, "heaviside", "values", 2)
    if out is not None and out.dtype is not input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    return E("heaviside", input, values, out=out)


def heaviside_(self, values):
    """In-place version of :meth:`ember.Tensor.heaviside`."""
    return E("heaviside", self, _t(values, "heaviside_", "values", 2), inplace=True)


def lcm(input, other, *, out=None):
    """|input / gcd * other| (PyTorch's ``torch.lcm``). PyTorch computes int8 and int16 in
    C++'s int, so the absolute value comes before the result wraps to the dtype: so here."""
    _t(input, "lcm", "input", 1)
    _t(other, "lcm", "other", 2)
    rt = D.result_type(input, other)
    if rt not in (D.int8, D.int16):
        return E("lcm", input, other, out=out)
    res = O.to(E("lcm", O.to(input, None, D.int32), O.to(other, None, D.int32)), None, rt)
    if out is None:
        return res
    if not O.can_cast(rt, out.dtype):
        raise RuntimeError(f"result type {D.torch_name(rt)} can't be cast to the desired "
                           f"output type {D.torch_name(out.dtype)}")
    return O.copy_(O._resize_out("lcm", out, res.shape), res)


def lcm_(self, other):
    """In-place version of :func:`ember.lcm`."""
    return O.copy_(self, lcm(self, other)) if self.dtype in (D.int8, D.int16) else \
        E("lcm", self, _t(other, "lcm_", "other", 2), inplace=True)


# ---- reductions ---------------------------------------------------------------------
def sum(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    """Returns the sum of the elements of ``input``, over all of them or along ``dim``.

    Bool and integer inputs are summed in int64 unless ``dtype`` says otherwise.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to before the sum.
        out (Tensor, optional): the output tensor (needs ``dim``; pass None for all).

    Example:
        >>> x = ember.tensor([[1., 2.], [3., 4.]])
        >>> ember.sum(x)
        tensor(10.)
        >>> x.sum(1, keepdim=True)
        tensor([[3.],
                [7.]])
    """
    if dim is _NO_DIM:
        if out is not None:  # (PyTorch's sum(input, *, dtype) overload has no out=)
            raise TypeError("sum() received an invalid combination of arguments - got "
                            "(Tensor, out=Tensor): out= needs the dim argument (None for all)")
        dim = None
    return O.reduce("sum", _t(input, "sum"), dim, keepdim, dtype, out)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Returns the mean of the elements of ``input``, over all of them or along ``dim``.

    ``input`` must be floating point, unless ``dtype`` gives a floating dtype to compute in.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to before the reduction.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.mean(ember.tensor([[1., 2.], [3., 4.]]), dim=0)
        tensor([2., 3.])
    """
    return O.reduce("mean", _t(input, "mean"), dim, keepdim, dtype, out)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Returns the product of the elements of ``input``, over all of them or along one ``dim``.

    Bool and integer inputs are multiplied in int64 unless ``dtype`` says otherwise. Unlike
    ``sum``, ``dim`` is a single int.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension to reduce; all if None.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to before the product.
        out (Tensor, optional): the output tensor (needs ``dim``).

    Example:
        >>> ember.prod(ember.tensor([[1, 2], [3, 4]]), 1)
        tensor([ 2, 12])
    """
    if isinstance(dim, (list, tuple)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    if dim is None and out is not None:  # (PyTorch's prod(input, *, dtype) has no out=)
        raise TypeError("prod() received an invalid combination of arguments - got "
                        "(Tensor, out=Tensor): out= needs an int dim")
    return O.reduce("prod", _t(input, "prod"), dim, keepdim, dtype, out)


def amax(input, dim=(), keepdim=False, *, out=None):
    """Returns the maximum of ``input`` along ``dim`` (all dimensions by default).

    Unlike :func:`ember.max`, only the values are returned, ``dim`` may be a tuple, and the
    gradient is shared evenly between equal maxima. NaN propagates.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints): the dimension(s) to reduce; ``()`` for all. Default: ().
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.amax(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([5, 7])
    """
    return O.reduce("max", _t(input, "amax"), dim, keepdim, None, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """Returns the minimum of ``input`` along ``dim`` (all dimensions by default).

    Unlike :func:`ember.min`, only the values are returned, ``dim`` may be a tuple, and the
    gradient is shared evenly between equal minima. NaN propagates.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints): the dimension(s) to reduce; ``()`` for all. Default: ().
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.amin(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([1, 2])
    """
    return O.reduce("min", _t(input, "amin"), dim, keepdim, None, out)


def argmax(input, dim=None, keepdim=False, *, out=None):
    """Returns the index of the largest element of ``input``, overall or along ``dim``.

    Without ``dim`` the index is into the flattened tensor. Among equal maxima the first
    index is returned; a NaN counts as the largest value. Bool inputs are refused.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension to reduce; the flattened tensor if None.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        out (Tensor, optional): the output tensor (int64).

    Example:
        >>> x = ember.tensor([[1, 5], [7, 2]])
        >>> ember.argmax(x)
        tensor(2)
        >>> ember.argmax(x, dim=1)
        tensor([1, 0])
    """
    return O.arg_reduce("argmax", _no_bool(_t(input, "argmax"), "argmax"), dim, keepdim, out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    """Returns the index of the smallest element of ``input``, overall or along ``dim``.

    Without ``dim`` the index is into the flattened tensor. Among equal minima the first
    index is returned; a NaN counts as the smallest value. Bool inputs are refused.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension to reduce; the flattened tensor if None.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        out (Tensor, optional): the output tensor (int64).

    Example:
        >>> ember.argmin(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([0, 1])
    """
    return O.arg_reduce("argmin", _no_bool(_t(input, "argmin"), "argmin"), dim, keepdim, out)


def _no_bool(x, op):
    if x.dtype is D.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")
    return x


def _max_min(name, input, dim, keepdim, other, out=None):
    if isinstance(dim, TensorBase) or other is not None:
        return E("maximum" if name == "max" else "minimum", input,
                 other if other is not None else dim, out=out)
    if dim is None:
        if C.numel(input.shape) == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        if out is not None and not isinstance(out, TensorBase):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__} (a tuple of Tensors needs dim)")
        return O.reduce(name, input, None, False, out=out)
    if out is not None:
        if isinstance(out, TensorBase):
            raise TypeError(f"{name}(): argument 'out' must be tuple of 2 Tensors (values, "
                            f"indices) when dim is given, not Tensor")
        # (under autograd the values require grad: write_out refuses, as PyTorch)
        return O.write_out(name, out, _max_min(name, input, dim, keepdim, None), "exact")
    indices = O.arg_reduce("argmax" if name == "max" else "argmin", input, dim, keepdim)
    if input.requires_grad and MODE.grad:
        # the gradient flows to the selected element only, as in PyTorch
        d = C.normalize_dim(dim, len(input.shape), name)
        idx = indices if keepdim else V.unsqueeze(indices, d)
        values = O.gather(input, d, idx) if input.shape else O.clone(input)
        if not keepdim and input.shape:
            values = V.squeeze(values, d)
    else:
        values = O.reduce(name, input, dim, keepdim)
    return (max_ret if name == "max" else min_ret)(values, indices)


def max(input, dim=None, keepdim=False, *, other=None, out=None):
    """Returns the maximum of ``input``: overall, along ``dim``, or elementwise with ``other``.

    - ``max(input)``: the largest element, a 0-d tensor (an empty input raises).
    - ``max(input, dim, keepdim=False)``: a named tuple ``(values, indices)`` of the maxima
      along ``dim`` and their positions; the gradient flows to the selected elements only.
    - ``max(input, other)``: the elementwise maximum, as :func:`ember.maximum`.

    NaN propagates.

    Args:
        input (Tensor): the input tensor.
        dim (int or Tensor, optional): the dimension to reduce, or ``other`` given positionally.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        other (Tensor, optional): the tensor to compare with elementwise.
        out (Tensor or tuple of Tensors, optional): the output tensor, or ``(values, indices)``
            when ``dim`` is given.

    Example:
        >>> x = ember.tensor([[1, 5], [7, 2]])
        >>> ember.max(x)
        tensor(7)
        >>> values, indices = ember.max(x, dim=1)
        >>> values, indices
        (tensor([5, 7]), tensor([1, 0]))
    """
    return _max_min("max", _t(input, "max"), dim, keepdim, other, out)


def min(input, dim=None, keepdim=False, *, other=None, out=None):
    """Returns the minimum of ``input``: overall, along ``dim``, or elementwise with ``other``.

    - ``min(input)``: the smallest element, a 0-d tensor (an empty input raises).
    - ``min(input, dim, keepdim=False)``: a named tuple ``(values, indices)`` of the minima
      along ``dim`` and their positions; the gradient flows to the selected elements only.
    - ``min(input, other)``: the elementwise minimum, as :func:`ember.minimum`.

    NaN propagates.

    Args:
        input (Tensor): the input tensor.
        dim (int or Tensor, optional): the dimension to reduce, or ``other`` given positionally.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        other (Tensor, optional): the tensor to compare with elementwise.
        out (Tensor or tuple of Tensors, optional): the output tensor, or ``(values, indices)``
            when ``dim`` is given.

    Example:
        >>> x = ember.tensor([[1, 5], [7, 2]])
        >>> ember.min(x)
        tensor(1)
        >>> ember.min(x, 0, keepdim=True).values
        tensor([[1, 2]])
    """
    return _max_min("min", _t(input, "min"), dim, keepdim, other, out)


def _correction(name, dim, unbiased, correction):
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    elif unbiased is not None:
        raise RuntimeError(f"{name}(): cannot pass both 'unbiased' and 'correction'")
    return dim, correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Returns the variance of the elements of ``input``, overall or along ``dim``.

    The variance is ``sum((x - mean) ** 2) / (N - correction)`` over the ``N`` reduced
    elements.

    Args:
        input (Tensor): the input tensor (floating point).
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        unbiased (bool, optional): the older form of ``correction``: True is 1, False is 0.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        correction (int, optional): the difference between the sample count and the divisor.
            Default: 1 (Bessel's correction).
        out (Tensor, optional): the output tensor.

    Example:
        >>> x = ember.tensor([1., 2., 3., 4.])
        >>> ember.var(x)
        tensor(1.6667)
        >>> ember.var(x, correction=0)
        tensor(1.2500)
    """
    dim, correction = _correction("var", dim, unbiased, correction)
    return O.reduce("var", _t(input, "var"), dim, keepdim, out=out, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Returns the standard deviation of ``input``, overall or along ``dim``.

    The square root of :func:`ember.var`: ``sqrt(sum((x - mean) ** 2) / (N - correction))``.

    Args:
        input (Tensor): the input tensor (floating point).
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        unbiased (bool, optional): the older form of ``correction``: True is 1, False is 0.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        correction (int, optional): the difference between the sample count and the divisor.
            Default: 1 (Bessel's correction).
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.std(ember.tensor([1., 2., 3., 4.]), unbiased=False)
        tensor(1.1180)
    """
    dim, correction = _correction("std", dim, unbiased, correction)
    if out is not None:
        return O.write_out("std", out, RD.std(_t(input, "std"), dim, correction, keepdim))
    return RD.std(_t(input, "std"), dim, correction, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Returns the variance and the mean of ``input``, as the tuple ``(var, mean)``.

    The arguments are those of :func:`ember.var`.

    Args:
        input (Tensor): the input tensor (floating point).
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        unbiased (bool, optional): the older form of ``correction``: True is 1, False is 0.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        correction (int, optional): the difference between the sample count and the divisor.
            Default: 1 (Bessel's correction).

    Example:
        >>> ember.var_mean(ember.tensor([[1., 2.], [3., 5.]]), dim=1)
        (tensor([0.5000, 2.0000]), tensor([1.5000, 4.0000]))
    """
    if type(dim) is bool:   # (var_mean(input, unbiased): PyTorch's second overload)
        dim, unbiased = None, dim
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Returns the standard deviation and the mean of ``input``, as ``(std, mean)``.

    The arguments are those of :func:`ember.std`.

    Args:
        input (Tensor): the input tensor (floating point).
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        unbiased (bool, optional): the older form of ``correction``: True is 1, False is 0.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        correction (int, optional): the difference between the sample count and the divisor.
            Default: 1 (Bessel's correction).

    Example:
        >>> ember.std_mean(ember.tensor([1., 2., 3., 4.]))
        (tensor(1.2910), tensor(2.5000))
    """
    if type(dim) is bool:   # (std_mean(input, unbiased): PyTorch's second overload)
        dim, unbiased = None, dim
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def _nan_out_dtype(x, out, dtype):
    """The dtype nansum / nanmean compute in when given ``out=``: ``out``'s, as PyTorch (which
    has no integer kernel for a floating input)."""
    if dtype is not None:
        return dtype
    if x.dtype.is_floating_point and not out.dtype.is_floating_point:
        raise NotImplementedError(f'"nansum_cpu" not implemented for '
                                  f"'{D.torch_name(out.dtype)}'")
    return out.dtype


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum with NaNs counted as zero."""
    x = _t(input, "nansum")
    if out is not None:
        res = nansum(x, dim, keepdim, dtype=_nan_out_dtype(x, out, dtype))
        return O.write_out("nansum", out, res)
    if x.dtype.is_floating_point:
        x = O.where(O.elementwise("isnan", x), 0, x)
    return O.reduce("sum", x, dim, keepdim, dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-NaN elements: ``nansum`` divided by their count, as PyTorch
    computes it (NaN where every element is NaN)."""
    x = _t(input, "nanmean")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {D.torch_name(x.dtype)}")
    if out is not None:
        res = nanmean(x, dim, keepdim, dtype=_nan_out_dtype(x, out, dtype))
        return O.write_out("nanmean", out, res)
    count = O.reduce("sum", O.elementwise("logical_not", O.elementwise("isnan", x)), dim,
                     keepdim)
    total = nansum(x, dim, keepdim, dtype=dtype)
    if total.dtype in (D.float16, D.bfloat16):  # divided in float32, as PyTorch's half ops
        return O.cast(O.elementwise("div", O.cast(total, D.float32), count), total.dtype)
    return O.elementwise("div", total, count)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """Returns ``log(sum(exp(input)))`` along ``dim``, computed without overflow.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints): the dimension(s) to reduce.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.logsumexp(ember.tensor([1., 2., 3.]), dim=0)
        tensor(3.4076)
    """
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    return O.reduce("logsumexp", _t(input, "logsumexp"), dim, keepdim, out=out)


def cumsum(input, dim, *, dtype=None, out=None):
    """Returns the cumulative sum of ``input`` along ``dim``.

    Element ``i`` of the result is the sum of elements ``0..i`` along ``dim``. Bool and
    integer inputs accumulate in int64 unless ``dtype`` says otherwise.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to accumulate along.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to first.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.cumsum(ember.tensor([[1, 2], [3, 4]]), dim=1)
        tensor([[1, 3],
                [3, 7]])
    """
    return O.scan("cumsum", input, dim, dtype, out)


def cumprod(input, dim, *, dtype=None, out=None):
    """Returns the cumulative product of ``input`` along ``dim``.

    Element ``i`` of the result is the product of elements ``0..i`` along ``dim``. Bool and
    integer inputs accumulate in int64 unless ``dtype`` says otherwise.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to accumulate along.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to first.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.cumprod(ember.tensor([1., 2., 3.]), dim=0)
        tensor([1., 2., 6.])
    """
    return O.scan("cumprod", input, dim, dtype, out)


def all(input, dim=None, keepdim=False, *, out=None):
    """Tests whether every element of ``input`` is nonzero, overall or along ``dim``.

    The result is bool, except for a uint8 input, which gives uint8 (as in PyTorch).

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.all(ember.tensor([[True, False], [True, True]]), dim=1)
        tensor([False,  True])
    """
    if out is not None:
        return O.write_out("all", out, RD.all_(_t(input, "all"), dim, keepdim), "exact")
    return RD.all_(_t(input, "all"), dim, keepdim)


def any(input, dim=None, keepdim=False, *, out=None):
    """Tests whether any element of ``input`` is nonzero, overall or along ``dim``.

    The result is bool, except for a uint8 input, which gives uint8 (as in PyTorch).

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.any(ember.tensor([0, 0, 1]))
        tensor(True)
    """
    if out is not None:
        return O.write_out("any", out, RD.any_(_t(input, "any"), dim, keepdim), "exact")
    return RD.any_(_t(input, "any"), dim, keepdim)


def count_nonzero(input, dim=None):
    """Counts the nonzero elements of ``input``, overall or along ``dim``.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to count along; all if None.

    Example:
        >>> x = ember.tensor([[0, 1, 2], [0, 0, 3]])
        >>> ember.count_nonzero(x)
        tensor(3)
        >>> ember.count_nonzero(x, dim=1)
        tensor([2, 1])
    """
    O.refuse_barebones("count_nonzero", input)
    return O.reduce("sum", E("ne", input, 0), dim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Returns the vector p-norm of ``input``, overall or along ``dim``.

    ``'fro'`` (the default) and None mean the 2-norm of the elements, ``float('inf')`` the
    largest absolute value; ``'nuc'`` the nuclear norm of the matrices in the last two
    dimensions (or ``dim``, two of them), as :func:`ember.linalg.matrix_norm`. New code may
    prefer :func:`ember.linalg.vector_norm`.

    Args:
        input (Tensor): the input tensor.
        p (float or str): the order of the norm. Default: ``'fro'``.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to first.

    Example:
        >>> x = ember.tensor([[3., 4.], [0., 1.]])
        >>> ember.norm(x, dim=1)
        tensor([5., 1.])
        >>> ember.norm(x, p=1)
        tensor(8.)
    """
    if p == "fro" or p is None:
        p = 2
    if dtype is not None:
        input = O.to(input, None, D.to_dtype(dtype))
    if p == "nuc":
        dims = tuple(range(input.dim())) if dim is None else (
            (dim,) if isinstance(dim, int) else tuple(dim))
        if len(dims) != 2:
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(str(d) for d in dims))
        return _linalg.matrix_norm(input, "nuc", dims, keepdim)
    return RD.norm(input, p, dim, keepdim)


def softmax(input, dim, dtype=None):
    """``torch.softmax`` / ``Tensor.softmax``: ``dim`` is required (``nn.functional.softmax``
    chooses one when it is None)."""
    return O.softmax_op("softmax", _t(input, "softmax"), _int_dim("softmax", dim), dtype)


def log_softmax(input, dim, dtype=None):
    """Returns the logarithm of the softmax of ``input`` along ``dim``.

    Equal to ``input - logsumexp(input, dim, keepdim=True)``, and more accurate than taking
    ``log(softmax(input))``.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension along which the softmax is taken.
        dtype (ember.dtype, optional): the dtype ``input`` is cast to first.

    Example:
        >>> ember.log_softmax(ember.tensor([1., 2., 3.]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    return O.softmax_op("log_softmax", _t(input, "log_softmax"), _int_dim("log_softmax", dim),
                        dtype)


def _int_dim(name, dim):
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not NoneType")
    return dim


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """Sorts the elements of ``input`` along ``dim``.

    Returns a named tuple ``(values, indices)``: the sorted values and, for each, its index
    in ``input`` along ``dim``. With ``stable=True`` equal elements keep their order.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to sort along. Default: -1.
        descending (bool): sort from largest to smallest. Default: False.
        stable (bool): keep the order of equal elements. Default: False.
        out (tuple of Tensors, optional): the ``(values, indices)`` output tensors.

    Example:
        >>> values, indices = ember.sort(ember.tensor([3, 1, 2]))
        >>> values, indices
        (tensor([1, 2, 3]), tensor([1, 2, 0]))
    """
    if out is not None:
        return O.write_out("sort", out, sort_ret(*O.sort(_t(input, "sort"), dim, descending,
                                                         stable)), "exact")
    return sort_ret(*O.sort(_t(input, "sort"), dim, descending, stable))


def argsort(input, dim=-1, descending=False, stable=False):
    """Returns the indices that sort ``input`` along ``dim``.

    The ``indices`` of :func:`ember.sort`.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to sort along. Default: -1.
        descending (bool): sort from largest to smallest. Default: False.
        stable (bool): keep the order of equal elements. Default: False.

    Example:
        >>> ember.argsort(ember.tensor([3, 1, 2]), descending=True)
        tensor([0, 2, 1])
    """
    _t(input, "argsort")
    return O.sort(input.detach() if input.requires_grad else input, dim, descending,
                  stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """Returns the ``k`` largest (or smallest) elements of ``input`` along ``dim``.

    Returns a named tuple ``(values, indices)``, the indices being positions in ``input``
    along ``dim``.

    Args:
        input (Tensor): the input tensor.
        k (int): how many elements to return.
        dim (int): the dimension to search along. Default: -1.
        largest (bool): the largest elements if True, else the smallest. Default: True.
        sorted (bool): return the elements in sorted order. Default: True.
        out (tuple of Tensors, optional): the ``(values, indices)`` output tensors.

    Example:
        >>> values, indices = ember.topk(ember.tensor([1., 4., 2., 3.]), 2)
        >>> values, indices
        (tensor([4., 3.]), tensor([1, 3]))
    """
    if out is not None:
        return O.write_out("topk", out, topk_ret(*RD.topk(input, k, dim, largest, sorted)),
                           "exact")
    return topk_ret(*RD.topk(input, k, dim, largest, sorted))


# ---- indexing -------------------------------------------------------------------------
def gather(input, dim, index, *, out=None):
    """Collects values of ``input`` along ``dim`` at the positions given by ``index``.

    For a 2-D input, ``out[i][j] = input[index[i][j]][j]`` with ``dim=0`` and
    ``out[i][j] = input[i][index[i][j]]`` with ``dim=1``. The result has ``index``'s shape;
    ``index`` has as many dimensions as ``input`` and is no larger in the other dimensions.

    Args:
        input (Tensor): the source tensor.
        dim (int): the dimension to index along.
        index (Tensor): the int64 indices of the elements to collect.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.gather(ember.tensor([[1, 2], [3, 4]]), 1, ember.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]])
    """
    O.refuse_barebones("gather", input)
    CX.check_half("scatter_gather", input)
    return O.gather(input, dim, index, out=out)


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """Returns a copy of ``input`` with values written at the positions given by ``index``.

    The reverse of :func:`ember.gather`: for a 2-D input and ``dim=0``,
    ``out[index[i][j]][j] = src[i][j]`` (with ``dim=1``, ``out[i][index[i][j]]``). The values
    come from the tensor ``src`` or, as a single number, from ``value``. ``reduce``
    (``'add'`` or ``'multiply'``) combines them with the existing values instead of
    replacing them. Where several writes hit one position without ``reduce``, which one wins
    is not specified.

    Args:
        input (Tensor): the tensor to copy and write into.
        dim (int): the dimension to index along.
        index (Tensor): the int64 positions to write at.
        src (Tensor or Number, optional): the values to write.
        value (Number, optional): a single value to write (instead of ``src``).
        reduce (str, optional): None, ``'add'`` or ``'multiply'``. Default: None.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.zeros(2, 3).scatter(0, ember.tensor([[1, 0, 1]]), ember.tensor([[1., 2., 3.]]))
        tensor([[0., 2., 0.],
                [1., 0., 3.]])
    """
    if out is not None:
        return O.write_out("scatter", out, _scatter(input, dim, index, _src(src, value),
                                                    reduce=reduce), "exact")
    return _scatter(input, dim, index, _src(src, value), reduce=reduce)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place version of :meth:`ember.Tensor.scatter`."""
    O.refuse_barebones("scatter", self)
    CX.check_half("scatter_gather", self)
    if reduce == "multiply":
        return self.copy_(_scatter(self, dim, index, _src(src, value), reduce))
    return O.scatter_(self, dim, index, _src(src, value), reduce=reduce)


def _scatter(input, dim, index, src, reduce=None):
    """``scatter``; its ``reduce='multiply'`` (which the scatter kernels lack) is
    ``scatter_reduce``'s "prod" with ``input``'s values included."""
    O.refuse_barebones("scatter", input)
    CX.check_half("scatter_gather", input)
    if reduce != "multiply":
        return O.scatter(input, dim, index, src, reduce=reduce)
    _t(input, "scatter")
    if isinstance(src, TensorBase):
        src = O.to(src, None, input.dtype)
    else:
        src = O.full(getattr(index, "shape", ()), src, input.dtype, input.device)
    return RD.scatter_reduce(input, dim, index, src, "prod")


def _src(src, value):
    v = src if src is not None else value
    if v is None:
        raise TypeError("scatter(): expected 'src' or 'value'")
    return _s(v)


def scatter_add(input, dim, index, src, *, out=None):
    """Returns a copy of ``input`` with the values of ``src`` added at the positions in ``index``.

    Like :func:`ember.scatter` with ``reduce='add'``: every value of ``src`` is added to the
    element of ``input`` that ``index`` selects along ``dim``, so repeated indices add up.

    Args:
        input (Tensor): the tensor to copy and add into.
        dim (int): the dimension to index along.
        index (Tensor): the int64 positions to add at.
        src (Tensor): the values to add.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 2]), ember.tensor([1., 2., 3.]))
        tensor([3., 0., 3.])
    """
    O.refuse_barebones("scatter_add", input)
    if out is not None:
        return O.write_out("scatter_add", out, O.scatter(input, dim, index, src, reduce="add"),
                           "exact")
    return O.scatter(input, dim, index, src, reduce="add")


def scatter_add_(self, dim, index, src):
    """In-place version of :meth:`ember.Tensor.scatter_add`."""
    return scatter_(self, dim, index, src, reduce="add")


def index_select(input, dim, index, *, out=None):
    """Selects the slices of ``input`` along ``dim`` whose positions are listed in ``index``.

    The result has ``input``'s shape except along ``dim``, where its size is ``len(index)``;
    it is a new tensor, not a view.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to select along.
        index (Tensor): a 1-D tensor of int64 (or int32) positions.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.index_select(ember.tensor([[1, 2], [3, 4], [5, 6]]), 0, ember.tensor([2, 0]))
        tensor([[5, 6],
                [1, 2]])
    """
    O.refuse_barebones("index_select", input)
    res = IX.index_select(input, dim, index)
    return O.write_out("index_select", out, res, "exact") if out is not None else res


def index_add(input, dim, index, source, *, alpha=1, out=None):
    """Returns a copy of ``input`` with ``alpha * source`` added to the slices listed in ``index``.

    Slice ``i`` of ``source`` along ``dim`` is added to slice ``index[i]`` of ``input``;
    repeated indices add up.

    Args:
        input (Tensor): the tensor to copy and add into.
        dim (int): the dimension to index along.
        index (Tensor): a 1-D tensor of positions, one per slice of ``source``.
        source (Tensor): the values to add.
        alpha (Number): the multiplier of ``source``. Default: 1.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.index_add(ember.zeros(3), 0, ember.tensor([0, 0, 2]), ember.tensor([1., 2., 3.]),
        ...                 alpha=2)
        tensor([6., 0., 6.])
    """
    if out is not None:
        return O.write_out("index_add", out, IX.index_add(input, dim, index, source, alpha),
                           "exact")
    return IX.index_add(input, dim, index, source, alpha)


def index_add_(self, dim, index, source, *, alpha=1):
    """In-place version of :meth:`ember.Tensor.index_add`."""
    C.check_writable(self, "index_add_")   # (the write is a copy_)
    return O.copy_(self, index_add(self, dim, index, source, alpha=alpha))


def masked_fill(input, mask, value):
    """Returns a copy of ``input`` with ``value`` written where ``mask`` is True.

    ``mask`` is a bool tensor that broadcasts to ``input``'s shape.

    Args:
        input (Tensor): the input tensor.
        mask (Tensor): the bool mask.
        value (Number or Tensor): the value to write (a number or a 0-d tensor).

    Example:
        >>> ember.masked_fill(ember.tensor([1., 2., 3.]), ember.tensor([True, False, True]), 0.)
        tensor([0., 2., 0.])
    """
    return IX.masked_fill(input, mask, _s(value))


def masked_fill_(self, mask, value):
    """In-place version of :meth:`ember.Tensor.masked_fill`.

    ``mask`` must broadcast to ``self``'s shape. ember raises for a ``self`` with broadcast
    (expanded) dimensions, where PyTorch only warns that this is deprecated.
    """
    # PyTorch only warns ("deprecated") for an expanded self; ember raises the error it
    # announces (the write is a copy_)
    C.check_writable(self, "masked_fill_")
    shape = C.broadcast_shapes(self.shape, mask.shape)
    if shape != self.shape:
        raise RuntimeError(f"masked_fill_(): output with shape {C.shape_str(self.shape)} "
                           f"doesn't match the broadcast shape {C.shape_str(shape)}")
    return O.copy_(self, masked_fill(self, mask, value))


def masked_select(input, mask, *, out=None):
    """Returns the elements of ``input`` where ``mask`` is True, as a new 1-D tensor.

    ``input`` and ``mask`` broadcast together; the elements come in row-major order.

    Args:
        input (Tensor): the input tensor.
        mask (Tensor): the bool mask.
        out (Tensor, optional): the output tensor.

    Example:
        >>> x = ember.tensor([[1, 2], [3, 4]])
        >>> ember.masked_select(x, ember.tensor([[True, False], [False, True]]))
        tensor([1, 4])
    """
    O.refuse_barebones("masked_select", input)
    shape = C.broadcast_shapes(input.shape, mask.shape)
    if out is not None:
        return O.write_out("masked_select", out, masked_select(input, mask), "exact")
    return IX.index(V.expand(input, shape), C.expand_to(mask, shape))


def nonzero(input, *, as_tuple=False, out=None):
    """Returns the indices of the nonzero elements of ``input``.

    By default the result is a 2-D int64 tensor with one row per nonzero element and one
    column per dimension of ``input``, in row-major order. With ``as_tuple=True`` it is a
    tuple of 1-D tensors, one per dimension, which can index ``input`` directly (a 0-d input
    is treated as 1-D).

    Args:
        input (Tensor): the input tensor.
        as_tuple (bool): return a tuple of index tensors. Default: False.
        out (Tensor, optional): the output tensor (without ``as_tuple``).

    Example:
        >>> x = ember.tensor([[0, 1], [2, 0]])
        >>> ember.nonzero(x)
        tensor([[0, 1],
                [1, 0]])
        >>> ember.nonzero(x, as_tuple=True)
        (tensor([0, 1]), tensor([1, 0]))
    """
    if out is not None and not as_tuple:
        return O.write_out("nonzero", out, O.nonzero(input), "exact")
    nz = O.nonzero(input)
    if as_tuple:
        if not input.shape:
            return (V.select(nz, 1, 0) if nz.shape[1] else O.zeros((nz.shape[0],), D.int64,
                                                                      input.device),)
        return tuple(V.select(nz, 1, j) for j in range(len(input.shape)))
    return nz


def argwhere(input):
    """Returns the indices of the nonzero elements of ``input``, one row per element.

    The same as ``ember.nonzero(input)``.

    Args:
        input (Tensor): the input tensor.

    Example:
        >>> ember.argwhere(ember.tensor([0, 3, 0, 4]))
        tensor([[1],
                [3]])
    """
    return O.nonzero(input)


def take(input, index, *, out=None):
    """Returns the elements of ``input`` at the given flat indices.

    ``input`` is read as if flattened to 1-D; negative indices count from the end. The
    result has ``index``'s shape.

    Args:
        input (Tensor): the input tensor.
        index (Tensor): the int64 flat indices.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.take(ember.tensor([[1, 2], [3, 4]]), ember.tensor([0, 3, -2]))
        tensor([1, 4, 3])
    """
    O.refuse_barebones("take", input)
    if out is not None:
        return O.write_out("take", out, IX.index(V.reshape(input, -1), index), "exact")
    return IX.index(V.reshape(input, -1), index)


# ---- joining, reshaping copies --------------------------------------------------------
def cat(tensors, dim=0, *, out=None):
    """Concatenates a sequence of tensors along an existing dimension.

    The tensors must have the same shape except along ``dim`` (a 1-D empty tensor is
    skipped); their dtypes are promoted. Aliases: ``ember.concat``, ``ember.concatenate``.

    Args:
        tensors (sequence of Tensors): the tensors to join.
        dim (int): the dimension to join along. Default: 0.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.cat([ember.tensor([1, 2]), ember.tensor([3])])
        tensor([1, 2, 3])
        >>> ember.cat((ember.zeros(2, 1), ember.ones(2, 2)), dim=1)
        tensor([[0., 1., 1.],
                [0., 1., 1.]])
    """
    res = IX.cat(tensors, dim)
    # (PyTorch's cat raises TypeError for an out= its inputs can't be cast to)
    return O.write_out("cat", out, res, "cast", TypeError) if out is not None else res


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Joins a sequence of tensors of one shape along a new dimension ``dim``.

    Args:
        tensors (sequence of Tensors): the tensors to join, all of the same shape.
        dim (int): the position of the new dimension. Default: 0.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.stack([ember.tensor([1, 2]), ember.tensor([3, 4])], dim=1)
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = list(tensors)
    res = IX.stack(tensors, dim)
    return O.write_out("stack", out, res, "cast", TypeError) if out is not None else res


def hstack(tensors):
    """Concatenates ``tensors`` horizontally: along dimension 1, or 0 for 1-D tensors."""
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if len(tensors[0].shape) == 1 else 1)


def vstack(tensors):
    """Concatenates ``tensors`` along dimension 0, making 0-d and 1-D ones rows first."""
    return cat([V.reshape(t, (1, -1)) if len(t.shape) < 2 else t for t in tensors], 0)


def atleast_1d(t):
    """Returns ``t`` with a 0-d tensor reshaped to one element, else ``t`` itself."""
    return V.reshape(t, (1,)) if not t.shape else t


def _grad(*ts):
    return MODE.grad and O.requires_grad(ts)


def flip(input, dims):
    """Returns a copy of ``input`` with the order of elements reversed along ``dims``.

    Args:
        input (Tensor): the input tensor.
        dims (int or sequence of ints): the dimensions to reverse.

    Example:
        >>> ember.flip(ember.tensor([[1, 2], [3, 4]]), [0, 1])
        tensor([[4, 3],
                [2, 1]])
    """
    CX.check_half("flip", input)
    return IX.flip(input, dims)


def fliplr(input):
    """Reverses the order of the columns (dimension 1) of ``input``, which must be at least 2-D.

    Example:
        >>> ember.fliplr(ember.tensor([[1, 2], [3, 4]]))
        tensor([[2, 1],
                [4, 3]])
    """
    if len(_t(input, "fliplr").shape) < 2:
        raise RuntimeError("fliplr(): Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """Reverses the order of the rows (dimension 0) of ``input``, which must be at least 1-D.

    Example:
        >>> ember.flipud(ember.tensor([[1, 2], [3, 4]]))
        tensor([[3, 4],
                [1, 2]])
    """
    if not _t(input, "flipud").shape:
        raise RuntimeError("flipud(): Input must be >= 1-d.")
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    """Shifts the elements of ``input`` circularly along the given dimensions.

    Elements pushed past the last position come back at the first. Without ``dims`` the
    tensor is rolled as if flattened, then given back its shape.

    Args:
        input (Tensor): the input tensor.
        shifts (int or tuple of ints): the number of places to shift, one per dimension in
            ``dims``; negative values shift the other way.
        dims (int or tuple of ints, optional): the dimensions to roll along. Default: None.

    Example:
        >>> ember.roll(ember.tensor([1, 2, 3, 4]), 1)
        tensor([4, 1, 2, 3])
        >>> ember.roll(ember.tensor([[1, 2], [3, 4]]), (1, 1), (0, 1))
        tensor([[4, 3],
                [2, 1]])
    """
    return IX.roll(input, shifts, dims)


def repeat(input, repeats):
    """Tiles ``input`` ``repeats[i]`` times along each dimension ``i``: ``Tensor.repeat``.

    ``repeats`` may have more entries than ``input`` has dimensions; ``input`` then gets
    leading dimensions of size 1. PyTorch has this as the method only (``ember.repeat`` is an
    ember extra).

    Args:
        input (Tensor): the input tensor.
        repeats (sequence of ints): the number of copies along each dimension.

    Example:
        >>> ember.repeat(ember.tensor([1, 2]), (2, 2))
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    return IX.repeat(input, repeats)


def tril(input, diagonal=0, *, out=None):
    """Returns the lower triangle of the matrix (or batch of matrices) ``input``.

    Elements above the ``diagonal``-th diagonal are set to zero. ``diagonal=0`` is the main
    diagonal, a positive value one above it and a negative value one below it.

    Args:
        input (Tensor): the input tensor, at least 2-D.
        diagonal (int): the diagonal to keep elements from. Default: 0.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.tril(ember.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]))
        tensor([[1, 0, 0],
                [4, 5, 0],
                [7, 8, 9]])
    """
    if out is not None:
        return O.write_out("tril", out, IX.tril(input, diagonal), "exact")
    return IX.tril(input, diagonal)


def triu(input, diagonal=0, *, out=None):
    """Returns the upper triangle of the matrix (or batch of matrices) ``input``.

    Elements below the ``diagonal``-th diagonal are set to zero. ``diagonal=0`` is the main
    diagonal, a positive value one above it and a negative value one below it.

    Args:
        input (Tensor): the input tensor, at least 2-D.
        diagonal (int): the diagonal to keep elements from. Default: 0.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.triu(ember.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), diagonal=1)
        tensor([[0, 2, 3],
                [0, 0, 6],
                [0, 0, 0]])
    """
    if out is not None:
        return O.write_out("triu", out, IX.triu(input, diagonal), "exact")
    return IX.triu(input, diagonal)


def clone(input, *, memory_format=None):
    """Returns a copy of ``input`` with its own storage; gradients flow back to ``input``.

    With the default ``memory_format`` (``preserve_format``) the copy of a dense input keeps
    the order of its strides (a transposed matrix clones to a transposed matrix); any other
    input clones to a contiguous tensor.

    Args:
        input (Tensor): the tensor to copy.
        memory_format (ember.memory_format, optional): the layout of the copy
            (``ember.contiguous_format``, ``ember.channels_last``, ...).

    Example:
        >>> ember.clone(ember.tensor([1., 2.]))
        tensor([1., 2.])
    """
    return _SH.clone(input, memory_format)


# ---- linear algebra -------------------------------------------------------------------
def _tensors(op, *args):
    names = ("input", "other", "third")
    for i, a in enumerate(args):
        if not isinstance(a, TensorBase):
            raise TypeError(f"{op}(): argument '{names[i]}' (position {i + 1}) must be Tensor, "
                            f"not {type(a).__name__}")


def matmul(input, other, *, out=None):
    """Returns the matrix product of ``input`` and ``other``, by their numbers of dimensions.

    - 1-D and 1-D: the dot product, a 0-d tensor.
    - 2-D and 2-D: the matrix product.
    - 1-D and 2-D, or 2-D and 1-D: the vector is treated as a row (first operand) or a
      column (second operand) and that dimension is removed from the result.
    - more dimensions: a batched matrix product; the batch dimensions broadcast.

    Also the ``@`` operator.

    Args:
        input (Tensor): the first operand.
        other (Tensor): the second operand.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.matmul(ember.tensor([[1., 2.], [3., 4.]]), ember.tensor([1., 1.]))
        tensor([3., 7.])
        >>> ember.matmul(ember.ones(5, 2, 3), ember.ones(3, 4)).shape
        ember.Size([5, 2, 4])
    """
    _tensors("matmul", input, other)
    res = LA.matmul(input, other)
    return O.write_out("matmul", out, res, "exact") if out is not None else res


def mm(input, mat2, *, out=None):
    """Returns the matrix product of the 2-D tensors ``input`` (n x m) and ``mat2`` (m x p).

    No broadcasting: see :func:`ember.matmul` for that.

    Args:
        input (Tensor): the first matrix.
        mat2 (Tensor): the second matrix.
        out (Tensor, optional): the output tensor.
    """
    _tensors("mm", input, mat2)
    res = LA.mm(input, mat2)
    return O.write_out("mm", out, res, "exact") if out is not None else res


def bmm(input, mat2, *, out=None):
    """Returns the batched matrix product of the 3-D tensors ``input`` and ``mat2``.

    ``input`` is (b x n x m) and ``mat2`` (b x m x p); the result is (b x n x p). No
    broadcasting: see :func:`ember.matmul` for that.

    Args:
        input (Tensor): the first batch of matrices.
        mat2 (Tensor): the second batch of matrices.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.bmm(ember.ones(5, 2, 3), ember.ones(5, 3, 4)).shape
        ember.Size([5, 2, 4])
    """
    _tensors("bmm", input, mat2)
    return O.bmm(input, mat2, out=out)


def mv(input, vec, *, out=None):
    """Returns the product of the matrix ``input`` (n x m) and the vector ``vec`` (m).

    Args:
        input (Tensor): the 2-D matrix.
        vec (Tensor): the 1-D vector.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.mv(ember.tensor([[1., 2.], [3., 4.]]), ember.tensor([1., -1.]))
        tensor([-1., -1.])
    """
    _tensors("mv", input, vec)
    LA.mv_check(input, vec)
    if out is not None:
        return O.write_out("mv", out, LA.matmul(input, vec), "exact")
    return LA.matmul(input, vec)


def dot(input, tensor, *, out=None):
    """Returns the dot product of two 1-D tensors of one length and dtype.

    Unlike NumPy's ``dot``, both operands must be 1-D. ``inner_product`` is an ember alias
    (PyTorch has no such name).

    Args:
        input (Tensor): the first vector.
        tensor (Tensor): the second vector.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.dot(ember.tensor([1, 2, 3]), ember.tensor([4, 5, 6]))
        tensor(32)
    """
    other = tensor  # (PyTorch's name for the second vector)
    _tensors("dot", input, other)
    LA.dot_check(input, other)
    if out is not None:
        return O.write_out("dot", out, LA.matmul(input, other), "exact")
    return LA.matmul(input, other)


inner_product = dot


def outer(input, vec2, *, out=None):
    """Returns the outer product of the 1-D tensors ``input`` (n) and ``vec2`` (m), n x m.

    Alias: ``ember.ger``.

    Args:
        input (Tensor): the first vector.
        vec2 (Tensor): the second vector.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.outer(ember.tensor([1, 2]), ember.tensor([1, 10, 100]))
        tensor([[  1,  10, 100],
                [  2,  20, 200]])
    """
    _tensors("outer", input, vec2)
    if out is not None:
        return O.write_out("outer", out, LA.outer(input, vec2))
    return LA.outer(input, vec2)


ger = outer


def addmm(input, mat1, mat2, *args, beta=1, alpha=1, out=None):
    """Returns ``beta * input + alpha * (mat1 @ mat2)``.

    ``mat1`` is (n x m) and ``mat2`` (m x p); ``input`` broadcasts to (n x p). With
    ``beta=0``, ``input`` is ignored (NaN and inf in it do not propagate).

    Args:
        input (Tensor): the matrix to add.
        mat1 (Tensor): the first matrix of the product.
        mat2 (Tensor): the second matrix of the product.
        beta (Number): the multiplier of ``input``. Default: 1.
        alpha (Number): the multiplier of ``mat1 @ mat2``. Default: 1.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.addmm(ember.ones(2, 2), ember.eye(2), ember.tensor([[1., 2.], [3., 4.]]),
        ...             beta=0.5, alpha=2)
        tensor([[2.5000, 4.5000],
                [6.5000, 8.5000]])
    """
    if args:
        input, mat1, mat2, beta, alpha = DO.product(
            'addmm', False, (input, mat1, mat2, *args), beta, alpha)
    _tensors("addmm", input, mat1, mat2)
    if out is not None:
        return O.write_out("addmm", out, LA.addmm(input, mat1, mat2, beta, alpha), "exact")
    return LA.addmm(input, mat1, mat2, beta, alpha)


def einsum(equation, *operands):
    """Sums products of the elements of ``operands`` as an Einstein-notation equation says.

    The equation names each operand's dimensions with letters (``'ij,jk->ik'``); letters
    repeated across operands are multiplied along, letters missing from the output (after
    ``->``) are summed over. Without ``->`` the output takes the letters that appear once,
    in alphabetical order. ``...`` stands for broadcast dimensions. The operands may also be
    given as one list.

    Args:
        equation (str): the subscripts.
        operands (Tensor): the tensors to combine.

    Example:
        >>> a = ember.tensor([[1., 2.], [3., 4.]])
        >>> ember.einsum('ij,jk->ik', a, a)
        tensor([[ 7., 10.],
                [15., 22.]])
        >>> ember.einsum('ii', a)
        tensor(5.)
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not "
                        f"{type(equation).__name__}")
    flat = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) \
        else operands
    for i, t_ in enumerate(flat):
        if not isinstance(t_, TensorBase):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(t_).__name__}")
    return LA.einsum(equation, *flat)


# ---- views (functional forms) ---------------------------------------------------------
reshape = VW.reshape
transpose = VW.transpose
swapaxes = swapdims = VW.transpose
permute = VW.permute
squeeze = VW.squeeze
unsqueeze = VW.unsqueeze
flatten = VW.flatten
unflatten = VW.unflatten
narrow = VW.narrow
select = VW.select
movedim = moveaxis = VW.movedim
diagonal = VW.diagonal
as_strided = VW.as_strided
t = VW.t
split = VW.split
chunk = VW.chunk
unbind = VW.unbind
broadcast_to = VW.broadcast_to


def broadcast_tensors(*tensors):
    """Expands the given tensors to their common broadcast shape.

    The results are views of the inputs (no copy), whose broadcast elements share memory:
    in-place writes to them raise, so ``clone()`` them first.

    Example:
        >>> a, b = ember.broadcast_tensors(ember.tensor([1, 2]), ember.tensor([[3], [4]]))
        >>> a
        tensor([[1, 2],
                [1, 2]])
        >>> b
        tensor([[3, 3],
                [4, 4]])
    """
    shape = C.broadcast_shapes(*[x.shape for x in tensors])
    return tuple(V.expand(x, shape) for x in tensors)


def broadcast_shapes(*shapes):
    """Returns the shape that tensors of the given shapes broadcast to.

    Each argument is a shape (sequence of ints) or a single int; incompatible shapes raise.
    The result is an ``ember.Size``, as PyTorch's is a ``torch.Size``.

    Example:
        >>> ember.broadcast_shapes((2, 1), (3,))
        ember.Size([2, 3])
    """
    return C.as_size(C.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,)
                                          for s in shapes]))


def is_tensor(obj):
    """Returns True if ``obj`` is an ember tensor.

    Example:
        >>> ember.is_tensor(ember.tensor(1.)), ember.is_tensor(1.)
        (True, False)
    """
    return isinstance(obj, TensorBase)


def is_floating_point(input):
    """Returns True if the dtype of ``input`` is a floating-point type.

    Example:
        >>> ember.is_floating_point(ember.tensor([1., 2.]))
        True
    """
    return input.dtype.is_floating_point


def numel(input):
    """Returns the number of elements of ``input``, as a Python int.

    Example:
        >>> ember.numel(ember.ones(2, 3))
        6
    """
    return C.numel(input.shape)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Tests elementwise whether ``input`` and ``other`` are close to each other.

    Two values are close when they are equal (infinities of one sign included) or when
    ``|input - other| <= atol + rtol * |other|``. NaNs are close to each other only with
    ``equal_nan=True``. The result is a bool tensor of the broadcast shape.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor.
        rtol (float): the relative tolerance. Default: 1e-05.
        atol (float): the absolute tolerance. Default: 1e-08.
        equal_nan (bool): treat two NaNs as close. Default: False.

    Example:
        >>> ember.isclose(ember.tensor([1., 2., 3.]), ember.tensor([1., 2.1, 3.00001]))
        tensor([ True, False,  True])
    """
    # PyTorch's rule: equal values are close (equal infinities too); others are close when
    # |input - other| is finite and within atol + rtol * |other| (so inf vs -inf is not)
    if getattr(input, "dtype", None) is D.bool_ and getattr(other, "dtype", None) is D.bool_:
        input, other = O.cast(input, D.get_default_dtype()), O.cast(other, D.get_default_dtype())
    elif getattr(input, "dtype", None) in D.BAREBONES_UNSIGNED and other.dtype is input.dtype:
        # (no subtraction or abs for uint16 / uint32 / uint64: the error in float64)
        input, other = O.cast(input, D.float64), O.cast(other, D.float64)
    tol = E("add", E("mul", E("abs", other), rtol), atol)
    err = E("abs", sub(input, other))
    close = E("logical_and", E("isfinite", err), E("le", err, tol))
    close = E("logical_or", close, E("eq", input, other))
    if equal_nan:
        close = E("logical_or", close, E("logical_and", E("isnan", input), E("isnan", other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Returns True if every element of ``input`` is close to the one of ``other``.

    ``ember.isclose(input, other, rtol, atol, equal_nan).all()`` as a Python bool; see
    :func:`ember.isclose` for the rule.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor.
        rtol (float): the relative tolerance. Default: 1e-05.
        atol (float): the absolute tolerance. Default: 1e-08.
        equal_nan (bool): treat two NaNs as close. Default: False.

    Example:
        >>> ember.allclose(ember.tensor([1., 2.]), ember.tensor([1., 2.000001]))
        True
    """
    return bool(O.item(all(isclose(input, other, rtol, atol, equal_nan))))


def equal(input, other):
    """Returns True if ``input`` and ``other`` have the same shape and the same values.

    A Python bool; NaN is never equal to NaN.

    Example:
        >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2]))
        True
    """
    CX.check_half("equal", input, other)
    return input.shape == other.shape and bool(O.item(all(E("eq", input, other))))





METHODS.update(nextafter=nextafter, lcm=lcm, heaviside=heaviside,
               polygamma=_polygamma_method, mvlgamma=mvlgamma,
               nan_to_num=nan_to_num, __lshift__=_lshift, __rlshift__=_rlshift,
               __rshift__=_rshift, __rrshift__=_rrshift, __ilshift__=_ilshift,
               __irshift__=_irshift,
               frexp=frexp, ldexp=ldexp, logit=logit, positive=positive, isreal=isreal,
               fix=trunc, arctan2=atan2)  # noqa: F821
INPLACE.update(nextafter_=nextafter_, lcm_=lcm_, heaviside_=heaviside_,
               polygamma_=polygamma_, mvlgamma_=mvlgamma_,
               nan_to_num_=nan_to_num_,
               ldexp_=ldexp_, logit_=logit_, float_power_=float_power_, square_=square_,
               clamp_min_=clamp_min_, clamp_max_=clamp_max_, negative_=neg_, subtract_=sub_,
               divide_=div_, true_divide_=div_)

_NOT_API = {"math", "namedtuple", "np", "C", "D", "O", "V", "IX", "LA", "RD", "E", "VW", "EW", "NN",
            "TensorBase", "MODE", "warnings", "annotations", "values_indices", "max_ret",
            "min_ret", "sort_ret", "topk_ret", "INPLACE", "ELEMENTWISE", "METHODS",
            "elementwise_ops", "parse_signature", "SPECIAL", "OPS", "frexp_ret", "below_autograd",
            "return_type"}
#: the in-place forms PyTorch also has as functions (``torch.exp_(x)``); the others are
#: Tensor methods only, as in PyTorch
TORCH_INPLACE = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_",
    "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_",
    "tan_", "tanh_", "trunc_", "xlogy_")
for _n in TORCH_INPLACE:
    if _n not in globals():
        globals()[_n] = INPLACE[_n]
del _n
__all__ = [n for n in list(globals())
           if not n.startswith("_") and not n.endswith("_") and n not in _NOT_API
           and n != "TORCH_INPLACE"] + list(TORCH_INPLACE)
