"""``ember._foreach_*``: PyTorch's list-at-a-time ops (``torch._foreach_add_`` and kin), which
optimizers, EMA helpers (timm's ModelEmaV3, diffusers' EMAModel) and gradient clipping call
on lists of parameters. Each applies the ordinary op to every tensor of the list (so autograd
and every device work as for the op itself) with PyTorch's argument forms and checks: the
second operand a scalar, a list of scalars, a 0-dim tensor or a list of tensors; the
out-of-place forms return a tuple, the in-place forms (``_``) the list they were given.

>>> import ember
>>> ps = [ember.ones(2), ember.zeros(1)]
>>> ember._foreach_lerp_(ps, [ember.zeros(2), ember.ones(1)], 0.25)
[tensor([0.7500, 0.7500]), tensor([0.2500])]
"""
from __future__ import annotations

from ember.dispatcher.core import TensorBase

from . import _functions as F

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow")

__all__ = []


def _check_list(tensors, op):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'self' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")


def _spread(other, n, op):
    """The second operand, one per tensor of the list."""
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            if other and not isinstance(other[0], TensorBase):
                raise RuntimeError("Tensor list must have same number of elements as scalar "
                                   "list.")
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} "
                               f"and {len(other)}")
        return list(other)
    if isinstance(other, TensorBase) and other.dim() != 0 and op != "lerp":
        raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {other.dim()} "
                           f"dimensions and {other.numel()} elements.")
    return [other] * n


def _unary(name):
    def out_of_place(self):
        _check_list(self, f"_foreach_{name}")
        return tuple(getattr(t, name)() for t in self)

    def in_place(self):
        _check_list(self, f"_foreach_{name}_")
        for t in self:
            getattr(t, name + "_")()
        return self
    return out_of_place, in_place


def _apply(t, name, o, extra, inplace):
    """One tensor's op; maximum / minimum (which have no in-place method) with a scalar are
    clamp_min / clamp_max (both propagate NaN), in place through copy_."""
    if name in ("maximum", "minimum"):
        if not isinstance(o, TensorBase):
            name = "clamp_min" if name == "maximum" else "clamp_max"
        elif inplace:
            return t.copy_(getattr(F, name)(t, o))
    return getattr(t, name + "_" if inplace else name)(o, **extra)


def _binary(name):
    def out_of_place(self, other, *, alpha=None):
        if not isinstance(self, (list, tuple)) and name == "pow":   # pow(scalar, tensors)
            _check_list(other, "_foreach_pow")
            return tuple(F.pow(self, t) for t in other)
        _check_list(self, f"_foreach_{name}")
        extra = {} if alpha is None else {"alpha": alpha}
        return tuple(_apply(t, name, o, extra, False)
                     for t, o in zip(self, _spread(other, len(self), name)))

    def in_place(self, other, *, alpha=None):
        _check_list(self, f"_foreach_{name}_")
        extra = {} if alpha is None else {"alpha": alpha}
        for t, o in zip(self, _spread(other, len(self), name)):
            _apply(t, name, o, extra, True)
        return self
    return out_of_place, in_place


def _lerp():
    def out_of_place(self, tensors1, weight):
        _check_list(self, "_foreach_lerp")
        n = len(self)
        return tuple(t.lerp(e, w) for t, e, w in zip(self, _spread(tensors1, n, "lerp"),
                                                      _spread(weight, n, "lerp")))

    def in_place(self, tensors1, weight):
        _check_list(self, "_foreach_lerp_")
        n = len(self)
        for t, e, w in zip(self, _spread(tensors1, n, "lerp"), _spread(weight, n, "lerp")):
            t.lerp_(e, w)
        return self
    return out_of_place, in_place


def _addc(name):
    def out_of_place(self, tensor1, tensor2, value=1):
        _check_list(self, f"_foreach_{name}")
        n = len(self)
        return tuple(getattr(t, name)(a, b, value=v)
                     for t, a, b, v in zip(self, _spread(tensor1, n, name),
                                           _spread(tensor2, n, name), _values(value, n)))

    def in_place(self, tensor1, tensor2, value=1):
        _check_list(self, f"_foreach_{name}_")
        n = len(self)
        for t, a, b, v in zip(self, _spread(tensor1, n, name), _spread(tensor2, n, name),
                              _values(value, n)):
            getattr(t, name + "_")(a, b, value=v)
        return self
    return out_of_place, in_place


def _values(value, n):
    """addcmul / addcdiv's ``value``: a scalar, a list of scalars or a 1-dim tensor of them."""
    if isinstance(value, TensorBase):
        if value.dim() != 1:
            raise RuntimeError("_foreach_addcmul / _foreach_addcdiv: a tensor of scalars must "
                               f"be 1-dim, got {value.dim()} dimensions")
        value = value.tolist()
    return _spread(value, n, "value")


def _export(name, out_of_place, in_place, what):
    for fn, suffix, ret in ((out_of_place, "", "a tuple of the results"),
                            (in_place, "_", "the list, changed in place")):
        full = f"_foreach_{name}{suffix}"
        fn.__name__ = fn.__qualname__ = full
        fn.__doc__ = (f"``{name}{suffix}`` applied to every tensor of a list ({what}); "
                      f"returns {ret}, as ``torch.{full}``.")
        globals()[full] = fn
        __all__.append(full)


for _name in _UNARY:
    _export(_name, *_unary(_name), "no other operand")
for _name in _BINARY:
    _export(_name, *_binary(_name),
            "the other operand: a scalar, a list of scalars, a 0-dim tensor or a list of "
            "tensors" + ("; ``alpha`` as in the op" if _name in ("add", "sub") else ""))
_export("lerp", *_lerp(), "the ends a list of tensors; weight a scalar, a tensor or a list "
        "of tensors")
for _name in ("addcmul", "addcdiv"):
    _export(_name, *_addc(_name), "``value``: a scalar, a list of scalars or a 1-dim tensor "
            "of them")
del _name


def _foreach_zero_(self):
    """Zero every tensor of a list in place; returns the list (``torch._foreach_zero_``)."""
    _check_list(self, "_foreach_zero_")
    for t in self:
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    """Copy ``src[i]`` into ``self[i]`` for every i; returns the list (``torch._foreach_copy_``)."""
    _check_list(self, "_foreach_copy_")
    for t, s in zip(self, _spread(src, len(self), "copy")):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_clone(self, *, memory_format=None):
    """A copy of every tensor of a list, as a tuple (``torch._foreach_clone``)."""
    _check_list(self, "_foreach_clone")
    extra = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(F.clone(t, **extra) for t in self)


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002  (PyTorch's argument name)
    """The vector ``ord``-norm of every tensor of a list, as a tuple of 0-dim tensors
    (``torch._foreach_norm``; ``dtype`` is the result's)."""
    _check_list(self, "_foreach_norm")
    return tuple(F.norm((t if dtype is None else t.to(dtype)).flatten(), ord) for t in self)


def _foreach_max(self):
    """The largest element of every tensor of a list, as a tuple of 0-dim tensors
    (``torch._foreach_max``)."""
    _check_list(self, "_foreach_max")
    return tuple(t.max() for t in self)


__all__ += ["_foreach_zero_", "_foreach_copy_", "_foreach_clone", "_foreach_norm",
            "_foreach_max"]
