"""``ember.library``: custom operators written in Python (PyTorch's ``torch.library``).

``custom_op("mylib::name", mutates_args=...)`` turns a function with type annotations into
an operator: callable as it is and as ``ember.ops.mylib.name`` (``.default``), with
per-device kernels (``register_kernel``), a gradient (``register_autograd``), a shape
function (``register_fake``), and PyTorch's checks: annotations are required, only the
arguments named in ``mutates_args`` may be written (their version counters are bumped, so
autograd sees the write), and an output may not be, or alias, an input.

Example:
    >>> @ember.library.custom_op("mylib::scale", mutates_args=())
    ... def scale(x: ember.Tensor, k: float) -> ember.Tensor:
    ...     return x * k
    >>> ember.ops.mylib.scale(ember.ones(2), 3.0)
    tensor([3., 3.])

How ember differs: ops run their Python kernel through ember's dispatcher (the kernel's
own ember calls are the ops that run, recorded below autograd); ``ember.ops.aten.<name>``
reaches the ember function of that name for every overload (aten's overloads are
PyTorch's C++ signatures, which ember's Python functions take in one); ``Library.impl`` for
``"Meta"`` keys registers a shape function as ``register_fake`` does; loading C++
operator libraries (``ember.ops.load_library``) and ``register_torch_dispatch`` raise
``NotImplementedError``.
"""
from __future__ import annotations

import collections.abc
import inspect
import sys
import types
import typing

from ember.dispatcher import core as C
from ember.dispatcher.grad_mode import MODE

from . import autograd
from ._ops_namespace import OPS as _OPS, OpOverload, OpOverloadPacket
from ._tensor import Tensor

__all__ = ["custom_op", "CustomOpDef", "register_fake", "register_autograd",
           "register_kernel", "register_vmap", "opcheck", "Library", "define", "impl",
           "infer_schema"]

_SCALARS = {int: "SymInt", float: "float", bool: "bool", str: "str"}


def _type_name(ann, where) -> str:
    """The schema type of one annotation (PyTorch's ``infer_schema`` vocabulary)."""
    if ann is Tensor:
        return "Tensor"
    if ann in _SCALARS:
        return _SCALARS[ann]
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return _type_name(inner, where) + "?"
    if origin in (list, tuple, collections.abc.Sequence):
        if args and args[0] in (Tensor, int, float, bool):
            return _type_name(args[0], where) + "[]"
    if ann is type(None) or ann is None:
        return "()"
    raise ValueError(f"infer_schema(func): {where} has unsupported type {ann!r}. The valid "
                     f"types are Tensor, int, float, bool, str, their Optional forms and "
                     f"lists of Tensor, int, float and bool.")


def infer_schema(fn, /, *, mutates_args, op_name=None) -> str:
    """The schema string of a Python function from its type annotations (PyTorch's
    ``torch.library.infer_schema``): ``"(Tensor x, float k) -> Tensor"``; an argument
    named in ``mutates_args`` is written ``Tensor(a!)``.

    Example:
        >>> def f(x: ember.Tensor, k: float) -> ember.Tensor: ...
        >>> ember.library.infer_schema(f, mutates_args=())
        '(Tensor x, float k) -> Tensor'
    """
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    parts = []
    mutated = set(() if mutates_args == "unknown" else mutates_args)
    for i, (name, p) in enumerate(sig.parameters.items()):
        if name not in hints:
            raise ValueError(f"infer_schema(func): Parameter {name} must have a type "
                             f"annotation. Got func with signature {sig})")
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): Parameter {name} cannot be *args or "
                             f"**kwargs. Got func with signature {sig})")
        t = _type_name(hints[name], f"Parameter {name}")
        if name in mutated:
            if not t.startswith("Tensor"):
                raise ValueError(f"infer_schema(func): mutates_args names {name!r}, which is "
                                 f"not a Tensor argument")
            t = f"Tensor(a{i}!)" + t[len("Tensor"):]
        default = "" if p.default is p.empty else f"={p.default!r}"
        kw = "*, " if p.kind is p.KEYWORD_ONLY and not any(
            "*, " in x for x in parts) else ""
        parts.append(f"{kw}{t} {name}{default}")
    for name in mutated:
        if name not in sig.parameters:
            raise ValueError(f"infer_schema(func): mutates_args names {name!r}, which is not "
                             f"an argument of the function")
    if "return" not in hints:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. "
                         f"Please add one. Got func with signature {sig})")
    ret = hints["return"]
    if typing.get_origin(ret) is tuple:
        out = "(" + ", ".join(_type_name(a, "the return") for a in typing.get_args(ret)) + ")"
    else:
        out = _type_name(ret, "the return")
    schema = "(" + ", ".join(parts) + ") -> " + out
    return schema if op_name is None else op_name + schema


