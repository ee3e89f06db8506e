"""Complex tensors (complex32, complex64, complex128) as pairs of real tensors.

A complex tensor is stored as PyTorch stores it: each element a (real, imaginary) pair of
float16 / float32 / float64, interleaved. Its ops are composites of real ops on the parts
(``views.view_as_real``), so every backend runs complex tensors with the real kernels it
already has, and autograd differentiates the real ops. Differentiating the parts gives
PyTorch's convention for the gradient of a real loss L with respect to z = x + iy: the
complex number dL/dx + i dL/dy (the conjugate Wirtinger derivative, doubled).

Three kinds of op reach here:

- elementwise arithmetic and functions (``elementwise``): ``TABLE`` maps each op to its
  formula over the parts;
- ops that act on the real and imaginary parts alike with real coefficients (copies,
  gathers, joins, sums, ...): ``run`` runs the op's real kernel twice, once per part;
- products (``matmul``): one real GEMM on the interleaved layout (below).

An op none of these covers raises NotImplementedError naming it. complex32 takes only the
ops PyTorch computes on it on the CPU (``HALF_OPS``), in complex64 as PyTorch's (its
products round once, not once per float16 part).
"""
from __future__ import annotations

import math

from . import core as C
from . import dtypes as D
from . import ops as O
from . import views as V
from .core import TensorBase
from .grad_mode import MODE
from .defs import _products as _PR
from .defs import _reduction_core as _RC
from .defs import index as _IX
from .schema import OPS
from .warn import warn

__all__ = ["elementwise", "run", "matmul", "join", "conj", "parts", "is_complex_arg", "TABLE",
           "COMPONENTWISE", "HALF_OPS", "refuse_half", "check_half"]


def is_complex_arg(a) -> bool:
    """Whether ``a`` (a tensor or Python number) is complex."""
    if isinstance(a, TensorBase):
        return a.dtype._kind == 3
    return type(a) is complex


def parts(x, rdt):
    """(real, imaginary) of ``x`` with parts of dtype ``rdt``: views of a complex tensor,
    ``(x, 0.0)`` for a real one, Python floats for a number."""
    if isinstance(x, TensorBase):
        if x.dtype._kind == 3:
            if D.real_of(x.dtype) is not rdt:
                x = O.to(x, dtype=D.complex_of(rdt))
            return V.complex_part(x, 0), V.complex_part(x, 1)
        return (x if x.dtype is rdt else O.to(x, dtype=rdt)), 0.0
    if type(x) is complex:
        return x.real, x.imag
    return float(x), 0.0


def join(re, im, like=None):
    """The complex tensor with parts ``re`` and ``im`` (tensors or numbers, broadcast
    together; ``like`` gives dtype and device where both are numbers)."""
    ts = [t for t in (re, im) if isinstance(t, TensorBase)]
    if not ts:
        re, im = (O.full((), v, D.real_of(like.dtype), like.device) for v in (re, im))
        ts = [re]
    t0 = ts[0]
    shape = C.broadcast_shapes(*[t.shape for t in ts])
    re, im = (O.full(shape, v, t0.dtype, t0.device) if not isinstance(v, TensorBase) else
              V.expand(v, shape) if v.shape != shape else v for v in (re, im))
    if re.dtype is not im.dtype:
        dt = D.promote_types(re.dtype, im.dtype)
        re, im = O.to(re, dtype=dt), O.to(im, dtype=dt)
    if not re.dtype.is_floating_point:
        re, im = O.to(re, dtype=D.get_default_dtype()), O.to(im, dtype=D.get_default_dtype())
    res = V.view_as_complex(_IX.stack([re, im], -1))
    res._base = None   # (the stacked parts are private: the result is a tensor of its own)
    return res


def conj(z):
    """The complex conjugate of complex ``z`` (a new tensor, recorded for autograd)."""
    return join(V.complex_part(z, 0), O.elementwise("neg", V.complex_part(z, 1)))


# ---- real arithmetic on parts that may be Python floats ----------------------------------
def _num(v) -> bool:
    return not isinstance(v, TensorBase)


def _add(a, b):
    if _num(b) and b == 0.0:
        return a
    if _num(a) and a == 0.0:
        return b
    return a + b if _num(a) and _num(b) else O.elementwise("add", a, b)


