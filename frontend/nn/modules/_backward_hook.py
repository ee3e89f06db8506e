"""Module backward hooks (``register_full_backward_hook``, ``register_full_backward_pre_hook``).

A call of a module with such hooks passes its tensor inputs, and then its tensor outputs,
through an identity autograd Function each. The backward of the output identity sees every
gradient with respect to the module's outputs at once (the pre-hooks run there and may
replace them); the backward of the input identity sees every gradient with respect to the
inputs (the hooks run there, with the outputs' gradients kept from before, and may replace
the inputs' gradients). This is how PyTorch's ``torch.utils.hooks.BackwardHook`` places
them, so the hooks see the same tuples: one entry per positional argument (``None`` where
it is not a tensor), one per output.
"""
from __future__ import annotations


from ember.autograd import Function, is_grad_enabled
from ember.dispatcher.core import TensorBase
from ember.dispatcher.warn import warn as _warn

_NO_INPUT_GRAD = ("Full backward hook is firing when gradients are computed with respect to "
                  "module outputs since no inputs require gradients. See "
                  "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                  "#torch.nn.Module.register_full_backward_hook for more details.")


class BackwardHookFunction(Function):
    """Returns its tensors unchanged (aliases, so that an in-place op on a module's output
    is recorded after this node); its backward hands the gradients to ``on_backward``."""

    @staticmethod
    def forward(ctx, on_backward, materialize, *tensors):
        ctx.on_backward = on_backward
        ctx.set_materialize_grads(materialize)
        outs = tuple(t.detach() for t in tensors)
        ctx.mark_non_differentiable(*(o for o, t in zip(outs, tensors)
                                      if not t.requires_grad))
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *ctx.on_backward(grads))


def _pack_with_none(indices, values, size):
    res = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


class BackwardHook:
    """The backward hooks of one module call (``torch.utils.hooks.BackwardHook``)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = -1
        self.input_tensors_index = None
        self.n_outputs = -1
        self.output_tensors_index = None

    @staticmethod
    def _apply(args, on_backward, materialize):
        """``args`` with its tensors passed through one identity node, and their indices
        (``None`` when no tensor requires grad or grad mode is off: nothing is wrapped)."""
        index = [i for i, a in enumerate(args) if isinstance(a, TensorBase)]
        if not (is_grad_enabled() and any(args[i].requires_grad for i in index)):
            return args, None
        wrapped = BackwardHookFunction.apply(on_backward, materialize, *(args[i] for i in index))
        res = list(args)
        for i, w in zip(index, wrapped):
            res[i] = w
        return tuple(res), index

    def setup_input_hook(self, args):
        """Wrap the positional arguments; returns the new ones."""
        def on_backward(grads):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing through the outputs
                return grads
            res = _pack_with_none(self.input_tensors_index, grads, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of "
                                       f"grad_input, got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            # the hooks saw these tensors (and may keep them): what flows on, perhaps into a
            # leaf's .grad that later backward passes add to in place, is a copy
            return tuple(None if res[i] is None else res[i].clone()
                         for i in self.input_tensors_index)

        new_args, self.input_tensors_index = self._apply(args, on_backward, True)
        self.n_inputs = len(args)
        return new_args

    def setup_output_hook(self, result):
        """Wrap the module's output (a tensor or a tuple); returns the new output."""
        def on_backward(grads):
            self.grad_outputs = _pack_with_none(self.output_tensors_index, grads,
                                                self.n_outputs)
            for hook in self.user_pre_hooks:
                out = hook(self.module, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(self.grad_outputs):
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(out)}, but expected "
                                       f"{len(self.grad_outputs)}")
                self.grad_outputs = out
            local = self.grad_outputs
            if self.input_tensors_index is None:
                _warn(_NO_INPUT_GRAD)
                grad_inputs = (None,) * self.n_inputs
                for hook in self.user_hooks:
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple)
                                                and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for "
                                           "all gradients.")
                self.grad_outputs = None
            return tuple(local[i] for i in self.output_tensors_index)

        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        new, self.output_tensors_index = self._apply(args, on_backward, False)
        self.n_outputs = len(args)
        return new if is_tuple else new[0]
