"""ember-example: a reference ember backend, the required primitives in plain NumPy.

Install it (``pip install -e examples/plugin-template``) and the device ``"example"``
appears in ember::

    >>> import ember
    >>> x = ember.arange(6.0).view(2, 3).to("example")
    >>> (x.softmax(dim=1).sum(dim=1) - 1).abs().max().item() < 1e-6
    True

The memory functions below mirror ``ember.cuda.*`` / ``torch.cuda.*``.
"""
__version__ = "0.1.0"

__all__ = ["device_count", "memory_stats", "memory_allocated", "memory_reserved",
           "empty_cache", "memory_summary"]


def _backend():
    from ember.dispatcher import backend_for
    return backend_for("example")


def device_count() -> int:
    return _backend().device_count()


def memory_stats(index: int = 0):
    """The caching allocator's statistics for ``example:index`` (PyTorch's keys)."""
    return _backend().memory_stats(index)


def memory_allocated(index: int = 0) -> int:
    return _backend().caching_allocator(index).memory_allocated()


def memory_reserved(index: int = 0) -> int:
    return _backend().caching_allocator(index).memory_reserved()


def empty_cache(index: int | None = None) -> None:
    _backend().empty_cache(index)


def memory_summary(index: int = 0) -> str:
    return _backend().caching_allocator(index).memory_summary()
