"""``ember.onnx``: export a model to ONNX from the same capture ``ember.compile`` uses.

>>> program = ember.onnx.export(model, (x,), "model.onnx")   # doctest: +SKIP

The model runs once inside a capture region (``fullgraph``: any read of a computed value
on the host, such as ``if x.sum() > 0``, is an error naming the line); the kernel calls it
records are translated to ONNX operators (``_graph.py``), the model's parameters and
buffers become initializers named as in its ``state_dict``. Shapes are the example inputs'
unless ``dynamic_axes`` names axes whose sizes the graph computes from its inputs (see
``_dynamic_graph``). Needs the ``onnx`` package
(``pip install onnx``); running an ``ONNXProgram`` needs ``onnxruntime``.
"""
from __future__ import annotations

import contextlib
import enum
import inspect
import math
import os

import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import lazy as L


from .. import __version__
from .._creation import arange, tensor
from .._torch_c import tree_leaves, tree_map_only
from ..autograd._engine import no_grad
from ..nn.modules.module import Module
from . import errors
from ._graph import Builder, Translator
from .errors import OnnxExporterError
from ember.dispatcher.warn import warn as _warn

__all__ = ["export", "ONNXProgram", "is_in_onnx_export", "OnnxExporterError",
           "TrainingMode", "DEFAULT_OPSET", "select_model_mode_for_export",
           "register_custom_op_symbolic", "unregister_custom_op_symbolic", "errors",
           "producer_name", "producer_version"]

#: what exported models say made them
producer_name = "ember"
producer_version = __version__

#: the opset an export uses unless ``opset_version`` says otherwise
DEFAULT_OPSET = 18
_MIN_OPSET = 17
_EXPORTING = [False]


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in (PyTorch's ``torch.onnx.TrainingMode``)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


@contextlib.contextmanager
def select_model_mode_for_export(model, mode):
    """Put ``model`` in ``mode`` (a :class:`TrainingMode`) for the block and back to its
    mode after (``PRESERVE`` changes nothing)."""
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"'mode' should be a torch.onnx.TrainingMode enum, but got "
                        f"'{type(mode)}'.")
    originally_training = model.training
    if mode != TrainingMode.PRESERVE:
        model.train(mode == TrainingMode.TRAINING)
    try:
        yield
    finally:
        if mode != TrainingMode.PRESERVE:
            model.train(originally_training)


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Register a TorchScript symbolic for a custom op; raises NotImplementedError.

    ember exports from its own op capture, not from TorchScript symbolics: the ONNX
    translation of each kernel lives in ``ember.onnx._graph.TRANSLATORS``.
    """
    raise NotImplementedError(
        "ember.onnx.register_custom_op_symbolic: ember exports from its own capture, not "
        "from TorchScript symbolics; kernels are translated by ember.onnx._graph.TRANSLATORS")


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Remove a custom op symbolic; raises NotImplementedError (see
    :func:`register_custom_op_symbolic`).
    """
    register_custom_op_symbolic(symbolic_name, None, opset_version)


def is_in_onnx_export() -> bool:
    """Whether an ``ember.onnx.export`` is running the model now."""
    return _EXPORTING[0]


