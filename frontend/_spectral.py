"""Short-time Fourier transforms (``ember.stft``, ``ember.istft``) over ``ember.fft``.

Frames are views of the (centre-padded) signal (``unfold``), windowed and transformed
along the last dimension; the inverse transforms each frame back and adds the windowed
frames up (``fold``, PyTorch's overlap-add), divided by the summed squared window.
"""
from __future__ import annotations

from ember.dispatcher import complex_ops as _CX
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import index as _IX
from ember.dispatcher.warn import warn

from . import _creation as K
from . import fft as FFT
from .nn import functional as F

__all__ = ["stft", "istft"]


def _window(window, win_length, n_fft, dtype, device, op):
    if window is None:
        window = K.ones(win_length, dtype=dtype, device=device)
    elif window.shape != (win_length,):
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = F.pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(op, n_fft, hop_length, win_length, size):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if n_fft <= 0 or (size is not None and n_fft > size):
        raise RuntimeError(f"{op}: expected 0 < n_fft <= {size}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform of a 1-D signal or a batch of them (2-D).

    Args:
        input (Tensor): the signal, ``(L,)`` or ``(B, L)``.
        n_fft (int): the frame (and transform) length.
        hop_length (int, optional): the distance between frames. Default: ``n_fft // 4``.
        win_length (int, optional): the window's length (padded to ``n_fft`` on both
            sides). Default: ``n_fft``.
        window (Tensor, optional): the window; a rectangular one (with a warning) if None.
        center (bool): pad the signal by ``n_fft // 2`` on both sides (``pad_mode``) so
            that frame t is centred at ``t * hop_length``. Default: True.
        pad_mode (str): ``"reflect"``, ``"constant"``, ``"replicate"`` or ``"circular"``.
        normalized (bool): multiply by ``n_fft ** -0.5``. Default: False.
        onesided (bool, optional): the ``n_fft // 2 + 1`` non-negative frequencies only
            (default for real input).
        return_complex (bool): required for real inputs; False returns
            ``view_as_real`` of the result (deprecated in PyTorch).

    Returns:
        Tensor: ``(B?, freq, frames)`` complex.

    Example:
        >>> x = ember.arange(8.)
        >>> ember.stft(x, 4, window=ember.hann_window(4), return_complex=True).shape
        ember.Size([3, 9])
    """
    if not isinstance(input, TensorBase):
        raise TypeError(f"stft(): argument 'input' must be Tensor, not {type(input).__name__}")
    if window is None:
        warn("A window was not provided. A rectangular window will be applied,which is known "
             "to cause spectral leakage. Other windows such as torch.hann_window or "
             "torch.hamming_window are recommended to reduce spectral leakage.To suppress "
             "this warning and use a rectangular window, explicitly set `window=torch.ones("
             "n_fft, device=<device>)`.", UserWarning)
    if return_complex is None:
        if input.dtype._kind != 3 and (window is None or window.dtype._kind != 3):
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warn("stft with return_complex=False is deprecated. In a future pytorch release, "
             "stft will return complex tensors for all inputs, and return_complex=False will "
             "raise an error.\nNote: you can still call torch.view_as_real on the complex "
             "output to recover the old return format.", UserWarning)
    nd = len(input.shape)
    if nd not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {nd}D tensor")
    x = input if nd == 2 else V.unsqueeze(input, 0)
    if x.dtype._kind < 2:
        x = O.to(x, dtype=D.get_default_dtype())
    if center:
        pad = n_fft // 2
        x = V.squeeze(F.pad(V.unsqueeze(x, 0), (pad, pad), pad_mode), 0)
    hop, win = _lengths("stft", n_fft, hop_length, win_length, x.shape[-1])
    w = _window(window, win, n_fft, D.real_of(x.dtype), x.device, "stft")
    frames = O.elementwise("mul", V.unfold(x, -1, n_fft, hop), w)     # (B, T, n_fft)
    real = frames.dtype._kind != 3
    if onesided is None:
        onesided = real
    if onesided and not real:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = FFT.rfft(frames, norm=norm) if onesided else FFT.fft(frames, norm=norm)
    spec = V.transpose(spec, -1, -2)
    if nd == 1:
        spec = V.squeeze(spec, 0)
    if not return_complex:
        return V.view_as_real(O.contiguous(spec))
    return spec


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of :func:`stft`: overlap-add of the inverse transforms of the frames,
    divided by the summed squared window.

    Args:
        input (Tensor): the complex spectrogram, ``(B?, freq, frames)``.
        n_fft (int): the frame length given to :func:`stft`.
        hop_length (int, optional): as given to :func:`stft`.
        win_length (int, optional): as given to :func:`stft`.
        window (Tensor, optional): as given to :func:`stft`.
        center (bool): as given to :func:`stft`.
        normalized (bool): as given to :func:`stft`.
        onesided (bool, optional): whether ``input`` holds the non-negative frequencies
            only. Default: ``input.size(-2) != n_fft``.
        length (int, optional): the output length (trimmed or zero-padded to it).
        return_complex (bool): a complex result (for two-sided input). Default: False.

    Example:
        >>> x = ember.randn(64)
        >>> w = ember.hann_window(16)
        >>> y = ember.istft(ember.stft(x, 16, window=w, return_complex=True), 16, window=w,
        ...                 length=64)
        >>> bool(ember.allclose(x, y, atol=1e-5))
        True
    """
    if not isinstance(input, TensorBase) or input.dtype._kind != 3:
        raise RuntimeError("istft requires a complex-valued input tensor")
    nd = len(input.shape)
    if nd not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but "
                           f"got {nd}D tensor")
    spec = input if nd == 3 else V.unsqueeze(input, 0)
    hop, win = _lengths("istft", n_fft, hop_length, win_length, None)
    if onesided is None:
        onesided = spec.shape[-2] != n_fft
    if onesided and spec.shape[-2] != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{spec.shape[-2]}")
    if not onesided and spec.shape[-2] != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{spec.shape[-2]}")
    if return_complex and onesided:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    rdt = D.real_of(spec.dtype)
    w = _window(window, win, n_fft, rdt, spec.device, "istft")
    norm = "ortho" if normalized else "backward"
    frames = V.transpose(spec, -1, -2)                                  # (B, T, freq)
    if onesided:
        frames = FFT.irfft(frames, n=n_fft, norm=norm)
    else:
        frames = FFT.ifft(frames, n=n_fft, norm=norm)
        if not return_complex:
            frames = O.contiguous(V.complex_part(frames, 0))
    frames = O.elementwise("mul", frames, w)
    n_frames = frames.shape[-2]
    total = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames, total, n_fft, hop)                         # (B, total)
    env = _overlap_add(V.expand(O.elementwise("mul", w, w), (1, n_frames, n_fft)), total,
                       n_fft, hop)
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    end_in = min(end, total)
    y = V.narrow(y, -1, start, end_in - start)
    env = V.narrow(env, -1, start, end_in - start)
    if bool(O.item(O.reduce("min", O.elementwise("abs", env)) < 1e-11)):
        raise RuntimeError("istft: window overlap add min: the window's squares do not add up "
                           "to a positive envelope (the NOLA condition); check the window "
                           "and hop_length")
    y = O.elementwise("div", y, env)
    if end > total:
        y = F.pad(y, (0, end - total)) if y.dtype._kind != 3 else _cat_zeros(y, end - total)
    return V.squeeze(y, 0) if nd == 2 else y


def _overlap_add(frames, total, n_fft, hop):
    """Frames ``(B, T, n_fft)`` added at multiples of ``hop`` into ``(B, total)``."""
    if frames.dtype._kind == 3:
        re = _overlap_add(O.contiguous(V.complex_part(frames, 0)), total, n_fft, hop)
        im = _overlap_add(O.contiguous(V.complex_part(frames, 1)), total, n_fft, hop)
        return _CX.join(re, im)
    cols = V.transpose(frames, -1, -2)                                  # (B, n_fft, T)
    out = F.fold(cols, (1, total), (1, n_fft), stride=(1, hop))         # (B, 1, 1, total)
    return V.reshape(out, (frames.shape[0], total))


def _cat_zeros(y, n):
    return _IX.cat([y, O.zeros(y.shape[:-1] + (n,), y.dtype, y.device)], -1)

