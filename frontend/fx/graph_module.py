"""``ember.fx.GraphModule``: a Module whose ``forward`` is generated from a Graph, and
``ember.fx.Interpreter``, which runs a graph node by node."""
from __future__ import annotations

import linecache

from ..nn.modules.module import Module
from .graph import Graph, map_arg

__all__ = ["GraphModule", "Interpreter"]

_COUNT = [0]


def _attr(obj, qualified: str):
    for part in qualified.split("."):
        obj = getattr(obj, part)
    return obj


def _set_attr(module, qualified: str, value):
    *path, last = qualified.split(".")
    for part in path:
        if not hasattr(module, part):
            module.add_module(part, Module())
        module = getattr(module, part)
    setattr(module, last, value)


class GraphModule(Module):
    """A Module running ``graph``: its ``forward`` is the graph's generated code
    (:attr:`code`). ``root`` (a Module, or a dict of name to value) provides what the
    graph's ``get_attr`` and ``call_module`` nodes name; they are copied onto this module
    under the same qualified names."""

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__ = type(class_name, (GraphModule,), {})
        for node in graph.nodes:
            if node.op in ("get_attr", "call_module"):
                value = root[node.target] if isinstance(root, dict) else \
                    _attr(root, node.target)
                _set_attr(self, node.target, value)
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph):
        self._graph = g
        self.recompile()

    @property
    def code(self) -> str:
        """The source of ``forward``, generated from the graph."""
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from the graph (after editing it)."""
        src, glob = self._graph.python_code("self")
        _COUNT[0] += 1
        filename = f"<eval_with_key>.{_COUNT[0]}"
        # (registered with linecache so that tracebacks show the generated line)
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), glob)  # noqa: S102 - source generated above
        self._code = src
        type(self).forward = glob["forward"]
        return src

    def print_readable(self, print_output: bool = True) -> str:
        text = f"class {type(self).__name__}(ember.nn.Module):\n" + "".join(
            "    " + line + "\n" for line in self._code.splitlines())
        if print_output:
            print(text)
        return text

    def __str__(self):
        return super().__str__() + "\n\n\n\n" + self._code


class Interpreter:
    """Runs a GraphModule's graph one node at a time. Subclasses override
    :meth:`run_node` or the per-op methods (``call_function``, ...) to observe or change
    what each node does."""

    def __init__(self, module: GraphModule, garbage_collect_values: bool = True):
        self.module = module
        self.garbage_collect_values = garbage_collect_values
        self.env: dict = {}

    def run(self, *args, initial_env=None):
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        nodes = self.module.graph.nodes
        last_use = {}
        for node in nodes:
            for n in node.all_input_nodes:
                last_use[n] = node
        for node in nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for n in node.all_input_nodes:
                    if last_use.get(n) is node:
                        del self.env[n]
            if node.op == "output":
                return self.env[node]
        return None

    def fetch_args_kwargs_from_env(self, node):
        load = self.env.__getitem__
        return map_arg(node.args, load), map_arg(node.kwargs, load)

    def run_node(self, node):
        """Run one node: fetch its arguments' values from ``self.env`` and call the method
        named by its ``op`` (``call_function``, ``placeholder``, ...)."""
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        return getattr(self, node.op)(node.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        try:
            return next(self.args_iter)
        except StopIteration:
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               "one was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return _attr(self.module, target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return _attr(self.module, target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]
