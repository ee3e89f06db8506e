"""Composites: every non-primitive op written in primitives.

A composite takes the op's kernel arguments without ``out`` (inputs already promoted and
broadcast by the dispatcher) and returns the result. A backend that implements only
``schema.PRIMITIVES`` runs every op through these; a backend with a native kernel for an
op never reaches its composite.
"""
from __future__ import annotations

import math

from . import _core as C
from . import dtypes as D
from . import ops as O
from . import views as V
from ._nsops import DispatcherOps
from .schema import OPS

E = O.elementwise


def composite(name):
    def deco(fn):
        OPS[name].composite = fn
        return fn
    return deco


# ---- unary ----------------------------------------------------------------------
@composite("expm1")
def expm1(x):
    """Kahan: (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of u."""
    u = E("exp", x)
    um1 = E("sub", u, 1)
    accurate = E("div", E("mul", um1, x), E("log", u))
    res = O.where(E("eq", u, 1), x, accurate)
    return O.where(E("eq", um1, -1), um1, O.where(E("eq", u, math.inf), u, res))


@composite("log1p")
def log1p(x):
    """Kahan: log(u) * x / (u - 1) with u = 1 + x."""
    u = E("add", x, 1)
    accurate = E("div", E("mul", E("log", u), x), E("sub", u, 1))
    return O.where(E("eq", u, 1), x, O.where(E("eq", u, math.inf), u, accurate))


@composite("log2")
def log2(x):
    return E("mul", E("log", x), 1.0 / math.log(2.0))


@composite("rsqrt")
def rsqrt(x):
    return E("div", 1, E("sqrt", x))


@composite("tan")
def tan(x):
    return E("div", E("sin", x), E("cos", x))


@composite("tanh")
def tanh(x):
    # 1 - 2 / (exp(2x) + 1): saturates cleanly to ±1 when exp overflows or underflows
    return E("sub", 1, E("div", 2, E("add", E("exp", E("mul", x, 2)), 1)))


@composite("sigmoid")
def sigmoid(x):
    return E("div", 1, E("add", E("exp", E("sub", 0, x)), 1))


@composite("reciprocal")
def reciprocal(x):
    return E("div", 1, x)


@composite("neg")
def neg(x):
    return E("sub", 0, x)


@composite("abs")
def abs_(x):
    if x.dtype is D.bool_ or x.dtype is D.uint8:
        return O.clone(x)
    return O.where(E("lt", x, 0), neg(x), x)


@composite("sign")
def sign(x):
    if x.dtype is D.bool_:
        return O.clone(x)
    pos = O.cast(E("lt", 0, x), x.dtype)
    negv = O.cast(E("lt", x, 0), x.dtype)
    return E("sub", pos, negv)


@composite("ceil")
def ceil(x):
    if not x.dtype.is_floating_point:
        return O.clone(x)
    return neg(E("floor", neg(x)))


@composite("trunc")
def trunc(x):
    if not x.dtype.is_floating_point:
        return O.clone(x)
    return O.where(E("lt", x, 0), ceil(x), E("floor", x))


@composite("round")
def round_(x):
    """Round half to even, exactly: compare the fractional part with 0.5."""
    if not x.dtype.is_floating_point:
        return O.clone(x)
    r = E("floor", x)
    frac = E("sub", x, r)
    up = E("add", r, 1)
    odd = E("ne", E("fmod", r, 2), 0)
    tie = O.where(odd, up, r)
    return O.where(E("lt", 0.5, frac), up, O.where(E("lt", frac, 0.5), r, tie))


@composite("isnan")
def isnan(x):
    return E("ne", x, x)


@composite("isinf")
def isinf(x):
    if not x.dtype.is_floating_point:
        return O.full(x.shape, False, D.bool_, x.device)
    return E("eq", abs_(x), math.inf)


@composite("isfinite")
def isfinite(x):
    if not x.dtype.is_floating_point:
        return O.full(x.shape, True, D.bool_, x.device)
    return E("eq", E("sub", x, x), 0)


@composite("logical_not")
def logical_not(x):
    return E("bitwise_not", x)