def _tensors(values) -> list:
    out = []
    for v in values:
        if isinstance(v, C.TensorBase):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out += [x for x in v if isinstance(x, C.TensorBase)]
    return out


def _device_type(args) -> str | None:
    for t in _tensors(args):
        return t.device.type
    return None


class _NoGradient(autograd.Function):
    """The node of an op's outputs when no gradient was registered: backward raises."""

    @staticmethod
    def forward(ctx, qualname, result, *inputs):
        ctx.qualname = qualname
        return result

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"Trying to backward through {ctx.qualname}.default but no "
                           f"autograd formula was registered. Please use register_autograd "
                           f"to add one.")


class CustomOpDef:
    """An operator made by :func:`custom_op` (PyTorch's ``CustomOpDef``): call it, or reach
    it as ``ember.ops.<namespace>.<name>``."""

    def __init__(self, namespace, name, fn, mutates_args, schema):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._schema = schema
        self._mutates = frozenset(fn.__code__.co_varnames) if mutates_args == "unknown" \
            else frozenset(mutates_args)
        self._signature = inspect.signature(fn)
        self._kernels: dict = {}        # device type -> kernel
        self._disabled: set = set()
        self._fake = None
        self._backward = None
        self._setup_context = None
        self._vmap = None
        self.__name__ = name
        self.__doc__ = fn.__doc__
        self._opoverload = OpOverload(self, "default")

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    # ---- registration ----

    def register_kernel(self, device_types, fn=None, /):
        """The kernel for ``device_types`` (a name or a list: ``"cpu"``, ``"cuda"``, ...);
        others use the function the op was made from."""
        def register(f):
            for d in ([device_types] if isinstance(device_types, str) else device_types):
                self._kernels[d] = f
            return f
        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        """The shape function (outputs of the right shape, dtype and device, values
        unspecified): used on ``meta`` tensors and checked by :func:`opcheck`."""
        self._fake = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """The gradient: ``setup_context(ctx, inputs, output)`` saves what
        ``backward(ctx, *grads)`` needs; backward returns one gradient per input (None for
        non-tensors)."""
        self._backward = backward
        self._setup_context = setup_context

    def register_vmap(self, func=None, /):
        """A vmap rule (kept; ember's vmap runs the op once per element)."""
        def register(f):
            self._vmap = f
            return f
        return register if func is None else register(func)

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        """Not supported: ember has no ``__torch_dispatch__``."""
        raise NotImplementedError("register_torch_dispatch: ember has no __torch_dispatch__ "
                                  "protocol")

    def set_kernel_enabled(self, device_type, enabled=True):
        """A context manager turning the ``register_kernel`` kernel of ``device_type`` off
        (the op's own function runs) or on."""
        op = self

        class _Enabled:
            def __enter__(self):
                self.was = device_type not in op._disabled
                (op._disabled.discard if enabled else op._disabled.add)(device_type)

            def __exit__(self, *exc):
                (op._disabled.discard if self.was else op._disabled.add)(device_type)
        return _Enabled()

    # ---- calling ----

    def _kernel(self, args):
        dev = _device_type(args)
        if dev == "meta":
            if self._fake is None:
                raise RuntimeError(f"{self._qualname}: no fake (meta) implementation was "
                                   f"registered; use register_fake")
            return self._fake
        k = self._kernels.get(dev)
        return self._init_fn if k is None or dev in self._disabled else k

    def __call__(self, *args, **kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = list(bound.arguments.values())
        inputs = _tensors(values)
        kernel = self._kernel(values)
        # the kernel runs below autograd: the op is one node, its formula the registered one
        with autograd.no_grad():
            result = kernel(*bound.args, **bound.kwargs)
        self._check_outputs(result, inputs)
        for name in self._mutates:
            v = bound.arguments.get(name)
            for t in _tensors([v]):
                C.bump(t)
        # (writes to other arguments are for opcheck to find, as in PyTorch)
        differentiable = MODE.grad and any(t.requires_grad for t in inputs)
        if not differentiable or result is None:
            return result
        return self._attach(result, bound, values)

    def _check_outputs(self, result, inputs):
        outs = _tensors(result if isinstance(result, (tuple, list)) else [result])
        storages = {id(t._storage) for t in inputs}
        if any(id(o._storage) in storages for o in outs) or \
                len({id(o._storage) for o in outs}) != len(outs):
            raise RuntimeError(f"{self._qualname}: The output of this custom operator (1) "
                               f"must not also be an input to this custom operator and (2) "
                               f"may not alias any inputs to this custom operator or other "
                               f"returns. The most common way to trigger this error is if "
                               f"we have y = custom_op(x) and y and x are the same Tensor. "
                               f"Please instead return a clone of the offending output "
                               f"tensor(s) (e.g. return x.clone()) or refactor the custom "
                               f"operator to not return y.")

    def _attach(self, result, bound, values):
        if self._backward is None:
            if isinstance(result, tuple):
                return tuple(_NoGradient.apply(f"{self._namespace}.{self._name}", r,
                                               *_tensors(values))
                             if isinstance(r, C.TensorBase) else r for r in result)
            return _NoGradient.apply(f"{self._namespace}.{self._name}", result,
                                     *_tensors(values))
        return _function_for(self).apply(result, *values)


def _function_for(op):
    """The autograd Function that gives an op's outputs its registered gradient."""
    fn = getattr(op, "_autograd_fn", None)
    if fn is not None and fn.op_version == (op._backward, op._setup_context):
        return fn

    class Gradient(autograd.Function):
        @staticmethod
        def forward(ctx, result, *inputs):
            if op._setup_context is not None:
                op._setup_context(ctx, tuple(inputs), result)
            ctx._ember_n = len(inputs)
            return result

        @staticmethod
        def backward(ctx, *grads):
            got = op._backward(ctx, *grads)
            got = got if isinstance(got, tuple) else (got,)
            if len(got) != ctx._ember_n:
                raise RuntimeError(f"{op._qualname}: the backward registered with "
                                   f"register_autograd returned {len(got)} gradients; "
                                   f"expected one per input ({ctx._ember_n})")
            return (None,) + got

    Gradient.__name__ = f"{op._namespace}_{op._name}_defaultBackward"
    Gradient.op_version = (op._backward, op._setup_context)
    op._autograd_fn = Gradient
    return Gradient


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None,
              tags=None):
    """Make ``fn`` the operator ``name`` (``"namespace::opname"``), PyTorch's
    ``torch.library.custom_op``; as a decorator when ``fn`` is not given.

    Args:
        name: ``"namespace::opname"``.
        mutates_args: the names of the tensor arguments the function writes (``()`` for
            none; ``"unknown"``: any).
        device_types: the device types ``fn`` is the kernel of (default: all).
        schema: the schema string; inferred from the annotations when not given.

    Example:
        >>> @ember.library.custom_op("mylib::double", mutates_args=())
        ... def double(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> double(ember.ones(2))
        tensor([2., 2.])
    """
    def make(f):
        namespace, opname = name.split("::") if "::" in name else (None, name)
        if namespace is None:
            raise ValueError(f"custom_op: the name must be 'namespace::opname', got {name!r}")
        s = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        op = CustomOpDef(namespace, opname, f, mutates_args, s)
        if device_types is not None:
            op._init_fn = _refusing(op, f, device_types)
            for d in ([device_types] if isinstance(device_types, str) else device_types):
                op._kernels[d] = f
        _OPS[op._qualname] = op
        return op
    return make if fn is None else make(fn)


