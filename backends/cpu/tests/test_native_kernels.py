"""Direct tests of the ember_cpu._C kernels against NumPy, using a tiny fake tensor class.

Run: /work/main/.venv/bin/python -m pytest backends/cpu/tests -q
"""
import math
import os
import threading
from types import SimpleNamespace

import numpy as np
import pytest

C = pytest.importorskip("ember_cpu._C")


# ------------------------------------------------------------------------------------------------
# fake tensors
class DType(SimpleNamespace):
    def __repr__(self):
        return self.name


DTYPES = {}
for _name, _code, _np in [("bool", 0, np.bool_), ("uint8", 1, np.uint8), ("int8", 2, np.int8),
                          ("int16", 3, np.int16), ("int32", 4, np.int32), ("int64", 5, np.int64),
                          ("float16", 6, np.float16), ("bfloat16", 7, np.uint16),
                          ("float32", 8, np.float32), ("float64", 9, np.float64)]:
    DTYPES[_name] = DType(name=_name, code=_code, itemsize=np.dtype(_np).itemsize, np=np.dtype(_np))

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
NUMERIC = INTS + FLOATS
ALL = ["bool"] + NUMERIC


def f32_to_bf16_bits(a):
    shape = np.shape(a)
    a = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    u = a.view(np.uint32).astype(np.uint64)
    nan = np.isnan(a)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r.reshape(shape)


def bf16_bits_to_f32(b):
    b = np.asarray(b, dtype=np.uint16)
    return (b.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)


class FT:
    """Fake kernel tensor: _storage, shape, _stride, _offset, dtype."""

    def __init__(self, storage, shape, stride, offset, dtype):
        self._storage = storage
        self.shape = tuple(shape)
        self._stride = tuple(stride)
        self._offset = offset
        self.dtype = dtype

    # views
    def t(self, d0=0, d1=1):
        sh, st = list(self.shape), list(self._stride)
        sh[d0], sh[d1] = sh[d1], sh[d0]
        st[d0], st[d1] = st[d1], st[d0]
        return FT(self._storage, sh, st, self._offset, self.dtype)

    def expand(self, shape):
        st = [s if n == m else 0 for n, m, s in zip(self.shape, shape, self._stride)]
        return FT(self._storage, shape, st, self._offset, self.dtype)

    def numpy(self):
        """Copy of the logical contents (bfloat16 decoded to float32)."""
        dt = self.dtype
        raw = np.frombuffer(self._storage, dtype=np.uint8)
        if raw.size == 0 or any(s == 0 for s in self.shape):
            out = np.zeros(self.shape, dtype=dt.np)
        else:
            base = raw.view(dt.np) if raw.size % dt.itemsize == 0 else \
                raw[: raw.size // dt.itemsize * dt.itemsize].view(dt.np)
            out = np.lib.stride_tricks.as_strided(
                base[self._offset:], shape=self.shape,
                strides=[s * dt.itemsize for s in self._stride]).copy()
        if dt.name == "bfloat16":
            return bf16_bits_to_f32(out)
        return out


def contig_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def empty(shape, dtype):
    dt = DTYPES[dtype] if isinstance(dtype, str) else dtype
    n = int(np.prod(shape)) if len(shape) else 1
    st = C.Storage(n * dt.itemsize)
    return FT(st, shape, contig_strides(shape), 0, dt)


def tensor(a, dtype=None, offset=0):
    """A contiguous FT holding a copy of numpy array `a` (zero-copy wrap of the copy)."""
    a = np.asarray(a)
    if dtype is None:
        dtype = {np.dtype(np.bool_): "bool", np.dtype(np.float64): "float64"}.get(a.dtype, a.dtype.name)
    dt = DTYPES[dtype]
    if dt.name == "bfloat16":
        flat = f32_to_bf16_bits(a.astype(np.float32)).ravel()
    else:
        flat = np.ascontiguousarray(a, dtype=dt.np).ravel()
    buf = np.empty(flat.size + offset, dtype=dt.np)
    buf[offset:] = flat
    st = C.Storage.from_buffer(buf)
    return FT(st, a.shape, contig_strides(a.shape), offset, dt)


def ref(a, dtype):
    """numpy value of `a` rounded the way the dtype stores it (for comparisons)."""
    if dtype == "bfloat16":
        return bf16_bits_to_f32(f32_to_bf16_bits(np.asarray(a, dtype=np.float32)))
    return np.asarray(a).astype(DTYPES[dtype].np)


def rand(shape, dtype, rng, low=-3, high=3):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in INTS:
        lo = 0 if dtype == "uint8" else low
        return rng.integers(lo, high + 1, size=shape).astype(DTYPES[dtype].np)
    v = rng.uniform(low, high, size=shape)
    return ref(v, dtype)


def tol(dtype):
    return {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}.get(dtype, 0)


def assert_close(got, want, dtype, rtol=None, atol=None):
    want = np.asarray(want)
    if dtype in FLOATS:
        r = tol(dtype) if rtol is None else rtol
        a = r if atol is None else atol
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=r, atol=a,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# layouts: (name, maker(np array, dtype) -> (FT input, numpy logical value))
def layouts(shape):
    """Yield (name, fn) producing an input view of logical shape `shape`."""
    yield "contig", lambda a, dt: tensor(a, dt, offset=3)
    if len(shape) >= 2:
        def transposed(a, dt):
            t = tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1)), dt)
            return t.t(0, 1)
        yield "transposed", transposed

        def bcast(a, dt):
            # row 0 broadcast along dim 0
            t = tensor(a[:1], dt)
            return t.expand(a.shape)
        yield "bcast", bcast


def logical(a, layout):
    """numpy value a given layout sees."""
    if layout == "bcast":
        return np.broadcast_to(a[:1], a.shape)
    return a


# ------------------------------------------------------------------------------------------------
# Storage
def test_storage_basic():
    s = C.Storage(100)
    assert s.nbytes == 100 and s.data_ptr % 64 == 0 and not s.readonly
    v = np.frombuffer(s, dtype=np.uint8)
    assert v.shape == (100,)
    v[:] = 7
    assert np.frombuffer(s, dtype=np.uint8)[5] == 7
    z = C.Storage(0)
    assert z.nbytes == 0


def test_storage_from_buffer_zero_copy():
    a = np.arange(10, dtype=np.float32)
    s = C.Storage.from_buffer(a)
    assert s.data_ptr == a.ctypes.data and s.nbytes == 40
    v = np.frombuffer(s, dtype=np.float32)
    v[0] = 42
    assert a[0] == 42
    del a
    assert np.frombuffer(s, dtype=np.float32)[0] == 42  # kept alive


def test_storage_readonly_and_copy():
    ro = C.Storage.from_buffer(b"abcdefgh")
    assert ro.readonly
    dst = C.Storage(8)
    C.storage_copy(dst, 0, ro, 0, 8)
    assert bytes(np.frombuffer(dst, dtype=np.uint8)) == b"abcdefgh"
    C.storage_copy(dst, 2, ro, 4, 4)
    assert bytes(np.frombuffer(dst, dtype=np.uint8)) == b"abefghgh"
    with pytest.raises(IndexError):
        C.storage_copy(dst, 6, ro, 0, 4)
    with pytest.raises(IndexError):
        C.storage_copy(dst, 0, ro, 6, 4)
    with pytest.raises(ValueError):
        C.storage_copy(ro, 0, dst, 0, 1)
    # a kernel refuses to write into a read-only output
    t = FT(ro, (8,), (1,), 0, DTYPES["uint8"])
    with pytest.raises(ValueError):
        C.fill(t, 1)


