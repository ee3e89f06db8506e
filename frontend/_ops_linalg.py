"""ember's top-level functions and Tensor methods: linalg (see frontend/__init__.py).

PyTorch's top-level linear algebra (``torch.det``, ``torch.svd``, ``torch.lu_solve``, the
``add*`` matrix-product updates, ...) on top of ``ember.linalg`` and the dispatcher's
matrix products.

>>> import ember
>>> ember.det(ember.tensor([[2., 1.], [1., 2.]])).item()  # doctest: +ELLIPSIS
3.0...
"""
from __future__ import annotations

import math

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import linalg as LA

from ._ops_shape import conj as _conj
from .return_types import return_type
from . import _deprecated_overloads as DO
from . import linalg as linalg_ns
from ember.dispatcher.warn import warn as _warn

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "cholesky_inverse",
           "cholesky_solve", "qr", "svd", "lu", "lu_solve", "lu_unpack", "triangular_solve",
           "matrix_exp", "matrix_power", "geqrf", "orgqr", "ormqr", "chain_matmul", "cross",
           "inner", "vdot", "ger", "addmv", "addmv_", "addr", "addbmm", "baddbmm",
           "frobenius_norm", "nuclear_norm"]

E = O.elementwise
write_out = linalg_ns.write_out

slogdet_ret = return_type("slogdet", ["sign", "logabsdet"])
qr_ret = return_type("qr", ["Q", "R"])
svd_ret = return_type("svd", ["U", "S", "V"])
triangular_solve_ret = return_type("triangular_solve", ["solution", "cloned_coefficient"])
lu_unpack_ret = return_type("lu_unpack", ["P", "L", "U"])
geqrf_ret = return_type("geqrf", ["a", "tau"])


