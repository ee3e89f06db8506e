"""Every op's definition, one module per op family (see ``schema.py`` for the fields)."""
from . import elementwise, tensor  # noqa: F401  (importing registers the definitions)
