"""Discrete Fourier transforms (PyTorch's ``torch.fft``).

Every transform reduces to the op ``fft_pairs`` (``dispatcher/defs/spectral.py``): the
unnormalized DFT along the last dimension of complex values seen as real pairs. The cpu
backend runs it as a mixed-radix C++ kernel (Bluestein's algorithm for large prime
factors); other devices run its composite (DFT-matrix products, Cooley-Tukey splits,
Bluestein). Real-input, Hermitian and multi-dimensional transforms, lengths ``n`` / ``s``,
and the three normalizations are built here on top, and autograd differentiates them (the
gradient of a DFT is the DFT of the opposite sign).

>>> x = ember.tensor([1., 2., 3., 4.])
>>> ember.fft.fft(x)
tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
>>> ember.fft.irfft(ember.fft.rfft(x), n=4)
tensor([1., 2., 3., 4.])
"""
from __future__ import annotations

import math

from ember.dispatcher import complex_ops as CX
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import index as IX
from ember.dispatcher.defs import spectral as SP
from ember.dispatcher.device import to_device

from . import _functions as _F

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

# ---- argument handling ------------------------------------------------------------------------
_NORMS = (None, "backward", "ortho", "forward")


def _scale(norm, n, forward):
    """The factor a transform of length ``n`` is multiplied by."""
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") == forward:
        return 1.0 / n
    return 1.0


def _flip_norm(norm):
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


def _as_complex(x, op):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.dtype is D.complex32:   # (PyTorch's CPU transforms have no float16 kernels)
        raise RuntimeError("MKL FFT doesn't support tensors of type: Half")
    if x.dtype._kind == 3:
        return x
    return O.to(x, dtype=_complex_dtype(x.dtype, op))


def _complex_dtype(d, op):
    if d._kind < 2:
        return D.complex_of(D.get_default_dtype())
    if d not in (D.float32, D.float64):
        raise RuntimeError(f"{op}(): Unsupported dtype {D.torch_name(d)} (ember's transforms "
                           "take float32, float64 and complex inputs)")
    return D.complex_of(d)


def _real_input(x, op):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.dtype._kind == 3:
        raise RuntimeError(f"{op} expects a real input tensor, but got {D.torch_name(x.dtype)}")
    rdt = D.real_of(_complex_dtype(x.dtype, op))
    return x if x.dtype is rdt else O.to(x, dtype=rdt)


def _resize(x, d, n):
    """``x`` trimmed or zero-padded to length ``n`` along dim ``d``."""
    have = x.shape[d]
    if n == have:
        return x
    if n < have:
        return V.narrow(x, d, 0, n)
    shape = list(x.shape)
    shape[d] = n - have
    return IX.cat([x, O.zeros(tuple(shape), x.dtype, x.device)], d)


def _length(n, default, op):
    if n is None:
        n = default   # (an empty dimension is refused too, as PyTorch's)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return int(n)


def _c2c(x, d, sign, scale):
    """The DFT of complex ``x`` along dim ``d``, times ``scale``."""
    nd = len(x.shape)
    if d != nd - 1:
        x = V.movedim(x, d, -1)
    y = SP.fft_last(O.contiguous(x), sign)
    if scale != 1.0:
        y = O.elementwise("mul", y, scale)
    return V.movedim(y, -1, d) if d != nd - 1 else y


def _out(res, out, op):
    return O.write_out(op, out, res) if out is not None else res


def _dim(x, dim, op):
    return C.normalize_dim(dim, len(x.shape), op)


