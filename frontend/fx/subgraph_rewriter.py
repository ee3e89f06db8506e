"""``ember.fx.subgraph_rewriter``: find every occurrence of a pattern in a GraphModule's graph
and replace it (PyTorch's ``torch.fx.subgraph_rewriter.replace_pattern``)."""
from __future__ import annotations

from typing import NamedTuple

from ..nn.modules.module import Module
from ._symbolic_trace import symbolic_trace
from .graph import Graph, Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: ``anchor`` (the pattern's node the match was searched from,
    its first returned node, as in PyTorch) and ``nodes_map`` (pattern node -> graph
    node; ``nodes_map[anchor]`` is where it matched)."""

    anchor: Node
    nodes_map: dict


def _graph_of(p) -> Graph:
    if isinstance(p, Graph):
        return p
    return symbolic_trace(p).graph


def _returned(graph: Graph) -> list:
    out = [n for n in graph.nodes if n.op == "output"]
    if not out:
        raise ValueError("replace_pattern: the pattern graph has no output node")
    value = out[0].args[0]
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    if not all(isinstance(v, Node) for v in items):
        raise ValueError("replace_pattern: the pattern must return nodes")
    return items


class _Matcher:
    def __init__(self, pattern: Graph):
        self.pattern = pattern
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        self.returns = _returned(pattern)

    def match_at(self, anchor: Node):
        """The node map of the pattern matched with its (first) returned node at
        ``anchor``, or None."""
        nodes_map: dict = {}
        if not self._match(self.returns[0], anchor, nodes_map):
            return None
        for extra in self.returns[1:]:
            if extra not in nodes_map:
                return None
        return nodes_map

    def _match(self, pn: Node, gn, nodes_map: dict) -> bool:
        if pn in nodes_map:
            return nodes_map[pn] is gn
        if pn.op == "placeholder":
            if gn in nodes_map.values():
                return False
            nodes_map[pn] = gn
            return True
        if not isinstance(gn, Node) or pn.op != gn.op or pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        nodes_map[pn] = gn
        ok = all(self._match_arg(a, b, nodes_map) for a, b in zip(pn.args, gn.args)) and \
            all(self._match_arg(pn.kwargs[k], gn.kwargs[k], nodes_map) for k in pn.kwargs)
        if not ok:
            del nodes_map[pn]
        return ok

    def _match_arg(self, pa, ga, nodes_map) -> bool:
        if isinstance(pa, Node):
            return self._match(pa, ga, nodes_map)
        if isinstance(pa, (tuple, list)):
            return isinstance(ga, (tuple, list)) and len(pa) == len(ga) and \
                all(self._match_arg(a, b, nodes_map) for a, b in zip(pa, ga))
        if isinstance(ga, Node):
            return False
        return type(pa) is type(ga) and pa == ga


def replace_pattern(gm, pattern, replacement) -> list:
    """Replace each occurrence of ``pattern`` (a function or Module, traced; or a Graph)
    in ``gm``'s graph by ``replacement`` (its placeholders take the matched inputs in
    order), then recompile ``gm``. Returns the list of ``Match`` tuples.

    Example::

        def pattern(x, w):
            return ember.relu(ember.mm(x, w))

        def replacement(x, w):
            return ember.clamp(ember.mm(x, w), min=0)

        replace_pattern(gm, pattern, replacement)
    """
    graph = gm.graph
    matcher = _Matcher(_graph_of(pattern))
    replacement_graph = _graph_of(replacement)
    internal = [n for n in matcher.pattern.nodes
                if n.op not in ("placeholder", "output")]
    taken: set = set()
    matches = []
    for node in graph.nodes:
        if node in taken or node.op in ("placeholder", "output"):
            continue
        nodes_map = matcher.match_at(node)
        if nodes_map is None:
            continue
        inner = {nodes_map[n] for n in internal}
        if inner & taken:
            continue
        returned = {nodes_map[n] for n in matcher.returns}
        # an inner node read outside the match cannot go
        if any(u not in inner for n in inner - returned for u in n.users):
            continue
        taken |= inner
        matches.append(Match(anchor=matcher.returns[0], nodes_map=nodes_map))

    rep_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    changed: dict = {}      # a replaced returned node -> its replacement
    for match in matches:
        nodes_map = match.nodes_map
        val_map = {}
        for rn, pn in zip(rep_inputs, matcher.placeholders):
            gn = nodes_map[pn]
            val_map[rn] = changed.get(gn, gn)
            nodes_map[pn] = val_map[rn]
        returned = [nodes_map[n] for n in matcher.returns]
        # (PyTorch's insertion point: before the first user of what the match returns, or
        # just after the last returned node)
        users = {u for n in returned for u in n.users}
        insert_point = next((n for n in graph.nodes if n in users), None)
        if insert_point is None:
            after = [n for n in graph.nodes]
            last = max(after.index(n) for n in returned)
            insert_point = after[last + 1]
        with graph.inserting_before(insert_point):
            out = graph.graph_copy(replacement_graph, val_map)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for gn, new in zip(returned, outs):
            gn.replace_all_uses_with(new)
            changed[gn] = new
        for pn in reversed(matcher.pattern.nodes):
            if pn.op in ("placeholder", "output"):
                continue
            gn = nodes_map[pn]
            if not gn.users and gn in graph._nodes:
                graph.erase_node(gn)
    if isinstance(gm, Module) and hasattr(gm, "recompile"):
        gm.recompile()
    return matches
