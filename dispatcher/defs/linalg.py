"""Matrix products: bmm (the primitive), mm, matmul and friends, einsum, linear; and
torch.linalg's decompositions and solvers (LAPACK kernels, their gradient formulas)."""
from __future__ import annotations

from .. import core as C
from .. import dtypes as D
from .. import _einsum
from .. import ops as O
from .. import views as V
from ..device import to_device
from ..plugins import backend_for
from ..schema import OPS, composite, defop, gradient
from . import copy as CP

__all__ = ["mm", "mv", "dot", "outer", "addmm", "matmul", "einsum", "linear", "mm_check",
           "mv_check", "dot_check", "matmul_check",
           # torch.linalg
           "LinAlgError", "det", "slogdet", "inv", "solve", "solve_matrix", "solve_triangular",
           "cholesky", "cholesky_ex", "qr", "geqrf", "householder_product", "ormqr", "svd",
           "svd_raw", "svdvals", "svd_backward", "eigh", "eigh_raw", "eigvalsh", "pinv",
           "pinv_backward", "lstsq_all", "lstsq_solution", "matrix_exp", "lu_factor_ex",
           "lu_solve_raw", "lu_permutation", "lu_unpack", "ldl_factor_ex", "ldl_solve",
           "check_matrix", "check_float", "check_info", "check_same_dtype", "host_ints",
           "eye_like", "mT", "tri", "diag_embed", "rank_tolerance", "singular_inv_message",
           "not_pd_message", "solve_singular_message"]

E = O.elementwise

defop("bmm", "matmul", "bmm(Tensor self, Tensor mat2) -> Tensor",
      "(out, a, b)  # [B,n,k] @ [B,k,m]", primitive=True, inputs=("self", "mat2"))


@gradient("bmm")
def _(g, self, mat2):
    return (O.bmm(g, V.transpose(mat2, 1, 2)) if self.requires_grad else None,
            O.bmm(V.transpose(self, 1, 2), g) if mat2.requires_grad else None)


for _n, _sig, _inputs in [
    ("mm", "mm(Tensor self, Tensor mat2) -> Tensor", ("self", "mat2")),
    ("matmul", "matmul(Tensor self, Tensor other) -> Tensor", ("self", "other")),
    ("mv", "mv(Tensor self, Tensor vec) -> Tensor", ("self", "vec")),
    ("dot", "dot(Tensor self, Tensor other) -> Tensor", ("self", "other")),
    ("outer", "outer(Tensor self, Tensor vec2) -> Tensor", ("self", "vec2")),
    ("addmm", "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)"
              " -> Tensor", ("self", "mat1", "mat2")),
    ("einsum", "einsum(str equation, Tensor[] tensors) -> Tensor", ("tensors",)),
    ("linear", "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
     ("input", "weight", "bias")),
]:
    defop(_n, "matmul", _sig, "(composite only)", inputs=_inputs)
del _n, _sig, _inputs


def _same_dtype(name, a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}(): expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}")


def mm_check(a, b):
    """mm's shape and dtype checks."""
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise RuntimeError(f"mm(): self must be a matrix (got {len(a.shape)}D) and mat2 must be"
                           f" a matrix (got {len(b.shape)}D)")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    _same_dtype("mm", a, b)


@composite("mm")
@O.recorded("mm")
def mm(self, mat2):
    mm_check(self, mat2)
    a, b = self, mat2
    # batch-of-one views made directly (the small-matrix path is overhead-bound)
    a3 = C.view_of(a, (1,) + a.shape, (max(1, C.numel(a.shape)),) + a._stride, a._offset)
    b3 = C.view_of(b, (1,) + b.shape, (max(1, C.numel(b.shape)),) + b._stride, b._offset)
    r = O._matmul_kernel("mm", a3, b3, None)
    return C.view_of(r, r.shape[1:], r._stride[1:], r._offset)


@gradient("mm")
def _(g, self, mat2):
    return (mm(g, V.t(mat2)) if self.requires_grad else None,
            mm(V.t(self), g) if mat2.requires_grad else None)


def mv_check(a, v):
    if len(a.shape) != 2 or len(v.shape) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(a.shape)}, "
                           f"{len(v.shape)}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x"
                           f"{a.shape[1]}), vec ({v.shape[0]})")


@composite("mv")
def mv(a, v):
    mv_check(a, v)
    return V.select(mm(a, V.unsqueeze(v, 1)), 1, 0)


def dot_check(a, b):
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a.shape)}D and {len(b.shape)}D "
                           "tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    _same_dtype("dot", a, b)


@composite("dot")
def dot(a, b):
    dot_check(a, b)
    return V.reshape(mm(V.unsqueeze(a, 0), V.unsqueeze(b, 1)), ())


@composite("outer")
def outer(a, b):
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise RuntimeError("outer: expected 1D tensors")
    return E("mul", V.unsqueeze(a, 1), V.unsqueeze(b, 0))


