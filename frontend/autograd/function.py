"""``ember.autograd.Function``: user-defined ops with a hand-written backward.

>>> class Square(ember.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         return 2 * x * g
>>> x = ember.tensor([1., 2., 3.], requires_grad=True)
>>> y = Square.apply(x)
>>> y.sum().backward()
>>> x.grad
tensor([2., 4., 6.])
"""
from __future__ import annotations

from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase

from ._engine import _FREED, MODE, Node, SavedTensor, Slot, _edge, no_grad
from .anomaly_mode import ANOMALY, forward_trace


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    def __init__(self):
        self._saved = ()
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self._node = None
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._saved = tuple(SavedTensor(t) if isinstance(t, TensorBase) else t
                            for t in tensors)

    @property
    def saved_tensors(self):
        if self._node is not None and self._node._freed:
            raise RuntimeError(_FREED)
        return tuple(s.unpack(self._node) if isinstance(s, SavedTensor) else s
                     for s in self._saved)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)


class _FunctionNode(Node):
    __slots__ = ()


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function subclasses are used through .apply(), not instantiated")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, TensorBase) and a.requires_grad
                                     for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not MODE.grad or not any(ctx.needs_input_grad):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        edges = tuple(_edge(a) if isinstance(a, TensorBase) else None for a in args)
        node_cls = type(f"{cls.__name__}Backward", (_FunctionNode,), {"__slots__": ()})
        differentiable = [i for i, o in enumerate(outs)
                          if isinstance(o, TensorBase) and id(o) not in ctx._non_differentiable
                          and o.dtype.is_floating_point]

        def vjp(g, saved, c, shapes):
            grads_out = g if isinstance(g, list) else [g]
            if len(outs) > 1 or isinstance(g, list):
                grads_out = [gi if gi is not None or not ctx.materialize_grads
                             else _zeros_like(o) for gi, o in zip(grads_out, outs)]
            grads = cls.backward(ctx, *grads_out)
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                   f"number of gradients (expected {len(args)}, got "
                                   f"{len(grads)})")
            return grads

        node = node_cls(vjp, edges, (), {"_function": ctx},
                        tuple(getattr(a, "shape", None) for a in args))
        ctx._node = node
        if ANOMALY.enabled:
            node._ctx["anomaly_trace"] = forward_trace()
        if len(outs) == 1:
            if differentiable:
                outs[0].requires_grad = True
                outs[0].grad_fn = node
            return out
        # several outputs: each gets a small node routing its gradient into a slot of
        # the shared backward node, which calls backward() once with all of them
        n = len(outs)
        for i in differentiable:
            outs[i].requires_grad = True
            outs[i].grad_fn = _output_node(cls, node, i, n)
        return out


def _zeros_like(o):
    return O.zeros(o.shape, o.dtype, o.device) if isinstance(o, TensorBase) else None


def _output_node(cls, hub, i, n):
    def route(g, saved, c, shapes):
        return (Slot(i, n, g),)
    node_cls = type(f"{cls.__name__}Backward", (_FunctionNode,), {"__slots__": ()})
    return node_cls(route, (hub,), (), {}, (None,))
