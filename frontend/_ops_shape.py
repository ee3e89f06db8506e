"""ember's top-level functions and Tensor methods: shape (see frontend/__init__.py).

PyTorch's indexing, shape, creation, random and legacy API: the ops compute in the
dispatcher's definitions (``defs/index.py``, ``defs/copy.py``); these are their public
forms with PyTorch's argument handling.

>>> ember.tile(ember.arange(3), (2,)).tolist()
[0, 1, 2, 0, 1, 2]
"""
from __future__ import annotations

import builtins
import numbers
import operator

import numpy as np

from ember.dispatcher import complex_ops as CX
from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import copy as CP
from ember.dispatcher.defs import index as IX
from ember.dispatcher.device import to_device
from ember.dispatcher.grad_mode import MODE, below_autograd

from . import _creation as K
from . import _storage as ST
from . import _views as VW
from ember.dispatcher.warn import warn as _warn

E = O.elementwise

__all__: list = []          # names exported as ember.<name>
TENSOR_METHODS: dict = {}   # name -> function (or property) installed on ember.Tensor


def _export(*names):
    __all__.extend(names)


def _method(*names):
    """Decorator: also install ``fn`` as the Tensor methods ``names`` (default: its name)."""
    def deco(fn):
        for n in names or (fn.__name__,):
            TENSOR_METHODS[n] = fn
        return fn
    return deco