def test_bad_tensor_args():
    with pytest.raises(TypeError):
        C.exp(object(), object())
    x = tensor(np.ones(4, np.float32))
    bad = FT(x._storage, (8,), (1,), 0, x.dtype)  # does not fit storage
    with pytest.raises(ValueError):
        C.exp(empty((8,), "float32"), bad)
    with pytest.raises(TypeError):
        C.exp(empty((4,), "float32"), x, foo=1)
    with pytest.raises(ValueError):
        C.add(empty((4,), "float32"), x, tensor(np.ones(3, np.float32)))


def test_threads():
    n = C.get_num_threads()
    assert n == (os.cpu_count() or 1) or n >= 1
    C.set_num_threads(1)
    assert C.get_num_threads() == 1
    a = tensor(np.arange(100000, dtype=np.float32))
    out = empty((100000,), "float32")
    C.add(out, a, a)
    C.set_num_threads(n)
    out2 = empty((100000,), "float32")
    C.add(out2, a, a)
    np.testing.assert_array_equal(out.numpy(), out2.numpy())
    with pytest.raises(ValueError):
        C.set_num_threads(0)


def test_concurrent_python_threads():
    a = tensor(np.arange(200000, dtype=np.float64))
    res = []

    def work():
        out = empty((200000,), "float64")
        for _ in range(5):
            C.mul(out, a, a)
        res.append(out.numpy())

    th = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in th]
    [t.join() for t in th]
    for r in res:
        np.testing.assert_array_equal(r, np.arange(200000.0) ** 2)


# ------------------------------------------------------------------------------------------------
# copy / fill / arange
@pytest.mark.parametrize("src_dt", ALL)
@pytest.mark.parametrize("dst_dt", ALL)
def test_copy_conversions(src_dt, dst_dt, rng):
    a = rand((3, 5), src_dt, rng, -100, 100)
    if src_dt in FLOATS:
        a = ref(np.where(np.abs(a) < 0.5, 0.0, a), src_dt)  # include exact zeros
    x = tensor(a, src_dt)
    out = empty((3, 5), dst_dt)
    C.copy(out, x)
    src = x.numpy()
    if dst_dt == "bool":
        want = src != 0
    elif dst_dt in INTS and src_dt in FLOATS:
        want = np.trunc(src.astype(np.float64)).astype(np.int64).astype(DTYPES[dst_dt].np)
    elif dst_dt == "bfloat16":
        want = ref(src.astype(np.float32), "bfloat16")
    else:
        want = src.astype(np.float64 if dst_dt in FLOATS else np.int64).astype(
            DTYPES[dst_dt].np if dst_dt != "bfloat16" else np.float32)
    got = out.numpy()
    if dst_dt in FLOATS:
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=tol(dst_dt))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", ALL)
def test_copy_strided_and_broadcast(dt, rng):
    a = rand((4, 6, 5), dt, rng)
    x = tensor(a, dt)
    out = empty((6, 4, 5), dt)
    C.copy(out, x.t(0, 1))
    np.testing.assert_array_equal(out.numpy(), np.swapaxes(x.numpy(), 0, 1))
    # write into a transposed destination
    out2 = empty((6, 4, 5), dt)
    C.copy(out2.t(0, 1), x)
    np.testing.assert_array_equal(out2.numpy(), np.swapaxes(x.numpy(), 0, 1))
    # broadcast source
    row = tensor(a[:1], dt).expand((4, 6, 5))
    out3 = empty((4, 6, 5), dt)
    C.copy(out3, row)
    np.testing.assert_array_equal(out3.numpy(), np.broadcast_to(x.numpy()[:1], (4, 6, 5)))


def test_copy_large_parallel():
    a = np.random.default_rng(0).standard_normal(300001).astype(np.float32)
    x = tensor(a)
    out = empty(a.shape, "float32")
    C.copy(out, x)
    np.testing.assert_array_equal(out.numpy(), a)
    out64 = empty(a.shape, "float64")
    C.copy(out64, x)
    np.testing.assert_array_equal(out64.numpy(), a.astype(np.float64))


def test_copy_special_values():
    a = np.array([np.nan, np.inf, -np.inf, 65520.0, 1e-8, -0.0, 3.4e38], np.float32)
    out = empty((7,), "float16")
    C.copy(out, tensor(a))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), a.astype(np.float16))
    outb = empty((7,), "bfloat16")
    C.copy(outb, tensor(a))
    got = outb.numpy()
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == -np.inf
    # float16 -> float32 exact for all half values (incl. subnormals)
    allh = np.arange(65536, dtype=np.uint16).view(np.float16)
    o32 = empty((65536,), "float32")
    C.copy(o32, tensor(allh))
    np.testing.assert_array_equal(o32.numpy().view(np.uint32)[~np.isnan(allh)],
                                  allh.astype(np.float32).view(np.uint32)[~np.isnan(allh)])
    assert np.isnan(o32.numpy()[np.isnan(allh)]).all()
    # float32 -> float16 rounding matches numpy (round to nearest even) on random bits
    bits = np.random.default_rng(5).integers(0, 2**32, size=200000, dtype=np.uint64).astype(np.uint32)
    f = bits.view(np.float32)
    o16 = empty(f.shape, "float16")
    C.copy(o16, tensor(f))
    with np.errstate(over="ignore"):
        want = f.astype(np.float16)
    ok = ~np.isnan(f)
    np.testing.assert_array_equal(o16.numpy().view(np.uint16)[ok], want.view(np.uint16)[ok])
    assert np.isnan(o16.numpy()[~ok]).all()
    # bf16 rounding
    ob = empty(f.shape, "bfloat16")
    C.copy(ob, tensor(f))
    np.testing.assert_array_equal(
        np.frombuffer(ob._storage, np.uint16)[ok], f32_to_bf16_bits(f)[ok])


@pytest.mark.parametrize("dt", ALL)
def test_fill(dt):
    out = empty((3, 4), dt)
    for v in [True, 0, 1, 7, -2, 2.5, -0.5]:
        if dt == "uint8" and isinstance(v, (int, float)) and v < 0:
            continue
        C.fill(out, v)
        got = out.numpy()
        if dt == "bool":
            want = bool(v)
        elif dt in INTS:
            want = int(v)
        else:
            want = float(v)
        assert (got == want).all(), (dt, v, got)
    # strided / 0-d
    big = empty((4, 6), dt)
    C.fill(big, 0)
    C.fill(FT(big._storage, (4, 3), (6, 2), 1, big.dtype), 1)
    g = big.numpy()
    assert (g[:, 1::2] == 1).all() and (g[:, 0::2] == 0).all()
    z = empty((), dt)
    C.fill(z, 1)
    assert z.numpy() == 1


@pytest.mark.parametrize("dt", NUMERIC)
def test_arange(dt):
    out = empty((10,), dt)
    C.arange(out, 2, 3)
    np.testing.assert_array_equal(out.numpy(), np.arange(2, 32, 3).astype(out.numpy().dtype))
    if dt in FLOATS:
        C.arange(out, 0.5, 0.25)
        assert_close(out.numpy(), 0.5 + 0.25 * np.arange(10), dt)
    big = empty((20,), dt)
    C.fill(big, 0)
    C.arange(FT(big._storage, (10,), (2,), 0, big.dtype), 0, 1)
    np.testing.assert_array_equal(big.numpy()[::2], np.arange(10))
    assert (big.numpy()[1::2] == 0).all()


# ------------------------------------------------------------------------------------------------
# random
def philox_ref(ctr, seed):
    M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    c = [ctr & 0xFFFFFFFF, (ctr >> 32) & 0xFFFFFFFF, 0, 0]
    k = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF]
    for r in range(10):
        if r:
            k = [(k[0] + W0) & 0xFFFFFFFF, (k[1] + W1) & 0xFFFFFFFF]
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1], p0 & 0xFFFFFFFF]
    return c


