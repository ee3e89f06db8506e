"""Sparse COO tensors (``torch.sparse_coo_tensor``): ``SparseCOOTensor``, an ``ember.Tensor``.

A sparse tensor of dense size ``size`` holds ``indices`` (int64, sparse_dim x nnz) and
``values`` (nnz x size[sparse_dim:]) as ordinary ember tensors; entry ``k`` puts
``values[k]`` at ``indices[:, k]`` and duplicates add up. Every computation is made of
ember ops on ``indices`` and ``values``, so gradients flow to ``values`` (and to dense
operands) through ember's autograd. It has no strided storage: ops it does not implement
raise ``NotImplementedError`` naming the op and the layout instead of reading a storage.

>>> s = ember.sparse_coo_tensor([[0, 0], [1, 1]], [1., 2.], (2, 2))
>>> s.coalesce().values().tolist()
[3.0]
"""
from __future__ import annotations

import math
import sys

from ember.dispatcher import dtypes as D
from ember.dispatcher.core import TensorBase
from ember.dispatcher.device import to_device

from . import _creation as K
from . import _functions as F
from . import _ops_sparse as OS
from . import autograd
from .overrides import _disabled_torch_function_impl
from ._tensor import Size, Tensor, parse_to_args

sparse_coo = OS.sparse_coo

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "check_sparse_tensor_invariants",
           "embedding_sparse", "embedding_sparse_grad", "add_sparse_", "sgd_sparse_step_",
           "sparse_adam_step_"]


def _layout_error(op):
    return NotImplementedError(
        f"{op}(): not supported for sparse COO tensors (layout ember.sparse_coo) in ember; "
        f"convert with .to_dense() first")


def not_for_dense(op, message=None):
    """The error of a sparse-only method called on a dense (strided) tensor."""
    if message is not None:
        return RuntimeError(message)
    return NotImplementedError(f"{op}(): expected a sparse COO tensor (layout "
                               f"ember.sparse_coo), got a dense tensor (layout ember.strided)")


# ---- invariant checks ----------------------------------------------------------------------
class check_sparse_tensor_invariants:
    """``torch.sparse.check_sparse_tensor_invariants``: a context manager / decorator that
    turns on the checks of ``sparse_coo_tensor``'s arguments, with the global switches
    ``enable()``, ``disable()`` and ``is_enabled()``."""
    _enabled = False

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable=True):
        self.state = bool(enable)
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, exc_type, exc_value, tb):
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        wrapped.__doc__ = getattr(fn, "__doc__", None)
        return wrapped


# ---- the tensor ----------------------------------------------------------------------------
def _no_storage():
    """What dense code reading a sparse tensor's storage, strides or offset gets."""
    return NotImplementedError("a sparse COO tensor (layout ember.sparse_coo) has no strided "
                               "storage: this op does not support sparse tensors in ember; "
                               "convert with .to_dense() first")
_KEEP = frozenset((
    "dim", "ndimension", "size", "numel", "nelement", "element_size", "get_device",
    "is_floating_point", "is_complex", "is_conj", "is_neg", "__init__", "__new__", "__hash__",
    "__len__", "__format__", "__str__", "untyped_storage",
))


