"""Tensor creation: ``tensor``, ``zeros``, ``arange``, ``rand``, NumPy and DLPack interop."""
from __future__ import annotations

import numbers
import operator

import numpy as np

from ember.dispatcher import complex_ops as CX
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import copy as CP
from ember.dispatcher.grad_mode import below_autograd
from ember.dispatcher.device import to_device
from ember.dispatcher.plugins import backend_for
from ember.dispatcher.random import default_generator

from . import _dlpack
from ._defaults import default_device_or

__all__ = ["tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "full",
           "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "randperm",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "scalar_tensor", "numpy_of"]


def _size(size, op):
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = size[0]
    try:
        items = list(size)
    except TypeError:
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but got "
                        f"{type(size).__name__}") from None
    out = []
    for i, s in enumerate(items):
        try:
            v = operator.index(s)
        except TypeError:
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__} at pos {i}") from None
        if not -(1 << 63) <= v < 1 << 63:  # PyTorch parses sizes as int64
            raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"Overflow when unpacking long long\"")
        out.append(v)
    return tuple(out)


def _shape(size, op, dtype):
    """``size`` (varargs or one sequence) as a shape, checked as PyTorch checks a new
    tensor's shape for ``dtype`` (negative sizes, byte and stride overflow)."""
    shape = _size(size, op)
    CP.check_new_shape(shape, dtype, op)
    return shape


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _dev(device):
    """``device``, or the default device (``ember.set_default_device``) when None."""
    return to_device(default_device_or(device))


def _dt(dtype, default=None):
    return D.to_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())


def _size_arg(size, kwargs, op):
    """The size of a creation function: its varargs, or ``size=`` as a keyword (PyTorch
    takes either, never both)."""
    if "size" in kwargs:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        return (kwargs.pop("size"),)
    return size


