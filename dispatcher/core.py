"""Tensors as the dispatcher and backends see them: fields, allocation, views, broadcasting.

This module is public: it is what a backend's Python code (and the frontend) uses to read
and make tensors. A tensor is storage + shape + strides + offset + dtype + device — the
*kernel tensor protocol* every kernel receives:

- ``t._storage``: the backend's storage object (what its ``allocate`` returned);
- ``t.shape`` (tuple), ``t._stride`` (elements), ``t._offset`` (elements);
- ``t.dtype`` (``ember.dispatcher.dtypes.DType``: ``.code``, ``.itemsize``, ``.name``);
- ``t.device`` (``.type``, ``.index``); ``t._vc``, the version counter views share.

Helpers: :func:`empty` (allocate through the device's backend), :func:`view_of` (a view
sharing storage), :func:`expand_to` / :func:`broadcast_shapes` (broadcasting),
:func:`contiguous_strides`, :func:`is_contiguous`, :func:`numel`, :func:`scalar_tensor`,
:func:`normalize_dim(s)`, :func:`encode_scalar` / :func:`decode_scalar`.

The frontend registers its ``Tensor`` subclass with :func:`set_tensor_factory`, so the
dispatcher can build outputs without importing the frontend.
"""
from __future__ import annotations

import math
import operator

import struct
import weakref

from . import dtypes as _dt
from .allocator import OutOfMemoryError, format_size
from .device import device as _device_cls, to_device
from .plugins import BACKENDS, backend_for, on_unregister

__all__ = [
    "TensorBase", "Size", "as_size", "set_tensor_factory", "new_tensor", "empty",
    "contiguous_strides",
    "numel", "view_of", "is_contiguous", "broadcast_shapes", "expand_to", "expand_rank_error",
    "scalar_tensor",
    "same_device", "bump", "normalize_dim", "normalize_dims", "shape_str", "encode_scalar",
    "decode_scalar", "has_internal_overlap", "check_writable", "same_view", "may_overlap",
    "OVERLAP_MESSAGE", "host_out_of_memory", "LazyStorage", "adopt", "host_storage",
]


class TensorBase:
    """The data-carrying part of a tensor (the frontend's ``Tensor`` extends it).

    Besides the data fields, what the dispatcher's autograd hook and views need:
    ``requires_grad``, ``_base`` (the tensor a view was made from) and ``_view_gen`` (which
    rebase of the base a view has seen; see ``ember.autograd``'s in-place writes).
    """
    # (a dict: the values are the docstrings of the public fields' descriptors)
    __slots__ = {
        "_storage": None,
        "shape": "The size of each dimension, an ``ember.Size`` (a tuple of ints; "
                 "``size()`` gives the same).",
        "_stride": None,
        "_offset": None,
        "dtype": "The data type of the elements (an ``ember.dtype``, e.g. ``ember.float32``).",
        "device": "The device the tensor's memory lives on (an ``ember.device``).",
        "_vc": None,
        "requires_grad": "Whether autograd records operations on this tensor (so that "
                         "``backward()`` computes gradients for it). Set it on leaves, or "
                         "with ``requires_grad_()``.",
        "_base": None,
        "_view_gen": None,
        "__weakref__": None,
    }


class Size(tuple):
    """A tensor's shape (``x.shape``, ``x.size()``): a tuple of ints with ``numel()``, as
    ``torch.Size``. Slicing, ``+`` and ``*`` give a ``Size`` too.

    >>> ember.Size([2, 3]).numel()
    6
    """

    def __new__(cls, sizes=()):
        if type(sizes) is tuple and all(type(s) is int for s in sizes):  # a tensor's shape
            return tuple.__new__(cls, sizes)
        items = []
        for i, s in enumerate(sizes):
            if isinstance(s, float) or not hasattr(type(s), "__index__"):
                v = None
            else:
                try:
                    v = operator.index(s)
                except (TypeError, RuntimeError, ValueError):  # a float or many-element tensor
                    v = None
            if v is None:
                raise TypeError(f"ember.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(s).__name__}')")
            items.append(v)
        return tuple.__new__(cls, items)

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        # a slice is a Size, as torch.Size's (botorch calls .numel() on shape[:-2])
        return tuple.__new__(Size, item) if type(index) is slice else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple(self) * n)

    __rmul__ = __mul__

    def numel(self):
        return numel(self)

    def __repr__(self):
        return f"{_dt.module_name}.Size({list(self)})"