class SparseCOOTensor(Tensor):
    """A sparse COO tensor (``layout=ember.sparse_coo``). Build it with
    ``ember.sparse_coo_tensor`` or ``Tensor.to_sparse()``."""
    __slots__ = ("_ind", "_val", "_is_coal")
    # a layout, not a user subclass: ops on it are not handed to __torch_function__
    __torch_function__ = _disabled_torch_function_impl

    # ---- metadata -------------------------------------------------------------------------
    @property
    def layout(self):
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def _storage(self):
        raise _no_storage()

    @property
    def _stride(self):
        raise _no_storage()

    @property
    def _offset(self):
        raise _no_storage()

    @property
    def T(self):
        if len(self.shape) != 2:
            raise _layout_error("T (of a sparse tensor that is not 2-D)")
        return self.t()

    mT = H = mH = T

    @property
    def requires_grad(self) -> bool:
        return self._val.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    @property
    def grad_fn(self):
        return self._val.grad_fn

    @property
    def grad(self):
        """Set by assignment, or (a leaf made with ``requires_grad=True``) the gradient of
        its values, as a sparse tensor on its coalesced positions (PyTorch's)."""
        if self._grad is not None or self._val.grad_fn is not None or self._val.grad is None:
            return self._grad
        g = self._val.grad
        if self._is_coal:
            return _make(self._ind, g, self.shape, True)
        order, first, _, _, ind = _coalesce_plan(self._ind, self.shape[:self.sparse_dim()])
        return _make(ind, g[order][first], self.shape, True)

    @grad.setter
    def grad(self, value):
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None
        self._val.grad = None

    def sparse_dim(self) -> int:
        return self._ind.shape[0]

    def dense_dim(self) -> int:
        return len(self.shape) - self._ind.shape[0]

    def _nnz(self) -> int:
        return self._ind.shape[1]

    def is_coalesced(self) -> bool:
        return self._is_coal

    def _coalesced_(self, coalesced):
        self._is_coal = bool(coalesced)
        return self

    def is_contiguous(self, memory_format=None) -> bool:
        return False

    def stride(self, dim=None):
        """Zeros, as PyTorch reports for sparse tensors (they have no strided storage)."""
        if dim is None:
            return (0,) * len(self.shape)
        _dim(dim, len(self.shape))
        return 0

    def storage_offset(self):
        return 0

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def indices(self):
        if not self._is_coal:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._ind.detach()

    def values(self):
        if not self._is_coal:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._val.view(self._val.shape)

    def _indices(self):
        return self._ind.detach()

    def _values(self):
        return self._val.detach()

    def __repr__(self):
        return _repr(self)

    __str__ = __repr__

    # ---- conversions ----------------------------------------------------------------------
    def coalesce(self):
        """Duplicates summed, indices sorted (row-major); ``self`` when already coalesced."""
        if self._is_coal:
            return self
        return _coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        return _to_dense(self)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if (layout not in (None, sparse_coo) or blocksize is not None
                or dense_dim is not None):
            raise _layout_error("to_sparse (to a compressed layout)")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported (got "
                               f"{sparse_dim}, self.sparse_dim()={self.sparse_dim()})")
        return self

    def to_sparse_coo(self):
        return self

    def to(self, *args, **kwargs):
        device, dtype, copy = parse_to_args(args, kwargs)
        ind = self._ind if device is None else self._ind.to(to_device(device))
        val = self._val.to(device=to_device(device) if device is not None else None,
                           dtype=dtype, copy=copy)
        if val is self._val and ind is self._ind:
            return self
        return _make(ind, val, self.shape, self._is_coal)

    def cpu(self):
        return self.to("cpu")

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None and not kwargs:
            return f"ember.sparse.{D.torch_name(self.dtype)}Tensor"
        raise _layout_error("type")

    def float(self):
        return self.to(dtype=D.float32)

    def double(self):
        return self.to(dtype=D.float64)

    def half(self):
        return self.to(dtype=D.float16)

    def bfloat16(self):
        return self.to(dtype=D.bfloat16)

    def long(self):
        return self.to(dtype=D.int64)

    def int(self):
        return self.to(dtype=D.int32)

    def bool(self):
        return self.to(dtype=D.bool_)

    def clone(self, *, memory_format=None):
        return _make(self._ind.clone(), self._val.clone(), self.shape, self._is_coal)

    def __deepcopy__(self, memo):
        res = _make(self._ind.clone(), self._val.detach().clone(), self.shape, self._is_coal)
        if self.requires_grad and self.grad_fn is None:
            res._val.requires_grad_()
        memo[id(self)] = res
        return res

    def __reduce_ex__(self, proto):
        return (_rebuild, (self._ind, self._val.detach(), tuple(self.shape), self._is_coal,
                           self.requires_grad and self.grad_fn is None))

    def detach(self):
        return _make(self._ind, self._val.detach(), self.shape, self._is_coal)

    def detach_(self):
        self._val = self._val.detach()
        return self

    def requires_grad_(self, requires_grad=True):
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables."
                                   " If you want to use a computed variable in a subgraph "
                                   "that doesn't require differentiation use var_no_grad = "
                                   "var.detach().")
            return self
        self._val.requires_grad = bool(requires_grad)
        return self

    def zero_(self):
        nd = self.dense_dim()
        self._ind = K.zeros((self.sparse_dim(), 0), dtype=D.int64, device=self.device)
        self._val = K.zeros((0,) + tuple(self.shape[len(self.shape) - nd:]), dtype=self.dtype,
                            device=self.device)
        self._is_coal = True
        return self

    # ---- shape ----------------------------------------------------------------------------
    def t(self):
        if self.sparse_dim() > 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               f"dense dimensions")
        if len(self.shape) < 2:
            return self
        return self.transpose(0, 1)

    def transpose(self, dim0, dim1):
        nd = len(self.shape)
        d0, d1 = _dim(dim0, nd), _dim(dim1, nd)
        sd = self.sparse_dim()
        if d0 == d1:
            return self
        if d0 >= sd or d1 >= sd:
            raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got "
                               f"sparse_dim: {sd}, d0: {d0}, d1: {d1}")
        size = list(self.shape)
        size[d0], size[d1] = size[d1], size[d0]
        rows = list(range(sd))
        rows[d0], rows[d1] = rows[d1], rows[d0]
        ind = self._ind[K.tensor(rows, device=self.device)]
        return _make(ind, self._val, size, False)

    # ---- arithmetic -----------------------------------------------------------------------
    def mul(self, other):
        return _mul(self, other, "mul")

    multiply = mul

    def __mul__(self, other):
        return _mul(self, other, "mul")

    __rmul__ = __mul__

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is not None:
            raise _layout_error("div (with rounding_mode)")
        return _mul(self, other, "div")

    divide = true_divide = div

    def __truediv__(self, other):
        return _mul(self, other, "div")

    def neg(self):
        return _make(self._ind, -self._val, self.shape, self._is_coal)

    negative = neg

    def __neg__(self):
        return self.neg()

    def add(self, other, *, alpha=1):
        return _add(self, other, alpha, "add")

    def __add__(self, other):
        return _add(self, other, 1, "add")

    def __radd__(self, other):
        if isinstance(other, TensorBase) and not getattr(other, "is_sparse", False):
            return _dense_add_sparse(other, self, 1)
        raise _layout_error("add (a Python number plus a sparse tensor)")

    def sub(self, other, *, alpha=1):
        return _add(self, other, -alpha, "sub")

    subtract = sub

    def __sub__(self, other):
        return _add(self, other, -1, "sub")

    def __rsub__(self, other):
        if isinstance(other, TensorBase) and not getattr(other, "is_sparse", False):
            return _dense_add_sparse(other, self, -1)
        raise _layout_error("sub (a Python number minus a sparse tensor)")

    def add_(self, other, *, alpha=1):
        """In place: ``self += alpha * other`` for a sparse ``other`` (concatenates the
        entries, as PyTorch's uncoalesced sum)."""
        if not getattr(other, "is_sparse", False):
            raise RuntimeError("add_(): a sparse tensor can only be added in place to another "
                               "sparse tensor in ember (use dense.add_(sparse))")
        res = _add(self, other, alpha, "add_")
        self._ind, self._val, self._is_coal = res._ind, res._val, res._is_coal
        return self

    def __iadd__(self, other):
        return self.add_(other)

    def _add_into_(self, dense, alpha=1):
        """``dense += alpha * self`` in place (PyTorch's ``dense.add_(sparse)``), for the
        autograd engine and the optimizers, which see sparse gradients only through their
        methods."""
        return add_sparse_(dense, self, alpha)

    def mul_(self, other):
        res = _mul(self, other, "mul_")
        self._val = res._val
        return self

    def div_(self, other):
        res = _mul(self, other, "div_")
        self._val = res._val
        return self

    # ---- reductions and products ----------------------------------------------------------
    def sum(self, dim=None, keepdim=False, dtype=None):
        return _sum(self, dim, keepdim, dtype)

    def mm(self, mat2):
        return sparse_mm(self, mat2, "mm")

    def matmul(self, other):
        return sparse_mm(self, other, "matmul")

    def mv(self, vec):
        return sparse_mm(self, vec, "mv")

    def __matmul__(self, other):
        return sparse_mm(self, other, "matmul")

    def __rmatmul__(self, other):
        return sparse_mm(other, self, "matmul")

    def sparse_mask(self, mask):
        raise _layout_error("sparse_mask (of a sparse tensor)")


