"""Neural-network ops a backend may run natively: convolution, pooling (average, adaptive
average, adaptive max), batch/layer/group norm, embedding, the negative log likelihood and
cross-entropy losses, and scaled dot-product attention.

Each has a composite written in other ops (what runs where a backend has no kernel, and
what autograd differentiates) and a structured kernel convention, so a backend registers
a fused kernel under the op's name (see ``docs/plugins.md``). The entry points take
PyTorch's batched forms with every argument normalised (tuples per spatial dim, symmetric
padding, ``padding_idx=-1`` for none); each computes its output's shape and dtype (the
meta step) and calls :func:`ops.composite_op`. ``ember.nn.functional`` checks user calls
(PyTorch's errors) and turns them into these. ``relu`` and ``hardtanh`` (clamp's values
with PyTorch's gradient at the kinks) live here too, so every frontend form shares them.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..grad_mode import MODE, below_autograd
from ..lazy import capturing
from ..plugins import BACKENDS, backend_for
from ..schema import OPS, composite, defop, gradient
from .conv import (dense_conv, dense_conv_input, dense_conv_weight, depthwise_conv,
                   depthwise_conv_input, depthwise_conv_weight)
from .index import index, index_add, index_select, masked_fill, tril
from .linalg import matmul
from .reduction import any_

__all__ = ["check_by_reading", "convolution", "conv_output_size", "avg_pool", "adaptive_avg_pool",
           "adaptive_max_pool", "pool_output_size", "batch_norm", "layer_norm",
           "layer_norm_backward", "group_norm", "embedding", "nll_loss", "cross_entropy",
           "cross_entropy_indices", "binary_cross_entropy",
           "scaled_dot_product_attention", "dropout_mask", "relu", "hardtanh"]

E = O.elementwise

# ---- convolution -----------------------------------------------------------------------
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


@gradient("convolution", needs={"input": ("weight",), "weight": ("input",)})
def _(g, input, weight, bias_shape, stride, padding, dilation, transposed, groups):
    # one node, PyTorch's ConvolutionBackward0: the gradients of the op _conv ran (depthwise
    # or dense), and the bias's, the output gradient summed over all but the channels. A
    # transposed convolution is dense_conv_input of its input: that op's gradients.
    kernel = tuple(weight.shape[2:])
    c = input.shape[1]
    if transposed:
        gx = dense_conv(g, weight, kernel, dilation, padding, stride, input.shape[2:],
                        groups) if input.requires_grad else None
        gw = dense_conv_weight(input, g, kernel, dilation, padding, stride, groups) \
            if weight.requires_grad else None
    elif groups == c and weight.shape[0] == c:
        gx = depthwise_conv_input(g, weight, kernel, dilation, padding, stride,
                                  input.shape[2:]) if input.requires_grad else None
        gw = depthwise_conv_weight(g, input, kernel, dilation, padding, stride) \
            if weight.requires_grad else None
    else:
        gx = dense_conv_input(g, weight, kernel, dilation, padding, stride, input.shape[2:],
                              groups) if input.requires_grad else None
        gw = dense_conv_weight(g, input, kernel, dilation, padding, stride, groups) \
            if weight.requires_grad else None
    gb = None
    if bias_shape is not None:
        gb = O.reduce("sum", g, (0,) + tuple(range(2, len(g.shape))))
    return gx, gw, gb


def _conv(x, weight, stride, padding, dilation, groups):
    """im2col + one GEMM per group over the whole batch: (G, O/G, Cg*K) @ (G, Cg*K, N*L)."""
    nd = len(stride)
    n, c = x.shape[0], x.shape[1]
    o = weight.shape[0]
    kernel = tuple(weight.shape[2:])
    out_sp = O.conv_blocks(x.shape[2:], kernel, dilation, padding, stride)
    k = math.prod(kernel)
    cg = c // groups
    if groups == c and o == c and x.dtype.is_floating_point:  # (one filter per channel)
        return depthwise_conv(x, weight, kernel, dilation, padding, stride, out_sp)
    if x.dtype.is_floating_point:
        return dense_conv(x, weight, kernel, dilation, padding, stride, out_sp, groups)
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


# ---- helpers shared by the composites below ----------------------------------------------
def _host_tensor(values, dtype, device):
    """Nested lists of Python numbers as a tensor of ``dtype`` on ``device``, built on the
    host as ``ember.tensor`` builds one (small tables: window sizes, gather indices)."""
    arr = np.require(np.array(values), requirements="C")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    cpu = C.to_device("cpu")
    t = C.empty(arr.shape, D.from_numpy_dtype(arr.dtype), cpu)
    if arr.size:
        backend_for("cpu").copy_from_host(t._storage, 0, arr.reshape(-1).view(np.uint8))
    t = O.cast(t, dtype)
    return O.to(t, device) if device != cpu else t


def _true_div(a, b):
    """``a / b`` as the frontend's ``/``: integer operands divide as default floats."""
    if not D.result_type(a, b).is_floating_point:
        f = D.get_default_dtype()
        a = O.cast(a, f) if O._is_t(a) else float(a)
        b = O.cast(b, f) if O._is_t(b) else float(b)
    return E("div", a, b)


def _detached(t):
    """``t`` sharing storage and version counter, outside the graph (``Tensor.detach``)."""
    return C.view_of(t, t.shape, t._stride, t._offset)


def check_by_reading(op: str, device) -> bool:
    """Whether ``op`` should read index values back now to raise PyTorch's error for one
    out of range: not while ember.compile captures and ``op`` runs as its composite on
    ``device`` (the read would break the graph; the bounds-checked gather the composite
    reaches raises IndexError when the graph runs)."""
    return not capturing() or device.type in OPS[op].kernels


def _host_memory(t) -> bool:
    """Whether ``t``'s device is host memory (reading it back costs no stall)."""
    b = BACKENDS.get(t.device.type)
    return b is None or bool(b.host_accessible) or t.device.type.endswith("cpu")


def _float_dtype(dtype):
    return dtype if dtype.is_floating_point else D.get_default_dtype()


def _widened(f):
    """A composite whose half-type input is computed in float32 and rounded once at the
    end (PyTorch's accumulate type): window sums past the half range do not overflow."""
    @functools.wraps(f)
    def wide(self, *args, **kwargs):
        if self.dtype in (D.float16, D.bfloat16):
            return O.cast(f(O.cast(self, D.float32), *args, **kwargs), self.dtype)
        return f(self, *args, **kwargs)
    return wide


# ---- pooling ---------------------------------------------------------------------------
defop("avg_pool", "pool",
      "avg_pool(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=0, "
      "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) "
      "-> Tensor  # avg_pool1d/2d/3d",
      "(out, self, kernel_size, stride, padding, ceil_mode, count_include_pad, "
      "divisor_override)  # self (N, C, *sp); integers average in the default float dtype",
      promotion="none")