def test_philox_known_answer():
    # Random123 known-answer test: philox4x32-10, ctr = 0, key = 0
    assert philox_ref(0, 0) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    out = empty((1,), "float64")
    C.uniform(out, 0.0, 1.0, 0, 0)
    w = philox_ref(0, 0)
    assert out.numpy()[0] == (((w[0] << 32) | w[1]) >> 11) * 2.0 ** -53


@pytest.mark.parametrize("dt", FLOATS)
def test_uniform_normal(dt):
    seed, off = 123456789012345, 77
    out = empty((7, 9), dt)
    C.uniform(out, -2.0, 3.0, seed, off)
    got = out.numpy().ravel()
    want = []
    for i in range(63):
        w = philox_ref(off + i, seed)
        u = {"float64": (((w[0] << 32) | w[1]) >> 11) * 2.0 ** -53, "float32": (w[0] >> 8) * 2.0 ** -24,
             "float16": (w[0] >> 21) * 2.0 ** -11, "bfloat16": (w[0] >> 24) * 2.0 ** -8}[dt]
        want.append(-2.0 + u * 5.0)
    assert_close(got, ref(np.array(want), dt), dt, rtol=0, atol=0)
    C.normal(out, 1.0, 2.0, seed, off)
    got = out.numpy().ravel()
    want = []
    for i in range(63):
        w = philox_ref(off + i, seed)
        u1, u2 = (w[0] + 1.0) * 2.0 ** -32, w[1] * 2.0 ** -32
        want.append(1.0 + 2.0 * math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2))
    assert_close(got, ref(np.array(want), dt), dt, rtol=1e-15 if dt == "float64" else 0, atol=1e-15)


@pytest.mark.parametrize("dt", FLOATS)
def test_uniform_below_one(dt):
    out = empty((200000,), dt)
    C.uniform(out, 0.0, 1.0, 5, 0)
    u = out.numpy()
    assert u.min() >= 0 and u.max() < 1


def test_random_stats_and_strided():
    n = 1 << 20
    out = empty((n,), "float32")
    C.uniform(out, 0.0, 1.0, 1, 0)
    u = out.numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 2e-3
    C.normal(out, 0.0, 1.0, 2, 0)
    z = out.numpy()
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 5e-3
    # non-contiguous output: element i in row-major order of out uses counter offset + i
    base = empty((4, 5), "float64")
    C.uniform(base, 0.0, 1.0, 9, 0)
    tgt = empty((5, 4), "float64")
    C.uniform(tgt.t(0, 1), 0.0, 1.0, 9, 0)
    np.testing.assert_array_equal(tgt.numpy().T, base.numpy())


def test_random_rejects_ints():
    with pytest.raises(TypeError, match="uniform"):
        C.uniform(empty((3,), "int32"), 0.0, 1.0, 0, 0)


# ------------------------------------------------------------------------------------------------
# unary
UNARY_FLOAT = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "sqrt": np.sqrt,
    "erf": np.vectorize(math.erf), "floor": np.floor, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "reciprocal": lambda x: 1 / x,
    "rsqrt": lambda x: 1 / np.sqrt(x), "log1p": np.log1p, "expm1": np.expm1, "tan": np.tan,
    "ceil": np.ceil, "trunc": np.trunc, "round": np.round, "log2": np.log2,
}
POSITIVE = {"log", "sqrt", "rsqrt", "log1p", "log2", "reciprocal"}


@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
@pytest.mark.parametrize("dt", FLOATS)
def test_unary_float(op, dt, rng):
    shape = (5, 7)
    low = 0.1 if op in POSITIVE else -3
    a = rand(shape, dt, rng, low, 3)
    if op == "round":
        a = ref(np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5]] * 5), dt)
    for name, mk in layouts(shape):
        x = mk(a, dt)
        out = empty(shape, dt)
        getattr(C, op)(out, x)
        xv = logical(a, name).astype(np.float64)
        want = UNARY_FLOAT[op](xv)
        assert_close(out.numpy(), ref(want, dt), dt, rtol=max(tol(dt), 1e-6) * 4,
                     atol=max(tol(dt), 1e-6) * 4)


def test_unary_float_rejects_int():
    with pytest.raises(TypeError, match=r"exp\(\): not implemented for dtype int64 on cpu"):
        C.exp(empty((3,), "int64"), tensor(np.arange(3)))


def test_unary_inplace_0d_empty():
    a = tensor(np.array([0.0, 1.0, 2.0]))
    C.exp(a, a)
    np.testing.assert_allclose(a.numpy(), np.exp([0.0, 1.0, 2.0]))
    z = tensor(np.array(2.0))
    out = empty((), "float64")
    C.sqrt(out, z)
    assert out.numpy() == math.sqrt(2)
    e = empty((0, 3), "float32")
    C.exp(e, empty((0, 3), "float32"))


@pytest.mark.parametrize("dt", NUMERIC)
def test_neg_abs_sign(dt, rng):
    a = rand((4, 6), dt, rng, -5, 5)
    if dt in FLOATS:
        a = a.copy()
        a.ravel()[0] = 0.0
    x = tensor(a, dt)
    for op, fn in [("neg", np.negative), ("abs", np.abs), ("sign", np.sign)]:
        out = empty((4, 6), dt)
        getattr(C, op)(out, x)
        want = fn(x.numpy())
        assert_close(out.numpy(), want, dt)
    if dt in ("int8", "int64"):
        info = np.iinfo(DTYPES[dt].np)
        x = tensor(np.array([info.min, info.max], DTYPES[dt].np))
        out = empty((2,), dt)
        C.neg(out, x)
        np.testing.assert_array_equal(out.numpy(), [info.min, -info.max])


def test_sign_nan_and_rounding_ints():
    out = empty((3,), "float32")
    C.sign(out, tensor(np.array([np.nan, -0.0, 3.0], np.float32)))
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 1.0])
    o = empty((3,), "int32")
    C.floor(o, tensor(np.array([1, -2, 3], np.int32)))
    np.testing.assert_array_equal(o.numpy(), [1, -2, 3])


@pytest.mark.parametrize("dt", ["bool"] + INTS)
def test_bitwise_not(dt, rng):
    a = rand((3, 4), dt, rng, -50, 50)
    out = empty((3, 4), dt)
    C.bitwise_not(out, tensor(a, dt))
    np.testing.assert_array_equal(out.numpy(), ~a if dt != "bool" else ~a)
    with pytest.raises(TypeError):
        C.bitwise_not(empty((2,), "float32"), tensor(np.ones(2, np.float32)))


# ------------------------------------------------------------------------------------------------
# binary
def np_binary(op, a, b, dt):
    if dt in FLOATS:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all="ignore"):
            return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
                    "fmod": np.fmod}[op](a64, b64)
    if dt == "bool":
        return {"add": np.logical_or, "mul": np.logical_and, "maximum": np.logical_or,
                "minimum": np.logical_and}[op](a, b)
    w = a.astype(np.int64), b.astype(np.int64)
    with np.errstate(all="ignore"):
        r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
             "minimum": np.minimum, "fmod": np.fmod, "pow": np.power}[op](*w)
    return r.astype(DTYPES[dt].np)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod"])
