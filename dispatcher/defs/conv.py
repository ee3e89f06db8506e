"""Convolution and pooling building blocks (1 to 3 spatial dims): im2col, col2im, max_pool."""
from __future__ import annotations

import itertools
import math

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient
from ._products import matmul

__all__ = ["depthwise_conv", "depthwise_conv_input", "depthwise_conv_weight", "dense_conv",
           "dense_conv_input", "dense_conv_weight"]

E = O.elementwise

defop("im2col", "index",
      "im2col(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride, "
      "int[] blocks, *, Scalar value=0) -> Tensor  # (N, C, *kernel_size, *blocks)",
      "(out, x, kernel, dilation, padding, stride, blocks, value=0)  # out: any strides",
      promotion="none")
defop("col2im", "index",
      "col2im(Tensor cols, int[] kernel_size, int[] dilation, int[] padding, int[] stride, "
      "int[] size) -> Tensor  # (N, C, *k, *blocks) summed into (N, C, *size)",
      "(out, cols, kernel, dilation, padding, stride, size)", promotion="none")
defop("max_pool", "index",
      "max_pool(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride, "
      "int[] blocks) -> (Tensor values, Tensor indices)",
      "(values, indices, x, kernel, dilation, padding, stride, blocks)", promotion="none")


def _extent(sp, blocks, kernel, dilation, padding, stride):
    """Per spatial dim, a padded extent holding both the input and every block."""
    return tuple(max(padding[i] + sp[i], (blocks[i] - 1) * stride[i]
                     + dilation[i] * (kernel[i] - 1) + 1) for i in range(len(kernel)))


@composite("im2col")
def _im2col(x, kernel, dilation, padding, stride, blocks, value=0):
    """Pad into a buffer filled with ``value``, then copy one strided view of it."""
    nd = len(kernel)
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    ext = _extent(sp, blocks, kernel, dilation, padding, stride)
    buf = O.full((n, c) + ext, value, x.dtype, x.device)
    bs = buf._stride
    inner = C.view_of(buf, x.shape, bs, sum(padding[i] * bs[2 + i] for i in range(nd)))
    O.copy_(inner, x)
    patches = C.view_of(buf, (n, c) + tuple(kernel) + tuple(blocks),
                        bs[:2] + tuple(dilation[i] * bs[2 + i] for i in range(nd))
                        + tuple(stride[i] * bs[2 + i] for i in range(nd)), 0)
    return O.contiguous(patches)


@composite("col2im")
def _col2im(cols, kernel, dilation, padding, stride, size):
    """One strided in-place add per kernel offset (a loop over the kernel, not the pixels)."""
    nd = len(kernel)
    n, c = cols.shape[0], cols.shape[1]
    blocks = cols.shape[2 + nd:]
    ext = _extent(size, blocks, kernel, dilation, padding, stride)
    buf = O.zeros((n, c) + ext, cols.dtype, cols.device)
    bs, cs = buf._stride, cols._stride
    win_strides = bs[:2] + tuple(stride[i] * bs[2 + i] for i in range(nd))
    src_strides = cs[:2] + cs[2 + nd:]
    for offs in itertools.product(*[range(k) for k in kernel]):
        win = C.view_of(buf, (n, c) + tuple(blocks), win_strides,
                        sum(offs[i] * dilation[i] * bs[2 + i] for i in range(nd)))
        src = C.view_of(cols, (n, c) + tuple(blocks), src_strides,
                        cols._offset + sum(offs[i] * cs[2 + i] for i in range(nd)))
        E("add", win, src, inplace=True)
    crop = C.view_of(buf, (n, c) + tuple(size), bs,
                     sum(padding[i] * bs[2 + i] for i in range(nd)))
    return O.contiguous(crop)