class ONNXProgram:
    """An exported model: ``model_proto`` (an ``onnx.ModelProto``), ``save(path)``, and
    calling it runs the model with onnxruntime on ember tensors."""

    def __init__(self, model_proto, output_names):
        self.model_proto = model_proto
        self._outputs = output_names
        self._session = None

    def save(self, destination) -> None:
        _onnx().save_model(self.model_proto, destination)

    def __call__(self, *args, **kwargs):
        import onnxruntime
        if self._session is None:
            self._session = onnxruntime.InferenceSession(
                self.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        flat = _tensors((args, kwargs))
        names = [i.name for i in self._session.get_inputs()]
        if len(flat) != len(names):
            raise ValueError(f"ONNXProgram: the graph takes {len(names)} tensor inputs, got "
                             f"{len(flat)}")
        feed = {n: np.ascontiguousarray(t.detach().cpu().numpy()) for n, t in zip(names, flat)}
        return [tensor(np.array(o)) for o in self._session.run(None, feed)]

    def __repr__(self):
        g = self.model_proto.graph
        return (f"ONNXProgram(opset={self.model_proto.opset_import[0].version}, "
                f"{len(g.node)} nodes, inputs={[i.name for i in g.input]}, "
                f"outputs={[o.name for o in g.output]})")


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ember.onnx.export needs the onnx package: pip install onnx (or "
                          "pip install 'ember-tensor[onnx]')") from None
    return onnx


def _tensors(obj) -> list:
    """The tensors in nested tuples, lists and dicts, in order."""
    return [x for x in tree_leaves(obj) if isinstance(x, C.TensorBase)]


def _input_names(model, args, kwargs, given) -> list:
    """A graph input name per tensor of the call: the forward's parameter name (keyword
    arguments: their key), with ``_<i>`` for tensors inside a nested argument; names in
    ``given`` replace the first ones."""
    try:
        params = [p.name for p in inspect.signature(
            model.forward if isinstance(model, Module) else model).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for base, value in [(params[i] if i < len(params) else f"input_{i}", a)
                        for i, a in enumerate(args)] + list(kwargs.items()):
        n = len(_tensors(value))
        names += [base] if isinstance(value, C.TensorBase) else \
            [f"{base}_{j}" for j in range(n)]
    names[:len(given or ())] = list(given or ())[:len(names)]
    seen = set()
    for i, n in enumerate(names):       # (a name used twice gets its position)
        if n in seen:
            names[i] = f"input_{i}"
        seen.add(names[i])
    return names


_UNSUPPORTED = {"dynamic_shapes": None, "custom_translation_table": None,
                "export_params": True, "keep_initializers_as_inputs": False, "custom_opsets":
                None, "export_modules_as_functions": False, "verify": False, "report": False,
                "profile": False, "dump_exported_program": False}


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, custom_translation_table=None, report=False, optimize=True,
           verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=TrainingMode.EVAL, operator_export_type=None, do_constant_folding=True,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True):
    """Export ``model`` (a Module or a function of tensors) called with ``args`` (and
    ``kwargs``) to ONNX, as ``torch.onnx.export``.

    Args:
        model: the module or function to export.
        args: its positional arguments (a tuple; a single tensor is taken as ``(x,)``; a
            trailing dict is keyword arguments, as PyTorch reads it).
        f: a path or binary file to write the model to (optional).
        input_names: names of the graph's inputs (default: the forward's parameter names).
        output_names: names of the graph's outputs (default: ``output``, or ``output_0``,
            ``output_1``, ...).
        opset_version: the ONNX opset, 17 or later (default ``ember.onnx.DEFAULT_OPSET``).
        training: ``TrainingMode.EVAL`` (default) exports in eval mode and restores the
            model's mode afterwards; ``PRESERVE`` keeps it; ``TRAINING`` is refused.

    Returns:
        an :class:`ONNXProgram` (``None`` with ``dynamo=False``, as PyTorch).

    ``dynamic_axes`` (``{"x": {0: "batch"}}`` or ``{"x": [0]}``, PyTorch's forms) makes
    those axes symbolic: the model is captured again at other sizes, the constants that
    change are computed from the inputs' shapes, and onnxruntime checks the graph at sizes
    it was not built from; a model whose operators change with those sizes is refused
    with ``NotImplementedError`` (docs/onnx.md). Without it the graph has the example
    inputs' static shapes. ``dynamic_shapes`` raises ``NotImplementedError``, as do ops
    without a translation (the message names the op). Random ops (dropout in training
    mode) are not exported.

    Example::

        >>> model = ember.nn.Linear(4, 2)
        >>> prog = ember.onnx.export(model, (ember.randn(3, 4),), "linear.onnx")  # doctest: +SKIP
    """
    given = locals()
    onnx = _onnx()
    for k, default in _UNSUPPORTED.items():
        if given[k] != default:
            raise NotImplementedError(
                f"ember.onnx.export: {k}={given[k]!r} is not supported yet; graphs are "
                f"exported with the example inputs' static shapes and their parameters as "
                f"initializers")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < _MIN_OPSET or opset > onnx.defs.onnx_opset_version():
        raise ValueError(f"ember.onnx.export: opset_version must be between {_MIN_OPSET} "
                         f"and {onnx.defs.onnx_opset_version()}, got {opset}")
    if training == TrainingMode.TRAINING:
        raise NotImplementedError("ember.onnx.export: TrainingMode.TRAINING (dropout and "
                                  "batch statistics in the graph) is not supported")
    if isinstance(args, C.TensorBase):
        args = (args,)
    args = tuple(args)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict) and not kwargs:
        args, kwargs = args[:-1], dict(args[-1])
    flat = _tensors((args, kwargs))
    names = _input_names(model, args, kwargs, input_names)
    if dynamic_axes is not None:
        b, onames = _dynamic_graph(model, args, kwargs, flat, names, output_names, training,
                                   dynamic_axes, opset)
    else:
        b, onames, _ = _graph(model, args, kwargs, flat, names, output_names, training)
    proto = _model_proto(b, opset)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    program = ONNXProgram(proto, onames)
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save_model(proto, os.fspath(f))
        else:
            f.write(proto.SerializeToString())
    return program if dynamo else None