@pytest.mark.parametrize("dt", ALL)
def test_binary(op, dt, rng):
    shape = (6, 5)
    if dt == "bool" and op in ("sub", "div", "pow", "fmod"):
        with pytest.raises(TypeError):
            getattr(C, op)(empty(shape, dt), tensor(rand(shape, dt, rng), dt),
                           tensor(rand(shape, dt, rng), dt))
        return
    if op == "div" and dt not in FLOATS:
        with pytest.raises(TypeError, match="div"):
            C.div(empty(shape, dt), tensor(rand(shape, dt, rng), dt), tensor(rand(shape, dt, rng), dt))
        return
    a = rand(shape, dt, rng, -4, 4)
    b = rand(shape, dt, rng, -4, 4)
    if op in ("fmod", "div") or (op == "pow" and dt in INTS):
        if dt in INTS:
            b = np.where(b == 0, 3, b).astype(b.dtype)
            if op == "pow":
                b = np.abs(b).astype(b.dtype) % 4
        else:
            b = ref(np.where(np.abs(b) < 0.25, 1.5, b), dt)
    if op == "pow" and dt in FLOATS:
        a = ref(np.abs(a) + 0.1, dt)
    for la, mka in layouts(shape):
        for lb, mkb in [("contig", lambda v, d: tensor(v, d)), ("scalar", None)]:
            x = mka(a, dt)
            if lb == "scalar":
                y = tensor(b[:1, :1], dt).expand(shape)
                bv = np.broadcast_to(b[:1, :1], shape)
            else:
                y = mkb(b, dt)
                bv = b
            out = empty(shape, dt)
            getattr(C, op)(out, x, y)
            av = logical(a, la)
            want = np_binary(op, av, bv, dt)
            assert_close(out.numpy(), ref(want, dt) if dt in FLOATS else want, dt,
                         rtol=tol(dt) * 4, atol=tol(dt) * 4)


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint8"])
def test_int_wraparound(dt):
    info = np.iinfo(DTYPES[dt].np)
    a = tensor(np.array([info.max, info.min, info.max], DTYPES[dt].np))
    b = tensor(np.array([1, 1, 2], DTYPES[dt].np))
    out = empty((3,), dt)
    C.add(out, a, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), a.numpy() + b.numpy())
    C.mul(out, a, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), a.numpy() * b.numpy())
    C.sub(out, b, a)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), b.numpy() - a.numpy())


@pytest.mark.parametrize("dt", INTS + FLOATS)
@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding(dt, mode, rng):
    a = rand((50,), dt, rng, -20, 20)
    b = rand((50,), dt, rng, -6, 6)
    if dt in INTS:
        b = np.where(b == 0, 3, b).astype(b.dtype)
    else:
        b = ref(np.where(np.abs(b) < 0.5, 1.75, b), dt)
    out = empty((50,), dt)
    C.div(out, tensor(a, dt), tensor(b, dt), rounding_mode=mode)
    av, bv = tensor(a, dt).numpy().astype(np.float64), tensor(b, dt).numpy().astype(np.float64)
    q = av / bv
    want = np.trunc(q) if mode == "trunc" else np.floor(q)
    if dt in INTS:
        ai, bi = a.astype(np.int64), b.astype(np.int64)
        want = (np.sign(ai) * np.sign(bi) * (np.abs(ai) // np.abs(bi))) if mode == "trunc" else ai // bi
    assert_close(out.numpy(), ref(want, dt) if dt in FLOATS else want, dt, rtol=tol(dt) * 2,
                 atol=tol(dt) * 2)


def test_div_floor_special():
    out = empty((4,), "float64")
    C.div(out, tensor(np.array([1.0, -1.0, 0.0, 5.0])), tensor(np.array([0.0, 0.0, -3.0, -2.5])),
          rounding_mode="floor")
    g = out.numpy()
    assert g[0] == np.inf and g[1] == -np.inf and g[2] == 0 and math.copysign(1, g[2]) == -1
    assert g[3] == -2
    out = empty((1,), "int64")
    i64 = np.iinfo(np.int64)
    C.div(out, tensor(np.array([i64.min])), tensor(np.array([-1])), rounding_mode="trunc")
    assert out.numpy()[0] == i64.min  # wraps, no SIGFPE
    C.fmod(out, tensor(np.array([i64.min])), tensor(np.array([-1])))
    assert out.numpy()[0] == 0
    with pytest.raises(ValueError):
        C.div(out, tensor(np.array([1])), tensor(np.array([1])), rounding_mode="round")


@pytest.mark.parametrize("dt", INTS)
def test_int_zero_division(dt):
    a = tensor(np.array([1, 2, 3], DTYPES[dt].np))
    b = tensor(np.array([1, 0, 1], DTYPES[dt].np))
    out = empty((3,), dt)
    C.fill(out, 5)
    for mode in ("trunc", "floor"):
        with pytest.raises(RuntimeError, match=r"div\(\): ZeroDivisionError"):
            C.div(out, a, b, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        C.fmod(out, a, b)
    assert (out.numpy() == 5).all()  # untouched


def test_int_pow():
    a = tensor(np.array([2, -3, 0, 7], np.int64))
    b = tensor(np.array([10, 3, 0, 20], np.int64))
    out = empty((4,), "int64")
    C.pow(out, a, b)
    np.testing.assert_array_equal(out.numpy(), [1024, -27, 1, 7 ** 20])
    # a negative exponent computes as PyTorch's integer pow: 1 / a truncated (1, +-1 or 0)
    C.pow(out, tensor(np.array([2, -1, 1, -1], np.int64)), tensor(np.array([-1, -3, -2, -2],
                                                                            np.int64)))
    np.testing.assert_array_equal(out.numpy(), [0, -1, 1, 1])


def test_maximum_nan():
    a = tensor(np.array([np.nan, 1.0, 2.0], np.float32))
    b = tensor(np.array([0.0, np.nan, 1.0], np.float32))
    out = empty((3,), "float32")
    C.maximum(out, a, b)
    g = out.numpy()
    assert np.isnan(g[0]) and np.isnan(g[1]) and g[2] == 2
    C.minimum(out, a, b)
    g = out.numpy()
    assert np.isnan(g[0]) and np.isnan(g[1]) and g[2] == 1


def test_binary_inplace_and_0d():
    a = tensor(np.arange(6.0).reshape(2, 3))
    C.add(a, a, a)
    np.testing.assert_array_equal(a.numpy(), 2 * np.arange(6.0).reshape(2, 3))
    # in-place on a transposed view
    at = a.t(0, 1)
    C.mul(at, at, tensor(np.full((3, 2), 2.0)))
    np.testing.assert_array_equal(a.numpy(), 4 * np.arange(6.0).reshape(2, 3))
    z = empty((), "int32")
    C.add(z, tensor(np.array(2, np.int32)), tensor(np.array(3, np.int32)))
    assert z.numpy() == 5
    C.add(empty((0,), "float32"), empty((0,), "float32"), empty((0,), "float32"))


def test_binary_dtype_mismatch():
    with pytest.raises(TypeError):
        C.add(empty((2,), "float32"), tensor(np.ones(2, np.float32)), tensor(np.ones(2)))


def test_binary_large_parallel(rng):
    a = rng.standard_normal((513, 700)).astype(np.float32)
    b = rng.standard_normal((700,)).astype(np.float32)
    x = tensor(a)
    y = tensor(b[None, :]).expand((513, 700))
    out = empty((513, 700), "float32")
    C.add(out, x, y)
    np.testing.assert_array_equal(out.numpy(), a + b)
    C.sub(out, x.t(0, 1).t(0, 1), tensor(a))
    assert (out.numpy() == 0).all()


# ------------------------------------------------------------------------------------------------
# comparisons / logical / bitwise / where
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dt", ALL)
def test_compare(op, dt, rng):
    shape = (5, 6)
    a = rand(shape, dt, rng, -2, 2)
    b = rand(shape, dt, rng, -2, 2)
    if dt in FLOATS:
        a = a.copy()
        a.ravel()[:3] = np.nan
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}[op]
    for la, mk in layouts(shape):
        out = empty(shape, "bool")
        x = mk(a, dt)
        getattr(C, op)(out, x, tensor(b, dt))
        np.testing.assert_array_equal(out.numpy(), fn(x.numpy(), tensor(b, dt).numpy()))


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical(op, rng):
    a, b = rand((4, 5), "bool", rng), rand((4, 5), "bool", rng)
    out = empty((4, 5), "bool")
    getattr(C, op)(out, tensor(a), tensor(b))
    np.testing.assert_array_equal(out.numpy(), getattr(np, op)(a, b))


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("dt", ["bool"] + INTS)
def test_bitwise(op, dt, rng):
    a, b = rand((4, 5), dt, rng, -50, 50), rand((4, 5), dt, rng, -50, 50)
    out = empty((4, 5), dt)
    getattr(C, op)(out, tensor(a, dt), tensor(b, dt))
    np.testing.assert_array_equal(out.numpy(), getattr(np, op)(a, b))


def test_bitwise_rejects_float():
    with pytest.raises(TypeError):
        C.bitwise_and(empty((2,), "float32"), tensor(np.ones(2, np.float32)),
                      tensor(np.ones(2, np.float32)))


@pytest.mark.parametrize("dt", ALL)
def test_where(dt, rng):
    shape = (4, 7)
    c = rand(shape, "bool", rng)
    a, b = rand(shape, dt, rng), rand(shape, dt, rng)
    out = empty(shape, dt)
    C.where(out, tensor(c), tensor(a, dt), tensor(b[:1], dt).expand(shape))
    np.testing.assert_array_equal(out.numpy(),
                                  np.where(c, tensor(a, dt).numpy(),
                                           np.broadcast_to(tensor(b[:1], dt).numpy(), shape)))


# ------------------------------------------------------------------------------------------------
# reductions
RED_CASES = [((5, 7), (1,)), ((5, 7), (0,)), ((5, 7), (0, 1)), ((3, 4, 5), (0, 2)), ((3, 4, 5), (1,)),
             ((3, 4, 5), (0, 1)), ((3, 4, 5), (1, 2)), ((6,), (0,)), ((), ()), ((2, 1, 3), (1,))]


def keep_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


@pytest.mark.parametrize("shape,dims", RED_CASES)
@pytest.mark.parametrize("dt", ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
                                "float64"])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean"])
def test_reductions(op, dt, shape, dims, rng):
    if op == "mean" and dt not in FLOATS:
        with pytest.raises(TypeError):
            C.mean(empty(keep_shape(shape, dims), dt), tensor(rand(shape, dt, rng), dt), dims)
        return
    a = rand(shape, dt, rng, -2, 2)
    for la, mk in layouts(shape):
        x = mk(a, dt)
        xv = x.numpy()
        out_dt = dt
        if op in ("sum", "prod") and dt in ["bool"] + INTS:
            out_dt = "int64"
        out = empty(keep_shape(shape, dims), out_dt)
        getattr(C, op)(out, x, dims)
        calc = xv.astype(np.float64) if dt in FLOATS else xv.astype(np.int64)
        fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}[op]
        want = fn(calc, axis=tuple(dims), keepdims=True) if len(shape) else fn(calc)
        if dt == "bool" and op in ("max", "min"):
            want = want.astype(bool)
        assert_close(out.numpy(), ref(want, out_dt) if out_dt in FLOATS else want, out_dt,
                     rtol=tol(out_dt) * 8, atol=tol(out_dt) * 8)


