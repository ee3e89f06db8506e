"""Copies, casts, creation and random numbers."""
from __future__ import annotations

import math
import struct

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient
from ..warn import warn as _warn

__all__ = ["arange", "linspace", "eye", "randint", "randperm", "scalar_to",
           "holds_every_value", "check_new_shape"]

# ---- copies and casts ---------------------------------------------------------------------
defop("copy", "copy", "copy_(Tensor self, Tensor src) -> Tensor", "(out, src)",
      promotion="none", primitive=True, inputs=("self", "src"),
      doc="any dtypes, broadcast src; devices: the dispatcher moves src first")
defop("to", "copy", "to(Tensor self, Device? device=None, ScalarType? dtype=None, "
      "bool copy=False) -> Tensor", "(composite only)", promotion="none",
      node="ToCopyBackward0")
defop("clone", "copy", "clone(Tensor self) -> Tensor", "(composite only)", promotion="none")
composite("to")(O.to)
composite("clone")(O.clone)


def _cast_back(g, device, dtype):
    """The gradient ``g`` of a cast's result as the gradient of its input of ``dtype``:
    a real input takes the real part of a complex gradient (PyTorch's, without the warning
    a cast from complex to real gives)."""
    if g.dtype._kind == 3 and dtype._kind != 3:
        g = V.complex_part(g, 0)
    return O.to(g, device, dtype)


@gradient("copy")
def _(g, src_dtype, src_device):
    # the copy overwrote self: no gradient reaches its old values
    return None, _cast_back(g, src_device, src_dtype)


@gradient("to")
def _(g, self_dtype, self_device):
    return (_cast_back(g, self_device, self_dtype),)


@gradient("clone")
def _(g):
    return (g,)


# ---- creation -----------------------------------------------------------------------------
defop("fill", "creation", "fill_(Tensor self, Scalar value) -> Tensor", "(out, value)",
      promotion="none", primitive=True, differentiable=False)
defop("arange", "creation", "arange(start, end, step, *, dtype, device) -> Tensor",
      "(out, start, step)", promotion="none", primitive=True, differentiable=False)
for _n, _sig in (("linspace", "linspace(start, end, steps, *, dtype, device) -> Tensor"),
                 ("eye", "eye(n, m=None, *, dtype, device) -> Tensor")):
    defop(_n, "creation", _sig, "(composite only)", promotion="none", differentiable=False)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_TWO63 = 2.0 ** 63
#: the C++ names PyTorch's conversion errors print
_CTYPES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
           "int32": "int", "int64": "int64_t", "float16": "c10::Half",
           "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
           "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}
#: the largest finite value of each floating dtype narrower than float64
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": 3.4028234663852886e38}


def _overflow(dtype, op):
    return RuntimeError(f"{op}(): value cannot be converted to type {_CTYPES[dtype.name]} "
                        "without overflow")


def _int_bounds(dtype):
    bits = 8 * dtype.itemsize
    if dtype.is_signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _wrap(v: int, dtype) -> int:
    """``v`` as ``dtype`` stores it (two's complement wrap-around)."""
    bits = 8 * dtype.itemsize
    v &= (1 << bits) - 1
    return v - (1 << bits) if dtype.is_signed and v >= 1 << (bits - 1) else v


