"""``ember.autograd.Function``: user-defined ops with a hand-written backward.

Two ways to write one, as in PyTorch 2. With ``ctx`` in ``forward``::

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
    >>> Square.apply(x).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])

or with a ``forward`` that takes only the inputs, and a ``setup_context(ctx, inputs,
output)`` that fills ``ctx`` (saving tensors, marking outputs) after it ran.

A Function with several outputs gives them one node (``grad_fn``) and numbers them with
``output_nr``; its ``backward`` receives one gradient per output (zeros for the unused
ones, or None after ``ctx.set_materialize_grads(False)``). Forward-mode AD
(``ember.autograd.forward_ad``) goes through the Function's ``jvp``.
"""
from __future__ import annotations

import functools
import inspect
from weakref import WeakKeyDictionary, ref as _weakref

from ember.dispatcher import dtypes
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase
from ember.dispatcher.grad_mode import below_autograd

from . import forward_ad
from ._engine import _FREED, MODE, Node, OutputEdge, SavedTensor, _edge, enable_grad
from ._record import _propagate_to_base
from .._vmap import TRANSFORMS
from .anomaly_mode import ANOMALY, forward_trace
from ember.dispatcher.warn import warn as _warn

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "NestedIOFunction",
           "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` (or ``setup_context``), ``backward`` and ``jvp``:
    what ``forward`` leaves for the derivatives (saved tensors, marked outputs, any
    attribute set on it).

    Example:
        >>> class Double(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.scale = 2
        ...         return x * 2
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * ctx.scale
        >>> Double.apply(ember.ones(2, requires_grad=True)).sum().backward()
    """

    def __init__(self):
        self._saved = ()
        self._saved_forward = None
        self._in_jvp = False
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self._dirty = ()
        self._node_ref = None
        self._freed = False     # (set when a backward pass released the saved tensors)
        self.materialize_grads = True

    @property
    def _node(self):
        # (a weak reference: the node holds its ctx, and no cycle keeps them alive)
        return self._node_ref() if self._node_ref is not None else None

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (or None) for ``backward``, which reads them back from
        ``ctx.saved_tensors`` (an in-place change made to one in between raises there)."""
        self._saved = tuple(SavedTensor(t) if isinstance(t, TensorBase) else t
                            for t in tensors)

    def save_for_forward(self, *tensors):
        """Keep ``tensors`` for ``jvp``: inside ``jvp``, ``ctx.saved_tensors`` gives them."""
        if not all(t is None or isinstance(t, TensorBase) for t in tensors):
            # (PyTorch's check is an assert)
            raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                 "should save non-tensors as attributes on ctx.")
        self._saved_forward = tuple(tensors)

    @property
    def saved_tensors(self):
        """What ``save_for_backward`` kept (``save_for_forward``'s tensors inside ``jvp``);
        raises after a backward pass freed them (without ``retain_graph=True``)."""
        if self._in_jvp and self._saved_forward is not None:
            return self._saved_forward
        if self._freed:
            raise RuntimeError(_FREED)
        node = self._node
        return tuple(s.unpack(node) if isinstance(s, SavedTensor) else s
                     for s in self._saved)

    def mark_non_differentiable(self, *tensors):
        """These outputs get no gradient: they do not require grad, and ``backward``
        receives zeros (or None) for them."""
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        """``forward`` changed these inputs in place (and returns them): they become
        outputs of this Function, their history rebased onto its node."""
        self._dirty = tuple(tensors)

    def set_materialize_grads(self, value: bool):
        """With False, ``backward`` receives None (not zeros) for outputs that got no
        gradient."""
        self.materialize_grads = bool(value)