def _graph(model, args, kwargs, flat, names, output_names, training):
    """Capture one call of ``model`` on copies of the ``flat`` tensors of ``(args,
    kwargs)`` and translate it: ``(builder, output names, the call's result)``."""
    fresh = [t.detach().contiguous().clone() for t in flat]
    copies = iter(fresh)
    call_args, call_kwargs = tree_map_only(C.TensorBase, lambda t: next(copies),
                                           (args, kwargs))

    mode = select_model_mode_for_export(model, TrainingMode(training)) \
        if isinstance(model, Module) else contextlib.nullcontext()
    region = L.Region(keep=True, fullgraph=True, export=True)
    _EXPORTING[0] = True
    try:
        with mode, no_grad(), L.capture(region) as cap:
            if not cap.outer:
                raise OnnxExporterError(
                    "ember.onnx.export cannot run inside an ember.compile region (or while "
                    "another thread captures)")
            result = model(*call_args, **call_kwargs)
    except L.Unsupported as e:
        raise OnnxExporterError(f"ember.onnx.export: {e}") from None
    finally:
        _EXPORTING[0] = False

    b = Builder()
    for n, t in zip(names, fresh):
        b.inputs.append((n, t.dtype.name, tuple(t.shape)))
    params = {}
    if isinstance(model, Module):
        for pname, t in [*model.named_parameters(), *model.named_buffers()]:
            stride = tuple(0 if n == 1 else st for n, st in zip(t.shape, t._stride))
            params.setdefault((id(t._storage), tuple(t.shape), stride, t._offset),
                              (pname, t))
            if C.is_contiguous(t):
                params.setdefault(id(t._storage), (pname, t))
    inputs = {id(t._storage): (n, t) for n, t in zip(names, fresh)}
    if region.kept:
        kept = region.kept[0]
        nodes, slot_kinds = kept.key[0], kept.key[1]
        storages, values = kept.storages, kept.values
    else:
        nodes, slot_kinds, storages, values = (), (), [], []
    tr = Translator(nodes, slot_kinds, storages, values, inputs, params, b)
    tr.run()
    outs = _tensors(result)
    if not outs:
        raise OnnxExporterError("ember.onnx.export: the model returns no tensor")
    onames = list(output_names or [])
    for i in range(len(onames), len(outs)):
        onames.append("output" if len(outs) == 1 else f"output_{i}")
    for n, t in zip(onames, outs):
        b.nodes.append(("Identity", [tr.output(t)], [n], {}))
        b.outputs.append((n, t.dtype.name, tuple(t.shape)))
    return b, onames, result



