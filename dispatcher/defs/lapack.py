"""torch.linalg on LAPACK kernels: the kernel ops and the differentiable ops over them, the
checks and helpers every linalg function shares, and the LU, SVD and symmetric
eigendecompositions (composites and gradient formulas). The functions built on them are in
:mod:`.lapack_functions`; both are re-exported by :mod:`.linalg`."""
from __future__ import annotations

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..device import to_device
from ..plugins import backend_for
from ..schema import OPS, composite, defop, gradient
from . import copy as CP
from ._products import matmul

__all__ = []

E = O.elementwise

# =================================================================================================
# torch.linalg: decompositions and solvers on LAPACK kernels
# =================================================================================================
# The kernels (cpu: LAPACK from scipy-openblas32, backends/cpu/csrc/linalg.cpp) take batches of
# matrices as 3-D tensors (B, rows, cols) and write their outputs; LAPACK's ``info`` comes back
# as an int32 tensor that the entries below turn into ``LinAlgError`` with PyTorch's messages.
# On a device without these kernels their composites compute them on the host with the CPU
# backend's kernels (copies there and back), as PyTorch does for some GPU decompositions.
#
# Autograd records one node per call and attaches it to an op's first output, so a
# decomposition with several differentiable outputs (qr, svd, eigh, slogdet) is one op whose
# result packs them in one tensor (..., total); the public outputs are views of it, and the
# gradient formula unpacks the gradient the views accumulate into.