def test_reduce_out_without_kept_dims_and_big(rng):
    a = rng.standard_normal((40, 3000)).astype(np.float32)
    x = tensor(a)
    out = empty((40,), "float32")
    C.sum(out, x, (1,))
    np.testing.assert_allclose(out.numpy(), a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    out = empty((1, 3000), "float32")
    C.sum(out, x, (0,))
    np.testing.assert_allclose(out.numpy()[0], a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)
    out = empty((3000, 1), "float32")
    C.max(out, x.t(0, 1), (1,))
    np.testing.assert_array_equal(out.numpy()[:, 0], a.max(0))
    out = empty((1, 1), "float32")
    C.sum(out, x.t(0, 1), (0, 1))
    np.testing.assert_allclose(out.numpy()[0, 0], a.astype(np.float64).sum(), rtol=1e-5)
    # non-contiguous generic path (every other column)
    sl = FT(x._storage, (40, 1500), (3000, 2), 0, x.dtype)
    out = empty((40, 1), "float32")
    C.sum(out, sl, (1,))
    np.testing.assert_allclose(out.numpy()[:, 0], a[:, ::2].astype(np.float64).sum(1), rtol=1e-5,
                               atol=1e-4)


def test_sum_precision_full_reduction():
    rng = np.random.default_rng(7)
    a = (rng.random(1 << 24, dtype=np.float32) + 0.5).astype(np.float32)
    out = empty((1,), "float32")
    C.sum(out, tensor(a), (0,))
    exact = a.astype(np.float64).sum()
    assert abs(float(out.numpy()[0]) - exact) / exact < 1e-5
    out64 = empty((1,), "float64")
    C.sum(out64, tensor(a), (0,))
    assert abs(float(out64.numpy()[0]) - exact) / exact < 1e-9


def test_sum_thread_independent():
    a = np.random.default_rng(3).standard_normal(1 << 20).astype(np.float32)
    x = tensor(a)
    n = C.get_num_threads()
    res = []
    for t in (1, 2, 3):
        C.set_num_threads(t)
        out = empty((1,), "float32")
        C.sum(out, x, (0,))
        res.append(out.numpy()[0])
    C.set_num_threads(n)
    assert res[0] == res[1] == res[2]


def test_max_nan_and_empty():
    a = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32)
    out = empty((2, 1), "float32")
    C.max(out, tensor(a), (1,))
    g = out.numpy()
    assert np.isnan(g[0, 0]) and g[1, 0] == 3
    C.min(out, tensor(a), (1,))
    assert np.isnan(out.numpy()[0, 0])
    with pytest.raises(RuntimeError):
        C.max(empty((1, 3), "float32"), empty((0, 3), "float32"), (0,))
    s = empty((1, 3), "float32")
    C.sum(s, empty((0, 3), "float32"), (0,))
    assert (s.numpy() == 0).all()
    p = empty((1, 3), "int64")
    C.prod(p, empty((0, 3), "int64"), (0,))
    assert (p.numpy() == 1).all()


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dt", ["bool", "uint8", "int16", "int64", "float16", "bfloat16", "float32",
                                "float64"])
def test_argmax_argmin(op, dt, rng):
    shape = (6, 9)
    a = rand(shape, dt, rng, -3, 3)
    for la, mk in layouts(shape):
        x = mk(a, dt)
        xv = x.numpy()
        for dim in (0, 1):
            out = empty(keep_shape(shape, (dim,)), "int64")
            getattr(C, op)(out, x, dim)
            want = getattr(np, op)(xv, axis=dim)
            np.testing.assert_array_equal(out.numpy().reshape(want.shape), want)


def test_argmax_nan_first():
    a = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    out = empty((1,), "int64")
    C.argmax(out, tensor(a), 0)
    assert out.numpy()[0] == 1
    C.argmin(out, tensor(a), 0)
    assert out.numpy()[0] == 1
    C.argmax(out, tensor(np.array([3, 7, 7, 1])), 0)
    assert out.numpy()[0] == 1
    o0 = empty((), "int64")
    C.argmax(o0, tensor(np.array(4.0)), 0)
    assert o0.numpy() == 0