# ---- dynamic_axes ------------------------------------------------------------------------
#
# A capture records concrete shapes. For ``dynamic_axes`` the model is captured again with
# other sizes on those axes; the graphs must have the same operators, and every constant
# that differs between them must be an integer polynomial (terms 1, s_i, s_i s_j) of the
# dynamic sizes, which the graph then computes from its inputs' shapes (``Shape``). The
# result is run by onnxruntime at the example's sizes and at sizes not used to build it,
# against ember's eager result, before it is returned: a model this cannot express is
# refused with NotImplementedError, never exported wrong.

#: per attempt, the sizes tried: near the example's (a model may take a bounded size, such
#: as positions of an embedding), then primes (sizes that coincide with no other dim)
_OFFSETS = (1, -1, 2, -2, 3, -3, 4, 5, 6, 7, 8, 9)
_PRIMES = ((11, 13, 17, 19, 23, 29, 31, 37, 41), (43, 47, 53, 59, 61, 67, 71, 73, 79))


def _axes_spec(dynamic_axes, names, onames, shapes):
    """``{(tensor name, axis): symbol}`` from PyTorch's ``dynamic_axes`` forms: ``{name:
    {axis: symbol}}`` or ``{name: [axes]}`` (symbols ``<name>_dynamic_axes_<k>``)."""
    spec = {}
    if not isinstance(dynamic_axes, dict):
        raise TypeError(f"dynamic_axes must be a dict, got {type(dynamic_axes).__name__}")
    for key, axes in dynamic_axes.items():
        if key not in names and key not in onames:
            _warn(f"Provided key {key} for dynamic axes is not a valid input/output "
                  f"name")
            continue
        if isinstance(axes, dict):
            pairs = [(a, str(sym)) for a, sym in axes.items()]
        elif isinstance(axes, (list, tuple)):
            pairs = [(a, f"{key}_dynamic_axes_{k + 1}") for k, a in enumerate(axes)]
        else:
            raise TypeError(f"dynamic_axes[{key!r}] must be a dict or a list of axes, got "
                            f"{type(axes).__name__}")
        rank = len(shapes[key]) if key in shapes else None
        for a, sym in pairs:
            a = int(a)
            if rank is not None:
                if not -rank <= a < rank:
                    raise ValueError(f"dynamic_axes[{key!r}]: axis {a} is out of range for a "
                                     f"tensor of {rank} dims")
                a %= rank
            spec[(key, a)] = sym
    return spec


def _resized(t, axes_sizes):
    """``t`` with the given axes cut or repeated (cyclically) to new sizes."""
    for axis, n in axes_sizes:
        idx = arange(n, device=t.device) % t.shape[axis]
        t = t.index_select(axis, idx)
    return t.contiguous()


def _signature(b):
    def norm(v):
        if isinstance(v, np.ndarray):
            return (v.dtype.str, v.shape, v.tobytes())
        return v
    return ([(op, tuple(ins), tuple(outs), tuple(sorted((k, repr(norm(v)))
                                                        for k, v in attrs.items())))
             for op, ins, outs, attrs in b.nodes],
            sorted((n, a.dtype.str) for n, a in b.initializers.items()),
            [(n, d) for n, d, _ in b.inputs], [(n, d) for n, d, _ in b.outputs])


def _monomials(m):
    return [()] + [(i,) for i in range(m)] + [(i, j) for i in range(m)
                                              for j in range(i + 1, m)]


