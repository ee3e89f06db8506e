"""``ember.fx.Proxy``: the stand-in values symbolic tracing runs a program on.

A :class:`Proxy` wraps a :class:`~ember.fx.Node`. Every operator applied to it (``+``,
``x[0]``, ``-x``), every method called on it (``x.view(...)``), every attribute read
(``x.shape``) and every ``ember.*`` / ``ember.nn.functional.*`` function called with it adds
a node to the tracer's graph and returns a new Proxy, as in PyTorch's ``torch.fx``. A Proxy
is not a Tensor: reading its value (``bool(x)``, ``len(x)``, iterating it) raises
:class:`TraceError`, since symbolic tracing has no values.
"""
from __future__ import annotations

import collections
import copy
import dis
import enum
import inspect
import operator

import ember

from .graph import Graph, Node, map_aggregate

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TracerBase", "GraphAppendingTracer",
           "TraceError", "Scope"]

# the value types a node's arguments may hold as they are
_BASE_TYPES = (str, int, float, bool, complex, ember.dtype, ember.device, ember.layout,
               ember.memory_format, type(None), type(...), range, enum.Enum)


#: filled by ``_symbolic_trace`` (which imports this module): ``record(func, args, kwargs)``
#: records a call of one of ember's public functions on proxies as a trace does, and
#: ``tracing()`` says whether a symbolic trace is running
_HOOKS: dict = {}
_ARMED = [False]


def _arm_outside_trace() -> None:
    """A Proxy used outside a symbolic trace (made from a bare Node, or by an
    ``fx.Transformer``) reaches ember's functions through ``__torch_function__``, which
    needs ember's dispatching hooks: put them in place, once."""
    if not _ARMED[0] and not _HOOKS["tracing"]():
        _ARMED[0] = True
        ember.overrides.get_overridable_functions()


class TraceError(ValueError):
    """A traced program did something symbolic tracing cannot record (branching on a
    traced value, iterating it, ...)."""


class Scope:
    """The module being traced through: its qualified path and type (``node_name_to_scope``
    and ``meta["nn_module_stack"]`` record it per node)."""

    def __init__(self, module_path: str, module_type):
        self.module_path = module_path
        self.module_type = module_type


class TracerBase:
    """What a Proxy needs from a tracer: a graph and ``create_proxy`` / ``create_arg``.
    :class:`~ember.fx.Tracer` is the full one; subclasses override these to change what is
    recorded."""

    graph: Graph
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"
    scope: Scope
    module_stack: collections.OrderedDict
    node_name_to_scope: dict

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        """Add a node to the graph (the hook subclasses override to check or change
        nodes)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        scope = getattr(self, "scope", None)
        if scope is not None:
            self.node_name_to_scope[node.name] = (scope.module_path, scope.module_type)
        if getattr(self, "module_stack", None):
            node.meta["nn_module_stack"] = copy.copy(self.module_stack)
        return node

    def proxy(self, node: Node) -> "Proxy":
        """The Proxy of ``node``."""
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None) -> "Proxy":
        """Add a node for ``kind``/``target`` with ``args`` and ``kwargs`` (their Proxies
        become nodes) and return its Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)

    def create_arg(self, a):
        """``a`` as a node argument: Proxies become their nodes, containers are mapped,
        plain values stay; anything else raises ``NotImplementedError``."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(type(a), "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            items = [self.create_arg(x) for x in a]
            if hasattr(a, "_fields"):
                return type(a)(*items)
            if type(a) is tuple or any(isinstance(x, Node) for x in items):
                return tuple(items)
            return type(a)(items)          # (ember.Size of plain ints)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)
                    if any(isinstance(x, Node) for x in _leaves(k)):
                        raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                           f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, _BASE_TYPES) or a is None or a is ...:
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: "Proxy") -> bool:
        """Called on ``bool(proxy)`` (an ``if`` on a traced value): raises; a tracer that
        knows values may return one."""
        raise TraceError("symbolically traced variables cannot be used as inputs to "
                         "control flow")

    def iter(self, obj: "Proxy"):
        """Called on ``iter(proxy)``: raises; a tracer may return an iterator."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function "
                         "argument. See the torch.fx docs on pytorch.org for a more detailed "
                         "explanation of what types of control flow can be traced, and check "
                         "out the Proxy docstring for help troubleshooting Proxy iteration "
                         "errors")

    def keys(self, obj: "Proxy") -> "Proxy":
        """Called on ``proxy.keys()`` (``**proxy``): records a ``keys`` method call."""
        return Attribute(obj, "keys")()