class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a singular or not positive-definite input, or a
    decomposition that did not converge (a ``RuntimeError``, as in PyTorch)."""


_LOW = (D.float16, D.bfloat16)


def _k3(t):
    return t.shape[0], t.shape[1], t.shape[2]


# The LAPACK kernels: name, signature, kernel convention, and the (shape, dtype) of each
# output from the inputs (their composites need it, below).
_KERNEL_OPS = (
    ("linalg_lu_factor_ex", "linalg_lu_factor_ex(Tensor A) -> (Tensor LU, Tensor pivots, "
                            "Tensor info)", "(LU, pivots, info, A)",
     lambda A: [(_k3(A), A.dtype), ((A.shape[0], min(A.shape[1:])), D.int32),
                ((A.shape[0],), D.int32)]),
    ("linalg_lu_solve", "linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, bool trans) -> "
                        "Tensor", "(X, LU, pivots, B, trans=False)",
     lambda LU, piv, B, trans=False: [(_k3(B), B.dtype)]),
    ("linalg_lu_pivots_to_permutation", "linalg_lu_pivots_to_permutation(Tensor pivots, int m)"
                                        " -> Tensor", "(perm, pivots, m)",
     lambda piv, m: [((piv.shape[0], m), D.int64)]),
    ("linalg_cholesky_ex", "linalg_cholesky_ex(Tensor A, bool upper=False) -> (Tensor L, "
                           "Tensor info)", "(L, info, A, upper=False)",
     lambda A, upper=False: [(_k3(A), A.dtype), ((A.shape[0],), D.int32)]),
    ("linalg_qr", "linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)",
     "(Q, R, A, compute_q=True, complete=False)",
     lambda A, compute_q=True, complete=False: [
         ((A.shape[0], A.shape[1], A.shape[1] if complete else min(A.shape[1:]))
          if compute_q else (A.shape[0], 0, 0), A.dtype),
         ((A.shape[0], A.shape[1] if complete else min(A.shape[1:]), A.shape[2]), A.dtype)]),
    ("geqrf", "geqrf(Tensor self) -> (Tensor a, Tensor tau)", "(QR, tau, A)",
     lambda A: [(_k3(A), A.dtype), ((A.shape[0], min(A.shape[1:])), A.dtype)]),
    ("linalg_householder_product", "linalg_householder_product(Tensor input, Tensor tau) -> "
                                   "Tensor", "(Q, A, tau)",
     lambda A, tau: [(_k3(A), A.dtype)]),
    ("ormqr", "ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, "
              "bool transpose=False) -> Tensor", "(X, A, tau, C, left=True, transpose=False)",
     lambda A, tau, Cm, left=True, transpose=False: [(_k3(Cm), Cm.dtype)]),
    ("linalg_svd", "linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, Tensor S, "
                   "Tensor Vh)",
     "(U, S, Vh, info, A, full_matrices=True, gesvd=False, compute_uv=True)",
     lambda A, full_matrices=True, gesvd=False, compute_uv=True: _svd_meta(
         A, full_matrices, compute_uv)),
    ("linalg_eigh", "linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, "
                    "Tensor eigenvectors)", "(W, V, info, A, upper=False, compute_v=True)",
     lambda A, upper=False, compute_v=True: [
         ((A.shape[0], A.shape[1]), A.dtype),
         ((A.shape[0],) + ((A.shape[1],) * 2 if compute_v else (0, 0)), A.dtype),
         ((A.shape[0],), D.int32)]),
    ("linalg_lstsq", "linalg_lstsq(Tensor A, Tensor B, float? rcond=None, *, str? driver=None)"
                     " -> (Tensor solution, Tensor residuals, Tensor rank, "
                     "Tensor singular_values)",
     "(X, residuals, rank, singular_values, info, A, B, driver, rcond)",
     lambda A, B, driver, rcond=None: [
         ((A.shape[0], A.shape[2], B.shape[2]), A.dtype), ((A.shape[0], B.shape[2]), A.dtype),
         ((A.shape[0],), D.int64), ((A.shape[0], min(A.shape[1:])), A.dtype),
         ((A.shape[0],), D.int32)]),
    ("linalg_ldl_factor_ex", "linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, "
                             "bool check_errors=False) -> (Tensor LD, Tensor pivots, "
                             "Tensor info)", "(LD, pivots, info, A, upper=False)",
     lambda A, upper=False: [(_k3(A), A.dtype), ((A.shape[0], A.shape[1]), D.int32),
                             ((A.shape[0],), D.int32)]),
    ("linalg_ldl_solve", "linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, "
                         "bool hermitian=False) -> Tensor", "(X, LD, pivots, B, upper=False)",
     lambda LD, piv, B, upper=False: [(_k3(B), B.dtype)]),
    ("linalg_trsm", "linalg_trsm(Tensor A, Tensor B, bool upper, bool left, "
                    "bool unitriangular) -> Tensor", "(X, A, B, upper, left=True, "
                                                     "unitriangular=False)",
     lambda A, B, upper, left=True, unitriangular=False: [(_k3(B), B.dtype)]),
)


def _svd_meta(A, full, compute_uv):
    Bn, m, n = _k3(A)
    k = min(m, n)
    if not compute_uv:
        return [((Bn, 0, 0), A.dtype), ((Bn, k), A.dtype), ((Bn, 0, 0), A.dtype),
                ((Bn,), D.int32)]
    u, v = (m, n) if full else (k, k)
    return [((Bn, m, u), A.dtype), ((Bn, k), A.dtype), ((Bn, v, n), A.dtype), ((Bn,), D.int32)]


def _host_composite(name, meta):
    """The composite of a LAPACK kernel for a device without it: the CPU backend's kernel on
    host copies of the inputs, the outputs copied back (PyTorch also computes some
    decompositions on the host for GPU tensors). Raises NotImplementedError when no CPU
    backend is installed."""
    def composite(*ins, **attrs):
        dev = C.same_device(name, [t for t in ins if isinstance(t, C.TensorBase)])
        o = OPS[name]
        try:
            backend_for("cpu")
        except Exception as e:   # the CPU plugin is missing or broken: say so
            raise NotImplementedError(
                f"{name}(): the {dev.type!r} backend has no LAPACK kernel for this op, and "
                f"computing it on the host needs the cpu backend, which is not available "
                f"({e})") from None
        k = o.kernels.get("cpu")
        if k is None:
            raise NotImplementedError(f"{name}(): no kernel on {dev} and none on the cpu "
                                      "backend to compute it on the host")
        cpu = to_device("cpu")
        host = [O.to(t, cpu) if isinstance(t, C.TensorBase) else t for t in ins]
        outs = [C.empty(tuple(shape), dtype, cpu) for shape, dtype in meta(*ins, **attrs)]
        O.launch(o, cpu, k, *outs, *host, **attrs)
        return tuple(O.to(t, dev) for t in outs)
    return composite


for _n, _sig, _k, _meta in _KERNEL_OPS:
    defop(_n, "matmul", _sig, _k, promotion="none", differentiable=False,
          doc="LAPACK kernel (cpu); elsewhere computed on the host")
    composite(_n)(_host_composite(_n, _meta))
del _n, _sig, _k, _meta

# the differentiable ops: composites over the kernels, each with its gradient formula
# PyTorch records these through their ``_ex`` forms (``grad_fn`` prints the ``Ex`` name)
_EX_NODES = {"linalg_solve": "LinalgSolveExBackward0", "linalg_inv": "LinalgInvExBackward0",
             "linalg_cholesky": "LinalgCholeskyExBackward0"}

for _n, _sig, _inputs in [
    ("linalg_det", "linalg_det(Tensor A) -> Tensor", ("A",)),
    ("linalg_slogdet_packed", "linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
     ("A",)),
    ("linalg_inv", "linalg_inv(Tensor A) -> Tensor", ("A",)),
    ("linalg_solve", "linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor",
     ("A", "B")),
    ("linalg_solve_triangular", "linalg_solve_triangular(Tensor self, Tensor B, *, bool upper,"
                                " bool left=True, bool unitriangular=False) -> Tensor",
     ("A", "B")),
    ("linalg_cholesky", "linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor", ("A",)),
    ("linalg_qr_packed", "linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)",
     ("A",)),
    ("linalg_svd_packed", "linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, "
                          "Tensor S, Tensor Vh)", ("A",)),
    ("linalg_svdvals", "linalg_svdvals(Tensor A) -> Tensor", ("A",)),
    ("linalg_eigh_packed", "linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, "
                           "Tensor eigenvectors)", ("A",)),
    ("linalg_eigvalsh", "linalg_eigvalsh(Tensor A, str UPLO='L') -> Tensor", ("A",)),
    ("linalg_pinv", "linalg_pinv(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, "
                    "bool hermitian=False) -> Tensor", ("A",)),
    ("linalg_lstsq_solution", "linalg_lstsq(Tensor A, Tensor B) -> Tensor", ("A", "B")),
    ("linalg_matrix_exp", "linalg_matrix_exp(Tensor self) -> Tensor", ("A",)),
]:
    defop(_n, "matmul", _sig, "(composite only)", inputs=_inputs, promotion="none",
          node=_EX_NODES.get(_n))
del _n, _sig, _inputs


def _launch(name, outs, ins, **attrs):
    """Run LAPACK kernel ``name`` on the inputs' device (its composite where the device has
    none): ``outs`` are written, nothing is returned."""
    dev = C.same_device(name, [t for t in ins if isinstance(t, C.TensorBase)])
    o = OPS[name]
    k = o.kernels.get(dev.type)
    if k is None:
        backend_for(dev.type)   # kernels are installed when the plugin loads
        k = o.kernels.get(dev.type)
    if k is None:   # the op's composite: computed on the host (see _host_composite)
        for t, r in zip(outs, o.composite(*ins, **attrs)):
            O.copy_(t, r)
        return
    O.launch(o, dev, k, *outs, *ins, **attrs)


def _empty(shape, dtype, device):
    return C.empty(tuple(shape), dtype, device)


def _flat(A):
    """``A`` (..., r, c) as (B, r, c) (a view where possible)."""
    return V.reshape(A, (C.numel(A.shape[:-2]),) + tuple(A.shape[-2:]))


def _unflat(t, batch):
    return V.reshape(t, tuple(batch) + tuple(t.shape[1:]))


def host_ints(t) -> list:
    """The values of an integer tensor as a Python list (read on the host)."""
    n = C.numel(t.shape)
    if n == 0:
        return []
    t = O.contiguous(O.to(t, "cpu"))
    size = t.dtype.itemsize
    raw = backend_for("cpu").copy_to_host(t._storage, t._offset * size, n * size)
    return memoryview(bytes(raw)).cast({1: "b", 4: "i", 8: "q"}[size]).tolist()


def check_info(name, info, batch, message) -> None:
    """Raise ``LinAlgError`` for the first nonzero ``info``: ``message(info)`` says why;
    batched inputs name the element as PyTorch does."""
    for i, v in enumerate(host_ints(info)):
        if v != 0:
            where = f"(Batch element {i}): " if len(batch) else ""
            raise LinAlgError(f"{name}: {where}{message(v)}")


def check_float(name, A, low=None) -> None:
    """PyTorch's dtype checks: integers and bool raise; float16/bfloat16 raise
    NotImplementedError naming the CPU kernel ``low`` where PyTorch does, else its "Low
    precision dtypes not supported" RuntimeError."""
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.torch_name(A.dtype)}")
    if A.dtype in _LOW:
        if low:
            raise NotImplementedError(f'"{low}" not implemented for '
                                      f"'{D.torch_name(A.dtype)}'")
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got "
                           f"{D.torch_name(A.dtype)}")