#: tuple -> its Size: tensors' shapes repeat, and a lookup costs a quarter of making one
_SIZES: dict = {}


def as_size(shape) -> Size:
    """``shape`` (a tuple of ints) as a :class:`Size`, shared between tensors of one shape."""
    s = _SIZES.get(shape)
    if s is None:
        if len(_SIZES) > 4096:
            _SIZES.clear()
        s = _SIZES[shape] = tuple.__new__(Size, shape)
    return s


def _default_factory(storage, shape, stride, offset, dtype, device, vc):
    t = TensorBase.__new__(TensorBase)
    t._storage = storage
    t.shape = shape if type(shape) is Size else (_SIZES.get(shape) or as_size(shape))
    t._stride = stride
    t._offset = offset
    t.dtype = dtype
    t.device = device
    t._vc = vc
    t.requires_grad = False
    t._base = None
    t._view_gen = 0
    return t


new_tensor = _default_factory
_TENSOR_TYPES: tuple = (TensorBase,)


def set_tensor_factory(fn, cls) -> None:
    """Called once by the frontend: ``fn(storage, shape, stride, offset, dtype, device, vc)``."""
    global new_tensor
    new_tensor = fn
    globals()["_TENSOR_TYPES"] = (cls,)

_STRIDES: dict = {}


def contiguous_strides(shape: tuple) -> tuple:
    s = _STRIDES.get(shape)
    if s is None:
        acc = 1
        out = []
        for n in reversed(shape):
            out.append(acc)
            acc *= n if n > 1 else 1
        s = tuple(reversed(out))
        if len(_STRIDES) < 4096:
            _STRIDES[shape] = s
    return s


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


#: allocators by the device's string (hashed in C: ``empty`` runs for every op's result,
#: and ``device.__hash__`` is a Python call)
_ALLOCATORS: dict = {}


def _allocator(device):
    backend = BACKENDS.get(device.type) or backend_for(device.type)
    alloc = _ALLOCATORS[device._str] = backend.allocator(device.index or 0)
    return alloc


def _forget_allocators(device_type: str) -> None:
    for d in [d for d in _ALLOCATORS if d.partition(":")[0] == device_type]:
        del _ALLOCATORS[d]


on_unregister(_forget_allocators)

#: shape -> (number of elements, contiguous strides)
_GEOMETRY: dict = {}


def _geometry(shape):
    g = (numel(shape), contiguous_strides(shape))
    if len(_GEOMETRY) < 4096:
        _GEOMETRY[shape] = g
    return g


def empty(shape: tuple, dtype, device):
    """Allocate an uninitialised contiguous tensor through the device's backend.

    A backend whose allocation fails with a plain ``MemoryError`` (host memory: the CPU
    backend's storage) is reported as ``ember.OutOfMemoryError``, like a device's."""
    alloc = _ALLOCATORS.get(device._str) or _allocator(device)
    n, strides = _GEOMETRY.get(shape) or _geometry(shape)
    try:
        storage = alloc(n * dtype.itemsize)
    except OutOfMemoryError:
        raise
    except MemoryError as e:
        raise host_out_of_memory(f"a {dtype.name} tensor of shape {shape_str(shape)} on "
                                 f"{device}", n * dtype.itemsize, e) from None
    return new_tensor(storage, shape, strides, 0, dtype, device, [0])


#: ``empty`` itself: what allocates real memory while a capture region (``lazy.py``) has
#: replaced ``empty`` with its lazy form (cached 0-d scalars are real: they are constants)
real_empty = empty


# ---- lazy storage (ember.compile's capture, ``lazy.py``) -----------------------------------

