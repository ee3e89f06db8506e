"""The LSTM cell's pointwise part (PyTorch's gate order i, f, g, o) as one op, so that a
recurrent step is a GEMM, an add and one kernel rather than a dozen recorded elementwise ops
on chunks of the gates. Its output packs ``h`` and the new cell state ``c`` as (2, B, H),
one tensor whose two halves are views: their gradients arrive as one, the backward is one
more kernel, and backends without the kernels run the composites below.

``lstm_layer`` is a whole layer's time loop in one op (one direction; the input projection
and both biases already summed into ``gi``): forward, the recurrent GEMM and the gate math
per step; backward, the gate gradients step by step and the recurrent weight's gradient as
one GEMM over the whole sequence, instead of one (4H, H) product and accumulation per step."""
from __future__ import annotations

from .. import ops as O
from .. import views as V
from ._products import matmul
from ..schema import composite, defop, gradient
from .index import cat, stack

__all__ = ["lstm_cell", "lstm_cell_backward_of", "lstm_layer", "lstm_layer_backward_of",
           "gru_layer", "gru_layer_backward_of"]

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


# ---- a whole layer (one direction) -------------------------------------------------------
defop("lstm_layer", "norm",
      "lstm_layer(Tensor gi, Tensor w_hh, Tensor h0, Tensor c0, bool reverse=False) -> Tensor"
      "  # (2, T, B, H): h and c of every step",
      "(out, gi, w_hh, h0, c0, reverse)  # gi (T, B, 4H): the input projection plus both "
      "biases; w_hh (4H, H); h0, c0 (B, H); reverse: steps T-1 .. 0",
      promotion="none", inputs=("gi", "w_hh", "h0", "c0"),
      doc="an LSTM layer's time loop: gates_t = gi[t] + h_{t-1} w_hh^T, then lstm_cell")
defop("lstm_layer_backward", "norm",
      "lstm_layer_backward(Tensor grad, Tensor gi, Tensor w_hh, Tensor h0, Tensor c0, "
      "Tensor out, bool reverse=False) -> (Tensor d_gi, Tensor d_w_hh, Tensor d_h0, "
      "Tensor d_c0)",
      "(d_gi, d_w_hh, d_h0, d_c0, grad, gi, w_hh, h0, c0, out, reverse)  # grad, out "
      "(2, T, B, H)", promotion="none", inputs=("grad", "gi", "w_hh", "h0", "c0", "out"),
      doc="the gradients of lstm_layer's inputs from the packed gradient of every (h, c)")


def _check_layer(gi, w_hh, h0, c0):
    if (len(gi.shape) != 3 or len(h0.shape) != 2 or tuple(c0.shape) != tuple(h0.shape)
            or tuple(w_hh.shape) != (4 * h0.shape[1], h0.shape[1])
            or tuple(gi.shape[1:]) != (h0.shape[0], 4 * h0.shape[1])):
        raise ValueError(f"lstm_layer(): expected gi (T, B, 4H), w_hh (4H, H), h0 and c0 "
                         f"(B, H), got {tuple(gi.shape)}, {tuple(w_hh.shape)}, "
                         f"{tuple(h0.shape)} and {tuple(c0.shape)}")
    dtypes = {t.dtype for t in (gi, w_hh, h0, c0)}
    if len(dtypes) != 1 or not gi.dtype.is_floating_point:
        raise TypeError(f"lstm_layer(): expected one floating dtype, got "
                        f"{', '.join(sorted(d.name for d in dtypes))}")


def lstm_layer(gi, w_hh, h0, c0, reverse=False):
    """(2, T, B, H): h and c after every step of one LSTM layer direction."""
    _check_layer(gi, w_hh, h0, c0)
    (t, b, _), h = gi.shape, h0.shape[1]
    return O.composite_op("lstm_layer", (gi, w_hh, h0, c0), {"reverse": bool(reverse)},
                          [((2, t, b, h), gi.dtype)], gi.device)


def _steps(n, reverse):
    return range(n - 1, -1, -1) if reverse else range(n)


def _previous(seq, first, t, n, reverse):
    """The state before step ``t``: ``first`` at the first step, else a neighbour in seq."""
    if t == (n - 1 if reverse else 0):
        return first
    return V.select(seq, 0, t + 1 if reverse else t - 1)


@composite("lstm_layer")
def _(gi, w_hh, h0, c0, reverse):
    n = gi.shape[0]
    if n == 0:
        return O.zeros((2, 0) + tuple(h0.shape), gi.dtype, gi.device)
    hs, cs = [None] * n, [None] * n
    h, c = h0, c0
    for t in _steps(n, reverse):
        h, c = lstm_cell(E("add", V.select(gi, 0, t), matmul(h, V.t(w_hh))), c)
        hs[t], cs[t] = h, c
    return stack([stack(hs, 0), stack(cs, 0)], 0)