def check_matrix(name, A, square=False, low=None, what="A") -> None:
    """At least 2-D (and square), floating point: PyTorch's linalg argument checks."""
    if not isinstance(A, C.TensorBase):
        raise TypeError(f"{name}(): argument '{what}' must be Tensor, not {type(A).__name__}")
    if len(A.shape) < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    check_float(name, A, low)
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: {what} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def check_same_dtype(name, A, B, a="A", b="B") -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected {a} and {b} to have the same dtype, but found {a} "
                           f"of type {D.torch_name(A.dtype)} and {b} of type "
                           f"{D.torch_name(B.dtype)} instead")


def mT(x):
    return V.transpose(x, -2, -1)


def eye_like(A, n=None):
    """The identity with ``A``'s dtype and device, ``n`` x ``n`` (default: A's last dim)."""
    n = A.shape[-1] if n is None else n
    return CP.eye(n, n, A.dtype, A.device)


def tri(x, k=0, upper=False):
    """``triu(x, k)`` / ``tril(x, k)`` of the last two dims, as a differentiable select."""
    r = V.unsqueeze(O.arange(0, x.shape[-2], 1, D.int64, x.device), 1)
    c = V.unsqueeze(O.arange(0, x.shape[-1], 1, D.int64, x.device), 0)
    d = E("sub", c, r)
    keep = E("ge", d, k) if upper else E("le", d, k)
    return O.where(keep, x, O.zeros((), x.dtype, x.device))