class _FunctionNode(Node):
    """A custom Function's node; attributes it lacks are read from its ``ctx``
    (``grad_fn.saved_tensors``, ``grad_fn.needs_input_grad``), as PyTorch's node is its
    ctx."""
    __slots__ = ()

    def __repr__(self):
        # PyTorch's custom-Function nodes are Python classes of torch.autograd.function
        return (f"<{dtypes.module_name}.autograd.function.{type(self).__name__} object at "
                f"{id(self):#x}>")

    def __getattr__(self, attr):
        if not attr.startswith("__"):
            try:
                fctx = Node._ctx.__get__(self).get("_function")
            except AttributeError:
                fctx = None
            if fctx is not None and hasattr(fctx, attr):
                return getattr(fctx, attr)
        return Node.__getattr__(self, attr)

    def _output_edge(self, t):
        """The edge into the output ``t`` is (one node, several outputs): made when first
        asked for, and kept while the graph (or a tensor) refers to it, not by this node
        (no reference cycle); its tensor hooks live here, so a new edge finds them."""
        i = self._output_nr(t)
        edges = self._ctx["_edges"]
        edge = edges[i]() if edges[i] is not None else None
        if edge is None:
            edge = OutputEdge(self, i, len(edges))
            edge._pre_hooks = self._ctx["_hooks"][i]
            edges[i] = _weakref(edge)
        return edge

    def _output_nr(self, t) -> int:
        refs = self._ctx.get("_outputs")
        if refs is None:
            return 0
        for i, r in enumerate(refs):
            if r is not None and r() is t:
                return i
        # an alias of an output (a subclass view through as_subclass, a saved copy)
        pairs = [(r() if r is not None else None, i) for i, r in enumerate(refs)]
        for o, i in pairs + self._ctx.get("_saved_outputs", []):
            if o is not None and o._storage is t._storage and o._offset == t._offset \
                    and o.shape == t.shape and o._stride == t._stride:
                return i
        raise RuntimeError(f"{type(self).__name__}: a tensor with this node as grad_fn is not "
                           "one of the outputs of its custom Function (nor an alias of one), "
                           "so ember cannot tell which output's gradient it carries")


class _MultiOutputNode(_FunctionNode):
    __slots__ = ()
    _multi = True


def _node_class(cls, multi: bool):
    """The node class of Function ``cls`` (``<Name>Backward``), made once per class."""
    key = "_ember_node_classes"
    made = cls.__dict__.get(key)
    if made is None:
        name = f"{cls.__name__}Backward"
        made = tuple(type(name, (base,), {"__slots__": (), "_forward_cls": cls})
                     for base in (_FunctionNode, _MultiOutputNode))
        setattr(cls, key, made)
    return made[1 if multi else 0]


def _overrides_setup_context(cls) -> bool:
    return cls.setup_context is not Function.setup_context


#: forward -> its signature (inspect.signature costs more than a small op)
_SIGNATURES: WeakKeyDictionary = WeakKeyDictionary()


def _bind(cls, args, kwargs, with_setup):
    """The inputs of a call: positional, with keyword arguments put in ``forward``'s order
    (and, for the ``setup_context`` form, defaults filled in), as PyTorch does."""
    if not kwargs and not with_setup:
        return args, {}
    fwd = cls.forward
    sig = _SIGNATURES.get(fwd)
    if sig is None:
        sig = _SIGNATURES[fwd] = inspect.signature(fwd)
    bound = sig.bind(*args, **kwargs) if with_setup else sig.bind(None, *args, **kwargs)
    if with_setup:
        bound.apply_defaults()
        return tuple(bound.args), dict(bound.kwargs)
    return tuple(bound.args[1:]), dict(bound.kwargs)


