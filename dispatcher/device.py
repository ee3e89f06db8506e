"""Devices: ``ember.device("cpu")``, ``ember.device("opencl:1")``, ``ember.device("cuda", 0)``."""
from __future__ import annotations

import operator
import re

__all__ = ["device", "to_device"]

_CACHE: dict = {}
#: ``(enter(device), exit())``, installed by the frontend: ``with ember.device(...)`` makes
#: the device the default of creation functions on this thread until the block ends
CONTEXT = [None]


#: a device type: lower-case ASCII letters, digits and underscores
_TYPE = re.compile(r"[a-z_][a-z0-9_]*")
#: a device index in a string: ASCII digits without a leading zero ("cuda:01" is invalid)
_INDEX = re.compile(r"0|[1-9][0-9]*")
#: the largest device index: PyTorch stores it in a c10::DeviceIndex (int8_t) and wraps
#: larger ones around silently; ember refuses them
MAX_INDEX = 127


def _invalid(s):
    return RuntimeError(f"Invalid device string: {s!r} (expected 'type' or 'type:index', "
                        "e.g. 'cpu' or 'opencl:1')")


def _check_index(index):
    if isinstance(index, bool) or not hasattr(type(index), "__index__"):
        raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                        f"{type(index).__name__}")
    index = operator.index(index)
    if index < 0:
        raise RuntimeError(f"Device index must not be negative (a non-negative integer is "
                           f"expected), got {index}")
    if index > MAX_INDEX:
        raise RuntimeError(f"Device index {index} is out of range: at most {MAX_INDEX} "
                           "(PyTorch's c10::DeviceIndex is 8 bits)")
    return index


class device:
    """A device type plus an optional index, as ``torch.device``.

    >>> import ember
    >>> ember.device("opencl:1")
    device(type='opencl', index=1)
    """
    __slots__ = ("type", "index", "_str", "_hash")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, device):
            if index is None:
                return type_or_str
            type_or_str = type_or_str.type
        if index is not None:
            index = _check_index(index)
        key = (type_or_str, index)
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        if not isinstance(type_or_str, str):
            raise TypeError(f"device(): expected a string or ember.device, got "
                            f"{type(type_or_str).__name__}")
        s = type_or_str
        if not s:
            raise RuntimeError("Invalid device string: '' (Device string must not be empty)")
        typ, sep, idx = s.partition(":")
        if not _TYPE.fullmatch(typ):
            raise _invalid(s)
        if sep:
            if index is not None:
                raise ValueError(f"type (string) must not include an index because index "
                                 f"was passed explicitly: {s}")
            if not _INDEX.fullmatch(idx):
                raise _invalid(s)
            if len(idx) > 10 or int(idx) > 2 ** 31 - 1:  # PyTorch parses it with std::stoi
                raise RuntimeError(f"Could not parse device index '{idx}' in device string "
                                   f"'{s}'")
            index = _check_index(int(idx))
        self = object.__new__(cls)
        object.__setattr__(self, "type", typ)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "_str", typ if index is None else f"{typ}:{index}")
        # (hashed on every allocation and kernel lookup: computed once)
        object.__setattr__(self, "_hash", hash((typ, index)))
        if len(_CACHE) < 1024:
            _CACHE[key] = self
        return self

    def __setattr__(self, k, v):
        raise AttributeError("ember.device is immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError, ValueError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return self._hash

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """``with ember.device("opencl"):``: tensors created in the block without a
        ``device`` go to this one (``torch.device`` as a context manager)."""
        if CONTEXT[0] is None:
            raise RuntimeError("ember.device as a context manager needs the ember frontend "
                               "(import ember)")
        CONTEXT[0][0](self)
        return self

    def __exit__(self, *exc):
        CONTEXT[0][1]()
        return False


def to_device(d) -> device:
    """Normalize a device-like argument and give it a concrete index (``cpu`` keeps none).

    ``"opencl"`` means the backend's current device, index 0 for now.
    """
    if d is None:
        d = "cpu"
    if isinstance(d, int) and not isinstance(d, bool):
        raise TypeError("device ordinals alone are ambiguous in ember; pass 'type:index'")
    dev = d if isinstance(d, device) else device(d)
    if dev.type == "cpu":
        return _CPU if dev.index in (None, 0) else _bad_cpu(dev)
    if dev.type == "meta":  # one device without an index, as PyTorch's
        return _META
    if dev.index is None:
        return device(dev.type, 0)
    return dev


def _bad_cpu(dev):
    raise RuntimeError(f"CPU device index must be 0 (there is one host device), got {dev}")


_CPU = device("cpu")
_META = device("meta")
