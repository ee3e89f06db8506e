"""Code generation from the op definitions: C++ (cpu, cuda) and OpenCL C kernels.

``python -m ember.dispatcher.codegen cxx OUT.h`` writes the C++ header the cpu and cuda
backends compile (their CMake runs it); the OpenCL backend renders its sources at run
time with :mod:`.opencl`; ``... docs docs/ops.md`` writes the ops reference page.
"""
from . import cxx, docs, opencl  # noqa: F401

__all__ = ["cxx", "docs", "opencl"]
