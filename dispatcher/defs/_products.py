"""Matrix products: bmm (the primitive), mm, matmul and friends, einsum, linear (their
checks, composites and gradient formulas). Re-exported by :mod:`.linalg`."""
from __future__ import annotations

from .. import core as C
from .. import dtypes as D
from .. import _einsum
from .. import ops as O
from .. import views as V
from ..grad_mode import MODE
from ..schema import OPS, composite, defop, gradient

__all__ = []

E = O.elementwise

defop("bmm", "matmul", "bmm(Tensor self, Tensor mat2) -> Tensor",
      "(out, a, b)  # [B,n,k] @ [B,k,m]", primitive=True, inputs=("self", "mat2"))


@gradient("bmm", needs={"self": ("mat2",), "mat2": ("self",)})
def _(g, self, mat2):
    return (O.bmm(g, V.transpose(mat2, 1, 2)) if self.requires_grad else None,
            O.bmm(V.transpose(self, 1, 2), g) if mat2.requires_grad else None)


defop("mm", "matmul", "mm(Tensor self, Tensor mat2) -> Tensor",
      "(out, a, b)  # [n,k] @ [k,m]; a and b of out's dtype", inputs=("self", "mat2"),
      doc="bmm on batch-of-one views where a backend has no kernel of its own")

for _n, _sig, _inputs in [
    ("matmul", "matmul(Tensor self, Tensor other) -> Tensor", ("self", "other")),
    ("mv", "mv(Tensor self, Tensor vec) -> Tensor", ("self", "vec")),
    ("dot", "dot(Tensor self, Tensor other) -> Tensor", ("self", "other")),
    ("outer", "outer(Tensor self, Tensor vec2) -> Tensor", ("self", "vec2")),
    ("addmm", "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)"
              " -> Tensor", ("self", "mat1", "mat2")),
    ("einsum", "einsum(str equation, Tensor[] tensors) -> Tensor", ("tensors",)),
]:
    defop(_n, "matmul", _sig, "(composite only)", inputs=_inputs)
del _n, _sig, _inputs


def _linear_node(ins) -> str:
    # the node PyTorch's F.linear leaves as grad_fn: addmm (a matrix input with a bias) or mm;
    # a batched input is folded to a matrix and viewed back (a non-contiguous one goes
    # through matmul, then the bias is added)
    x, bias = ins[0], ins[2]
    if len(x.shape) == 2:
        return "AddmmBackward0" if bias is not None else "MmBackward0"
    if bias is None:
        return "UnsafeViewBackward0"
    return "ViewBackward0" if C.is_contiguous(x) else "AddBackward0"


defop("linear", "matmul", "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
      "(out, input, weight, bias)  # [n,k] @ [m,k]^T + [m], float32/float64, with a bias",
      inputs=("input", "weight", "bias"), node=_linear_node,
      doc="a kernel adds the bias inside the product; the composite is mm then an add")


def _same_dtype(name, a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}(): expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}")


def mm_check(a, b):
    """mm's shape and dtype checks."""
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise RuntimeError(f"mm(): self must be a matrix (got {len(a.shape)}D) and mat2 must be"
                           f" a matrix (got {len(b.shape)}D)")
    # (shapes unpacked, not indexed: Size's __getitem__ is Python, and this path is hot)
    _, ak = a.shape
    bk, _ = b.shape
    if ak != bk:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    _same_dtype("mm", a, b)


@O.recorded("mm")
def mm(self, mat2):
    mm_check(self, mat2)
    dev = C.same_device("mm", [self, mat2])
    out = _mm_kernel(self, mat2, dev)
    return _mm_composite(self, mat2) if out is None else out


def _mm_kernel(a, b, dev):
    """``a @ b`` by the device's mm kernel, or None where it has none for them (checked
    operands of one dtype on ``dev``)."""
    k = _MM.kernels.get(dev.type)
    n, inner = a.shape
    if k is None or a.dtype is D.bool_ or inner == 0:
        return None
    _, m = b.shape
    out = C.empty((n, m), a.dtype, dev)
    try:
        k(out, a, b)
    except Exception as e:
        O.launch_failed(_MM, dev, e)
    return out


