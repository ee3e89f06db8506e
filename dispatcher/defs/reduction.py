"""Reductions, scans, softmax and sorting; and the composites built on them: order
statistics (median, kthvalue, mode, quantile), scans with indices (cummax, cummin,
logcumsumexp), counting (bincount, histc, histogramdd), searching (searchsorted, bucketize,
isin, unique), statistics and distances (cov, corrcoef, cdist, dist, renorm), numerical
calculus (diff, trapezoid, gradient) and scatter_reduce / index_reduce.

One import point for them all: the definitions live in :mod:`._reduction_core` (reductions,
scans, softmax, sorting), :mod:`.order_statistics`, :mod:`.search` and :mod:`.statistics`.
"""
from ._reduction_core import all_, any_, norm, std, topk
from .order_statistics import (aminmax, cummax, cummin, kthvalue, logcumsumexp, median,
                               median_dim, mode, nanmedian, nanmedian_dim, nanquantile, quantile)
from .search import (bincount, bucketize, histc, histogramdd, index_reduce, isin, scatter_reduce,
                     searchsorted, unique, unique_consecutive)
from .statistics import (cdist, corrcoef, cov, cumulative_trapezoid, diff, dist,
                         numerical_gradient, renorm, trace, trapezoid)

__all__ = ["all_", "any_", "norm", "std", "topk", "aminmax", "cummax", "cummin", "kthvalue",
           "logcumsumexp", "median", "median_dim", "mode", "nanmedian", "nanmedian_dim",
           "nanquantile", "quantile", "bincount", "bucketize", "histc", "histogramdd",
           "index_reduce", "isin", "scatter_reduce", "searchsorted", "unique",
           "unique_consecutive", "cdist", "corrcoef", "cov", "cumulative_trapezoid", "diff",
           "dist", "numerical_gradient", "renorm", "trace", "trapezoid"]
