"""The op schema: every operator ember knows, defined once, as data.

An :class:`OpDef` holds everything about one op:

- ``name``: the key in every backend's ``kernels`` mapping.
- ``signature``: the user-facing signature (PyTorch's), for docs and error messages.
- ``kind``: one of :data:`KINDS` (``elementwise``, ``reduction``, ``matmul``, ``conv``, ...).
- ``promotion``: how the compute dtype and output dtype follow from the inputs:
  ``default`` (``result_type`` of the inputs; output the same), ``int_to_float``
  (integers and bool compute in the default float dtype), ``bool_out`` (compute in
  ``result_type``, output bool), ``logical`` (inputs as bool, output bool), ``integral``
  (bool and integer dtypes only), ``sum`` (bool/integers accumulate in int64),
  ``float_only``, ``long_out`` (output int64), ``none`` (the op states its dtypes).
- ``primitive``: every backend must implement it; all other ops have a ``composite``
  written in primitives that runs when a backend has no kernel.
- ``kernel``: the kernel's calling convention. Kernels are structured: the dispatcher
  computes output shape and dtype (the *meta* step, with PyTorch's error messages),
  promotes and broadcasts the inputs, allocates ``out`` and calls
  ``kernel(out, *inputs, **attrs)``. A composite takes the same arguments without
  ``out`` and returns the result.
- ``scalar`` (elementwise ops): the op's scalar body per dtype kind, in the expression
  language of ``expr.py``. Backends generate their elementwise kernels from it (C++ for
  cpu and cuda at build time, OpenCL C at run time), and an op with a body and no
  explicit composite computes its body with tensor ops where a backend has no kernel.
  ``modes`` gives other bodies selected by a string attribute (``div``'s
  ``rounding_mode``); ``attrs`` names the scalar attributes the body reads; ``checks``
  the input conditions that raise (integer division by zero).
- ``differentiable``: autograd needs a gradient formula for it.
- ``domain``: where the op is defined (sample inputs for the tests; the docs).
- ``out_dtype``: which ``out=`` tensor (and which ``self`` of the in-place form) PyTorch
  accepts, one of :data:`OUT_DTYPE_RULES`: ``cast`` (the result dtype must cast to it:
  arithmetic, floating-point math), ``exact`` (it must have the result dtype: the unary ops
  that keep their dtype, ``where``), ``any`` (comparisons and logical ops write 0/1 into
  any dtype); or ``fn(args) -> rule`` where the overload decides (``clamp``'s bounds,
  ``lerp``'s weight: numbers or tensors).
- ``meta``: PyTorch's checks of a call's arguments beyond promotion (``lerp``'s dtypes,
  ``addcmul``'s ``value``), ``fn(args, attrs)``, run before the inputs are promoted.
- ``barebones``: the op computes on PyTorch's barebones unsigned dtypes (uint16, uint32,
  uint64) as PyTorch's kernels do (``mul``, ``eq``, ``bitwise_and``, ``floor``, ...): its
  generated kernels are built for them too. Every other op refuses them (NotImplementedError
  naming the op and the dtype), as PyTorch's "not implemented for 'UInt16'".

In a signature, a positional ``Tensor`` parameter must be a tensor (``hypot``'s
``other``: PyTorch raises TypeError for a number); ``Tensor|Scalar`` takes a Python number
too (PyTorch's Scalar overloads: ``add(x, 2)``, ``pow(2, x)``). The frontend's functions and
methods are generated from that.

Definitions live in ``defs/`` (one module per op family) and are registered with
:func:`defop`; every list of op names elsewhere (kernels, frontend functions, test
tables, docs) is derived from :data:`OPS`.
"""
from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field

from . import expr as X

__all__ = ["OpDef", "Check", "Formula", "Unsaved", "OPS", "PRIMITIVES", "op", "defop", "gradient",
           "composite", "install_kernels", "uninstall_kernels",
           "coverage", "elementwise_ops", "table_hash", "KIND_MASKS", "KINDS",
           "OUT_DTYPE_RULES", "parse_signature", "KERNELS_GENERATION"]