@composite("mm")
def _mm_composite(self, mat2):
    mm_check(self, mat2)
    a, b = self, mat2
    # batch-of-one views made directly (the small-matrix path is overhead-bound)
    a3 = C.view_of(a, (1,) + a.shape, (max(1, C.numel(a.shape)),) + a._stride, a._offset)
    b3 = C.view_of(b, (1,) + b.shape, (max(1, C.numel(b.shape)),) + b._stride, b._offset)
    r = O._matmul_kernel("mm", a3, b3, None)
    return C.view_of(r, r.shape[1:], r._stride[1:], r._offset)


_MM = OPS["mm"]


def _column_major(t) -> bool:
    """A matrix laid out as the transpose of a contiguous one (``w.t()``)."""
    return t._stride[0] == 1 and t.shape[1] > 1 and t._stride[1] >= max(1, t.shape[0])


@gradient("mm", needs={"self": ("mat2",), "mat2": ("self",)})
def _(g, self, mat2):
    # each gradient in its input's layout (PyTorch's): for a transposed view (x @ w.t())
    # the product of the transposes, transposed, so the base's gradient comes out
    # contiguous instead of as a transposed copy
    # (the transposes made directly where nothing records them: the small-matrix backward
    # is overhead-bound)
    if MODE.grad:
        t, mm_ = V.t, mm
    else:
        t, mm_ = _t, _mm_unchecked
    ga = gb = None
    if self.requires_grad:
        ga = t(mm_(mat2, t(g))) if _column_major(self) else mm_(g, t(mat2))
    if mat2.requires_grad:
        gb = t(mm_(t(g), self)) if _column_major(mat2) else mm_(t(self), g)
    return ga, gb


def _mm_unchecked(a, b):
    """``mm`` of operands known to fit (a gradient formula's, outside autograd)."""
    out = None
    if a.dtype is b.dtype and a.device is b.device:
        out = _mm_kernel(a, b, a.device)
    return mm(a, b) if out is None else out


def _t(x):
    """``V.t`` of a matrix outside autograd, as one view."""
    rows, cols = x.shape
    r = C.view_of(x, (cols, rows), (x._stride[1], x._stride[0]), x._offset)
    r._base = x if x._base is None else x._base
    return r


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
    if da >= 2 and db == 2:
        # fold the batch into rows: one GEMM, as for nn.Linear on (B, T, in) inputs (a copy
        # of a when its rows do not fold into a view: cheaper than a GEMM per batch entry,
        # and the gradient of b is then one GEMM too, not a batched one summed)
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
    k = _LINEAR.kernels.get(input.device.type) if bias is not None else None
    if (k is not None and input.dtype in _LINEAR_DTYPES and weight.dtype is input.dtype
            and bias.dtype is input.dtype and len(weight.shape) == 2 and len(bias.shape) == 1
            and weight.shape[1] == input.shape[-1] and bias.shape[0] == weight.shape[0]
            and weight.device == input.device and bias.device == input.device):
        # a device's kernel that adds the bias inside the product (PyTorch's addmm)
        res = C.empty((x2.shape[0], weight.shape[0]), input.dtype, input.device)
        O.launch(_LINEAR, input.device, k, res, x2, weight, bias)
    elif bias is not None and input.dtype in (D.float16, D.bfloat16):
        # PyTorch's addmm: the bias is added to the float32 accumulators and the sum rounded
        # once (mm then an add in the low dtype rounds twice)
        res = addmm(bias, x2, V.t(weight))
    else:
        res = mm(x2, V.t(weight))
        if bias is not None:
            E("add", res, bias, inplace=True)
    if len(input.shape) != 2:
        res = V.view(res, lead + (weight.shape[0],))
    return res


_LINEAR = OPS["linear"]
_LINEAR_DTYPES = (D.float32, D.float64)


@gradient("linear", needs={"input": ("weight",), "weight": ("input",)})
def _(g, input, weight, bias_shape):
    g2 = V.reshape(g, (-1, g.shape[-1]))
    gx = V.reshape(mm(g2, weight), input.shape) if input.requires_grad else None
    gw = mm(V.t(g2), V.reshape(input, (-1, input.shape[-1]))) if weight.requires_grad else None
    gb = O.reduce("sum", g2, 0) if bias_shape is not None else None
    return gx, gw, gb