def _sub(a, b):
    if _num(b) and b == 0.0:
        return a
    return a - b if _num(a) and _num(b) else O.elementwise("sub", a, b)


def _mul(a, b):
    return a * b if _num(a) and _num(b) else O.elementwise("mul", a, b)


def _div(a, b):
    if _num(a) and _num(b):
        return a / b if b else math.copysign(math.inf, a) * math.copysign(1, b) if a else math.nan
    return O.elementwise("div", a, b)


def _neg(a):
    return -a if _num(a) else O.elementwise("neg", a)


_MATH = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos,
         "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "abs": abs}


def _f(name, a):
    """A real function of one part (a tensor, or a number: of a Python complex scalar)."""
    return _MATH[name](a) if _num(a) else O.elementwise(name, a)


# ---- the formulas (arguments: (re, im) pairs; results: a pair, or a real tensor) -----------
def _cmul(a, b):
    (ar, ai), (br, bi) = a, b
    return _sub(_mul(ar, br), _mul(ai, bi)), _add(_mul(ar, bi), _mul(ai, br))


def _cdiv(a, b):
    (ar, ai), (br, bi) = a, b
    if _num(bi) and bi == 0.0:
        return _div(ar, br), _div(ai, br)
    if _num(br):    # (a nonzero complex number: times its reciprocal)
        c = 1 / complex(br, bi)
        return _cmul(a, (c.real, c.imag))
    # Smith's algorithm: scale by the larger part of the divisor (no overflow in |b|^2)
    big = O.elementwise("ge", _f("abs", br), _f("abs", bi))
    r = O.where(big, _div(bi, br), _div(br, bi))
    den = O.where(big, _add(br, _mul(bi, r)), _add(bi, _mul(br, r)))
    re = O.where(big, _add(ar, _mul(ai, r)), _add(_mul(ar, r), ai))
    im = O.where(big, _sub(ai, _mul(ar, r)), _sub(_mul(ai, r), ar))
    return _div(re, den), _div(im, den)


def _cexp(a):
    ar, ai = a
    m = _f("exp", ar)
    return _mul(m, _f("cos", ai)), _mul(m, _f("sin", ai))


def _abs(a):
    ar, ai = a
    if _num(ar) and _num(ai):
        return math.hypot(ar, ai)
    if _num(ai) and ai == 0.0:
        return _f("abs", ar)
    if ar.requires_grad or ai.requires_grad:
        # |0| has gradient 0 (PyTorch's sgn(z)), where hypot's is 0 / 0: differentiate a
        # hypot kept away from the origin, and take 0 there
        zero = O.elementwise("logical_and", O.elementwise("eq", ar, 0.0),
                             O.elementwise("eq", ai, 0.0))
        r = O.elementwise("hypot", O.where(zero, 1.0, ar), O.where(zero, 0.0, ai))
        return O.where(zero, 0.0, r)
    return O.elementwise("hypot", ar, ai)


def _angle(a):
    ar, ai = a
    if _num(ar) and _num(ai):
        return math.atan2(ai, ar)
    return O.elementwise("atan2", ai, ar)


def _clog(a):
    return _f("log", _abs(a)), _angle(a)


def _csqrt(a):
    # principal root: t = sqrt((|z| + |re|) / 2); re >= 0: (t, im / 2t), else (|im| / 2t, ±t)
    ar, ai = a
    t = _f("sqrt", _mul(_add(_abs(a), _f("abs", ar)), 0.5))
    q = O.where(O.elementwise("eq", t, 0.0), 0.0, _div(ai, _mul(t, 2.0)))
    pos = O.elementwise("ge", ar, 0.0)
    re = O.where(pos, t, _f("abs", q))
    im = O.where(pos, q, O.elementwise("copysign", t, ai))
    return re, im


def _csin(a):
    ar, ai = a
    return _mul(_f("sin", ar), _f("cosh", ai)), _mul(_f("cos", ar), _f("sinh", ai))


def _ccos(a):
    ar, ai = a
    return _mul(_f("cos", ar), _f("cosh", ai)), _neg(_mul(_f("sin", ar), _f("sinh", ai)))


def _csinh(a):
    ar, ai = a
    return _mul(_f("sinh", ar), _f("cos", ai)), _mul(_f("cosh", ar), _f("sin", ai))


