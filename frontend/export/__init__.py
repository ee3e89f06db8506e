"""``ember.export``: a model as a self-contained graph program (``torch.export``).

>>> ep = ember.export.export(model, (x,))          # doctest: +SKIP
>>> ep.module()(x)                                 # doctest: +SKIP

``export`` runs the model once inside a capture region, as ``ember.compile(fullgraph=True)``
does (a read of a computed value on the host, such as ``if x.sum() > 0``, raises
``ember._dynamo.exc.Unsupported`` naming the line). The kernel calls it records become an
``ember.fx`` graph (docs/compile.md): a placeholder per input view (the user's tensors, the
model's parameters and buffers, tensors it captured as constants) and runtime value, a node
per kernel call. ``ExportedProgram.module()`` runs that graph with the parameters of
``state_dict``; the Python of the model's ``forward`` does not run again.

What it does not do yet, each raising ``NotImplementedError`` with a sentence: dynamic
shapes (the program takes the example inputs' shapes, dtypes and devices), random ops in
the graph (dropout in training mode: export in eval mode), ``save``/``load``. Gradients do
not flow through ``module()``'s outputs: the graph runs kernels, not autograd's ops.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect

from ember.dispatcher import core as C
from ember.dispatcher import dtypes as D
from ember.dispatcher import lazy as L

from .. import _compile, compiler
from .._torch_c import tree_flatten, tree_unflatten
from ..autograd._engine import no_grad
from ..nn.modules.module import Module

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "InputKind", "InputSpec",
           "OutputKind", "OutputSpec", "TensorArgument", "ConstantArgument", "save", "load",
           "Dim"]


class InputKind(enum.Enum):
    """PyTorch's kinds of graph inputs, and ``RUNTIME_VALUE`` (ember's): a Python number a
    kernel call takes (an op's scalar, ``eps``), fixed at export."""
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    RUNTIME_VALUE = enum.auto()


class OutputKind(enum.Enum):
    """What a graph output is: a value the model returns."""
    USER_OUTPUT = enum.auto()


@dataclasses.dataclass
class TensorArgument:
    """A graph value that is a tensor, by its node's name."""
    name: str


@dataclasses.dataclass
class ConstantArgument:
    """A graph value fixed at export (a Python number), by name, with its value."""
    name: str
    value: object


@dataclasses.dataclass
class InputSpec:
    """A graph placeholder: what feeds it (``kind``), its node (``arg``) and, for
    parameters, buffers and constants, their name (``target``)."""
    kind: InputKind
    arg: object
    target: str | None
    persistent: bool | None = None


@dataclasses.dataclass
class OutputSpec:
    """A graph output: its kind and its value (``arg``)."""
    kind: OutputKind
    arg: object
    target: str | None = None


class ExportGraphSignature:
    """Which placeholders are user inputs, parameters, buffers and constants, and the
    user outputs, by PyTorch's names."""

    def __init__(self, input_specs, output_specs, parameters=(), buffers=()):
        self.input_specs = list(input_specs)
        self.output_specs = list(output_specs)
        self._parameters = tuple(parameters)
        self._buffers = tuple(buffers)

    def _targets(self, kind):
        return [s.target for s in self.input_specs if s.kind == kind and s.target]

    @property
    def parameters(self):
        """The model's parameter names, in its order (those the graph reads or not)."""
        return self._parameters

    @property
    def buffers(self):
        """The model's buffer names, in its order."""
        return self._buffers

    @property
    def lifted_tensor_constants(self):
        return list(dict.fromkeys(self._targets(InputKind.CONSTANT_TENSOR)))

    @property
    def user_inputs(self):
        return tuple(s.arg.name for s in self.input_specs if s.kind == InputKind.USER_INPUT)

    @property
    def user_outputs(self):
        return tuple(s.arg.name if isinstance(s.arg, TensorArgument) else s.arg.value
                for s in self.output_specs)

    @property
    def inputs_to_parameters(self):
        return {s.arg.name: s.target for s in self.input_specs
                if s.kind == InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self):
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.BUFFER}

    def __repr__(self):
        lines = ["ExportGraphSignature(input_specs=["]
        lines += [f"    {s}," for s in self.input_specs]
        lines += ["], output_specs=["] + [f"    {s}," for s in self.output_specs] + ["])"]
        return "\n".join(lines)


