"""The opencl kernels, one module per op family (``kernels/<family>.cl`` beside them).

``KERNELS`` maps schema op names to kernels ``kernel(out, *inputs, **attrs)``; ops not
listed run as the dispatcher's composites of these.
"""
from . import conv, copy, elementwise, index, matmul, random, reduce, scan, softmax, sort

KERNELS = {"copy": copy.copy, "fill": copy.fill, "arange": copy.arange,
           "uniform": random.uniform, "normal": random.normal,
           "gather": index.gather, "scatter": index.scatter,
           "sort": sort.sort, "bmm": matmul.bmm,
           "im2col": conv.im2col, "col2im": conv.col2im, "max_pool": conv.max_pool}
for _module in (elementwise, reduce, scan, softmax):
    KERNELS.update(_module.KERNELS)