def _t(x, op, arg="input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


# ---- determinants and inverses ---------------------------------------------------------------
def det(input, *, out=None):
    """``torch.det``: the determinant of (..., n, n)."""
    return linalg_ns.det(input, out=out)


def logdet(input):
    """log(det(input)): nan for a negative determinant, -inf for a singular matrix."""
    sign, logabs = LA.slogdet(_t(input, "logdet"), "linalg.slogdet")
    return O.where(E("lt", sign, 0), O.full((), math.nan, input.dtype, input.device), logabs)


def slogdet(input, *, out=None):
    """(sign, logabsdet) of the determinant."""
    res = linalg_ns.slogdet(input, out=out)
    return slogdet_ret(*res)


def inverse(input, *, out=None):
    """``torch.inverse``: ``linalg.inv``."""
    return linalg_ns.inv(input, out=out)


def pinverse(input, rcond=1e-15, hermitian=False):
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return linalg_ns.pinv(input, rtol=rcond, hermitian=hermitian)


def matrix_exp(input):
    """The matrix exponential of a square matrix or a batch of them (``linalg.matrix_exp``).

    Computes ``sum_k A^k / k!`` for each matrix ``A`` in the last two dimensions.

    Args:
        input (Tensor): a ``(*, n, n)`` floating-point tensor.

    Example:
        >>> ember.matrix_exp(ember.tensor([[0., 1.], [0., 0.]]))
        tensor([[1., 1.],
                [0., 1.]])
    """
    return linalg_ns.matrix_exp(input)


def matrix_power(input, n):
    """The ``n``-th power of a square matrix or a batch of them (``linalg.matrix_power``).

    ``n = 0`` gives the identity and a negative ``n`` the power of the inverse.

    Args:
        input (Tensor): a ``(*, m, m)`` tensor.
        n (int): the exponent.

    Example:
        >>> ember.matrix_power(ember.tensor([[1., 1.], [0., 1.]]), 3)
        tensor([[1., 3.],
                [0., 1.]])
    """
    res = linalg_ns.matrix_power(input, n)
    if n == 0 and input.requires_grad and not res.requires_grad:
        # PyTorch writes the identity into a copy of input: the result stays in input's graph
        # (requires grad; the gradient is zero)
        res = input.clone().copy_(res)
    return res


# ---- Cholesky --------------------------------------------------------------------------------
def cholesky(input, upper=False, *, out=None):
    """``torch.cholesky`` (deprecated in PyTorch in favour of ``linalg.cholesky``)."""
    return linalg_ns.cholesky(input, upper=upper, out=out)


def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = input for A = L L^T (or U^T U), ``input2`` its Cholesky factor."""
    name = "cholesky_solve"
    _t(input, name)
    _t(input2, name, "input2")
    if len(input.shape) < 2 or len(input2.shape) < 2:
        raise RuntimeError(f"{name}: b should have at least 2 dimensions, but has "
                           f"{len(input.shape)} dimensions instead")
    if input.dtype is not input2.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{D.torch_name(input.dtype)} and A of type "
                           f"{D.torch_name(input2.dtype)} instead.")
    LA.check_float(name, input2, "cholesky_solve_cpu")
    linalg_ns.no_grad_out((input, input2), out)
    L = input2
    if upper:   # A = U^T U: U^T Y = B, U X = Y
        Y = LA.solve_triangular(LA.mT(L), input, False)
        X = LA.solve_triangular(L, Y, True)
    else:       # A = L L^T: L Y = B, L^T X = Y
        Y = LA.solve_triangular(L, input, False)
        X = LA.solve_triangular(LA.mT(L), Y, True)
    return write_out(X, out, name)


def cholesky_inverse(input, upper=False, *, out=None):
    """A^{-1} for A = L L^T (or U^T U), from its Cholesky factor ``input``."""
    name = "cholesky_inverse"
    _t(input, name)
    if len(input.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor input must have at least 2 dimensions.")
    LA.check_float(name, input, "cholesky_inverse_out_cpu")
    eye = V.expand(LA.eye_like(input), tuple(input.shape))
    return cholesky_solve(eye, input, upper, out=out)


# ---- QR, SVD, LU -----------------------------------------------------------------------------
def qr(input, some=True, *, out=None):
    """``torch.qr``: (Q, R), reduced when ``some`` else complete."""
    res = linalg_ns.qr(input, "reduced" if some else "complete", out=out)
    return qr_ret(*res)


def svd(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd``: (U, S, V) with input = U diag(S) V^T (V, not Vh). Without
    ``compute_uv``, U and V are zero-filled (m, m) and (n, n) matrices."""
    _t(input, "svd")
    linalg_ns.no_grad_out((input,), out)
    if not compute_uv:
        S = LA.svdvals(input, "linalg.svd")
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        U = O.zeros(batch + (m, m), input.dtype, input.device)
        Vm = O.zeros(batch + (n, n), input.dtype, input.device)
        return write_out(svd_ret(U, S, Vm), out, "svd")
    U, S, Vh = LA.svd(input, not some)
    return write_out(svd_ret(U, S, LA.mT(Vh)), out, "svd")


def lu(A, pivot=True, get_infos=False, out=None):
    """``torch.lu``: (LU, pivots) or, with ``get_infos``, (LU, pivots, infos)."""
    linalg_ns.no_gradient_yet("lu", _t(A, "lu", "A"))
    LU, piv, info = LA.lu_factor_ex(A, pivot, "torch.linalg.lu_factor_ex")
    if not get_infos:
        for i, v in enumerate(LA.host_ints(info)):
            if v > 0:
                where = f"(Batch element {i}): " if len(A.shape) > 2 else ""
                raise RuntimeError(f"torch.linalg.lu_factor: {where}{linalg_ns.lu_zero_message(v)}")
    res = (LU, piv, info) if get_infos else (LU, piv)
    return write_out(res, out, "lu") if out is not None else res


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """``torch.lu_solve``: X with A X = b from (LU_data, LU_pivots) = torch.lu(A)."""
    return linalg_ns.lu_solve(LU_data, LU_pivots, b, out=out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) with A = P L U from LU factors (empty tensors for what is not unpacked)."""
    name = "lu_unpack"
    _t(LU_data, name, "LU_data")
    if len(LU_data.shape) < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(LU_data.shape)} instead")
    if LU_pivots.dtype is not D.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of torch.int32 dtype. Note: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    linalg_ns.no_gradient_yet(name, LU_data)
    res = lu_unpack_ret(*LA.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots))
    return write_out(res, out, name)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """``torch.triangular_solve``: (solution of op(A) X = b, a copy of A)."""
    name = "triangular_solve"
    _t(b, name)
    _t(A, name, "A")
    if len(b.shape) < 2 or len(A.shape) < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {len(b.shape)} dimensions instead")
    linalg_ns.no_grad_out((A, b), out)
    coef = LA.mT(A) if transpose else A
    X = LA.solve_triangular(coef, b, bool(upper) != bool(transpose), True, bool(unitriangular))
    res = triangular_solve_ret(X, O.clone(A))
    return write_out(res, out, name)


def geqrf(input, *, out=None):
    """(a, tau): LAPACK's packed QR (Householder vectors and scalars)."""
    linalg_ns.no_grad_out((input,), out)
    linalg_ns.no_gradient_yet("geqrf", _t(input, "geqrf"))
    return write_out(geqrf_ret(*LA.geqrf(input)), out, "geqrf")


def orgqr(input, tau):
    """``torch.orgqr``: ``linalg.householder_product``."""
    return linalg_ns.householder_product(input, tau)


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """op(Q) input3 (``left``) or input3 op(Q), Q from geqrf's (input, input2)."""
    linalg_ns.no_grad_out((input, input2, input3), out)
    linalg_ns.no_gradient_yet("ormqr", input, input2, input3)
    return write_out(LA.ormqr(_t(input, "ormqr"), input2, input3, left, transpose), out,
                     "ormqr")


# ---- products --------------------------------------------------------------------------------
def chain_matmul(*matrices, out=None):
    """``torch.chain_matmul`` (deprecated in PyTorch): ``linalg.multi_dot`` of 2-D
    matrices."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if len(t.shape) != 2:
            raise RuntimeError(f"Tensor dimension is {len(t.shape)}, expected 2 instead.")
    if len(matrices) == 1:
        return write_out(O.clone(matrices[0]), out, "chain_matmul")
    return linalg_ns.multi_dot(list(matrices), out=out)


def cross(input, other, dim=None, *, out=None):
    """``torch.cross``: ``linalg.cross``; without ``dim``, the first dim of size 3 (PyTorch's
    deprecated default)."""
    _t(input, "cross")
    _t(other, "cross", "other")
    if dim is None:
        _warn("Using torch.cross without specifying the dim arg is deprecated.\n"
              "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
              "The default value of dim will change to agree with that of linalg.cross "
              "in a future release.", UserWarning)
        shape = tuple(input.shape) if len(input.shape) >= len(other.shape) else \
            tuple(other.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    return linalg_ns.cross(input, other, dim=dim, out=out)


def inner(input, other, *, out=None):
    """Sum over the last dims: shape input.shape[:-1] + other.shape[:-1] (0-d: a product)."""
    _t(input, "inner")
    _t(other, "inner", "other")
    if not input.shape or not other.shape:
        res = E("mul", input, other)
        return write_out(res, out, "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    a = V.reshape(input, (-1, k)) if input.shape[:-1] else V.unsqueeze(input, 0)
    b = V.reshape(other, (-1, k)) if other.shape[:-1] else V.unsqueeze(other, 0)
    res = V.reshape(LA.mm(a, V.t(b)), tuple(input.shape[:-1]) + tuple(other.shape[:-1]))
    linalg_ns.no_grad_out((input, other), out)
    return write_out(res, out, "inner")


def vdot(input, other, *, out=None):
    """The dot product of two 1-D tensors, the first conjugated (``dot`` for real ones).

    Example:
        >>> ember.vdot(ember.tensor([1 + 1j, 2 - 1j]), ember.tensor([1 + 1j, 2 - 1j]))
        tensor(7.+0.j)
    """
    _t(input, "vdot")
    _t(other, "vdot", "other")
    if len(input.shape) != 1 or len(other.shape) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(input.shape)}D and "
                           f"{len(other.shape)}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{D.torch_name(input.dtype)} and {D.torch_name(other.dtype)}")
    linalg_ns.no_grad_out((input, other), out)
    if input.dtype._kind == 3:  # (the first vector conjugated)
        input = _conj(input)
    return write_out(LA.dot(input, other), out, "vdot")


def ger(input, vec2, *, out=None):
    """``torch.ger``: ``outer``."""
    _t(input, "ger")
    _t(vec2, "ger", "vec2")
    linalg_ns.no_grad_out((input, vec2), out)
    return write_out(LA.outer(input, vec2), out, "ger")


def _update(name, input, prod, beta, alpha):
    """beta * input + alpha * prod (input ignored, NaNs included, when beta is 0), as
    PyTorch's add* updates."""
    if not prod.dtype.is_floating_point:
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        prod = E("mul", prod, alpha)
    if beta == 0:
        return E("add", prod, O.zeros(tuple(input.shape), input.dtype, input.device))
    return E("add", prod, input if beta == 1 else E("mul", input, beta))


def addmv(input, mat, vec, *args, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    if args:
        input, mat, vec, beta, alpha = DO.product(
            'addmv', False, (input, mat, vec, *args), beta, alpha)
    _t(input, "addmv")
    linalg_ns.no_grad_out((input, mat, vec), out)
    return write_out(_update("addmv", input, LA.mv(mat, vec), beta, alpha), out, "addmv")


def addmv_(input, mat, vec, *args, beta=1, alpha=1):
    if args:
        input, mat, vec, beta, alpha = DO.product(
            'addmv', True, (input, mat, vec, *args), beta, alpha)
    C.check_writable(input, "addmv_")  # (refuse before computing)
    return input.copy_(addmv(input, mat, vec, beta=beta, alpha=alpha))


def addr(input, vec1, vec2, *args, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    if args:
        input, vec1, vec2, beta, alpha = DO.product(
            'addr', False, (input, vec1, vec2, *args), beta, alpha)
    _t(input, "addr")
    if len(vec1.shape) != 1 or len(vec2.shape) != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {len(vec1.shape)}-D"
                           if len(vec1.shape) != 1 else
                           f"addr: Expected 1-D argument vec2, but got {len(vec2.shape)}-D")
    linalg_ns.no_grad_out((input, vec1, vec2), out)
    return write_out(_update("addr", input, LA.outer(vec1, vec2), beta, alpha), out, "addr")


def addr_(input, vec1, vec2, *args, beta=1, alpha=1):
    if args:
        input, vec1, vec2, beta, alpha = DO.product(
            'addr', True, (input, vec1, vec2, *args), beta, alpha)
    C.check_writable(input, "addr_")  # (refuse before computing)
    return input.copy_(addr(input, vec1, vec2, beta=beta, alpha=alpha))


def _check_batches(name, b1, b2):
    if len(b1.shape) != 3 or len(b2.shape) != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if len(b1.shape) != 3 else
                           "batch2 must be a 3D tensor")
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1.shape[0]}, {b1.shape[2]}] but got: [{b2.shape[0]}, "
                           f"{b2.shape[1]}].")


