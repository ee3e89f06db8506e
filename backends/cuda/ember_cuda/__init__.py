"""ember-cuda: ember's CUDA backend (native kernels, a C++ caching allocator, streams).

Loaded by ember through the ``ember.backends`` entry point, like any third-party plugin.
The user-facing API (``is_available``, ``Stream``, ``Event``, ``memory_stats``...) lives
in :mod:`ember_cuda._api` and is re-exported here (and as ``ember.cuda``)::

    import ember_cuda
    if ember_cuda.is_available():
        s = ember_cuda.Stream()
        with ember_cuda.stream(s):
            ...
"""
__version__ = "0.1.0"

from ._api import *  # noqa: F401,F403,E402
from ._api import __all__  # noqa: E402,F401
