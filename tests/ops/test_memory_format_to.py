"""``Tensor.to(memory_format=)``, ``Module.to(memory_format=)``, ``empty(memory_format=)``
and ``is_contiguous(memory_format=)`` on any rank, against PyTorch (the channels-last memory
format tutorial)."""
import pytest
import torch

import ember


def _strides(lib, make):
    t = make(lib)
    return tuple(t.stride())


@pytest.mark.parametrize("make", [
    lambda L: L.zeros(10, 3, 5, 4).to(memory_format=L.channels_last),
    lambda L: L.zeros(10, 3, 5, 4).to(memory_format=L.channels_last).to(
        memory_format=L.contiguous_format),
    lambda L: L.zeros(4, 1, 4, 4).to(memory_format=L.channels_last),       # ambiguous: restrided
    lambda L: L.zeros(4, 1, 4, 4).contiguous(memory_format=L.channels_last),   # left as is
    lambda L: L.zeros(2, 3, 4, 5, 6).to(L.float64, memory_format=L.channels_last_3d),
    lambda L: L.zeros(2, 3, 5, 4).to(memory_format=L.preserve_format),
    lambda L: L.empty(10, 3, 5, 4, memory_format=L.channels_last),
    lambda L: L.nn.Conv2d(8, 4, 3).to(memory_format=L.channels_last).weight,
    lambda L: L.nn.Conv2d(8, 4, 3).to(memory_format=L.channels_last).bias,
])
def test_memory_format_strides_match_torch(make):
    assert _strides(ember, make) == _strides(torch, make)


def test_to_memory_format_keeps_values_and_gradient():
    x = ember.arange(24.0).reshape(1, 2, 3, 4).requires_grad_()
    y = x.to(memory_format=ember.channels_last)
    assert y.tolist() == x.tolist()
    (y * ember.arange(24.0).reshape(1, 2, 3, 4)).sum().backward()
    assert x.grad.tolist() == ember.arange(24.0).reshape(1, 2, 3, 4).tolist()


@pytest.mark.parametrize("shape", [(2,), (2, 3), (2, 3, 4), (2, 1, 1, 1), (2, 3, 4, 5),
                                   (2, 3, 4, 5, 6)])
def test_is_contiguous_in_channels_last_on_any_rank(shape):
    for fmt in ("channels_last", "channels_last_3d"):
        assert ember.ones(*shape).is_contiguous(memory_format=getattr(ember, fmt)) == \
            torch.ones(*shape).is_contiguous(memory_format=getattr(torch, fmt))