def _python_number(value, op):
    """A Python scalar as PyTorch's argument parser takes it: ints beyond 64 bits fail."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, complex):
        if value.imag:
            raise RuntimeError(f"{op}(): value cannot be converted to type double without "
                               "overflow")
        return value.real
    if isinstance(value, int):
        if value < _INT64_MIN:
            raise OverflowError("can't convert negative int to unsigned")
        if value >= 1 << 64:
            raise OverflowError("int too big to convert")
    return value


def scalar_to(value, dtype, op="fill_", check_reduced_floats=True):
    """``value`` (a Python number) as one element of ``dtype`` holds it, with PyTorch's
    checked conversion (c10 ``checked_convert``): a value the dtype cannot hold raises
    ``RuntimeError: value cannot be converted to type int8_t without overflow``.

    Integers: floats are truncated, but NaN, ±inf and values outside the range fail;
    a negative integer into an unsigned dtype wraps (``-1`` is 255 in uint8) unless it is
    below ``-max``. Floats: only finite values beyond the dtype's largest fail (inf and NaN
    pass); ``check_reduced_floats=False`` lets float16 and bfloat16 round to inf instead,
    as PyTorch's CPU fill of a single element does. bool takes any value.

    >>> scalar_to(-1, D.uint8), scalar_to(2.7, D.int8)
    (255, 2)
    """
    if dtype._kind == 3:
        return complex(value)
    value = _python_number(value, op)
    if dtype is D.bool_:
        return bool(value)
    if not dtype.is_floating_point:
        lo, hi = _int_bounds(dtype)
        if isinstance(value, float):
            # compared as doubles, as c10 does: float(2**63 - 1) is 2**63, which passes and
            # converts (on x86) to INT64_MIN
            if value != value or value < float(lo) or value > float(hi):
                raise _overflow(dtype, op)
            return _wrap(int(value), dtype)
        v = int(value)
        if v > hi or (v < lo and (dtype.is_signed or -v > hi)):
            raise _overflow(dtype, op)
        return _wrap(v, dtype)
    v = float(value)
    limit = _FLOAT_MAX.get(dtype.name)
    if limit is not None and (check_reduced_floats or dtype is D.float32) and (
            v > limit or v < -limit) and v not in (math.inf, -math.inf):
        raise _overflow(dtype, op)
    return v


def holds_every_value(dst, src) -> bool:
    """True when every value of dtype ``src`` passes :func:`scalar_to` into ``dst`` (so a
    value tensor of dtype ``src`` need not be read back to be checked).

    >>> holds_every_value(D.int64, D.int8), holds_every_value(D.float16, D.int32)
    (True, False)
    """
    if dst is D.bool_ or dst is D.float64 or src is D.bool_:
        return True
    if src.is_floating_point:
        return dst is src or (dst is D.float32 and src in (D.float16, D.bfloat16)) or (
            dst is D.bfloat16 and src is D.float16)
    if dst.is_floating_point:  # integers: only float16 overflows (above 65504)
        return dst is not D.float16 or src in (D.uint8, D.int8, D.int16)
    lo, hi = _int_bounds(dst)
    slo, shi = _int_bounds(src)
    return shi <= hi and (slo >= lo or (not dst.is_signed and -slo <= hi))


def check_new_shape(shape, dtype, op):
    """PyTorch's checks on the shape of a new contiguous tensor, in its order: negative
    sizes, then the byte size (computed in uint64, then bounded by INT64_MAX), then the
    contiguous strides (int64)."""
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
    n, overflow = 1, False
    for s in shape:
        n *= s
        if n >= 1 << 64:
            overflow, n = True, n & ((1 << 64) - 1)
    if overflow or n * dtype.itemsize > _INT64_MAX:
        raise RuntimeError(f"{op}(): Storage size calculation overflowed with sizes="
                           f"{list(shape)}")
    stride = 1
    for s in reversed(shape[1:]):
        stride *= max(s, 1)
        if stride > _INT64_MAX:
            raise RuntimeError(f"{op}(): Stride calculation overflowed")


# ---- arange: PyTorch's checks, length and values -------------------------------------------
def _to_int64(v, op):
    """c10's ``Scalar.to<int64_t>()``: NaN, ±inf and doubles beyond ±2**63 fail; 2.0**63
    itself passes the check and converts to INT64_MIN (x86)."""
    if isinstance(v, float):
        if v != v or v < -_TWO63 or v > _TWO63:
            raise _overflow(D.int64, op)
        return _wrap(int(v), D.int64)
    if v > _INT64_MAX:  # a Python int in [2**63, 2**64): PyTorch's uint64 Scalar
        raise _overflow(D.int64, op)
    return int(v)


def _to_float32(v, op):
    """c10's ``Scalar.to<float>()``: a finite double beyond float32's range fails."""
    v = float(v)
    if math.isfinite(v) and abs(v) > _FLOAT_MAX["float32"]:
        raise _overflow(D.float32, op)
    return _round_f32(v)


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero), in int64 (INT64_MIN / -1 stays 2**63:
    it only feeds the size check)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def arange(start, end, step, dtype, device):
    """``torch.arange(start, end, step, dtype=dtype)``: PyTorch's checks in its order, its
    length and its values.

    The checks and (except for int64) the length use the arguments as doubles:
    ``ceil((end - start) / step)``. The values are ``start + i * step`` with start and step
    converted to the accumulation type first: int64 for integer dtypes (so
    ``arange(-3, 7.5, 0.5, dtype=int32)`` is 21 copies of -3), float32 for float16 and
    bfloat16, double otherwise. For int64 PyTorch computes the length from the converted
    integers, wrapping on overflow as its C++ does.

    >>> arange(2.25, 5, 0.5, D.int16, ember.device("cpu")).shape
    (6,)
    """
    start, end, step = (_python_number(v, "arange") for v in (start, end, step))
    if dtype is D.bool_:
        raise NotImplementedError(f"arange(): \"arange_{device.type}\" not implemented for "
                                  "'Bool'")
    ds, de, dstep = float(start), float(end), float(step)
    if not (dstep > 0 or dstep < 0):
        raise RuntimeError("arange(): step must be nonzero")
    if not (math.isfinite(ds) and math.isfinite(de)):
        raise RuntimeError(f"arange(): unsupported range: {ds:g} -> {de:g}")
    if not ((dstep > 0 and de >= ds) or (dstep < 0 and de <= ds)):
        raise RuntimeError("arange(): upper bound and lower bound inconsistent with step "
                           "sign")
    if dtype is D.int64:
        s0, e0, st = (_to_int64(v, "arange") for v in (start, end, step))
        if st == 0:
            raise ValueError(f"arange(): step must be nonzero (step {step!r} is 0 as an "
                             "int64)")
        sign = 1 if st > 0 else -1
        size = float(_c_div(_wrap(e0 - s0 + st - sign, D.int64), st))
    else:
        q = (de - ds) / dstep
        size = float(math.ceil(q)) if math.isfinite(q) else q
    if not (size >= 0 and size <= _TWO63):
        raise RuntimeError("arange(): invalid size, possible overflow?")
    n = int(size)
    check_new_shape((n,), dtype, "arange")
    # PyTorch allocates the result before its kernel converts start and step
    out = C.empty((n,), dtype, device)
    if dtype in (D.float16, D.bfloat16):  # computed in float32, then rounded
        s0, st = _to_float32(start, "arange"), _to_float32(step, "arange")
        if n:
            O.copy_(out, O.run(O.OPS["arange"], device, (s0, st), {}, (n,), D.float32))
        return out
    if dtype.is_floating_point:
        s0, st = ds, dstep
    elif dtype is not D.int64:
        s0, st = _to_int64(start, "arange"), _to_int64(step, "arange")
    if n:
        O.run(O.OPS["arange"], device, (s0, st), {}, (n,), dtype, out)
    return out


# ---- linspace ------------------------------------------------------------------------------
def _split(a: float):
    """Veltkamp's split: ``a == hi + lo`` exactly, each with at most 26 significant bits."""
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _halves(n, dtype, device):
    """The two halves of PyTorch's two-ended loop: ``(first, count, c, m)`` with ``m`` the
    multiples of the step (``i``, then ``-(n-1-i)``) as exact ``dtype`` integers and ``c``
    naming the end they are added to."""
    half = n // 2
    for first, count, c, m0 in ((0, half, "start", 0), (half, n - half, "end", half - n + 1)):
        if count:
            yield first, count, c, O.arange(m0, m0 + count, 1, dtype, device)


