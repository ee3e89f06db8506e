"""dtypes and PyTorch's type-promotion rules.

Dtypes live in the dispatcher (not the frontend) because backends need them and a
backend may import only ``ember.dispatcher``. ``ember.float32`` etc. re-export these
objects. ``code`` is the integer every backend sees in a kernel call.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "DType", "bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "complex32", "uint16", "uint32", "uint64",
    "ALL_DTYPES", "COMPLEX_DTYPES", "BAREBONES_UNSIGNED",
    "promote_types", "real_of", "complex_of", "default_complex_dtype", "result_type",
    "get_default_dtype", "set_default_dtype", "dtype_of_scalar", "to_dtype", "from_numpy_dtype",
    "module_name", "set_module_name",
]

#: The module name ember's printed texts start with (``ember.float32``, ``ember.Size([2])``,
#: ``dtype=ember.int32`` in a tensor's repr, ``ember.strided``): ``"ember"``, or ``"torch"``
#: while ``ember.as_torch`` is installed, so a PyTorch program run on ember prints (and
#: compares against) the texts it was written for. Read as ``dtypes.module_name`` at the
#: time of printing; only ``set_module_name`` writes it.
module_name = "ember"


def set_module_name(name: str) -> None:
    """Make the printed texts of dtypes, sizes, layouts and tensors start with ``name``.

    >>> from ember.dispatcher import dtypes
    >>> dtypes.set_module_name("torch"); repr(dtypes.float32)
    'torch.float32'
    >>> dtypes.set_module_name("ember"); repr(dtypes.float32)
    'ember.float32'
    """
    global module_name
    module_name = name


class DType:
    """A tensor element type (``ember.float32``, ...).

    >>> import ember
    >>> ember.float32.itemsize
    4
    """
    __slots__ = ("name", "code", "itemsize", "is_floating_point", "is_signed", "_np", "_kind",
                 "_rank")

    def __init__(self, name, code, itemsize, kind, rank, np_dtype):
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self._kind = kind            # 0 bool, 1 integer, 2 floating, 3 complex
        self._rank = rank
        self.is_floating_point = kind == 2
        self.is_signed = kind > 1 or kind == 1 and not name.startswith("uint")
        self._np = np_dtype

    @property
    def is_complex(self) -> bool:
        return self._kind == 3

    def to_numpy(self):
        if self._np is None:
            if self._kind == 3:
                raise TypeError(f"Got unsupported ScalarType {_TORCH_NAMES[self.name]}")
            raise TypeError(f"Got unsupported ScalarType {_TORCH_NAMES[self.name]}: "
                            "NumPy has no bfloat16 dtype")
        return self._np

    def __repr__(self):
        return f"{module_name}.{self.name}"

    def __reduce__(self):
        return (to_dtype, (self.name,))


bool_ = DType("bool", 0, 1, 0, 0, np.dtype(np.bool_))
uint8 = DType("uint8", 1, 1, 1, 1, np.dtype(np.uint8))
int8 = DType("int8", 2, 1, 1, 1, np.dtype(np.int8))
int16 = DType("int16", 3, 2, 1, 2, np.dtype(np.int16))
int32 = DType("int32", 4, 4, 1, 3, np.dtype(np.int32))
int64 = DType("int64", 5, 8, 1, 4, np.dtype(np.int64))
float16 = DType("float16", 6, 2, 2, 1, np.dtype(np.float16))
bfloat16 = DType("bfloat16", 7, 2, 2, 1, None)
float32 = DType("float32", 8, 4, 2, 2, np.dtype(np.float32))
float64 = DType("float64", 9, 8, 2, 3, np.dtype(np.float64))
#: complex dtypes: pairs of float32 / float64 (real, imaginary), stored interleaved as PyTorch's
complex64 = DType("complex64", 10, 8, 3, 2, np.dtype(np.complex64))
complex128 = DType("complex128", 11, 16, 3, 3, np.dtype(np.complex128))
#: PyTorch's "barebones" unsigned dtypes: tensors of them are created, copied, cast, viewed,
#: saved and printed, but few ops compute on them (mul, eq / ne, bitwise and / or / xor,
#: sum / prod / cumsum, sort, ...: the ops whose definitions say so); they promote with no
#: dtype but themselves and floating ones (``promote_types`` raises, as PyTorch's).
uint16 = DType("uint16", 12, 2, 1, 2, np.dtype(np.uint16))
uint32 = DType("uint32", 13, 4, 1, 3, np.dtype(np.uint32))
uint64 = DType("uint64", 14, 8, 1, 4, np.dtype(np.uint64))
#: PyTorch's complex32 ("ComplexHalf"): pairs of float16, stored interleaved; NumPy has no
#: such dtype. PyTorch computes few ops on it (see complex_ops.HALF_OPS).
complex32 = DType("complex32", 15, 4, 3, 1, None)

#: the real dtypes (every backend's kernels cover these); complex ones are COMPLEX_DTYPES
ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
COMPLEX_DTYPES = (complex64, complex128, complex32)
#: the barebones unsigned dtypes (see uint16): only the kernels that say so take them
BAREBONES_UNSIGNED = (uint16, uint32, uint64)
_EVERY = ALL_DTYPES + COMPLEX_DTYPES + BAREBONES_UNSIGNED
BY_CODE = {d.code: d for d in _EVERY}
_BY_NAME = {d.name: d for d in _EVERY}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16, "bool_": bool_, "cfloat": complex64,
                 "cdouble": complex128, "chalf": complex32})
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                "int32": "Int", "int64": "Long", "float16": "Half", "bfloat16": "BFloat16",
                "float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble", "complex32": "ComplexHalf", "uint16": "UInt16",
                "uint32": "UInt32", "uint64": "UInt64"}
_FROM_NP = {d._np: d for d in _EVERY if d._np is not None}
_REAL_OF = {complex32: float16, complex64: float32, complex128: float64}
_COMPLEX_OF = {float16: complex32, float32: complex64, float64: complex128}

_default_dtype = float32


def torch_name(d: DType) -> str:
    """PyTorch's scalar-type name (``Float``), used in error messages."""
    return _TORCH_NAMES[d.name]