# ------------------------------------------------------------------------------------------------
# scans, softmax
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dt", ["uint8", "int32", "int64", "float16", "bfloat16", "float32",
                                "float64"])
def test_cumulative(op, dt, rng):
    shape = (4, 5, 6)
    a = rand(shape, dt, rng, -2, 2)
    if op == "cumprod" and dt in FLOATS:
        a = ref(np.where(np.abs(a) < 0.5, 1.1, a), dt)
    for la, mk in layouts(shape):
        x = mk(a, dt)
        xv = x.numpy()
        for dim in range(3):
            out = empty(shape, dt)
            getattr(C, op)(out, x, dim)
            calc = xv.astype(np.float64) if dt in FLOATS else xv.astype(np.int64)
            want = getattr(np, op)(calc, axis=dim)
            if dt in FLOATS:
                assert_close(out.numpy(), ref(want, dt), dt, rtol=tol(dt) * 4, atol=tol(dt) * 8)
            else:
                np.testing.assert_array_equal(out.numpy(), want.astype(DTYPES[dt].np))


def np_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax(op, dt, rng):
    shape = (3, 4, 5)
    a = rand(shape, dt, rng, -5, 5)
    for la, mk in layouts(shape):
        x = mk(a, dt)
        xv = x.numpy().astype(np.float64)
        for dim in range(3):
            out = empty(shape, dt)
            getattr(C, op)(out, x, dim)
            want = np_softmax(xv, dim)
            if op == "log_softmax":
                want = np.log(want)
            assert_close(out.numpy(), ref(want, dt), dt, rtol=tol(dt) * 8, atol=tol(dt) * 8)
    # large values stay finite
    big = tensor(np.array([1000.0, 1001.0, 1002.0], np.float32))
    out = empty((3,), "float32")
    C.softmax(out, big, 0)
    np.testing.assert_allclose(out.numpy(), np_softmax(np.array([0.0, 1, 2]), 0), rtol=1e-5)


@pytest.mark.parametrize("dt", FLOATS)
def test_logsumexp(dt, rng):
    shape = (3, 4, 5)
    a = rand(shape, dt, rng, -5, 5)
    for dims in [(0,), (2,), (0, 2), (0, 1, 2)]:
        for la, mk in layouts(shape):
            x = mk(a, dt)
            xv = x.numpy().astype(np.float64)
            out = empty(keep_shape(shape, dims), dt)
            C.logsumexp(out, x, dims)
            m = xv.max(axis=dims, keepdims=True)
            want = m + np.log(np.exp(xv - m).sum(axis=dims, keepdims=True))
            assert_close(out.numpy(), ref(want, dt), dt, rtol=tol(dt) * 8, atol=tol(dt) * 8)
    out = empty((1,), "float32")
    C.logsumexp(out, tensor(np.array([-np.inf, -np.inf], np.float32)), (0,))
    assert out.numpy()[0] == -np.inf


# ------------------------------------------------------------------------------------------------
# indexing
@pytest.mark.parametrize("dt", ["bool", "int8", "int64", "float16", "float32", "float64"])
def test_gather(dt, rng):
    x = rand((4, 5, 6), dt, rng)
    for dim in range(3):
        ishape = [3, 4, 5]
        ishape[dim] = 7
        idx = rng.integers(0, x.shape[dim], size=ishape)
        out = empty(tuple(ishape), dt)
        C.gather(out, tensor(x, dt), dim, tensor(idx))
        sl = tuple(slice(0, s) if d != dim else slice(None) for d, s in enumerate(ishape))
        want = np.take_along_axis(tensor(x, dt).numpy()[sl], idx, axis=dim)
        np.testing.assert_array_equal(out.numpy(), want)
    # transposed input and index
    xt = tensor(np.ascontiguousarray(x.swapaxes(0, 1)), dt).t(0, 1)
    idx = rng.integers(0, 5, size=(4, 6, 6))
    it = tensor(np.ascontiguousarray(idx.swapaxes(0, 2))).t(0, 2)
    out = empty((4, 6, 6), dt)
    C.gather(out, xt, 1, it)
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(xt.numpy(), idx, axis=1))


def test_gather_bounds():
    x = tensor(np.arange(3.0))
    out = empty((2,), "float64")
    C.fill(out, 9)
    with pytest.raises(IndexError,
                       match=r"gather\(\): index 5 is out of bounds for dimension 0 with size 3"):
        C.gather(out, x, 0, tensor(np.array([0, 5])))
    with pytest.raises(IndexError, match="index -1"):
        C.gather(out, x, 0, tensor(np.array([-1, 0])))
    assert (out.numpy() == 9).all()
    with pytest.raises(TypeError):
        C.gather(out, x, 0, tensor(np.array([0, 1], np.int32)))
    # 0-d and empty
    o0 = empty((), "float64")
    C.gather(o0, tensor(np.array(7.0)), 0, tensor(np.array(0)))
    assert o0.numpy() == 7
    C.gather(empty((0,), "float64"), x, 0, empty((0,), "int64"))


@pytest.mark.parametrize("dt", ["bool", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("reduce", [None, "add"])
def test_scatter(dt, reduce, rng):
    for dim in range(2):
        base = rand((5, 6), dt, rng)
        ishape = (4, 3) if dim == 0 else (3, 4)
        src = rand((5, 6), dt, rng)
        # unique indices along dim per position (so None is order-independent)...
        idx = np.stack([rng.permutation(5 if dim == 0 else 6)[:ishape[dim]]
                        for _ in range(ishape[1 - dim])], axis=1 - dim)
        out = tensor(base, dt)
        C.scatter(out, dim, tensor(idx), tensor(src, dt), reduce=reduce)
        want = tensor(base, dt).numpy().copy()
        sv = tensor(src, dt).numpy()
        for i in range(ishape[0]):
            for j in range(ishape[1]):
                pos = (idx[i, j], j) if dim == 0 else (i, idx[i, j])
                if reduce is None:
                    want[pos] = sv[i, j]
                elif dt == "bool":
                    want[pos] = want[pos] or sv[i, j]
                else:
                    want[pos] = want[pos] + sv[i, j]
        assert_close(out.numpy(), ref(want, dt) if dt in FLOATS else want, dt)


def test_scatter_duplicates_deterministic():
    out = tensor(np.zeros(3))
    C.scatter(out, 0, tensor(np.array([1, 1, 1, 2])), tensor(np.array([1.0, 2.0, 3.0, 4.0])))
    np.testing.assert_array_equal(out.numpy(), [0, 3, 4])  # last write wins
    C.scatter(out, 0, tensor(np.array([0, 0, 0])), tensor(np.array([1.0, 2.0, 3.0])), reduce="add")
    np.testing.assert_array_equal(out.numpy(), [6, 3, 4])
    big = tensor(np.zeros((2, 100000)))
    idx = tensor(np.zeros((2, 100000), np.int64))
    C.scatter(big, 1, idx, tensor(np.ones((2, 100000))), reduce="add")
    assert big.numpy()[0, 0] == 100000 and big.numpy()[1, 0] == 100000


def test_scatter_bounds():
    out = tensor(np.zeros(3))
    with pytest.raises(IndexError, match=r"scatter\(\): index 3 is out of bounds for dimension 0"):
        C.scatter(out, 0, tensor(np.array([0, 3])), tensor(np.array([1.0, 2.0])))
    assert (out.numpy() == 0).all()


@pytest.mark.parametrize("dt", ["bool", "int32", "float16", "float32"])
def test_nonzero(dt, rng):
    for shape in [(4, 5), (3, 4, 5), (7,), ()]:
        a = rand(shape, dt, rng, -1, 1)
        x = tensor(a, dt)
        xv = x.numpy()
        nz = np.argwhere(xv) if shape else np.zeros((int(xv != 0), 0), np.int64)
        out = empty((len(nz), len(shape)), "int64")
        C.nonzero(out, x)
        np.testing.assert_array_equal(out.numpy(), nz)
        if len(shape) >= 2:
            xt = tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1)), dt).t(0, 1)
            out = empty((len(nz), len(shape)), "int64")
            C.nonzero(out, xt)
            np.testing.assert_array_equal(out.numpy(), nz)
    with pytest.raises(RuntimeError):
        C.nonzero(empty((1, 1), "int64"), tensor(np.array([1, 1])))
    big = np.zeros(300000, np.float32)
    big[::7] = 1
    out = empty((int(big.sum()), 1), "int64")
    C.nonzero(out, tensor(big))
    np.testing.assert_array_equal(out.numpy()[:, 0], np.flatnonzero(big))