def _t(x, op, arg="input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _inplace(self, op, res):
    """Write an out-of-place result back into ``self`` (the in-place forms)."""
    C.check_writable(self, op)
    if tuple(res.shape) != tuple(self.shape):
        raise RuntimeError(f"{op}(): output with shape {C.shape_str(self.shape)} doesn't match "
                           f"the broadcast shape {C.shape_str(res.shape)}")
    return O.copy_(self, res)


# ---- layouts and memory formats (defined with the creation functions that take them) ------
layout, memory_format = K.layout, K.memory_format
strided, contiguous_format, preserve_format = K.strided, K.contiguous_format, K.preserve_format
channels_last, channels_last_3d = K.channels_last, K.channels_last_3d
channels_last_strides = K.channels_last_strides
_export("layout", "memory_format", "strided", "contiguous_format", "channels_last",
        "channels_last_3d", "preserve_format")


def to_memory_format(x, fmt):
    """``Tensor.to(memory_format=fmt)``: a channels-last format restrides even where the
    layout is ambiguous (size-1 channels), as PyTorch's ``to`` does and ``contiguous``
    does not; contiguous_format as ``contiguous()``; preserve_format (or None) keeps ``x``."""
    if fmt is None or fmt is preserve_format:
        return x
    if fmt is contiguous_format:
        return O.contiguous(x)
    if fmt not in (channels_last, channels_last_3d):
        raise TypeError(f"to(): argument 'memory_format' must be ember.memory_format, not "
                        f"{type(fmt).__name__}")
    if tuple(x._stride) == channels_last_strides(x.shape, fmt):
        return x
    return O.copy_(K.empty_like(x, memory_format=fmt), x)


def in_memory_format(x, fmt):
    """``x`` laid out in ``fmt`` (a copy unless it already is)."""
    if fmt is None or fmt is contiguous_format:
        return O.contiguous(x)
    if fmt is preserve_format:
        if C.is_contiguous(x):
            return x
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if fmt not in (channels_last, channels_last_3d):
        raise TypeError(f"contiguous(): argument 'memory_format' must be ember.memory_format, "
                        f"not {type(fmt).__name__}")
    if is_in_format(x, fmt):
        return x
    return O.copy_(K.empty_like(x, memory_format=fmt), x)


def clone(x, memory_format=None):
    """A copy of ``x`` in ``memory_format``. ``preserve_format`` (the default) keeps the
    strides' order of a dense, non-overlapping ``x`` (a transposed matrix clones to a
    transposed matrix), as PyTorch; other inputs become contiguous."""
    if memory_format is None or memory_format is preserve_format:
        if not C.is_contiguous(x) and x.ndim > 1:
            order = sorted(builtins.range(x.ndim), key=lambda d: (-x._stride[d], d))
            permuted = V.permute(x, order)
            if C.is_contiguous(permuted):          # dense and non-overlapping
                inverse = [order.index(d) for d in builtins.range(x.ndim)]
                y = V.permute(O.clone(permuted), inverse)
                if not y.requires_grad:
                    y._base = None                 # (a copy, not a view of anything)
                return y
        return O.clone(x)
    if memory_format is contiguous_format:
        return O.clone(x)
    return in_memory_format(O.clone(x), memory_format)


def is_in_format(x, fmt):
    """Whether ``x``'s strides are those of ``fmt`` (size-1 dims may have any stride)."""
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return C.is_contiguous(x)
    if fmt not in (channels_last, channels_last_3d):
        raise RuntimeError(f"is_contiguous(): unsupported memory format {fmt!r}")
    if len(x.shape) != (4 if fmt is channels_last else 5):
        return False        # (PyTorch's answer for other ranks; only laying out raises)
    strides = channels_last_strides(x.shape, fmt)
    return all(st == s or n == 1 for st, s, n in zip(x._stride, strides, x.shape))


# ---- properties and predicates ---------------------------------------------------------
def _false(self) -> bool:
    return False


#: the docstrings of the layout predicates that are False for every dense tensor
_FALSE_DOCS = {
    "is_sparse": "Whether the tensor is sparse: False for a dense tensor (ember's sparse COO "
                 "tensors are their own class, whose ``is_sparse`` is True).",
    "is_quantized": "Whether the tensor is quantized: always False (ember has no quantized "
                    "dtypes).",
    "is_mkldnn": "Whether the tensor has PyTorch's MKL-DNN layout: always False in ember.",
    "is_nested": "Whether the tensor is a nested (ragged) tensor: always False in ember.",
    "is_sparse_csr": "Whether the tensor has the sparse CSR layout: always False (ember's "
                     "sparse tensors are COO).",
}
for _n in ("is_sparse", "is_quantized", "is_mkldnn", "is_nested", "is_sparse_csr"):
    TENSOR_METHODS[_n] = property(_false, doc=_FALSE_DOCS[_n])
for _n in ("is_meta", "is_mps", "is_xpu", "is_ipu", "is_mtia", "is_maia", "is_vulkan",
           "is_xla"):
    TENSOR_METHODS[_n] = property(lambda self, _type=_n[3:]: self.device.type == _type,
                                  doc=f"Whether the tensor's device type is ``'{_n[3:]}'``.")
del _n

TENSOR_METHODS["layout"] = property(
    lambda self: strided,
    doc="The tensor's memory layout: ``ember.strided`` for a dense tensor.")
TENSOR_METHODS["output_nr"] = property(
    lambda self: 0 if self.grad_fn is None else self.grad_fn._output_nr(self),
    doc="The index of the tensor among the outputs of the op that made it (PyTorch's "
        "autograd metadata): 0 for a leaf and for ember's built-in ops (each of which "
        "makes one output per node); a custom ``autograd.Function``'s outputs count "
        "from 0.")


@_method()
def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex (``complex64`` or ``complex128``).

    Example:
        >>> ember.tensor([1 + 2j]).is_complex()
        True
    """
    return input.dtype._kind == 3


@_method()
def is_conj(input) -> bool:
    """Whether ``input`` is a lazily conjugated view: always False in ember, whose
    :func:`conj` materializes the conjugate (PyTorch's sets a conjugate bit instead).

    Example:
        >>> ember.tensor([1., 2.]).is_conj()
        False
    """
    return False


@_method()
def is_neg(input) -> bool:
    """Whether ``input`` is a lazily negated view (PyTorch's conjugate-view machinery):
    always False in ember."""
    return False


@_method()
def is_inference(input) -> bool:
    """Whether ``input`` is an inference tensor (made under ``inference_mode``): always
    False in ember, whose ``inference_mode`` tensors are ordinary tensors (PyTorch says
    True for them)."""
    return False


@_method()
def is_signed(input) -> bool:
    """Whether ``input``'s dtype is signed: True for floating-point and signed integer
    dtypes, False for unsigned integers and bool.

    Example:
        >>> ember.tensor([1, 2]).is_signed()
        True
        >>> ember.tensor([1, 2], dtype=ember.uint8).is_signed()
        False
    """
    return input.dtype.is_floating_point or (input.dtype is not D.bool_
                                             and input.dtype.is_signed)


@_method()
def is_nonzero(input) -> bool:
    """Whether the single element of ``input`` is non-zero (``bool(input)``).

    Raises:
        RuntimeError: if ``input`` does not have exactly one element.

    Example:
        >>> ember.tensor([1.5]).is_nonzero()
        True
        >>> ember.tensor(0).is_nonzero()
        False
    """
    n = C.numel(input.shape)
    if n != 1:
        what = "more than one value" if n else "no values"
        raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
    return bool(O.item(input))


@_method()
def is_same_size(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape.

    Example:
        >>> ember.zeros(2, 3).is_same_size(ember.ones(2, 3))
        True
    """
    return tuple(input.shape) == tuple(other.shape)


@_method()
def is_set_to(self, tensor) -> bool:
    """Whether both tensors view the same storage with the same offset, sizes and strides."""
    return (self._storage is tensor._storage and self._offset == tensor._offset
            and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self._stride) == tuple(tensor._stride))


@_method()
def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride, ties in
    order)."""
    nd = len(self.shape)
    return tuple(sorted(builtins.range(nd), key=lambda d: -self._stride[d]))


_export("is_complex", "is_conj", "is_neg", "is_inference", "is_signed", "is_nonzero",
        "is_same_size")


# ---- complex numbers: conjugation, parts, polar form ----------------------------------------
@_method()
def resolve_conj(input):
    """``input`` with a lazy conjugation materialized: ``input`` itself in ember, whose
    conjugates are never lazy."""
    return input


@_method()
def resolve_neg(input):
    """``input`` with a lazy negation materialized: ``input`` itself in ember, which has no
    negative views."""
    return input


@_method()
def conj(input):
    """The complex conjugate of ``input``; a real ``input`` is returned as it is.

    PyTorch returns a lazily conjugated view of a complex tensor; ember computes the
    conjugate (a new tensor), so writing into it does not change ``input``.

    Example:
        >>> ember.conj(ember.tensor([1 + 2j, 3 - 1j]))
        tensor([1.-2.j, 3.+1.j])
    """
    return conj_physical(input) if input.dtype._kind == 3 else input


@_method()
def conj_physical(input, *, out=None):
    """The complex conjugate of ``input`` as a new tensor (a copy for a real ``input``).

    Args:
        input (Tensor): the input tensor.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.conj_physical(ember.tensor([1 - 1j]))
        tensor([1.+1.j])
    """
    if input.dtype._kind != 3:
        res = O.clone(input)
    else:
        res = CX.conj(input)
    return O.write_out("conj_physical", out, res) if out is not None else res


def conj_physical_(self):
    """In-place version of :func:`conj_physical`."""
    if self.dtype._kind == 3:
        O.copy_(self, conj_physical(self))
    return self


def real(input):
    """The real part of ``input``: a real view of a complex tensor (writing into it writes
    ``input``), ``input`` itself for a real one (also the property ``Tensor.real``).

    Example:
        >>> ember.tensor([1 + 2j, 3 - 1j]).real
        tensor([1., 3.])
    """
    return V.complex_part(input, 0) if input.dtype._kind == 3 else input


def imag(input):
    """The imaginary part of complex ``input``: a real view (also the property
    ``Tensor.imag``).

    Raises:
        RuntimeError: for a real ``input``, as PyTorch.

    Example:
        >>> ember.tensor([1 + 2j, 3 - 1j]).imag
        tensor([ 2., -1.])
    """
    if input.dtype._kind != 3:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return V.complex_part(input, 1)


def _set_part(k):
    def setter(self, value):
        part = real(self) if k == 0 else imag(self)
        O.copy_(part, value) if isinstance(value, TensorBase) else O.fill_(part, value)
    return setter


TENSOR_METHODS["conj_physical_"] = conj_physical_
TENSOR_METHODS["real"] = property(real, _set_part(0))
TENSOR_METHODS["imag"] = property(imag, _set_part(1))


def view_as_real(input):
    """A real view of complex ``input`` with one more dimension of size 2 at the end: the
    real and imaginary parts (no copy).

    Example:
        >>> ember.view_as_real(ember.tensor([1 + 2j]))
        tensor([[1., 2.]])
    """
    return V.view_as_real(_t(input, "view_as_real"))


def view_as_complex(input):
    """A complex view of a float32 / float64 ``input`` whose last dimension (of size 2,
    stride 1) holds real and imaginary parts (no copy).

    Example:
        >>> ember.view_as_complex(ember.tensor([[1., 2.]]))
        tensor([1.+2.j])
    """
    return V.view_as_complex(_t(input, "view_as_complex"))


def _parts_check(op, a, b, names):
    for t, n in zip((a, b), names):
        _t(t, op, n)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {D.torch_name(a.dtype)} but got "
                           f"scalar type {D.torch_name(b.dtype)} for second argument")
    if a.dtype is D.float16 and op == "polar":
        raise NotImplementedError('"polar_cpu" not implemented for \'Half\'')
    if a.dtype not in (D.float16, D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{D.torch_name(a.dtype)} and {D.torch_name(b.dtype)}")


def complex(real, imag, *, out=None):  # noqa: A001 (PyTorch's name)
    """The complex tensor ``real + i imag`` (float16 parts give complex32, float32 parts
    complex64, float64 parts complex128; shapes broadcast).

    Example:
        >>> ember.complex(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
        tensor([1.+3.j, 2.+4.j])
    """
    _parts_check("complex", real, imag, ("real", "imag"))
    res = CX.join(real, imag)
    return O.write_out("complex", out, res) if out is not None else res


def polar(abs, angle, *, out=None):  # noqa: A002 (PyTorch's names)
    """The complex tensor of absolute values ``abs`` and angles ``angle`` (radians):
    ``abs * (cos(angle) + i sin(angle))``.

    Example:
        >>> ember.polar(ember.tensor([2.]), ember.tensor([0.]))
        tensor([2.+0.j])
    """
    _parts_check("polar", abs, angle, ("abs", "angle"))
    res = CX.join(E("mul", abs, E("cos", angle)), E("mul", abs, E("sin", angle)))
    return O.write_out("polar", out, res) if out is not None else res


@_method()
def angle(input, *, out=None):
    """The angle (argument) of each element in radians: ``atan2(imag, real)`` for complex
    ``input``; for a real one, 0 for non-negative values, pi for negative ones and NaN for
    NaN (integers give the default float dtype).

    Example:
        >>> ember.angle(ember.tensor([1j, -1.]))
        tensor([1.5708, 3.1416])
    """
    _t(input, "angle")
    CX.check_half("angle", input)
    if input.dtype._kind == 3:
        res = E("atan2", V.complex_part(input, 1), V.complex_part(input, 0))
    else:
        x = input if input.dtype.is_floating_point else O.to(input, dtype=D.get_default_dtype())
        res = E("add", O.where(E("lt", x, 0), 3.141592653589793, 0.0), E("mul", x, 0))
        if res.dtype is not x.dtype:
            res = O.to(res, dtype=x.dtype)
    return O.write_out("angle", out, res) if out is not None else res


@_method()
def sgn(input, *, out=None):
    """``input / |input|`` for complex ``input`` (0 where it is 0); :func:`sign` for a real
    one.

    Example:
        >>> ember.sgn(ember.tensor([3 + 4j, 0j]))
        tensor([0.6000+0.8000j, 0.0000+0.0000j])
    """
    if isinstance(input, TensorBase) and input.dtype._kind == 3:
        return CX.elementwise("sgn", (input,), out, False, {})
    return E("sign", input, out=out)


def sgn_(self):
    """In-place version of :func:`sgn`."""
    if self.dtype._kind == 3:
        return CX.elementwise("sgn", (self,), None, True, {})
    return E("sign", self, inplace=True)


TENSOR_METHODS["sgn_"] = sgn_
_export("view_as_real", "view_as_complex", "complex", "polar", "angle", "sgn")


@_method()
def adjoint(input):
    """The conjugate transpose of a matrix or batch of matrices, as a view.

    ember's dtypes are real, so this is ``input.transpose(-2, -1)``.

    Args:
        input (Tensor): a tensor with at least 2 dimensions.

    Example:
        >>> ember.adjoint(ember.tensor([[1., 2., 3.], [4., 5., 6.]]))
        tensor([[1., 4.],
                [2., 5.],
                [3., 6.]])
    """
    if len(input.shape) < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {len(input.shape)}-D tensor.")
    return conj(VW.transpose(input, -2, -1))


def _mH(self):
    """The conjugate transpose of each matrix (the last two dimensions), as a view:
    ``transpose(-2, -1)`` for ember's real dtypes.

    Example:
        >>> ember.zeros(4, 2, 3).mH.size()
        ember.Size([4, 3, 2])
    """
    if len(self.shape) < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {len(self.shape)}-D tensor.")
    return conj(VW.transpose(self, -2, -1))


def _H(self):
    """The conjugate transpose of a matrix (2-D) as a view; a 0-D tensor is returned as
    it is.

    Example:
        >>> ember.tensor([[1., 2.], [3., 4.]]).H
        tensor([[1., 3.],
                [2., 4.]])
    """
    nd = len(self.shape)
    if nd not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{nd}-D tensor.")
    return conj(VW.transpose(self, 0, 1) if nd == 2 else self)


TENSOR_METHODS["mH"] = property(_mH)
TENSOR_METHODS["H"] = property(_H)
_export("resolve_conj", "resolve_neg", "conj", "conj_physical", "conj_physical_", "real",
        "imag", "adjoint")


# ---- indexing family -------------------------------------------------------------------
@_method()
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along ``dim``) repeated ``repeats`` times.

    >>> ember.repeat_interleave(ember.tensor([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    """
    _t(input, "repeat_interleave")
    if repeats is None:
        return IX.repeat_interleave(input, None, None, output_size)
    if isinstance(repeats, bool) or not (isinstance(repeats, TensorBase)
                                         or hasattr(type(repeats), "__index__")):
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be Tensor or int, not "
                        f"{type(repeats).__name__}")
    if not isinstance(repeats, TensorBase) and operator.index(repeats) < 0:
        raise RuntimeError("Repeats must be non-negative")
    return IX.repeat_interleave(input, repeats, dim, output_size)


@_method()
def diag(input, diagonal=0, *, out=None):
    """A diagonal matrix from a vector, or the diagonal of a matrix.

    For a 1-D ``input`` of ``n`` elements, a square 2-D tensor of size
    ``n + abs(diagonal)`` with ``input`` on the ``diagonal``-th diagonal and zeros
    elsewhere; for a 2-D ``input``, its ``diagonal``-th diagonal as a new 1-D tensor.

    Args:
        input (Tensor): a 1-D or 2-D tensor.
        diagonal (int): which diagonal: 0 the main one, > 0 above it, < 0 below it.
            Default: 0.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.diag(ember.tensor([1, 2]), 1)
        tensor([[0, 1, 0],
                [0, 0, 2],
                [0, 0, 0]])
        >>> ember.diag(ember.tensor([[1, 2], [3, 4]]))
        tensor([1, 4])
    """
    return _out(IX.diag(_t(input, "diag"), diagonal), out, "diag", "exact")


@_method()
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose 2-D planes (dims ``dim1`` and ``dim2``) have the last dimension of
    ``input`` on a diagonal, zeros elsewhere.

    The result has one more dimension than ``input``; each plane is square with size
    ``input.size(-1) + abs(offset)``.

    Args:
        input (Tensor): the values, at least 1-D.
        offset (int): which diagonal to fill: 0 the main one, > 0 above it, < 0 below it.
            Default: 0.
        dim1 (int): the first dimension of the planes, in the result. Default: -2.
        dim2 (int): the second dimension of the planes, in the result. Default: -1.

    Example:
        >>> ember.diag_embed(ember.tensor([[1, 2], [3, 4]]))
        tensor([[[1, 0],
                 [0, 2]],
        <BLANKLINE>
                [[3, 0],
                 [0, 4]]])
    """
    return IX.diag_embed(_t(input, "diag_embed"), offset, dim1, dim2)


@_method()
def diagflat(input, offset=0):
    """A 2-D tensor with the flattened ``input`` on its ``offset``-th diagonal.

    Args:
        input (Tensor): the values, of any shape (flattened first).
        offset (int): which diagonal: 0 the main one, > 0 above it, < 0 below it.
            Default: 0.

    Example:
        >>> ember.diagflat(ember.tensor([[1, 2], [3, 4]]))
        tensor([[1, 0, 0, 0],
                [0, 2, 0, 0],
                [0, 0, 3, 0],
                [0, 0, 0, 4]])
    """
    return IX.diag(V.reshape(_t(input, "diagflat"), (-1,)), offset)


@_method()
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``src`` written into the diagonal that
    ``input.diagonal(offset, dim1, dim2)`` views.

    Args:
        input (Tensor): the input tensor, at least 2-D.
        src (Tensor): the values, shaped like ``input.diagonal(offset, dim1, dim2)``.
        offset (int): which diagonal. Default: 0.
        dim1 (int): the first dimension of the diagonal. Default: 0.
        dim2 (int): the second dimension of the diagonal. Default: 1.

    Example:
        >>> ember.diagonal_scatter(ember.zeros(3, 3), ember.ones(2), 1)
        tensor([[0., 1., 0.],
                [0., 0., 1.],
                [0., 0., 0.]])
    """
    return IX.diagonal_scatter(_t(input, "diagonal_scatter"), src, offset, dim1, dim2)


@_method()
def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``src`` written at position ``index`` of dimension
    ``dim`` (where ``input.select(dim, index)`` views).

    Args:
        input (Tensor): the input tensor.
        src (Tensor): the values, shaped like ``input.select(dim, index)``.
        dim (int): the dimension to index.
        index (int): the position along ``dim``.

    Example:
        >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    return IX.select_scatter(_t(input, "select_scatter"), src, dim, index)


@_method()
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` of
    dimension ``dim``.

    Args:
        input (Tensor): the input tensor.
        src (Tensor): the values, shaped like the slice.
        dim (int): the dimension to slice. Default: 0.
        start (int, optional): the first index of the slice. Default: 0.
        end (int, optional): the index the slice stops before. Default: the size of
            ``dim``.
        step (int): the distance between sliced elements. Default: 1.

    Example:
        >>> ember.slice_scatter(ember.zeros(2, 4), ember.ones(2, 2), dim=1, step=2)
        tensor([[1., 0., 1., 0.],
                [1., 0., 1., 0.]])
    """
    return IX.slice_scatter(_t(input, "slice_scatter"), src, dim, start, end, step)


@_method()
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written into the elements that
    ``input.as_strided(size, stride, storage_offset)`` views.

    Args:
        input (Tensor): the input tensor.
        src (Tensor): the values, of shape ``size``.
        size (tuple of ints): the shape of the strided view.
        stride (tuple of ints): the strides of the view, in elements.
        storage_offset (int, optional): the view's offset, in elements. Default:
            ``input``'s own offset.

    Example:
        >>> ember.as_strided_scatter(ember.zeros(3, 3), ember.ones(3), (3,), (4,))
        tensor([[1., 0., 0.],
                [0., 1., 0.],
                [0., 0., 1.]])
    """
    return IX.as_strided_scatter(_t(input, "as_strided_scatter"), src, size, stride,
                                 storage_offset)


@_method()
def index_copy(input, dim, index, source, *, out=None):
    """A copy of ``input`` with the slices of ``source`` along ``dim`` written at the
    positions ``index``: ``out[..., index[i], ...] = source[..., i, ...]``.

    With repeated entries in ``index`` the result is unspecified.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to index.
        index (Tensor): 1-D int64 tensor of positions along ``dim``.
        source (Tensor): the values; ``source.size(dim) == len(index)``, other dimensions
            as ``input``'s.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.index_copy(ember.zeros(3, 2), 0, ember.tensor([2, 0]),
        ...                  ember.tensor([[1., 2.], [3., 4.]]))
        tensor([[3., 4.],
                [0., 0.],
                [1., 2.]])
    """
    return _out(IX.index_copy(_t(input, "index_copy"), dim, index, source), out, "index_copy",
                "exact")


@_method()
def index_copy_(self, dim, index, source):
    """In-place version of :meth:`index_copy`: writes the slices of ``source`` into
    ``self`` and returns ``self``."""
    C.check_writable(self, "index_copy_")
    return O.copy_(self, IX.index_copy(self, dim, index, source))


@_method()
def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices at positions ``index`` along ``dim`` set to
    ``value``.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to index.
        index (Tensor): 1-D int64 tensor of positions along ``dim``.
        value (float or 0-D Tensor): the fill value.

    Example:
        >>> ember.index_fill(ember.zeros(2, 3), 1, ember.tensor([0, 2]), 5.)
        tensor([[5., 0., 5.],
                [5., 0., 5.]])
    """
    return IX.index_fill(_t(input, "index_fill"), dim, index, F_s(value))


@_method()
def index_fill_(self, dim, index, value):
    """In-place version of :meth:`index_fill`: fills the slices of ``self`` and
    returns ``self``."""
    C.check_writable(self, "index_fill_")
    return O.copy_(self, IX.index_fill(self, dim, index, F_s(value)))


def F_s(v):
    """A number or tensor argument (NumPy scalars become Python numbers)."""
    return v.item() if isinstance(v, np.generic) else v


def _key(indices):
    return (indices,) if isinstance(indices, TensorBase) else tuple(indices)


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written at the positions ``indices``
    (``out[indices] = values``, the advanced-indexing assignment).

    Args:
        input (Tensor): the input tensor.
        indices (tuple of Tensors): one index tensor per leading dimension (int64, or a
            bool mask), broadcast together.
        values (Tensor): the values, broadcast to the indexed shape.
        accumulate (bool): add ``values`` to the indexed elements instead of writing
            them (repeated indices then add up). Default: False.

    Example:
        >>> ember.index_put(ember.zeros(3), (ember.tensor([0, 0]),),
        ...                 ember.tensor([1., 2.]), accumulate=True)
        tensor([3., 0., 0.])
    """
    return IX.index_put(_t(input, "index_put"), _key(indices), F_s(values), accumulate)


def index_put_(input, indices, values, accumulate=False):
    """In-place version of :func:`index_put`: ``input[indices] = values`` (or ``+=``
    with ``accumulate=True``); returns ``input``.

    Example:
        >>> ember.zeros(3).index_put_((ember.tensor([0, 2]),), ember.tensor(7.))
        tensor([7., 0., 7.])
    """
    return IX.index_put_(_t(input, "index_put_"), _key(indices), F_s(values), accumulate)


@_method()
def masked_scatter(input, mask, source):
    """A copy of ``input`` with the positions where ``mask`` is True filled with
    consecutive elements of ``source`` (in row-major order).

    Args:
        input (Tensor): the input tensor.
        mask (Tensor): a bool tensor broadcastable with ``input``.
        source (Tensor): the values; it needs at least as many elements as ``mask`` has
            True entries.

    Example:
        >>> ember.masked_scatter(ember.zeros(2, 2), ember.tensor([True, False]),
        ...                      ember.tensor([1., 2., 3.]))
        tensor([[1., 0.],
                [2., 0.]])
    """
    CX.check_half("masked_scatter", _t(input, "masked_scatter"))
    return IX.masked_scatter(input, mask, source)


@_method()
def masked_scatter_(self, mask, source):
    """In-place version of :meth:`masked_scatter` (``mask`` must broadcast to
    ``self``'s shape); returns ``self``."""
    C.check_writable(self, "masked_scatter_")
    CX.check_half("masked_scatter", self)
    res = IX.masked_scatter(self, mask, source)
    if tuple(res.shape) != tuple(self.shape):
        raise RuntimeError(f"masked_scatter_(): output with shape {C.shape_str(self.shape)} "
                           f"doesn't match the broadcast shape {C.shape_str(res.shape)}")
    return O.copy_(self, res)


@_method()
def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source`` written at the flat (row-major) positions
    ``index``, as if ``input`` were 1-D.

    Args:
        input (Tensor): the input tensor.
        index (Tensor): int64 positions into the flattened ``input`` (negative ones count
            from the end).
        source (Tensor): the values, with as many elements as ``index``.
        accumulate (bool): add to the elements instead of writing them. Default: False.

    Example:
        >>> ember.put(ember.zeros(2, 2), ember.tensor([0, 3]), ember.tensor([1., 2.]))
        tensor([[1., 0.],
                [0., 2.]])
    """
    CX.check_half("take_put", _t(input, "put"))
    return IX.put(input, index, source, accumulate)


@_method()
def put_(self, index, source, accumulate=False):
    """In-place version of :meth:`put`; returns ``self``.

    Example:
        >>> ember.zeros(2, 2).put_(ember.tensor([1, 1]), ember.tensor([1., 2.]),
        ...                        accumulate=True)
        tensor([[0., 3.],
                [0., 0.]])
    """
    C.check_writable(self, "put_")
    CX.check_half("take_put", self)
    return O.copy_(self, IX.put(self, index, source, accumulate))


@_method()
def take_along_dim(input, indices, dim=None, *, out=None):
    """The values of ``input`` at ``indices`` along ``dim``:
    ``out[i][j] = input[i][indices[i][j]]`` for ``dim=1``, and so on.

    ``input`` and ``indices`` are broadcast against each other except along ``dim``; it
    pairs with the indices returned by ``argmax``, ``argsort`` and ``topk``. With
    ``dim=None`` both are flattened.

    Args:
        input (Tensor): the input tensor.
        indices (Tensor): int64 positions along ``dim``.
        dim (int, optional): the dimension to take along; None flattens ``input``.
        out (Tensor, optional): the output tensor.

    Example:
        >>> x = ember.tensor([[10, 30, 20], [60, 40, 50]])
        >>> ember.take_along_dim(x, ember.tensor([[0], [2]]), dim=1)
        tensor([[10],
                [50]])
        >>> ember.take_along_dim(x, ember.tensor([4, 0]))
        tensor([40, 10])
    """
    CX.check_half("scatter_gather", _t(input, "take_along_dim"))
    return _out(IX.take_along_dim(input, indices, dim), out,
                "take_along_dim", "exact")


@_method()
def tril_(self, diagonal=0):
    """In-place version of :meth:`tril`: zeroes the elements above the ``diagonal``-th
    diagonal of ``self`` (of each matrix in a batch); returns ``self``.

    Example:
        >>> ember.ones(3, 3).tril_()
        tensor([[1., 0., 0.],
                [1., 1., 0.],
                [1., 1., 1.]])
    """
    return _inplace(self, "tril_", IX.tril(self, diagonal))


@_method()
def triu_(self, diagonal=0):
    """In-place version of :meth:`triu`: zeroes the elements below the ``diagonal``-th
    diagonal of ``self`` (of each matrix in a batch); returns ``self``.

    Example:
        >>> ember.ones(3, 3).triu_(1)
        tensor([[0., 1., 1.],
                [0., 0., 1.],
                [0., 0., 0.]])
    """
    return _inplace(self, "triu_", IX.triu(self, diagonal))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None,
                 pin_memory=False):
    """The coordinates of the lower triangle of a ``row`` x ``col`` matrix, as a
    2 x N tensor (row indices, then column indices, in row-major order).

    The triangle holds the elements on and below the ``offset``-th diagonal (> 0 above
    the main diagonal, < 0 below it).

    Args:
        row (int): the number of rows.
        col (int): the number of columns.
        offset (int): the diagonal bounding the triangle. Default: 0.
        dtype (ember.dtype, optional): the result's dtype. Default: ``ember.int64``.
        device (ember.device, optional): the result's device.
        layout: accepted for PyTorch compatibility (strided only).
        pin_memory (bool): accepted for PyTorch compatibility.

    Example:
        >>> ember.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]])
    """
    return CP.tril_indices(row, col, offset, D.to_dtype(dtype) if dtype else D.int64,
                           to_device(device))


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None,
                 pin_memory=False):
    """The coordinates of the upper triangle of a ``row`` x ``col`` matrix, as a
    2 x N tensor (row indices, then column indices, in row-major order).

    The triangle holds the elements on and above the ``offset``-th diagonal (> 0 above
    the main diagonal, < 0 below it).

    Args:
        row (int): the number of rows.
        col (int): the number of columns.
        offset (int): the diagonal bounding the triangle. Default: 0.
        dtype (ember.dtype, optional): the result's dtype. Default: ``ember.int64``.
        device (ember.device, optional): the result's device.
        layout: accepted for PyTorch compatibility (strided only).
        pin_memory (bool): accepted for PyTorch compatibility.

    Example:
        >>> ember.triu_indices(3, 3, 1)
        tensor([[0, 0, 1],
                [1, 2, 2]])
    """
    return CP.triu_indices(row, col, offset, D.to_dtype(dtype) if dtype else D.int64,
                           to_device(device))


@_method()
def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by ``k`` quarter turns in the plane of ``dims``, from the first
    dimension towards the second (a new tensor).

    Args:
        input (Tensor): the input tensor, at least 2-D.
        k (int): the number of quarter turns; negative turns the other way. Default: 1.
        dims (sequence of 2 ints): the plane to rotate in. Default: ``(0, 1)``.

    Example:
        >>> x = ember.tensor([[1, 2], [3, 4]])
        >>> ember.rot90(x)
        tensor([[2, 4],
                [1, 3]])
        >>> ember.rot90(x, -1)
        tensor([[3, 1],
                [4, 2]])
    """
    CX.check_half("flip", _t(input, "rot90"))
    return IX.rot90(input, k, dims)


@_method()
def kron(input, other, *, out=None):
    """The Kronecker product of ``input`` and ``other``.

    Each element of ``input`` is replaced by that element times the whole of ``other``;
    the shapes are aligned by prepending ones to the one with fewer dimensions, and the
    result's size is the element-wise product of the two shapes.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.kron(ember.tensor([[1, 2], [3, 4]]), ember.tensor([[1, 1]]))
        tensor([[1, 1, 2, 2],
                [3, 3, 4, 4]])
    """
    _t(other, "kron", "other")
    return _out(IX.kron(_t(input, "kron"), other), out, "kron", "cast")


def block_diag(*tensors):
    """A block-diagonal matrix with the given tensors as its blocks, zeros elsewhere.

    0-D tensors count as 1 x 1 and 1-D tensors as a single row.

    Args:
        *tensors (Tensor): the blocks, each at most 2-D.

    Example:
        >>> ember.block_diag(ember.tensor([[1, 2]]), ember.tensor([[3], [4]]))
        tensor([[1, 2, 0],
                [0, 0, 3],
                [0, 0, 4]])
    """
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorBase):
            raise TypeError(f"block_diag(): argument 'tensors' must be tuple of Tensors, but "
                            f"found element of type {type(t).__name__} at pos {i}")
    return IX.block_diag(tensors)


def _tensor_list(op, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return tensors


def meshgrid(*tensors, indexing=None):
    """Grids of coordinates from 0-d/1-d tensors (``indexing`` 'ij' or 'xy')."""
    tensors = _tensor_list("meshgrid", tensors)
    if indexing is None:
        _warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
              "indexing argument.", UserWarning)
        indexing = "ij"
    return IX.meshgrid(tensors, indexing)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, one combination per row (like
    ``itertools.product``); a single tensor is returned as it is.

    Args:
        *tensors (Tensor): 1-D tensors.

    Example:
        >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    tensors = _tensor_list("cartesian_prod", tensors)
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    return IX.cartesian_prod(tensors)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-D tensor, one per row (like
    ``itertools.combinations``, or ``combinations_with_replacement``).

    Args:
        input (Tensor): a 1-D tensor.
        r (int): the number of elements per combination. Default: 2.
        with_replacement (bool): allow an element to repeat. Default: False.

    Example:
        >>> ember.combinations(ember.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
        >>> ember.combinations(ember.tensor([1, 2]), with_replacement=True)
        tensor([[1, 1],
                [1, 2],
                [2, 2]])
    """
    res = IX.combinations(_t(input, "combinations"), r, with_replacement)
    return res if r != 1 else V.reshape(res, (-1, 1))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of ``x``: its columns are powers of ``x``.

    Column ``j`` is ``x ** (N - 1 - j)`` (decreasing powers, as NumPy's ``vander``), or
    ``x ** j`` with ``increasing=True``.

    Args:
        x (Tensor): a 1-D tensor.
        N (int, optional): the number of columns. Default: ``len(x)``.
        increasing (bool): increasing instead of decreasing powers. Default: False.

    Example:
        >>> ember.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
        >>> ember.vander(ember.tensor([1, 2, 3]), N=2, increasing=True)
        tensor([[1, 1],
                [1, 2],
                [1, 3]])
    """
    return IX.vander(_t(x, "vander", "x"), N, increasing)


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` (a count of trailing/leading dims, or two lists) of ``a`` and
    ``b``."""
    _t(a, "tensordot", "a")
    _t(b, "tensordot", "b")
    if isinstance(dims, TensorBase):
        dims = dims.tolist() if dims.shape else dims.item()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a list of two lists or an int")
        da, db = dims
        for i, d in enumerate((da, db)):
            if not isinstance(d, (list, tuple)):
                raise TypeError(f"tensordot(): argument 'dims_{('self', 'other')[i]}' "
                                f"(position {i + 3}) must be tuple of ints, not "
                                f"{type(d).__name__}")
        da, db = list(da), list(db)
    else:
        n = operator.index(dims)
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
        if n > min(len(a.shape), len(b.shape)):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
        da = list(builtins.range(len(a.shape) - n, len(a.shape)))
        db = list(builtins.range(n))
    return _out(IX.tensordot(a, b, da, db), out, "tensordot")


_export("repeat_interleave", "diag", "diag_embed", "diagflat", "diagonal_scatter",
        "select_scatter", "slice_scatter", "as_strided_scatter", "index_copy", "index_fill",
        "index_put", "index_put_", "masked_scatter", "put", "take_along_dim", "tril_indices",
        "triu_indices", "rot90", "kron", "block_diag", "meshgrid", "cartesian_prod",
        "combinations", "vander", "tensordot")


def _out(res, out, op, rule="any", error=RuntimeError):
    """``res``, or PyTorch's ``out=``: ``out`` checked by ``rule`` (see ``O.write_out``),
    resized and written."""
    if out is None:
        return res
    return O.write_out(op, out, res, rule, error)


# ---- splitting -------------------------------------------------------------------------
@_method()
def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """Views of ``input`` split into ``n`` nearly equal parts, or at the given indices
    (PyTorch's overloads: positional, or ``sections=`` / ``indices=`` /
    ``tensor_indices_or_sections=``)."""
    _t(input, "tensor_split")
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() expects exactly one of indices_or_sections, sections, "
                        "indices or tensor_indices_or_sections")
    indices_or_sections = given[0]
    nd = len(input.shape)
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    if isinstance(indices_or_sections, TensorBase):
        ios = indices_or_sections
        if ios.device.type != "cpu":
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be on cpu, "
                               f"but it's on {ios.device}")
        if ios.dtype is not D.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {D.torch_name(ios.dtype)}")
        if len(ios.shape) > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {len(ios.shape)} dims")
        indices_or_sections = ios.item() if not ios.shape else ios.tolist()
    d = C.normalize_dim(dim, nd, "tensor_split")
    n = input.shape[d]
    if isinstance(indices_or_sections, (list, tuple)):
        # slices between consecutive indices, with Python's slicing rules
        bounds = [operator.index(i) for i in indices_or_sections]
        out, start = [], 0
        for end in bounds + [None]:
            lo, hi, _ = slice(start, end).indices(n)
            out.append(V.narrow(input, d, lo, max(hi - lo, 0)))
            start = end
        return tuple(out)
    sections = operator.index(indices_or_sections)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size, extra = divmod(n, sections)
    out, start = [], 0
    for i in builtins.range(sections):
        length = size + (1 if i < extra else 0)
        out.append(V.narrow(input, d, start, length))
        start += length
    return tuple(out)


def _xsplit(op, input, sections, dim, min_dims):
    nd = len(input.shape)
    if nd < min_dims:
        need = "at least 1 dimension" if min_dims == 1 else f"at least {min_dims} dimension"
        raise RuntimeError(f"torch.{op} requires a tensor with {need}, but got a tensor with "
                           f"{nd} dimensions!")
    if isinstance(sections, (list, tuple)):
        return tensor_split(input, list(sections), dim)
    s = operator.index(sections)
    if s != 0 and input.shape[dim] % s:
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input.shape[dim]} is not divisible by the "
                           f"split_size {s}!")
    return tensor_split(input, s, dim)


@_method()
def hsplit(input, indices_or_sections):
    """``input`` split horizontally: along dimension 1, or 0 for a 1-D tensor (see
    :func:`tensor_split`).

    An int ``n`` gives ``n`` equal parts (the size must divide by it); a list gives the
    indices to split before.

    Args:
        input (Tensor): the tensor to split, at least 1-D.
        indices_or_sections (int or list of ints): the number of parts, or the split
            indices.

    Returns:
        tuple of Tensors: views of ``input``.

    Example:
        >>> ember.hsplit(ember.arange(8).view(2, 4), [1, 3])
        (tensor([[0],
                [4]]), tensor([[1, 2],
                [5, 6]]), tensor([[3],
                [7]]))
    """
    _t(input, "hsplit")
    return _xsplit("hsplit", input, indices_or_sections, 0 if len(input.shape) == 1 else 1, 1)


@_method()
def vsplit(input, indices_or_sections):
    """``input`` split vertically, along dimension 0 (see :func:`tensor_split`).

    An int ``n`` gives ``n`` equal parts (the size must divide by it); a list gives the
    indices to split before.

    Args:
        input (Tensor): the tensor to split, at least 2-D.
        indices_or_sections (int or list of ints): the number of parts, or the split
            indices.

    Returns:
        tuple of Tensors: views of ``input``.

    Example:
        >>> ember.vsplit(ember.arange(8).view(4, 2), 2)
        (tensor([[0, 1],
                [2, 3]]), tensor([[4, 5],
                [6, 7]]))
    """
    return _xsplit("vsplit", _t(input, "vsplit"), indices_or_sections, 0, 2)


@_method()
def dsplit(input, indices_or_sections):
    """``input`` split depth-wise, along dimension 2 (see :func:`tensor_split`).

    An int ``n`` gives ``n`` equal parts (the size must divide by it); a list gives the
    indices to split before.

    Args:
        input (Tensor): the tensor to split, at least 3-D.
        indices_or_sections (int or list of ints): the number of parts, or the split
            indices.

    Returns:
        tuple of Tensors: views of ``input``.

    Example:
        >>> [t.size() for t in ember.dsplit(ember.zeros(2, 2, 4), [1])]
        [ember.Size([2, 2, 1]), ember.Size([2, 2, 3])]
    """
    return _xsplit("dsplit", _t(input, "dsplit"), indices_or_sections, 2, 3)


@_method("split_with_sizes", "unsafe_split_with_sizes")
def split_with_sizes(input, split_sizes, dim=0):
    """``input`` split along ``dim`` into views of the sizes ``split_sizes`` (which must sum
    to ``input.size(dim)``). ``unsafe_split_with_sizes`` is the same function.

    Args:
        input (Tensor): the tensor to split.
        split_sizes (list of ints): the size of each part.
        dim (int): the dimension to split along. Default: 0.

    Example:
        >>> ember.split_with_sizes(ember.arange(5), [2, 3])
        (tensor([0, 1]), tensor([2, 3, 4]))
    """
    return VW.split(_t(input, "split_with_sizes"), [operator.index(s) for s in split_sizes],
                    dim)


@_method()
def unsafe_split(input, split_size, dim=0):
    """The same as :func:`split` with an int size (PyTorch's variant whose views skip
    autograd's view checks; ember's are ordinary views).

    Example:
        >>> ember.unsafe_split(ember.arange(5), 2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    return VW.split(_t(input, "unsafe_split"), split_size, dim)


@_method()
def unsafe_chunk(input, chunks, dim=0):
    """The same as :func:`chunk` (PyTorch's variant whose views skip autograd's view
    checks; ember's are ordinary views).

    Example:
        >>> ember.unsafe_chunk(ember.arange(5), 2)
        (tensor([0, 1, 2]), tensor([3, 4]))
    """
    return VW.chunk(_t(input, "unsafe_chunk"), chunks, dim)


unsafe_split_with_sizes = split_with_sizes
_export("tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split",
        "unsafe_chunk", "unsafe_split_with_sizes")


# ---- joining and dimension helpers --------------------------------------------------------
def _atleast(fn, tensors):
    if len(tensors) == 1:
        arg = tensors[0]
        if isinstance(arg, (list, tuple)):
            return tuple(fn(_t(t, "atleast")) for t in arg)
        return fn(_t(arg, "atleast"))
    return tuple(fn(_t(t, "atleast")) for t in tensors)


def _at1(t):
    return V.reshape(t, (1,)) if not t.shape else t


def _at2(t):
    nd = len(t.shape)
    return V.reshape(t, (1, 1)) if nd == 0 else V.unsqueeze(t, 0) if nd == 1 else t


def _at3(t):
    nd = len(t.shape)
    if nd == 0:
        return V.reshape(t, (1, 1, 1))
    if nd == 1:
        return V.unsqueeze(V.unsqueeze(t, 0), -1)
    return V.unsqueeze(t, -1) if nd == 2 else t


def atleast_1d(*tensors):
    """The tensor(s) with at least one dimension: a 0-D tensor becomes 1-D, others are
    returned as they are.

    Args:
        *tensors (Tensor or sequence of Tensors): one tensor, several, or a list.

    Returns:
        Tensor or tuple of Tensors: a tensor for a single tensor argument, else a tuple.

    Example:
        >>> ember.atleast_1d(ember.tensor(1.))
        tensor([1.])
        >>> ember.atleast_1d(ember.tensor(1.), ember.tensor([2., 3.]))
        (tensor([1.]), tensor([2., 3.]))
    """
    return _atleast(_at1, tensors)


def atleast_2d(*tensors):
    """The tensor(s) with at least two dimensions: 0-D becomes 1 x 1, 1-D of ``n``
    elements becomes 1 x n; others are returned as they are.

    Args:
        *tensors (Tensor or sequence of Tensors): one tensor, several, or a list.

    Returns:
        Tensor or tuple of Tensors: a tensor for a single tensor argument, else a tuple.

    Example:
        >>> ember.atleast_2d(ember.tensor([1, 2]))
        tensor([[1, 2]])
    """
    return _atleast(_at2, tensors)


def atleast_3d(*tensors):
    """The tensor(s) with at least three dimensions: 0-D becomes 1 x 1 x 1, 1-D of ``n``
    elements 1 x n x 1, 2-D of shape (m, n) becomes (m, n, 1); others are returned as they
    are.

    Args:
        *tensors (Tensor or sequence of Tensors): one tensor, several, or a list.

    Returns:
        Tensor or tuple of Tensors: a tensor for a single tensor argument, else a tuple.

    Example:
        >>> ember.atleast_3d(ember.tensor([1, 2])).size()
        ember.Size([1, 2, 1])
        >>> ember.atleast_3d(ember.ones(2, 3)).size()
        ember.Size([2, 3, 1])
    """
    return _atleast(_at3, tensors)


def _joined(op, tensors):
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        _t(t, op, f"tensors[{i}]")
    return tensors


def hstack(tensors, *, out=None):
    """The tensors stacked horizontally: concatenated along dimension 1, or 0 when they
    are 1-D (0-D tensors count as 1-D).

    Args:
        tensors (sequence of Tensors): the tensors to join.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.hstack((ember.tensor([1, 2]), ember.tensor([3])))
        tensor([1, 2, 3])
        >>> ember.hstack([ember.tensor([[1], [2]]), ember.tensor([[3], [4]])])
        tensor([[1, 3],
                [2, 4]])
    """
    ts = [_at1(t) for t in _joined("hstack", tensors)]
    return _out(IX.cat(ts, 0 if len(ts[0].shape) == 1 else 1), out, "hstack", *_CAT_OUT)


#: the out= rule of the ops PyTorch writes with cat: a TypeError when it can't cast
_CAT_OUT = ("cast", TypeError)


def vstack(tensors, *, out=None):
    """The tensors stacked vertically: concatenated along dimension 0 after
    :func:`atleast_2d` (so 1-D tensors become rows). ``row_stack`` is an alias.

    Args:
        tensors (sequence of Tensors): the tensors to join.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.vstack((ember.tensor([1, 2]), ember.tensor([3, 4])))
        tensor([[1, 2],
                [3, 4]])
    """
    return _out(IX.cat([_at2(t) for t in _joined("vstack", tensors)], 0), out, "vstack",
                *_CAT_OUT)


row_stack = vstack


def dstack(tensors, *, out=None):
    """The tensors stacked depth-wise: concatenated along dimension 2 after
    :func:`atleast_3d`.

    Args:
        tensors (sequence of Tensors): the tensors to join.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.dstack((ember.tensor([1, 2]), ember.tensor([3, 4])))
        tensor([[[1, 3],
                 [2, 4]]])
    """
    return _out(IX.cat([_at3(t) for t in _joined("dstack", tensors)], 2), out, "dstack",
                *_CAT_OUT)


def column_stack(tensors, *, out=None):
    """The tensors as columns of a matrix: 0-D and 1-D tensors become columns
    (``t.reshape(-1, 1)``), then all are concatenated along dimension 1.

    Args:
        tensors (sequence of Tensors): the tensors to join.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.column_stack((ember.tensor([1, 2]), ember.tensor([[3, 5], [4, 6]])))
        tensor([[1, 3, 5],
                [2, 4, 6]])
    """
    ts = [V.reshape(t, (-1, 1)) if len(t.shape) <= 1 else t
          for t in _joined("column_stack", tensors)]
    return _out(IX.cat(ts, 1), out, "column_stack", *_CAT_OUT)


@_method()
def ravel(input):
    """``input`` flattened to 1-D: a view when its memory allows, else a copy (as
    ``reshape(-1)``).

    Example:
        >>> ember.ravel(ember.tensor([[1, 2], [3, 4]]))
        tensor([1, 2, 3, 4])
    """
    return VW.reshape(_t(input, "ravel"), (-1,))


def tile(input, dims):
    """``input`` repeated ``dims`` times per dimension (leading ones added to the shorter
    of the two)."""
    if isinstance(dims, int):
        dims = (dims,)
    dims = tuple(operator.index(d) for d in dims)
    nd = len(input.shape)
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return IX.repeat(input, dims)


def _tile_method(self, *args, dims=None):
    """``Tensor.tile(*dims)``, ``tile(dims)`` or ``tile(dims=...)``."""
    if dims is not None:
        if args:
            raise TypeError("tile() got multiple values for argument 'dims'")
        return tile(self, dims)
    return tile(self, args[0] if len(args) == 1 and not isinstance(args[0], int) else args)


TENSOR_METHODS["tile"] = _tile_method


@_method()
def sum_to_size(self, *size):
    """``self`` summed down to ``size``, the reverse of broadcasting: ``self`` must be
    expandable from ``size``, and the broadcast dimensions are summed.

    Args:
        *size (int or tuple of ints): the target shape.

    Example:
        >>> x = ember.tensor([[1, 2], [3, 4]])
        >>> x.sum_to_size(1, 2)
        tensor([[4, 6]])
        >>> x.sum_to_size((2, 1))
        tensor([[3],
                [7]])
    """
    size = K._size(size, "sum_to_size")
    try:
        C.broadcast_shapes(size, self.shape)
        ok = C.broadcast_shapes(size, self.shape) == tuple(self.shape) and \
            len(size) <= len(self.shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    return V.sum_to(self, tuple(size))


@_method("swapaxes_", "swapdims_")
def swapaxes_(self, axis0, axis1):
    """In-place version of :meth:`swapaxes` (``transpose_``): ``self`` becomes a view with
    dimensions ``axis0`` and ``axis1`` swapped. ``swapdims_`` is an alias.

    Example:
        >>> ember.arange(6).view(2, 3).swapaxes_(0, 1).size()
        ember.Size([3, 2])
    """
    return self.transpose_(axis0, axis1)


_export("atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack",
        "column_stack", "ravel", "tile")


# ---- the *_copy ops: the views' values as new tensors -------------------------------------
#: the *_copy ops whose view returns a tuple of views (their docstrings say "tensors")
_TUPLE_COPIES = ("unbind_copy", "split_copy", "split_with_sizes_copy", "unsafe_chunk_copy")


#: PyTorch's name for the out= form of the *_copy ops returning several tensors (its errors)
_TUPLE_OUT_NAMES = {"split_copy": "split_copy_Tensor_out()", "unbind_copy": "unbind_copy_int_out",
                    "split_with_sizes_copy": "split_with_sizes_copy_out",
                    "unsafe_chunk_copy": "unsafe_chunk_copy_out"}


def _copy_of(view_fn, doc):
    def fn(input, *args, out=None, **kwargs):
        res = view_fn(_t(input, fn.__name__), *args, **kwargs)
        if isinstance(res, tuple):
            if out is None:
                return tuple(O.clone(r) for r in res)
            # PyTorch's out= form: a list with one tensor per result; returns None. As PyTorch,
            # split_copy copies into each (casting and broadcasting, never resizing), the
            # others resize each to its result and want its dtype
            if len(out) != len(res):
                raise RuntimeError(f"{_TUPLE_OUT_NAMES[fn.__name__]} expected an out= "
                                   f"argument of size {len(res)}, got size {len(out)}")
            for r, o in zip(res, out):
                if fn.__name__ == "split_copy":
                    O.copy_(o, r)
                else:
                    _out(r, o, fn.__name__, "exact")
            return None
        return _out(O.clone(res), out, fn.__name__)
    fn.__doc__ = doc
    return fn


def _slice(x, dim=0, start=None, end=None, step=1):
    return IX.slice_view(x, dim, start, end, step)


def _expand(x, size, *, implicit=False):
    return VW.expand(x, size)


def _view(x, *size):
    if len(size) == 1 and isinstance(size[0], D.DType):
        return view_dtype(x, size[0])
    return VW.view(x, *size)


def _squeeze(x, dim=None):
    return VW.squeeze(x, dim)


def _permute(x, dims):
    return VW.permute(x, dims)


def _as_strided(x, size, stride, storage_offset=None):
    return VW.as_strided(x, size, stride, storage_offset)


def _alias(x):
    return x


def _unbind(x, dim=0):
    return VW.unbind(x, dim)


for _name, _fn in (("alias_copy", _alias), ("expand_copy", _expand),
                   ("permute_copy", _permute), ("select_copy", VW.select),
                   ("slice_copy", _slice), ("squeeze_copy", _squeeze),
                   ("unsqueeze_copy", VW.unsqueeze), ("t_copy", VW.t),
                   ("transpose_copy", VW.transpose), ("view_copy", _view),
                   ("unbind_copy", _unbind), ("split_copy", VW.split),
                   ("split_with_sizes_copy", split_with_sizes),
                   ("diagonal_copy", VW.diagonal), ("narrow_copy", VW.narrow),
                   ("unfold_copy", VW.unfold), ("as_strided_copy", _as_strided),
                   ("detach_copy", lambda x: C.view_of(x, x.shape, x._stride, x._offset)),
                   ("unsafe_chunk_copy", VW.chunk),
                   ("view_as_real_copy", view_as_real),
                   ("view_as_complex_copy", view_as_complex)):
    _f = _copy_of(_fn, (f"New tensors with the values of the views ``{_name[:-5]}`` "
                        f"returns (PyTorch's ``torch.{_name}``): the same results, but none "
                        f"aliases ``input``." if _name in _TUPLE_COPIES else
                        f"A new tensor with the values of the view ``{_name[:-5]}`` returns "
                        f"(PyTorch's ``torch.{_name}``): the same result, but it does not "
                        f"alias ``input``."))
    _f.__name__ = _f.__qualname__ = _name
    globals()[_name] = _f
    if _name != "unsafe_chunk_copy":
        _export(_name)
del _name, _fn, _f
TENSOR_METHODS["narrow_copy"] = globals()["narrow_copy"]


def as_strided_(input, size, stride, storage_offset=None):
    """In-place :func:`as_strided`: ``input`` itself takes the sizes, strides and storage
    offset (PyTorch's ``torch.as_strided_``); returns ``input``. Views made from it before
    keep theirs.

    Example:
        >>> a = ember.arange(6.)
        >>> a.as_strided_((2, 2), (1, 2), 1)
        tensor([[1., 3.],
                [2., 4.]])
    """
    x = _t(input, "as_strided_")
    if x.requires_grad and MODE.grad:
        if x.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        raise NotImplementedError("as_strided_ on a tensor with autograd history is not "
                                  "supported by ember (PyTorch records AsStridedBackward); "
                                  "use as_strided, which returns a view")
    v = VW.as_strided(x, size, stride, storage_offset)      # (its checks: sizes, bounds)
    x.shape, x._stride, x._offset = v.shape, v._stride, v._offset
    C.bump(x)
    return x


_export("as_strided_")
TENSOR_METHODS["as_strided_"] = as_strided_


def storage_type(self):
    """The legacy storage class of this tensor's dtype (``ember.FloatStorage`` for
    float32, as PyTorch's ``Tensor.storage_type()``).

    Example:
        >>> ember.ones(2).storage_type().__name__
        'FloatStorage'
    """
    cls = ST.LEGACY_BY_DTYPE.get(self.dtype)
    if cls is None:
        raise RuntimeError(f"storage_type: ember has no legacy storage class for "
                           f"{self.dtype.name}")
    return cls


TENSOR_METHODS["storage_type"] = storage_type


# ---- view(dtype): the same bytes as another dtype -------------------------------------------
def view_dtype(x, dtype):
    """``x.view(dtype)``: the same memory read as ``dtype``; with a different element size
    the last dimension scales (PyTorch's rules: stride 1 in the last dim, and sizes, strides
    and offset divisible by the ratio)."""
    dtype = D.to_dtype(dtype)
    old, new = x.dtype.itemsize, dtype.itemsize
    names = f"{D.torch_name(x.dtype)} as {D.torch_name(dtype)}"
    if old == new:
        res = C.view_of(x, x.shape, x._stride, x._offset)
    else:
        nd = len(x.shape)
        if nd == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {names} (different element "
                               "sizes)")
        if x._stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {names} (different element "
                               f"sizes), but got {x._stride[-1]}")
        if old > new:
            r = old // new
            shape = x.shape[:-1] + (x.shape[-1] * r,)
            stride = tuple(s * r for s in x._stride[:-1]) + (1,)
            offset = x._offset * r
        else:
            r = new // old
            if x.shape[-1] % r:
                raise RuntimeError(f"self.size(-1) must be divisible by {r} to view {names} "
                                   f"(different element sizes), but got {x.shape[-1]}")
            if x._offset % r:
                raise RuntimeError(f"self.storage_offset() must be divisible by {r} to view "
                                   f"{names} (different element sizes), but got {x._offset}")
            for i, s in enumerate(x._stride[:-1]):
                if s % r:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {r} to view "
                                       f"{names} (different element sizes), but got {s}")
            shape = x.shape[:-1] + (x.shape[-1] // r,)
            stride = tuple(s // r for s in x._stride[:-1]) + (1,)
            offset = x._offset // r
        res = C.view_of(x, shape, stride, offset)
    res.dtype = dtype
    res._base = x if x._base is None else x._base
    return res


# ---- creation ---------------------------------------------------------------------------
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False,
                  layout=None, pin_memory=False):
    """An uninitialised tensor with the given sizes and strides."""
    size = tuple(operator.index(s) for s in size)
    stride = tuple(operator.index(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape (sizes has {len(size)} "
                           f"elements, strides has {len(stride)})")
    d = K._dt(dtype)
    CP.check_new_shape(size, d, "empty_strided")
    for s in stride:
        if s < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                               f"got strides: {list(stride)}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    base = C.empty((extent,), d, to_device(device))
    res = C.new_tensor(base._storage, size, stride, 0, d, base.device, base._vc)
    return K._finish(res, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False,
                   layout=None, pin_memory=False):
    """An uninitialised tensor of ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first)."""
    size = tuple(operator.index(s) for s in size)
    perm = tuple(operator.index(p) for p in physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(perm)}")
    phys = C.contiguous_strides(tuple(size[p] for p in perm))
    stride = [0] * len(size)
    for i, p in enumerate(perm):
        stride[p] = phys[i]
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def fill(input, value):
    """A new tensor like ``input`` filled with ``value`` (``torch.fill``)."""
    return input.clone().fill_(value)


def fill_(input, value):
    """Fill ``input`` in place with ``value``; returns ``input`` (``input.fill_(value)``).

    Example:
        >>> ember.fill_(ember.ones(2), 3)
        tensor([3., 3.])
    """
    return input.fill_(value)


def zero_(input):
    """Fill ``input`` in place with zeros; returns ``input`` (``input.zero_()``).

    Example:
        >>> ember.zero_(ember.ones(2))
        tensor([0., 0.])
    """
    return input.zero_()


@_method()
def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      **_):
    """An uninitialised tensor with the given sizes and strides (see
    :func:`empty_strided`), with ``self``'s dtype and device unless given.

    Args:
        size (tuple of ints): the shape.
        stride (tuple of ints): the strides, in elements.
        dtype (ember.dtype, optional): the dtype. Default: ``self.dtype``.
        device (ember.device, optional): the device. Default: ``self.device``.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.

    Example:
        >>> x = ember.zeros(2, dtype=ember.float64)
        >>> y = x.new_empty_strided((2, 3), (1, 2))
        >>> y.stride(), y.dtype
        ((1, 2), ember.float64)
    """
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


_export("empty_strided", "empty_permuted", "fill", "fill_", "zero_")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``obj`` as a tensor, sharing memory where it can (tensors, NumPy arrays, buffers);
    ``copy=True`` always copies, ``copy=False`` raises where sharing is impossible."""
    dt = D.to_dtype(dtype) if dtype is not None else None
    dev = to_device(device) if device is not None else None
    if isinstance(obj, TensorBase):
        if copy is False and dt is not None and dt is not obj.dtype:
            raise ValueError(f"can't alias tensor with dtype '{D.torch_name(obj.dtype)}' into "
                             f"dtype '{D.torch_name(dt)}'.")
        if copy is False and dev is not None and dev != obj.device:
            raise ValueError(f"can't alias tensor from device '{obj.device}' to '{dev}'.")
        res = O.to(obj, dev, dt, copy=bool(copy))
    elif ST.is_storage(obj):    # its bytes, read as dtype (PyTorch's int64 by default)
        res = ST.as_tensor_of(obj, dt)
        if dev is not None or copy:
            res = O.to(res, dev, None, copy=bool(copy))
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__") or (
            hasattr(obj, "__buffer__") and not isinstance(obj, (list, tuple))):
        arr = np.asarray(obj)
        if copy is not True and (dev is None or dev.type == "cpu") and arr.dtype.kind in "fiub":
            res = K.from_numpy(arr)
            if dt is not None and dt is not res.dtype:
                if copy is False:
                    raise ValueError(f"can't alias NumPy array with dtype "
                                     f"'{D.torch_name(res.dtype)}' into dtype "
                                     f"'{D.torch_name(dt)}'.")
                res = O.cast(res, dt)
        else:
            if copy is False:
                raise ValueError("can't alias the given object into a tensor on that device.")
            res = K.tensor(arr, dtype=dt, device=dev)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        if isinstance(obj, (list, tuple)) and any(isinstance(v, TensorBase) for v in obj):
            res = IX.stack([O.to(v, dev, dt) if isinstance(v, TensorBase)
                            else K.tensor(v, dtype=dt, device=dev) for v in obj])
        else:
            res = K.tensor(obj, dtype=dt, device=dev)
    if requires_grad:
        res = res.detach().requires_grad_(True) if res.grad_fn is None and res is obj \
            else res.requires_grad_(True)
    return res


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor sharing the memory of a Python buffer (``bytes``, ``bytearray``,
    ``array.array``, ...)."""
    dt = D.to_dtype(dtype)
    view = memoryview(buffer).cast("B")
    length, item = view.nbytes, dt.itemsize
    if length <= 0 and count == 0 or length == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset > length - 1:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view, dtype=np.uint8, count=count * item, offset=offset)
    if view.readonly:
        _warn("The given buffer is not writable, and PyTorch does not support "
              "non-writable tensors. This means you can write to the underlying "
              "(supposedly non-writable) buffer using the tensor.", UserWarning)
    if dt is D.bfloat16:
        raw = K.from_numpy(arr.view(np.int16))
        res = C.view_of(raw, raw.shape, raw._stride, raw._offset)
        res.dtype = D.bfloat16
    else:
        res = K.from_numpy(arr.view(dt.to_numpy()))
    return K._finish(res, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False,
             out=None, **_):
    """``steps`` values spaced evenly on a log scale from ``base ** start`` to
    ``base ** end`` (both included).

    The exponents are ``linspace(start, end, steps)``.

    Args:
        start (float): the exponent of the first value.
        end (float): the exponent of the last value.
        steps (int): the number of values.
        base (float): the base of the logarithm. Default: 10.0.
        dtype (ember.dtype, optional): the dtype. Default: the default float dtype.
        device (ember.device, optional): the device.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.
        out (Tensor, optional): the output tensor.

    Example:
        >>> ember.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
        >>> ember.logspace(0, 3, 4, base=2)
        tensor([1., 2., 4., 8.])
    """
    ends = [K._number(v, "logspace", n, p) for v, n, p in zip((start, end), ("start", "end"),
                                                              (1, 2))]
    res = CP.logspace(ends[0], ends[1], operator.index(steps), float(base), K._dt(dtype),
                      to_device(device))
    return _out(K._finish(res, requires_grad), out, "logspace")


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
          out=None, **_):
    """PyTorch's deprecated ``torch.range``: ``end`` included."""
    _warn("torch.range is deprecated and will be removed in a future release because "
          "its behavior is inconsistent with Python's range builtin. Instead, use "
          "torch.arange, which produces values in [start, end).", UserWarning)
    if end is None:
        start, end = 0, start
    vals = [K._number(v, "range", n, p) for v, n, p in zip((start, end, step),
                                                           ("start", "end", "step"), (1, 2, 3))]
    res = CP.range_(*vals, K._dt(dtype), to_device(device))
    return _out(K._finish(res, requires_grad), out, "range")


def _window(kind, window_length, periodic, alpha, beta, dtype, device, requires_grad):
    return K._finish(CP.window(kind, operator.index(window_length), bool(periodic), alpha, beta,
                               K._dt(dtype), to_device(device)), requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False,
                **_):
    """The Hann window: ``w[n] = 0.5 - 0.5 * cos(2 * pi * n / (N - 1))`` for a symmetric
    window of length ``N``.

    With ``periodic=True`` (the default) the window is the first ``window_length`` values
    of the symmetric window of length ``window_length + 1``, the form used for spectral
    analysis; ``periodic=False`` gives the symmetric window. A length of 1 gives
    ``tensor([1.])``.

    Args:
        window_length (int): the number of values.
        periodic (bool): the periodic (True) or symmetric (False) window. Default: True.
        dtype (ember.dtype, optional): a floating-point dtype. Default: the default float
            dtype.
        device (ember.device, optional): the device.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.

    Example:
        >>> ember.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
        >>> ember.hann_window(4, periodic=False)
        tensor([0.0000, 0.7500, 0.7500, 0.0000])
    """
    return _window("hann", window_length, periodic, 0.5, 0.5, dtype, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   device=None, requires_grad=False, **_):
    """The Hamming window: ``w[n] = alpha - beta * cos(2 * pi * n / (N - 1))`` for a
    symmetric window of length ``N``.

    With ``periodic=True`` (the default) the window is the first ``window_length`` values
    of the symmetric window of length ``window_length + 1``, the form used for spectral
    analysis; ``periodic=False`` gives the symmetric window. A length of 1 gives
    ``tensor([1.])``.

    Args:
        window_length (int): the number of values.
        periodic (bool): the periodic (True) or symmetric (False) window. Default: True.
        alpha (float): the constant term. Default: 0.54.
        beta (float): the cosine's coefficient. Default: 0.46.
        dtype (ember.dtype, optional): a floating-point dtype. Default: the default float
            dtype.
        device (ember.device, optional): the device.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.

    Example:
        >>> ember.hamming_window(4)
        tensor([0.0800, 0.5400, 1.0000, 0.5400])
    """
    return _window("hamming", window_length, periodic, alpha, beta, dtype, device,
                   requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False, **_):
    """The Blackman window:
    ``w[n] = 0.42 - 0.5 * cos(2 * pi * n / (N - 1)) + 0.08 * cos(4 * pi * n / (N - 1))``
    for a symmetric window of length ``N``.

    With ``periodic=True`` (the default) the window is the first ``window_length`` values
    of the symmetric window of length ``window_length + 1``, the form used for spectral
    analysis; ``periodic=False`` gives the symmetric window. A length of 1 gives
    ``tensor([1.])``.

    Args:
        window_length (int): the number of values.
        periodic (bool): the periodic (True) or symmetric (False) window. Default: True.
        dtype (ember.dtype, optional): a floating-point dtype. Default: the default float
            dtype.
        device (ember.device, optional): the device.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.

    Example:
        >>> ember.blackman_window(5, periodic=False)
        tensor([-2.9802e-08,  3.4000e-01,  1.0000e+00,  3.4000e-01, -2.9802e-08])
    """
    return _window("blackman", window_length, periodic, 0, 0, dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False, **_):
    """The Bartlett (triangular) window: ``w[n] = 1 - abs(2 * n / (N - 1) - 1)`` for a
    symmetric window of length ``N``.

    With ``periodic=True`` (the default) the window is the first ``window_length`` values
    of the symmetric window of length ``window_length + 1``, the form used for spectral
    analysis; ``periodic=False`` gives the symmetric window. A length of 1 gives
    ``tensor([1.])``.

    Args:
        window_length (int): the number of values.
        periodic (bool): the periodic (True) or symmetric (False) window. Default: True.
        dtype (ember.dtype, optional): a floating-point dtype. Default: the default float
            dtype.
        device (ember.device, optional): the device.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.

    Example:
        >>> ember.bartlett_window(5, periodic=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _window("bartlett", window_length, periodic, 0, 0, dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None,
                  requires_grad=False, **_):
    """The Kaiser window:
    ``w[n] = I0(beta * sqrt(1 - (2 * n / (N - 1) - 1) ** 2)) / I0(beta)`` for a symmetric
    window of length ``N``, with ``I0`` the modified Bessel function of order 0.

    With ``periodic=True`` (the default) the window is the first ``window_length`` values
    of the symmetric window of length ``window_length + 1``, the form used for spectral
    analysis; ``periodic=False`` gives the symmetric window. A length of 1 gives
    ``tensor([1.])``.

    Args:
        window_length (int): the number of values.
        periodic (bool): the periodic (True) or symmetric (False) window. Default: True.
        beta (float): the shape parameter; larger values narrow the window.
            Default: 12.0.
        dtype (ember.dtype, optional): a floating-point dtype. Default: the default float
            dtype.
        device (ember.device, optional): the device.
        requires_grad (bool): record operations on the result for autograd.
            Default: False.

    Example:
        >>> ember.kaiser_window(5, periodic=False, beta=5.)
        tensor([0.0367, 0.5529, 1.0000, 0.5529, 0.0367])
    """
    return _window("kaiser", window_length, periodic, 0, beta, dtype, device, requires_grad)


_export("asarray", "frombuffer", "logspace", "range", "hann_window", "hamming_window",
        "blackman_window", "bartlett_window", "kaiser_window")


# ---- random sampling -------------------------------------------------------------------------
def _check_gen(generator, device):
    if generator is not None and generator.device != device:
        raise RuntimeError(f"Expected a '{device.type}' generator, but found "
                           f"'{generator.device.type}'")
    return generator


@_method()
def bernoulli(input, p=None, *, generator=None, out=None):
    """1 with probability ``input`` (or ``p``), else 0."""
    _t(input, "bernoulli")
    with below_autograd():
        res = CP.bernoulli(input, F_s(p), _check_gen(generator, input.device))
    return _out(res, out, "bernoulli")


@_method()
def bernoulli_(self, p=0.5, *, generator=None):
    if not isinstance(p, TensorBase) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    C.check_writable(self, "bernoulli_")    # (the write is a copy_: name the op, draw nothing)
    return self._overwrite("bernoulli", lambda t: O.copy_(
        t, CP.bernoulli(t, F_s(p), _check_gen(generator, t.device))))


@_method()
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices sampled from the categorical distribution(s) given by the rows of ``input``.

    ``input`` holds non-negative weights (not necessarily summing to 1), one
    distribution per row for a 2-D ``input``. Without replacement each index is drawn at
    most once per row, so ``num_samples`` may not exceed the number of categories.

    Args:
        input (Tensor): 1-D or 2-D non-negative weights.
        num_samples (int): the number of samples per row.
        replacement (bool): draw with replacement. Default: False.
        generator (ember.Generator, optional): the random number generator.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: int64 indices of shape ``(num_samples,)`` or ``(rows, num_samples)``.

    Example:
        >>> ember.multinomial(ember.tensor([0., 1., 0.]), 2, replacement=True)
        tensor([1, 1])
    """
    _t(input, "multinomial")
    with below_autograd():
        res = CP.multinomial(input, operator.index(num_samples), bool(replacement),
                             _check_gen(generator, input.device))
    return _out(res, out, "multinomial")


def poisson(input, generator=None):
    """Samples of Poisson distributions whose rates are the elements of ``input``.

    Args:
        input (Tensor): the non-negative rates (a floating-point tensor).
        generator (ember.Generator, optional): the random number generator.

    Example:
        >>> ember.poisson(ember.zeros(3))
        tensor([0., 0., 0.])
    """
    _t(input, "poisson")
    with below_autograd():
        return CP.poisson(input, _check_gen(generator, input.device))


def binomial(count, prob, generator=None):
    """Samples of binomial distributions: the number of successes in ``count`` trials of
    success probability ``prob`` (element-wise).

    Args:
        count (Tensor): the numbers of trials (a floating-point tensor).
        prob (Tensor): the success probabilities, in [0, 1].
        generator (ember.Generator, optional): the random number generator.

    Example:
        >>> ember.binomial(ember.tensor([5., 3.]), ember.tensor([1., 0.]))
        tensor([5., 0.])
    """
    _t(count, "binomial", "count")
    _t(prob, "binomial", "prob")
    with below_autograd():
        return CP.binomial(count, prob, _check_gen(generator, count.device))


def _fill_with(self, name, sample, generator):
    """Overwrite ``self`` with ``sample(self, generator)`` (recorded as a constant). The
    write is a ``copy_``: an expanded ``self`` is refused first, by the op's name."""
    C.check_writable(self, name + "_")
    return self._overwrite(name, lambda t: O.copy_(
        t, sample(t, _check_gen(generator, t.device))))


@_method()
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill in place with samples of the exponential distribution of rate ``lambd``."""
    return _fill_with(self, "exponential", lambda t, g: CP.exponential(t, lambd, g), generator)


@_method()
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill in place with ``exp`` of normal samples (``mean``, ``std``)."""
    return _fill_with(self, "log_normal", lambda t, g: CP.log_normal(t, mean, std, g),
                      generator)


@_method()
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill in place with samples of the Cauchy distribution."""
    return _fill_with(self, "cauchy", lambda t, g: CP.cauchy(t, median, sigma, g), generator)


@_method()
def geometric_(self, p, *, generator=None):
    """Fill ``self`` in place with samples of the geometric distribution: the number of
    trials up to and including the first success, each succeeding with probability ``p``
    (values 1, 2, ...).

    Args:
        p (float): the success probability, in (0, 1).
        generator (ember.Generator, optional): the random number generator.

    Example:
        >>> (ember.empty(5).geometric_(0.5) >= 1).all()
        tensor(True)
    """
    return _fill_with(self, "geometric", lambda t, g: CP.geometric(t, p, g), generator)


@_method()
def random_(self, from_=0, to=None, *, generator=None, **kwargs):
    """Integers uniform in ``[from, to - 1]`` (``random_(to)``: from 0; ``random_()``: up
    to the dtype's largest)."""
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return _fill_with(self, "random", lambda t, g: CP.random(t, from_, to, g), generator)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False, **_):
    """Normal samples with the given means and standard deviations (tensors or numbers:
    PyTorch's four overloads)."""
    mt, st = isinstance(mean, TensorBase), isinstance(std, TensorBase)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            f"({type(mean).__name__}, {type(std).__name__}), but expected one "
                            "of: (Tensor mean, Tensor std), (Tensor mean, float std), (float "
                            "mean, Tensor std), (float mean, float std, tuple of ints size)")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        d = K._dt(dtype) if out is None or dtype is not None else out.dtype
        dev = to_device(device) if out is None or device is not None else out.device
        shape = K._size((size,), "normal")
        res = O.random_(C.empty(shape, d, dev), "normal", float(mean), float(std),
                        _check_gen(generator, dev))
        return _out(K._finish(res, requires_grad), out, "normal")
    ref = mean if mt else std
    if mt and st:
        shape = C.broadcast_shapes(mean.shape, std.shape)
        dt = D.promote_types(mean.dtype, std.dtype)
    else:
        shape, dt = ref.shape, ref.dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"normal_kernel_{ref.device.type}\" not implemented for "
                                  f"'{D.torch_name(dt)}'")
    if st:
        if C.numel(std.shape) and O.item(O.reduce("max", O.cast(E("lt", std, 0), D.uint8))):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    with below_autograd():
        z = O.random_(C.empty(shape, dt, ref.device), "normal", 0.0, 1.0,
                      _check_gen(generator, ref.device))
        res = E("add", E("mul", z, std.detach() if st else float(std)),
                mean.detach() if mt else float(mean))
    if MODE.grad and O.requires_grad((mean if mt else None, std if st else None)):
        # PyTorch's normal passes a zero gradient to mean and std
        zero = 0.0
        for t in (mean if mt else None, std if st else None):
            if t is not None and t.requires_grad:
                res = E("add", res, E("mul", C.expand_to(t, shape) if t.shape != shape else t,
                                      zero))
    return _out(res, out, "normal")


