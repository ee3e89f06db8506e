"""torch.linalg's functions on the LAPACK kernels of :mod:`.lapack`: determinants, inverses
and solvers, Cholesky, QR and Householder products, pseudo-inverse, least squares, the
matrix exponential and LDL^T (composites and gradient formulas). Re-exported by
:mod:`.linalg`."""
from __future__ import annotations

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, gradient
from ._products import matmul
from .lapack import (_LOW, _empty, _flat, _launch, _packed_raw, _packed_views, _perm_sign,
                     _unflat, check_float, check_info, check_matrix, check_same_dtype, diag_embed,
                     eigh_raw, eye_like, host_ints, lu_factor_ex, lu_solve_raw, mT, svd_raw, tri)

__all__ = []

E = O.elementwise

# ---- det / slogdet -----------------------------------------------------------------------------
def _det_lu(A):
    LU, piv, _ = lu_factor_ex(A, name="linalg.det")
    d = V.diagonal(LU, 0, -2, -1)
    return E("mul", O.reduce("prod", d, -1), _perm_sign(piv, A.dtype))


@composite("linalg_det")
@O.recorded("linalg_det")
def det(A):
    """det(A) of (..., n, n) from its LU factors."""
    check_matrix("linalg.det", A, square=True, low="lu_cpu")
    return _det_lu(A)


@gradient("linalg_det")
def _(g, A):
    """adj(A)^T = det(U) det(V) U diag(prod_{j != i} s_j) V^T from A's SVD: right for
    singular matrices too (PyTorch's det backward)."""
    U, S, Vh = svd_raw(A, False)
    k = S.shape[-1]
    eye_b = E("ne", eye_like(A, k), 0)
    others = O.reduce("prod", O.where(eye_b, O.full((), 1, S.dtype, S.device),
                                      V.unsqueeze(S, -2)), -1)
    sign = E("mul", _det_lu(U), _det_lu(Vh))
    adjT = matmul(E("mul", U, V.unsqueeze(others, -2)), Vh)
    scale = V.unsqueeze(V.unsqueeze(E("mul", g, sign), -1), -1)
    return (E("mul", adjT, scale),)


def _slogdet_raw(A, name):
    LU, piv, _ = lu_factor_ex(A, name=name)
    d = V.diagonal(LU, 0, -2, -1)
    sign = E("mul", O.reduce("prod", E("sign", d), -1), _perm_sign(piv, A.dtype))
    logabs = O.reduce("sum", E("log", E("abs", d)), -1)
    return sign, logabs


@composite("linalg_slogdet_packed")
@O.recorded("linalg_slogdet_packed")
def _slogdet_packed(A, name="linalg.slogdet"):
    sign, logabs = _slogdet_raw(A, name)
    P = _empty(tuple(A.shape[:-2]) + (2,), A.dtype, A.device)
    O.copy_(V.select(P, -1, 0), sign)
    O.copy_(V.select(P, -1, 1), logabs)
    return P


@gradient("linalg_slogdet_packed")
def _(g, A):
    """d logabsdet / dA = A^{-T} (the sign has no gradient)."""
    gl = V.select(g, -1, 1)
    return (E("mul", mT(inv(A, check_errors=False)), V.unsqueeze(V.unsqueeze(gl, -1), -1)),)


def slogdet(A, name="linalg.slogdet"):
    """(sign, logabsdet) of (..., n, n)."""
    check_matrix(name, A, square=True)
    P = _slogdet_packed(A, name)
    return V.select(P, -1, 0), V.select(P, -1, 1)


# ---- inverse and solve -------------------------------------------------------------------------
def singular_inv_message(info):
    return (f"The diagonal element {info} is zero, the inversion could not be completed "
            "because the input matrix is singular.")


@composite("linalg_inv")
@O.recorded("linalg_inv")
def inv(A, check_errors=True, name="linalg.inv"):
    """A^{-1} of (..., n, n): LU factors, then getrs against the identity."""
    check_matrix(name, A, square=True)
    LU, piv, info = lu_factor_ex(A, name=name)
    if check_errors:
        check_info(name, info, A.shape[:-2], singular_inv_message)
    return lu_solve_raw(LU, piv, eye_like(A))


@gradient("linalg_inv")
def _(g, result):
    """-A^{-T} g A^{-T}."""
    return (E("neg", matmul(mT(result), matmul(g, mT(result)))),)


