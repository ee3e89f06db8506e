"""The ONNX graph of a captured trace, as plain data (no ``onnx`` import here).

A trace (``dispatcher/lazy.py``) is kernel calls writing views of numbered memory slots.
ONNX has values, not memory, so :class:`Translator` keeps, per slot, the ONNX value that
holds its contents: the last whole-buffer write as it was written (``full``), or the
buffer as a flat vector (``flat``) once a kernel wrote part of it. A read of a view is
that value itself, a ``Reshape``, a ``Transpose`` of a permuted layout, an ``Expand`` of
a broadcast (stride 0) view, or, for any other strided view, a ``Gather`` with the view's
element indices; a write into part of a buffer is a ``ScatterND`` with them. Parameters and
buffers of the model (memory the trace reads but did not write) become initializers.

Each kernel has a translator (``TRANSLATORS``); elementwise kernels are translated from
their op's scalar body (``expr.py``), the same definition the C++ and OpenCL kernels are
generated from, so every elementwise op exports without a table entry of its own.
"""
from __future__ import annotations

import math

import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import expr as X
from ember.dispatcher.schema import OPS

__all__ = ["Builder", "Translator", "TRANSLATORS"]


class Builder:
    """Nodes, initializers, inputs and outputs of one ONNX graph, as plain data."""

    def __init__(self):
        self.nodes: list = []         # (op_type, inputs, outputs, attrs)
        self.initializers: dict = {}  # name -> numpy array
        self.inputs: list = []        # (name, dtype name, shape)
        self.outputs: list = []
        self._consts: dict = {}
        self._n = 0

    def fresh(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def node(self, op_type: str, inputs, attrs=None, outputs: int = 1, hint=None):
        outs = [self.fresh(hint or op_type) for _ in range(outputs)]
        self.nodes.append((op_type, list(inputs), outs, dict(attrs or {})))
        return outs[0] if outputs == 1 else outs

    def const(self, value, dtype=None, name=None) -> str:
        """An initializer holding ``value`` (small ones are shared by value)."""
        arr = np.asarray(value, dtype=dtype)
        key = None
        if name is None and arr.size <= 64:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            hit = self._consts.get(key)
            if hit is not None:
                return hit
        name = name or self.fresh("const")
        self.initializers[name] = arr
        if key is not None:
            self._consts[key] = name
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))


#: dtypes onnxruntime's CPU ``Where`` lacks: their partial writes stay ``ScatterND``s
_NO_WHERE = {"bool", "int16", "bfloat16"}


def _contiguous(shape, stride) -> bool:
    return all(st == cs for n, st, cs in zip(shape, stride, C.contiguous_strides(shape))
               if n != 1)


def _indices(shape, stride, offset) -> np.ndarray:
    """The element index (into a flat buffer) of every element of a strided view."""
    idx = np.full(tuple(shape), offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(shape, stride)):
        ax = np.arange(n, dtype=np.int64) * st
        idx = idx + ax.reshape([n if i == d else 1 for i in range(len(shape))])
    return idx


def _box(shape, stride, offset, base):
    """A strided view of a contiguous buffer of shape ``base`` as a box of it: per base dim
    ``(start, view dim or None, step)``, where each view dim of size > 1 runs along its own
    base dim with a step and every other base dim is held at ``start``; None when the
    view is not such a box (a diagonal, a view across dims)."""
    cs = C.contiguous_strides(tuple(base))
    starts = []
    rem = offset
    for d, n in enumerate(base):
        q, rem = divmod(rem, cs[d])
        if q >= n:
            return None
        starts.append(q)
    if rem:
        return None
    axes = [None] * len(base)
    steps = [1] * len(base)
    for j, (n, st) in enumerate(zip(shape, stride)):
        if n == 1:
            continue
        for d in range(len(base)):
            if axes[d] is None and base[d] > 1 and st >= cs[d] and st % cs[d] == 0 and \
                    starts[d] + st // cs[d] * (n - 1) < base[d]:
                axes[d], steps[d] = j, st // cs[d]
                break
        else:
            return None
    return [(starts[d], axes[d], steps[d]) for d in range(len(base))]