def diag_embed(s):
    """(..., k) -> (..., k, k) with ``s`` on the diagonal (differentiable)."""
    return E("mul", V.unsqueeze(s, -2), eye_like(s, s.shape[-1]))


def _packed_views(P, parts):
    """Views of the packed result ``P`` (..., total): ``parts`` are the trailing shapes, in
    order; each view is differentiable (its gradient lands in P's)."""
    out, start = [], 0
    for shape in parts:
        n = C.numel(shape)
        piece = V.narrow(P, -1, start, n)
        out.append(V.unflatten(piece, -1, tuple(shape)) if len(shape) != 1 else piece)
        start += n
    return out


def _packed_raw(P, parts):
    """The same pieces as raw strided views (kernel outputs, below autograd): (B, ...)."""
    out, start = [], 0
    total = P.shape[-1]
    for shape in parts:
        stride = C.contiguous_strides(tuple(shape))
        out.append(C.view_of(P, (P.shape[0],) + tuple(shape), (total,) + stride,
                             P._offset + start))
        start += C.numel(shape)
    return out


# ---- LU ----------------------------------------------------------------------------------------
def lu_factor_ex(A, pivot=True, name="linalg.lu_factor_ex"):
    """(LU, pivots, info) of ``A`` (..., m, n): partial pivoting, LAPACK's getrf."""
    check_matrix(name, A, low="lu_cpu")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    B, k = C.numel(batch), min(m, n)
    LU = _empty((B, m, n), A.dtype, A.device)
    piv = _empty((B, k), D.int32, A.device)
    info = O.zeros((B,), D.int32, A.device)
    if B:
        _launch("linalg_lu_factor_ex", (LU, piv, info), (_flat(A),))
    return _unflat(LU, batch), V.reshape(piv, tuple(batch) + (k,)), V.reshape(info, batch)


