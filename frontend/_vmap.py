"""``ember.vmap`` (``ember.func.vmap``): map a function over a batch dimension.

This is **not** a batching transform: ember has no batched kernels behind ``vmap``. The
function is called once per batch element, on ``x.select(in_dim, i)`` of every mapped
input, and the results are stacked along ``out_dims``. The values, shapes and gradients
are those of PyTorch's ``vmap`` for functions that treat every batch element alike (the
functions ``vmap`` is specified for); the speed is that of a Python loop. ``chunk_size``
is accepted (the loop already computes one element at a time) and ``randomness`` follows
PyTorch: ``"error"`` raises when the function draws random numbers, ``"different"``
lets each element draw its own, ``"same"`` gives every element the same draws.

>>> ember.vmap(ember.dot)(ember.ones(3, 4), ember.ones(3, 4))
tensor([4., 4., 4.])
"""
from __future__ import annotations

import functools

from ember.dispatcher.core import TensorBase
from ember.dispatcher.random import default_generator

from . import _functions as F

__all__ = ["vmap", "tree_flatten", "tree_unflatten"]


class _Transforms:
    """How many ``ember.func`` transforms run now (``active``), and how many of them are
    ``vmap``s: custom autograd Functions follow PyTorch's rules under transforms
    (``setup_context`` required; under ``vmap``, a ``vmap`` rule or
    ``generate_vmap_rule``)."""
    active = 0
    vmap = 0
    # vmap calls the function once per batch element where PyTorch's differentiates once,
    # batched: while ``retain`` is set (every call but the last), ``autograd.grad`` and
    # ``backward`` inside keep the graph they walk, so the next element can walk it too
    retain = 0


TRANSFORMS = _Transforms()


def call_transformed(func, args, kwargs, is_vmap=False):
    """``func(*args, **kwargs)`` counted as running under a transform."""
    TRANSFORMS.active += 1
    TRANSFORMS.vmap += is_vmap
    try:
        return func(*args, **kwargs)
    finally:
        TRANSFORMS.active -= 1
        TRANSFORMS.vmap -= is_vmap


