"""Elementwise kernels, generated from the op definitions' scalar bodies.

``ember.dispatcher.codegen.opencl`` renders each signature class (``ew1``, ``ew2b``,
``ewsel``, ...) as one OpenCL C family: an inline function per op, one kernel per dtype
switching on the op code. This module builds the families' programs from that text and
gives every op with a body a kernel ``kernel(out, *inputs, **attrs)``. The dispatcher has
already promoted and broadcast the inputs: operands share ``out``'s shape and (bool
conditions apart) one dtype.
"""
from __future__ import annotations

from ember.dispatcher import expr as X
from ember.dispatcher.codegen import opencl as gen
from ember.dispatcher.schema import elementwise_ops

from .._geometry import ew_geom, unit_walk
from .._runtime import enqueue, round_up
from ._common import CONSTS, buf, dev_of, elementwise_local, np, numel, rt, sfx, vt

__all__ = ["KERNELS"]

#: launches this small take the class's switch kernel: the op's own kernel gains little
#: there and costs a PoCL compile per op and dtype on first use (tests launch thousands)
_UNIT_MIN = 4096

_SOURCES = {cls: gen.render_class(cls, ops) for cls, ops in gen.op_classes().items()}


def _spec(cls):
    def spec(dev):
        return {"types": sorted(dev.dtypes), "consts": CONSTS, "linear": True,
                "body": _SOURCES[cls]}
    return spec


rt.SPECS.update({cls: _spec(cls) for cls in _SOURCES})


def _launch(dev, cls, code, dtype, shape, tensors, attrs, errors=None):
    """Enqueue one elementwise kernel; ``errors`` is ``(op, argument names)`` when the op
    may report an error (its checks apply to ``dtype``): it then gets an error record."""
    n = numel(shape)
    if n == 0:
        return
    bufs, offs = zip(*[buf(t) for t in tensors])
    g = ew_geom(cls, shape, tensors, offs)
    walk = unit_walk(g, len(tensors)) if n >= _UNIT_MIN else None
    L = elementwise_local(dev)
    if walk is None:        # the class's kernel, switching on the op code
        kname = f"{cls}_{sfx(dtype)}"
        k = dev.kernel(cls, kname + "_lin" if g[1] <= 1 else kname)
        size, local = (round_up(n, L),), (L,)
    else:                   # the op's own kernel
        k = dev.kernel(cls, f"{cls}_op{code}_{walk}_{sfx(dtype)}_lin")
        if walk == "2d":    # rows: a 2-D launch, columns along dim 0
            L = min(L, 64)
            size, local = (round_up(int(g[3]), L), int(g[2])), (L, 1)
        else:
            size, local = (round_up(n, L),), (L,)
    if errors is None:      # cannot fail: the shared record no kernel writes to
        enqueue(dev, k, size, local, np.int32(code), g, *bufs, *attrs, dev.err)
        return
    op, names = errors
    with dev.kernel_errors(op, **dict(zip(names, tensors))) as err:
        enqueue(dev, k, size, local, np.int32(code), g, *bufs, *attrs, err)


_KIND_NAMES = {"float": "floating-point", "sint": "signed integer",
               "uint": "unsigned integer", "bool": "bool"}


def _make(o):
    cls = gen.class_of(o)
    codes = gen.opcodes()
    ins = o.body_inputs()
    value_args = [i for i, v in enumerate(ins) if v.value[2] != X.BOOL]
    bool_args = [i for i, v in enumerate(ins) if v.value[2] == X.BOOL]
    out_bool = o.out_type() == X.BOOL
    kinds = {mode: set(o.kinds(mode)) for mode in o.bodies()}
    mode_attr = o.mode_attr
    attr_names = list(o.attrs)
    name = o.name
    check_kinds = {k for c in o.checks for k in c.kinds}
    arg_names = ("out",) + tuple(v.value[1] for v in ins)

    def kernel(out, *args, **kw):
        dev = dev_of(out)
        if len(args) != len(ins):
            raise TypeError(f"{name}(): the opencl kernel takes {len(ins)} input(s), got "
                            f"{len(args)}")
        mode = kw.pop(mode_attr, None) if mode_attr else None
        if mode not in kinds:
            raise ValueError(f"{name}(): unknown {mode_attr} {mode!r} (expected one of "
                             f"{', '.join(repr(m) for m in kinds)})")
        dtype = args[value_args[0]].dtype
        for i in value_args[1:]:
            if args[i].dtype is not dtype:
                raise TypeError(f"{name}(): the opencl kernel expects operands of one dtype, "
                                f"got {', '.join(a.dtype.name for a in args)}")
        for i in bool_args:
            if args[i].dtype.name != "bool":
                raise TypeError(f"{name}(): expected a bool condition, got "
                                f"{args[i].dtype.name}")
        want = "bool" if out_bool else dtype.name
        if out.dtype.name != want:
            raise TypeError(f"{name}(): expected a {want} output, got {out.dtype.name}")
        kind = X.kind_of(dtype)
        if kind not in kinds[mode]:
            ok = " or ".join(_KIND_NAMES[k] for k in X.KINDS if k in kinds[mode])
            raise TypeError(f"{name}(): not implemented for dtype {dtype.name} on opencl "
                            f"(expected {ok} tensors)")
        dev.check_dtype(dtype, name)
        attrs = [vt(dtype, kw.pop(a, o.attrs[a])) for a in attr_names]
        if kw:
            raise TypeError(f"{name}(): unexpected attribute(s) {', '.join(kw)}")
        attrs += [vt(dtype, 0)] * (gen.MAX_ATTRS - len(attrs))
        _launch(dev, cls, codes[(name, mode)], dtype, out.shape, (out,) + args, attrs,
                (name, arg_names) if kind in check_kinds else None)

    kernel.__name__ = name
    return kernel


KERNELS = {o.name: _make(o) for o in elementwise_ops()}
