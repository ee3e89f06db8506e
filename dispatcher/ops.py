"""Dispatcher-level entry points: meta (shape/dtype, errors), promotion, then the kernel.

Every function here works on tensors of any device. The hot path for a schema op is:
promote/broadcast (meta) → ``op.kernels.get(device_type)`` (one dict lookup) →
allocate ``out`` through the backend → ``kernel(out, *inputs, **attrs)``. When the
backend has no kernel, the op's composite (``defs/``) runs instead.

Autograd enters here, in one way for every op: an entry of a differentiable op whose
input requires grad (in grad mode) hands the call to the recorder the autograd engine
installed (``grad_mode.HOOKS.op``), which runs the entry again below autograd and records
one node from the op's formula. An op without a formula is differentiated through its
composite, whose ops record themselves. The frontend, composites and gradient formulas all
call these entries, so they all record the same way.
"""
from __future__ import annotations

import functools
import inspect
import math
import operator

from . import autocast as AC
from . import core as C
from . import dtypes as D
from . import expr as X
from . import fallback as FB
from . import meta as META
from .allocator import OutOfMemoryError
from .core import TensorBase, shape_str
from .device import to_device
from .grad_mode import HOOKS, MODE
from .plugins import BACKENDS, backend_for
from .random import default_generator
from .schema import OPS
from .warn import warn as _warn

#: complex tensors' entries (``complex_ops`` fills it when it is imported: "elementwise",
#: "run", "launch", "real_view", and the products and norm by op name)
COMPLEX: dict = {}


def _real_view(t):
    """The real view of complex ``t`` (``views.view_as_real`` below autograd)."""
    return COMPLEX["real_view"](t)


def requires_grad(args) -> bool:
    """Whether autograd must see a call with these arguments (tensors or lists of them)."""
    for a in args:
        if isinstance(a, TensorBase):
            if a.requires_grad:
                return True
        elif isinstance(a, (list, tuple)) and requires_grad(a):
            return True
    return False


def record(o, run, inputs, attrs, inplace=False, out=None):
    """Hand a call of ``o`` to the autograd recorder (see the module docstring)."""
    if out is not None:
        raise RuntimeError(f"{o.name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    return HOOKS.op(o, run, inputs, attrs, inplace)


def recorded(name: str):
    """Decorator for the entry of a composite-only op that has a gradient formula: a call
    whose inputs (``OpDef.inputs``, by parameter name) require grad is recorded as one
    node instead of the ops the composite is made of."""
    o = OPS[name]

    def deco(fn):
        params = list(inspect.signature(fn).parameters)
        where = [params.index(n) for n in o.inputs]
        # (the inputs of a call that passes them all positionally, in one C call)
        take = operator.itemgetter(*where) if len(where) > 1 else None
        need = max(where) + 1

        @functools.wraps(fn)
        def entry(*args, **kwargs):
            cx = COMPLEX.get(name)
            if cx is not None and any(isinstance(a, TensorBase) and a.dtype._kind == 3
                                      for a in args):
                return cx(*args, **kwargs)
            if AC.ACTIVE[0]:
                args, kwargs = AC.cast_call(name, args, kwargs, to)
            if MODE.grad and o.grad is not None:
                if take is not None and not kwargs and len(args) >= need:
                    ins = take(args)
                else:
                    ins = tuple(args[i] if i < len(args) else kwargs.get(params[i])
                                for i in where)
                if requires_grad(ins):
                    attrs = dict(zip(params, args))
                    attrs.update(kwargs)
                    return record(o, lambda: fn(*args, **kwargs), ins, attrs)
            return fn(*args, **kwargs)
        return entry
    return deco


def composite_op(name, ins, attrs, outs, dev, alloc=None):
    """Run an op that has a composite and that backends may replace with a native kernel
    (convolution, norms, attention): ``ins`` are its tensor arguments (None allowed),
    ``attrs`` the rest, ``outs`` the (shape, dtype) of each output, computed by the caller
    (the op's meta step). Under autograd the op's formula records one node or, without
    one, its composite runs so that the ops it is made of record themselves (a native
    kernel has no backward of its own then); otherwise the device's kernel writes into
    freshly allocated outputs (``alloc(shape, dtype, device)``, by default contiguous), or
    the composite runs where there is none."""
    o = OPS[name]
    if AC.ACTIVE[0]:
        ins, outs = AC.cast_composite(name, ins, outs, to)
    if requires_grad(ins) and MODE.grad:
        if o.grad is not None:
            return record(o, lambda: composite_op(name, ins, attrs, outs, dev, alloc), ins,
                          attrs)
        return o.composite(*ins, **attrs)
    k = o.kernels.get(dev.type)
    if k is None:
        backend_for(dev.type)  # kernels are installed when the plugin loads
        k = o.kernels.get(dev.type)
        if k is None:
            return o.composite(*ins, **attrs)
    res = tuple((alloc or C.empty)(tuple(shape), dtype, dev) for shape, dtype in outs)
    launch(o, dev, k, *res, *ins, **attrs)
    return res[0] if len(res) == 1 else res


# TensorBase's operators route to the elementwise ops (the frontend's Tensor overrides them
# with PyTorch's argument handling); gradient formulas use them on any tensor.
def _binop(name, reflected=False):
    if reflected:
        return lambda a, b: elementwise(name, b, a)
    return lambda a, b: elementwise(name, a, b)


for _name, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                   ("pow", "pow"), ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"),
                   ("eq", "eq"), ("ne", "ne"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                   ("xor", "bitwise_xor")):
    setattr(TensorBase, f"__{_name}__", _binop(_op))
    if _name in ("add", "sub", "mul", "truediv", "pow", "and", "or", "xor"):
        setattr(TensorBase, f"__r{_name}__", _binop(_op, reflected=True))
TensorBase.__neg__ = lambda a: elementwise("neg", a)
TensorBase.__invert__ = lambda a: elementwise("bitwise_not", a)
TensorBase.__hash__ = object.__hash__
del _name, _op



def _is_t(x) -> bool:
    return isinstance(x, TensorBase)


def _tn(d) -> str:
    return D.torch_name(d)


def can_cast(src, dst) -> bool:
    """PyTorch's ``can_cast``: no float → integer and no non-bool → bool."""
    if src._kind == 2 and dst._kind < 2:
        return False
    if src._kind > 0 and dst._kind == 0:
        return False
    return True


#: the C++ type names PyTorch's messages print for a dtype
CPP_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                  "int16": "short int", "int32": "int", "int64": "long int",
                  "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                  "float64": "double", "uint16": "unsigned short", "uint32": "unsigned int",
                  "uint64": "unsigned long"}
#: the names c10's checked scalar conversions print
_CONVERT_NAMES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
                  "int32": "int", "int64": "int64_t", "float16": "c10::Half",
                  "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
                  "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": 3.4028234663852886e38}


