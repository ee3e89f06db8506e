"""Reverse-mode autograd: graph nodes, saved tensors, grad modes, and the backward walk.

Every differentiable op run while grad mode is on, with an input that requires grad,
records a :class:`Node` (``_record.py``) holding its vector–Jacobian product (the formula
in the op's definition), the tensors that product needs (as :class:`SavedTensor`, which
remembers the version it saw), and one edge per input: the input's own ``grad_fn``, an
:class:`AccumulateGrad` for a leaf, or None. A node has one output tensor, except a
custom Function's (several outputs share its node: an :class:`OutputEdge` per output is
the edge into it, and the gradient it carries is a :class:`Slot`).

``backward`` counts dependencies, then runs nodes in reverse topological order with a
ready queue (no Python recursion), summing gradients per node and freeing saved tensors
as each node finishes unless ``retain_graph``.
"""
from __future__ import annotations

import functools
from collections import deque
from weakref import ref as _weakref

from ember.dispatcher import core as C
from ember.dispatcher.core import LazyStorage, TensorBase
from ember.dispatcher import grad_mode
from ember.dispatcher import lazy as L
from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.views import ViewGrad
from ember.dispatcher.defs import index as IX
from ember.dispatcher import dtypes
from ember.dispatcher.dtypes import torch_name
from ember.dispatcher.schema import Unsaved

from .._hooks import RemovableHandle
from .._vmap import TRANSFORMS
from .anomaly_mode import ANOMALY, warn_forward_trace
from ember.dispatcher.warn import warn as _warn

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "is_grad_enabled", "set_grad_enabled",
           "no_grad", "enable_grad", "inference_mode", "is_inference_mode_enabled",
           "run_backward", "backward", "grad"]


# grad mode lives in the dispatcher, whose entry points test it on every call
MODE = grad_mode.MODE
#: called when a switch below turns grad mode off (forward_ad installs it: ops run then
#: record no graph, so they carry no tangent)
GRAD_OFF_WATCH: list = [None]


def _grad_off() -> None:
    w = GRAD_OFF_WATCH[0]
    if w is not None:
        w()


def is_grad_enabled() -> bool:
    """Whether autograd records operations now (False inside ``no_grad`` or
    ``inference_mode``).

    Example:
        >>> ember.is_grad_enabled()
        True
        >>> with ember.no_grad():
        ...     ember.is_grad_enabled()
        False
    """
    return MODE.grad


def is_inference_mode_enabled() -> bool:
    """Whether ``inference_mode`` is on now.

    Example:
        >>> with ember.inference_mode():
        ...     ember.is_inference_mode_enabled()
        True
    """
    return MODE.inference