def _stub(name):
    def fn(self, *args, **kwargs):
        raise _layout_error(name)
    fn.__name__ = name
    fn.__qualname__ = f"SparseCOOTensor.{name}"
    return fn


def _install_stubs():
    """Every other ember.Tensor method raises NotImplementedError on a sparse tensor."""
    for name, attr in list(vars(Tensor).items()):
        if name in SparseCOOTensor.__dict__ or name in _KEEP or isinstance(attr, (property,
                                                                                    type)):
            continue
        if name.startswith("__") and name in ("__module__", "__doc__", "__slots__",
                                               "__array_priority__"):
            continue
        if callable(attr):
            setattr(SparseCOOTensor, name, _stub(name.strip("_") or name))


_install_stubs()


def _make(indices, values, size, coalesced):
    t = object.__new__(SparseCOOTensor)
    t._ind = indices
    t._val = values
    t._is_coal = bool(coalesced)
    t.shape = Size(tuple(int(s) for s in size))
    t.dtype = values.dtype
    t.device = values.device
    t._vc = values._vc
    t._base = None
    t._view_gen = 0
    t._grad = None
    t._acc_ref = None
    t._hooks = None
    t._retains = False
    return t


def _rebuild(indices, values, size, coalesced, requires_grad):
    res = _make(indices, values, size, coalesced)
    if requires_grad:
        res._val.requires_grad_()
    return res