class LazyStorage:
    """The storage of a tensor made inside a capture region: bytes that are not computed
    yet. The ops that write them are recorded in a pending graph (``lazy.py``); running it
    gives each live lazy storage a real one (``real``), and the tensors using it
    (``users``, weak references) are pointed at that. Any attribute a real storage has and
    this one lacks (``data_ptr``, a backend's handle) runs the pending graph first, so
    nothing reads bytes that do not exist. ``recipe``: set when the graph that made these
    bytes left them out because only autograd saved them and they are cheap to recompute
    (``lazy.Recipe``): they are recomputed where the backward pass reads them."""
    __slots__ = ("nbytes", "device", "users", "real", "error", "recipe", "__weakref__")
    readonly = False

    def __init__(self, nbytes: int, device):
        self.nbytes = nbytes
        self.device = device
        self.users = []
        self.real = None
        self.error = None
        self.recipe = None

    def __getattr__(self, name):
        return getattr(MATERIALIZE[0](self), name)

    def __repr__(self):
        state = "computed" if self.real is not None else "pending"
        return f"<LazyStorage {self.nbytes} bytes on {self.device}, {state}>"


def _no_capture(storage):
    raise RuntimeError("a lazy storage outlived its capture region without being computed")


#: ``fn(lazy storage) -> real storage`` (set by ``lazy.py``); ``HOST_READ[0](t)``, when set,
#: runs the pending graph before a host read of ``t``'s memory
MATERIALIZE = [_no_capture]
HOST_READ = [None]
_weakref = weakref.ref


def adopt(t) -> None:
    """Call after assigning ``t._storage`` directly: a tensor given lazy storage that way is
    pointed at the real storage too when the graph runs."""
    s = t._storage
    if s.__class__ is LazyStorage:
        s.users.append(_weakref(t))


def host_storage(t, write: bool = True):
    """``t``'s storage for reading or writing its bytes on the host (``numpy()``, saving):
    inside a capture region, the pending graph runs first when it writes them or, if the
    host may write them (``write``), when it reads them."""
    hook = HOST_READ[0]
    if hook is not None:
        hook(t, write)
    s = t._storage
    if s.__class__ is LazyStorage:
        return MATERIALIZE[0](s)
    return s


# ---- memory overlap of written-to tensors -------------------------------------------------

#: PyTorch's message for a written-to tensor whose elements share memory
OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor "
                   "refers to a single memory location. Please clone() the tensor before "
                   "performing the operation.")


def has_internal_overlap(t) -> bool:
    """Whether two elements of ``t`` certainly share memory: a dim of size > 1 with stride 0
    (what ``expand`` and broadcasting make). This is PyTorch's ``has_internal_overlap ==
    YES``; other overlapping layouts (``as_strided`` with strides smaller than the sizes
    below them) are "too hard" there and not rejected, so they are not here either."""
    stride = t._stride
    if 0 not in stride:
        return False
    shape = t.shape
    if 0 in shape:      # nothing is written
        return False
    for n, s in zip(shape, stride):
        if s == 0 and n > 1:
            return True
    return False


def check_writable(t, op: str) -> None:
    """Raise PyTorch's error when ``t``, about to be written by ``op``, has internal overlap
    (several elements, one memory location: threads would race, the result would depend on
    which write lands last)."""
    if 0 in t._stride and has_internal_overlap(t):
        raise RuntimeError(f"{op}(): {OVERLAP_MESSAGE} (the written-to tensor has shape "
                           f"{shape_str(t.shape)} and strides {list(t._stride)}; a stride of "
                           f"0 comes from expand() or broadcasting)")


def same_view(a, b) -> bool:
    """Whether ``a`` and ``b`` are the same elements of the same memory, in the same order."""
    return (a._storage is b._storage and a._offset == b._offset and a.shape == b.shape
            and a._stride == b._stride and a.dtype.itemsize == b.dtype.itemsize)


def _byte_extent(t) -> tuple:
    isz = t.dtype.itemsize
    last = t._offset
    for n, s in zip(t.shape, t._stride):
        last += (n - 1) * s
    return t._offset * isz, (last + 1) * isz


def may_overlap(a, b) -> bool:
    """Whether ``a`` and ``b`` may share an element's memory: same storage, both non-empty,
    and their byte ranges intersect (disjoint slices of one tensor never do)."""
    if a._storage is not b._storage or 0 in a.shape or 0 in b.shape:
        return False
    alo, ahi = _byte_extent(a)
    blo, bhi = _byte_extent(b)
    return alo < bhi and blo < ahi