class Function:
    """Subclass with static ``forward`` and ``backward`` (and optionally
    ``setup_context``, ``jvp``, ``vmap``), and call ``.apply(*inputs)``; see the module
    docstring.

    Example:
        >>> class Exp(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(x):
        ...         return x.exp()
        ...     @staticmethod
        ...     def setup_context(ctx, inputs, output):
        ...         ctx.save_for_backward(output)
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (y,) = ctx.saved_tensors
        ...         return g * y
        >>> x = ember.zeros(2, requires_grad=True)
        >>> Exp.apply(x).sum().backward()
        >>> x.grad
        tensor([1., 1.])
    """

    #: with ``setup_context``: ``ember.func.vmap`` may run ``forward`` per sample
    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        _warn(f"{type(self)} should not be instantiated. Methods on autograd functions are "
              "all static, so you should invoke them on the class itself. Instantiating an "
              "autograd function will raise an error in a future version of PyTorch.",
              DeprecationWarning)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` without recording, then record one node whose
        gradient is ``backward``."""
        with_setup = _overrides_setup_context(cls)
        if TRANSFORMS.active and not cls.__module__.startswith("ember."):
            _check_transformable(cls, with_setup)
        args, kwargs = _bind(cls, args, kwargs, with_setup)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, TensorBase) and a.requires_grad
                                     for a in args)
        with below_autograd():   # (not a user switch: forward_ad ignores it)
            if with_setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if not MODE.grad or not any(ctx.needs_input_grad):
            return out
        if forward_ad._STATE.duals and cls.jvp is Function.jvp \
                and not cls.__module__.startswith("ember.") \
                and forward_ad.carries_tangent(args):
            Function.jvp(ctx)   # (PyTorch's error: forward-mode AD needs jvp)
        return _attach(cls, ctx, args, out)


_TRANSFORMS_DOC = ("For more details, please see "
                   "https://pytorch.org/docs/main/notes/extending.func.html")


def _check_transformable(cls, with_setup):
    """PyTorch's rules for a Function under ``ember.func`` transforms (ember's own
    Functions, used inside its ops, are exempt). ember's ``vmap`` runs the Function once
    per sample whichever rule is given."""
    if not with_setup:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                           "(vmap, grad, jvp, jacrev, ...), it must override the "
                           f"setup_context staticmethod. {_TRANSFORMS_DOC}")
    if TRANSFORMS.vmap:
        has_rule = cls.vmap is not Function.vmap
        if has_rule and cls.generate_vmap_rule:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                               "generate_vmap_rule=True and an overridden vmap staticmethod. "
                               "Please set generate_vmap_rule=False or delete the overridden "
                               f"vmap staticmethod to avoid ambiguity. {_TRANSFORMS_DOC}")
        if not has_rule and not cls.generate_vmap_rule:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have "
                               "vmap support. Please override and implement the vmap "
                               "staticmethod or set generate_vmap_rule=True. "
                               f"{_TRANSFORMS_DOC}")


def _attach(cls, ctx, args, out):
    """Make ``out`` (forward's result) the outputs of a new node of ``cls``."""
    is_tuple = isinstance(out, tuple)
    outs = list(out) if is_tuple else [out]
    dirty = {id(t) for t in ctx._dirty}
    for t in ctx._dirty:
        if not any(o is t for o in outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were "
                               "not returned as output. The inputs that are modified inplace "
                               "must all be outputs of the Function.")
        if t.requires_grad and t.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an "
                               "in-place operation.")
        if t._base is not None and t._base.requires_grad and t._base.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
        t._vc[0] += 1   # (the history changes too: PyTorch counts it as another write)
    # (edges for the tensor inputs only, as PyTorch's next_functions)
    edges = tuple(_edge(a) for a in args if isinstance(a, TensorBase))
    differentiable = [i for i, o in enumerate(outs)
                      if isinstance(o, TensorBase) and id(o) not in ctx._non_differentiable
                      and o.dtype._kind >= 2]
    # an input returned as it is (and not marked dirty) comes back as a new view of it,
    # so the input keeps its own history (PyTorch's rule)
    for i, o in enumerate(outs):
        if isinstance(o, TensorBase) and id(o) not in dirty \
                and any(o is a for a in args):
            with below_autograd():
                outs[i] = o.view_as(o)
    n = len(outs)
    metas = tuple((tuple(o.shape), o.dtype, o.device) if isinstance(o, TensorBase) else None
                  for o in outs)
    nargs = len(args)
    tensor_args = tuple(isinstance(a, TensorBase) for a in args)
    in_metas = tuple((tuple(a.shape), a.dtype) for a in args if isinstance(a, TensorBase))

    def vjp(g, saved, c, shapes):
        grads_out = list(g) if isinstance(g, list) else [g]
        if ctx.materialize_grads:
            grads_out = [_zeros(m) if gi is None and m is not None else gi
                         for gi, m in zip(grads_out, metas)]
        if forward_ad._STATE.tangent_pass and MODE.grad:
            # forward-mode AD's first pass: the transposed node differentiates as jvp
            if cls.jvp is not Function.jvp:
                grads = _JvpTranspose.apply(cls, ctx, metas, (tensor_args, in_metas),
                                            *grads_out)
                grads = grads if isinstance(grads, tuple) else (grads,)
                return _fit_grads(cls, [g for g, is_tensor in zip(grads, tensor_args)
                                        if is_tensor], in_metas)
            if not cls.__module__.startswith("ember."):
                Function.jvp(ctx)   # (raises PyTorch's error)
            # ember's own Functions without jvp: their backward, differentiated twice
        grads = _check_grads(cls, _backward_of(cls)(ctx, *grads_out), nargs, tensor_args)
        return _fit_grads(cls, [g for g, is_tensor in zip(grads, tensor_args) if is_tensor],
                          in_metas)

    node_cls = _node_class(cls, n > 1)
    node = node_cls(vjp, edges, (), {"_function": ctx},
                    tuple(a.shape for a in args if isinstance(a, TensorBase)))
    ctx._node_ref = _weakref(node)
    if ANOMALY.enabled:
        node._ctx["anomaly_trace"] = forward_trace()
    if n > 1:
        node._ctx["_outputs"] = [_weakref(o) if isinstance(o, TensorBase) else None
                                 for o in outs]
        node._ctx["_edges"] = [None] * n
        node._ctx["_hooks"] = [[] for _ in range(n)]
    for i in differentiable:
        o = outs[i]
        o.requires_grad = True
        o.grad_fn = node
        if id(o) in dirty and o._base is not None:
            _propagate_to_base(o)   # (a view written in place: its base's history too)
            if n > 1:
                node._ctx["_outputs"][i] = None
    if ctx._saved:
        saved_in = [s.data if type(s) is SavedTensor else None for s in ctx._saved]
        # saved outputs are kept as outputs (a detached alias, re-attached when unpacked):
        # the node holding its own output would be a reference cycle
        mine = {id(o): i for i, o in enumerate(outs)
                if isinstance(o, TensorBase) and o.grad_fn is node}
        ctx._saved = tuple(SavedTensor(s.data, is_output=True)
                           if type(s) is SavedTensor and s.data is not None
                           and id(s.data) in mine else s for s in ctx._saved)
        if n > 1:
            # which output each saved one is, for when the outputs themselves are gone
            # (``f(x)[0]`` keeps output 0 only; backward unpacks the others)
            node._ctx["_saved_outputs"] = [
                (s.data, mine[id(o)]) for s, o in zip(ctx._saved, saved_in)
                if type(s) is SavedTensor and s.is_output and s.data is not None
                and id(o) in mine]
    if is_tuple:
        return tuple(outs)
    return outs[0]


def _check_grads(cls, grads, nargs, tensor_args):
    """``backward``'s result as one gradient per input, checked as PyTorch checks it."""
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) > nargs and all(g is None for g in grads[nargs:]):
        grads = grads[:nargs]   # (PyTorch drops trailing Nones past the inputs)
    if len(grads) != nargs:
        raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of "
                           f"gradients (expected {nargs}, got {len(grads)})")
    for i, (g, is_tensor) in enumerate(zip(grads, tensor_args)):
        if g is not None and not is_tensor:
            raise RuntimeError(f"function {cls.__name__}Backward returned a gradient "
                               f"different than None at position {i + 1}, but the "
                               "corresponding forward input was not a Variable")
    return grads


def _fit_grads(cls, grads, in_metas):
    """Each tensor input's gradient in its input's shape (summing dims it was broadcast
    over) and dtype; a shape the input does not broadcast to raises, as in PyTorch."""
    for i, (g, (shape, dtype)) in enumerate(zip(grads, in_metas)):
        if not isinstance(g, TensorBase):
            continue
        if tuple(g.shape) != shape:
            lead = len(g.shape) - len(shape)
            if lead < 0 or any(n != 1 and n != g.shape[lead + k]
                               for k, n in enumerate(shape)):
                raise RuntimeError(f"Function {cls.__name__}Backward returned an invalid "
                                   f"gradient at index {i} - got {list(g.shape)} but "
                                   f"expected shape compatible with {list(shape)}")
            g = V.sum_to(g, shape)
        if g.dtype is not dtype and g.dtype._kind >= 2 and dtype._kind >= 2:
            g = g.to(dtype)
        grads[i] = g
    return tuple(grads)


def _backward_of(cls):
    """The Function's ``backward``, or its ``vjp`` (PyTorch's other name for it)."""
    has_backward = cls.backward is not Function.backward
    has_vjp = cls.vjp is not Function.vjp
    if has_backward and has_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is "
                           "not allowed. You should only implement one of them.")
    return cls.vjp if has_vjp else cls.backward


def _zeros(meta):
    shape, dtype, device = meta
    return O.zeros(shape, dtype, device)


class _JvpTranspose(Function):
    """A custom Function's backward as forward-mode AD's first pass records it: its value
    is ``backward``'s (the vector-Jacobian product), and its own gradient (the second
    pass) is the Function's ``jvp`` — the transpose of a vector-Jacobian product is the
    Jacobian-vector product, so forward-mode AD through the Function uses ``jvp``."""

    @staticmethod
    def forward(ctx, fn_cls, fn_ctx, metas, args_info, *grads_out):
        tensor_args, in_metas = args_info
        ctx.fn = (fn_cls, fn_ctx, metas, tensor_args)
        if fn_cls.backward is Function.backward and fn_cls.vjp is Function.vjp:
            # a Function with jvp alone: forward-mode AD differentiates this value with
            # respect to the cotangent only, so any value serves (zeros, of the inputs'
            # shapes); the gradient, the Function's jvp, is what carries the tangent
            shapes = iter(in_metas)
            return tuple(O.zeros(*next(shapes), grads_out[0].device) if is_tensor else None
                         for is_tensor in tensor_args)
        grads = _backward_of(fn_cls)(fn_ctx, *grads_out)
        grads = _check_grads(fn_cls, grads, len(tensor_args), tensor_args)
        return tuple(g.detach() if isinstance(g, TensorBase) else g for g in grads)

    @staticmethod
    def backward(ctx, *tangents):
        fn_cls, fn_ctx, metas, tensor_args = ctx.fn
        tangents = tuple(t if t is not None or not is_tensor else None
                         for t, is_tensor in zip(tangents, tensor_args))
        fn_ctx._in_jvp = True
        try:
            with enable_grad():
                res = fn_cls.jvp(fn_ctx, *tangents)
        finally:
            fn_ctx._in_jvp = False
        res = res if isinstance(res, tuple) else (res,)
        if len(res) != len(metas):
            raise RuntimeError(f"{fn_cls.__name__}.jvp returned {len(res)} tangents; expected "
                               f"one per output of forward ({len(metas)})")
        return (None, None, None, None) + tuple(
            r if m is not None else None for r, m in zip(res, metas))


class InplaceFunction(Function):
    """A Function that may work in place: instances carry ``inplace`` (PyTorch's legacy
    base class; the methods are static and used through ``apply`` as for
    :class:`Function`).

    Example:
        >>> from ember.autograd.function import InplaceFunction
        >>> issubclass(InplaceFunction, ember.autograd.Function)
        True
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """PyTorch's legacy base for Functions written as instance methods over nested
    inputs (``forward_extended`` / ``backward_extended``). Those legacy instance Functions
    are not supported (PyTorch's own cannot be called either): write a :class:`Function`
    with static methods instead.

    Example:
        >>> from ember.autograd.function import NestedIOFunction
        >>> issubclass(NestedIOFunction, ember.autograd.Function)
        True
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("NestedIOFunction (legacy Functions written as instance "
                                  "methods, forward_extended/backward_extended) is not "
                                  "supported by ember; write an autograd.Function with "
                                  "static forward/backward instead")

    def forward_extended(self, *input):
        """The legacy instance forward (not supported)."""
        raise NotImplementedError("NestedIOFunction.forward_extended is not supported")

    def backward_extended(self, *grad_output):
        """The legacy instance backward (not supported)."""
        raise NotImplementedError("NestedIOFunction.backward_extended is not supported")


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
        with below_autograd():
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