@composite("max_pool")
def _max_pool(x, kernel, dilation, padding, stride, blocks):
    """im2col padded with the lowest value, max/argmax over the window, and the argmax
    turned into a flat index of the input plane."""
    nd = len(kernel)
    cols = O.im2col(x, kernel, dilation, padding, stride, blocks, O._lowest(x.dtype))
    k = C.numel(kernel)
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    cols = C.view_of(cols, (n, c, k) + tuple(blocks),
                     C.contiguous_strides((n, c, k) + tuple(blocks)), cols._offset)
    values = O.reduce("max", cols, 2)
    rem = O.arg_reduce("argmax", cols, 2)
    index, mult = None, 1
    for i in reversed(range(nd)):
        coord = E("remainder", rem, kernel[i])
        rem = E("div", rem, kernel[i], rounding_mode="floor")
        shape = [1] * (2 + nd)
        shape[2 + i] = blocks[i]
        start = E("sub", E("mul", O.arange(0, blocks[i], 1, D.int64, x.device), stride[i]),
                  padding[i])
        pos = E("add", V.reshape(start, tuple(shape)), E("mul", coord, dilation[i]))
        index = E("mul", pos, mult) if index is None else E("add", index, E("mul", pos, mult))
        mult *= sp[i]
    return values, index


@gradient("im2col")
def _(g, self_shape, kernel_size, dilation, padding, stride):
    return (O.col2im(g, tuple(self_shape[2:]), kernel_size, dilation, padding, stride),)


@gradient("col2im")
def _(g, cols_shape, kernel_size, dilation, padding, stride):
    blocks = tuple(cols_shape[2 + len(kernel_size):])
    return (O.im2col(g, kernel_size, dilation, padding, stride, blocks),)


@gradient("max_pool")
def _(g, self_shape, result1):
    """Scatter-add the gradient to the input positions the indices name."""
    n, c = self_shape[0], self_shape[1]
    base = O.zeros((n, c, math.prod(self_shape[2:])), g.dtype, g.device)
    # in place into the fresh zeros: one buffer the input's size, not two
    flat = O.scatter_(base, 2, V.reshape(result1, (n, c, -1)), V.reshape(g, (n, c, -1)),
                      reduce="add")
    return (V.reshape(flat, self_shape),)


# ---- depthwise convolution (groups == channels, one filter per channel) ----------------------
# Direct kernels where a backend has them (no im2col matrix K times the input, no GEMMs of one
# row); the three ops are linear in each input and each one's gradient is made of the others.
_DW = ("(Tensor {a}, Tensor {b}, int[] kernel, int[] dilation, int[] padding, int[] stride, "
       "int[] sizes) -> Tensor")
_DW_KERNEL = "(out, a, b, kernel, dilation, padding, stride, sizes)"
defop("depthwise_conv", "conv", "depthwise_conv" + _DW.format(a="input", b="weight")
      + "  # (N, C, *sizes): sizes are the output blocks", _DW_KERNEL, promotion="none",
      inputs=("input", "weight"),
      doc="input (N, C, *sp) with filters (C, 1, *kernel): convolution with groups = C")
defop("depthwise_conv_input", "conv", "depthwise_conv_input" + _DW.format(a="grad", b="weight")
      + "  # (N, C, *sizes): sizes are the input's", _DW_KERNEL, promotion="none",
      inputs=("grad", "weight"), doc="the gradient of depthwise_conv with respect to its input")
defop("depthwise_conv_weight", "conv", "depthwise_conv_weight" + _DW.format(a="grad", b="input")
      + "  # (C, 1, *kernel): sizes are grad's blocks", _DW_KERNEL, promotion="none",
      inputs=("grad", "input"),
      doc="the gradient of depthwise_conv with respect to its filters")


def _dw(name, a, b, kernel, dilation, padding, stride, sizes, shape):
    attrs = {"kernel": tuple(kernel), "dilation": tuple(dilation), "padding": tuple(padding),
             "stride": tuple(stride), "sizes": tuple(int(s) for s in sizes)}
    return O.composite_op(name, (a, b), attrs, [(tuple(shape), a.dtype)], a.device)


def depthwise_conv(input, weight, kernel, dilation, padding, stride, blocks):
    """(N, C, *blocks): ``input`` (N, C, *sp) convolved with ``weight`` (C, 1, *kernel)."""
    return _dw("depthwise_conv", input, weight, kernel, dilation, padding, stride, blocks,
               input.shape[:2] + tuple(blocks))


def depthwise_conv_input(grad, weight, kernel, dilation, padding, stride, size):
    """(N, C, *size): the input gradient of depthwise_conv for output gradient ``grad``."""
    return _dw("depthwise_conv_input", grad, weight, kernel, dilation, padding, stride, size,
               grad.shape[:2] + tuple(size))