def _out_result(res, out, op):
    if out is None:
        return res
    return O.copy_(O._resize_out(op, out, res.shape), res)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, **kw):
    """A tensor of the given size whose values are uninitialised.

    Args:
        *size (int or sequence of ints): the shape, as varargs or one list/tuple (or
            ``size=`` as a keyword).
        dtype (ember.dtype, optional): the dtype; the default dtype if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): resized to ``size`` and returned instead of a new tensor.

    Example:
        >>> ember.empty(2, 3).shape
        ember.Size([2, 3])
    """
    d = _dt(dtype if dtype is not None or out is None else out.dtype)
    size = _size_arg(size, kw, "empty")
    if out is not None:
        return O._resize_out("empty", out, _shape(size, "empty", d))
    fmt = kw.get("memory_format")
    if fmt is not None:   # (channels_last: NHWC strides, as PyTorch lays it out)
        return _finish(_empty_in_format(_shape(size, "empty", d), d, _dev(device), fmt),
                       requires_grad)
    return _finish(C.empty(_shape(size, "empty", d), d, _dev(device)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, **kw):
    """A tensor of the given size filled with 0.

    Args:
        *size (int or sequence of ints): the shape, as varargs or one list/tuple (or
            ``size=`` as a keyword).
        dtype (ember.dtype, optional): the dtype; the default dtype if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
    """
    d = _dt(dtype if dtype is not None or out is None else out.dtype)
    shape = _shape(_size_arg(size, kw, "zeros"), "zeros", d)
    return _out_result(_finish(O.zeros(shape, d, _dev(device)), requires_grad), out,
                       "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, **kw):
    """A tensor of the given size filled with 1.

    Args:
        *size (int or sequence of ints): the shape, as varargs or one list/tuple (or
            ``size=`` as a keyword).
        dtype (ember.dtype, optional): the dtype; the default dtype if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.ones(2, dtype=ember.int64)
        tensor([1, 1])
    """
    d = _dt(dtype if dtype is not None or out is None else out.dtype)
    shape = _shape(_size_arg(size, kw, "ones"), "ones", d)
    return _out_result(_finish(O.full(shape, True if d is D.bool_ else 1, d,
                                      _dev(device)), requires_grad), out, "ones")


def fill_scalar(value, dtype, op, numel, device):
    """A fill value as ``dtype`` holds it, with PyTorch's overflow check (``full((), 300,
    dtype=int8)`` raises). PyTorch's CPU fill of exactly one element takes a shortcut that
    lets float16/bfloat16 round to inf instead; ember follows it on cpu."""
    if isinstance(value, TensorBase):
        value = value.item()
    return CP.scalar_to(value, dtype, op,
                        check_reduced_floats=numel != 1 or device.type != "cpu")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, **_):
    """A tensor of shape ``size`` filled with ``fill_value``.

    Without ``dtype`` the dtype follows the value: bool for a bool, int64 for an integer,
    the default dtype for a float.

    Args:
        size (int or sequence of ints): the shape.
        fill_value (Number or 0-d Tensor): the value of every element.
        dtype (ember.dtype, optional): the dtype; inferred from ``fill_value`` if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.full((2, 2), 7.)
        tensor([[7., 7.],
                [7., 7.]])
        >>> ember.full((2,), 3)
        tensor([3, 3])
    """
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    d = D.dtype_of_scalar(fill_value) if dtype is None else D.to_dtype(dtype)
    shape, dev = _shape((size,), "full", d), _dev(device)
    value = fill_scalar(fill_value, d, "full", C.numel(shape), dev)
    return _out_result(_finish(O.full(shape, value, d, dev), requires_grad), out, "full")


# ---- layouts and memory formats -------------------------------------------------------------
class layout:
    """A tensor's memory layout (``torch.layout``): ember has dense ``strided`` tensors."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"{D.module_name}.{self.name}"


class memory_format:
    """A memory format name (``torch.memory_format``), as ``contiguous()``, ``clone()`` and
    the ``*_like`` functions take it."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"{D.module_name}.{self.name}"


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


def channels_last_strides(shape, fmt):
    """The strides of ``shape`` in a channels-last format (NHWC / NDHWC order)."""
    nd = len(shape)
    if fmt is channels_last and nd != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if fmt is channels_last_3d and nd != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
    order = [0] + list(range(2, nd)) + [1]  # outermost to innermost
    strides = [0] * nd
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _empty_in_format(shape, dtype, device, fmt):
    """An uninitialised tensor in ``fmt`` (contiguous unless a channels-last format)."""
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return C.empty(tuple(shape), dtype, device)
    if fmt not in (channels_last, channels_last_3d):
        raise TypeError(f"argument 'memory_format' must be ember.memory_format, not "
                        f"{type(fmt).__name__}")
    stride = channels_last_strides(tuple(shape), fmt)
    base = C.empty((C.numel(shape),), dtype, device)
    return C.new_tensor(base._storage, tuple(shape), stride, 0, dtype, device, base._vc)


def _like(x, dtype, device):
    return (D.to_dtype(dtype) if dtype is not None else x.dtype,
            to_device(device) if device is not None else x.device)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               **_):
    """An uninitialised tensor with the shape of ``input`` (and its dtype and device unless
    given).

    Args:
        input (Tensor): the tensor whose shape, dtype and device are used.
        dtype (ember.dtype, optional): overrides ``input.dtype``.
        device (ember.device, optional): overrides ``input.device``.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        memory_format (ember.memory_format, optional): ``ember.channels_last`` or
            ``ember.channels_last_3d`` for a channels-last layout; contiguous otherwise.
    """
    d, dev = _like(input, dtype, device)
    return _finish(_empty_in_format(input.shape, d, dev, memory_format), requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               **_):
    """A tensor of zeros with the shape of ``input`` (and its dtype and device unless given).

    Args:
        input (Tensor): the tensor whose shape, dtype and device are used.
        dtype (ember.dtype, optional): overrides ``input.dtype``.
        device (ember.device, optional): overrides ``input.device``.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        memory_format (ember.memory_format, optional): the layout of the result.

    Example:
        >>> ember.zeros_like(ember.tensor([[1, 2], [3, 4]]))
        tensor([[0, 0],
                [0, 0]])
    """
    d, dev = _like(input, dtype, device)
    if memory_format in (channels_last, channels_last_3d):
        return _finish(O.fill_(_empty_in_format(input.shape, d, dev, memory_format), 0),
                       requires_grad)
    return _finish(O.zeros(input.shape, d, dev), requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              **_):
    """A tensor of ones with the shape of ``input`` (and its dtype and device unless given).

    Args:
        input (Tensor): the tensor whose shape, dtype and device are used.
        dtype (ember.dtype, optional): overrides ``input.dtype``.
        device (ember.device, optional): overrides ``input.device``.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        memory_format (ember.memory_format, optional): the layout of the result.

    Example:
        >>> ember.ones_like(ember.tensor([1, 2]), dtype=ember.float32)
        tensor([1., 1.])
    """
    d, dev = _like(input, dtype, device)
    if memory_format in (channels_last, channels_last_3d):
        return _finish(O.fill_(_empty_in_format(input.shape, d, dev, memory_format), 1),
                       requires_grad)
    return _finish(O.full(input.shape, 1, d, dev), requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, **_):
    """A tensor filled with ``fill_value`` with the shape of ``input`` (and its dtype and
    device unless given).

    Args:
        input (Tensor): the tensor whose shape, dtype and device are used.
        fill_value (Number): the value of every element.
        dtype (ember.dtype, optional): overrides ``input.dtype``.
        device (ember.device, optional): overrides ``input.device``.
        requires_grad (bool): record operations on the result for autograd. Default: False.

    Example:
        >>> ember.full_like(ember.tensor([1, 2]), 5)
        tensor([5, 5])
    """
    d, dev = _like(input, dtype, device)
    value = fill_scalar(fill_value, d, "full_like", C.numel(input.shape), dev)
    return _finish(O.full(input.shape, value, d, dev), requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, **_):
    """A tensor of uniform random numbers in ``[0, 1)`` with the shape of ``input`` (and its
    dtype and device unless given); see :func:`rand`.
    """
    d, dev = _like(input, dtype, device)
    return rand(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, **_):
    """A tensor of standard normal random numbers with the shape of ``input`` (and its dtype
    and device unless given); see :func:`randn`.
    """
    d, dev = _like(input, dtype, device)
    return randn(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, **_):
    """A tensor of random integers in ``[low, high)`` with the shape of ``input`` (and its
    dtype and device unless given).

    ``randint_like(input, high)`` draws from ``[0, high)``.

    Args:
        input (Tensor): the tensor whose shape, dtype and device are used.
        low (int): the lowest value drawn (or ``high`` when ``high`` is omitted). Default: 0.
        high (int): one above the highest value drawn.
        dtype (ember.dtype, optional): overrides ``input.dtype``.
        device (ember.device, optional): overrides ``input.device``.

    Example:
        >>> ember.randint_like(ember.zeros(2, 2, dtype=ember.int64), 10).shape
        ember.Size([2, 2])
    """
    if high is None:
        low, high = 0, low
    d, dev = _like(input, dtype, device)
    return randint(low, high, input.shape, dtype=d, device=dev)