def _leaves(a) -> list:
    out = []
    map_aggregate(a, out.append)
    return out


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph: what a Proxy made from a bare Node
    uses, so that transforms can write ``Proxy(node) + 1``."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


class Proxy:
    """A traced value: records what the program does with it as nodes of a graph.

    Example::

        g = ember.fx.Graph()
        x = ember.fx.Proxy(g.placeholder("x"))
        g.output(((x + 1).relu()).node)     # two nodes: add, relu
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node
        if not _ARMED[0]:
            _arm_outside_trace()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Outside a symbolic trace, ``ember.relu(proxy)`` or a module called on a Proxy
        adds nodes to the proxy's graph, as PyTorch's ``Proxy.__torch_function__`` does
        (inside one, the trace's own wrappers record the calls)."""
        tracers = set()

        def find(a):
            if isinstance(a, cls):
                tracers.add(a.tracer)
            return a
        map_aggregate((args, kwargs or {}), find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while "
                               f"trying to trace operations {func}")
        return _HOOKS["record"](func, tuple(args), dict(kwargs or {}))

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> "Attribute":
        # (not a node yet: most attribute reads are method calls, recorded as such)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        new = Proxy.__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            try:
                new.__dict__[k] = copy.deepcopy(v, memo)
            except Exception:       # noqa: BLE001 - (what cannot be copied is shared)
                new.__dict__[k] = copy.copy(v)
        return new

    def __call__(self, *args, **kwargs) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # ``a, b = proxy`` unpacks into getitems when the caller's bytecode says how many
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == caller.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        return self.tracer.iter(self)

    def __abs__(self) -> "Proxy":
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self):
        """``proxy.keys()``: the tracer decides (a ``keys`` method call by default)."""
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call torch.fx.wrap('len') "
                           "at module scope")


class Attribute(Proxy):
    """``proxy.name``: becomes a ``getattr`` node when its value is used, or a
    ``call_method`` node when it is called."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        """The ``getattr`` node, made on first use."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args,
                                        kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy whose shape queries (``shape``, ``size()``, ``dim()``, ...)
    answer from the parameter itself, so code branching on them traces
    (``Tracer(param_shapes_constant=True)``)."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        """The parameter's shape."""
        return self.param.shape

    def size(self, *dim):
        """The parameter's size."""
        return self.param.size(*dim)

    def dim(self):
        """The parameter's number of dimensions."""
        return self.param.dim()

    @property
    def ndim(self):
        """The parameter's number of dimensions."""
        return self.param.ndim

    def numel(self):
        """The parameter's number of elements."""
        return self.param.numel()

    def nelement(self):
        """The parameter's number of elements."""
        return self.param.nelement()


# operators: each records operator.<name>(self, other) (and the reflected form for
# other <op> self), as torch.fx's Proxy does
_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "getitem", "matmul")
_MAGIC = _REFLECTABLE + ("eq", "ne", "lt", "gt", "le", "ge", "pos", "neg", "invert")


def _define_magic(name: str):
    target = getattr(operator, name)

    def impl(*args, **kwargs):
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = impl.__qualname__ = f"__{name.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


def _define_reflectable(name: str):
    target = getattr(operator, name)

    def impl(self, lhs):
        return self.tracer.create_proxy("call_function", target, (lhs, self), {})
    impl.__name__ = impl.__qualname__ = f"__r{name.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


for _name in _MAGIC:
    _define_magic(_name)
for _name in _REFLECTABLE:
    _define_reflectable(_name)
Proxy.__hash__ = object.__hash__       # (defining __eq__ would otherwise not matter here)
