"""PyTorch's legacy and metadata API in ember, against PyTorch 2.13: the typed tensor
classes, ``Tensor(*sizes)``, ``type(...)``, predicates and properties, memory formats,
``resize_``, ``new``, and the CPU-only Python-function maps."""
import numpy as np
import pytest
import torch

import ember

LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
          "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(e.cpu().float().numpy() if e.dtype is ember.bfloat16
                                  else e.cpu().numpy(),
                                  t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy())


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_classes(name):
    E, T = getattr(ember, name), getattr(torch, name)
    assert tuple(E(2, 3).shape) == tuple(T(2, 3).shape) == (2, 3)
    assert E(2, 3).dtype.name == str(T(2, 3).dtype)[6:]
    assert tuple(E().shape) == (0,) and E().dtype.name == str(T().dtype)[6:]
    same(E([1, 0, 2]), T([1, 0, 2]))
    same(E([[1.5, -2.0]]) if name not in ("ByteTensor", "BoolTensor") else E([[1, 0]]),
         T([[1.5, -2.0]]) if name not in ("ByteTensor", "BoolTensor") else T([[1, 0]]))
    for d in DTYPES:
        e = ember.zeros(2, dtype=getattr(ember, d))
        t = torch.zeros(2, dtype=getattr(torch, d))
        assert isinstance(e, E) == isinstance(t, T)
    assert not isinstance(3, E) and not isinstance([1], E)
    assert issubclass(E, ember.Tensor) == issubclass(T, torch.Tensor)
    with pytest.raises(TypeError):
        T(2.5)
    with pytest.raises(TypeError):
        E(2.5)


def test_legacy_class_takes_a_tensor_of_its_dtype():
    x = ember.zeros(2)
    assert ember.FloatTensor(x) is x
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.zeros(2, dtype=torch.float64))
    with pytest.raises(TypeError):
        ember.FloatTensor(ember.zeros(2, dtype=ember.float64))


def test_opencl_tensors_are_not_cpu_legacy_types():
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    assert not isinstance(ember.zeros(2, device="opencl"), ember.FloatTensor)


def test_tensor_constructor():
    for args in [(2, 3), ([1, 2],), (), ([[1.5], [2.5]],), (0,)]:
        same(ember.Tensor(*args) if args and args[0] != 2 else ember.Tensor(*args).zero_(),
             torch.Tensor(*args) if args and args[0] != 2 else torch.Tensor(*args).zero_())
    assert isinstance(ember.Tensor(2), ember.Tensor)
    with pytest.raises(TypeError):
        torch.Tensor(2.5)
    with pytest.raises(TypeError):
        ember.Tensor(2.5)
    prev = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.Tensor(2).dtype is ember.float64
        assert ember.FloatTensor(2).dtype is ember.float32
    finally:
        ember.set_default_dtype(prev)


@pytest.mark.parametrize("spec", ["torch.DoubleTensor", "torch.IntTensor", "ember.HalfTensor",
                                  "torch.BoolTensor"])
def test_type_with_names(spec):
    x = np.array([1.5, -2.0, 0.0])
    t = torch.tensor(x).float().type(spec.replace("ember.", "torch."))
    e = ember.tensor(x).float().type(spec)
    same(e, t)