class _ModeContext:
    """Base for the grad-mode context managers; also usable as decorators, with or
    without parentheses (``@ember.no_grad`` and ``@ember.no_grad()``)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args: tuple = ()


class set_grad_enabled(_ModeContext):
    """Turn gradient recording on or off (a function call or a context manager)."""

    def __init__(self, mode: bool):
        self._args = (mode,)
        self.prev = MODE.grad
        MODE.grad = bool(mode)
        if not mode:
            _grad_off()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        MODE.grad = self.prev
        return False


class _SwitchGrad(_ModeContext):
    """Sets grad mode to ``_on`` inside; bare-decorator use (``@no_grad``) supported."""
    _on = False

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self.prev = MODE.grad
        MODE.grad = self._on
        if not self._on:
            _grad_off()
        return self

    def __exit__(self, *exc):
        MODE.grad = self.prev
        return False


class no_grad(_SwitchGrad):
    """Context manager / decorator: ops inside record no graph.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """
    _on = False


class enable_grad(_SwitchGrad):
    """Context manager / decorator: record a graph again (inside ``no_grad``)."""
    _on = True


class inference_mode(_ModeContext):
    """Like ``no_grad``, and in-place ops stop bumping version counters."""

    def __init__(self, mode: bool = True):
        self._args = (mode,)
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (MODE.grad, MODE.inference, C.TRACK_VERSIONS[0])
        if self.mode:
            MODE.grad, MODE.inference = False, True
            C.TRACK_VERSIONS[0] = False
            _grad_off()
        return self

    def __exit__(self, *exc):
        MODE.grad, MODE.inference, C.TRACK_VERSIONS[0] = self.prev
        return False


# ---------------------------------------------------------------------------------------
class _SavedHooks:
    """The saved-tensor hook pairs in force (``autograd.graph.saved_tensors_hooks``); the
    innermost pair packs what nodes save."""
    __slots__ = ("stack", "disabled")

    def __init__(self):
        self.stack: list = []
        self.disabled = None


SAVED_HOOKS = _SavedHooks()


class SavedTensor:
    """A tensor kept for backward, with the version it had when saved.

    Outputs are saved as a detached alias (no reference cycle output → node → output);
    unpacking re-attaches the node so ``create_graph`` still differentiates through it.
    Under ``saved_tensors_hooks`` only what the pack hook returns is kept, and the unpack
    hook gives the tensor back in backward.
    """
    __slots__ = ("data", "version", "is_output", "requires_grad", "grad_fn", "packed",
                 "unpack_hook", "vc")

    def __init__(self, t, is_output=False):
        self.version = t._vc[0]
        self.is_output = is_output
        self.requires_grad = t.requires_grad or is_output
        self.grad_fn = None
        if is_output:
            self.data = C.view_of(t, t.shape, t._stride, t._offset)
        else:
            self.data = t
        if SAVED_HOOKS.stack:
            pack, self.unpack_hook = SAVED_HOOKS.stack[-1]
            # (the hook runs without hooks: what its own ops save is not packed again)
            stack, SAVED_HOOKS.stack = SAVED_HOOKS.stack, []
            try:
                self.packed = pack(self.data)
            finally:
                SAVED_HOOKS.stack = stack
            # the version counter stays: in-place changes after saving are still caught; and
            # the tensor's place in the graph, for what unpack_hook gives back
            self.vc = t._vc
            if not is_output:
                fn = t.grad_fn  # (an output of a multi-output node: the edge into it)
                self.grad_fn = fn._output_edge(t) if fn is not None and fn._multi else fn
            self.data = None
        else:
            self.unpack_hook = None
            if L._S.thread is not None:     # (in a compiled region: may be recomputed)
                L.saving(self)

    def unpack(self, node):
        if self.unpack_hook is not None:
            if self.vc[0] != self.version:
                self._stale(node, self.vc[0])
            d = self.unpack_hook(self.packed)
            if not isinstance(d, TensorBase):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor "
                                f"but got result of type {type(d).__name__}")
            if self.requires_grad and not self.is_output and not d.requires_grad:
                # a fresh tensor (a copy back from host memory, a recomputation) stands
                # for the saved one: it requires grad, in the saved tensor's place
                d = C.view_of(d, d.shape, d._stride, d._offset)
                d.requires_grad = True
                d.grad_fn = self.grad_fn
        else:
            d = self.data
            if d._vc[0] != self.version:
                self._stale(node, d._vc[0], d)
            if d._storage.__class__ is LazyStorage:     # left out by a compiled graph
                L.resolve(d)
        if self.is_output and self.requires_grad and MODE.grad:
            alias = C.view_of(d, d.shape, d._stride, d._offset)
            alias.requires_grad = True
            alias.grad_fn = node
            return alias
        return d

    def _stale(self, node, now, d=None):
        role = "output 0 of " if self.is_output else "an input of "
        what = f"[{_type_str(d)} {list(d.shape)}], which" if d is not None else \
            "a saved tensor (packed by a saved_tensors_hooks pack hook), which"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified "
            f"by an inplace operation: {what} is {role}{node.name()}"
            f", is at version {now}; expected version {self.version} instead. "
            "Hint: the operation that modified it ran after the forward pass saved "
            "it; use an out-of-place op, or .clone() the tensor before modifying it.")


def _type_str(t) -> str:
    """``t.type()``'s name (``torch.FloatTensor`` under ``ember.as_torch``, as PyTorch
    prints it)."""
    prefix = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"{dtypes.module_name}.{prefix}{torch_name(t.dtype)}Tensor"


_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
          "you need to backward through the graph a second time or if you need to access saved "
          "tensors after calling backward.")


#: nodes whose PyTorch op has fewer inputs than ember's: the Scalar overloads (``t ** 2``,
#: ``2 ** t``, ``2 - t``, clamp's number bounds) take Python numbers as no graph input, and
#: ``where``'s condition is none either
_EDGELESS = {"PowBackward0": "numbers", "PowBackward2": "numbers", "RsubBackward1": "numbers",
             "ClampBackward1": "numbers", "WhereBackward0": "condition"}


class Node:
    """One recorded op (``tensor.grad_fn``). ``next_functions`` are its input edges."""
    __slots__ = ("_next", "_vjp", "_saved", "_ctx", "_freed", "_pre_hooks",
                 "_hooks", "_shapes", "_region", "__weakref__")
    #: several output tensors share this node (their edges are ``OutputEdge``s)
    _multi = False

    def __init__(self, vjp, next_functions, saved, ctx, shapes):
        # recorded inside an ember.compile region: its backward is captured too
        self._region = L.backward_region()
        self._vjp = vjp
        self._next = next_functions
        self._saved = saved
        self._ctx = ctx
        self._freed = False
        self._pre_hooks = None
        self._hooks = None
        self._shapes = shapes

    def name(self) -> str:
        return type(self).__name__

    def __getattr__(self, attr):
        # PyTorch's ``grad_fn._saved_<name>``: what the gradient formula saved under that
        # name (a tensor through the saved-tensor hooks, a number or shape as is; None for
        # an input this call did not need to save)
        if attr.startswith("_saved_") and not attr.startswith("_saved__"):
            key = attr[len("_saved_"):]
            names = getattr(self._vjp, "names", ())
            if key in names and self._saved is not None:
                if self._freed:
                    raise RuntimeError(_FREED)
                v = self._saved[names.index(key)]
                if type(v) is SavedTensor:
                    return v.unpack(self)
                return None if type(v) is Unsaved else v
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    @property
    def next_functions(self):
        """PyTorch's layout: ``((node_or_None, input_nr), ...)``, one pair per input of
        PyTorch's op (see ``_EDGELESS``)."""
        rule = _EDGELESS.get(type(self).__name__)
        if rule is None or self._shapes is None or len(self._shapes) != len(self._next):
            return tuple(_pair(n) for n in self._next)
        if rule == "condition":
            return tuple(_pair(n) for n in self._next[1:])
        return tuple(_pair(n) for n, m in zip(self._next, self._shapes)
                     if n is not None or m is not None)

    def _output_nr(self, t) -> int:
        """Which output of this node ``t`` is (``t.output_nr``)."""
        return 0

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def register_hook(self, fn):
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _Handle(self._pre_hooks, fn)

    def apply(self, grad):
        if self._freed:
            raise RuntimeError(_FREED)
        saved = [s.unpack(self) if type(s) is SavedTensor else s for s in self._saved]
        return self._vjp(grad, saved, self._ctx, self._shapes)

    def release(self):
        """Free saved tensors; a node that saved none can run again (as in PyTorch)."""
        fctx = self._ctx.get("_function") if self._ctx else None
        if fctx is not None:
            fctx._saved = ()
            fctx._freed = True
            self._freed = True
            return
        for s in self._saved:
            if type(s) is SavedTensor:
                self._saved = ()
                self._freed = True
                return

    @property
    def metadata(self):
        return {}


