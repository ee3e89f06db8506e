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

from . import _views as VW

E = O.elementwise


class _NoDim:
    """The default of ``sum``'s ``dim``: PyTorch's sum(input, *, dtype) overload, told apart
    from sum(input, dim=None, ..., out=)."""

    def __repr__(self):
        return "None"


_NO_DIM = _NoDim()

values_indices = namedtuple("return_types", ["values", "indices"])
max_ret = namedtuple("max", ["values", "indices"])
min_ret = namedtuple("min", ["values", "indices"])
sort_ret = namedtuple("sort", ["values", "indices"])
topk_ret = namedtuple("topk", ["values", "indices"])


def _s(v):
    """Python/NumPy scalars become Python numbers; tensors pass through."""
    if isinstance(v, TensorBase) or isinstance(v, (bool, int, float)):
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
    star = f", *{kw_decl}{', out=None' if has_out else ''}" if kws or has_out else ""
    src = [f"def {o.name}(input{rest}{star}):",
           f"    return _ew({o.name!r}, {args(o.name, 0)}"
           f"{', out=out' if has_out else ''}{kw_pass})"]
    star = f", *{kw_decl}" if kws else ""
    src += [f"def {o.name}__method(self{rest}{star}):",
            f"    return _ew({o.name!r}, {args(o.name, 1)}{kw_pass})",
            f"def {o.name}_(self{rest}{star}):",
            f"    return _ew({o.name!r}, {args(o.name + '_', 1)}, inplace=True{kw_pass})"]
    env = {"_ew": E, "_s": _s, "_t": _t}
    exec("\n".join(src), env)  # noqa: S102 - source built from the op table above
    fn, method, fn_ = env[o.name], env[o.name + "__method"], env[o.name + "_"]
    fn.__doc__ = method.__doc__ = (
        f"``ember.{o.signature.split(' ->')[0].replace('self', 'input')}``: elementwise "
        f"{o.name} (see PyTorch's ``torch.{o.name}``)." + (f" {o.doc}." if o.doc else ""))
    method.__name__ = method.__qualname__ = o.name
    return fn, method, fn_


for _o in elementwise_ops():
    if _o.name in _HANDWRITTEN:
        continue
    _fn, _method, _fn_ = _generate(_o)
    if _o.name.startswith("special_"):  # (PyTorch's python_module: special)
        _fn.__name__ = _fn.__qualname__ = _o.name[len("special_"):]
        SPECIAL[_fn.__name__] = _fn
        continue
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
fix, sgn = trunc, sign  # noqa: F821
#: alias -> op: the method and in-place forms of the aliases are the op's
_ALIASES = {"multiply": "mul", "greater": "gt", "greater_equal": "ge", "less": "lt",
            "less_equal": "le", "not_equal": "ne", "absolute": "abs", "arcsin": "asin",
            "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "fix": "trunc", "sgn": "sign"}
for _alias, _name in _ALIASES.items():
    if _name in METHODS:
        METHODS[_alias] = METHODS[_name]
    if _name + "_" in INPLACE:
        INPLACE[_alias + "_"] = INPLACE[_name + "_"]
del _alias, _name


def neg(input, *, out=None):
    if _t(input, "neg", "input", 1).dtype is D.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return E("neg", input, out=out)


def neg_(self):
    return E("neg", self, inplace=True)


negative = neg


def add(input, other, *, alpha=1, out=None):
    if type(alpha) is int and alpha == 1:
        return E("add", _s(input), _s(other), out=out)
    return _add_sub("add", _s(input), _s(other), alpha, out=out)


def sub(input, other, *, alpha=1, out=None):
    a, b = _s(input), _s(other)
    if (type(a) is bool or type(b) is bool or getattr(a, "dtype", None) is _BOOL
            or getattr(b, "dtype", None) is _BOOL):
        _no_bool_subtraction(a, b)
    if type(alpha) is int and alpha == 1:
        return E("sub", a, b, out=out)
    return _add_sub("sub", a, b, alpha, out=out)


subtract = sub
_BOOL = D.bool_  # (sub's check: a bool dtype or a Python bool operand)


def add_(self, other, *, alpha=1):
    if type(alpha) is int and alpha == 1:
        return E("add", self, _s(other), inplace=True)
    return _add_sub("add", self, _s(other), alpha, inplace=True)


def sub_(self, other, *, alpha=1):
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
    elif isinstance(alpha, float) and not rt.is_floating_point:
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
    one = C.scalar_like(1, a) if inplace and a.dtype is rt else 1
    return E("addcmul", a, b, one, value=value, out=out, inplace=inplace)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    a, b = _s(input), _s(other)
    if rounding_mode is None:
        # true division always produces a floating result
        dt = D.result_type(a, b)
        if not dt.is_floating_point:
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
    return div(input, other, rounding_mode="floor", out=out)


def div_(self, other, *, rounding_mode=None):
    C.check_writable(self, "div_")     # (the write below is a copy_)
    src = O.clone(self) if _grad(self, other) else self  # keep the pre-write value for backward
    res = div(src, other, rounding_mode=rounding_mode)
    if not O.can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {D.torch_name(res.dtype)} can't be cast to the desired "
                           f"output type {D.torch_name(self.dtype)}")
    return O.copy_(self, res)