def host_out_of_memory(what: str, nbytes: int | None, cause: BaseException | None = None):
    """An :class:`~ember.dispatcher.allocator.OutOfMemoryError` for host memory that could
    not be had (a CPU tensor's storage, a staging buffer of a copy to or from a device, a
    kernel's scratch memory); ``nbytes`` None when the size is not known."""
    extra = f" ({type(cause).__name__}: {cause})" if cause is not None and str(cause) else ""
    size = "memory" if nbytes is None else f"{format_size(nbytes)} ({nbytes} bytes)"
    err = OutOfMemoryError(
        f"Out of host memory: tried to allocate {size} for {what}{extra}. The process (or "
        f"its address-space limit, ulimit -v) has no more host memory to give: free tensors "
        f"you no longer need, or use smaller ones.")
    err.nbytes, err.alloc_size, err.device = nbytes, nbytes, "cpu"
    return err


def view_of(t, shape: tuple, stride: tuple, offset: int):
    """A new tensor sharing ``t``'s storage and version counter."""
    return new_tensor(t._storage, shape, stride, offset, t.dtype, t.device, t._vc)


def is_contiguous(t) -> bool:
    expected = 1
    shape, stride = t.shape, t._stride
    if 0 in shape:  # an empty tensor is contiguous whatever its strides (PyTorch)
        return True
    # (zipped, not indexed: Size's __getitem__ is Python, and this path is hot)
    for n, st in zip(reversed(shape), reversed(stride)):
        if n != 1:
            if st != expected:
                return False
            expected *= n
    return True


def normalize_dim(dim, ndim: int, op: str = "") -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        try:
            dim = operator.index(dim)
        except TypeError:
            raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}") from None
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}],"
                         f" but got {dim})")
    return dim + n if dim < 0 else dim


def normalize_dims(dim, ndim: int, op: str = "") -> tuple:
    """``None`` → every dim; an int or a sequence → sorted unique non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        out = []
        for d in dim:
            d = normalize_dim(d, ndim, op)
            if d in out:   # (PyTorch's message, which names no op)
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            out.append(d)
        return tuple(sorted(d for d in out if d < ndim or ndim > 0)) if ndim else ()
    d = normalize_dim(dim, ndim, op)
    return (d,) if ndim else ()


def broadcast_shapes(*shapes) -> tuple:
    """NumPy/PyTorch broadcasting with PyTorch's error message."""
    if len(shapes) == 2:
        a, b = shapes
        if a == b:
            return a
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            j = off + i
            m = out[j]
            if m == 1:
                out[j] = n
            elif n != 1 and n != m:
                raise RuntimeError(
                    f"The size of tensor a ({m}) must match the size of tensor b ({n}) at "
                    f"non-singleton dimension {i}")
    return tuple(out)


def expand_rank_error(t, sizes) -> RuntimeError:
    """PyTorch's error for expanding ``t`` to fewer dimensions than it has."""
    prefix = "" if t.device.type == "cpu" else f"{t.device.type}."
    return RuntimeError(
        f"expand({_dt.module_name}.{prefix}{_dt.torch_name(t.dtype)}Tensor{{{list(t.shape)}}},"
        f" size={list(sizes)}): the number of sizes provided ({len(sizes)}) must be greater "
        f"or equal to the number of dimensions in the tensor ({len(t.shape)})")


def expand_to(t, shape: tuple):
    """A stride-0 broadcast view of ``t`` with ``shape`` (no copy)."""
    if t.shape == shape:
        return t
    nd = len(shape)
    off = nd - len(t.shape)
    if off < 0:
        raise expand_rank_error(t, shape)
    stride = [0] * nd
    for i, n in enumerate(t.shape):
        target = shape[off + i]
        if n == target:
            stride[off + i] = t._stride[i]
        elif n == 1:
            stride[off + i] = 0
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({target}) must match the existing size ({n})"
                f" at non-singleton dimension {off + i}.  Target sizes: {list(shape)}.  "
                f"Tensor sizes: {list(t.shape)}")
    return view_of(t, tuple(shape), tuple(stride), t._offset)


_SCALARS: dict = {}
_copysign = math.copysign