def checked_scalar(value, dtype, opmath=False):
    """``value`` if c10's ``Scalar::to<T>()`` converts it into ``dtype`` (with ``opmath``:
    into the type kernels compute in, float for float16 and bfloat16), else PyTorch's
    "value cannot be converted to type ... without overflow". Integers fail out of range
    (unsigned ones take negatives down to -max: they wrap, so that ``a - b`` is
    ``a + 255 * b`` in uint8), and for a float value also at NaN and ±inf; floats fail at a
    finite value beyond their largest one."""
    name = "float32" if opmath and dtype.name in ("float16", "bfloat16") else dtype.name
    if dtype is D.bool_ or name == "float64":
        return value
    if dtype.is_floating_point:
        bad = abs(value) > _FLOAT_MAX[name] and (not isinstance(value, float)
                                                  or math.isfinite(value))
    else:
        bits = 8 * dtype.itemsize
        hi = (1 << (bits - 1)) - 1 if dtype.is_signed else (1 << bits) - 1
        lo = -hi - 1 if dtype.is_signed else 0
        if isinstance(value, float):
            bad = not math.isfinite(value) or not lo <= value <= hi
        else:
            bad = not (lo if dtype.is_signed else -hi) <= value <= hi
    if bad:
        raise RuntimeError(f"value cannot be converted to type {_CONVERT_NAMES[name]} without "
                           "overflow")
    return value


# ---------------------------------------------------------------------------------
# execution
# ---------------------------------------------------------------------------------

def _missing(o, dev):
    backend = BACKENDS.get(dev.type)
    plugin = backend.name if backend else dev.type
    return NotImplementedError(
        f"{o.name}(): the {plugin!r} backend (device {dev}) has no kernel for this op and "
        f"the op is a primitive, so no composite can stand in. Every backend must implement "
        f"the primitives listed in ember.dispatcher.schema.PRIMITIVES. {FB.hint()}")


def _no_kernel(o, dev, outs, ins, attrs):
    """The op has neither a kernel on ``dev`` nor a composite: CPU fallback or an error."""
    if FB.enabled() and dev.type != "cpu":
        return FB.run_on_cpu(o, dev, outs, ins, attrs)
    raise _missing(o, dev)


def run(o, dev, ins, attrs, shape, dtype, out=None):
    """Run ``o`` on ``dev``: its kernel into ``out`` (allocated if None), else the composite."""
    if dtype._kind == 3 or ins and isinstance(ins[0], TensorBase) and ins[0].dtype._kind == 3:
        return COMPLEX["run"](o, dev, ins, attrs, shape, dtype, out)
    k = o.kernels.get(dev.type)
    if k is None:
        if o.composite is None:
            backend_for(dev.type)
            k = o.kernels.get(dev.type)
            if k is None:
                if out is None:
                    out = C.empty(shape, dtype, dev)
                return _no_kernel(o, dev, [out], ins, attrs)[0]
        else:
            res = o.composite(*ins, **attrs)
            if res.dtype is not dtype:  # (a body's literal branches are in the default dtype)
                res = cast(res, dtype)
            if out is None:
                return res
            _copy_same_device(out, res)
            return out
    if out is None:
        out = C.empty(shape, dtype, dev)
    launch(o, dev, k, out, *ins, **attrs)
    return out


def launch(o, dev, k, *args, **attrs):
    """Call kernel ``k`` of op ``o``: a failed allocation of its scratch memory (C++
    std::bad_alloc, a MemoryError) becomes ``OutOfMemoryError`` naming the op."""
    try:
        k(*args, **attrs)
    except Exception as e:
        if not any(isinstance(a, TensorBase) and a.dtype._kind == 3 for a in args):
            launch_failed(o, dev, e)
        COMPLEX["launch"](o, dev, k, args, attrs, e)


def launch_failed(o, dev, e):
    """What ``launch`` raises for the exception ``e`` of ``o``'s kernel (hot paths call the
    kernel inline, in a ``try`` whose handler calls this)."""
    if isinstance(e, MemoryError) and not isinstance(e, OutOfMemoryError):
        raise C.host_out_of_memory(f"the scratch memory of {o.name}() on {dev}", None,
                                   e) from None
    if isinstance(e, TypeError):
        _dtype_refused(e, o.name)
        if str(e).endswith(("unknown dtype code 10", "unknown dtype code 11")):  # (complex)
            raise NotImplementedError(f"{o.name}(): complex tensors are not supported by this "
                                      "op in ember yet") from None
    raise e


_KINDS: dict = {}


def _kinds(o, mode):
    hit = _KINDS.get((o.name, mode))
    if hit is None:
        hit = _KINDS[(o.name, mode)] = o.kinds(mode)
    return hit


def _check_kind(o, compute, attrs):
    """Refuse a dtype the op's body has no form for, on every backend alike (PyTorch's
    NotImplementedError), before any kernel or composite runs."""
    mode = attrs.get(o.mode_attr) if o.mode_attr else None
    if X.kind_of(compute) not in _kinds(o, mode):
        raise NotImplementedError(f"{o.name}(): not implemented for dtype {compute.name}")


_BAREBONES = frozenset(D.BAREBONES_UNSIGNED)


def refuse_barebones(name, *args):
    """PyTorch's NotImplementedError for op ``name`` on a uint16 / uint32 / uint64 tensor
    or dtype among ``args`` (anything else is ignored), for the ops PyTorch's kernels refuse
    them in while ember's composite would compute them (``"flip_cpu" not implemented for
    'UInt16'``). Ops with kernels refuse them there (their dtype masks, ``OpDef.barebones``).

    >>> refuse_barebones("flip", D.uint16)
    Traceback (most recent call last):
    NotImplementedError: flip(): not implemented for dtype uint16
    """
    for a in args:
        d = a.dtype if isinstance(a, TensorBase) else a
        if isinstance(d, D.DType) and d in _BAREBONES:
            raise NotImplementedError(f"{name}(): not implemented for dtype {d.name}")


def _dtype_refused(e, name):
    """A kernel's refusal of a dtype it has no loop for (backends raise TypeError "op(): not
    implemented for dtype ...") becomes PyTorch's class for it, NotImplementedError, whose
    message names op ``name`` where the kernel's did not."""
    msg = str(e)
    if "not implemented for dtype" in msg:
        if not msg.startswith(f"{name}("):
            msg = f"{name}(): {msg}"
        raise NotImplementedError(msg) from None


def _copy_same_device(dst, src):
    src = C.expand_to(src, dst.shape) if src.shape != dst.shape else src
    run(OPS["copy"], dst.device, (src,), {}, dst.shape, dst.dtype, dst)


def cast(x, dtype):
    """A new tensor with ``x``'s values in ``dtype`` (``x`` itself if it already is)."""
    if x.dtype is dtype:
        return x
    out = C.empty(x.shape, dtype, x.device)
    run(OPS["copy"], x.device, (x,), {}, x.shape, dtype, out)
    return out


def _overlaps(dest, t) -> bool:
    """True when ``t`` may share memory with ``dest`` without being the very same view."""
    return t._storage is dest._storage and not C.same_view(dest, t) and C.may_overlap(dest, t)


def _private_copy(t):
    """``t``'s values in fresh memory (not recorded by autograd); its stride-0 (broadcast)
    dims stay broadcast, so ``x.add_(x[0])`` copies one row, not the whole result."""
    if 0 in t._stride:
        shape = tuple(1 if s == 0 else n for n, s in zip(t.shape, t._stride))
        src = C.view_of(t, shape, t._stride, t._offset)
    else:
        shape, src = t.shape, t
    out = C.empty(shape, t.dtype, t.device)
    run(OPS["copy"], t.device, (src,), {}, shape, t.dtype, out)
    return C.expand_to(out, t.shape) if shape != t.shape else out


