"""``ember.func``: function transforms with ``torch.func``'s API — ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call``.

They are built on ember's reverse-mode autograd, not on a separate transform
interpreter: ``grad(f)(x)`` runs ``f`` on a fresh leaf and calls ``autograd.grad``; inside
another transform (``grad(grad(f))``, ``jacrev(jacrev(f))``) the input already requires
grad, so the inner transform keeps the graph (``create_graph``) and the outer one
differentiates through it. ``jvp`` and ``jacfwd`` compute forward-mode results with the
double-vjp trick (same values as PyTorch's forward mode). ``vmap`` is a loop over the batch
(see ``ember._vmap``): right values, Python-loop speed.

>>> from ember.func import grad
>>> grad(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
tensor([ 3., 12.])
"""
from __future__ import annotations

import functools

from ember.dispatcher import ops as O
from ember.dispatcher.core import TensorBase
from ember.dispatcher.grad_mode import MODE

from . import _functions as F
from ._vmap import call_transformed, tree_flatten, tree_unflatten, vmap
from .autograd.forward_ad import _tangent_pass
from .autograd._engine import enable_grad, grad as _autograd_grad
from .nn.utils.stateless import _functional_call, _merge_dicts

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "linearize", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_"]


def _argnums_tuple(argnums, nargs, fname):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(a, int) for a in argnums):
        nums = argnums
    else:
        raise RuntimeError(f"{fname}: argnums must be int or Tuple[int, ...], got: "
                           f"{type(argnums)}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnums={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{fname}: argnums must be unique, got {argnums}")
    return tuple(out)


def _prepare(x):
    """A differentiable stand-in for input leaf ``x``: a fresh leaf, or (when ``x`` is in
    a graph already: an outer transform) a view that keeps it."""
    if not isinstance(x, TensorBase):
        raise RuntimeError(f"Expected tensors as the differentiated inputs, got "
                           f"{type(x).__name__}")
    if x.requires_grad and MODE.grad:
        return x.view_as(x), True
    return x.detach().requires_grad_(True), False


def _diff_inputs(args, nums):
    """The args with the differentiated ones replaced, the flat list of their leaves, the
    specs to rebuild each, and whether any outer graph must be kept."""
    args = list(args)
    flats, specs, nested = [], [], False
    for a in nums:
        leaves, spec = tree_flatten(args[a])
        new = []
        for leaf in leaves:
            t, keep = _prepare(leaf)
            nested = nested or keep
            new.append(t)
        args[a] = tree_unflatten(new, spec)
        flats.append(new)
        specs.append(spec)
    return args, flats, specs, nested


def _grads(output, inputs, nested, grad_outputs=None):
    flat_out, _ = tree_flatten(output)
    outs, gos = [], []
    go_flat = tree_flatten(grad_outputs)[0] if grad_outputs is not None else [None] * len(
        flat_out)
    for o, g in zip(flat_out, go_flat):
        if isinstance(o, TensorBase) and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return [O.zeros(t.shape, t.dtype, t.device) for t in inputs]
    res = _autograd_grad(tuple(outs), tuple(inputs), tuple(gos), create_graph=nested,
                         retain_graph=True, allow_unused=True)
    return [O.zeros(t.shape, t.dtype, t.device) if g is None else g
            for g, t in zip(res, inputs)]


def _detach_tree(tree, nested):
    if nested:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, TensorBase) else x for x in leaves],
                          spec)


