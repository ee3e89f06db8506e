"""``ember.backends.cuda``: PyTorch's CUDA math flags (``matmul.allow_tf32``,
``allow_fp16_reduced_precision_reduction``, the scaled-dot-product-attention kernel
switches). They are plain settable attributes; ember's kernels compute in full precision
whatever they say, which is always an allowed outcome of these flags.

>>> import ember
>>> ember.backends.cuda.matmul.allow_tf32 = True
>>> ember.backends.cuda.matmul.allow_tf32
True
"""
from __future__ import annotations

import contextlib

from ember._device_ns import cuda as _cuda_ns

__all__ = ["is_built", "matmul", "cufft_plan_cache", "preferred_linalg_library",
           "preferred_blas_library", "SDPAParams", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
           "can_use_flash_attention", "can_use_efficient_attention", "can_use_cudnn_attention",
           "is_flash_attention_available", "sdp_kernel", "allow_fp16_bf16_reduction_math_sdp",
           "fp16_bf16_reduction_math_sdp_allowed"]


def is_built() -> bool:
    """Whether ember's CUDA backend plugin is installed (it may still see no GPU)."""
    try:
        return _cuda_ns._backend() is not None
    except Exception:
        return False


class _MatmulFlags:
    """``ember.backends.cuda.matmul``: the flags PyTorch's cuBLAS calls read. Unknown
    attributes raise AttributeError, as in PyTorch (a typo is not silently accepted)."""
    __slots__ = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction",
                 "allow_fp16_accumulation")

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.allow_fp16_accumulation = False

    def __repr__(self):
        return "<ember.backends.cuda.matmul>"


matmul = _MatmulFlags()


class _PlanCache:
    """``cufft_plan_cache``: ember keeps no cuFFT plans; the sizes read as PyTorch's
    defaults and ``clear()`` does nothing."""

    def __init__(self):
        self.size = 0
        self.max_size = 4096

    def clear(self):
        self.size = 0

    def __getitem__(self, device):
        return self


cufft_plan_cache = _PlanCache()

_LINALG = "default"
_BLAS = "cublas"


def preferred_linalg_library(backend=None):
    """Get (or set, with ``backend``) the preferred linear-algebra library name."""
    global _LINALG
    if backend is not None:
        name = getattr(backend, "name", backend)
        if name not in ("default", "cusolver", "magma"):
            raise RuntimeError(f"Unknown input value {backend!r}: expected one of 'default', "
                               "'cusolver', 'magma'")
        _LINALG = name
    return _LINALG


def preferred_blas_library(backend=None):
    """Get (or set, with ``backend``) the preferred BLAS library name."""
    global _BLAS
    if backend is not None:
        name = getattr(backend, "name", backend)
        if name not in ("cublas", "cublaslt", "ck"):
            raise RuntimeError(f"Unknown input value {backend!r}: expected one of 'cublas', "
                               "'cublaslt', 'ck'")
        _BLAS = name
    return _BLAS


# ---- scaled dot-product attention kernel switches --------------------------------------
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
        "fp16_bf16_reduction_math": False}


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def enable_flash_sdp(enabled: bool):
    _SDP["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool):
    _SDP["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def enable_math_sdp(enabled: bool):
    _SDP["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_cudnn_sdp(enabled: bool):
    _SDP["cudnn"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    return _SDP["fp16_bf16_reduction_math"]


def allow_fp16_bf16_reduction_math_sdp(enabled: bool):
    _SDP["fp16_bf16_reduction_math"] = bool(enabled)


def is_flash_attention_available() -> bool:
    """False: ember has no FlashAttention kernel (its attention is the math path)."""
    return False


class SDPAParams:
    """The arguments ``can_use_*_attention`` inspect (kept for signature parity)."""

    def __init__(self, query, key, value, attn_mask=None, dropout=0.0, is_causal=False,
                 enable_gqa=False):
        self.query, self.key, self.value = query, key, value
        self.attn_mask, self.dropout, self.is_causal = attn_mask, dropout, is_causal
        self.enable_gqa = enable_gqa


def can_use_flash_attention(params, debug: bool = False) -> bool:
    return False


def can_use_efficient_attention(params, debug: bool = False) -> bool:
    return False


def can_use_cudnn_attention(params, debug: bool = False) -> bool:
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Context manager switching the attention kernels inside the block (deprecated in
    PyTorch in favour of ``ember.nn.attention.sdpa_kernel``; kept because programs use
    it). ember always runs the math path, so the switches only record the choice."""
    old = dict(_SDP)
    _SDP.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _SDP.clear()
        _SDP.update(old)