def _fma(m, step, c, split):
    """``m * step + c`` (``m`` a float64 tensor of integers, ``step`` and ``c`` Python floats)
    as exact float64 pieces ``(total, err, rest)``: ``total + err == m*hi + c`` exactly
    (TwoSum) and ``rest = m*lo``, where ``step = hi + lo`` (Veltkamp) makes both products
    exact for ``|m| < 2**27``; without ``split`` the product ``m * step`` must be exact."""
    E = O.elementwise
    hi, lo = _split(step) if split else (step, 0.0)
    p1 = E("mul", m, hi)
    total = E("add", p1, c)
    bb = E("sub", total, p1)
    err = E("add", E("sub", p1, E("sub", total, bb)), E("sub", c, bb))
    return total, err, (E("mul", m, lo) if split else None)


def _odd_then_float32(total, err):
    """``total + err`` (exact, float64 pieces) rounded once to float32: round to odd in
    float64 first (float64 has more than 24 + 1 bits, so the second rounding is exact)."""
    E = O.elementwise
    bits = C.new_tensor(total._storage, total.shape, total._stride, total._offset, D.int64,
                        total.device, [0])
    toward_err = O.where(E("eq", E("gt", err, 0.0), E("gt", total, 0.0)), 1, -1)
    even_inexact = E("logical_and", E("ne", err, 0.0), E("eq", E("bitwise_and", bits, 1), 0))
    odd = E("add", bits, O.where(even_inexact, toward_err, 0))
    odd = C.new_tensor(odd._storage, odd.shape, odd._stride, odd._offset, D.float64,
                       odd.device, [0])
    return O.cast(odd, D.float32)


def _two_ended(s, e, step, n, device, float32=False):
    """``v[i] = s + i*step`` for ``i < n // 2`` and ``e - (n-1-i)*step`` after, each
    rounded once (PyTorch's compiled loop contracts both into fused multiply-adds), as a
    float64 tensor, or rounded once to float32 with ``float32=True`` (``s``, ``e`` and
    ``step`` are then float32 values)."""
    E = O.elementwise
    out = C.empty((n,), D.float32 if float32 else D.float64, device)
    ends = {"start": s, "end": e}
    exact = (abs(s) < 2.0 ** 1000 and abs(e) < 2.0 ** 1000
             and (step == 0 or 2.0 ** -900 < abs(step) < 2.0 ** 900)
             and (float32 or n <= 1 << 27))
    for first, count, end, m in _halves(n, D.float64, device):
        c = ends[end]
        if float32 and n > 1 << 24:  # PyTorch converts the index to float
            m = O.cast(O.cast(m, D.float32), D.float64)
        if not exact:  # infinities, NaN, extreme magnitudes or huge n: rounded twice
            piece = E("add", E("mul", m, step), c)
        elif c == 0:  # (linspace from 0) the product alone, rounded once
            piece = E("mul", m, step)
        else:
            total, err, rest = _fma(m, step, c, split=not float32)
            if not float32:
                piece = E("add", total, E("add", err, rest))
            elif O.item(O.reduce("max", O.cast(E("ne", err, 0.0), D.uint8))):
                piece = _odd_then_float32(total, err)
            else:  # every sum was exact: one rounding to float32
                piece = total
        O.copy_(V.narrow(out, 0, first, count), piece)
    return out


def _two_ended_half(s, e, step, n, dtype, device):
    """The half-type loop of PyTorch: every product and sum rounds to ``dtype`` (c10::Half
    and c10::BFloat16 arithmetic goes through float and converts back each time)."""
    E = O.elementwise
    out = C.empty((n,), dtype, device)
    ends = {"start": s, "end": e}
    for first, count, end, m in _halves(n, D.float32, device):
        m = O.cast(O.cast(m, dtype), D.float32)
        prod = O.cast(O.cast(E("mul", m, step), dtype), D.float32)
        O.copy_(V.narrow(out, 0, first, count), E("add", prod, ends[end]))
    return out


def _round_f32(v: float) -> float:
    """``v`` rounded to float32 (values beyond its range become ±inf, as C++'s cast)."""
    if math.isfinite(v) and abs(v) <= _FLOAT_MAX["float32"]:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    return v if not math.isfinite(v) else math.copysign(math.inf, v)