def depthwise_conv_weight(grad, input, kernel, dilation, padding, stride):
    """(C, 1, *kernel): the filter gradient of depthwise_conv for output gradient ``grad``."""
    return _dw("depthwise_conv_weight", grad, input, kernel, dilation, padding, stride,
               grad.shape[2:], (input.shape[1], 1) + tuple(kernel))


def _flat(t, k):
    """(N, C, *k, *blocks) -> (N, C, prod(k), prod(blocks))."""
    n, c, nd = t.shape[0], t.shape[1], len(k)
    return V.reshape(t, (n, c, math.prod(k), math.prod(t.shape[2 + nd:])))


@composite("depthwise_conv")
def _(input, weight, kernel, dilation, padding, stride, sizes):
    n, c = input.shape[:2]
    cols = _flat(O.im2col(input, kernel, dilation, padding, stride, sizes), kernel)
    w = V.reshape(weight, (1, c, math.prod(kernel), 1))
    return V.reshape(O.reduce("sum", E("mul", cols, w), (2,)), (n, c) + tuple(sizes))


@composite("depthwise_conv_input")
def _(grad, weight, kernel, dilation, padding, stride, sizes):
    n, c, blocks = grad.shape[0], grad.shape[1], tuple(grad.shape[2:])
    cols = E("mul", V.reshape(weight, (1, c, math.prod(kernel), 1)),
             V.reshape(grad, (n, c, 1, math.prod(blocks))))
    return O.col2im(V.reshape(cols, (n, c) + tuple(kernel) + blocks), tuple(sizes), kernel,
                    dilation, padding, stride)


@composite("depthwise_conv_weight")
def _(grad, input, kernel, dilation, padding, stride, sizes):
    n, c, blocks = grad.shape[0], grad.shape[1], tuple(grad.shape[2:])
    cols = _flat(O.im2col(input, kernel, dilation, padding, stride, blocks), kernel)
    prod = E("mul", cols, V.reshape(grad, (n, c, 1, math.prod(blocks))))
    return V.reshape(O.reduce("sum", prod, (0, 3)), (c, 1) + tuple(kernel))


# (each gradient only for the operands that require one: a network's first convolution
# has no input gradient to compute)
@gradient("depthwise_conv")
def _(g, input, weight, kernel, dilation, padding, stride):
    return (depthwise_conv_input(g, weight, kernel, dilation, padding, stride,
                                 input.shape[2:]) if input.requires_grad else None,
            depthwise_conv_weight(g, input, kernel, dilation, padding, stride)
            if weight.requires_grad else None)


@gradient("depthwise_conv_input")
def _(g, grad, weight, kernel, dilation, padding, stride):
    return (depthwise_conv(g, weight, kernel, dilation, padding, stride, grad.shape[2:])
            if grad.requires_grad else None,
            depthwise_conv_weight(grad, g, kernel, dilation, padding, stride)
            if weight.requires_grad else None)


@gradient("depthwise_conv_weight")
def _(g, grad, input, kernel, dilation, padding, stride):
    return (depthwise_conv(input, g, kernel, dilation, padding, stride, grad.shape[2:])
            if grad.requires_grad else None,
            depthwise_conv_input(grad, g, kernel, dilation, padding, stride, input.shape[2:])
            if input.requires_grad else None)


# ---- dense (grouped) convolution -------------------------------------------------------------
# im2col + GEMM per chunk of samples where a backend has the kernels (the column matrix of a
# chunk stays in cache; the GEMMs write the output's layout); elsewhere the composites below
# build one column matrix of the whole batch. Each op's gradient is made of the others.
_DC = ("(Tensor {a}, Tensor {b}, int[] kernel, int[] dilation, int[] padding, int[] stride, "
       "int[] sizes, int groups=1) -> Tensor")
_DC_KERNEL = "(out, a, b, kernel, dilation, padding, stride, sizes, groups)"
defop("dense_conv", "conv", "dense_conv" + _DC.format(a="input", b="weight")
      + "  # (N, O, *sizes): sizes are the output blocks", _DC_KERNEL, promotion="none",
      inputs=("input", "weight"),
      doc="input (N, C, *sp) with filters (O, C / groups, *kernel), without bias")