@dataclass(frozen=True)
class Check:
    """A condition on one input that makes the op raise for some dtypes: when ``pred``
    (an expression over input ``input``) holds for any element and the dtype's kind is
    in ``kinds``, the op fails with ``error`` (``zero_div`` or ``neg_pow``)."""
    input: int
    pred: X.Expr
    kinds: tuple
    error: str


#: messages of the check errors (shared by every backend that can raise them)
CHECK_MESSAGES = {
    "zero_div": "ZeroDivisionError: integer division by zero",
    "neg_pow": "Integers to negative integer powers are not allowed.",
}


@dataclass(frozen=True)
class Formula:
    """A gradient formula (PyTorch's derivatives.yaml entry, as a function).

    ``fn(g, *named)`` returns one gradient per differentiable input of the op (``None``
    where there is none; a list for a ``Tensor[]`` input). The names after ``g`` say what
    the formula needs, and so what autograd saves: an input's name (the tensor, checked
    against in-place changes), ``<input>_shape`` / ``_dtype`` / ``_device`` (only that
    metadata), ``result`` (the output; ``result1``... for further outputs), or an
    attribute of the call (``dim``, ``keepdim``). A parameter with a default may be
    absent from a call.

    ``needs`` (optional) says which of those names each input's gradient reads, as
    PyTorch's autograd knows from derivatives.yaml: ``{"self": ("other",), "other":
    ("self",)}`` for ``mul``. An input tensor named there is then saved only when an input
    whose gradient reads it requires grad (``x * 2`` saves nothing, so a later in-place
    write to ``x`` is no error and ``x`` is not kept alive); in its place the formula gets
    an :class:`Unsaved` whose ``requires_grad`` is the input's, and must compute only the
    gradients of inputs that require grad; a ``result`` no gradient of the call reads is
    None. Names not in ``needs`` are always saved."""
    fn: object
    names: tuple
    defaults: dict
    needs: dict | None = None


class Unsaved:
    """What a gradient formula gets for an input tensor autograd did not save (see
    ``Formula.needs``): whether it required grad, and its metadata (shape, strides and
    dtype: mm lays a gradient out as its input was, as PyTorch keeps an unsaved input's
    sizes and strides)."""
    __slots__ = ("requires_grad", "shape", "_stride", "dtype")

    def __init__(self, t):
        self.requires_grad = t.requires_grad
        self.shape, self._stride, self.dtype = t.shape, t._stride, t.dtype

    def __repr__(self):
        return f"Unsaved(requires_grad={self.requires_grad})"


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
    scalar: dict | None = None
    modes: dict | None = None
    attrs: dict = field(default_factory=dict)
    checks: tuple = ()
    domain: tuple | None = None
    doc: str = ""
    #: the differentiable inputs, by name, in the order the entry point passes them
    inputs: tuple = ("self",)
    #: the gradient formula (``gradient``); None: not differentiable, or differentiated
    #: through its composite
    grad: Formula | None = None
    #: the autograd node's name, when not ``<Name>Backward0`` of the signature's name: a
    #: string or ``fn(inputs) -> str`` (pow's node depends on which operands are tensors)
    node: object = None
    #: the public forms the frontend generates for an elementwise op: ``ember.<name>``
    #: (function), ``Tensor.<name>`` (method), ``Tensor.<name>_`` (inplace), ``out=``
    variants: tuple = ("function", "method", "inplace", "out")
    #: the dtypes ``out=`` / the in-place ``self`` may have (see the module docstring)
    out_dtype: object = "cast"
    #: argument checks run before promotion, ``fn(args, attrs)`` (see the module docstring)
    meta: object = None
    #: whether the op computes on uint16 / uint32 / uint64 (see the module docstring)
    barebones: bool = False
    #: device_type -> kernel; the dispatch table for this op (one dict lookup per call).
    kernels: dict = field(default_factory=dict)

    def __repr__(self):
        return f"<op {self.name} ({'primitive' if self.primitive else 'composite'})>"

    # ---- elementwise bodies -------------------------------------------------------
    def bodies(self) -> dict:
        """mode value -> per-kind scalar mapping (``None``: the default body)."""
        if self.scalar is None:
            return {}
        out = {None: self.scalar}
        for _attr, variants in (self.modes or {}).items():
            for value, scalar in variants.items():
                if value is not None:
                    out[value] = scalar
        return out

    @property
    def mode_attr(self) -> str | None:
        return next(iter(self.modes)) if self.modes else None

    def body_inputs(self) -> list:
        """The body's input nodes (kernel arguments after ``out``), by position."""
        seen = {}
        for scalar in self.bodies().values():
            for e in scalar.values():
                for v in X.variables(e):
                    seen.setdefault(v.value[0], v)
        return [seen[i] for i in sorted(seen)]

    def out_type(self) -> str:
        e = next(iter(self.scalar.values()))
        return X.type_of(e)

    def kinds(self, mode=None) -> tuple:
        """The dtype kinds (float, sint, uint, bool) this op's body supports."""
        scalar = self.bodies()[mode]
        return tuple(k for k in X.KINDS if X.body_for(scalar, k) is not None)