def _number(v, op, name, pos):
    """A Python number from an argument PyTorch parses as a ``Number`` (0-d tensors too)."""
    if isinstance(v, TensorBase):
        if v.shape:
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Number, not "
                            "Tensor")
        return v.item()
    if not isinstance(v, numbers.Number):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Number, not "
                        f"{type(v).__name__}")
    return v.item() if isinstance(v, np.generic) else v


def _into_out(name, res, out, requires_grad):
    """A creation function's result, or written into ``out`` (whose dtype and device it was
    made with, unless given), PyTorch's out=."""
    if out is None:
        return _finish(res, requires_grad)
    return _finish(O.write_out(name, out, res, "exact"), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None,
           **_):
    """Values from ``start`` to ``end`` (excluded) by ``step``, with PyTorch's semantics.

    >>> ember.arange(-3, 7.5, 0.5, dtype=ember.int32).tolist()[:3]  # start, step cast first
    [-3, -3, -3]
    """
    if end is None:
        start, end = 0, start
        names = (("start", 0), ("end", 1), ("step", 2))
    else:
        names = (("start", 1), ("end", 2), ("step", 3))
    vals = [_number(v, "arange", n, p) for v, (n, p) in zip((start, end, step), names)]
    if out is not None:
        dtype = out.dtype if dtype is None else dtype
        device = out.device if device is None else device
    if dtype is None:
        dtype = (D.get_default_dtype() if any(isinstance(v, float) for v in vals)
                 else D.int64)
    CX.check_half("arange", D.to_dtype(dtype))
    return _into_out("arange", CP.arange(*vals, D.to_dtype(dtype), _dev(device)), out,
                     requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None,
             **_):
    """``steps`` values from ``start`` to ``end``, both included, as PyTorch computes them
    (start and end are converted to ``dtype`` first)."""
    dims = [len(v.shape) if isinstance(v, TensorBase) else 0 for v in (start, end)]
    if any(dims):
        raise RuntimeError(f"linspace only supports 0-dimensional start and end tensors, but "
                           f"got start with {dims[0]} dimension(s) and end with {dims[1]} "
                           "dimension(s).")
    ends = [_number(v, "linspace", n, p) for v, n, p in zip((start, end), ("start", "end"),
                                                            (1, 2))]
    if isinstance(steps, TensorBase) and not steps.shape and not steps.dtype.is_floating_point:
        steps = steps.item()
    if isinstance(steps, bool) or not hasattr(type(steps), "__index__"):
        raise TypeError(f"linspace(): argument 'steps' (position 3) must be int, not "
                        f"{type(steps).__name__}")
    if out is not None:
        dtype = out.dtype if dtype is None else dtype
        device = out.device if device is None else device
    CX.check_half("linspace", _dt(dtype))
    return _into_out("linspace", CP.linspace(ends[0], ends[1], operator.index(steps),
                                             _dt(dtype), _dev(device)), out, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None, **_):
    """A 2-D tensor with ones on the diagonal and zeros elsewhere.

    Args:
        n (int): the number of rows.
        m (int, optional): the number of columns; ``n`` if None.
        dtype (ember.dtype, optional): the dtype; the default dtype if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.eye(2, 3)
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    if out is not None:
        dtype = out.dtype if dtype is None else dtype
        device = out.device if device is None else device
    return _into_out("eye", CP.eye(n, m, _dt(dtype), _dev(device)), out, requires_grad)


def _gen(generator, device):
    return generator if generator is not None else default_generator(device)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None, **kw):
    """A tensor of random numbers drawn uniformly from ``[0, 1)``.

    Args:
        *size (int or sequence of ints): the shape, as varargs or one list/tuple (or
            ``size=`` as a keyword).
        generator (ember.Generator, optional): the random number generator; the device's
            default generator if None.
        dtype (ember.dtype, optional): a floating dtype; the default dtype if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> x = ember.rand(2, 3)
        >>> x.shape, bool(((x >= 0) & (x < 1)).all())
        (ember.Size([2, 3]), True)
    """
    dev, d = _dev(device), _dt(dtype)
    t = C.empty(_shape(_size_arg(size, kw, "rand"), "rand", d), d, dev)
    res = _finish(O.random_(t, "uniform", 0.0, 1.0, _gen(generator, dev)), requires_grad)
    return _out_result(res, out, "rand")


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None,
          **kw):
    """A tensor of random numbers from the standard normal distribution (mean 0, variance 1).

    Args:
        *size (int or sequence of ints): the shape, as varargs or one list/tuple (or
            ``size=`` as a keyword).
        generator (ember.Generator, optional): the random number generator; the device's
            default generator if None.
        dtype (ember.dtype, optional): a floating dtype; the default dtype if None.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.randn(2, 3).shape
        ember.Size([2, 3])
    """
    dev, d = _dev(device), _dt(dtype)
    t = C.empty(_shape(_size_arg(size, kw, "randn"), "randn", d), d, dev)
    res = _finish(O.random_(t, "normal", 0.0, 1.0, _gen(generator, dev)), requires_grad)
    return _out_result(res, out, "randn")


def randint(*args, low=None, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False, out=None, **_):
    """Integers uniform in ``[low, high)``: ``randint(high, size)``,
    ``randint(low, high, size)``, or any of them as keywords (PyTorch's overloads)."""
    args = list(args)
    if len(args) > 3:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args)} given)")
    if len(args) == 3:
        low, high, size = args
    elif len(args) == 2:
        if size is not None or high is not None:
            low, high = args if high is None else (args[0], high)
            if size is None:
                size = args[1]
        else:
            high, size = args
    elif len(args) == 1:
        if high is not None:
            low = args[0]
        else:
            high = args[0]
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low = 0 if low is None else low
    dev, d = _dev(device), _dt(dtype, D.int64)
    _check_randint_bounds(int(low), int(high), d)
    res = CP.randint(int(low), int(high), _shape((size,), "randint", d), _gen(generator, dev),
                     d, dev)
    return _out_result(_finish(res, requires_grad), out, "randint")