def floor_divide_(self, other):
    if self.dtype in (D.float16, D.bfloat16):  # (PyTorch's steps in the dtype: see div)
        return div_(self, other, rounding_mode="floor")
    return E("div", self, _s(other), inplace=True, rounding_mode="floor")


def where(condition, input=None, other=None, *, out=None):
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
    return O.clamp(_t(input, "clamp", "input", 1), *_bounds(min, max), out=out)


def clamp_(self, min=None, max=None):
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
    C.check_writable(input, "relu_")
    if input.requires_grad and MODE.grad:  # the graph keeps a copy, not the overwritten one
        return input.copy_(NN.relu(input.clone()))
    if NN.activation_("relu", input, {}) is not None:
        return input
    return clamp_(input, min=0)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


_FP_ARGS = (TensorBase, int, float, np.number, np.bool_)


def float_power(input, exponent, *, out=None):
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
    # (PyTorch's square is pow(input, 2): a bool input gives int64)
    if isinstance(input, TensorBase) and input.dtype is D.bool_:
        input = O.cast(input, D.int64)
    return E("mul", input, input, out=out)


def float_power_(self, exponent):
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{D.torch_name(self.dtype)} but the operation's result requires "
                           f"dtype Double")
    b = O.to(exponent, None, D.float64) if isinstance(exponent, TensorBase) else float(exponent)
    return E("pow", self, b, inplace=True)


def square_(self):
    return E("mul", self, self, inplace=True)


def clamp_min_(self, min):
    return clamp_(self, min=min)


def clamp_max_(self, max):
    return clamp_(self, max=max)


def positive(input):
    """``input`` itself (PyTorch's ``torch.positive``; bool tensors raise)."""
    if _t(input, "positive", "input", 1).dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def isreal(input):
    """True everywhere: ember's tensors are real (PyTorch's ``torch.isreal``)."""
    return O.full(_t(input, "isreal", "input", 1).shape, True, D.bool_, input.device)


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
    return O.copy_(self, nan_to_num(self, nan, posinf, neginf))


_FLOAT_MAX = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38,
              "float16": 65504.0, "bfloat16": 3.3895313892515355e38}
frexp_ret = namedtuple("frexp", ["mantissa", "exponent"])


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
    return O.copy_(self, lcm(self, other)) if self.dtype in (D.int8, D.int16) else \
        E("lcm", self, _t(other, "lcm_", "other", 2), inplace=True)


