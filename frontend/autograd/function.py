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

import functools

from ember.dispatcher import dtypes
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

    def __repr__(self):
        # PyTorch's custom-Function nodes are Python classes of torch.autograd.function
        return (f"<{dtypes.module_name}.autograd.function.{type(self).__name__} object at "
                f"{id(self):#x}>")


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
                          and o.dtype._kind >= 2]

        def vjp(g, saved, c, shapes):
            grads_out = g if isinstance(g, list) else [g]
            if len(outs) > 1 or isinstance(g, list):
                grads_out = [gi if gi is not None or not ctx.materialize_grads
                             else _zeros_like(o) for gi, o in zip(grads_out, outs)]
            grads = cls.backward(ctx, *grads_out)
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) > len(args) and all(g is None for g in grads[len(args):]):
                grads = grads[:len(args)]   # (PyTorch drops trailing Nones past the inputs)
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


class _DelayedError(Function):
    """The gradient of a ``@once_differentiable`` backward's results: differentiating them
    (a second backward pass) raises."""

    @staticmethod
    def forward(ctx, *grads):
        out = tuple(g.detach() if isinstance(g, TensorBase) else g for g in grads)
        return out if len(out) > 1 else out[0]

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn):
    """Mark a custom Function's ``backward`` as not differentiable itself: it runs without
    recording, and when a graph of the backward pass is being built (``create_graph=True``)
    the gradients it returns raise on a second backward pass, as PyTorch's.

    Example:
        >>> from ember.autograd.function import once_differentiable
        >>> class Cube(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...     @staticmethod
        ...     @once_differentiable
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 3 * x ** 2 * g
        >>> x = ember.tensor([2.], requires_grad=True)
        >>> Cube.apply(x).backward()
        >>> x.grad
        tensor([12.])
    """
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not MODE.grad or not any(isinstance(a, TensorBase) and a.requires_grad
                                    for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        # detached copies that require grad give the error node an input to hang from
        fakes = [o.detach().requires_grad_() if isinstance(o, TensorBase)
                 and o.dtype.is_floating_point else o for o in outs]
        return _DelayedError.apply(*fakes)
    return wrapper


def _zeros_like(o):
    return O.zeros(o.shape, o.dtype, o.device) if isinstance(o, TensorBase) else None


def _output_node(cls, hub, i, n):
    def route(g, saved, c, shapes):
        return (Slot(i, n, g),)
    node_cls = type(f"{cls.__name__}Backward", (_FunctionNode,), {"__slots__": ()})
    return node_cls(route, (hub,), (), {}, (None,))
