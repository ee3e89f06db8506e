"""``nn.utils.rnn`` (packing and padding) and ``PackedSequence`` through ``RNN`` / ``LSTM`` /
``GRU``, against PyTorch: same weights, same inputs; outputs, last states and gradients
compared."""
import numpy as np
import pytest
import torch
from nn_helpers import close, e, load_from_torch, randn

import ember
import ember.nn as enn
from ember.nn.utils import rnn as ernn
from torch.nn.utils import rnn as trnn


def _raises_like(fn_t, fn_e):
    with pytest.raises(Exception) as t_info:
        fn_t()
    with pytest.raises(type(t_info.value)) as e_info:
        fn_e()
    assert str(e_info.value) == str(t_info.value)


# ---- packing and padding -------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [5, 3, 3, 1]), (False, [2, 5, 1, 4]),
                                                    (False, [3, 3, 3, 3])])
def test_pack_pad_roundtrip(batch_first, enforce_sorted, lengths):
    x = randn(4, 5, 3) if batch_first else randn(5, 4, 3)
    tp = trnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                   enforce_sorted=enforce_sorted)
    ep = ernn.pack_padded_sequence(e(x), lengths, batch_first=batch_first,
                                   enforce_sorted=enforce_sorted)
    close(ep.data, tp.data)
    close(ep.batch_sizes, tp.batch_sizes)
    for a, b in ((ep.sorted_indices, tp.sorted_indices),
                 (ep.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            close(a, b)
    for total, pad in ((None, 0.0), (7, -1.5)):
        tout = trnn.pad_packed_sequence(tp, batch_first, pad, total)
        eout = ernn.pad_packed_sequence(ep, batch_first, pad, total)
        close(eout[0], tout[0])
        close(eout[1], tout[1])


def test_packed_sequence_tuple_and_conversions():
    ep = ernn.pack_sequence([ember.ones(3, 2), ember.ones(1, 2), ember.ones(2, 2)],
                            enforce_sorted=False)
    tp = trnn.pack_sequence([torch.ones(3, 2), torch.ones(1, 2), torch.ones(2, 2)],
                            enforce_sorted=False)
    assert ep._fields == tp._fields and len(ep) == 4 and isinstance(ep, tuple)
    data, batch_sizes, sorted_indices, unsorted_indices = ep
    assert data is ep.data and batch_sizes.dtype == ember.int64
    assert ep.to("cpu") is ep and ep.float() is ep
    d = ep.double()
    assert type(d) is ernn.PackedSequence and d.data.dtype == ember.float64
    assert d.sorted_indices.dtype == ember.int64 and d.batch_sizes is ep.batch_sizes
    assert ep.long().data.dtype == ember.int64 and ep.half().data.dtype == ember.float16
    assert ep.is_cuda is False and ep.is_pinned() is False
    close(ep.unsorted_indices, tp.unsorted_indices)
    # two-argument form and the tuple form
    p2 = ernn.PackedSequence(ep.data, ep.batch_sizes)
    assert p2.sorted_indices is None and p2.unsorted_indices is None
    p3 = ernn.PackedSequence((ep.data, ep.batch_sizes))
    assert p3.batch_sizes is ep.batch_sizes
    _raises_like(lambda: trnn.PackedSequence(tp.data), lambda: ernn.PackedSequence(ep.data))


def test_pad_sequence_and_friends():
    seqs = [randn(3, 2, seed=1), randn(5, 2, seed=2), randn(1, 2, seed=3)]
    for batch_first in (False, True):
        for side in ("right", "left"):
            close(ernn.pad_sequence([e(s) for s in seqs], batch_first, 9.0, side),
                  trnn.pad_sequence(seqs, batch_first, 9.0, side))
    close(ernn.pad_sequence([e(s) for s in seqs], padding_side="left"),
          trnn.pad_sequence(seqs, padding_side="left"))
    # mixed dtypes take the first one's, 1-d sequences, a tuple
    close(ernn.pad_sequence((ember.ones(2, dtype=ember.int64), ember.ones(3))),
          trnn.pad_sequence((torch.ones(2, dtype=torch.int64), torch.ones(3))))
    # unpad / unpack give the sequences back
    padded = trnn.pad_sequence(seqs, batch_first=True)
    lengths = torch.tensor([3, 5, 1])
    ours = ernn.unpad_sequence(e(padded), ember.tensor([3, 5, 1]), batch_first=True)
    for a, b in zip(ours, trnn.unpad_sequence(padded, lengths, batch_first=True)):
        close(a, b)
    packed = ernn.pack_sequence([e(s) for s in seqs], enforce_sorted=False)
    for a, b in zip(ernn.unpack_sequence(packed), seqs):
        close(a, b)
    close(ernn.invert_permutation(ember.tensor([2, 0, 3, 1])),
          trnn.invert_permutation(torch.tensor([2, 0, 3, 1])))
    assert ernn.invert_permutation(None) is None


def test_pack_and_pad_errors():
    x = randn(4, 3, 2)
    cases = [
        ([4, 1, 3], {}),                               # not sorted
        ([4, 3], {}),                                  # wrong count
        ([4, 3, 0], {}),                               # a zero length
        (torch.tensor([[4, 3, 1]]), {}),               # 2-d lengths
    ]
    for lengths, kw in cases:
        elen = e(lengths) if isinstance(lengths, torch.Tensor) else lengths
        _raises_like(lambda: trnn.pack_padded_sequence(x, lengths, **kw),
                     lambda: ernn.pack_padded_sequence(e(x), elen, **kw))
    _raises_like(lambda: trnn.pack_padded_sequence(torch.randn(0, 3, 2), [4, 3, 1]),
                 lambda: ernn.pack_padded_sequence(ember.randn(0, 3, 2), [4, 3, 1]))
    tp = trnn.pack_padded_sequence(x, [4, 3, 1])
    ep = ernn.pack_padded_sequence(e(x), [4, 3, 1])
    _raises_like(lambda: trnn.pad_packed_sequence(tp, total_length=3),
                 lambda: ernn.pad_packed_sequence(ep, total_length=3))
    _raises_like(lambda: trnn.pad_sequence([]), lambda: ernn.pad_sequence([]))
    _raises_like(lambda: trnn.pad_sequence(5), lambda: ernn.pad_sequence(5))
    _raises_like(lambda: trnn.pad_sequence([torch.ones(2, 3), torch.ones(2, 4)]),
                 lambda: ernn.pad_sequence([ember.ones(2, 3), ember.ones(2, 4)]))
    _raises_like(lambda: trnn.pad_sequence([torch.ones(2)], padding_side="up"),
                 lambda: ernn.pad_sequence([ember.ones(2)], padding_side="up"))
    # a length past the time dimension: PyTorch reads out of bounds, ember refuses
    with pytest.raises(RuntimeError, match="longest length"):
        ernn.pack_padded_sequence(e(x), [5, 3, 1])


def test_pack_gradients():
    x = randn(5, 3, 2).requires_grad_()
    xe = e(x).requires_grad_()
    tp = trnn.pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False)
    ep = ernn.pack_padded_sequence(xe, [2, 5, 3], enforce_sorted=False)
    w = randn(tp.data.shape, seed=4)
    tout, _ = trnn.pad_packed_sequence(
        trnn.PackedSequence(tp.data * w, tp.batch_sizes, tp.sorted_indices,
                            tp.unsorted_indices), batch_first=True, total_length=6)
    eout, _ = ernn.pad_packed_sequence(
        ernn.PackedSequence(ep.data * e(w), ep.batch_sizes, ep.sorted_indices,
                            ep.unsorted_indices), batch_first=True, total_length=6)
    g = randn(tout.shape, seed=5)
    (tout * g).sum().backward()
    (eout * e(g)).sum().backward()
    close(xe.grad, x.grad)


# ---- recurrent layers on packed input -------------------------------------------------
LAYERS = [
    ("RNN", dict(num_layers=2)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)),
    ("GRU", dict(bidirectional=True)),
    ("GRU", dict(num_layers=2, batch_first=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=3, bidirectional=True, batch_first=True)),
]