def _dim(d, nd):
    if not -max(nd, 1) <= d < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {d})")
    return d % max(nd, 1)


def _is_sp(x):
    return isinstance(x, SparseCOOTensor)


# ---- construction --------------------------------------------------------------------------
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    dev = to_device(device) if device is not None else None
    if not isinstance(indices, TensorBase):
        indices = K.tensor(indices, dtype=D.int64, device=dev)
    if not isinstance(values, TensorBase):
        values = K.tensor(values, dtype=dtype, device=dev)
    if indices.dtype is not D.int64:  # (PyTorch converts indices of any dtype)
        indices = indices.to(D.int64)
    if dtype is not None or dev is not None:
        values = values.to(device=dev, dtype=D.to_dtype(dtype) if dtype is not None else None)
    if indices.device != values.device:
        indices = indices.to(values.device)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: "
                           f"{list(indices.shape)}")
    if values.dim() == 0:
        raise RuntimeError("values must have at least one dimension (nnz x dense dims)")
    sd, nnz = indices.shape
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from "
                           f"indices: {nnz}, nnz from values: {values.shape[0]}")
    dense = tuple(values.shape[1:])
    if size is None:
        if nnz:
            sizes = [int(m) + 1 for m in indices.amax(1).tolist()]
        else:
            sizes = [0] * sd
        size = tuple(sizes) + dense
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sd + len(dense):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sd}, dense_dim = "
                               f"{len(dense)}")
        if tuple(size[sd:]) != dense:
            raise RuntimeError(f"values has incorrect size, expected {list(dense)}, got "
                               f"{list(size[sd:])}")
    check = (check_sparse_tensor_invariants.is_enabled() if check_invariants is None
             else check_invariants)
    if check and nnz:
        low, high = indices.amin(1).tolist(), indices.amax(1).tolist()
        for d in range(sd):
            if low[d] < 0:
                raise RuntimeError(f"found negative index {low[d]} for dim {d}")
            if high[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {high[d]}")
    if requires_grad:
        if not values.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        values = values.detach().requires_grad_()
    elif values.requires_grad:
        values = values.view(values.shape)  # the sparse tensor is computed from ``values``
    coal = nnz <= 1 if is_coalesced is None else bool(is_coalesced)
    return _make(indices, values, size, coal)


def _lin(ind, sizes):
    """Row-major linear positions of the index columns over ``sizes``."""
    lin = None
    for d, n in enumerate(sizes):
        lin = ind[d] if lin is None else lin * n + ind[d]
    if lin is None:
        lin = K.zeros((ind.shape[1],), dtype=D.int64, device=ind.device)
    return lin


def _unlin(lin, sizes, device):
    rows = []
    for n in reversed(sizes):
        rows.append(lin % n if n else lin)
        lin = lin // n if n else lin
    rows.reverse()
    if not rows:
        return K.zeros((0, lin.shape[0]), dtype=D.int64, device=device)
    return F.stack(rows, 0)


def _coalesce_plan(ind, sizes):
    """``(order, first, group, n, new_indices)``: the stable sort of the entries by position,
    which sorted entries start a run of equal positions, each sorted entry's run number, the
    number of runs and the runs' indices."""
    lin = _lin(ind, sizes)
    order = lin.argsort(stable=True)
    lin_s = lin[order]
    nnz = lin_s.shape[0]
    if nnz == 0:
        first = K.zeros((0,), dtype=D.bool_, device=ind.device)
    else:
        first = F.cat([K.ones((1,), dtype=D.bool_, device=ind.device),
                       lin_s[1:] != lin_s[:-1]])
    group = first.to(D.int64).cumsum(0) - 1
    n = int(first.sum().item()) if nnz else 0
    return order, first, group, n, _unlin(lin_s[first], sizes, ind.device)


def _coalesce(s):
    sd = s.sparse_dim()
    order, first, group, n, ind = _coalesce_plan(s._ind, s.shape[:sd])
    vals = s._val[order]
    out = K.zeros((n,) + tuple(vals.shape[1:]), dtype=vals.dtype, device=vals.device)
    return _make(ind, out.index_add(0, group, vals), s.shape, True)


def _to_dense(s):
    sd = s.sparse_dim()
    sizes = s.shape[:sd]
    dense = tuple(s.shape[sd:])
    out = K.zeros((math.prod(sizes),) + dense, dtype=s.dtype, device=s.device)
    if s._nnz():
        if s.dtype is D.bool_:
            out = out.index_put((_lin(s._ind, sizes),), s._val, accumulate=False)
        else:
            out = out.index_add(0, _lin(s._ind, sizes), s._val)
    return out.reshape(tuple(s.shape))


def dense_to_sparse(x, sparse_dim, layout, blocksize, dense_dim):
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise _layout_error(f"to_sparse (to layout {layout})")
    nd = len(x.shape)
    if sparse_dim is None:
        sparse_dim = nd - (dense_dim or 0)
    if not 0 <= sparse_dim <= nd:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{nd}] range, "
                           f"but {sparse_dim} is given")
    if sparse_dim == 0:
        if nd > 0:
            raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                               "self.dim()>0")
        ind = K.zeros((0, 1), dtype=D.int64, device=x.device)
        return _make(ind, x.unsqueeze(0), x.shape, True)
    nz = x != 0
    if sparse_dim < nd:
        nz = nz.any(tuple(range(sparse_dim, nd)))
    ind = nz.nonzero().t()
    vals = x[tuple(ind[d] for d in range(sparse_dim))]
    return _make(ind, vals, x.shape, True)