def grad_and_value(func, argnums=0, has_aux=False):
    """Like :func:`grad`, returning ``(gradients, value)`` (``(gradients, (value, aux))``
    with ``has_aux``)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        with enable_grad():
            args2, flats, specs, nested = _diff_inputs(args, nums)
            out = call_transformed(func, args2, kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, TensorBase):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            all_inputs = [t for flat in flats for t in flat]
            gs = _grads(out, all_inputs, nested)
        pieces, k = [], 0
        for flat, spec in zip(flats, specs):
            pieces.append(tree_unflatten(gs[k:k + len(flat)], spec))
            k += len(flat)
        g = pieces[0] if isinstance(argnums, int) else tuple(pieces)
        g = _detach_tree(g, nested)
        value = _detach_tree(out, nested)
        if has_aux:
            return g, (value, _detach_tree(aux, nested))
        return g, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar function with respect to argument(s) ``argnums``
    (an int or a tuple; each argument may be a tensor or a tuple/list/dict of them).

    Example:
        >>> from ember.func import grad
        >>> x = ember.tensor([0., 1.])
        >>> grad(lambda x: x.sin().sum())(x)    # == x.cos()
        tensor([1.0000, 0.5403])
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns a tuple with the
    vector–Jacobian product for each primal (``aux`` third with ``has_aux``)."""
    with enable_grad():
        args, flats, specs, nested = _diff_inputs(primals, tuple(range(len(primals))))
        out = call_transformed(func, args, {})
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
    out_flat, out_spec = tree_flatten(out)
    for o in out_flat:
        if not isinstance(o, TensorBase):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has "
                               f"Tensor outputs, got {type(o)}")
    all_inputs = [t for flat in flats for t in flat]

    def vjp_fn(cotangents):
        ct_flat, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function.")
        for c, o in zip(ct_flat, out_flat):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{c.shape} and output[0] has a shape of {o.shape}.")
        with enable_grad():
            keep = nested or any(c.requires_grad for c in ct_flat)
            gs = _grads(out, all_inputs, keep, cotangents)
        pieces, k = [], 0
        for flat, spec in zip(flats, specs):
            pieces.append(_detach_tree(tree_unflatten(gs[k:k + len(flat)], spec), keep))
            k += len(flat)
        return tuple(pieces)

    value = _detach_tree(out, nested)
    if has_aux:
        return value, vjp_fn, _detach_tree(aux, nested)
    return value, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J · tangents)`` (forward-mode result, computed by the double-vjp
    trick)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals to be a tuple. E.g. "
                           f"it should be valid to call f(*primals). Got: {type(primals)}")
    if not isinstance(tangents, tuple):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected tangents to be a tuple. Got: "
                           f"{type(tangents)}")
    pf, pspec = tree_flatten(primals)
    tf, tspec = tree_flatten(tangents)
    if pspec != tspec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    for p, t in zip(pf, tf):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to "
                               f"have the same shape, got {tuple(p.shape)} and "
                               f"{tuple(t.shape)}")
    with enable_grad():
        args, flats, specs, nested = _diff_inputs(primals, tuple(range(len(primals))))
        out = call_transformed(func, args, {})
        aux = None
        if has_aux:
            out, aux = out
        out_flat, out_spec = tree_flatten(out)
        inputs = [t for flat in flats for t in flat]
        dummies = [O.zeros(o.shape, o.dtype, o.device).requires_grad_(True) for o in out_flat]
        # g(u) = J^T u is linear in u; its vjp with the tangents is J · tangents
        with _tangent_pass():
            gs = _grads_raw(out_flat, inputs, dummies)
        pairs = [(g, t) for g, t in zip(gs, tf) if g is not None and g.requires_grad]
        if pairs:
            res = _autograd_grad(tuple(g for g, _ in pairs), tuple(dummies),
                                 tuple(t for _, t in pairs), create_graph=nested,
                                 retain_graph=True, allow_unused=True)
        else:
            res = (None,) * len(dummies)
        jv = [O.zeros(o.shape, o.dtype, o.device) if r is None else r
              for r, o in zip(res, out_flat)]
    value = _detach_tree(out, nested)
    jv = _detach_tree(tree_unflatten(jv, out_spec), nested)
    if has_aux:
        return value, jv, _detach_tree(aux, nested)
    return value, jv