# ---- binary ---------------------------------------------------------------------
@composite("ne")
def ne(a, b):
    return E("bitwise_not", E("eq", a, b))


@composite("le")
def le(a, b):
    return E("bitwise_or", E("lt", a, b), E("eq", a, b))


@composite("gt")
def gt(a, b):
    return E("lt", b, a)


@composite("ge")
def ge(a, b):
    return le(b, a)


@composite("logical_and")
def logical_and(a, b):
    return E("bitwise_and", a, b)


@composite("logical_or")
def logical_or(a, b):
    return E("bitwise_or", a, b)


@composite("logical_xor")
def logical_xor(a, b):
    return E("bitwise_xor", a, b)


@composite("remainder")
def remainder(a, b):
    """Python's %: the result takes the divisor's sign."""
    r = E("fmod", a, b)
    if a.dtype is D.bool_:
        return r
    fix = E("bitwise_and", E("ne", r, 0), E("ne", E("lt", r, 0), E("lt", b, 0)))
    return O.where(fix, E("add", r, b), r)


# ---- ternary --------------------------------------------------------------------
@composite("lerp")
def lerp(a, b, w):
    diff = E("sub", b, a)
    small = E("lt", abs_(w), 0.5)
    return O.where(small, E("add", a, E("mul", w, diff)),
                   E("sub", b, E("mul", diff, E("sub", 1, w))))


@composite("addcmul")
def addcmul(a, t1, t2, value=1):
    return E("add", a, E("mul", E("mul", t1, t2), value))


@composite("addcdiv")
def addcdiv(a, t1, t2, value=1):
    return E("add", a, E("mul", E("div", t1, t2), value))


@composite("clamp")
def clamp(x, lo, hi):
    return E("minimum", E("maximum", x, lo), hi)


# ---- reductions (return the keepdim shape) --------------------------------------
def _flip_order(x):
    return neg(x) if x.dtype.is_floating_point else E("bitwise_not", x)


@composite("min")
def min_(x, dims):
    return _flip_order(O.reduce("max", _flip_order(x), dims, keepdim=True))


@composite("argmin")
def argmin(x, dim):
    return O.arg_reduce("argmax", _flip_order(x), dim, keepdim=True)


@composite("prod")
def prod(x, dims):
    """Pairwise products along each reduced dim (exact order-independent tree)."""
    y = x
    for d in dims:
        n = y.shape[d]
        if n == 0:
            shape = tuple(1 if i == d else s for i, s in enumerate(y.shape))
            y = O.full(shape, 1, y.dtype, y.device)
            continue
        while n > 1:
            h = n // 2
            head = E("mul", V.narrow(y, d, 0, h), V.narrow(y, d, h, h))
            y = cat([head, V.narrow(y, d, 2 * h, 1)], d) if n % 2 else head
            n = y.shape[d]
    return O.cast(y, x.dtype) if y.dtype is not x.dtype else y


@composite("mean")
def mean(x, dims):
    n = C.numel([x.shape[d] for d in dims])
    return E("div", O.reduce("sum", x, dims, keepdim=True), n if n else math.nan)


@composite("logsumexp")
def logsumexp(x, dims):
    m = O.reduce("max", x, dims, keepdim=True) if C.numel(x.shape) else \
        O.full(tuple(1 if i in dims else s for i, s in enumerate(x.shape)), -math.inf,
               x.dtype, x.device)
    m = O.where(E("eq", abs_(m), math.inf), 0.0, m)
    s = O.reduce("sum", E("exp", E("sub", x, m)), dims, keepdim=True)
    return E("add", E("log", s), m)


@composite("var")
def var(x, dims, correction=1):
    n = C.numel([x.shape[d] for d in dims])
    mu = mean(x, dims)
    d = E("sub", x, mu)
    ss = O.reduce("sum", E("mul", d, d), dims, keepdim=True)
    return E("div", ss, max(n - correction, 0))


