"""Knowledge distillation, in the shape of PyTorch's "Knowledge Distillation" tutorial and
the model-compression examples: a wider teacher trained first with label-smoothing
CrossEntropyLoss, then a student trained on a mix of the hard-label loss and
nn.KLDivLoss(reduction="batchmean", log_target=True) between temperature-softened
log_softmax outputs (scaled by T**2), the student's layers wrapped in
nn.utils.parametrizations.weight_norm and spectral_norm (power-iteration buffers _u / _v in
the state_dict, eval mode freezing them) and a custom parametrization (a Symmetric module
with right_inverse, register_parametrization, parametrize.cached, remove_parametrizations
with leave_parametrized=True), a cosine-embedding "hint" loss between hidden features, then
torch.nn.utils.prune: l1_unstructured then ln_structured (a PruningContainer) and identity
on the student's classifier, global_unstructured over the teacher's layers, the
weight_orig / weight_mask reparametrization, a short fine-tune with the masks applied, and
prune.remove to make it permanent."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrizations, parametrize, prune

from _common import parse, share_init, write_log


class Teacher(nn.Module):
    def __init__(self, d_in=16, hidden=64, classes=5):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.ReLU(),
                                      nn.Linear(hidden, 16))
        self.classifier = nn.Linear(16, classes)

    def forward(self, x):
        h = self.features(x)
        return self.classifier(F.relu(h)), h


class Symmetric(nn.Module):
    """A custom parametrization (the "Parametrizations" tutorial's): W = A.triu() + its
    transpose without the diagonal; right_inverse makes assignment store a triangle."""

    def forward(self, a):
        return a.triu() + a.triu(1).transpose(-1, -2)

    def right_inverse(self, w):
        return w.triu()


class Student(nn.Module):
    def __init__(self, d_in=16, hidden=24, classes=5):
        super().__init__()
        self.fc1 = parametrizations.weight_norm(nn.Linear(d_in, hidden))
        self.mix = nn.Linear(hidden, hidden, bias=False)
        parametrize.register_parametrization(self.mix, "weight", Symmetric())
        self.fc2 = parametrizations.spectral_norm(nn.Linear(hidden, 16), n_power_iterations=2)
        self.classifier = nn.Linear(16, classes)

    def forward(self, x):
        h = self.fc2(F.relu(self.mix(F.relu(self.fc1(x)))))
        return self.classifier(F.relu(h)), h


def main():
    args = parse(teacher_steps=15, student_steps=15, finetune_steps=5, batch_size=32, T=3.0,
                 alpha=0.7)
    rng = np.random.default_rng(41)
    w1 = rng.standard_normal((16, 12)).astype(np.float32)
    w2 = rng.standard_normal((12, 5)).astype(np.float32)

    def batch(n):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        y = (np.tanh(x @ w1) @ w2).argmax(1)
        return torch.from_numpy(x), torch.from_numpy(y)

    teacher, student = Teacher(), Student()
    keys = list(student.state_dict())
    assert "fc1.parametrizations.weight.original0" in keys
    assert "fc2.parametrizations.weight.0._u" in keys
    share_init(torch, [teacher, student], args.init)

    ce_smooth = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    opt_t = torch.optim.Adam(teacher.parameters(), lr=1e-2)
    for _ in range(args.teacher_steps):
        x, y = batch(args.batch_size)
        logits, _ = teacher(x)
        loss = ce_smooth(logits, y)
        opt_t.zero_grad()
        loss.backward()
        opt_t.step()
        losses.append(loss.item())

    teacher.eval()
    kl = nn.KLDivLoss(reduction="batchmean", log_target=True)
    kl_prob = nn.KLDivLoss(reduction="batchmean")
    cosine = nn.CosineEmbeddingLoss(margin=0.1)
    opt_s = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
    kd_terms, sigmas = [], []
    for _ in range(args.student_steps):
        student.train()
        x, y = batch(args.batch_size)
        with torch.no_grad():
            t_logits, t_hidden = teacher(x)
        s_logits, s_hidden = student(x)
        soft_t = F.log_softmax(t_logits / args.T, dim=-1)
        soft_s = F.log_softmax(s_logits / args.T, dim=-1)
        kd = kl(soft_s, soft_t) * args.T ** 2
        kd_prob = kl_prob(soft_s, soft_t.exp()) * args.T ** 2
        assert abs(kd.item() - kd_prob.item()) <= 1e-4 * max(1.0, abs(kd.item()))
        hint = cosine(s_hidden, t_hidden, torch.ones(len(x)))
        loss = args.alpha * kd + (1 - args.alpha) * F.cross_entropy(s_logits, y) + 0.1 * hint
        opt_s.zero_grad()
        loss.backward()
        opt_s.step()
        losses.append(loss.item())
        kd_terms.append(kd.item())
        sigmas.append(torch.linalg.matrix_norm(student.fc2.weight, ord=2).item())

    # spectral norm: the weight's largest singular value is ~1; eval freezes u and v
    student.eval()
    u = student.fc2.parametrizations.weight[0]._u.clone()
    with torch.no_grad():
        student(batch(4)[0])
    assert torch.equal(u, student.fc2.parametrizations.weight[0]._u)
    g = student.fc1.parametrizations.weight.original0
    v = student.fc1.parametrizations.weight.original1
    assert torch.allclose(student.fc1.weight, g * v / v.norm(dim=1, keepdim=True), atol=1e-6)

    # the custom parametrization: symmetric, cached within a block, removed keeping its value
    with parametrize.cached():
        w_mix = student.mix.weight
        assert w_mix is student.mix.weight and torch.equal(w_mix, w_mix.T)
    parametrize.remove_parametrizations(student.mix, "weight", leave_parametrized=True)
    assert not parametrize.is_parametrized(student.mix)
    assert torch.equal(student.mix.weight, w_mix)

    # pruning: a structured and an unstructured method on the classifier, a global one
    prune.l1_unstructured(student.classifier, name="weight", amount=0.3)
    prune.ln_structured(student.classifier, name="weight", amount=2, n=2, dim=1)
    prune.identity(student.classifier, name="bias")
    teacher_layers = [(teacher.features[0], "weight"), (teacher.features[2], "weight"),
                      (teacher.features[4], "weight")]
    prune.global_unstructured(teacher_layers, pruning_method=prune.L1Unstructured, amount=0.5)
    names = {n for n, _ in student.classifier.named_buffers()}
    assert names == {"weight_mask", "bias_mask"}
    assert hasattr(student.classifier, "weight_orig")
    assert prune.is_pruned(student.classifier)
    zeros = [float((m.weight == 0).sum()) / m.weight.nelement() for m, _ in teacher_layers]
    assert abs(sum(float((m.weight == 0).sum()) for m, _ in teacher_layers)
               / sum(m.weight.nelement() for m, _ in teacher_layers) - 0.5) < 1e-3
    opt_s = torch.optim.SGD(student.parameters(), lr=0.05)
    student.train()
    for _ in range(args.finetune_steps):
        x, y = batch(args.batch_size)
        loss = F.cross_entropy(student(x)[0], y)
        opt_s.zero_grad()
        loss.backward()
        opt_s.step()
        losses.append(loss.item())
    assert (student.classifier.weight[student.classifier.weight_mask == 0] == 0).all()
    prune.remove(student.classifier, "weight")
    prune.remove(student.classifier, "bias")
    assert not prune.is_pruned(student.classifier)
    assert "weight" in dict(student.classifier.named_parameters())

    student.eval()
    with torch.no_grad():
        x, y = batch(256)
        s_acc = (student(x)[0].argmax(1) == y).float().mean().item()
        t_acc = (teacher(x)[0].argmax(1) == y).float().mean().item()
    write_log(args.log, losses, kd=kd_terms, sigma=sigmas, student_acc=s_acc,
              pruned_teacher_acc=t_acc, layer_sparsity=zeros,
              classifier_zeros=float((student.classifier.weight == 0).sum()))


if __name__ == "__main__":
    main()