def solve_singular_message(info):
    return "The solver failed because the input matrix is singular."


@composite("linalg_solve")
@O.recorded("linalg_solve")
def solve_matrix(A, B, check_errors=True, name="torch.linalg.solve"):
    """X = A^{-1} B for matrices with equal batch shapes (see ``solve``)."""
    LU, piv, info = lu_factor_ex(A, name=name)
    if check_errors:
        check_info(name, info, A.shape[:-2], solve_singular_message)
    return lu_solve_raw(LU, piv, B)


@gradient("linalg_solve")
def _(g, A, B, result):
    gB = solve_matrix(mT(A), g, False)
    gA = E("neg", matmul(gB, mT(result))) if A.requires_grad else None
    return gA, gB if B.requires_grad else None


def solve(A, B, left=True, check_errors=True, name="linalg.solve"):
    """X with A X = B (``left``) or X A = B; B may be a vector or batch of vectors."""
    check_matrix(name, A, square=True, low="lu_cpu")
    if not isinstance(B, C.TensorBase):
        raise TypeError(f"{name}(): argument 'B' must be Tensor, not {type(B).__name__}")
    check_same_dtype(name, A, B)
    # PyTorch's vector case: B (n,) or a batch of vectors (*, n) with A (*, n, n)
    vector = len(B.shape) == 1 or (len(B.shape) == len(A.shape) - 1
                                   and B.shape == A.shape[:-1])
    Bm = V.unsqueeze(B, -1) if vector else B   # a column, for left=False too (PyTorch)
    if len(Bm.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if not left:
        Bm = mT(Bm)
    if Bm.shape[-2] != n:
        b = B.shape[-1] if vector else Bm.shape[-2]
        kk = 1 if vector else Bm.shape[-1]
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {b}x{kk})")
    batch = C.broadcast_shapes(A.shape[:-2], Bm.shape[:-2])
    Ab = V.expand(A if left else mT(A), batch + (n, n))
    Bb = V.expand(Bm, batch + tuple(Bm.shape[-2:]))
    X = solve_matrix(Ab, Bb, check_errors, "torch." + name if name == "linalg.solve" else name)
    if not left:
        X = mT(X)
    return V.squeeze(X, -1) if vector else X