def _unalias(o, dest, ins):
    """``ins`` with every input that shares memory with ``dest`` (about to be written)
    copied first, so the result is the one computed from the inputs' values before the
    write (``x[1:].add_(x[:-1])``). An input that *is* ``dest`` (same view) stays, for an
    elementwise op: each output element only reads its own input element."""
    st = dest._storage
    for t in ins:   # (the common case in one pass: nothing but dest itself shares memory)
        if t is not dest and _is_t(t) and t._storage is st:
            break
    else:
        if o.kind == "elementwise" or not any(t is dest for t in ins):
            return ins
    out = list(ins)
    for i, t in enumerate(ins):
        if (_is_t(t) and t._storage is st and C.may_overlap(dest, t)
                and not (o.kind == "elementwise" and C.same_view(dest, t))):
            out[i] = _private_copy(t)
    return out


def _write_result(name, dest, ins, shape, out_dtype, o, dev, attrs, inplace=False,
                  rule="cast"):
    """Run into an existing tensor (``out=`` or in-place), casting / staging as needed;
    ``rule`` says which dtypes ``dest`` may have (``OpDef.out_dtype``; None: checked
    already)."""
    if dest.shape != shape:
        raise RuntimeError(f"{name}(): output with shape {shape_str(dest.shape)} doesn't match "
                           f"the broadcast shape {shape_str(shape)}")
    if rule is not None:
        _check_written_dtype(name, dest, out_dtype, rule, inplace)
    if dest.device != dev:
        raise RuntimeError(f"{name}(): Expected out tensor to be on {dev}, but got {dest.device}")
    if 0 in dest._stride:
        C.check_writable(dest, name + "_" if inplace else name)
    if dest.dtype is out_dtype:
        run(o, dev, _unalias(o, dest, ins), attrs, shape, out_dtype, dest)
    else:   # computed into a fresh tensor first: the inputs are read before dest is written
        tmp = run(o, dev, ins, attrs, shape, out_dtype)
        _copy_same_device(dest, tmp)
    C.bump(dest)
    return dest


def _check_written_dtype(name, dest, out_dtype, rule, inplace):
    """PyTorch's checks of the tensor an op writes (out= or in-place ``self``) against its
    result dtype, by the op's ``out_dtype`` rule (see ``schema.OpDef``)."""
    if dest.dtype is out_dtype or rule == "any":
        return
    if rule == "exact":
        raise RuntimeError(f"{name}(): Found dtype {_tn(dest.dtype)} but expected "
                           f"{_tn(out_dtype)} (the {'in-place' if inplace else 'out='} "
                           f"tensor must have the result's dtype)")
    if not can_cast(out_dtype, dest.dtype):
        raise RuntimeError(f"{name}(): result type {_tn(out_dtype)} can't be cast to the "
                           f"desired output type {_tn(dest.dtype)}")


def _resize_out(name, out, shape):
    if out.shape == shape:
        C.check_writable(out, name)
        return out
    if C.numel(out.shape) != 0:
        _warn(f"{name}(): an output with one or more elements was resized since it had "
              f"shape {shape_str(out.shape)}, which does not match the required output "
              f"shape {shape_str(shape)}.", UserWarning)
    fresh = C.empty(shape, out.dtype, out.device)
    out._storage, out.shape, out._stride, out._offset = (fresh._storage, fresh.shape,
                                                          fresh._stride, 0)
    C.adopt(out)
    return out