def _dynamic_graph(model, args, kwargs, flat, names, output_names, training, dynamic_axes,
                   opset):
    """The graph of ``model`` with the ``dynamic_axes`` sizes computed from its inputs."""
    shapes = {n: tuple(t.shape) for n, t in zip(names, flat)}
    probe, onames, result = _graph(model, args, kwargs, flat, names, output_names, training)
    shapes.update({n: tuple(s) for n, _, s in probe.outputs})
    spec = _axes_spec(dynamic_axes, names, onames, shapes)
    if not spec:
        return probe, onames
    syms, base, source = [], [], {}
    for (name, axis), sym in spec.items():
        if name not in shapes or name in onames:
            continue
        n = shapes[name][axis]
        if sym not in source:
            syms.append(sym)
            base.append(n)
            source[sym] = (name, axis)
        elif base[syms.index(sym)] != n:
            raise ValueError(f"dynamic_axes: the axes named {sym!r} have different sizes in "
                             f"the example inputs ({base[syms.index(sym)]} and {n})")
    out_only = {sym for (name, _), sym in spec.items() if name in onames} - set(syms)
    if out_only and not syms:
        raise ValueError(f"dynamic_axes: {sorted(out_only)} name axes of outputs only; an "
                         f"output's dynamic size must come from an input's dynamic axis")
    mono = _monomials(len(syms))

    def inputs_at(sizes):
        by = dict(zip(syms, sizes))
        out = []
        for n, t in zip(names, flat):
            axes = [(a, by[sym]) for (name, a), sym in spec.items() if name == n and sym in by]
            out.append(_resized(t, axes) if axes else t)
        return out

    def call_args(tensors):
        it = iter(tensors)
        return tree_map_only(C.TensorBase, lambda t: next(it), (args, kwargs))

    pools = [[[u + d for d in _OFFSETS if u + d >= 2] for u in base]]
    pools += [[list(p) for _ in base] for p in _PRIMES]
    failures = []
    for pool in pools:
        count = len(mono) + 1
        assign = [[p[(k + 3 * i) % len(p)] for i, p in enumerate(pool)] for k in range(count)]
        M = np.array([[math.prod(sz[i] for i in t) for t in mono] for sz in assign],
                     dtype=np.float64)
        if np.linalg.matrix_rank(M) < len(mono):
            continue
        builders = []
        for sz in assign:
            vals = inputs_at(sz)
            a2, k2 = call_args(vals)
            try:
                builders.append(_graph(model, a2, k2, vals, names, output_names,
                                       training)[0])
            except Exception as e:
                failures.append(f"the model failed with the sizes {dict(zip(syms, sz))} "
                                f"({type(e).__name__}: {e})")
                break
        if len(builders) < count:
            continue
        sig = _signature(builders[0])
        if any(_signature(b) != sig for b in builders[1:]):
            failures.append("its operators change with the sizes of the dynamic axes (a loop "
                            "over a dynamic dimension, such as a plain RNN's steps over "
                            "time, a pooling window set by a size, or a choice made on a "
                            "size)")
            continue
        try:
            b = _symbolic(builders, assign, mono, syms, source, spec, onames)
        except NotImplementedError as e:
            failures.append(str(e))
            continue
        fresh = [[x for x in p if x not in {a[i] for a in assign}] or p
                 for i, p in enumerate(pool)]
        _verify(b, opset, model, training, names, onames, flat, inputs_at,
                [base, [p[-1] for p in fresh]], call_args, syms)
        return b, onames
    raise NotImplementedError(f"ember.onnx.export: dynamic_axes={dynamic_axes!r}: the graph "
                              f"cannot be made independent of those sizes: "
                              f"{'; '.join(dict.fromkeys(failures))}")


def _fit(M, Y, assign, mono, arr, reshape_target=False):
    """Per term (a monomial of ``mono``, or ``("floor", i, a, d)``: (s_i + a) // d, the
    output size of a strided convolution or pooling) the integer coefficient vector that
    gives each element of the varying constant (rows of ``Y``: its values at ``assign``);
    the constant term under ``()``. An element that fits neither is -1 when the constant is
    only a Reshape's target shape (``reshape_target``) and it is the only one (Reshape
    infers it); else NotImplementedError."""
    L = Y.shape[1]
    coef = np.rint(np.linalg.lstsq(M, Y.astype(np.float64), rcond=None)[0]).astype(np.int64)
    exact = np.all(M.astype(np.int64) @ coef == Y, axis=0)
    vectors = {t: coef[k] * exact for k, t in enumerate(mono)}
    S = np.array(assign, dtype=np.int64)
    unfitted = []
    for e in np.flatnonzero(~exact):
        y = Y[:, e]
        for i in range(S.shape[1]):
            found = None
            for d in range(2, 65):
                for a in range(-1, d):
                    f = (S[:, i] + a) // d
                    if f[0] == f[1] == f[-1]:
                        continue
                    A = np.stack([np.ones_like(f), f], 1).astype(np.float64)
                    c = np.rint(np.linalg.lstsq(A, y.astype(np.float64), rcond=None)[0])
                    c = c.astype(np.int64)
                    if np.array_equal(c[0] + c[1] * f, y):
                        found = (("floor", i, a, d), c)
                        break
                if found:
                    break
            if found:
                break
        if not found:
            if not reshape_target or (Y == -1).any() or unfitted:
                raise NotImplementedError(
                    f"a shape constant ({arr.reshape(-1).tolist()} at the first sizes) is "
                    f"neither a polynomial of the dynamic sizes nor a strided layer's "
                    f"(s + a) // d")
            unfitted.append(e)      # a Reshape infers one size from the others: -1
            vectors[()][e] = -1
            continue
        t, c = found
        vectors[()][e] = c[0]
        vectors.setdefault(t, np.zeros(L, np.int64))[e] = c[1]
    const = vectors.pop(())
    return {(): const, **{t: v for t, v in vectors.items() if v.any()}}


