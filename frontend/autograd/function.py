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
>>> y = Square.apply(x)
"""
from __future__ import annotations

from ember.dispatcher._core import TensorBase

from ._engine import MODE, Node, SavedTensor, _edge, no_grad


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
            from ._engine import _FREED
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

        def vjp(g, saved, c, shapes):
            grads = cls.backward(ctx, g)
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect "
                                   f"number of gradients (expected {len(args)}, got "
                                   f"{len(grads)})")
            return grads

        node = node_cls(vjp, edges, (), {}, tuple(getattr(a, "shape", None) for a in args))
        ctx._node = node
        for o in outs:
            if isinstance(o, TensorBase) and id(o) not in ctx._non_differentiable \
                    and o.dtype.is_floating_point:
                o.requires_grad = True
                o.grad_fn = node
                break  # one differentiable output per node (ember's graph invariant)
        return out
