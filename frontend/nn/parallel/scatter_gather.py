"""``ember.nn.parallel.scatter_gather``: split inputs across accelerator devices and join
outputs back (``torch.nn.parallel.scatter_gather``; captum imports ``scatter``).

Tensors are cut into one chunk per device along ``dim`` (``Tensor.chunk``) and moved there;
tuples, lists, dicts and named tuples are split element by element, and anything else is
repeated for every device. The devices are the current accelerator's; without one these
raise, as PyTorch's do without CUDA.
"""
from __future__ import annotations

from ... import accelerator
from ...dispatcher.core import TensorBase
from ...dispatcher.device import device as _device
from ..._functions import cat as _cat

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields") and hasattr(obj, "_asdict")


def _device_of(index) -> _device:
    if isinstance(index, _device):
        return index
    acc = accelerator.current_accelerator() if accelerator.is_available() else None
    if acc is None:
        raise RuntimeError("scatter/gather across devices needs an accelerator; none is "
                           "available (ember runs the module on the CPU as it is)")
    return _device(acc.type, int(index))


def scatter(inputs, target_gpus, dim: int = 0):
    """``inputs`` cut into one part per device of ``target_gpus`` (indices or devices).

    Example:
        >>> import ember
        >>> from ember.nn.parallel.scatter_gather import scatter
        >>> try:
        ...     parts = scatter(ember.arange(4.), [0, 1])
        ... except RuntimeError:  # no accelerator here
        ...     parts = list(ember.arange(4.).chunk(2))
        >>> len(parts)
        2
    """
    devices = [_device_of(d) for d in target_gpus]

    def split(obj):
        if isinstance(obj, TensorBase):
            return [c.to(d) for c, d in zip(obj.chunk(len(devices), dim), devices)]
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(split, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(split, obj)))
        if isinstance(obj, list) and obj:
            return [list(i) for i in zip(*map(split, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(i) for i in zip(*map(split, obj.items()))]
        return [obj for _ in devices]
    return split(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim: int = 0):
    """``scatter`` of the positional and the keyword arguments, padded to one
    ``(args, kwargs)`` pair per device.

    Example:
        >>> import ember
        >>> from ember.nn.parallel.scatter_gather import scatter_kwargs
        >>> scatter_kwargs((), {}, [])
        ((), ())
    """
    args = scatter(inputs, target_gpus, dim) if inputs else []
    kws = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(args) < len(kws):
        args.extend(() for _ in range(len(kws) - len(args)))
    elif len(kws) < len(args):
        kws.extend({} for _ in range(len(args) - len(kws)))
    return tuple(tuple(a) for a in args), tuple(kws)


def gather(outputs, target_device, dim: int = 0):
    """The per-device ``outputs`` joined along ``dim`` on ``target_device`` (an index, a
    device, or ``-1`` for the CPU), structure by structure.

    The outputs must be on accelerator devices: CPU tensors raise ``AssertionError``, as
    PyTorch's ``Gather`` does.

    Example:
        >>> import ember
        >>> from ember.nn.parallel.scatter_gather import gather
        >>> try:
        ...     gather([ember.ones(1), ember.zeros(1)], -1)
        ... except AssertionError as e:
        ...     print(e)
        gather(): the outputs are CPU tensors; it joins outputs on accelerator devices only
    """
    dev = _device("cpu") if target_device == -1 or target_device == "cpu" else (
        _device_of(target_device))

    def join(outs):
        first = outs[0]
        if isinstance(first, TensorBase):
            if any(o.device.type == "cpu" for o in outs):
                raise AssertionError("gather(): the outputs are CPU tensors; it joins outputs "
                                     "on accelerator devices only")
            return _cat([o.to(dev) for o in outs], dim)
        if first is None:
            return None
        if isinstance(first, dict):
            return type(first)((k, join([o[k] for o in outs])) for k in first)
        if _is_namedtuple(first):
            return type(first)._make(map(join, zip(*outs)))
        return type(first)(map(join, zip(*outs)))
    return join(outputs)