def _round_half(v: float, dtype) -> float:
    """``v`` rounded to the half type ``dtype`` as c10 does it: to float32 first (its
    constructors take a float), then to nearest even."""
    f = _round_f32(v)
    if f != f or f in (math.inf, -math.inf):
        return f
    if dtype is D.float16:
        try:
            return struct.unpack("<e", struct.pack("<e", f))[0]
        except OverflowError:  # beyond 65504 after rounding
            return math.copysign(math.inf, f)
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


@composite("linspace")
def linspace(start, end, steps, dtype, device):
    """``torch.linspace``: start and end are converted to ``dtype`` first (a checked
    conversion: ``linspace(-1, 10, 8, dtype=uint8)`` starts at 255), the step is
    ``(end - start) / (steps - 1)`` (a double for integer dtypes, ``dtype`` arithmetic
    otherwise), the first half counts up from start and the second half down from end
    (so both ends are exact), and integer results truncate.

    Each value is rounded once, as PyTorch's compiled loop does (it contracts
    ``start + i*step`` into a fused multiply-add). PyTorch's vectorized CPU loop (from 8
    int64/float64 elements, 16 of 32 bits, 32 of 16 bits on AVX2) can round differently,
    most visibly for float16/bfloat16; ember always computes what the scalar loop does.

    >>> linspace(2.5, -4, 6, D.int64, ember.device("cpu")).tolist()
    [2, 0, 0, -1, -2, -4]
    """
    O.refuse_barebones("linspace", dtype)
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    if steps == 0:
        return C.empty((0,), dtype, device)
    check_new_shape((steps,), dtype, "linspace")
    if steps == 1:  # PyTorch fills with start (one element: its CPU shortcut)
        value = scalar_to(start, dtype, "linspace", check_reduced_floats=device.type != "cpu")
        return O.full((1,), value, dtype, device)
    if dtype is D.bool_:
        raise NotImplementedError(f"linspace(): \"linspace_{device.type}\" not implemented "
                                  "for 'Bool'")
    s = scalar_to(start, dtype, "linspace")
    e = scalar_to(end, dtype, "linspace")
    n = steps
    if not dtype.is_floating_point:
        step = (float(e) - float(s)) / (n - 1)
        return O.cast(_two_ended(float(s), float(e), step, n, device), dtype)
    if dtype is D.float64:
        return _two_ended(s, e, (e - s) / (n - 1), n, device)
    if dtype is D.float32:  # float32 arithmetic: each operation rounds once to float32
        s, e = _round_f32(s), _round_f32(e)
        step = _round_f32(_round_f32(e - s) / _round_f32(float(n - 1)))
        return _two_ended(s, e, step, n, device, float32=True)
    s, e = _round_half(s, dtype), _round_half(e, dtype)
    step = _round_half(_round_half(e - s, dtype) / _round_half(float(n - 1), dtype), dtype)
    return _two_ended_half(s, e, step, n, dtype, device)


@composite("eye")
def eye(n, m, dtype, device):
    O.refuse_barebones("eye", dtype)
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got {n} and {m}")
    check_new_shape((n, m), dtype, "eye")
    out = O.zeros((n, m), dtype, device)
    k = min(n, m)
    if k:
        O.fill_(V.as_strided(out, (k,), (m + 1,), 0), 1)
    return out


# ---- random numbers (counter-based: a generator's (seed, offset) fixes every value) --------
defop("uniform", "random", "uniform_(Tensor self, float from=0, float to=1, *, generator) "
      "-> Tensor", "(out, low, high, seed, offset)", promotion="none", primitive=True,
      differentiable=False)
defop("normal", "random", "normal_(Tensor self, float mean=0, float std=1, *, generator) "
      "-> Tensor", "(out, mean, std, seed, offset)", promotion="none", primitive=True,
      differentiable=False)
defop("randint", "random", "randint(low, high, size, *, generator, dtype, device) -> Tensor",
      "(composite only)", promotion="none", differentiable=False)
defop("randperm", "random", "randperm(n, *, generator, dtype, device) -> Tensor",
      "(composite only)", promotion="none", differentiable=False)


@composite("randint")
def randint(low, high, size, generator, dtype, device):
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    E = O.elementwise
    u = O.random_(C.empty(tuple(size), D.float64, device), "uniform", 0.0, 1.0, generator)
    v = E("floor", E("add", E("mul", u, float(high - low)), float(low)))
    v = E("minimum", v, float(high - 1))
    return O.cast(v, dtype)


@composite("randperm")
def randperm(n, generator, dtype, device):
    O.refuse_barebones("randperm", dtype)
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    u = O.random_(C.empty((n,), D.float64, device), "uniform", 0.0, 1.0, generator)
    return O.cast(O.sort(u, 0)[1], dtype)


# ---- more creation: index grids, windows, log-spaced values ---------------------------------
for _n, _sig in (
        ("tril_indices", "tril_indices(int row, int col, int offset=0, *, dtype, device) "
                         "-> Tensor"),
        ("triu_indices", "triu_indices(int row, int col, int offset=0, *, dtype, device) "
                         "-> Tensor"),
        ("logspace", "logspace(start, end, int steps, float base=10.0, *, dtype, device) "
                     "-> Tensor"),
        ("range", "range(start, end, step=1, *, dtype, device) -> Tensor  # end included"),
        ("window", "window(str kind, int window_length, bool periodic=True, float alpha, "
                   "float beta, *, dtype, device) -> Tensor  # hann/hamming/blackman/bartlett/"
                   "kaiser")):
    defop(_n, "creation", _sig, "(composite only)", promotion="none", differentiable=False)