def lu_solve_raw(LU, piv, B, trans=False):
    """X with op(A) X = B for the LU factors of A (broadcast batches), LAPACK's getrs."""
    n, k = LU.shape[-1], B.shape[-1]
    batch = C.broadcast_shapes(LU.shape[:-2], B.shape[:-2], piv.shape[:-1])
    Bn = C.numel(batch)
    X = _empty((Bn, n, k), B.dtype, B.device)
    if Bn and n and k:
        LUb = V.reshape(V.expand(LU, batch + (n, n)), (Bn, n, n))
        pb = V.reshape(V.expand(piv, batch + (n,)), (Bn, n))
        Bb = V.reshape(V.expand(B, batch + (n, k)), (Bn, n, k))
        _launch("linalg_lu_solve", (X,), (LUb, O.contiguous(pb), Bb), trans=bool(trans))
    elif Bn and k:
        X = O.zeros((Bn, n, k), B.dtype, B.device)
    return V.reshape(X, batch + (n, k))


def lu_permutation(piv, m):
    """Row permutation (int64, (..., m)) of LAPACK's pivots: A[perm] = L @ U."""
    batch = piv.shape[:-1]
    Bn = C.numel(batch)
    perm = _empty((Bn, m), D.int64, piv.device)
    if Bn:
        p2 = V.reshape(piv, (Bn, piv.shape[-1]))
        _launch("linalg_lu_pivots_to_permutation", (perm,), (O.cast(p2, D.int32), m))
    return V.reshape(perm, tuple(batch) + (m,))


def lu_unpack(LU, piv, unpack_data=True, unpack_pivots=True):
    """(P, L, U) of ``lu_factor``'s result (empty tensors for what is not unpacked)."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    if unpack_pivots:
        perm = lu_permutation(piv, m)
        rows = V.unsqueeze(O.arange(0, m, 1, D.int64, LU.device), 1)
        P = O.cast(E("eq", rows, V.unsqueeze(perm, -2)), LU.dtype)
    else:
        P = O.zeros((0,), LU.dtype, LU.device)
    if unpack_data:
        Lk = V.narrow(LU, -1, 0, k)
        L = E("add", tri(Lk, -1), CP.eye(m, k, LU.dtype, LU.device))
        U = tri(V.narrow(LU, -2, 0, k), 0, upper=True)
    else:
        L = O.zeros((0,), LU.dtype, LU.device)
        U = O.zeros((0,), LU.dtype, LU.device)
    return P, L, U


def _perm_sign(piv, dtype):
    """(-1) ** (number of row swaps) of LAPACK's pivots."""
    k = piv.shape[-1]
    ar = O.arange(1, k + 1, 1, D.int32, piv.device)
    swaps = O.reduce("sum", O.cast(E("ne", piv, ar), D.int64), -1)
    odd = O.cast(E("bitwise_and", swaps, 1), dtype)
    return E("sub", 1, E("mul", odd, 2))


# ---- SVD ---------------------------------------------------------------------------------------
def _svd_shapes(m, n, full):
    k = min(m, n)
    return ((m, m), (k,), (n, n)) if full else ((m, k), (k,), (k, n))


def _svd_failed(info):
    return ("The algorithm failed to converge because the input matrix contained non-finite "
            "values.")


def _svd_into(A, U, S, Vh, full, compute_uv):
    batch = A.shape[:-2]
    info = O.zeros((C.numel(batch),), D.int32, A.device)
    if C.numel(batch):
        _launch("linalg_svd", (U, S, Vh, info), (_flat(A),), full_matrices=bool(full),
                compute_uv=bool(compute_uv))
    check_info("linalg.svd", info, batch, _svd_failed)


def svd_raw(A, full_matrices=False):
    """(U, S, Vh) without autograd (gradient formulas use it)."""
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    us, ss, vs = _svd_shapes(m, n, full_matrices)
    Bn = C.numel(batch)
    U, S, Vh = (_empty((Bn,) + s, A.dtype, A.device) for s in (us, ss, vs))
    _svd_into(A, U, S, Vh, full_matrices, True)
    return _unflat(U, batch), V.reshape(S, tuple(batch) + ss), _unflat(Vh, batch)