def _base_of(shape, stride, numel):
    """A contiguous shape of ``numel`` elements whose strides include every stride of the
    view (dims of size 1 aside), so that the view is a box of it; or None."""
    strides = sorted(st for n, st in zip(shape, stride) if n != 1)
    if len(set(strides)) != len(strides) or (strides and strides[0] < 1):
        return None
    bs = ([1] if not strides or strides[0] != 1 else []) + strides
    sizes = []
    for lo, hi in zip(bs, bs[1:]):
        if hi % lo:
            return None
        sizes.append(hi // lo)
    if numel % bs[-1]:
        return None
    sizes.append(numel // bs[-1])
    return list(reversed(sizes))


def _permutation(shape, stride):
    """The permutation ``p`` with the view equal to ``Transpose(Reshape(buffer,
    [shape[i] for i in p]), inverse(p))``, when the view is a permuted contiguous layout
    (sizes 1 apart); else None."""
    order = sorted(range(len(shape)), key=lambda d: (-stride[d], d))
    expect = 1
    for d in reversed(order):
        if shape[d] != 1 and stride[d] != expect:
            return None
        expect *= shape[d]
    return order


class _Slot:
    __slots__ = ("kind", "full", "flat", "dtype", "numel", "storage", "version")

    def __init__(self, kind, dtype=None, numel=0, storage=None):
        self.kind = kind        # "input" (a graph input), "const" (an initializer), "buffer"
        self.full = None        # (name, shape): the last write, covering the buffer
        self.flat = None        # the contents as a 1-d value
        self.dtype = dtype      # the dtype the contents were written as
        self.numel = numel
        self.storage = storage
        self.version = 0        # counts writes (reads are cached per version)


class Translator:
    """Translates one trace into a :class:`Builder`.

    ``storages``, ``values``: the trace's slots and runtime values; ``inputs``: id(storage)
    -> (graph input name, its contiguous tensor); ``names``: (id(storage), shape, stride,
    offset) -> initializer name (the model's parameters and buffers)."""

    def __init__(self, info_nodes, slot_kinds, storages, values, inputs, names, builder):
        self.b = builder
        self.values = values
        self.names = names
        self.nodes = info_nodes
        self.slots = []
        for slot, (kind, st) in enumerate(zip(slot_kinds, storages)):
            if kind[0] == "b":
                self.slots.append(_Slot("buffer", storage=st))
                continue
            hit = inputs.get(id(st))
            if hit is not None:
                name, t = hit
                s = _Slot("input", t.dtype, t.numel(), st)
                s.full = (name, tuple(t.shape))
                self.slots.append(s)
            else:
                self.slots.append(_Slot("const", storage=st))
        self._views: dict = {}

    # ---- arguments -------------------------------------------------------------------
    def value(self, e):
        """A non-tensor argument's Python value."""
        tag = e[0]
        if tag == "v":
            return self.values[e[1]]
        if tag == "c":
            return e[1]
        if tag in ("l", "T"):
            items = [self.value(x) for x in e[1]]
            return items if tag == "l" else tuple(items)
        raise TypeError("a tensor where a value was expected")

    def read(self, e, broadcast=False):
        """The ONNX value of the tensor argument ``e`` and its shape; with ``broadcast``
        a stride-0 dimension may come back with size 1 (for ops that broadcast)."""
        _, slot, shape, stride, offset, dtype, device = e
        base = tuple(1 if st == 0 else n for n, st in zip(shape, stride))
        bstride = tuple(0 if n == 1 else st for n, st in zip(base, stride))
        name = self._read(slot, base, bstride, offset, dtype, device)
        if not broadcast and base != tuple(shape):
            name = self.b.node("Expand", [name, self.b.ints(shape)])
            return name, tuple(shape)
        return name, base

    def _read(self, slot, shape, stride, offset, dtype, device):
        key = (slot, shape, stride, offset, dtype, self.slots[slot].version)
        hit = self._views.get(key)
        if hit is not None:
            return hit
        s = self.slots[slot]
        if s.kind == "const":
            name = self._const_view(s, shape, stride, offset, dtype, device)
        else:
            if s.full is None and s.flat is None:
                raise NotImplementedError(
                    "ember.onnx.export: the model reads memory no op wrote (ember.empty); "
                    "its contents are undefined")
            if dtype is not s.dtype:
                raise NotImplementedError(
                    f"ember.onnx.export: memory written as {s.dtype} is read as {dtype} (a "
                    f"bit reinterpretation, Tensor.view(dtype)); ONNX has no such op")
            name = self._buffer_view(s, shape, stride, offset)
        self._views[key] = name
        return name

    def _buffer_view(self, s, shape, stride, offset):
        n = math.prod(shape)
        if s.full is not None and offset == 0 and n == s.numel:
            fname, fshape = s.full
            if _contiguous(shape, stride):
                return fname if tuple(shape) == fshape else \
                    self.b.node("Reshape", [fname, self.b.ints(shape)])
            p = _permutation(shape, stride)
            if p is not None:
                r = self.b.node("Reshape", [fname, self.b.ints([shape[d] for d in p])])
                inv = [p.index(d) for d in range(len(shape))]
                return self.b.node("Transpose", [r], {"perm": inv})
        if s.full is not None and s.full[1] and n:
            fname, fshape = s.full
            box = _box(shape, stride, offset, fshape)
            if box is not None:
                return self._slice(fname, box, shape)
            base = _base_of(shape, stride, s.numel)   # (a box of another shape of it)
            box = _box(shape, stride, offset, base) if base else None
            if box is not None:
                return self._slice(self.b.node("Reshape", [fname, self.b.ints(base)]), box,
                                   shape)
        flat = self._flat(s)
        if offset == 0 and n == s.numel and _contiguous(shape, stride):
            return self.b.node("Reshape", [flat, self.b.ints(shape)])
        idx = self.b.const(_indices(shape, stride, offset))
        return self.b.node("Gather", [flat, idx], {"axis": 0})

    def _slice(self, name, box, shape):
        """The view ``box`` (``_box``) of the value ``name``: a Slice, the view's dims put
        in its order, and a Reshape to ``shape``."""
        B = self.b
        nd = len(box)
        starts = [st for st, _, _ in box]
        ends = [st + step * ((shape[j] - 1) if j is not None else 0) + 1
                for st, j, step in box]
        steps = [step for _, _, step in box]
        out = B.node("Slice", [name, B.ints(starts), B.ints(ends), B.ints(range(nd)),
                               B.ints(steps)])
        order = sorted((d for d in range(nd) if box[d][1] is not None),
                       key=lambda d: box[d][1])
        perm = order + [d for d in range(nd) if box[d][1] is None]
        if perm != list(range(nd)):
            out = B.node("Transpose", [out], {"perm": perm})
        return B.node("Reshape", [out, B.ints(shape)])

    def _flat(self, s):
        if s.flat is None:
            s.flat = self.b.node("Reshape", [s.full[0], self.b.ints([-1])], hint="flat")
        return s.flat

    def _const_view(self, s, shape, stride, offset, dtype, device):
        hit = self.names.get((id(s.storage), shape, stride, offset))
        if hit is None and _contiguous(shape, stride):   # a parameter seen in another shape
            hit = self.names.get(id(s.storage))
            if hit is not None and (hit[1]._offset != offset or
                                    hit[1].numel() != math.prod(shape)):
                hit = None
        if hit is not None:
            name, t = hit
            if name not in self.b.initializers:
                self.b.initializers[name] = np.array(t.detach().cpu().numpy(), copy=True)
            if tuple(t.shape) != tuple(shape):
                return self.b.node("Reshape", [name, self.b.ints(shape)])
            return name
        t = C.new_tensor(s.storage, shape, stride, offset, dtype, device, [0])
        return self.b.const(np.array(t.detach().cpu().numpy(), copy=True),
                            name=self.b.fresh("const"))

    def write(self, e, name, shape):
        """Record that the kernel wrote ``name`` (of ``shape``) into the view ``e``."""
        _, slot, vshape, stride, offset, dtype, _dev = e
        s = self.slots[slot]
        if s.kind != "buffer":
            raise NotImplementedError(
                "ember.onnx.export: the model writes into its inputs, parameters or buffers "
                "(an in-place op, or BatchNorm's running statistics in training mode); export "
                "a model in eval mode whose forward does not change its inputs")
        vshape = tuple(vshape)
        s.version += 1
        if tuple(shape) != vshape:
            name = self.b.node("Expand", [name, self.b.ints(vshape)])
        numel = s.storage.nbytes // dtype.itemsize
        if s.dtype is not None and s.dtype is not dtype and (s.full or s.flat):
            raise NotImplementedError(
                f"ember.onnx.export: memory written as {s.dtype} is written again as {dtype} "
                f"(a bit reinterpretation); ONNX has no such op")
        if offset == 0 and math.prod(vshape) == numel and _contiguous(vshape, stride):
            s.full, s.flat, s.dtype, s.numel = (name, vshape), None, dtype, numel
            return
        if any(st == 0 and n > 1 for n, st in zip(vshape, stride)):
            raise NotImplementedError("ember.onnx.export: a kernel writes an overlapping "
                                      "(stride 0) view")
        if self._write_box(s, name, vshape, stride, offset, dtype, numel):
            return
        if s.full is None and s.flat is None:
            s.flat = self.b.node("ConstantOfShape", [self.b.ints([numel])],
                                 {"value": np.zeros(1, dtype=dtype.to_numpy())})
            s.dtype, s.numel = dtype, numel
        old = self._flat(s)
        idx = self.b.const(_indices(vshape, stride, offset).reshape(-1, 1))
        upd = self.b.node("Reshape", [name, self.b.ints([-1])])
        s.flat = self.b.node("ScatterND", [old, idx, upd])
        s.full = None

    def _write_box(self, s, name, vshape, stride, offset, dtype, numel) -> bool:
        """A write of a unit-step box of the buffer (a piece of ``cat``, a slice
        assignment): the value padded to the buffer's shape, chosen where the box is
        (``Where``), no element indices. False when the view is no such box."""
        if not numel or not math.prod(vshape) or dtype.name in _NO_WHERE:
            return False
        base = s.full[1] if s.full is not None else None
        box = _box(vshape, stride, offset, base) if base else None
        if box is None:
            base = _base_of(vshape, stride, numel)
            box = _box(vshape, stride, offset, base) if base else None
        if box is None or any(step != 1 for _, _, step in box):
            return False
        B = self.b
        nd = len(base)
        if s.full is not None:
            old = s.full[0] if tuple(s.full[1]) == tuple(base) else \
                B.node("Reshape", [s.full[0], B.ints(base)])
        elif s.flat is not None:
            old = B.node("Reshape", [s.flat, B.ints(base)])
        else:
            old = B.node("ConstantOfShape", [B.ints(base)],
                         {"value": np.zeros(1, dtype=dtype.to_numpy())})
        # the value in the base's dim order, with the held dims as 1
        order = sorted((d for d in range(nd) if box[d][1] is not None),
                       key=lambda d: box[d][1])
        inner = [vshape[box[d][1]] for d in order]
        val = B.node("Reshape", [name, B.ints(inner)]) if tuple(inner) != tuple(vshape) \
            else name
        ranked = sorted(range(len(order)), key=lambda i: order[i])
        if ranked != list(range(len(order))):
            val = B.node("Transpose", [val], {"perm": ranked})
        sizes = [vshape[j] if j is not None else 1 for _, j, _ in box]
        val = B.node("Reshape", [val, B.ints(sizes)])
        pads = [st for st, _, _ in box] + [n - st - m for n, (st, _, _), m in
                                           zip(base, box, sizes)]
        if any(pads):
            padded = B.node("Pad", [val, B.ints(pads)], {"mode": "constant"})
            ones = B.node("ConstantOfShape", [B.ints(sizes)],
                          {"value": np.ones(1, dtype=np.bool_)})
            mask = B.node("Pad", [ones, B.ints(pads)], {"mode": "constant"})
            val = B.node("Where", [mask, padded, old])
        s.full, s.flat, s.dtype, s.numel = (val, tuple(base)), None, dtype, numel
        return True

    # ---- the trace ---------------------------------------------------------------------
    def run(self):
        for name, _dev, args, attrs in self.nodes:
            fn = TRANSLATORS.get(name)
            o = OPS.get(name)
            if fn is None and o is not None and o.kind == "elementwise" and o.scalar:
                fn = _elementwise
            if fn is None:
                raise NotImplementedError(
                    f"ember.onnx.export: the op {name!r} has no ONNX translation yet")
            fn(self, name, args, dict(attrs))

    def output(self, t):
        """The ONNX value of the result tensor ``t`` (a view of one of the slots)."""
        s = t._storage
        for slot, st in enumerate(self.slots):
            real = getattr(st.storage, "real", None) if st.storage.__class__ is \
                C.LazyStorage else None
            if st.storage is s or real is s:
                e = ("t", slot, tuple(t.shape), t._stride, t._offset, t.dtype, t.device)
                return self.read(e)[0]
        return self.b.const(np.array(t.detach().cpu().numpy(), copy=True),
                            name=self.b.fresh("const"))


# ---- translators -------------------------------------------------------------------------

TRANSLATORS: dict = {}


def _translator(*names):
    def deco(fn):
        for n in names:
            TRANSLATORS[n] = fn
        return fn
    return deco


def _np(dtype):
    return dtype.to_numpy()


def _cast(tr, name, src, dst):
    if src is dst:
        return name
    return tr.b.node("Cast", [name], {"to": ("dtype", dst.name)})


@_translator("copy")
def _copy(tr, op, args, attrs):
    out, src = args
    name, shape = tr.read(src, broadcast=True)
    tr.write(out, _cast(tr, name, src[5], out[5]), shape)


@_translator("fill")
def _fill(tr, op, args, attrs):
    out, value = args
    v = tr.value(value)
    dtype = out[5]
    arr = np.asarray(v).astype(_np(dtype)).reshape(1)
    name = tr.b.node("ConstantOfShape", [tr.b.ints(out[2])], {"value": arr})
    tr.write(out, name, tuple(out[2]))


@_translator("mm", "bmm")
def _mm(tr, op, args, attrs):
    out, a, b = args
    small = out[5].name in ("uint8", "int8", "int16")   # MatMul takes 32 bits and more:
    wide = D.int32 if small else out[5]                  # products wrap the same way
    x = _cast(tr, tr.read(a)[0], a[5], wide)
    y = _cast(tr, tr.read(b)[0], b[5], wide)
    tr.write(out, _cast(tr, tr.b.node("MatMul", [x, y]), wide, out[5]), tuple(out[2]))


@_translator("linear")
def _linear(tr, op, args, attrs):
    out, x, w, bias = args
    xn, _ = tr.read(x)
    wn, _ = tr.read(w)
    wt = tr.b.node("Transpose", [wn], {"perm": [1, 0]})
    y = tr.b.node("MatMul", [xn, wt])
    if bias[0] == "t":
        bn, _ = tr.read(bias, broadcast=True)
        y = tr.b.node("Add", [y, bn])
    tr.write(out, y, tuple(out[2]))


@_translator("dense_conv")
def _conv(tr, op, args, attrs):
    out, a, w = args
    kernel = list(tr.value(attrs["kernel"]))
    padding = list(tr.value(attrs["padding"]))
    xn, _ = tr.read(a)
    wn, _ = tr.read(w)
    y = tr.b.node("Conv", [xn, wn], {
        "kernel_shape": kernel, "dilations": list(tr.value(attrs["dilation"])),
        "pads": padding + padding, "strides": list(tr.value(attrs["stride"])),
        "group": int(tr.value(attrs.get("groups", ("c", 1))))})
    tr.write(out, y, tuple(out[2]))


def _pool_attrs(x_shape, kernel, stride, padding, dilation, blocks):
    """ONNX pooling attributes giving ``blocks`` output positions (ceil_mode when the
    floor formula gives fewer)."""
    ceil = 0
    for n, k, s, p, d, b in zip(x_shape[2:], kernel, stride, padding, dilation, blocks):
        floor_out = (n + 2 * p - d * (k - 1) - 1) // s + 1
        if b != floor_out:
            ceil = 1
    return {"kernel_shape": list(kernel), "strides": list(stride),
            "pads": list(padding) + list(padding), "ceil_mode": ceil}


@_translator("max_pool")
def _max_pool(tr, op, args, attrs):
    values, indices, x = args
    if not x[5].is_floating_point and x[5].name not in ("uint8", "int8"):
        raise NotImplementedError(f"ember.onnx.export: max_pool of {x[5]}: ONNX's MaxPool "
                                  f"takes floating and 8-bit integer types")
    kernel = list(tr.value(attrs["kernel"]))
    dilation = list(tr.value(attrs["dilation"]))
    xn, xs = tr.read(x)
    B = tr.b
    if (kernel == list(xs[2:]) and all(b == 1 for b in tr.value(attrs["blocks"]))
            and not any(tr.value(attrs["padding"]))):
        # one window over the whole plane (adaptive max pooling to 1): no window size in
        # the graph, so the plane's size may be dynamic
        y = B.node("GlobalMaxPool", [xn])
        flat = B.node("Reshape", [xn, B.ints([xs[0], xs[1], -1])])
        ind = B.node("ArgMax", [flat], {"axis": 2, "keepdims": 1})
        ind = B.node("Reshape", [ind, B.ints(list(values[2]))])
        tr.write(values, y, tuple(values[2]))
        tr.write(indices, _cast(tr, ind, D.int64, indices[5]), tuple(indices[2]))
        return
    at = _pool_attrs(xs, kernel, list(tr.value(attrs["stride"])),
                     list(tr.value(attrs["padding"])), dilation,
                     list(tr.value(attrs["blocks"])))
    at["dilations"] = dilation
    y, ind = tr.b.node("MaxPool", [xn], at, outputs=2)
    tr.write(values, y, tuple(values[2]))
    # ONNX counts indices over the whole tensor, PyTorch within each (n, c) plane
    # (plane (n, c) starts at (n C + c) * plane: the remainder is the index within it;
    # the plane's size from the input's shape, which may be dynamic)
    plane = B.node("ReduceProd", [B.node("Shape", [xn], {"start": 2})], {"keepdims": 0})
    ind = B.node("Mod", [ind, plane])
    tr.write(indices, _cast(tr, ind, D.int64, indices[5]), tuple(indices[2]))


@_translator("avg_pool")
def _avg_pool(tr, op, args, attrs):
    out, x = args
    if tr.value(attrs.get("divisor_override", ("c", None))) is not None:
        raise NotImplementedError("ember.onnx.export: avg_pool with divisor_override has "
                                  "no ONNX form")
    xn, xs = tr.read(x)
    kernel = list(tr.value(attrs["kernel_size"]))
    stride = list(tr.value(attrs["stride"])) or kernel
    padding = list(tr.value(attrs["padding"]))
    if len(padding) == 1:
        padding = padding * len(kernel)
    at = _pool_attrs(xs, kernel, stride, padding, [1] * len(kernel), out[2][2:])
    at["count_include_pad"] = int(bool(tr.value(attrs["count_include_pad"])))
    tr.write(out, tr.b.node("AveragePool", [xn], at), tuple(out[2]))


@_translator("adaptive_avg_pool")
def _adaptive_avg_pool(tr, op, args, attrs):
    out, x = args
    xn, xs = tr.read(x)
    osize = tuple(out[2][2:])
    if all(o == 1 for o in osize):
        y = tr.b.node("GlobalAveragePool", [xn])
    elif all(n % o == 0 for n, o in zip(xs[2:], osize)):
        k = [n // o for n, o in zip(xs[2:], osize)]
        y = tr.b.node("AveragePool", [xn], {"kernel_shape": k, "strides": k})
    else:
        raise NotImplementedError(
            f"ember.onnx.export: adaptive_avg_pool from {xs[2:]} to {osize} (sizes that do "
            f"not divide) has no ONNX pooling form")
    tr.write(out, y, tuple(out[2]))


def _ones_or(tr, e, n, dtype, fill):
    if e[0] == "t":
        return tr.read(e)[0]
    return tr.b.const(np.full((n,), fill, dtype=_np(dtype)))


@_translator("batch_norm_inference")
def _batch_norm(tr, op, args, attrs):
    out, x, w, b, mean, var = args
    xn, xs = tr.read(x)
    c = xs[1]
    y = tr.b.node("BatchNormalization", [
        xn, _ones_or(tr, w, c, x[5], 1), _ones_or(tr, b, c, x[5], 0), tr.read(mean)[0],
        tr.read(var)[0]], {"epsilon": float(tr.value(attrs["eps"]))})
    tr.write(out, y, tuple(out[2]))


@_translator("layer_norm")
def _layer_norm(tr, op, args, attrs):
    out, x, w, b = args
    shape = list(tr.value(attrs["normalized_shape"]))
    xn, _ = tr.read(x)
    inputs = [xn, _ones_or(tr, w, 1, x[5], 1)]
    if b[0] == "t":
        inputs.append(tr.read(b)[0])
    y = tr.b.node("LayerNormalization", inputs, {
        "axis": -len(shape), "epsilon": float(tr.value(attrs["eps"]))})
    tr.write(out, y, tuple(out[2]))


@_translator("group_norm")
def _group_norm(tr, op, args, attrs):
    out, x, w, b = args
    g = int(tr.value(attrs["num_groups"]))
    eps = float(tr.value(attrs["eps"]))
    xn, xs = tr.read(x)
    B = tr.b
    r = B.node("Reshape", [xn, B.ints([xs[0], g, -1])])
    mean = B.node("ReduceMean", [r, B.ints([2])], {"keepdims": 1})
    d = B.node("Sub", [r, mean])
    var = B.node("ReduceMean", [B.node("Mul", [d, d]), B.ints([2])], {"keepdims": 1})
    std = B.node("Sqrt", [B.node("Add", [var, B.const(np.array(eps, dtype=_np(x[5])))])])
    y = B.node("Reshape", [B.node("Div", [d, std]), B.ints(xs)])
    per_channel = [xs[1]] + [1] * (len(xs) - 2)
    if w[0] == "t":
        y = B.node("Mul", [y, B.node("Reshape", [tr.read(w)[0], B.ints(per_channel)])])
    if b[0] == "t":
        y = B.node("Add", [y, B.node("Reshape", [tr.read(b)[0], B.ints(per_channel)])])
    tr.write(out, y, tuple(out[2]))


@_translator("softmax", "log_softmax")
def _softmax(tr, op, args, attrs):
    out, x = args
    xn, _ = tr.read(x)
    y = tr.b.node("Softmax" if op == "softmax" else "LogSoftmax", [xn],
                  {"axis": int(tr.value(attrs["dim"]))})
    tr.write(out, _cast(tr, y, x[5], out[5]), tuple(out[2]))


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


@_translator(*_REDUCE)
def _reduce(tr, op, args, attrs):
    out, x = args
    xn, xs = tr.read(x)
    compute = _compute(out[5])
    xn = _cast(tr, xn, x[5], compute)
    dims = tr.value(attrs["dims"])
    dims = [dims] if isinstance(dims, int) else list(dims)
    if xs and dims:
        xn = tr.b.node(_REDUCE[op], [xn, tr.b.ints(dims)], {"keepdims": 1})
    tr.write(out, _cast(tr, xn, compute, out[5]), tuple(out[2]))


def _compute(dtype):
    """The dtype ONNX computes ``dtype``'s values in: float32 for the half types (as the
    kernels accumulate), uint8 for bool (ONNX's numeric ops take no bool)."""
    if dtype.name in ("float16", "bfloat16"):
        return D.float32
    return D.uint8 if dtype.name == "bool" else dtype


@_translator("var", "std")
def _var(tr, op, args, attrs):
    out, x = args
    xn, xs = tr.read(x)
    dims = list(tr.value(attrs["dims"]))
    corr = tr.value(attrs["correction"])
    B = tr.b
    n = math.prod(xs[d] for d in dims)
    mean = B.node("ReduceMean", [xn, B.ints(dims)], {"keepdims": 1})
    d = B.node("Sub", [xn, mean])
    ss = B.node("ReduceSum", [B.node("Mul", [d, d]), B.ints(dims)], {"keepdims": 1})
    y = B.node("Div", [ss, B.const(np.array(max(n - corr, 0), dtype=_np(x[5])))])
    if op == "std":
        y = B.node("Sqrt", [y])
    tr.write(out, y, tuple(out[2]))


@_translator("argmax", "argmin")
def _argmax(tr, op, args, attrs):
    out, x = args
    xn, xs = tr.read(x)
    xn = _cast(tr, xn, x[5], D.uint8 if x[5].name == "bool" else x[5])
    dim = int(tr.value(attrs["dim"]))
    y = tr.b.node("ArgMax" if op == "argmax" else "ArgMin", [xn],
                  {"axis": dim, "keepdims": 1, "select_last_index": 0})
    tr.write(out, y, tuple(out[2]))


@_translator("cumsum")
def _cumsum(tr, op, args, attrs):
    out, x = args
    xn, _ = tr.read(x)
    y = tr.b.node("CumSum", [_cast(tr, xn, x[5], out[5]),
                             tr.b.const(np.array(int(tr.value(attrs["dim"])), np.int64))])
    tr.write(out, y, tuple(out[2]))


@_translator("gather")
def _gather(tr, op, args, attrs):
    out, x, dim, index = args
    xn, _ = tr.read(x)
    idx, _ = tr.read(index)
    y = tr.b.node("GatherElements", [xn, idx], {"axis": int(tr.value(dim))})
    tr.write(out, y, tuple(out[2]))


@_translator("embedding")
def _embedding(tr, op, args, attrs):
    out, w, idx = args
    wn, _ = tr.read(w)
    ind, _ = tr.read(idx)
    tr.write(out, tr.b.node("Gather", [wn, ind], {"axis": 0}), tuple(out[2]))


@_translator("scaled_dot_product_attention")
def _sdpa(tr, op, args, attrs):
    out, q, k, v, mask = args
    if tr.value(attrs.get("enable_gqa", ("c", False))):
        raise NotImplementedError("ember.onnx.export: scaled_dot_product_attention with "
                                  "enable_gqa has no translation yet")
    B = tr.b
    qn, qs = tr.read(q)
    kn, ks = tr.read(k)
    vn, _ = tr.read(v)
    scale = tr.value(attrs.get("scale", ("c", None)))
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    npd = _np(q[5])
    perm = list(range(len(ks) - 2)) + [len(ks) - 1, len(ks) - 2]
    s = B.node("MatMul", [qn, B.node("Transpose", [kn], {"perm": perm})])
    s = B.node("Mul", [s, B.const(np.array(scale, dtype=npd))])
    L, S = qs[-2], ks[-2]
    if tr.value(attrs.get("is_causal", ("c", False))):
        # keep key j <= query i: a comparison of two ranges (no L x S constant)
        zero, one = B.const(np.array(0, np.int64)), B.const(np.array(1, np.int64))
        rows = B.node("Reshape", [B.node("Range", [zero, B.const(np.array(L, np.int64)), one]),
                                  B.ints([L, 1])])
        cols = B.node("Reshape", [B.node("Range", [zero, B.const(np.array(S, np.int64)), one]),
                                  B.ints([1, S])])
        keep = B.node("LessOrEqual", [cols, rows])
        s = B.node("Where", [keep, s, B.const(np.array(-np.inf, dtype=npd))])
    if mask[0] == "t":
        mn, _ = tr.read(mask, broadcast=True)
        if mask[5].name == "bool":
            s = B.node("Where", [mn, s, B.const(np.array(-np.inf, dtype=npd))])
        else:
            s = B.node("Add", [s, mn])
    p = B.node("Softmax", [s], {"axis": -1})
    tr.write(out, B.node("MatMul", [p, vn]), tuple(out[2]))


@_translator("lstm_layer")
def _lstm_layer(tr, op, args, attrs):
    """The recurrence as an ONNX ``Scan`` over the steps (any length), gates in PyTorch's
    i, f, g, o order; its body is one step: h, c of every step stacked as (2, T, B, H)."""
    out, gi, whh, h0, c0 = args
    B = tr.b
    gn, gs = tr.read(gi)
    wn, _ = tr.read(whh)
    h, _ = tr.read(h0)
    c, _ = tr.read(c0)
    H = gs[2] // 4
    dt = gi[5].name
    wt = B.node("Transpose", [wn], {"perm": [1, 0]})
    hp, cp, g_t = B.fresh("h_prev"), B.fresh("c_prev"), B.fresh("gates_in")
    body = []

    def step(op_type, ins, attrs=None, outputs=1):
        outs = [B.fresh(op_type) for _ in range(outputs)]
        body.append((op_type, list(ins), outs, dict(attrs or {})))
        return outs[0] if outputs == 1 else outs
    gates = step("Add", [g_t, step("MatMul", [hp, wt])])   # (w_hh from the outer graph)
    i, f, g, o = step("Split", [gates, B.ints([H] * 4)], {"axis": 1}, outputs=4)
    c_new = step("Add", [step("Mul", [step("Sigmoid", [f]), cp]),
                         step("Mul", [step("Sigmoid", [i]), step("Tanh", [g])])])
    h_new = step("Mul", [step("Sigmoid", [o]), step("Tanh", [c_new])])
    h_out, c_out = step("Identity", [h_new]), step("Identity", [c_new])
    graph = ("graph", body, [(hp, dt), (cp, dt), (g_t, dt)],
             [(h_new, dt), (c_new, dt), (h_out, dt), (c_out, dt)])
    rev = 1 if tr.value(attrs.get("reverse", ("c", False))) else 0
    _, _, hh, cc = B.node("Scan", [h, c, gn],
                          {"body": graph, "num_scan_inputs": 1, "scan_input_directions": [rev],
                           "scan_output_directions": [rev, rev]}, outputs=4)
    zero = B.ints([0])
    y = B.node("Concat", [B.node("Unsqueeze", [hh, zero]), B.node("Unsqueeze", [cc, zero])],
               {"axis": 0})
    tr.write(out, y, tuple(out[2]))


@_translator("gru_layer")
def _gru_layer(tr, op, args, attrs):
    """The GRU recurrence as an ONNX ``Scan`` (gates r, z, n as PyTorch's; b_hh apart,
    its n part scaled by r): h of every step, (T, B, H)."""
    out, gi, whh, bhh, h0 = args
    B = tr.b
    gn, gs = tr.read(gi)
    wn, _ = tr.read(whh)
    bn, _ = tr.read(bhh)
    h, _ = tr.read(h0)
    H = gs[2] // 3
    dt = gi[5].name
    wt = B.node("Transpose", [wn], {"perm": [1, 0]})
    hp, x = B.fresh("h_prev"), B.fresh("gates_in")
    body = []

    def step(op_type, ins, attrs=None, outputs=1):
        outs = [B.fresh(op_type) for _ in range(outputs)]
        body.append((op_type, list(ins), outs, dict(attrs or {})))
        return outs[0] if outputs == 1 else outs
    gh = step("Add", [step("MatMul", [hp, wt]), bn])
    xr, xz, xn = step("Split", [x, B.ints([H] * 3)], {"axis": 1}, outputs=3)
    hr, hz, hn = step("Split", [gh, B.ints([H] * 3)], {"axis": 1}, outputs=3)
    r = step("Sigmoid", [step("Add", [xr, hr])])
    z = step("Sigmoid", [step("Add", [xz, hz])])
    n = step("Tanh", [step("Add", [xn, step("Mul", [r, hn])])])
    h_new = step("Add", [n, step("Mul", [z, step("Sub", [hp, n])])])
    h_out = step("Identity", [h_new])
    graph = ("graph", body, [(hp, dt), (x, dt)], [(h_new, dt), (h_out, dt)])
    rev = 1 if tr.value(attrs.get("reverse", ("c", False))) else 0
    _, hs = B.node("Scan", [h, gn], {"body": graph, "num_scan_inputs": 1,
                                     "scan_input_directions": [rev],
                                     "scan_output_directions": [rev]}, outputs=2)
    tr.write(out, hs, tuple(out[2]))


# ---- elementwise ops, from their scalar bodies -------------------------------------------

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_UNARY = {"exp": "Exp", "log": "Log", "sin": "Sin", "cos": "Cos", "tan": "Tan",
          "sqrt": "Sqrt", "erf": "Erf", "tanh": "Tanh", "floor": "Floor", "ceil": "Ceil",
          "rint": "Round", "fabs": "Abs", "asin": "Asin", "acos": "Acos", "atan": "Atan",
          "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh",
          "atanh": "Atanh"}
_CMP = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
        "ge": "GreaterOrEqual"}


def _elementwise(tr, op, args, attrs):
    o = OPS[op]
    out, ins = args[0], args[1:]
    mode = attrs.get(o.mode_attr) if o.mode_attr else None
    scalar = o.bodies()[None if mode is None else tr.value(mode)]
    var = {v.value[0]: v for v in o.body_inputs()}
    typed = [e for i, e in enumerate(ins) if e[0] == "t" and var[i].value[2] == X.T]
    dtype = typed[0][5] if typed else out[5]
    body = X.body_for(scalar, X.kind_of(dtype))
    if body is None:
        raise NotImplementedError(f"ember.onnx.export: {op} has no body for {dtype}")
    # the type the ONNX nodes compute in: float for the half types (as the kernels do),
    # uint8 for bool (ONNX's comparisons and Where take no bool operands)
    kind = X.kind_of(dtype)
    compute = D.float32 if dtype.name in ("float16", "bfloat16") else \
        D.uint8 if kind == "bool" else dtype
    cnp = compute.to_numpy()
    B = tr.b
    names, shapes = {}, []
    for i, e in enumerate(ins):
        if e[0] != "t":
            continue
        n, s = tr.read(e, broadcast=True)
        shapes.append(s)
        if var[i].value[2] == X.T:
            n = _cast(tr, n, e[5], compute)
        names[i] = n
    e = X.resolve_precise(body)
    types: dict = {}
    X.type_of(e, types)
    vals: dict = {}

    def tconst(v):
        return B.const(np.array(int(v) if isinstance(v, bool) else v).astype(cnp))

    for n in X.walk(e):
        a = [vals[id(x)] for x in n.args]
        at = [types[id(x)] for x in n.args]
        if n.op == "input":
            pos = n.value[0]
            if pos in names:
                r = names[pos]
            else:   # a number where the kernel allows one
                v = tr.value(ins[pos])
                r = B.const(np.array(bool(v))) if n.value[2] == X.BOOL else tconst(v)
        elif n.op == "const":
            r = B.const(np.array(bool(n.value))) if types[id(n)] == X.BOOL else \
                tconst(n.value)
        elif n.op == "attr":
            v = tr.value(attrs[n.value])
            r = tconst(v if kind == "float" else int(v))
        else:
            r = _expr_node(B, n, a, at, kind, cnp, tconst)
        vals[id(n)] = r
    res = vals[id(e)]
    if types[id(e)] == X.BOOL:
        if out[5].name != "bool":
            res = B.node("Cast", [res], {"to": ("dtype", out[5].name)})
    elif out[5] is not compute:
        res = B.node("Cast", [res], {"to": ("dtype", out[5].name)})
    shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    tr.write(out, res, shape)


def _expr_node(B, n, a, at, kind, cnp, tconst):
    op = n.op
    if op in ("add", "sub", "mul", "div"):
        return B.node(op.capitalize(), a)
    if op == "neg":
        return B.node("Sub", [tconst(0), a[0]]) if kind == "uint" else B.node("Neg", a)
    if op in _CMP:
        return B.node(_CMP[op], a)
    if op == "ne":
        return B.node("Not", [B.node("Equal", a)])
    if op in ("and", "or", "xor", "not"):
        if at[0] == X.BOOL:
            return B.node(op.capitalize(), a)
        if op == "not" and kind == "bool":     # bool values computed as 0/1 uint8
            return B.node("BitwiseXor", [a[0], tconst(1)])
        return B.node("Bitwise" + op.capitalize(), a)
    if op == "where":
        return B.node("Where", a)
    if op == "cast":
        if n.value == X.BOOL:
            return a[0] if at[0] == X.BOOL else \
                B.node("Not", [B.node("Equal", [a[0], tconst(0)])])
        return B.node("Cast", [a[0]], {"to": ("dtype", cnp.name)})
    if op != "call":
        raise NotImplementedError(f"ember.onnx.export: scalar operator {op!r}")
    f = n.value
    if f in _UNARY:
        if kind != "float" and f in ("floor", "ceil", "rint", "fabs"):
            return a[0] if f != "fabs" else B.node("Abs", a)
        return B.node(_UNARY[f], a)
    if f == "rsqrt":
        return B.node("Reciprocal", [B.node("Sqrt", a)])
    if f == "expm1":
        return B.node("Sub", [B.node("Exp", a), tconst(1)])
    if f == "log1p":
        return B.node("Log", [B.node("Add", [a[0], tconst(1)])])
    if f in ("log2", "log10"):
        return B.node("Div", [B.node("Log", a), tconst(_LN2 if f == "log2" else _LN10)])
    if f == "exp2":
        return B.node("Pow", [tconst(2), a[0]])
    if f == "trunc":
        if kind != "float":
            return a[0]
        neg = B.node("Less", [a[0], tconst(0)])
        return B.node("Where", [neg, B.node("Ceil", a), B.node("Floor", a)])
    if f == "pow":
        return B.node("Pow", a)
    if f == "fmod":
        return B.node("Mod", a, {"fmod": 1})
    if f == "hypot":
        return B.node("Sqrt", [B.node("Add", [B.node("Mul", [a[0], a[0]]),
                                              B.node("Mul", [a[1], a[1]])])])
    if f == "copysign":
        zero = tconst(0)
        neg = B.node("Or", [B.node("Less", [a[1], zero]), B.node("And", [
            B.node("Equal", [a[1], zero]),
            B.node("Less", [B.node("Div", [tconst(1), a[1]]), zero])])])
        mag = B.node("Abs", [a[0]])
        return B.node("Where", [neg, B.node("Neg", [mag]), mag])
    if f in ("isnan", "isinf", "isfinite"):
        if kind != "float":     # x == x: true everywhere, in x's shape
            same = B.node("Equal", [a[0], a[0]])
            return same if f == "isfinite" else B.node("Not", [same])
        if f == "isnan":
            return B.node("IsNaN", a)
        if f == "isinf":
            return B.node("IsInf", a)
        return B.node("Not", [B.node("Or", [B.node("IsNaN", a), B.node("IsInf", a)])])
    if f in ("idiv_trunc", "idiv_floor", "imod", "ipow"):
        return _int_intrinsic(B, f, a, kind, tconst, cnp.itemsize * 8)
    if f == "fdiv_floor":
        return _fdiv_floor(B, a, tconst)
    raise NotImplementedError(f"ember.onnx.export: the scalar function {f}() has no ONNX "
                              f"translation yet")


def _int_intrinsic(B, f, a, kind, tconst, bits):
    x, y = a
    zero, one = tconst(0), tconst(1)
    if f == "ipow":
        safe = B.node("Where", [B.node("Less", [y, zero]), zero, y]) if kind == "sint" else y
        r = _ipow_exact(B, x, safe, bits - (kind == "sint"), tconst)
        if kind == "sint":
            odd = B.node("Not", [B.node("Equal", [B.node("Mod", [y, tconst(2)], {"fmod": 1}),
                                                  zero])])
            unit = B.node("Where", [B.node("Equal", [x, one]), one, B.node("Where", [
                B.node("Equal", [x, tconst(-1)]),
                B.node("Where", [odd, tconst(-1), one]), zero])])
            return B.node("Where", [B.node("Less", [y, zero]), unit, r])
        return r
    is_zero = B.node("Equal", [y, zero])
    safe = B.node("Where", [is_zero, one, y])
    if f == "imod":
        r = B.node("Mod", [x, safe], {"fmod": 1})
    elif f == "idiv_trunc":
        r = B.node("Div", [x, safe])
    else:   # floor division: (x - python_mod(x, y)) / y is exact
        r = B.node("Div", [B.node("Sub", [x, B.node("Mod", [x, safe], {"fmod": 0})]), safe])
    return B.node("Where", [is_zero, zero, r])


def _ipow_exact(B, x, e, bits, tconst):
    """x ** e (e >= 0) by squaring over e's ``bits`` bits, wrapping as the kernels do
    (ONNX's Pow on integers goes through double precision, and takes no 8/16-bit types)."""
    one, two = tconst(1), tconst(2)
    r, base = one, x
    for k in range(bits):
        bit = B.node("Equal", [B.node("Mod", [e, two], {"fmod": 1}), one])
        r = B.node("Where", [bit, B.node("Mul", [r, base]), r])
        if k + 1 < bits:
            base = B.node("Mul", [base, base])
            e = B.node("Div", [e, two])
    return r


def _fdiv_floor(B, a, tconst):
    """PyTorch's float floor division (``div(rounding_mode="floor")``), step for step."""
    x, y = a
    zero = tconst(0)
    mod = B.node("Mod", [x, y], {"fmod": 1})
    div = B.node("Div", [B.node("Sub", [x, mod]), y])
    adjust = B.node("And", [B.node("Not", [B.node("Equal", [mod, zero])]),
                            B.node("Xor", [B.node("Less", [y, zero]),
                                           B.node("Less", [mod, zero])])])
    div = B.node("Where", [adjust, B.node("Sub", [div, tconst(1)]), div])
    fl = B.node("Floor", [div])
    up = B.node("Greater", [B.node("Sub", [div, fl]), tconst(0.5)])
    fl = B.node("Where", [up, B.node("Add", [fl, tconst(1)]), fl])
    nonzero = B.node("Where", [B.node("Not", [B.node("Equal", [div, zero])]), fl,
                               B.node("Mul", [B.node("Div", [x, y]), zero])])
    return B.node("Where", [B.node("Equal", [y, zero]), B.node("Div", [x, y]), nonzero])


# ---- kernels without a scalar body -------------------------------------------------------

@_translator("relu")
def _relu(tr, op, args, attrs):
    out, x = args
    tr.write(out, tr.b.node("Relu", [tr.read(x)[0]]), tuple(out[2]))


@_translator("hardtanh")
def _hardtanh(tr, op, args, attrs):
    out, x = args
    npd = _np(x[5])
    lo = tr.b.const(np.array(tr.value(attrs["min_val"])).astype(npd))
    hi = tr.b.const(np.array(tr.value(attrs["max_val"])).astype(npd))
    tr.write(out, tr.b.node("Clip", [tr.read(x)[0], lo, hi]), tuple(out[2]))


@_translator("depthwise_conv")
def _depthwise_conv(tr, op, args, attrs):
    attrs = dict(attrs)
    attrs["groups"] = ("c", args[1][2][1])
    _conv(tr, op, args, attrs)


@_translator("convolution")
def _convolution(tr, op, args, attrs):
    out, x, w, bias = args
    stride = list(tr.value(attrs["stride"]))
    padding = list(tr.value(attrs["padding"]))
    dilation = list(tr.value(attrs["dilation"]))
    groups = int(tr.value(attrs["groups"]))
    ins = [tr.read(x)[0], tr.read(w)[0]] + ([tr.read(bias)[0]] if bias[0] == "t" else [])
    at = {"kernel_shape": list(w[2][2:]), "strides": stride, "dilations": dilation,
          "pads": padding + padding, "group": groups}
    if tr.value(attrs["transposed"]):
        at["output_padding"] = list(tr.value(attrs["output_padding"]))
        y = tr.b.node("ConvTranspose", ins, at)
    else:
        y = tr.b.node("Conv", ins, at)
    tr.write(out, y, tuple(out[2]))


@_translator("arange")
def _arange(tr, op, args, attrs):
    # start + step * i over i = 0 .. n - 1, in float64 (int64 for integer results) as the
    # kernel computes it; a Range, so that the length may be a dynamic size
    out, start, step = args
    B = tr.b
    n = out[2][0]
    wide = np.float64 if out[5].is_floating_point else np.int64
    i = B.node("Range", [B.const(np.array(0, np.int64)), B.const(np.array(n, np.int64)),
                         B.const(np.array(1, np.int64))])
    if wide is np.float64:
        i = B.node("Cast", [i], {"to": ("dtype", "float64")})
    v = B.node("Add", [B.node("Mul", [i, B.const(np.array(tr.value(step), wide))]),
                       B.const(np.array(tr.value(start), wide))])
    if out[5].name != np.dtype(wide).name:
        v = B.node("Cast", [v], {"to": ("dtype", out[5].name)})
    tr.write(out, v, (n,))


@_translator("lstm_cell")
def _lstm_cell(tr, op, args, attrs):
    out, gates, c = args
    B = tr.b
    gn, gs = tr.read(gates)
    cn, _ = tr.read(c)
    H = gs[1] // 4
    i, f, g, o = B.node("Split", [gn, B.ints([H] * 4)], {"axis": 1}, outputs=4)
    c2 = B.node("Add", [B.node("Mul", [B.node("Sigmoid", [f]), cn]),
                        B.node("Mul", [B.node("Sigmoid", [i]), B.node("Tanh", [g])])])
    h2 = B.node("Mul", [B.node("Sigmoid", [o]), B.node("Tanh", [c2])])
    zero = B.ints([0])
    y = B.node("Concat", [B.node("Unsqueeze", [h2, zero]), B.node("Unsqueeze", [c2, zero])],
               {"axis": 0})
    tr.write(out, y, tuple(out[2]))


@_translator("logsumexp")
def _logsumexp(tr, op, args, attrs):
    out, x = args
    xn, xs = tr.read(x)
    dims = list(tr.value(attrs["dims"]))
    y = tr.b.node("ReduceLogSumExp", [xn, tr.b.ints(dims)], {"keepdims": 1}) \
        if xs and dims else xn
    tr.write(out, y, tuple(out[2]))


@_translator("_safe_softmax")
def _safe_softmax(tr, op, args, attrs):
    out, x = args
    B = tr.b
    xn, _ = tr.read(x)
    dim = int(tr.value(attrs["dim"]))
    y = B.node("Softmax", [xn], {"axis": dim})
    top = B.node("ReduceMax", [xn, B.ints([dim])], {"keepdims": 1})
    npd = _np(x[5])
    empty = B.node("Equal", [top, B.const(np.array(-np.inf, dtype=npd))])
    y = B.node("Where", [empty, B.const(np.array(0, dtype=npd)), y])
    tr.write(out, _cast(tr, y, x[5], out[5]), tuple(out[2]))


@_translator("batch_norm")
def _batch_norm_any(tr, op, args, attrs):
    if tr.value(attrs["training"]):
        raise NotImplementedError("ember.onnx.export: batch_norm with batch statistics "
                                  "(training mode); export the model in eval mode")
    _batch_norm(tr, op, args[:6], {"eps": attrs["eps"]})


_SCATTER = {None: "none", "add": "add", "sum": "add", "multiply": "mul", "prod": "mul",
            "amax": "max", "amin": "min"}


@_translator("scatter")
def _scatter(tr, op, args, attrs):
    out, dim, index, src = args
    reduce = tr.value(attrs.get("reduce", ("c", None)))
    if reduce not in _SCATTER:
        raise NotImplementedError(f"ember.onnx.export: scatter with reduce={reduce!r} has "
                                  f"no ONNX form")
    data, _ = tr.read(out)
    idx, ishape = tr.read(index)
    if src[0] == "t":
        upd, _ = tr.read(src)
        if tuple(src[2]) != tuple(ishape):   # src may be larger than index: its corner
            upd = tr.b.node("Slice", [upd, tr.b.ints([0] * len(ishape)), tr.b.ints(ishape)])
    else:
        v = np.array(tr.value(src)).astype(_np(out[5]))
        upd = tr.b.node("Expand", [tr.b.const(v), tr.b.ints(ishape)])
    y = tr.b.node("ScatterElements", [data, idx, upd],
                  {"axis": int(tr.value(dim)), "reduction": _SCATTER[reduce]})
    tr.write(out, y, tuple(out[2]))


@_translator("sort")
def _sort(tr, op, args, attrs):
    values, indices, x = args
    xn, xs = tr.read(x)
    dim = int(tr.value(attrs["dim"]))
    if not xs:
        tr.write(values, xn, ())
        tr.write(indices, tr.b.const(np.array(0, np.int64)), ())
        return
    small = D.uint8 if x[5].name == "bool" else x[5]
    v, i = tr.b.node("TopK", [_cast(tr, xn, x[5], small), tr.b.ints([xs[dim]])],
                     {"axis": dim, "largest": int(bool(tr.value(attrs["descending"]))),
                      "sorted": 1}, outputs=2)
    tr.write(values, _cast(tr, v, small, x[5]), tuple(values[2]))
    tr.write(indices, i, tuple(indices[2]))


@_translator("uniform", "normal")
def _random(tr, op, args, attrs):
    raise NotImplementedError(
        f"ember.onnx.export: the random op {op!r} draws from ember's generator, whose "
        f"streams ONNX's random ops cannot reproduce; export a model in eval mode without "
        f"random ops (dropout is skipped in eval mode)")


def _window(tr, attrs):
    """A sliding window's ``kernel``, ``dilation``, ``padding`` and ``stride``, as lists."""
    return [list(tr.value(attrs[k])) for k in ("kernel", "dilation", "padding", "stride")]


@_translator("im2col")
def _im2col(tr, op, args, attrs):
    """Pad with ``value``, then one Gather per (n, c) plane with the constant indices of
    every (kernel offset, block) pair: (N, C, *kernel, *blocks)."""
    out, x = args
    B = tr.b
    kernel, dilation, padding, stride = _window(tr, attrs)
    blocks = list(tr.value(attrs["blocks"]))
    value = tr.value(attrs.get("value", ("c", 0)))
    xn, xs = tr.read(x)
    n, c, sp = xs[0], xs[1], xs[2:]
    ext = [max(s + 2 * p, (b - 1) * st + (k - 1) * d + 1)
           for s, p, b, st, k, d in zip(sp, padding, blocks, stride, kernel, dilation)]
    pads = [0, 0] + padding + [0, 0] + [e - s - p for e, s, p in zip(ext, sp, padding)]
    padded = B.node("Pad", [xn, B.ints(pads), B.const(np.array(value).astype(_np(x[5])))],
                    {"mode": "constant"})
    flat = B.node("Reshape", [padded, B.ints([n, c, -1])])
    es = C.contiguous_strides(tuple(ext))
    idx = np.zeros(tuple(kernel) + tuple(blocks), dtype=np.int64)
    nd = len(kernel)
    for i in range(nd):
        shape_k = [1] * (2 * nd)
        shape_k[i] = kernel[i]
        shape_b = [1] * (2 * nd)
        shape_b[nd + i] = blocks[i]
        idx = idx + (np.arange(kernel[i]) * dilation[i] * es[i]).reshape(shape_k) \
            + (np.arange(blocks[i]) * stride[i] * es[i]).reshape(shape_b)
    y = B.node("Gather", [flat, B.const(idx)], {"axis": 2})
    tr.write(out, y, tuple(out[2]))


@_translator("col2im")
def _col2im(tr, op, args, attrs):
    """The columns (N, C, *kernel, *blocks) summed into (N, C, *size): a grouped
    ConvTranspose (one group per channel) whose weights pick each kernel offset's column
    (a one-hot filter per offset), with col2im's strides, dilation and padding."""
    out, cols = args
    B = tr.b
    kernel, dilation, padding, stride = _window(tr, attrs)
    size = list(tr.value(attrs["size"]))
    if not cols[5].is_floating_point:
        raise NotImplementedError(f"ember.onnx.export: col2im (fold, transposed convolution) of "
                                  f"{cols[5].name} has no ONNX translation: ONNX's "
                                  f"ConvTranspose takes floating point types only")
    cn, cs = tr.read(cols)
    nd = len(kernel)
    n, c, blocks = cs[0], cs[1], list(cs[2 + nd:])
    k = math.prod(kernel)
    x = B.node("Reshape", [cn, B.ints([n, c * k] + blocks)])
    w = np.zeros((c, k, 1, k), dtype=_np(cols[5]))
    w[:, np.arange(k), 0, np.arange(k)] = 1
    weight = B.const(w.reshape([c * k, 1] + kernel))
    natural = [(b - 1) * st + d * (kk - 1) + 1
               for b, st, d, kk in zip(blocks, stride, dilation, kernel)]
    ends = [max(0, e - p - s) for e, p, s in zip(natural, padding, size)]
    extra = [max(0, s - (e - p)) for e, p, s in zip(natural, padding, size)]
    y = B.node("ConvTranspose", [x, weight],
               {"group": c, "strides": stride, "dilations": dilation,
                "kernel_shape": kernel, "pads": padding + ends, "output_padding": extra})
    tr.write(out, y, tuple(out[2]))
