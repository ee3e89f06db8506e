"""``ember.fx``: the graph IR of ``ember.compile`` (docs/compile.md), PyTorch's
``torch.fx`` core: :class:`Graph` and :class:`Node`, :class:`GraphModule` (a Module whose
forward is generated from a graph) and :class:`Interpreter`. Graph capture
(``symbolic_trace``, ``ember.compile``) is not built yet."""
from .graph import Graph, Node, map_arg
from .graph_module import GraphModule, Interpreter

__all__ = ["Graph", "Node", "GraphModule", "Interpreter", "map_arg"]


def symbolic_trace(root, concrete_args=None):
    """Not implemented yet: ember's capture is lazy (docs/compile.md), not symbolic."""
    raise NotImplementedError("ember.fx.symbolic_trace is not implemented yet: ember's graph "
                              "capture is being built as lazy capture (docs/compile.md); "
                              "build graphs with ember.fx.Graph for now")
