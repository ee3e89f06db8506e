"""``nn.utils.rnn``: variable-length batches for the recurrent layers (``PackedSequence``,
packing, padding), as ``torch.nn.utils.rnn``.

A packed sequence stores the time steps of a batch of sequences, sorted by decreasing
length, one after the other: step ``t`` holds the ``batch_sizes[t]`` sequences that are
still running. ``RNN``, ``LSTM`` and ``GRU`` accept it and skip the padding entirely.

>>> import ember
>>> from ember.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence
>>> seqs = [ember.ones(3, 2), ember.ones(1, 2), ember.ones(2, 2)]
>>> padded = pad_sequence(seqs, batch_first=True)
>>> padded.shape
ember.Size([3, 3, 2])
>>> packed = pack_padded_sequence(padded, [3, 1, 2], batch_first=True, enforce_sorted=False)
>>> packed.batch_sizes.tolist()
[3, 2, 1]
>>> pad_packed_sequence(packed, batch_first=True)[1].tolist()
[3, 1, 2]
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import ember
from ember import Tensor
from ember._tensor import parse_to_args

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """The packed form of a batch of variable-length sequences (a named tuple of
    ``data``, ``batch_sizes``, ``sorted_indices``, ``unsorted_indices``).

    Made by ``pack_padded_sequence`` / ``pack_sequence``, not by hand. ``batch_sizes``
    is an int64 CPU tensor; ``sorted_indices`` maps the sorted batch back to the caller's
    order (``unsorted_indices`` is its inverse) when the input was not sorted.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(
            data, batch_sizes, sorted_indices, unsorted_indices))

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          _bind(self.sorted_indices, lambda t: t.pin_memory()),
                          _bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        """``data.to(...)``; the index tensors follow ``data`` to its device (never
        changing dtype). Returns ``self`` when ``data`` does not change."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        parse_to_args(args, kwargs)                  # same argument errors as Tensor.to

        def move(t):
            return t.to(data.device)

        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move),
                          _bind(self.unsorted_indices, move))

    def cuda(self, *args, **kwargs):
        if not args and "device" not in kwargs:
            kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=ember.float64)

    def float(self):
        return self.to(dtype=ember.float32)

    def half(self):
        return self.to(dtype=ember.float16)

    def long(self):
        return self.to(dtype=ember.int64)

    def int(self):
        return self.to(dtype=ember.int32)

    def short(self):
        return self.to(dtype=ember.int16)

    def char(self):
        return self.to(dtype=ember.int8)

    def byte(self):
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn.")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation tensor (``None`` stays ``None``).

    >>> from ember.nn.utils.rnn import invert_permutation
    >>> invert_permutation(ember.tensor([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    if permutation is None:
        return None
    output = ember.empty_like(permutation)
    output.scatter_(0, permutation, ember.arange(permutation.numel(), device=permutation.device))
    return output


def _batch_sizes(lengths: list[int]) -> list[int]:
    """Sorted (decreasing) lengths -> how many sequences are running at each step."""
    out, j = [], len(lengths)
    for t in range(lengths[0]):
        while j > 0 and lengths[j - 1] <= t:
            j -= 1
        out.append(j)
    return out


def _packing_index(batch_sizes: list[int], batch: int) -> list[int]:
    """Rows of a (T * batch)-row time-major tensor that form the packed data."""
    return [t * batch + b for t, n in enumerate(batch_sizes) for b in range(n)]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences
    of the given ``lengths``. With ``enforce_sorted`` the lengths must be decreasing;
    otherwise the batch is sorted here and the permutation kept in the result.

    >>> from ember.nn.utils.rnn import pack_padded_sequence
    >>> x = ember.arange(6.0).reshape(3, 2)          # T=3, B=2
    >>> pack_padded_sequence(x, [3, 1]).data.tolist()
    [0.0, 1.0, 2.0, 4.0]
    """
    if not isinstance(lengths, Tensor):
        lengths = ember.as_tensor(lengths, dtype=ember.int64)
    else:
        lengths = lengths.to(dtype=ember.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = ember.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pack_padded(input: Tensor, lengths: Tensor, batch_first: bool):
    if lengths.dim() != 1 or lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.dim()}D {lengths.device.type} Long tensor")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    lens = lengths.tolist()
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens[0] > steps:
        # PyTorch reads past the end of the input here; refuse instead
        raise RuntimeError(f"pack_padded_sequence: the longest length ({lens[0]}) is larger "
                           f"than the input's time dimension ({steps})")
    batch_sizes = _batch_sizes(lens)
    index = ember.tensor(_packing_index(batch_sizes, batch), dtype=ember.int64,
                         device=input.device)
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    return flat.index_select(0, index), ember.tensor(batch_sizes, dtype=ember.int64)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Undo ``pack_padded_sequence``: ``(padded, lengths)`` with ``padded`` of shape
    ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``), in the caller's batch order.
    ``total_length`` pads to at least that many steps."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch_sizes = sequence.batch_sizes.tolist()
    batch = batch_sizes[0]
    # one gather from [data; padding row]: entry (t, b) is packed row offset_t + b, or padding
    pad_row = ember.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                         device=data.device)
    source = ember.cat([data, pad_row], 0)
    pad_at = data.shape[0]
    index, offset = [], 0
    for t in range(max_seq_length):
        n = batch_sizes[t] if t < len(batch_sizes) else 0
        index.extend(offset + b if b < n else pad_at for b in range(batch))
        offset += n
    padded = source.index_select(0, ember.tensor(index, dtype=ember.int64, device=data.device))
    padded = padded.reshape((max_seq_length, batch) + tuple(data.shape[1:]))
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths = [sum(1 for n in batch_sizes if n > b) for b in range(batch)]
    lengths = ember.tensor(lengths, dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        return (padded.index_select(0 if batch_first else 1, sequence.unsorted_indices),
                lengths[sequence.unsorted_indices.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack variable-length tensors ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)``
    with ``batch_first``), filling with ``padding_value`` on ``padding_side``.

    >>> from ember.nn.utils.rnn import pad_sequence
    >>> pad_sequence([ember.ones(2), ember.ones(1)], padding_side="left").tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for s in sequences:
        if s.dim() == 0:
            raise RuntimeError("pad_sequence: every sequence must have at least one dimension "
                               "(its length), but got a 0-d tensor")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        if tuple(s.shape[1:]) != trailing:
            for i, (a, b) in enumerate(zip(trailing, s.shape[1:])):
                if a != b:
                    raise RuntimeError(f"The size of tensor a ({a}) must match the size of "
                                       f"tensor b ({b}) at non-singleton dimension {i + 1}")
            raise RuntimeError(f"pad_sequence: sequences have different numbers of dimensions "
                               f"({len(trailing) + 1} and {s.dim()})")
    dtype = sequences[0].dtype              # as PyTorch: the first sequence's dtype, no promotion
    max_len = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        s = s.to(dtype)
        missing = max_len - s.shape[0]
        if missing:
            pad = ember.full((missing,) + trailing, padding_value, dtype=dtype, device=s.device)
            s = ember.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return ember.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences (inverse of ``pad_sequence``).
    Like PyTorch, a time-major input is transposed in place first."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    lens = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if len(lens) != padded_sequences.shape[0]:
        which = "shorter" if len(lens) < padded_sequences.shape[0] else "longer"
        raise ValueError(f"zip() argument 2 is {which} than argument 1")
    # copies, as PyTorch's boolean-mask indexing returns
    return [padded_sequences[b, :int(n)].clone() for b, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors ``(L_i, *)``: ``pack_padded_sequence(pad_sequence(...))``."""
    lengths = ember.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
