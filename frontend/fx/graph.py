"""``ember.fx``'s graph: nodes in program order, each an op on earlier nodes.

The core of PyTorch's ``torch.fx`` that compiler backends read and write: a node's ``op``
is ``placeholder`` (an input), ``get_attr`` (a module attribute), ``call_function``,
``call_method``, ``call_module`` or ``output``; its ``target`` is what it calls; its
``args`` and ``kwargs`` hold other nodes and constants. ``print(graph)`` and
:meth:`Graph.python_code` show it the way PyTorch does, with ``ember.`` in place of
``torch.``.
"""
from __future__ import annotations

import builtins
import contextlib
import copy
import inspect
import keyword
import math
import operator
import re

import ember  # (read at call time: ember's namespace names the functions in the code)
from ember.dispatcher import dtypes as _dtypes

try:                                   # (optional, as for PyTorch: print_tabular needs it)
    from tabulate import tabulate as _tabulate
except ImportError:                    # pragma: no cover - depends on the environment
    _tabulate = None

__all__ = ["Graph", "Node", "map_arg", "map_aggregate"]

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")

# binary and unary operators the generated code writes as expressions, as torch.fx does
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
           operator.matmul: "@", operator.lt: "<", operator.le: "<=", operator.gt: ">",
           operator.ge: ">=", operator.eq: "==", operator.ne: "!=", operator.and_: "&",
           operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
           operator.rshift: ">>"}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
# in-place operators (operator.iadd, ...): written as statements, the node naming the target
_INPLACE = {operator.iadd: "+=", operator.isub: "-=", operator.imul: "*=",
            operator.itruediv: "/=", operator.ifloordiv: "//=", operator.imod: "%=",
            operator.ipow: "**=", operator.imatmul: "@=", operator.iand: "&=",
            operator.ior: "|=", operator.ixor: "^=", operator.ilshift: "<<=",
            operator.irshift: ">>="}

# names a node may not take (PyTorch's rule: keywords, builtins and the globals the
# generated code uses), so ``sum`` becomes ``sum_1``
_ILLEGAL = set(keyword.kwlist) | set(builtins.__dict__) | {
    "inf", "nan", "NoneType", "torch", "ember", "device", "operator", "fx_pytree", "pytree"}
_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")