def write_out(name, out, res, rule="cast", error=RuntimeError):
    """PyTorch's ``out=`` for an op computed into a fresh result ``res`` (a tensor, or a
    tuple of them such as (values, indices) with ``out`` a tuple as long): refused under
    autograd; each ``out`` checked against its result's dtype by ``rule`` (``OpDef.out_dtype``'s
    words: "cast" — the result must cast to it, same kind or wider; "exact" — it must be the
    result's dtype; "any"; a tuple gives one rule per result), raising ``error``; then resized
    as PyTorch resizes (warning when it had elements), written and returned (a tuple of
    ``res``'s type for tuples)."""
    if isinstance(res, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(res) or not all(
                isinstance(o, TensorBase) for o in out):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(res)} Tensors")
        outs, results = tuple(out), tuple(res)
    else:
        if not isinstance(out, TensorBase):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        outs, results = (out,), (res,)
    rules = rule if isinstance(rule, tuple) else (rule,) * len(results)
    if MODE.grad and (requires_grad(results) or requires_grad(outs)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    for o, r, ru in zip(outs, results, rules):
        if o.dtype is r.dtype or ru == "any":
            continue
        if ru == "exact":
            raise error(f"{name}(): Expected out tensor to have dtype "
                        f"{CPP_TYPE_NAMES[r.dtype.name]}, but got "
                        f"{CPP_TYPE_NAMES[o.dtype.name]} instead")
        if not can_cast(r.dtype, o.dtype):
            raise error(f"{name}(): result type {_tn(r.dtype)} can't be cast to the desired "
                        f"output type {_tn(o.dtype)}")
    for o, r in zip(outs, results):
        _resize_out(name, o, r.shape)
        copy_(o, r)     # (across devices too: the creation ops make res on the default one)
    if isinstance(res, tuple):
        return type(res)(*outs) if hasattr(res, "_fields") else outs
    return out


# ---------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------

def _promote(o, name, args):
    p = o.promotion
    rt = D.result_type(*args)
    if p == "default":
        return rt, rt
    if p == "int_to_float":
        if not rt.is_floating_point:
            rt = D.get_default_dtype()
        return rt, rt
    if p == "bool_out":
        return rt, D.bool_
    if p == "logical":
        refuse_barebones(name, *args)   # (PyTorch has no logical_not of uint16, ...)
        return D.bool_, D.bool_
    if p == "integral":
        if rt.is_floating_point:
            raise TypeError(f"{name}(): not implemented for '{_tn(rt)}' (bitwise ops need bool "
                            f"or integer tensors)")
        return rt, rt
    raise AssertionError(p)


def _device_of(name, tensors):
    dev = tensors[0].device
    for t in tensors[1:]:
        if t.device is not dev and t.device != dev:
            # PyTorch lets 0-d CPU tensors join tensors of another device
            if t.device.type == "cpu" and not t.shape:
                continue
            if dev.type == "cpu" and not tensors[0].shape:
                dev = t.device
                continue
            raise RuntimeError(
                f"{name}(): Expected all tensors to be on the same device, but found at least "
                f"two devices, {dev} and {t.device}!")
    return dev


_SCALAR_KIND = {bool: 0, int: 1, float: 2}
#: (op name, dtype) of unary ops without attributes whose result has the input's dtype and
#: whose body has a form for it: filled by the general path, read by the fast one
_UNARY_SAME: set = set()


def _unary_same(o, k, a):
    """A unary op of ``_UNARY_SAME`` on ``a`` through its kernel ``k``."""
    res = C.empty(a.shape, a.dtype, a.device)
    try:
        k(res, a)
    except Exception as e:
        launch_failed(o, a.device, e)
    return res


def elementwise(name, *args, out=None, inplace=False, **attrs):
    """Run a schema elementwise op on tensors and Python scalars with broadcasting."""
    o = OPS[name]
    if AC.ACTIVE[0] and out is None and not inplace:
        args = AC.cast_args(name, args, to)
    g = None   # (one pass: a complex argument, and the first tensor that requires grad)
    for a in args:  # (inline: this is the hottest path there is)
        if isinstance(a, TensorBase):
            if a.dtype._kind == 3:
                return COMPLEX["elementwise"](name, args, out, inplace, attrs)
            if g is None and a.requires_grad:
                g = a
        elif type(a) is complex:
            return COMPLEX["elementwise"](name, args, out, inplace, attrs)
    if g is not None and MODE.grad and o.differentiable:
        if o.grad is not None:
            if (len(args) == 1 and out is None and not inplace and not attrs
                    and (name, g.dtype) in _UNARY_SAME):
                k = o.kernels.get(g.device.type)
                if k is not None:  # (the unary fast path below, without re-entering)
                    return record(o, lambda: _unary_same(o, k, g), args, attrs)
            return record(o, lambda: elementwise(name, *args, out=out, inplace=inplace,
                                                 **attrs), args, attrs, inplace, out)
        return _differentiate_body(o, args, attrs, out, inplace)
    a0 = args[0]
    # fast path: same-dtype, same-shape, same-device tensors
    if len(args) == 2 and out is None and not inplace and isinstance(a0, TensorBase):
        b = args[1]
        if (type(b) is type(a0) and a0.dtype is b.dtype and a0.shape == b.shape
                and a0.device is b.device and o.promotion == "default" and o.meta is None):
            k = o.kernels.get(a0.device.type)
            if k is not None:
                res = C.empty(a0.shape, a0.dtype, a0.device)
                try:
                    k(res, a0, b, **attrs)
                except Exception as e:
                    launch_failed(o, a0.device, e)
                return res
        # tensor (op) Python scalar that does not change the tensor's dtype
        tb = type(b)
        if tb in _SCALAR_KIND and a0.dtype._kind >= _SCALAR_KIND[tb] and (
                o.promotion == "default" and o.meta is None):
            k = o.kernels.get(a0.device.type)
            if k is not None:
                res = C.empty(a0.shape, a0.dtype, a0.device)
                launch(o, a0.device, k, res, a0, C.scalar_like(b, a0), **attrs)
                return res
    elif (inplace and len(args) == 2 and out is None and isinstance(a0, TensorBase)
          and type(args[1]) is type(a0)):
        # fast path: self (op)= a tensor of its dtype, shape and device, in other memory
        b = args[1]
        if (a0.dtype is b.dtype and a0.shape == b.shape and a0.device is b.device
                and a0._storage is not b._storage and o.promotion == "default"
                and 0 not in a0._stride and a0.dtype.is_floating_point):
            k = o.kernels.get(a0.device.type)
            if k is not None:
                try:
                    k(a0, a0, b, **attrs)
                except Exception as e:
                    launch_failed(o, a0.device, e)
                C.bump(a0)
                return a0
    elif (len(args) == 1 and out is None and not inplace and not attrs
          and (name, getattr(a0, "dtype", None)) in _UNARY_SAME):
        k = o.kernels.get(a0.device.type)
        if k is not None:
            return _unary_same(o, k, a0)
    tensors = [a for a in args if _is_t(a)]
    if not tensors:
        raise TypeError(f"{name}(): expected at least one tensor argument, got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    if o.meta is not None:
        o.meta(args, attrs)
    dev = _device_of(name, tensors) if len(tensors) > 1 else tensors[0].device
    compute, out_dtype = _promote(o, name, args)
    if o.scalar is not None:
        _check_kind(o, compute, attrs)
    if (len(args) == 1 and not attrs and o.meta is None and compute is a0.dtype
            and out_dtype is a0.dtype):
        _UNARY_SAME.add((name, a0.dtype))
    if inplace or out is not None:  # (checked before the inputs are cast, as PyTorch)
        rule = o.out_dtype if o.out_dtype.__class__ is str else o.out_dtype(args)
        _check_written_dtype(name, a0 if inplace else out, out_dtype, rule, inplace)
    if len(tensors) == 1:
        shape = tensors[0].shape
    else:
        shape = C.broadcast_shapes(*[t.shape for t in tensors])
    ins = []
    for a in args:
        if _is_t(a):
            if a.device is not dev and a.device != dev:
                a = to(a, dev)
            if a.dtype is not compute:
                a = cast(a, compute)
        else:
            a = C.scalar_tensor(a, compute, dev)
        if a.shape != shape:
            a = C.expand_to(a, shape)
        ins.append(a)
    if inplace:
        return _write_result(name, a0, ins, shape, out_dtype, o, dev, attrs, True, None)
    if out is not None:
        if 0 in out._stride:  # (PyTorch checks before it resizes)
            C.check_writable(out, name)
        _resize_out(name, out, shape)
        return _write_result(name, out, ins, shape, out_dtype, o, dev, attrs, rule=None)
    return run(o, dev, ins, attrs, shape, out_dtype)


def _differentiate_body(o, args, attrs, out, inplace):
    """An elementwise op without a gradient formula, on inputs that require grad: its
    composite (given, or its scalar body computed with tensor ops) runs on the promoted
    inputs, and the ops it is made of record themselves."""
    if out is not None:
        record(o, None, args, attrs, out=out)  # raises: no out= with autograd
    compute, out_dtype = _promote(o, o.name, args)
    ins = tuple(to(a, dtype=compute) if _is_t(a) else a for a in args)
    res = o.composite(*ins, **attrs)
    if res.dtype is not out_dtype:
        res = to(res, dtype=out_dtype)
    return copy_(args[0], res) if inplace else res


def where(cond, a, b, out=None):
    o = OPS["where"]
    if requires_grad((a, b)) and MODE.grad:
        return record(o, lambda: where(cond, a, b, out=out), (cond, a, b), {}, out=out)
    tensors = [t for t in (cond, a, b) if _is_t(t)]
    if not _is_t(cond):
        raise TypeError("where(): argument 'condition' must be a Tensor")
    if cond.dtype is not D.bool_:
        if cond.dtype is D.uint8:
            cond = cast(cond, D.bool_)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {_tn(cond.dtype)}")
    dev = _device_of("where", tensors)
    dt = D.result_type(a, b)
    shape = C.broadcast_shapes(*[t.shape for t in tensors])
    ins = []
    for v, want in ((cond, D.bool_), (a, dt), (b, dt)):
        if _is_t(v):
            if v.device != dev:
                v = to(v, dev)
            v = cast(v, want)
        else:
            v = C.scalar_tensor(v, want, dev) if want._kind != 3 else full((), v, want, dev)
        ins.append(C.expand_to(v, shape))
    if out is not None:
        if out.dtype is not dt:  # (OpDef.out_dtype "exact", with where's own message)
            raise RuntimeError(f"where(): Expected out type to be {_tn(dt)} but got "
                               f"{_tn(out.dtype)}")
        if 0 in out._stride:
            C.check_writable(out, "where")
        _resize_out("where", out, shape)
        return _write_result("where", out, ins, shape, dt, o, dev, {}, rule="exact")
    return run(o, dev, ins, {}, shape, dt)


def clamp(x, min=None, max=None, out=None, inplace=False):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    o = OPS["clamp"]
    if requires_grad((x, min, max)) and MODE.grad:
        return record(o, lambda: clamp(x, min, max, out=out, inplace=inplace), (x, min, max),
                      {}, inplace, out)
    dt = D.result_type(*[v for v in (x, min, max) if v is not None])
    if not dt.is_floating_point and dt is not D.bool_:
        # PyTorch: a number bound must fit the integer dtype, and converts to it (uint8: -1
        # is 255) on every path below
        if not isinstance(min, TensorBase):
            min = _wrap_int(min, dt)
        if not isinstance(max, TensorBase):
            max = _wrap_int(max, dt)
    if (dt is x.dtype and out is None and not isinstance(min, TensorBase)
            and not isinstance(max, TensorBase) and x.device.type in o.kernels):
        # number bounds: stride-0 views of cached scalars (the kernel hoists them)
        if inplace:
            C.check_writable(x, "clamp_")
        dest = x if inplace else C.empty(x.shape, x.dtype, x.device)
        lo = C.scalar_like(_lowest(dt) if min is None else min, x)
        hi = C.scalar_like(_highest(dt) if max is None else max, x)
        try:
            o.kernels[x.device.type](dest, x, lo, hi)
        except Exception as e:
            launch_failed(o, x.device, e)
        if inplace:
            C.bump(x)
        return dest
    lo = _lowest(dt) if min is None else min
    hi = _highest(dt) if max is None else max
    return elementwise("clamp", x, lo, hi, out=out, inplace=inplace)


def _wrap_int(v, dt):
    """``v`` as the integer dtype ``dt`` stores it (two's complement wrap-around)."""
    if v is None:
        return None
    if dt is D.bool_:
        return bool(v)
    bits = 8 * dt.itemsize
    v = int(v)
    hi = (1 << (bits - 1)) - 1 if dt.is_signed else (1 << bits) - 1
    lo = -hi - 1 if dt.is_signed else -hi        # c10::overflows: unsigned may wrap negatives
    if not lo <= v <= hi:
        ctype = _CONVERT_NAMES[dt.name]
        raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt.is_signed and v >= 1 << (bits - 1) else v


def _lowest(dt):
    if dt.is_floating_point:
        return -math.inf
    return False if dt is D.bool_ else -(1 << (8 * dt.itemsize - 1)) if dt.is_signed else 0


def _highest(dt):
    if dt.is_floating_point:
        return math.inf
    return True if dt is D.bool_ else (1 << (8 * dt.itemsize - (1 if dt.is_signed else 0))) - 1


# ---------------------------------------------------------------------------------
# copies and device moves
# ---------------------------------------------------------------------------------

def copy_(dst, src, non_blocking=False):
    """Copy ``src`` (broadcast to ``dst``'s shape, any dtype, any device) into ``dst``."""
    if not _is_t(src):
        return fill_(dst, src)
    if MODE.grad and (requires_grad((dst, src)) or _base_requires_grad(dst)):
        return record(OPS["copy"], lambda: copy_(dst, src), (dst, src), {}, inplace=True)
    if src.device != dst.device:
        src = to(src, dst.device)
    C.check_writable(dst, "copy_")
    if src.shape != dst.shape:
        src = C.expand_to(src, dst.shape)
    if _overlaps(dst, src):
        src = _private_copy(src)
    run(OPS["copy"], dst.device, (src,), {}, dst.shape, dst.dtype, dst)
    C.bump(dst)
    return dst


def fill_(dst, value):
    if _is_t(value):
        if value.shape:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{len(value.shape)} dimensions.")
        value = item(value)
    run(OPS["fill"], dst.device, (C._coerce_scalar(value, dst.dtype),), {}, dst.shape,
        dst.dtype, dst)
    C.bump(dst)
    return dst


def _base_requires_grad(t) -> bool:
    base = t._base
    return base is not None and base.requires_grad


def clone(x):
    if x.requires_grad and MODE.grad:
        return record(OPS["clone"], lambda: clone(x), (x,), {})
    out = C.empty(x.shape, x.dtype, x.device)
    run(OPS["copy"], x.device, (x,), {}, x.shape, x.dtype, out)
    return out


def contiguous(x):
    return x if C.is_contiguous(x) else clone(x)


def to(x, device=None, dtype=None, copy=False):
    """Move and/or cast. Returns ``x`` itself when nothing changes (unless ``copy``)."""
    dev = x.device if device is None else to_device(device)
    dtype = x.dtype if dtype is None else D.to_dtype(dtype)
    if x.requires_grad and MODE.grad and dtype._kind >= 2 and (
            copy or dev != x.device or dtype is not x.dtype):
        return record(OPS["to"], lambda: to(x, dev, dtype, copy), (x,), {})
    if dev == x.device:
        if dtype is x.dtype:
            return clone(x) if copy else x
        return cast(x, dtype)
    if dev.type == "meta":  # only the metadata moves (ember.dispatcher.meta)
        backend_for("meta")
        return C.empty(x.shape, dtype, dev)
    if x.device.type == "meta":
        raise NotImplementedError(META.COPY_OUT_MESSAGE)
    src_b = backend_for(x.device.type)
    dst_b = backend_for(dev.type)
    if dev.index is not None and dev.index >= dst_b.device_count():
        raise RuntimeError(f"{dev}: invalid device ordinal (the {dst_b.name!r} backend has "
                           f"{dst_b.device_count()} device(s))")
    src = contiguous(x)
    nbytes = C.numel(src.shape) * src.dtype.itemsize
    out = C.empty(src.shape, src.dtype, dev)
    if nbytes:
        try:    # the backends' host staging buffers: out of host memory is reported as such
            host = src_b.copy_to_host(src._storage, src._offset * src.dtype.itemsize, nbytes)
            dst_b.copy_from_host(out._storage, 0, host)
        except OutOfMemoryError:
            raise
        except MemoryError as e:
            raise C.host_out_of_memory(
                f"the host copy of a {src.dtype.name} tensor of shape {shape_str(src.shape)}"
                f" moving from {x.device} to {dev}", nbytes, e) from None
        del host
    return cast(out, dtype)


def item(x):
    n = C.numel(x.shape)
    if n != 1:
        raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
    if x.device.type == "meta":
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    b = backend_for(x.device.type)
    try:
        raw = bytes(b.copy_to_host(x._storage, x._offset * x.dtype.itemsize, x.dtype.itemsize))
    except OutOfMemoryError:
        raise
    except MemoryError as e:
        raise C.host_out_of_memory(f"reading one {x.dtype.name} element from {x.device}",
                                   x.dtype.itemsize, e) from None
    return decode_scalar(raw, x.dtype)


decode_scalar = C.decode_scalar


# ---------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------

def _reduce_dtype(name, promotion, x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype)
    xd = x.dtype
    if xd._kind == 3:
        return xd
    if promotion == "sum":
        return xd if xd.is_floating_point else D.int64
    if promotion == "float_only":
        if not xd.is_floating_point:
            raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {_tn(xd)}")
        return xd
    if promotion == "int_to_float":
        return xd if xd.is_floating_point else D.get_default_dtype()
    return xd


def reduce(name, x, dim=None, keepdim=False, dtype=None, out=None, **attrs):
    """Reduce over ``dim`` (None: all dims) with the schema op ``name``."""
    o = OPS[name]
    if not _is_t(x):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    if out is not None and dtype is None and name in ("sum", "prod") and _is_t(out):
        dtype = out.dtype  # PyTorch: the input is converted to out's dtype, then reduced
    if AC.ACTIVE[0] and out is None and dtype is None:
        (x,) = AC.cast_args(name, (x,), to)
    if x.requires_grad and MODE.grad and o.grad is not None:
        return record(o, lambda: reduce(name, x, dim, keepdim, dtype, out, **attrs), (x,),
                      dict(attrs, dim=dim, keepdim=keepdim, dtype=dtype), out=out)
    nd = len(x.shape)
    dims = C.normalize_dims(dim, nd, name)
    rdt = _reduce_dtype(name, o.promotion, x, dtype)
    if name in ("max", "min"):
        pub = "amax" if name == "max" else "amin"
        if (dim is None or isinstance(dim, (list, tuple)) and not dim) and \
                C.numel(x.shape) == 0:
            raise RuntimeError(f"{pub}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        for d in dims:
            if x.shape[d] == 0:
                raise IndexError(f"{pub}(): Expected reduction dim {d} to have non-zero size.")
    if nd == 0:
        x1 = C.view_of(x, (1,), (1,), x._offset)
        res = reduce(name, x1, 0, False, dtype, **attrs)
        if out is not None:
            _resize_out(name, out, ())
            return copy_(out, res)
        return res
    keep_shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape))
    final_shape = keep_shape if keepdim else tuple(s for i, s in enumerate(x.shape)
                                                    if i not in dims)
    xc = cast(x, rdt)
    attrs["dims"] = dims
    if out is not None:
        _resize_out(name, out, final_shape)
        dest = out if keepdim else C.view_of(out, keep_shape, C.contiguous_strides(keep_shape)
                                             if C.is_contiguous(out) else _unsq_strides(
                                                 out, dims, nd), out._offset)
        _write_result(name, dest, [xc], keep_shape, rdt, o, x.device, attrs)
        return out
    res = run(o, x.device, (xc,), attrs, keep_shape, rdt)
    if keepdim:
        return res
    return C.view_of(res, final_shape, C.contiguous_strides(final_shape), res._offset) \
        if C.is_contiguous(res) else _squeeze_dims(res, dims)


def _unsq_strides(out, dims, nd):
    it = iter(out._stride)
    return tuple(0 if i in dims else next(it) for i in range(nd))


def _squeeze_dims(t, dims):
    keep = [i for i in range(len(t.shape)) if i not in dims]
    return C.view_of(t, tuple(t.shape[i] for i in keep), tuple(t._stride[i] for i in keep),
                     t._offset)


def arg_reduce(name, x, dim=None, keepdim=False, out=None):
    o = OPS[name]
    if dim is None:
        flat = reshape_flat(x)
        if C.numel(flat.shape) == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0.")
        res = run(o, x.device, (flat,), {"dim": 0}, (1,), D.int64)
        shape = tuple(1 for _ in x.shape) if keepdim else ()
        res = C.view_of(res, shape, C.contiguous_strides(shape), res._offset)
    else:
        nd = len(x.shape)
        d = C.normalize_dim(dim, nd, name)
        if nd == 0:
            return arg_reduce(name, C.view_of(x, (1,), (1,), x._offset), 0, False, out)
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        keep_shape = tuple(1 if i == d else s for i, s in enumerate(x.shape))
        res = run(o, x.device, (x,), {"dim": d}, keep_shape, D.int64)
        if not keepdim:
            res = _squeeze_dims(res, (d,))
    if out is not None:
        return write_out(name, out, res, "exact")
    return res


def reshape_flat(x):
    """``x`` as a 1-D tensor (a view of it when contiguous; not recorded)."""
    y = x if C.is_contiguous(x) else clone(x)
    return C.view_of(y, (C.numel(y.shape),), (1,), y._offset)


def scan(name, x, dim, dtype=None, out=None):
    o = OPS[name]
    if x.requires_grad and MODE.grad:
        return record(o, lambda: scan(name, x, dim, dtype, out), (x,),
                      {"dim": dim, "dtype": dtype}, out=out)
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, name)
    rdt = _reduce_dtype(name, o.promotion, x, dtype)
    if nd == 0:
        res = cast(x, rdt)
        res = clone(res) if res is x else res
    else:
        res = run(o, x.device, (cast(x, rdt),), {"dim": d}, x.shape, rdt)
    if out is not None:
        _resize_out(name, out, res.shape)
        return copy_(out, res)
    return res