defop("dense_conv_input", "conv", "dense_conv_input" + _DC.format(a="grad", b="weight")
      + "  # (N, C, *sizes): sizes are the input's", _DC_KERNEL, promotion="none",
      inputs=("grad", "weight"), doc="the gradient of dense_conv with respect to its input")
defop("dense_conv_weight", "conv", "dense_conv_weight" + _DC.format(a="grad", b="input")
      + "  # (O, C / groups, *kernel): sizes are grad's blocks", _DC_KERNEL,
      promotion="none", inputs=("grad", "input"),
      doc="the gradient of dense_conv with respect to its filters")


def _dc(name, a, b, kernel, dilation, padding, stride, sizes, groups, shape):
    attrs = {"kernel": tuple(kernel), "dilation": tuple(dilation), "padding": tuple(padding),
             "stride": tuple(stride), "sizes": tuple(int(s) for s in sizes),
             "groups": int(groups)}
    return O.composite_op(name, (a, b), attrs, [(tuple(shape), a.dtype)], a.device)


def dense_conv(input, weight, kernel, dilation, padding, stride, blocks, groups=1):
    """(N, O, *blocks): ``input`` (N, C, *sp) convolved with ``weight`` (O, C/groups, *k)."""
    return _dc("dense_conv", input, weight, kernel, dilation, padding, stride, blocks, groups,
               (input.shape[0], weight.shape[0]) + tuple(blocks))


def dense_conv_input(grad, weight, kernel, dilation, padding, stride, size, groups=1):
    """(N, C, *size): the input gradient of dense_conv for output gradient ``grad``."""
    return _dc("dense_conv_input", grad, weight, kernel, dilation, padding, stride, size, groups,
               (grad.shape[0], weight.shape[1] * groups) + tuple(size))