def sparse_mask(x, mask):
    if not _is_sp(mask):
        raise RuntimeError("sparse_mask(): expected mask to be a sparse COO tensor "
                           "(layout ember.sparse_coo), got a dense tensor")
    if tuple(x.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(x.shape)} but mask has size {list(mask.shape)}")
    ind = mask._ind
    vals = x[tuple(ind[d] for d in range(mask.sparse_dim()))]
    return _make(ind, vals, x.shape, mask._is_coal)


# ---- arithmetic ----------------------------------------------------------------------------
def _mul(s, other, op):
    if isinstance(other, TensorBase):
        if (op.startswith("mul") and not _is_sp(other)
                and tuple(other.shape) == tuple(s.shape)):
            # sparse * dense of the same size: the dense entries at the sparse positions
            picked = other[tuple(s._ind[d] for d in range(s.sparse_dim()))]
            return _make(s._ind, s._val * picked, s.shape, s._is_coal)
        if _is_sp(other) or other.dim() != 0:
            raise _layout_error(f"{op} (of a sparse tensor by a tensor that is neither 0-d nor "
                                f"dense of the same size)")
    elif not isinstance(other, (int, float, bool)):
        raise TypeError(f"{op}(): argument 'other' must be Tensor or Number, not "
                        f"{type(other).__name__}")
    val = s._val * other if op.startswith("mul") else s._val / other
    return _make(s._ind, val, s.shape, s._is_coal)


def _add(a, b, alpha, op):
    if not _is_sp(b):
        if isinstance(b, TensorBase):
            raise RuntimeError(f"{op}(sparse, dense) is not supported. Use {op}(dense, sparse) "
                               f"instead.")
        raise _layout_error(f"{op} (a sparse tensor and a Python number)")
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(a.shape)} while other has size {list(b.shape)} (FYI: "
                           f"dense-sparse addition does not support broadcasting)")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have the same number of "
                           f"sparse dimensions, got {a.sparse_dim()} and {b.sparse_dim()}")
    if a.device != b.device:
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found "
                           f"at least two devices, {a.device} and {b.device}!")
    dt = D.promote_types(a.dtype, b.dtype)
    bv = b._val if alpha == 1 else b._val * alpha
    vals = F.cat([a._val.to(dt), bv.to(dt)])
    res = _make(F.cat([a._ind, b._ind], 1), vals, a.shape, False)
    if a._is_coal and b._is_coal:  # PyTorch merges coalesced operands into a coalesced sum
        return _coalesce(res)
    return res


def _dense_add_sparse(x, s, alpha):
    if tuple(x.shape) != tuple(s.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(x.shape)} while other has size {list(s.shape)} (FYI: "
                           f"dense-sparse addition does not support broadcasting)")
    d = _to_dense(s)
    return x + d if alpha == 1 else x + d * alpha


