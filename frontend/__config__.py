"""``ember.__config__``: how this ember was built (``torch.__config__``).

Packages read it to pick code paths (torch_geometric looks for ``USE_MKL=OFF``: ember
links no MKL).

>>> import ember
>>> "USE_MKL=OFF" in ember.__config__.show()
True
"""
from __future__ import annotations

import importlib.metadata as _metadata
import os
import platform

from . import backends as _backends
from ._ops_misc import get_num_interop_threads
from ._threads import get_num_threads

__all__ = ["show", "parallel_info"]

_BACKENDS = ("ember-cpu", "ember-cuda", "ember-opencl")


def _version(dist: str) -> str | None:
    try:
        return _metadata.version(dist)
    except _metadata.PackageNotFoundError:
        return None


def show() -> str:
    """A description of this build: ember's version, the first-party backend
    distributions installed, and the build options, in PyTorch's ``KEY=value`` form.

    Example:
        >>> print(ember.__config__.show().splitlines()[0])  # doctest: +ELLIPSIS
        ember ... built with:
    """
    from_ember = _version("ember-tensor") or "unknown"
    lines = [f"ember {from_ember} built with:",
             f"  - Python {platform.python_version()} ({platform.machine()})"]
    for dist in _BACKENDS:
        v = _version(dist)
        if v is not None:
            lines.append(f"  - {dist} {v}")
    flags = {"USE_MKL": _backends.mkl.is_available(),
             "USE_MKLDNN": _backends.mkldnn.is_available(),
             "USE_OPENMP": _backends.openmp.is_available()}
    lines.append("  - Build settings: " + ", ".join(
        f"{k}={'ON' if v else 'OFF'}" for k, v in flags.items()))
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    """The CPU backend's thread settings (intra-op and inter-op threads).

    Example:
        >>> print(ember.__config__.parallel_info().splitlines()[0])
        ember/Parallel:
    """
    return ("ember/Parallel:\n"
            f"\tember.get_num_threads() : {get_num_threads()}\n"
            f"\tember.get_num_interop_threads() : {get_num_interop_threads()}\n"
            f"\tOMP_NUM_THREADS : {os.environ.get('OMP_NUM_THREADS', '(not set)')}\n")