def _scan(x, dim, binop):
    """Hillis–Steele inclusive scan: log2(n) passes of shifted elementwise ops."""
    y = O.clone(x)
    n = x.shape[dim]
    k = 1
    while k < n:
        nxt = O.clone(y)
        E(binop, V.narrow(y, dim, k, n - k), V.narrow(y, dim, 0, n - k),
          out=V.narrow(nxt, dim, k, n - k))
        y = nxt
        k *= 2
    return y


@composite("cumsum")
def cumsum(x, dim):
    return _scan(x, dim, "add")


@composite("cumprod")
def cumprod(x, dim):
    return _scan(x, dim, "mul")


@composite("softmax")
def softmax(x, dim):
    m = O.reduce("max", x, dim, keepdim=True) if C.numel(x.shape) else x
    e = E("exp", E("sub", x, m))
    return E("div", e, O.reduce("sum", e, dim, keepdim=True))


@composite("log_softmax")
def log_softmax(x, dim):
    m = O.reduce("max", x, dim, keepdim=True) if C.numel(x.shape) else x
    z = E("sub", x, m)
    return E("sub", z, E("log", O.reduce("sum", E("exp", z), dim, keepdim=True)))


@composite("nonzero")
def nonzero(x):
    """Compaction from primitives: prefix-sum positions, then a scatter."""
    flat = O.reshape_flat(E("ne", x, 0))
    total = C.numel(flat.shape)
    mask = O.cast(flat, D.int64)
    n = int(O.item(O.reduce("sum", mask))) if total else 0
    pos = E("sub", cumsum(mask, 0), 1) if total else mask
    target = O.where(flat, pos, n)
    buf = O.zeros((n + 1,), D.int64, x.device)
    if total:
        O.scatter_(buf, 0, target, O.arange(0, total, 1, D.int64, x.device))
    lin = V.narrow(buf, 0, 0, n)
    cols = []
    for size in reversed(x.shape):
        cols.append(E("fmod", lin, size))
        lin = E("div", lin, size, rounding_mode="floor")
    cols.reverse()
    return stack(cols, 1) if cols else O.zeros((n, 0), D.int64, x.device)


# ---- composite-only ops ---------------------------------------------------------
@composite("cat")
def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not O._is_t(t):
            raise TypeError(f"cat(): expected a list of Tensors, but element {i} is "
                            f"{type(t).__name__}")
    dev = C.same_device("cat", tensors)
    # legacy behaviour: 1-D empty tensors are skipped
    live = [t for t in tensors if not (len(t.shape) == 1 and t.shape[0] == 0)]
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    if not live:
        return O.full((0,), 0, dt, dev)
    ref = live[0]
    nd = len(ref.shape)
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = C.normalize_dim(dim, nd, "cat")
    position = {id(t): i for i, t in enumerate(tensors)}
    for t in live:
        if len(t.shape) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{len(t.shape)}")
        for j in range(nd):
            if j != d and t.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref.shape[j]} but got size {t.shape[j]} "
                                   f"for tensor number {position[id(t)]} in the list.")
    shape = list(ref.shape)
    shape[d] = sum(t.shape[d] for t in live)
    out = C.empty(tuple(shape), dt, dev)
    start = 0
    for t in live:
        n = t.shape[d]
        if n:
            O.run(OPS["copy"], dev, (t,), {}, None, dt, V.narrow(out, d, start, n))
        start += n
    return out


@composite("stack")
def stack(tensors, dim=0, ops=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{C.shape_str(s0)} at entry 0 and {C.shape_str(t.shape)} at "
                               f"entry {i}")
    d = C.normalize_dim(dim, len(s0) + 1, "stack")
    ops = ops or DispatcherOps
    return ops.cat([ops.unsqueeze(t, d) for t in tensors], d)


@composite("index_select")
def index_select(x, dim, index, ops=None):
    ops = ops or DispatcherOps
    index = O._check_index("index_select", index)
    if len(index.shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    nd = len(x.shape)
    if nd == 0:
        return ops.gather(x, 0, index)
    d = C.normalize_dim(dim, nd, "index_select")
    idx = V.reshape(index, -1)
    shape = x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:]
    view_shape = tuple(idx.shape[0] if i == d else 1 for i in range(nd))
    idx = C.expand_to(V.reshape(idx, view_shape), shape)
    return ops.gather(x, d, idx)