def add_sparse_(x, s, alpha=1):
    """In place ``x += alpha * s`` for a dense ``x`` and a sparse COO ``s`` (PyTorch's
    ``dense.add_(sparse, alpha=...)``); only the rows ``s`` names are written."""
    if tuple(x.shape) != tuple(s.shape):
        raise RuntimeError(f"add_: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(x.shape)} while other has size {list(s.shape)}")
    if not s._nnz():
        return x
    sd = s.sparse_dim()
    vals = s._val if alpha == 1 else s._val * alpha
    flat = x.view((math.prod(s.shape[:sd]),) + tuple(s.shape[sd:]))
    flat.index_add_(0, _lin(s._ind, s.shape[:sd]), vals.to(x.dtype))
    return x


def _sum(s, dim, keepdim, dtype):
    if dim is None:
        v = s._val.sum(dtype=dtype) if dtype is not None else s._val.sum()
        return v
    nd = len(s.shape)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = sorted({_dim(d, nd) for d in dims})
    if not dims:
        return s.coalesce() if dtype is None else s.coalesce().to(dtype=dtype)
    if keepdim:
        return _keep_dims(_sum(s, dims, False, dtype), dims, s.sparse_dim())
    sd = s.sparse_dim()
    sp_dims = [d for d in dims if d < sd]
    de_dims = [d - sd + 1 for d in dims if d >= sd]
    vals = s._val
    if dtype is not None:
        vals = vals.to(dtype)
    if de_dims:
        vals = vals.sum(tuple(de_dims))
    keep = [d for d in range(sd) if d not in sp_dims]
    size = [s.shape[d] for d in range(nd) if d not in dims]
    if not sp_dims:
        return _make(s._ind, vals, size, s._is_coal)
    if not keep:
        return vals.sum(0)
    ind = s._ind[K.tensor(keep, device=s.device)]
    return _coalesce(_make(ind, vals, size, False))


def _keep_dims(r, dims, sd):
    """``r`` (a sum over ``dims``) with those dimensions back, of size 1."""
    if not _is_sp(r):
        for d in dims:
            r = r.unsqueeze(d)
        return r
    ind, vals, size = r._ind, r._val, list(r.shape)
    for d in dims:
        size.insert(d, 1)
        if d < sd:
            zero = K.zeros((1, ind.shape[1]), dtype=D.int64, device=ind.device)
            ind = F.cat([ind[:d], zero, ind[d:]])
        else:
            vals = vals.unsqueeze(d - ind.shape[0] + 1)
    return _make(ind, vals, size, r._is_coal)


def sparse_sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: all entries (a dense 0-d tensor), or over ``dim``."""
    if not _is_sp(input):
        raise NotImplementedError("sparse.sum(): expected a sparse COO tensor (layout "
                                  "ember.sparse_coo), got a dense tensor")
    if dim is None:
        return _sum(input, None, False, dtype)
    return _sum(input, dim, False, dtype)


def sparse_mm(a, b, op="mm"):
    """sparse (n, m) @ dense (m, p) -> dense (n, p), made of index_add over the entries, so
    gradients reach ``b`` and the sparse operand's values."""
    if not _is_sp(a):
        if _is_sp(b):
            return _dense_sparse_mm(a, b, op)
        return F.mm(a, b)   # (dense operands: PyTorch's sparse.mm is then a dense mm)
    if _is_sp(b):
        raise _layout_error(f"{op} (sparse @ sparse)")
    if not isinstance(b, TensorBase):
        raise TypeError(f"{op}(): argument 'mat2' must be Tensor, not {type(b).__name__}")
    if a.sparse_dim() != 2 or a.dense_dim() != 0:
        raise RuntimeError(f"{op}(): expected a 2-D sparse tensor with 2 sparse dimensions, got "
                           f"{a.sparse_dim()} sparse and {a.dense_dim()} dense dimensions")
    if op == "mv" and b.dim() != 1:
        raise RuntimeError(f"mv: two tensor dim should be 2 and 1, but got SparseTensor Dim: "
                           f"{a.dim()}Tensor Dim: {b.dim()}")
    if op in ("mv", "matmul") and b.dim() == 1:
        # matrix @ vector (torch.mv, and matmul of a 1-D operand): the vector as a column
        if a.shape[1] != b.shape[0]:
            raise RuntimeError("mv: expected self.size(-1) == vec.size(-1)")
        return sparse_mm(a, b.unsqueeze(1), "matmul").squeeze(1)
    if b.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(b.dim(), 1)}, {max(b.dim(), 1) - 1}], but got 1)")
    if b.dim() != 2:
        raise RuntimeError(f"{op}(): expected 2D tensor for argument 'mat2', got a "
                           f"{b.dim()}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {a.shape[1]}, got "
                           f"{b.shape[0]}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {D.torch_name(a.dtype)} but found "
                           f"{D.torch_name(b.dtype)}")
    if a.device != b.device:
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found "
                           f"at least two devices, {a.device} and {b.device}!")
    out = K.zeros((a.shape[0], b.shape[1]), dtype=b.dtype, device=b.device)
    if not a._nnz():
        return out + 0 * b.sum() if b.requires_grad else out
    rows, cols = a._ind[0], a._ind[1]
    return out.index_add(0, rows, a._val.unsqueeze(1) * b[cols])


