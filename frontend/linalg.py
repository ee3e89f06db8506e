"""``ember.linalg``: PyTorch's ``torch.linalg`` namespace.

The decompositions and solvers run on LAPACK kernels (the cpu backend uses the LAPACK of
scipy-openblas32); their definitions, checks and gradient formulas are in
``ember.dispatcher.defs.linalg``. Results are PyTorch's named tuples (``Q, R``,
``U, S, Vh``, ``eigenvalues, eigenvectors``, ...). ``eig`` and ``eigvals`` return complex
tensors in PyTorch: ember has no complex dtype yet, so they raise NotImplementedError.

>>> import ember
>>> A = ember.tensor([[4., 1.], [1., 3.]])
>>> ember.linalg.solve(A, ember.tensor([1., 2.])).tolist()  # doctest: +ELLIPSIS
[0.0909..., 0.6363...]
"""
from __future__ import annotations

import math

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.defs import index as IX
from ember.dispatcher.defs import linalg as LA
from ember.dispatcher.defs import reduction as RD
from ember.dispatcher.defs.linalg import LinAlgError
from ember.dispatcher.grad_mode import MODE
from .return_types import return_type

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "inv_ex", "solve",
           "solve_ex", "solve_triangular", "det", "slogdet", "cholesky", "cholesky_ex", "qr",
           "svd", "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "lstsq", "matrix_exp",
           "matrix_power", "matrix_rank", "pinv", "cond", "cross", "diagonal", "matmul",
           "multi_dot", "vecdot", "vander", "householder_product", "lu", "lu_factor",
           "lu_factor_ex", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve", "tensorinv",
           "tensorsolve"]

E = O.elementwise

