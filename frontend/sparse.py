"""``ember.sparse``: PyTorch's ``torch.sparse`` namespace for sparse COO tensors.

>>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
>>> ember.sparse.mm(s, ember.ones(2, 1)).tolist()
[[2.0], [3.0]]
"""
from __future__ import annotations

from . import _sparse_tensor as _S

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "check_sparse_tensor_invariants",
           "as_sparse_gradcheck", "spdiags", "sampled_addmm"]

check_sparse_tensor_invariants = _S.check_sparse_tensor_invariants


def mm(mat1, mat2, reduce=None):
    """sparse (n, m) @ dense (m, p) -> dense (n, p), differentiable in both
    (``torch.sparse.mm``)."""
    if reduce is not None:
        raise NotImplementedError("sparse.mm(): the reduce argument (a sparse CSR feature) is "
                                  "not supported in ember")
    return _S.sparse_mm(mat1, mat2, "mm")


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse COO ``mat1`` (``torch.sparse.addmm``)."""
    return _S.sparse_addmm(mat, mat1, mat2, beta, alpha)


def sum(input, dim=None, dtype=None):
    """Sum of a sparse COO tensor's entries, or over ``dim`` (``torch.sparse.sum``)."""
    return _S.sparse_sum(input, dim, dtype)


def softmax(input, dim, *, dtype=None):
    """Softmax over ``dim`` among the specified entries (``torch.sparse.softmax``)."""
    return _S.sparse_softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax over ``dim`` among the specified entries (``torch.sparse.log_softmax``)."""
    return _S.sparse_log_softmax(input, dim, dtype)


def _unsupported(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"sparse.{name}(): not supported in ember (sparse COO "
                                  f"tensors only have the ops listed in ember.sparse)")
    fn.__name__ = name
    return fn


as_sparse_gradcheck = _unsupported("as_sparse_gradcheck")
spdiags = _unsupported("spdiags")
sampled_addmm = _unsupported("sampled_addmm")
as_sparse_gradcheck.__doc__ = ("PyTorch's decorator making ``gradcheck`` accept sparse "
                               "inputs; not supported in ember (raises NotImplementedError).")
spdiags.__doc__ = ("A sparse matrix built from diagonals (``torch.sparse.spdiags``); not "
                   "supported in ember (raises NotImplementedError).")
sampled_addmm.__doc__ = ("``beta * input + alpha * (mat1 @ mat2)`` at the sparse CSR "
                         "``input``'s positions; not supported in ember (CSR tensors do not "
                         "exist; raises NotImplementedError).")