del _n, _sig


def _tri_indices(op, row, col, offset, dtype, device, upper):
    O.refuse_barebones(op, dtype)
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{name} must be non-negative, got{v}")
    if dtype.is_floating_point or dtype is D.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for '{D.torch_name(dtype)}'")
    rows = V.unsqueeze(O.arange(0, row, 1, D.int64, device), 1)
    cols = V.unsqueeze(O.arange(0, col, 1, D.int64, device), 0)
    diff = O.elementwise("sub", cols, rows)
    keep = O.elementwise("ge" if upper else "le", diff, offset)
    if not row or not col:
        return O.zeros((2, 0), dtype, device)
    return O.cast(V.t(O.nonzero(keep)), dtype)


@composite("tril_indices")
def tril_indices(row, col, offset, dtype, device):
    """The (row, column) indices of the lower triangle of a ``row x col`` matrix, row by
    row (PyTorch's order)."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, upper=False)


@composite("triu_indices")
def triu_indices(row, col, offset, dtype, device):
    return _tri_indices("triu_indices", row, col, offset, dtype, device, upper=True)


@composite("logspace")
def logspace(start, end, steps, base, dtype, device):
    """``base ** linspace(start, end, steps)``, the exponents and powers in float64 (so
    integer dtypes get exact powers), then converted to ``dtype``."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    check_new_shape((steps,), dtype, "logspace")
    if steps == 0:
        return C.empty((0,), dtype, device)
    if dtype.is_floating_point:
        exps = linspace(start, end, steps, D.float64, device)
    else:  # PyTorch's integer loop: exponents from a double step, truncated powers
        exps = linspace(float(start), float(end), steps, D.float64, device)
    return O.cast(O.elementwise("pow", float(base), exps), dtype)