def _pair(n):
    """A ``next_functions`` entry: ``(node, input_nr)``."""
    if type(n) is OutputEdge:
        return (n._next[0], n.nr)
    return (n, 0)


class OutputEdge(Node):
    """The edge into output ``nr`` of a node with several outputs: passes the gradient on
    as that output's :class:`Slot`. Tensor hooks of the output run here (in
    ``next_functions`` it reads as ``(node, nr)``, as PyTorch's edges do)."""
    __slots__ = ("nr",)

    def __init__(self, node, nr, n):
        super().__init__(lambda g, saved, ctx, shapes: (Slot(nr, n, g),), (node,), (), {},
                         (None,))
        self.nr = nr

    def name(self) -> str:
        return self._next[0].name()

    def __repr__(self):
        return f"<edge to output {self.nr} of {self._next[0]!r}>"


class AccumulateGrad:
    """The edge into a leaf: adds the incoming gradient to ``variable.grad``."""
    __slots__ = ("variable", "_next", "__weakref__")

    def __init__(self, variable):
        self.variable = variable
        self._next = ()

    @property
    def next_functions(self):
        return ()

    def name(self) -> str:
        # PyTorch's node name is its C++ class's qualified name
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"


class _Handle(RemovableHandle):
    """What a tensor's or a node's ``register_hook`` returns: ``handle.remove()``
    unregisters (a ``RemovableHandle`` over the hook list, not a dict)."""

    def __init__(self, lst, fn):
        self._lst, self._fn = lst, fn
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1

    def remove(self):
        try:
            self._lst.remove(self._fn)
        except ValueError:
            pass


