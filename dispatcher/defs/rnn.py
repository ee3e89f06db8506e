"""The LSTM cell's pointwise part (PyTorch's gate order i, f, g, o) as one op, so that a
recurrent step is a GEMM, an add and one kernel rather than a dozen recorded elementwise ops
on chunks of the gates. Its output packs ``h`` and the new cell state ``c`` as (2, B, H),
one tensor whose two halves are views: their gradients arrive as one, the backward is one
more kernel, and backends without the kernels run the composites below."""
from __future__ import annotations

from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient
from .index import cat, stack

__all__ = ["lstm_cell", "lstm_cell_backward_of"]

E = O.elementwise

defop("lstm_cell", "norm", "lstm_cell(Tensor gates, Tensor c) -> Tensor  # (2, B, H): h, c'",
      "(out, gates, c)  # gates (B, 4H), c (B, H)", promotion="none", inputs=("gates", "c"),
      doc="c' = sigmoid(f) c + sigmoid(i) tanh(g), h = sigmoid(o) tanh(c'), packed as (2, B, H)")
defop("lstm_cell_backward", "norm",
      "lstm_cell_backward(Tensor grad, Tensor gates, Tensor c, Tensor out) -> "
      "(Tensor d_gates, Tensor d_c)",
      "(d_gates, d_c, grad, gates, c, out)  # grad, out (2, B, H)", promotion="none",
      inputs=("grad", "gates", "c", "out"),
      doc="the gradients of lstm_cell's gates and c from the packed gradient of (h, c')")


def _check(gates, c):
    if len(c.shape) != 2 or tuple(gates.shape) != (c.shape[0], 4 * c.shape[1]):
        raise ValueError(f"lstm_cell(): expected gates (B, 4H) and c (B, H), got "
                         f"{tuple(gates.shape)} and {tuple(c.shape)}")
    if gates.dtype is not c.dtype or not gates.dtype.is_floating_point:
        raise TypeError(f"lstm_cell(): expected gates and c of one floating dtype, got "
                        f"{gates.dtype.name} and {c.dtype.name}")


def lstm_cell(gates, c):
    """(h, c') of one LSTM step from the summed gate pre-activations (B, 4H) and c (B, H)."""
    _check(gates, c)
    b, h = c.shape
    out = O.composite_op("lstm_cell", (gates, c), {}, [((2, b, h), c.dtype)], c.device)
    return V.select(out, 0, 0), V.select(out, 0, 1)


def _gates(gates):
    h = gates.shape[1] // 4
    i, f, g, o = (V.narrow(gates, 1, k * h, h) for k in range(4))
    return E("sigmoid", i), E("sigmoid", f), E("tanh", g), E("sigmoid", o)


@composite("lstm_cell")
def _(gates, c):
    i, f, g, o = _gates(gates)
    cn = E("add", E("mul", f, c), E("mul", i, g))
    return stack([E("mul", o, E("tanh", cn)), cn], 0)


@composite("lstm_cell_backward")
def _(grad, gates, c, out):
    i, f, g, o = _gates(gates)
    gh, gc = V.select(grad, 0, 0), V.select(grad, 0, 1)
    tc = E("tanh", V.select(out, 0, 1))
    dct = E("add", gc, E("mul", E("mul", gh, o), E("sub", 1, E("mul", tc, tc))))
    di = E("mul", E("mul", dct, g), E("mul", i, E("sub", 1, i)))
    df = E("mul", E("mul", dct, c), E("mul", f, E("sub", 1, f)))
    dg = E("mul", E("mul", dct, i), E("sub", 1, E("mul", g, g)))
    do = E("mul", E("mul", gh, tc), E("mul", o, E("sub", 1, o)))
    return cat([di, df, dg, do], 1), E("mul", dct, f)


def _backward(grad, gates, c, out):
    b, h = c.shape
    return O.composite_op("lstm_cell_backward", (grad, gates, c, out), {},
                          [((b, 4 * h), c.dtype), ((b, h), c.dtype)], c.device)


def lstm_cell_backward_of(grad, gates, c):
    """(d_gates, d_c) for the packed gradient ``grad`` (2, B, H) of lstm_cell(gates, c)."""
    _check(gates, c)
    h, cn = lstm_cell(gates, c)
    return _backward(grad, gates, c, stack([h, cn], 0))


@gradient("lstm_cell")
def _(g, gates, c, result):
    return _backward(g, gates, c, result)