def scalar_tensor(value, dtype, device):
    """A cached, never-written 0-d tensor holding ``value`` (for ``x + 1`` style calls)."""
    # -0.0 == 0.0 and they hash alike, but x / -0.0 is not x / 0.0: a zero's sign is part
    # of the key (looked at only for zeros, so other scalars pay one comparison)
    key = (value, type(value), dtype.code, device, value == 0 and _copysign(1.0, value))
    t = _SCALARS.get(key)
    if t is None:
        if isinstance(value, float) and math.isnan(value):
            key = None
        t = real_empty((), dtype, device)
        fill = BACKENDS[device.type].kernels.get("fill")
        if fill is None or dtype._kind == 3:
            # a backend without it (EMBER_FALLBACK=cpu), or a complex dtype (which no kernel
            # takes): write the bytes
            BACKENDS[device.type].copy_from_host(t._storage, 0,
                                                 encode_scalar(value, dtype))
        else:
            fill(t, _coerce_scalar(value, dtype))
        if key is not None:
            if len(_SCALARS) > 512:
                _SCALARS.clear()
            _SCALARS[key] = t
    return t


_SCALAR_VIEWS: dict = {}


def scalar_like(value, t):
    """``value`` as a never-written stride-0 view with ``t``'s shape, dtype and device."""
    key = (value, type(value), t.dtype.code, t.device, t.shape,
           value == 0 and _copysign(1.0, value))
    v = _SCALARS_VIEWS_GET(key)
    if v is None:
        v = expand_to(scalar_tensor(value, t.dtype, t.device), t.shape)
        if value == value:  # NaN never hits the cache
            if len(_SCALAR_VIEWS) > 512:
                _SCALAR_VIEWS.clear()
            _SCALAR_VIEWS[key] = v
    return v


_SCALARS_VIEWS_GET = _SCALAR_VIEWS.get


_FORMATS = {"bool": "?", "uint8": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
            "float16": "e", "float32": "f", "float64": "d", "uint16": "H", "uint32": "I",
            "uint64": "Q"}
_COMPLEX_FORMATS = {"complex32": "ee", "complex64": "ff", "complex128": "dd"}


def encode_scalar(value, dtype) -> bytes:
    """``value`` as one element of ``dtype`` in memory (little-endian)."""
    v = _coerce_scalar(value, dtype)
    if dtype._kind == 3:  # (real part, imaginary part)
        return struct.pack("<" + _COMPLEX_FORMATS[dtype.name], v.real, v.imag)
    fmt = _FORMATS.get(dtype.name)
    if fmt is None:  # bfloat16: the high half of a float32
        return struct.pack("<f", v)[2:]
    if dtype._kind == 1:  # (the element's bits: -1 is 255 in uint8)
        v &= (1 << (8 * dtype.itemsize)) - 1
        fmt = fmt.upper()
    return struct.pack("<" + fmt, v)


def decode_scalar(raw: bytes, dtype):
    """The Python number one element of ``dtype`` holds."""
    if dtype._kind == 3:
        return complex(*struct.unpack("<" + _COMPLEX_FORMATS[dtype.name], bytes(raw)))
    fmt = _FORMATS.get(dtype.name)
    if fmt is None:
        return struct.unpack("<f", b"\x00\x00" + bytes(raw))[0]
    v = struct.unpack("<" + fmt, bytes(raw))[0]
    return float(v) if dtype.is_floating_point else v


def _coerce_scalar(value, dtype):
    if dtype._kind == 3:
        return complex(value)
    if type(value) is complex:
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        value = value.real
    if dtype is _dt.bool_:
        return bool(value)
    if not dtype.is_floating_point:
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                raise RuntimeError(f"value cannot be converted to type {dtype.name} without "
                                   "overflow")
            value = int(value)
        value = int(value)
        # a uint64 above INT64_MAX as the int64 of its bits: what kernels parse and convert
        # back (a Python int past 64 bits would reach them as an inexact double)
        return value - (1 << 64) if value >= 1 << 63 and dtype.itemsize == 8 else value
    return float(value)


def same_device(op: str, tensors) -> _device_cls:
    dev = tensors[0].device
    for t in tensors[1:]:
        if t.device is not dev and t.device != dev:
            raise RuntimeError(
                f"{op}(): Expected all tensors to be on the same device, but found at least two"
                f" devices, {dev} and {t.device}!")
    return dev


#: inference mode turns version tracking off (a list so the frontend can flip it)
TRACK_VERSIONS = [True]


def bump(t) -> None:
    """Record an in-place write (autograd's version counter)."""
    if TRACK_VERSIONS[0]:
        t._vc[0] += 1


__all__ += ["to_device"]
