"""Shared helpers for the ``ember.nn`` parity tests: PyTorch is the oracle, NumPy the
bridge (weights and inputs are copied, never shared)."""
from __future__ import annotations

import numpy as np
import torch

import ember

RTOL, ATOL = 1e-4, 1e-5


def e(t: torch.Tensor) -> ember.Tensor:
    """A torch tensor as an ember tensor (a copy through NumPy)."""
    return ember.from_numpy(t.detach().numpy().copy())


def n(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return x.detach().numpy() if x.requires_grad else x.numpy()


def close(ours, theirs, rtol=RTOL, atol=ATOL):
    """Assert an ember result equals a torch result (values, shape, dtype kind)."""
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            close(a, b, rtol, atol)
        return
    a, b = n(ours), n(theirs)
    assert a.shape == b.shape, f"shape {a.shape} != torch {b.shape}"
    assert a.dtype == b.dtype, f"dtype {a.dtype} != torch {b.dtype}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def load_from_torch(ours, theirs):
    """Copy a torch module's parameters and buffers into the ember module (strict)."""
    sd = {k: e(v) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(sd)
    return ours


def randn(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)