@composite("lstm_layer_backward")
def _(grad, gi, w_hh, h0, c0, out, reverse):
    n, b, g4 = gi.shape
    hs, cs = V.select(out, 0, 0), V.select(out, 0, 1)
    dh = O.zeros(h0.shape, h0.dtype, h0.device)
    dc = O.zeros(c0.shape, c0.dtype, c0.device)
    if n == 0:
        return O.zeros(gi.shape, gi.dtype, gi.device), O.zeros(w_hh.shape, w_hh.dtype,
                                                               w_hh.device), dh, dc
    hprev = [_previous(hs, h0, t, n, reverse) for t in range(n)]
    d_gi = [None] * n
    for t in reversed(_steps(n, reverse)):
        gates = E("add", V.select(gi, 0, t), matmul(hprev[t], V.t(w_hh)))
        g = stack([E("add", V.select(V.select(grad, 0, 0), 0, t), dh),
                   E("add", V.select(V.select(grad, 0, 1), 0, t), dc)], 0)
        d_gi[t], dc = _backward(g, gates, _previous(cs, c0, t, n, reverse),
                                V.select(out, 1, t))
        dh = matmul(d_gi[t], w_hh)
    d_gi = stack(d_gi, 0)
    d_w = matmul(V.t(V.reshape(d_gi, (n * b, g4))), V.reshape(stack(hprev, 0), (n * b, -1)))
    return d_gi, d_w, dh, dc


def _layer_backward(grad, gi, w_hh, h0, c0, out, reverse):
    return O.composite_op("lstm_layer_backward", (grad, gi, w_hh, h0, c0, out),
                          {"reverse": bool(reverse)},
                          [(gi.shape, gi.dtype), (w_hh.shape, gi.dtype), (h0.shape, gi.dtype),
                           (c0.shape, gi.dtype)], gi.device)


def lstm_layer_backward_of(grad, gi, w_hh, h0, c0, reverse=False):
    """(d_gi, d_w_hh, d_h0, d_c0) for the packed gradient ``grad`` (2, T, B, H) of
    lstm_layer(gi, w_hh, h0, c0, reverse)."""
    _check_layer(gi, w_hh, h0, c0)
    return _layer_backward(grad, gi, w_hh, h0, c0, lstm_layer(gi, w_hh, h0, c0, reverse),
                           reverse)


@gradient("lstm_layer")
def _(g, gi, w_hh, h0, c0, reverse, result):
    return _layer_backward(g, gi, w_hh, h0, c0, result, reverse)


# ---- GRU: a layer direction's time loop as one op ------------------------------------------
#
# PyTorch's GRU (gates r, z, n): r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
# n = tanh(gi_n + r * gh_n), h' = (1 - z) n + z h, with gh = h w_hh^T + b_hh. b_hh stays
# apart from gi because its n part is scaled by r.

defop("gru_layer", "norm",
      "gru_layer(Tensor gi, Tensor w_hh, Tensor b_hh, Tensor h0, bool reverse=False) -> Tensor"
      "  # (T, B, H): h of every step",
      "(out, gi, w_hh, b_hh, h0, reverse)  # gi (T, B, 3H): the input projection and its "
      "bias; w_hh (3H, H); b_hh (3H); h0 (B, H); reverse: steps T-1 .. 0",
      promotion="none", inputs=("gi", "w_hh", "b_hh", "h0"),
      doc="a GRU layer's time loop: gh_t = h_{t-1} w_hh^T + b_hh, then the gates r, z, n")
defop("gru_layer_backward", "norm",
      "gru_layer_backward(Tensor grad, Tensor gi, Tensor w_hh, Tensor b_hh, Tensor h0, "
      "Tensor out, bool reverse=False) -> (Tensor d_gi, Tensor d_w_hh, Tensor d_b_hh, "
      "Tensor d_h0)",
      "(d_gi, d_w_hh, d_b_hh, d_h0, grad, gi, w_hh, b_hh, h0, out, reverse)  # grad, out "
      "(T, B, H)", promotion="none", inputs=("grad", "gi", "w_hh", "b_hh", "h0", "out"),
      doc="the gradients of gru_layer's inputs from the gradient of every step's h")


def _check_gru(gi, w_hh, b_hh, h0):
    if (len(gi.shape) != 3 or len(h0.shape) != 2
            or tuple(w_hh.shape) != (3 * h0.shape[1], h0.shape[1])
            or tuple(b_hh.shape) != (3 * h0.shape[1],)
            or tuple(gi.shape[1:]) != (h0.shape[0], 3 * h0.shape[1])):
        raise ValueError(f"gru_layer(): expected gi (T, B, 3H), w_hh (3H, H), b_hh (3H) and h0 "
                         f"(B, H), got {tuple(gi.shape)}, {tuple(w_hh.shape)}, "
                         f"{tuple(b_hh.shape)} and {tuple(h0.shape)}")
    dtypes = {t.dtype for t in (gi, w_hh, b_hh, h0)}
    if len(dtypes) != 1 or not gi.dtype.is_floating_point:
        raise TypeError(f"gru_layer(): expected one floating dtype, got "
                        f"{', '.join(sorted(d.name for d in dtypes))}")