_NODE_TYPES: dict = {}


def node_type(op: str):
    """The Node subclass for an op, named like PyTorch's (``MulBackward0``); an ``op``
    already naming a class (``PowBackward1``) is used as it is."""
    cls = _NODE_TYPES.get(op)
    if cls is None:
        if "Backward" in op:
            name = op
        else:
            name = "".join(p[:1].upper() + p[1:] for p in op.split("_")) + "Backward0"
        cls = _NODE_TYPES[op] = type(name, (Node,), {"__slots__": ()})
    return cls


# ---------------------------------------------------------------------------------------
def _edge(t):
    """The graph edge for input ``t``: its grad_fn (the edge into its output of a node with
    several), an AccumulateGrad, or None."""
    fn = t.grad_fn
    if fn is not None:
        return fn._output_edge(t) if fn._multi else fn
    if t.requires_grad:
        acc = t._acc_ref() if t._acc_ref is not None else None
        if acc is None:
            acc = AccumulateGrad(t)
            t._acc_ref = _weakref(acc)
        return acc
    return None


#: how many backward passes are running on any thread, and the node whose backward runs
#: now (the memory history's "phase" and "node")
IN_BACKWARD = [0]
RUNNING_NODE = [None]


def run_backward(roots, grads, retain_graph, create_graph, inputs=None, capture=False,
                 allow_unused=False):
    """The engine. ``capture``: return gradients for ``inputs`` instead of accumulating."""
    IN_BACKWARD[0] += 1
    try:
        return _run_backward(roots, grads, retain_graph, create_graph, inputs, capture,
                             allow_unused)
    finally:
        IN_BACKWARD[0] -= 1
        RUNNING_NODE[0] = None


