"""The op schema: every operator ember knows, defined once, as data.

An :class:`OpDef` holds everything about one op:

- ``name``: the key in every backend's ``kernels`` mapping.
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

Definitions live in ``defs/`` (one module per op family) and are registered with
:func:`defop`; every list of op names elsewhere (kernels, frontend functions, test
tables, docs) is derived from :data:`OPS`.
"""
from __future__ import annotations

import hashlib
import inspect
import warnings
from dataclasses import dataclass, field

from . import expr as X
from . import fallback

__all__ = ["OpDef", "Check", "OPS", "PRIMITIVES", "op", "defop", "validate_kernels",
           "install_kernels", "uninstall_kernels", "coverage", "elementwise_ops",
           "table_hash", "KIND_MASKS"]


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

    def inputs(self) -> list:
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


OPS: dict[str, OpDef] = {}
#: the primitives every backend implements (filled as definitions register)
PRIMITIVES: set = set()

# dtype kind -> the C++ backends' dtype mask names
KIND_MASKS = {"float": ("M_FLOAT",), "sint": ("M_I8", "M_I16", "M_I32", "M_I64"),
              "uint": ("M_U8",), "bool": ("M_BOOL",)}


def _kernel_convention(inputs, attrs: dict, mode_attr) -> str:
    parts = ["out"] + [v.value[1] for v in inputs]
    if mode_attr:
        parts.append(f"{mode_attr}=None")
    parts += [f"{a}={d!r}" for a, d in attrs.items()]
    return "(" + ", ".join(parts) + ")"


def defop(name: str, kind: str, signature: str, kernel: str | None = None, *,
          promotion: str = "default", primitive: bool = False, differentiable: bool = True,
          scalar=None, modes: dict | None = None, attrs: dict | None = None,
          checks=(), domain=None, doc: str = "") -> OpDef:
    """Register one op. ``scalar`` is an expression (every dtype kind) or a mapping from
    kind (float, sint, uint, bool, int, integral, num, any) to expression; ``attrs`` maps
    the body's scalar attributes to their defaults."""
    if name in OPS:
        raise ValueError(f"op {name!r} defined twice")
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
              domain=domain, doc=doc)
    if scalar is not None:
        for scal in o.bodies().values():
            for e in scal.values():
                X.type_of(e)  # reject ill-typed bodies at definition time
        if not kernel:
            o.kernel = _kernel_convention(o.inputs(), attrs, o.mode_attr)
    OPS[name] = o
    if primitive:
        PRIMITIVES.add(name)
    return o


def op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def elementwise_ops() -> list:
    """The ops with a scalar body (their kernels are generated), in definition order."""
    return [o for o in OPS.values() if o.scalar is not None]


def table_hash() -> str:
    """A digest of every scalar body: generated kernels embed it, so a backend built
    from other definitions is caught when it loads."""
    h = hashlib.sha256()
    for o in elementwise_ops():
        h.update(o.name.encode())
        for mode, scal in o.bodies().items():
            h.update(repr(mode).encode())
            for k in sorted(scal):
                h.update(k.encode() + X.render_text(scal[k]).encode())
        h.update(repr((sorted(o.attrs.items()), [(c.input, X.render_text(c.pred), c.kinds, c.error)
                                 for c in o.checks])).encode())
    return h.hexdigest()[:16]


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
        if fallback.enabled():
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
