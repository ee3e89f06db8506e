"""The op schema: every operator ember knows, listed once, as data.

Fields of :class:`OpDef`:

- ``name``: the op's name — the key in every backend's ``kernels`` mapping.
- ``signature``: the user-facing signature (PyTorch's), for docs and error messages.
- ``kind``: ``elementwise``, ``reduction``, ``scan``, ``index``, ``matmul``, ``creation``,
  ``copy``, ``random``, ``sort``, ``softmax``.
- ``promotion``: how the compute dtype and output dtype follow from the inputs:
  ``default`` (``result_type`` of the inputs; output the same), ``int_to_float``
  (integers and bool compute in the default float dtype), ``bool_out`` (compute in
  ``result_type``, output bool), ``logical`` (inputs as bool, output bool), ``integral``
  (bool and integer dtypes only), ``sum`` (bool/integers accumulate in int64),
  ``float_only``, ``long_out`` (output int64), ``none`` (the op states its dtypes).
- ``primitive``: every backend must implement it; all other ops have a ``composite``
  written in primitives (see ``composites.py``) that runs when a backend has no kernel.
- ``kernel``: the kernel's calling convention. Kernels are structured: the dispatcher
  computes output shape and dtype (the *meta* step, with PyTorch's error messages),
  promotes and broadcasts the inputs, allocates ``out`` and calls
  ``kernel(out, *inputs, **attrs)``. A composite takes the same arguments without
  ``out`` and returns the result.
- ``differentiable``: autograd needs a gradient formula for it.

The meta step lives in ``ops.py`` next to each op's entry point, shared by all kinds.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

__all__ = ["OpDef", "OPS", "PRIMITIVES", "op", "validate_kernels", "install_kernels",
           "uninstall_kernels", "coverage"]


@dataclass
class OpDef:
    name: str
    kind: str
    signature: str
    kernel: str
    promotion: str = "default"
    primitive: bool = False
    differentiable: bool = True
    composite: object = None
    #: device_type -> kernel; the dispatch table for this op (one dict lookup per call).
    kernels: dict = field(default_factory=dict)

    def __repr__(self):
        return f"<op {self.name} ({'primitive' if self.primitive else 'composite'})>"


OPS: dict[str, OpDef] = {}


def _def(name, kind, signature, kernel, promotion="default", primitive=False,
         differentiable=True):
    OPS[name] = OpDef(name, kind, signature, kernel, promotion, primitive, differentiable)


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

# ---- elementwise: unary -----------------------------------------------------------
for _n in ("exp", "log", "sin", "cos", "sqrt", "erf"):
    _def(_n, "elementwise", f"{_n}(Tensor self) -> Tensor", "(out, x)", "int_to_float", P)
_def("floor", "elementwise", "floor(Tensor self) -> Tensor", "(out, x)", "default", P)
_def("bitwise_not", "elementwise", "bitwise_not(Tensor self) -> Tensor", "(out, x)",
     "integral", P, False)
for _n in ("expm1", "log1p", "log2", "rsqrt", "tan", "tanh", "sigmoid", "reciprocal"):
    _def(_n, "elementwise", f"{_n}(Tensor self) -> Tensor", "(out, x)", "int_to_float")
for _n in ("neg", "abs", "sign", "ceil", "round", "trunc"):
    _def(_n, "elementwise", f"{_n}(Tensor self) -> Tensor", "(out, x)", "default")
for _n in ("isnan", "isinf", "isfinite"):
    _def(_n, "elementwise", f"{_n}(Tensor self) -> Tensor", "(out, x)", "bool_out",
         differentiable=False)
_def("logical_not", "elementwise", "logical_not(Tensor self) -> Tensor", "(out, x)", "logical",
     differentiable=False)

# ---- elementwise: binary ----------------------------------------------------------
for _n in ("add", "sub", "mul", "maximum", "minimum", "fmod", "pow"):
    _def(_n, "elementwise", f"{_n}(Tensor self, Tensor other) -> Tensor", "(out, a, b)",
         "default", P)
_def("div", "elementwise",
     "div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor",
     "(out, a, b, rounding_mode=None)", "default", P)
for _n in ("eq", "lt"):
    _def(_n, "elementwise", f"{_n}(Tensor self, Tensor other) -> Tensor", "(out, a, b)",
         "bool_out", P, False)
for _n in ("ne", "le", "gt", "ge"):
    _def(_n, "elementwise", f"{_n}(Tensor self, Tensor other) -> Tensor", "(out, a, b)",
         "bool_out", differentiable=False)
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _def(_n, "elementwise", f"{_n}(Tensor self, Tensor other) -> Tensor", "(out, a, b)",
         "integral", P, False)
for _n in ("logical_and", "logical_or", "logical_xor"):
    _def(_n, "elementwise", f"{_n}(Tensor self, Tensor other) -> Tensor", "(out, a, b)",
         "logical", differentiable=False)
_def("remainder", "elementwise", "remainder(Tensor self, Tensor other) -> Tensor",
     "(out, a, b)", "default")

# ---- elementwise: ternary ---------------------------------------------------------
_def("where", "elementwise", "where(Tensor condition, Tensor self, Tensor other) -> Tensor",
     "(out, cond, a, b)", "none", P)
_def("lerp", "elementwise", "lerp(Tensor self, Tensor end, Tensor weight) -> Tensor",
     "(out, a, b, w)", "default")
_def("addcmul", "elementwise",
     "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
     "(out, a, t1, t2, value=1)", "default")
_def("addcdiv", "elementwise",
     "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
     "(out, a, t1, t2, value=1)", "default")
_def("clamp", "elementwise", "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
     "(out, x, lo, hi)", "default")

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

#: The primitives every backend implements.
PRIMITIVES = frozenset(n for n, o in OPS.items() if o.primitive)


def op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def validate_kernels(plugin: str, kernels) -> None:
    """Reject unknown op names, non-callables, wrong arity and missing primitives."""
    if not hasattr(kernels, "items"):
        raise TypeError(f"plugin {plugin!r}: kernels must be a mapping of op name to kernel")
    unknown = sorted(k for k in kernels if k not in OPS)
    if unknown:
        raise ValueError(f"plugin {plugin!r} registers kernels for unknown ops: "
                         f"{', '.join(unknown)} (see ember.dispatcher.schema.OPS)")
    for name, k in kernels.items():
        if not callable(k):
            raise TypeError(f"plugin {plugin!r}: kernel for {name!r} is not callable")
        _check_arity(plugin, name, k)
    missing = sorted(PRIMITIVES - set(kernels))
    if missing:
        from . import fallback
        if fallback.enabled():
            import warnings
            warnings.warn(f"plugin {plugin!r} is missing required primitives "
                          f"({', '.join(missing)}); they run on the CPU (EMBER_FALLBACK=cpu)",
                          RuntimeWarning, stacklevel=2)
            return
        raise ValueError(f"plugin {plugin!r} is missing required primitives: "
                         f"{', '.join(missing)}. {fallback.hint()}")


def _check_arity(plugin, name, k):
    try:
        sig = inspect.signature(k)
    except (TypeError, ValueError):  # builtins (pybind11) carry no signature
        return
    spec = OPS[name].kernel.split("#")[0].strip()
    if spec.startswith("(composite"):
        return
    params = [p.strip() for p in spec.strip("()").split(",") if p.strip()]
    positional = [p for p in params if "=" not in p]
    try:
        sig.bind(*range(len(positional)))
    except TypeError:
        raise TypeError(f"plugin {plugin!r}: kernel for {name!r} has signature {sig}, "
                        f"expected {spec}") from None


def install_kernels(device_type: str, kernels) -> None:
    for name, k in kernels.items():
        OPS[name].kernels[device_type] = k


def uninstall_kernels(device_type: str) -> None:
    for o in OPS.values():
        o.kernels.pop(device_type, None)


def coverage(device_type: str) -> dict:
    """op name -> 'native' | 'composite' | 'missing' for one device type."""
    out = {}
    for name, o in OPS.items():
        if device_type in o.kernels:
            out[name] = "native"
        elif o.composite is not None:
            out[name] = "composite"
        else:
            out[name] = "missing"
    return out
