"""A word-level language model in the shape of the classic word_language_model example:
Embedding -> multi-layer LSTM -> Linear decoder with tied weights, truncated BPTT with
hidden-state detaching, gradient clipping, plain SGD with a learning-rate anneal on
plateau, and perplexity evaluation."""
import math

import numpy as np
import torch
import torch.nn as nn

from _common import parse, share_init, write_log


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def main():
    args = parse(epochs=2, bptt=12, lr=5.0, clip=0.25)
    rng = np.random.default_rng(1)
    ntokens = 50
    # a corpus with structure: a Markov chain over the vocabulary
    trans = rng.dirichlet(np.full(ntokens, 0.2), size=ntokens)
    words = [0]
    for _ in range(3000):
        words.append(int(rng.choice(ntokens, p=trans[words[-1]])))
    corpus = torch.tensor(words, dtype=torch.long)
    train_data = batchify(corpus[:2400], 8)
    val_data = batchify(corpus[2400:], 4)
    model = RNNModel(ntokens, 32, 32, 2)
    share_init(torch, [model], args.init)
    criterion = nn.NLLLoss()
    lr = args.lr
    losses, best_val = [], None

    def evaluate(data_source):
        model.eval()
        total_loss = 0.0
        hidden = model.init_hidden(4)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i, args.bptt)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    for _ in range(args.epochs):
        model.train()
        hidden = model.init_hidden(8)
        for i in range(0, train_data.size(0) - 1, args.bptt):
            data, targets = get_batch(train_data, i, args.bptt)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(val_data)
        if best_val is None or val_loss < best_val:
            best_val = val_loss
        else:
            lr /= 4.0
    write_log(args.log, losses, val_ppl=math.exp(best_val))


if __name__ == "__main__":
    main()
