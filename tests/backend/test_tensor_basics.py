"""Tensor metadata, memory sharing, conversions, NumPy/DLPack interop and repr."""
import numpy as np
import pytest
import torch

import ember
from conftest import N, T


def test_views_share_storage_and_version(device):
    x = T(np.arange(12, dtype=np.float32).reshape(3, 4), device)
    v = x.t()
    assert v.shape == (4, 3) and v.stride() == (1, 4) and not v.is_contiguous()
    s = x[:, ::2]
    assert s.stride() == (4, 2) and s.storage_offset() == 0
    before = x._version
    s.fill_(-1.0)                       # writing through a view changes the base
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[:, ::2] = -1
    np.testing.assert_array_equal(N(x), expected)
    assert x._version == before + 1 == s._version
    c = v.contiguous()
    assert c.is_contiguous() and c.stride() == (3, 1)
    np.testing.assert_array_equal(N(c), expected.T)
    assert x.contiguous() is x


def test_reshape_copies_only_when_needed(device):
    x = T(np.arange(6, dtype=np.float32).reshape(2, 3), device)
    assert x.reshape(3, 2).data_ptr() == x.data_ptr()
    y = x.t().reshape(-1)
    np.testing.assert_array_equal(N(y), np.arange(6).reshape(2, 3).T.reshape(-1))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(-1)


def test_from_numpy_and_numpy_share_memory_zero_copy():
    arr = np.zeros((1000, 1000), dtype=np.float32)
    t = ember.from_numpy(arr)
    assert t.data_ptr() == arr.ctypes.data
    t += 1
    assert arr[0, 0] == 1.0 and arr[-1, -1] == 1.0
    back = t.numpy()
    assert back.ctypes.data == arr.ctypes.data
    back[0, 0] = 5
    assert t[0, 0].item() == 5.0


def test_from_numpy_strided_and_offset_views():
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    view = base[1:, ::2]
    t = ember.from_numpy(view)
    np.testing.assert_array_equal(t.numpy(), view)
    t[0, 0] = 100
    assert base[1, 0] == 100
    assert t.stride() == (6, 2)
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(base[::-1])


def test_numpy_of_views_and_dtypes():
    for dt in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32,
               np.int64, np.bool_):
        a = (np.arange(12) % 3).astype(dt).reshape(3, 4)
        t = ember.tensor(a)
        np.testing.assert_array_equal(t.t().numpy(), a.T)
        np.testing.assert_array_equal(t[1:, ::3].numpy(), a[1:, ::3])
    # NumPy has no bfloat16: ml_dtypes' (PyTorch raises; issue 18 asked for this)
    b = ember.tensor([1.5, -2.0]).bfloat16().numpy()
    assert b.dtype.name == "bfloat16" and b.astype(np.float32).tolist() == [1.5, -2.0]


def test_dlpack_roundtrip():
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = ember.from_dlpack(arr)
    assert t.data_ptr() == arr.ctypes.data
    out = np.from_dlpack(t)
    assert out.ctypes.data == arr.ctypes.data
    np.testing.assert_array_equal(out, arr)
    tt = torch.from_dlpack(ember.arange(4))
    assert tt.tolist() == [0, 1, 2, 3]


def test_array_protocol():
    t = ember.arange(4.)
    np.testing.assert_array_equal(np.asarray(t), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(t, dtype=np.int64), [0, 1, 2, 3])


def test_item_tolist_and_scalar_conversions(device):
    x = T([[1.5, 2.0], [3.0, 4.0]], device)
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert x[0, 0].item() == 1.5 and float(x[1, 1]) == 4.0 and int(x[1, 0]) == 3
    assert T([True], device).item() is True
    assert T(7, device).item() == 7 and isinstance(T(7, device).item(), int)
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted"):
        x.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    assert ember.ones(1, dtype=ember.bfloat16).item() == 1.0


@pytest.mark.parametrize("dt", [ember.float64, ember.float16, ember.bfloat16, ember.int8,
                                ember.uint8, ember.int16, ember.int32, ember.int64,
                                ember.bool])
def test_to_dtype_matches_numpy_casts(device, dt):
    src = np.array([-2.7, -1.0, -0.5, 0.0, 0.4, 1.6, 3.0, 100.2], dtype=np.float32)
    x = T(src, device)
    y = x.to(dt)
    assert y.dtype is dt and y.device == x.device
    if dt is ember.bfloat16:
        np.testing.assert_allclose(N(y), src, rtol=1e-2)
    elif dt is ember.uint8:
        np.testing.assert_array_equal(N(y)[src >= 0], np.trunc(src[src >= 0]).astype(np.uint8))
    elif dt is ember.bool:
        np.testing.assert_array_equal(N(y), src != 0)
    else:
        np.testing.assert_allclose(N(y).astype(np.float64),
                                   src.astype(dt.to_numpy()).astype(np.float64))