def _ccosh(a):
    ar, ai = a
    return _mul(_f("cosh", ar), _f("cos", ai)), _mul(_f("sinh", ar), _f("sin", ai))


def _ctanh(a):
    # (sinh 2x + i sin 2y) / (cosh 2x + cos 2y), with tanh's limit where cosh 2x overflows
    ar, ai = a
    x2, y2 = _mul(ar, 2.0), _mul(ai, 2.0)
    den = _add(_f("cosh", x2), _f("cos", y2))
    big = O.elementwise("gt", _f("abs", ar), 20.0)
    re = O.where(big, _f("tanh", ar), _div(_f("sinh", x2), den))
    im = O.where(big, _mul(_f("sin", y2), _mul(_f("exp", _mul(_f("abs", x2), -1.0)), 2.0)),
                 _div(_f("sin", y2), den))
    return re, im


def _ctan(a):
    # tan z = -i tanh(iz)
    ar, ai = a
    tr, ti = _ctanh((_neg(ai), ar))
    return ti, _neg(tr)


def _cpow(a, b):
    (br, bi) = b
    if _num(br) and _num(bi) and bi == 0.0 and br == float(int(br)) and 0 <= br <= 4:
        n = int(br)  # small integer powers: products, as exact as PyTorch's
        if n == 0:
            return _add(_mul(a[0], 0.0), 1.0), _mul(a[1], 0.0)
        r = a
        for _ in range(n - 1):
            r = _cmul(r, a)
        return r
    return _cexp(_cmul(b, _clog(a)))


def _cexpm1(a):
    er, ei = _cexp(a)
    return _sub(er, 1.0), ei


def _csigmoid(a):
    # 1 / (1 + exp(-z))
    er, ei = _cexp((_neg(a[0]), _neg(a[1])))
    return _crecip((_add(er, 1.0), ei))


def _crecip(a):
    return _cdiv((1.0, 0.0), a)


def _sgn(a):
    ar, ai = a
    r = _abs(a)
    zero = O.elementwise("eq", r, 0.0)
    safe = O.where(zero, 1.0, r)
    return O.where(zero, 0.0, _div(ar, safe)), O.where(zero, 0.0, _div(ai, safe))


def _eq(a, b):
    (ar, ai), (br, bi) = a, b
    return O.elementwise("logical_and", O.elementwise("eq", ar, br) if not (_num(ar) and _num(br))
                         else ar == br, O.elementwise("eq", ai, bi)
                         if not (_num(ai) and _num(bi)) else ai == bi)


def _ne(a, b):
    return O.elementwise("logical_not", _eq(a, b))


def _either(name):
    def f(a):
        return O.elementwise("logical_or", _f(name, a[0]), _f(name, a[1]))
    return f


def _isfinite(a):
    return O.elementwise("logical_and", _f("isfinite", a[0]), _f("isfinite", a[1]))


def _nonzero(a):
    return O.elementwise("logical_or", O.elementwise("ne", a[0], 0.0),
                         O.elementwise("ne", a[1], 0.0))


def _ln_scaled(scale):
    def f(a):
        r, i = _clog(a)
        return _mul(r, scale), _mul(i, scale)
    return f


#: ops whose complex result is the real op on the (real, imaginary) pairs
_PAIRWISE = ("add", "sub", "neg")


def _mul_interleaved(z, w):
    """z * w of two complex tensors outside autograd, on the interleaved layout: [a, b] * c
    and [a, b] * d (two passes over the pairs), then ac - bd and bc + ad written into the
    result's parts (the same roundings as PyTorch's products and sums)."""
    zr, wr = V.view_as_real(z), V.view_as_real(w)
    t1 = O.elementwise("mul", zr, V.narrow(wr, -1, 0, 1))             # [ac, bc]
    t2 = O.elementwise("mul", zr, V.narrow(wr, -1, 1, 1))             # [ad, bd]
    res = C.empty(t1.shape[:-1], z.dtype, z.device)
    O.elementwise("sub", V.select(t1, -1, 0), V.select(t2, -1, 1), out=_raw_part(res, 0))
    O.elementwise("add", V.select(t1, -1, 1), V.select(t2, -1, 0), out=_raw_part(res, 1))
    return res


