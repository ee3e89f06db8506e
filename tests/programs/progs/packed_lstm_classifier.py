"""A variable-length sequence classifier in the shape of the sentiment / name-classification
tutorials: pad_sequence over a list of token tensors, pack_padded_sequence with unsorted
lengths (enforce_sorted=False) through a bidirectional LSTM, the final hidden states of
both directions concatenated, pad_packed_sequence for a masked mean of the outputs,
CrossEntropyLoss, RMSprop, and a ReduceLROnPlateau scheduler."""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from _common import parse, share_init, write_log


class Classifier(nn.Module):
    def __init__(self, vocab, emb, hidden, classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(4 * hidden, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, (h, _) = self.lstm(packed)
        padded, out_lengths = pad_packed_sequence(out, batch_first=True)
        mask = (torch.arange(padded.size(1))[None, :] < out_lengths[:, None]).unsqueeze(-1)
        mean = (padded * mask).sum(1) / out_lengths.unsqueeze(1).float()
        return self.fc(torch.cat([h[-2], h[-1], mean], dim=1))


def main():
    args = parse(epochs=4, batch_size=16, lr=5e-3)
    rng = np.random.default_rng(10)
    vocab, n = 20, 96
    seqs, labels = [], []
    for _ in range(n):
        length = int(rng.integers(3, 12))
        label = int(rng.integers(0, 3))
        toks = rng.integers(4, vocab, length)
        toks[rng.integers(0, length)] = label + 1  # the class marker appears somewhere
        seqs.append(torch.from_numpy(toks))
        labels.append(label)
    labels = torch.tensor(labels)
    model = Classifier(vocab, 12, 16, 3)
    share_init(torch, [model], args.init)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(args.epochs):
        epoch_loss = 0.0
        for b in range(0, n, args.batch_size):
            batch = seqs[b:b + args.batch_size]
            lengths = torch.tensor([len(s) for s in batch])
            tokens = pad_sequence(batch, batch_first=True, padding_value=0)
            optimizer.zero_grad()
            loss = criterion(model(tokens, lengths), labels[b:b + args.batch_size])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            epoch_loss += loss.item()
        scheduler.step(epoch_loss)
    write_log(args.log, losses, lr=optimizer.param_groups[0]["lr"])


if __name__ == "__main__":
    main()
