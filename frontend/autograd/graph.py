"""``ember.autograd.graph``: hooks on the tensors autograd saves for backward.

``saved_tensors_hooks(pack_hook, unpack_hook)``: inside the block, every tensor a node
saves is passed to ``pack_hook`` and only what it returns is kept; backward calls
``unpack_hook`` on that to get the tensor back. This is the mechanism behind activation
checkpointing (``ember.utils.checkpoint``) and offloading to host memory
(``save_on_cpu``).

>>> x = ember.tensor([1., 2., 3.], requires_grad=True)
>>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t.cpu(), lambda t: t):
...     y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""
from __future__ import annotations

from ._engine import SAVED_HOOKS, Node

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node",
           "increment_version"]


class saved_tensors_hooks:
    """Context manager installing a pack/unpack pair for the tensors saved inside."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if SAVED_HOOKS.disabled:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to the CPU in forward and back to their device in
    backward (``pin_memory`` is accepted; ember copies through its own staging)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            dev, t = packed
            return t.to(dev)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager: installing saved-tensor hooks inside raises ``error_message``."""

    def __init__(self, error_message: str):
        self.msg = error_message

    def __enter__(self):
        self.prev = SAVED_HOOKS.disabled
        SAVED_HOOKS.disabled = self.msg
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.disabled = self.prev
        return False


def increment_version(tensor) -> None:
    """Bump ``tensor``'s version counter, as an in-place op does."""
    tensor._vc[0] += 1