class _Trace:
    """What ``to_graph_module`` reads of a kept trace."""

    def __init__(self, key):
        self.nodes, self.slot_kinds, self.outputs = key


def _leaf_desc(path: str, t) -> str:
    return f"{path}: a {t.dtype.name} tensor of shape {list(t.shape)} on {t.device}"


def _paths(mod, args, kwargs, n: int) -> list:
    """A name per leaf of ``(args, kwargs)`` in flattening order, as PyTorch's guards name
    inputs: the forward's parameter name (``x``), a keyword's key, ``[i]`` inside lists."""
    try:
        params = [p.name for p in inspect.signature(mod.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    out = []

    def walk(obj, name):
        if isinstance(obj, (list, tuple)):
            for i, x in enumerate(obj):
                walk(x, f"{name}[{i}]")
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{name}[{k!r}]")
        else:
            out.append(name)
    for i, a in enumerate(args):
        walk(a, params[i] if i < len(params) else f"args[{i}]")
    for k, v in kwargs.items():
        walk(v, k)
    return out if len(out) == n else [f"input {i}" for i in range(n)]


class ExportedProgram:
    """A captured program: ``graph_module`` / ``graph`` (the ``ember.fx`` graph),
    ``graph_signature``, ``state_dict`` (parameters and buffers by name), ``constants``,
    ``example_inputs`` and ``module()``, which runs it."""

    def __init__(self, gm, order, sources, values, in_spec, in_checks, out_spec,
                 out_leaves, signature, state_dict, constants, example_inputs, name):
        self.graph_module = gm
        self.graph_signature = signature
        self.state_dict = state_dict
        self.constants = constants
        self.example_inputs = example_inputs
        self.range_constraints = {}
        self.module_call_graph = []
        self._order = order              # the placeholders' encodings
        self._sources = sources          # per input slot: ("user", i) | ("state", name, t)
        self._values = values            # the runtime values, as recorded
        self._in_spec = in_spec
        self._in_spec_kwargs = tuple(example_inputs[1])
        self._in_checks = in_checks      # per input leaf: (path, value or tensor layout)
        self._out_spec = out_spec
        self._out_leaves = out_leaves    # per output leaf: ("t", encoding) | ("c", value)
        self._name = name

    @property
    def graph(self):
        return self.graph_module.graph

    def module(self) -> Module:
        """A Module whose forward runs the graph, holding the parameters and buffers of
        ``state_dict`` under their names (the same tensors)."""
        return _ExportedModule(self)

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """The graph's nodes are already ember's kernels (the primitives every backend
        implements): the program is returned as it is."""
        return self

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self):
        return (f"ExportedProgram:\n{self.graph_module.code}\n"
                f"Graph signature: {self.graph_signature}\n")

    __repr__ = __str__

    # ---- running ------------------------------------------------------------------------

    def _run(self, module, args, kwargs):
        want_kw = list(self._in_spec_kwargs)
        if sorted(kwargs) != sorted(want_kw):
            raise ValueError(f"Ran into a kwarg keyword mismatch: Got the following keywords "
                             f"{list(kwargs)} but expected {want_kw}")
        kwargs = {k: kwargs[k] for k in want_kw}     # (the export's order)
        leaves, spec = tree_flatten((tuple(args), kwargs))
        if spec != self._in_spec:
            raise ValueError(f"Trying to flatten user inputs with exported input tree spec:"
                             f"\n{self._in_spec}\nbut actually got inputs with tree spec of:"
                             f"\n{spec}")
        users = []
        for (path, want), got in zip(self._in_checks, leaves):
            if want[0] == "t":
                _, shape, dtype, device = want
                if not isinstance(got, C.TensorBase):
                    raise RuntimeError(f"Expected input at {path} to be a tensor, but got "
                                       f"{type(got).__name__}")
                for d, (a, b) in enumerate(zip(shape, got.shape)):
                    if a != b:
                        raise AssertionError(f"Guard failed: {path}.size()[{d}] == {a} (the "
                                             f"program has static shapes; got {b})")
                if len(shape) != got.dim():
                    raise RuntimeError(f"Unexpected number of dimensions in input at "
                                       f"{path}.shape (expected {list(shape)}, got "
                                       f"{list(got.shape)})")
                if got.dtype != dtype or got.device != device:
                    raise RuntimeError(f"Expected input at {path} to be a {dtype.name} "
                                       f"tensor on {device}, but got {got.dtype.name} on "
                                       f"{got.device}")
                got = got.detach()
                if not (C.is_contiguous(got) and got._offset == 0):
                    got = got.contiguous().clone()
                users.append(got)
            elif not (type(got) is type(want[1]) and got == want[1]):
                raise RuntimeError(f"Expected input at {path} to be equal to {want[1]!r}, "
                                   f"but got {got!r}")
            else:
                users.append(None)
        storages = {}
        for slot, src in self._sources.items():
            if src[0] == "user":
                storages[slot] = users[src[1]]._storage
            else:
                t = _state(module, src[1], src[2])
                storages[slot] = t._storage
        inputs = _compile._inputs_of(self._order, storages, self._values)
        with no_grad():
            outs = self.graph_module(*inputs)
        produced = dict(zip(self.graph_module._ember_outputs, outs))
        results = []
        for leaf in self._out_leaves:
            if leaf[0] == "c":
                results.append(leaf[1])
                continue
            if leaf[0] == "u":
                shape, stride, offset, dtype, device = leaf[2]
                results.append(C.new_tensor(users[leaf[1]]._storage, shape, stride, offset,
                                            dtype, device, [0]))
                continue
            _, slot, shape, stride, offset, dtype, device = leaf[1]
            base = produced[slot]._storage if slot in produced else storages[slot]
            results.append(C.new_tensor(base, shape, stride, offset, dtype, device, [0]))
        return tree_unflatten(results, self._out_spec)


def _state(module, name, example):
    """``module``'s parameter, buffer or constant ``name``, checked against the layout the
    graph was captured with (a different one would misread memory)."""
    t = module._ember_state.get(name) if name.startswith("<constant") else \
        _get(module, name)
    if not isinstance(t, C.TensorBase):
        raise RuntimeError(f"the exported module has no tensor {name!r} any more")
    if (t.shape != example.shape or t.dtype != example.dtype or t.device != example.device
            or t._stride != example._stride or t._offset != example._offset):
        raise RuntimeError(f"{name} changed since export: {_leaf_desc(name, t)}, stride "
                           f"{list(t._stride)}, where the graph reads "
                           f"{_leaf_desc(name, example)}, stride {list(example._stride)}")
    return t


def _get(module, name):
    obj = module
    *path, last = name.split(".")
    for part in path:
        obj = getattr(obj, part)
    return getattr(obj, last)


class _ExportedModule(Module):
    """``ExportedProgram.module()``: the graph as a Module."""

    def __init__(self, program: ExportedProgram):
        super().__init__()
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "_ember_state", dict(program.constants))
        params = set(program.graph_signature.parameters)
        for name, t in program.state_dict.items():
            *path, last = name.split(".")
            owner = self
            for part in path:
                sub = owner._modules.get(part)
                if sub is None:
                    sub = Module()
                    owner.add_module(part, sub)
                owner = sub
            if name in params:
                owner.register_parameter(last, t)
            else:
                owner.register_buffer(last, t)

    def forward(self, *args, **kwargs):
        return self._program._run(self, args, kwargs)

    @property
    def graph(self):
        return self._program.graph

    @property
    def code(self):
        return self._program.graph_module.code