def _dense_sparse_mm(a, b, op):
    """dense @ sparse COO -> dense, as ``(b.t() @ a.t()).t()`` (PyTorch computes it so too:
    its result is that transposed view); ``matmul`` also takes a vector or a batch first."""
    if op == "matmul" and a.dim() == 1:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {b.shape[0]}, "
                               f"got {a.shape[0]}")
        return sparse_mm(b.t(), a, op)
    if op == "matmul" and a.dim() > 2:
        flat = _dense_sparse_mm(a.reshape(-1, a.shape[-1]), b, op)
        return flat.reshape(*a.shape[:-1], flat.shape[1])
    if a.dim() != 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(a.dim(), 1)}, {max(a.dim(), 1) - 1}], but got -2)")
    return sparse_mm(b.t(), a.t(), op).t()


def sparse_addmm(mat, mat1, mat2, beta=1, alpha=1):
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1``."""
    prod = sparse_mm(mat1, mat2, "addmm")
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # (``mat`` is ignored, NaN included)
        return prod
    return prod + (mat if beta == 1 else mat * beta)


def _softmax(s, dim, dtype, log, op):
    if not _is_sp(s):
        raise NotImplementedError(f"{op}(): expected a sparse COO tensor (layout "
                                  f"ember.sparse_coo), got a dense tensor")
    nd = len(s.shape)
    d = _dim(dim, nd)
    c = s.coalesce()
    vals = c._val if dtype is None else c._val.to(D.to_dtype(dtype))
    if not vals.dtype.is_floating_point:
        raise NotImplementedError(f'"{op}" not implemented for '
                                  f"'{D.torch_name(vals.dtype)}'")
    sd = c.sparse_dim()
    if d >= sd:
        vals = vals.log_softmax(d - sd + 1) if log else vals.softmax(d - sd + 1)
        return _make(c._ind, vals, c.shape, True)
    keep = [k for k in range(sd) if k != d]
    if keep:
        key = _lin(c._ind[K.tensor(keep, device=c.device)], [c.shape[k] for k in keep])
        uniq, group = _unique_inverse(key)
    else:
        group = K.zeros((c._nnz(),), dtype=D.int64, device=c.device)
        uniq = K.zeros((min(c._nnz(), 1),), dtype=D.int64, device=c.device)
    n = uniq.shape[0]
    gshape = (n,) + tuple(vals.shape[1:])
    gmax = K.full(gshape, -math.inf, dtype=vals.dtype, device=vals.device).index_reduce(
        0, group, vals.detach(), "amax", include_self=False)
    shifted = vals - gmax[group]
    e = shifted.exp()
    tot = K.zeros(gshape, dtype=vals.dtype, device=vals.device).index_add(0, group, e)
    res = shifted - tot.log()[group] if log else e / tot[group]
    return _make(c._ind, res, c.shape, True)


def _unique_inverse(key):
    order, first, group, n, _ = _coalesce_plan(key.unsqueeze(0), [2 ** 62])
    inv = K.zeros(key.shape, dtype=D.int64, device=key.device).index_put((order,), group)
    return K.zeros((n,), dtype=D.int64, device=key.device), inv


def sparse_softmax(input, dim, dtype=None):
    """``torch.sparse.softmax``: softmax over ``dim`` among the specified entries only
    (unspecified entries count as -inf, so they stay unspecified)."""
    return _softmax(input, dim, dtype, False, "softmax")


def sparse_log_softmax(input, dim, dtype=None):
    return _softmax(input, dim, dtype, True, "log_softmax")


# ---- repr ----------------------------------------------------------------------------------
def _indent(text, n):
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * n + ln for ln in lines[1:]])


def _repr(s):
    ind = repr(s._ind.detach())
    val = repr(s._val.detach())
    parts = [f"indices={_indent(ind, len('tensor(indices='))}",
             f"values={_indent(val, len('       values='))}"]
    tail = f"size={tuple(s.shape)}, nnz={s._nnz()}"
    if s.dtype is not D.get_default_dtype():
        tail += f", dtype=ember.{s.dtype.name}"
    tail += ", layout=ember.sparse_coo"
    if s.requires_grad and s.grad_fn is None:
        tail += ", requires_grad=True"
    elif s.grad_fn is not None:
        tail += f", grad_fn=<{s.grad_fn.name()}>"
    return f"tensor({parts[0]},\n       {parts[1]},\n       {tail})"


# ---- sparse gradients for embeddings and optimizers ----------------------------------------
def embedding_sparse_grad(indices, grad_output, num_weights, padding_idx=None,
                          scale_grad_by_freq=False):
    """The sparse COO gradient of ``embedding(indices, weight)`` with respect to ``weight``
    (num_weights x D): one uncoalesced entry per looked-up index (PyTorch's
    ``embedding_backward(sparse=True)``), positions equal to ``padding_idx`` left out.
    ``scale_grad_by_freq`` raises, as in PyTorch."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    flat = indices.reshape(-1).to(D.int64)
    d = grad_output.shape[-1]
    rows = grad_output.reshape((-1, d))
    if padding_idx is not None and padding_idx >= 0:
        keep = flat != padding_idx
        flat, rows = flat[keep], rows[keep]
    return _make(flat.unsqueeze(0), rows, (num_weights, d), flat.shape[0] <= 1)