def _symbolic(builders, assign, mono, syms, source, spec, onames):
    """The first builder with every constant that varies across ``builders`` computed from
    the inputs' dynamic sizes."""
    b = builders[0]
    M = np.array([[math.prod(sz[i] for i in t) for t in mono] for sz in assign],
                 dtype=np.float64)
    pre = []
    terms = {}
    for i, sym in enumerate(syms):
        name, axis = source[sym]
        out = b.fresh(f"size_{i}")
        pre.append(("Shape", [name], [out], {"start": axis, "end": axis + 1}))
        terms[(i,)] = out
    for t in mono:
        if len(t) == 2:
            out = b.fresh("size_product")
            pre.append(("Mul", [terms[(t[0],)], terms[(t[1],)]], [out], {}))
            terms[t] = out
    for name, arr in list(b.initializers.items()):
        values = [bb.initializers[name] for bb in builders]
        if all(v.shape == arr.shape and np.array_equal(v, arr) for v in values[1:]):
            continue
        if arr.dtype != np.int64 or any(v.shape != arr.shape for v in values[1:]):
            users = sorted({op for op, ins, _, _ in b.nodes if name in ins})
            raise NotImplementedError(
                f"a constant of {', '.join(users) or 'the graph'} ({arr.dtype}, shape "
                f"{arr.shape}) changes with the dynamic sizes in a way a shape "
                f"computation cannot express")
        Y = np.stack([v.reshape(-1).astype(np.int64) for v in values])
        target = all(op == "Reshape" and name not in ins[:1] and ins[1:2] == [name]
                     for op, ins, _, _ in b.nodes if name in ins)
        vectors = _fit(M, Y, assign, mono, arr, target)
        acc = b.const(vectors.pop(()), name=b.fresh("dyn_const"))
        for t, vec in vectors.items():
            if t not in terms:      # a floor term: (size_i + a) // d
                _, i, a, d = t
                plus = b.fresh("dyn_shift")
                pre.append(("Add", [terms[(i,)], b.const(np.array([a], np.int64),
                                                         name=b.fresh("dyn_const"))],
                            [plus], {}))
                terms[t] = b.fresh("dyn_floor")
                pre.append(("Div", [plus, b.const(np.array([d], np.int64),
                                                  name=b.fresh("dyn_const"))],
                            [terms[t]], {}))
            c = b.const(vec, name=b.fresh("dyn_const"))
            prod = b.fresh("dyn_term")
            pre.append(("Mul", [c, terms[t]], [prod], {}))
            total = b.fresh("dyn_sum")
            pre.append(("Add", [acc, prod], [total], {}))
            acc = total
        pre.append(("Reshape", [acc, b.const(np.array(arr.shape, np.int64),
                                             name=b.fresh("dyn_shape"))], [name], {}))
        del b.initializers[name]
    b.nodes[:0] = pre
    b._consts.clear()

    def dims(name, shape, others):
        out = []
        for a, n in enumerate(shape):
            sym = spec.get((name, a))
            if sym is None and any(o[a] != n for o in others):
                sym = f"{name}_dim_{a}"
            out.append(sym if sym is not None else n)
        return tuple(out)
    b.inputs = [(n, d, dims(n, s, [bb.inputs[k][2] for bb in builders[1:]]))
                for k, (n, d, s) in enumerate(b.inputs)]
    b.outputs = [(n, d, dims(n, s, [bb.outputs[k][2] for bb in builders[1:]]))
                 for k, (n, d, s) in enumerate(b.outputs)]
    return b


