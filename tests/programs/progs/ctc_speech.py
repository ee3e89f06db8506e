"""Speech-style recognition with CTC, in the shape of the torchaudio / DeepSpeech2 examples:
synthetic "spectrogram" frames for label sequences of varying length, a Conv1d front end
(stride 2, so input lengths shrink by the conv formula), a two-layer bidirectional GRU over a
pack_padded_sequence(enforce_sorted=False), a Linear classifier, log_softmax(dim=2) in
(T, N, C) layout into nn.CTCLoss(blank=0, zero_infinity=True) with per-utterance input and
target lengths (concatenated 1-D targets and padded 2-D targets alternately), the mean and
sum and none reductions (int32 targets, lengths as tuples), a float64 CTC gradient with the
blank as the last class, clip_grad_norm_, AdamW, and greedy CTC decoding (argmax, collapse repeats,
drop blanks) with an edit distance for evaluation."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from _common import parse, share_init, write_log

N_FEATS, N_CLASSES = 12, 6   # class 0 is the CTC blank


class SpeechModel(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.conv = nn.Conv1d(N_FEATS, hidden, kernel_size=5, stride=2, padding=2,
                              bias=False)  # (BatchNorm follows: a bias would be redundant)
        self.bn = nn.BatchNorm1d(hidden)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True,
                          dropout=0.0)
        self.fc = nn.Linear(2 * hidden, N_CLASSES)

    def output_lengths(self, lengths):
        conv = self.conv
        return (lengths + 2 * conv.padding[0] - conv.dilation[0] * (conv.kernel_size[0] - 1)
                - 1) // conv.stride[0] + 1

    def forward(self, x, lengths):
        # x: (N, T, F) -> conv over time -> (N, T', H)
        h = F.gelu(self.bn(self.conv(x.transpose(1, 2)))).transpose(1, 2)
        out_lengths = self.output_lengths(lengths)
        packed = pack_padded_sequence(h, out_lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=h.size(1))
        return self.fc(out).log_softmax(dim=2).transpose(0, 1), out_lengths  # (T, N, C)


def synth_batch(rng, protos, n):
    """Each label lasts 3-5 frames of its prototype plus noise; silence between words."""
    labels, frames = [], []
    for _ in range(n):
        seq = rng.integers(1, N_CLASSES, int(rng.integers(2, 6)))
        chunks = [np.zeros((int(rng.integers(1, 3)), N_FEATS), np.float32)]
        for c in seq:
            chunks.append(np.repeat(protos[c][None], int(rng.integers(3, 6)), axis=0))
            chunks.append(np.zeros((int(rng.integers(0, 2)), N_FEATS), np.float32))
        f = np.concatenate(chunks)
        frames.append(f + 0.3 * rng.standard_normal(f.shape).astype(np.float32))
        labels.append(seq)
    lengths = np.array([len(f) for f in frames])
    x = np.zeros((n, lengths.max(), N_FEATS), np.float32)
    for i, f in enumerate(frames):
        x[i, :len(f)] = f
    return torch.from_numpy(x), torch.from_numpy(lengths), labels


def greedy_decode(log_probs, lengths):
    best = log_probs.argmax(2).transpose(0, 1)  # (N, T)
    out = []
    for row, n in zip(best.tolist(), lengths.tolist()):
        seq, prev = [], 0
        for c in row[:n]:
            if c != prev and c != 0:
                seq.append(c)
            prev = c
        out.append(seq)
    return out


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]


def main():
    args = parse(steps=20, batch_size=8, lr=1e-2)
    rng = np.random.default_rng(11)
    protos = rng.standard_normal((N_CLASSES, N_FEATS)).astype(np.float32)
    model = SpeechModel()
    share_init(torch, [model], args.init)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    ctc_sum = nn.CTCLoss(blank=0, reduction="sum")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    losses, sums, grad_norms = [], [], []
    for step in range(args.steps):
        model.train()
        x, lengths, labels = synth_batch(rng, protos, args.batch_size)
        target_lengths = torch.tensor([len(s) for s in labels], dtype=torch.long)
        if step % 2 == 0:
            targets = torch.from_numpy(np.concatenate(labels)).long()
        else:
            targets = torch.zeros(len(labels), int(target_lengths.max()), dtype=torch.long)
            for i, s in enumerate(labels):
                targets[i, :len(s)] = torch.from_numpy(s)
        log_probs, out_lengths = model(x, lengths)
        loss = ctc(log_probs, targets, out_lengths, target_lengths)
        optimizer.zero_grad()
        loss.backward()
        grad_norms.append(nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0).item())
        optimizer.step()
        losses.append(loss.item())
        sums.append(ctc_sum(log_probs.detach(), targets, out_lengths, target_lengths).item())

    model.eval()
    with torch.no_grad():
        x, lengths, labels = synth_batch(rng, protos, 16)
        log_probs, out_lengths = model(x, lengths)
        decoded = greedy_decode(log_probs, out_lengths)
        errors = sum(edit_distance(d, s.tolist()) for d, s in zip(decoded, labels))
        total = sum(len(s) for s in labels)
        # an impossible alignment (target longer than the input) is inf, zeroed on request
        short = log_probs[:3, :1]
        target = torch.tensor([[1, 2, 1, 2, 3]])
        inf_loss = F.ctc_loss(short, target, torch.tensor([3]), torch.tensor([5]),
                              reduction="sum")
        zeroed = F.ctc_loss(short, target, torch.tensor([3]), torch.tensor([5]),
                            reduction="sum", zero_infinity=True)
        # per-utterance losses: int32 targets, lengths as Python tuples
        flat = torch.from_numpy(np.concatenate(labels)).int()
        per_utt = F.ctc_loss(log_probs, flat, tuple(out_lengths.tolist()),
                             tuple(len(s) for s in labels), reduction="none")
        summed = F.ctc_loss(log_probs, flat, out_lengths, torch.tensor([len(s) for s in labels]),
                            reduction="sum")
        assert per_utt.shape == (16,) and torch.allclose(per_utt.sum(), summed, rtol=1e-5)
    assert torch.isinf(inf_loss) and zeroed.item() == 0.0
    # float64 log-probabilities: the CTC gradient, blank at the last class
    logits64 = log_probs[:, :4].detach().double().requires_grad_(True)
    lp64 = logits64.log_softmax(2)
    relabel = [torch.from_numpy(s).long() - 1 for s in labels[:4]]   # blank = N_CLASSES - 1
    loss64 = F.ctc_loss(lp64, torch.cat(relabel), out_lengths[:4],
                        torch.tensor([len(s) for s in relabel]), blank=N_CLASSES - 1)
    loss64.backward()
    write_log(args.log, losses, sums=sums, grad_norms=grad_norms, cer=errors / total,
              eval_logp=log_probs.sum().item(), per_utt=per_utt.tolist(),
              loss64=loss64.item(), grad64=logits64.grad.norm().item())


if __name__ == "__main__":
    main()
