"""as_strided_, the view_as_*_copy ops, Tensor.storage_type and ember.GradScaler, each
against PyTorch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), 1), ((3,), (2,), None),
                                                ((0,), (1,), 0), ((), (), 5)])
def test_as_strided_in_place_matches_pytorch(size, stride, offset):
    a, t = ember.arange(6.), torch.arange(6.)
    for fn in ("method", "function"):
        a, t = ember.arange(6.), torch.arange(6.)
        if fn == "method":
            ra, rt = a.as_strided_(size, stride, offset), t.as_strided_(size, stride, offset)
        else:
            ra = ember.as_strided_(a, size, stride, offset)
            rt = torch.as_strided_(t, size, stride, offset)
        assert ra is a and rt is t
        assert tuple(a.shape) == tuple(t.shape) and a.stride() == t.stride()
        assert a.storage_offset() == t.storage_offset() and a._version == t._version
        np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_as_strided_in_place_errors_as_pytorch():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="out of bounds|storage has only"):
            lib.arange(4.).as_strided_((3,), (2,))
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib.ones(3, requires_grad=True).as_strided_((2,), (1,))


def test_view_as_real_and_complex_copies():
    z = np.array([1 + 2j, -3.5 + 0.25j], np.complex64)
    for name, arg in (("view_as_real_copy", z), ("view_as_complex_copy",
                                                 z.view(np.float32).reshape(2, 2))):
        e = getattr(ember, name)(ember.from_numpy(arg.copy()))
        t = getattr(torch, name)(torch.from_numpy(arg.copy()))
        assert e._base is None and str(e.dtype) == str(t.dtype).replace("torch", "ember")
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    src = ember.from_numpy(z.copy())
    out = ember.view_as_real_copy(src)
    out[0, 0] = 100.0                              # a copy: the source is untouched
    assert src[0].real.item() == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int16", "int8", "uint8", "bool", "complex64",
                                   "complex128"])
def test_storage_type_names_the_legacy_class(dtype):
    e = ember.ones(2, dtype=getattr(ember, dtype)).storage_type()
    t = torch.ones(2, dtype=getattr(torch, dtype)).storage_type()
    assert e.__name__ == t.__name__
    assert e is getattr(ember, e.__name__)


def test_grad_scaler_at_the_top_level():
    assert ember.GradScaler is ember.amp.GradScaler
    assert torch.GradScaler is torch.amp.GradScaler