_export("bernoulli", "multinomial", "poisson", "binomial", "normal")


# ---- legacy tensor types -------------------------------------------------------------------
class _LegacyTensorType(type):
    """``isinstance(x, ember.FloatTensor)``: a CPU tensor of that dtype
    (``ember.cuda.FloatTensor``: a tensor of that dtype on that device type)."""
    device_type = "cpu"
    available = None    # (for other device types: whether one is available)

    def __instancecheck__(cls, obj):
        return (isinstance(obj, TensorBase) and obj.dtype is cls.dtype
                and obj.device.type == cls.device_type)

    def __call__(cls, *args, device=None):
        if cls.device_type != "cpu":
            if not cls.available():
                raise TypeError(f"type {cls._name()} not available: no "
                                f"{cls.device_type!r} device is available")
            device = device if device is not None else cls.device_type
        return legacy_new(cls.dtype, args, device, cls.__name__)

    def _name(cls):
        where = "" if cls.device_type == "cpu" else f"{cls.device_type}."
        return f"{D.module_name}.{where}{cls.__name__}"

    def __repr__(cls):
        return f"<class '{cls._name()}'>"


_DEVICE_LEGACY: dict = {}


def legacy_type(device_type: str, name: str, available):
    """``ember.<device type>.FloatTensor`` (and the other legacy names): ``isinstance``
    tests a tensor of that dtype on that device type; calling it makes one there, or raises
    PyTorch's TypeError when no such device is available (``available()``)."""
    key = (device_type, name)
    cls = _DEVICE_LEGACY.get(key)
    if cls is None:
        cls = _DEVICE_LEGACY[key] = _LegacyTensorType(
            name, (), {"dtype": _LEGACY[name], "__module__": f"ember.{device_type}",
                       "device_type": device_type, "available": staticmethod(available),
                       "__doc__": f"PyTorch's legacy {device_type} tensor type of dtype "
                                  f"``ember.{_LEGACY[name].name}``."})
    return cls