# PyTorch's torch.return_types, by name and fields
linalg_qr = return_type("linalg_qr", ["Q", "R"])
linalg_svd = return_type("linalg_svd", ["U", "S", "Vh"])
linalg_eigh = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_slogdet = return_type("linalg_slogdet", ["sign", "logabsdet"])
linalg_lstsq = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_lu_factor = return_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = return_type("linalg_lu", ["P", "L", "U"])
linalg_inv_ex = return_type("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = return_type("linalg_solve_ex", ["result", "info"])
linalg_cholesky_ex = return_type("linalg_cholesky_ex", ["L", "info"])
linalg_ldl_factor = return_type("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


# ---- out= ------------------------------------------------------------------------------------
def no_grad_out(args, out):
    """PyTorch's error for ``out=`` with an input that requires grad."""
    if out is not None and MODE.grad and O.requires_grad(args):
        raise RuntimeError("linalg: functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def no_gradient_yet(name, *tensors):
    """The LU, LDL and Householder functions have no gradient formula yet: an input that
    requires grad raises rather than giving results that silently drop the gradient."""
    if MODE.grad and O.requires_grad(tensors):
        raise NotImplementedError(f"{name}: differentiating through it is not implemented in "
                                  "ember yet (its inputs require grad); compute it under "
                                  "ember.no_grad() or use a differentiable function (solve, "
                                  "inv, det, qr, cholesky).")


def write_out(res, out, op="linalg"):
    """Copy ``res`` (a tensor or tuple of them) into ``out`` (same structure), PyTorch's
    rules: the dtypes must match, shapes are resized."""
    if out is None:
        return res
    if isinstance(res, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(res):
            raise TypeError(f"{op}(): argument 'out' must be a tuple of {len(res)} Tensors")
        outs = [write_out(r, o, op) for r, o in zip(res, out)]
        return type(res)(*outs) if hasattr(res, "_fields") else tuple(outs)
    if not isinstance(out, TensorBase):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.dtype is not res.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_pt(res.dtype)}, but got "
                           f"{_pt(out.dtype)} instead")
    if out.device != res.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {res.device} and {out.device}!")
    return O.copy_(O._resize_out(op, out, res.shape), res)


def _pt(dt):
    """dtype in PyTorch's lower-case spelling (``float``, ``double``)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int"}.get(dt.name,
                                                                                  dt.name)


def _tensor(x, op, arg):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


# ---- norms -----------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all elements by default) as a vector.

    >>> ember.linalg.vector_norm(ember.tensor([3., 4.])).item()
    5.0
    """
    _tensor(x, "linalg.vector_norm", "input")
    if isinstance(ord, str):
        raise TypeError("linalg.vector_norm(): argument 'ord' must be Number, not str")
    if dtype is not None:
        x = O.to(x, None, D.to_dtype(dtype))
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    no_grad_out((x,), out)
    return write_out(RD.norm(x, float(ord), dim, keepdim), out, "linalg.vector_norm")


def _two_dims(A, dim, name):
    if not isinstance(dim, (list, tuple)) or len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (C.normalize_dim(d, len(A.shape), name) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Frobenius, nuclear, 1, -1, 2, -2, inf or -inf norm of the matrices in ``dim``.

    >>> ember.linalg.matrix_norm(ember.eye(3)).item()  # doctest: +ELLIPSIS
    1.732...
    """
    name = "linalg.matrix_norm"
    _tensor(A, name, "input")
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = O.to(A, None, D.to_dtype(dtype))
    LA.check_float(name, A)
    d0, d1 = _two_dims(A, dim, name)
    no_grad_out((A,), out)
    if ord == "fro":
        res = RD.norm(A, 2.0, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        if A.dtype in (D.float16, D.bfloat16):
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got "
                               f"{D.torch_name(A.dtype)}")
        moved = V.movedim(A, (d0, d1), (-2, -1))
        S = LA.svdvals(moved)
        if ord == "nuc":
            res = O.reduce("sum", S, -1)
        elif S.shape[-1] == 0:
            raise RuntimeError(f"{name}: the operation does not have an identity")
        else:
            res = O.reduce("max" if ord == 2 else "min", S, -1)
        if keepdim:
            for d in sorted((d0, d1)):
                res = V.unsqueeze(res, d)
    elif ord in (1, -1, math.inf, -math.inf):
        red, acc = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = O.reduce("sum", E("abs", A), red, True)
        res = O.reduce("max" if ord > 0 else "min", sums, acc, True)
        if not keepdim:
            res = V.squeeze(V.squeeze(res, max(d0, d1)), min(d0, d1))
    else:
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    return write_out(res, out, name)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """``vector_norm`` or ``matrix_norm``, as ``ord`` and ``dim`` say (PyTorch's rules)."""
    name = "linalg.norm"
    _tensor(A, name, "input")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim,
                               dtype=dtype, out=out)
        if len(dim) != 1:
            raise RuntimeError(f"{name}: If dim is specified, it must be of length 1 or 2. Got "
                               f"{list(dim)}")
        if isinstance(ord, str):
            raise RuntimeError(f"{name}: If dim is specified, it mut be of length 1 or 2. Got "
                               f"{list(dim)}")
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if len(A.shape) not in (1, 2):
        raise RuntimeError(f"{name}: If dim is not specified but ord is, the input must be 1D "
                           f"or 2D. Got {len(A.shape)}D.")
    if len(A.shape) == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)


def cond(A, p=None, *, out=None):
    """The condition number of ``A`` in the ``p``-norm (singular values for None, 2, -2)."""
    name = "linalg.cond"
    _tensor(A, name, "input")
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    LA.check_float(name, A, "linalg_svd_cpu")
    no_grad_out((A,), out)
    if p is None or p in (2, -2):
        S = LA.svdvals(A)
        if S.shape[-1] == 0:
            res = O.zeros(tuple(A.shape[:-2]), A.dtype, A.device)
        else:
            big, small = V.select(S, -1, 0), V.select(S, -1, S.shape[-1] - 1)
            res = E("div", big, small) if p != -2 else E("div", small, big)
        return write_out(res, out, name)
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if C.numel(A.shape) == 0:
        return write_out(O.zeros(tuple(A.shape[:-2]), A.dtype, A.device), out, name)
    Ainv, info = inv_ex(A)
    res = E("mul", matrix_norm(A, p), matrix_norm(Ainv, p))
    # singular matrices: inf (PyTorch)
    res = O.where(E("gt", info, 0), O.full((), math.inf, A.dtype, A.device), res)
    return write_out(res, out, name)


# ---- inverse, determinant, solve -------------------------------------------------------------
def inv(A, *, out=None):
    """A^{-1}; raises LinAlgError for a singular matrix.

    >>> ember.linalg.inv(ember.tensor([[2., 0.], [0., 4.]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    no_grad_out((A,), out)
    return write_out(LA.inv(_tensor(A, "linalg.inv", "A")), out, "linalg.inv")


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info > 0 marks a singular matrix (its inverse is then not valid)."""
    name = "linalg.inv_ex"
    LA.check_matrix("linalg.inv", _tensor(A, name, "A"), square=True)
    no_grad_out((A,), out)
    _, _, info = LA.lu_factor_ex(A, name="linalg.inv")
    if check_errors:
        LA.check_info(name, info, A.shape[:-2], LA.singular_inv_message)
    res = linalg_inv_ex(LA.inv(A, check_errors=False), info)
    return write_out(res, out, name)


def det(A, *, out=None):
    """The determinant of (..., n, n).

    >>> round(ember.linalg.det(ember.tensor([[1., 2.], [3., 4.]])).item(), 4)
    -2.0
    """
    no_grad_out((A,), out)
    return write_out(LA.det(_tensor(A, "linalg.det", "A")), out, "linalg.det")


def slogdet(A, *, out=None):
    """(sign, logabsdet) of the determinant (sign 0 and logabsdet -inf when singular)."""
    no_grad_out((A,), out)
    res = linalg_slogdet(*LA.slogdet(_tensor(A, "linalg.slogdet", "A")))
    return write_out(res, out, "linalg.slogdet")


def solve(A, B, *, left=True, out=None):
    """X with A X = B (``left``) or X A = B; raises LinAlgError for a singular A."""
    no_grad_out((A, B), out)
    return write_out(LA.solve(_tensor(A, "linalg.solve", "A"), B, left), out, "linalg.solve")


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info) of ``solve`` without raising for a singular A (unless check_errors)."""
    name = "linalg.solve_ex"
    LA.check_matrix("linalg.solve", _tensor(A, name, "A"), square=True, low="lu_cpu")
    no_grad_out((A, B), out)
    _, _, info = LA.lu_factor_ex(A, name="linalg.solve")
    if check_errors:
        LA.check_info("torch.linalg.solve_ex", info, A.shape[:-2], LA.solve_singular_message)
    res = linalg_solve_ex(LA.solve(A, B, left, check_errors=False), info)
    return write_out(res, out, name)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (``left``) or X A = B for triangular A (only the ``upper`` or lower
    triangle is read)."""
    name = "linalg.solve_triangular"
    _tensor(A, name, "A")
    _tensor(B, name, "B")
    no_grad_out((A, B), out)
    return write_out(LA.solve_triangular(A, B, bool(upper), bool(left), bool(unitriangular)),
                     out, name)


# ---- factorizations --------------------------------------------------------------------------
def cholesky(A, *, upper=False, out=None):
    """L with A = L L^T (or U with A = U^T U); LinAlgError when A is not positive-definite."""
    no_grad_out((A,), out)
    return write_out(LA.cholesky(_tensor(A, "linalg.cholesky", "A"), bool(upper)), out,
                     "linalg.cholesky")


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info > 0 is the order of the leading minor that is not positive-definite."""
    name = "linalg.cholesky_ex"
    _tensor(A, name, "A")
    no_grad_out((A,), out)
    L, info = LA.cholesky_ex(A, bool(upper), "linalg.cholesky")
    if check_errors:
        LA.check_info(name, info, A.shape[:-2], LA.not_pd_message)
    if MODE.grad and A.requires_grad:
        L = LA.cholesky(A, bool(upper), False)
    return write_out(linalg_cholesky_ex(L, info), out, name)


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R; ``mode`` reduced (default), complete, or r (R only, Q empty).

    >>> Q, R = ember.linalg.qr(ember.tensor([[3., 1.], [4., 2.]]))
    >>> [round(v, 4) for v in R[0].tolist()]
    [-5.0, -2.2]
    """
    no_grad_out((A,), out)
    res = linalg_qr(*LA.qr(_tensor(A, "linalg.qr", "A"), mode))
    return write_out(res, out, "linalg.qr")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending; singular vectors are unique only up
    to sign."""
    no_grad_out((A,), out)
    res = linalg_svd(*LA.svd(_tensor(A, "linalg.svd", "A"), bool(full_matrices), driver))
    return write_out(res, out, "linalg.svd")


def svdvals(A, *, driver=None, out=None):
    """The singular values of A, descending."""
    _tensor(A, "linalg.svdvals", "A")
    if driver is not None and A.device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    no_grad_out((A,), out)
    return write_out(LA.svdvals(A), out, "linalg.svdvals")


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors) of symmetric A (only the ``UPLO`` triangle is
    read); eigenvectors are unique only up to sign."""
    no_grad_out((A,), out)
    res = linalg_eigh(*LA.eigh(_tensor(A, "linalg.eigh", "A"), UPLO))
    return write_out(res, out, "linalg.eigh")


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of symmetric A, ascending."""
    no_grad_out((A,), out)
    return write_out(LA.eigvalsh(_tensor(A, "linalg.eigvalsh", "A"), UPLO), out,
                     "linalg.eigvalsh")


def _no_complex(name):
    raise NotImplementedError(f"linalg.{name}: the eigenvalues and eigenvectors of a general "
                              "(non-symmetric) matrix are complex, and ember has no complex "
                              "dtype yet; use linalg.eigh / linalg.eigvalsh for symmetric "
                              "matrices.")


def eig(A, *, out=None):
    """Not available: PyTorch returns complex tensors, and ember has no complex dtype yet."""
    _no_complex("eig")


def eigvals(A, *, out=None):
    """Not available: PyTorch returns complex tensors, and ember has no complex dtype yet."""
    _no_complex("eigvals")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): LU with partial pivoting (LAPACK's getrf); pivots are 1-based."""
    name = "linalg.lu_factor_ex"
    no_gradient_yet(name, A)
    _tensor(A, name, "A")
    no_grad_out((A,), out)
    LU, piv, info = LA.lu_factor_ex(A, pivot, "torch.linalg.lu_factor_ex")
    if check_errors:
        LA.check_info("torch.linalg.lu_factor_ex", info, A.shape[:-2], lu_zero_message)
    return write_out(linalg_lu_factor_ex(LU, piv, info), out, name)


def lu_zero_message(i):
    return (f"U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. "
            "If you still want to perform the factorization, consider calling linalg.lu(A, "
            "pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of A; raises for a singular A (use lu_factor_ex to get ``info``)."""
    name = "linalg.lu_factor"
    no_gradient_yet(name, A)
    _tensor(A, name, "A")
    no_grad_out((A,), out)
    LU, piv, info = LA.lu_factor_ex(A, pivot, "torch.linalg.lu_factor")
    for i, v in enumerate(LA.host_ints(info)):
        if v > 0:
            where = f"(Batch element {i}): " if len(A.shape) > 2 else ""
            raise RuntimeError(f"torch.linalg.lu_factor: {where}{lu_zero_message(v)}")
    return write_out(linalg_lu_factor(LU, piv), out, name)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U."""
    name = "linalg.lu"
    no_gradient_yet(name, A)
    _tensor(A, name, "A")
    no_grad_out((A,), out)
    LU, piv, _ = LA.lu_factor_ex(A, pivot, "linalg.lu")
    return write_out(linalg_lu(*LA.lu_unpack(LU, piv)), out, name)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (``left``; A^T with ``adjoint``) or X A = B, from lu_factor's result."""
    name = "linalg.lu_solve"
    no_gradient_yet(name, LU, B)
    LA.check_matrix(name, _tensor(LU, name, "LU"), square=True, what="LU")
    if len(B.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    LA.check_same_dtype(name, LU, B, "LU", "B")
    if pivots.dtype is not D.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type int32. Got "
                           f"{D.torch_name(pivots.dtype)}")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    no_grad_out((LU, B), out)
    if left:
        res = LA.lu_solve_raw(LU, pivots, B, adjoint)
    else:   # X A = B  <=>  A^T X^T = B^T
        res = LA.mT(LA.lu_solve_raw(LU, pivots, LA.mT(B), not adjoint))
    return write_out(res, out, name)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): Bunch-Kaufman LDL^T of symmetric A (LAPACK's sytrf)."""
    name = "linalg.ldl_factor_ex"
    no_gradient_yet(name, A)
    _tensor(A, name, "A")
    no_grad_out((A,), out)
    LD, piv, info = LA.ldl_factor_ex(A, hermitian)
    if check_errors:
        LA.check_info("torch.linalg.ldl_factor_ex", info, A.shape[:-2], _ldl_singular)
    return write_out(linalg_ldl_factor_ex(LD, piv, info), out, name)


def _ldl_singular(i):
    return (f"The factorization could not be completed because the block diagonal matrix D "
            f"is singular (D[{i},{i}] is zero).")


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) of symmetric A. A singular D (info > 0) raises LinAlgError (PyTorch
    raises an internal assertion there)."""
    name = "linalg.ldl_factor"
    no_gradient_yet(name, A)
    _tensor(A, name, "A")
    no_grad_out((A,), out)
    LD, piv, info = LA.ldl_factor_ex(A, hermitian, "torch.linalg.ldl_factor")
    LA.check_info("torch.linalg.ldl_factor", info, A.shape[:-2], _ldl_singular)
    return write_out(linalg_ldl_factor(LD, piv), out, name)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ldl_factor's (LD, pivots)."""
    name = "linalg.ldl_solve"
    no_gradient_yet(name, LD, B)
    no_grad_out((LD, B), out)
    return write_out(LA.ldl_solve(_tensor(LD, name, "LD"), pivots, B, hermitian), out, name)


def householder_product(A, tau, *, out=None):
    """The first n columns of the product of Householder reflectors (LAPACK's orgqr)."""
    name = "linalg.householder_product"
    no_gradient_yet(name, A, tau)
    no_grad_out((A, tau), out)
    return write_out(LA.householder_product(_tensor(A, name, "input"), tau), out, name)


# ---- least squares, pseudo-inverse, rank -----------------------------------------------------
def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values) of min ||A X - B|| (PyTorch's CPU
    drivers gelsy (default), gels, gelsd, gelss; empty tensors where a driver gives
    nothing)."""
    name = "torch.linalg.lstsq"
    _tensor(A, "linalg.lstsq", "self")
    _tensor(B, "linalg.lstsq", "b")
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if not A.dtype.is_floating_point or A.dtype in (D.float16, D.bfloat16):
        raise RuntimeError("This function doesn't handle types other than float and double")
    LA.check_same_dtype(name, A, B, "A", "B")
    vector = len(B.shape) == len(A.shape) - 1
    Bm = V.unsqueeze(B, -1) if vector else B
    if len(Bm.shape) < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    if driver is not None and driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           "gelss)")
    X, res, rank, sv = LA.lstsq_all(A, Bm, rcond, driver, name)
    if MODE.grad and O.requires_grad((A, B)):
        X = LA.lstsq_solution(A, Bm, rcond, driver)
    if vector:   # (PyTorch keeps the residuals' trailing dim of size 1)
        X = V.squeeze(X, -1)
    return linalg_lstsq(X, res, rank, sv)


def _tolerance(atol, rtol):
    for t in (atol, rtol):
        if t is not None and not isinstance(t, (TensorBase, int, float)):
            raise TypeError(f"linalg: atol and rtol must be numbers or tensors, got "
                            f"{type(t).__name__}")
    return atol, rtol


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The Moore-Penrose pseudo-inverse (singular values below max(atol, rtol * max S) are
    treated as zero; ``rcond`` is the older name of ``rtol``)."""
    name = "linalg.pinv"
    _tensor(A, name, "input")
    if len(A.shape) < 2 or not A.dtype.is_floating_point or A.dtype in (D.float16,
                                                                        D.bfloat16):
        raise RuntimeError(f"{name}({D.torch_name(A.dtype)}{{{list(A.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or "
                           "cdouble types")
    if rcond is not None:
        rtol = rcond
    atol, rtol = _tolerance(atol, rtol)
    no_grad_out((A,), out)
    return write_out(LA.pinv(A, atol, rtol, bool(hermitian)), out, name)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The number of singular values (|eigenvalues| with ``hermitian``) above
    max(atol, rtol * the largest); ``tol`` is the older name of ``atol``."""
    _tensor(A, "linalg.matrix_rank", "input")
    if len(A.shape) < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    if not A.dtype.is_floating_point or A.dtype in (D.float16, D.bfloat16):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol = tol
    atol, rtol = _tolerance(atol, rtol)
    m, n = A.shape[-2:]
    if min(m, n) == 0:
        return write_out(O.zeros(tuple(A.shape[:-2]), D.int64, A.device), out,
                         "linalg.matrix_rank")
    S = E("abs", LA.eigvalsh(A)) if hermitian else LA.svdvals(A)
    big = O.reduce("max", S, -1, True)
    keep = E("gt", S, LA.rank_tolerance(big, atol, rtol, m, n, A.dtype))
    res = O.reduce("sum", O.cast(keep, D.int64), -1)
    return write_out(res, out, "linalg.matrix_rank")


# ---- matrix functions ------------------------------------------------------------------------
def matrix_exp(A):
    """exp(A) of square matrices (scaling and squaring with a Padé approximant).

    >>> ember.linalg.matrix_exp(ember.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    name = "linalg.matrix_exp"
    _tensor(A, name, "A")
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.torch_name(A.dtype)}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return LA.matrix_exp(A)


