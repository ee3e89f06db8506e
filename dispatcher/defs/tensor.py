"""The non-elementwise ops: copies, creation, random numbers, reductions, scans, sorting,
softmax, indexing, convolution building blocks and linear algebra.

Each entry gives the op's signature, kind, kernel convention and promotion rule; the
meta step (shapes, dtypes, PyTorch's errors) is in ``ops.py`` by kind, composites in
``composites.py``.
"""
from __future__ import annotations

from ..schema import defop

__all__ = []


def _def(name, kind, signature, kernel, promotion="default", primitive=False,
         differentiable=True):
    defop(name, kind, signature, kernel, promotion=promotion, primitive=primitive,
          differentiable=differentiable)


P = True  # marks primitives in the table below

# ---- copy, creation, random -------------------------------------------------------
_def("copy", "copy", "copy_(Tensor self, Tensor src)", "(out, src)", "none", P)
_def("fill", "creation", "fill_(Tensor self, Scalar value)", "(out, value)", "none", P, False)
_def("arange", "creation", "arange(start, end, step, *, dtype, device)",
     "(out, start, step)", "none", P, False)
_def("uniform", "random", "uniform_(Tensor self, float from=0, float to=1, *, generator)",
     "(out, low, high, seed, offset)", "none", P, False)
_def("normal", "random", "normal_(Tensor self, float mean=0, float std=1, *, generator)",
     "(out, mean, std, seed, offset)", "none", P, False)

# ---- reductions (out keeps reduced dims as size 1; dims sorted, non-negative) --------
_def("sum", "reduction", "sum(Tensor self, int[]? dim=None, bool keepdim=False, *, dtype=None)",
     "(out, x, dims)", "sum", P)
_def("max", "reduction", "amax(Tensor self, int[] dim=(), bool keepdim=False)",
     "(out, x, dims)", "default", P)
_def("argmax", "reduction", "argmax(Tensor self, int? dim=None, bool keepdim=False)",
     "(out, x, dim)", "long_out", P, False)
_def("min", "reduction", "amin(Tensor self, int[] dim=(), bool keepdim=False)",
     "(out, x, dims)", "default")
_def("argmin", "reduction", "argmin(Tensor self, int? dim=None, bool keepdim=False)",
     "(out, x, dim)", "long_out", differentiable=False)
_def("prod", "reduction", "prod(Tensor self, int? dim=None, bool keepdim=False, *, dtype=None)",
     "(out, x, dims)", "sum")
_def("mean", "reduction", "mean(Tensor self, int[]? dim=None, bool keepdim=False, *, dtype=None)",
     "(out, x, dims)", "float_only")
_def("logsumexp", "reduction", "logsumexp(Tensor self, int[] dim, bool keepdim=False)",
     "(out, x, dims)", "int_to_float")
_def("var", "reduction",
     "var(Tensor self, int[]? dim=None, *, Scalar correction=1, bool keepdim=False)",
     "(out, x, dims, correction)", "float_only")

# ---- scans, sort, softmax ---------------------------------------------------------
_def("cumsum", "scan", "cumsum(Tensor self, int dim, *, dtype=None) -> Tensor",
     "(out, x, dim)", "sum")
_def("cumprod", "scan", "cumprod(Tensor self, int dim, *, dtype=None) -> Tensor",
     "(out, x, dim)", "sum")
_def("sort", "sort",
     "sort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False)",
     "(values, indices, x, dim, descending, stable)", "none", P)
_def("softmax", "softmax", "softmax(Tensor self, int dim, *, dtype=None) -> Tensor",
     "(out, x, dim)", "float_only")
_def("log_softmax", "softmax", "log_softmax(Tensor self, int dim, *, dtype=None) -> Tensor",
     "(out, x, dim)", "float_only")

# ---- indexing ---------------------------------------------------------------------
_def("gather", "index", "gather(Tensor self, int dim, Tensor index) -> Tensor",
     "(out, x, dim, index)", "none", P)
_def("scatter", "index",
     "scatter_(Tensor self, int dim, Tensor index, Tensor src, *, str? reduce=None)",
     "(out, dim, index, src, reduce=None)  # in place into out", "none", P)
