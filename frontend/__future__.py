"""``ember.__future__``: switches for behaviour PyTorch plans to make the default
(``torch.__future__``): how ``nn.Module`` conversions (``module.to(...)``, ``.half()``,
``to_empty``) and ``load_state_dict`` replace a module's parameters.

>>> import ember.__future__
>>> ember.__future__.get_swap_module_params_on_conversion()
False
"""
from __future__ import annotations

__all__ = ["set_overwrite_module_params_on_conversion",
           "get_overwrite_module_params_on_conversion",
           "set_swap_module_params_on_conversion", "get_swap_module_params_on_conversion"]

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Make ``nn.Module`` conversions assign new ``Parameter`` objects to the module
    instead of replacing the existing parameters' data in place (their ``.grad`` is
    converted along).

    Example:
        >>> ember.__future__.set_overwrite_module_params_on_conversion(True)
        >>> m = ember.nn.Linear(2, 2)
        >>> w = m.weight
        >>> m.double().weight is w
        False
        >>> ember.__future__.set_overwrite_module_params_on_conversion(False)
    """
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = bool(value)


def get_overwrite_module_params_on_conversion() -> bool:
    """Whether ``nn.Module`` conversions assign new parameters (default False; see
    :func:`set_overwrite_module_params_on_conversion`)."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Make ``nn.Module`` conversions and ``load_state_dict`` swap each parameter's
    contents with the converted (or loaded) tensor through ``ember.utils.swap_tensors``,
    so the parameter objects (which optimizers hold) stay the same. ``load_state_dict``
    then loads ``param.module_load(state_dict[key], assign=assign)``. Takes precedence
    over :func:`set_overwrite_module_params_on_conversion`.

    Example:
        >>> ember.__future__.set_swap_module_params_on_conversion(True)
        >>> m = ember.nn.Linear(2, 2)
        >>> w = m.weight
        >>> m.double().weight is w, w.dtype
        (True, ember.float64)
        >>> ember.__future__.set_swap_module_params_on_conversion(False)
    """
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = bool(value)


def get_swap_module_params_on_conversion() -> bool:
    """Whether ``nn.Module`` conversions and ``load_state_dict`` swap parameters in place
    (default False; see :func:`set_swap_module_params_on_conversion`)."""
    return _swap_module_params_on_conversion
