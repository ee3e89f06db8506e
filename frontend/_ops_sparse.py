"""ember's top-level functions and Tensor methods: sparse (see frontend/__init__.py).

Sparse COO tensors (``torch.sparse_coo_tensor``) are ``ember._sparse_tensor.SparseCOOTensor``,
a subclass of ``ember.Tensor``. That module subclasses ``Tensor``, whose module imports this
one, so the representation registers itself here (``_IMPL``) when it loads (``ember.sparse``
imports it); the functions below forward to it.

>>> i = ember.tensor([[0, 1], [2, 0]])
>>> ember.sparse_coo_tensor(i, ember.tensor([3., 4.]), (2, 3)).to_dense().tolist()
[[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
"""
from __future__ import annotations

from ember.dispatcher.core import TensorBase

from . import _creation as K
from . import _functions as F

__all__: list = []          # names exported as ember.<name>
TENSOR_METHODS: dict = {}   # name -> function (or property) installed on ember.Tensor

#: the sparse COO layout (``torch.sparse_coo``); dense tensors are ``ember.strided``
sparse_coo = K.layout("sparse_coo")

#: the representation module, set by ``ember._sparse_tensor`` when it is imported
_IMPL: dict = {}


def _sp():
    mod = _IMPL.get("module")
    if mod is None:
        raise RuntimeError("ember sparse tensors are not loaded (import ember.sparse)")
    return mod


def _is_sparse(x) -> bool:
    return isinstance(x, TensorBase) and getattr(x, "layout", None) is sparse_coo


# ---- top-level functions ------------------------------------------------------------------
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor of ``size`` with ``values[k]`` at position ``indices[:, k]``
    (``torch.sparse_coo_tensor``); duplicate positions add up when coalesced or densified."""
    return _sp().sparse_coo_tensor(indices, values, size, dtype=dtype, device=device,
                                   requires_grad=requires_grad,
                                   check_invariants=check_invariants,
                                   is_coalesced=is_coalesced)


def spmm(input, mat2):
    """sparse (n, m) @ dense (m, p) -> dense (n, p) (``torch.spmm``)."""
    return _sp().sparse_mm(input, mat2, "spmm")


def mm(input, mat2, *, out=None):
    """``torch.mm``: a sparse COO first argument gives sparse @ dense -> dense; dense
    arguments are ember's dense ``mm``."""
    return _product("mm", F.mm, input, mat2, out)


def _product(name, dense, a, b, out):
    """sparse @ dense for a sparse COO operand (no ``out=`` there), else ``dense``."""
    if _is_sparse(a) or _is_sparse(b):
        if out is not None:
            raise NotImplementedError(f"{name}(): out= is not supported with sparse COO "
                                      "arguments in ember")
        return _sp().sparse_mm(a, b, name)
    return dense(a, b, out=out)


def mv(input, vec, *, out=None):
    """``torch.mv``: a sparse COO matrix times a dense vector gives a dense vector; dense
    arguments are ember's dense ``mv``.

    >>> a = ember.sparse_coo_tensor(ember.tensor([[0, 1], [1, 0]]), ember.tensor([2., 3.]))
    >>> ember.mv(a, ember.tensor([1., 1.])).tolist()
    [2.0, 3.0]
    """
    return _product("mv", F.mv, input, vec, out)


def matmul(input, other, *, out=None):
    """``torch.matmul``: a sparse COO matrix first gives sparse @ dense (a dense vector or
    matrix); dense arguments are ember's dense ``matmul``."""
    return _product("matmul", F.matmul, input, other, out)


__all__ += ["sparse_coo", "sparse_coo_tensor", "spmm", "mm", "mv", "matmul"]


# ---- Tensor methods (dense tensors; SparseCOOTensor overrides them) -------------------------
def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The sparse COO form of a dense tensor: its nonzero entries (over the first
    ``sparse_dim`` dimensions, default all)."""
    return _sp().dense_to_sparse(self, sparse_dim, layout, blocksize, dense_dim)


def to_sparse_coo(self):
    """The sparse COO form of a dense tensor (``to_sparse()`` over all dimensions).

    Example:
        >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse_coo().values()
        tensor([2., 3.])
    """
    return _sp().dense_to_sparse(self, None, None, None, None)


def to_dense(self, dtype=None, *, masked_grad=None):
    """A dense tensor is its own dense form."""
    return self if dtype is None or dtype is self.dtype else self.to(dtype)


def sparse_mask(self, mask):
    """The entries of dense ``self`` at the positions of the sparse COO ``mask``, as a
    sparse tensor with ``mask``'s indices."""
    return _sp().sparse_mask(self, mask)


def _dense_only(name, message=None):
    def fn(self, *args, **kwargs):
        raise _sp().not_for_dense(name, message)
    fn.__name__ = name
    return fn


def _sparse_dim(self):
    """The number of sparse dimensions: 0 for a dense tensor (a sparse COO tensor has
    ``indices().shape[0]``).
    """
    return 0


def _dense_dim(self):
    """The number of dense dimensions: every dimension of a dense tensor (for a sparse COO
    tensor, the dimensions of each stored value).
    """
    return len(self.shape)


TENSOR_METHODS.update({
    "to_sparse": to_sparse, "to_sparse_coo": to_sparse_coo, "to_dense": to_dense,
    "sparse_mask": sparse_mask, "sparse_dim": _sparse_dim, "dense_dim": _dense_dim,
    "coalesce": _dense_only("coalesce"),
    "is_coalesced": _dense_only("is_coalesced",
                                "is_coalesced expected sparse coordinate tensor layout but "
                                "got Strided"),
    "indices": _dense_only("indices"), "values": _dense_only("values"),
    "_indices": _dense_only("_indices"), "_values": _dense_only("_values"),
    "_nnz": _dense_only("_nnz"),
})
# the docstrings of the sparse-only methods (on a dense tensor they raise)
for _name, _doc in {
    "coalesce": "A sparse COO tensor with duplicate indices summed and the indices sorted "
                "(``self`` when already coalesced). Dense tensors raise.",
    "is_coalesced": "Whether a sparse COO tensor is coalesced (no duplicate indices, sorted). "
                    "Dense tensors raise.",
    "indices": "The ``(sparse_dim, nnz)`` index tensor of a coalesced sparse COO tensor. "
               "Dense tensors raise.",
    "values": "The ``(nnz, *dense_shape)`` values of a coalesced sparse COO tensor. Dense "
              "tensors raise.",
}.items():
    TENSOR_METHODS[_name].__doc__ = _doc
del _name, _doc