# ---- triangular solve --------------------------------------------------------------------------
@composite("linalg_solve_triangular")
@O.recorded("linalg_solve_triangular")
def solve_triangular(A, B, upper, left=True, unitriangular=False):
    """X with A X = B (``left``) or X A = B, A triangular (only its ``upper`` / lower
    triangle is read); batches broadcast. Singular A gives inf/nan, as in PyTorch."""
    name = "linalg.solve_triangular"
    check_matrix(name, A, square=True, low="triangular_solve_cpu")
    if len(B.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    check_float(name, B)
    check_same_dtype(name, A, B)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    batch = C.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    Bn = C.numel(batch)
    r, c = B.shape[-2:]
    X = _empty((Bn, r, c), B.dtype, B.device)
    if Bn and r and c:
        A3 = V.reshape(V.expand(A, batch + (n, n)), (Bn, n, n))
        B3 = V.reshape(V.expand(B, batch + (r, c)), (Bn, r, c))
        _launch("linalg_trsm", (X,), (A3, B3), upper=bool(upper),
                left=bool(left), unitriangular=bool(unitriangular))
    return V.reshape(X, batch + (r, c))


@gradient("linalg_solve_triangular")
def _(g, A, B, result, upper, left=True, unitriangular=False):
    """gB = A^{-T} g (or g A^{-T}); gA = -gB X^T (or -X^T gB) on A's triangle."""
    gB = solve_triangular(mT(A), g, not upper, left, unitriangular)
    gA = None
    if A.requires_grad:
        gA = E("neg", matmul(gB, mT(result)) if left else matmul(mT(result), gB))
        gA = tri(gA, 1 if unitriangular else 0, upper=True) if upper else \
            tri(gA, -1 if unitriangular else 0)
    return gA, gB if B.requires_grad else None


# ---- Cholesky ----------------------------------------------------------------------------------
def cholesky_ex(A, upper=False, name="linalg.cholesky_ex"):
    """(L, info) of (..., n, n), LAPACK's potrf; only one triangle of A is read."""
    check_matrix(name, A, square=True, low="cholesky_cpu")
    batch, n = A.shape[:-2], A.shape[-1]
    Bn = C.numel(batch)
    L = _empty((Bn, n, n), A.dtype, A.device)
    info = O.zeros((Bn,), D.int32, A.device)
    if Bn:
        _launch("linalg_cholesky_ex", (L, info), (_flat(A),), upper=bool(upper))
    return _unflat(L, batch), V.reshape(info, batch)


def not_pd_message(info):
    return ("The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {info} is not positive-definite).")


@composite("linalg_cholesky")
@O.recorded("linalg_cholesky")
def cholesky(A, upper=False, check_errors=True, name="linalg.cholesky"):
    L, info = cholesky_ex(A, upper, name)
    if check_errors:
        check_info(name, info, A.shape[:-2], not_pd_message)
    return L


@gradient("linalg_cholesky")
def _(g, result, upper=False):
    """PyTorch's cholesky_backward: Phi(L^T gL) symmetrised, then L^{-T} . L^{-1}."""
    L = mT(result) if upper else result
    gL = mT(g) if upper else g
    gA = tri(matmul(mT(L), gL))
    gA = E("mul", E("add", gA, mT(tri(gA, -1))), 0.5)
    gA = solve_triangular(mT(L), gA, True, True)
    gA = solve_triangular(L, gA, False, False)
    return (gA,)


# ---- QR ----------------------------------------------------------------------------------------
def _qr_shapes(m, n, mode):
    k = min(m, n)
    if mode == "reduced":
        return (m, k), (k, n)
    if mode == "complete":
        return (m, m), (m, n)
    return (0, 0), (k, n)


@composite("linalg_qr_packed")
@O.recorded("linalg_qr_packed")
def _qr_packed(A, mode="reduced"):
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    qs, rs = _qr_shapes(m, n, mode)
    Bn = C.numel(batch)
    P = _empty((Bn, C.numel(qs) + C.numel(rs)), A.dtype, A.device)
    Q, R = _packed_raw(P, (qs, rs))
    if Bn:
        _launch("linalg_qr", (Q, R), (_flat(A),), compute_q=mode != "r",
                complete=mode == "complete")
    return V.reshape(P, tuple(batch) + (P.shape[-1],))


@gradient("linalg_qr_packed")
def _(g, A, result, mode="reduced"):
    """PyTorch's linalg_qr_backward (m >= n, or square leading block for m < n)."""
    m, n = A.shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    qs, rs = _qr_shapes(m, n, mode)
    Q, R = _packed_views(result, (qs, rs))
    gQ, gR = _packed_views(g, (qs, rs))

    def square_case(gQ, gR, Q, R):
        # M = R gR^T - gQ^T Q; gA = (gQ + Q copyltu(M)) R^{-T}
        M = E("sub", matmul(R, mT(gR)), matmul(mT(gQ), Q))
        low = tri(M, -1)
        sym = E("add", E("add", low, mT(low)), diag_embed(V.diagonal(M, 0, -2, -1)))
        rhs = E("add", gQ, matmul(Q, sym))
        return solve_triangular(mT(R), rhs, False, False)
    if m >= n:
        return (square_case(gQ, gR, Q, R),)
    # A = [X | Y], R = [U | V]: X = Q U square, Y = Q V
    U = V.narrow(R, -1, 0, m)
    gU, gV = V.narrow(gR, -1, 0, m), V.narrow(gR, -1, m, n - m)
    Y = V.narrow(A, -1, m, n - m)
    gX = square_case(E("add", gQ, matmul(Y, mT(gV))), gU, Q, U)
    gY = matmul(Q, gV)
    out = O.zeros(tuple(A.shape), A.dtype, A.device)
    O.copy_(V.narrow(out, -1, 0, m), gX)
    O.copy_(V.narrow(out, -1, m, n - m), gY)
    return (out,)


def qr(A, mode="reduced", name="linalg.qr"):
    """(Q, R) of (..., m, n); ``mode`` reduced, complete or r (Q empty)."""
    check_matrix(name, A, low="geqrf_cpu")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    m, n = A.shape[-2:]
    qs, rs = _qr_shapes(m, n, mode)
    P = _qr_packed(A, mode)
    Q, R = _packed_views(P, (qs, rs))
    if mode == "r":
        Q = O.zeros((0,), A.dtype, A.device)
    return Q, R


def geqrf(A):
    """(a, tau): LAPACK's packed QR (Householder vectors below the diagonal)."""
    check_matrix("geqrf", A, low="geqrf_cpu")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    Bn, k = C.numel(batch), min(m, n)
    QR = _empty((Bn, m, n), A.dtype, A.device)
    tau = _empty((Bn, k), A.dtype, A.device)
    if Bn:
        _launch("geqrf", (QR, tau), (_flat(A),))
    return _unflat(QR, batch), V.reshape(tau, tuple(batch) + (k,))


def householder_product(A, tau, name="torch.linalg.householder_product"):
    """The first n columns of H_1 ... H_k (LAPACK's orgqr)."""
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if len(tau.shape) < 1:
        raise RuntimeError(f"{name}: tau must have at least 1 dimension.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > n:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if len(A.shape) - len(tau.shape) != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {len(tau.shape)} and input.ndim is equal to "
                           f"{len(A.shape)}")
    check_float(name, A, "orgqr_cpu")
    check_same_dtype(name, A, tau, "input", "tau")
    batch = A.shape[:-2]
    Bn = C.numel(batch)
    Q = _empty((Bn, m, n), A.dtype, A.device)
    if Bn:
        t2 = V.reshape(V.expand(tau, tuple(batch) + (tau.shape[-1],)), (Bn, tau.shape[-1]))
        _launch("linalg_householder_product", (Q,), (_flat(A), t2))
    return _unflat(Q, batch)


def ormqr(A, tau, Cm, left=True, transpose=False):
    """op(Q) C or C op(Q), Q from geqrf's (A, tau) (LAPACK's ormqr)."""
    name = "torch.ormqr"
    if len(A.shape) < 2 or len(Cm.shape) < 2:
        raise RuntimeError(f"{name}: input and other must have at least 2 dimensions.")
    check_float(name, A, "ormqr_cpu")
    check_same_dtype(name, A, Cm, "input", "other")
    check_same_dtype(name, A, tau, "input", "tau")
    batch = C.broadcast_shapes(A.shape[:-2], tau.shape[:-1], Cm.shape[:-2])
    Bn = C.numel(batch)
    m, n = Cm.shape[-2:]
    if (m if left else n) != A.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{-2 if left else -1}] must be equal to "
                           "input.shape[-2]")
    if tau.shape[-1] != min(m if left else n, A.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape"
                           f"[{-2 if left else -1}], input.shape[-1])")
    X = _empty((Bn, m, n), A.dtype, A.device)
    if Bn:
        k = tau.shape[-1]
        _launch("ormqr", (X,), (V.reshape(V.expand(A, batch + tuple(A.shape[-2:])),
                                          (Bn,) + tuple(A.shape[-2:])),
                                V.reshape(V.expand(tau, batch + (k,)), (Bn, k)),
                                V.reshape(V.expand(Cm, batch + (m, n)), (Bn, m, n))),
                left=bool(left), transpose=bool(transpose))
    return V.reshape(X, batch + (m, n))