# ------------------------------------------------------------------------------------------------
# sort
@pytest.mark.parametrize("dt", ["bool", "uint8", "int16", "int64", "float16", "bfloat16", "float32",
                                "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(dt, descending, rng):
    shape = (5, 8)
    a = rand(shape, dt, rng, -3, 3)  # many ties
    for la, mk in layouts(shape):
        x = mk(a, dt)
        xv = x.numpy()
        for dim in (0, 1):
            vals, idx = empty(shape, dt), empty(shape, "int64")
            C.sort(vals, idx, x, dim, descending=descending, stable=True)
            key = -xv.astype(np.float64) if descending else xv
            if dt == "bool" and descending:
                key = ~xv
            want_idx = np.argsort(key, axis=dim, kind="stable")
            np.testing.assert_array_equal(idx.numpy(), want_idx)
            np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(xv, want_idx, axis=dim))


def test_sort_nan():
    a = np.array([3.0, np.nan, 1.0, np.nan, 2.0], np.float32)
    v, i = empty((5,), "float32"), empty((5,), "int64")
    C.sort(v, i, tensor(a), 0, descending=False, stable=True)
    np.testing.assert_array_equal(i.numpy(), [2, 4, 0, 1, 3])
    C.sort(v, i, tensor(a), 0, descending=True, stable=True)
    np.testing.assert_array_equal(i.numpy(), [1, 3, 0, 4, 2])
    x = tensor(a)  # in place
    C.sort(x, i, x, 0, descending=False, stable=True)
    np.testing.assert_array_equal(x.numpy()[:3], [1, 2, 3])


# ------------------------------------------------------------------------------------------------
# bmm
def _load_blas():
    try:
        import scipy_openblas32
    except ImportError:
        return False
    C.load_blas(os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(True)))
    return True


@pytest.mark.parametrize("dt", ["int32", "int64", "float16", "bfloat16", "float32", "float64"])
def test_bmm(dt, rng):
    has_blas = _load_blas()
    B, n, k, m = 3, 4, 5, 6
    a = rand((B, n, k), dt, rng, -3, 3)
    b = rand((B, k, m), dt, rng, -3, 3)
    variants = []
    ta, tb = tensor(a, dt), tensor(b, dt)
    variants.append((ta, tb))
    at = tensor(np.ascontiguousarray(a.swapaxes(1, 2)), dt).t(1, 2)
    bt = tensor(np.ascontiguousarray(b.swapaxes(1, 2)), dt).t(1, 2)
    variants.append((at, bt))
    # neither last stride is 1 -> copied
    a_odd = tensor(np.ascontiguousarray(a.transpose(1, 0, 2)), dt)
    a_odd = FT(a_odd._storage, (B, n, k), (k, B * k, 1), 0, a_odd.dtype)
    variants.append((a_odd, tb.expand((B, k, m))))
    b_bc = tensor(b[:1], dt).expand((B, k, m))
    variants.append((ta, b_bc))
    for x, y in variants:
        out = empty((B, n, m), dt)
        C.bmm(out, x, y)
        xv, yv = x.numpy().astype(np.float64), y.numpy().astype(np.float64)
        want = xv @ yv
        assert_close(out.numpy(), ref(want, dt) if dt in FLOATS else want.astype(np.int64), dt,
                     rtol=tol(dt) * 16, atol=tol(dt) * 16)
    # transposed output
    out = empty((B, m, n), dt).t(1, 2)
    C.bmm(out, ta, tb)
    assert_close(out.numpy(), ref(ta.numpy().astype(np.float64) @ tb.numpy().astype(np.float64), dt)
                 if dt in FLOATS else a.astype(np.int64) @ b.astype(np.int64), dt,
                 rtol=tol(dt) * 16, atol=tol(dt) * 16)
    # k == 0 -> zeros; empty batch
    out = empty((2, 3, 4), dt)
    C.bmm(out, empty((2, 3, 0), dt), empty((2, 0, 4), dt))
    assert (out.numpy() == 0).all()
    C.bmm(empty((0, 3, 4), dt), empty((0, 3, 2), dt), empty((0, 2, 4), dt))
    assert has_blas or dt not in ("float32", "float64")


def test_bmm_large_sgemm(rng):
    _load_blas()
    a = rng.standard_normal((1, 300, 200)).astype(np.float32)
    b = rng.standard_normal((1, 200, 100)).astype(np.float32)
    out = empty((1, 300, 100), "float32")
    C.bmm(out, tensor(a), tensor(b))
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    # many small matrices (batch spread over the pool)
    a = rng.standard_normal((64, 8, 9))
    b = rng.standard_normal((64, 9, 7))
    out = empty((64, 8, 7), "float64")
    C.bmm(out, tensor(a), tensor(b))
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)
    with pytest.raises(ValueError):
        C.bmm(empty((1, 2, 2), "float32"), empty((1, 2, 3), "float32"), empty((1, 2, 2), "float32"))


def test_load_blas_bad_path():
    with pytest.raises(OSError):
        C.load_blas("/nonexistent/libnothing.so")


# ------------------------------------------------------------------------------------------------
# extra native composites
@pytest.mark.parametrize("dt", ALL)
def test_classify_and_logical_not(dt, rng):
    a = rand((3, 5), dt, rng, -2, 2)
    if dt in FLOATS:
        a = a.copy()
        a.ravel()[:4] = [np.nan, np.inf, -np.inf, 0.0]
    x = tensor(a, dt)
    xv = x.numpy()
    for op, fn in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
        out = empty((3, 5), "bool")
        getattr(C, op)(out, x)
        want = fn(xv.astype(np.float64)) if dt != "bool" else fn(xv.astype(np.float64))
        np.testing.assert_array_equal(out.numpy(), want)
    # logical ops take bool operands (the dispatcher casts: promotion "logical")
    b = tensor(xv != 0, "bool")
    out = empty((3, 5), "bool")
    C.logical_not(out, b)
    np.testing.assert_array_equal(out.numpy(), xv == 0)


@pytest.mark.parametrize("dt", NUMERIC)
def test_remainder(dt, rng):
    a = rand((40,), dt, rng, -9, 9)
    b = rand((40,), dt, rng, -4, 4)
    if dt in INTS:
        b = np.where(b == 0, 3, b).astype(b.dtype)
    else:
        b = ref(np.where(np.abs(b) < 0.5, -1.25, b), dt)
    out = empty((40,), dt)
    C.remainder(out, tensor(a, dt), tensor(b, dt))
    av, bv = tensor(a, dt).numpy(), tensor(b, dt).numpy()
    want = np.remainder(av.astype(np.float64), bv.astype(np.float64)) if dt in FLOATS else \
        np.remainder(av.astype(np.int64), bv.astype(np.int64))
    assert_close(out.numpy(), ref(want, dt) if dt in FLOATS else want, dt, rtol=tol(dt) * 4,
                 atol=tol(dt) * 8)
    if dt in INTS:
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            C.remainder(out, tensor(a, dt), tensor(np.zeros(40, DTYPES[dt].np), dt))