def dense_conv_weight(grad, input, kernel, dilation, padding, stride, groups=1):
    """(O, C/groups, *kernel): the filter gradient of dense_conv for output gradient
    ``grad``."""
    return _dc("dense_conv_weight", grad, input, kernel, dilation, padding, stride,
               grad.shape[2:], groups,
               (grad.shape[1], input.shape[1] // groups) + tuple(kernel))


def _columns(input, kernel, dilation, padding, stride, blocks, groups):
    """input's column matrix as (G, C/G * K, N * L) (a view of im2col's result)."""
    n, c, nd = input.shape[0], input.shape[1], len(kernel)
    cols = O.im2col(input, kernel, dilation, padding, stride, blocks, batch_inner=True)
    return V.reshape(V.permute(cols, (1, *range(2, 2 + nd), 0, *range(2 + nd, 2 + 2 * nd))),
                     (groups, c // groups * math.prod(kernel), n * math.prod(blocks)))


def _rows(t, groups):
    """(N, O, *B) as (G, O/G, N * L)."""
    n, o = t.shape[0], t.shape[1]
    flat = V.transpose(V.reshape(t, (n, o, -1)), 0, 1)
    return V.reshape(flat, (groups, o // groups, -1))


#: the column matrices of the composites below are built for at most this many bytes at
#: a time (the batch in chunks): a convolution's workspace stays near its activations'
#: size instead of k-times it, which is what lets activation offloading lower the peak
COLUMN_BYTES = 4 << 20


def _chunks(n: int, per_sample: int) -> list:
    """``[(start, length)]`` splitting a batch of ``n`` so each chunk's columns fit
    ``COLUMN_BYTES`` (one chunk when the whole batch does)."""
    per = max(1, COLUMN_BYTES // max(per_sample, 1))
    if per >= n:
        return [(0, n)]
    return [(b, min(per, n - b)) for b in range(0, n, per)]


def _column_bytes(c, kernel, blocks, itemsize) -> int:
    return c * math.prod(kernel) * math.prod(blocks) * itemsize


def _by_batch(fn, first, per_sample, shape, *args):
    """``fn(first, *args)`` (a result in ``first``'s batch), run on chunks of the batch
    whose columns take ``per_sample`` bytes each, into one result of ``shape``."""
    n = first.shape[0]
    parts = _chunks(n, per_sample)
    if len(parts) == 1:
        return O.contiguous(fn(first, *args))
    out = C.empty(tuple(shape), first.dtype, first.device)
    for b, m in parts:
        O.copy_(V.narrow(out, 0, b, m), fn(V.narrow(first, 0, b, m), *args))
    return out


def _dense_conv(input, weight, kernel, dilation, padding, stride, sizes, groups):
    n, o = input.shape[0], weight.shape[0]
    cols = _columns(input, kernel, dilation, padding, stride, sizes, groups)
    w = V.reshape(weight, (groups, o // groups, -1))
    out = V.reshape(matmul(w, cols), (o, n) + tuple(sizes))
    return V.transpose(out, 0, 1)


@composite("dense_conv")
def _(input, weight, kernel, dilation, padding, stride, sizes, groups):
    return _by_batch(_dense_conv, input,
                     _column_bytes(input.shape[1], kernel, sizes, input.dtype.itemsize),
                     (input.shape[0], weight.shape[0]) + tuple(sizes),
                     weight, kernel, dilation, padding, stride, sizes, groups)


def _dense_conv_input(grad, weight, kernel, dilation, padding, stride, sizes, groups):
    n, blocks, nd = grad.shape[0], tuple(grad.shape[2:]), len(kernel)
    w = V.reshape(weight, (groups, weight.shape[0] // groups, -1))
    cols = matmul(V.transpose(w, 1, 2), _rows(grad, groups))     # (G, C/G * K, N * L)
    c = weight.shape[1] * groups
    cols = V.reshape(cols, (c,) + tuple(kernel) + (n,) + blocks)
    cols = V.permute(cols, (1 + nd, 0, *range(1, 1 + nd), *range(2 + nd, 2 + 2 * nd)))
    return O.col2im(cols, tuple(sizes), kernel, dilation, padding, stride)


@composite("dense_conv_input")
def _(grad, weight, kernel, dilation, padding, stride, sizes, groups):
    c = weight.shape[1] * groups
    return _by_batch(_dense_conv_input, grad,
                     _column_bytes(c, kernel, grad.shape[2:], grad.dtype.itemsize),
                     (grad.shape[0], c) + tuple(sizes),
                     weight, kernel, dilation, padding, stride, sizes, groups)


def _dense_conv_weight(grad, input, kernel, dilation, padding, stride, groups):
    cols = _columns(input, kernel, dilation, padding, stride, tuple(grad.shape[2:]), groups)
    return matmul(_rows(grad, groups), V.transpose(cols, 1, 2))      # (G, O/G, C/G * K)


@composite("dense_conv_weight")
def _(grad, input, kernel, dilation, padding, stride, sizes, groups):
    n = grad.shape[0]
    parts = _chunks(n, _column_bytes(input.shape[1], kernel, grad.shape[2:],
                                     input.dtype.itemsize))
    dw = None
    for b, m in parts:
        part = _dense_conv_weight(V.narrow(grad, 0, b, m), V.narrow(input, 0, b, m), kernel,
                                  dilation, padding, stride, groups)
        dw = part if dw is None else O.elementwise("add", dw, part)
    return V.reshape(dw, (grad.shape[1], input.shape[1] // groups) + tuple(kernel))


# (as the depthwise ones: only the gradients of operands that require one)
@gradient("dense_conv")
def _(g, input, weight, kernel, dilation, padding, stride, groups):
    return (dense_conv_input(g, weight, kernel, dilation, padding, stride, input.shape[2:],
                             groups) if input.requires_grad else None,
            dense_conv_weight(g, input, kernel, dilation, padding, stride, groups)
            if weight.requires_grad else None)


@gradient("dense_conv_input")
def _(g, grad, weight, kernel, dilation, padding, stride, groups):
    return (dense_conv(g, weight, kernel, dilation, padding, stride, grad.shape[2:], groups)
            if grad.requires_grad else None,
            dense_conv_weight(grad, g, kernel, dilation, padding, stride, groups)
            if weight.requires_grad else None)


@gradient("dense_conv_weight")
def _(g, grad, input, kernel, dilation, padding, stride, groups):
    return (dense_conv(input, g, kernel, dilation, padding, stride, grad.shape[2:], groups)
            if grad.requires_grad else None,
            dense_conv_input(grad, g, kernel, dilation, padding, stride, input.shape[2:],
                             groups) if input.requires_grad else None)
