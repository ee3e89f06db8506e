"""``functional_call``: run a module with some of its parameters and buffers replaced by
given tensors, for that one call (``torch.nn.utils.stateless``; ``torch.func`` exposes
the same function without the deprecation warning, from ``_functional_call`` here).

>>> import warnings, ember, ember.nn as nn
>>> m = nn.Linear(2, 1)
>>> w = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     nn.utils.stateless.functional_call(m, w, (ember.ones(1, 2),)).tolist()
[[2.0]]
"""
from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence

from ember import Tensor

from ..modules.module import Module
from ember.dispatcher.warn import warn as _warn

__all__ = ["functional_call"]

_MISSING = object()


def _split(module: Module, path: str):
    """(the submodule holding the last component of ``path``, that component)."""
    *prefix, name = path.split(".")
    for item in prefix:
        module = getattr(module, item)
        if not isinstance(module, Module):
            raise TypeError(f"{item} attribute is not an instance of nn.Module")
    return module, name


def _swap_tensor(module: Module, path: str, tensor):
    """Put ``tensor`` at dotted ``path`` (``_MISSING``: remove it); returns what was there
    (``_MISSING`` when nothing was)."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of ember.Tensor")
    module, name = _split(module, path)
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is _MISSING:
            del module._parameters[name]
        else:
            module._parameters[name] = tensor
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is _MISSING:
            del module._buffers[name]
        else:
            module._buffers[name] = tensor
    else:
        orig = getattr(module, name) if hasattr(module, name) else _MISSING
        if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of ember.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig


def _swap_tensors_dict(module: Module, named_tensors: dict) -> dict:
    originals = {}
    try:
        for name, tensor in named_tensors.items():
            originals[name] = _swap_tensor(module, name, tensor)
    except Exception:
        for name, orig in originals.items():
            _swap_tensor(module, name, orig)
        raise
    return originals


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """Give every name of a tied tensor (one tensor under several names) the value given
    for any one of them; two different values for one tied tensor is an error."""
    all_named = dict(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    names_of: dict[int, set] = {}
    for name, tensor in all_named.items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied: dict[str, set] = {}
    for names in names_of.values():
        if len(names) > 1:
            for name in names:
                tied[name] = names
    given = {name for name in parameters_and_buffers if name in tied}
    for name in given:
        tied_names = tied[name]
        values = {id(parameters_and_buffers[n]) for n in tied_names if n in given}
        if len(tied_names & given) > 1 and len(values) != 1:
            raise ValueError(f"functional_call got multiple values for keys "
                             f"{sorted(tied_names)}, which are tied. Consider using "
                             "tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given:
        for tied_name in tied[name]:
            untied[tied_name] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict,
                          tie_weights: bool = False, strict: bool = False):
    untied = (_untie_named_tensors_map(module, parameters_and_buffers) if tie_weights
              else parameters_and_buffers)
    if strict:
        valid = {name for name, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
        keys = set(untied)
        missing, unexpected = sorted(valid - keys), sorted(keys - valid)
        error_msgs = []
        if unexpected:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(error_msgs)))
    originals: dict = {}
    try:
        originals = _swap_tensors_dict(module, untied)
        yield
    finally:
        new = _swap_tensors_dict(module, originals)
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _merge_dicts(parameter_and_buffer_dicts) -> dict:
    """One dict from a dict or a sequence of dicts with disjoint keys (``torch.func``'s
    ``functional_call`` accepts both)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = Counter(k for d in parameter_and_buffer_dicts for k in d)
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                     f"dicts, but got {type(parameter_and_buffer_dicts)}")


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None,
                     *, tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the tensors of ``parameters_and_buffers`` (dotted
    names as in ``state_dict``) in place of the module's own, restored afterwards."""
    if type(module).__name__ == "DataParallel" and hasattr(module, "module"):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module`` with ``parameters_and_buffers`` replacing its own tensors for this
    call only. Deprecated in PyTorch in favour of ``torch.func.functional_call``; warns
    the same way."""
    _warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
          "and will be removed in a future version of PyTorch. Please use "
          "`torch.func.functional_call` instead which is a drop-in replacement.",
          FutureWarning)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
