"""``ember._dynamo``: the names of ``torch._dynamo`` that programs use around
``ember.compile`` (its capture is lazy, not TorchDynamo's bytecode analysis:
docs/compile.md): ``reset``, ``explain``, ``list_backends``, ``register_backend``,
``config`` and the exceptions in ``exc``."""
from __future__ import annotations

from .. import _compile, compiler
from . import config, exc

__all__ = ["reset", "explain", "list_backends", "register_backend", "lookup_backend",
           "config", "exc", "OptimizedModule", "disable", "is_compiling"]

reset = _compile.reset
explain = _compile.explain
list_backends = _compile.list_backends
register_backend = _compile.register_backend
lookup_backend = _compile.lookup_backend
OptimizedModule = _compile.OptimizedModule


disable = compiler.disable
is_compiling = compiler.is_compiling
