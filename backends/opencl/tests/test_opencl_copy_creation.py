"""copy / cast between every pair of dtypes, fill, arange, and host <-> device transfers."""
import numpy as np
import pytest
import torch

import ember
from ocl_helpers import ALL, DEV, N, T, layouts, np_dtype

rng = np.random.default_rng(0)


def _values(d, shape):
    if d is ember.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if d.is_floating_point:
        return (rng.integers(-60, 60, shape) / 4).astype(np_dtype(d))
    lo = 0 if d is ember.uint8 else -100
    return rng.integers(lo, 100, shape).astype(d.to_numpy())


@pytest.mark.parametrize("src", ALL, ids=lambda d: d.name)
def test_cast_to_every_dtype(src):
    x = _values(src, (3, 5))
    for name, t in layouts(x, src):
        for dst in ALL:
            got = N(t.to(dtype=dst))
            exp = x.astype(np_dtype(dst))
            np.testing.assert_array_equal(got, exp, err_msg=f"{src.name}->{dst.name} {name}")


def test_copy_into_strided_and_broadcast():
    x = rng.standard_normal((4, 6)).astype(np.float32)
    dst = T(np.zeros((6, 4), np.float32)).t()          # a transposed destination
    dst.copy_(T(x))
    np.testing.assert_array_equal(N(dst), x)
    row = T(np.arange(6, dtype=np.float32))
    dst.copy_(row)                                      # a stride-0 source
    np.testing.assert_array_equal(N(dst), np.broadcast_to(np.arange(6), (4, 6)))
    d64 = T(np.zeros((4, 6)), ember.int64)
    d64[:, ::2] = T(x)[:, ::2]                         # cast into a strided view
    exp = np.zeros((4, 6), np.int64)
    exp[:, ::2] = x[:, ::2].astype(np.int64)
    np.testing.assert_array_equal(N(d64), exp)


def test_zero_dim_and_empty():
    s = T(np.float32(2.5))
    assert s.shape == () and s.item() == 2.5
    assert s.to(dtype=ember.int64).item() == 2
    e = T(np.zeros((0, 3), np.float32))
    assert N(e + 1).shape == (0, 3)
    assert N(e.to(dtype=ember.int32)).shape == (0, 3)
    assert N(ember.zeros(0, device=DEV)).shape == (0,)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_fill(dtype):
    v = True if dtype is ember.bool else 3
    t = ember.full((5, 3), v, dtype=dtype, device=DEV)
    np.testing.assert_array_equal(N(t), np.full((5, 3), v, np_dtype(dtype)))
    t[:, 1].fill_(0)
    exp = np.full((5, 3), v, np_dtype(dtype))
    exp[:, 1] = 0
    np.testing.assert_array_equal(N(t), exp)


def test_fill_special_values():
    # PyTorch: a float16 fill past the range raises (only its CPU one-element fill gives inf)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.full((2,), 1e6, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.full((2,), 1e6, dtype=ember.float16, device=DEV)
    assert np.isinf(N(ember.full((2,), float("inf"), dtype=ember.float16, device=DEV))).all()
    assert np.isnan(N(ember.full((2,), float("nan"), device=DEV))).all()
    assert N(ember.full((2,), 300, dtype=ember.int64, device=DEV)).tolist() == [300, 300]
    assert N(ember.full((1,), -1.5, dtype=ember.bfloat16, device=DEV)).tolist() == [-1.5]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.int32,
                                   ember.uint8], ids=lambda d: d.name)
def test_arange(dtype):
    np.testing.assert_array_equal(N(ember.arange(0, 10, 3, dtype=dtype, device=DEV)),
                                  np.arange(0, 10, 3).astype(dtype.to_numpy()))
    if dtype.is_floating_point:
        np.testing.assert_allclose(N(ember.arange(1.0, 2.0, 0.25, dtype=dtype, device=DEV)),
                                   np.arange(1.0, 2.0, 0.25))


def test_transfers_round_trip_and_between_devices():
    x = rng.standard_normal((17, 9)).astype(np.float32)
    t = ember.tensor(x).to(DEV)
    np.testing.assert_array_equal(t.cpu().numpy(), x)
    # device -> device (through the host), and back to a fresh tensor on the same device
    u = t.to(DEV, copy=True)
    u.add_(1)
    np.testing.assert_array_equal(N(t), x)
    np.testing.assert_array_equal(N(u), x + 1)
    import ember_opencl
    for i in range(1, ember_opencl.device_count()):
        v = t.to(f"opencl:{i}")
        np.testing.assert_array_equal(N(v.to(DEV)), x)


def test_upload_is_a_private_copy():
    x = np.arange(8, dtype=np.float32)
    host = ember.tensor(x)
    dev = host.to(DEV)
    host.add_(100)                       # changing the source after the call is safe
    np.testing.assert_array_equal(N(dev), x)
