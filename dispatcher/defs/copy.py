"""Copies, casts, creation and random numbers."""
from __future__ import annotations

import math
import struct

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient

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


@gradient("copy")
def _(g, src_dtype, src_device):
    # the copy overwrote self: no gradient reaches its old values
    return None, O.to(g, src_device, src_dtype)


@gradient("to")
def _(g, self_dtype, self_device):
    return (O.to(g, self_device, self_dtype),)


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
           "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}
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
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    u = O.random_(C.empty((n,), D.float64, device), "uniform", 0.0, 1.0, generator)
    return O.cast(O.sort(u, 0)[1], dtype)