@composite("range")
def range_(start, end, step, dtype, device):
    """PyTorch's deprecated ``range``: ``start`` to ``end`` included, by ``step``."""
    if step == 0:
        raise RuntimeError("range(): step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"range(): unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    check_new_shape((n,), dtype, "range")
    vals = O.elementwise("add", O.elementwise("mul", O.arange(0, n, 1, D.float64, device),
                                              float(step)), float(start))
    return O.cast(vals, dtype)


def _bessel_i0(x):
    """The modified Bessel function I0 of a float64 tensor, from its power series
    ``sum_k ((x/2)^k / k!)^2`` (converges for every x; 120 terms cover |x| <= 100)."""
    E = O.elementwise
    q = E("mul", E("mul", x, x), 0.25)
    term = O.full(x.shape, 1.0, D.float64, x.device)
    total = O.full(x.shape, 1.0, D.float64, x.device)
    for k in range(1, 120):
        term = E("div", E("mul", term, q), float(k * k))
        total = E("add", total, term)
    return total


_WINDOWS = ("hann", "hamming", "blackman", "bartlett", "kaiser")


@composite("window")
def window(kind, window_length, periodic, alpha, beta, dtype, device):
    """PyTorch's window functions, as PyTorch computes them: the same sequence of ops in
    ``dtype`` (so float16/bfloat16 round where PyTorch's do); ``periodic`` windows are the
    symmetric window of ``window_length + 1`` without its last value. Kaiser's Bessel
    function is evaluated in float64."""
    op = f"{kind}_window"
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {D.torch_name(dtype)}")
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length="
                           f"{window_length}")
    if window_length == 0:
        return C.empty((0,), dtype, device)
    if window_length == 1:
        return O.full((1,), 1.0, dtype, device)
    E = O.elementwise
    n = window_length + 1 if periodic else window_length
    i = O.arange(0, n, 1, dtype, device)
    if kind in ("hann", "hamming"):
        a, b = (0.5, 0.5) if kind == "hann" else (alpha, beta)
        w = E("add", E("mul", E("cos", E("mul", i, 2.0 * math.pi / (n - 1))), -b), a)
    elif kind == "blackman":
        base = E("mul", i, math.pi / (n - 1))
        w = E("add", E("sub", E("mul", E("cos", E("mul", base, 4.0)), 0.08),
                       E("mul", E("cos", E("mul", base, 2.0)), 0.5)), 0.42)
    elif kind == "bartlett":
        w = E("mul", i, 2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        w = cat_halves(w, half, n, lambda t: E("add", E("mul", t, -1.0), 2.0))
    else:  # kaiser: I0(beta * sqrt(1 - ((i - m) / m)^2)) / I0(beta), m = (n - 1) / 2
        m = (n - 1) / 2.0
        r = E("div", E("sub", O.arange(0, n, 1, D.float64, device), m), m)
        arg = E("mul", E("sqrt", E("maximum", E("sub", 1.0, E("mul", r, r)), 0.0)),
                float(beta))
        w = E("div", _bessel_i0(arg), _bessel_i0(O.full((), float(beta), D.float64, device)))
        w = O.cast(w, dtype)
    return V.narrow(w, 0, 0, window_length) if periodic else w


def cat_halves(w, half, n, second):
    """``w`` with ``second`` applied to its elements from ``half`` on."""
    out = O.clone(w)
    if n - half:
        O.copy_(V.narrow(out, 0, half, n - half), second(V.narrow(w, 0, half, n - half)))
    return out


# ---- sampling from distributions (composites of the uniform/normal primitives) --------------
for _n, _sig in (
        ("bernoulli", "bernoulli(Tensor self, Tensor|float? p=None, *, generator) -> Tensor"),
        ("multinomial", "multinomial(Tensor self, int num_samples, bool replacement=False, *, "
                        "generator) -> Tensor"),
        ("poisson", "poisson(Tensor self, *, generator) -> Tensor"),
        ("binomial", "binomial(Tensor count, Tensor prob, *, generator) -> Tensor"),
        ("exponential", "exponential_(Tensor self, float lambd=1, *, generator) -> Tensor"),
        ("geometric", "geometric_(Tensor self, float p, *, generator) -> Tensor"),
        ("log_normal", "log_normal_(Tensor self, float mean=1, float std=2, *, generator) "
                       "-> Tensor"),
        ("cauchy", "cauchy_(Tensor self, float median=0, float sigma=1, *, generator) "
                   "-> Tensor"),
        ("random", "random_(Tensor self, int from=0, int? to=None, *, generator) -> Tensor")):
    defop(_n, "random", _sig, "(composite only)", promotion="none", differentiable=False)
del _n, _sig


def _uniform(shape, device, generator):
    """float64 uniform samples in [0, 1)."""
    return O.random_(C.empty(tuple(shape), D.float64, device), "uniform", 0.0, 1.0, generator)


def _any(mask) -> bool:
    return bool(C.numel(mask.shape)) and bool(O.item(O.reduce("max", O.cast(mask, D.uint8))))


def _float_only(op, x, what="self"):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{D.torch_name(x.dtype)}'")


@composite("bernoulli")
def bernoulli(x, p=None, generator=None):
    """1 with probability ``p`` (``x``'s values when ``p`` is None), else 0, in ``x``'s
    dtype and shape."""
    E = O.elementwise
    if p is None:
        _float_only("bernoulli_tensor_cpu_p_", x)
        probs = x
    elif O._is_t(p):
        probs = C.expand_to(p, x.shape) if p.shape != x.shape else p
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probs = p
    if O._is_t(probs) and C.numel(probs.shape):
        bad = E("logical_or", E("lt", probs, 0), E("gt", probs, 1))
        if _any(E("logical_or", bad, E("isnan", probs))):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    u = _uniform(x.shape, x.device, generator)
    return O.cast(E("lt", u, O.cast(probs, D.float64) if O._is_t(probs) else float(probs)),
                  x.dtype)


@composite("multinomial")
def multinomial(probs, num_samples, replacement=False, generator=None):
    """Category indices drawn from the rows of ``probs`` (weights, not necessarily
    normalised). With replacement: inverse CDF. Without: the largest ``p / q`` for ``q``
    exponential samples (the order of an exponential race, PyTorch's method)."""
    E = O.elementwise
    nd = len(probs.shape)
    if nd not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not probs.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.torch_name(probs.dtype)}")
    n = probs.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if n > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    p = O.cast(probs if nd == 2 else V.unsqueeze(probs, 0), D.float64)
    rows = p.shape[0]
    if C.numel(p.shape):
        bad = E("logical_or", E("lt", p, 0.0), E("logical_not", E("isfinite", p)))
        if _any(bad):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        total = O.reduce("sum", p, -1, True)
        if _any(E("le", total, 0.0)):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement:  # (categories of weight 0 come last, as in PyTorch)
        q = E("neg", E("log1p", E("neg", _uniform(p.shape, p.device, generator))))
        keys = E("div", p, q)
        idx = V.narrow(O.sort(keys, -1, True, False)[1], -1, 0, num_samples)
    else:
        cdf = O.scan("cumsum", p, -1)
        cdf = E("div", cdf, V.narrow(cdf, -1, n - 1, 1))
        u = _uniform((rows, num_samples), p.device, generator)
        below = E("le", V.unsqueeze(cdf, 1), V.unsqueeze(u, 2))
        idx = E("minimum", O.reduce("sum", O.cast(below, D.int64), -1), n - 1)
    idx = O.contiguous(idx)
    return idx if nd == 2 else V.reshape(idx, (num_samples,))


#: log(k!) for k < 10 (exact to double precision): the Stirling series takes over above
_LOG_FACT = [math.lgamma(k + 1) for k in range(10)]


def _factorial_table(device):
    table = O.full((10,), 0.0, D.float64, device)
    for i, v in enumerate(_LOG_FACT):
        if v:
            O.fill_(V.narrow(table, 0, i, 1), v)
    return table


def _log_factorial(k, table):
    """``lgamma(k + 1)`` for a float64 tensor of non-negative integers: ``table``
    (``_factorial_table``) below 10, Stirling's series (error < 1e-12) from 10 on."""
    E = O.elementwise
    small = O.gather(table, 0, O.cast(E("minimum", E("maximum", k, 0.0), 9.0), D.int64))
    x = E("add", E("maximum", k, 10.0), 1.0)
    inv = E("reciprocal", x)
    inv2 = E("mul", inv, inv)
    series = E("mul", inv, E("sub", 1.0 / 12, E("mul", inv2, E("sub", 1.0 / 360,
                                                                E("mul", inv2, 1.0 / 1260)))))
    big = E("add", E("sub", E("mul", E("sub", x, 0.5), E("log", x)), x),
            E("add", series, 0.5 * math.log(2 * math.pi)))
    return O.where(E("lt", k, 10.0), small, big)