@pytest.mark.parametrize("cls,kw", LAYERS)
@pytest.mark.parametrize("with_hx", [False, True])
def test_packed_recurrent_matches_torch(cls, kw, with_hx):
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 5, **kw)
    em = load_from_torch(getattr(enn, cls)(4, 5, **kw), tm)
    batch_first = kw.get("batch_first", False)
    lengths = [2, 6, 4]
    x = (randn(3, 6, 4) if batch_first else randn(6, 3, 4)).requires_grad_()
    xe = e(x).requires_grad_()
    tp = trnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=False)
    ep = ernn.pack_padded_sequence(xe, lengths, batch_first=batch_first, enforce_sorted=False)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    hx_t = hx_e = None
    if with_hx:
        hsize = kw.get("proj_size", 0) or 5
        h0 = randn(layers * dirs, 3, hsize, seed=7).requires_grad_()
        if cls == "LSTM":
            c0 = randn(layers * dirs, 3, 5, seed=8).requires_grad_()
            hx_t = (h0, c0)
            hx_e = (e(h0).requires_grad_(), e(c0).requires_grad_())
        else:
            hx_t, hx_e = h0, e(h0).requires_grad_()
    tout, th = tm(tp, hx_t)
    eout, eh = em(ep, hx_e)
    assert type(eout) is ernn.PackedSequence
    close(eout.data, tout.data)
    close(eout.batch_sizes, tout.batch_sizes)
    close(eout.unsorted_indices, tout.unsorted_indices)
    close(eh, th)
    tpad, _ = trnn.pad_packed_sequence(tout, batch_first=batch_first)
    epad, _ = ernn.pad_packed_sequence(eout, batch_first=batch_first)
    close(epad, tpad)
    # a loss over the outputs and every final state
    gout = randn(tpad.shape, seed=9)
    ths = th if isinstance(th, tuple) else (th,)
    ehs = eh if isinstance(eh, tuple) else (eh,)
    loss_t = (tpad * gout).sum() + sum((h * h).sum() for h in ths)
    loss_e = (epad * e(gout)).sum() + sum((h * h).sum() for h in ehs)
    loss_t.backward()
    loss_e.backward()
    close(xe.grad, x.grad, rtol=1e-4, atol=1e-5)
    for name, p in tm.named_parameters():
        close(getattr(em, name).grad, p.grad, rtol=1e-4, atol=1e-5)
    if with_hx:
        tin = hx_t if isinstance(hx_t, tuple) else (hx_t,)
        ein = hx_e if isinstance(hx_e, tuple) else (hx_e,)
        for a, b in zip(ein, tin):
            close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_packed_sorted_input_and_equal_lengths():
    """Sorted packing (no permutation) and all-equal lengths agree with the padded call."""
    torch.manual_seed(1)
    tm = torch.nn.GRU(3, 4)
    em = load_from_torch(enn.GRU(3, 4), tm)
    x = randn(5, 2, 3)
    out, h = em(ernn.pack_padded_sequence(e(x), [5, 5]))
    full, hfull = em(e(x))
    assert out.sorted_indices is None
    np.testing.assert_allclose(out.data.detach().numpy(),
                               full.detach().numpy().reshape(10, 4), rtol=1e-5, atol=1e-6)
    close(h, hfull.detach())
    tout, th = tm(trnn.pack_padded_sequence(x, [5, 3]))
    eout, eh = em(ernn.pack_padded_sequence(e(x), [5, 3]))
    close(eout.data, tout.data)
    close(eh, th)