#: op name -> (formula over (re, im) pairs, whether its result is complex)
TABLE = {
    "add": (lambda a, b: (_add(a[0], b[0]), _add(a[1], b[1])), True),
    "sub": (lambda a, b: (_sub(a[0], b[0]), _sub(a[1], b[1])), True),
    "mul": (_cmul, True),
    "div": (_cdiv, True),
    "neg": (lambda a: (_neg(a[0]), _neg(a[1])), True),
    "reciprocal": (_crecip, True),
    "exp": (_cexp, True),
    "expm1": (_cexpm1, True),
    "log": (_clog, True),
    "log2": (_ln_scaled(1 / math.log(2.0)), True),
    "log10": (_ln_scaled(1 / math.log(10.0)), True),
    "log1p": (lambda a: _clog((_add(a[0], 1.0), a[1])), True),
    "sqrt": (_csqrt, True),
    "rsqrt": (lambda a: _crecip(_csqrt(a)), True),
    "sin": (_csin, True),
    "cos": (_ccos, True),
    "tan": (_ctan, True),
    "sinh": (_csinh, True),
    "cosh": (_ccosh, True),
    "tanh": (_ctanh, True),
    "sigmoid": (_csigmoid, True),
    "pow": (_cpow, True),
    "abs": (_abs, False),
    "sgn": (_sgn, True),
    "eq": (_eq, False),
    "ne": (_ne, False),
    "isnan": (_either("isnan"), False),
    "isinf": (_either("isinf"), False),
    "isfinite": (_isfinite, False),
    "logical_not": (lambda a: O.elementwise("logical_not", _nonzero(a)), False),
    "logical_and": (lambda a, b: O.elementwise("logical_and", _nonzero(a), _nonzero(b)), False),
    "logical_or": (lambda a, b: O.elementwise("logical_or", _nonzero(a), _nonzero(b)), False),
    "logical_xor": (lambda a, b: O.elementwise("logical_xor", _nonzero(a), _nonzero(b)), False),
}
#: ops PyTorch itself refuses for complex tensors (RuntimeError, as PyTorch's)
_REFUSED = frozenset({"lt", "le", "gt", "ge", "maximum", "minimum", "fmax", "fmin", "clamp",
                      "floor", "ceil", "round", "trunc", "frac", "fmod", "remainder", "sign",
                      "atan2", "copysign", "hypot", "relu", "heaviside", "erf", "erfc",
                      "erfinv", "lgamma", "digamma", "logaddexp", "logaddexp2", "nextafter",
                      "signbit", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
                      "bitwise_not", "gcd", "lcm", "sort", "topk", "argmax", "argmin", "max",
                      "min", "aminmax", "kthvalue", "median", "median_dim", "nanmedian",
                      "nanmedian_dim", "mode", "cummax", "cummin", "searchsorted", "bucketize",
                      "histc", "unique", "unique_consecutive", "hardtanh", "threshold_backward",
                      "maximum", "minimum"})


#: the ops PyTorch computes on complex32 ("ComplexHalf") tensors on the CPU, of those in
#: TABLE and COMPONENTWISE (copies, fills, views and casts take every dtype); "gather" and
#: "scatter" are indexing's kernels here (the public gather, scatter, flip, ... refuse
#: complex32: ``check_half``)
HALF_OPS = frozenset({
    "add", "sub", "mul", "neg", "abs", "sgn", "eq", "ne", "isnan", "isinf", "isfinite",
    "gather", "scatter", "cat", "stack", "index", "index_select", "diag", "diag_embed", "tril",
    "triu", "roll", "repeat", "clone", "where", "masked_fill", "index_put", "index_add",
    "index_copy", "index_fill", "diff", "block_diag", "repeat_interleave", "select_scatter",
    "slice_scatter", "diagonal_scatter", "as_strided_scatter", "im2col", "col2im"})
#: the names of PyTorch's CPU kernels in its errors for complex32, where not "<op>_cpu"
_HALF_KERNELS = {
    **{n: f"{n}_vml_cpu" for n in ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt",
                                   "sin", "cos", "tan", "tanh")},
    "pow": "pow", "sum": "sum_cpu", "mean": "sum_cpu", "prod": "prod_out_cpu",
    "cumsum": "cumsum_out_cpu", "trace": "trace", "scatter_gather": "scatter_gather_tensor_cpu",
    "scatter": "scatter_gather_tensor_cpu", "take_along_dim": "scatter_gather_tensor_cpu",
    "rot90": "flip_cpu", "masked_scatter": "masked_scatter", "take_put": "take_put_cpu",
    "mm": "addmm_impl_cpu_", "matmul": "addmm_impl_cpu_", "bmm": "bmm", "unique": "unique"}
