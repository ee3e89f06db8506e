"""A sequence-to-sequence transformer in the shape of the translation tutorial: token
embeddings scaled by sqrt(d_model), a sinusoidal PositionalEncoding buffer, nn.Transformer
(batch_first) with generate_square_subsequent_mask for the target and key-padding masks
for padded source/target positions, CrossEntropyLoss(ignore_index=PAD), Adam with
betas=(0.9, 0.98), eps=1e-9, and greedy decoding at the end. The task copies a sequence
and appends its sum digit."""
import math

import numpy as np
import torch
import torch.nn as nn

from _common import parse, share_init, write_log

PAD, BOS, EOS = 0, 1, 2


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=64):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pe = torch.zeros((maxlen, emb_size))
        pe[:, 0::2] = torch.sin(pos * den)
        pe[:, 1::2] = torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pe.unsqueeze(0))

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[:, :token_embedding.size(1)])


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab, d_model=32, nhead=4, layers=2):
        super().__init__()
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead,
                                          num_encoder_layers=layers,
                                          num_decoder_layers=layers,
                                          dim_feedforward=64, dropout=0.0, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        self.src_tok_emb = nn.Embedding(vocab, d_model)
        self.tgt_tok_emb = nn.Embedding(vocab, d_model)
        self.positional_encoding = PositionalEncoding(d_model, dropout=0.0)
        self.d_model = d_model

    def embed(self, emb, tokens):
        return self.positional_encoding(emb(tokens.long()) * math.sqrt(self.d_model))

    def forward(self, src, tgt, tgt_mask, src_padding_mask, tgt_padding_mask):
        out = self.transformer(self.embed(self.src_tok_emb, src),
                               self.embed(self.tgt_tok_emb, tgt), tgt_mask=tgt_mask,
                               src_key_padding_mask=src_padding_mask,
                               tgt_key_padding_mask=tgt_padding_mask,
                               memory_key_padding_mask=src_padding_mask)
        return self.generator(out)


def make_batch(rng, n, vocab):
    srcs, tgts = [], []
    for _ in range(n):
        length = int(rng.integers(3, 7))
        s = rng.integers(3, vocab, length)
        srcs.append(list(s) + [EOS])
        tgts.append([BOS] + list(s) + [3 + int(s.sum()) % (vocab - 3), EOS])

    def pad(seqs):
        return torch.tensor([q + [PAD] * (max(map(len, seqs)) - len(q)) for q in seqs])
    return pad(srcs), pad(tgts)


def main():
    args = parse(steps=25, batch_size=16, lr=1e-3)
    rng = np.random.default_rng(13)
    vocab = 12
    model = Seq2SeqTransformer(vocab)
    share_init(torch, [model], args.init)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    for _ in range(args.steps):
        src, tgt = make_batch(rng, args.batch_size, vocab)
        tgt_input, tgt_out = tgt[:, :-1], tgt[:, 1:]
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_input.size(1))
        logits = model(src, tgt_input, tgt_mask, src == PAD, tgt_input == PAD)
        optimizer.zero_grad()
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    src, _ = make_batch(rng, 2, vocab)
    ys = torch.full((2, 1), BOS, dtype=torch.long)
    with torch.no_grad():
        for _ in range(6):
            mask = nn.Transformer.generate_square_subsequent_mask(ys.size(1))
            out = model(src, ys, mask, src == PAD, ys == PAD)
            ys = torch.cat([ys, out[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert ys.shape == (2, 7)
    write_log(args.log, losses)


if __name__ == "__main__":
    main()
