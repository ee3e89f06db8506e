"""uint16, uint32 and uint64: PyTorch's "barebones" unsigned dtypes, case by case against
PyTorch 2.13 (the oracle).

PyTorch creates, copies, casts, views, indexes, saves and prints tensors of them, but
computes on them with few kernels (mul, eq / ne, bitwise and / or / xor, rounding, where,
sum / prod / cumsum into int64, sort, unique, ...) and promotes them with no dtype but
themselves and the floating ones. Every case runs the same code under both libraries and
compares the values and dtypes, or the class of the error where PyTorch raises.
"""
import io

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import dtypes as D

UINTS = ("uint16", "uint32", "uint64")
EVERY = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex64", "complex128") + UINTS
MAX = {"uint16": 2**16 - 1, "uint32": 2**32 - 1, "uint64": 2**64 - 1}


def _plain(r):
    """A result both libraries can be compared by: tensors as (dtype name, values)."""
    if isinstance(r, (torch.Tensor, ember.Tensor)):
        return (str(r.dtype).rpartition(".")[2], r.tolist())
    if isinstance(r, (tuple, list)):
        return tuple(_plain(v) for v in r)
    if isinstance(r, (torch.dtype, ember.dtype)):
        return str(r).rpartition(".")[2]
    return r.replace("ember", "torch") if isinstance(r, str) else r


def _outcome(fn, lib, name):
    try:
        return "ok", _plain(fn(lib, getattr(lib, name)))
    except Exception as e:      # (the class is what is compared)
        return "raises", type(e)


def _same_as_torch(fn, name):
    expected = _outcome(fn, torch, name)
    got = _outcome(fn, ember, name)
    assert got == expected, f"ember {got} != torch {expected}"
    return expected


def _t(lib, dt, values=(1, 2, 3)):
    return lib.tensor(list(values), dtype=dt)


