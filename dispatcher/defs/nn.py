"""Neural-network ops a backend may run natively: convolution (and later pooling, norms,
embedding, losses, attention).

Each has a composite written in other ops (what runs where a backend has no kernel, and
what autograd differentiates) and a structured kernel convention, so a backend registers
a fused kernel under the op's name (see ``docs/plugins.md``). The entry points take
PyTorch's batched forms with every argument normalised (tuples per spatial dim, symmetric
padding); ``ember.nn.functional`` turns user calls into these.
"""
from __future__ import annotations

import math

from .. import ops as O
from .. import views as V
from ..schema import composite, defop
from .linalg import matmul

__all__ = ["convolution", "conv_output_size"]

E = O.elementwise

defop("convolution", "conv",
      "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
      "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor",
      "(out, input, weight, bias, stride, padding, dilation, transposed, output_padding, "
      "groups)  # input (N, C, *sp), symmetric padding", promotion="none",
      inputs=("input", "weight", "bias"),
      doc="1 to 3 spatial dims; transposed: the gradient of a convolution w.r.t. its input")


def conv_output_size(sp, weight, stride, padding, dilation, transposed, output_padding,
                     groups) -> tuple:
    """(C_out, *spatial) of a convolution's output (its meta step)."""
    k = weight.shape[2:]
    nd = len(k)
    if transposed:
        return (weight.shape[1] * groups,) + tuple(
            (sp[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1)
            + output_padding[i] + 1 for i in range(nd))
    return (weight.shape[0],) + O.conv_blocks(sp, k, dilation, padding, stride)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The convolution op on a batched input (N, C, *sp) with normalised arguments."""
    attrs = {"stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation),
             "transposed": bool(transposed), "output_padding": tuple(output_padding),
             "groups": int(groups)}
    out = conv_output_size(input.shape[2:], weight, attrs["stride"], attrs["padding"],
                           attrs["dilation"], attrs["transposed"], attrs["output_padding"],
                           attrs["groups"])
    shape = (input.shape[0],) + out
    return O.composite_op("convolution", (input, weight, bias), attrs,
                          [(shape, input.dtype)], input.device)


@composite("convolution")
def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    if transposed:
        out = _conv_transposed(input, weight, stride, padding, dilation, output_padding,
                               groups)
    else:
        out = _conv(input, weight, stride, padding, dilation, groups)
    nd = len(stride)
    if bias is not None:
        return E("add", out, V.reshape(bias, (1, out.shape[1]) + (1,) * nd))
    return O.contiguous(out)


def _conv(x, weight, stride, padding, dilation, groups):
    """im2col + one GEMM per group over the whole batch: (G, O/G, Cg*K) @ (G, Cg*K, N*L)."""
    nd = len(stride)
    n, c = x.shape[0], x.shape[1]
    o = weight.shape[0]
    kernel = tuple(weight.shape[2:])
    out_sp = O.conv_blocks(x.shape[2:], kernel, dilation, padding, stride)
    k = math.prod(kernel)
    cg = c // groups
    L = math.prod(out_sp)
    # im2col lays its (N, C, *K, *L) result out as (C, *K, N, *L), so this permute +
    # reshape is a view
    cols = O.im2col(x, kernel, dilation, padding, stride, out_sp, batch_inner=True)
    cols = V.reshape(V.permute(cols, (1, *range(2, 2 + nd), 0, *range(2 + nd, 2 + 2 * nd))),
                     (groups, cg * k, n * L))
    w = V.reshape(weight, (groups, o // groups, cg * k))
    # (O, N, *out) in memory: after the transpose the output is laid out as PyTorch's
    return V.transpose(V.reshape(matmul(w, cols), (o, n, *out_sp)), 0, 1)


def _conv_transposed(x, weight, stride, padding, dilation, output_padding, groups):
    """One GEMM per group, (G, Cout_g*K, Cin_g) @ (G, Cin_g, N*L), then col2im straight
    into the output (``padding`` crops the left; positions past the last block, the
    ``output_padding``, stay zero)."""
    nd = len(stride)
    n, cin = x.shape[0], x.shape[1]
    in_sp = x.shape[2:]
    kernel = tuple(weight.shape[2:])
    cout_g = weight.shape[1]
    k = math.prod(kernel)
    out_sp = conv_output_size(in_sp, weight, stride, padding, dilation, True, output_padding,
                              groups)[1:]
    cin_g = cin // groups
    L = math.prod(in_sp)
    xs = V.reshape(V.transpose(V.reshape(x, (n, cin, L)), 0, 1), (groups, cin_g, n * L))
    w = V.transpose(V.reshape(weight, (groups, cin_g, cout_g * k)), 1, 2)
    cols = V.reshape(matmul(w, xs), (groups * cout_g, *kernel, n, *in_sp))
    cols = V.permute(cols, (1 + nd, 0, *range(1, 1 + nd), *range(2 + nd, 2 + 2 * nd)))
    return O.col2im(cols, tuple(out_sp), kernel, dilation, padding, stride)