@composite("index_add")
def index_add(x, dim, index, source, alpha=1):
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "index_add")
    index = O._check_index("index_add", index)
    if alpha != 1:
        source = E("mul", source, alpha)
    view_shape = tuple(index.shape[0] if i == d else 1 for i in range(nd))
    idx = C.expand_to(V.reshape(index, view_shape), source.shape)
    out = O.clone(x)
    return O.scatter_(out, d, idx, source, reduce="add")


@composite("masked_fill")
def masked_fill(x, mask, value):
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.torch_name(mask.dtype)}")
    if O._is_t(value):
        if value.shape:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {len(value.shape)} dimension(s).")
        value = O.cast(value, x.dtype)
    else:
        value = C.scalar_tensor(C._coerce_scalar(value, x.dtype), x.dtype, x.device)
    res = O.where(mask, value, x)
    return O.cast(res, x.dtype)


@composite("flip")
def flip(x, dims, ops=None):
    ops = ops or DispatcherOps
    nd = len(x.shape)
    dims = C.normalize_dims(dims if not isinstance(dims, int) else (dims,), nd, "flip")
    y = x
    for d in dims:
        n = y.shape[d]
        if n > 1:
            y = index_select(y, d, O.arange(n - 1, -1, -1, D.int64, x.device), ops)
    return ops.clone(y) if y is x else y


@composite("roll")
def roll(x, shifts, dims=None, ops=None):
    ops = ops or DispatcherOps
    if isinstance(shifts, int):
        shifts = (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError("roll(): shifts and dims must align when dims is not given "
                               f"(got {len(shifts)} shifts)")
        flat = ops.flatten(ops.contiguous(x))
        return ops.view(roll(flat, shifts, (0,), ops), x.shape)
    if isinstance(dims, int):
        dims = (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    y = x
    for s, d in zip(shifts, dims):
        d = C.normalize_dim(d, len(x.shape), "roll")
        n = y.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            y = ops.cat([ops.narrow(y, d, n - s, s), ops.narrow(y, d, 0, n - s)], d)
    return ops.clone(y) if y is x else y


@composite("repeat")
def repeat(x, repeats, ops=None):
    ops = ops or DispatcherOps
    repeats = tuple(int(r) for r in repeats)
    if len(repeats) < len(x.shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(repeats) - len(x.shape)) + x.shape
    inter = []
    target = []
    for r, s in zip(repeats, shape):
        inter += [1, s]
        target += [r, s]
    src = ops.expand(ops.reshape(x, tuple(inter)), tuple(target))
    return ops.reshape(ops.contiguous(src), tuple(r * s for r, s in zip(repeats, shape)))


def _tri_mask(x, diagonal, upper):
    if len(x.shape) < 2:
        raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 "
                           "dimensions")
    n, m = x.shape[-2], x.shape[-1]
    rows = V.unsqueeze(O.arange(0, n, 1, D.int64, x.device), 1)
    cols = V.unsqueeze(O.arange(0, m, 1, D.int64, x.device), 0)
    diff = E("sub", cols, rows)
    return E("ge", diff, diagonal) if upper else E("le", diff, diagonal)


def _zero_like(x):
    return False if x.dtype is D.bool_ else (0.0 if x.dtype.is_floating_point else 0)


@composite("tril")
def tril(x, diagonal=0, ops=None):
    return (ops or DispatcherOps).where(_tri_mask(x, diagonal, False), x, _zero_like(x))


@composite("triu")
def triu(x, diagonal=0, ops=None):
    return (ops or DispatcherOps).where(_tri_mask(x, diagonal, True), x, _zero_like(x))


@composite("topk")
def topk(x, k, dim=-1, largest=True, sorted=True):
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "topk") if nd else 0
    n = x.shape[d] if nd else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range (k={k}, dimension {d} has size {n})")
    values, indices = O.sort(x, d, descending=largest, stable=True)
    if not nd:
        return values, indices
    return V.narrow(values, d, 0, k), V.narrow(indices, d, 0, k)


