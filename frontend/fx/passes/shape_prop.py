"""``ember.fx.passes.shape_prop``: run a GraphModule on example inputs and record each
node's result shape, dtype and strides in ``node.meta["tensor_meta"]`` (PyTorch's
``torch.fx.passes.shape_prop``)."""
from __future__ import annotations

from typing import Any, NamedTuple

import ember

from ..graph import map_aggregate
from ..interpreter import Interpreter

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What :class:`ShapeProp` records about a tensor result."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result) -> TensorMetadata:
    memory_format = None
    for fmt in (ember.contiguous_format, ember.channels_last,
                getattr(ember, "channels_last_3d", None)):
        if fmt is None:
            continue
        try:
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
        except (RuntimeError, ValueError):     # (channels_last needs 4 dimensions)
            continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad,
                          tuple(result.stride()), memory_format, False, {})


class ShapeProp(Interpreter):
    """Execute a graph node by node and record the shape and type of each result in
    ``node.meta["tensor_meta"]`` (a :class:`TensorMetadata`, or a structure of them) and
    ``node.meta["type"]``.

    Example::

        gm = ember.fx.symbolic_trace(model)
        ShapeProp(gm).propagate(ember.randn(50, 1000))
        for node in gm.graph.nodes:
            print(node.name, node.meta["tensor_meta"].dtype, node.meta["tensor_meta"].shape)
    """

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = None
        self.fake_module = None
        self.real_module = self.module

    def run_node(self, n):
        try:
            result = super().run_node(n)
        except Exception as e:
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with "
                               f"meta={n.meta}") from e
        found = [False]

        def extract(obj):
            if isinstance(obj, ember.Tensor):
                found[0] = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found[0]:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the graph on ``args`` (example inputs), recording metadata; returns the
        result."""
        return super().run(*args)