def addbmm(input, batch1, batch2, *args, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum_i batch1[i] @ batch2[i]."""
    if args:
        input, batch1, batch2, beta, alpha = DO.product(
            'addbmm', False, (input, batch1, batch2, *args), beta, alpha)
    _t(input, "addbmm")
    _check_batches("addbmm", batch1, batch2)
    linalg_ns.no_grad_out((input, batch1, batch2), out)
    prod = O.reduce("sum", O.bmm(batch1, batch2), 0) if batch1.shape[0] else \
        O.zeros((batch1.shape[1], batch2.shape[2]), batch1.dtype, batch1.device)
    return write_out(_update("addbmm", input, prod, beta, alpha), out, "addbmm")


def addbmm_(input, batch1, batch2, *args, beta=1, alpha=1):
    if args:
        input, batch1, batch2, beta, alpha = DO.product(
            'addbmm', True, (input, batch1, batch2, *args), beta, alpha)
    C.check_writable(input, "addbmm_")  # (refuse before computing)
    return input.copy_(addbmm(input, batch1, batch2, beta=beta, alpha=alpha))


def baddbmm(input, batch1, batch2, *args, beta=1, alpha=1, out=None):
    """beta * input + alpha * (batch1 @ batch2), batch by batch."""
    if args:
        input, batch1, batch2, beta, alpha = DO.product(
            'baddbmm', False, (input, batch1, batch2, *args), beta, alpha)
    _t(input, "baddbmm")
    _check_batches("baddbmm", batch1, batch2)
    linalg_ns.no_grad_out((input, batch1, batch2), out)
    return write_out(_update("baddbmm", input, O.bmm(batch1, batch2), beta, alpha), out,
                     "baddbmm")


def baddbmm_(input, batch1, batch2, *args, beta=1, alpha=1):
    if args:
        input, batch1, batch2, beta, alpha = DO.product(
            'baddbmm', True, (input, batch1, batch2, *args), beta, alpha)
    C.check_writable(input, "baddbmm_")  # (refuse before computing)
    return input.copy_(baddbmm(input, batch1, batch2, beta=beta, alpha=alpha))


def addmm_(input, mat1, mat2, *args, beta=1, alpha=1):
    """In place: input = beta * input + alpha * (mat1 @ mat2)."""
    if args:
        input, mat1, mat2, beta, alpha = DO.product(
            'addmm', True, (input, mat1, mat2, *args), beta, alpha)
    C.check_writable(input, "addmm_")  # (refuse before computing)
    return input.copy_(LA.addmm(input, mat1, mat2, beta, alpha))


# ---- norms (deprecated in PyTorch, kept for TorchScript) -------------------------------------
def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    """``linalg.vector_norm(input, 2, dim, keepdim)``."""
    return linalg_ns.vector_norm(input, 2, dim, keepdim, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """``linalg.matrix_norm(input, 'nuc', dim, keepdim)``: ``nuclear_norm(A, keepdim)`` or
    ``nuclear_norm(A, dim, keepdim)``."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if dim is None:
        if len(input.shape) != 2:
            raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with "
                               f"{len(input.shape)} dimension{'' if len(input.shape) == 1 else 's'}"
                               " instead.")
        dim = (-2, -1)
    return linalg_ns.matrix_norm(input, "nuc", tuple(dim), keepdim, out=out)


