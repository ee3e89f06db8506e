"""Turning a list of samples into a batch: ``default_collate`` and ``default_convert``.

As in PyTorch, the element type picks the rule: tensors are stacked, NumPy arrays and
Python numbers become tensors (``float`` as float64, ``int`` as int64, ``bool`` as bool),
strings stay a list, and containers (dicts, namedtuples, tuples, lists) are collated
field by field. ``default_collate_fn_map`` maps types to collate functions and can be
extended.
"""
from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable

import numpy as np

import ember

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

# NumPy dtypes that hold strings or objects, which have no tensor equivalent
_NP_STR_OBJ = re.compile(r"[SaUO]")

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists;"
        " found {}")


def default_convert(data):
    """Convert NumPy arrays (also inside containers) to tensors; leave the rest as is.

    The DataLoader uses it instead of ``default_collate`` when batching is off
    (``batch_size=None``).

    Example:
        >>> import numpy as np
        >>> from ember.utils.data import default_convert
        >>> default_convert([np.array([0, 1]), "a"])
        [tensor([0, 1]), 'a']
    """
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str):
            return data
        return ember.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return elem_type({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None):
    """Collate ``batch`` with the per-type functions of ``collate_fn_map`` (exact type
    first, then the first entry the element is an instance of), recursing into
    containers."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for typ, fn in collate_fn_map.items():
            if isinstance(elem, typ):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map)
                  for k in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(fields)
                return clone
            return elem_type(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # each field's samples arrive as a tuple (so strings in a tuple stay a tuple, as
        # in PyTorch)
        fields = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return fields  # a list, as PyTorch returns for tuples
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, f in enumerate(fields):
                    clone[i] = f
                return clone
            return elem_type(fields)
        except TypeError:
            return fields
    raise TypeError(_ERR.format(elem_type))


def _collate_tensor(batch, *, collate_fn_map=None):
    return ember.stack(batch, 0)


def _collate_ndarray(batch, *, collate_fn_map=None):
    if _NP_STR_OBJ.search(batch[0].dtype.str):
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([ember.as_tensor(np.asarray(b)) for b in batch],
                   collate_fn_map=collate_fn_map)


def _collate_np_scalar(batch, *, collate_fn_map=None):
    # np.array keeps the scalars' dtype (np.float64 stays float64)
    return ember.from_numpy(np.array(batch))


def _collate_float(batch, *, collate_fn_map=None):
    return ember.tensor(batch, dtype=ember.float64)


def _collate_int(batch, *, collate_fn_map=None):
    return ember.tensor(batch)


def _collate_str(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    ember.Tensor: _collate_tensor,
    np.ndarray: _collate_ndarray,
    (np.bool_, np.number, np.object_): _collate_np_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def default_collate(batch):
    """Stack a list of samples into a batch, as ``torch.utils.data.default_collate``.

    Example:
        >>> from ember.utils.data import default_collate
        >>> default_collate([(0, 1.5), (2, 2.5)])
        [tensor([0, 2]), tensor([1.5000, 2.5000], dtype=ember.float64)]
        >>> default_collate([{"x": 1}, {"x": 2}])
        {'x': tensor([1, 2])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
