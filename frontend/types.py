"""``ember.types``: the type aliases PyTorch's annotations use (``torch.types``):
``Number``, ``Device``, ``FileLike``, ``Storage``, and the private-named spellings packages
import (``_int``, ``_size``, ``_dtype``, ...).

>>> import ember.types
>>> isinstance(2.5, ember.types._Number)
True
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO, Union

from ember.dispatcher.core import Size
from ember.dispatcher.device import device as _device
from ember.dispatcher.dtypes import DType as _dtype  # noqa: F401  (PyTorch's spelling)

from ._creation import layout as _layout  # noqa: F401  (PyTorch's spelling)
from ._ops_compat import SymBool, SymFloat, SymInt
from ._storage import TypedStorage, UntypedStorage
from ._tensor import Tensor

__all__ = ["Number", "Device", "FileLike", "Storage"]

#: a Python number a tensor op takes where it takes a scalar
Number = Union[int, float, bool]
#: the classes of ``Number``, for ``isinstance``
_Number = (int, float, bool)
#: what names a device: a device, its string, a CUDA ordinal, or None for the default
Device = Union[_device, str, int, None]
#: what ``ember.save``/``ember.load`` take: a path or a binary file object
FileLike = Union[str, os.PathLike, IO[bytes]]
#: a storage, untyped or typed
Storage = Union[UntypedStorage, TypedStorage]

_int, _float, _bool, _complex, _str, _bytes = int, float, bool, complex, str, bytes
_size = Union[Size, list, tuple]
_symsize = Union[Size, Sequence[Union[int, SymInt]]]
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]
IntLikeType = Union[int, SymInt]
FloatLikeType = Union[float, SymFloat]
BoolLikeType = Union[bool, SymBool]
py_sym_types = (SymInt, SymFloat, SymBool)
