"""A bag-of-embeddings text classifier in the shape of the text-classification tutorial:
nn.EmbeddingBag(mode='mean') over a flat token tensor with per-text offsets built by
cumsum, a uniform_ init of the weights, a collate_batch for the DataLoader, SGD with a
StepLR schedule, clip_grad_norm_, and per-epoch accuracy."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from _common import parse, share_init, write_log


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for label, tokens in batch:
        label_list.append(label)
        processed = torch.tensor(tokens, dtype=torch.int64)
        text_list.append(processed)
        offsets.append(processed.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    return label_list, torch.cat(text_list), offsets


def main():
    args = parse(epochs=4, batch_size=16, lr=4.0)
    rng = np.random.default_rng(15)
    vocab, classes = 40, 4
    data = []
    for _ in range(128):
        label = int(rng.integers(0, classes))
        length = int(rng.integers(4, 12))
        words = rng.integers(classes, vocab, length)
        words[: length // 2] = label  # topic words
        data.append((label, [int(w) for w in rng.permutation(words)]))
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False,
                        collate_fn=collate_batch)
    model = TextClassificationModel(vocab, 16, classes)
    share_init(torch, [model], args.init)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    losses, accs = [], []
    for _ in range(args.epochs):
        model.train()
        correct = total = 0
        for label, text, offsets in loader:
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            losses.append(loss.item())
            correct += (predicted_label.argmax(1) == label).sum().item()
            total += label.size(0)
        accs.append(correct / total)
        scheduler.step()
    write_log(args.log, losses, accuracy=accs[-1])


if __name__ == "__main__":
    main()
