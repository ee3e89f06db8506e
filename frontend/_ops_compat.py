"""ember's top-level functions and Tensor methods that older or less common PyTorch code
reaches for: ``detach``/``rsub``/``can_cast``/``unravel_index``/``nonzero_static``/
``from_file``/``cond``/``set_default_tensor_type`` and a few Tensor methods, PyTorch's
semantics (see frontend/__init__.py for how these modules are wired)."""
from __future__ import annotations

import math
import os

import numpy as np

from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase

from . import _creation as K
from . import _device_ns
from . import _functions as F
from ember.dispatcher.warn import warn as _warn

__all__ = ["detach", "detach_", "rsub", "can_cast", "get_device", "is_distributed",
           "unravel_index", "nonzero_static", "set_default_tensor_type", "from_file", "cond",
           "AcceleratorError", "resize_as_", "get_device_module", "pi", "e", "inf", "nan",
           "newaxis", "SymInt", "SymFloat", "SymBool"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


class AcceleratorError(RuntimeError):
    """Raised for an error reported by an accelerator's runtime (PyTorch's name)."""


class _Symbolic:
    """PyTorch's symbolic numbers: the sizes its compiler traces with dynamic shapes. ember's
    compile traces with concrete sizes (a new shape recompiles), so it never makes one: the
    classes are there for code that asks ``isinstance(n, (int, torch.SymInt))``, which is
    False for every value ember gives, and making one raises."""

    def __init__(self, node):
        raise TypeError(f"ember.{type(self).__name__}: ember traces with concrete sizes and "
                        "makes no symbolic numbers")


class SymInt(_Symbolic):
    """PyTorch's symbolic integer (``torch.SymInt``); ember never makes one.

    Example:
        >>> isinstance(3, ember.SymInt)
        False
    """


class SymFloat(_Symbolic):
    """PyTorch's symbolic float (``torch.SymFloat``); ember never makes one.

    Example:
        >>> isinstance(3.0, ember.SymFloat)
        False
    """


class SymBool(_Symbolic):
    """PyTorch's symbolic bool (``torch.SymBool``); ember never makes one.

    Example:
        >>> isinstance(True, ember.SymBool)
        False
    """


def _tensor(x, op, arg="input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def detach(input):
    """A new tensor sharing ``input``'s data, cut from the autograd graph."""
    return _tensor(input, "detach").detach()


def detach_(input):
    return _tensor(input, "detach_").detach_()


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (PyTorch's reversed subtraction)."""
    _tensor(input, "rsub")
    return F.sub(other, input, alpha=alpha)


def can_cast(from_, to) -> bool:
    """Whether PyTorch's type promotion lets a value of dtype ``from_`` be cast to ``to``
    (no float to integer, no float/integer to bool, ...)."""
    for name, v in (("from_", from_), ("to", to)):
        if not isinstance(v, D.DType):
            raise TypeError(f"can_cast(): argument '{name}' must be torch.dtype, not "
                            f"{type(v).__name__}")
    return O.can_cast(from_, to)


def get_device(input) -> int:
    """The device index of ``input``; -1 for the CPU."""
    t = _tensor(input, "get_device")
    return -1 if t.device.type == "cpu" else (t.device.index or 0)


def is_distributed(input) -> bool:
    """Always False: ember has no distributed tensor type (PyTorch answers False too for
    every ordinary tensor)."""
    _tensor(input, "is_distributed")
    return False


def unravel_index(indices, shape):
    """Flat ``indices`` into a tuple of coordinate tensors for ``shape`` (PyTorch's
    floor-division semantics: negative and out-of-range indices wrap)."""
    t = indices if isinstance(indices, TensorBase) else K.tensor(indices)
    if t.dtype.is_floating_point or t.dtype == D.bool_:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{D.torch_name(t.dtype)}")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    t = t.to(D.int64)
    out, stride = [], 1
    for s in reversed(shape):
        out.append(F.remainder(F.div(t, stride, rounding_mode="floor"), s) if s else t * 0)
        stride *= s
    return tuple(reversed(out))


def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero(input)`` padded with ``fill_value`` or truncated to ``size`` rows."""
    t = _tensor(input, "nonzero_static")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, "
                           f"but got {size}")
    nz = F.nonzero(t)
    n = nz.shape[0]
    if n >= size:
        return nz[:size].clone()
    pad = K.full((size - n, t.ndim), fill_value, dtype=D.int64, device=t.device)
    return F.cat([nz, pad], 0)


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch 2.1: sets the default floating-point dtype from a legacy tensor
    type (``ember.DoubleTensor`` or ``'torch.DoubleTensor'``); use ``set_default_dtype``."""
    _warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please "
          "use torch.set_default_dtype() and torch.set_default_device() as "
          "alternatives.", UserWarning)
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    table = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
             "BFloat16Tensor": D.bfloat16}
    key = name.rsplit(".", 1)[-1]
    if key not in table:
        if key.endswith("Tensor"):
            raise TypeError("only floating-point types are supported as the default type")
        raise TypeError(f"invalid type: '{name}'")
    D.set_default_dtype(table[key])


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """A 1-d tensor of ``size`` elements read from ``filename``. With ``shared=True`` the
    tensor maps the file, so writes to the tensor reach it (PyTorch's semantics); otherwise
    the bytes are copied."""
    dtype = dtype or D.get_default_dtype()
    npdt = dtype.to_numpy()
    need = int(size) * np.dtype(npdt).itemsize
    mode = "r+" if shared else "r"
    try:
        have = os.path.getsize(filename)
    except OSError as e:
        raise RuntimeError(f"unable to open file <{filename}> in read-only mode: "
                           f"{e.strerror} ({e.errno})") from None
    if have < need:
        raise RuntimeError(f"from_file: the file {filename!r} holds {have} bytes, fewer than "
                           f"the {need} that size={size} of {dtype} needs")
    if size == 0:
        arr = np.empty(0, dtype=npdt)
    elif shared:
        arr = np.memmap(filename, dtype=npdt, mode=mode, shape=(int(size),))
    else:
        arr = np.fromfile(filename, dtype=npdt, count=int(size))
    t = K.from_numpy(arr)
    return t if device is None else t.to(device)


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``. In eager mode this is
    exactly PyTorch's ``torch.cond``; a tensor ``pred`` must hold one element."""
    if isinstance(pred, TensorBase):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"a tensor of shape {tuple(pred.shape)}")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple or list, but got {type(operands)}")
    return (true_fn if pred else false_fn)(*operands)