def softmax_op(name, x, dim, dtype=None):
    o = OPS[name]
    if AC.ACTIVE[0] and dtype is None:
        (x,) = AC.cast_args(name, (x,), to)
    if x.requires_grad and MODE.grad:
        return record(o, lambda: softmax_op(name, x, dim, dtype), (x,),
                      {"dim": dim, "dtype": dtype})
    d = C.normalize_dim(dim, len(x.shape), name)  # a 0-d tensor takes -1 or 0 (PyTorch)
    if dtype is not None:
        x = cast(x, D.to_dtype(dtype))
    if not x.dtype.is_floating_point:
        if C.numel(x.shape) == 0:  # PyTorch returns an empty non-float input as it is
            return clone(x)
        impl = "lastdim_kernel_impl" if d == max(len(x.shape) - 1, 0) else "kernel_impl"
        raise NotImplementedError(f'"{name}_{impl}" not implemented for {_tn(x.dtype)!r}')
    if not x.shape:
        return _softmax0d(name, x, o)
    return run(o, x.device, (x,), {"dim": d}, x.shape, x.dtype)


def _softmax0d(name, x, o):
    x1 = C.view_of(x, (1,), (1,), x._offset)
    res = run(o, x.device, (x1,), {"dim": 0}, (1,), x.dtype)
    return C.view_of(res, (), (), res._offset)


