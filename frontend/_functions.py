"""ember's functional API (``ember.add``, ``ember.sum``, ...), PyTorch's names and signatures.

Each function normalises PyTorch-style arguments and calls the dispatcher. Autograd
wraps this layer (see the Autograd issue); the dispatcher below it knows nothing of
gradients.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ember.dispatcher import _core as C
from ember.dispatcher import composites as CP
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher._core import TensorBase

from . import _views as VW
from .autograd import _record as R

E = R.ew

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


def _t(x, op):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


# ---- elementwise ------------------------------------------------------------------
def _unary(name):
    def fn(input, *, out=None):
        return E(name, _t(input, name), out=out)

    def fn_(self):
        return E(name, self, inplace=True)
    fn.__name__ = name
    fn.__doc__ = f"``ember.{name}(input)``: elementwise {name} (see PyTorch)."
    fn_.__name__ = name + "_"
    return fn, fn_


def _binary(name):
    def fn(input, other, *, out=None):
        return E(name, _s(input), _s(other), out=out)

    def fn_(self, other):
        return E(name, self, _s(other), inplace=True)
    fn.__name__ = name
    fn.__doc__ = f"``ember.{name}(input, other)``: elementwise {name} with broadcasting."
    fn_.__name__ = name + "_"
    return fn, fn_


UNARY = ["exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
         "sigmoid", "erf", "floor", "ceil", "round", "trunc", "abs", "sign", "reciprocal",
         "bitwise_not", "logical_not", "isnan", "isinf", "isfinite"]
BINARY = ["mul", "maximum", "minimum", "fmod", "remainder", "pow", "eq", "ne", "lt", "le",
          "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
          "logical_xor"]

exp, exp_ = _unary("exp")
expm1, expm1_ = _unary("expm1")
log, log_ = _unary("log")
log1p, log1p_ = _unary("log1p")
log2, log2_ = _unary("log2")
sqrt, sqrt_ = _unary("sqrt")
rsqrt, rsqrt_ = _unary("rsqrt")
sin, sin_ = _unary("sin")
cos, cos_ = _unary("cos")
tan, tan_ = _unary("tan")
tanh, tanh_ = _unary("tanh")
sigmoid, sigmoid_ = _unary("sigmoid")
erf, erf_ = _unary("erf")
floor, floor_ = _unary("floor")
ceil, ceil_ = _unary("ceil")
round, round_ = _unary("round")
trunc, trunc_ = _unary("trunc")
abs, abs_ = _unary("abs")
sign, sign_ = _unary("sign")
reciprocal, reciprocal_ = _unary("reciprocal")
bitwise_not, bitwise_not_ = _unary("bitwise_not")
logical_not, logical_not_ = _unary("logical_not")
isnan, _ = _unary("isnan")
isinf, _ = _unary("isinf")
isfinite, _ = _unary("isfinite")
mul, mul_ = _binary("mul")
maximum, _ = _binary("maximum")
minimum, _ = _binary("minimum")
fmod, fmod_ = _binary("fmod")
remainder, remainder_ = _binary("remainder")
pow, pow_ = _binary("pow")
eq, eq_ = _binary("eq")
ne, ne_ = _binary("ne")
lt, lt_ = _binary("lt")
le, le_ = _binary("le")
gt, gt_ = _binary("gt")
ge, ge_ = _binary("ge")
bitwise_and, bitwise_and_ = _binary("bitwise_and")
bitwise_or, bitwise_or_ = _binary("bitwise_or")
bitwise_xor, bitwise_xor_ = _binary("bitwise_xor")
logical_and, logical_and_ = _binary("logical_and")
logical_or, logical_or_ = _binary("logical_or")
logical_xor, logical_xor_ = _binary("logical_xor")
INPLACE = {n + "_": globals()[n + "_"] for n in UNARY + BINARY
           if n not in ("isnan", "isinf", "isfinite", "maximum", "minimum")}

# PyTorch aliases
multiply, greater, greater_equal, less, less_equal, not_equal = mul, gt, ge, lt, le, ne
absolute = abs


def neg(input, *, out=None):
    if input.dtype is D.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return E("neg", input, out=out)


def neg_(self):
    return E("neg", self, inplace=True)


negative = neg


def add(input, other, *, alpha=1, out=None):
    other = _s(other)
    if alpha != 1:
        other = E("mul", other, alpha) if isinstance(other, TensorBase) else other * alpha
    return E("add", _s(input), other, out=out)


def sub(input, other, *, alpha=1, out=None):
    other = _s(other)
    if isinstance(input, TensorBase) and input.dtype is D.bool_ and (
            not isinstance(other, TensorBase) or other.dtype is D.bool_):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        other = E("mul", other, alpha) if isinstance(other, TensorBase) else other * alpha
    return E("sub", _s(input), other, out=out)


subtract = sub


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
    return E("div", a, b, out=out, rounding_mode=rounding_mode)


true_divide = divide = div


def floor_divide(input, other, *, out=None):
    return div(input, other, rounding_mode="floor", out=out)


def _axpy_(self, other, alpha):
    """``self += alpha * other`` as one addcmul pass (the optimizers' update), for float
    tensors of one dtype; None when that path does not apply."""
    if (isinstance(other, TensorBase) and other.dtype is self.dtype
            and self.dtype.is_floating_point and isinstance(alpha, (int, float))
            and not isinstance(alpha, bool)):
        return E("addcmul", self, other, C.scalar_like(1, self), value=alpha, inplace=True)
    return None


def add_(self, other, *, alpha=1):
    other = _s(other)
    if alpha != 1:
        res = _axpy_(self, other, alpha)
        if res is not None:
            return res
        other = E("mul", other, alpha) if isinstance(other, TensorBase) else other * alpha
    return E("add", self, other, inplace=True)


def sub_(self, other, *, alpha=1):
    other = _s(other)
    if alpha != 1:
        res = _axpy_(self, other, -alpha)
        if res is not None:
            return res
        other = E("mul", other, alpha) if isinstance(other, TensorBase) else other * alpha
    return E("sub", self, other, inplace=True)


def div_(self, other, *, rounding_mode=None):
    src = R.clone(self) if _grad(self, other) else self  # keep the pre-write value for backward
    res = div(src, other, rounding_mode=rounding_mode)
    if not O.can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {D.torch_name(res.dtype)} can't be cast to the desired "
                           f"output type {D.torch_name(self.dtype)}")
    return R.copy_(self, res)


def floor_divide_(self, other):
    return E("div", self, _s(other), inplace=True, rounding_mode="floor")


def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return R.where(condition, _s(input), _s(other), out=out)


def clamp(input, min=None, max=None, *, out=None):
    return R.clamp(input, _s(min) if min is not None else None,
                   _s(max) if max is not None else None, out=out)


def clamp_(self, min=None, max=None):
    return R.clamp(self, min, max, inplace=True)


clip, clip_ = clamp, clamp_


def relu(input):
    """max(input, 0) (``torch.relu``)."""
    return clamp(input, min=0)


def relu_(input):
    return clamp_(input, min=0)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def lerp(input, end, weight, *, out=None):
    return E("lerp", input, end, _s(weight), out=out)


def lerp_(self, end, weight):
    return E("lerp", self, end, _s(weight), inplace=True)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return E("addcmul", input, tensor1, tensor2, out=out, value=value)


def addcmul_(self, tensor1, tensor2, *, value=1):
    return E("addcmul", self, tensor1, tensor2, inplace=True, value=value)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    return E("addcdiv", input, tensor1, tensor2, out=out, value=value)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    return E("addcdiv", self, tensor1, tensor2, inplace=True, value=value)


def float_power(input, exponent):
    a = O.cast(input, D.float64) if isinstance(input, TensorBase) else float(input)
    b = O.cast(exponent, D.float64) if isinstance(exponent, TensorBase) else float(exponent)
    return E("pow", a, b)


def square(input):
    return E("mul", input, input)


# ---- reductions ---------------------------------------------------------------------
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    return R.reduce("sum", _t(input, "sum"), dim, keepdim, dtype, out)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    return R.reduce("mean", _t(input, "mean"), dim, keepdim, dtype, out)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if isinstance(dim, (list, tuple)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    return R.reduce("prod", _t(input, "prod"), dim, keepdim, dtype, out)


def amax(input, dim=(), keepdim=False, *, out=None):
    return R.reduce("max", _t(input, "amax"), dim, keepdim, None, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    return R.reduce("min", _t(input, "amin"), dim, keepdim, None, out)


def argmax(input, dim=None, keepdim=False, *, out=None):
    return O.arg_reduce("argmax", _t(input, "argmax"), dim, keepdim, out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    return O.arg_reduce("argmin", _t(input, "argmin"), dim, keepdim, out)


def _max_min(name, input, dim, keepdim, other):
    if isinstance(dim, TensorBase) or other is not None:
        return E("maximum" if name == "max" else "minimum", input,
                 other if other is not None else dim)
    if dim is None:
        if C.numel(input.shape) == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return R.reduce(name, input, None, False)
    indices = O.arg_reduce("argmax" if name == "max" else "argmin", input, dim, keepdim)
    if input.requires_grad and R.MODE.grad:
        # the gradient flows to the selected element only, as in PyTorch
        d = C.normalize_dim(dim, len(input.shape), name)
        idx = indices if keepdim else VW.unsqueeze(indices, d)
        values = R.gather(input, d, idx) if input.shape else R.clone(input)
        if not keepdim and input.shape:
            values = VW.squeeze(values, d)
    else:
        values = O.reduce(name, input, dim, keepdim)
    return (max_ret if name == "max" else min_ret)(values, indices)


def max(input, dim=None, keepdim=False, *, other=None):
    return _max_min("max", _t(input, "max"), dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):
    return _max_min("min", _t(input, "min"), dim, keepdim, other)


def _correction(name, dim, unbiased, correction):
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    elif unbiased is not None:
        raise RuntimeError(f"{name}(): cannot pass both 'unbiased' and 'correction'")
    return dim, correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _correction("var", dim, unbiased, correction)
    return R.reduce("var", _t(input, "var"), dim, keepdim, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _correction("std", dim, unbiased, correction)
    return R.std(_t(input, "std"), dim, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    return R.reduce("logsumexp", _t(input, "logsumexp"), dim, keepdim)


def cumsum(input, dim, *, dtype=None, out=None):
    return R.scan("cumsum", input, dim, dtype, out)


def cumprod(input, dim, *, dtype=None, out=None):
    return R.scan("cumprod", input, dim, dtype, out)


def all(input, dim=None, keepdim=False):
    return CP.all_(input, dim, keepdim)


def any(input, dim=None, keepdim=False):
    return CP.any_(input, dim, keepdim)


def count_nonzero(input, dim=None):
    return O.reduce("sum", E("ne", input, 0), dim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" or p is None:
        p = 2
    if dtype is not None:
        input = R.to(input, None, D.to_dtype(dtype))
    if not _grad(input):
        return CP.norm(input, p, dim, keepdim)
    a = abs(input)
    if p == math.inf:
        return amax(a, dim if dim is not None else (), keepdim)
    if p == -math.inf:
        return amin(a, dim if dim is not None else (), keepdim)
    if p == 1:
        return sum(a, dim, keepdim)
    if p == 2:
        return sqrt(sum(E("mul", input, input), dim, keepdim))
    return E("pow", sum(E("pow", a, p), dim, keepdim), 1.0 / p)


def softmax(input, dim=None, dtype=None):
    return R.softmax_op("softmax", input, _implicit_dim("softmax", input, dim), dtype)


def log_softmax(input, dim=None, dtype=None):
    return R.softmax_op("log_softmax", input, _implicit_dim("log_softmax", input, dim), dtype)


def _implicit_dim(name, x, dim):
    if dim is not None:
        return dim
    import warnings
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    nd = len(x.shape)
    return 0 if nd in (0, 1, 3) else 1


def sort(input, dim=-1, descending=False, stable=False):
    v, i = O.sort(input, dim, descending, stable)
    if input.requires_grad and R.MODE.grad and input.shape:
        v = R.gather(input, C.normalize_dim(dim, len(input.shape)), i)
    return sort_ret(v, i)


def argsort(input, dim=-1, descending=False, stable=False):
    return O.sort(input, dim, descending, stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True):
    v, i = CP.topk(input, k, dim, largest, sorted)
    if input.requires_grad and R.MODE.grad and input.shape:
        v = R.gather(input, C.normalize_dim(dim, len(input.shape)), i)
    return topk_ret(v, i)


# ---- indexing -------------------------------------------------------------------------
def gather(input, dim, index, *, out=None):
    return R.gather(input, dim, index, out=out)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return R.scatter(input, dim, index, _src(src, value), reduce=reduce)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    src = _src(src, value)
    if R.MODE.grad and R._requires((self, src)):
        R._check_inplace("scatter", self)
        return R._rebase(self, R.scatter(self, dim, index, src, reduce=reduce))
    return O.scatter_(self, dim, index, src, reduce=reduce)


def _src(src, value):
    v = src if src is not None else value
    if v is None:
        raise TypeError("scatter(): expected 'src' or 'value'")
    return _s(v)


def scatter_add(input, dim, index, src):
    return R.scatter(input, dim, index, src, reduce="add")


def scatter_add_(self, dim, index, src):
    return scatter_(self, dim, index, src, reduce="add")


def index_select(input, dim, index, *, out=None):
    res = _index_select(input, dim, index)
    return O.copy_(O._resize_out("index_select", out, res.shape), res) if out is not None \
        else res


def _index_select(x, dim, index):
    return CP.index_select(x, dim, index, ops=_ops(x))


def index_add(input, dim, index, source, *, alpha=1):
    if not (R.MODE.grad and R._requires((input, source))):
        return CP.index_add(input, dim, index, source, alpha)
    d = C.normalize_dim(dim, len(input.shape), "index_add")
    index = O._check_index("index_add", index)
    src = source * alpha if alpha != 1 else source
    shape = tuple(index.shape[0] if i == d else 1 for i in range(len(input.shape)))
    idx = C.expand_to(V.reshape(index, shape), src.shape)
    return R.scatter(input, d, idx, src, reduce="add")


def index_add_(self, dim, index, source, *, alpha=1):
    return R.copy_(self, index_add(self, dim, index, source, alpha=alpha))


def masked_fill(input, mask, value):
    value = _s(value)
    if not (R.MODE.grad and R._requires((input, value))):
        return CP.masked_fill(input, mask, value)
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.torch_name(mask.dtype)}")
    return R.where(mask, value, input)


def masked_fill_(self, mask, value):
    shape = C.broadcast_shapes(self.shape, mask.shape)
    if shape != self.shape:
        raise RuntimeError(f"masked_fill_(): output with shape {C.shape_str(self.shape)} "
                           f"doesn't match the broadcast shape {C.shape_str(shape)}")
    return R.copy_(self, masked_fill(self, mask, value))


def masked_select(input, mask):
    shape = C.broadcast_shapes(input.shape, mask.shape)
    return R.index(VW.expand(input, shape), C.expand_to(mask, shape))


def nonzero(input, *, as_tuple=False):
    nz = O.nonzero(input)
    if as_tuple:
        if not input.shape:
            return (V.select(nz, 1, 0) if nz.shape[1] else O.zeros((nz.shape[0],), D.int64,
                                                                      input.device),)
        return tuple(V.select(nz, 1, j) for j in range(len(input.shape)))
    return nz


def argwhere(input):
    return O.nonzero(input)


def take(input, index):
    return R.index(VW.reshape(input, -1), index)


# ---- joining, reshaping copies --------------------------------------------------------
def cat(tensors, dim=0, *, out=None):
    res = R.cat(tensors, dim)
    return O.copy_(O._resize_out("cat", out, res.shape), res) if out is not None else res


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    res = CP.stack(tensors, dim, ops=_ops(*tensors))
    return O.copy_(O._resize_out("stack", out, res.shape), res) if out is not None else res


def hstack(tensors):
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if len(tensors[0].shape) == 1 else 1)


def vstack(tensors):
    return cat([V.reshape(t, (1, -1)) if len(t.shape) < 2 else t for t in tensors], 0)


def atleast_1d(t):
    return V.reshape(t, (1,)) if not t.shape else t


def _grad(*ts):
    return R.MODE.grad and R._requires(ts)


def flip(input, dims):
    return CP.flip(input, dims, ops=_ops(input))


def fliplr(input):
    return flip(input, (1,))


def flipud(input):
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    return CP.roll(input, shifts, dims, ops=_ops(input))


def repeat(input, repeats):
    return CP.repeat(input, repeats, ops=_ops(input))


def tril(input, diagonal=0):
    return CP.tril(input, diagonal, ops=_ops(input))


def triu(input, diagonal=0):
    return CP.triu(input, diagonal, ops=_ops(input))


def clone(input, *, memory_format=None):
    return R.clone(input)


# ---- linear algebra -------------------------------------------------------------------
def _tensors(op, *args):
    names = ("input", "other", "third")
    for i, a in enumerate(args):
        if not isinstance(a, TensorBase):
            raise TypeError(f"{op}(): argument '{names[i]}' (position {i + 1}) must be Tensor, "
                            f"not {type(a).__name__}")


def matmul(input, other, *, out=None):
    _tensors("matmul", input, other)
    res = CP.matmul(input, other, ops=_ops(input, other))
    return O.copy_(O._resize_out("matmul", out, res.shape), res) if out is not None else res


def mm(input, mat2, *, out=None):
    _tensors("mm", input, mat2)
    res = R.mm(input, mat2)
    return O.copy_(O._resize_out("mm", out, res.shape), res) if out is not None else res


def bmm(input, mat2, *, out=None):
    _tensors("bmm", input, mat2)
    return R.bmm(input, mat2, out=out)


def mv(input, vec):
    _tensors("mv", input, vec)
    CP.mv_check(input, vec)
    return CP.matmul(input, vec, ops=_ops(input, vec))


def dot(input, other):
    _tensors("dot", input, other)
    CP.dot_check(input, other)
    return CP.matmul(input, other, ops=_ops(input, other))


inner_product = dot


def outer(input, vec2):
    _tensors("outer", input, vec2)
    if len(input.shape) != 1 or len(vec2.shape) != 1:
        raise RuntimeError("outer: expected 1D tensors")
    return E("mul", VW.unsqueeze(input, 1), VW.unsqueeze(vec2, 0))


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    _tensors("addmm", input, mat1, mat2)
    if not _grad(input, mat1, mat2):
        return CP.addmm(input, mat1, mat2, beta, alpha)
    prod_ = mm(mat1, mat2)
    if alpha != 1:
        prod_ = E("mul", prod_, alpha)
    if beta == 0:
        return E("add", prod_, E("mul", R.to(input, None, None), 0))
    return E("add", prod_, input if beta == 1 else E("mul", input, beta))


class _RecordedOps:
    """The op namespace of the dispatcher's composites (``ember.dispatcher._nsops``),
    with autograd: composites run through it record their graph."""
    diagonal = staticmethod(VW.diagonal)
    permute = staticmethod(VW.permute)
    reshape = staticmethod(VW.reshape)
    view = staticmethod(VW.view)
    expand = staticmethod(R.expand)
    unsqueeze = staticmethod(VW.unsqueeze)
    squeeze = staticmethod(VW.squeeze)
    narrow = staticmethod(VW.narrow)
    flatten = staticmethod(VW.flatten)
    bmm = staticmethod(R.bmm)
    mm = staticmethod(R.mm)
    contiguous = staticmethod(R.contiguous)
    clone = staticmethod(R.clone)
    where = staticmethod(R.where)
    gather = staticmethod(R.gather)
    cat = staticmethod(R.cat)

    @staticmethod
    def sum(t, dims):
        return R.reduce("sum", t, dims)


def _ops(*tensors):
    """The recorded namespace when autograd must see the composite's steps."""
    return _RecordedOps if _grad(*tensors) else None


def einsum(equation, *operands):
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not "
                        f"{type(equation).__name__}")
    flat = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) \
        else operands
    for i, t_ in enumerate(flat):
        if not isinstance(t_, TensorBase):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(t_).__name__}")
    from ember.dispatcher._einsum import einsum as _impl
    return _impl(equation, *flat, ops=_ops(*flat))


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
    return tuple(R.expand(x, shape) for x in tensors)


def broadcast_shapes(*shapes):
    return C.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,) for s in shapes])


def is_tensor(obj):
    return isinstance(obj, TensorBase)


def is_floating_point(input):
    return input.dtype.is_floating_point


def numel(input):
    return C.numel(input.shape)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    diff = abs(sub(input, other))
    tol = add(mul(abs(other), rtol), atol)
    close = E("le", diff, tol)
    close = logical_or(close, E("eq", input, other))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(O.item(all(isclose(input, other, rtol, atol, equal_nan))))


def equal(input, other):
    return input.shape == other.shape and bool(O.item(all(E("eq", input, other))))





_NOT_API = {"math", "namedtuple", "np", "C", "CP", "D", "O", "V", "IX", "E", "TensorBase",
            "annotations", "values_indices", "max_ret", "min_ret", "sort_ret", "topk_ret",
            "UNARY", "BINARY", "INPLACE"}
# in-place variants (``exp_``) are Tensor methods only, as in PyTorch
__all__ = [n for n in list(globals())
           if not n.startswith("_") and not n.endswith("_") and n not in _NOT_API]
