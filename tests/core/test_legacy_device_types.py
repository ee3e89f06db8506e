"""``ember.cuda.FloatTensor`` and the other legacy device tensor types, as PyTorch's
``torch.cuda.FloatTensor`` (PyTorch built without CUDA is the oracle here: no device)."""
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
         "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_cuda_legacy_type_as_pytorch_without_a_device(name):
    if ember.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("compares the behaviour without a CUDA device")
    for L in (torch, ember):
        cls = getattr(L.cuda, name)
        assert repr(cls) == f"<class '{L.__name__}.cuda.{name}'>"
        x = L.ones(2).to(getattr(L, getattr(ember, name).dtype.name))
        assert not isinstance(x, cls) and isinstance(x, getattr(L, name))
        with pytest.raises(TypeError, match=f"{L.__name__}.cuda.{name} not available"):
            cls(2)


def test_type_string_of_a_cuda_legacy_name_parses():
    from ember._ops_shape import parse_type
    assert parse_type("torch.cuda.HalfTensor") == (ember.float16, "cuda")
    assert parse_type(ember.cuda.HalfTensor) == (ember.float16, "cuda")
    assert parse_type(ember.HalfTensor) == (ember.float16, "cpu")
