"""``ember.fx.Interpreter``, which runs a graph node by node, and ``ember.fx.Transformer``,
which runs it on proxies to build a new graph (PyTorch's ``torch.fx.interpreter``)."""
from __future__ import annotations

import inspect

from ._symbolic_trace import Tracer
from .graph import Graph, map_aggregate, map_arg
from .graph_module import GraphModule
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class _TransformerTracer(Tracer):
    """The tracer of a Transformer: appends to its new graph; every module is a leaf."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.tensor_attrs: dict = {}

    def is_leaf_module(self, m, module_qualified_name) -> bool:
        return True


class Interpreter:
    """Runs a module's graph one node at a time (``torch.fx.Interpreter``). Subclasses
    override :meth:`run_node` or the per-op methods (:meth:`call_function`,
    :meth:`call_module`, ...) to observe or change what each node does.

    Example::

        class Trace(ember.fx.Interpreter):
            def call_function(self, target, args, kwargs):
                print("calling", target)
                return super().call_function(target, args, kwargs)

        Trace(ember.fx.symbolic_trace(model)).run(x)
    """

    def __init__(self, module, garbage_collect_values: bool = True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            # each value is dropped after the node that reads it last
            seen = set()
            self.user_to_last_uses: dict = {}
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None, enable_io_processing: bool = True):
        """Run the graph on ``args``; returns what its output node returns.
        ``initial_env`` maps nodes to values known in advance (they are not run)."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    self.env.pop(to_delete, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        """:meth:`run` on the items of ``args_list``, which is emptied first."""
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Run one node: fetch its arguments' values from ``self.env`` and call the method
        named by its ``op`` (``call_function``, ``placeholder``, ...)."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        """The next positional argument of :meth:`run` (all the rest for ``*args``), or the
        parameter's default."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               "one was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        """The module's attribute at the dotted path ``target``."""
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        """``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        """The submodule at ``target`` called on ``args``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        """The value the graph returns."""
        return args[0]

    def fetch_attr(self, target: str):
        """The attribute at the dotted path ``target`` of the module."""
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n):
        """``n``'s args and kwargs with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        """``args`` with each node replaced by its value in ``self.env``."""
        def load_arg(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class Transformer(Interpreter):
    """An :class:`Interpreter` that runs the graph on proxies and so builds a new one:
    override ``call_function`` (etc.) to emit something else, then :meth:`transform`.

    Example::

        class NegToSigmoid(ember.fx.Transformer):
            def call_function(self, target, args, kwargs):
                if target is ember.neg:
                    target = ember.sigmoid
                return super().call_function(target, args, kwargs)

        new_gm = NegToSigmoid(gm).transform()
    """

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        """A placeholder of the new graph (its Proxy)."""
        default = next(iter(args)) if args else inspect.Parameter.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        """A ``get_attr`` node of the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        """A ``call_module`` node of the new graph."""
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        """A ``call_function`` node of the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation: the new GraphModule."""
        # (ember's functions are not patched here: overrides compare targets with them,
        # ``target is ember.sin``; operators and methods on proxies record by themselves)
        result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(
                result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph)