def matrix_power(A, n, *, out=None):
    """A^n for an integer n (n < 0: the inverse's power; n = 0: the identity).

    >>> ember.linalg.matrix_power(ember.tensor([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
    name = "linalg.matrix_power"
    _tensor(A, name, "A")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name}(): argument 'n' must be int, not {type(n).__name__}")
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    no_grad_out((A,), out)
    if n == 0:
        eye = LA.eye_like(A)
        res = O.clone(V.expand(eye, tuple(A.shape)))
        return write_out(res, out, name)
    base = LA.inv(A) if n < 0 else A
    k, res = abs(n), None
    while k:
        if k & 1:
            res = base if res is None else LA.matmul(res, base)
        k >>= 1
        if k:
            base = LA.matmul(base, base)
    return write_out(res, out, name)


# ---- products and vector functions -----------------------------------------------------------
def matmul(input, other, *, out=None):
    """``input @ other`` (PyTorch's matmul broadcasting)."""
    no_grad_out((input, other), out)
    return write_out(LA.matmul(_tensor(input, "linalg.matmul", "input"), other), out,
                     "linalg.matmul")


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first may be 1-D, and the last)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    if len(first.shape) not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{len(first.shape)}D")
    if len(last.shape) not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{len(last.shape)}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if len(t.shape) != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {len(t.shape)}D")
    for t in tensors[1:]:
        if t.dtype is not first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {D.torch_name(first.dtype)} and tensor "
                               f"{tensors.index(t)} {D.torch_name(t.dtype)}")
    mats = [V.unsqueeze(first, 0) if len(first.shape) == 1 else first] + tensors[1:-1] + \
        [V.unsqueeze(last, 1) if len(last.shape) == 1 else last]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    res = mats[0]
    for m in mats[1:]:
        res = LA.mm(res, m)
    if len(first.shape) == 1:
        res = V.squeeze(res, 0)
    if len(last.shape) == 1:
        res = V.squeeze(res, -1)
    no_grad_out(tuple(tensors), out)
    return write_out(res, out, "linalg.multi_dot")