# ---- minimal pytrees (tuples, lists, dicts of leaves) ----------------------------------
def tree_flatten(tree):
    """``(leaves, spec)``: the leaves of nested tuples/lists/dicts, and how to rebuild."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            lv, sp = tree_flatten(x)
            leaves.extend(lv)
            specs.append(sp)
        return leaves, (type(tree), tuple(specs), getattr(tree, "_fields", None))
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k in tree:
            lv, sp = tree_flatten(tree[k])
            leaves.extend(lv)
            specs.append(sp)
        return leaves, (dict, tuple(specs), tuple(tree))
    return [tree], None


def tree_unflatten(leaves, spec):
    """The inverse of :func:`tree_flatten`."""
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, children, extra = spec
    built = [_build(it, c) for c in children]
    if kind is dict:
        return dict(zip(extra, built))
    if extra is not None:   # namedtuple
        return kind(*built)
    return kind(built)


def _count(spec) -> int:
    if spec is None:
        return 1
    return sum(_count(c) for c in spec[1])


def _broadcast_dims(dims, spec, what):
    """One dim per leaf of the tree ``spec`` from ``dims`` (an int/None for the whole
    tree, or a tree of the same structure)."""
    if dims is None or isinstance(dims, int):
        return [dims] * _count(spec)
    if spec is None:
        raise ValueError(f"vmap: {what}={dims!r} does not match the structure of the "
                         "corresponding argument (a single leaf)")
    kind, children, extra = spec
    if kind is dict:
        if not isinstance(dims, dict) or set(dims) != set(extra):
            raise ValueError(f"vmap: {what}={dims!r} does not match the structure of the "
                             "corresponding argument")
        seq = [dims[k] for k in extra]
    else:
        if not isinstance(dims, (tuple, list)) or len(dims) != len(children):
            raise ValueError(f"vmap: {what}={dims!r} does not match the structure of the "
                             f"corresponding argument ({len(children)} entries)")
        seq = list(dims)
    out = []
    for d, c in zip(seq, children):
        out.extend(_broadcast_dims(d, c, what))
    return out


def _func_name(func) -> str:
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorize ``func`` over dimension ``in_dims`` of its inputs (see the module
    docstring: a loop over the batch, then a stack)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    if not callable(func):
        raise RuntimeError(f"vmap: func must be callable, got {type(func).__name__}")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    name = _func_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                         f"to be int or a (potentially nested) tuple matching the structure "
                         f"of inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"of {len(in_dims)} entries but inputs has {len(args)} positional "
                         "arguments.")
    leaves, spec = tree_flatten(list(args))
    dims = _broadcast_dims(list(in_dims) if isinstance(in_dims, tuple) else in_dims, spec,
                           "in_dims")
    size = None
    norm = []
    for leaf, d in zip(leaves, dims):
        if d is None:
            norm.append(None)
            continue
        if not isinstance(leaf, TensorBase):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for an input but the input is of type {type(leaf)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the "
                             "respective in_dim")
        nd = len(leaf.shape)
        if not -nd <= d < nd:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for some input, but that input is a Tensor of dimensionality "
                             f"{nd} so expected in_dim to satisfy -{nd} <= in_dim < {nd}.")
        d = d % nd
        n = leaf.shape[d]
        if size is None:
            size = n
        elif n != size:
            sizes = [lf.shape[dd] for lf, dd in zip(leaves, dims) if dd is not None]
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        norm.append(d)
    if size is None:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if size == 0:
        raise NotImplementedError(f"vmap({name}): a batch of size 0 is not supported: ember's "
                                  "vmap calls the function once per batch element, so it "
                                  "cannot infer the output shape of an empty batch")
    devices = {leaf.device for leaf in leaves if isinstance(leaf, TensorBase)}
    devices.add("cpu")
    gens = [default_generator(d) for d in devices]
    start = [g.get_state() for g in gens]
    results = []
    for i in range(size):
        if randomness == "same":
            for g, s in zip(gens, start):
                g.set_state(s)
        sliced = [leaf if d is None else leaf.select(d, i) for leaf, d in zip(leaves, norm)]
        call_args = tree_unflatten(sliced, spec)
        keep = i < size - 1
        TRANSFORMS.retain += keep
        try:
            results.append(call_transformed(func, call_args, kwargs, is_vmap=True))
        finally:
            TRANSFORMS.retain -= keep
        if randomness == "error" and any(g.get_state() != s for g, s in zip(gens, start)):
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags "
                               "on vmap or perform the randomness operation out of vmap")
    return _stack_outputs(name, results, out_dims)


def _stack_outputs(name, results, out_dims):
    flat0, spec = tree_flatten(results[0])
    per_leaf = [[] for _ in flat0]
    for r in results:
        fl, sp = tree_flatten(r)
        if sp != spec:
            raise ValueError(f"vmap({name}, ...): the function returned outputs of different "
                             "structures for different batch elements")
        for j, x in enumerate(fl):
            per_leaf[j].append(x)
    dims = _broadcast_dims(out_dims, spec, "out_dims")
    out = []
    for vals, d in zip(per_leaf, dims):
        first = vals[0]
        if not isinstance(first, TensorBase):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(first)}. Did you mean to set out_dims= to None for "
                             "output?" if d is not None else
                             f"vmap({name}, ...): `{name}` must only return Tensors")
        if d is None:
            out.append(first)
            continue
        nd = len(first.shape) + 1
        if not -nd <= d < nd:
            raise ValueError(f"vmap({name}, ...): Got out_dim={d} for an output, but the output "
                             f"has dimensionality {nd} so expected out_dim to satisfy "
                             f"-{nd} <= out_dim < {nd}.")
        out.append(F.stack(vals, d % nd))
    return tree_unflatten(out, spec)