def sort(x, dim=-1, descending=False, stable=False):
    o = OPS["sort"]
    if x.requires_grad and MODE.grad and x.shape:
        return record(o, lambda: sort(x, dim, descending, stable), (x,),
                      {"dim": dim, "descending": descending, "stable": stable})
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "sort")  # a 0-d tensor takes -1 or 0 (PyTorch)
    if nd == 0:
        return clone(x), zeros((), D.int64, x.device)
    k = o.kernels.get(x.device.type)
    if k is None and o.composite is None:
        backend_for(x.device.type)
        k = o.kernels.get(x.device.type)
    values = C.empty(x.shape, x.dtype, x.device)
    indices = C.empty(x.shape, D.int64, x.device)
    attrs = {"dim": d, "descending": bool(descending), "stable": bool(stable)}
    if k is None:
        return tuple(_no_kernel(o, x.device, [values, indices], (x,), attrs))
    launch(o, x.device, k, values, indices, x, **attrs)
    return values, indices


# ---------------------------------------------------------------------------------
# convolution and pooling building blocks
# ---------------------------------------------------------------------------------

def conv_blocks(sp, kernel, dilation, padding, stride) -> tuple:
    """Sliding blocks per spatial dim with symmetric ``padding`` (PyTorch's formula)."""
    return tuple((sp[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                 for i in range(len(kernel)))


def _geom(name, x, kernel, dilation, padding, stride):
    nd = len(kernel)
    if not 1 <= nd <= 3 or len(x.shape) != nd + 2:
        raise ValueError(f"{name}(): expected a (N, C, *spatial) tensor with {nd} spatial "
                         f"dims (1 to 3), got {shape_str(x.shape)}")
    g = tuple(tuple(int(v) for v in a) for a in (kernel, dilation, padding, stride))
    if any(len(a) != nd for a in g):
        raise ValueError(f"{name}(): kernel, dilation, padding and stride need {nd} values each")
    if any(v <= 0 for a in (g[0], g[1], g[3]) for v in a) or any(v < 0 for v in g[2]):
        raise ValueError(f"{name}(): kernel, dilation and stride must be positive and padding "
                         f"non-negative, got {g}")
    return g


def im2col(x, kernel, dilation, padding, stride, blocks=None, value=0, batch_inner=False):
    """Sliding blocks of ``x`` (N, C, *sp) as (N, C, *kernel, *blocks). ``blocks`` defaults to
    PyTorch's count for symmetric ``padding``; more blocks pad on the right with ``value``.
    ``batch_inner`` lays the result out as (C, *kernel, N, *blocks) in memory, so that
    ``.permute`` + ``.reshape`` to (C * K, N * L) — one GEMM for a batch — is free."""
    if x.requires_grad and MODE.grad:
        return record(OPS["im2col"], lambda: im2col(x, kernel, dilation, padding, stride,
                                                    blocks, value, batch_inner), (x,),
                      {"kernel_size": kernel, "dilation": dilation, "padding": padding,
                       "stride": stride})
    kernel, dilation, padding, stride = _geom("im2col", x, kernel, dilation, padding, stride)
    if blocks is None:
        blocks = conv_blocks(x.shape[2:], kernel, dilation, padding, stride)
    blocks = tuple(int(b) for b in blocks)
    nd = len(kernel)
    n, c = x.shape[:2]
    if batch_inner:
        buf = C.empty((c,) + kernel + (n,) + blocks, x.dtype, x.device)
        perm = (1 + nd, 0) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, 2 + 2 * nd))
        out = C.view_of(buf, tuple(buf.shape[p] for p in perm),
                        tuple(buf._stride[p] for p in perm), 0)
    else:
        out = C.empty((n, c) + kernel + blocks, x.dtype, x.device)
    attrs = {"kernel": kernel, "dilation": dilation, "padding": padding, "stride": stride,
             "blocks": blocks, "value": value}
    return run(OPS["im2col"], x.device, (x,), attrs, out.shape, x.dtype, out)