def resize_as_(input, the_template, *, memory_format=None):
    """Resize ``input`` in place to the shape of ``the_template`` (``input.resize_as_``);
    returns ``input``. New elements are uninitialised.
    """
    return _tensor(input, "resize_as_").resize_as_(the_template)


def get_device_module(device=None):
    """The ``ember.<type>`` namespace of a device type (``ember.cuda``, ``ember.opencl``)."""
    if device is None:
        kind = "cpu"
    elif isinstance(device, str):
        kind = device.split(":")[0]
    else:
        kind = device.type
    mod = getattr(_device_ns, kind, None)
    if mod is None or not hasattr(mod, "is_available"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'torch.{kind}'.")
    return mod


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal in place; for a tall matrix, ``wrap=True`` starts again
    after every N+1 rows (PyTorch's semantics). All dims must be equal beyond 2-d."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(self.shape)
    step, stride = 0, 1  # the flat distance between diagonal elements, contiguous layout
    for size in reversed(self.shape):
        step += stride
        stride *= size
    flat_len = self.numel()
    if self.ndim == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        count = (flat_len + step - 1) // step
    else:
        count = n
    idx = K.arange(0, count * step, step, device=self.device)
    idx = idx[idx < flat_len]
    if self.is_contiguous():
        self.view(-1).index_fill_(0, idx, fill_value)
    else:
        tmp = self.contiguous()
        tmp.view(-1).index_fill_(0, idx, fill_value)
        self.copy_(tmp)
    return self


def _as_subclass(self, cls):
    """A ``cls`` instance sharing this tensor's data and autograd history."""
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise TypeError(f"as_subclass(): cls must be a subclass of Tensor, got {cls!r}")
    out = self.view_as(self)
    try:
        out.__class__ = cls  # a subclass without new slots or a __dict__
        return out
    except TypeError:
        pass
    sub = object.__new__(cls)  # one with its own __dict__: the same tensor state
    for klass in type(out).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name not in ("__weakref__", "__dict__") and hasattr(out, name):
                setattr(sub, name, getattr(out, name))
    return sub


TENSOR_METHODS = {
    "get_device": get_device,
    "is_distributed": is_distributed,
    "fill_diagonal_": _fill_diagonal_,
    "const_data_ptr": lambda self: self.data_ptr(),
    "as_subclass": _as_subclass,
    "nonzero_static": nonzero_static,
}
TENSOR_METHODS["const_data_ptr"].__doc__ = (
    "The address of the tensor's first element, for read-only use (same as ``data_ptr``).")