def _run_backward(roots, grads, retain_graph, create_graph, inputs, capture, allow_unused):
    starts = []
    for i, (t, g) in enumerate(zip(roots, grads)):
        e = _edge(t)
        if e is None:
            raise RuntimeError(_NO_GRAD_FN.format(i))
        starts.append((e, g))
    # dependency counts over the reachable graph (iterative DFS)
    deps: dict = {}
    seen = set()
    stack = [e for e, _ in starts]
    deps_get, push = deps.get, stack.append
    while stack:
        n = stack.pop()
        k = id(n)
        if k in seen:
            continue
        seen.add(k)
        for nxt in n._next:
            if nxt is not None:
                k = id(nxt)
                deps[k] = deps_get(k, 0) + 1
                push(nxt)
    capture_ids = None
    captured = {}
    if inputs is not None:
        capture_ids = {}
        for i, t in enumerate(inputs):
            if t.grad_fn is not None:
                capture_ids[id(_edge(t))] = i
            else:
                capture_ids[("leaf", id(t))] = i
    # grad() / backward(inputs=...): only the nodes with an input below them run
    needed = None if capture_ids is None else _needed([e for e, _ in starts], capture_ids)
    buffers: dict = {}
    nodes: dict = {}
    # storages already owned elsewhere (the caller's gradients, or given to a leaf): a leaf
    # whose gradient lives in one of them gets a copy, so later in-place updates never alias
    handed = {id(g._storage) for _, g in starts}
    for e, g in starts:
        _accumulate(buffers, nodes, e, g)
    ready = deque(e for e, _ in starts if deps.get(id(e), 0) == 0)
    queued = {id(e) for e in ready}
    prev_mode = MODE.grad
    MODE.grad = bool(create_graph)
    anomaly = ANOMALY.enabled
    captured_backward = None
    try:
        while ready:
            node = ready.popleft()
            skip = needed is not None and id(node) not in needed
            if captured_backward is None and not skip and type(node) is not AccumulateGrad \
                    and node._region is not None and not L.capturing():
                # the backward of an ember.compile region: from here on, the rest of this
                # backward pass is recorded and compiled (as a forward region is)
                captured_backward = L.capture(node._region())
                captured_backward.__enter__()
            grad = buffers.pop(id(node), None)
            if type(grad) is _Owned:  # (_settled, inline)
                grad = grad.t
            elif type(grad) is ViewGrad:
                grad = grad.dense()
            if type(node) is AccumulateGrad:
                v = node.variable
                key = ("leaf", id(v))
                if capture_ids is not None and key in capture_ids:
                    if capture:
                        captured[capture_ids[key]] = grad
                    else:
                        _accumulate_leaf(v, grad, create_graph, handed)
                elif capture_ids is None:
                    _accumulate_leaf(v, grad, create_graph, handed)
                continue
            RUNNING_NODE[0] = node
            if node._pre_hooks:
                for h in node._pre_hooks:
                    r = h(grad)
                    if r is not None:
                        grad = r
            if capture_ids is not None and id(node) in capture_ids:
                if capture:
                    captured[capture_ids[id(node)]] = grad
                else:
                    _accumulate_leaf(inputs[capture_ids[id(node)]], grad, create_graph,
                                     handed, hooks=False)
            if skip:
                continue
            if anomaly:
                outs = _apply_checked(node, grad)
            else:  # (Node.apply, inline)
                if node._freed:
                    raise RuntimeError(_FREED)
                outs = node._vjp(grad, [s.unpack(node) if type(s) is SavedTensor else s
                                        for s in node._saved], node._ctx, node._shapes)
            if node._hooks:
                for h in node._hooks:
                    h(outs, tuple(grad) if type(grad) is list else (grad,))
            if not retain_graph:
                node.release()
            for nxt, g in zip(node._next, outs):
                if nxt is None:
                    continue
                k = id(nxt)
                if g is not None:
                    if type(g) is Slot:
                        _accumulate(buffers, nodes, nxt, g)
                    else:  # (_accumulate's common case, inline)
                        cur = buffers.get(k)
                        buffers[k] = g if cur is None else _combine(cur, g)
                        nodes[k] = nxt
                c = deps[k] - 1
                deps[k] = c
                if c == 0 and k not in queued:
                    if k in buffers:
                        ready.append(nxt)
                        queued.add(k)
                    else:
                        _skip(nxt, deps, buffers, ready, queued)
    finally:
        MODE.grad = prev_mode
        if captured_backward is not None:
            captured_backward.__exit__(None, None, None)
    if capture:
        out = []
        for i, t in enumerate(inputs):
            g = captured.get(i)
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            out.append(g)
        return tuple(out)
    return None


def _needed(starts, capture_ids):
    """The ids of the nodes from which the node of an input (``capture_ids``) is reachable
    below them: the only ones whose backward runs when gradients are asked for inputs, as
    in PyTorch (other branches, their hooks and their errors never run)."""
    def is_input(n):
        if type(n) is AccumulateGrad:
            return ("leaf", id(n.variable)) in capture_ids
        return id(n) in capture_ids

    needed = set()
    done = set()
    stack = [(n, False) for n in starts]
    while stack:   # iterative post-order: a node is settled after everything below it
        n, children_done = stack.pop()
        k = id(n)
        if children_done:
            if any(nxt is not None and (id(nxt) in needed or is_input(nxt))
                   for nxt in n._next):
                needed.add(k)
            continue
        if k in done:
            continue
        done.add(k)
        stack.append((n, True))
        stack.extend((nxt, False) for nxt in n._next
                     if nxt is not None and id(nxt) not in done)
    return needed


def _apply_checked(node, grad):
    """``node.apply`` under anomaly detection: an error is preceded by the warning showing
    the node's forward call, and NaN gradients raise (PyTorch's message)."""
    try:
        outs = node.apply(grad)
    except Exception:
        warn_forward_trace(node)
        raise
    if ANOMALY.check_nan:
        for i, g in enumerate(outs):
            if isinstance(g, (Slot, ViewGrad)):
                g = g.g
            if isinstance(g, TensorBase) and g.dtype.is_floating_point and bool(
                    g.isnan().any()):
                warn_forward_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                   f"{i}th output.")
    return outs