def legacy_new(dtype, args, device, name="Tensor"):
    """PyTorch's legacy constructor ``torch.FloatTensor(*sizes)`` / ``(data)`` / ``()`` /
    ``(tensor)``."""
    if not args:
        return K.empty(0, dtype=dtype, device=device)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, TensorBase):
            if a.dtype is not dtype:
                raise TypeError(f"expected {D.torch_name(dtype)} (got {D.torch_name(a.dtype)})")
            return a
        if isinstance(a, (numbers.Number, np.generic)) and not isinstance(a, (int, np.integer)):
            raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
        # any sequence but a Size is data (a range too: torch-pca's LongTensor(range(...)))
        if isinstance(a, (list, tuple, builtins.range, np.ndarray)) and type(a).__name__ != "Size":
            return K.tensor(a, dtype=dtype, device=device)
    for i, s in enumerate(args if len(args) > 1 or not isinstance(args[0], tuple)
                          else args[0]):
        if isinstance(s, bool) or not hasattr(type(s), "__index__"):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found "
                            f"element of type {type(s).__name__} at pos {i}")
    return K.empty(*args, dtype=dtype, device=device)


_LEGACY = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
           "BFloat16Tensor": D.bfloat16, "LongTensor": D.int64, "IntTensor": D.int32,
           "ShortTensor": D.int16, "CharTensor": D.int8, "ByteTensor": D.uint8,
           "BoolTensor": D.bool_}
