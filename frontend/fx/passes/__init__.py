"""``ember.fx.passes``: analyses over fx graphs (``shape_prop``: shapes and dtypes of every
node from an example run)."""
from . import shape_prop

__all__ = ["shape_prop"]
