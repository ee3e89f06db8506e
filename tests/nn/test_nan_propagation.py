"""inf and NaN through pooling and interpolation: PyTorch's values exactly, NaN included.

A window (or an interpolation stencil) sees only its own elements: one inf or NaN reaches
the outputs whose windows hold it and no others; and where PyTorch itself makes a NaN (a
weight of 0 times an inf neighbour in linear interpolation, inf - inf in a window) ember
makes the same one. Each function runs once on a batch of slices, each slice holding one
special value (inf, -inf or NaN at a corner, an edge or the middle; an inf next to a -inf;
none), and is compared with PyTorch element by element: NaN exactly where PyTorch has NaN,
the same infinities, finite values within rounding; max pooling's indices exactly; then the
input's gradient the same way.
"""
from __future__ import annotations

import math
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

inf, nan = math.inf, math.nan


def _installed(plugin: str) -> bool:
    return any(ep.name == plugin for ep in entry_points(group="ember.backends"))


DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    not _installed("opencl"), reason="ember-opencl is not installed"))]
DTYPES = {"float32": (np.float32, 1e-5), "float64": (np.float64, 1e-12)}
SHAPES = {1: (7,), 2: (7, 9), 3: (5, 6, 7)}


def _slices(sp):
    """(S, 1, *sp): each slice one special placement (see the module docstring)."""
    base = (np.arange(int(np.prod(sp)), dtype=np.float64).reshape(sp) % 11) / 7.0 - 0.6
    spots = [tuple(0 for _ in sp), tuple(s // 2 for s in sp), tuple(s - 1 for s in sp),
             tuple([0] + [s // 2 for s in sp[1:]]), tuple([s - 2 for s in sp])]
    out = [base.copy()]
    for spot in spots:
        for v in (inf, -inf, nan):
            x = base.copy()
            x[spot] = v
            out.append(x)
    x = base.copy()                       # inf next to -inf: inf - inf in shared windows
    x[spots[1]] = inf
    x[tuple(min(i + 1, s - 1) for i, s in zip(spots[1], sp))] = -inf
    out.append(x)
    return np.stack(out)[:, None]


def _compare(what, got, want, rtol):
    got = got.detach().cpu().double().numpy() if not isinstance(got, np.ndarray) else got
    want = want.detach().double().numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    same_nan = np.isnan(got) == np.isnan(want)
    exact = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(invalid="ignore"):
        close = np.isfinite(got) & np.isfinite(want) & (
            np.abs(got - want) <= rtol * (1 + np.abs(want)))
    bad = ~(same_nan & (exact | close))
    if bad.any():
        idx = np.argwhere(bad)[:10]
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} outputs differ from "
                             "PyTorch's (slice, channel, *position: ember, torch)\n" +
                             "\n".join(f"  {tuple(int(v) for v in i)}: {got[tuple(i)]!r}, "
                                       f"{want[tuple(i)]!r}" for i in idx))


def _run(name, fn, nd, dtype, device):
    """Forward values (and indices), then the input's gradient for an uneven upstream
    gradient (max pooling's goes to the selected element: the first NaN of a window)."""
    np_dt, rtol = DTYPES[dtype]
    x = _slices(SHAPES[nd]).astype(np_dt)
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x).to(device).requires_grad_()
    want, got = fn(TF, tx), fn(EF, ex)
    what = f"{name} [{dtype}, {device}]"
    if isinstance(want, tuple):  # (values, indices)
        assert np.array_equal(got[1].cpu().numpy(), want[1].numpy()), f"{what}: indices"
        want, got = want[0], got[0]
    _compare(what, got, want, rtol)
    g = np.linspace(0.5, 1.5, want.numel()).reshape(tuple(want.shape)).astype(np_dt)
    want.backward(torch.tensor(g))
    got.backward(ember.tensor(g).to(device))
    _compare(what + " gradient", ex.grad, tx.grad, rtol)


POOLS = {
    "max_pool1d": (1, lambda F, x: F.max_pool1d(x, 3, 2, 1, return_indices=True)),
    "max_pool1d ceil dilation": (1, lambda F, x: F.max_pool1d(
        x, 2, 2, 0, 2, ceil_mode=True, return_indices=True)),
    "max_pool2d": (2, lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True)),
    "max_pool2d ceil": (2, lambda F, x: F.max_pool2d(x, 2, 2, ceil_mode=True,
                                                     return_indices=True)),
    "max_pool3d": (3, lambda F, x: F.max_pool3d(x, 2, 2, 1, return_indices=True)),
    "avg_pool1d": (1, lambda F, x: F.avg_pool1d(x, 3, 2, 1)),
    "avg_pool1d ceil no pad count": (1, lambda F, x: F.avg_pool1d(
        x, 2, 2, 1, ceil_mode=True, count_include_pad=False)),
    "avg_pool2d": (2, lambda F, x: F.avg_pool2d(x, 3, 2, 1)),
    "avg_pool2d ceil no pad count": (2, lambda F, x: F.avg_pool2d(
        x, 2, 2, 1, ceil_mode=True, count_include_pad=False)),
    "avg_pool2d divisor": (2, lambda F, x: F.avg_pool2d(x, 3, 1, 1, divisor_override=5)),
    "avg_pool3d": (3, lambda F, x: F.avg_pool3d(x, 2, 2, 1)),
    "avg_pool3d divisor": (3, lambda F, x: F.avg_pool3d(x, 3, 2, 1, divisor_override=-4)),
    "adaptive_avg_pool1d": (1, lambda F, x: F.adaptive_avg_pool1d(x, 3)),
    "adaptive_avg_pool1d equal": (1, lambda F, x: F.adaptive_avg_pool1d(x, 7)),
    "adaptive_avg_pool2d": (2, lambda F, x: F.adaptive_avg_pool2d(x, (3, 5))),
    "adaptive_avg_pool2d up": (2, lambda F, x: F.adaptive_avg_pool2d(x, (10, 4))),
    "adaptive_avg_pool2d divides": (2, lambda F, x: F.adaptive_avg_pool2d(x, (7, 3))),
    "adaptive_avg_pool3d": (3, lambda F, x: F.adaptive_avg_pool3d(x, (2, 4, 3))),
    "adaptive_max_pool1d": (1, lambda F, x: F.adaptive_max_pool1d(x, 3, return_indices=True)),
    "adaptive_max_pool2d": (2, lambda F, x: F.adaptive_max_pool2d(x, (3, 5),
                                                                  return_indices=True)),
    "adaptive_max_pool3d": (3, lambda F, x: F.adaptive_max_pool3d(x, (2, 4, 3),
                                                                  return_indices=True)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(POOLS))
def test_pooling_propagates_inf_and_nan_as_pytorch(name, dtype, device):
    nd, fn = POOLS[name]
    _run(name, fn, nd, dtype, device)


#: case -> (mode, spatial dims, align_corners, kind of size): every mode, dims,
#: align_corners and kind of output size
INTERP = {f"{mode} {nd}d align_corners={ac} {size}": (mode, nd, ac, size)
          for mode, dims in (("nearest", (1, 2, 3)), ("nearest-exact", (1, 2, 3)),
                             ("area", (1, 2, 3)), ("linear", (1,)), ("bilinear", (2,)),
                             ("trilinear", (3,)))
          for nd in dims
          for ac in ((False, True) if mode.endswith("linear") else (None,))
          for size in ("up", "down", "same", "mixed", "scale")}
#: nearest modes only select elements: float32 is enough for them
INTERP_RUNS = [(case, dtype) for case, (mode, *_rest) in INTERP.items()
               for dtype in (("float32",) if mode.startswith("nearest") else DTYPES)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case,dtype", INTERP_RUNS)
def test_interpolate_propagates_inf_and_nan_as_pytorch(case, dtype, device):
    mode, nd, align_corners, size = INTERP[case]
    sp = SHAPES[nd]
    kw = {} if align_corners is None else {"align_corners": align_corners}
    sizes = {"up": [2 * s + 1 for s in sp], "down": [max(s // 2, 1) for s in sp],
             "same": list(sp), "mixed": [s + 3 if i % 2 else s - 2 for i, s in enumerate(sp)]}

    def fn(F, x):
        if size == "scale":
            return F.interpolate(x, scale_factor=2.5, mode=mode, **kw)
        return F.interpolate(x, size=sizes[size], mode=mode, **kw)
    _run(case, fn, nd, dtype, device)


# ---- the examples of the issue -------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_one_inf_stays_in_its_adaptive_avg_pool_windows(device):
    x = np.arange(7 * 9, dtype=np.float32).reshape(1, 1, 7, 9)
    x[0, 0, 0, 0] = inf
    got = EF.adaptive_avg_pool2d(ember.tensor(x).to(device), (3, 5)).cpu().numpy()
    want = TF.adaptive_avg_pool2d(torch.tensor(x), (3, 5)).numpy()
    assert np.isinf(got).sum() == np.isinf(want).sum() == 1     # the window at (0, 0) only
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_bilinear_inf_reaches_neighbours_only_as_pytorch_does(device):
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    x[0, 0, 1, 1] = inf
    for size in ((6, 8), (3, 8), (3, 4)):
        got = EF.interpolate(ember.tensor(x).to(device), size=size, mode="bilinear")
        want = TF.interpolate(torch.tensor(x), size=size, mode="bilinear")
        _compare(f"bilinear to {size}", got, want, 1e-6)