def _flat64(x):
    return O.cast(O.contiguous(V.reshape(x, (-1,))), D.float64)


@composite("poisson")
def poisson(rates, generator=None):
    """Poisson samples with the given rates: multiplication of uniforms (Knuth) below rate
    10, Hörmann's transformed rejection (PTRS) from 10 on, as PyTorch."""
    E = O.elementwise
    if not rates.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for "
                                  f"'{D.torch_name(rates.dtype)}'")
    lam = _flat64(rates)
    n = C.numel(lam.shape)
    if not n:
        return O.clone(rates)
    if _any(E("logical_or", E("lt", lam, 0.0), E("isnan", lam))):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    dev = lam.device
    # Knuth: count the uniforms whose running product stays above exp(-rate)
    small = E("lt", lam, 10.0)
    limit = E("exp", E("neg", lam))
    prod = O.full((n,), 1.0, D.float64, dev)
    count = O.zeros((n,), D.float64, dev)
    active = E("logical_and", small, E("gt", lam, 0.0))
    while _any(active):
        prod = E("mul", prod, O.where(active, _uniform((n,), dev, generator), 1.0))
        hit = E("logical_and", active, E("gt", prod, limit))
        count = E("add", count, O.cast(hit, D.float64))
        active = hit
    # PTRS for the large rates
    big = E("logical_not", small)
    if _any(big):
        lam_b = E("maximum", lam, 10.0)
        slam = E("sqrt", lam_b)
        loglam = E("log", lam_b)
        b = E("add", E("mul", slam, 2.53), 0.931)
        a = E("add", E("mul", b, 0.02483), -0.059)
        inv_alpha = E("add", E("div", 1.1328, E("sub", b, 3.4)), 1.1239)
        vr = E("sub", 0.9277, E("div", 3.6224, E("sub", b, 2.0)))
        table = _factorial_table(dev)
        pending = big
        while _any(pending):
            u = E("sub", _uniform((n,), dev, generator), 0.5)
            v = _uniform((n,), dev, generator)
            us = E("sub", 0.5, E("abs", u))
            k = E("floor", E("add", E("mul", E("add", E("div", E("mul", a, 2.0), us), b), u),
                                 E("add", lam_b, 0.43)))
            quick = E("logical_and", E("ge", us, 0.07), E("le", v, vr))
            reject = E("logical_or", E("lt", k, 0.0),
                       E("logical_and", E("lt", us, 0.013), E("gt", v, us)))
            lhs = E("sub", E("add", E("log", v), E("log", inv_alpha)),
                    E("log", E("add", E("div", a, E("mul", us, us)), b)))
            rhs = E("sub", E("add", E("neg", lam_b), E("mul", E("maximum", k, 0.0), loglam)),
                    _log_factorial(E("maximum", k, 0.0), table))
            ok = E("logical_or", quick, E("logical_and", E("logical_not", reject),
                                          E("le", lhs, rhs)))
            take = E("logical_and", pending, ok)
            count = O.where(take, k, count)
            pending = E("logical_and", pending, E("logical_not", ok))
    return O.cast(V.reshape(count, rates.shape), rates.dtype)


