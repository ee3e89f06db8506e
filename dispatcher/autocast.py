"""Automatic mixed precision: the autocast state and the per-op casting policy.

``ember.amp.autocast`` (the frontend) switches the per-thread state kept here; the
dispatcher's entry points ask :func:`cast_args` for the inputs an op should really run
on. As in PyTorch, each device type has its own switch and dtype (CPU: bfloat16, CUDA and
other accelerators: float16), and an op falls in one of three lists:

Each list is kept per device kind (``"cpu"`` and ``"default"``, PyTorch's CPU and CUDA
lists):

- ``LOWER``: ops that are fast and safe in lower precision (matrix products, convolution,
  linear, attention): floating inputs are cast to the autocast dtype;
- ``FP32``: ops that need float32's range or precision (exp, log, pow, softmax,
  reductions, norms, losses): lower-precision floating inputs are cast up to float32;
- ``PROMOTE``: ops on several inputs that run in the widest floating dtype among them
  (addcmul, cat, stack, ...).

Ops in no list run on their inputs as they are. Casts go through ``ops.to``, so autograd
records them and gradients come back in the inputs' own dtypes. Integer, bool and float64
tensors are never cast (PyTorch's "eligible" inputs: float32, float16, bfloat16).

The hot path pays one test: ``ACTIVE[0]`` counts the autocast regions entered (any
thread); only when it is non-zero does an entry call :func:`cast_args`.
"""
from __future__ import annotations

import threading

from . import dtypes as D
from .core import TensorBase

__all__ = ["ACTIVE", "STATE", "LOWER", "FP32", "PROMOTE", "DEFAULT_DTYPES", "policy",
           "cast_args", "cast_call", "cast_composite", "is_enabled", "get_dtype",
           "set_enabled", "set_dtype", "SUPPORTED_DTYPES"]

#: number of autocast regions currently entered, over all threads (the cheap hot-path test)
ACTIVE = [0]

#: each device type's default lower-precision dtype (PyTorch's; opencl, which PyTorch lacks,
#: takes the CPU's: its devices are mostly CPUs and integrated GPUs, whose float16 has no
#: float32-like range)
DEFAULT_DTYPES = {"cpu": D.bfloat16, "opencl": D.bfloat16}

#: the lower-precision dtypes an autocast region may use, per device type (others: any
#: of float16 and bfloat16)
SUPPORTED_DTYPES = {"cpu": (D.bfloat16, D.float16)}


class _State(threading.local):
    """Per-thread switches: device type -> enabled, device type -> dtype."""

    def __init__(self):
        self.enabled: dict = {}
        self.dtype: dict = {}
        self.cache_enabled = True
        self.nesting = 0


STATE = _State()


def default_dtype(device_type: str):
    return DEFAULT_DTYPES.get(device_type, D.float16)


def is_enabled(device_type: str = "cuda") -> bool:
    return bool(STATE.enabled.get(device_type, False))


def get_dtype(device_type: str):
    return STATE.dtype.get(device_type) or default_dtype(device_type)


def set_enabled(device_type: str, enabled: bool) -> None:
    """Switch autocast for ``device_type`` (keeps ``ACTIVE`` in step)."""
    was = is_enabled(device_type)
    STATE.enabled[device_type] = bool(enabled)
    if enabled and not was:
        ACTIVE[0] += 1
    elif was and not enabled:
        ACTIVE[0] -= 1


def set_dtype(device_type: str, dtype) -> None:
    STATE.dtype[device_type] = dtype


# ---- the policy (PyTorch's autocast op lists, by ember op / entry name) --------------------
# CPU and the accelerators have different lists in PyTorch (CPU keeps exp, softmax and sums
# in the lower dtype, for instance); "cpu" uses the first, every other device type the second.
LOWER = {
    "cpu": frozenset({
        "conv1d", "conv2d", "conv3d", "convolution", "bmm", "mm", "linalg_vecdot", "baddbmm",
        "addmm", "addbmm", "linear", "matmul", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "prelu", "scaled_dot_product_attention",
        "multi_head_attention_forward"}),
    "default": frozenset({
        "conv1d", "conv2d", "conv3d", "convolution", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
        "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
        "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
        "scaled_dot_product_attention"}),
}
FP32 = {
    "cpu": frozenset({
        "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile",
        "nanquantile", "stft", "cdist", "trace", "view_as_complex", "cholesky",
        "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr",
        "pinverse", "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d",
        "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
        "replication_pad3d", "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
        "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss", "cross_entropy",
        "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
        "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div",
        "multilabel_margin_loss", "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft",
        "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2",
        "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond",
        "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals",
        "linalg_eigvals", "linalg_eigvalsh", "linalg_inv", "linalg_householder_product",
        "linalg_tensorinv", "linalg_tensorsolve", "fake_quantize_per_tensor_affine",
        "geqrf", "linalg_eig", "linalg_eigh", "linalg_qr", "linalg_svd", "linalg_lstsq",
        "linalg_det", "linalg_slogdet", "linalg_inv_ex", "linalg_lu_factor", "linalg_lu",
        "linalg_lu_solve", "linalg_matrix_exp"}),
    "default": frozenset({
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
        "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm",
        "norm", "nuclear_norm", "frobenius_norm", "cosine_similarity", "poisson_nll_loss",
        "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div",
        "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
        "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist",
        "renorm", "logsumexp", "sum", "prod", "cumsum", "cumprod", "softmax", "log_softmax",
        "softmin", "cross_entropy", "normalize"}),
}
PROMOTE = {
    "cpu": frozenset({"stack", "cat", "index_copy"}),
    "default": frozenset({"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot",
                          "grid_sampler", "index_put", "scatter_add", "tensordot"}),
}

