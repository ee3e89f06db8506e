"""``ember.fx``: PyTorch's ``torch.fx`` on ember. :func:`symbolic_trace` runs a Module's
forward (or a function) on :class:`Proxy` values and records what it does as a
:class:`Graph` of :class:`Node`; :class:`GraphModule` is a Module whose forward is
generated from a graph; :class:`Interpreter` runs a graph node by node and
:class:`Transformer` rewrites one. The same graphs are ``ember.compile``'s IR
(docs/compile.md).

Example::

    gm = ember.fx.symbolic_trace(model)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is ember.relu:
            node.target = ember.sigmoid
    gm.recompile()
"""
from . import node, passes, subgraph_rewriter
from ._symbolic_trace import PH, Tracer, is_fx_tracing, symbolic_trace, wrap
from .graph import Graph, Node, map_aggregate, map_arg
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .proxy import Attribute, ParameterProxy, Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = ["Graph", "Node", "GraphModule", "Interpreter", "Transformer", "Proxy",
           "Attribute", "ParameterProxy", "TraceError", "Tracer", "symbolic_trace", "wrap",
           "PH", "is_fx_tracing", "map_arg", "map_aggregate", "replace_pattern", "passes",
           "subgraph_rewriter", "node"]