#: ops refused for every complex dtype whose complex32 error is PyTorch's kernel error
_HALF_UNREFUSED = frozenset({"lt", "le", "gt", "ge"})


def refuse_half(name):
    """Raise PyTorch's error for op ``name``, which has no complex32 kernel on the CPU."""
    kernel = _HALF_KERNELS.get(name, f"{name}_cpu")
    raise NotImplementedError(f'"{kernel}" not implemented for \'ComplexHalf\'')


def check_half(name, *args):
    """Raise PyTorch's error for op ``name`` if a tensor or dtype among ``args`` is complex32
    and ``name`` is not one of ``HALF_OPS`` (for ops whose composites would compute it).

    >>> check_half("flip", D.complex32)
    Traceback (most recent call last):
    NotImplementedError: "flip_cpu" not implemented for 'ComplexHalf'
    """
    for a in args:
        if (a.dtype if isinstance(a, TensorBase) else a) is D.complex32:
            _check_half(name)


def _check_half(name):
    if name not in HALF_OPS:
        if name in _REFUSED and name not in _HALF_UNREFUSED:
            _refuse(name, D.complex32)
        refuse_half(name)


def _refuse(name, dtype):
    if name in _REFUSED:
        raise RuntimeError(f"{name}(): not implemented for '{D.torch_name(dtype)}' (PyTorch does "
                           "not define it for complex numbers)")
    raise NotImplementedError(f"{name}(): complex tensors ({D.torch_name(dtype)}) are not "
                              "supported by this op in ember yet")


def elementwise(name, args, out, inplace, attrs):
    """Elementwise op ``name`` on arguments of which one is complex (see ``TABLE``)."""
    entry = TABLE.get(name)
    rt = D.result_type(*args)
    if rt is D.complex32:
        _check_half(name)
    if entry is None:
        _refuse(name, rt if rt._kind == 3 else D.complex64)
    fn, complex_result = entry
    if rt._kind != 3:   # (a complex number with an integer tensor: the default complex)
        rt = D.complex_of(rt)
    rdt = D.real_of(rt)
    if name in ("add", "sub") and attrs.get("alpha", 1) != 1 and rt is not D.complex32:
        args = (args[0], O.elementwise("mul", args[1], attrs["alpha"])
                if isinstance(args[1], TensorBase) else args[1] * attrs["alpha"])
    elif name == "div" and attrs.get("rounding_mode") is not None:
        raise RuntimeError(f"div(): rounding_mode={attrs['rounding_mode']!r} is not supported "
                           "for complex inputs")
    like = next(a for a in args if isinstance(a, TensorBase))
    if rt is D.complex32:   # (computed in complex64, alpha too, rounded once as PyTorch's)
        res = elementwise(name, [_widen(a) for a in args], None, False, attrs)
        res = O.to(res, dtype=D.complex32 if complex_result else
                   D.float16 if res.dtype is D.float32 else res.dtype)
    elif name == "mul" and all(isinstance(a, TensorBase) and a.dtype._kind == 3
                             and not (a.requires_grad and MODE.grad) for a in args):
        res = _mul_interleaved(*[a if a.dtype is rt else O.to(a, dtype=rt) for a in args])
    elif name in _PAIRWISE and all(isinstance(a, TensorBase) and a.dtype._kind == 3
                                   for a in args):
        # (both parts alike: one real op on the interleaved pairs)
        res = V.view_as_complex(O.elementwise(name, *[
            V.view_as_real(a if a.dtype is rt else O.to(a, dtype=rt)) for a in args]))
        res._base = None
    else:
        res = fn(*[parts(a, rdt) for a in args])
    if complex_result and not isinstance(res, TensorBase):
        res = join(res[0], res[1], like)
        if res.dtype is not rt:
            res = O.to(res, dtype=rt)
    if inplace:
        dst = args[0]
        if complex_result and dst.dtype._kind != 3:
            raise RuntimeError(f"result type {D.torch_name(rt)} can't be cast to the desired "
                               f"output type {D.torch_name(dst.dtype)}")
        if res.shape != dst.shape:
            res = V.expand(res, dst.shape) if len(res.shape) <= len(dst.shape) else res
        return O.copy_(dst, res)
    if out is not None:
        return O.write_out(name, out, res)
    return res