class _EmbeddingSparse(autograd.Function):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        ctx.save_for_backward(indices)
        ctx.num_weights = weight.shape[0]
        ctx.padding_idx = padding_idx
        ctx.scale = scale_grad_by_freq
        return weight.index_select(0, indices.reshape(-1)).reshape(
            tuple(indices.shape) + (weight.shape[1],))

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return (embedding_sparse_grad(indices, grad, ctx.num_weights, ctx.padding_idx,
                                      ctx.scale), None, None, None)


def embedding_sparse(input, weight, padding_idx=None, scale_grad_by_freq=False):
    """``embedding(input, weight, sparse=True)``: the rows of ``weight`` at ``input``, whose
    gradient with respect to ``weight`` is a sparse COO tensor (``padding_idx`` already
    normalised to >= 0, or None)."""
    return _EmbeddingSparse.apply(weight, input, padding_idx, scale_grad_by_freq)


def sgd_sparse_step_(param, grad, lr):
    """SGD's update with a sparse gradient (no momentum, no weight decay, as PyTorch):
    ``param -= lr * grad`` on the rows the gradient names."""
    return add_sparse_(param, grad, alpha=-lr)


def sparse_adam_step_(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps,
                      maximize=False):
    """One ``torch.optim.SparseAdam`` step for a dense ``param`` and a sparse COO ``grad``:
    the moments and the parameter change only where the gradient has entries. ``step`` is
    the step number after increment (1 for the first)."""
    grad = grad.coalesce()
    if maximize:
        grad = -grad
    ind, gv = grad._ind, grad._val
    size = grad.shape
    old_avg = sparse_mask(exp_avg, grad)._val
    avg_update = (gv - old_avg) * (1 - beta1)
    add_sparse_(exp_avg, _make(ind, avg_update, size, True))
    old_sq = sparse_mask(exp_avg_sq, grad)._val
    sq_update = (gv * gv - old_sq) * (1 - beta2)
    add_sparse_(exp_avg_sq, _make(ind, sq_update, size, True))
    numer = avg_update + old_avg
    denom = (sq_update + old_sq).sqrt() + eps
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    add_sparse_(param, _make(ind, (numer / denom) * (-step_size), size, True))
    return param


def accumulate_grad(old, new):
    """``old + new`` for gradients where either may be sparse (the sum the autograd engine
    needs): sparse + sparse stays sparse, otherwise dense."""
    if old is None:
        return new
    if _is_sp(old):
        return old + new if _is_sp(new) else _dense_add_sparse(new, old, 1)
    if _is_sp(new):
        return _dense_add_sparse(old, new, 1)
    return old + new


OS._IMPL["module"] = sys.modules[__name__]