def _method_lu(self, pivot=True, get_infos=False):
    return lu(self, pivot, get_infos)


# Tensor methods PyTorch removed in 1.9 and keeps as errors pointing to torch.linalg
_REMOVED = "This function was deprecated since version 1.9 and is now removed. "
_REMOVED_METHODS = {
    "lstsq": _REMOVED + (
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` "
        "has reversed arguments and does not return the QR decomposition in the returned tuple "
        "(although it returns other information about the problem).\n\nTo get the QR "
        "decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in "
        "`torch.lstsq` stored the residuals of the solution in the last m - n columns of the "
        "returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
        "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, "
        "_ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = "
        "torch.linalg.lstsq(A, B).solution"),
    "solve": _REMOVED + (
        "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has "
        "its arguments reversed and does not return the LU factorization.\n\nTo get the LU "
        "factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
        "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = "
        "torch.linalg.solve(A, B)"),
    "eig": _REMOVED + (
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
        "real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced "
        "with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
        "eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
        "torch.linalg.eig(A)"),
    "symeig": _REMOVED + (
        "The default behavior has changed from using the upper triangular portion of the matrix "
        "by default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, "
        "upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper "
        "else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced "
        "with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"),
}


def _removed(name):
    def method(self, *args, **kwargs):
        raise RuntimeError(_REMOVED_METHODS[name])
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "Removed in PyTorch 1.9 (raises, as PyTorch does): see torch.linalg."
    return method


TENSOR_METHODS: dict = {
    "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse,
    "pinverse": pinverse, "cholesky": cholesky, "cholesky_inverse": cholesky_inverse,
    "cholesky_solve": cholesky_solve, "qr": qr, "svd": svd, "lu": _method_lu,
    "lu_solve": lu_solve, "triangular_solve": triangular_solve, "matrix_exp": matrix_exp,
    "matrix_power": matrix_power, "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr,
    "cross": cross, "inner": inner, "vdot": vdot, "ger": ger, "addmv": addmv, "addmv_": addmv_,
    "addr": addr, "addr_": addr_, "addbmm": addbmm, "addbmm_": addbmm_, "baddbmm": baddbmm,
    "baddbmm_": baddbmm_, "addmm_": addmm_,
    **{name: _removed(name) for name in _REMOVED_METHODS},
}