def _refusing(op, f, device_types):
    def no_kernel(*args, **kwargs):
        raise NotImplementedError(f"{op._qualname}: no kernel for device type "
                                  f"{_device_type(list(args) + list(kwargs.values()))!r} "
                                  f"(it has kernels for {device_types})")
    return no_kernel


def _op(op) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, (OpOverload, OpOverloadPacket)):
        return op._op
    found = _OPS.get(op)
    if found is None:
        raise ValueError(f"{op!r} is not an operator made by ember.library.custom_op or "
                         f"define")
    return found


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    """``op.register_fake`` for an op given by name or object (a decorator without ``fn``)."""
    def register(f):
        return _op(op).register_fake(f)
    return register if fn is None else register(fn)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """``op.register_autograd`` for an op given by name or object."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """``op.register_kernel`` for an op given by name or object."""
    return _op(op).register_kernel(device_types, fn)


def register_vmap(op, func=None, /, *, lib=None):
    """``op.register_vmap`` for an op given by name or object."""
    return _op(op).register_vmap(func)


def _clone_args(values):
    return [v.detach().clone() if isinstance(v, C.TensorBase) else
            [x.detach().clone() if isinstance(x, C.TensorBase) else x for x in v]
            if isinstance(v, (list, tuple)) else v for v in values]


def _same(a, b) -> bool:
    ta, tb = _tensors([a]), _tensors([b])
    return len(ta) == len(tb) and all(
        x.shape == y.shape and x.dtype == y.dtype and bool((x == y).all() | (x != x).all())
        for x, y in zip(ta, tb))


def opcheck(op, args, kwargs=None, *, test_utils=("test_schema",
                                                  "test_autograd_registration",
                                                  "test_faketensor",
                                                  "test_aot_dispatch_dynamic"),
            raise_exception=True, atol=None, rtol=None):
    """Check a custom op on sample arguments (PyTorch's ``torch.library.opcheck``):
    ``test_schema`` (only ``mutates_args`` are written), ``test_autograd_registration``
    (inputs requiring grad have a registered gradient), ``test_faketensor`` (the fake
    implementation gives the real outputs' shapes and dtypes) and
    ``test_aot_dispatch_dynamic`` (inside ``ember.compile`` the op gives eager's values).
    Returns ``{test: "SUCCESS" | exception}``; raises the first failure unless
    ``raise_exception=False``."""
    o = _op(op)
    kwargs = kwargs or {}
    tests = [test_utils] if isinstance(test_utils, str) else list(test_utils)
    bound = o._signature.bind(*args, **kwargs)
    bound.apply_defaults()
    results = {}
    for test in tests:
        try:
            _run_check(o, test, bound)
            results[test] = "SUCCESS"
        except Exception as e:  # (the report names each failing test's exception)
            if raise_exception:
                raise RuntimeError(f"opcheck(op, ...): {test} failed with {e}") from e
            results[test] = e
    return results


def _run_check(o, test, bound):
    names = list(bound.arguments)
    values = list(bound.arguments.values())
    if test == "test_schema":
        before = _clone_args(values)
        fresh = _clone_args(values)
        with autograd.no_grad():
            o._kernel(fresh)(*fresh)   # (the kernel for the arguments' device type)
        for name, b, a in zip(names, before, fresh):
            if name not in o._mutates and not _same(a, b):
                raise RuntimeError(f"Argument {name} is not defined as mutable but was "
                                   f"mutated")
    elif test == "test_autograd_registration":
        if any(t.requires_grad for t in _tensors(values)) and o._backward is None:
            raise RuntimeError(f"{o._qualname}: an input requires grad but no autograd "
                               f"formula was registered (register_autograd)")
    elif test == "test_faketensor":
        if o._fake is None:
            return      # (PyTorch's op without a fake kernel fails under compile only)
        real = o(*_clone_args(values))
        fake = o._fake(*_clone_args(values))
        for r, f in zip(_tensors([real] if not isinstance(real, tuple) else real),
                        _tensors([fake] if not isinstance(fake, tuple) else fake)):
            if r.shape != f.shape or r.dtype != f.dtype or r.device != f.device:
                raise RuntimeError(f"{o._qualname}: the fake implementation gives "
                                   f"{tuple(f.shape)} {f.dtype} on {f.device}, the op "
                                   f"{tuple(r.shape)} {r.dtype} on {r.device}")
    elif test == "test_aot_dispatch_dynamic":
        from_compiled = sys.modules["ember"].compile(lambda *a: o(*a))(*_clone_args(values))
        eager = o(*_clone_args(values))
        if not _same(from_compiled, eager):
            raise RuntimeError(f"{o._qualname}: inside ember.compile the op gives other "
                               f"values than eagerly")
    else:
        raise ValueError(f"opcheck: unknown test {test!r}")


# ---- the older API: Library, define, impl ------------------------------------------------

class Library:
    """A namespace of operators defined by schema strings (PyTorch's ``torch.library.
    Library(ns, "DEF" | "FRAGMENT" | "IMPL")``): ``define`` declares, ``impl`` gives
    the kernel."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "FRAGMENT", "IMPL"):
            raise ValueError(f"Library: kind must be DEF, FRAGMENT or IMPL, got {kind!r}")
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key

    def define(self, schema, alias_analysis="", *, tags=()):
        """Declare ``"name(Tensor x, float k) -> Tensor"``; returns the name."""
        name, rest = schema.split("(", 1)
        _OPS[f"{self.ns}::{name}"] = _Declared(self.ns, name.split(".")[0], "(" + rest)
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """The kernel of ``op_name`` for ``dispatch_key`` (``"CPU"``, ``"CUDA"``,
        ``"CompositeImplicitAutograd"``, ``"Meta"``, ``"Autograd"``, ...)."""
        name = op_name if isinstance(op_name, str) else op_name._op._name
        d = _OPS.get(f"{self.ns}::{name.split('.')[0]}")
        if d is None:
            raise RuntimeError(f"impl: {self.ns}::{name} was not defined")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        d.implement(key, fn)

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        """Not supported (no dispatch keys in ember)."""
        raise NotImplementedError("Library.fallback: ember has no dispatch-key fallbacks")

    def _destroy(self):
        for k in [k for k in _OPS if k.startswith(self.ns + "::")]:
            del _OPS[k]


class _Declared(CustomOpDef):
    """An op declared by a schema string; kernels come from ``impl``."""

    def __init__(self, ns, name, schema):
        def unimplemented(*args, **kwargs):
            raise NotImplementedError(f"{ns}::{name}: declared, but no kernel was given "
                                      f"(Library.impl)")
        self._arg_names = [a.strip().split(" ")[-1].split("=")[0]
                           for a in schema.split(")")[0].strip("(").split(",")
                           if a.strip() and a.strip() != "*"]
        self._mutated = [n for a, n in zip(schema.split(")")[0].strip("(").split(","),
                                           self._arg_names) if "!" in a]
        super().__init__(ns, name, unimplemented, self._mutated, schema)
        self._signature = inspect.Signature([inspect.Parameter(
            n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in self._arg_names])

    def implement(self, key, fn):
        k = key.lower()
        if k == "meta":
            self._fake = fn
        elif k in ("cpu", "cuda", "opencl"):
            self._kernels[k] = fn
        elif k == "autograd" or k.startswith("autograd"):
            raise NotImplementedError("Library.impl for an Autograd key: use "
                                      "register_autograd")
        else:                   # CompositeImplicitAutograd / CompositeExplicitAutograd
            self._init_fn = fn


def define(qualname, schema, *, lib=None, tags=()):
    """Declare the op ``"ns::name"`` with ``schema`` (``"(Tensor x) -> Tensor"``)."""
    ns, name = qualname.split("::")
    _OPS[qualname] = _Declared(ns, name, schema)


def impl(qualname, types, func=None, *, lib=None):
    """Give the declared op ``qualname`` its kernel for ``types`` (device types or
    ``"default"``); a decorator without ``func``."""
    def register(f):
        d = _op(qualname)
        for t in ([types] if isinstance(types, str) else types):
            d.implement("CompositeImplicitAutograd" if t == "default" else t, f)
        return f
    return register if func is None else register(func)
