"""complex32 ("ComplexHalf"): float16 (real, imaginary) pairs, with the support PyTorch
gives it on the CPU (creation, casts, add/sub/mul, abs, conj, sgn, comparisons, joins,
indexing, save/load) and PyTorch's errors where its CPU kernels refuse it. PyTorch is the
oracle, case by case."""
import io
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

warnings.filterwarnings("ignore", message="ComplexHalf support is experimental")


@pytest.fixture(autouse=True)
def _keep_the_cast_warning():
    """Casting complex to real warns once a process (as PyTorch): these casts leave that
    once to the tests that check the warning."""
    from ember.dispatcher import complex_ops
    warned = complex_ops._WARNED[0]
    yield
    complex_ops._WARNED[0] = warned


def _run(mod, fn):
    """``fn(mod)``: its value (tensors as dtype name, shape, values), or its error type."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(mod)
        except Exception as e:   # (the error's type is what is compared)
            return ("raises", NotImplementedError if isinstance(e, NotImplementedError)
                    else type(e))
    return _value(r)


def _value(r):
    if isinstance(r, (list, tuple)):
        return type(r)(_value(x) for x in r)
    if hasattr(r, "dtype") and hasattr(r, "shape"):
        return (str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist())
    if hasattr(r, "is_complex"):   # a dtype
        return str(r).split(".")[-1]
    return r


def _a(m):
    return m.tensor([1 + 2j, -3.5 + 0.5j, 0j], dtype=m.complex32)


def _b(m):
    return m.tensor([1.001 + 3.003j, 2.007 + 1.999j, 60000 + 60000j], dtype=m.complex32)


CASES = {
    "alias": lambda m: m.chalf is m.complex32,
    "dtype": lambda m: (m.complex32.itemsize, m.complex32.is_complex,
                        m.complex32.is_floating_point, m.complex32.is_signed),
    "zeros": lambda m: m.zeros(2, dtype=m.complex32),
    "ones": lambda m: m.ones(2, dtype=m.chalf),
    "empty": lambda m: (m.empty(2, 3, dtype=m.complex32).dtype, m.empty(2, 3).shape),
    "full": lambda m: m.full((2,), 1 + 2j, dtype=m.complex32),
    "full_real": lambda m: m.full((2,), 3.0, dtype=m.complex32),
    "tensor": _a,
    "tensor_real": lambda m: m.tensor([1.5, 2], dtype=m.complex32),
    "tensor_overflow": lambda m: m.tensor([1e5 + 1j], dtype=m.complex32),
    "zeros_like": lambda m: m.zeros_like(_a(m)),
    "ones_like": lambda m: m.ones_like(_a(m)),
    "full_like": lambda m: m.full_like(_a(m), 2j),
    "new_zeros": lambda m: _a(m).new_zeros(2),
    "fill_": lambda m: m.zeros(2, dtype=m.complex32).fill_(1j),
    "zero_": lambda m: _a(m).zero_(),
    "to": lambda m: m.tensor([1.5, 2]).to(m.complex32),
    "chalf": lambda m: m.tensor([1 + 1j, 2]).chalf(),
    "int_chalf": lambda m: m.tensor([1, 2]).chalf(),
    "bf16_chalf": lambda m: m.ones(2, dtype=m.bfloat16).chalf(),
    "c128_chalf": lambda m: m.tensor([1 + 1e-4j], dtype=m.complex128).chalf(),
    "to_c64": lambda m: _a(m).to(m.complex64),
    "to_c128": lambda m: _a(m).cdouble(),
    "to_f32": lambda m: _a(m).to(m.float32),
    "to_f16": lambda m: _a(m).half(),
    "to_bf16": lambda m: _a(m).bfloat16(),
    "to_int": lambda m: _a(m).long(),
    "to_bool": lambda m: _a(m).bool(),
    "to_u16": lambda m: _a(m).to(m.uint16),
    "add": lambda m: _a(m) + _a(m),
    "sub": lambda m: _a(m) - _b(m),
    "mul": lambda m: _a(m) * _a(m),
    "mul_rounds_once": lambda m: _b(m) * _b(m),
    "mul_overflow": lambda m: (m.tensor([1000 + 1000j], dtype=m.complex32)
                               * m.tensor([1000 + 1000j], dtype=m.complex32)),
    "add_alpha": lambda m: m.add(_a(m), _b(m), alpha=2),
    "sub_alpha": lambda m: m.sub(_a(m), _a(m), alpha=2.5),
    "add_alpha_": lambda m: _a(m).add_(_a(m), alpha=2),
    "mul_": lambda m: _a(m).mul_(_b(m)),
    "add_c64": lambda m: _a(m) + m.tensor([1j, 1, 1]),
    "add_c128": lambda m: _a(m) + m.tensor([1j, 1, 1], dtype=m.complex128),
    "add_f16": lambda m: _a(m) + m.tensor([1., 2, 3], dtype=m.float16),
    "add_bf16": lambda m: _a(m) + m.tensor([1., 2, 3], dtype=m.bfloat16),
    "add_f32": lambda m: _a(m) + m.tensor([1., 2, 3]),
    "add_f64": lambda m: _a(m) + m.tensor([1., 2, 3], dtype=m.float64),
    "add_int": lambda m: _a(m) + m.tensor([1, 2, 3]),
    "add_bool": lambda m: _a(m) + m.tensor([True, False, True]),
    "mul_int": lambda m: _a(m) * 2,
    "mul_float": lambda m: _a(m) * 2.5,
    "mul_complex": lambda m: _a(m) * (1 + 1j),
    "radd_complex": lambda m: 1j + _a(m),
    "mul_0d_c128": lambda m: _a(m) * m.tensor(2j, dtype=m.complex128),
    "mul_0d_f32": lambda m: _a(m) * m.tensor(2.),
    "0d_c32_f32": lambda m: m.tensor(1 + 1j, dtype=m.complex32) + m.tensor([1., 2]),
    "f16_times_1j": lambda m: m.tensor([1., 2], dtype=m.float16) * 1j,
    "f16_0d_c64": lambda m: m.ones(2, dtype=m.float16) * m.tensor(2j),
    "neg": lambda m: -_a(m),
    "abs": lambda m: _a(m).abs(),
    "abs_overflow": lambda m: _b(m).abs(),
    "sgn": lambda m: _b(m).sgn(),
    "conj": lambda m: _a(m).conj(),
    "conj_physical": lambda m: m.conj_physical(_a(m)),
    "real_imag": lambda m: (_a(m).real, _a(m).imag),
    "view_as_real": lambda m: m.view_as_real(_a(m)),
    "view_as_complex": lambda m: m.view_as_complex(m.tensor([[1., 2], [3, 4]],
                                                            dtype=m.float16)),
    "complex": lambda m: m.complex(m.tensor([1.], dtype=m.float16),
                                   m.tensor([2.], dtype=m.float16)),
    "view_f16": lambda m: _a(m).view(m.float16),
    "view_int32": lambda m: _a(m).view(m.int32),
    "eq": lambda m: _a(m) == _a(m),
    "ne": lambda m: _a(m) != m.tensor([1 + 2j, 0, 0], dtype=m.complex32),
    "isnan": lambda m: _a(m).isnan(),
    "isfinite": lambda m: (_a(m) * 1e4).isfinite(),
    "isclose": lambda m: m.isclose(_a(m), _a(m)),
    "allclose": lambda m: m.allclose(_a(m), _b(m)),
    "cat": lambda m: m.cat([_a(m), _a(m)]),
    "cat_mixed": lambda m: m.cat([_a(m), m.tensor([1j])]),
    "stack": lambda m: m.stack([_a(m), _b(m)]),
    "where": lambda m: m.where(m.tensor([True, False, True]), _a(m), _b(m)),
    "index": lambda m: _a(m)[1],
    "slice": lambda m: _a(m)[1:],
    "index_bool": lambda m: _a(m)[m.tensor([True, False, True])],
    "index_tensor": lambda m: _a(m)[m.tensor([2, 0])],
    "index_select": lambda m: _a(m).index_select(0, m.tensor([2, 0])),
    "masked_select": lambda m: _a(m).masked_select(m.tensor([True, False, True])),
    "masked_fill": lambda m: _a(m).masked_fill(m.tensor([True, False, True]), 1j),
    "setitem": lambda m: (lambda t: (t.__setitem__(0, 5j), t)[1])(_a(m)),
    "index_put": lambda m: _a(m).index_put((m.tensor([2, 0]),), _b(m)[:2]),
    "index_add": lambda m: _a(m).index_add(0, m.tensor([2, 0]), _a(m)[:2]),
    "index_copy": lambda m: _a(m).index_copy(0, m.tensor([2, 0]), _b(m)[:2]),
    "clone": lambda m: _a(m).clone(),
    "contiguous": lambda m: _a(m).reshape(3, 1).t().contiguous(),
    "tril": lambda m: m.ones(2, 2, dtype=m.complex32).tril(),
    "diag": lambda m: m.diag(_a(m)),
    "roll": lambda m: _a(m).roll(1),
    "repeat": lambda m: _a(m).repeat(2),
    "item": lambda m: _a(m)[0].item(),
    "tolist": lambda m: _a(m).tolist(),
    "repr": lambda m: repr(_a(m)).replace(m.__name__, "M"),
    "repr_0d": lambda m: repr(m.tensor(1 + 1j, dtype=m.complex32)).replace(m.__name__, "M"),
    "repr_2d": lambda m: repr(m.zeros(2, 2, dtype=m.complex32)).replace(m.__name__, "M"),
    "type": lambda m: _a(m).type().replace(m.__name__, "M"),
    "element_size": lambda m: _a(m).element_size(),
    "is_complex": lambda m: (_a(m).is_complex(), _a(m).is_floating_point()),
    "finfo": lambda m: (m.finfo(m.complex32).eps, m.finfo(m.complex32).max),
    "default_float16": lambda m: _with_default(m, m.float16, lambda: m.tensor([1j]).dtype),
    "meta": lambda m: m.empty(2, dtype=m.complex32, device="meta").dtype,
    "backward": lambda m: _grad(m),
    # PyTorch's CPU kernels refuse complex32 for these
    "div": lambda m: _a(m) / _b(m),
    "pow": lambda m: _a(m) ** 2,
    "square": lambda m: m.square(_a(m)),
    "reciprocal": lambda m: _a(m).reciprocal(),
    "exp": lambda m: _a(m).exp(),
    "sqrt": lambda m: _a(m).sqrt(),
    "tanh": lambda m: _a(m).tanh(),
    "angle": lambda m: _a(m).angle(),
    "lt": lambda m: _a(m) < _a(m),
    "logical_not": lambda m: m.logical_not(_a(m)),
    "sum": lambda m: _a(m).sum(),
    "mean": lambda m: _a(m).mean(),
    "prod": lambda m: _a(m).prod(),
    "cumsum": lambda m: _a(m).cumsum(0),
    "matmul": lambda m: m.ones(2, 2, dtype=m.complex32) @ m.ones(2, 2, dtype=m.complex32),
    "matmul_vec": lambda m: m.ones(2, 2, dtype=m.complex32) @ m.ones(2, dtype=m.complex32),
    "flip": lambda m: _a(m).flip(0),
    "rot90": lambda m: m.ones(2, 2, dtype=m.complex32).rot90(),
    "gather": lambda m: _a(m).gather(0, m.tensor([1])),
    "scatter": lambda m: _a(m).scatter(0, m.tensor([1]), _b(m)),
    "take_along_dim": lambda m: m.take_along_dim(_a(m), m.tensor([1]), 0),
    "masked_scatter": lambda m: _a(m).masked_scatter(m.tensor([True, False, True]), _b(m)),
    "put": lambda m: _a(m).put(m.tensor([1]), _b(m)[:1]),
    "equal": lambda m: m.equal(_a(m), _a(m)),
    "arange": lambda m: m.arange(3, dtype=m.complex32),
    "linspace": lambda m: m.linspace(0, 1, 3, dtype=m.complex32),
    "polar": lambda m: m.polar(m.ones(1, dtype=m.float16), m.zeros(1, dtype=m.float16)),
    "fft": lambda m: m.fft.fft(_a(m)),
    "fft_f16": lambda m: m.fft.fft(m.ones(2, dtype=m.float16)),
    "numpy": lambda m: _a(m).numpy(),
}
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex32", "complex64", "complex128", "uint16", "uint32",
           "uint64")
for _d in _DTYPES:
    CASES[f"promote_{_d}"] = (lambda m, d=_d: _promote(m, d))


def _promote(m, d):
    out = []
    for a, b in ((m.complex32, getattr(m, d)), (getattr(m, d), m.complex32)):
        try:
            out.append(m.promote_types(a, b))
        except RuntimeError as e:
            out.append(str(e))
    return out


def _with_default(m, dt, fn):
    old = m.get_default_dtype()
    m.set_default_dtype(dt)
    try:
        return fn()
    finally:
        m.set_default_dtype(old)


def _grad(m):
    x = m.tensor([1 + 2j, 0.5 - 1j], dtype=m.complex32, requires_grad=True)
    (x * x).abs().float().sum().backward()
    return x.grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex32_matches_torch(name):
    assert _run(ember, CASES[name]) == _run(torch, CASES[name])


def test_numpy_error_message():
    with pytest.raises(TypeError, match="^Got unsupported ScalarType ComplexHalf$"):
        _a(ember).numpy()


def test_refusals_name_pytorchs_kernels():
    with pytest.raises(NotImplementedError, match="\"sum_cpu\" not implemented for "
                                                  "'ComplexHalf'"):
        _a(ember).sum()
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented"):
        ember.ones(2, 2, dtype=ember.complex32) @ ember.ones(2, 2, dtype=ember.complex32)


def test_save_load_round_trips_with_torch(tmp_path):
    p = tmp_path / "c32.pt"
    ember.save({"z": _a(ember)}, p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.load(p)["z"]
    assert t.dtype is torch.complex32 and t.tolist() == _a(ember).tolist()
    torch.save({"z": t * 2}, p)
    e = ember.load(p)["z"]
    assert e.dtype is ember.complex32 and e.tolist() == (t * 2).tolist()


def test_earlier_ember_format_round_trips():
    from ember._ember_format import _save_ember
    buf = io.BytesIO()
    _save_ember({"z": _a(ember)[::2]}, buf)
    buf.seek(0)
    e = ember.load(buf)["z"]
    assert e.dtype is ember.complex32 and e.tolist() == _a(ember)[::2].tolist()


def test_complex64_and_complex128_are_unchanged():
    z = ember.tensor([1 + 2j]) * ember.tensor([3 - 1j], dtype=ember.complex128)
    assert z.dtype is ember.complex128 and z.tolist() == [(5 + 5j)]
    assert ember.promote_types(ember.complex64, ember.float16) is ember.complex64
    assert (ember.ones(2, dtype=ember.float32) * 1j).dtype is ember.complex64
