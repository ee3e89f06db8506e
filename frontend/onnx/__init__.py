"""``ember.onnx``: export a model to ONNX from the same capture ``ember.compile`` uses.

>>> program = ember.onnx.export(model, (x,), "model.onnx")   # doctest: +SKIP

The model runs once inside a capture region (``fullgraph``: any read of a computed value
on the host, such as ``if x.sum() > 0``, is an error naming the line); the kernel calls it
records are translated to ONNX operators (``_graph.py``), the model's parameters and
buffers become initializers named as in its ``state_dict``. Shapes are static: the graph
is valid for the shapes of the example inputs. Needs the ``onnx`` package
(``pip install onnx``); running an ``ONNXProgram`` needs ``onnxruntime``.
"""
from __future__ import annotations

import contextlib
import enum
import inspect
import os

import numpy as np

from ember.dispatcher import core as C
from ember.dispatcher import lazy as L


from .. import __version__
from .._creation import tensor
from .._torch_c import tree_leaves, tree_map_only
from ..autograd._engine import no_grad
from ..nn.modules.module import Module
from . import errors
from ._graph import Builder, Translator
from .errors import OnnxExporterError

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


_UNSUPPORTED = {"dynamic_shapes": None, "dynamic_axes": None, "custom_translation_table": None,
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

    The graph has the example inputs' static shapes: ``dynamic_axes`` and
    ``dynamic_shapes`` raise ``NotImplementedError``, as do ops without a translation
    (the message names the op). Random ops (dropout in training mode) are not exported.

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
    fresh = [t.detach().contiguous().clone() for t in flat]
    copies = iter(fresh)
    call_args, call_kwargs = tree_map_only(C.TensorBase, lambda t: next(copies),
                                           (args, kwargs))
    names = _input_names(model, args, kwargs, input_names)

    mode = select_model_mode_for_export(model, TrainingMode(training)) \
        if isinstance(model, Module) else contextlib.nullcontext()
    region = L.Region(keep=True, fullgraph=True)
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
        if isinstance(v, np.ndarray):
            return numpy_helper.from_array(v)
        return v

    nodes = []
    for op_type, ins, outs, attrs in b.nodes:
        attrs = {k: attr(v) for k, v in attrs.items()}
        if opset < 18 and op_type in _AXES_AS_ATTRIBUTE and len(ins) == 2:
            attrs["axes"] = [int(a) for a in b.initializers[ins[1]]]
            ins = ins[:1]
        nodes.append(helper.make_node(op_type, ins, outs, **attrs))
    used = {i for n in nodes for i in n.input}
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