def map_arg(a, fn):
    """``a`` with every Node in it (nested in tuples, lists, dicts, slices) replaced by
    ``fn(node)``."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        items = [map_arg(x, fn) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


def map_aggregate(a, fn):
    """``a`` with every leaf (anything but a tuple, list, dict or slice) replaced by
    ``fn(leaf)``; named tuples keep their type."""
    if isinstance(a, tuple):
        items = [map_aggregate(x, fn) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def _nodes_in(a) -> list:
    found = []
    map_arg(a, found.append)
    return found


class Node:
    """One operation of a :class:`Graph`. ``users`` are the nodes that take its value."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"Node: op must be one of {', '.join(_OPS)}, got {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and \
                not isinstance(target, str):
            raise ValueError(f"Node: the target of a {op} node is a string, got "
                             f"{type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node: the target of a call_function node must be callable, "
                             f"got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.meta: dict = {}
        self.users: dict = {}
        self.type = return_type
        self._erased = False
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._inputs: list = []
        self._set(tuple(args), dict(kwargs))

    # ---- inputs and users -------------------------------------------------------------
    def _set(self, args, kwargs):
        for n in self._inputs:
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        inputs = []
        for n in _nodes_in((args, kwargs)):
            if n.graph is not self.graph:
                raise RuntimeError(f"Node {self.name}: argument {n.name} belongs to another "
                                   "graph")
            if n not in inputs:
                inputs.append(n)
        self._inputs = inputs
        for n in inputs:
            n.users[self] = None

    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value):
        self._set(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._set(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list:
        """The nodes this one reads, each once, in the order of its arguments."""
        return list(self._inputs)

    def replace_input_with(self, old, new):
        """Read ``new`` wherever this node reads ``old``."""
        swap = lambda n: new if n is old else n  # noqa: E731
        self._set(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True):
        """Make every user of this node read ``replace_with`` instead; returns the users
        changed."""
        changed = []
        for user in list(self.users):
            if user is replace_with or not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    def update_arg(self, idx: int, arg):
        """Set positional argument ``idx`` to ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def update_kwarg(self, key: str, arg):
        """Set keyword argument ``key`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def prepend(self, x: "Node"):
        """Move ``x`` (a node of this graph) to just before this node."""
        nodes = self.graph._nodes
        if x is self:
            return
        if x in nodes:
            nodes.remove(x)
        nodes.insert(nodes.index(self), x)

    def append(self, x: "Node"):
        """Move ``x`` (a node of this graph) to just after this node."""
        nodes = self.graph._nodes
        if x is self:
            return
        if x in nodes:
            nodes.remove(x)
        nodes.insert(nodes.index(self) + 1, x)

    @property
    def stack_trace(self):
        """Where the traced program made this node (``meta["stack_trace"]``), if recorded."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether the node has effects beyond its value (placeholders, the output, in-place
        ops: names ending in ``_``), so dead-code elimination keeps it."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            module = self.graph.owning_module
            if module is not None:
                try:
                    sub = module.get_submodule(self.target)
                except AttributeError:
                    return False
                return bool(getattr(sub, "_is_impure", False))
        return _impure(self)

    @property
    def next(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i + 1] if i + 1 < len(nodes) else None

    @property
    def prev(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i - 1] if i > 0 else None

    # ---- printing ---------------------------------------------------------------------
    def format_node(self) -> str:
        """The node as ``print(graph)`` shows it (PyTorch's format)."""
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return head + f"placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return head + f"get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]!r}"
        target = _pretty_target(self.target) if self.op == "call_function" else self.target
        return head + (f"{self.op}[target={target}](args = {_fmt(self.args)}, "
                       f"kwargs = {_fmt(self.kwargs)})")

    def __repr__(self):
        return self.name


def _fmt(a) -> str:
    """An argument as ``format_node`` shows it: nodes as %name."""
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, tuple):
        inner = ", ".join(_fmt(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in a.items()) + "}"
    return str(a)


def _pretty_target(fn) -> str:
    name = getattr(fn, "__name__", None)
    if name is not None and getattr(fn, "__module__", None) == "builtins":
        return f"builtins.{name}"
    return _qualified(fn)


def _lib() -> str:
    """The library name the printed graph and the code write: ``ember``, or ``torch`` while
    ``ember.as_torch`` is installed (as every printed text then reads)."""
    return _dtypes.module_name


def _qualified(fn) -> str:
    """How the printed graph and the generated code name a function: ``ember.add``,
    ``operator.mul``, or its module path."""
    name = getattr(fn, "__name__", None)
    if name is not None and getattr(ember, name, None) is fn:
        return f"{_lib()}.{name}"
    if name is not None and getattr(operator, name, None) is fn:
        return f"operator.{name}"
    if name is not None and getattr(builtins, name, None) is fn:
        return name
    module = getattr(fn, "__module__", None) or ""
    module = re.sub(r"^(frontend|ember)\b", _lib(), module)
    return f"{module}.{getattr(fn, '__qualname__', name)}" if module else repr(fn)


def _type_repr(t) -> str:
    """A type annotation as the printed graph and the code write it."""
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        if getattr(ember, t.__name__, None) is t:
            return f"{_lib()}.{t.__name__}"
        return f"{t.__module__}.{t.__qualname__}"
    if t is ...:
        return "..."
    return repr(t).replace("typing.", "")


def _target_to_str(target) -> str:
    """The name a node of ``target`` starts from (PyTorch's): the function's name, or the
    method / module / attribute path, dunders stripped, in snake case."""
    if callable(target) and not isinstance(target, str):
        op = getattr(target, "__name__", None) or type(target).__name__
    else:
        op = str(target)
        if op.startswith("__") and op.endswith("__"):
            op = op[2:-2]
    return _SNAKE.sub(r"_\1", op).lower()


class _Namespace:
    """Unique node names, PyTorch's way: ``add``, ``add_1``, ...; a name that would shadow
    a keyword, a builtin or a global of the generated code gets a suffix (``sum_1``)."""

    def __init__(self):
        self._used: set = set()
        self._base_count: dict = {}

    def create_name(self, candidate: str) -> str:
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = "_" + candidate
            match = _NAME.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if candidate in _ILLEGAL:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate


class PythonCode(tuple):
    """What :meth:`Graph.python_code` returns: ``src`` (the source of ``forward``) and
    ``globals`` (the names it reads); unpacks as ``src, globals``."""

    def __new__(cls, src: str, globals_: dict):
        return super().__new__(cls, (src, globals_))

    @property
    def src(self) -> str:
        """The source of ``forward``."""
        return self[0]

    @property
    def globals(self) -> dict:
        """The globals the source reads."""
        return self[1]


class Graph:
    """An ordered list of :class:`Node`: placeholders (the inputs), then the ops, then an
    ``output`` node. ``print(graph)`` lists it as PyTorch does; :meth:`python_code` is the
    ``forward`` a :class:`~ember.fx.GraphModule` runs.

    Example::

        g = ember.fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_function(ember.relu, (x,)))
    """

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._nodes: list = []
        self._namespace = _Namespace()
        self._insert = None             # (anchor node, after: bool) or None: the end
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self) -> list:
        """The nodes in program order (a copy: the graph may change while it is walked)."""
        return list(self._nodes)

    def __len__(self):
        return len(self._nodes)

    @property
    def owning_module(self):
        """The GraphModule this graph belongs to, if any."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    def find_nodes(self, *, op: str, target=None, sort: bool = True) -> list:
        """The nodes with this ``op`` (and ``target``, when given), in program order."""
        return [n for n in self._nodes
                if n.op == op and (target is None or n.target == target)]

    # ---- building ---------------------------------------------------------------------
    def _target_to_str(self, target) -> str:
        return _target_to_str(target)

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """A new node at the insertion point: the end of the graph unless
        :meth:`inserting_before` or :meth:`inserting_after` says otherwise. Its name is
        ``name`` or made from the target (``add``, ``add_1``, ...)."""
        candidate = name if name is not None else _target_to_str(target)
        node = Node(self, self._namespace.create_name(candidate), op, target,
                    args or (), kwargs or {}, type_expr)
        if self._insert is None:
            self._nodes.append(node)
        else:
            anchor, after = self._insert
            self._nodes.insert(self._nodes.index(anchor) + (1 if after else 0), node)
        return node

    def placeholder(self, name, type_expr=None, default_value=inspect.Parameter.empty):
        """An input of the graph; ``default_value`` becomes the parameter's default."""
        args = () if default_value is inspect.Parameter.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        """A node reading the owning module's attribute ``qualified_name``."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        """A node calling ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        """A node calling ``args[0].method_name(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        """A node calling the owning module's submodule ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        """The output node: the graph returns ``result``."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    @contextlib.contextmanager
    def inserting_before(self, node=None):
        """A context in which new nodes go just before ``node`` (the start of the graph if
        None)."""
        if node is None:
            with self.inserting_after(None):
                yield
            return
        prev, self._insert = self._insert, (node, False)
        try:
            yield
        finally:
            self._insert = prev

    @contextlib.contextmanager
    def inserting_after(self, node=None):
        """A context in which each new node goes just after ``node`` (so that several come
        out in reverse order, as in PyTorch); ``None``: the start of the graph."""
        if node is None:
            first = self._nodes[0] if self._nodes else None
            prev = self._insert
            self._insert = None if first is None else (first, False)
            try:
                yield
            finally:
                self._insert = prev
            return
        prev, self._insert = self._insert, (node, True)
        try:
            yield
        finally:
            self._insert = prev

    def node_copy(self, node, arg_transform=lambda n: n):
        """A copy of ``node`` (from any graph) in this one, its node arguments mapped by
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, name=node.name,
                               type_expr=node.type)
        new.meta = copy.copy(node.meta)
        return new

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` but its output into this graph; ``val_map`` maps ``g``'s
        nodes to this graph's (filled in as it goes). Returns the value ``g`` outputs (with
        this graph's nodes)."""
        for node in g._nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], val_map.__getitem__)
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, val_map.__getitem__)
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        memo[id(self)] = g
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            value, node = out
            g.output(value, type_expr=getattr(node, "type", None))
        return g

    # ---- editing ----------------------------------------------------------------------
    def erase_node(self, to_erase):
        """Remove a node nobody reads (``RuntimeError`` naming its users otherwise)."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase.name} but it still had "
                               f"{len(to_erase.users)} users in the graph: "
                               f"{dict(to_erase.users)}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._set((), {})
        self._nodes.remove(to_erase)
        to_erase._erased = True

    def eliminate_dead_code(self, is_impure_node=None) -> bool:
        """Erase the nodes nobody reads (in reverse order); True if any went. Placeholders,
        the output and in-place ops (names ending in ``_``) stay."""
        changed = False
        impure = is_impure_node or (lambda n: n.is_impure())
        for node in reversed(self._nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check that every node reads only earlier nodes of this graph, names are unique,
        ops are known, and (with an owning module) that targets exist."""
        seen, names = set(), set()
        for node in self._nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node {node.name} does not belong to this graph")
            if node.op not in _OPS:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for n in node.all_input_nodes:
                if n not in seen:
                    raise RuntimeError(f"Argument '{n}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the "
                                       "graph are topologically ordered")
            seen.add(node)
        mod = self._owning_module
        if mod is None:
            return
        for node in self._nodes:
            if node.op in ("get_attr", "call_module"):
                obj = mod
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        seen_qual = ".".join(node.target.split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {seen_qual}")
                    obj = getattr(obj, atom)

    # ---- printing and code ------------------------------------------------------------
    def __str__(self):
        lines = ["graph():"] + ["    " + n.format_node() for n in self._nodes]
        return "\n".join(lines)

    def print_tabular(self):
        """Print the nodes as a table (op, name, target, args, kwargs); needs the
        ``tabulate`` package, as in PyTorch."""
        if _tabulate is None:
            print("`print_tabular` relies on the library `tabulate`, which could not be "
                  "found on this machine. Run `pip install tabulate` to install the library.")
            raise ImportError("print_tabular needs the tabulate package")
        specs = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self._nodes]
        print(_tabulate(specs, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module: str = "self", **_options) -> PythonCode:
        """The graph as the source of ``def forward(self, ...)`` and the globals it reads
        (PyTorch's layout). Each value is released (``x = None``) after its last use, so
        intermediate tensors are freed as soon as they are dead, as in eager code."""
        return _Codegen(self, root_module, bool(_options.get("verbose"))).run()


class _Codegen:
    """Writes a graph as Python, line for line as ``torch.fx`` does."""

    def __init__(self, graph: Graph, root_module: str, verbose: bool = False):
        self.graph = graph
        self.root = root_module
        self.verbose = verbose
        self.glob = {"ember": ember, "torch": ember, "operator": operator,
                     "inf": float("inf"), "nan": float("nan"), "NoneType": type(None),
                     "device": ember.device, "getattr": getattr}
        self.names: dict = {}

    def add_global(self, hint: str, obj) -> str:
        """A name for ``obj`` in the generated code's globals."""
        for name, value in self.glob.items():
            if value is obj and name not in ("getattr",):
                return name
        name = _ILLEGAL_CHARS.sub("_", hint)
        base, k = name, 0
        while name in self.glob or name in _ILLEGAL and getattr(builtins, name, None) \
                is not obj:
            k += 1
            name = f"{base}_{k}"
        self.glob[name] = obj
        return name

    def fn_name(self, fn) -> str:
        """How the code calls ``fn``: ``ember.relu``, ``ember.nn.functional.relu``, a
        builtin, or a global of its own."""
        name = _qualified(fn)
        if getattr(builtins, name, None) is fn:
            return name
        if name.startswith("operator."):       # (PyTorch: ``_operator_abs``)
            return self.add_global("_" + name, fn)
        if name.startswith(_lib() + ".") and _resolve(name) is fn:
            return name
        return self.add_global(name, fn)

    def repr(self, a) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return f"{self.add_global(_qualified(type(a)), type(a))}{self.repr(tuple(a))}"
        if isinstance(a, tuple):
            inner = ", ".join(self.repr(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.repr(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.repr(k)}: {self.repr(v)}" for k, v in a.items()) \
                + "}"
        if isinstance(a, slice):
            return f"slice({self.repr(a.start)}, {self.repr(a.stop)}, {self.repr(a.step)})"
        if a is None or a is ... or isinstance(a, (bool, int, str, float, complex)):
            return repr(a)
        if isinstance(a, (ember.dtype, ember.device, ember.Size)):
            return repr(a)
        if isinstance(a, type):
            return self.add_global(_qualified(a), a)
        if callable(a) and getattr(a, "__name__", None):
            return self.fn_name(a)
        # anything else (tensors, other objects): a global of the generated code
        return self.add_global(f"_const_{type(a).__name__}", a)

    def args(self, args, kwargs) -> str:
        parts = [self.repr(a) for a in args]
        parts += [f"{k} = {self.repr(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def node_ann(self, node) -> str:
        """The annotation of ``node``'s value: its type, or with ``verbose`` its recorded
        dtype and shape (``: "f32[3, 2]"``, PyTorch's print_readable)."""
        if self.verbose:
            meta = node.meta.get("val", node.meta.get("tensor_meta"))
            if hasattr(meta, "dtype") and hasattr(meta, "shape"):
                abbr = _DTYPE_ABBRS.get(str(meta.dtype).split(".")[-1], str(meta.dtype))
                return f': "{abbr}[{", ".join(str(d) for d in meta.shape)}]"'
        return self.type_ann(node.type)

    def type_ann(self, t) -> str:
        if t is None:
            return ""
        if isinstance(t, type) and t.__module__ != "builtins" and \
                getattr(ember, t.__name__, None) is not t:
            return f" : {self.add_global(_qualified(t), t)}"
        return f" : {_type_repr(t)}"

    def node_line(self, node) -> str:
        name, ann = node.name, self.node_ann(node)
        if node.op == "get_attr":
            return f"{name}{ann} = {_format_target(self.root, node.target)}"
        if node.op == "call_module":
            return (f"{name}{ann} = {_format_target(self.root, node.target)}"
                    f"({self.args(node.args, node.kwargs)})")
        if node.op == "call_method":
            return (f"{name}{ann} = {_format_target(self.repr(node.args[0]), node.target)}"
                    f"({self.args(node.args[1:], node.kwargs)})")
        fn, args = node.target, node.args
        if fn in _BINARY and len(args) == 2 and not node.kwargs:
            return f"{name}{ann} = {self.repr(args[0])} {_BINARY[fn]} {self.repr(args[1])}"
        if fn in _UNARY and len(args) == 1 and not node.kwargs:
            return f"{name}{ann} = {_UNARY[fn]}{self.repr(args[0])}"
        if fn is operator.getitem and len(args) == 2 and not node.kwargs:
            return f"{name}{ann} = {self.repr(args[0])}[{self.repr(args[1])}]"
        if fn in _INPLACE and len(args) == 2 and not node.kwargs:
            return (f"{self.repr(args[0])} {_INPLACE[fn]} {self.repr(args[1])};  "
                    f"{name}{ann} = {self.repr(args[0])}")
        if fn is operator.setitem and len(args) == 3 and not node.kwargs:
            return (f"{self.repr(args[0])}[{self.repr(args[1])}] = {self.repr(args[2])};  "
                    f"{name}{ann} = {self.repr(args[0])}")
        if fn is builtins.getattr and len(args) == 2 and isinstance(args[1], str) and \
                args[1].isidentifier() and not node.kwargs:
            return f"{name}{ann} = {_format_target(self.repr(args[0]), args[1])}"
        if node.meta.get("is_wrapped"):
            self.wrapped.setdefault(self.fn_name(fn))
        return f"{name}{ann} = {self.fn_name(fn)}({self.args(args, node.kwargs)})"

    def run(self) -> PythonCode:
        nodes = self.graph._nodes
        self.wrapped: dict = {}
        last_uses: dict = {}
        seen = set()
        for node in reversed(nodes):
            for n in node.all_input_nodes:
                if n not in seen:
                    seen.add(n)
                    last_uses.setdefault(node, []).append(n)
        free_vars, body = [], []
        if self.verbose:
            body.append("# No stacktrace found for following nodes")
        ret_ann = ""
        for node in nodes:
            if node.op == "placeholder":
                default = f" = {self.repr(node.args[0])}" if node.args else ""
                free_vars.append(f"{node.target}{self.node_ann(node)}{default}")
                raw = node.target.replace("*", "")
                if raw != node.name:
                    body.append(f"{node.name} = {raw}")
                continue
            if node.op == "output":
                if node.type is not None:
                    ret_ann = f" -> {self.type_ann(node.type)[3:]}"
                body.append(f"return {self.repr(node.args[0])}")
                continue
            line = self.node_line(node)
            dead = [n.name for n in last_uses.get(node, [])]
            if not node.users:
                dead.append(node.name)
            if dead:
                line += ";  " + " = ".join(dead + ["None"])
            body.append(line)
        if not body:
            body.append("pass")
        wrap_stmts = ""
        if self.wrapped:
            wrap = self.fn_name(_wrap_fn())
            wrap_stmts = "\n".join(f'{wrap}("{name}")' for name in self.wrapped)
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        prologue = f"def forward({', '.join(free_vars)}){ret_ann}:"
        code = "\n".join("    " + line for line in body + [""])
        return PythonCode(f"\n{wrap_stmts}\n\n{prologue}\n{code}", self.glob)


_DTYPE_ABBRS = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                "bool": "b8", "complex32": "c32", "complex64": "c64",
                "complex128": "c128"}


def _wrap_fn():
    # (ember.fx.wrap, named in the code of graphs with wrapped functions: read through the
    # package so that the import order of graph.py and _symbolic_trace.py does not matter)
    return ember.fx.wrap


def _resolve(dotted: str):
    """The object a dotted path names (``ember.nn.functional.relu``), or None."""
    head, *rest = dotted.split(".")
    obj = {"ember": ember, "torch": ember, "operator": operator, "math": math}.get(head)
    for part in rest:
        obj = getattr(obj, part, None)
    return obj


def _format_target(base: str, target: str) -> str:
    """``base.a.b`` for the path ``a.b``; parts that are not identifiers (``0``) through
    ``getattr(base, "0")``."""
    r = base
    for e in target.split("."):
        r = f'getattr({r}, "{e}")' if not e.isidentifier() else f"{r}.{e}"
    return r


def _impure(node) -> bool:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__",
                                                                       "")
    if node.op == "call_function" and node.target in _INPLACE or \
            node.target is operator.setitem:
        return True
    return node.op in ("call_function", "call_method") and target.endswith("_") and \
        not target.endswith("__")
