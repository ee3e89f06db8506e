"""``RemovableHandle``, the handle hook registrations return (``torch.utils.hooks.
RemovableHandle``; public as ``ember.utils.hooks.RemovableHandle``). Kept free of ember
imports so that the autograd engine (tensor and node hooks) and ``nn.Module`` share it."""
import weakref

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Returned by ``register_*_hook``; ``handle.remove()`` unregisters the hook
    (``torch.utils.hooks.RemovableHandle``). Also a context manager.

    Example:
        >>> hooks = {}
        >>> h = RemovableHandle(hooks)
        >>> hooks[h.id] = print
        >>> with h:
        ...     len(hooks)
        1
        >>> len(hooks)
        0
    """
    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = []
        elif isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        """Unregister the hook (again: nothing happens)."""
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
