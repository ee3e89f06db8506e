"""ember.dispatcher: the op schema, the kernel table, plugin loading, devices, dtypes.

This package is what backends import (and the only part of ember they may import).
It never imports a backend: backends find it through the ``ember.backends`` entry
points and register their kernels into :data:`schema.OPS`.
"""
import hashlib
import os

from . import dtypes, schema
from .backend import API_VERSION, Backend
from .device import device, to_device
from .hookspecs import hookimpl, hookspec
from .plugins import (BACKENDS, ENTRY_POINT_GROUP, PluginRecord, backend_for, ensure_loaded,
                      plugin_records, register_backend, unregister_backend)
from .schema import OPS, PRIMITIVES, OpDef, coverage
from . import core, ops, views, defs  # noqa: F401  (defs register every op)
from . import complex_ops  # noqa: F401  (complex tensors: installs its entries in ops)
from .core import TensorBase, set_tensor_factory
from .random import Generator, default_generator


def get_include() -> str:
    """The directory of ember's C++ kernel headers (``#include <ember/...>``), shared by the
    cpu and cuda backends and by third-party C++/CUDA plugins, as ``numpy.get_include()``.

    >>> import os, ember.dispatcher
    >>> os.path.isfile(os.path.join(ember.dispatcher.get_include(), "ember", "dtype.h"))
    True
    """
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def include_digest() -> str:
    """A SHA-256 of every header under :func:`get_include` (names and contents): generated
    kernels that include them are cached on disk under keys holding it, so that a changed
    header (an ember upgrade) never loads a library built against the old one."""
    global _INCLUDE_DIGEST
    if _INCLUDE_DIGEST is None:
        h = hashlib.sha256()
        root = get_include()
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read() + b"\0")
        _INCLUDE_DIGEST = h.hexdigest()
    return _INCLUDE_DIGEST


_INCLUDE_DIGEST = None


__all__ = [
    "API_VERSION", "Backend", "BACKENDS", "ENTRY_POINT_GROUP", "Generator", "OPS", "OpDef",
    "PRIMITIVES", "PluginRecord", "TensorBase", "backend_for", "coverage", "default_generator",
    "device", "dtypes", "ensure_loaded", "get_include", "hookimpl", "hookspec", "include_digest",
    "ops", "plugin_records", "register_backend", "schema", "set_tensor_factory", "to_device",
    "unregister_backend", "views",
]