@composite("linalg_svd_packed")
@O.recorded("linalg_svd_packed")
def _svd_packed(A, full_matrices=True):
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    parts = _svd_shapes(m, n, full_matrices)
    Bn = C.numel(batch)
    P = _empty((Bn, sum(C.numel(s) for s in parts)), A.dtype, A.device)
    U, S, Vh = _packed_raw(P, parts)
    _svd_into(A, U, S, Vh, full_matrices, True)
    return V.reshape(P, tuple(batch) + (P.shape[-1],))


def svd_backward(A, gU, gS, gVh, U, S, Vh):
    """PyTorch's svd_backward (real case); gU / gVh None when unused."""
    m, n = A.shape[-2:]
    k = S.shape[-1]
    U, Vh = V.narrow(U, -1, 0, k), V.narrow(Vh, -2, 0, k)
    if gU is None and gVh is None:
        return matmul(E("mul", U, V.unsqueeze(gS, -2)), Vh)
    if gU is not None:
        gU = V.narrow(gU, -1, 0, k)
    if gVh is not None:
        gVh = V.narrow(gVh, -2, 0, k)
    Vm = mT(Vh)
    S2 = E("mul", S, S)
    Em = E("sub", V.unsqueeze(S2, -2), V.unsqueeze(S2, -1))
    Em = O.where(E("ne", eye_like(S, k), 0), O.full((), 1, S.dtype, S.device), Em)
    Srow, Scol = V.unsqueeze(S, -2), V.unsqueeze(S, -1)

    def skew(X):
        return E("sub", X, mT(X))
    if gU is not None and gVh is not None:
        UhgU = skew(matmul(mT(U), gU))
        VhgV = skew(matmul(Vh, mT(gVh)))
        gA = E("div", E("add", E("mul", UhgU, Srow), E("mul", Scol, VhgV)), Em)
    elif gU is not None:
        gA = E("mul", E("div", skew(matmul(mT(U), gU)), Em), Srow)
    else:
        gA = E("mul", Scol, E("div", skew(matmul(Vh, mT(gVh))), Em))
    if gS is not None:
        gA = E("add", gA, diag_embed(gS))
    if m > k and gU is not None:
        gA = matmul(U, gA)
        gUSinv = E("div", gU, Srow)
        gA = E("add", gA, E("sub", gUSinv, matmul(U, matmul(mT(U), gUSinv))))
        return matmul(gA, Vh)
    if n > k and gVh is not None:
        gA = matmul(gA, Vh)
        SinvgVh = E("div", gVh, Scol)
        gA = E("add", gA, E("sub", SinvgVh, matmul(matmul(SinvgVh, Vm), Vh)))
        return matmul(U, gA)
    return matmul(U, matmul(gA, Vh))


@gradient("linalg_svd_packed")
def _(g, A, result, full_matrices=True):
    m, n = A.shape[-2:]
    parts = _svd_shapes(m, n, full_matrices)
    U, S, Vh = _packed_views(result, parts)
    gU, gS, gVh = _packed_views(g, parts)
    return (svd_backward(A, gU, gS, gVh, U, S, Vh),)


def svd(A, full_matrices=True, driver=None, name="linalg.svd"):
    """(U, S, Vh) of (..., m, n), S descending (LAPACK's gesdd)."""
    check_matrix(name, A, low="linalg_svd_cpu")
    if driver is not None and A.device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    m, n = A.shape[-2:]
    P = _svd_packed(A, bool(full_matrices))
    return tuple(_packed_views(P, _svd_shapes(m, n, full_matrices)))


@composite("linalg_svdvals")
@O.recorded("linalg_svdvals")
def svdvals(A, name="linalg.svdvals"):
    """Singular values of (..., m, n), descending."""
    check_matrix(name, A, low="linalg_svd_cpu")
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    k = min(m, n)
    Bn = C.numel(batch)
    S = _empty((Bn, k), A.dtype, A.device)
    dummy = _empty((Bn, 0, 0), A.dtype, A.device)
    _svd_into(A, dummy, S, dummy, False, False)
    return V.reshape(S, tuple(batch) + (k,))


