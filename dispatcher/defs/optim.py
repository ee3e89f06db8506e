"""Optimizer updates as ops: one call updates every parameter of a group in place.

``adam_step_`` and ``sgd_step_`` take the lists of a parameter group (parameters, their
gradients and their state) and apply the update of ``ember.optim.Adam`` / ``AdamW`` /
``SGD`` to each. Their composites are those optimizers' per-tensor loops of elementwise
ops, written once here; a backend may register a multi-tensor kernel that computes the
same update in one pass over each parameter (PyTorch's ``fused=True``). The CPU kernel
reproduces the composite's roundings operation by operation, so which one runs changes
nothing but the time: the optimizers call these ops whatever their ``foreach`` and
``fused`` flags say.
"""
from __future__ import annotations

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import OPS, composite, defop

__all__ = ["adam_step_", "sgd_step_"]

E = O.elementwise

defop("adam_step_", "optim",
      "adam_step_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
      "Tensor[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, "
      "float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, "
      "bool decoupled_weight_decay) -> ()",
      "(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, "
      "beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)  # no out: "
      "updates params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs (amsgrad) and state_steps "
      "(+1 each, 0-d) in place; every tensor contiguous, one dtype per parameter",
      promotion="none", differentiable=False, inputs=("params", "grads"),
      doc="Adam / AdamW (decoupled_weight_decay) on a parameter group")
defop("sgd_step_", "optim",
      "sgd_step_(Tensor[] params, Tensor[] grads, Tensor[] momentum_buffers, *, float lr, "
      "float weight_decay, float momentum, float dampening, bool nesterov, bool maximize, "
      "bool is_first_step) -> ()",
      "(params, grads, momentum_buffers, lr, weight_decay, momentum, dampening, nesterov, "
      "maximize, is_first_step)  # no out: updates params and (momentum != 0) "
      "momentum_buffers in place; is_first_step: the buffers start as the gradient",
      promotion="none", differentiable=False, inputs=("params", "grads"),
      doc="SGD with momentum, dampening, Nesterov and weight decay on a parameter group")


# ---- the composites: the optimizers' per-tensor loops ---------------------------------------
def _add_scaled(a, b, alpha):
    """``a + alpha * b`` as ``Tensor.add(b, alpha=alpha)`` computes it (one pass)."""
    if type(alpha) is int and alpha == 1:
        return E("add", a, b)
    return E("addcmul", a, b, 1, value=alpha)


def _add_scaled_(a, b, alpha):
    if type(alpha) is int and alpha == 1:
        return E("add", a, b, inplace=True)
    return E("addcmul", a, b, C.scalar_like(1, a), value=alpha, inplace=True)


@composite("adam_step_")
def _adam_loop(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
               beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay):
    for i, p in enumerate(params):
        grad = E("neg", grads[i]) if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        E("add", step_t, 1, inplace=True)
        if weight_decay != 0:
            if decoupled_weight_decay:
                E("mul", p, 1 - lr * weight_decay, inplace=True)
            else:
                grad = _add_scaled(grad, p, weight_decay)
        E("lerp", exp_avg, grad, 1 - beta1, inplace=True)
        E("mul", exp_avg_sq, beta2, inplace=True)
        E("addcmul", exp_avg_sq, grad, grad, value=1 - beta2, inplace=True)
        step = O.item(step_t)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        step_size = lr / bias_correction1
        second = exp_avg_sq
        if amsgrad:
            second = max_exp_avg_sqs[i]
            E("maximum", second, exp_avg_sq, out=second)
        denom = E("add", E("div", E("sqrt", second), bias_correction2_sqrt), eps, inplace=True)
        E("addcdiv", p, exp_avg, denom, value=-step_size, inplace=True)


@composite("sgd_step_")
def _sgd_loop(params, grads, momentum_buffers, lr, weight_decay, momentum, dampening,
              nesterov, maximize, is_first_step):
    for i, p in enumerate(params):
        grad = E("neg", grads[i]) if maximize else grads[i]
        if weight_decay != 0:
            grad = _add_scaled(grad, p, weight_decay)
        if momentum != 0:
            buf = momentum_buffers[i]
            if is_first_step:
                O.copy_(buf, grad)
            else:
                E("mul", buf, momentum, inplace=True)
                _add_scaled_(buf, grad, 1 - dampening)
            grad = _add_scaled(grad, buf, momentum) if nesterov else buf
        _add_scaled_(p, grad, -lr)