@composite("addmm")
def addmm(inp, m1, m2, beta=1, alpha=1):
    if not m1.dtype.is_floating_point:  # integer GEMM: PyTorch truncates beta and alpha
        if isinstance(beta, float) and len(m1.shape) == 2 and m1.shape[1] == 0:
            raise RuntimeError("result type Float can't be cast to the desired output type "
                               f"{D.torch_name(m1.dtype)}")
        beta, alpha = int(beta), int(alpha)
    if m1.dtype in (D.float16, D.bfloat16):  # PyTorch: accumulate and scale in float32
        dt = m1.dtype
        return O.cast(addmm(*(O.cast(t, D.float32) if t.dtype is dt else t
                              for t in (inp, m1, m2)), beta, alpha), dt)
    prod = mm(m1, m2)
    if alpha != 1:
        prod = E("mul", prod, alpha)
    if beta == 0:  # inp is ignored, NaNs included (PyTorch)
        return E("add", prod, E("mul", O.zeros(inp.shape, inp.dtype, inp.device), 0))
    return E("add", prod, inp if beta == 1 else E("mul", inp, beta))


@composite("matmul")
def matmul(a, b):
    """Every PyTorch matmul case as mm/bmm on (broadcast, reshaped) views."""
    matmul_check(a, b)
    da, db = len(a.shape), len(b.shape)
    if da == 2 and db == 2:
        return mm(a, b)
    if da >= 2 and db == 2 and C.is_contiguous(a):
        # fold the batch into rows: one GEMM, as for nn.Linear on (B, T, in) inputs
        lead = a.shape[:-1]
        r = mm(V.reshape(a, (C.numel(lead), a.shape[-1])), b)
        return V.reshape(r, lead + (b.shape[-1],))
    a2 = V.unsqueeze(a, 0) if da == 1 else a
    b2 = V.unsqueeze(b, 1) if db == 1 else b
    if da <= 2 and db <= 2:
        r = mm(a2, b2)
    else:
        n, k, m = a2.shape[-2], a2.shape[-1], b2.shape[-1]
        batch = C.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        B = C.numel(batch)
        a3 = V.reshape(V.expand(a2, batch + (n, k)), (B, n, k))
        b3 = V.reshape(V.expand(b2, batch + (k, m)), (B, k, m))
        r = V.reshape(O.bmm(a3, b3), batch + (n, m))
    if da == 1:
        r = V.squeeze(r, -2)
    if db == 1:
        r = V.squeeze(r, -1)
    return r


def matmul_check(a, b):
    """matmul's checks for every rank combination."""
    da, db = len(a.shape), len(b.shape)
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot_check(a, b)
    if da == 2 and db == 1:
        return mv_check(a, b)
    if da <= 2 and db == 2:
        k = a.shape[-1]
        if k != b.shape[0]:
            n = a.shape[0] if da == 2 else 1
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and "
                               f"{b.shape[0]}x{b.shape[1]})")
        return _same_dtype("matmul", a, b)
    _same_dtype("matmul", a, b)
    k = a.shape[-1]
    k2 = b.shape[-2] if db > 1 else b.shape[0]
    if k != k2:
        nb = C.numel(b.shape[:-2]) if db > 2 else 1
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {k}] but got: [{nb}, {k2}].")
    C.broadcast_shapes(a.shape[:-2] if da > 1 else (), b.shape[:-2] if db > 1 else ())


@composite("einsum")
def einsum(equation, *tensors):
    return _einsum.einsum(equation, *tensors)


@composite("linear")
@O.recorded("linear")
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` in one GEMM over the flattened leading dims (one graph
    node, so the weight gradient comes out contiguous: g.T @ x)."""
    lead = input.shape[:-1]
    x2 = input if len(input.shape) == 2 else V.reshape(input, (C.numel(lead), input.shape[-1]))
    res = mm(x2, V.t(weight))
    if bias is not None:
        E("add", res, bias, inplace=True)
    if len(input.shape) != 2:
        res = V.view(res, lead + (weight.shape[0],))
    return res


@gradient("linear")
def _(g, input, weight, bias_shape):
    g2 = V.reshape(g, (-1, g.shape[-1]))
    gx = V.reshape(mm(g2, weight), input.shape) if input.requires_grad else None
    gw = mm(V.t(g2), V.reshape(input, (-1, input.shape[-1]))) if weight.requires_grad else None
    gb = O.reduce("sum", g2, 0) if bias_shape is not None else None
    return gx, gw, gb


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
    defop(_n, "matmul", _sig, "(composite only)", inputs=_inputs, promotion="none")
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
    X = _empty((Bn, m, n), A.dtype, A.device)
    if Bn:
        k = tau.shape[-1]
        _launch("ormqr", (X,), (V.reshape(V.expand(A, batch + tuple(A.shape[-2:])),
                                          (Bn,) + tuple(A.shape[-2:])),
                                V.reshape(V.expand(tau, batch + (k,)), (Bn, k)),
                                V.reshape(V.expand(Cm, batch + (m, n)), (Bn, m, n))),
                left=bool(left), transpose=bool(transpose))
    return V.reshape(X, batch + (m, n))


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