@gradient("linalg_svdvals")
def _(g, A):
    U, S, Vh = svd_raw(A, False)
    return (matmul(E("mul", U, V.unsqueeze(g, -2)), Vh),)


# ---- symmetric eigendecomposition --------------------------------------------------------------
def _uplo(UPLO, name):
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U") or len(UPLO) != 1:
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper() == "U"


def _eigh_failed(info):
    return ("The algorithm failed to converge because the input matrix is ill-conditioned or "
            f"has too many repeated eigenvalues (error code: {info}).")


def _eigh_into(A, W, Vv, upper, compute_v, name):
    batch = A.shape[:-2]
    info = O.zeros((C.numel(batch),), D.int32, A.device)
    if C.numel(batch):
        _launch("linalg_eigh", (W, Vv, info), (_flat(A),), upper=upper, compute_v=compute_v)
    check_info(name, info, batch, _eigh_failed)


def eigh_raw(A, upper=False, name="linalg.eigh"):
    batch, n = A.shape[:-2], A.shape[-1]
    Bn = C.numel(batch)
    W, Vv = _empty((Bn, n), A.dtype, A.device), _empty((Bn, n, n), A.dtype, A.device)
    _eigh_into(A, W, Vv, upper, True, name)
    return V.reshape(W, tuple(batch) + (n,)), _unflat(Vv, batch)


@composite("linalg_eigh_packed")
@O.recorded("linalg_eigh_packed")
def _eigh_packed(A, UPLO="L"):
    batch, n = A.shape[:-2], A.shape[-1]
    Bn = C.numel(batch)
    P = _empty((Bn, n + n * n), A.dtype, A.device)
    W, Vv = _packed_raw(P, ((n,), (n, n)))
    _eigh_into(A, W, Vv, _uplo(UPLO, "linalg.eigh"), True, "linalg.eigh")
    return V.reshape(P, tuple(batch) + (P.shape[-1],))


@gradient("linalg_eigh_packed")
def _(g, A, result):
    """PyTorch's eigh backward: V (diag(gL) + skew(V^T gV)/2 / E) V^T."""
    n = A.shape[-1]
    L, Vv = _packed_views(result, ((n,), (n, n)))
    gL, gV = _packed_views(g, ((n,), (n, n)))
    VhgV = matmul(mT(Vv), gV)
    VhgV = E("mul", E("sub", VhgV, mT(VhgV)), 0.5)
    Em = E("sub", V.unsqueeze(L, -2), V.unsqueeze(L, -1))
    diag = E("ne", eye_like(L, n), 0)
    inner = O.where(diag, diag_embed(gL), E("div", VhgV, O.where(diag, O.full(
        (), 1, L.dtype, L.device), Em)))
    return (matmul(Vv, matmul(inner, mT(Vv))),)


def eigh(A, UPLO="L", name="linalg.eigh"):
    """(eigenvalues ascending, eigenvectors) of symmetric (..., n, n) (LAPACK's syevd)."""
    check_matrix(name, A, square=True, low="linalg_eigh_cpu")
    _uplo(UPLO, name)
    n = A.shape[-1]
    P = _eigh_packed(A, UPLO)
    return tuple(_packed_views(P, ((n,), (n, n))))


@composite("linalg_eigvalsh")
@O.recorded("linalg_eigvalsh")
def eigvalsh(A, UPLO="L", name="linalg.eigvalsh"):
    check_matrix(name, A, square=True, low="linalg_eigh_cpu")
    upper = _uplo(UPLO, name)
    batch, n = A.shape[:-2], A.shape[-1]
    Bn = C.numel(batch)
    W = _empty((Bn, n), A.dtype, A.device)
    _eigh_into(A, W, _empty((Bn, 0, 0), A.dtype, A.device), upper, False, "linalg.eigh")
    return V.reshape(W, tuple(batch) + (n,))


@gradient("linalg_eigvalsh")
def _(g, A, UPLO="L"):
    _, Vv = eigh_raw(A, _uplo(UPLO, "linalg.eigvalsh"))
    return (matmul(E("mul", Vv, V.unsqueeze(g, -2)), mT(Vv)),)
