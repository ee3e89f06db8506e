"""Forward values (and indices) of logcumsumexp, cdist, renorm and mode at singular inputs
(±inf, NaN, 1e30, ties), against PyTorch: the inputs whose gradients
tests/autograd/test_singular_grads.py compares."""
from __future__ import annotations

import math
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

import ember

inf, nan = math.inf, math.nan


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not _installed("opencl"), reason="ember-opencl is not installed"))]
DTYPES = {"float64": (ember.float64, torch.float64, 1e-12),
          "float32": (ember.float32, torch.float32, 1e-6)}

ROWS = [[0, 0, 0, 0], [2, 2, 2, 2], [1e30] * 4, [1, 2, 3, 4], [inf, 1, 2, 3], [-inf, 1, 2, 3],
        [inf, inf, 1, 2], [inf, -inf, 1, 2], [nan, 1, 2, 3], [nan, inf, 0, 1], [1, nan, 0, nan],
        [-inf] * 4, [inf] * 4, [1e-30, 0, 0, 0], [40, -40, 40, 2], [1e30, -1e30, 1e30, 5],
        [nan] * 4]
POINTS = [[0, 0, 0, 0], [1, 2, 3, 4], [nan, 0, 0, 1], [inf, 0, 0, 0], [-inf, 1, 1, 1]]

CALLS = [("logcumsumexp dim=1", lambda lib, x: lib.logcumsumexp(x, 1)),
         ("logcumsumexp dim=0", lambda lib, x: lib.logcumsumexp(x, 0))] + [
    (f"cdist p={p}", lambda lib, x, p=p: lib.cdist(x, x.new_tensor(POINTS), p))
    for p in (inf, 0.0, 1.0, 2.0, 3.0)] + [
    (f"renorm p={p}", lambda lib, x, p=p: lib.renorm(x, p, 0, 1.0)) for p in (1, 2, 3, inf)] + [
    ("mode values", lambda lib, x: lib.mode(x, 1)[0]),
    ("mode indices", lambda lib, x: lib.mode(x, 1)[1]),
    # (columns of 16: over 16 elements PyTorch's std::sort has no defined order with NaNs)
    ("mode dim=0 keepdim", lambda lib, x: lib.mode(x[:16], 0, keepdim=True)[1])]


def _same(got, want, rtol):
    got = got.detach().cpu().numpy().astype(np.float64)
    want = want.detach().numpy().astype(np.float64)
    assert got.shape == want.shape
    with np.errstate(invalid="ignore"):
        ok = (got == want) | (np.isnan(got) & np.isnan(want)) | (
            np.isfinite(want) & (np.abs(got - want) <= rtol * np.abs(want)))
    return ok


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", [c for c, _ in CALLS])
def test_forward_at_singular_rows(case, dtype, device):
    call = dict(CALLS)[case]
    e_dt, t_dt, rtol = DTYPES[dtype]
    x = np.array(ROWS, dtype=np.float64)
    ok = _same(call(ember, ember.tensor(x, dtype=e_dt).to(device)),
               call(torch, torch.tensor(x, dtype=t_dt)), rtol)
    assert ok.all(), f"{case}: differs from PyTorch at {np.argwhere(~ok).tolist()}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
def test_mode_with_nans_picks_what_pytorch_picks(n, device):
    """Which element is the mode of a line with NaNs (value and index) depends on where the
    NaNs are (PyTorch's CPU kernel sorts by ``<``, and NaN compares false): every line of
    up to 16 elements agrees with PyTorch, ties and signed zeros included."""
    rng = np.random.RandomState(n)
    x = rng.choice(np.array([nan, 0.0, -0.0, 1.0, 2.0, inf, -1.0]), size=(60, n))
    for e_dt, t_dt, _ in DTYPES.values():
        ev, ei = ember.tensor(x, dtype=e_dt).to(device).mode(1)
        tv, ti = torch.tensor(x, dtype=t_dt).mode(1)
        assert ei.cpu().numpy().tolist() == ti.numpy().tolist()
        assert _same(ev, tv, 0).all()