# ---- pseudo-inverse and least squares ----------------------------------------------------------
def rank_tolerance(S_max, atol, rtol, m, n, dtype):
    """max(atol, rtol * S_max) with PyTorch's defaults (rtol = eps * max(m, n) when neither
    is given; 0 when only atol is)."""
    if rtol is None:
        rtol = 0.0 if atol is not None and not (isinstance(atol, (int, float)) and atol <= 0) \
            else _EPS[dtype.name] * max(m, n)
    if atol is None:
        atol = 0.0
    r = E("mul", S_max, rtol)
    if isinstance(atol, C.TensorBase):
        return E("maximum", r, atol)
    return E("maximum", r, O.full((), atol, S_max.dtype, S_max.device))


_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16,
        "float16": 0.0009765625, "bfloat16": 0.0078125}


@composite("linalg_pinv")
@O.recorded("linalg_pinv")
def pinv(A, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse from the SVD (or eigh for ``hermitian``)."""
    m, n = A.shape[-2:]
    if hermitian:
        L, Vv = eigh_raw(A)
        absL = E("abs", L)
        big = O.reduce("max", absL, -1, True) if n else absL
        keep = E("gt", absL, rank_tolerance(big, atol, rtol, m, n, A.dtype))
        Linv = O.where(keep, E("reciprocal", L), O.zeros((), A.dtype, A.device))
        return matmul(E("mul", Vv, V.unsqueeze(Linv, -2)), mT(Vv))
    U, S, Vh = svd_raw(A, False)
    if min(m, n) == 0:
        return O.zeros(tuple(A.shape[:-2]) + (n, m), A.dtype, A.device)
    big = V.narrow(S, -1, 0, 1)
    keep = E("gt", S, rank_tolerance(big, atol, rtol, m, n, A.dtype))
    Sinv = O.where(keep, E("reciprocal", S), O.zeros((), A.dtype, A.device))
    return matmul(E("mul", mT(Vh), V.unsqueeze(Sinv, -2)), mT(U))


def pinv_backward(g, A, P):
    """gA = -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A) (constant rank)."""
    PT = mT(P)
    gT = mT(g)
    t1 = E("neg", matmul(PT, matmul(g, PT)))
    t2 = matmul(E("sub", eye_like(A, A.shape[-2]), matmul(A, P)), matmul(gT, matmul(P, PT)))
    t3 = matmul(matmul(PT, P), matmul(gT, E("sub", eye_like(A, A.shape[-1]), matmul(P, A))))
    return E("add", E("add", t1, t2), t3)


@gradient("linalg_pinv")
def _(g, A, result):
    return (pinv_backward(g, A, result),)


_DRIVERS = {"gels": 0, "gelsy": 1, "gelsd": 2, "gelss": 3}


def lstsq_all(A, B, rcond=None, driver=None, name="torch.linalg.lstsq"):
    """(solution, residuals, rank, singular_values) as PyTorch's CPU lstsq (matrix B)."""
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           "gelss)")
    m, n = A.shape[-2:]
    k = B.shape[-1]
    batch = C.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    Bn = C.numel(batch)
    d = _DRIVERS[driver]
    if rcond is None:
        rcond = _EPS[A.dtype.name] * max(m, n)
    X = _empty((Bn, n, k), A.dtype, A.device)
    res = O.zeros((Bn, k), A.dtype, A.device)
    rank = O.zeros((Bn,), D.int64, A.device)
    sv = O.zeros((Bn, min(m, n)), A.dtype, A.device)
    info = O.zeros((Bn,), D.int32, A.device)
    if Bn:
        A3 = V.reshape(V.expand(A, batch + (m, n)), (Bn, m, n))
        B3 = V.reshape(V.expand(B, batch + (m, k)), (Bn, m, k))
        _launch("linalg_lstsq", (X, res, rank, sv, info), (A3, B3), driver=d,
                rcond=float(rcond))
    if d == 0:
        check_info(name, info, batch, lambda i: (
            f"The least squares solution could not be computed because the input matrix does "
            f"not have full rank (error code: {i})."))
    X = V.reshape(X, batch + (n, k))
    full = d == 0 or all(r == min(m, n) for r in host_ints(rank))
    if m > n and d != 1 and full:
        residuals = V.reshape(res, batch + (k,))
    else:
        residuals = O.zeros((0,), A.dtype, A.device)
    rank_t = V.reshape(rank, batch) if d != 0 else O.zeros((0,), D.int64, A.device)
    sv_t = V.reshape(sv, batch + (min(m, n),)) if d >= 2 else O.zeros((0,), A.dtype, A.device)
    return X, residuals, rank_t, sv_t


