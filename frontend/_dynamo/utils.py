"""``ember._dynamo.utils`` (PyTorch's ``torch._dynamo.utils``): the counters tests and
debugging read.

``counters`` is a ``defaultdict`` of ``collections.Counter``, as PyTorch's. ember fills
``counters["stats"]["unique_graphs"]`` (graphs compiled: a new structure, a recompile, the
part after a graph break), ``counters["stats"]["calls_captured"]`` (the
ops in those graphs) and ``counters["graph_break"][reason]`` (the graph breaks met while
compiling, by the reason ember gives: as in PyTorch, a call that reuses the graph before a
break does not count it again). The other categories PyTorch fills
(``frames``, ``resumes``, ``inductor``...) describe TorchDynamo's bytecode machinery and
stay empty. ``counters.clear()`` starts the count again.
"""
from __future__ import annotations

from .._compile import COUNTERS as counters

__all__ = ["counters"]
