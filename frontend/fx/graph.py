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
import keyword
import operator
import re

import ember  # (read at call time: ember's namespace names the functions in the code)

__all__ = ["Graph", "Node", "map_arg"]

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")

# binary and unary operators the generated code writes as expressions, as torch.fx does
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
           operator.matmul: "@", operator.lt: "<", operator.le: "<=", operator.gt: ">",
           operator.ge: ">=", operator.eq: "==", operator.ne: "!=", operator.and_: "&",
           operator.or_: "|", operator.xor: "^"}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


def map_arg(a, fn):
    """``a`` with every Node in it (nested in tuples, lists, dicts, slices) replaced by
    ``fn(node)``."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        return tuple(map_arg(x, fn) for x in a)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


def _nodes_in(a) -> list:
    found = []
    map_arg(a, found.append)
    return found


class Node:
    """One operation of a :class:`Graph`. ``users`` are the nodes that take its value."""

    def __init__(self, graph, name, op, target, args, kwargs):
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
        head = f"%{self.name} : [num_users={len(self.users)}] = "
        if self.op == "placeholder":
            return head + f"placeholder[target={self.target}]"
        if self.op == "get_attr":
            return head + f"get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]!r}"
        target = _qualified(self.target) if self.op == "call_function" else self.target
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
    return repr(a)


def _qualified(fn) -> str:
    """How the printed graph and the generated code name a function: ``ember.add``,
    ``operator.mul``, or its module path."""
    name = getattr(fn, "__name__", None)
    if name is not None and getattr(ember, name, None) is fn:
        return f"ember.{name}"
    if name is not None and getattr(operator, name, None) is fn:
        return f"operator.{name}"
    if name is not None and getattr(builtins, name, None) is fn:
        return name
    module = getattr(fn, "__module__", None) or ""
    module = re.sub(r"^frontend\b", "ember", module)
    return f"{module}.{getattr(fn, '__qualname__', name)}" if module else repr(fn)


def _base_name(target) -> str:
    if isinstance(target, str):
        name = target.split(".")[-1]
    else:
        name = getattr(target, "__name__", "node")
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", name).strip("_") or "node"
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    if name[0].isdigit():
        name = "_" + name
    return name


class Graph:
    """An ordered list of :class:`Node`; the last is the ``output`` node (when present)."""

    def __init__(self):
        self._nodes: list = []
        self._names: dict = {}          # base name -> next suffix
        self._used: set = set()
        self._insert = None             # (node, after: bool) or None: the end

    @property
    def nodes(self) -> list:
        """The nodes in program order (a copy: the graph may change while it is walked)."""
        return list(self._nodes)

    def __len__(self):
        return len(self._nodes)

    # ---- naming -----------------------------------------------------------------------
    def _unique(self, candidate: str) -> str:
        """``candidate``, or ``candidate_1``, ``_2``, ... where it is taken or would shadow a
        keyword, a builtin or a name the generated code uses (PyTorch's naming)."""
        base = candidate
        name = base
        reserved = keyword.iskeyword(base) or hasattr(builtins, base) or base in (
            "self", "ember", "operator")
        while reserved or name in self._used:
            reserved = False
            k = self._names.get(base, 0) + 1
            self._names[base] = k
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    # ---- building ---------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """A new node at the insertion point (the end unless :meth:`inserting_before` or
        :meth:`inserting_after` says otherwise)."""
        if op != "output" and any(n.op == "output" for n in self._nodes) and \
                self._insert is None:
            raise RuntimeError("Graph.create_node: the graph already has its output node; "
                               "insert before it with graph.inserting_before(output)")
        node = Node(self, self._unique(name or _base_name(target)), op, target,
                    args or (), kwargs or {})
        node.type = type_expr
        if self._insert is None:
            self._nodes.append(node)
        else:
            anchor, after = self._insert
            i = self._nodes.index(anchor) + (1 if after else 0)
            self._nodes.insert(i, node)
            if after:
                self._insert = (node, True)
        return node

    def placeholder(self, name, type_expr=None):
        return self.create_node("placeholder", name, name=name, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        if any(n.op == "output" for n in self._nodes):
            raise RuntimeError("Graph.output: the graph already has an output node")
        node = Node(self, "output", "output", "output", (result,), {})
        node.type = type_expr
        self._nodes.append(node)
        return node

    @contextlib.contextmanager
    def inserting_before(self, node):
        """A context in which :meth:`create_node` (and the ``call_*`` helpers) insert new
        nodes just before ``node``."""
        prev, self._insert = self._insert, (node, False)
        try:
            yield
        finally:
            self._insert = prev

    @contextlib.contextmanager
    def inserting_after(self, node):
        """A context in which :meth:`create_node` (and the ``call_*`` helpers) insert new
        nodes just after ``node``; each insertion moves the point after the new node."""
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
        if node.op == "output":
            return self.output(args[0])
        new = self.create_node(node.op, node.target, args, kwargs, name=node.name)
        new.meta = dict(node.meta)
        return new

    # ---- editing ----------------------------------------------------------------------
    def erase_node(self, to_erase):
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase.name} but it still had "
                               f"{len(to_erase.users)} users in the graph: "
                               f"{dict(to_erase.users)}!")
        to_erase._set((), {})
        self._nodes.remove(to_erase)
        self._used.discard(to_erase.name)

    def eliminate_dead_code(self) -> bool:
        """Erase the call nodes nobody reads (in reverse order); True if any went. Nodes of
        ops that write their inputs (names ending in ``_``) are kept."""
        changed = False
        for node in reversed(self._nodes):
            if node.op in ("call_function", "call_method", "call_module", "get_attr") and \
                    not node.users and not _impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check that every node reads only earlier nodes of this graph, names are unique
        and the output, if any, is last."""
        seen, names = set(), set()
        for i, node in enumerate(self._nodes):
            if node.graph is not self:
                raise RuntimeError(f"Node {node.name} does not belong to this graph")
            if node.name in names:
                raise RuntimeError(f"Node name {node.name} is used twice")
            names.add(node.name)
            for n in node.all_input_nodes:
                if n not in seen:
                    raise RuntimeError(f"Argument {n.name} of Node {node.name} is used "
                                       "before it is defined")
            if node.op == "output" and i != len(self._nodes) - 1:
                raise RuntimeError("The output node is not the last node")
            seen.add(node)

    # ---- printing and code ------------------------------------------------------------
    def __str__(self):
        lines = ["graph():"] + ["    " + n.format_node() for n in self._nodes]
        return "\n".join(lines)

    def python_code(self, root_module: str = "self"):
        """The graph as the source of ``def forward(self, ...)`` and the globals it needs:
        ``(src, globals)``. Each value is released (``x = None``) after its last use, so
        intermediate tensors are freed as soon as they are dead, as in eager code."""
        glob = {"ember": ember, "operator": operator}
        params = [n.name for n in self._nodes if n.op == "placeholder"]
        last_use: dict = {}
        for node in self._nodes:
            for n in node.all_input_nodes:
                last_use[n] = node
        dies_at: dict = {}
        for n, user in last_use.items():
            dies_at.setdefault(user, []).append(n.name)
        body = []

        def arg(a):
            return _src(a, glob)

        for node in self._nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                body.append(f"return {arg(node.args[0])}")
                continue
            if node.op == "get_attr":
                expr = f"{root_module}.{node.target}"
            elif node.op == "call_module":
                expr = f"{root_module}.{node.target}({_call_args(node, glob)})"
            elif node.op == "call_method":
                self_arg, *rest = node.args
                expr = f"{arg(self_arg)}.{node.target}({_call_args(node, glob, rest)})"
            else:
                expr = _call_expr(node, glob)
            line = f"{node.name} = {expr}"
            dead = [n for n in dies_at.get(node, []) if n != node.name]
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not body or not body[-1].startswith("return"):
            body.append("return None")
        src = f"def forward(self{''.join(', ' + p for p in params)}):\n" + \
            "".join(f"    {line}\n" for line in body)
        return src, glob