for _name, _dt in _LEGACY.items():
    globals()[_name] = _LegacyTensorType(_name, (), {"dtype": _dt, "__module__": "ember"})
    _export(_name)
del _name, _dt
#: the legacy tensor type names (``FloatTensor``, ...)
LEGACY_NAMES = frozenset(_LEGACY)


def parse_type(spec):
    """``(dtype, device type or None)`` of a ``Tensor.type(...)`` argument: a dtype, a
    legacy class, or its name (``'torch.FloatTensor'``, ``'torch.cuda.HalfTensor'``)."""
    if isinstance(spec, D.DType):
        return spec, None
    if isinstance(spec, _LegacyTensorType):
        return spec.dtype, spec.device_type
    if isinstance(spec, str):
        parts = spec.split(".")
        if len(parts) >= 2 and parts[0] in ("torch", "ember") and parts[-1] in _LEGACY:
            middle = parts[1:-1]
            if not middle:
                return _LEGACY[parts[-1]], "cpu"
            if len(middle) == 1:
                return _LEGACY[parts[-1]], middle[0]
        raise ValueError(f"invalid type: '{spec}'")
    raise TypeError(f"type(): argument 'dtype' must be ember.dtype or str, not "
                    f"{type(spec).__name__}")


@_method()
def new(self, *args, device=None):
    """``self.new(*sizes)`` / ``self.new(data)``: PyTorch's legacy constructor with
    ``self``'s dtype and device."""
    return legacy_new(self.dtype, args, device if device is not None else self.device,
                      "new")