#: the values of ``OpDef.out_dtype``
OUT_DTYPE_RULES = ("cast", "exact", "any")

#: the op kinds (what kind of meta step and kernel an op has)
KINDS = ("elementwise", "reduction", "scan", "index", "matmul", "creation", "copy", "random",
         "sort", "softmax", "conv", "pool", "norm", "embedding", "loss", "attention", "optim")

OPS: dict[str, OpDef] = {}
#: the primitives every backend implements (filled as definitions register)
PRIMITIVES: set = set()

# dtype kind -> the C++ backends' dtype mask names
KIND_MASKS = {"float": ("M_FLOAT",), "sint": ("M_I8", "M_I16", "M_I32", "M_I64"),
              "uint": ("M_U8",), "bool": ("M_BOOL",)}


def parse_signature(signature: str) -> tuple:
    """``(name, [(type, param, default or None, keyword_only)])`` of a PyTorch-style
    signature such as ``"sum(Tensor self, int[]? dim=None, *, dtype=None) -> Tensor"``."""
    head, _, rest = signature.partition("(")
    depth, cur, parts = 0, "", []
    for ch in rest:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    params, kwonly = [], False
    for p in (x.strip() for x in parts):
        if not p:
            continue
        if p == "*":
            kwonly = True
            continue
        decl, _, default = p.partition("=")
        words = decl.split()
        ptype, pname = (" ".join(words[:-1]), words[-1]) if len(words) > 1 else ("", words[0])
        params.append((ptype, pname, default.strip() or None, kwonly))
    return head.strip(), params


def _default_inputs(kind, signature) -> tuple:
    """Elementwise ops: every positional parameter; others: the first one."""
    _, params = parse_signature(signature)
    positional = tuple(p[1] for p in params if not p[3])
    return positional if kind == "elementwise" else positional[:1]


def _kernel_convention(inputs, attrs: dict, mode_attr) -> str:
    parts = ["out"] + [v.value[1] for v in inputs]
    if mode_attr:
        parts.append(f"{mode_attr}=None")
    parts += [f"{a}={d!r}" for a, d in attrs.items()]
    return "(" + ", ".join(parts) + ")"


