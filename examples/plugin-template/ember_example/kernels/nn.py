"""A native kernel for a composite: ``layer_norm``, fused into one pass here instead of the
dispatcher's mean, var, sub, rsqrt, mul and add.

Every op with a kernel convention may have one (``OPS[name].kernel``; conv, pooling, the
norms, embedding, the losses and attention are such composites). The dispatcher calls it
where no gradient is needed (inference, ``no_grad``); under autograd the op's composite
runs instead and its ops record themselves, so a kernel like this needs no backward.
"""
from __future__ import annotations

import numpy as np

from ._tensor import compute_dtype, load, store


def layer_norm(out, input, weight, bias, normalized_shape, eps):
    """``out = (x - mean) / sqrt(var + eps) * weight + bias`` over the trailing
    ``len(normalized_shape)`` dims (biased variance). ``out`` has the broadcast shape and
    the promoted dtype of ``input``, ``weight`` and ``bias`` (those two may be None)."""
    if not out.dtype.is_floating_point:
        raise RuntimeError(f"layer_norm(): expected a floating-point input, got "
                           f"{input.dtype.name}")
    x = load(input).astype(compute_dtype(out.dtype), copy=False)
    dims = tuple(range(-len(normalized_shape), 0))
    mean = x.mean(axis=dims, keepdims=True)
    var = np.square(x - mean).mean(axis=dims, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if weight is not None:
        y = y * load(weight)
    if bias is not None:
        y = y + load(bias)
    store(out, y)