@_method()
def type_as(self, other):
    """``self`` cast to ``other``'s dtype (``self.to(other.dtype)``; ``self`` itself when
    the dtype already matches).

    Example:
        >>> ember.tensor([1, 2]).type_as(ember.tensor([0.5]))
        tensor([1., 2.])
    """
    return O.to(self, None, other.dtype)


# ---- resize and the Python-function maps (CPU) -----------------------------------------------
def _capacity(t) -> int | None:
    """Elements of ``t``'s dtype its storage holds from ``t``'s offset on (None if the
    backend does not say)."""
    nbytes = getattr(t._storage, "nbytes", None)
    if nbytes is None:
        try:
            nbytes = len(memoryview(t._storage).cast("B"))
        except TypeError:
            return None
    return nbytes // t.dtype.itemsize - t._offset


@_method()
def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes`` (contiguous): the storage is kept when it is large
    enough, else the values are copied into a larger one (new elements uninitialised)."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = K._shape(sizes, "resize_", self.dtype)
    n = C.numel(shape)
    cap = _capacity(self)
    if cap is None or n > cap:
        new = C.empty(shape, self.dtype, self.device)
        keep = min(n, cap if cap is not None else 0)
        if keep and cap is not None:
            src = C.new_tensor(self._storage, (keep,), (1,), self._offset, self.dtype,
                               self.device, self._vc)
            O.copy_(V.narrow(V.reshape(new, (-1,)), 0, 0, keep), src)
        self._storage, self._offset = new._storage, 0
        C.adopt(self)
    self.shape, self._stride = C.as_size(tuple(shape)), C.contiguous_strides(tuple(shape))
    return self