def _skip(node, deps, buffers, ready, queued):
    """A node that received no gradient at all: release its dependents' counts."""
    stack = [node]
    while stack:
        n = stack.pop()
        for nxt in n._next:
            if nxt is None:
                continue
            deps[id(nxt)] -= 1
            if deps[id(nxt)] == 0 and id(nxt) not in queued:
                if id(nxt) in buffers:
                    ready.append(nxt)
                    queued.add(id(nxt))
                else:
                    stack.append(nxt)


class Slot:
    """A gradient for output ``i`` of a multi-output node (custom Functions)."""
    __slots__ = ("i", "n", "g")

    def __init__(self, i, n, g):
        self.i, self.n, self.g = i, n, g


def _is_sparse(g):
    return getattr(g, "is_sparse", False)


def _add_grads(a, b):
    """a + b for gradient buffers; sparse COO gradients add through their own methods:
    sparse + sparse stays sparse, otherwise the sum is dense."""
    if _is_sparse(a) or _is_sparse(b):
        return b + a if _is_sparse(a) and not _is_sparse(b) else a + b
    return O.elementwise("add", a, b)


class _Owned:
    """A gradient buffer the engine allocated itself: later gradients add into it in
    place (nothing outside the engine can hold it)."""
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


def _combine(cur, g):
    """``cur + g`` for a node's buffer: a view's gradient (ViewGrad) adds into an
    engine-owned buffer in place, over the view's elements only."""
    if type(cur) is not _Owned:
        if type(cur) is not ViewGrad and type(g) is not ViewGrad:
            s = _add_grads(cur, g)
            # (a sum the engine made: later gradients add into it in place, unless the
            # sums are themselves differentiated, or it is sparse, or broadcast a dim)
            if MODE.grad or type(s) is not type(cur) or s.shape != cur.shape or _is_sparse(s):
                return s
            return _Owned(s)
        if type(cur) is ViewGrad:
            cur = _Owned(cur.dense())
        elif _is_sparse(cur):
            return _add_grads(cur, g.dense())
        else:  # (a copy: the tensor may be the caller's, or a formula's result kept elsewhere)
            cur = _Owned(O.clone(cur))
    if type(g) is ViewGrad:
        g.add_into(cur.t)
    elif _is_sparse(g) or g.shape != cur.t.shape or g.dtype is not cur.t.dtype:
        return _add_grads(cur.t, g)
    else:
        O.elementwise("add", cur.t, g, inplace=True)
    return cur


def _settled(g):
    """A buffer as the node receives it: a tensor (or a list of them, or None)."""
    t = type(g)
    if t is _Owned:
        return g.t
    if t is ViewGrad:
        return g.dense()
    return g


def _accumulate(buffers, nodes, node, g):
    k = id(node)
    if type(g) is Slot:
        lst = buffers.get(k)
        if lst is None:
            lst = buffers[k] = [None] * g.n
        lst[g.i] = g.g if lst[g.i] is None else _add_grads(lst[g.i], g.g)
        nodes[k] = node
        return
    cur = buffers.get(k)
    buffers[k] = g if cur is None else _combine(cur, g)
    nodes[k] = node