def test_to_device_and_back():
    x = ember.arange(6.).view(2, 3)
    y = x.to("primcpu")
    assert y.device == ember.device("primcpu:0")
    np.testing.assert_array_equal(y.t().cpu().numpy(), np.arange(6.).reshape(2, 3).T)
    assert x.to("cpu") is x
    assert x.to(ember.float32) is x and x.to(ember.float64).dtype is ember.float64
    assert x.to(y).device == y.device
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        x.to("primcpu:3")


@pytest.mark.parametrize("data,dtype", [
    ([1.0, 2.0, 3.0], None), ([1.5, -2.25], None), ([[1, 2], [3, 4]], None),
    ([True, False], None), (3.0, None), (7, None), ([1e-5, 1.0], None), ([1e9, 1.0], None),
    ([1.0, 2.0], "float64"), ([1, 2], "int32"), ([0.5, float("nan"), float("inf")], None),
    (list(range(2000)), None), ([[0.1 * i for i in range(20)]] * 3, None),
    # the width and mode come from the nonzero finite values only (inf, nan, 0 aside), and
    # integer values spanning more than 1000x print in scientific notation
    ([3.0, float("inf")], None), ([0.0, float("-inf")], None), ([1.0, 2.0, float("nan")], None),
    ([1.0, 2000.0], None), ([12345.0, 1.0], None), ([-float("inf"), 100.0, 2.5], None),
    ([1e20, float("inf")], "float64"), ([3.0, float("inf")], "float16")])
def test_repr_matches_pytorch(data, dtype):
    e = ember.tensor(data, dtype=getattr(ember, dtype) if dtype else None)
    t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    assert repr(e) == repr(t).replace("torch.", "ember.")


@pytest.mark.parametrize("n", [3, 9, 25])
def test_repr_suffix_lines_as_pytorch(n):
    # requires_grad= / grad_fn= go on a line of their own when the last line is full
    e = ember.linspace(0.0, 6.2832, steps=n, requires_grad=True)
    t = torch.linspace(0.0, 6.2832, steps=n, requires_grad=True)
    assert repr(e) == repr(t)
    assert repr(ember.sin(e)) == repr(torch.sin(t))
    assert repr(e.double() * 3) == repr(t.double() * 3).replace("torch.", "ember.")


def test_repr_empty_and_device():
    assert repr(ember.zeros(0)) == repr(torch.zeros(0))
    assert repr(ember.zeros(0, 3)) == repr(torch.zeros(0, 3))
    assert "device='primcpu:0'" in repr(ember.ones(2).to("primcpu"))


def test_size_stride_metadata():
    x = ember.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4) and x.size(-1) == 4 and x.dim() == 3 and x.numel() == 24
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12 and x.element_size() == 4
    assert x.permute(2, 0, 1).stride() == (1, 12, 4)
    assert ember.zeros(()).shape == () and ember.zeros(()).numel() == 1


def test_pin_memory_without_an_accelerator_is_torchs_error():
    import torch
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(3).pin_memory()
    with pytest.raises(RuntimeError) as ours:
        ember.ones(3).pin_memory()
    assert str(ours.value) == str(theirs.value)
    assert ember.ones(3).is_pinned() is False


def test_record_stream_needs_a_backend_with_streams():
    with pytest.raises(RuntimeError, match="'cpu' backend has no streams"):
        ember.ones(3).record_stream(None)


def test_dlpack_device_names_the_device_and_export_says_what_to_do():
    """``__dlpack_device__`` gives DLPack's code of the tensor's own device (PyTorch: cuda
    tensors say (2, i)); a device tensor that cannot be exported says so, and how."""
    assert ember.ones(2).__dlpack_device__() == torch.ones(2).__dlpack_device__() == (1, 0)
    if ember.opencl.is_available():
        t = ember.ones(2, device="opencl")
        assert t.__dlpack_device__() == (4, 0)          # kDLOpenCL
        with pytest.raises(BufferError, match=r"opencl:0 .*\.cpu\(\) first"):
            t.__dlpack__()


def test_conformance_kit_without_pytest_says_how_to_install_it():
    import subprocess
    import sys
    code = ("import sys; sys.modules['pytest'] = None\n"
            "import ember.testing\n"
            "sys.exit(ember.testing.main(['cpu']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    assert "pip install 'ember-tensor[testing]'" in r.stderr and "Traceback" not in r.stderr


def test_cuda_array_interface_is_cuda_only_as_torch():
    """numba and CuPy test for the attribute: a CPU tensor has none, with PyTorch's
    message (the cuda description is checked against PyTorch's by gpu_check.sh)."""
    for t in (ember.ones(2), torch.ones(2)):
        assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="non-CUDA tensor type: ember.FloatTensor"):
        ember.ones(2).__cuda_array_interface__
