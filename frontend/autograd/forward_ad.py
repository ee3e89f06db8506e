"""Forward-mode automatic differentiation, as ``torch.autograd.forward_ad``.

Inside ``with dual_level():``, ``make_dual(primal, tangent)`` gives a *dual tensor*: it
computes as ``primal`` does, and every result computed from it carries the Jacobian-vector
product ``J @ tangent``, which ``unpack_dual(result).tangent`` returns::

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        jvp = fwAD.unpack_dual(f(x)).tangent

How ember computes it: a dual tensor is a tensor that autograd records (a new leaf over
the primal's memory, or a view of the primal when that requires grad already), and
``unpack_dual`` forms the product from the recorded graph with two reverse passes (the
"double vjp": ``g(u) = J^T u`` is linear in ``u``, and its vector-Jacobian product with
the tangent is ``J @ tangent``). The values are PyTorch's; what differs from PyTorch's
per-op forward mode:

- a dual tensor reports ``requires_grad=True``;
- an in-place op on a dual tensor that is a leaf raises autograd's leaf error (PyTorch
  updates the primal and the tangent);
- ops run under ``no_grad`` (or with grad mode off) record no graph, so they carry no
  tangent: ``unpack_dual`` of a result that reaches no dual tensor then raises
  ``NotImplementedError`` if grad mode was switched off inside the level, instead of
  returning a tangent of None that may be wrong;
- a custom ``autograd.Function``'s ``jvp`` runs when ``unpack_dual`` asks for a tangent
  (in the second pass, as the transpose of its node's backward), not when the Function
  is applied (a Function without ``jvp`` applied to a tensor carrying a tangent raises
  PyTorch's ``NotImplementedError``, as PyTorch's does).

One level at a time, as in PyTorch ("Nested forward mode AD is not supported").
"""
from __future__ import annotations

import weakref
from collections import namedtuple

from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase

from . import _engine
from ._engine import enable_grad, grad as _grad

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]


class UnpackedDualTensor(namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """``(primal, tangent)`` of a dual tensor (``tangent`` is None for a tensor that is not
    one), as ``unpack_dual`` returns it."""
    __slots__ = ()


class _State:
    """The open level: its number, its dual tensors (id -> (weak ref, tangent)), whether
    grad mode was turned off while it was open, and whether the first pass of a tangent's
    computation runs now (custom Functions then record their ``jvp``)."""
    level = None
    duals: dict = {}
    grad_was_off = False
    tangent_pass = False


_STATE = _State()


def _grad_turned_off() -> None:
    """Called by the grad-mode switches (``_engine.GRAD_OFF_WATCH``) when grad mode goes
    off: remembered while a level holds dual tensors (their ops then record no graph, and
    carry no tangent)."""
    if _STATE.duals:
        _STATE.grad_was_off = True


_engine.GRAD_OFF_WATCH[0] = _grad_turned_off


def enter_dual_level() -> int:
    """Open a forward-AD level and return its number (0; one level at a time)."""
    if _STATE.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _STATE.level, _STATE.duals, _STATE.grad_was_off = 0, {}, False
    return 0


def exit_dual_level(*, level=None) -> None:
    """Close the open level: its dual tensors lose their tangents."""
    if _STATE.level is None or (level is not None and level != _STATE.level):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one "
                           "that was created. This is not supported.")
    _STATE.level, _STATE.duals, _STATE.grad_was_off = None, {}, False