#: the C++ names PyTorch's randint errors give its dtypes, and their ranges
_RANDINT_TYPES = {"uint8": ("unsigned char", 0, 255), "int8": ("signed char", -128, 127),
                  "int16": ("short", -2 ** 15, 2 ** 15 - 1),
                  "int32": ("int", -2 ** 31, 2 ** 31 - 1), "bool": ("bool", 0, 1),
                  "float16": ("c10::Half", -65504, 65504)}


def _check_randint_bounds(low: int, high: int, d) -> None:
    """PyTorch's checks of ``randint``'s ``low`` and ``high - 1`` against the dtype."""
    name, lo, hi = _RANDINT_TYPES.get(d.name, (None, None, None))
    if name is None:
        return
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None,
             **_):
    """A random permutation of the integers ``0 .. n - 1``.

    Args:
        n (int): the number of integers.
        generator (ember.Generator, optional): the random number generator; the device's
            default generator if None.
        dtype (ember.dtype, optional): the dtype. Default: ``ember.int64``.
        device (ember.device, optional): the device; the default device if None.
        requires_grad (bool): record operations on the result for autograd. Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> sorted(ember.randperm(5).tolist())
        [0, 1, 2, 3, 4]
    """
    dev = _dev(device)
    res = CP.randperm(int(n), _gen(generator, dev), _dt(dtype, D.int64), dev)
    return _out_result(_finish(res, requires_grad), out, "randperm")