def gru_layer(gi, w_hh, b_hh, h0, reverse=False):
    """(T, B, H): h after every step of one GRU layer direction."""
    _check_gru(gi, w_hh, b_hh, h0)
    return O.composite_op("gru_layer", (gi, w_hh, b_hh, h0), {"reverse": bool(reverse)},
                          [(tuple(gi.shape[:2]) + (h0.shape[1],), gi.dtype)], gi.device)


def _gru_gates(x, gh, h):
    """r, z, n and the new h of one step from its input part ``x`` and recurrent part
    ``gh`` (both (B, 3H)) and the previous state ``h``."""
    hs = h.shape[1]
    part = lambda t, k: V.narrow(t, 1, k * hs, hs)      # noqa: E731
    r = E("sigmoid", E("add", part(x, 0), part(gh, 0)))
    z = E("sigmoid", E("add", part(x, 1), part(gh, 1)))
    n = E("tanh", E("add", part(x, 2), E("mul", r, part(gh, 2))))
    return r, z, n, E("add", n, E("mul", z, E("sub", h, n)))


@composite("gru_layer")
def _(gi, w_hh, b_hh, h0, reverse):
    n = gi.shape[0]
    if n == 0:
        return O.zeros((0,) + tuple(h0.shape), gi.dtype, gi.device)
    hs = [None] * n
    h = h0
    for t in _steps(n, reverse):
        gh = E("add", matmul(h, V.t(w_hh)), b_hh)
        h = _gru_gates(V.select(gi, 0, t), gh, h)[3]
        hs[t] = h
    return stack(hs, 0)


@composite("gru_layer_backward")
def _(grad, gi, w_hh, b_hh, h0, out, reverse):
    n, b, g3 = gi.shape
    dh = O.zeros(h0.shape, h0.dtype, h0.device)
    if n == 0:
        return (O.zeros(gi.shape, gi.dtype, gi.device),
                O.zeros(w_hh.shape, w_hh.dtype, w_hh.device),
                O.zeros(b_hh.shape, b_hh.dtype, b_hh.device), dh)
    hprev = [_previous(out, h0, t, n, reverse) for t in range(n)]
    d_gi, d_gh = [None] * n, [None] * n
    for t in reversed(_steps(n, reverse)):
        gh = E("add", matmul(hprev[t], V.t(w_hh)), b_hh)
        r, z, nn, _ = _gru_gates(V.select(gi, 0, t), gh, hprev[t])
        hs = hprev[t].shape[1]
        dht = E("add", V.select(grad, 0, t), dh)
        dn = E("mul", E("mul", dht, E("sub", 1.0, z)), E("sub", 1.0, E("mul", nn, nn)))
        dz = E("mul", E("mul", dht, E("sub", hprev[t], nn)), E("mul", z, E("sub", 1.0, z)))
        dr = E("mul", E("mul", dn, V.narrow(gh, 1, 2 * hs, hs)), E("mul", r, E("sub", 1.0, r)))
        d_gi[t] = cat([dr, dz, dn], 1)
        d_gh[t] = cat([dr, dz, E("mul", dn, r)], 1)
        dh = E("add", E("mul", dht, z), matmul(d_gh[t], w_hh))
    d_gi = stack(d_gi, 0)
    flat = V.reshape(stack(d_gh, 0), (n * b, g3))
    d_w = matmul(V.t(flat), V.reshape(stack(hprev, 0), (n * b, -1)))
    return d_gi, d_w, O.reduce("sum", flat, 0), dh


def _gru_backward(grad, gi, w_hh, b_hh, h0, out, reverse):
    return O.composite_op("gru_layer_backward", (grad, gi, w_hh, b_hh, h0, out),
                          {"reverse": bool(reverse)},
                          [(gi.shape, gi.dtype), (w_hh.shape, gi.dtype), (b_hh.shape, gi.dtype),
                           (h0.shape, gi.dtype)], gi.device)


def gru_layer_backward_of(grad, gi, w_hh, b_hh, h0, reverse=False):
    """(d_gi, d_w_hh, d_b_hh, d_h0) for the gradient ``grad`` (T, B, H) of
    gru_layer(gi, w_hh, b_hh, h0, reverse)."""
    _check_gru(gi, w_hh, b_hh, h0)
    return _gru_backward(grad, gi, w_hh, b_hh, h0, gru_layer(gi, w_hh, b_hh, h0, reverse),
                         reverse)


@gradient("gru_layer")
def _(g, gi, w_hh, b_hh, h0, reverse, result):
    return _gru_backward(g, gi, w_hh, b_hh, h0, result, reverse)