# ---- the dtypes themselves ------------------------------------------------------------------
@pytest.mark.parametrize("name", UINTS)
def test_dtype_attributes(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert e is getattr(D, name) and D.to_dtype(name) is e and D.to_dtype(f"torch.{name}") is e
    assert (e.itemsize, e.is_signed, e.is_floating_point, e.is_complex) == (
        t.itemsize, t.is_signed, t.is_floating_point, t.is_complex)
    assert repr(e) == f"ember.{name}" and e.to_numpy() == np.dtype(name)
    assert D.from_numpy_dtype(np.dtype(name)) is e
    ie, it = ember.iinfo(e), torch.iinfo(t)
    assert (ie.min, ie.max, ie.bits, ie.dtype) == (it.min, it.max, it.bits, it.dtype)
    assert str(ie) == str(it)


@pytest.mark.parametrize("a", UINTS)
@pytest.mark.parametrize("b", EVERY)
def test_promote_types_matches_torch(a, b):
    for x, y in ((a, b), (b, a)):
        try:
            expected = str(torch.promote_types(getattr(torch, x), getattr(torch, y)))
        except RuntimeError as err:
            with pytest.raises(RuntimeError, match=str(err).replace("(", r"\(")):
                D.promote_types(D.to_dtype(x), D.to_dtype(y))
        else:
            assert repr(D.promote_types(D.to_dtype(x), D.to_dtype(y))) == \
                expected.replace("torch", "ember")


RESULT_TYPE_CASES = {
    "int scalar": lambda L, dt: L.result_type(_t(L, dt), 1),
    "bool scalar": lambda L, dt: L.result_type(_t(L, dt), True),
    "float scalar": lambda L, dt: L.result_type(_t(L, dt), 1.5),
    "0-d int8": lambda L, dt: L.result_type(_t(L, dt), L.tensor(1, dtype=L.int8)),
    "0-d float64": lambda L, dt: L.result_type(_t(L, dt), L.tensor(1.0, dtype=L.float64)),
    "1-d int64": lambda L, dt: L.result_type(_t(L, dt), L.tensor([1])),
    "1-d uint8": lambda L, dt: L.result_type(_t(L, dt), L.tensor([1], dtype=L.uint8)),
    "1-d float16": lambda L, dt: L.result_type(_t(L, dt), L.tensor([1.0], dtype=L.float16)),
    "bool tensor, 0-d": lambda L, dt: L.result_type(L.tensor([True]), L.tensor(1, dtype=dt)),
    "0-d self, 1-d int32": lambda L, dt: L.result_type(L.tensor(1, dtype=dt),
                                                       L.tensor([1], dtype=L.int32)),
}


@pytest.mark.parametrize("case", RESULT_TYPE_CASES)
@pytest.mark.parametrize("name", UINTS)
def test_result_type(case, name):
    _same_as_torch(RESULT_TYPE_CASES[case], name)


# ---- creation, casts, copies ------------------------------------------------------------------
CREATION = {
    "tensor": lambda L, dt: _t(L, dt),
    "tensor wraps -1": lambda L, dt: L.tensor([-1, 0], dtype=dt) if dt is not L.uint64
    else L.tensor([0], dtype=dt),
    "tensor max": lambda L, dt: L.tensor([MAX[str(dt).rpartition(".")[2]], 0], dtype=dt),
    "tensor of NumPy": lambda L, dt: L.tensor(np.array([1, 7], dtype=str(dt).rpartition(".")[2])),
    "as_tensor": lambda L, dt: L.as_tensor([1, 2], dtype=dt),
    "from_numpy": lambda L, dt: L.from_numpy(np.array([MAX[str(dt).rpartition(".")[2]], 3],
                                                      dtype=str(dt).rpartition(".")[2])),
    "zeros": lambda L, dt: L.zeros(2, 3, dtype=dt),
    "ones": lambda L, dt: L.ones(3, dtype=dt),
    "empty": lambda L, dt: L.empty(3, dtype=dt).shape,
    "full": lambda L, dt: L.full((2,), 7, dtype=dt),
    "full -1 wraps": lambda L, dt: L.full((2,), -1, dtype=dt),
    "full max": lambda L, dt: L.full((1,), MAX[str(dt).rpartition(".")[2]], dtype=dt),
    "full 70000": lambda L, dt: L.full((1,), 70000, dtype=dt),
    "full 2**63": lambda L, dt: L.full((1,), 2**63, dtype=dt),
    "full 1.5": lambda L, dt: L.full((1,), 1.5, dtype=dt),
    "zeros_like": lambda L, dt: L.zeros_like(_t(L, dt)),
    "full_like": lambda L, dt: L.full_like(_t(L, dt), 4),
    "new_ones": lambda L, dt: _t(L, dt).new_ones(2),
    "new_tensor": lambda L, dt: _t(L, dt).new_tensor([5]),
    "randint": lambda L, dt: L.randint(0, 5, (3,), dtype=dt).dtype,
    "arange": lambda L, dt: L.arange(5, dtype=dt),
    "linspace": lambda L, dt: L.linspace(0, 4, 5, dtype=dt),
    "eye": lambda L, dt: L.eye(2, dtype=dt),
    "randperm": lambda L, dt: L.randperm(3, dtype=dt),
    "tril_indices": lambda L, dt: L.tril_indices(2, 2, dtype=dt),
}


@pytest.mark.parametrize("case", CREATION)
@pytest.mark.parametrize("name", UINTS)
def test_creation(case, name):
    _same_as_torch(CREATION[case], name)


def test_uint64_beyond_int64():
    big = [2**63 + 5, 1, 2**63, 2**64 - 1]
    for lib in (torch, ember):
        t = lib.tensor(big, dtype=lib.uint64)
        assert t.tolist() == big and t[3].item() == 2**64 - 1
        assert t.sort().values.tolist() == sorted(big)
        assert (t == 2**63).tolist() == [False, False, True, False]
        assert t.numpy().tolist() == big
    with pytest.raises(OverflowError):
        ember.tensor([-1], dtype=ember.uint64)


# values every dtype converts to the same integers (no negative or out-of-range float, whose
# conversion to an unsigned type C++ leaves undefined)
_CAST_VALUES = {"bool": [True, False, True], "float16": [0.0, 1.5, 300.0],
                "bfloat16": [0.0, 2.0, 256.0], "float32": [0.0, 7.9, 65535.0],
                "float64": [0.0, 3.25, 65535.0], "complex64": [0, 1 + 2j, 5.5],
                "complex128": [0, 2.5, 65535 + 1j], "uint8": [0, 1, 255],
                "int8": [0, -1, 127], "int16": [-1, 300, -32768],
                "int32": [-1, 70000, -2**31], "int64": [-1, 2**40 + 3, -2**63],
                "uint16": [0, 1, 2**16 - 1], "uint32": [0, 7, 2**32 - 1],
                "uint64": [0, 2**63, 2**64 - 1]}


@pytest.mark.parametrize("src", EVERY)
@pytest.mark.parametrize("name", UINTS)
def test_cast_into(src, name):
    def cast(L, dt):
        return L.tensor(_CAST_VALUES[src], dtype=getattr(L, src)).to(dt)
    _same_as_torch(cast, name)   # (complex sources warn once, in each library)


@pytest.mark.parametrize("dst", EVERY)
@pytest.mark.parametrize("name", UINTS)
def test_cast_out_of(dst, name):
    def cast(L, dt):
        return L.tensor(_CAST_VALUES[name], dtype=dt).to(getattr(L, dst))
    _same_as_torch(cast, name)


COPIES = {
    "copy_ from float32": lambda L, dt: L.zeros(2, dtype=dt).copy_(L.tensor([1.0, 2.0])),
    "copy_ into float32": lambda L, dt: L.zeros(2).copy_(L.tensor([1, 2], dtype=dt)),
    "copy_ same dtype, strided": lambda L, dt: L.zeros(2, 2, dtype=dt).copy_(
        _t(L, dt, (1, 2, 3, 4)).reshape(2, 2).t()),
    "clone": lambda L, dt: _t(L, dt).clone(),
    "contiguous": lambda L, dt: _t(L, dt).expand(2, 3).t().contiguous(),
    "numpy": lambda L, dt: str(_t(L, dt).numpy().dtype),
    "fill_": lambda L, dt: _t(L, dt).fill_(5),
    "fill_ -1": lambda L, dt: _t(L, dt).fill_(-1),
    "zero_": lambda L, dt: _t(L, dt).zero_(),
    "setitem scalar": lambda L, dt: _setitem(_t(L, dt), 0, 9),
    "setitem slice": lambda L, dt: _setitem(_t(L, dt), slice(1, None), L.tensor([7, 8],
                                                                             dtype=dt)),
    "setitem tensor index": lambda L, dt: _setitem(_t(L, dt), L.tensor([0]), 9),
    "setitem bool mask": lambda L, dt: _setitem(_t(L, dt), L.tensor([True, False, True]), 5),
    "view(int)": lambda L, dt: _t(L, dt).view({"uint16": L.int16, "uint32": L.int32,
                                               "uint64": L.int64}[str(dt).rpartition(".")[2]]),
    "view(uint8)": lambda L, dt: _t(L, dt).view(L.uint8),
    "int32 viewed": lambda L, dt: L.tensor([-1, 5], dtype=L.int32).view(dt),
}


def _setitem(x, key, value):
    x[key] = value
    return x


@pytest.mark.parametrize("case", COPIES)
@pytest.mark.parametrize("name", UINTS)
def test_copies_and_views(case, name):
    _same_as_torch(COPIES[case], name)


@pytest.mark.parametrize("name", UINTS)
def test_save_load_both_ways(name, tmp_path):
    values = [0, 1, MAX[name]]
    for save, load in ((torch, ember), (ember, torch), (ember, ember)):
        buf = io.BytesIO()
        save.save({"x": save.tensor(values, dtype=getattr(save, name))}, buf)
        buf.seek(0)
        x = load.load(buf)["x"]
        assert x.dtype is getattr(load, name) and x.tolist() == values


@pytest.mark.parametrize("name", UINTS)
def test_dlpack_both_ways(name):
    e = ember.from_dlpack(torch.tensor([1, MAX[name]], dtype=getattr(torch, name)))
    assert e.dtype is getattr(ember, name) and e.tolist() == [1, MAX[name]]
    assert torch.from_dlpack(e).tolist() == [1, MAX[name]]


# ---- what PyTorch computes on them, and what it refuses ------------------------------------------
def _mask(L):
    return L.tensor([True, False, True])


OPS = {
    # arithmetic: only mul, and true division through float
    "mul": lambda L, dt: _t(L, dt) * _t(L, dt, (3, 2, 1)),
    "mul wraps": lambda L, dt: L.tensor([60000, 2**15], dtype=dt) * L.tensor([60000, 2],
                                                                           dtype=dt),
    "mul scalar": lambda L, dt: _t(L, dt) * 70000,
    "mul -1": lambda L, dt: _t(L, dt) * -1,
    "mul_": lambda L, dt: _t(L, dt).mul_(_t(L, dt)),
    "mul 0-d int64": lambda L, dt: _t(L, dt) * L.tensor(2),
    "mul float scalar": lambda L, dt: _t(L, dt) * 1.5,
    "mul float16": lambda L, dt: _t(L, dt) * L.tensor([2.0], dtype=L.float16),
    "mul out=int64": lambda L, dt: L.mul(_t(L, dt), _t(L, dt), out=L.empty(3, dtype=L.int64)),
    "mul_ float scalar": lambda L, dt: _t(L, dt).mul_(1.5),
    "mul int64 tensor": lambda L, dt: _t(L, dt) * L.tensor([1, 2, 3]),
    "mul bool tensor": lambda L, dt: _t(L, dt) * _mask(L),
    "div": lambda L, dt: _t(L, dt) / _t(L, dt, (3, 2, 1)),
    "add": lambda L, dt: _t(L, dt) + _t(L, dt),
    "add scalar": lambda L, dt: _t(L, dt) + 1,
    "add_": lambda L, dt: _t(L, dt).add_(1),
    "add float tensor": lambda L, dt: _t(L, dt) + L.tensor([1.0, 2.0, 3.0]),
    "sub": lambda L, dt: _t(L, dt) - _t(L, dt),
    "floordiv": lambda L, dt: _t(L, dt) // _t(L, dt),
    "remainder": lambda L, dt: _t(L, dt) % _t(L, dt),
    "neg": lambda L, dt: -_t(L, dt),
    "abs": lambda L, dt: _t(L, dt).abs(),
    "sign": lambda L, dt: _t(L, dt).sign(),
    "pow": lambda L, dt: _t(L, dt) ** 2,
    "square": lambda L, dt: _t(L, dt).square(),
    "maximum": lambda L, dt: L.maximum(_t(L, dt), _t(L, dt)),
    "clamp": lambda L, dt: _t(L, dt).clamp(1, 2),
    "clamp min": lambda L, dt: _t(L, dt).clamp(min=1),
    "relu": lambda L, dt: L.relu(_t(L, dt)),
    "lerp": lambda L, dt: _t(L, dt).lerp(_t(L, dt), 0.5),
    "matmul": lambda L, dt: _t(L, dt).reshape(1, 3) @ _t(L, dt).reshape(3, 1),
    # floating-point math computes in float32
    "sqrt": lambda L, dt: _t(L, dt).sqrt(),
    "sigmoid": lambda L, dt: _t(L, dt).sigmoid(),
    "atan2": lambda L, dt: L.atan2(_t(L, dt), _t(L, dt)),
    # comparisons: equality only
    "eq": lambda L, dt: _t(L, dt) == _t(L, dt, (3, 2, 1)),
    "ne scalar": lambda L, dt: _t(L, dt) != 2,
    "eq scalar out of range": lambda L, dt: _t(L, dt) == 2**40,
    "eq negative scalar": lambda L, dt: _t(L, dt) == -1,
    "eq 0-d int64": lambda L, dt: _t(L, dt) == L.tensor(2),
    "eq float tensor": lambda L, dt: _t(L, dt) == L.tensor([1.0, 2.0, 4.0]),
    "eq out=same dtype": lambda L, dt: L.eq(_t(L, dt), _t(L, dt), out=L.empty(3, dtype=dt)),
    "eq int64 tensor": lambda L, dt: _t(L, dt) == L.tensor([1, 2, 3]),
    "lt": lambda L, dt: _t(L, dt) < _t(L, dt),
    "ge scalar": lambda L, dt: _t(L, dt) >= 2,
    "equal": lambda L, dt: L.equal(_t(L, dt), _t(L, dt)),
    "isclose": lambda L, dt: L.isclose(L.tensor([1, 10], dtype=dt), L.tensor([2, 9], dtype=dt),
                                       atol=1.5),
    "allclose": lambda L, dt: L.allclose(_t(L, dt), _t(L, dt, (3, 2, 1))),
    # bitwise: and / or / xor, no not, no shifts
    "and": lambda L, dt: _t(L, dt) & _t(L, dt, (3, 2, 1)),
    "or scalar": lambda L, dt: _t(L, dt) | 8,
    "xor True": lambda L, dt: _t(L, dt) ^ True,
    "and_": lambda L, dt: _t(L, dt).bitwise_and_(_t(L, dt, (3, 3, 3))),
    "and uint8 tensor": lambda L, dt: _t(L, dt) & L.tensor([1, 1, 1], dtype=L.uint8),
    "not": lambda L, dt: ~_t(L, dt),
    "lshift": lambda L, dt: _t(L, dt) << 1,
    "rshift": lambda L, dt: _t(L, dt) >> _t(L, dt),
    "logical_not": lambda L, dt: _t(L, dt).logical_not(),
    "logical_and": lambda L, dt: L.logical_and(_t(L, dt), _t(L, dt)),
    # rounding is the identity; classification never finds NaN or inf
    "floor": lambda L, dt: _t(L, dt).floor(),
    "ceil": lambda L, dt: _t(L, dt).ceil(),
    "trunc": lambda L, dt: _t(L, dt).trunc(),
    "round": lambda L, dt: _t(L, dt).round(),
    "round decimals": lambda L, dt: _t(L, dt).round(decimals=1),
    "isnan": lambda L, dt: _t(L, dt).isnan(),
    "isinf": lambda L, dt: _t(L, dt).isinf(),
    "isfinite": lambda L, dt: _t(L, dt).isfinite(),
    "isposinf": lambda L, dt: _t(L, dt).isposinf(),
    "signbit": lambda L, dt: _t(L, dt).signbit(),
    # where
    "where": lambda L, dt: L.where(_mask(L), _t(L, dt), _t(L, dt, (7, 8, 9))),
    "where scalar": lambda L, dt: L.where(_mask(L), _t(L, dt), 0),
    "where int64": lambda L, dt: L.where(_mask(L), _t(L, dt), L.tensor([1, 2, 3])),
    # reductions and scans: into int64
    "sum": lambda L, dt: _t(L, dt).sum(),
    "sum big": lambda L, dt: L.tensor([MAX[str(dt).rpartition(".")[2]]] * 2, dtype=dt).sum(),
    "sum dim": lambda L, dt: _t(L, dt, range(6)).reshape(2, 3).sum(1, keepdim=True),
    "sum dim 0": lambda L, dt: _t(L, dt, range(6)).reshape(2, 3).sum(0),
    "sum dtype float32": lambda L, dt: _t(L, dt).sum(dtype=L.float32),
    "sum dtype self": lambda L, dt: _t(L, dt).sum(dtype=dt),
    "sum empty": lambda L, dt: L.empty(0, dtype=dt).sum(),
    "prod": lambda L, dt: _t(L, dt).prod(),
    "prod dtype self": lambda L, dt: _t(L, dt).prod(dtype=dt),
    "cumsum": lambda L, dt: _t(L, dt).cumsum(0),
    "cumsum dtype self": lambda L, dt: _t(L, dt).cumsum(0, dtype=dt),
    "cumprod": lambda L, dt: _t(L, dt).cumprod(0),
    "nansum": lambda L, dt: _t(L, dt).nansum(),
    "mean": lambda L, dt: _t(L, dt).mean(),
    "mean dtype": lambda L, dt: _t(L, dt).mean(dtype=L.float32),
    "std": lambda L, dt: _t(L, dt).std(),
    "any": lambda L, dt: L.tensor([0, 0, 5], dtype=dt).any(),
    "all dim": lambda L, dt: L.tensor([[0, 1], [2, 3]], dtype=dt).all(1),
    "max": lambda L, dt: _t(L, dt).max(),
    "min dim": lambda L, dt: _t(L, dt).min(0),
    "amax": lambda L, dt: _t(L, dt).amax(),
    "argmax": lambda L, dt: _t(L, dt).argmax(),
    "aminmax": lambda L, dt: _t(L, dt).aminmax(),
    "cummax": lambda L, dt: _t(L, dt).cummax(0),
    "count_nonzero": lambda L, dt: L.count_nonzero(_t(L, dt)),
    "nonzero": lambda L, dt: _t(L, dt).nonzero(),
    "median": lambda L, dt: _t(L, dt).median(),
    "kthvalue": lambda L, dt: _t(L, dt).kthvalue(1),
    "mode": lambda L, dt: _t(L, dt).mode(),
    "bincount": lambda L, dt: _t(L, dt).bincount(),
    "bincount weights": lambda L, dt: L.tensor([0, 1, 1]).bincount(weights=_t(L, dt)),
    "trace": lambda L, dt: _t(L, dt, range(4)).reshape(2, 2).trace(),
    # sorting
    "sort": lambda L, dt: L.tensor([5, 1, MAX[str(dt).rpartition(".")[2]], 2], dtype=dt).sort(),
    "sort descending": lambda L, dt: L.tensor([5, 1, 7, 2], dtype=dt).sort(descending=True),
    "argsort": lambda L, dt: L.tensor([3, 1, 2], dtype=dt).argsort(),
    "unique": lambda L, dt: L.unique(L.tensor([3, 1, 3], dtype=dt), return_inverse=True,
                                     return_counts=True),
    "unique_consecutive": lambda L, dt: L.unique_consecutive(L.tensor([3, 3, 1], dtype=dt)),
    "topk": lambda L, dt: _t(L, dt).topk(1),
    # indexing and shape ops: reading works, most writing kernels refuse
    "index int": lambda L, dt: _t(L, dt)[1],
    "index slice": lambda L, dt: _t(L, dt)[1:],
    "index tensor": lambda L, dt: _t(L, dt)[L.tensor([0, 2])],
    "index bool mask": lambda L, dt: _t(L, dt)[_mask(L)],
    "index 2-d": lambda L, dt: _t(L, dt, range(6)).reshape(2, 3)[L.tensor([1]), L.tensor([2])],
    "index with a uint tensor": lambda L, dt: L.arange(5)[_t(L, dt)],
    "index_select": lambda L, dt: _t(L, dt).index_select(0, L.tensor([0, 2])),
    "gather": lambda L, dt: _t(L, dt).gather(0, L.tensor([0, 2])),
    "take": lambda L, dt: L.take(_t(L, dt), L.tensor([0, 2])),
    "take_along_dim": lambda L, dt: L.take_along_dim(_t(L, dt), L.tensor([0]), 0),
    "scatter": lambda L, dt: L.zeros(3, dtype=dt).scatter(0, L.tensor([0]), _t(L, dt)[:1]),
    "scatter_add": lambda L, dt: _t(L, dt).scatter_add(0, L.tensor([0]), _t(L, dt)[:1]),
    "index_put_": lambda L, dt: L.zeros(3, dtype=dt).index_put_((L.tensor([0]),),
                                                                 _t(L, dt)[:1]),
    "index_add": lambda L, dt: _t(L, dt).index_add(0, L.tensor([0]), _t(L, dt)[:1]),
    "index_copy": lambda L, dt: _t(L, dt).index_copy(0, L.tensor([0]), _t(L, dt)[:1]),
    "index_fill": lambda L, dt: _t(L, dt).index_fill(0, L.tensor([0]), 9),
    "masked_fill": lambda L, dt: _t(L, dt).masked_fill(_mask(L), 7),
    "masked_select": lambda L, dt: _t(L, dt).masked_select(_mask(L)),
    "masked_scatter": lambda L, dt: _t(L, dt).masked_scatter(_mask(L), _t(L, dt)),
    "put_": lambda L, dt: _t(L, dt).put_(L.tensor([0]), _t(L, dt)[:1]),
    "flip": lambda L, dt: _t(L, dt).flip(0),
    "tril": lambda L, dt: _t(L, dt).reshape(1, 3).tril(),
    "triu": lambda L, dt: _t(L, dt).reshape(1, 3).triu(),
    "cat": lambda L, dt: L.cat([_t(L, dt), _t(L, dt)]),
    "cat with int64": lambda L, dt: L.cat([_t(L, dt), L.tensor([1])]),
    "cat with float32": lambda L, dt: L.cat([_t(L, dt), L.tensor([1.0])]),
    "stack": lambda L, dt: L.stack([_t(L, dt), _t(L, dt)], 1),
    "reshape / permute": lambda L, dt: _t(L, dt, range(6)).reshape(1, 2, 3).permute(2, 0, 1),
    "expand / repeat": lambda L, dt: _t(L, dt).expand(2, 3).repeat(1, 2),
    "roll": lambda L, dt: _t(L, dt).roll(1),
    "repeat_interleave": lambda L, dt: _t(L, dt).repeat_interleave(2),
    "diag": lambda L, dt: _t(L, dt).diag(),
    "outer": lambda L, dt: L.outer(_t(L, dt), _t(L, dt)),
    "pad": lambda L, dt: L.nn.functional.pad(_t(L, dt), (1, 2), value=5),
    "pad reflect": lambda L, dt: L.nn.functional.pad(_t(L, dt).reshape(1, 1, 3), (1, 1),
                                                      mode="reflect"),
    "unfold": lambda L, dt: _t(L, dt).unfold(0, 2, 1),
    "chunk / split / unbind": lambda L, dt: (_t(L, dt).chunk(2)[1], _t(L, dt).split([1, 2])[1],
                                             _t(L, dt).unbind()[0]),
    "index_reduce prod": lambda L, dt: _t(L, dt, range(1, 5)).reshape(2, 2).index_reduce(
        0, L.tensor([0]), _t(L, dt, (3, 4)).reshape(1, 2), "prod"),
    "scatter_reduce": lambda L, dt: _t(L, dt).scatter_reduce(0, L.tensor([0]), _t(L, dt)[:1],
                                                             "sum"),
    # Python values
    "item": lambda L, dt: L.tensor([MAX[str(dt).rpartition(".")[2]]], dtype=dt).item(),
    "tolist": lambda L, dt: L.tensor([[MAX[str(dt).rpartition(".")[2]]]], dtype=dt).tolist(),
    "int / float / bool": lambda L, dt: (int(_t(L, dt)[1]), float(_t(L, dt)[1]),
                                         bool(_t(L, dt)[0])),
    "repr": lambda L, dt: repr(L.tensor([[1, MAX[str(dt).rpartition(".")[2]]]], dtype=dt)),
    "repr 0-d and empty": lambda L, dt: (repr(L.tensor(5, dtype=dt)),
                                         repr(L.empty(0, dtype=dt))),
    "type()": lambda L, dt: _t(L, dt).type(),
    "element_size / is_signed": lambda L, dt: (_t(L, dt).element_size(),
                                               _t(L, dt).is_signed()),
    "requires_grad_": lambda L, dt: _t(L, dt).requires_grad_(),
}


@pytest.mark.parametrize("case", OPS)
@pytest.mark.parametrize("name", UINTS)
def test_ops_as_torch(case, name):
    _same_as_torch(OPS[case], name)


def test_refusals_name_the_op_and_dtype():
    x = ember.tensor([1, 2], dtype=ember.uint32)
    with pytest.raises(NotImplementedError, match=r"add\(\).*uint32"):
        x + x
    with pytest.raises(NotImplementedError, match=r"flip\(\).*uint32"):
        x.flip(0)
    with pytest.raises(NotImplementedError, match=r"arange\(\).*uint16"):
        ember.arange(3, dtype=ember.uint16)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not "
                                           "supported, attempted to promote UInt32 and Long"):
        x * ember.tensor([1, 2])


def test_example_backend_copies_and_refuses():
    """The plugin template (PyTorch has no such device): moving there and back is a
    copy; its NumPy kernels take none of these dtypes, and say so."""
    ember._ensure_loaded()
    if "example" not in ember._BACKENDS:
        pytest.skip("the example plugin is not installed")
    x = ember.tensor([1, 2**16 - 1], dtype=ember.uint16)
    y = x.to("example")
    assert y.cpu().tolist() == [1, 2**16 - 1]
    with pytest.raises(NotImplementedError, match=r"mul\(\).*uint16 on example"):
        y * y
