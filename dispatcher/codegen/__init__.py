"""Code generation from the op definitions: C++ (cpu, cuda) and OpenCL C kernels.

``python -m ember.dispatcher.codegen cxx OUT.h`` writes the C++ header the cpu and cuda
backends compile (their CMake runs it); the OpenCL backend renders its sources at run
time with :mod:`.opencl`; ``... docs docs/ops.md`` writes the ops reference page.
"""
import os

from . import cxx, docs, opencl  # noqa: F401

__all__ = ["cxx", "docs", "opencl", "cache_dir"]


def cache_dir() -> str:
    """Where backends keep the code ``ember.compile`` generates (the cpu backend's shared
    libraries, the cuda backend's PTX): ``$EMBER_COMPILE_CACHE``, else
    ``$XDG_CACHE_HOME/ember/compile`` (``~/.cache/ember/compile``)."""
    path = os.environ.get("EMBER_COMPILE_CACHE")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        path = os.path.join(base, "ember", "compile")
    return path