# ---- the entry points ------------------------------------------------------------------------
def _native(o, lists, steps=()):
    """The device's kernel for this call, or None where the composite must run: a kernel
    takes contiguous float32 / float64 tensors, each parameter's on one device in one
    dtype (its 0-d step counters on the host)."""
    first = lists[0]
    if not first:
        return None
    dev = first[0].device
    k = o.kernels.get(dev.type)
    if k is None:
        return None
    for i, p in enumerate(first):
        dt = p.dtype
        if dt is not D.float32 and dt is not D.float64:
            return None
        for lst in lists:
            t = lst[i]
            if (t.dtype is not dt or t.device != dev or t.shape != p.shape
                    or not C.is_contiguous(t) or getattr(t, "is_sparse", False)):
                return None
    for s in steps:
        if s.shape != () or s.device.type != "cpu" or s.dtype not in (D.float32, D.float64):
            return None
    return k


def _as_real(*lists):
    """Complex tensors as their real views (PyTorch's optimizers update a complex parameter
    as the pairs of reals ``view_as_real`` shows: Adam's second moment is per part)."""
    return [[V.view_as_real(t) if t is not None and t.dtype._kind == 3 else t for t in lst]
            for lst in lists]


def _bump(*lists):
    for lst in lists:
        for t in lst:
            C.bump(t)


def adam_step_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr,
               beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay):
    """Adam's update of every parameter in ``params`` (in place; see the module)."""
    o = OPS["adam_step_"]
    attrs = dict(lr=float(lr), beta1=float(beta1), beta2=float(beta2),
                 weight_decay=float(weight_decay), eps=float(eps), amsgrad=bool(amsgrad),
                 maximize=bool(maximize), decoupled_weight_decay=bool(decoupled_weight_decay))
    if any(p.dtype._kind == 3 for p in params):
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs = _as_real(
            params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    lists = [params, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
    k = _native(o, lists, state_steps)
    if k is None:
        return _adam_loop(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                          state_steps, **attrs)
    for t in params + exp_avgs + exp_avg_sqs:
        C.check_writable(t, "adam_step_")
    O.launch(o, params[0].device, k, params, grads, exp_avgs, exp_avg_sqs,
             max_exp_avg_sqs if amsgrad else [], state_steps, **attrs)
    _bump(params, exp_avgs, exp_avg_sqs, state_steps, max_exp_avg_sqs if amsgrad else ())
    return None


def sgd_step_(params, grads, momentum_buffers, *, lr, weight_decay, momentum, dampening,
              nesterov, maximize, is_first_step):
    """SGD's update of every parameter in ``params`` (in place; see the module)."""
    o = OPS["sgd_step_"]
    # (dampening keeps its Python type: 1 - 0 is the int 1, a plain add, as Tensor.add_)
    attrs = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, dampening=dampening,
                 nesterov=bool(nesterov), maximize=bool(maximize),
                 is_first_step=bool(is_first_step))
    if any(p.dtype._kind == 3 for p in params):
        params, grads, momentum_buffers = _as_real(params, grads, momentum_buffers)
    lists = [params, grads] + ([momentum_buffers] if momentum != 0 else [])
    k = _native(o, lists)
    if k is None:
        return _sgd_loop(params, grads, momentum_buffers, **attrs)
    for t in params + (momentum_buffers if momentum != 0 else []):
        C.check_writable(t, "sgd_step_")
    O.launch(o, params[0].device, k, params, grads,
             momentum_buffers if momentum != 0 else [], lr=float(lr),
             weight_decay=float(weight_decay), momentum=float(momentum),
             dampening=float(dampening), nesterov=bool(nesterov), maximize=bool(maximize),
             is_first_step=bool(is_first_step))
    _bump(params, momentum_buffers if momentum != 0 else ())
    return None
