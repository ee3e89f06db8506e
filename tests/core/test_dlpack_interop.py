"""DLPack with PyTorch for every CPU dtype, bfloat16 included (NumPy's DLPack has none:
ember writes and reads the capsules itself), zero-copy both ways, strides kept, and the
memory released when the last user goes; ``.numpy()`` of bfloat16 is ml_dtypes'."""
import gc

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
from ember import _dlpack

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "bool"]


@pytest.mark.parametrize("name", DTYPES)
def test_torch_to_ember_and_back_share_memory(name):
    t = (torch.arange(12).reshape(3, 4) % 5).to(getattr(torch, name)).t()   # (4, 3) view
    e = ember.from_dlpack(t)
    assert str(e.dtype) == f"ember.{name}" and e.shape == (4, 3)
    assert e.stride() == t.stride()
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
    back = torch.from_dlpack(e)
    assert back.dtype == t.dtype and back.data_ptr() == t.data_ptr()
    if name != "bool":
        t[0, 0] = 3
        assert e[0, 0].item() == 3 and back[0, 0].item() == 3


def test_bfloat16_values_round_trip_bit_for_bit():
    bits = torch.from_numpy(np.array([0x3FC0, 0xC010, 0x7F80, 0xFF80, 0x7FC1, 0x0001,
                                      0x8000], dtype=np.uint16).view(np.int16))
    t = bits.view(torch.bfloat16)
    e = ember.from_dlpack(t)
    assert torch.equal(torch.from_dlpack(e).view(torch.int16), bits)
    a = e.numpy()
    assert a.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(a.view(np.uint16), bits.numpy().view(np.uint16))
    assert ember.from_numpy(a).dtype is ember.bfloat16


def test_capsules_release_their_memory():
    gc.collect()
    live = len(_dlpack._LIVE)
    e = ember.ones(1000, dtype=ember.bfloat16)
    t = torch.from_dlpack(e)
    assert len(_dlpack._LIVE) == live + 1
    del t
    assert len(_dlpack._LIVE) == live            # the consumer's deleter ran
    cap = e.__dlpack__()
    del cap                                      # never consumed: freed with the capsule
    assert len(_dlpack._LIVE) == live
    freed = []
    t = torch.ones(4, dtype=torch.bfloat16)
    ref = ember.from_dlpack(t)
    import weakref
    weakref.finalize(t, freed.append, True)
    del t
    assert freed == []                           # ember's view keeps torch's memory
    del ref
    gc.collect()
    assert freed == [True]


def test_legacy_capsules_and_errors():
    from ember.utils.dlpack import from_dlpack, to_dlpack
    e = from_dlpack(torch.utils.dlpack.to_dlpack(torch.full((2,), 1.5, dtype=torch.bfloat16)))
    assert e.tolist() == [1.5, 1.5] and e.dtype is ember.bfloat16
    assert torch.utils.dlpack.from_dlpack(to_dlpack(e)).tolist() == [1.5, 1.5]
    cap = torch.utils.dlpack.to_dlpack(torch.ones(2))
    from_dlpack(cap)
    with pytest.raises(ValueError):             # a capsule is consumed once
        from_dlpack(cap)
    with pytest.raises(BufferError, match="unsupported DLPack dtype"):
        ember.from_dlpack(torch.ones(2, dtype=torch.complex32))   # (no complex32 in ember)
    u = ember.from_dlpack(torch.tensor([1, 2**64 - 1], dtype=torch.uint64))
    assert u.dtype is ember.uint64 and u.tolist() == [1, 2**64 - 1]
