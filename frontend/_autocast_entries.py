"""Autocast at the entry of the public functions PyTorch's cast lists name.

The dispatcher casts the inputs of its own ops by name (``ops.py``: ``mm``, ``linear``,
the reductions, ...). Many entries of PyTorch's lists are not dispatcher ops in ember but
public functions composed of them (``F.mse_loss``, ``F.max_pool3d``, ``linalg.solve``,
``addmm``, the reflection and replication pads, ...); without this their inputs kept
their dtype. Each such function is wrapped once, when ember is imported: under autocast
its tensor arguments are cast by the op's policy (lower precision, float32, or the
widest), and its body runs with autocast off on that device, as PyTorch runs an
autocast-wrapped op (the ops inside a float32 ``pinverse`` stay float32).
"""
from __future__ import annotations

import functools

from ember.dispatcher import autocast as AC
from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase

__all__ = ["install"]


def _device_type(args, kwargs):
    for v in (*args, *kwargs.values()):
        if isinstance(v, TensorBase):
            return v.device.type
        if isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, TensorBase):
                    return x.device.type
    return None


def _run(name, fn, args, kwargs):
    dev = _device_type(args, kwargs)
    if dev is None or not AC.is_enabled(dev) or AC.policy(name, dev) is None:
        return fn(*args, **kwargs)
    args, kwargs = AC.cast_call(name, args, kwargs, O.to)
    AC.set_enabled(dev, False)
    try:
        return fn(*args, **kwargs)
    finally:
        AC.set_enabled(dev, True)


def _wrap(name, fn):
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        if AC.ACTIVE[0]:
            return _run(name, fn, args, kwargs)
        return fn(*args, **kwargs)
    entry.__autocast_entry__ = name
    return entry


def _wrap_pad(fn):
    """``F.pad``: its reflect and replicate modes are the ``reflection_padNd`` and
    ``replication_padNd`` entries (N = the padded dims)."""
    @functools.wraps(fn)
    def pad(input, pad, mode="constant", value=None):
        if AC.ACTIVE[0] and mode in ("reflect", "replicate"):
            kind = "reflection" if mode == "reflect" else "replication"
            return _run(f"{kind}_pad{len(pad) // 2}d", fn, (input, pad, mode, value), {})
        return fn(input, pad, mode, value)
    pad.__autocast_entry__ = "pad"
    return pad


#: list entries whose public function has another name
_RENAMED = {"grid_sampler": "grid_sample", "linalg_inv_ex": "inv_ex"}


def install(ember, F, linalg, Tensor) -> None:
    names = set()
    for lists in (AC.LOWER, AC.FP32, AC.PROMOTE):
        for entries in lists.values():
            names |= entries
    fft = ember.fft
    spaces = (ember, F, linalg, Tensor, fft)
    wrapped: dict = {}      # id(original) -> its wrapper (one per function: aliases share)
    for name in sorted(names):
        attr = _RENAMED.get(name, name)
        if name.startswith("linalg_"):
            places = [(linalg, attr[7:] if attr == name else attr)]
        elif name.startswith("fft_"):
            places = [(fft, attr[4:])]
        else:
            places = [(ember, attr), (F, attr), (Tensor, attr)]
        for mod, a in places:
            fn = mod.__dict__.get(a) if isinstance(mod, type) else getattr(mod, a, None)
            if fn is None or isinstance(fn, type) or not callable(fn) or \
                    getattr(fn, "__autocast_entry__", None) or id(fn) in wrapped:
                continue
            wrapped[id(fn)] = (fn, _wrap(name, fn))
    # every name bound to a wrapped function (its aliases: arctan2 is atan2) gets the wrapper
    for space in spaces:
        for key, value in list(vars(space).items()):
            hit = wrapped.get(id(value))
            if hit is not None and hit[0] is value:
                setattr(space, key, hit[1])
    if not getattr(F.pad, "__autocast_entry__", None):
        F.pad = _wrap_pad(F.pad)