@composite("binomial")
def binomial(count, prob, generator=None):
    """Binomial samples: waiting times between successes (inversion) while
    ``n * min(p, 1-p) < 10``, Hörmann's BTRS rejection above, as PyTorch."""
    E = O.elementwise
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{D.torch_name(count.dtype)}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {D.torch_name(prob.dtype)} but expected "
                           f"{D.torch_name(count.dtype)}")
    shape = C.broadcast_shapes(count.shape, prob.shape)
    nn = _flat64(C.expand_to(count, shape))
    p = _flat64(C.expand_to(prob, shape))
    size = C.numel(shape)
    if not size:
        return C.empty(shape, count.dtype, count.device)
    dev = nn.device
    # as PyTorch: p is clamped to [0, 1], a count below 0 gives 0, NaN or infinite input NaN
    bad = E("logical_or", E("logical_or", E("isnan", p), E("isnan", nn)), E("isinf", nn))
    nn = O.where(bad, 0.0, E("maximum", nn, 0.0))
    p = O.where(bad, 0.5, E("minimum", E("maximum", p, 0.0), 1.0))
    flip_ = E("gt", p, 0.5)
    q = O.where(flip_, E("sub", 1.0, p), p)
    out = O.zeros((size,), D.float64, dev)
    small = E("lt", E("mul", nn, q), 10.0)
    # inversion: successes while the geometric waiting times fit in n trials
    log_q = E("log1p", E("neg", q))
    trials = O.zeros((size,), D.float64, dev)
    active = E("logical_and", small, E("gt", q, 0.0))
    while _any(active):
        u = _uniform((size,), dev, generator)
        wait = E("ceil", E("div", E("log1p", E("neg", u)), log_q))
        trials = E("add", trials, O.where(active, E("maximum", wait, 1.0), 0.0))
        hit = E("logical_and", active, E("le", trials, nn))
        out = E("add", out, O.cast(hit, D.float64))
        active = hit
    big = E("logical_not", small)
    if _any(big):
        qb = E("minimum", E("maximum", q, 1e-12), 0.5)
        nb = E("maximum", nn, 20.0)
        spq = E("sqrt", E("mul", E("mul", nb, qb), E("sub", 1.0, qb)))
        b = E("add", E("mul", spq, 2.53), 1.15)
        a = E("add", E("add", E("mul", b, 0.0248), -0.0873), E("mul", qb, 0.01))
        c = E("add", E("mul", nb, qb), 0.5)
        vr = E("sub", 0.92, E("div", 4.2, b))
        alpha = E("mul", E("add", E("div", 5.1, b), 2.83), spq)
        lpq = E("log", E("div", qb, E("sub", 1.0, qb)))
        m = E("floor", E("mul", E("add", nb, 1.0), qb))
        table = _factorial_table(dev)
        h = E("add", _log_factorial(m, table), _log_factorial(E("sub", nb, m), table))
        pending = big
        while _any(pending):
            u = E("sub", _uniform((size,), dev, generator), 0.5)
            v = _uniform((size,), dev, generator)
            us = E("sub", 0.5, E("abs", u))
            k = E("floor", E("add", E("mul", E("add", E("div", E("mul", a, 2.0), us), b), u), c))
            inside = E("logical_and", E("ge", k, 0.0), E("le", k, nb))
            quick = E("logical_and", E("ge", us, 0.07), E("le", v, vr))
            kk = E("minimum", E("maximum", k, 0.0), nb)
            lv = E("log", E("div", E("mul", v, alpha), E("add", E("div", a, E("mul", us, us)),
                                                              b)))
            bound = E("add", E("sub", E("sub", h, _log_factorial(kk, table)),
                               _log_factorial(E("sub", nb, kk), table)),
                      E("mul", E("sub", kk, m), lpq))
            ok = E("logical_and", inside, E("logical_or", quick, E("le", lv, bound)))
            take = E("logical_and", pending, ok)
            out = O.where(take, kk, out)
            pending = E("logical_and", pending, E("logical_not", ok))
    out = O.where(flip_, E("sub", nn, out), out)
    out = O.where(bad, math.nan, out)
    return O.cast(V.reshape(out, shape), count.dtype)


def _continuous(op, x):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op} distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified "
                           f"{D.torch_name(x.dtype)}")


@composite("exponential")
def exponential(x, lambd=1.0, generator=None):
    """A tensor like ``x`` of exponential samples: ``-log(1 - u) / lambd``."""
    _continuous("Exponential", x)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    E = O.elementwise
    u = _uniform(x.shape, x.device, generator)
    return O.cast(E("div", E("neg", E("log1p", E("neg", u))), float(lambd)), x.dtype)


@composite("geometric")
def geometric(x, p, generator=None):
    """Geometric samples (trials up to the first success, from 1):
    ``ceil(log(1 - u) / log(1 - p))``."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    E = O.elementwise
    u = _uniform(x.shape, x.device, generator)
    v = E("maximum", E("ceil", E("div", E("log1p", E("neg", u)), math.log1p(-p))), 1.0)
    return O.cast(v, x.dtype)


@composite("log_normal")
def log_normal(x, mean=1.0, std=2.0, generator=None):
    _continuous("LogNormal", x)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    z = O.random_(C.empty(x.shape, D.float64, x.device), "normal", float(mean), float(std),
                  generator)
    return O.cast(O.elementwise("exp", z), x.dtype)


@composite("cauchy")
def cauchy(x, median=0.0, sigma=1.0, generator=None):
    _continuous("Cauchy", x)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    E = O.elementwise
    u = _uniform(x.shape, x.device, generator)
    v = E("add", E("mul", E("tan", E("mul", E("sub", u, 0.5), math.pi)), float(sigma)),
          float(median))
    return O.cast(v, x.dtype)


_C_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short",
            "int32": "int", "int64": "long", "bool": "bool", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def _random_bounds(dtype):
    """``[lowest, highest]`` that ``random_`` may produce for ``dtype``: the integers a
    floating dtype holds exactly (its mantissa), the range of an integer dtype."""
    if dtype is D.bool_:
        return 0, 1
    if dtype.is_floating_point:
        digits = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name]
        return -(1 << digits), 1 << digits
    return _int_bounds(dtype)


@composite("random")
def random(x, low=0, high=None, generator=None):
    """``random_(from, to)``: integers uniform in ``[from, to - 1]``; without ``to``, up to
    the dtype's largest (its mantissa's range for floats)."""
    lo, hi = _random_bounds(x.dtype)
    cname = _C_NAMES[x.dtype.name]
    if high is None:
        if low != 0:  # random_(to)
            low, high = 0, low
        else:
            high = hi + 1
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    if x.dtype.is_floating_point:  # PyTorch warns: the values are no longer exact
        for name, v in (("from", low), ("to - 1", high - 1)):
            if not lo <= v <= hi:
                digits = hi.bit_length() - 1
                _warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                      f"precision limitations {cname} can support discrete uniform "
                      f"distribution only within this range. This warning will "
                      "become an error in version 1.7 release, please fix the code "
                      "in advance", UserWarning)
    elif not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {cname}")
    elif not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {cname}")
    E = O.elementwise
    u = _uniform(x.shape, x.device, generator)
    v = E("floor", E("add", E("mul", u, float(high - low)), float(low)))
    return O.cast(E("minimum", v, float(high - 1)), x.dtype)
