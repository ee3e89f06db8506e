"""Indexing a 0-dim tensor with a bare int or slice raises PyTorch's IndexError (old code's
``loss.data[0]`` tells the user to call ``.item()``), for reads and writes."""
import pytest
import torch

import ember


def _error(x, key, write):
    try:
        if write:
            x[key] = 1.0
        else:
            x[key]
    except IndexError as e:
        return str(e)
    return None


@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize("key", [0, 1, -1, -2, slice(None), slice(0, 1), slice(None, None, 2),
                                 (0,), (None, 0), (Ellipsis, 0), (0, 0)])
def test_zero_dim_index_errors_match_torch(key, write):
    want = _error(torch.tensor(3.0), key, write)
    got = _error(ember.tensor(3.0), key, write)
    assert got == want


def test_one_dim_too_many_indices_unchanged():
    assert _error(ember.zeros(2), (0, 0), False) == _error(torch.zeros(2), (0, 0), False)
