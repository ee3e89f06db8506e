"""``ember.utils``: helpers around the tensor library (``ember.utils.data``)."""
from . import data  # noqa: F401

__all__ = ["data"]
