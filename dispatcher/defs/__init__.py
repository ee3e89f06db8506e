"""Every op's definition — signature, promotion, scalar body or kernel convention, composite
and gradient formula — one module per op family (see ``schema.py`` for the fields).

Importing this package registers them all in ``schema.OPS``.
"""
from . import elementwise, special, copy, index, reduction, linalg, conv, nn, rnn  # noqa: F401
from . import optim  # noqa: F401
from . import special_polynomials, special_bessel  # noqa: F401
from . import spectral  # noqa: F401  (last: it builds on complex_ops, which imports the others)

__all__ = ["elementwise", "special", "copy", "index", "reduction", "linalg", "conv", "nn",
           "rnn", "optim", "special_polynomials",
           "special_bessel", "spectral"]