class dual_level:
    """Context manager: a forward-AD level is open inside (see the module docstring).

    Example:
        >>> import ember.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(ember.tensor([1., 2.]), ember.tensor([1., 0.]))
        ...     fwAD.unpack_dual(x * x).tangent
        tensor([2., 0.])
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _level(level, what: str) -> int:
    if level is None:
        level = _STATE.level
    if level is None or level != _STATE.level:
        raise RuntimeError(f"Trying to {what} for forward AD but no level exists, make sure "
                           "to enter_dual_level() first.")
    return level


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: ``tensor``'s values, carrying ``tangent`` (same shape; floating or
    complex) through the ops computed from it inside the open level."""
    _level(level, "create a dual Tensor")
    if not isinstance(tensor, TensorBase) or not isinstance(tangent, TensorBase):
        raise TypeError("make_dual(): expected Tensor arguments, got "
                        f"{type(tensor).__name__} and {type(tangent).__name__}")
    if tensor.dtype._kind < 2:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if tangent.dtype._kind < 2:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is "
                           f"of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"Expected tangent to be on the same device as the primal "
                           f"({tensor.device}), but got {tangent.device}")
    with enable_grad():
        dual = (tensor.view_as(tensor) if tensor.requires_grad
                else tensor.detach().requires_grad_(True))
    if tangent.dtype is not tensor.dtype or tuple(tangent.stride()) != tuple(tensor.stride()):
        # as PyTorch: a tangent laid out otherwise than the primal is copied into the
        # primal's layout; one laid out as it is is kept as it is (unpack_dual gives it back)
        tangent = tensor.detach().clone().copy_(tangent.detach())
    key = id(dual)
    _STATE.duals[key] = (weakref.ref(dual, lambda _r, k=key: _STATE.duals.pop(k, None)),
                         tangent)
    if dual.grad_fn is not None and isinstance(dual.grad_fn._ctx, dict):
        # a view of a primal that requires grad: what is computed from it holds its node,
        # not it, so the node keeps it (and its tangent) alive while that graph lives
        # (``unpack_dual(f(make_dual(p, t)))`` with the dual never bound to a name)
        dual.grad_fn._ctx["_dual"] = dual
    return dual


class _tangent_pass:
    """Context manager: the first pass of a double-vjp runs inside (the reverse pass
    whose own gradient is the Jacobian-vector product): custom Functions record their
    ``jvp`` there (``ember.func.jvp`` and ``jacfwd`` use it too)."""

    def __enter__(self):
        self.prev = _STATE.tangent_pass
        _STATE.tangent_pass = True
        return self

    def __exit__(self, *exc):
        _STATE.tangent_pass = self.prev
        return False


def carries_tangent(tensors) -> bool:
    """Whether any of ``tensors`` is a dual tensor of the open level or computed from one
    (a walk of the recorded graph down from them)."""
    live = [ref() for ref, _ in list(_STATE.duals.values())]
    edges = [_engine._edge(d) for d in live if d is not None]   # (held: ids stay theirs)
    targets = {id(e) for e in edges}
    if not targets:
        return False
    stack = [_engine._edge(t) for t in tensors if isinstance(t, TensorBase) and t.requires_grad]
    seen = set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        if id(n) in targets:
            return True
        seen.add(id(n))
        stack.extend(n._next)
    return False


def _tangent_of(t):
    """``J @ tangents`` for ``t``, from the recorded graph (None: ``t`` reaches no dual)."""
    live = [(ref(), tan) for ref, tan in list(_STATE.duals.values()) if ref() is not None]
    if not t.requires_grad or not live:
        return None
    inputs = tuple(d for d, _ in live)
    with enable_grad():
        u = O.zeros(tuple(t.shape), t.dtype, t.device).requires_grad_(True)
        with _tangent_pass():
            gs = _grad((t,), inputs, (u,), create_graph=True, retain_graph=True,
                       allow_unused=True)
        pairs = [(g, tan) for g, (_, tan) in zip(gs, live) if g is not None]
        if not pairs:
            return None
        linear = [(g, tan) for g, tan in pairs if g.requires_grad]
        if not linear:      # (J^T u does not depend on u: J is zero)
            return O.zeros(tuple(t.shape), t.dtype, t.device)
        (jt,) = _grad(tuple(g for g, _ in linear), (u,), tuple(tan for _, tan in linear),
                      allow_unused=True)
    return jt.detach() if jt is not None else O.zeros(tuple(t.shape), t.dtype, t.device)


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``: its values (without the tangent) and the
    Jacobian-vector product it carries, or None when it is not computed from a dual
    tensor (or no level is open)."""
    if not isinstance(tensor, TensorBase):
        return UnpackedDualTensor(tensor, None)
    if level is None and _STATE.level is None or level is not None and level != _STATE.level:
        return UnpackedDualTensor(tensor, None)
    entry = _STATE.duals.get(id(tensor))
    if entry is not None and entry[0]() is tensor:
        return UnpackedDualTensor(tensor.detach(), entry[1])
    tangent = _tangent_of(tensor)
    if tangent is None and _STATE.grad_was_off and _STATE.duals:
        raise NotImplementedError(
            "unpack_dual(): this tensor carries no tangent, and grad mode was turned off "
            "inside the dual level: ember's forward-mode AD follows the autograd graph, "
            "which ops run under no_grad do not record (PyTorch carries tangents through "
            "them)")
    return UnpackedDualTensor(tensor.detach() if tangent is not None else tensor, tangent)