@composite("std")
def std(x, dim=None, correction=1, keepdim=False):
    return E("sqrt", O.reduce("var", x, dim, keepdim, correction=correction))


@composite("norm")
def norm(x, p=2, dim=None, keepdim=False):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.torch_name(x.dtype)}")
    a = abs_(x)
    if p == math.inf:
        return O.reduce("max", a, dim, keepdim)
    if p == -math.inf:
        return O.reduce("min", a, dim, keepdim)
    if p == 0:
        return O.reduce("sum", O.cast(E("ne", x, 0), x.dtype), dim, keepdim)
    if p == 1:
        return O.reduce("sum", a, dim, keepdim)
    if p == 2:
        return E("sqrt", O.reduce("sum", E("mul", x, x), dim, keepdim))
    return E("pow", O.reduce("sum", E("pow", a, p), dim, keepdim), 1.0 / p)


def _all_any(x, dim, keepdim, is_all):
    b = O.cast(x, D.bool_) if x.dtype is not D.bool_ else x
    dims = C.normalize_dims(dim, len(x.shape), "all" if is_all else "any")
    if any(x.shape[d] == 0 for d in dims) or (not dims and C.numel(x.shape) == 0):
        # an empty reduction: all() of nothing is True, any() of nothing is False
        shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape)) if keepdim else \
            tuple(s for i, s in enumerate(x.shape) if i not in dims)
        return O.full(shape, is_all, D.uint8 if x.dtype is D.uint8 else D.bool_, x.device)
    res = O.reduce("min" if is_all else "max", O.cast(b, D.uint8), dim, keepdim)
    # PyTorch keeps uint8 for uint8 input, bool otherwise
    return res if x.dtype is D.uint8 else O.cast(res, D.bool_)


@composite("all")
def all_(x, dim=None, keepdim=False):
    return _all_any(x, dim, keepdim, True)


@composite("any")
def any_(x, dim=None, keepdim=False):
    return _all_any(x, dim, keepdim, False)


# ---- linear algebra ---------------------------------------------------------------
@composite("mm")
def mm(a, b):
    mm_check(a, b)
    # batch-of-one views made directly (the small-matrix path is overhead-bound)
    a3 = C.view_of(a, (1,) + a.shape, (max(1, C.numel(a.shape)),) + a._stride, a._offset)
    b3 = C.view_of(b, (1,) + b.shape, (max(1, C.numel(b.shape)),) + b._stride, b._offset)
    r = O._matmul_kernel("mm", a3, b3, None)
    return C.view_of(r, r.shape[1:], r._stride[1:], r._offset)


def mm_check(a, b):
    """mm's shape/dtype checks (shared with the frontend's differentiable mm)."""
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise RuntimeError(f"mm(): self must be a matrix (got {len(a.shape)}D) and mat2 must be"
                           f" a matrix (got {len(b.shape)}D)")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    _same_dtype("mm", a, b)


def _same_dtype(name, a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}(): expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}")


@composite("mv")
def mv(a, v):
    mv_check(a, v)
    return V.select(mm(a, V.unsqueeze(v, 1)), 1, 0)


def mv_check(a, v):
    if len(a.shape) != 2 or len(v.shape) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(a.shape)}, "
                           f"{len(v.shape)}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x"
                           f"{a.shape[1]}), vec ({v.shape[0]})")


@composite("dot")
def dot(a, b):
    dot_check(a, b)
    r = mm(V.unsqueeze(a, 0), V.unsqueeze(b, 1))
    return V.view(r, ()) if C.is_contiguous(r) else V.reshape(r, ())


def dot_check(a, b):
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a.shape)}D and {len(b.shape)}D "
                           "tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    _same_dtype("dot", a, b)


@composite("outer")
def outer(a, b):
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise RuntimeError("outer: expected 1D tensors")
    return E("mul", V.unsqueeze(a, 1), V.unsqueeze(b, 0))