_def("nonzero", "index", "nonzero(Tensor self) -> Tensor",
     "(out, x)  # out [n, ndim] int64, n counted by the dispatcher", "none",
     differentiable=False)

# ---- convolution and pooling building blocks (1 to 3 spatial dims) ------------------
_def("im2col", "index",
     "im2col(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride, "
     "int[] blocks, *, Scalar value=0) -> Tensor  # (N, C, *kernel_size, *blocks)",
     "(out, x, kernel, dilation, padding, stride, blocks, value=0)  # out: any strides",
     "none")
_def("col2im", "index",
     "col2im(Tensor cols, int[] kernel_size, int[] dilation, int[] padding, int[] stride, "
     "int[] size) -> Tensor  # (N, C, *k, *blocks) summed into (N, C, *size)",
     "(out, cols, kernel, dilation, padding, stride, size)", "none")
_def("max_pool", "index",
     "max_pool(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride, "
     "int[] blocks) -> (Tensor values, Tensor indices)",
     "(values, indices, x, kernel, dilation, padding, stride, blocks)", "none")

# ---- linear algebra ---------------------------------------------------------------
_def("bmm", "matmul", "bmm(Tensor self, Tensor mat2) -> Tensor",
     "(out, a, b)  # [B,n,k] @ [B,k,m]", "default", P)

# ---- composite-only ops: built from the ops above at the call site; listed so the
# schema names every op once (a backend may register a kernel for them later).
for _n, _kind, _sig in [
    ("mm", "matmul", "mm(Tensor self, Tensor mat2) -> Tensor"),
    ("matmul", "matmul", "matmul(Tensor self, Tensor other) -> Tensor"),
    ("mv", "matmul", "mv(Tensor self, Tensor vec) -> Tensor"),
    ("dot", "matmul", "dot(Tensor self, Tensor other) -> Tensor"),
    ("outer", "matmul", "outer(Tensor self, Tensor vec2) -> Tensor"),
    ("addmm", "matmul", "addmm(Tensor self, Tensor mat1, Tensor mat2, *, beta=1, alpha=1)"),
    ("einsum", "matmul", "einsum(str equation, Tensor[] tensors) -> Tensor"),
    ("cat", "copy", "cat(Tensor[] tensors, int dim=0) -> Tensor"),
    ("stack", "copy", "stack(Tensor[] tensors, int dim=0) -> Tensor"),
    ("flip", "index", "flip(Tensor self, int[] dims) -> Tensor"),
    ("roll", "index", "roll(Tensor self, int[] shifts, int[]? dims=None) -> Tensor"),
    ("repeat", "copy", "repeat(Tensor self, int[] repeats) -> Tensor"),
    ("tril", "index", "tril(Tensor self, int diagonal=0) -> Tensor"),
    ("triu", "index", "triu(Tensor self, int diagonal=0) -> Tensor"),
    ("index_select", "index", "index_select(Tensor self, int dim, Tensor index) -> Tensor"),
    ("index_add", "index", "index_add(Tensor self, int dim, Tensor index, Tensor source, *, "
                           "alpha=1) -> Tensor"),
    ("masked_fill", "index", "masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor"),
    ("index", "index", "index(Tensor self, indices) -> Tensor  # advanced indexing x[idx]"),
    ("index_put", "index", "index_put_(Tensor self, indices, Tensor values, bool accumulate)"),
    ("topk", "sort", "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True)"),
    ("std", "reduction", "std(Tensor self, int[]? dim=None, *, correction=1, keepdim=False)"),
    ("norm", "reduction", "norm(Tensor self, p=2, dim=None, keepdim=False) -> Tensor"),
    ("all", "reduction", "all(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"),
    ("any", "reduction", "any(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"),
    ("linspace", "creation", "linspace(start, end, steps, *, dtype, device) -> Tensor"),
    ("eye", "creation", "eye(n, m=None, *, dtype, device) -> Tensor"),
    ("randint", "random", "randint(low, high, size, *, generator, dtype, device) -> Tensor"),
    ("randperm", "random", "randperm(n, *, generator, dtype, device) -> Tensor"),
]:
    _def(_n, _kind, _sig, "(composite only)", "none",
         differentiable=_kind not in ("creation", "random") and _n not in ("all", "any"))

del _n, _kind, _sig