def _impure(node) -> bool:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__",
                                                                       "")
    return node.op in ("call_function", "call_method") and target.endswith("_") and \
        not target.endswith("__")


def _src(a, glob) -> str:
    """An argument as Python source."""
    if isinstance(a, Node):
        return a.name
    if isinstance(a, tuple):
        inner = ", ".join(_src(x, glob) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_src(x, glob) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_src(v, glob)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_src(a.start, glob)}, {_src(a.stop, glob)}, {_src(a.step, glob)})"
    if a is None or isinstance(a, (bool, int, str)) or (isinstance(a, float) and a == a
                                                         and a not in (float("inf"),
                                                                       -float("inf"))):
        return repr(a)
    # anything else (dtypes, devices, inf, NaN, tensors): a global of the generated code
    key = f"_const_{len(glob)}"
    glob[key] = a
    return key


def _call_args(node, glob, args=None) -> str:
    parts = [_src(a, glob) for a in (node.args if args is None else args)]
    parts += [f"{k} = {_src(v, glob)}" for k, v in node.kwargs.items()]
    return ", ".join(parts)


def _call_expr(node, glob) -> str:
    fn = node.target
    if fn in _BINARY and len(node.args) == 2 and not node.kwargs:
        return f"{_src(node.args[0], glob)} {_BINARY[fn]} {_src(node.args[1], glob)}"
    if fn in _UNARY and len(node.args) == 1 and not node.kwargs:
        return f"{_UNARY[fn]}{_src(node.args[0], glob)}"
    if fn is operator.getitem and len(node.args) == 2 and not node.kwargs:
        return f"{_src(node.args[0], glob)}[{_src(node.args[1], glob)}]"
    name = _qualified(fn)
    # (ember.x, operator.x and builtins resolve in the code's globals; anything else becomes
    # a global of its own)
    if not (getattr(builtins, name, None) is fn
            or (name.count(".") == 1 and name.startswith(("ember.", "operator.")))):
        name = f"_fn_{_base_name(fn)}_{len(glob)}"
        glob[name] = fn
    return f"{name}({_call_args(node, glob)})"