@composite("addmm")
def addmm(inp, m1, m2, beta=1, alpha=1):
    prod_ = mm(m1, m2)
    if alpha != 1:
        prod_ = E("mul", prod_, alpha)
    if beta == 0:
        return E("add", prod_, E("mul", O.zeros(inp.shape, inp.dtype, inp.device), 0))
    return E("add", prod_, inp if beta == 1 else E("mul", inp, beta))


@composite("matmul")
def matmul(a, b, ops=None):
    """Every PyTorch matmul case as mm/bmm on (broadcast, reshaped) views."""
    ops = ops or DispatcherOps
    matmul_check(a, b)
    da, db = len(a.shape), len(b.shape)
    if da == 2 and db == 2:
        return ops.mm(a, b)
    if da >= 2 and db == 2 and C.is_contiguous(a):
        # fold the batch into rows: one GEMM, as for nn.Linear on (B, T, in) inputs
        lead = a.shape[:-1]
        r = ops.mm(ops.reshape(a, (C.numel(lead), a.shape[-1])), b)
        return ops.reshape(r, lead + (b.shape[-1],))
    a2 = ops.unsqueeze(a, 0) if da == 1 else a
    b2 = ops.unsqueeze(b, 1) if db == 1 else b
    if da <= 2 and db <= 2:
        r = ops.mm(a2, b2)
    else:
        n, k, m = a2.shape[-2], a2.shape[-1], b2.shape[-1]
        batch = C.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        B = C.numel(batch)
        a3 = ops.reshape(ops.expand(a2, batch + (n, k)), (B, n, k))
        b3 = ops.reshape(ops.expand(b2, batch + (k, m)), (B, k, m))
        r = ops.reshape(ops.bmm(a3, b3), batch + (n, m))
    if da == 1:
        r = ops.squeeze(r, -2)
    if db == 1:
        r = ops.squeeze(r, -1)
    return r


def matmul_check(a, b):
    """matmul's checks for every rank combination."""
    da, db = len(a.shape), len(b.shape)
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot_check(a, b)
    if da == 2 and db == 1:
        return mv_check(a, b)
    if da <= 2 and db == 2:
        k = a.shape[-1]
        if k != b.shape[0]:
            n = a.shape[0] if da == 2 else 1
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and "
                               f"{b.shape[0]}x{b.shape[1]})")
        return _same_dtype("matmul", a, b)
    _same_dtype("matmul", a, b)
    k = a.shape[-1]
    k2 = b.shape[-2] if db > 1 else b.shape[0]
    if k != k2:
        nb = C.numel(b.shape[:-2]) if db > 2 else 1
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {k}] but got: [{nb}, {k2}].")
    C.broadcast_shapes(a.shape[:-2] if da > 1 else (), b.shape[:-2] if db > 1 else ())


@composite("einsum")
def einsum(equation, *operands):
    from ._einsum import einsum as _impl
    return _impl(equation, *operands)