def _verify(b, opset, model, training, names, onames, flat, inputs_at, sizes_list, call_args,
            syms):
    """Run the dynamic graph with onnxruntime at each of ``sizes_list`` against ember's
    eager result; NotImplementedError when it differs."""
    try:
        import onnxruntime
    except ImportError:
        raise ImportError("ember.onnx.export(dynamic_axes=...) checks the graph it builds "
                          "with onnxruntime: pip install onnxruntime") from None
    proto = _model_proto(b, opset)
    sess = onnxruntime.InferenceSession(proto.SerializeToString(),
                                        providers=["CPUExecutionProvider"])
    for sizes in sizes_list:
        vals = inputs_at(sizes)
        a2, k2 = call_args(vals)
        mode = select_model_mode_for_export(model, TrainingMode(training)) \
            if isinstance(model, Module) else contextlib.nullcontext()
        with mode, no_grad():
            want = _tensors(model(*a2, **k2))
        feed = {n: np.ascontiguousarray(t.detach().cpu().numpy()) for n, t in zip(names, vals)}
        try:
            got = sess.run(None, feed)
            for g, w in zip(got, want):
                w = w.detach().cpu().numpy()
                scale = float(np.max(np.abs(w))) if w.size and w.dtype.kind == "f" else 1.0
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, scale))
        except Exception as e:
            raise NotImplementedError(
                f"ember.onnx.export: dynamic_axes: the graph built for dynamic sizes does not "
                f"reproduce the model at {dict(zip(syms, sizes))}: {str(e)[:500]}") from None


_AXES_AS_ATTRIBUTE = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"}


def _model_proto(b: Builder, opset: int):
    onnx = _onnx()
    helper, numpy_helper = onnx.helper, onnx.numpy_helper

    def elem(name):
        return helper.np_dtype_to_tensor_dtype(np.dtype(name)) if name != "bfloat16" \
            else onnx.TensorProto.BFLOAT16

    def attr(v):
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "dtype":
            return elem(v[1])
        if isinstance(v, tuple) and len(v) == 4 and v[0] == "graph":    # a loop's body
            _, body, ins, outs = v
            inner.update(x for _, i, _, _ in body for x in i)
            return helper.make_graph(
                [helper.make_node(op, i, o, **{k: attr(a) for k, a in at.items()})
                 for op, i, o, at in body], "body",
                [helper.make_tensor_value_info(n, elem(d), None) for n, d in ins],
                [helper.make_tensor_value_info(n, elem(d), None) for n, d in outs])
        if isinstance(v, np.ndarray):
            return numpy_helper.from_array(v)
        return v

    nodes = []
    inner = set()       # names a loop body reads from the graph around it
    for op_type, ins, outs, attrs in b.nodes:
        attrs = {k: attr(v) for k, v in attrs.items()}
        if opset < 18 and op_type in _AXES_AS_ATTRIBUTE and len(ins) == 2:
            attrs["axes"] = [int(a) for a in b.initializers[ins[1]]]
            ins = ins[:1]
        nodes.append(helper.make_node(op_type, ins, outs, **attrs))
    used = {i for n in nodes for i in n.input} | inner
    inits = [numpy_helper.from_array(np.array(a, order="C", copy=True), name)
             for name, a in b.initializers.items() if name in used]
    graph = helper.make_graph(
        nodes, "main_graph",
        [helper.make_tensor_value_info(n, elem(d), list(s)) for n, d, s in b.inputs],
        [helper.make_tensor_value_info(n, elem(d), list(s)) for n, d, s in b.outputs],
        inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name=producer_name, producer_version=producer_version)
    proto.ir_version = 10
    onnx.checker.check_model(proto)
    return proto