# ---- from Python data and NumPy ---------------------------------------------------
_PLAIN_SCALARS = frozenset((int, float, bool))


def _has_tensor(seq) -> bool:
    """Whether a (nested) list holds tensors or NumPy scalars (whose dtypes join the
    inference, as in PyTorch: ``tensor([np.int32(1)])`` is int32, ``tensor([np.float64(1),
    2.0])`` float64); plain lists of numbers are checked in C."""
    if set(map(type, seq)) <= _PLAIN_SCALARS:
        return False
    for x in seq:
        if isinstance(x, (TensorBase, np.generic)) or isinstance(x, (list, tuple)) and \
                _has_tensor(x):
            return True
    return False


def _tensor_items(seq, dtypes):
    """``seq`` with each tensor replaced by its one value, as PyTorch's ``tensor([t0, t1])``
    (a one-element tensor of any shape is a scalar; its dtype joins the promotion, as a
    Python number's default dtype does); each leaf's dtype is appended to ``dtypes``."""
    out = []
    for x in seq:
        if isinstance(x, (list, tuple)):
            out.append(_tensor_items(x, dtypes))
        elif isinstance(x, TensorBase):
            if C.numel(x.shape) != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            dtypes.append(x.dtype)
            out.append(O.item(x))
        else:
            dtypes.append(D.from_numpy_dtype(x.dtype) if isinstance(x, np.generic)
                          else D.dtype_of_scalar(x))
            out.append(x)
    return out


