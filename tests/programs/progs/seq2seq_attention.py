"""A GRU encoder / attention decoder translator in the shape of the seq2seq tutorial: an
EncoderRNN (Embedding + GRU, batch_first), a Bahdanau-attention decoder (additive scores,
softmax, torch.bmm context), greedy decoding with teacher forcing by target tokens, NLLLoss
over log_softmax outputs, two Adam optimizers; the task reverses digit strings."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

from _common import parse, share_init, write_log

SOS, EOS = 0, 1


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)

    def forward(self, input):
        return self.gru(self.embedding(input))


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS)
        decoder_hidden = encoder_hidden
        outputs, attentions = [], []
        for i in range(target_tensor.size(1)):
            embedded = self.embedding(decoder_input)
            query = decoder_hidden.permute(1, 0, 2)
            context, attn = self.attention(query, encoder_outputs)
            output, decoder_hidden = self.gru(torch.cat((embedded, context), dim=2),
                                              decoder_hidden)
            outputs.append(self.out(output))
            attentions.append(attn)
            decoder_input = target_tensor[:, i].unsqueeze(1)
        outputs = F.log_softmax(torch.cat(outputs, dim=1), dim=-1)
        return outputs, decoder_hidden, torch.cat(attentions, dim=1)


def main():
    args = parse(epochs=6, batch_size=16, hidden=24, lr=0.01)
    rng = np.random.default_rng(7)
    n, length, vocab = 96, 5, 12
    src = rng.integers(2, vocab, (n, length))
    tgt = np.concatenate([src[:, ::-1], np.full((n, 1), EOS)], axis=1)
    src_t, tgt_t = torch.from_numpy(src.copy()), torch.from_numpy(tgt.copy())
    encoder = EncoderRNN(vocab, args.hidden)
    decoder = AttnDecoderRNN(args.hidden, vocab)
    share_init(torch, [encoder, decoder], args.init)
    enc_opt = optim.Adam(encoder.parameters(), lr=args.lr)
    dec_opt = optim.Adam(decoder.parameters(), lr=args.lr)
    criterion = nn.NLLLoss()
    losses = []
    for _ in range(args.epochs):
        for b in range(0, n, args.batch_size):
            x, y = src_t[b:b + args.batch_size], tgt_t[b:b + args.batch_size]
            enc_opt.zero_grad()
            dec_opt.zero_grad()
            enc_out, enc_hidden = encoder(x)
            dec_out, _, _ = decoder(enc_out, enc_hidden, y)
            loss = criterion(dec_out.view(-1, dec_out.size(-1)), y.view(-1))
            loss.backward()
            enc_opt.step()
            dec_opt.step()
            losses.append(loss.item())
    write_log(args.log, losses)


if __name__ == "__main__":
    main()