@_method()
def resize(self, *sizes):
    """The deprecated out-of-place ``resize``: a reshape that keeps the element count."""
    _warn("non-inplace resize is deprecated", UserWarning)
    shape = K._size(sizes, "resize")
    n, have = C.numel(shape), C.numel(self.shape)
    if n != have:
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({have} elements). autograd's "
                           "resize can only change the shape of a given tensor, while "
                           "preserving the number of elements. ")
    return VW.reshape(self, shape)


@_method()
def resize_as(self, tensor):
    """The deprecated out-of-place ``resize`` to ``tensor``'s shape (see :meth:`resize`):
    a reshape that must keep the element count."""
    return resize(self, tensor.shape)


@_method()
def resize_as_(self, the_template, memory_format=None):
    """Resize ``self`` in place to ``the_template``'s shape (see :meth:`resize_`);
    returns ``self``.

    Example:
        >>> ember.zeros(2, 2).resize_as_(ember.zeros(1, 5)).size()
        ember.Size([1, 5])
    """
    return resize_(self, the_template.shape)


def _cpu_only(op, self, *others):
    """PyTorch's checks of the Python-function maps: CPU tensors, ``others`` of
    ``self``'s dtype."""
    for t in (self,) + others:
        if t.device.type != "cpu":
            raise TypeError(f"{op} is only implemented on CPU tensors")
    for name, t in zip(("other",) if op == "map_" else ("x", "y"), others):
        if t.dtype is not self.dtype:
            raise TypeError(f"{op}: expected ember.{D.torch_name(self.dtype)}Tensor for "
                            f"'{name}' (got ember.{D.torch_name(t.dtype)}Tensor)")