def col2im(cols, size, kernel, dilation, padding, stride):
    """The adjoint of im2col: blocks (N, C, *kernel, *blocks) summed into (N, C, *size);
    positions that fall in the padding are dropped."""
    if cols.requires_grad and MODE.grad:
        return record(OPS["col2im"], lambda: col2im(cols, size, kernel, dilation, padding,
                                                    stride), (cols,),
                      {"kernel_size": kernel, "dilation": dilation, "padding": padding,
                       "stride": stride})
    nd = len(kernel)
    if len(cols.shape) != 2 + 2 * nd:
        raise ValueError(f"col2im(): expected cols (N, C, *kernel, *blocks) with {nd} spatial "
                         f"dims, got {shape_str(cols.shape)}")
    size = tuple(int(v) for v in size)
    probe = C.view_of(cols, cols.shape[:2] + size, (0,) * (2 + nd), 0)
    kernel, dilation, padding, stride = _geom("col2im", probe, kernel, dilation, padding,
                                              stride)
    if tuple(cols.shape[2:2 + nd]) != kernel:
        raise ValueError(f"col2im(): cols {shape_str(cols.shape)} do not match kernel {kernel}")
    out = C.empty(cols.shape[:2] + size, cols.dtype, cols.device)
    attrs = {"kernel": kernel, "dilation": dilation, "padding": padding, "stride": stride,
             "size": size}
    return run(OPS["col2im"], cols.device, (cols,), attrs, out.shape, cols.dtype, out)


def max_pool(x, kernel, dilation, padding, stride, blocks):
    """Window maxima of ``x`` (N, C, *sp) and their flat indices into each (*sp) plane."""
    if x.requires_grad and MODE.grad:
        return record(OPS["max_pool"], lambda: max_pool(x, kernel, dilation, padding, stride,
                                                        blocks), (x,), {})
    kernel, dilation, padding, stride = _geom("max_pool", x, kernel, dilation, padding, stride)
    blocks = tuple(int(b) for b in blocks)
    shape = x.shape[:2] + blocks
    attrs = {"kernel": kernel, "dilation": dilation, "padding": padding, "stride": stride,
             "blocks": blocks}
    o = OPS["max_pool"]
    k = o.kernels.get(x.device.type)
    if k is None:
        return o.composite(x, **attrs)
    values = C.empty(shape, x.dtype, x.device)
    indices = C.empty(shape, D.int64, x.device)
    launch(o, x.device, k, values, indices, x, **attrs)
    return values, indices


# ---------------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------------

def _check_index(name, index):
    if not _is_t(index):
        raise TypeError(f"{name}(): argument 'index' must be a Tensor, not "
                        f"{type(index).__name__}")
    if index.dtype is not D.int64:
        if index.dtype.is_floating_point or index.dtype is D.bool_:
            raise RuntimeError(f"{name}(): Expected dtype int64 for index, got "
                               f"{_tn(index.dtype)}")
        index = cast(index, D.int64)
    return index


def gather(x, dim, index, out=None):
    if x.requires_grad and MODE.grad:
        return record(OPS["gather"], lambda: gather(x, dim, index, out), (x,),
                      {"dim": dim, "index": index}, out=out)
    index = _check_index("gather", index)
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "gather")
    if len(index.shape) != nd and not (nd == 0 and len(index.shape) <= 1):
        raise RuntimeError("gather(): Index tensor must have the same number of dimensions as "
                           "input tensor")
    for i in range(len(index.shape)):
        if i != d and nd and index.shape[i] > x.shape[i]:
            raise RuntimeError(f"gather(): Size does not match at dimension {i} expected index "
                               f"{shape_str(index.shape)} to be no larger than self "
                               f"{shape_str(x.shape)} apart from dimension {d}")
    C.same_device("gather", [x, index])
    if nd == 0:  # a 0-d input gathers like a 1-element vector
        x = C.view_of(x, (1,), (1,), x._offset)
        flat = C.view_of(index, (C.numel(index.shape),), (1,), index._offset) \
            if C.is_contiguous(index) else reshape_flat(index)
        res = run(OPS["gather"], x.device, (x, 0, flat), {}, flat.shape, x.dtype)
        res = C.view_of(res, index.shape, C.contiguous_strides(index.shape), res._offset)
    else:
        res = run(OPS["gather"], x.device, (x, d, index), {}, index.shape, x.dtype)
    if out is not None:
        return write_out("gather", out, res, "exact")
    return res


def scatter(x, dim, index, src, reduce=None):
    """Out-of-place scatter (a copy of ``x`` with ``src`` scattered into it)."""
    if requires_grad((x, src)) and MODE.grad:
        return record(OPS["scatter"], lambda: scatter(x, dim, index, src, reduce), (x, src),
                      {"dim": dim, "index": index, "reduce": reduce})
    return scatter_(clone(x), dim, index, src, reduce)