def real_of(d: DType) -> DType:
    """The dtype of a complex dtype's parts (``complex64`` -> ``float32``); a real dtype is
    its own."""
    return _REAL_OF.get(d, d)


def complex_of(d: DType) -> DType:
    """The complex dtype whose parts are ``d`` (``float32`` -> ``complex64``, ``float16`` ->
    ``complex32``); integer and bool dtypes give the default complex dtype, a complex dtype
    itself."""
    if d._kind == 3:
        return d
    if d._kind < 2:
        return default_complex_dtype()
    try:
        return _COMPLEX_OF[d]
    except KeyError:
        raise NotImplementedError(f"complex dtypes with {torch_name(d)} parts are not "
                                  "supported (PyTorch has none); use float32 or float64") from None


def default_complex_dtype() -> DType:
    """The complex dtype of Python complex numbers: complex128 when the default dtype is
    float64, complex32 when it is float16, else complex64 (as PyTorch)."""
    return complex128 if _default_dtype is float64 else \
        complex32 if _default_dtype is float16 else complex64


def get_default_dtype() -> DType:
    """The floating-point dtype new tensors get when none is given (``ember.float32``
    unless changed by :func:`set_default_dtype`).

    Example:
        >>> ember.get_default_dtype()
        ember.float32
    """
    return _default_dtype


def set_default_dtype(d) -> None:
    """Set the dtype of floating-point tensors created without a ``dtype``
    (``ember.tensor([1.])``, ``ember.zeros(2)``, ...).

    A floating-point dtype (float16, bfloat16, float32 or float64), as PyTorch.

    Args:
        d (ember.dtype): the new default floating-point dtype.
    """
    global _default_dtype
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d