def _infer(data):
    """A NumPy array of ``data`` with PyTorch's dtype inference."""
    if isinstance(data, (np.ndarray, np.generic)):
        data = np.asarray(data)
        return data, D.from_numpy_dtype(data.dtype)
    if isinstance(data, (list, tuple)) and _has_tensor(data):
        dtypes = []
        values = _tensor_items(data, dtypes)
        dt = dtypes[0] if dtypes else D.get_default_dtype()
        for d in dtypes[1:]:
            dt = D.promote_types(dt, d)
        return np.array(values), dt
    try:
        arr = np.array(data)
    except ValueError as e:
        raise ValueError(f"tensor(): could not build a tensor from the data ({e})") from None
    if arr.dtype == object:
        raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__} (nested "
                        "sequences must be rectangular and hold numbers)")
    if arr.dtype.kind == "f":
        return arr, D.get_default_dtype()
    if arr.dtype.kind == "b":
        return arr, D.bool_
    if arr.dtype.kind == "u":   # (Python ints past int64's range: tensor() decides)
        return arr, D.int64
    if arr.dtype.kind == "i":
        return arr.astype(np.int64), D.int64
    if arr.dtype.kind == "c":
        return arr, D.default_complex_dtype()
    if arr.dtype.kind in "US":
        raise TypeError(f"new(): invalid data type '{arr.dtype.kind == 'U' and 'str'}'")
    raise TypeError(f"tensor(): unsupported data type {arr.dtype}")


def _from_host_array(arr, dtype, device):
    """Copy a NumPy array into a new tensor of ``dtype`` on ``device``."""
    src_dt = D.from_numpy_dtype(arr.dtype)
    arr = np.require(arr, requirements="C")
    cpu = to_device("cpu")
    t = C.empty(arr.shape, src_dt, cpu)
    if arr.size:
        backend_for("cpu").copy_from_host(t._storage, 0, arr.reshape(-1).view(np.uint8))
    t = O.cast(t, dtype)
    return O.to(t, device) if device != cpu else t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Build a tensor from (nested) Python numbers, a NumPy array or a tensor (copied)."""
    if isinstance(data, TensorBase):
        with below_autograd():  # a new leaf, as PyTorch's (which warns)
            res = O.to(data, device or data.device, dtype or data.dtype, copy=True)
        return _finish(res, requires_grad)
    arr, inferred = _infer(data)
    dt = D.to_dtype(dtype) if dtype is not None else inferred
    python = not isinstance(data, (np.ndarray, np.generic))
    if dt is D.uint64 and arr.dtype.kind in "fiu" and arr.size and python and (
            arr.dtype.kind in "iu" or np.abs(arr).max() >= 2.0 ** 63):
        # PyTorch reads the Python ints of a uint64 tensor as unsigned (NumPy reads [2**63 +
        # 1, 1] as float64): exact values, and no negative ones
        try:
            arr = np.array(data, dtype=np.uint64)
        except OverflowError:
            raise OverflowError("can't convert negative int to unsigned") from None
    elif python and arr.size:
        _check_python_values(arr, dt)
    return _finish(_from_host_array(arr, dt, _dev(device)), requires_grad)


def _check_python_values(arr, dt) -> None:
    """PyTorch's checks on Python numbers put into a tensor of ``dt``: an int past int64
    (``Overflow when unpacking long long``), and a number outside an integer dtype's range
    (an int into an unsigned dtype may be negative down to minus its maximum, where it
    wraps; a float may not)."""
    if arr.dtype == np.uint64:    # (NumPy's type for Python ints past int64's range)
        raise ValueError("Overflow when unpacking long long")
    if dt._kind != 1 or arr.dtype.kind not in "if":
        return
    info = np.iinfo(dt.to_numpy())
    hi = int(info.max)
    lo = int(info.min) if dt.is_signed or arr.dtype.kind == "f" else -hi
    if arr.min() < lo or arr.max() > hi:
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory where it can.

    A tensor already of the requested dtype and device is returned as is (otherwise
    converted); a NumPy array headed for the CPU shares its memory (then cast to ``dtype``
    if given); anything else is copied as :func:`tensor` copies it.

    Args:
        data (array_like): a tensor, NumPy array, Python number or (nested) sequence.
        dtype (ember.dtype, optional): the dtype; inferred from ``data`` if None.
        device (ember.device, optional): the device; ``data``'s (or the default) if None.

    Example:
        >>> import numpy as np
        >>> a = np.array([1, 2, 3])
        >>> t = ember.as_tensor(a)
        >>> t[0] = -1
        >>> a
        array([-1,  2,  3])
    """
    if isinstance(data, TensorBase):
        return O.to(data, device, dtype)
    device = default_device_or(device)
    if isinstance(data, np.ndarray) and (device is None or to_device(device).type == "cpu"):
        t = from_numpy(data)
        return O.cast(t, D.to_dtype(dtype)) if dtype is not None else t
    return tensor(data, dtype=dtype, device=device)


