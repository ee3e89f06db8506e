"""ember-cpu: ember's native CPU backend (C++17 kernels on ember's own thread pool).

Loaded by ember through the ``ember.backends`` entry point, like any third-party plugin.
"""
__version__ = "0.1.0"
