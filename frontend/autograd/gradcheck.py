"""Finite-difference checks of analytical gradients (float64), as ``torch.autograd``'s."""
from __future__ import annotations


import numpy as np

from ember.dispatcher.core import TensorBase

from .. import _creation as K
from . import forward_ad as _fwad
from ._engine import grad as autograd_grad
from ember.dispatcher.warn import warn as _warn


def _inputs(inputs):
    return (inputs,) if isinstance(inputs, TensorBase) else tuple(inputs)


def _flat_outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, TensorBase) and o.dtype.is_floating_point]


def _numerical_jacobian(fn, inputs, i, eps):
    """d out / d inputs[i] by central differences, as an (n_in, n_out) array."""
    x = inputs[i]
    base = x.detach().clone()
    flat = base.numpy().reshape(-1).copy()
    cols = []
    for k in range(flat.size):
        vals = []
        for sign in (1, -1):
            pert = flat.copy()
            pert[k] += sign * eps
            args = list(inputs)
            args[i] = K.from_numpy(pert.reshape(base.shape)).to(x.device)
            args[i].requires_grad_(x.requires_grad)
            outs = _flat_outputs(fn(*args))
            vals.append(np.concatenate([o.detach().cpu().numpy().reshape(-1) for o in outs]))
        cols.append((vals[0] - vals[1]) / (2 * eps))
    return np.stack(cols) if cols else np.zeros((0, 0))


def _analytical_jacobian(fn, inputs, i):
    outs = _flat_outputs(fn(*inputs))
    sizes = [o.numel() for o in outs]
    total = sum(sizes)
    rows = np.zeros((inputs[i].numel(), total))
    col = 0
    for o, n in zip(outs, sizes):
        for k in range(n):
            g = np.zeros(n)
            g[k] = 1.0
            go = K.from_numpy(g.reshape(o.shape).astype(o.dtype.to_numpy())).to(o.device)
            if not o.requires_grad:
                col += 1
                continue
            (gi,) = autograd_grad(o, inputs[i], go, retain_graph=True, allow_unused=True)
            if gi is not None:
                rows[:, col] = gi.detach().cpu().numpy().reshape(-1)
            col += 1
    return rows


def _forward_jacobian(fn, inputs, i):
    """d out / d inputs[i] by forward-mode AD (one unit tangent per input element)."""
    x = inputs[i]
    flat = np.zeros(x.numel())
    rows = []
    for k in range(x.numel()):
        flat[:] = 0.0
        flat[k] = 1.0
        tangent = K.from_numpy(flat.reshape(x.shape).astype(x.dtype.to_numpy())).to(x.device)
        with _fwad.dual_level():
            args = list(inputs)
            args[i] = _fwad.make_dual(x, tangent)
            outs = _flat_outputs(fn(*args))
            row = []
            for o in outs:
                t = _fwad.unpack_dual(o).tangent
                row.append(np.zeros(o.numel()) if t is None
                           else t.detach().cpu().numpy().reshape(-1))
        rows.append(np.concatenate(row) if row else np.zeros(0))
    return np.stack(rows) if rows else np.zeros((0, 0))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_backward_ad=True, check_forward_ad=False, **_ignored) -> bool:
    """Compare analytical Jacobians (reverse mode with ``check_backward_ad``, forward
    mode with ``check_forward_ad``) with numerical ones; inputs should be float64.

    Example:
        >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(ember.sin, (x,), check_forward_ad=True)
        True
    """
    inputs = _inputs(inputs)
    for i, x in enumerate(inputs):
        if not (isinstance(x, TensorBase) and x.requires_grad):
            continue
        if x.dtype.name != "float64":
            _warn(f"Input #{i} requires gradient and is not a double precision "
                  "floating point. gradcheck is only reliable for float64.")
        num = _numerical_jacobian(func, inputs, i, eps)
        checks = []
        if check_backward_ad:
            checks.append(("", _analytical_jacobian(func, inputs, i)))
        if check_forward_ad:
            checks.append(("(forward mode) ", _forward_jacobian(func, inputs, i)))
        for mode, ana in checks:
            if num.shape != ana.shape or not np.allclose(ana, num, rtol=rtol, atol=atol):
                if raise_exception:
                    raise GradcheckError(f"Jacobian {mode}mismatch for output 0 with respect "
                                         f"to input {i},\nnumerical:{num}\nanalytical:{ana}\n")
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **_ignored) -> bool:
    """gradcheck of the gradient itself (second order)."""
    inputs = _inputs(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x.requires_grad]
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [K.from_numpy(rng.standard_normal(o.shape)).to(o.device)
                        for o in outs]

    def first(*args):
        o = _flat_outputs(func(*args))
        return autograd_grad(o, [args[i] for i in diff], grad_outputs, create_graph=True,
                             allow_unused=True)
    return gradcheck(first, inputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` / ``gradgradcheck`` when analytical and numerical gradients
    disagree (and ``raise_exception`` is True).
    """
    pass
