"""RNN / LSTM / GRU, MultiheadAttention and the Transformer layers match PyTorch: names,
shapes, outputs (and, in eval mode or with dropout 0, exactly the same computation)."""
import pytest
import torch
import torch.nn as tnn

import ember
import ember.nn as nn
from nn_helpers import close, e, load_from_torch, randn

pytestmark = [pytest.mark.filterwarnings("ignore:LSTM with projections is not supported"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")]


def pair(make, seed=0):
    torch.manual_seed(seed)
    theirs = make(tnn)
    ours = load_from_torch(make(nn), theirs)
    return ours, theirs


RNN_CASES = [
    ("RNN", dict()), ("RNN", dict(nonlinearity="relu", bias=False)),
    ("RNN", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict()), ("LSTM", dict(num_layers=2, batch_first=True)),
    ("LSTM", dict(bidirectional=True, proj_size=2)),
    ("LSTM", dict(num_layers=3, bidirectional=True, bias=False)),
    ("GRU", dict()), ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(bias=False, bidirectional=True)),
]


@pytest.mark.parametrize("cls,kw", RNN_CASES)
def test_rnn_parameter_names_and_repr(cls, kw):
    ours, theirs = pair(lambda L: getattr(L, cls)(3, 4, **kw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("cls,kw", RNN_CASES)
def test_rnn_forward(cls, kw):
    ours, theirs = pair(lambda L: getattr(L, cls)(3, 4, **kw))
    x = randn(2, 5, 3) if kw.get("batch_first") else randn(5, 2, 3)
    out_t, h_t = theirs(x)
    out_e, h_e = ours(e(x))
    close(out_e, out_t)
    close(h_e, h_t)
    # with an initial state, and unbatched
    if cls == "LSTM":
        dirs = 2 if kw.get("bidirectional") else 1
        layers = kw.get("num_layers", 1)
        hsz = kw.get("proj_size", 0) or 4
        h0, c0 = randn(layers * dirs, 2, hsz, seed=3), randn(layers * dirs, 2, 4, seed=4)
        close(ours(e(x), (e(h0), e(c0))), theirs(x, (h0, c0)))
        close(ours(e(x[0] if kw.get("batch_first") else x[:, 0])),
              theirs(x[0] if kw.get("batch_first") else x[:, 0]))
    else:
        h0 = randn(*h_t.shape, seed=3)
        close(ours(e(x), e(h0)), theirs(x, h0))
        xu = x[0] if kw.get("batch_first") else x[:, 0]
        close(ours(e(xu), e(h0[:, 0])), theirs(xu, h0[:, 0]))


@pytest.mark.parametrize("kw", [dict(), dict(bias=False, bidirectional=True),
                                dict(num_layers=2, batch_first=True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gru_gradients(kw, dtype):
    # the GRU's time loop is one op (gru_layer): its backward against PyTorch's autograd
    ours, theirs = pair(lambda L: L.GRU(3, 4, **kw))
    tdt = getattr(torch, dtype)
    theirs.to(tdt)
    ours.to(getattr(ember, dtype))
    x = randn(2, 6, 3) if kw.get("batch_first") else randn(6, 2, 3)
    h0 = randn(2 * (kw.get("num_layers", 1)) if kw.get("bidirectional") else
               kw.get("num_layers", 1), 2, 4, seed=5)
    xt, ht = x.to(tdt).requires_grad_(), h0.to(tdt).requires_grad_()
    xe, he = e(xt.detach()).requires_grad_(), e(ht.detach()).requires_grad_()
    out_t, hn_t = theirs(xt, ht)
    out_e, hn_e = ours(xe, he)
    g = randn(*out_t.shape, seed=6).to(tdt)
    (out_t * g).sum().add((hn_t * 2).sum()).backward()
    (out_e * e(g)).sum().add((hn_e * 2).sum()).backward()
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    close(out_e, out_t, **tol)
    close(xe.grad, xt.grad, **tol)
    close(he.grad, ht.grad, **tol)
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        close(p.grad, q.grad, **tol)


def test_rnn_dropout_between_layers_only_in_training():
    ours, theirs = pair(lambda L: L.GRU(3, 4, num_layers=2, dropout=0.5))
    x = randn(6, 2, 3)
    ours.eval(), theirs.eval()
    close(ours(e(x)), theirs(x))
    ours.train()
    a, _ = ours(e(x))
    b, _ = ours(e(x))
    assert not ember.allclose(a, b)


def test_rnn_errors():
    lstm, tlstm = pair(lambda L: L.LSTM(3, 4, num_layers=2))
    for args, exc in [((randn(2, 5, 3, 1),), ValueError), ((randn(5, 2, 6),), RuntimeError),
                      ((randn(5, 2, 3), (randn(1, 2, 4), randn(2, 2, 4))), RuntimeError),
                      ((randn(5, 2, 3), (randn(2, 4), randn(2, 4))), RuntimeError)]:
        with pytest.raises(exc) as te:
            tlstm(*args)
        with pytest.raises(exc) as ee:
            lstm(*[tuple(e(t) for t in a) if isinstance(a, tuple) else e(a) for a in args])
        assert str(ee.value) == str(te.value).replace("torch.", "ember.")
    rnn, trnn = pair(lambda L: L.RNN(3, 4))
    with pytest.raises(RuntimeError) as te:
        trnn(randn(5, 2, 3), randn(2, 2, 4))
    with pytest.raises(RuntimeError) as ee:
        rnn(e(randn(5, 2, 3)), e(randn(2, 2, 4)))
    assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(3, 4, proj_size=4)


@pytest.mark.parametrize("cls,kw", [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu")),
                                    ("LSTMCell", dict()), ("GRUCell", dict(bias=False))])
def test_cells(cls, kw):
    ours, theirs = pair(lambda L: getattr(L, cls)(3, 5, **kw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    x = randn(4, 3)
    close(ours(e(x)), theirs(x))
    close(ours(e(x[0])), theirs(x[0]))
    h = randn(4, 5, seed=1)
    state_t = (h, h * 0.5) if cls == "LSTMCell" else h
    state_e = (e(h), e(h * 0.5)) if cls == "LSTMCell" else e(h)
    close(ours(e(x), state_e), theirs(x, state_t))


def test_rnn_default_init_bounds():
    lstm = nn.LSTM(10, 16, num_layers=2)
    for p in lstm.parameters():
        assert p.abs().max().item() <= 0.25          # 1 / sqrt(16)


# ---- attention ------------------------------------------------------------------------
MHA_CASES = [dict(), dict(batch_first=True), dict(bias=False), dict(add_bias_kv=True),
             dict(add_zero_attn=True), dict(kdim=5, vdim=3), dict(dropout=0.3)]


@pytest.mark.parametrize("kw", MHA_CASES)
def test_mha_names_and_repr(kw):
    ours, theirs = pair(lambda L: L.MultiheadAttention(8, 2, **kw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kw", MHA_CASES)
@pytest.mark.parametrize("call", [dict(), dict(need_weights=False),
                                  dict(average_attn_weights=False), dict(mask="bool"),
                                  dict(mask="float"), dict(kpm=True),
                                  dict(mask="bool", kpm=True, need_weights=False),
                                  dict(mask="causal", is_causal=True, need_weights=False)])
def test_mha_forward(kw, call):
    ours, theirs = pair(lambda L: L.MultiheadAttention(8, 2, **kw))
    ours.eval(), theirs.eval()
    call = dict(call)
    bf = kw.get("batch_first", False)
    L_, S, N = 4, 6, 3
    q = randn(N, L_, 8) if bf else randn(L_, N, 8)
    kd, vd = kw.get("kdim", 8), kw.get("vdim", 8)
    k = randn(N, S, kd, seed=1) if bf else randn(S, N, kd, seed=1)
    v = randn(N, S, vd, seed=2) if bf else randn(S, N, vd, seed=2)
    mask = call.pop("mask", None)
    targs = {}
    if mask == "bool":
        m = torch.rand(L_, S, generator=torch.Generator().manual_seed(0)) > 0.7
        m[:, 0] = False
        targs["attn_mask"] = m
    elif mask == "float":
        targs["attn_mask"] = randn(L_, S, seed=5)
    elif mask == "causal":
        q = randn(N, S, 8) if bf else randn(S, N, 8)
        targs["attn_mask"] = tnn.Transformer.generate_square_subsequent_mask(S)
    if call.pop("kpm", False):
        kpm = torch.zeros(N, S, dtype=torch.bool)
        kpm[0, -2:] = True
        targs["key_padding_mask"] = kpm
    targs.update(call)
    eargs = {a: e(b) if isinstance(b, torch.Tensor) else b for a, b in targs.items()}
    out_t = theirs(q, k, v, **targs)
    out_e = ours(e(q), e(k), e(v), **eargs)
    close(out_e[0], out_t[0])
    if out_t[1] is None:
        assert out_e[1] is None
    else:
        close(out_e[1], out_t[1])


@pytest.mark.parametrize("bf", [False, True])
@pytest.mark.parametrize("mask", [None, "2d", "3d", "kpm", "3d+kpm", "causal"])
def test_mha_self_attention_without_weights_and_grads(bf, mask):
    """Self-attention with need_weights=False (the Transformer layers' call) keeps its heads
    as views of the projections, batch-first or not: outputs and every gradient."""
    ours, theirs = pair(lambda L: L.MultiheadAttention(8, 2, batch_first=bf))
    N, L_ = 3, 5
    x = randn(N, L_, 8) if bf else randn(L_, N, 8)
    targs = {}
    if mask in ("2d", "causal"):
        targs["attn_mask"] = tnn.Transformer.generate_square_subsequent_mask(L_)
        targs["is_causal"] = mask == "causal"
    if mask in ("3d", "3d+kpm"):
        targs["attn_mask"] = randn(N * 2, L_, L_, seed=3)
    if mask in ("kpm", "3d+kpm"):
        kpm = torch.zeros(N, L_, dtype=torch.bool)
        kpm[1, -2:] = True
        targs["key_padding_mask"] = kpm
    eargs = {a: e(b) if isinstance(b, torch.Tensor) else b for a, b in targs.items()}
    xt = x.clone().requires_grad_(True)
    xe = e(x).requires_grad_(True)
    out_t, w_t = theirs(xt, xt, xt, need_weights=False, **targs)
    out_e, w_e = ours(xe, xe, xe, need_weights=False, **eargs)
    assert w_e is None and w_t is None
    close(out_e, out_t)
    g = randn(*out_t.shape, seed=7)
    out_t.backward(g)
    out_e.backward(e(g))
    close(xe.grad, xt.grad)
    for (name, pe), pt in zip(ours.named_parameters(), theirs.parameters()):
        close(pe.grad, pt.grad)


def test_mha_self_attention_unbatched():
    ours, theirs = pair(lambda L: L.MultiheadAttention(8, 4))
    x = randn(5, 8)
    close(ours(e(x), e(x), e(x)), theirs(x, x, x))
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        ours(e(x), e(x), e(x), is_causal=True)


TRANSFORMER_CASES = [dict(), dict(batch_first=True), dict(norm_first=True),
                     dict(activation="gelu"), dict(bias=False, layer_norm_eps=1e-3)]


@pytest.mark.parametrize("kw", TRANSFORMER_CASES)
def test_transformer_encoder_layer(kw):
    make = lambda L: L.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)  # noqa: E731
    ours, theirs = pair(make)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs).replace("torch.", "")
    x = randn(3, 5, 8)
    close(ours(e(x)), theirs(x))
    mask = tnn.Transformer.generate_square_subsequent_mask(5 if kw.get("batch_first") else 3)
    close(ours(e(x), src_mask=e(mask)), theirs(x, src_mask=mask))
    close(ours(e(x), src_mask=e(mask), is_causal=True), theirs(x, src_mask=mask, is_causal=True))


@pytest.mark.parametrize("kw", TRANSFORMER_CASES)
def test_transformer_decoder_layer(kw):
    make = lambda L: L.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw)  # noqa: E731
    ours, theirs = pair(make)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    tgt, mem = randn(4, 2, 8), randn(6, 2, 8, seed=1)
    if kw.get("batch_first"):
        tgt, mem = randn(2, 4, 8), randn(2, 6, 8, seed=1)
    mask = tnn.Transformer.generate_square_subsequent_mask(4)
    close(ours(e(tgt), e(mem), tgt_mask=e(mask)), theirs(tgt, mem, tgt_mask=mask))


def test_transformer_stacks_and_full_model():
    make = lambda L: L.Transformer(d_model=8, nhead=2, num_encoder_layers=2,  # noqa: E731
                                   num_decoder_layers=2, dim_feedforward=16, dropout=0.0)
    ours, theirs = pair(make)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs).replace("torch.", "")
    src, tgt = randn(6, 2, 8), randn(4, 2, 8, seed=1)
    mask = tnn.Transformer.generate_square_subsequent_mask(4)
    close(nn.Transformer.generate_square_subsequent_mask(4), mask)
    close(ours(e(src), e(tgt), tgt_mask=e(mask)), theirs(src, tgt, tgt_mask=mask))
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[1, -1] = True
    theirs.train()       # keep PyTorch off its nested-tensor fast path (zeros padded rows)
    close(ours(e(src), e(tgt), src_key_padding_mask=e(kpm)),
          theirs(src, tgt, src_key_padding_mask=kpm))
    layer_t = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    enc_t = tnn.TransformerEncoder(layer_t, 3, enable_nested_tensor=False)
    enc_e = load_from_torch(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16,
                                                                             dropout=0.0), 3),
                            enc_t)
    close(enc_e(e(src)), enc_t(src))


def test_transformer_gradients():
    make = lambda L: L.TransformerEncoderLayer(8, 2, 16, dropout=0.0,  # noqa: E731
                                               batch_first=True, norm_first=True)
    ours, theirs = pair(make)
    x = randn(2, 5, 8)
    mask = tnn.Transformer.generate_square_subsequent_mask(5)
    (theirs(x, src_mask=mask) ** 2).sum().backward()
    (ours(e(x), src_mask=e(mask)) ** 2).sum().backward()
    for name, p in theirs.named_parameters():
        close(ours.get_parameter(name).grad, p.grad, rtol=1e-4, atol=1e-5)