# ---- creation -----------------------------------------------------------------------
@composite("linspace")
def linspace(start, end, steps, dtype, device):
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    if steps == 0:
        return O.full((0,), 0, dtype, device)
    if steps == 1:
        return O.full((1,), start, dtype, device)
    step = (end - start) / (steps - 1)
    idx = O.arange(0, steps, 1, D.float64, device)
    lo = E("add", E("mul", idx, step), float(start))
    hi = E("sub", float(end), E("mul", E("sub", steps - 1, idx), step))
    res = O.where(E("lt", idx, steps // 2), lo, hi)
    if not dtype.is_floating_point:
        res = trunc(res)
    return O.cast(res, dtype)


@composite("eye")
def eye(n, m, dtype, device):
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got {n} and {m}")
    out = O.zeros((n, m), dtype, device)
    k = min(n, m)
    if k:
        O.fill_(V.as_strided(out, (k,), (m + 1,), 0), 1)
    return out


@composite("randint")
def randint(low, high, size, generator, dtype, device):
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    u = O.random_(C.empty(tuple(size), D.float64, device), "uniform", 0.0, 1.0, generator)
    v = E("floor", E("add", E("mul", u, float(high - low)), float(low)))
    v = E("minimum", v, float(high - 1))
    return O.cast(v, dtype)


@composite("randperm")
def randperm(n, generator, dtype, device):
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    u = O.random_(C.empty((n,), D.float64, device), "uniform", 0.0, 1.0, generator)
    return O.cast(O.sort(u, 0)[1], dtype)


# ---- convolution and pooling building blocks --------------------------------------------
def _extent(sp, blocks, kernel, dilation, padding, stride):
    """Per spatial dim, a padded extent holding both the input and every block."""
    return tuple(max(padding[i] + sp[i], (blocks[i] - 1) * stride[i]
                     + dilation[i] * (kernel[i] - 1) + 1) for i in range(len(kernel)))


@composite("im2col")
def im2col(x, kernel, dilation, padding, stride, blocks, value=0):
    """Pad into a buffer filled with ``value``, then copy one strided view of it."""
    nd = len(kernel)
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    ext = _extent(sp, blocks, kernel, dilation, padding, stride)
    buf = O.full((n, c) + ext, value, x.dtype, x.device)
    bs = buf._stride
    inner = C.view_of(buf, x.shape, bs, sum(padding[i] * bs[2 + i] for i in range(nd)))
    O.copy_(inner, x)
    patches = C.view_of(buf, (n, c) + tuple(kernel) + tuple(blocks),
                        bs[:2] + tuple(dilation[i] * bs[2 + i] for i in range(nd))
                        + tuple(stride[i] * bs[2 + i] for i in range(nd)), 0)
    return O.contiguous(patches)


@composite("col2im")
def col2im(cols, kernel, dilation, padding, stride, size):
    """One strided in-place add per kernel offset (a loop over the kernel, not the pixels)."""
    import itertools
    nd = len(kernel)
    n, c = cols.shape[0], cols.shape[1]
    blocks = cols.shape[2 + nd:]
    ext = _extent(size, blocks, kernel, dilation, padding, stride)
    buf = O.zeros((n, c) + ext, cols.dtype, cols.device)
    bs, cs = buf._stride, cols._stride
    win_strides = bs[:2] + tuple(stride[i] * bs[2 + i] for i in range(nd))
    src_strides = cs[:2] + cs[2 + nd:]
    for offs in itertools.product(*[range(k) for k in kernel]):
        win = C.view_of(buf, (n, c) + tuple(blocks), win_strides,
                        sum(offs[i] * dilation[i] * bs[2 + i] for i in range(nd)))
        src = C.view_of(cols, (n, c) + tuple(blocks), src_strides,
                        cols._offset + sum(offs[i] * cs[2 + i] for i in range(nd)))
        E("add", win, src, inplace=True)
    crop = C.view_of(buf, (n, c) + tuple(size), bs,
                     sum(padding[i] * bs[2 + i] for i in range(nd)))
    return O.contiguous(crop)


@composite("max_pool")
def max_pool(x, kernel, dilation, padding, stride, blocks):
    """im2col padded with the lowest value, max/argmax over the window, and the argmax
    turned into a flat index of the input plane."""
    nd = len(kernel)
    cols = O.im2col(x, kernel, dilation, padding, stride, blocks, O._lowest(x.dtype))
    k = C.numel(kernel)
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    cols = C.view_of(cols, (n, c, k) + tuple(blocks),
                     C.contiguous_strides((n, c, k) + tuple(blocks)), cols._offset)
    values = O.reduce("max", cols, 2)
    rem = O.arg_reduce("argmax", cols, 2)
    index, mult = None, 1
    for i in reversed(range(nd)):
        coord = E("remainder", rem, kernel[i])
        rem = E("div", rem, kernel[i], rounding_mode="floor")
        shape = [1] * (2 + nd)
        shape[2 + i] = blocks[i]
        start = E("sub", E("mul", O.arange(0, blocks[i], 1, D.int64, x.device), stride[i]),
                  padding[i])
        pos = E("add", V.reshape(start, tuple(shape)), E("mul", coord, dilation[i]))
        index = E("mul", pos, mult) if index is None else E("add", index, E("mul", pos, mult))
        mult *= sp[i]
    return values, index
