"""``ember.utils.hooks`` (``torch.utils.hooks``): the handle every ``register_*_hook`` of a
Module or an optimizer returns, for code that names its type.

>>> from ember.utils.hooks import RemovableHandle
>>> m = ember.nn.Linear(2, 2)
>>> isinstance(m.register_forward_hook(lambda *args: None), RemovableHandle)
True
"""
from .._hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]


def unserializable_hook(f):
    """Mark a hook function as one that is not saved with a tensor (PyTorch's decorator: it
    sets ``f.__torch_unserializable__``, which silences the warning about saving a tensor
    that has hooks).

    Example:
        >>> @ember.utils.hooks.unserializable_hook
        ... def hook(grad):
        ...     return grad
        >>> hook.__torch_unserializable__
        True
    """
    f.__torch_unserializable__ = True
    return f