defop("adaptive_avg_pool", "pool",
      "adaptive_avg_pool(Tensor self, int[] output_size) -> Tensor  "
      "# adaptive_avg_pool1d/2d/3d",
      "(out, self, output_size)  # self (N, C, *sp), 1 to 3 spatial dims; windows "
      "[floor(i*n/out), ceil((i+1)*n/out))", promotion="none")
defop("adaptive_max_pool", "pool",
      "adaptive_max_pool(Tensor self, int[] output_size) -> (Tensor values, Tensor indices)"
      "  # adaptive_max_pool1d/2d/3d",
      "(values, indices, self, output_size)  # self (N, C, *sp), 1 to 3 spatial dims; "
      "indices int64, flat into each (*sp) plane", promotion="none")


def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode) -> int:
    """Windows along one dim of a pooling (PyTorch's formula, ``ceil_mode`` included)."""
    num = size + 2 * padding - dilation * (kernel - 1) - 1
    o = (num + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (o - 1) * stride >= size + padding:
        o -= 1  # the last window must start inside the input or its left padding
    return o


def _avg_blocks(sp, kernel_size, stride, padding, ceil_mode) -> tuple:
    return tuple(pool_output_size(sp[i], kernel_size[i], stride[i], padding[i], 1, ceil_mode)
                 for i in range(len(kernel_size)))


def avg_pool(input, kernel_size, stride, padding, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    """Average pooling of a batched input (N, C, *sp) with normalised arguments."""
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    attrs = {"kernel_size": tuple(kernel_size), "stride": tuple(stride),
             "padding": tuple(padding), "ceil_mode": bool(ceil_mode),
             "count_include_pad": bool(count_include_pad),
             "divisor_override": divisor_override}
    out_sp = _avg_blocks(input.shape[2:], attrs["kernel_size"], attrs["stride"],
                         attrs["padding"], attrs["ceil_mode"])
    if any(o < 1 for o in out_sp):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, input.shape[1:]))}). "
                           f"Calculated output size: "
                           f"({'x'.join(map(str, (input.shape[1],) + out_sp))}). "
                           "Output size is too small")
    return O.composite_op("avg_pool", (input,), attrs,
                          [(input.shape[:2] + out_sp, _float_dtype(input.dtype))],
                          input.device)


@composite("avg_pool")
@_widened
def _avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    """Window sums from im2col (padding and what a ceil_mode window reaches past the input
    read 0), divided by the window sizes: one small tensor per spatial dim."""
    nd = len(kernel_size)
    in_sp = self.shape[2:]
    out_sp = _avg_blocks(in_sp, kernel_size, stride, padding, ceil_mode)
    cols = O.im2col(self, kernel_size, (1,) * nd, padding, stride, out_sp, 0)
    cols = V.reshape(cols, (self.shape[0], self.shape[1], math.prod(kernel_size), *out_sp))
    sums = O.reduce("sum", cols, 2)
    if divisor_override is not None:
        return _true_div(sums, divisor_override)
    # window sizes per output position: clipped to input+padding (count_include_pad) or to
    # the input itself
    div = None
    for i in range(nd):
        counts = []
        for o in range(out_sp[i]):
            start = o * stride[i] - padding[i]
            end = min(start + kernel_size[i], in_sp[i] + padding[i])
            if not count_include_pad:
                start, end = max(start, 0), min(end, in_sp[i])
            counts.append(float(end - start))
        shape = [1] * nd
        shape[i] = out_sp[i]
        t = V.reshape(_host_tensor(counts, sums.dtype, sums.device), tuple(shape))
        div = t if div is None else E("mul", div, t)
    return _true_div(sums, div)


def _adaptive_windows(size, out):
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_cells(self, output_size):
    """Every window of an adaptive pooling, each window's own elements only: ``(cells,
    flat, valid, counts)``. ``cells`` (*lead, *out, M) holds the window elements, padded to
    the longest window by repeating its last element; ``flat`` (*out, M) their flat indices
    into each (*sp) plane; ``valid`` (*out, M) marks the non-repeated ones; ``counts`` has
    one tensor of window lengths per spatial dim."""
    nd = len(output_size)
    sp = self.shape[-nd:]
    flat = valid = None
    counts = []
    cell = 1  # elements per padded window
    for i in range(nd):
        wins = _adaptive_windows(sp[i], output_size[i])
        m = max(b - a for a, b in wins)
        cell *= m
        idx = _host_tensor([[min(a + j, b - 1) for j in range(m)] for a, b in wins],
                           D.int64, self.device)                            # (out_i, m_i)
        inside = _host_tensor([[a + j < b for j in range(m)] for a, b in wins], D.bool_,
                              self.device)
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = output_size[i], m
        term = E("mul", V.reshape(idx, tuple(shape)), math.prod(sp[i + 1:]))
        inside = V.reshape(inside, tuple(shape))
        flat = term if flat is None else E("add", flat, term)               # (*out, *m)
        valid = inside if valid is None else E("logical_and", valid, inside)
        lengths = _host_tensor([float(b - a) for a, b in wins], self.dtype, self.device)
        counts.append(V.reshape(lengths, (output_size[i],) + (1,) * (nd - 1 - i)))
    lead = self.shape[:-nd]
    cells = index_select(V.reshape(self, (*lead, math.prod(sp))), -1, V.reshape(flat, -1))
    cells = V.reshape(cells, (*lead, *output_size, cell))
    return cells, V.reshape(flat, (*output_size, cell)), \
        V.reshape(valid, (*output_size, cell)), counts


def adaptive_avg_pool(input, output_size):
    """Adaptive average pooling of a batched input (N, C, *sp) to ``output_size`` (ints)."""
    size = tuple(output_size)
    return O.composite_op("adaptive_avg_pool", (input,), {"output_size": size},
                          [(input.shape[:2] + size, input.dtype)], input.device)