# ---- reductions ---------------------------------------------------------------------
def sum(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    if dim is _NO_DIM:
        if out is not None:  # (PyTorch's sum(input, *, dtype) overload has no out=)
            raise TypeError("sum() received an invalid combination of arguments - got "
                            "(Tensor, out=Tensor): out= needs the dim argument (None for all)")
        dim = None
    return O.reduce("sum", _t(input, "sum"), dim, keepdim, dtype, out)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    return O.reduce("mean", _t(input, "mean"), dim, keepdim, dtype, out)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if isinstance(dim, (list, tuple)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    if dim is None and out is not None:  # (PyTorch's prod(input, *, dtype) has no out=)
        raise TypeError("prod() received an invalid combination of arguments - got "
                        "(Tensor, out=Tensor): out= needs an int dim")
    return O.reduce("prod", _t(input, "prod"), dim, keepdim, dtype, out)


def amax(input, dim=(), keepdim=False, *, out=None):
    return O.reduce("max", _t(input, "amax"), dim, keepdim, None, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    return O.reduce("min", _t(input, "amin"), dim, keepdim, None, out)


def argmax(input, dim=None, keepdim=False, *, out=None):
    return O.arg_reduce("argmax", _no_bool(_t(input, "argmax"), "argmax"), dim, keepdim, out)


def argmin(input, dim=None, keepdim=False, *, out=None):
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
    return _max_min("max", _t(input, "max"), dim, keepdim, other, out)


def min(input, dim=None, keepdim=False, *, other=None, out=None):
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
    dim, correction = _correction("var", dim, unbiased, correction)
    return O.reduce("var", _t(input, "var"), dim, keepdim, out=out, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    dim, correction = _correction("std", dim, unbiased, correction)
    if out is not None:
        return O.write_out("std", out, RD.std(_t(input, "std"), dim, correction, keepdim))
    return RD.std(_t(input, "std"), dim, correction, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
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
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    return O.reduce("logsumexp", _t(input, "logsumexp"), dim, keepdim, out=out)


def cumsum(input, dim, *, dtype=None, out=None):
    return O.scan("cumsum", input, dim, dtype, out)


def cumprod(input, dim, *, dtype=None, out=None):
    return O.scan("cumprod", input, dim, dtype, out)


def all(input, dim=None, keepdim=False, *, out=None):
    if out is not None:
        return O.write_out("all", out, RD.all_(_t(input, "all"), dim, keepdim), "exact")
    return RD.all_(_t(input, "all"), dim, keepdim)


def any(input, dim=None, keepdim=False, *, out=None):
    if out is not None:
        return O.write_out("any", out, RD.any_(_t(input, "any"), dim, keepdim), "exact")
    return RD.any_(_t(input, "any"), dim, keepdim)


def count_nonzero(input, dim=None):
    return O.reduce("sum", E("ne", input, 0), dim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" or p is None:
        p = 2
    if dtype is not None:
        input = O.to(input, None, D.to_dtype(dtype))
    return RD.norm(input, p, dim, keepdim)


def softmax(input, dim, dtype=None):
    """``torch.softmax`` / ``Tensor.softmax``: ``dim`` is required (``nn.functional.softmax``
    chooses one when it is None)."""
    return O.softmax_op("softmax", _t(input, "softmax"), _int_dim("softmax", dim), dtype)


def log_softmax(input, dim, dtype=None):
    return O.softmax_op("log_softmax", _t(input, "log_softmax"), _int_dim("log_softmax", dim),
                        dtype)


def _int_dim(name, dim):
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not NoneType")
    return dim


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    if out is not None:
        return O.write_out("sort", out, sort_ret(*O.sort(_t(input, "sort"), dim, descending,
                                                         stable)), "exact")
    return sort_ret(*O.sort(_t(input, "sort"), dim, descending, stable))


def argsort(input, dim=-1, descending=False, stable=False):
    _t(input, "argsort")
    return O.sort(input.detach() if input.requires_grad else input, dim, descending,
                  stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    if out is not None:
        return O.write_out("topk", out, topk_ret(*RD.topk(input, k, dim, largest, sorted)),
                           "exact")
    return topk_ret(*RD.topk(input, k, dim, largest, sorted))


# ---- indexing -------------------------------------------------------------------------
def gather(input, dim, index, *, out=None):
    return O.gather(input, dim, index, out=out)


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    if out is not None:
        return O.write_out("scatter", out, _scatter(input, dim, index, _src(src, value),
                                                    reduce=reduce), "exact")
    return _scatter(input, dim, index, _src(src, value), reduce=reduce)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    if reduce == "multiply":
        return self.copy_(_scatter(self, dim, index, _src(src, value), reduce))
    return O.scatter_(self, dim, index, _src(src, value), reduce=reduce)


def _scatter(input, dim, index, src, reduce=None):
    """``scatter``; its ``reduce='multiply'`` (which the scatter kernels lack) is
    ``scatter_reduce``'s "prod" with ``input``'s values included."""
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
    if out is not None:
        return O.write_out("scatter_add", out, O.scatter(input, dim, index, src, reduce="add"),
                           "exact")
    return O.scatter(input, dim, index, src, reduce="add")


def scatter_add_(self, dim, index, src):
    return scatter_(self, dim, index, src, reduce="add")


def index_select(input, dim, index, *, out=None):
    res = IX.index_select(input, dim, index)
    return O.write_out("index_select", out, res, "exact") if out is not None else res


def index_add(input, dim, index, source, *, alpha=1, out=None):
    if out is not None:
        return O.write_out("index_add", out, IX.index_add(input, dim, index, source, alpha),
                           "exact")
    return IX.index_add(input, dim, index, source, alpha)


def index_add_(self, dim, index, source, *, alpha=1):
    C.check_writable(self, "index_add_")   # (the write is a copy_)
    return O.copy_(self, index_add(self, dim, index, source, alpha=alpha))


def masked_fill(input, mask, value):
    return IX.masked_fill(input, mask, _s(value))


def masked_fill_(self, mask, value):
    # PyTorch only warns ("deprecated") for an expanded self; ember raises the error it
    # announces (the write is a copy_)
    C.check_writable(self, "masked_fill_")
    shape = C.broadcast_shapes(self.shape, mask.shape)
    if shape != self.shape:
        raise RuntimeError(f"masked_fill_(): output with shape {C.shape_str(self.shape)} "
                           f"doesn't match the broadcast shape {C.shape_str(shape)}")
    return O.copy_(self, masked_fill(self, mask, value))


def masked_select(input, mask, *, out=None):
    shape = C.broadcast_shapes(input.shape, mask.shape)
    if out is not None:
        return O.write_out("masked_select", out, masked_select(input, mask), "exact")
    return IX.index(V.expand(input, shape), C.expand_to(mask, shape))


def nonzero(input, *, as_tuple=False, out=None):
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
    return O.nonzero(input)


def take(input, index, *, out=None):
    if out is not None:
        return O.write_out("take", out, IX.index(V.reshape(input, -1), index), "exact")
    return IX.index(V.reshape(input, -1), index)


# ---- joining, reshaping copies --------------------------------------------------------
def cat(tensors, dim=0, *, out=None):
    res = IX.cat(tensors, dim)
    # (PyTorch's cat raises TypeError for an out= its inputs can't be cast to)
    return O.write_out("cat", out, res, "cast", TypeError) if out is not None else res


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    res = IX.stack(tensors, dim)
    return O.write_out("stack", out, res, "cast", TypeError) if out is not None else res


def hstack(tensors):
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if len(tensors[0].shape) == 1 else 1)


def vstack(tensors):
    return cat([V.reshape(t, (1, -1)) if len(t.shape) < 2 else t for t in tensors], 0)


def atleast_1d(t):
    return V.reshape(t, (1,)) if not t.shape else t


def _grad(*ts):
    return MODE.grad and O.requires_grad(ts)


def flip(input, dims):
    return IX.flip(input, dims)


def fliplr(input):
    if len(_t(input, "fliplr").shape) < 2:
        raise RuntimeError("fliplr(): Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    if not _t(input, "flipud").shape:
        raise RuntimeError("flipud(): Input must be >= 1-d.")
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    return IX.roll(input, shifts, dims)


def repeat(input, repeats):
    return IX.repeat(input, repeats)


def tril(input, diagonal=0, *, out=None):
    if out is not None:
        return O.write_out("tril", out, IX.tril(input, diagonal), "exact")
    return IX.tril(input, diagonal)


def triu(input, diagonal=0, *, out=None):
    if out is not None:
        return O.write_out("triu", out, IX.triu(input, diagonal), "exact")
    return IX.triu(input, diagonal)


def clone(input, *, memory_format=None):
    return O.clone(input)


# ---- linear algebra -------------------------------------------------------------------
def _tensors(op, *args):
    names = ("input", "other", "third")
    for i, a in enumerate(args):
        if not isinstance(a, TensorBase):
            raise TypeError(f"{op}(): argument '{names[i]}' (position {i + 1}) must be Tensor, "
                            f"not {type(a).__name__}")


def matmul(input, other, *, out=None):
    _tensors("matmul", input, other)
    res = LA.matmul(input, other)
    return O.write_out("matmul", out, res, "exact") if out is not None else res


def mm(input, mat2, *, out=None):
    _tensors("mm", input, mat2)
    res = LA.mm(input, mat2)
    return O.write_out("mm", out, res, "exact") if out is not None else res


def bmm(input, mat2, *, out=None):
    _tensors("bmm", input, mat2)
    return O.bmm(input, mat2, out=out)


def mv(input, vec, *, out=None):
    _tensors("mv", input, vec)
    LA.mv_check(input, vec)
    if out is not None:
        return O.write_out("mv", out, LA.matmul(input, vec), "exact")
    return LA.matmul(input, vec)


def dot(input, tensor, *, out=None):
    other = tensor  # (PyTorch's name for the second vector)
    _tensors("dot", input, other)
    LA.dot_check(input, other)
    if out is not None:
        return O.write_out("dot", out, LA.matmul(input, other), "exact")
    return LA.matmul(input, other)


inner_product = dot


def outer(input, vec2, *, out=None):
    _tensors("outer", input, vec2)
    if out is not None:
        return O.write_out("outer", out, LA.outer(input, vec2))
    return LA.outer(input, vec2)


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    _tensors("addmm", input, mat1, mat2)
    if out is not None:
        return O.write_out("addmm", out, LA.addmm(input, mat1, mat2, beta, alpha), "exact")
    return LA.addmm(input, mat1, mat2, beta, alpha)


def einsum(equation, *operands):
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
    shape = C.broadcast_shapes(*[x.shape for x in tensors])
    return tuple(V.expand(x, shape) for x in tensors)


def broadcast_shapes(*shapes):
    return C.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,) for s in shapes])


def is_tensor(obj):
    return isinstance(obj, TensorBase)


def is_floating_point(input):
    return input.dtype.is_floating_point


def numel(input):
    return C.numel(input.shape)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    # PyTorch's rule: equal values are close (equal infinities too); others are close when
    # |input - other| is finite and within atol + rtol * |other| (so inf vs -inf is not)
    if getattr(input, "dtype", None) is D.bool_ and getattr(other, "dtype", None) is D.bool_:
        input, other = O.cast(input, D.get_default_dtype()), O.cast(other, D.get_default_dtype())
    tol = E("add", E("mul", E("abs", other), rtol), atol)
    err = E("abs", sub(input, other))
    close = E("logical_and", E("isfinite", err), E("le", err, tol))
    close = E("logical_or", close, E("eq", input, other))
    if equal_nan:
        close = E("logical_or", close, E("logical_and", E("isnan", input), E("isnan", other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(O.item(all(isclose(input, other, rtol, atol, equal_nan))))


def equal(input, other):
    return input.shape == other.shape and bool(O.item(all(E("eq", input, other))))





METHODS.update(nextafter=nextafter, lcm=lcm, heaviside=heaviside,
               polygamma=_polygamma_method, mvlgamma=mvlgamma,
               nan_to_num=nan_to_num, __lshift__=_lshift, __rlshift__=_rlshift,
               __rshift__=_rshift, __rrshift__=_rrshift, __ilshift__=_ilshift,
               __irshift__=_irshift,
               frexp=frexp, ldexp=ldexp, logit=logit, positive=positive, isreal=isreal,
               fix=trunc, sgn=sign, arctan2=atan2)  # noqa: F821
INPLACE.update(nextafter_=nextafter_, lcm_=lcm_, heaviside_=heaviside_,
               polygamma_=polygamma_, mvlgamma_=mvlgamma_,
               nan_to_num_=nan_to_num_,
               ldexp_=ldexp_, logit_=logit_, float_power_=float_power_, square_=square_,
               clamp_min_=clamp_min_, clamp_max_=clamp_max_, negative_=neg_, subtract_=sub_,
               divide_=div_, true_divide_=div_)

_NOT_API = {"math", "namedtuple", "np", "C", "D", "O", "V", "IX", "LA", "RD", "E", "VW",
            "TensorBase", "MODE", "warnings", "annotations", "values_indices", "max_ret",
            "min_ret", "sort_ret", "topk_ret", "INPLACE", "ELEMENTWISE", "METHODS",
            "elementwise_ops", "parse_signature", "SPECIAL", "OPS", "frexp_ret", "below_autograd"}
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