@composite("linalg_lstsq_solution")
@O.recorded("linalg_lstsq_solution")
def lstsq_solution(A, B, rcond=None, driver=None):
    return lstsq_all(A, B, rcond, driver)[0]


@gradient("linalg_lstsq_solution")
def _(g, A, B):
    """X = pinv(A) B: gB = pinv(A)^T g, gA from pinv's gradient with gP = g B^T."""
    P = pinv(A)
    gA = pinv_backward(matmul(g, mT(B)), A, P) if A.requires_grad else None
    return gA, matmul(mT(P), g) if B.requires_grad else None


# ---- matrix exponential ------------------------------------------------------------------------
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


@composite("linalg_matrix_exp")
@O.recorded("linalg_matrix_exp")
def matrix_exp(A):
    """exp(A): Higham's scaling and squaring with the [13/13] Padé approximant, the scaling
    chosen per matrix from its 1-norm."""
    n = A.shape[-1]
    if n == 0 or C.numel(A.shape) == 0:
        return O.clone(A)
    if A.dtype in _LOW:
        return O.cast(matrix_exp(O.cast(A, D.float32)), A.dtype)
    norm1 = O.reduce("max", O.reduce("sum", E("abs", A), -2), -1)
    # s = max(0, ceil(log2(norm1 / theta))) per matrix (NaN/inf norms: no scaling)
    s = E("ceil", E("log2", E("div", norm1, _THETA13)))
    zero = O.zeros((), s.dtype, s.device)
    s = O.where(E("isfinite", s), E("maximum", s, zero), zero)
    smax = int(max(host_float_max(s), 0))
    X = E("div", A, V.unsqueeze(V.unsqueeze(E("pow", 2.0, s), -1), -1))
    b = _PADE13
    ident = eye_like(A)
    X2 = matmul(X, X)
    X4 = matmul(X2, X2)
    X6 = matmul(X4, X2)
    Uin = E("add", E("add", E("mul", X6, b[13]), E("mul", X4, b[11])), E("mul", X2, b[9]))
    U = E("add", matmul(X6, Uin), E("add", E("add", E("mul", X6, b[7]), E("mul", X4, b[5])),
                                         E("add", E("mul", X2, b[3]), E("mul", ident, b[1]))))
    U = matmul(X, U)
    Vin = E("add", E("add", E("mul", X6, b[12]), E("mul", X4, b[10])), E("mul", X2, b[8]))
    Vm = E("add", matmul(X6, Vin), E("add", E("add", E("mul", X6, b[6]), E("mul", X4, b[4])),
                                          E("add", E("mul", X2, b[2]), E("mul", ident, b[0]))))
    R = solve_matrix(E("sub", Vm, U), E("add", Vm, U), False)
    for i in range(smax):
        more = V.unsqueeze(V.unsqueeze(E("gt", s, float(i)), -1), -1)
        R = O.where(more, matmul(R, R), R)
    return R