def scatter_(x, dim, index, src, reduce=None):
    """In-place scatter; ``src`` is a tensor or a scalar; ``reduce`` None or 'add'."""
    if MODE.grad and (requires_grad((x, src)) or _base_requires_grad(x)):
        return record(OPS["scatter"], lambda: scatter_(x, dim, index, src, reduce), (x, src),
                      {"dim": dim, "index": index, "reduce": reduce}, inplace=True)
    index = _check_index("scatter", index)
    nd = len(x.shape)
    d = C.normalize_dim(dim, nd, "scatter")
    if reduce not in (None, "add", "sum"):
        if reduce == "multiply":  # (ember.scatter computes it with scatter_reduce's "prod")
            raise NotImplementedError("scatter(): the scatter kernels have no "
                                      "reduce='multiply'; call ember.scatter or scatter_reduce")
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got "
                           f"{reduce!r}")
    reduce = "add" if reduce == "sum" else reduce
    if len(index.shape) != nd:
        raise RuntimeError("scatter(): Index tensor must have the same number of dimensions as "
                           "self tensor")
    if _is_t(src):
        if src.device != x.device:
            raise RuntimeError(f"scatter(): Expected all tensors to be on the same device, but "
                               f"found at least two devices, {x.device} and {src.device}!")
        if len(src.shape) != nd:
            raise RuntimeError("scatter(): Index tensor must have the same number of "
                               "dimensions as src tensor")
        for i in range(nd):
            if index.shape[i] > src.shape[i]:
                raise RuntimeError(f"scatter(): Expected index {shape_str(index.shape)} to be "
                                   f"smaller than self {shape_str(x.shape)} apart from "
                                   f"dimension {d} and to be smaller size than src "
                                   f"{shape_str(src.shape)}")
        src = cast(src, x.dtype)
    else:
        src = C.expand_to(C.scalar_tensor(src, x.dtype, x.device), index.shape)
    for i in range(nd):
        if i != d and index.shape[i] > x.shape[i]:
            raise RuntimeError(f"scatter(): Expected index {shape_str(index.shape)} to be "
                               f"smaller than self {shape_str(x.shape)} apart from dimension "
                               f"{d}")
    C.same_device("scatter", [x, index])
    C.check_writable(x, "scatter_")
    if C.may_overlap(x, src):
        src = _private_copy(src)
    if C.may_overlap(x, index):
        index = _private_copy(index)
    o = OPS["scatter"]
    k = o.kernels.get(x.device.type)
    if k is None:
        backend_for(x.device.type)
        k = o.kernels.get(x.device.type)
    if C.numel(index.shape):
        if k is None:
            _no_kernel(o, x.device, [x], (d, index, src), {"reduce": reduce})
        else:
            launch(o, x.device, k, x, d, index, src, reduce=reduce)
    C.bump(x)
    return x


def nonzero(x):
    o = OPS["nonzero"]
    if x.dtype._kind == 3:      # complex: the elements with a nonzero part
        x = elementwise("ne", x, 0)
    k = o.kernels.get(x.device.type)
    if k is None:
        return o.composite(x)
    if x.device.type == "meta":
        raise NotImplementedError(
            "nonzero(): the output's shape depends on the values of the input, and a meta "
            "tensor has none (PyTorch's meta nonzero raises too)")
    n = int(item(reduce("sum", elementwise("ne", x, 0))))
    out = C.empty((n, len(x.shape)), D.int64, x.device)
    if n:
        launch(o, x.device, k, out, x)
    return out


# ---------------------------------------------------------------------------------
# linear algebra
# ---------------------------------------------------------------------------------

def bmm(a, b, out=None):
    if out is None and (a.dtype._kind == 3 or b.dtype._kind == 3):
        # complex: the real GEMM on the interleaved layout, differentiated through its parts
        # (as mm and matmul; einsum contracts through bmm)
        _check_bmm(a, b)
        return COMPLEX["bmm"](a, b)
    if AC.ACTIVE[0] and out is None:
        a, b = AC.cast_args("bmm", (a, b), to)
    if requires_grad((a, b)) and MODE.grad:
        return record(OPS["bmm"], lambda: bmm(a, b, out), (a, b), {}, out=out)
    _check_bmm(a, b)
    return _matmul_kernel("bmm", a, b, out)


def _check_bmm(a, b):
    if len(a.shape) != 3 or len(b.shape) != 3:
        raise RuntimeError(f"bmm(): batch1 must be a 3D tensor (got {len(a.shape)}D) and batch2 "
                           f"must be a 3D tensor (got {len(b.shape)}D)")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"bmm(): Expected size for first two dimensions of batch2 tensor to "
                           f"be: [{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, "
                           f"{b.shape[1]}].")


def _matmul_kernel(name, a, b, out):
    dev = C.same_device(name, [a, b])
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}(): expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}")
    if a.dtype is D.bool_:
        raise RuntimeError(f"{name}(): \"addmm_impl_cpu_\" not implemented for 'Bool'")
    shape = (a.shape[0], a.shape[1], b.shape[2])
    if out is not None:
        _resize_out(name, out, shape)
        return _write_result(name, out, [a, b], shape, a.dtype, OPS["bmm"], dev, {})
    if a.shape[2] == 0:
        return zeros(shape, a.dtype, dev)
    return run(OPS["bmm"], dev, (a, b), {}, shape, a.dtype)


# ---------------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------------

def full(shape, value, dtype, device):
    t = C.empty(tuple(shape), dtype, device)
    run(OPS["fill"], device, (C._coerce_scalar(value, dtype),), {}, t.shape, dtype, t)
    return t


def zeros(shape, dtype, device):
    return full(shape, False if dtype is D.bool_ else 0, dtype, device)


def arange(start, end, step, dtype, device):
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError("arange(): unsupported range: start, end and step must be "
                               "finite")
    n = math.ceil((end - start) / step)
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("arange(): upper bound and larger bound inconsistent with step sign")
    n = max(n, 0)
    t = C.empty((n,), dtype, device)
    if n:
        if dtype.is_floating_point:
            s, st = float(start), float(step)
        else:
            s, st = int(start), int(step)
            if float(start) != s or float(step) != st:
                s, st = float(start), float(step)
                tmp = run(OPS["arange"], device, (s, st), {}, (n,), D.float64)
                return cast(tmp, dtype)
        run(OPS["arange"], device, (s, st), {}, (n,), dtype, t)
    return t


def random_(t, kind, a, b, generator=None):
    """Fill ``t`` in place from the uniform or normal distribution (complex ``t``: both
    parts, a normal one with standard deviation ``b / sqrt(2)``, as PyTorch)."""
    if t.dtype._kind == 3:
        if kind == "normal":
            b = b / math.sqrt(2.0)
        random_(_real_view(t), kind, a, b, generator)
        C.bump(t)
        return t
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"{kind}_(): \"{kind}_kernel\" not implemented for "
                                  f"'{_tn(t.dtype)}'; use randint for integers")
    g = generator or default_generator(t.device)
    if g.device != t.device:
        raise RuntimeError(f"Expected a '{t.device.type}' generator, but found "
                           f"'{g.device.type}'")
    C.check_writable(t, f"{kind}_")
    n = C.numel(t.shape)
    seed, off = g._take(n)
    if n:
        dst = t if C.is_contiguous(t) else C.empty(t.shape, t.dtype, t.device)
        run(OPS[kind], t.device, (float(a), float(b), seed, off), {}, t.shape, t.dtype, dst)
        if dst is not t:
            copy_(t, dst)
    C.bump(t)
    return t