class Dim:
    """A dimension marker for ``dynamic_shapes``; ember's exported programs have static
    shapes, so ``export(..., dynamic_shapes=...)`` raises ``NotImplementedError``."""

    AUTO = "AUTO"
    STATIC = "STATIC"
    DYNAMIC = "DYNAMIC"

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None):
        self.__name__ = name
        self.min = min
        self.max = max

    def __repr__(self):
        return f"Dim({self.__name__!r}, min={self.min}, max={self.max})"


def save(ep, f, **kwargs):
    """Not implemented yet: an exported program cannot be written to a file."""
    raise NotImplementedError("ember.export.save is not implemented yet: ember's exported "
                              "programs live in memory (ember.onnx.export writes a file)")


def load(f, **kwargs):
    """Not implemented yet (see :func:`save`)."""
    raise NotImplementedError("ember.export.load is not implemented yet: ember.export.save "
                              "writes no file")


def export(mod, args=(), kwargs=None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=
           False) -> ExportedProgram:
    """Capture ``mod`` (a Module) called with ``args`` and ``kwargs`` as an
    :class:`ExportedProgram`, as ``torch.export.export``.

    The model runs once, in its current mode, without autograd recording (the graph holds
    the forward's kernels). The program takes the example inputs' shapes, dtypes and
    devices (another shape raises ``RuntimeError`` naming the input and dim) and the same
    non-tensor arguments.

    Example::

        >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
        >>> ep.module()(ember.randn(3, 4)).shape
        ember.Size([3, 2])
    """
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args)}")
    if dynamic_shapes is not None:
        raise NotImplementedError("ember.export: dynamic_shapes is not supported yet; an "
                                  "exported program takes the example inputs' shapes")
    kwargs = dict(kwargs or {})
    leaves, in_spec = tree_flatten((args, kwargs))
    paths = _paths(mod, args, kwargs, len(leaves))
    fresh = [x.detach().contiguous().clone() if isinstance(x, C.TensorBase) else x
             for x in leaves]
    call_args, call_kwargs = tree_unflatten(fresh, in_spec)
    region = L.Region(keep=True, fullgraph=True, export=True)
    # the capture runs the model's kernels: buffers it updates (BatchNorm's running
    # statistics in training mode) are put back afterwards, as export leaves the model be
    saved = [(b, b.detach().clone()) for b in mod.buffers()]
    with contextlib.ExitStack() as stack:
        stack.enter_context(no_grad())
        cap = stack.enter_context(L.capture(region))
        if not cap.outer:
            raise RuntimeError("ember.export.export cannot run inside an ember.compile "
                               "region (or while another thread captures)")
        compiler._EXPORTING[0] = True
        stack.callback(compiler._EXPORTING.__setitem__, 0, False)
        result = mod(*call_args, **call_kwargs)
    with no_grad():
        for b, old in saved:
            b.copy_(old)
    if len(region.kept) > 1:    # (fullgraph: only the region's end runs a trace)
        raise RuntimeError("ember.export: the model ran as more than one graph")
    kept = region.kept[0] if region.kept else None
    if kept is not None and kept.rand:
        raise NotImplementedError("ember.export: the model draws random numbers (dropout "
                                  "in training mode, ...); exported graphs cannot hold them "
                                  "yet: export it in eval mode (mod.eval())")
    trace = _Trace(kept.key) if kept is not None else _Trace(((), (), ()))
    storages = kept.storages if kept is not None else []
    values = list(kept.values) if kept is not None else []
    gm, _ = _compile.to_graph_module(trace)
    gm._ember_outputs = tuple(trace.outputs)
    order = _compile._input_order(trace)

    def real(s):
        return s.real if s.__class__ is C.LazyStorage and s.real is not None else s
    slot_of = {id(real(s)): slot for slot, s in enumerate(storages)}

    # what feeds each input slot: a user input, a parameter or buffer, or a constant
    own_params, own_buffers = list(mod.named_parameters()), list(mod.named_buffers())
    named = {}
    params = {id(p._storage): n for n, p in own_params}
    for n, t in own_params + own_buffers:
        named.setdefault(id(t._storage), (n, t))
    users = {id(t._storage): i for i, t in enumerate(fresh) if isinstance(t, C.TensorBase)}
    sources, constants = {}, {}
    kinds = {}
    for slot, kind in enumerate(trace.slot_kinds):
        if kind[0] != "i":
            continue
        s = storages[slot]
        if id(s) in users:
            sources[slot] = ("user", users[id(s)])
            kinds[slot] = (InputKind.USER_INPUT, None)
        elif id(s) in named:
            name, t = named[id(s)]
            sources[slot] = ("state", name, t)
            kinds[slot] = (InputKind.PARAMETER if id(s) in params else InputKind.BUFFER,
                           name)
        else:
            name = f"<constant {len(constants)}>"
            t = C.new_tensor(s, (s.nbytes,), (1,), 0, D.uint8, _device_of(trace, slot),
                             [0])
            constants[name] = t
            sources[slot] = ("state", name, t)
            kinds[slot] = (InputKind.CONSTANT_TENSOR, name)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    input_specs = []
    for e, node in zip(order, placeholders):
        if e[0] == "t":
            kind, target = kinds[e[1]]
            input_specs.append(InputSpec(kind, TensorArgument(node.name), target,
                                         True if kind == InputKind.BUFFER else None))
        else:
            input_specs.append(InputSpec(InputKind.RUNTIME_VALUE,
                                         ConstantArgument(node.name, values[e[1]]), None))
    in_checks = []
    for path, x in zip(paths, fresh):
        in_checks.append((path, ("t", tuple(x.shape), x.dtype, x.device))
                         if isinstance(x, C.TensorBase) else (path, ("c", x)))

    out_flat, out_spec = tree_flatten(result)
    out_leaves, output_specs = [], []
    for i, o in enumerate(out_flat):
        if isinstance(o, C.TensorBase):
            layout = (tuple(o.shape), tuple(o._stride), o._offset, o.dtype, o.device)
            slot = slot_of.get(id(o._storage))
            if slot is not None and (trace.slot_kinds[slot][0] == "b" or slot in sources):
                out_leaves.append(("t", ("t", slot, *layout)))
            elif id(o._storage) in users:       # a user input no kernel read
                out_leaves.append(("u", users[id(o._storage)], layout))
            else:
                raise RuntimeError(f"ember.export: output {i} is a tensor the graph neither "
                                   f"makes nor takes as an input")
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT,
                                           TensorArgument(f"output_{i}")))
        else:
            out_leaves.append(("c", o))
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT,
                                           ConstantArgument(f"output_{i}", o)))
    # every parameter and buffer, in the model's order (PyTorch's ``state_dict``), those
    # the graph does not read too (``module()`` holds them all)
    pnames = [n for n, _ in own_params]
    bnames = [n for n, _ in own_buffers]
    state_dict = dict(own_params + own_buffers)
    signature = ExportGraphSignature(input_specs, output_specs, pnames, bnames)
    return ExportedProgram(gm, order, sources, values, in_spec, in_checks, out_spec,
                           out_leaves, signature, state_dict, constants, (args, kwargs),
                           type(mod).__name__)


def _device_of(trace, slot):
    for _, _, args, attrs in trace.nodes:
        for e in (x for a in (*args, *(v for _, v in attrs)) for x in L.leaves(a)):
            if e[0] == "t" and e[1] == slot:
                return e[6]
    raise RuntimeError(f"ember.export: no call reads input slot {slot}")
