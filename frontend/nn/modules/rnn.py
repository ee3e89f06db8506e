"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (multi-layer, bidirectional, dropout
between layers, ``batch_first``, LSTM ``proj_size``) and the single-step cells, with
PyTorch's parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), gate order and
initialisation U(-1/sqrt(hidden), 1/sqrt(hidden)).

The input projection of a whole sequence is one matmul; only the recurrence loops over
time steps, and an LSTM step's gate math is one op (``lstm_cell``: one kernel forward, one
backward). An unpacked LSTM without projections runs each layer direction's whole time loop
as one op (``lstm_layer``), and so does an unpacked GRU (``gru_layer``). A
``PackedSequence`` input (``nn.utils.rnn``) runs each sequence only over its own length
and returns a ``PackedSequence`` and each sequence's last valid state.

>>> import ember, ember.nn as nn
>>> lstm = nn.LSTM(10, 20, num_layers=2)
>>> out, (h, c) = lstm(ember.randn(5, 3, 10))
>>> out.shape, h.shape
(ember.Size([5, 3, 20]), ember.Size([2, 3, 20]))
"""
from __future__ import annotations

import math
import numbers

import ember
from ember import Tensor
from ember.dispatcher.defs.rnn import lstm_cell as _lstm_cell
from ember.dispatcher.defs.rnn import gru_layer as _gru_layer
from ember.dispatcher.defs.rnn import lstm_layer as _lstm_layer

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module
from ember.dispatcher.warn import warn as _warn

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _linear(x, w, b):
    out = ember.matmul(x, w.t())
    return out + b if b is not None else out


def _rnn_step(mode, gi, h, w_hh, b_hh):
    gh = _linear(h, w_hh, b_hh)
    pre = gi + gh
    return ember.tanh(pre) if mode == "RNN_TANH" else F.relu(pre)


def _gru_step(gi, h, w_hh, b_hh):
    gh = _linear(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = ember.sigmoid(i_r + h_r)
    z = ember.sigmoid(i_z + h_z)
    n = ember.tanh(i_n + r * h_n)
    return n + z * (h - n)              # (1 - z) * n + z * h


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr):
    gates = gi + _linear(h, w_hh, b_hh)
    if gates.dim() == 2 and gates.dtype == c.dtype and gates.is_floating_point():
        h, c = _lstm_cell(gates, c)   # one kernel for the gate math, forward and backward
    else:
        i, f, g, o = gates.chunk(4, -1)
        c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
        h = ember.sigmoid(o) * ember.tanh(c)
    if w_hr is not None:
        h = ember.matmul(h, w_hr.t())
    return h, c


class RNNBase(Module):
    """Common base of ``RNN``, ``LSTM`` and ``GRU`` (parameters, checks, the layer loop)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            _warn("dropout option adds dropout after all but last recurrent layer, so "
                  "non-zero dropout expects num_layers greater than 1, but got "
                  f"dropout={dropout} and num_layers={num_layers}")
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: "
                            f"{type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(ember.empty(shape, device=device,
                                                              dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """No-op (cuDNN's weight packing has no equivalent here)."""

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- checks -------------------------------------------------------------------------
    def _check_input(self, input, packed_dims=False):
        w = self._flat_weights[0]
        if input.dtype is not w.dtype:
            raise ValueError(f"RNN input dtype (ember.{input.dtype.name}) does not match weight "
                             f"dtype (ember.{w.dtype.name}). Convert input: "
                             f"input.to(ember.{w.dtype.name}), or convert model: "
                             f"model.to(ember.{input.dtype.name})")
        if packed_dims and input.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _expected_hidden(self, batch, size):
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    @staticmethod
    def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    def _prepare(self, name, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if name == 'RNN' else ''}instead")
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if self.batch_first:
            input = input.transpose(0, 1)
        self._check_input(input)
        return input, is_batched                       # input is (L, N, H_in) now

    # ---- the layer loop -----------------------------------------------------------------
    def _direction(self, gi_all, h0, c0, weights, offsets, sizes, reverse, biased=False):
        """One direction of one layer over all steps.

        ``gi_all`` is the input projection of every step; step ``t`` uses rows
        ``offsets[t]:offsets[t] + sizes[t]`` of it when packed (``offsets`` not None), else
        ``gi_all[t]``. Packed batches shrink over time (sequences sorted by length), so the
        forward pass sets a finished sequence's final state aside, and the reverse pass
        brings a sequence in (from ``h0``/``c0``) at its last valid step. ``biased``: the
        projection already holds ``bias_hh`` too.
        """
        w_hh, b_hh, w_hr = weights["weight_hh"], weights.get("bias_hh"), weights.get("weight_hr")
        if biased:
            b_hh = None
        steps = len(sizes)
        if (self.mode == "LSTM" and offsets is None and w_hr is None and steps
                and gi_all.is_floating_point() and h0.dtype is gi_all.dtype
                and c0.dtype is gi_all.dtype):
            # the whole time loop as one op (forward and backward native where a backend
            # has the kernels): both biases go into the input projection
            gi_all = gi_all + b_hh if b_hh is not None else gi_all
            out = _lstm_layer(gi_all, w_hh, h0, c0, reverse)
            last = 0 if reverse else steps - 1
            return out[0], out[0, last], out[1, last]
        if (self.mode == "GRU" and offsets is None and steps and gi_all.is_floating_point()
                and h0.dtype is gi_all.dtype and gi_all.dim() == 3):
            # the GRU's time loop as one op; b_hh stays apart (r scales its n part)
            if b_hh is None:
                b_hh = ember.zeros(w_hh.shape[0], dtype=w_hh.dtype, device=w_hh.device)
            out = _gru_layer(gi_all, w_hh, b_hh, h0, reverse)
            return out, out[0 if reverse else steps - 1], None
        h, c = h0, c0
        if offsets is not None:
            first = sizes[-1] if reverse else sizes[0]
            h = h0[:first]
            c = c0[:first] if c0 is not None else None
        finished_h, finished_c = [], []
        seq = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            if offsets is None:
                gi = gi_all[t]
            else:
                n = sizes[t]
                gi = gi_all[offsets[t]:offsets[t] + n]
                have = h.shape[0]
                if n < have:                        # forward: sequences ended before t
                    finished_h.insert(0, h[n:])
                    h = h[:n]
                    if c is not None:
                        finished_c.insert(0, c[n:])
                        c = c[:n]
                elif n > have:                      # reverse: sequences whose last step is t
                    h = ember.cat([h, h0[have:n]], 0)
                    if c is not None:
                        c = ember.cat([c, c0[have:n]], 0)
            if self.mode == "LSTM":
                h, c = _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
            elif self.mode == "GRU":
                h = _gru_step(gi, h, w_hh, b_hh)
            else:
                h = _rnn_step(self.mode, gi, h, w_hh, b_hh)
            seq[t] = h
        if finished_h:
            h = ember.cat([h] + finished_h, 0)
            if c is not None:
                c = ember.cat([c] + finished_c, 0)
        out = ember.stack(seq, 0) if offsets is None else ember.cat(seq, 0)
        return out, h, c

    def _run(self, x, h0, c0=None, batch_sizes=None):
        """x (L, N, H_in), or the packed data (sum(batch_sizes), H_in) with ``batch_sizes``
        a list; h0/c0 (layers * dirs, N, H). Returns output (same layout as x), h_n, c_n."""
        dirs = 2 if self.bidirectional else 1
        if batch_sizes is None:
            sizes, offsets = [x.shape[1]] * x.shape[0], None
        else:
            sizes, offsets, total = batch_sizes, [], 0
            for n in sizes:
                offsets.append(total)
                total += n
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                names = self._all_weights[layer * dirs + d]
                p = {n.split("_l")[0]: getattr(self, n) for n in names}
                b_ih, b_hh = p.get("bias_ih"), p.get("bias_hh")
                # an LSTM over whole sequences: both biases in the projection's one GEMM
                biased = (self.mode == "LSTM" and offsets is None and b_ih is not None
                          and b_hh is not None)
                gi_all = F.linear(x, p["weight_ih"], b_ih + b_hh) if biased else \
                    _linear(x, p["weight_ih"], b_ih)        # one matmul per layer
                k = layer * dirs + d
                out, h, c = self._direction(gi_all, h0[k], c0[k] if c0 is not None else None,
                                            p, offsets, sizes, reverse=d == 1, biased=biased)
                outs.append(out)
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            x = outs[0] if dirs == 1 else ember.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, ember.stack(h_n, 0), (ember.stack(c_n, 0) if c_n else None)

    def _finish(self, out, is_batched):
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
        return out

    def _unpack(self, packed):
        """Check a PackedSequence input as PyTorch's ``check_input`` does; returns its data
        and batch sizes (a list)."""
        data = packed.data
        self._check_input(data, packed_dims=True)
        return data, packed.batch_sizes.tolist()

    @staticmethod
    def _permute(hx, permutation):
        return hx if permutation is None else hx.index_select(1, permutation)

    def _forward_one_state(self, name: str, input, hx: Tensor | None):
        """RNN and GRU forward: one hidden state (LSTM has two)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes = self._unpack(input)
            expected = self._expected_hidden(batch_sizes[0], self.hidden_size)
            if hx is None:
                hx = ember.zeros(expected, dtype=data.dtype, device=data.device)
            else:
                hx = self._permute(hx, input.sorted_indices)
            self._check_hidden(hx, expected)
            out, h_n, _ = self._run(data, hx, batch_sizes=batch_sizes)
            return (PackedSequence(out, input.batch_sizes, input.sorted_indices,
                                   input.unsorted_indices),
                    self._permute(h_n, input.unsorted_indices))
        x, is_batched = self._prepare(name, input)
        if hx is not None:
            if is_batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got"
                                       f" {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        expected = self._expected_hidden(x.shape[1], self.hidden_size)
        if hx is None:
            hx = ember.zeros(expected, dtype=x.dtype, device=x.device)
        self._check_hidden(hx, expected)
        out, h_n, _ = self._run(x, hx)
        if not is_batched:
            h_n = h_n.squeeze(1)
        return self._finish(out, is_batched), h_n


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        return self._forward_one_state("RNN", input, hx)


class LSTM(RNNBase):
    """Long short-term memory; gates ``i, f, g, o`` in PyTorch's order; optional
    ``proj_size`` projection of the hidden state."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes = self._unpack(input)
            batch, is_batched = batch_sizes[0], True
        else:
            x, is_batched = self._prepare("LSTM", input)
            batch, batch_sizes = x.shape[1], None
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        exp_h = self._expected_hidden(batch, real_hidden)
        exp_c = self._expected_hidden(batch, self.hidden_size)
        if hx is None:
            h0 = ember.zeros(exp_h, dtype=x.dtype, device=x.device)
            c0 = ember.zeros(exp_c, dtype=x.dtype, device=x.device)
        elif packed:
            h0, c0 = (self._permute(h, input.sorted_indices) for h in hx)
        else:
            h0, c0 = hx
            if is_batched:
                if h0.dim() != 3 or c0.dim() != 3:
                    raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                       f"got ({h0.dim()}-D, {c0.dim()}-D) tensors")
            else:
                if h0.dim() != 2 or c0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({h0.dim()}-D, {c0.dim()}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        self._check_hidden(h0, exp_h, "Expected hidden[0] size {}, got {}")
        self._check_hidden(c0, exp_c, "Expected hidden[1] size {}, got {}")
        out, h_n, c_n = self._run(x, h0, c0, batch_sizes)
        if packed:
            return (PackedSequence(out, input.batch_sizes, input.sorted_indices,
                                   input.unsorted_indices),
                    (self._permute(h_n, input.unsorted_indices),
                     self._permute(c_n, input.unsorted_indices)))
        if not is_batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(out, is_batched), (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit; gates ``r, z, n`` in PyTorch's order."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        return self._forward_one_state("GRU", input, hx)


# ---- cells ------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Common base of ``RNNCell``, ``LSTMCell`` and ``GRUCell``: one time step of a recurrent
    layer.

    It holds the parameters ``weight_ih`` ``(num_chunks * hidden_size, input_size)``,
    ``weight_hh`` ``(num_chunks * hidden_size, hidden_size)`` and, with ``bias``, ``bias_ih``
    and ``bias_hh`` ``(num_chunks * hidden_size)``, all initialised from
    ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``. ``num_chunks`` is the number of gates
    stacked in those matrices (1 for ``RNNCell``, 4 for ``LSTMCell``, 3 for ``GRUCell``).
    Use one of the subclasses; the base has no ``forward``.

    Args:
        input_size (int): features of the input ``x``.
        hidden_size (int): features of the hidden state ``h``.
        bias (bool): use the bias vectors.
        num_chunks (int): how many gate blocks the weight matrices stack.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Example:
        >>> import ember.nn as nn
        >>> cell = nn.GRUCell(4, 8)
        >>> isinstance(cell, nn.RNNCellBase), cell.weight_ih.shape, cell.weight_hh.shape
        (True, ember.Size([24, 4]), ember.Size([24, 8]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size),
                                               device=device, dtype=dtype))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size),
                                               device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, device=device,
                                                 dtype=dtype))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, device=device,
                                                 dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, name, input, hx, nstates=1):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        if hx is not None:
            states = hx if isinstance(hx, tuple) else (hx,)
            for h in states:
                if h.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D "
                                     "instead")
        return input.dim() == 2

    def _cell_inputs(self, name, input, hx, nstates=1):
        """Checked input and state(s) with a batch dim; zeros when no state is given."""
        batched = self._batched(name, input, hx)
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                            device=input.device)
            hx = z if nstates == 1 else (z,) * nstates
        elif not batched:
            hx = hx.unsqueeze(0) if nstates == 1 else tuple(h.unsqueeze(0) for h in hx)
        return input, hx, batched


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    With ``nonlinearity='relu'`` ReLU replaces ``tanh``. ``forward(input, hx=None)`` returns
    the new hidden state; a missing ``hx`` is taken as zeros.

    Args:
        input_size (int): features of the input ``x``.
        hidden_size (int): features of the hidden state ``h``.
        bias (bool): use the biases ``b_ih`` and ``b_hh``. Default: True.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, H_in) or (H_in), with ``H_in = input_size``.
        - Hidden: (N, H_out) or (H_out), with ``H_out = hidden_size``.
        - Output: (N, H_out) or (H_out), the new hidden state.

    Example:
        >>> import ember.nn as nn
        >>> cell = nn.RNNCell(10, 20)
        >>> x, h = ember.randn(6, 3, 10), ember.zeros(3, 20)   # 6 steps, batch of 3
        >>> for t in range(6):
        ...     h = cell(x[t], h)
        >>> h.shape, cell(ember.randn(10)).shape
        (ember.Size([3, 20]), ember.Size([20]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hx, batched = self._cell_inputs("RNNCell", input, hx)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = _rnn_step(mode, _linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of a long short-term memory (LSTM) layer.

    With ``W_i* x`` short for ``x W_i*^T + b_i*`` (and likewise for ``h``):

        i = sigmoid(W_ii x + W_hi h)        input gate
        f = sigmoid(W_if x + W_hf h)        forget gate
        g = tanh(W_ig x + W_hg h)           cell candidate
        o = sigmoid(W_io x + W_ho h)        output gate
        c' = f * c + i * g
        h' = o * tanh(c')

    The gate blocks are stacked in ``weight_ih`` / ``weight_hh`` in the order ``i, f, g, o``.
    ``forward(input, hx=None)`` takes ``hx = (h, c)`` (zeros when missing) and returns
    ``(h', c')``.

    Args:
        input_size (int): features of the input ``x``.
        hidden_size (int): features of the hidden and cell states.
        bias (bool): use the biases. Default: True.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, H_in) or (H_in), with ``H_in = input_size``.
        - h, c: (N, H_out) or (H_out), with ``H_out = hidden_size``.
        - Output: ``(h', c')``, each (N, H_out) or (H_out).

    Example:
        >>> import ember.nn as nn
        >>> cell = nn.LSTMCell(10, 20)
        >>> x = ember.randn(5, 3, 10)                 # 5 steps, batch of 3
        >>> h, c = ember.zeros(3, 20), ember.zeros(3, 20)
        >>> for t in range(5):
        ...     h, c = cell(x[t], (h, c))
        >>> h.shape, c.shape, cell.weight_ih.shape
        (ember.Size([3, 20]), ember.Size([3, 20]), ember.Size([80, 10]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx=None):
        input, hx, batched = self._cell_inputs("LSTMCell", input, hx, nstates=2)
        h, c = _lstm_step(_linear(input, self.weight_ih, self.bias_ih), hx[0], hx[1],
                          self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of a gated recurrent unit (GRU) layer.

    With ``W_i* x`` short for ``x W_i*^T + b_i*`` (and likewise for ``h``):

        r = sigmoid(W_ir x + W_hr h)        reset gate
        z = sigmoid(W_iz x + W_hz h)        update gate
        n = tanh(W_in x + r * (W_hn h))     candidate state
        h' = (1 - z) * n + z * h

    The gate blocks are stacked in ``weight_ih`` / ``weight_hh`` in the order ``r, z, n``.
    ``forward(input, hx=None)`` returns the new hidden state; a missing ``hx`` is zeros.

    Args:
        input_size (int): features of the input ``x``.
        hidden_size (int): features of the hidden state ``h``.
        bias (bool): use the biases. Default: True.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - Input: (N, H_in) or (H_in), with ``H_in = input_size``.
        - Hidden: (N, H_out) or (H_out), with ``H_out = hidden_size``.
        - Output: (N, H_out) or (H_out), the new hidden state.

    Example:
        >>> import ember.nn as nn
        >>> cell = nn.GRUCell(10, 20)
        >>> x, h = ember.randn(6, 3, 10), ember.zeros(3, 20)
        >>> for t in range(6):
        ...     h = cell(x[t], h)
        >>> h.shape, cell.weight_hh.shape
        (ember.Size([3, 20]), ember.Size([60, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hx, batched = self._cell_inputs("GRUCell", input, hx)
        h = _gru_step(_linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)