def vecdot(x, y, *, dim=-1, out=None):
    """sum(x * y, dim) (broadcasting)."""
    _tensor(x, "linalg.vecdot", "x")
    _tensor(y, "linalg.vecdot", "y")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {D.torch_name(x.dtype)} and y of type "
                           f"{D.torch_name(y.dtype)} instead.")
    no_grad_out((x, y), out)
    return write_out(O.reduce("sum", E("mul", x, y), dim), out, "linalg.vecdot")


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along ``dim`` (broadcasting)."""
    name = "linalg.cross"
    _tensor(input, name, "input")
    _tensor(other, name, "other")
    if len(input.shape) != len(other.shape):
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    nd = len(input.shape)
    d = C.normalize_dim(dim, nd, name)
    shape = C.broadcast_shapes(input.shape, other.shape)
    a, b = V.expand(input, shape), V.expand(other, shape)
    if a.shape[d] != 3 or input.shape[d - nd + len(input.shape)] != 3 or \
            other.shape[d - nd + len(other.shape)] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[dim]} and {other.shape[dim]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{name}: expected input and other to have the same dtype, but got "
                           f"{D.torch_name(input.dtype)} and {D.torch_name(other.dtype)}")

    def comp(t, i):
        return V.select(t, d, i)
    parts = [E("sub", E("mul", comp(a, (i + 1) % 3), comp(b, (i + 2) % 3)),
                 E("mul", comp(a, (i + 2) % 3), comp(b, (i + 1) % 3))) for i in range(3)]
    no_grad_out((input, other), out)
    return write_out(IX.stack(parts, d), out, name)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of the matrices of A (a view)."""
    return V.diagonal(_tensor(A, "linalg.diagonal", "A"), offset, dim1, dim2)