@pytest.mark.parametrize("dt", FLOATS)
def test_lerp_addc(dt, rng):
    a, b, w = (rand((4, 6), dt, rng) for _ in range(3))
    w = ref(np.abs(w) / 3, dt)
    out = empty((4, 6), dt)
    C.lerp(out, tensor(a, dt), tensor(b, dt), tensor(w, dt))
    av, bv, wv = (tensor(v, dt).numpy().astype(np.float64) for v in (a, b, w))
    assert_close(out.numpy(), ref(av + wv * (bv - av), dt), dt, rtol=tol(dt) * 4, atol=tol(dt) * 8)
    C.addcmul(out, tensor(a, dt), tensor(b, dt), tensor(w, dt), value=0.5)
    assert_close(out.numpy(), ref(av + 0.5 * bv * wv, dt), dt, rtol=tol(dt) * 4, atol=tol(dt) * 8)
    wv2 = np.where(np.abs(wv) < 0.1, 1.0, wv)
    C.addcdiv(out, tensor(a, dt), tensor(b, dt), tensor(wv2, dt), value=2)
    assert_close(out.numpy(), ref(av + 2 * bv / tensor(wv2, dt).numpy().astype(np.float64), dt),
                 dt, rtol=tol(dt) * 8, atol=tol(dt) * 8)


def test_addc_ints():
    a = tensor(np.array([1, 2, 3], np.int32))
    out = empty((3,), "int32")
    C.addcmul(out, a, a, a, value=2)
    np.testing.assert_array_equal(out.numpy(), [3, 10, 21])
    with pytest.raises(TypeError):
        C.addcdiv(out, a, a, a)


@pytest.mark.parametrize("dt", NUMERIC)
def test_clamp(dt, rng):
    """clamp(out, x, lo, hi): the bounds are tensors broadcast to x (the dispatcher turns
    number bounds, and a missing one, into stride-0 scalars)."""
    a = rand((5, 6), dt, rng, -5, 5)
    x = tensor(a, dt)
    xv = x.numpy().astype(np.float64)
    out = empty((5, 6), dt)

    def bound(v):
        return tensor(np.array([[v]]).astype(a.dtype), dt).expand((5, 6))

    lo, hi = (0, 3) if dt == "uint8" else (-2, 3)
    C.clamp(out, x, bound(lo), bound(hi))
    assert_close(out.numpy(), np.clip(xv, lo, hi), dt)
    C.clamp(out, x, bound(4), bound(1))  # lo > hi -> hi
    assert (out.numpy() == 1).all()
    hi_t = tensor(np.full((5, 6), hi).astype(a.dtype), dt)
    C.clamp(out, x, bound(lo), hi_t)
    assert_close(out.numpy(), np.clip(xv, lo, hi), dt)
    if dt in FLOATS:
        C.clamp(out, tensor(np.full((5, 6), np.nan), dt), bound(lo), bound(hi))
        assert np.isnan(out.numpy()).all()
        C.clamp(out, x, bound(-np.inf), bound(np.inf))
        assert_close(out.numpy(), xv, dt)
        C.clamp(out, x, bound(np.nan), bound(hi))  # a NaN bound gives NaN
        assert np.isnan(out.numpy()).all()


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape,dims", [((5, 7), (1,)), ((5, 7), (0,)), ((5, 7), (0, 1)),
                                        ((3, 4, 5), (0, 2)), ((200000,), (0,))])
def test_var(dt, shape, dims, rng):
    a = rand(shape, dt, rng, -2, 2)
    for la, mk in layouts(shape):
        x = mk(a, dt)
        xv = x.numpy().astype(np.float64)
        for corr in (1, 0):
            out = empty(keep_shape(shape, dims), dt)
            C.var(out, x, dims, corr)
            want = np.var(xv, axis=dims, keepdims=True, ddof=corr)
            assert_close(out.numpy(), ref(want, dt), dt, rtol=tol(dt) * 8, atol=tol(dt) * 8)


@pytest.mark.parametrize("dt", ["bool", "int32", "float16", "float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_column_reductions_split(dt, op, rng):
    # few long columns: the reduced rows are split into blocks reduced in parallel
    shape = (70000, 3, 5)
    a = rand(shape, dt, rng, -2, 2)
    if op == "prod" and dt in FLOATS:
        a = ref(1 + (a.astype(np.float64) / 1e5), dt)
    x = tensor(a, dt)
    xv = x.numpy()
    for dims in [(0,), (0, 1)]:
        out_dt = "int64" if (op in ("sum", "prod") and dt in ("bool", "int32")) else dt
        out = empty(keep_shape(shape, dims), out_dt)
        getattr(C, op)(out, x, dims)
        calc = xv.astype(np.float64) if dt in FLOATS else xv.astype(np.int64)
        fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
        want = fn(calc, axis=dims, keepdims=True)
        if dt == "bool" and op in ("max", "min"):
            want = want.astype(bool)
        if op == "prod" and dt not in FLOATS:
            continue  # wraps; covered elsewhere
        assert_close(out.numpy(), ref(want, out_dt) if out_dt in FLOATS else want, out_dt,
                     rtol=tol(out_dt) * 8, atol=tol(out_dt) * 8 * (300 if op == "sum" else 1))


def test_softmax_inplace_and_large(rng):
    a = rng.standard_normal((300, 1000))
    x = tensor(a)
    C.softmax(x, x, 1)
    np.testing.assert_allclose(x.numpy(), np_softmax(a, 1), rtol=1e-12)
    x = tensor(a)
    C.log_softmax(x, x, 0)
    np.testing.assert_allclose(x.numpy(), np.log(np_softmax(a, 0)), rtol=1e-12)


def test_fast_exp_tanh_accuracy():
    x = np.concatenate([np.linspace(-110, 95, 400001), np.linspace(-1, 1, 100001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.72, 88.73,
                         -87.33, -103.9, -104.0]]).astype(np.float32)
    out = empty(x.shape, "float32")
    C.exp(out, tensor(x))
    got = out.numpy().astype(np.float64)
    want = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        want32 = want.astype(np.float32).astype(np.float64)
    normal = np.isfinite(want32) & (np.abs(want32) >= np.finfo(np.float32).tiny)
    rel = np.abs(got[normal] - want[normal]) / want[normal]
    assert rel.max() < 3e-7, rel.max()
    sub = np.isfinite(want32) & ~normal
    assert np.abs(got[sub] - want[sub]).max() <= 2 * 2.0 ** -149
    assert np.array_equal(np.isinf(got), np.isinf(want32))
    assert np.array_equal(np.isnan(got), np.isnan(x))
    C.tanh(out, tensor(x))
    got = out.numpy().astype(np.float64)
    want = np.tanh(x.astype(np.float64))
    ok = ~np.isnan(x)
    err = np.abs(got[ok] - want[ok]) / np.maximum(np.abs(want[ok]), np.finfo(np.float32).tiny)
    assert err.max() < 3e-7, err.max()
    assert np.isnan(got[~ok]).all()
    z = empty((1,), "float32")
    C.tanh(z, tensor(np.array([-0.0], np.float32)))
    assert math.copysign(1, z.numpy()[0]) == -1  # tanh(-0) = -0