def to_dtype(d) -> DType:
    """Accept a DType, its name, a NumPy dtype, or the Python types bool/int/float."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        name = d.partition(".")[2] if d.startswith(("ember.", "torch.")) else d
        try:
            return _BY_NAME[name]
        except KeyError:
            raise TypeError(f"unknown dtype {d!r}") from None
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    try:
        return from_numpy_dtype(np.dtype(d))
    except TypeError:
        raise TypeError(f"expected an ember dtype, got {d!r}") from None


def from_numpy_dtype(npd) -> DType:
    try:
        return _FROM_NP[np.dtype(npd)]
    except (KeyError, TypeError):
        raise TypeError(f"can't convert np.ndarray of type {npd}. The only supported types are: "
                        "float64, float32, float16, complex64, complex128, int64, int32, int16, "
                        "int8, uint64, uint32, uint16, uint8, and bool."
                        ) from None


def _promote2(a: DType, b: DType) -> DType | None:
    if a is b:
        return a
    if a in BAREBONES_UNSIGNED or b in BAREBONES_UNSIGNED:  # (None: not in the table)
        return a if a._kind == 2 else b if b._kind == 2 else None
    if a._kind == 3 or b._kind == 3:  # complex: its parts widen to a float operand's width
        c, r = (a, b) if a._kind == 3 else (b, a)
        if r._kind == 3 or r._kind == 2:   # (float16 parts only with float16: bfloat16 widens)
            rank = max(c._rank, r._rank)
            return complex128 if rank == 3 else complex32 if rank == 1 and \
                bfloat16 not in (c, r) else complex64
        return c
    if a._kind != b._kind:
        return a if a._kind > b._kind else b
    if a._kind == 2:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if a._rank > b._rank else b
    if a._kind == 1:
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    return a


class _PromotionTable(dict):
    """``(a, b) -> promote_types(a, b)``; the pairs PyTorch refuses are missing, and looking
    one up raises its error (a plain lookup otherwise: the table is on every op's path)."""

    def __missing__(self, key):
        a, b = key
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {torch_name(a)} and {torch_name(b)}")


_PROMOTE = _PromotionTable({(a, b): c for a in _EVERY for b in _EVERY
                            if (c := _promote2(a, b)) is not None})


def promote_types(a, b) -> DType:
    """PyTorch's ``torch.promote_types``."""
    return _PROMOTE[(to_dtype(a), to_dtype(b))]


def dtype_of_scalar(v) -> DType:
    if isinstance(v, bool):
        return bool_
    if isinstance(v, int):
        return int64
    if isinstance(v, float):
        return _default_dtype
    if isinstance(v, complex):
        return default_complex_dtype()
    raise TypeError(f"unsupported scalar type {type(v).__name__}")


def _category(d: DType | None) -> int:
    return -1 if d is None else d._kind


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    # c10's combine_categories: a lower-priority operand only matters when it is of a
    # higher category (bool < integer < floating < complex).
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._kind == 3:
        return higher
    if lower._kind == 3:  # (a floating operand keeps its width: float64 * 1j is complex128)
        return complex_of(higher) if higher._kind == 2 else lower
    if higher._kind == 2:
        return higher
    if higher is bool_ or lower._kind == 2:
        return _PROMOTE[(higher, lower)]
    return higher


def result_type(*operands) -> DType:
    """PyTorch's ``torch.result_type`` over tensors and Python scalars.

    Dimensioned tensors take priority over 0-d tensors, which take priority over Python
    scalars, unless the lower-priority operand is of a higher category.
    """
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, DType):
            if x.shape:
                dim = d if dim is None else _PROMOTE[(dim, d)]
            else:
                zero = d if zero is None else _PROMOTE[(zero, d)]
        elif x is None:
            continue
        else:
            if isinstance(x, bool):
                d = bool_
            elif isinstance(x, int):
                d = int64
            elif isinstance(x, float):
                d = _default_dtype
            elif isinstance(x, complex):
                d = default_complex_dtype()
            else:
                raise TypeError(f"unsupported operand type {type(x).__name__}")
            wrapped = d if wrapped is None else _PROMOTE[(wrapped, d)]
    return _combine(dim, _combine(zero, wrapped))