def vander(x, *, N=None):
    """The Vandermonde matrix of x (..., n): (..., n, N) with increasing powers."""
    name = "linalg.vander"
    _tensor(x, name, "x")
    if len(x.shape) == 0:
        raise RuntimeError(f"{name}: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    dt = D.promote_types(x.dtype, D.int64)
    xs = O.to(x, None, dt)
    ones = O.full(tuple(x.shape) + (1,), 1, dt, x.device)
    rep = V.expand(V.unsqueeze(xs, -1), tuple(x.shape) + (n - 1,))
    return IX.cat([ones, O.scan("cumprod", rep, -1)], -1)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A for ``tensordot(A, X, ind)``: shape A.shape[ind:] + A.shape[:ind]."""
    name = "linalg.tensorinv"
    _tensor(A, name, "A")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    lead, rest = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p, q = C.numel(lead), C.numel(rest)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    no_grad_out((A,), out)
    res = V.reshape(LA.inv(V.reshape(A, (p, q))), rest + lead)
    return write_out(res, out, name)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with ``tensordot(A, X, X.ndim) == B``."""
    name = "linalg.tensorsolve"
    _tensor(A, name, "A")
    _tensor(B, name, "B")
    if dims is not None:
        nd = len(A.shape)
        src = [C.normalize_dim(d, nd, name) for d in dims]
        A = V.movedim(A, tuple(src), tuple(range(nd - len(src), nd)))
    rest = tuple(A.shape[len(B.shape):])
    p, q = C.numel(B.shape), C.numel(rest)
    if C.numel(A.shape) != p * q or p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim"
                           f":]) == prod(self.shape[:other.ndim]), but got {q} != {p}")
    no_grad_out((A, B), out)
    X = LA.solve(V.reshape(A, (p, q)), V.reshape(B, (p,)))
    return write_out(V.reshape(X, rest), out, name)
