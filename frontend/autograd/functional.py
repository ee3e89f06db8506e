"""``ember.autograd.functional``: Jacobians, Hessians and their products for functions of
tensors, on top of reverse-mode ``autograd.grad`` (PyTorch's API and results).

``jvp`` and ``hvp`` use the double-vjp trick (differentiate a vjp with respect to its
vector), as PyTorch's do; ``vectorize=True`` is accepted and computes the same values row by
row (ember has no batching transform).

>>> from ember.autograd.functional import jacobian
>>> jacobian(lambda x: x ** 2, ember.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])
"""
from __future__ import annotations

from ember.dispatcher import ops as O
from ember.dispatcher import views as V
from ember.dispatcher.core import TensorBase

from .. import _functions as F
from ._engine import enable_grad, grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(inp, arg_name, fn_name):
    """``(is_tuple, tuple_of_tensors)`` with PyTorch's type errors."""
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, TensorBase):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or "
                                f"a tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple`` (one flag, or two for nested results)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh leaves (or, with ``create_graph``, views keeping the caller's graph)."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(V.view(inp, inp.shape))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], TensorBase):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be "
                               f"{_size(el_other)} but got {_size(el_v)}.")


def _size(t) -> str:
    return repr(t.shape)


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    if input_type not in ("outputs", "grad_inputs", "jacobian", "hessian"):
        raise RuntimeError("Invalid input_type to _check_requires_grad")
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(f"The hessian of the user-provided function with respect "
                                   f"to input {i} is independent of the input. This is not "
                                   "allowed in strict mode. You should ensure that your "
                                   "function is thrice differentiable and that the hessian "
                                   "depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(f"While computing the hessian, found that the jacobian of "
                                   f"the user-provided function with respect to input {i} is "
                                   "independent of the input. This is not allowed in strict "
                                   "mode. You should ensure that your function is twice "
                                   "differentiable and that the jacobian depends on the "
                                   "inputs (this would be violated by a linear function for "
                                   "example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of "
                                   "the inputs of the user-provided function. This is not "
                                   "allowed in strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require "
                               "gradients. The outputs must be computed in a differentiable "
                               "manner from the input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False,
                   retain_graph=None):
    """``autograd.grad`` over the outputs that require grad (None for the others)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return _grad(tuple(new_outputs), inputs, tuple(new_grad_outputs), allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(f"The output of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode.")
                if stage == "back_trick":
                    raise RuntimeError(f"The gradient with respect to the input is "
                                       f"independent of entry {i} in the grad_outputs when "
                                       "using the double backward trick to compute forward "
                                       "mode gradients. This is not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode.")
                raise RuntimeError(f"The hessian of the user-provided function is independent "
                                   f"of entry {i} in the grad_jacobian. This is not allowed in "
                                   "strict mode as it prevents from using the double backward "
                                   "trick to replace forward mode AD.")
            g = O.zeros(refs[i].shape, refs[i].dtype, refs[i].device)
        res.append(g)
    return tuple(res)


def _call(func, inputs, fn_name):
    outputs = func(*inputs)
    is_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    return is_tuple, outputs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T · J)``: the vector–Jacobian product at ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided "
                                   "function returns a single Tensor with a single element.")
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        vjp_ = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    vjp_ = _grad_postprocess(vjp_, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(vjp_, is_inputs_tuple))


def _inputs_and_v(inputs, v, create_graph, fn_name):
    """The inputs and the vector ``v`` of jvp / vhp / hvp, checked as PyTorch's: ``v`` may
    be left out only for a single one-element input."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return is_inputs_tuple, inputs, v


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J · v)``: the Jacobian–vector product (double-vjp trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "jvp")
        is_outputs_tuple, outputs = _call(func, inputs, "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        grad_outputs = tuple(O.zeros(out.shape, out.dtype, out.device).requires_grad_(True)
                             for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        if create_graph:
            with enable_grad():
                grad_res = _autograd_grad(grad_inputs, grad_outputs, v,
                                          create_graph=create_graph)
                jvp_ = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
        else:
            grad_res = _autograd_grad(grad_inputs, grad_outputs, v,
                                      create_graph=create_graph)
            jvp_ = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    jvp_ = _grad_postprocess(jvp_, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(jvp_, is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for one input and one output a tensor of
    shape ``output.shape + input.shape``; tuples of them for tuple inputs/outputs."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode". Hint: If your function has more outputs than '
                             'inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian is only implemented for `vectorize=True`.")
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy="
                                  "\"forward-mode\"` is not supported with "
                                  "`create_graph=True`.")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        jacobian_ = []
        for i, out in enumerate(outputs):
            jac_i = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(flat.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError("The jacobian of the user-provided function is "
                                               "independent of input {i}. This is not allowed "
                                               "in strict mode when create_graph=True.")
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {el_idx}. This is not "
                                               "allowed in strict mode.")
                        jac_i_el.append(O.zeros(inp_el.shape, inp_el.dtype, inp_el.device))
            jacobian_.append(tuple(
                F.stack(jac_i_el, 0).reshape(tuple(out.shape) + tuple(inp_el.shape))
                if jac_i_el else O.zeros(tuple(out.shape) + tuple(inp_el.shape),
                                         inp_el.dtype, inp_el.device)
                for jac_i_el, inp_el in zip(jac_i, inputs)))
        jacobian_ = tuple(_grad_postprocess(j, create_graph) for j in jacobian_)
        return _tuple_postprocess(jacobian_, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: for one input a tensor of shape
    ``input.shape + input.shape``, for a tuple of inputs a tuple of tuples."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function",
                                        "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple or not isinstance(out, TensorBase):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to hessian should "
                               f"contain a single element, but got {out.numel()} elements")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T · H)`` for a scalar ``func``."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "vhp")
        outputs = _hessian_output(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        vhp_ = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    vhp_ = _grad_postprocess(vhp_, create_graph)
    return _tuple_postprocess(outputs, False), _tuple_postprocess(vhp_, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H · v)`` for a scalar ``func`` (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "hvp")
        outputs = _hessian_output(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(O.zeros(inp.shape, inp.dtype, inp.device).requires_grad_(True)
                         for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        hvp_ = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    hvp_ = _grad_postprocess(hvp_, create_graph)
    return _tuple_postprocess(outputs, False), _tuple_postprocess(hvp_, is_inputs_tuple)


def _hessian_output(func, inputs, fn_name, strict):
    is_outputs_tuple, outputs = _call(func, inputs, fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple or not isinstance(outputs[0], TensorBase):
        raise RuntimeError(f"The function given to {fn_name} must return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           f"contain a single element")
    return outputs