def defop(name: str, kind: str, signature: str, kernel: str | None = None, *,
          promotion: str = "default", primitive: bool = False, differentiable: bool = True,
          scalar=None, modes: dict | None = None, attrs: dict | None = None,
          checks=(), domain=None, doc: str = "", inputs: tuple | None = None,
          node=None, variants: tuple | None = None, out_dtype=None, meta=None,
          barebones: bool = False) -> OpDef:
    """Register one op. ``scalar`` is an expression (every dtype kind) or a mapping from
    kind (float, sint, uint, bool, int, integral, num, any) to expression; ``attrs`` maps
    the body's scalar attributes to their defaults. ``out_dtype`` defaults to ``any`` for
    ops with a bool result (comparisons, logical ops), else ``cast``."""
    if name in OPS:
        raise ValueError(f"op {name!r} defined twice")
    if kind not in KINDS:
        raise ValueError(f"op {name!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    if scalar is not None and not isinstance(scalar, dict):
        scalar = {"any": scalar}
    for group in (scalar or {}):
        if group not in X._GROUPS:
            raise ValueError(f"{name}: unknown dtype kind {group!r} in scalar")
    if modes:
        modes = {a: {v: (s if isinstance(s, dict) else {"any": s}) for v, s in m.items()}
                 for a, m in modes.items()}
    attrs = dict(attrs or {})
    o = OpDef(name, kind, signature, kernel or "", promotion, primitive, differentiable,
              scalar=scalar, modes=modes, attrs=attrs, checks=tuple(checks),
              domain=domain, doc=doc,
              inputs=tuple(inputs) if inputs is not None else _default_inputs(kind,
                                                                               signature),
              node=node)
    if variants is not None:
        o.variants = tuple(variants)
    if out_dtype is None:
        out_dtype = "any" if promotion in ("bool_out", "logical") else "cast"
    if isinstance(out_dtype, str) and out_dtype not in OUT_DTYPE_RULES:
        raise ValueError(f"op {name!r}: unknown out_dtype {out_dtype!r} (one of "
                         f"{', '.join(OUT_DTYPE_RULES)})")
    o.out_dtype, o.meta, o.barebones = out_dtype, meta, barebones
    if scalar is not None:
        for scal in o.bodies().values():
            for e in scal.values():
                X.type_of(e)  # reject ill-typed bodies at definition time
        if not kernel:
            o.kernel = _kernel_convention(o.body_inputs(), attrs, o.mode_attr)
    OPS[name] = o
    if primitive:
        PRIMITIVES.add(name)
    return o


def gradient(*names: str, needs: dict | None = None):
    """Decorator: ``fn`` is the gradient formula of the ops ``names`` (see
    :class:`Formula`; ``needs``: which saved names each input's gradient reads)."""
    def deco(fn):
        params = list(inspect.signature(fn).parameters.values())[1:]
        f = Formula(fn, tuple(p.name for p in params),
                    {p.name: p.default for p in params if p.default is not p.empty}, needs)
        for n in names:
            o = op(n)
            for i, used in (needs or {}).items():
                if i not in o.inputs or not set(used) <= set(f.names):
                    raise ValueError(f"gradient of {n!r}: needs names input {i!r} or saved "
                                     f"names {used} that the op or formula does not have")
            if not o.differentiable:
                raise ValueError(f"op {n!r} is not differentiable but has a gradient formula")
            o.grad = f
        return fn
    return deco


def composite(name: str):
    """Decorator: ``fn`` computes op ``name`` from other ops (used where a backend has no
    kernel for it; for composite-only ops, always)."""
    def deco(fn):
        op(name).composite = fn
        return fn
    return deco


def op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def elementwise_ops() -> list:
    """The ops with a scalar body (their kernels are generated), in definition order."""
    return [o for o in OPS.values() if o.scalar is not None]


def table_hash() -> str:
    """A digest of every scalar body as kernels render it (``precise`` fallbacks, which
    only the tensor-op form computes, left out): generated kernels embed it, so a backend
    built from other definitions is caught when it loads."""
    h = hashlib.sha256()
    for o in elementwise_ops():
        h.update(o.name.encode())
        for mode, scal in o.bodies().items():
            h.update(repr(mode).encode())
            for k in sorted(scal):
                h.update(k.encode() + X.render_text(X.resolve_precise(scal[k])).encode())
        h.update(repr((sorted(o.attrs.items()), [(c.input, X.render_text(c.pred), c.kinds, c.error)
                                 for c in o.checks], o.barebones)).encode())
    return h.hexdigest()[:16]


#: bumped whenever a kernel table changes (``install_kernels``, ``uninstall_kernels``, the
#: profiler's timing wrappers): ember.compile's capture rebuilds its recorders then
KERNELS_GENERATION = [0]


def install_kernels(device_type: str, kernels) -> None:
    for name, k in kernels.items():
        OPS[name].kernels[device_type] = k
    KERNELS_GENERATION[0] += 1


def uninstall_kernels(device_type: str) -> None:
    for o in OPS.values():
        o.kernels.pop(device_type, None)
    KERNELS_GENERATION[0] += 1


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