@composite("adaptive_avg_pool")
@_widened
def _adaptive_avg_pool(self, output_size):
    """Equal windows: a reshape and a mean. Otherwise each window's sum divided by its
    length per dim (PyTorch's ``sum / kh / kw``). A window sums only its own elements, so
    an inf or NaN reaches only the windows that hold it (an averaging matrix would give
    0 * inf = NaN everywhere else)."""
    nd = len(output_size)
    sp = self.shape[-nd:]
    lead = self.shape[:-nd]
    if all(sp[i] % output_size[i] == 0 for i in range(nd)):
        shape = lead + tuple(v for i in range(nd) for v in (output_size[i],
                                                             sp[i] // output_size[i]))
        return O.reduce("mean", V.reshape(self, shape),
                        tuple(range(len(lead) + 1, len(shape), 2)))
    cells, _, valid, counts = _adaptive_cells(self, output_size)
    out = O.reduce("sum", O.where(valid, cells, 0), -1)
    for c in counts:
        out = E("div", out, c)
    return out


def adaptive_max_pool(input, output_size):
    """Adaptive max pooling of a batched input (N, C, *sp): (values, indices)."""
    size = tuple(output_size)
    shape = input.shape[:2] + size
    return O.composite_op("adaptive_max_pool", (input,), {"output_size": size},
                          [(shape, input.dtype), (shape, D.int64)], input.device)


@composite("adaptive_max_pool")
def _adaptive_max_pool(self, output_size):
    """Equal windows: max_pool. Windows of unequal length: every window gathered, padded
    to the longest one by repeating its last element (a repeat changes neither the max
    nor its index). The values are gathered at the argmax, so the gradient goes to that
    one element, as max_pool's (the first maximum; the first NaN)."""
    nd = len(output_size)
    sp = self.shape[-nd:]
    if all(sp[i] % output_size[i] == 0 for i in range(nd)):
        k = tuple(sp[i] // output_size[i] for i in range(nd))
        return O.max_pool(self, k, (1,) * nd, (0,) * nd, k, tuple(output_size))
    cells, flat, _, _ = _adaptive_cells(self, output_size)
    arg = O.arg_reduce("argmax", cells, -1, True)
    values = V.squeeze(O.gather(cells, -1, arg), -1)
    table = V.expand(flat, (*cells.shape[:-1], flat.shape[-1]))
    return values, V.squeeze(O.gather(table, -1, arg), -1)


# ---- activations with a kink ---------------------------------------------------------------
# relu and hardtanh have clamp's values, but PyTorch differentiates them as thresholds: no
# gradient at a kink itself (clamp passes it there). They are ops of their own whose
# composite is clamp (a native kernel: one select per bound, where clamp's general body
# checks its bounds for NaN per element) and whose gradient is one masked pass
# (threshold_backward, hardtanh_backward: native where a backend has the kernels).
defop("relu", "norm", "relu(Tensor self) -> Tensor", "(out, self)", promotion="none",
      inputs=("self",), doc="max(self, 0): clamp's values, threshold_backward's gradient")
defop("hardtanh", "norm", "hardtanh(Tensor self, float min_val, float max_val) -> Tensor",
      "(out, self, min_val, max_val)", promotion="none", inputs=("self",),
      doc="clamp(self, min_val, max_val) with hardtanh_backward's gradient")
defop("threshold_backward", "norm",
      "threshold_backward(Tensor grad, Tensor self, float threshold=0) -> Tensor",
      "(out, grad, self, threshold)  # grad, self: one shape and dtype", promotion="none",
      inputs=("grad", "self"), doc="grad where self > threshold (and where self is NaN), else 0")
defop("hardtanh_backward", "norm",
      "hardtanh_backward(Tensor grad, Tensor self, float min_val, float max_val) -> Tensor",
      "(out, grad, self, min_val, max_val)  # grad, self: one shape and dtype",
      promotion="none", inputs=("grad", "self"),
      doc="grad where min_val < self < max_val, else 0 (NaN too)")


def _masked(name, grad, self, attrs):
    if tuple(grad.shape) != tuple(self.shape) or grad.dtype is not self.dtype:
        grad = O.to(V.expand(grad, self.shape) if tuple(grad.shape) != tuple(self.shape)
                    else grad, None, self.dtype)
    return O.composite_op(name, (grad, self), attrs, [(self.shape, self.dtype)], self.device)


def threshold_backward(grad, self, threshold=0.0):
    """``grad`` where ``self > threshold`` or NaN, else 0 (relu's gradient)."""
    return _masked("threshold_backward", grad, self, {"threshold": float(threshold)})


def hardtanh_backward(grad, self, min_val, max_val):
    """``grad`` where ``min_val < self < max_val``, else 0 (hardtanh's gradient)."""
    return _masked("hardtanh_backward", grad, self,
                   {"min_val": float(min_val), "max_val": float(max_val)})


@composite("relu")
def _(self):
    return O.clamp(self, 0)


@composite("hardtanh")
def _(self, min_val, max_val):
    return O.clamp(self, *_int_bounds(self, min_val, max_val))


@composite("threshold_backward")
def _(grad, self, threshold):
    return O.where(E("le", self, threshold), 0.0, grad)


@composite("hardtanh_backward")
def _(grad, self, min_val, max_val):
    return O.where(E("logical_and", E("gt", self, min_val), E("lt", self, max_val)), grad, 0.0)


@gradient("relu")
def _(g, result):
    # the output, as PyTorch's ReluBackward0 saves (result > 0 exactly where the input
    # is): the next layer's input, so the input of relu can be freed
    return (threshold_backward(g, result, 0.0),)


@gradient("hardtanh")
def _(g, self, min_val, max_val):
    return (hardtanh_backward(g, self, min_val, max_val),)


@gradient("threshold_backward")
def _(g, self, threshold):  # piecewise constant in self
    return threshold_backward(g, self, threshold), None


@gradient("hardtanh_backward")
def _(g, self, min_val, max_val):
    return hardtanh_backward(g, self, min_val, max_val), None


def _activation_input(name, x):
    if x.dtype is D.bool_:  # (PyTorch's messages)
        raise RuntimeError(f"{'Boolean' if name == 'relu' else 'Bool'} inputs not supported "
                           f"for {name}")


def _int_bounds(x, min_val, max_val):
    """hardtanh's bounds in an integer input's dtype (PyTorch keeps the dtype, and
    truncates the bounds)."""
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return min_val, max_val
    if not x.dtype.is_signed and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return int(min_val), int(max_val)


def relu(x):
    """``max(x, 0)`` with PyTorch's gradient (threshold_backward): 0 where ``x <= 0``,
    ``g`` elsewhere, NaN included. ``-0.0`` stays ``-0.0``, as clamp's."""
    _activation_input("relu", x)
    return O.composite_op("relu", (x,), {}, [(x.shape, x.dtype)], x.device)


def hardtanh(x, min_val, max_val):
    """``clamp(x, min_val, max_val)`` with PyTorch's hardtanh gradient (its vectorised CPU
    kernel's): ``g`` strictly between the bounds, 0 at and beyond them and at NaN."""
    _activation_input("hardtanh", x)
    min_val, max_val = _int_bounds(x, min_val, max_val)
    return O.composite_op("hardtanh", (x,), {"min_val": min_val, "max_val": max_val},
                          [(x.shape, x.dtype)], x.device)


def activation_(name, x, attrs):
    """``x`` overwritten by relu or hardtanh (``attrs``) through the device's kernel, which
    reads each element before writing it; None where autograd must see the call or the
    device has no kernel (the caller goes the out-of-place way)."""
    if x.requires_grad and MODE.grad:
        return None
    _activation_input(name, x)
    o = OPS[name]
    k = o.kernels.get(x.device.type)
    if k is None:
        return None
    C.check_writable(x, name + "_")
    if name == "hardtanh":
        attrs = dict(zip(("min_val", "max_val"), _int_bounds(x, **attrs)))
    O.launch(o, x.device, k, x, x, **attrs)
    C.bump(x)
    return x


# ---- normalisation -----------------------------------------------------------------------
defop("batch_norm", "norm",
      "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
      "Tensor? running_var, bool training, float momentum, float eps) -> Tensor",
      "(out, input, weight, bias, running_mean, running_var, training, momentum, eps)  "
      "# input (N, C, *); training: batch statistics, and the running stats (when given) "
      "updated in place: r = (1 - momentum) * r + momentum * stat (unbiased variance)",
      promotion="none", inputs=("input", "weight", "bias"))
defop("batch_norm_inference", "norm",
      "batch_norm_inference(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
      "Tensor running_var, float eps) -> Tensor",
      "(out, input, weight, bias, running_mean, running_var, eps)  # input (N, C, *); "
      "out = x * scale + shift per channel, scale = weight / sqrt(running_var + eps), "
      "shift = bias - running_mean * scale",
      promotion="none", inputs=("input", "weight", "bias", "running_mean", "running_var"),
      doc="batch normalisation with running statistics (evaluation mode)")
defop("batch_norm_train", "norm",
      "batch_norm_train(Tensor input, Tensor? weight, Tensor? bias, float eps) -> "
      "(Tensor out, Tensor mean, Tensor var)",
      "(out, mean, var, input, weight, bias, eps)  # input (N, C, *); mean and the biased "
      "var (C,) of each channel over N and *, in float for half types",
      promotion="none", inputs=("input", "weight", "bias"),
      doc="batch normalisation with the batch's statistics, which it returns as well")
defop("batch_norm_train_backward", "norm",
      "batch_norm_train_backward(Tensor grad, Tensor input, Tensor? weight, Tensor mean, "
      "Tensor var, float eps) -> (Tensor d_input, Tensor d_weight, Tensor d_bias)",
      "(d_input, d_weight, d_bias, grad, input, weight, mean, var, eps)  # mean, var: "
      "batch_norm_train's", promotion="none", inputs=("grad", "input", "weight"),
      doc="the gradients of batch_norm_train's input, weight and bias (d_weight and d_bias "
          "(C,) whether or not the weight and bias were given)")
defop("layer_norm", "norm",
      "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, "
      "Tensor? bias=None, float eps=1e-05) -> Tensor",
      "(out, input, weight, bias, normalized_shape, eps)  # over the trailing "
      "len(normalized_shape) dims, biased variance", promotion="none",
      inputs=("input", "weight", "bias"))
defop("layer_norm_backward", "norm",
      "layer_norm_backward(Tensor grad, Tensor input, Tensor? weight, int[] normalized_shape, "
      "float eps) -> (Tensor d_input, Tensor d_weight, Tensor d_bias)",
      "(d_input, d_weight, d_bias, grad, input, weight, normalized_shape, eps)  # d_weight "
      "and d_bias of normalized_shape", promotion="none", inputs=("grad", "input", "weight"),
      doc="the gradients of layer_norm's input, weight and bias (d_weight and d_bias "
          "whether or not the weight and bias were given)")
defop("group_norm", "norm",
      "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
      "float eps=1e-05) -> Tensor",
      "(out, input, weight, bias, num_groups, eps)  # input (N, C, *), C divisible by "
      "num_groups; weight, bias (C,)", promotion="none", inputs=("input", "weight", "bias"))


def _affine(out, weight, bias, shape=None):
    if weight is not None:
        out = E("mul", out, weight if shape is None else V.reshape(weight, shape))
    if bias is not None:
        out = E("add", out, bias if shape is None else V.reshape(bias, shape))
    return out


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """Batch normalisation of (N, C, *) input; in training, the running stats given are
    updated in place."""
    if not training:
        return batch_norm_inference(input, weight, bias, running_mean, running_var, eps)
    stats = (running_mean, running_var)
    dtype = _bn_result_dtype(input, (weight, bias) + stats)
    written = [t for t in stats if t is not None]
    versions = [t._vc[0] for t in written]
    out = O.composite_op("batch_norm", (input, weight, bias, running_mean, running_var),
                         {"training": training, "momentum": momentum, "eps": eps},
                         [(input.shape, dtype)], input.device)
    for t, v in zip(written, versions):
        if t._vc[0] == v:  # a native kernel updated it: record the in-place write
            C.bump(t)
    return out


@composite("batch_norm")
def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    c = input.shape[1]
    if training:
        dtype = D.result_type(input, weight, bias)
        out, mean, var = batch_norm_train(*(t if t is None or t.dtype is dtype
                                            else O.to(t, None, dtype)
                                            for t in (input, weight, bias)), eps)
        with below_autograd():
            if running_mean is not None:
                E("mul", running_mean, 1 - momentum, inplace=True)
                E("add", running_mean, E("mul", O.to(mean, None, running_mean.dtype),
                                          momentum), inplace=True)
            if running_var is not None:
                n = C.numel(input.shape) // c if c else 0
                unbiased = E("mul", var, n / max(n - 1, 1))
                E("mul", running_var, 1 - momentum, inplace=True)
                E("add", running_var, E("mul", O.to(unbiased, None, running_var.dtype),
                                         momentum), inplace=True)
        return out if out.dtype is input.dtype else O.to(out, None, input.dtype)
    return _batch_norm_inference(input, weight, bias, running_mean, running_var, eps)


@composite("batch_norm_inference")
def _batch_norm_inference(input, weight, bias, running_mean, running_var, eps):
    shape = (1, input.shape[1]) + (1,) * (len(input.shape) - 2)
    # the running statistics folded into a scale and shift per channel: one pass over x
    scale = E("rsqrt", E("add", running_var, eps))
    if weight is not None:
        scale = E("mul", scale, weight)
    shift = E("neg", E("mul", running_mean, scale))
    if bias is not None:
        shift = E("add", shift, bias)
    out = E("addcmul", V.reshape(shift, shape), input, V.reshape(scale, shape), value=1)
    return out if out.dtype is input.dtype else O.to(out, None, input.dtype)


def _bn_dims(input):
    return (0,) + tuple(range(2, len(input.shape)))


def _bn_check(input, weight, bias):
    if len(input.shape) < 2:
        raise ValueError(f"batch_norm_train(): expected input (N, C, *), got "
                         f"{tuple(input.shape)}")
    c = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != (c,) or t.dtype is not input.dtype):
            raise ValueError(f"batch_norm_train(): {name} must be ({c},) of "
                             f"{input.dtype.name}, got {tuple(t.shape)} of {t.dtype.name}")


def _stat_dtype(dtype):
    return D.float32 if dtype in (D.float16, D.bfloat16) else dtype


def _bn_result_dtype(input, params):
    """The input's dtype, PyTorch's rule for batch norm's parameters and statistics: all of
    the input's dtype, or float32 with float16 / bfloat16 input (computed in float32)."""
    given = [t for t in params if t is not None]
    if all(t.dtype is input.dtype for t in given):
        return input.dtype
    if input.dtype in (D.float16, D.bfloat16) and all(t.dtype in (input.dtype, D.float32)
                                                      for t in given):
        return input.dtype
    if input.dtype is D.float64:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")


def batch_norm_inference(input, weight, bias, running_mean, running_var, eps):
    """Batch normalisation of (N, C, *) input with the running statistics given."""
    dtype = _bn_result_dtype(input, (weight, bias, running_mean, running_var))
    return O.composite_op("batch_norm_inference",
                          (input, weight, bias, running_mean, running_var), {"eps": eps},
                          [(input.shape, dtype)], input.device)


def batch_norm_train(input, weight, bias, eps):
    """(out, mean, var): batch normalisation of (N, C, *) input with the batch's mean and
    biased variance per channel, returned too (as float32 for half types)."""
    _bn_check(input, weight, bias)
    c, st = input.shape[1], _stat_dtype(input.dtype)
    return O.composite_op("batch_norm_train", (input, weight, bias), {"eps": eps},
                          [(input.shape, input.dtype), ((c,), st), ((c,), st)], input.device)


@composite("batch_norm_train")
def _(input, weight, bias, eps):
    st = _stat_dtype(input.dtype)
    x = input if input.dtype is st else O.to(input, None, st)
    dims = _bn_dims(input)
    mean = O.reduce("mean", x, dims)
    var = O.reduce("var", x, dims, correction=0)
    shape = (1, input.shape[1]) + (1,) * (len(input.shape) - 2)
    out = E("mul", E("sub", x, V.reshape(mean, shape)),
            V.reshape(E("rsqrt", E("add", var, eps)), shape))
    out = _affine(out, weight, bias, shape)
    return (out if out.dtype is input.dtype else O.to(out, None, input.dtype)), mean, var


def batch_norm_train_backward(grad, input, weight, mean, var, eps):
    """(d_input, d_weight, d_bias) of batch_norm_train for output gradient ``grad``."""
    c = input.shape[1]
    return O.composite_op("batch_norm_train_backward", (grad, input, weight, mean, var),
                          {"eps": eps}, [(input.shape, input.dtype), ((c,), input.dtype),
                                         ((c,), input.dtype)], input.device)


@composite("batch_norm_train_backward")
def _(grad, input, weight, mean, var, eps):
    st = _stat_dtype(input.dtype)
    x, g = (t if t.dtype is st else O.to(t, None, st) for t in (input, grad))
    dims = _bn_dims(input)
    shape = (1, input.shape[1]) + (1,) * (len(input.shape) - 2)
    m = C.numel(input.shape) // input.shape[1] if input.shape[1] else 0
    invstd = E("rsqrt", E("add", var, eps))
    xhat = E("mul", E("sub", x, V.reshape(mean, shape)), V.reshape(invstd, shape))
    d_bias = O.reduce("sum", g, dims)
    d_weight = O.reduce("sum", E("mul", g, xhat), dims)
    scale = invstd if weight is None else E("mul", invstd, weight)
    # w invstd (g - mean(g) - xhat mean(g xhat))
    centred = E("sub", E("sub", g, V.reshape(E("div", d_bias, max(m, 1)), shape)),
                E("mul", xhat, V.reshape(E("div", d_weight, max(m, 1)), shape)))
    d_input = E("mul", centred, V.reshape(scale, shape))
    return tuple(t if t.dtype is input.dtype else O.to(t, None, input.dtype)
                 for t in (d_input, d_weight, d_bias))


@gradient("batch_norm_train")
def _(g, input, weight, bias, eps, result1, result2):
    mean, var = result1, result2
    if MODE.grad and input.requires_grad:
        # a differentiable backward (create_graph): the statistics as ops of the input, so
        # that the second derivative follows them too
        st = _stat_dtype(input.dtype)
        x = input if input.dtype is st else O.to(input, None, st)
        mean = O.reduce("mean", x, _bn_dims(input))
        var = O.reduce("var", x, _bn_dims(input), correction=0)
    d_input, d_weight, d_bias = batch_norm_train_backward(g, input, weight, mean, var, eps)
    return d_input, (d_weight if weight is not None else None), \
        (d_bias if bias is not None else None)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` dims."""
    ns = tuple(normalized_shape)
    shape = input.shape
    if any(t is not None and (t.shape != ns or t.dtype is not input.dtype)
           for t in (weight, bias)):
        # (weights of another shape broadcast, or of another dtype promote: the composite,
        # not a kernel's convention)
        return _layer_norm(input, weight, bias, ns, eps)
    return O.composite_op("layer_norm", (input, weight, bias),
                          {"normalized_shape": ns, "eps": eps},
                          [(shape, D.result_type(input, weight, bias))], input.device)


@composite("layer_norm")
def _layer_norm(input, weight, bias, normalized_shape, eps):
    dims = tuple(range(-len(normalized_shape), 0))
    mean = O.reduce("mean", input, dims, True)
    var = O.reduce("var", input, dims, True, correction=0)
    out = E("mul", E("sub", input, mean), E("rsqrt", E("add", var, eps)))
    return _affine(out, weight, bias)


def layer_norm_backward(grad, input, weight, normalized_shape, eps):
    """(d_input, d_weight, d_bias) of layer_norm for output gradient ``grad``."""
    ns = tuple(normalized_shape)
    return O.composite_op("layer_norm_backward", (grad, input, weight),
                          {"normalized_shape": ns, "eps": eps},
                          [(input.shape, input.dtype), (ns, input.dtype), (ns, input.dtype)],
                          input.device)


@composite("layer_norm_backward")
def _(grad, input, weight, normalized_shape, eps):
    st = _stat_dtype(input.dtype)
    x, g = (t if t.dtype is st else O.to(t, None, st) for t in (input, grad))
    d = C.numel(normalized_shape)
    rows = C.numel(input.shape) // d if d else 0
    x, g = V.reshape(x, (rows, d)), V.reshape(g, (rows, d))
    mean = O.reduce("mean", x, (1,), True)
    rstd = E("rsqrt", E("add", O.reduce("var", x, (1,), True, correction=0), eps))
    xhat = E("mul", E("sub", x, mean), rstd)
    d_bias = O.reduce("sum", g, (0,))
    d_weight = O.reduce("sum", E("mul", g, xhat), (0,))
    gw = g if weight is None else E("mul", g, V.reshape(
        weight if weight.dtype is st else O.to(weight, None, st), (d,)))
    # rstd (gw - mean(gw) - xhat mean(gw xhat)) over each row
    centred = E("sub", E("sub", gw, O.reduce("mean", gw, (1,), True)),
                E("mul", xhat, O.reduce("mean", E("mul", gw, xhat), (1,), True)))
    d_input = V.reshape(E("mul", centred, rstd), input.shape)
    ns = tuple(normalized_shape)
    return tuple(t if t.dtype is input.dtype else O.to(t, None, input.dtype)
                 for t in (d_input, V.reshape(d_weight, ns), V.reshape(d_bias, ns)))


@gradient("layer_norm")
def _(g, input, weight, bias, normalized_shape, eps):
    d_input, d_weight, d_bias = layer_norm_backward(g, input, weight, normalized_shape, eps)
    return d_input, (d_weight if weight is not None else None), \
        (d_bias if bias is not None else None)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation of (N, C, *) input over groups of C / num_groups channels."""
    return O.composite_op("group_norm", (input, weight, bias),
                          {"num_groups": int(num_groups), "eps": eps},
                          [(input.shape, D.result_type(input, weight, bias))], input.device)


@composite("group_norm")
def _group_norm(input, weight, bias, num_groups, eps):
    n, c = input.shape[:2]
    x = V.reshape(input, (n, num_groups, -1))
    mean = O.reduce("mean", x, -1, True)
    var = O.reduce("var", x, -1, True, correction=0)
    out = V.reshape(E("mul", E("sub", x, mean), E("rsqrt", E("add", var, eps))), input.shape)
    return _affine(out, weight, bias, (1, c) + (1,) * (len(input.shape) - 2))


# ---- embedding ---------------------------------------------------------------------------
defop("embedding", "embedding",
      "embedding(Tensor weight, Tensor indices, int padding_idx=-1, "
      "bool scale_grad_by_freq=False) -> Tensor",
      "(out, weight, indices, padding_idx, scale_grad_by_freq)  # out (*indices.shape, D): "
      "rows of weight (num, D); indices int64/int32, in range; padding_idx (-1: none) and "
      "scale_grad_by_freq only shape the gradient", promotion="none", inputs=("weight",))


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False):
    """Rows of ``weight`` selected by ``indices`` (checked to be in range)."""
    shape = tuple(indices.shape) + (weight.shape[1],)
    return O.composite_op("embedding", (weight, indices),
                          {"padding_idx": padding_idx,
                           "scale_grad_by_freq": bool(scale_grad_by_freq)},
                          [(shape, weight.dtype)], weight.device)


@composite("embedding")
def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False):
    flat = V.reshape(indices, -1)
    out = index_select(weight, 0, flat)
    if scale_grad_by_freq and C.numel(flat.shape):
        counts = index_add(O.zeros((weight.shape[0],), weight.dtype, weight.device), 0, flat,
                           O.full((flat.shape[0],), 1, weight.dtype, weight.device))
        scale = V.unsqueeze(index_select(counts, 0, flat), -1)
        fixed = _detached(out)
        # the same values, the gradient divided by the frequency
        out = E("add", fixed, _true_div(E("sub", out, fixed), scale))
    out = V.reshape(out, tuple(indices.shape) + (weight.shape[1],))
    if padding_idx >= 0 and weight.requires_grad and MODE.grad:
        # positions of padding_idx get no gradient
        out = O.where(V.unsqueeze(E("eq", indices, padding_idx), -1), _detached(out), out)
    return out


# ---- losses ------------------------------------------------------------------------------
defop("nll_loss", "loss",
      "nll_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', "
      "int ignore_index=-100) -> Tensor",
      "(out, self, target, weight, reduction, ignore_index)  # self (N, C, *) or (C,) "
      "log-probabilities; target int64/uint8 class indices; reduction 'mean' | 'sum' | "
      "'none'; out () or target's shape", promotion="none",
      inputs=("self", "target", "weight"), node=lambda ins: _nll_node(ins[0]))
defop("cross_entropy", "loss",
      "cross_entropy(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', "
      "int ignore_index=-100, float label_smoothing=0.0) -> Tensor",
      "(out, self, target, weight, reduction, ignore_index, label_smoothing)  # self "
      "(N, C, *) or (C,) logits; target class indices or, with self's shape, class "
      "probabilities", promotion="none", inputs=("self", "target", "weight"))


# cross_entropy with class indices and no label smoothing: one autograd node whose gradient
# is (softmax - one_hot) * the per-row scale, two passes over the logits, instead of the
# backward of log_softmax and of nll_loss's gather (zeros, a scatter, exp, a row sum, a
# product and a difference: six)
defop("cross_entropy_indices", "loss",
      "cross_entropy_indices(Tensor self, Tensor target, Tensor? weight=None, "
      "str reduction='mean', int ignore_index=-100) -> Tensor",
      "(composite only)", promotion="none", inputs=("self", "target", "weight"),
      variants=(), node=lambda ins: _nll_node(ins[0]))   # cross_entropy's last node


def _nll_node(input) -> str:
    # PyTorch's node: nll_loss for (C,) and (N, C) inputs, nll_loss2d for the rest (folded to
    # four dimensions)
    return "NllLossBackward0" if len(input.shape) <= 2 else "NllLoss2DBackward0"


def _nll_shape(input, target, reduction) -> tuple:
    if reduction != "none":
        return ()
    return () if len(input.shape) == 1 and len(target.shape) == 1 else tuple(target.shape)


def _loss_dtype(input, reduction):
    dt = input.dtype
    if dt.is_floating_point or reduction == "none":
        return dt
    return D.int64 if reduction == "sum" else D.get_default_dtype()


def nll_loss(input, target, weight=None, reduction="mean", ignore_index=-100):
    """The negative log likelihood of class indices (arguments checked)."""
    if weight is not None and weight.requires_grad and MODE.grad:
        # differentiated through its composite (PyTorch refuses a weight that requires grad)
        return _nll_loss(input, target, weight, reduction, ignore_index)
    return O.composite_op("nll_loss", (input, target, weight),
                          {"reduction": reduction, "ignore_index": ignore_index},
                          [(_nll_shape(input, target, reduction),
                            _loss_dtype(input, reduction))], input.device)


@composite("nll_loss")
def _nll_loss(self, target, weight, reduction, ignore_index):
    dim = len(self.shape)
    cdim = 0 if dim == 1 else 1
    c = self.shape[cdim]
    t = O.to(target, None, D.int64)
    if dim == 1 and len(t.shape) == 1:
        t = V.reshape(t, ())
    valid = E("ne", t, ignore_index)
    bad = E("bitwise_and", valid, E("bitwise_or", E("lt", t, 0), E("ge", t, c)))
    # host memory: PyTorch's IndexError now; an asynchronous device reports the bad index
    # from its gather kernel instead of stalling every step on a host read
    if _host_memory(t) and check_by_reading("nll_loss", t.device) and O.item(any_(bad)):
        first = V.select(V.reshape(index(t, bad), -1), 0, 0)
        raise IndexError(f"Target {int(O.item(first))} is out of bounds.")
    safe = O.where(valid, t, 0)
    picked = V.squeeze(O.gather(self, cdim, V.unsqueeze(safe, cdim)), cdim)
    w = O.to(valid, None, self.dtype)
    if weight is not None:
        picked_w = V.reshape(index_select(weight, 0, V.reshape(safe, -1)), safe.shape)
        w = E("mul", w, O.to(picked_w, None, self.dtype))
    loss = O.where(valid, E("mul", E("neg", picked), w), 0.0)  # ignored: 0, even at NaN
    if reduction == "none":
        return loss
    if reduction == "sum":
        return O.reduce("sum", loss)
    return _true_div(O.reduce("sum", loss), O.reduce("sum", w))


def _target_scale(g, self, target, weight, reduction, ignore_index):
    """What the gradients of nll_loss and cross_entropy (class-index targets) share: the
    class dim, the targets with ignored ones set to 0, and each sample's factor (``g``
    times its class weight, 0 where ignored, over the weight sum for the mean)."""
    cdim = 0 if len(self.shape) == 1 else 1
    t = O.to(target, None, D.int64)
    if len(self.shape) == 1 and len(t.shape) == 1:
        t = V.reshape(t, ())
    valid = E("ne", t, ignore_index)
    safe = O.where(valid, t, 0)
    w = O.to(valid, None, self.dtype)
    if weight is not None:
        picked = V.reshape(index_select(weight, 0, V.reshape(safe, -1)), safe.shape)
        w = E("mul", w, O.to(picked, None, self.dtype))
    scale = E("mul", g, w)
    if reduction == "mean":
        scale = _true_div(scale, O.reduce("sum", w))
    return cdim, safe, scale


@gradient("nll_loss")
def _(g, self, target, weight=None, reduction="mean", ignore_index=-100):
    # d loss / d input[i, t_i] = -w_i (scaled by g, over the weight sum for the mean); zero
    # elsewhere and at ignored targets
    cdim, safe, scale = _target_scale(g, self, target, weight, reduction, ignore_index)
    d = O.zeros(self.shape, self.dtype, self.device)
    d = O.scatter(d, cdim, V.unsqueeze(safe, cdim), V.unsqueeze(E("neg", scale), cdim))
    return d, None, None


def cross_entropy(input, target, weight=None, reduction="mean", ignore_index=-100,
                  label_smoothing=0.0):
    """``nll_loss(log_softmax(input, class_dim), target)`` with label smoothing, or the
    cross-entropy with class probabilities (arguments checked)."""
    cdim = 0 if len(input.shape) == 1 else 1
    if tuple(target.shape) == tuple(input.shape):
        shape = input.shape[:cdim] + input.shape[cdim + 1:] if reduction == "none" else ()
    else:
        shape = _nll_shape(input, target, reduction)
        if label_smoothing > 0 and reduction == "none":
            shape = C.broadcast_shapes(shape, target.shape)
    return O.composite_op("cross_entropy", (input, target, weight),
                          {"reduction": reduction, "ignore_index": ignore_index,
                           "label_smoothing": label_smoothing},
                          [(shape, input.dtype)], input.device)


@composite("cross_entropy")
def _cross_entropy(self, target, weight, reduction, ignore_index, label_smoothing):
    nd = len(self.shape)
    cdim = 0 if nd == 1 else 1
    if tuple(target.shape) != tuple(self.shape) and label_smoothing <= 0 and (
            weight is None or not weight.requires_grad):
        return cross_entropy_indices(self, target, weight, reduction, ignore_index)
    logp = O.softmax_op("log_softmax", self, cdim)
    c = self.shape[cdim]
    wshape = [1] * nd
    wshape[cdim] = c
    wshape = tuple(wshape)
    if tuple(target.shape) == tuple(self.shape):
        if weight is not None:
            logp = E("mul", logp, V.reshape(weight, wshape))
        if label_smoothing > 0:
            target = E("add", E("mul", target, 1 - label_smoothing), label_smoothing / c)
        loss = E("neg", E("mul", logp, target))
        if reduction == "none":
            return O.reduce("sum", loss, cdim)
        if reduction == "sum":
            return O.reduce("sum", loss)
        return _true_div(O.reduce("sum", loss), C.numel(self.shape) / c)
    nll = nll_loss(logp, target, weight, reduction, ignore_index)
    t = O.to(target, None, D.int64)
    ignore = E("eq", t, ignore_index)
    smooth = E("mul", logp, V.reshape(weight, wshape)) if weight is not None else logp
    smooth = O.where(ignore, 0.0, E("neg", O.reduce("sum", smooth, cdim)))
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = O.reduce("sum", smooth)
    elif weight is not None:
        safe = V.reshape(O.where(ignore, 0, t), -1)
        kept = O.to(V.reshape(E("logical_not", ignore), -1), None, weight.dtype)
        tw = E("mul", index_select(weight, 0, safe), kept)
        ret = _true_div(O.reduce("sum", smooth), O.reduce("sum", tw))
    else:
        ret = _true_div(O.reduce("sum", smooth), O.reduce("sum", E("logical_not", ignore)))
    return E("add", E("mul", nll, 1 - label_smoothing), E("mul", ret, label_smoothing / c))


def cross_entropy_indices(input, target, weight=None, reduction="mean", ignore_index=-100):
    """``cross_entropy`` of class indices without label smoothing, as one autograd node
    (``weight``, if any, is not differentiated)."""
    return O.composite_op("cross_entropy_indices", (input, target, weight),
                          {"reduction": reduction, "ignore_index": ignore_index},
                          [(_nll_shape(input, target, reduction), input.dtype)],
                          input.device)


@composite("cross_entropy_indices")
def _cross_entropy_indices(self, target, weight, reduction, ignore_index):
    cdim = 0 if len(self.shape) == 1 else 1
    return nll_loss(O.softmax_op("log_softmax", self, cdim), target, weight, reduction,
                    ignore_index)


@gradient("cross_entropy_indices")
def _(g, self, target, weight=None, reduction="mean", ignore_index=-100):
    # d loss / d logit[i, j] = scale_i (softmax[i, j] - [j == t_i])
    cdim, safe, scale = _target_scale(g, self, target, weight, reduction, ignore_index)
    scale = V.unsqueeze(scale, cdim)
    d = E("mul", O.softmax_op("softmax", self, cdim), scale)
    d = O.scatter(d, cdim, V.unsqueeze(safe, cdim), E("neg", scale), reduce="add")
    return d, None, None


# binary cross-entropy of probabilities: one node with PyTorch's gradient, finite where the
# input saturates at 0 or 1 (the logs' clamp at -100 would give inf * 0 = NaN through the
# composite: a sigmoid that rounds to 1.0 made a Siamese network's loss NaN)
defop("binary_cross_entropy", "loss",
      "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, "
      "str reduction='mean') -> Tensor",
      "(composite only)", promotion="none", inputs=("self", "target", "weight"),
      variants=())


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))``, the logs clamped at -100, reduced (arguments
    checked; ``weight``, if any, has ``input``'s shape and is not differentiated)."""
    shape = tuple(input.shape) if reduction == "none" else ()
    return O.composite_op("binary_cross_entropy", (input, target, weight),
                          {"reduction": reduction}, [(shape, input.dtype)], input.device)


def _loss_reduced(loss, reduction):
    if reduction == "none":
        return loss
    total = O.reduce("sum", loss)
    return total if reduction == "sum" else _true_div(total, C.numel(loss.shape))


@composite("binary_cross_entropy")
def _binary_cross_entropy(self, target, weight, reduction):
    log_x = O.clamp(E("log", self), -100.0)
    log_1mx = O.clamp(E("log1p", E("neg", self)), -100.0)
    loss = E("sub", E("mul", E("sub", target, 1), log_1mx), E("mul", target, log_x))
    if weight is not None:
        loss = E("mul", loss, weight)
    return _loss_reduced(loss, reduction)


@gradient("binary_cross_entropy")
def _(g, self, target, weight=None, reduction="mean"):
    # PyTorch's: (x - t) / max(x (1 - x), 1e-12) for the input, -logit(x) for the target
    if reduction == "mean":
        g = _true_div(g, C.numel(self.shape))
    if weight is not None:
        g = E("mul", g, weight)
    d_self = E("mul", g, E("div", E("sub", self, target),
                           O.clamp(E("sub", self, E("mul", self, self)), 1e-12)))
    d_target = E("mul", g, E("neg", E("logit", self, eps=-1.0)))
    return d_self, d_target, None


# ---- attention ---------------------------------------------------------------------------
defop("scaled_dot_product_attention", "attention",
      "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
      "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
      "float? scale=None, bool enable_gqa=False) -> Tensor",
      "(out, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)  "
      "# (..., L, E) (..., S, E) (..., S, Ev) -> (..., L, Ev); bool mask: True takes part; "
      "kernels see dropout_p == 0 only", promotion="none",
      inputs=("query", "key", "value", "attn_mask"))


def dropout_mask(x, p, shape):
    """``keep / (1 - p)`` in ``x``'s dtype, ``keep`` drawn from the device's default
    generator (``uniform >= p``): the same numbers on every device for one seed."""
    u = O.random_(C.empty(tuple(shape), x.dtype, x.device), "uniform", 0.0, 1.0)
    return E("mul", O.to(E("ge", u, p), None, x.dtype), 1.0 / (1.0 - p))


def _attention_shape(query, key, value, attn_mask, enable_gqa) -> tuple:
    L, S = query.shape[-2], key.shape[-2]
    kb, vb = key.shape[:-2], value.shape[:-2]
    if enable_gqa and len(query.shape) >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        kb, vb = kb[:-1] + (kb[-1] * rep,), vb[:-1] + (vb[-1] * rep,)
    batch = C.broadcast_shapes(query.shape[:-2], kb)
    if attn_mask is not None:
        batch = C.broadcast_shapes(batch + (L, S), attn_mask.shape)[:-2]
    return C.broadcast_shapes(batch, vb) + (L, value.shape[-1])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False,
                                 heads_last=False):
    """``softmax(q k^T * scale + mask) v`` (arguments checked). With dropout the composite
    runs on every device, so the dropout mask is the same numbers everywhere.
    ``heads_last``: a device kernel's (B, H, L, E) result may be a view of (B, L, H, E)
    memory (MultiheadAttention's, which joins the heads next)."""
    ins = (query, key, value, attn_mask)
    attrs = {"dropout_p": dropout_p, "is_causal": bool(is_causal), "scale": scale,
             "enable_gqa": bool(enable_gqa)}
    o = OPS["scaled_dot_product_attention"]
    if dropout_p > 0.0:
        return o.composite(*ins, **attrs)
    try:
        shape = _attention_shape(query, key, value, attn_mask, enable_gqa)
    except (RuntimeError, IndexError):  # shapes that do not fit: matmul's error, as always
        return o.composite(*ins, **attrs)
    if attn_mask is not None or not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
                                     and query.dtype is key.dtype is value.dtype
                                     and len(query.shape) >= 2):
        # (masks, broadcast batch dims, grouped heads, mixed dtypes: not a kernel's
        # convention, the composite's)
        return o.composite(*ins, **attrs)
    return O.composite_op("scaled_dot_product_attention", ins, attrs,
                          [(shape, query.dtype)], query.device,
                          _heads_last if heads_last and len(shape) == 4 else None)


def _heads_last(shape, dtype, device):
    """A (B, H, L, E) result as a view of (B, L, H, E) memory: the heads side by side per
    position, so joining them, ``out.transpose(1, 2).reshape(B, L, H * E)``, is a view
    and not a copy."""
    b, h, l_, e = shape
    t = C.empty((b, l_, h, e), dtype, device)
    return C.view_of(t, tuple(shape), (t._stride[0], t._stride[2], t._stride[1], t._stride[3]),
                     0)


def _expand_heads(t, rep):
    """repeat_interleave over the head dim: (..., Hk, S, E) -> (..., Hk * rep, S, E)."""
    shape = t.shape
    t = V.expand(V.unsqueeze(t, -3), (*shape[:-2], rep, *shape[-2:]))
    return V.reshape(t, (*shape[:-3], shape[-3] * rep, *shape[-2:]))


@composite("scaled_dot_product_attention")
def _scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                  enable_gqa):
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and len(query.shape) >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key, value = _expand_heads(key, rep), _expand_heads(value, rep)
    attn = E("mul", matmul(query, V.transpose(key, -2, -1)), scale_factor)
    if is_causal:
        causal = tril(O.full((L, S), True, D.bool_, query.device))
        attn = masked_fill(attn, E("logical_not", causal), -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype is D.bool_:
            attn = masked_fill(attn, E("logical_not", attn_mask), -math.inf)
        else:
            attn = E("add", attn, attn_mask)
    # PyTorch's safe softmax: a row whose scores are all -inf (every key masked) attends
    # to nothing and gives 0, not 0/0
    attn = O.softmax_op("_safe_softmax", attn, -1)
    if dropout_p > 0.0 and C.numel(attn.shape):
        attn = E("mul", attn, 0.0) if dropout_p == 1 else \
            E("mul", attn, dropout_mask(attn, dropout_p, attn.shape))
    return matmul(attn, value)