class PostAccumulateHook:
    """A leaf's hook run with the tensor after its ``.grad`` is accumulated (kept in the
    tensor's hook list, skipped by the gradient hooks)."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, grad):   # as a gradient hook: nothing to change
        return None


def _accumulate_leaf(v, grad, create_graph, handed, hooks=True):
    if grad is None:
        return
    _accumulate_leaf_grad(v, grad, create_graph, handed, hooks)
    if hooks:
        for h in v._hooks_list():
            if type(h) is PostAccumulateHook:
                h.fn(v)


def _accumulate_leaf_grad(v, grad, create_graph, handed, hooks):
    seen = False   # a hook saw the gradient (and may keep it): .grad must not be that tensor
    for h in (v._hooks_list() if hooks else ()):
        if type(h) is PostAccumulateHook:
            continue
        seen = True
        r = h(grad)
        if r is not None:
            grad = r
    if not create_graph:
        grad = grad.detach() if grad.requires_grad else grad
    if _is_sparse(grad) or _is_sparse(v._grad):   # PyTorch's AccumulateGrad for sparse grads
        if grad.dtype is not v.dtype:
            grad = grad.to(v.dtype)
        if v._grad is None:
            v.grad = grad if create_graph else grad.clone()
        elif create_graph or not _is_sparse(grad):
            v.grad = _add_grads(v._grad, grad)       # out of place; sparse + dense is dense
        elif _is_sparse(v._grad):
            v._grad.add_(grad)                       # sparse += sparse, in place
        else:
            grad._add_into_(v._grad)                 # dense += sparse, in place
        return
    if grad.shape != v.shape:
        grad = V.sum_to(grad, v.shape)
    if grad.dtype is not v.dtype:
        grad = grad.to(v.dtype)
    if v._grad is None:
        if not create_graph and (seen or id(grad._storage) in handed
                                 or not grad.is_contiguous()):
            grad = grad.clone()
        handed.add(id(grad._storage))
        v.grad = grad
    elif create_graph:
        v.grad = O.elementwise("add", v._grad, grad)
    else:
        v._grad.add_(grad)


# ---- the public entry points (ember.autograd.backward / grad) -----------------------------
def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, TensorBase):
        return (x,)
    return tuple(x)


def _root_grads(tensors, grad_tensors, create_graph):
    grads = []
    for i, t in enumerate(tensors):
        g = grad_tensors[i] if grad_tensors is not None else None
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs"
                                   f" but got {t.dtype}")
            g = O.full(t.shape, 1, t.dtype, t.device)
        elif isinstance(g, TensorBase):
            if g.shape != t.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{tuple(g.shape)} and output[{i}] has a shape of "
                                   f"{tuple(t.shape)}.")
        else:
            g = O.full(t.shape, g, t.dtype, t.device)
        grads.append(g)
    return grads


_NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"


def _check_outputs(tensors):
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAD_FN.format(i))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    retain_graph = retain_graph or TRANSFORMS.retain > 0  # (vmap: see ember._vmap)
    inputs = _as_tuple(inputs)
    # PyTorch's order of checks: the inputs list, the outputs, then each input
    if inputs is not None and not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _check_outputs(tensors)
    for t in inputs or ():
        if not t.requires_grad:   # (PyTorch retains the grad of each input)
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    run_backward(tensors, _root_grads(tensors, grad_tensors, create_graph), retain_graph,
                 create_graph, inputs=inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated).

    PyTorch's signature: ``only_inputs`` is deprecated and ignored (a warning when False);
    ``is_grads_batched=True`` treats the first dim of every ``grad_outputs`` tensor as a
    batch of vectors and returns the stacked results, computed one vector after another
    (not a batching transform)."""
    if not only_inputs:
        _warn("only_inputs argument is deprecated and is ignored now (defaults to "
              "True). To accumulate gradient for other parts of the graph, please use "
              "torch.autograd.backward.", FutureWarning)
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    allow_unused = bool(allow_unused)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    retain_graph = retain_graph or TRANSFORMS.retain > 0  # (vmap: see ember._vmap)
    # PyTorch's order of checks: the inputs list, the outputs, then each input
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    _check_outputs(outputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    res = run_backward(outputs, _root_grads(outputs, grad_outputs, create_graph), retain_graph,
                       create_graph, inputs=inputs, capture=True,
                       allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        res = tuple(O.zeros(t.shape, t.dtype, t.device) if g is None else g
                    for g, t in zip(res, inputs))
    return res


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    grad_outputs = _as_tuple(grad_outputs)
    if not grad_outputs or any(g is None for g in grad_outputs):
        raise RuntimeError("If `is_grads_batched=True`, every grad_outputs tensor must be given "
                           "with a leading batch dimension")
    n = grad_outputs[0].shape[0] if grad_outputs[0].shape else 0
    per = []
    for i in range(n):
        per.append(grad(outputs, inputs, tuple(g[i] for g in grad_outputs),
                        retain_graph=True if i < n - 1 else retain_graph,
                        create_graph=create_graph, allow_unused=allow_unused,
                        materialize_grads=materialize_grads))
    out = []
    for j, t in enumerate(_as_tuple(inputs)):
        col = [p[j] for p in per]
        if any(c is None for c in col):
            out.append(None)
        else:
            out.append(IX.stack(col, 0))
    return tuple(out)
