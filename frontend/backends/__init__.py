"""``ember.backends``: the installed backends, their op coverage, the CPU fallback's
accounting, and PyTorch's per-backend flag namespaces.

The flag modules (``ember.backends.cudnn``, ``.cuda``, ``.mps``, ``.mkldnn``, ``.mkl``,
``.openmp``, ``.opt_einsum``) exist because programs set or read them in their first lines
(``torch.backends.cudnn.benchmark = True``). Their flags are plain attributes that keep
what is assigned; ``is_available()`` answers honestly for ember (no cuDNN, no MPS).

>>> import ember
>>> sorted(ember.backends.coverage("cpu").values())[:1]
['composite']
>>> ember.backends.cudnn.is_available()
False
"""
from ember.dispatcher.fallback import fallback_report, reset_fallback_report
from ember.dispatcher.plugins import plugin_records
from ember.dispatcher.schema import coverage

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["fallback_report", "reset_fallback_report", "plugin_records", "coverage",
           "cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
