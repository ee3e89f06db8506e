"""Reductions, scans, softmax and sorting at the edges of their arguments, against PyTorch
2.13 (CPU) on every device (cpu, primcpu, and opencl where ember-opencl is installed):

* ``dim=()``: ``all`` / ``any`` reduce nothing (``x != 0`` elementwise, x's shape), while
  ``sum``, ``mean``, ``amax``, ``amin``, ``norm``, ``var``, ``std`` and ``logsumexp`` reduce
  every dim.
* 0-d tensors take ``dim`` in [-1, 0] only, with PyTorch's IndexError, for every reduction,
  scan, softmax and sort.
* errors of reductions without an identity over nothing (``amax`` of an empty tensor, the
  inf and negative-power norms of empty dims), with PyTorch's messages.
* softmax of integer tensors: an empty one is returned as it is, a non-empty one raises.
* bool tensors whose bytes are not all 0 or 1 (a NumPy uint8 array viewed as bool): every
  nonzero byte is one true element in sums, products, scans, means, casts, any/all,
  maxima and arg-maxima, as in PyTorch and NumPy.
* softmax and log_softmax of rows of every length (the CPU's vectorised rows and their
  masked tails), -inf and NaN entries, against NumPy in float64.

Outcomes are compared whole: the result's shape, dtype and values, or the error's type
and message.
"""
import math
import warnings
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

import ember
from conftest import DEVICES

INF = math.inf


def _opencl_installed() -> bool:
    return any(ep.name == "opencl" for ep in entry_points(group="ember.backends"))


@pytest.fixture(params=DEVICES + (["opencl"] if _opencl_installed() else []))
def device(request):
    return request.param