# ---- one dimension ----------------------------------------------------------------------------
def _c2c_1d(input, n, dim, norm, out, op, forward):
    x = _as_complex(input, op)
    d = _dim(x, dim, op)
    n = _length(n, x.shape[d], op)
    return _out(_c2c(_resize(x, d, n), d, -1 if forward else 1, _scale(norm, n, forward)), out,
                op)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim``.

    Args:
        input (Tensor): the input (real inputs are taken as complex).
        n (int, optional): the signal length: ``input`` is trimmed or zero-padded to it.
        dim (int): the dimension to transform. Default: -1.
        norm (str, optional): ``"backward"`` (default: no scaling), ``"ortho"`` (1/sqrt(n))
            or ``"forward"`` (1/n).
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.fft.fft(ember.tensor([1., 0., 0., 0.]))
        tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _c2c_1d(input, n, dim, norm, out, "fft_fft", True)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional inverse discrete Fourier transform of ``input`` along ``dim``
    (scaled by 1/n by default, ``norm="backward"``). Arguments as :func:`fft`.

    Example:
        >>> ember.fft.ifft(ember.tensor([4., 0., 0., 0.]))
        tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _c2c_1d(input, n, dim, norm, out, "fft_ifft", False)


def _rfft_along(x, d, n, sign, scale):
    """The ``n // 2 + 1`` first frequencies of the DFT (kernel exp(sign 2 pi i jk / n)) of
    real ``x`` along ``d`` (op ``rfft_real``; the + sign is its conjugate)."""
    x = _resize(x, d, n)
    last = len(x.shape) - 1
    if d != last:
        x = V.movedim(x, d, -1)
    y = V.view_as_complex(SP.rfft_real(O.contiguous(x)))
    y._base = None
    if sign > 0:
        y = CX.conj(y)
    if scale != 1.0:
        y = O.elementwise("mul", y, scale)
    return V.movedim(y, -1, d) if d != last else y


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The discrete Fourier transform of real ``input``: the ``n // 2 + 1`` non-negative
    frequencies (the others are their conjugates). Arguments as :func:`fft`.

    Example:
        >>> ember.fft.rfft(ember.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    x = _real_input(input, "rfft")
    d = _dim(x, dim, "fft_rfft")
    n = _length(n, x.shape[d], "fft_rfft")
    return _out(O.contiguous(_rfft_along(x, d, n, -1, _scale(norm, n, True))), out, "fft_rfft")


def _c2r_along(x, d, n, sign, scale):
    """The real signal of length ``n`` whose one-sided spectrum (along ``d``) is ``x``:
    the spectrum extended by conjugate symmetry, transformed, real part (the imaginary
    parts of the zero and Nyquist frequencies do not matter, as in PyTorch)."""
    half = n // 2 + 1
    x = _resize(x, d, half)
    rest = n - half
    if rest:
        mirror = CX.conj(IX.flip(V.narrow(x, d, 1, rest), (d,)))
        x = IX.cat([x, mirror], d)
    y = _c2c(x, d, sign, scale)
    return O.contiguous(V.complex_part(y, 0))


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of :func:`rfft`: the real signal of length ``n`` (default
    ``2 * (input.size(dim) - 1)``) whose non-negative frequencies are ``input``.

    Example:
        >>> ember.fft.irfft(ember.tensor([10.+0j, -2.+2j, -2.+0j]))
        tensor([1., 2., 3., 4.])
    """
    x = _as_complex(input, "fft_irfft")
    d = _dim(x, dim, "fft_irfft")
    n = _length(n, 2 * (x.shape[d] - 1), "fft_irfft")
    return _out(_c2r_along(x, d, n, 1, _scale(norm, n, False)), out, "fft_irfft")


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The discrete Fourier transform of a signal with Hermitian symmetry given by its first
    half ``input``: a real result of length ``n`` (default ``2 * (input.size(dim) - 1)``).

    Example:
        >>> ember.fft.hfft(ember.tensor([1.+0j, 0j, 0j]))
        tensor([1., 1., 1., 1.])
    """
    x = _as_complex(input, "fft_hfft")
    d = _dim(x, dim, "fft_hfft")
    n = _length(n, 2 * (x.shape[d] - 1), "fft_hfft")
    return _out(_c2r_along(CX.conj(x), d, n, 1, _scale(_flip_norm(norm), n, False)), out,
                "fft_hfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of :func:`hfft`: the ``n // 2 + 1`` first frequencies of the inverse
    transform of real ``input``.

    Example:
        >>> ember.fft.ihfft(ember.tensor([1., 1., 1., 1.]))
        tensor([1.+0.j, 0.+0.j, 0.+0.j])
    """
    x = _real_input(input, "ihfft")
    d = _dim(x, dim, "fft_ihfft")
    n = _length(n, x.shape[d], "fft_ihfft")
    y = _rfft_along(x, d, n, 1, _scale(norm, n, False))
    return _out(O.contiguous(y), out, "fft_ihfft")


# ---- several dimensions -----------------------------------------------------------------------
def _dims_sizes(x, s, dim, op):
    nd = len(x.shape)
    if dim is None:
        dims = list(range(nd)) if s is None else list(range(nd - len(s), nd))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [C.normalize_dim(d, nd, op) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}(): dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if len(s) != len(dims):
            raise RuntimeError(f"{op}(): When given, dim and shape arguments must have the same "
                               f"length (got {len(dims)} dims and {len(s)} sizes)")
        sizes = [None if v == -1 else v for v in s]
    else:
        sizes = [None] * len(dims)
    return dims, sizes


def _cnd(input, s, dim, norm, forward, op, out):
    x = _as_complex(input, op)
    dims, sizes = _dims_sizes(x, s, dim, op)
    for d, n in zip(dims, sizes):
        n = _length(n, x.shape[d], op)
        x = _c2c(_resize(x, d, n), d, -1 if forward else 1, _scale(norm, n, forward))
    return _out(x if dims else O.clone(x), out, op)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional discrete Fourier transform over ``dim`` (default: every dimension,
    or the last ``len(s)``), each trimmed or zero-padded to the sizes ``s``.

    Example:
        >>> ember.fft.fftn(ember.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _cnd(input, s, dim, norm, True, "fft_fftn", out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional inverse discrete Fourier transform (arguments as :func:`fftn`).

    Example:
        >>> ember.fft.ifftn(ember.fft.fftn(ember.ones(2, 2))).real
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _cnd(input, s, dim, norm, False, "fft_ifftn", out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional discrete Fourier transform (:func:`fftn` over ``dim``)."""
    return _cnd(input, s, dim, norm, True, "fft_fft2", out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional inverse discrete Fourier transform (:func:`ifftn` over ``dim``)."""
    return _cnd(input, s, dim, norm, False, "fft_ifft2", out)


def _rnd(input, s, dim, norm, op, inverse_sign=False):
    x = _real_input(input, op)
    dims, sizes = _dims_sizes(x, s, dim, op)
    if not dims:
        raise RuntimeError(f"{op}(): must have at least one dimension to transform")
    sign = 1 if inverse_sign else -1
    last, n_last = dims[-1], _length(sizes[-1], x.shape[dims[-1]], op)
    y = _rfft_along(x, last, n_last, sign, _scale(norm, n_last, not inverse_sign))
    for d, n in zip(dims[:-1], sizes[:-1]):
        n = _length(n, y.shape[d], op)
        y = _c2c(_resize(y, d, n), d, sign, _scale(norm, n, not inverse_sign))
    return O.contiguous(y)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional discrete Fourier transform of real ``input``: one-sided (``n // 2
    + 1`` frequencies) in the last dimension of ``dim``, full in the others.

    Example:
        >>> ember.fft.rfftn(ember.ones(2, 4)).shape
        ember.Size([2, 3])
    """
    return _out(_rnd(input, s, dim, norm, "fft_rfftn"), out, "fft_rfftn")


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional :func:`rfftn` over ``dim``."""
    return _out(_rnd(input, s, dim, norm, "fft_rfft2"), out, "fft_rfft2")


def _irnd(input, s, dim, norm, op, hermitian=False):
    x = _as_complex(input, op)
    dims, sizes = _dims_sizes(x, s, dim, op)
    if not dims:
        raise RuntimeError(f"{op}(): must have at least one dimension to transform")
    if hermitian:
        x, norm = CX.conj(x), _flip_norm(norm)
    for d, n in zip(dims[:-1], sizes[:-1]):
        n = _length(n, x.shape[d], op)
        x = _c2c(_resize(x, d, n), d, 1, _scale(norm, n, False))
    last = dims[-1]
    n_last = _length(sizes[-1], 2 * (x.shape[last] - 1), op)
    return _c2r_along(x, last, n_last, 1, _scale(norm, n_last, False))


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of :func:`rfftn`: a real result whose last transformed dimension has
    size ``s[-1]`` (default ``2 * (input.size(dim[-1]) - 1)``).

    Example:
        >>> ember.fft.irfftn(ember.fft.rfftn(ember.ones(2, 4)), s=(2, 4))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    return _out(_irnd(input, s, dim, norm, "fft_irfftn"), out, "fft_irfftn")


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional :func:`irfftn` over ``dim``."""
    return _out(_irnd(input, s, dim, norm, "fft_irfft2"), out, "fft_irfft2")


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional discrete Fourier transform of a Hermitian-symmetric signal given by
    its half ``input`` (one-sided in the last dimension of ``dim``): a real result."""
    return _out(_irnd(input, s, dim, norm, "fft_hfftn", hermitian=True), out, "fft_hfftn")


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional :func:`hfftn` over ``dim``."""
    return _out(_irnd(input, s, dim, norm, "fft_hfft2", hermitian=True), out, "fft_hfft2")


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of :func:`hfftn`: the one-sided inverse transform of real ``input``."""
    return _out(_rnd(input, s, dim, norm, "fft_ihfftn", inverse_sign=True), out, "fft_ihfftn")


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional :func:`ihfftn` over ``dim``."""
    return _out(_rnd(input, s, dim, norm, "fft_ihfft2", inverse_sign=True), out, "fft_ihfft2")


# ---- frequencies and shifts -------------------------------------------------------------------
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of a transform of length ``n`` with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``.

    Example:
        >>> ember.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = to_device(device) if device is not None else to_device("cpu")
    k = O.arange(0, n, 1, D.int64, dev)
    k = O.elementwise("sub", k, O.elementwise("mul", O.elementwise("ge", k, (n + 1) // 2), n))
    res = O.to(O.elementwise("div", O.to(k, dtype=D.float64), d * n), dtype=dt)
    if requires_grad:
        res.requires_grad_(True)
    return _out(res, out, "fft_fftfreq")


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`rfft` of length ``n``: ``[0, 1, ..., n // 2] / (d *
    n)``.

    Example:
        >>> ember.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000])
    """
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = to_device(device) if device is not None else to_device("cpu")
    k = O.arange(0, n // 2 + 1, 1, D.int64, dev)
    res = O.to(O.elementwise("div", O.to(k, dtype=D.float64), d * n), dtype=dt)
    if requires_grad:
        res.requires_grad_(True)
    return _out(res, out, "fft_rfftfreq")


def _shift(input, dim, sign):
    nd = len(input.shape)
    if dim is None:
        dims = list(range(nd))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    shifts = [sign * (input.shape[C.normalize_dim(d, nd, "roll")] // 2) for d in dims]
    return _F.roll(input, shifts, dims)


def fftshift(input, dim=None):
    """``input`` with the zero frequency moved to the centre of ``dim`` (every dimension by
    default): a roll by ``size // 2``.

    Example:
        >>> ember.fft.fftshift(ember.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of :func:`fftshift`: a roll by ``-(size // 2)``.

    Example:
        >>> ember.fft.ifftshift(ember.tensor([-2, -1, 0, 1]))
        tensor([ 0,  1, -2, -1])
    """
    return _shift(input, dim, -1)

