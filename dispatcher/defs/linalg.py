"""Matrix products: bmm (the primitive), mm, matmul and friends, einsum, linear; and
torch.linalg's decompositions and solvers (LAPACK kernels, their gradient formulas).

One import point for them: the definitions live in :mod:`._products`, :mod:`.lapack` and
:mod:`.lapack_functions`.
"""
from ._products import (addmm, dot, dot_check, einsum, linear, matmul, matmul_check, mm, mm_check,
                        mv, mv_check, outer)
from .lapack import (LinAlgError, check_float, check_info, check_matrix, check_same_dtype,
                     diag_embed, eigh, eigh_raw, eigvalsh, eye_like, host_ints, lu_factor_ex,
                     lu_permutation, lu_solve_raw, lu_unpack, mT, svd, svd_backward, svd_raw,
                     svdvals, tri)
from .lapack_functions import (cholesky, cholesky_ex, det, geqrf, host_float_max,
                               householder_product, inv, ldl_factor_ex, ldl_solve, lstsq_all,
                               lstsq_solution, matrix_exp, not_pd_message, ormqr, pinv,
                               pinv_backward, qr, rank_tolerance, singular_inv_message, slogdet,
                               solve, solve_matrix, solve_singular_message, solve_triangular)

__all__ = ["mm", "mv", "dot", "outer", "addmm", "matmul", "einsum", "linear", "mm_check",
           "mv_check", "dot_check", "matmul_check", "LinAlgError", "det", "slogdet", "inv",
           "solve", "solve_matrix", "solve_triangular", "cholesky", "cholesky_ex", "qr", "geqrf",
           "householder_product", "ormqr", "svd", "svd_raw", "svdvals", "svd_backward", "eigh",
           "eigh_raw", "eigvalsh", "pinv", "pinv_backward", "lstsq_all", "lstsq_solution",
           "matrix_exp", "lu_factor_ex", "lu_solve_raw", "lu_permutation", "lu_unpack",
           "ldl_factor_ex", "ldl_solve", "check_matrix", "check_float", "check_info",
           "check_same_dtype", "host_ints", "eye_like", "mT", "tri", "diag_embed",
           "rank_tolerance", "singular_inv_message", "not_pd_message", "solve_singular_message",
           "host_float_max"]