@_method()
def apply_(self, callable):
    """Replace every element ``x`` with ``callable(x)`` (CPU tensors; slow, as PyTorch's)."""
    _cpu_only("apply_", self)
    if self.requires_grad and MODE.grad:
        raise RuntimeError("apply_ on a tensor that requires grad is not supported")
    arr = K.numpy_of(self)
    flat = [callable(v) for v in arr.reshape(-1).tolist()]
    arr[...] = np.asarray(flat, dtype=arr.dtype).reshape(arr.shape) if flat else arr
    C.bump(self)
    return self


@_method()
def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` with ``tensor`` broadcast (CPU)."""
    _cpu_only("map_", self, tensor)
    other = K.numpy_of(C.expand_to(tensor, self.shape))
    arr = K.numpy_of(self)
    flat = [callable(a, b) for a, b in zip(arr.reshape(-1).tolist(),
                                           np.broadcast_to(other, arr.shape).reshape(-1)
                                           .tolist())]
    if flat:
        arr[...] = np.asarray(flat, dtype=arr.dtype).reshape(arr.shape)
    C.bump(self)
    return self


@_method()
def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` with ``x`` and ``y`` broadcast (CPU)."""
    _cpu_only("map2_", self, x, y)
    a = K.numpy_of(self)
    b = K.numpy_of(C.expand_to(x, self.shape)).reshape(-1).tolist()
    c = K.numpy_of(C.expand_to(y, self.shape)).reshape(-1).tolist()
    flat = [callable(p, q, r) for p, q, r in zip(a.reshape(-1).tolist(), b, c)]
    if flat:
        a[...] = np.asarray(flat, dtype=a.dtype).reshape(a.shape)
    C.bump(self)
    return self
