"""``ember.fx.node``: where PyTorch's ``torch.fx.node`` names live (:class:`Node`,
:func:`map_arg`, :func:`map_aggregate` and the ``Argument`` / ``Target`` type aliases), so
that ``from torch.fx.node import map_arg`` finds them. They are defined in
``ember.fx.graph``.

Example::

    from ember.fx.node import map_arg
    proxy_args = map_arg(node.args, ember.fx.Proxy)   # every Node of the args as a Proxy
"""
from __future__ import annotations

from typing import Any, Callable, Union

from .graph import Node, map_aggregate, map_arg

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

#: what a node's args hold: nodes, constants and containers of them
Argument = Any
#: what a node runs: a callable (``call_function``) or a name (module, method, attribute)
Target = Union[Callable[..., Any], str]