def scalar_tensor(s, *, dtype=None, device=None):
    """A 0-d tensor holding the number ``s`` (of the default dtype unless ``dtype`` is given).

    Example:
        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    return full((), s, dtype=dtype or D.get_default_dtype(), device=device)


def from_numpy(arr):
    """A CPU tensor sharing ``arr``'s memory (zero copy, O(1)); an ``ml_dtypes.bfloat16``
    array gives a bfloat16 tensor."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    if arr.dtype.name == "bfloat16":    # ml_dtypes' (NumPy has none)
        return _wrap_numpy(arr.view(np.uint16), D.bfloat16)
    return _wrap_numpy(arr, D.from_numpy_dtype(arr.dtype))


def _wrap_numpy(arr, dt):
    """A CPU tensor of dtype ``dt`` over ``arr``'s memory (of the same item size)."""
    item = arr.itemsize
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    if any(s % item for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    strides = tuple(s // item for s in arr.strides)
    if arr.size == 0:
        extent = 0
    else:
        extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides))
    # a contiguous 1-D window over exactly the memory the array spans; it keeps arr alive
    window = np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(item,),
                                             writeable=arr.flags.writeable)
    storage = backend_for("cpu").wrap_host_buffer(window)
    return C.new_tensor(storage, tuple(arr.shape), strides, 0, dt, to_device("cpu"), [0])


def numpy_of(t, force=False, readonly=False):
    """``t``'s data as a NumPy array sharing memory (CPU tensors); ``readonly``: the
    caller only reads it (inside ember.compile, a pending graph that reads ``t`` need not
    run first)."""
    if t.device.type != "cpu":
        if not force:
            raise TypeError(f"can't convert {t.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        with below_autograd():
            t = O.to(t, "cpu")
    npdt = _ml_bfloat16() if t.dtype is D.bfloat16 else t.dtype.to_numpy()
    base = np.frombuffer(C.host_storage(t, not readonly), dtype=np.uint8)
    item = t.dtype.itemsize
    n = C.numel(t.shape)
    if n == 0:
        return np.empty(t.shape, dtype=npdt)
    start = t._offset * item
    extent = (1 + sum((s - 1) * st for s, st in zip(t.shape, t._stride))) * item
    window = base[start:start + extent].view(npdt)
    return np.lib.stride_tricks.as_strided(
        window, shape=t.shape, strides=tuple(s * item for s in t._stride),
        writeable=not getattr(t._storage, "readonly", False))


def _ml_bfloat16():
    """``ml_dtypes.bfloat16``: what ``.numpy()`` of a bfloat16 tensor gives (NumPy has no
    bfloat16; ml_dtypes, imported on first use, is the registry's standard one)."""
    try:
        import ml_dtypes  # noqa: PLC0415
    except ModuleNotFoundError:
        raise TypeError("Got unsupported ScalarType BFloat16: NumPy has no bfloat16 dtype "
                        "(pip install ml_dtypes for one, or call .float() first)") from None
    return ml_dtypes.bfloat16


def from_dlpack(ext):
    """A tensor sharing memory with any object implementing ``__dlpack__``, or a DLPack
    capsule (CPU memory; bfloat16 included, which NumPy's DLPack lacks)."""
    if isinstance(ext, TensorBase):
        return ext
    capsule = ext if type(ext).__name__ == "PyCapsule" else ext.__dlpack__()
    arr, dt = _dlpack.import_capsule(capsule)
    return _wrap_numpy(arr, dt)