def _widen(a):
    """complex32 / float16 tensor ``a`` as complex64 / float32 (others as they are)."""
    if isinstance(a, TensorBase) and a.dtype in (D.complex32, D.float16):
        return O.to(a, dtype=D.complex64 if a.dtype is D.complex32 else D.float32)
    return a


# ---- ops that act on both parts alike ----------------------------------------------------
#: ops whose complex result is the op on the real parts plus i times the op on the imaginary
#: parts (linear, with real coefficients: their gradient formulas hold for complex too)
COMPONENTWISE = frozenset({
    "cat", "stack", "index", "index_select", "gather", "flip", "roll", "repeat", "tril", "triu",
    "sum", "mean", "cumsum", "diag", "diag_embed", "diagonal_scatter", "select_scatter",
    "slice_scatter", "as_strided_scatter", "take_along_dim", "repeat_interleave", "rot90",
    "trace", "diff", "index_add", "index_copy", "index_put", "scatter", "where", "masked_fill",
    "masked_scatter", "block_diag", "im2col", "col2im", "clone", "index_fill", "put", "nansum"})


def _part_args(ins, k):
    out = []
    for t in ins:
        if isinstance(t, TensorBase) and t.dtype._kind == 3:
            out.append(_raw_part(t, k))
        elif isinstance(t, (list, tuple)):
            out.append(type(t)(_part_args(t, k)))
        elif type(t) is complex:
            out.append(t.imag if k else t.real)
        else:
            out.append(t)
    return out


def _raw_part(t, k):
    r = V._real_view(t)
    return C.view_of(r, r.shape[:-1], r._stride[:-1], r._offset + k)


def _copy_into(dst, src):
    O.run(OPS["copy"], dst.device, (src,), {}, dst.shape, dst.dtype, dst)


_WARNED = [False]


def run(o, dev, ins, attrs, shape, dtype, out):
    """``O.run`` of op ``o`` where its result or first input is complex."""
    name = o.name
    if name == "copy":
        return _copy(ins[0], dtype, dev, out, shape)
    if name == "fill":
        v = ins[0]
        if out is None:
            out = C.empty(shape, dtype, dev)
        for k in (0, 1):
            part = _raw_part(out, k)
            val = (v.imag if k else v.real) if type(v) is complex else (0.0 if k else v)
            O.run(OPS["fill"], dev, (val,), {}, part.shape, part.dtype, part)
        return out
    if dtype is D.complex32 or any(isinstance(t, TensorBase) and t.dtype is D.complex32
                                   for t in ins):
        _check_half(name)
    if name not in COMPONENTWISE or dtype._kind != 3:
        _refuse(name, dtype if dtype._kind == 3 else next(
            t.dtype for t in ins if isinstance(t, TensorBase) and t.dtype._kind == 3))
    rdt = D.real_of(dtype)
    res = []
    for k in (0, 1):
        a = dict(attrs)
        if type(a.get("value")) is complex or ("value" in a and k == 1):
            v = a["value"]
            a["value"] = (v.imag if type(v) is complex else 0.0) if k else v.real
        res.append(O.run(o, dev, tuple(_part_args(ins, k)), a, shape, rdt))
    if out is None:
        out = C.empty(res[0].shape, dtype, dev)
    for k in (0, 1):
        _copy_into(_raw_part(out, k), res[k])
    return out


def _copy(src, dtype, dev, out, shape):
    if out is None:
        out = C.empty(shape if shape is not None else src.shape, dtype, dev)
    if dtype._kind == 3:
        if src.dtype._kind == 3:
            for k in (0, 1):
                _copy_into(_raw_part(out, k), _raw_part(src, k))
        else:
            _copy_into(_raw_part(out, 0), src)
            im = _raw_part(out, 1)
            O.run(OPS["fill"], dev, (0.0,), {}, im.shape, im.dtype, im)
        return out
    if dtype is D.bool_:
        nz = O.elementwise("logical_or", O.elementwise("ne", _raw_part(src, 0), 0),
                           O.elementwise("ne", _raw_part(src, 1), 0))
        _copy_into(out, nz)
        return out
    if not _WARNED[0]:
        _WARNED[0] = True
        warn("Casting complex values to real discards the imaginary part", UserWarning)
    _copy_into(out, _raw_part(src, 0))
    return out