def host_float_max(t) -> float:
    """max of a float tensor as a Python float (0 for an empty one)."""
    if C.numel(t.shape) == 0:
        return 0.0
    return float(O.item(O.reduce("max", t)))


@gradient("linalg_matrix_exp")
def _(g, A):
    """The upper-right block of exp([[A^T, g], [0, A^T]])."""
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    M = O.zeros(batch + (2 * n, 2 * n), A.dtype, A.device)
    AT = mT(A)
    O.copy_(V.narrow(V.narrow(M, -2, 0, n), -1, 0, n), AT)
    O.copy_(V.narrow(V.narrow(M, -2, n, n), -1, n, n), AT)
    O.copy_(V.narrow(V.narrow(M, -2, 0, n), -1, n, n), g)
    return (V.narrow(V.narrow(matrix_exp(M), -2, 0, n), -1, n, n),)


# ---- LDL^T -------------------------------------------------------------------------------------
def ldl_factor_ex(A, hermitian=False, name="torch.linalg.ldl_factor_ex"):
    """(LD, pivots, info): Bunch-Kaufman LDL^T of symmetric (..., n, n) (LAPACK's sytrf)."""
    check_matrix(name, A, square=True, low="ldl_factor_kernel_cpu")
    batch, n = A.shape[:-2], A.shape[-1]
    Bn = C.numel(batch)
    LD = _empty((Bn, n, n), A.dtype, A.device)
    piv = _empty((Bn, n), D.int32, A.device)
    info = O.zeros((Bn,), D.int32, A.device)
    if Bn:
        _launch("linalg_ldl_factor_ex", (LD, piv, info), (_flat(A),), upper=False)
    return _unflat(LD, batch), V.reshape(piv, tuple(batch) + (n,)), V.reshape(info, batch)


def ldl_solve(LD, piv, B, hermitian=False, name="torch.linalg.ldl_solve"):
    check_matrix(name, LD, square=True, what="LD")
    if len(B.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    check_same_dtype(name, LD, B, "LD", "B")
    n, k = LD.shape[-1], B.shape[-1]
    batch = C.broadcast_shapes(LD.shape[:-2], B.shape[:-2], piv.shape[:-1])
    Bn = C.numel(batch)
    X = _empty((Bn, n, k), B.dtype, B.device)
    if Bn:
        _launch("linalg_ldl_solve", (X,), (
            V.reshape(V.expand(LD, batch + (n, n)), (Bn, n, n)),
            O.contiguous(V.reshape(V.expand(piv, batch + (n,)), (Bn, n))),
            V.reshape(V.expand(B, batch + (n, k)), (Bn, n, k))), upper=False)
    return V.reshape(X, batch + (n, k))