def _grads_raw(outs, inputs, grad_outputs):
    outs2 = [(o, g) for o, g in zip(outs, grad_outputs)
             if isinstance(o, TensorBase) and o.requires_grad]
    if not outs2:
        return [None] * len(inputs)
    return list(_autograd_grad(tuple(o for o, _ in outs2), tuple(inputs),
                               tuple(g for _, g in outs2), create_graph=True,
                               retain_graph=True, allow_unused=True))


def _check_outputs(out_flat, fname):
    for o in out_flat:
        if not isinstance(o, TensorBase):
            raise RuntimeError(f"{fname}(f, ...)(*args): Expected f to be a function that has "
                               f"Tensor outputs, got {type(o)}")


def _call_for_jacobian(func, args, kwargs, nums, has_aux, fname):
    """Run ``func`` on differentiable stand-ins for ``args[nums]``: (flat outputs, their
    spec, aux, the flat inputs, their flats and specs, nested)."""
    args2, flats, specs, nested = _diff_inputs(args, nums)
    out = call_transformed(func, args2, kwargs)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(f"{fname}(f, ...)(*args): output of function f should be a "
                               f"tuple: (output, aux) if has_aux is True")
        out, aux = out
    out_flat, out_spec = tree_flatten(out)
    _check_outputs(out_flat, fname)
    return out_flat, out_spec, aux, [t for flat in flats for t in flat], flats, specs, nested


def _assemble(per_out, flats, specs, argnums, out_spec, aux, has_aux, nested):
    """The Jacobians (``per_out[k][i]``: output k by flat input i) in the structure of the
    outputs and of the differentiated arguments."""
    result_leaves = []
    for jac in per_out:
        pieces, k = [], 0
        for flat, spec in zip(flats, specs):
            pieces.append(tree_unflatten(jac[k:k + len(flat)], spec))
            k += len(flat)
        result_leaves.append(pieces[0] if isinstance(argnums, int) else tuple(pieces))
    res = _detach_tree(_unflatten_outputs(result_leaves, out_spec), nested)
    if has_aux:
        return res, _detach_tree(aux, nested)
    return res


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to ``argnums``, one reverse pass per output
    element: for one output tensor and one argument a tensor of shape
    ``output.shape + input.shape`` (nested tuples/dicts follow the outputs and arguments)."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        with enable_grad():
            out_flat, out_spec, aux, inputs, flats, specs, nested = _call_for_jacobian(
                func, args, kwargs, nums, has_aux, "jacrev")
            per_out = []
            for o in out_flat:
                rows = [[] for _ in inputs]
                flat_o = o.reshape(-1)
                for j in range(flat_o.numel()):
                    # (a graph of the rows only when an outer transform differentiates them)
                    gs = _grads(flat_o[j], inputs, nested)
                    for r, g in zip(rows, gs):
                        r.append(g)
                jac = []
                for r, t in zip(rows, inputs):
                    shape = tuple(o.shape) + tuple(t.shape)
                    jac.append(F.stack(r, 0).reshape(shape) if r else
                               O.zeros(shape, t.dtype, t.device))
                per_out.append(jac)
        return _assemble(per_out, flats, specs, argnums, out_spec, aux, has_aux, nested)
    return wrapper