_ELIGIBLE = (D.float32, D.float16, D.bfloat16)

#: entries of PyTorch's CPU float32 list that its autocast does not apply to the public
#: function (the call reaches another overload, e.g. torch.linalg.det -> _linalg_det):
#: measured with torch 2.13, a bfloat16 input reaches the op as it is (PyTorch raises for
#: most; matrix_exp computes in bfloat16), and ember does the same
NOT_APPLIED = {"cpu": frozenset({"linalg_det", "linalg_lu", "linalg_lu_factor",
                                 "linalg_lu_solve", "linalg_slogdet", "linalg_matrix_exp"})}


def policy(name: str, device_type: str = "cpu") -> str | None:
    """``"lower"``, ``"fp32"``, ``"promote"`` or None for the op (or entry) ``name`` on
    ``device_type``."""
    key = "cpu" if device_type == "cpu" else "default"
    if name in NOT_APPLIED.get(key, ()):
        return None
    if name in LOWER[key]:
        return "lower"
    if name in FP32[key]:
        return "fp32"
    if name in PROMOTE[key]:
        return "promote"
    return None


def _enabled_for(t) -> bool:
    return STATE.enabled.get(t.device.type, False)


def _cast(v, dtype, to):
    """``v`` (a tensor, a list of tensors, anything else) with eligible floating tensors on
    an autocast-enabled device cast to ``dtype``."""
    if isinstance(v, TensorBase):
        if v.dtype is not dtype and v.dtype in _ELIGIBLE and _enabled_for(v):
            return to(v, None, dtype)
        return v
    if isinstance(v, (list, tuple)) and any(isinstance(x, TensorBase) for x in v):
        return type(v)(_cast(x, dtype, to) for x in v)
    return v


def _tensors(args):
    for a in args:
        if isinstance(a, TensorBase):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, TensorBase))


def _target(name, args):
    """The dtype the op's eligible inputs go to, or None (leave them)."""
    ts = [t for t in _tensors(args) if _enabled_for(t)]
    if not ts:
        return None
    p = policy(name, ts[0].device.type)
    if p is None:
        return None
    if p == "lower":
        return get_dtype(ts[0].device.type)
    if p == "fp32":
        return D.float32
    widest = None
    for t in ts:
        if t.dtype.is_floating_point and (widest is None or t.dtype.itemsize >
                                          widest.itemsize):
            widest = t.dtype
    return widest


def cast_args(name: str, args: tuple, to=None) -> tuple:
    """``args`` with the casts autocast makes for op ``name`` (unchanged when autocast is
    off on their device or the op is in no list). ``to(x, device, dtype)`` performs a
    cast (``ops.to``, recorded by autograd); it is passed in because this module sits
    below ``ops``."""
    dtype = _target(name, args)
    if dtype is None:
        return args
    if to is None:
        to = _TO[0]
    return tuple(_cast(a, dtype, to) for a in args)


def cast_call(name: str, args: tuple, kwargs: dict, to=None):
    """:func:`cast_args` for a call with keyword arguments: ``(args, kwargs)``."""
    dtype = _target(name, tuple(args) + tuple(kwargs.values()))
    if dtype is None:
        return args, kwargs
    if to is None:
        to = _TO[0]
    return (tuple(_cast(a, dtype, to) for a in args),
            {k: _cast(v, dtype, to) for k, v in kwargs.items()})


def cast_composite(name: str, ins: tuple, outs: list, to=None):
    """For ``ops.composite_op``: the cast inputs and the outputs' (shape, dtype) list with
    floating output dtypes following the inputs' new dtype."""
    new = cast_args(name, ins, to)
    if new is ins:
        return ins, outs
    first = next((t for t in new if isinstance(t, TensorBase)), None)
    if first is None:
        return new, outs
    return new, [(shape, first.dtype if dt.is_floating_point else dt) for shape, dt in outs]


#: the cast function (``ops.to``), installed by ``ops`` when it is imported (this module
#: must not import ``ops``: ``ops`` imports it)
_TO: list = [None]


def install_cast(fn) -> None:
    """Give this module the function that casts a tensor (``ops.to``)."""
    _TO[0] = fn