def launch(o, dev, k, args, attrs, error):
    """``O.launch`` of kernel ``k`` whose arguments include complex tensors (the kernel
    refused them): an op of ``COMPONENTWISE`` runs once per part, on real copies of the
    parts, and the first argument (the kernel's output) gets both parts back."""
    if any(isinstance(a, TensorBase) and a.dtype is D.complex32 for a in args):
        _check_half(o.name)
    if o.name not in COMPONENTWISE:
        if isinstance(error, MemoryError):
            O.launch_failed(o, dev, error)
        dt = next(a.dtype for a in args if isinstance(a, TensorBase) and a.dtype._kind == 3)
        _refuse(o.name, dt)
    outs = []
    for p in (0, 1):
        part = [O.contiguous(_raw_part(a, p)) if is_complex_arg(a) and isinstance(a, TensorBase)
                else a for a in args]
        try:
            k(*part, **attrs)
        except Exception as e:
            O.launch_failed(o, dev, e)
        outs.append(part[0])
    if isinstance(args[0], TensorBase) and args[0].dtype._kind == 3:
        for p in (0, 1):
            _copy_into(_raw_part(args[0], p), outs[p])


# ---- products ---------------------------------------------------------------------------
def _interleaved(b):
    """The real (2k, 2n) matrix R of complex (k, n) ``b`` (batched over leading dims) with
    view_as_real(a).flatten(-2) @ R = view_as_real(a @ b).flatten(-2): rows 2j and 2j+1 of
    R are (re, im) and (-im, re) of b's row j, interleaved along the columns."""
    br, bi = V.complex_part(b, 0), V.complex_part(b, 1)
    even = V.view_as_real(b)                                      # (..., k, n, 2): re, im
    odd = _IX.stack([O.elementwise("neg", bi), br], -1)           # (..., k, n, 2): -im, re
    r = _IX.stack([even, odd], -3)                                # (..., k, 2, n, 2)
    lead = b.shape[:-2]
    return V.reshape(r, lead + (2 * b.shape[-2], 2 * b.shape[-1]))


def matmul(a, b):
    """``a @ b`` with a complex operand: one real GEMM, ``view_as_real(a)`` (rows flattened
    to 2k reals) times the interleaved real form of ``b``."""
    dt = D.promote_types(a.dtype, b.dtype)
    if dt._kind != 3:
        dt = D.complex_of(dt)
    if dt is D.complex32:
        refuse_half("matmul")
    a, b = (x if x.dtype is dt else O.to(x, dtype=dt) for x in (a, b))
    squeeze_a = len(a.shape) == 1
    squeeze_b = len(b.shape) == 1
    if squeeze_a:
        a = V.unsqueeze(a, 0)
    if squeeze_b:
        b = V.unsqueeze(b, -1)
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[-2]}x"
                           f"{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    ar = V.reshape(O.contiguous(V.view_as_real(a)), a.shape[:-1] + (2 * a.shape[-1],))
    rr = _PR.matmul(ar, _interleaved(b))                          # (..., m, 2n)
    res = V.view_as_complex(V.reshape(rr, rr.shape[:-1] + (b.shape[-1], 2)))
    if squeeze_b:
        res = V.squeeze(res, -1)
    if squeeze_a:
        res = V.squeeze(res, -2 if not squeeze_b else 0)
    return res


def _install():
    O.COMPLEX["elementwise"] = elementwise
    O.COMPLEX["run"] = run
    O.COMPLEX["launch"] = launch
    O.COMPLEX["real_view"] = V._real_view
    for name in ("mm", "bmm", "matmul"):
        O.COMPLEX[name] = matmul
    O.COMPLEX["norm"] = norm


def norm(self, p=2, dim=None, keepdim=False):
    """The vector norm of complex ``self``: the real norm of its absolute values."""
    return _RC.norm(elementwise("abs", (self,), None, False, {}), p, dim, keepdim)


_install()