# ---- comparing outcomes ------------------------------------------------------------------------
def _outcome(fn, x):
    """(result, None) or (None, the exception) of ``fn(x)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # PyTorch's "degrees of freedom is <= 0"
        try:
            return fn(x), None
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            return None, e


def _values(t):
    """A tensor (ember or torch; or the first of a (values, indices) pair) as NumPy."""
    if isinstance(t, tuple):
        t = t[0]
    if isinstance(t, torch.Tensor):
        return t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
    return t.float().cpu().numpy() if t.dtype is ember.bfloat16 else t.cpu().numpy()


def _dtype_name(t):
    t = t[0] if isinstance(t, tuple) else t
    return str(t.dtype).replace("torch.", "").replace("ember.", "")


def assert_same_outcome(fn, xe, xt, what, rtol=1e-6):
    """``fn`` on the ember tensor ``xe`` does what it does on the torch tensor ``xt``."""
    want, werr = _outcome(fn, xt)
    got, gerr = _outcome(fn, xe)
    if werr is not None:
        assert gerr is not None, f"{what}: PyTorch raises {werr!r}, ember returns {got}"
        assert (type(gerr), str(gerr)) == (type(werr), str(werr)), \
            f"{what}: ember raises {gerr!r}, PyTorch {werr!r}"
        return
    assert gerr is None, f"{what}: ember raises {gerr!r}, PyTorch returns {want}"
    assert _dtype_name(got) == _dtype_name(want), \
        f"{what}: dtype {_dtype_name(got)}, PyTorch {_dtype_name(want)}"
    g, w = _values(got), _values(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, PyTorch {w.shape}"
    if w.dtype.kind == "f":
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def _pair(data, dtype, device):
    """The same values as an ember tensor on ``device`` and a torch tensor (``dtype`` a
    dtype name)."""
    xt = torch.tensor(data, dtype=torch.float64).to(getattr(torch, dtype))
    xe = ember.tensor(np.asarray(data, dtype=np.float64)).to(getattr(ember, dtype)).to(device)
    return xe, xt


def _mod(x):
    return torch if isinstance(x, torch.Tensor) else ember


# ---- dim=() ------------------------------------------------------------------------------------
#: (values, shape) -- reshaped; values with zeros, NaN and inf
DIM_EMPTY_INPUTS = {
    "2x3": ([1.0, 0.0, -2.0, math.nan, 0.5, INF], (2, 3)),
    "0x3": ([], (0, 3)),
    "0d": ([0.0], ()),
    "0d_true": ([3.0], ()),
    "2x0x3": ([], (2, 0, 3)),
}


@pytest.mark.parametrize("dim", [(), []], ids=["tuple", "list"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bool", "int64"])
@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_over_no_dims_reduce_nothing(device, op, dtype, keepdim, dim):
    """``all(x, dim=())`` is ``x != 0`` with x's shape (uint8 for uint8 input), whatever
    ``keepdim`` says."""
    for name, (vals, shape) in DIM_EMPTY_INPUTS.items():
        vals = np.nan_to_num(np.asarray(vals), nan=2.0, posinf=3.0) if dtype != "float32" \
            else np.asarray(vals)
        xe, xt = _pair(vals.reshape(shape), dtype, device)
        assert_same_outcome(lambda x: getattr(_mod(x), op)(x, dim=dim, keepdim=keepdim),
                            xe, xt, f"{op}({name} {dtype}, dim={dim!r}, keepdim={keepdim})")


DIM_EMPTY_FULL = {
    "sum": lambda x, k: x.sum(dim=(), keepdim=k),
    "mean": lambda x, k: x.mean(dim=(), keepdim=k),
    "amax": lambda x, k: x.amax(dim=(), keepdim=k),
    "amin": lambda x, k: x.amin(dim=(), keepdim=k),
    "norm": lambda x, k: x.norm(dim=(), keepdim=k),
    "norm1": lambda x, k: x.norm(1, dim=(), keepdim=k),
    "norm_inf": lambda x, k: x.norm(INF, dim=(), keepdim=k),
    "var": lambda x, k: x.var(dim=(), keepdim=k),
    "std": lambda x, k: x.std(dim=(), keepdim=k),
    "logsumexp": lambda x, k: x.logsumexp(dim=(), keepdim=True),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", list(DIM_EMPTY_FULL))
def test_other_reductions_over_no_dims_reduce_every_dim(device, op, keepdim):
    fn = DIM_EMPTY_FULL[op]
    for shape in [(2, 3), (4,), ()]:
        vals = np.linspace(-2.0, 3.0, math.prod(shape)).reshape(shape)
        xe, xt = _pair(vals, "float32", device)
        assert_same_outcome(lambda x: fn(x, keepdim), xe, xt, f"{op} {shape} keepdim={keepdim}")


def test_logsumexp_over_no_dims_reduces_every_dim(device):
    """PyTorch 2.13 raises "output with shape [] doesn't match the broadcast shape [1, 1]"
    for ``logsumexp(x, dim=())`` of an n-d x without keepdim: its amax treats () as every
    dim, the squeeze after it as no dim, so the max keeps shape [1, 1] where the sum is [].
    That is an internal inconsistency (keepdim=True and 0-d inputs give the full
    reduction), listed as an allowed difference of the fuzz suite; ember reduces every dim
    as ``sum``, ``amax`` and ``keepdim=True`` do."""
    vals = np.array([[1.0, 0.0], [2.0, -3.0]])
    xe, xt = _pair(vals, "float32", device)
    got = ember.logsumexp(xe, dim=())
    want = torch.logsumexp(xt, dim=(0, 1))
    assert tuple(got.shape) == () and got.dtype is ember.float32
    assert got.item() == pytest.approx(want.item(), rel=1e-6)


# ---- 0-d tensors: dim in [-1, 0] ---------------------------------------------------------------
ZERO_D = {
    "sum": lambda x, d: x.sum(d), "sum_tuple": lambda x, d: x.sum((d,)),
    "mean": lambda x, d: x.mean(d), "prod": lambda x, d: x.prod(d),
    "amax": lambda x, d: x.amax(d), "amin": lambda x, d: x.amin(d),
    "max": lambda x, d: x.max(d), "min": lambda x, d: x.min(d),
    "argmax": lambda x, d: x.argmax(d), "argmin": lambda x, d: x.argmin(d),
    "all": lambda x, d: x.all(d), "any": lambda x, d: x.any(d),
    "logsumexp": lambda x, d: x.logsumexp(d), "norm": lambda x, d: x.norm(dim=d),
    "var": lambda x, d: x.var(d), "std": lambda x, d: x.std(d),
    "cumsum": lambda x, d: x.cumsum(d), "cumprod": lambda x, d: x.cumprod(d),
    "topk": lambda x, d: x.topk(1, d),
    "softmax": lambda x, d: x.softmax(d), "log_softmax": lambda x, d: x.log_softmax(d),
    "sort": lambda x, d: x.sort(d),
}
@pytest.mark.parametrize("op", list(ZERO_D))
def test_zero_dim_tensors_take_dim_minus_one_or_zero(device, op):
    fn = ZERO_D[op]
    xe, xt = _pair(2.5, "float32", device)
    for dim in (-2, -1, 0, 1):
        assert_same_outcome(lambda x: fn(x, dim), xe, xt, f"{op} of a 0-d tensor, dim={dim}")


# ---- softmax of integer tensors ----------------------------------------------------------------
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_of_integer_tensors(device, op):
    """An empty integer tensor comes back as it is (its dtype); a non-empty one raises
    PyTorch's NotImplementedError (which names the kernel: "..._lastdim_kernel_impl" for
    the last dim)."""
    for dtype in ("int64", "uint8", "int32", "bool"):
        for shape, dim in [((0,), 0), ((2, 0), 1), ((0, 3), 0), ((2, 3), 0), ((2, 3), 1),
                           ((), 0), ((0,), 1)]:
            xe, xt = _pair(np.ones(shape), dtype, device)
            assert_same_outcome(lambda x: getattr(x, op)(dim), xe, xt,
                                f"{op} {dtype} {shape} dim={dim}")


# ---- reductions without an identity over nothing -------------------------------------------------
EMPTY_NO_DIM = {
    "amax": lambda x: x.amax(), "amax_tuple": lambda x: x.amax(()),
    "amax_list": lambda x: x.amax([]), "amin": lambda x: x.amin(),
    "amin_tuple": lambda x: x.amin(dim=()), "max": lambda x: x.max(),
    "min": lambda x: x.min(), "amax_dim0": lambda x: x.amax(0),
    "amax_dim1": lambda x: x.amax(1), "amin_keepdim": lambda x: x.amin((), keepdim=True),
}


@pytest.mark.parametrize("op", list(EMPTY_NO_DIM))
def test_max_min_of_empty_tensors(device, op):
    for shape in [(0,), (0, 3), (3, 0)]:
        xe, xt = _pair(np.zeros(shape), "float32", device)
        assert_same_outcome(EMPTY_NO_DIM[op], xe, xt, f"{op} {shape}")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("p", [INF, -INF, -1, -2.5, -0.5, 0.5, 0, 2])
def test_norms_without_identity_of_empty_tensors(device, p, dtype):
    """The inf norm and negative-power norms of nothing raise PyTorch's errors, naming the
    first empty dim as it was passed; the other norms are 0."""
    for shape in [(0,), (0, 3)]:
        xe, xt = _pair(np.zeros(shape), dtype, device)
        for dim in (None, 0, -1, -len(shape), (0, -1), (-1, 0), (), [0]):
            assert_same_outcome(lambda x: x.norm(p, dim=dim), xe, xt,
                                f"norm(p={p}) of {shape} dim={dim!r}")


# ---- bool bytes other than 0 / 1 ---------------------------------------------------------------
BOOL_OPS = {
    "sum": lambda x: x.sum(), "sum0": lambda x: x.sum(0), "sum1": lambda x: x.sum(1),
    "prod": lambda x: x.prod(), "prod1": lambda x: x.prod(1),
    "cumsum0": lambda x: x.cumsum(0), "cumsum1": lambda x: x.cumsum(1),
    "cumprod1": lambda x: x.cumprod(1),
    "mean": lambda x: x.mean(dtype=_mod(x).float32),
    "mean0": lambda x: x.mean(0, dtype=_mod(x).float64),
    "to_int64": lambda x: x.to(_mod(x).int64), "to_uint8": lambda x: x.to(_mod(x).uint8),
    "to_float32": lambda x: x.to(_mod(x).float32), "to_float16": lambda x: x.to(_mod(x).float16),
    "to_int64_transposed": lambda x: x.t().to(_mod(x).int64),
    "all": lambda x: x.all(), "all1": lambda x: x.all(1), "any0": lambda x: x.any(0),
    "all_bytes": lambda x: x.all(1).to(_mod(x).uint8),
    "amax_bytes": lambda x: x.amax(1).to(_mod(x).uint8),
    "amin_bytes": lambda x: x.amin(0).to(_mod(x).uint8),
    "max_indices": lambda x: x.max(1).indices, "min_indices": lambda x: x.min(0).indices,
    "argmax_int": lambda x: x.int().argmax(1),
    "count_nonzero": lambda x: _mod(x).count_nonzero(x, 1),
    "eq_true": lambda x: (x == True).to(_mod(x).int64),  # noqa: E712 - the op under test
}
#: elementwise ops on two bools compare their raw bytes (2 == True is False)


@pytest.fixture(scope="module")
def bool_bytes():
    """(6, 7) bytes, a quarter of them 0, the rest 1..255, viewed as bool."""
    rng = np.random.default_rng(13)
    b = rng.integers(1, 256, (6, 7)).astype(np.uint8)
    b[rng.random((6, 7)) < 0.25] = 0
    b[1] = [2, 0, 1, 255, 7, 0, 128]
    b[2] = [3, 5, 9, 4, 255, 2, 1]         # no zero: a row whose product is 1
    return b


@pytest.mark.parametrize("op", list(BOOL_OPS))
def test_bool_bytes_other_than_0_and_1_count_as_true(device, bool_bytes, op):
    xt = torch.from_numpy(bool_bytes.copy().view(bool))
    xe = ember.from_numpy(bool_bytes.copy().view(bool)).to(device)
    raw = xe.cpu().numpy().view(np.uint8)
    assert raw.max() > 1, "the transfer normalised the bytes: the test would prove nothing"
    assert_same_outcome(BOOL_OPS[op], xe, xt, f"{op} of bool bytes {bool_bytes.tolist()}")


def test_bool_bytes_sum_as_numpy_counts(device):
    """The issue's example, against NumPy."""
    arr = np.array([2, 1, 0], np.uint8).view(bool)
    x = ember.from_numpy(arr).to(device)
    assert x.sum().item() == np.sum(arr) == 2
    assert x.to(ember.int64).cpu().numpy().tolist() == arr.astype(np.int64).tolist()


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_of_every_length_against_float64(log):
    """Rows of 1 to 100 elements and longer (the CPU's vectorised rows: whole blocks of 16
    lanes, a masked tail, rows past 2048 on the blocked sums), with -inf entries, a NaN row
    and an all -inf row, against NumPy in float64."""
    rng = np.random.default_rng(0)
    fn = ember.log_softmax if log else ember.softmax
    for n in list(range(1, 101)) + [255, 256, 257, 2047, 2048, 2049, 5000]:
        x = (rng.standard_normal((4, n)) * 5).astype(np.float32)
        x[1, ::3] = -np.inf
        x[1, 0] = 0.0
        x[2, n // 2] = np.nan
        x[3, :] = -np.inf
        got = fn(ember.tensor(x), -1).numpy()
        x64 = x.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = x64.max(-1, keepdims=True)
            z = x64 - m
            lse = np.log(np.exp(z).sum(-1, keepdims=True))
            want = z - lse if log else np.exp(z - lse)
        np.testing.assert_allclose(got[:2], want[:2], rtol=2e-6, atol=1e-6 if not log else 2e-5)
        assert np.isnan(got[2]).all() and np.isnan(got[3]).all()
