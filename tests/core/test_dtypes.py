"""Type promotion against PyTorch (the oracle)."""
import itertools

import pytest
import torch

import ember
from ember.dispatcher import dtypes as D

PAIRS = [(D.bool_, torch.bool), (D.uint8, torch.uint8), (D.int8, torch.int8),
         (D.int16, torch.int16), (D.int32, torch.int32), (D.int64, torch.int64),
         (D.float16, torch.float16), (D.bfloat16, torch.bfloat16),
         (D.float32, torch.float32), (D.float64, torch.float64)]
TO_TORCH = dict(PAIRS)
FROM_TORCH = {t: e for e, t in PAIRS}


@pytest.mark.parametrize("a,b", list(itertools.product(PAIRS, PAIRS)))
def test_promote_types_matches_torch(a, b):
    assert D.promote_types(a[0], b[0]) is FROM_TORCH[torch.promote_types(a[1], b[1])]


class _Meta:
    """A tensor stand-in: result_type only reads dtype and shape."""
    def __init__(self, dtype, shape):
        self.dtype, self.shape = dtype, shape


@pytest.mark.parametrize("dt", PAIRS, ids=lambda p: p[0].name)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
@pytest.mark.parametrize("zero_dim", [False, True])
def test_result_type_with_python_scalars(dt, scalar, zero_dim):
    shape = () if zero_dim else (2,)
    expected = torch.result_type(torch.zeros(shape, dtype=dt[1]), scalar)
    assert D.result_type(_Meta(dt[0], shape), scalar) is FROM_TORCH[expected]


@pytest.mark.parametrize("a,b", [(D.int32, D.float64), (D.uint8, D.int8), (D.float16, D.int64),
                                 (D.bool_, D.float16), (D.int64, D.float32)])
def test_result_type_zero_dim_vs_dimensioned(a, b):
    # a 0-d tensor only wins when it is of a higher category
    expected = torch.result_type(torch.zeros(2, dtype=TO_TORCH[a]),
                                 torch.zeros((), dtype=TO_TORCH[b]))
    assert D.result_type(_Meta(a, (2,)), _Meta(b, ())) is FROM_TORCH[expected]


def test_default_dtype_drives_float_scalars():
    ember.set_default_dtype(ember.float64)
    try:
        assert D.result_type(_Meta(D.int32, (2,)), 1.5) is D.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)


def test_dtype_names_and_numpy():
    import numpy as np
    assert ember.float32.itemsize == 4 and ember.bfloat16.itemsize == 2
    assert D.to_dtype("float") is D.float32 and D.to_dtype(np.int16) is D.int16
    with pytest.raises(TypeError, match="BFloat16"):
        D.bfloat16.to_numpy()
    with pytest.raises(TypeError, match="unknown dtype"):
        D.to_dtype("float128")