def test_packed_input_errors():
    torch.manual_seed(2)
    tm = torch.nn.LSTM(4, 5)
    em = load_from_torch(enn.LSTM(4, 5), tm)
    x = randn(3, 2, 4)
    tp = trnn.pack_padded_sequence(x, [3, 2])
    ep = ernn.pack_padded_sequence(e(x), [3, 2])
    # a hidden state of the wrong batch size (PyTorch's message comes from inside its
    # kernel; the type is what matters)
    with pytest.raises(RuntimeError):
        tm(tp, (torch.zeros(1, 3, 5), torch.zeros(1, 2, 5)))
    with pytest.raises(RuntimeError, match="Expected hidden"):
        em(ep, (ember.zeros(1, 3, 5), ember.zeros(1, 2, 5)))
    # a packed LSTM never checks its input in PyTorch (its kernel fails on the matmul);
    # ember checks as the packed GRU/RNN do: same type, a message naming input_size
    tbad = trnn.PackedSequence(torch.randn(5, 3), tp.batch_sizes)
    ebad = ernn.PackedSequence(ember.randn(5, 3), ep.batch_sizes)
    with pytest.raises(RuntimeError):
        tm(tbad)
    with pytest.raises(RuntimeError, match="input_size"):
        em(ebad)
    tg = torch.nn.GRU(4, 5)
    eg = load_from_torch(enn.GRU(4, 5), tg)
    _raises_like(lambda: tg(tbad), lambda: eg(ebad))
    t3 = trnn.PackedSequence(torch.randn(5, 1, 4), tp.batch_sizes)
    e3 = ernn.PackedSequence(ember.randn(5, 1, 4), ep.batch_sizes)
    _raises_like(lambda: tg(t3), lambda: eg(e3))
    _raises_like(lambda: tg(tp, torch.zeros(1, 3, 5)), lambda: eg(ep, ember.zeros(1, 3, 5)))