def test_type_forms():
    x = ember.zeros(2)
    assert x.type() == "ember.FloatTensor"
    assert torch.zeros(2).type() == "torch.FloatTensor"
    assert x.type(ember.DoubleTensor).dtype is ember.float64
    assert x.type(ember.int16).dtype is ember.int16
    assert x.type(dtype=ember.float16).dtype is ember.float16
    with pytest.raises(ValueError):
        torch.zeros(2).type("float")
    with pytest.raises(ValueError):
        x.type("float")
    same(ember.arange(3.).type_as(ember.zeros(1, dtype=ember.int32)),
         torch.arange(3.).type_as(torch.zeros(1, dtype=torch.int32)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_predicates(dtype):
    e = ember.ones(2, dtype=getattr(ember, dtype))
    t = torch.ones(2, dtype=getattr(torch, dtype))
    for name in ("is_complex", "is_conj", "is_neg", "is_inference", "is_signed",
                 "is_floating_point"):
        assert getattr(e, name)() == getattr(t, name)(), name
        if name != "is_inference":
            assert getattr(ember, name)(e) == getattr(torch, name)(t), name
    for name in ("is_sparse", "is_quantized", "is_meta", "is_mps", "is_xpu", "is_ipu",
                 "is_mtia", "is_maia", "is_vulkan", "is_mkldnn", "is_xla", "is_nested",
                 "is_cuda", "is_cpu", "is_sparse_csr"):
        assert getattr(e, name) == getattr(t, name), name
    assert e.layout is ember.strided and t.layout is torch.strided
    assert e.output_nr == t.output_nr


def test_is_nonzero_same_size_set_to():
    for v in ([0.0], [2.0], [[True]], 0, 3):
        assert ember.tensor(v).is_nonzero() == torch.tensor(v).is_nonzero()
        assert ember.is_nonzero(ember.tensor(v)) == torch.is_nonzero(torch.tensor(v))
    for v in ([1.0, 2.0], []):
        with pytest.raises(RuntimeError):
            torch.tensor(v).is_nonzero()
        with pytest.raises(RuntimeError):
            ember.tensor(v).is_nonzero()
    a, b = ember.zeros(2, 3), ember.zeros(2, 3)
    assert a.is_same_size(b) and ember.is_same_size(a, b) and not a.is_same_size(a.t())
    assert a.is_set_to(a) and not a.is_set_to(b) and not a.is_set_to(a.t())
    assert a.is_set_to(a.view(2, 3))


def test_conj_family_and_imag():
    x = ember.tensor([[1.0, -2.0], [3.0, 4.0]])
    for name in ("conj", "resolve_conj", "resolve_neg", "conj_physical"):
        same(getattr(ember, name)(x), getattr(torch, name)(torch.tensor([[1.0, -2.0],
                                                                          [3.0, 4.0]])))
    assert x.real is x or x.real.data_ptr() == x.data_ptr()
    with pytest.raises(RuntimeError):
        torch.zeros(2).imag
    with pytest.raises(RuntimeError):
        ember.zeros(2).imag
    with pytest.raises(RuntimeError):
        ember.imag(ember.zeros(2))


def test_memory_formats():
    x = np.arange(120.0).reshape(2, 3, 4, 5)
    t, e = torch.tensor(x), ember.tensor(x)
    for fmt in ("channels_last", "contiguous_format", "preserve_format"):
        tf, ef = getattr(torch, fmt), getattr(ember, fmt)
        if fmt != "preserve_format":
            tc, ec = t.contiguous(memory_format=tf), e.contiguous(memory_format=ef)
            assert ec.stride() == tc.stride()
            same(ec, tc)
            assert ec.is_contiguous(memory_format=ef) == tc.is_contiguous(memory_format=tf)
        tc, ec = t.clone(memory_format=tf), e.clone(memory_format=ef)
        assert ec.stride() == tc.stride()
        same(ec, tc)
        assert tuple(ember.empty_like(e, memory_format=ef).shape) == (2, 3, 4, 5)
    assert e.is_contiguous(memory_format=ember.channels_last) == \
        t.is_contiguous(memory_format=torch.channels_last)
    for fn in ("empty_like", "zeros_like", "ones_like"):
        assert getattr(ember, fn)(e, memory_format=ember.channels_last).stride() == \
            getattr(torch, fn)(t, memory_format=torch.channels_last).stride()
    same(ember.ones_like(e, memory_format=ember.channels_last),
         torch.ones_like(t, memory_format=torch.channels_last))
    with pytest.raises(RuntimeError):
        t.transpose(1, 2).contiguous(memory_format=torch.preserve_format)
    with pytest.raises(RuntimeError):
        e.transpose(1, 2).contiguous(memory_format=ember.preserve_format)
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3).contiguous(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError):
        ember.zeros(2, 3).contiguous(memory_format=ember.channels_last)
    g = ember.tensor(x, requires_grad=True)
    (g.contiguous(memory_format=ember.channels_last) * 2).sum().backward()
    assert g.grad.tolist() == np.full(x.shape, 2.0).tolist()


def test_dim_order():
    for shape, perm in [((2,), (0,)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (0, 2, 3, 1))]:
        t = torch.zeros(shape).permute(perm)
        e = ember.zeros(shape).permute(perm)
        assert e.dim_order() == t.dim_order()


def test_resize():
    x = np.arange(6.0)
    t, e = torch.tensor(x), ember.tensor(x)
    assert e.resize_(2, 2) is e
    same(e, t.resize_(2, 2))
    assert e.stride() == t.stride()
    t2, e2 = torch.tensor(x), ember.tensor(x)
    t2.resize_(3, 4)
    e2.resize_(3, 4)
    assert e2.stride() == t2.stride() and tuple(e2.shape) == (3, 4)
    np.testing.assert_array_equal(e2.numpy().reshape(-1)[:6], x)   # kept; the rest is new
    t3, e3 = torch.zeros(2, 3), ember.zeros(2, 3)
    same(e3.resize_as_(ember.zeros(3, 1)), t3.resize_as_(torch.zeros(3, 1)))
    with pytest.raises(RuntimeError):
        torch.zeros(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError):
        ember.zeros(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError):
        ember.zeros(2).resize_(-1)


def test_deprecated_out_of_place_resize():
    x = np.arange(6.0)
    with pytest.warns(UserWarning):
        e = ember.tensor(x).resize(2, 3)
    with pytest.warns(UserWarning):
        t = torch.tensor(x).resize(2, 3)
    same(e, t)
    with pytest.warns(UserWarning):
        same(ember.tensor(x).resize_as(ember.zeros(3, 2)),
             torch.tensor(x).resize_as(torch.zeros(3, 2)))
    with pytest.raises(RuntimeError), pytest.warns(UserWarning):
        ember.tensor(x).resize(4)


def test_new():
    t, e = torch.zeros(2, dtype=torch.float64), ember.zeros(2, dtype=ember.float64)
    assert tuple(e.new(2, 3).shape) == tuple(t.new(2, 3).shape)
    assert e.new(2, 3).dtype is ember.float64
    same(e.new([1, 2]), t.new([1, 2]))
    same(e.new(), t.new())
    with pytest.raises(TypeError):
        t.new(2.5)
    with pytest.raises(TypeError):
        e.new(2.5)


def test_python_function_maps():
    x = np.array([1.0, -2.0, 3.0])
    t, e = torch.tensor(x), ember.tensor(x)
    assert e.apply_(lambda v: v * 2 + 1) is e
    same(e, t.apply_(lambda v: v * 2 + 1))
    same(e.map_(ember.tensor([1.0], dtype=ember.float64), lambda a, b: a - b),
         t.map_(torch.tensor([1.0], dtype=torch.float64), lambda a, b: a - b))
    same(e.map2_(ember.ones(3, dtype=ember.float64), ember.tensor([2.0], dtype=ember.float64),
                 lambda a, b, c: a * b + c),
         t.map2_(torch.ones(3, dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64),
                 lambda a, b, c: a * b + c))
    with pytest.raises(TypeError):
        t.map_(torch.ones(3), lambda a, b: a)
    with pytest.raises(TypeError):
        e.map_(ember.ones(3), lambda a, b: a)
    with pytest.raises(TypeError):
        t.apply_(3)
    with pytest.raises(TypeError):
        e.apply_(3)
    with pytest.raises(RuntimeError):
        t.map_(torch.ones(2, dtype=torch.float64), lambda a, b: a)
    with pytest.raises(RuntimeError):
        e.map_(ember.ones(2, dtype=ember.float64), lambda a, b: a)
    if ember.opencl.is_available():
        with pytest.raises(TypeError):
            ember.zeros(2, device="opencl").apply_(lambda v: v)


def test_tensor_subclass_construction():
    class Sub(ember.Tensor):
        pass

    s = Sub([1.0, 2.0])
    assert type(s) is Sub and isinstance(s, ember.FloatTensor)
    assert (s * 2).tolist() == [2.0, 4.0]
    assert tuple(Sub(2, 3).shape) == (2, 3)