def _unflatten_outputs(per_output, out_spec):
    """Rebuild the outputs' structure with each leaf replaced by its Jacobian (a tensor or
    a tuple per argument, which must stay a leaf)."""
    it = iter(per_output)

    def build(spec):
        if spec is None:
            return next(it)
        kind, children, extra = spec
        built = [build(c) for c in children]
        if kind is dict:
            return dict(zip(extra, built))
        if extra is not None:
            return kind(*built)
        return kind(built)
    return build(out_spec)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` column by column, one forward-mode product per input
    element (computed, as :func:`jvp`, by the double-vjp trick): cheaper than
    :func:`jacrev` when the inputs are fewer than the outputs (``hessian``'s outer
    Jacobian); the same values."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        with enable_grad():
            out_flat, out_spec, aux, inputs, flats, specs, nested = _call_for_jacobian(
                func, args, kwargs, nums, has_aux, "jacfwd")
            dummies = [O.zeros(o.shape, o.dtype, o.device).requires_grad_(True)
                       for o in out_flat]
            # g(u) = J^T u, linear in u: d g[e] / du is column e of J for every output
            with _tangent_pass():
                gs = _grads_raw(out_flat, inputs, dummies)
            per_out = [[] for _ in out_flat]
            for g, t in zip(gs, inputs):
                cols = [[] for _ in out_flat]
                if g is not None and g.requires_grad:
                    flat_g = g.reshape(-1)
                    for e in range(flat_g.numel()):
                        res = _autograd_grad((flat_g[e],), tuple(dummies), None,
                                             create_graph=nested, retain_graph=True,
                                             allow_unused=True)
                        for c, r, o in zip(cols, res, out_flat):
                            c.append(O.zeros(o.shape, o.dtype, o.device) if r is None else r)
                for k, o in enumerate(out_flat):
                    shape = tuple(o.shape) + tuple(t.shape)
                    per_out[k].append(F.stack(cols[k], -1).reshape(shape) if cols[k] else
                                      O.zeros(shape, o.dtype, o.device))
        return _assemble(per_out, flats, specs, argnums, out_spec, aux, has_aux, nested)
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict, or a tuple of dicts with distinct keys, named as in ``state_dict``) in place of
    its own parameters and buffers for this call only (``ember.nn.utils.stateless``'s
    implementation, without its deprecation warning, as ``torch.func.functional_call``).

    Example:
        >>> from ember.func import functional_call
        >>> model = ember.nn.Linear(2, 1)
        >>> w, b = ember.ones(1, 2), ember.zeros(1)
        >>> functional_call(model, {"weight": w, "bias": b}, (ember.tensor([[1., 2.]]),))
        tensor([[3.]])
    """
    return _functional_call(module, _merge_dicts(parameter_and_buffer_dicts), args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian–vector
    product at ``primals``."""
    value = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return _detach_tree(value, False), jvp_fn


def _check_ensemble(name, models) -> None:
    """PyTorch's checks of models to be stacked for an ensemble: at least one, one
    training mode, one class (``name`` is the caller, for the message)."""
    if len(models) == 0:
        raise RuntimeError(f"{name}: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(f"{name}: Expected all models to have the same training/eval "
                           f"mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError(f"{name}: Expected all models to be of the same class.")


def stack_module_state(models) -> tuple:
    """``(params, buffers)``: each parameter and buffer of the (same-class) ``models``
    stacked along a new first dim, for ``vmap`` over ``functional_call`` (model
    ensembling). The stacked parameters are new leaves."""
    models = list(models)
    _check_ensemble("stack_module_state", models)
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for k in all_params[0]:
        tensors = [p[k] for p in all_params]
        flags = {t.requires_grad for t in tensors}
        if len(flags) > 1:
            raise RuntimeError(f"Expected {k} from each model to have the same .requires_grad")
        stacked = F.stack([t.detach() for t in tensors], 0)
        params[k] = stacked.requires_grad_(flags.pop())
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: F.stack([b[k] for b in all_buffers], 0) for k in all_buffers[0]}
    return params, buffers


def functionalize(func, *, remove: str = "mutations"):
    """``func`` itself: functionalization only changes how mutations are represented in a
    captured graph, never the values computed, and ember runs eagerly (no graph)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           "all inputs and outputs to mutable operations will be replaced "
                           "with their functional alternatives.\n     "
                           "remove='mutations_and_views': all mutable operations will be "
                           "replaced with their functional alternatives, and all views will "
                           "be replaced with their functional alternatives.")
    return func


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm module under ``root`` stop tracking running statistics (for
    ``vmap`` over them), in place; returns ``root``."""
    for m in root.modules():
        if hasattr(m, "track_running_stats") and hasattr(m, "running_mean"):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
