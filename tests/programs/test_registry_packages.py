"""PyTorch-based registry packages run unedited on ember (``python -m ember.as_torch``).

One program exercises every package below. It runs twice, in fresh interpreters and at the
same time: under the alias (``import torch`` gives ember) and under the real PyTorch. Inputs
and model weights come from NumPy, so both runs see the same numbers; each package's
results must match PyTorch's. A package section that raises records its traceback, which
that package's test shows. docs/compat.md ("Running PyTorch packages on ember") lists the
packages that work and the exact blockers of those that do not.
"""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

PROGRAM = r'''
import sys
import traceback

import numpy as np
import torch

RESULTS = {}
rng = np.random.default_rng(0)


def t(a, dtype=torch.float32):
    return torch.tensor(np.asarray(a)).to(dtype)


def det_init(module, seed):
    """Deterministic weights from NumPy, the same under both frameworks."""
    r = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in sorted(module.state_dict().items()):
            if p.dtype.is_floating_point:
                p.copy_(t(r.standard_normal(tuple(p.shape)) * 0.3, p.dtype))


def record(pkg, **values):
    for k, v in values.items():
        if isinstance(v, torch.Tensor):
            v = v.detach().cpu().double().numpy()
        RESULTS[f"{pkg}/{k}"] = np.asarray(v, dtype=np.float64)


def section(fn):
    try:
        fn()
    except Exception:
        RESULTS[f"{fn.__name__}/__error__"] = np.array(traceback.format_exc())
    return fn


@section
def torchmetrics():
    import torchmetrics as tm
    from torchmetrics import functional as TF
    probs = rng.dirichlet(np.ones(4), size=32)
    target = rng.integers(0, 4, 32)
    p, y = t(probs), torch.tensor(target)
    record("torchmetrics",
           acc=TF.accuracy(p, y, task="multiclass", num_classes=4),
           acc_top2=TF.accuracy(p, y, task="multiclass", num_classes=4, top_k=2),
           f1_macro=TF.f1_score(p, y, task="multiclass", num_classes=4, average="macro"),
           precision=TF.precision(p, y, task="multiclass", num_classes=4, average="micro"),
           recall=TF.recall(p, y, task="multiclass", num_classes=4, average="weighted"),
           confmat=TF.confusion_matrix(p, y, task="multiclass", num_classes=4))
    score = rng.random(40)
    label = (rng.random(40) < score).astype(np.int64)
    s, lab = t(score), torch.tensor(label)
    record("torchmetrics",
           auroc=TF.auroc(s, lab, task="binary"),
           bin_acc=TF.accuracy(s, lab, task="binary"),
           avg_precision=TF.average_precision(s, lab, task="binary"))
    a, b = rng.standard_normal(50), rng.standard_normal(50)
    record("torchmetrics",
           mse=TF.mean_squared_error(t(a), t(b)),
           mae=TF.mean_absolute_error(t(a), t(b)),
           r2=TF.r2_score(t(a), t(b)),
           pearson=TF.pearson_corrcoef(t(a), t(b)))
    # the stateful API: update over batches, then compute
    acc, mse, f1 = (tm.Accuracy(task="multiclass", num_classes=4), tm.MeanSquaredError(),
                    tm.F1Score(task="multiclass", num_classes=4, average="macro"))
    for lo in (0, 16):
        acc.update(p[lo:lo + 16], y[lo:lo + 16])
        f1.update(p[lo:lo + 16], y[lo:lo + 16])
        mse.update(t(a[lo:lo + 16]), t(b[lo:lo + 16]))
    record("torchmetrics", acc_stateful=acc.compute(), f1_stateful=f1.compute(),
           mse_stateful=mse.compute())


def train(model, opt, steps, x, y):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@section
def lion_pytorch():
    from lion_pytorch import Lion
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    for i, kw in enumerate([dict(lr=1e-2), dict(lr=3e-3, weight_decay=0.1, betas=(0.8, 0.95))]):
        model = torch.nn.Linear(5, 2)
        det_init(model, 1)
        losses = train(model, Lion(model.parameters(), **kw), 4, x, y)
        record("lion_pytorch", **{f"losses{i}": losses, f"weight{i}": model.weight,
                                  f"bias{i}": model.bias})


def run_optimizer(optim, name, x, y):
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    det_init(model, 2)
    if name == "Lookahead":
        opt = optim.Lookahead(optim.Yogi(model.parameters(), lr=1e-2), k=2, alpha=0.5)
    else:
        opt = getattr(optim, name)(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {f"{name}_losses": losses, f"{name}_w": model[0].weight}


@section
def torch_optimizer():
    import torch_optimizer as optim
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    for name in ("AdaBelief", "AdaBound", "AdaMod", "DiffGrad", "Lamb", "QHAdam", "Yogi",
                 "SWATS", "NovoGrad", "MADGRAD", "AggMo", "PID", "AccSGD", "RAdam", "AdamP",
                 "SGDP", "SGDW", "A2GradExp", "A2GradInc", "A2GradUni", "Apollo", "QHM",
                 "Adafactor", "Shampoo", "Lookahead"):
        record("torch_optimizer", **run_optimizer(optim, name, x, y))


@section
def torch_optimizer_ranger():
    import torch_optimizer as optim
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    for name in ("Ranger", "RangerQH", "RangerVA"):
        record("torch_optimizer_ranger", **run_optimizer(optim, name, x, y))


@section
def torch_optimizer_adahessian():
    import torch_optimizer as optim
    # Hutchinson's estimate z * (H z) draws z from torch's generator; with a Hessian that is
    # diagonal (an elementwise model) it equals diag(H) for every z, so the run is exact
    w = torch.nn.Parameter(t(rng.standard_normal(6)))
    x, y = t(rng.standard_normal((4, 6))), t(rng.standard_normal((4, 6)))
    opt = optim.Adahessian([w], lr=0.1)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((x * w - y) ** 2).sum()
        loss.backward(create_graph=True)
        opt.step()
        losses.append(loss.item())
    record("torch_optimizer_adahessian", losses=losses, w=w)


@section
def ema_pytorch():
    from ema_pytorch import EMA
    model = torch.nn.Linear(3, 2)
    det_init(model, 3)
    ema = EMA(model, beta=0.9, update_after_step=2, update_every=1, power=3 / 4)
    r = np.random.default_rng(4)
    for _ in range(6):
        with torch.no_grad():
            model.weight.add_(t(r.standard_normal((2, 3))))
            model.bias.mul_(0.5)
        ema.update()
    x = t(rng.standard_normal((4, 3)))
    record("ema_pytorch", weight=ema.ema_model.weight, bias=ema.ema_model.bias,
           out=ema(x), step=ema.step.item())


@section
def rotary_embedding_torch():
    from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb
    q = t(rng.standard_normal((2, 3, 7, 16)))
    k = t(rng.standard_normal((2, 3, 7, 16)))
    rot = RotaryEmbedding(dim=8)
    record("rotary_embedding_torch", q=rot.rotate_queries_or_keys(q),
           k=rot.rotate_queries_or_keys(k, offset=2))
    xpos = RotaryEmbedding(dim=16, use_xpos=True)
    qx, kx = xpos.rotate_queries_and_keys(q, k)
    freqs = RotaryEmbedding(dim=8, freqs_for="pixel", max_freq=10)
    grid = freqs.get_axial_freqs(4, 4)
    img = t(rng.standard_normal((1, 4, 4, 32)))
    record("rotary_embedding_torch", qx=qx, kx=kx, axial=apply_rotary_emb(grid, img))


@section
def pytorch_metric_learning():
    from pytorch_metric_learning import distances, losses, miners
    emb0 = rng.standard_normal((12, 6))
    labels = torch.tensor(np.repeat(np.arange(4), 3))
    for name, loss_fn in [("triplet", losses.TripletMarginLoss(margin=0.2)),
                          ("contrastive", losses.ContrastiveLoss()),
                          ("ntxent", losses.NTXentLoss(temperature=0.1)),
                          ("multisim", losses.MultiSimilarityLoss()),
                          ("circle", losses.CircleLoss()),
                          ("lifted", losses.GeneralizedLiftedStructureLoss()),
                          ("margin", losses.MarginLoss()),
                          ("supcon", losses.SupConLoss())]:
        emb = t(emb0).requires_grad_()
        loss = loss_fn(emb, labels)
        loss.backward()
        record("pytorch_metric_learning", **{name: loss, f"{name}_grad": emb.grad})
    miner = miners.MultiSimilarityMiner(epsilon=0.1)
    a1, p, a2, n = miner(t(emb0), labels)
    record("pytorch_metric_learning", mined_pos=len(a1), mined_neg=len(a2))
    d = distances.LpDistance()(t(emb0))
    record("pytorch_metric_learning", lp=d, cos=distances.CosineSimilarity()(t(emb0)))


@section
def einx():
    import einx as ex
    a, b = t(rng.standard_normal((2, 3, 4))), t(rng.standard_normal((4, 5)))
    record("einx", dot=ex.dot("b s [c], [c] d -> b s d", a, b),
           sum=ex.sum("b [s] c", a), max=ex.max("b s [c]", a),
           rearrange=ex.id("b s c -> c (b s)", a),
           add=ex.add("b s c, c", a, b[:, 0]),
           softmax=ex.softmax("b s [c]", a))


@section
def x_transformers():
    from x_transformers import Decoder, Encoder, TransformerWrapper
    tokens = torch.tensor(rng.integers(0, 20, (2, 8)))
    for i, layers in enumerate([Decoder(dim=16, depth=2, heads=2, rotary_pos_emb=True),
                                Encoder(dim=16, depth=1, heads=2, ff_glu=True)]):
        model = TransformerWrapper(num_tokens=20, max_seq_len=16, attn_layers=layers).eval()
        det_init(model, 5 + i)
        logits = model(tokens)
        logits.square().mean().backward()
        record("x_transformers", **{f"logits{i}": logits,
                                    f"emb_grad{i}": model.token_emb.emb.weight.grad})


@section
def vector_quantize_pytorch():
    from vector_quantize_pytorch import FSQ, LFQ, VectorQuantize
    z = t(rng.standard_normal((2, 5, 8)))
    vq = VectorQuantize(dim=8, codebook_size=16).eval()
    det_init(vq, 7)
    q, idx, loss = vq(z)
    fsq = FSQ(levels=[3, 5, 4])
    fq, fidx = fsq(t(rng.standard_normal((2, 4, 3))))
    lfq = LFQ(dim=8, codebook_size=256).eval()
    lq, lidx, _ = lfq(z)
    record("vector_quantize_pytorch", q=q, idx=idx, fq=fq, fidx=fidx, lq=lq, lidx=lidx)


@section
def kornia():
    import kornia as K
    img = t(rng.random((1, 3, 12, 10)))
    record("kornia", blur=K.filters.gaussian_blur2d(img, (5, 5), (1.5, 1.5)),
           sobel=K.filters.sobel(img), gray=K.color.rgb_to_grayscale(img),
           hsv=K.color.rgb_to_hsv(img),
           rot=K.geometry.transform.rotate(img, t([30.0])))



def fit(model, make_opt, steps, x, y, schedule_free=False):
    """Train with the optimizer ``make_opt(params)`` makes; a schedule-free one is put in
    train mode before each step and in eval mode (the averaged weights) at the end."""
    opt = make_opt(model.parameters())
    losses = []
    for _ in range(steps):
        if schedule_free:
            opt.train()
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    if schedule_free:
        opt.eval()
    return losses


def mlp(seed):
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    det_init(model, seed)
    return model


@section
def schedulefree():
    rng = np.random.default_rng(101)  # own stream: a failing section shifts no other
    import schedulefree as sf
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    for name, make in [
            ("adamw", lambda p: sf.AdamWScheduleFree(p, lr=1e-2, warmup_steps=2)),
            ("adamw_wd", lambda p: sf.AdamWScheduleFree(p, lr=1e-2, weight_decay=0.1)),
            ("sgd", lambda p: sf.SGDScheduleFree(p, lr=1e-2, warmup_steps=1)),
            ("radam", lambda p: sf.RAdamScheduleFree(p, lr=1e-2)),
            ("adamw_ref", lambda p: sf.AdamWScheduleFreeReference(p, lr=1e-2)),
            ("adamw_paper", lambda p: sf.AdamWScheduleFreePaper(p, lr=1e-2)),
            ("sgd_ref", lambda p: sf.SGDScheduleFreeReference(p, lr=1e-2)),
            ("wrap", lambda p: sf.ScheduleFreeWrapper(torch.optim.SGD(p, lr=1e-2),
                                                      momentum=0.9))]:
        model = mlp(2)
        losses = fit(model, make, 5, x, y, schedule_free=True)
        record("schedulefree", **{f"{name}_losses": losses, f"{name}_w": model[0].weight,
                                  f"{name}_out": model(x)})
    model = mlp(2)
    opt = sf.AdamWScheduleFreeClosure(model.parameters(), lr=1e-2)
    closure_losses = []
    for _ in range(4):
        def closure():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss
        closure_losses.append(opt.step(closure).item())
    record("schedulefree", closure_losses=closure_losses, closure_w=model[0].weight)


@section
def prodigyopt():
    rng = np.random.default_rng(102)  # own stream: a failing section shifts no other
    from prodigyopt import Prodigy
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    for i, kw in enumerate([dict(lr=1.0), dict(lr=1.0, weight_decay=0.01, use_bias_correction=True,
                                               safeguard_warmup=True),
                            dict(lr=1.0, d_coef=0.5, decouple=False, weight_decay=0.01)]):
        model = mlp(3)
        losses = fit(model, lambda p: Prodigy(p, **kw), 5, x, y)
        record("prodigyopt", **{f"losses{i}": losses, f"w{i}": model[0].weight})


@section
def dadaptation():
    rng = np.random.default_rng(103)  # own stream: a failing section shifts no other
    import dadaptation as da
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    for name in ("DAdaptAdam", "DAdaptSGD", "DAdaptAdaGrad", "DAdaptAdan", "DAdaptLion"):
        model = mlp(4)
        lr = 1e-2 if name == "DAdaptLion" else 1.0
        losses = fit(model, lambda p: getattr(da, name)(p, lr=lr), 5, x, y)
        record("dadaptation", **{f"{name}_losses": losses, f"{name}_w": model[0].weight})


@section
def torch_ema():
    rng = np.random.default_rng(104)  # own stream: a failing section shifts no other
    from torch_ema import ExponentialMovingAverage
    x, y = t(rng.standard_normal((16, 5))), t(rng.standard_normal((16, 2)))
    model = mlp(5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ema = ExponentialMovingAverage(model.parameters(), decay=0.9)
    for _ in range(5):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        ema.update()
    live = model(x)
    state = ema.state_dict()
    with ema.average_parameters():
        averaged = model(x)
    ema.store()
    ema.copy_to()
    copied = model[0].weight.clone()
    ema.restore()
    ema2 = ExponentialMovingAverage(model.parameters(), decay=0.5)
    ema2.load_state_dict(state)
    record("torch_ema", live=live, averaged=averaged, copied=copied,
           restored=model[0].weight, num_updates=state["num_updates"],
           shadow=ema2.shadow_params[0], decay=ema2.decay)


@section
def entmax():
    rng = np.random.default_rng(105)  # own stream: a failing section shifts no other
    import entmax as em
    x = t(rng.standard_normal((4, 7)) * 2).requires_grad_()
    outs = {"sparsemax": em.sparsemax(x, dim=-1), "entmax15": em.entmax15(x, dim=-1),
            "bisect": em.entmax_bisect(x, alpha=1.3, dim=-1),
            "sparsemax_k": em.sparsemax(x, dim=-1, k=3),
            "entmax15_k": em.entmax15(x, dim=0, k=2),
            "sparsemax_bisect": em.sparsemax_bisect(x)}
    for name, out in outs.items():
        (grad,) = torch.autograd.grad((out * t(np.arange(7.0))).sum(), x)
        record("entmax", **{name: out, f"{name}_grad": grad})
    alpha = t([1.2, 1.5, 1.8, 2.0]).unsqueeze(1).requires_grad_()
    out = em.entmax_bisect(x, alpha=alpha)
    out[:, 0].sum().backward()
    target = torch.tensor(rng.integers(0, 7, 4))
    record("entmax", bisect_alpha=out, alpha_grad=alpha.grad,
           sparsemax_loss=em.SparsemaxLoss()(x, target),
           entmax15_loss=em.Entmax15Loss(k=3)(x, target),
           bisect_loss=em.EntmaxBisectLoss(alpha=1.5)(x, target),
           modules=em.Entmax15(dim=1)(x) + em.Sparsemax(dim=1)(x) +
           em.EntmaxBisect(alpha=1.7, dim=1)(x))


@section
def torchdiffeq():
    rng = np.random.default_rng(106)  # own stream: a failing section shifts no other
    from torchdiffeq import odeint, odeint_adjoint

    class Func(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(),
                                           torch.nn.Linear(8, 3))
            det_init(self, 9)

        def forward(self, t, y):
            return self.net(y) - 0.1 * y

    func = Func()
    y0 = t(rng.standard_normal((2, 3)))
    ts = t(np.linspace(0.0, 1.0, 5))
    for method, opts in [("dopri5", {}), ("rk4", dict(step_size=0.1)),
                         ("euler", dict(step_size=0.05)), ("midpoint", dict(step_size=0.1)),
                         ("bosh3", {}), ("adaptive_heun", {}), ("dopri8", {}),
                         ("explicit_adams", dict(step_size=0.1)),
                         ("implicit_adams", dict(step_size=0.1)), ("fehlberg2", {})]:
        ys = odeint(func, y0, ts, method=method, options=opts, rtol=1e-6, atol=1e-7)
        record("torchdiffeq", **{method: ys})
    y0g = y0.clone().requires_grad_()
    ys = odeint(func, y0g, ts, rtol=1e-6, atol=1e-7)
    ys.square().sum().backward()
    direct = [p.grad.clone() for p in func.parameters()] + [y0g.grad.clone()]
    func.zero_grad()
    y0a = y0.clone().requires_grad_()
    ys = odeint_adjoint(func, y0a, ts, rtol=1e-6, atol=1e-7)
    ys.square().sum().backward()
    record("torchdiffeq", adjoint=ys, adj_y0_grad=y0a.grad, direct_y0_grad=direct[-1],
           adj_w_grad=func.net[0].weight.grad, direct_w_grad=direct[0])
    # event handling: stop when the first coordinate crosses zero
    ev_t, ev_y = odeint(lambda s, y: torch.stack([y[1], -y[0]]), t([1.0, 0.0]), t([0.0, 10.0]),
                        event_fn=lambda s, y: y[0], rtol=1e-7, atol=1e-8)
    record("torchdiffeq", event_t=ev_t, event_y=ev_y)


def param_init(module, seed):
    """Deterministic parameters (not buffers: a flow's base distribution lives in them)."""
    r = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in sorted(module.named_parameters()):
            p.copy_(t(r.standard_normal(tuple(p.shape)) * 0.1, p.dtype))


@section
def zuko():
    rng = np.random.default_rng(201)  # own stream: a failing section shifts no other
    import zuko as zk
    x = t(rng.standard_normal((8, 3)))
    c = t(rng.standard_normal((8, 2)))
    for i, (name, make) in enumerate([
            ("maf", lambda: zk.flows.MAF(3, 2, transforms=2, hidden_features=(16, 16))),
            ("nsf", lambda: zk.flows.NSF(3, 2, transforms=2, hidden_features=(16,))),
            ("ncsf", lambda: zk.flows.NCSF(3, 2, transforms=1, hidden_features=(16,))),
            ("nice", lambda: zk.flows.NICE(3, 2, transforms=2, hidden_features=(16,))),
            ("realnvp", lambda: zk.flows.RealNVP(3, 2, transforms=2, hidden_features=(16,))),
            ("sospf", lambda: zk.flows.SOSPF(3, 2, transforms=2, hidden_features=(16,))),
            ("bpf", lambda: zk.flows.BPF(3, 2, transforms=2, hidden_features=(16,))),
            ("naf", lambda: zk.flows.NAF(3, 2, transforms=1, hidden_features=(16,))),
            ("unaf", lambda: zk.flows.UNAF(3, 2, transforms=1, hidden_features=(16,))),
            ("gf", lambda: zk.flows.GF(3, 2, transforms=2, components=4)),
            ("cnf", lambda: zk.flows.CNF(3, 2, hidden_features=(16,)))]):
        flow = make()
        param_init(flow, 20 + i)
        # the CNF's adaptive solver makes float32 round-off visible (1e-3 in the
        # gradient, under both frameworks alike): it runs in float64
        dt = torch.float64 if name == "cnf" else torch.float32
        dist = flow.to(dt)(c.to(dt))
        logp = dist.log_prob(x.to(dt))
        (grad,) = torch.autograd.grad(logp.sum(), next(flow.parameters()))
        record("zuko", **{f"{name}_logp": logp, f"{name}_grad": grad})
        if name in ("maf", "nsf", "realnvp", "gf"):
            tr = dist.transform
            z = tr(x)
            record("zuko", **{f"{name}_z": z, f"{name}_inv": tr.inv(z),
                              f"{name}_ladj": tr.log_abs_det_jacobian(x, z)})
    flow = zk.flows.NSF(3, 2, transforms=2, hidden_features=(16,))
    param_init(flow, 40)
    opt = torch.optim.Adam(flow.parameters(), lr=1e-3)
    losses = []
    for _ in range(3):
        loss = -flow(c).log_prob(x).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    record("zuko", nsf_train=losses)


@section
def zuko_distributions():
    rng = np.random.default_rng(202)  # own stream: a failing section shifts no other
    import zuko as zk
    x = t(rng.standard_normal((8, 3)))
    D = zk.distributions
    loc, scale = t(rng.standard_normal(3)), t(rng.random(3) + 0.5)
    for name, d, v in [("diagnormal", D.DiagNormal(loc, scale), x),
                       ("boxuniform", D.BoxUniform(-3 * scale, 3 * scale), x * 0.5),
                       ("truncnormal", D.Truncated(torch.distributions.Normal(loc, scale),
                                                   loc - 1, loc + 1), loc + 0.5 * torch.tanh(x)),
                       ("sort", D.Sort(torch.distributions.Normal(loc[0], scale[0]), 3),
                        x.sort(-1).values),
                       ("mixture", D.Mixture(torch.distributions.Normal(loc, scale),
                                             t([1.0, 2.0, 3.0])), x[:, 0]),
                       ("gmm", D.Mixture(D.DiagNormal(loc.expand(2, 3), scale.expand(2, 3)),
                                         t([0.3, 0.7])), x)]:
        record("zuko_distributions", **{f"{name}_logp": d.log_prob(v)})


@section
def zuko_transforms():
    rng = np.random.default_rng(203)  # own stream: a failing section shifts no other
    import zuko as zk
    T = zk.transforms
    u = t(rng.standard_normal((5, 3)))
    for name, tr in [("monotonic_rqs", T.MonotonicRQSTransform(
                         t(rng.standard_normal((5, 3, 4))), t(rng.standard_normal((5, 3, 4))),
                         t(rng.standard_normal((5, 3, 3))))),
                     ("softclip", T.SoftclipTransform(4.0)),
                     ("circular_shift", T.CircularShiftTransform(3.0)),
                     ("sospt", T.SOSPolynomialTransform(t(rng.standard_normal((5, 3, 2, 3))))),
                     ("bernstein", T.BernsteinTransform(t(rng.standard_normal((5, 3, 6))))),
                     ("lu_linear", T.LULinearTransform(t(rng.standard_normal((3, 3)) * 0.3))),
                     ("rotation", T.RotationTransform(t(rng.standard_normal((3, 3)))))]:
        y = tr(u)
        record("zuko_transforms", **{f"{name}_y": y, f"{name}_inv": tr.inv(y),
                          f"{name}_ladj": tr.log_abs_det_jacobian(u, y)})


@section
def perceiver_pytorch():
    rng = np.random.default_rng(204)  # own stream: a failing section shifts no other
    from perceiver_pytorch import Perceiver, PerceiverIO
    img = t(rng.standard_normal((2, 6, 5, 3)))
    model = Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0, depth=2,
                      num_latents=8, latent_dim=16, cross_heads=1, latent_heads=2,
                      cross_dim_head=8, latent_dim_head=8, num_classes=5, self_per_cross_attn=1)
    det_init(model, 50)
    logits = model(img)
    logits.square().mean().backward()
    record("perceiver_pytorch", logits=logits, latents_grad=model.latents.grad)
    io = PerceiverIO(dim=6, queries_dim=4, logits_dim=3, depth=2, num_latents=8, latent_dim=16,
                     cross_heads=1, latent_heads=2, cross_dim_head=8, latent_dim_head=8)
    det_init(io, 51)
    seq = t(rng.standard_normal((2, 10, 6)))
    queries = t(rng.standard_normal((7, 4)))
    mask = torch.tensor(rng.random((2, 10)) < 0.8)
    record("perceiver_pytorch", io=io(seq, queries=queries), io_masked=io(seq, mask=mask,
                                                                          queries=queries))


@section
def local_attention():
    rng = np.random.default_rng(205)  # own stream: a failing section shifts no other
    from local_attention import LocalAttention, LocalTransformer
    q, k, v = (t(rng.standard_normal((2, 3, 16, 8))) for _ in range(3))
    for i, kw in enumerate([dict(window_size=4, causal=True),
                            dict(window_size=4, causal=False, look_backward=1, look_forward=1),
                            dict(window_size=4, causal=True, exact_windowsize=True, dim=8),
                            dict(window_size=5, causal=False, autopad=True, dim=8,
                                 use_xpos=True)]):
        attn = LocalAttention(**kw)
        n = 16 if i < 3 else 13
        mask = torch.tensor(rng.random((2, n)) < 0.9)
        record("local_attention", **{f"attn{i}": attn(q[:, :, :n], k[:, :, :n], v[:, :, :n],
                                                         mask=mask if i % 2 else None)})
    model = LocalTransformer(num_tokens=20, max_seq_len=16, dim=16, depth=2, heads=2,
                             dim_head=8, local_attn_window_size=4, causal=True,
                             num_residual_streams=1).eval()
    det_init(model, 60)
    tokens = torch.tensor(rng.integers(0, 20, (2, 16)))
    logits = model(tokens)
    loss = model(tokens, return_loss=True)
    loss.backward()
    record("local_attention", logits=logits, loss=loss,
           emb_grad=model.token_emb.weight.grad)


@section
def torch_dct():
    rng = np.random.default_rng(301)  # own stream: a failing section shifts no other
    import torch_dct as dct
    x = t(rng.standard_normal((3, 8)))
    img = t(rng.standard_normal((2, 6, 5)))
    vol = t(rng.standard_normal((2, 4, 5, 3)))
    record("torch_dct", dct=dct.dct(x), dct_ortho=dct.dct(x, norm="ortho"),
           idct=dct.idct(dct.dct(x)), idct_ortho=dct.idct(x, norm="ortho"),
           dct_2d=dct.dct_2d(img, norm="ortho"), idct_2d=dct.idct_2d(img),
           dct_3d=dct.dct_3d(vol), idct_3d=dct.idct_3d(vol, norm="ortho"),
           dct1=dct.dct1(x), idct1=dct.idct1(x))
    layer = dct.LinearDCT(8, "dct", norm="ortho")
    xg = x.clone().requires_grad_()
    (grad,) = torch.autograd.grad(dct.apply_linear_2d(xg.reshape(3, 8, 1).expand(3, 8, 8)
                                                      .contiguous(), layer).square().sum(), xg)
    record("torch_dct", linear=layer(x), linear_grad=grad)


@section
def geomloss():
    rng = np.random.default_rng(302)  # own stream: a failing section shifts no other
    from geomloss import SamplesLoss
    x0, y0 = rng.standard_normal((12, 2)), rng.standard_normal((15, 2)) + 0.5
    a0 = rng.random(12) + 0.5
    for name, kw in [("sinkhorn", dict(loss="sinkhorn", p=2, blur=0.1)),
                     ("sinkhorn_p1", dict(loss="sinkhorn", p=1, blur=0.2, scaling=0.8)),
                     ("sinkhorn_unbalanced", dict(loss="sinkhorn", p=2, blur=0.1, reach=1.0))]:
        x = t(x0).requires_grad_()
        loss = SamplesLoss(backend="tensorized", **kw)(x, t(y0))
        (grad,) = torch.autograd.grad(loss, x)
        record("geomloss", **{name: loss, f"{name}_grad": grad})
    a = t(a0 / a0.sum())
    b = t(np.full(15, 1 / 15))
    record("geomloss", weighted=SamplesLoss("sinkhorn", blur=0.1, backend="tensorized")(
        a, t(x0), b, t(y0)))


@section
def torchsde():
    rng = np.random.default_rng(303)  # own stream: a failing section shifts no other
    import torchsde

    class GridBrownian(torchsde.BaseBrownian):
        """A Brownian path NumPy draws on a fine grid, linear in between: the same path under
        both frameworks (torchsde's own paths come from torch's generator)."""

        def __init__(self, shape, seed, t0=0.0, t1=1.0, n=400):
            r = np.random.default_rng(seed)
            self.t0, self.h, self._shape = t0, (t1 - t0) / n, shape
            steps = r.standard_normal((n,) + shape) * np.sqrt(self.h)
            self.w = t(np.concatenate([np.zeros((1,) + shape), steps.cumsum(0)]))

        def _at(self, s):
            k = (float(s) - self.t0) / self.h
            i = min(max(int(np.floor(k)), 0), len(self.w) - 2)
            return self.w[i] + (self.w[i + 1] - self.w[i]) * (k - i)

        def __call__(self, ta, tb=None, return_U=False, return_A=False):
            return self._at(ta) if tb is None else self._at(tb) - self._at(ta)

        def __repr__(self):
            return "GridBrownian"

        dtype, device = torch.float32, torch.device("cpu")
        shape = property(lambda self: self._shape)
        levy_area_approximation = "none"

    class SDE(torch.nn.Module):
        noise_type = "diagonal"

        def __init__(self, sde_type):
            super().__init__()
            self.sde_type = sde_type
            self.mu, self.sigma = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
            det_init(self, 70)

        def f(self, s, y):
            return torch.tanh(self.mu(y)) - 0.5 * y

        def g(self, s, y):
            return 0.3 * torch.sigmoid(self.sigma(y))

    y0 = t(rng.standard_normal((4, 3)))
    ts = t(np.linspace(0.0, 1.0, 5))
    for sde_type, methods in [("ito", ("euler", "milstein")),
                              ("stratonovich", ("heun", "midpoint", "milstein",
                                                "reversible_heun"))]:
        sde = SDE(sde_type)
        for method in methods:
            ys = torchsde.sdeint(sde, y0, ts, bm=GridBrownian((4, 3), 71), method=method,
                                 dt=0.025)
            record("torchsde", **{f"{sde_type}_{method}": ys})
    sde = SDE("stratonovich")
    y0g = y0.clone().requires_grad_()
    ys = torchsde.sdeint(sde, y0g, ts, bm=GridBrownian((4, 3), 72), method="midpoint",
                         dt=0.025)
    ys.square().sum().backward()
    record("torchsde", direct=ys, direct_y0_grad=y0g.grad, direct_w_grad=sde.mu.weight.grad)
    sde.zero_grad()
    y0a = y0.clone().requires_grad_()
    ys = torchsde.sdeint_adjoint(sde, y0a, ts, bm=GridBrownian((4, 3), 72),
                                 method="reversible_heun", adjoint_method="adjoint_reversible_heun",
                                 dt=0.025)
    ys.square().sum().backward()
    record("torchsde", adjoint=ys, adjoint_y0_grad=y0a.grad, adjoint_w_grad=sde.mu.weight.grad)


@section
def gpytorch():
    rng = np.random.default_rng(304)  # own stream: a failing section shifts no other
    import gpytorch as gp

    x = t(np.linspace(0, 1, 25))
    y = torch.sin(6 * x) + t(rng.standard_normal(25) * 0.1)
    xs = t(np.linspace(-0.1, 1.1, 9))

    class ExactGP(gp.models.ExactGP):
        def __init__(self, x, y, lik, kernel):
            super().__init__(x, y, lik)
            self.mean_module = gp.means.ConstantMean()
            self.covar_module = gp.kernels.ScaleKernel(kernel)

        def forward(self, x):
            return gp.distributions.MultivariateNormal(self.mean_module(x),
                                                       self.covar_module(x))

    for name, kernel in [("rbf", lambda: gp.kernels.RBFKernel()),
                         ("matern", lambda: gp.kernels.MaternKernel(nu=2.5)),
                         ("periodic", lambda: gp.kernels.PeriodicKernel()),
                         ("rq", lambda: gp.kernels.RQKernel())]:
        lik = gp.likelihoods.GaussianLikelihood()
        model = ExactGP(x, y, lik, kernel())
        model.train()
        lik.train()
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        mll = gp.mlls.ExactMarginalLogLikelihood(lik, model)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            loss = -mll(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        lik.eval()
        with torch.no_grad():
            pred = lik(model(xs))
            lower, upper = pred.confidence_region()
        record("gpytorch", **{f"{name}_losses": losses, f"{name}_mean": pred.mean,
                              f"{name}_var": pred.variance, f"{name}_lower": lower,
                              f"{name}_noise": lik.noise})


@section
def pyro():
    rng = np.random.default_rng(305)  # own stream: a failing section shifts no other
    import pyro as pr
    import pyro.distributions as dist
    from pyro.infer import SVI, TraceEnum_ELBO, config_enumerate, infer_discrete
    from pyro.infer.autoguide import AutoDelta
    from pyro import poutine

    data = t(np.concatenate([rng.normal(-2, 0.5, 10), rng.normal(2, 0.7, 12)]))

    @config_enumerate
    def model(data):
        weights = pr.sample("weights", dist.Dirichlet(0.5 * torch.ones(2)))
        scale = pr.sample("scale", dist.LogNormal(0.0, 2.0))
        with pr.plate("components", 2):
            locs = pr.sample("locs", dist.Normal(0.0, 10.0))
        with pr.plate("data", len(data)):
            assignment = pr.sample("assignment", dist.Categorical(weights))
            pr.sample("obs", dist.Normal(locs[assignment], scale), obs=data)

    init = {"weights": t([0.5, 0.5]), "scale": t(1.0), "locs": t([-1.0, 1.0])}
    pr.clear_param_store()
    guide = AutoDelta(poutine.block(model, expose=["weights", "locs", "scale"]),
                      init_loc_fn=lambda site: init[site["name"]])
    svi = SVI(model, guide, pr.optim.Adam({"lr": 0.1, "betas": [0.8, 0.99]}),
              loss=TraceEnum_ELBO(max_plate_nesting=1))
    losses = [svi.step(data) for _ in range(6)]
    est = guide(data)
    trained = poutine.condition(model, data=est)
    map_trace = poutine.trace(infer_discrete(trained, first_available_dim=-2,
                                             temperature=0)).get_trace(data)
    record("pyro", losses=losses, weights=est["weights"], locs=est["locs"],
           scale=est["scale"], assignment=map_trace.nodes["assignment"]["value"])
    tr = poutine.trace(poutine.condition(model, data={"weights": t([0.3, 0.7]), "scale": t(0.8),
                                                      "locs": t([-2.0, 2.0]),
                                                      "assignment": (data > 0).long()})
                       ).get_trace(data)
    record("pyro", log_prob_sum=tr.log_prob_sum())
    v = t(rng.random((4, 3)) + 0.1)
    for name, d, x in [
            ("beta", dist.Beta(t([0.5, 2.0, 3.0]), t([1.5, 0.7, 2.0])), v.clamp(max=0.95)),
            ("gamma", dist.Gamma(t([0.5, 2.0, 3.0]), t([1.5, 0.7, 2.0])), v),
            ("student", dist.StudentT(t([2.0, 5.0, 9.0]), 0.1, 2.0), v),
            ("mvn", dist.MultivariateNormal(t(np.zeros(3)), scale_tril=t(
                np.tril(rng.random((3, 3))) + np.eye(3))), v),
            ("zinb", dist.ZeroInflatedNegativeBinomial(t([2.0, 3.0, 1.0]), probs=t(
                [0.3, 0.5, 0.7]), gate=t([0.2, 0.1, 0.4])), (v * 5).floor()),
            ("vonmises", dist.VonMises(t([0.1, 1.0, -1.0]), t([0.5, 2.0, 5.0])), v),
            ("asym_laplace", dist.AsymmetricLaplace(t([0.1, 0.2, 0.3]), 1.0, 0.5), v),
            ("poisson", dist.Poisson(t([1.0, 2.0, 3.0])), (v * 4).floor())]:
        record("pyro", **{f"{name}_logp": d.log_prob(x)})


def optim_run(make, seed, steps=5, scheduler=None):
    """Steps of ``make(params)`` on a small MLP from NumPy weights: losses and first-layer
    weights (``scheduler(opt)`` gives a callable run after each step)."""
    r = np.random.default_rng(seed)
    x, y = t(r.standard_normal((16, 5))), t(r.standard_normal((16, 2)))
    model = mlp(seed)
    opt = make(model.parameters())
    after = scheduler(opt) if scheduler else None
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        if after:
            after()
        losses.append(loss.item())
    return losses, model[0].weight


def record_optimizers(pkg, cases):
    for name, make in cases:
        losses, w = optim_run(make, 80)
        record(pkg, **{f"{name}_losses": losses, f"{name}_w": w})


@section
def adan_pytorch():
    from adan_pytorch import Adan
    record_optimizers("adan_pytorch", [
        ("adan", lambda p: Adan(p, lr=1e-2, betas=(0.02, 0.08, 0.01), weight_decay=0.02))])


@section
def came_pytorch():
    from came_pytorch import CAME
    record_optimizers("came_pytorch", [
        ("came", lambda p: CAME(p, lr=1e-2, weight_decay=0.01))])


@section
def madgrad():
    from madgrad import MADGRAD, MirrorMADGRAD
    record_optimizers("madgrad", [
        ("madgrad", lambda p: MADGRAD(p, lr=1e-2, momentum=0.9, weight_decay=1e-3)),
        ("decoupled", lambda p: MADGRAD(p, lr=1e-2, weight_decay=1e-3, decouple_decay=True)),
        ("mirror", lambda p: MirrorMADGRAD(p, lr=1e-2))])


@section
def adabelief_pytorch():
    from adabelief_pytorch import AdaBelief
    record_optimizers("adabelief_pytorch", [
        ("rectified", lambda p: AdaBelief(p, lr=1e-2, eps=1e-16, betas=(0.9, 0.999),
                                          weight_decouple=True, rectify=True,
                                          print_change_log=False)),
        ("amsgrad", lambda p: AdaBelief(p, lr=1e-2, amsgrad=True, weight_decouple=False,
                                        rectify=False, weight_decay=1e-2,
                                        print_change_log=False))])


@section
def pytorch_warmup():
    import pytorch_warmup as warmup
    for name, make in [("linear", lambda o: warmup.LinearWarmup(o, warmup_period=3)),
                       ("exponential", lambda o: warmup.ExponentialWarmup(o, warmup_period=2)),
                       ("untuned_linear", warmup.UntunedLinearWarmup),
                       ("untuned_exponential", warmup.UntunedExponentialWarmup),
                       ("radam", warmup.RAdamWarmup)]:
        lrs = []

        def scheduler(opt, make=make, lrs=lrs):
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
            w = make(opt)

            def after():
                with w.dampening():
                    sched.step()
                lrs.append(opt.param_groups[0]["lr"])
            return after
        losses, weight = optim_run(lambda p: torch.optim.AdamW(p, lr=1e-2), 81, steps=6,
                                   scheduler=scheduler)
        record("pytorch_warmup", **{f"{name}_losses": losses, f"{name}_w": weight,
                                    f"{name}_lrs": lrs})


@section
def torch_pca():
    rng = np.random.default_rng(401)  # own stream: a failing section shifts no other
    from torch_pca import PCA
    x = t(rng.standard_normal((30, 6)) @ rng.standard_normal((6, 6)))
    for name, kw in [("full", dict(n_components=3, svd_solver="full")),
                     ("eigh", dict(n_components=3, svd_solver="covariance_eigh")),
                     ("whiten", dict(n_components=2, svd_solver="full", whiten=True)),
                     ("ratio", dict(n_components=0.9, svd_solver="full"))]:
        pca = PCA(**kw)
        z = pca.fit_transform(x)
        record("torch_pca", **{f"{name}_z": z, f"{name}_back": pca.inverse_transform(z),
                               f"{name}_components": pca.components_,
                               f"{name}_ratio": pca.explained_variance_ratio_,
                               f"{name}_new": pca.transform(x[:5] + 1)})


def record_model(pkg, model, inp, seed, wrt_input=True):
    """A module's output on ``inp`` and its gradient (of the mean square) with respect to
    the input, or to its first parameter, from NumPy weights (halved: deep stacks of
    N(0, 0.09) weights saturate)."""
    model = model.eval()
    det_init(model, seed)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
    inp = inp.clone().requires_grad_()
    out = model(inp)
    (grad,) = torch.autograd.grad(out.square().mean(),
                                  inp if wrt_input else next(model.parameters()))
    record(pkg, out=out, grad=grad)


@section
def nystrom_attention():
    rng = np.random.default_rng(402)  # own stream: a failing section shifts no other
    from nystrom_attention import NystromAttention, Nystromformer
    seq = t(rng.standard_normal((2, 16, 16)))
    record_model("nystrom_attention", NystromAttention(
        dim=16, dim_head=8, heads=2, num_landmarks=4, pinv_iterations=6, residual=True),
        seq, 90)
    former = Nystromformer(dim=16, dim_head=8, heads=2, depth=2, num_landmarks=4).eval()
    det_init(former, 91)
    record("nystrom_attention", former=former(seq * 0.5))


@section
def linformer():
    rng = np.random.default_rng(403)  # own stream: a failing section shifts no other
    from linformer import Linformer
    record_model("linformer", Linformer(dim=16, seq_len=16, depth=2, k=4, heads=2),
                 t(rng.standard_normal((2, 16, 16))), 92)


@section
def mlp_mixer_pytorch():
    rng = np.random.default_rng(404)  # own stream: a failing section shifts no other
    from mlp_mixer_pytorch import MLPMixer
    record_model("mlp_mixer_pytorch", MLPMixer(image_size=8, channels=3, patch_size=4, dim=16,
                                               depth=2, num_classes=5),
                 t(rng.standard_normal((2, 3, 8, 8))), 93)


@section
def siren_pytorch():
    rng = np.random.default_rng(405)  # own stream: a failing section shifts no other
    from siren_pytorch import SirenNet
    record_model("siren_pytorch", SirenNet(dim_in=2, dim_hidden=16, dim_out=3, num_layers=3,
                                           w0_initial=30.0),
                 t(rng.random((10, 2)) * 2 - 1), 94)


@section
def axial_positional_embedding():
    rng = np.random.default_rng(406)  # own stream: a failing section shifts no other
    from axial_positional_embedding import AxialPositionalEmbedding
    # (it reads only the input's shape: the gradient is its weights')
    record_model("axial_positional_embedding", AxialPositionalEmbedding(
        dim=16, axial_shape=(4, 4)), t(rng.standard_normal((2, 16, 16))), 95, wrt_input=False)


@section
def performer_pytorch():
    rng = np.random.default_rng(407)  # own stream: a failing section shifts no other
    from performer_pytorch import PerformerLM, SelfAttention
    tokens = torch.tensor(rng.integers(0, 20, (2, 16)))
    for i, kw in enumerate([dict(causal=False), dict(causal=True),
                            dict(causal=False, generalized_attention=True),
                            dict(causal=False, local_attn_heads=1, local_window_size=4)]):
        model = PerformerLM(num_tokens=20, max_seq_len=16, dim=16, depth=1, heads=2,
                            dim_head=8, nb_features=8, **kw).eval()
        det_init(model, 100 + i)
        logits = model(tokens)
        logits.square().mean().backward()
        record("performer_pytorch", **{f"logits{i}": logits,
                                       f"emb_grad{i}": model.token_emb.weight.grad})
    attn = SelfAttention(dim=16, heads=2, dim_head=8, nb_features=8, causal=False).eval()
    det_init(attn, 110)
    record("performer_pytorch", self_attn=attn(t(rng.standard_normal((2, 10, 16)))))


@section
def torchinfo():
    from torchinfo import summary
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 4 * 4, 10))
    s = summary(model, input_size=(2, 3, 8, 8), verbose=0,
                col_names=("input_size", "output_size", "num_params", "mult_adds"))
    lstm = summary(torch.nn.LSTM(4, 6, num_layers=2, batch_first=True), input_size=(3, 5, 4),
                   verbose=0)
    record("torchinfo", total=s.total_params, trainable=s.trainable_params,
           mult_adds=s.total_mult_adds, output_bytes=s.total_output_bytes,
           param_bytes=s.total_param_bytes, layers=len(s.summary_list),
           shapes=[x for layer in s.summary_list for x in (layer.output_size or [])],
           lstm_params=lstm.total_params, lstm_mult_adds=lstm.total_mult_adds)


@section
def thop():
    rng = np.random.default_rng(503)  # own stream: a failing section shifts no other
    from thop import clever_format, profile
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
                                torch.nn.Flatten(), torch.nn.Linear(32, 10),
                                torch.nn.Softmax(dim=1))
    macs, params = profile(model, inputs=(t(rng.standard_normal((2, 3, 8, 8))),), verbose=False)
    clever_format([macs, params], "%.3f")
    record("thop", macs=macs, params=params)


@section
def skorch():
    rng = np.random.default_rng(501)  # own stream: a failing section shifts no other
    from skorch import NeuralNetClassifier, NeuralNetRegressor
    x = rng.standard_normal((40, 5)).astype(np.float32)
    y_reg = (x @ rng.standard_normal((5, 1))).astype(np.float32)
    y_cls = (x[:, 0] + x[:, 1] > 0).astype(np.int64)

    class Net(torch.nn.Module):
        def __init__(self, out=1, softmax=False):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(),
                                            torch.nn.Linear(8, out))
            self.softmax = softmax

        def forward(self, X):
            out = self.body(X)
            return out.softmax(-1) if self.softmax else out

    for name, net, y in [
            ("reg", NeuralNetRegressor(Net, max_epochs=4, lr=0.05, batch_size=10,
                                       train_split=None, iterator_train__shuffle=False,
                                       verbose=0), y_reg),
            ("cls", NeuralNetClassifier(Net, module__out=2, module__softmax=True, max_epochs=4,
                                        lr=0.1, batch_size=16, train_split=None,
                                        optimizer=torch.optim.Adam,
                                        iterator_train__shuffle=False, verbose=0), y_cls)]:
        net.initialize()
        det_init(net.module_, 120)
        net.partial_fit(x, y)
        record("skorch", **{f"{name}_loss": net.history[:, "train_loss"],
                            f"{name}_pred": net.predict(x[:8]).astype(np.float64)})
        if name == "cls":
            record("skorch", cls_proba=net.predict_proba(x[:8]))


@section
def captum():
    rng = np.random.default_rng(502)  # own stream: a failing section shifts no other
    from captum.attr import (DeepLift, DeepLiftShap, FeatureAblation, GuidedBackprop,
                             InputXGradient, IntegratedGradients, LayerConductance,
                             LayerGradCam, Occlusion, Saliency)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 4 * 4, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 3)).eval()
    det_init(model, 130)
    x = t(rng.standard_normal((2, 1, 6, 6)))
    base = t(rng.standard_normal((3, 1, 6, 6)) * 0.1)
    ig = IntegratedGradients(model)
    attr, delta = ig.attribute(x, target=1, n_steps=16, return_convergence_delta=True)
    record("captum", ig=attr, ig_delta=delta,
           ig_riemann=ig.attribute(x, target=2, n_steps=8, method="riemann_trapezoid"),
           saliency=Saliency(model).attribute(x, target=0),
           input_x_grad=InputXGradient(model).attribute(x, target=0),
           deeplift=DeepLift(model).attribute(x, target=1),
           deeplift_shap=DeepLiftShap(model).attribute(x, baselines=base, target=1),
           guided=GuidedBackprop(model).attribute(x, target=2),
           ablation=FeatureAblation(model).attribute(x, target=1),
           occlusion=Occlusion(model).attribute(x, sliding_window_shapes=(1, 3, 3),
                                                strides=(1, 2, 2), target=0),
           conductance=LayerConductance(model, model[3]).attribute(x, target=1, n_steps=8),
           gradcam=LayerGradCam(model, model[0]).attribute(x, target=2))


@section
def pytorch_msssim():
    rng = np.random.default_rng(601)  # own stream: a failing section shifts no other
    from pytorch_msssim import MS_SSIM, SSIM, ms_ssim, ssim
    x = t(rng.random((2, 3, 48, 48)))
    y = (x + t(rng.standard_normal((2, 3, 48, 48)) * 0.1)).clamp(0, 1)
    xg = x.clone().requires_grad_()
    loss = 1 - ssim(xg, y, data_range=1.0, size_average=True)
    loss.backward()
    record("pytorch_msssim", ssim=ssim(x, y, data_range=1.0, size_average=False),
           ssim_nonneg=ssim(x, y, data_range=1.0, nonnegative_ssim=True, win_size=7),
           ms_ssim=ms_ssim(x, y, data_range=1.0, win_size=3),
           module=SSIM(data_range=1.0, channel=3)(x, y),
           ms_module=MS_SSIM(data_range=1.0, channel=3, win_size=3,
                             weights=[0.3, 0.3, 0.4])(x, y),
           grad=xg.grad)


@section
def tensorly():
    rng = np.random.default_rng(602)  # own stream: a failing section shifts no other
    import tensorly as tl
    from tensorly.decomposition import non_negative_parafac, parafac, tucker
    tl.set_backend("pytorch")
    try:
        a, b, c = rng.random((5, 2)), rng.random((4, 2)), rng.random((3, 2))
        x = t(np.einsum("ir,jr,kr->ijk", a, b, c) + rng.random((5, 4, 3)) * 0.01)
        cp = parafac(x, rank=2, init="svd", n_iter_max=30, tol=0)
        nn_cp = non_negative_parafac(x, rank=2, init="svd", n_iter_max=30, tol=0)
        core, factors = tucker(x, rank=[2, 2, 2], init="svd", n_iter_max=20, tol=0)
        record("tensorly", cp=tl.cp_to_tensor(cp), nn_cp=tl.cp_to_tensor(nn_cp),
               tucker=tl.tucker_to_tensor((core, factors)),
               unfold=tl.unfold(x, 1), fold=tl.fold(tl.unfold(x, 2), 2, x.shape),
               khatri_rao=tl.tenalg.khatri_rao([t(a), t(b)]),
               mode_dot=tl.tenalg.mode_dot(x, t(rng.random((2, 4))), 1),
               norm=tl.norm(x, 2))
    finally:
        tl.set_backend("numpy")


@section
def opacus():
    rng = np.random.default_rng(603)  # own stream: a failing section shifts no other
    from opacus import GradSampleModule, PrivacyEngine
    from opacus.accountants.utils import get_noise_multiplier
    x = t(rng.standard_normal((12, 1, 6, 6)))
    y = torch.tensor(rng.integers(0, 3, 12))

    def net():
        m = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.GroupNorm(1, 2),
                                torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32, 3))
        det_init(m, 140)
        return m
    gsm = GradSampleModule(net())
    torch.nn.functional.cross_entropy(gsm(x), y).backward()
    record("opacus", **{f"grad_sample_{i}": p.grad_sample
                        for i, p in enumerate(gsm.parameters())})
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=0.0, max_grad_norm=0.5,
                                             poisson_sampling=False)
    losses = []
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    record("opacus", losses=losses, weight=model._module[4].weight,
           sigma=get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.1,
                                      epochs=2, accountant="rdp"))


@section
def monai():
    rng = np.random.default_rng(604)  # own stream: a failing section shifts no other
    from monai.losses import DiceCELoss, DiceLoss, FocalLoss, TverskyLoss
    from monai.metrics import DiceMetric, MeanIoU
    from monai.networks.nets import UNet
    logits = t(rng.standard_normal((2, 3, 8, 8)))
    label = torch.tensor(rng.integers(0, 3, (2, 1, 8, 8)))
    onehot = torch.nn.functional.one_hot(label[:, 0], 3).permute(0, 3, 1, 2).float()
    record("monai", dice=DiceLoss(softmax=True, to_onehot_y=True)(logits, label),
           dice_ce=DiceCELoss(softmax=True, to_onehot_y=True)(logits, label),
           focal=FocalLoss(to_onehot_y=True, gamma=2.0)(logits, label),
           tversky=TverskyLoss(sigmoid=True, alpha=0.3, beta=0.7)(logits, onehot))
    pred = torch.nn.functional.one_hot(logits.argmax(1), 3).permute(0, 3, 1, 2).float()
    dm, iou = DiceMetric(include_background=True, reduction="mean"), MeanIoU()
    dm(pred, onehot)
    iou(pred, onehot)
    net = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16),
               strides=(2, 2), num_res_units=1).eval()
    det_init(net, 150)
    img = t(rng.standard_normal((1, 1, 16, 16)))
    record("monai", dice_metric=dm.aggregate(), iou=iou.aggregate(), unet=net(img))


@section
def botorch():
    rng = np.random.default_rng(605)  # own stream: a failing section shifts no other
    from botorch.acquisition import (ExpectedImprovement, LogExpectedImprovement,
                                     ProbabilityOfImprovement, UpperConfidenceBound)
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood
    x = t(rng.random((12, 2)), torch.float64)
    y = (torch.sin(3 * x[:, :1]) + x[:, 1:] ** 2).to(torch.float64)
    model = SingleTaskGP(x, y)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll)
    xs = t(rng.random((5, 1, 2)), torch.float64)
    post = model.posterior(xs[:, 0])
    best = y.max()
    record("botorch", mean=post.mean, var=post.variance,
           noise=model.likelihood.noise,
           ei=ExpectedImprovement(model, best_f=best)(xs),
           log_ei=LogExpectedImprovement(model, best_f=best)(xs),
           pi=ProbabilityOfImprovement(model, best_f=best)(xs),
           ucb=UpperConfidenceBound(model, beta=0.5)(xs))


@section
def ignite():
    rng = np.random.default_rng(701)  # own stream: a failing section shifts no other
    from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
    from ignite.metrics import Accuracy, Loss, Precision, Recall, RunningAverage
    x = t(rng.standard_normal((24, 4)))
    y = torch.tensor((rng.standard_normal(24) > 0).astype(np.int64))
    data = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)]
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    det_init(model, 160)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    trainer = create_supervised_trainer(model, opt, loss_fn)
    RunningAverage(output_transform=lambda out: out).attach(trainer, "avg")
    losses, avgs = [], []
    trainer.add_event_handler(Events.ITERATION_COMPLETED,
                              lambda e: (losses.append(e.state.output),
                                         avgs.append(e.state.metrics["avg"])))
    trainer.run(data, max_epochs=3)
    evaluator = create_supervised_evaluator(model, metrics={
        "acc": Accuracy(), "loss": Loss(loss_fn), "prec": Precision(average=True),
        "rec": Recall(average=False)})
    m = evaluator.run(data).metrics
    record("ignite", losses=losses, running=avgs, acc=m["acc"], loss=m["loss"],
           prec=m["prec"], rec=m["rec"], weight=model[0].weight)


@section
def torchcde():
    rng = np.random.default_rng(702)  # own stream: a failing section shifts no other
    import torchcde as cde
    ts = t(np.linspace(0, 1, 6))
    path = torch.cat([ts.expand(2, 6).unsqueeze(-1), t(rng.standard_normal((2, 6, 2)))], -1)

    class F(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4 * 3)
            det_init(self, 170)

        def forward(self, s, z):
            return torch.tanh(self.lin(z)).view(*z.shape[:-1], 4, 3)

    func = F()
    for name, coeffs_fn, interp in [
            ("cubic", cde.hermite_cubic_coefficients_with_backward_differences,
             cde.CubicSpline),
            ("natural", cde.natural_cubic_coeffs, cde.CubicSpline),
            ("linear", cde.linear_interpolation_coeffs, cde.LinearInterpolation)]:
        coeffs = coeffs_fn(path, ts)
        X = interp(coeffs, ts)
        z0 = X.evaluate(X.interval[0]) @ t(np.ones((3, 4)) * 0.1)
        # (fixed steps: an adaptive solver's step choices amplify float32 round-off)
        zt = cde.cdeint(X=X, func=func, z0=z0, t=X.interval, method="rk4",
                        options=dict(step_size=0.05))
        record("torchcde", **{f"{name}_coeffs": coeffs, f"{name}_z": zt,
                              f"{name}_deriv": X.derivative(t(0.35)),
                              f"{name}_eval": X.evaluate(t(0.55))})
    zt.square().sum().backward()
    record("torchcde", grad=func.lin.weight.grad)


@section
def pytorch_tabnet():
    rng = np.random.default_rng(703)  # own stream: a failing section shifts no other
    from pytorch_tabnet.tab_network import TabNet
    # features 0 and 1 attended as one group, the others alone (what
    # pytorch_tabnet.utils.create_group_matrix([[0, 1]], 6) makes; that module needs pandas)
    groups = t(np.vstack([[0.5, 0.5, 0, 0, 0, 0], np.eye(6)[2:]]))
    net = TabNet(input_dim=6, output_dim=3, n_d=4, n_a=4, n_steps=2, gamma=1.3,
                 n_independent=1, n_shared=1, virtual_batch_size=8, mask_type="sparsemax",
                 group_attention_matrix=groups)
    net.eval()
    param_init(net, 180)  # (parameters only: batch-norm running stats stay valid)
    x = t(rng.standard_normal((8, 6)))
    out, m_loss = net(x)
    explain, masks = net.forward_masks(x)
    net2 = TabNet(input_dim=6, output_dim=2, n_d=4, n_a=4, n_steps=2, mask_type="entmax",
                  virtual_batch_size=8, group_attention_matrix=groups).train()
    param_init(net2, 181)
    out2, m_loss2 = net2(x)
    (out2.square().mean() + m_loss2).backward()
    record("pytorch_tabnet", out=out, m_loss=m_loss, explain=explain, mask0=masks[0],
           out_train=out2, grad=net2.tabnet.encoder.initial_splitter.shared.glu_layers[0]
           .fc.weight.grad)


@section
def adam_atan2_pytorch():
    from adam_atan2_pytorch import AdamAtan2, AdamAtan2ClipGrok, AdoptAtan2, MuonAdamAtan2
    record_optimizers("adam_atan2_pytorch", [
        ("adam_atan2", lambda p: AdamAtan2(p, lr=1e-2, weight_decay=0.01)),
        ("cautious", lambda p: AdamAtan2(p, lr=1e-2, cautious_factor=0.0, regen_reg_rate=1e-3)),
        ("clip_grok", lambda p: AdamAtan2ClipGrok(p, lr=1e-2)),
        ("adopt", lambda p: AdoptAtan2(p, lr=1e-2))])
    model = mlp(82)
    r = np.random.default_rng(82)
    x, y = t(r.standard_normal((16, 5))), t(r.standard_normal((16, 2)))
    mats = [p for p in model.parameters() if p.ndim == 2]
    rest = [p for p in model.parameters() if p.ndim != 2]
    opt = MuonAdamAtan2(mats, rest, lr=1e-2)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    record("adam_atan2_pytorch", muon_losses=losses, muon_w=model[0].weight)


@section
def grokfast_pytorch():
    from grokfast_pytorch import GrokFastAdamW
    record_optimizers("grokfast_pytorch", [
        ("grokfast", lambda p: GrokFastAdamW(p, lr=1e-2, weight_decay=0.01)),
        ("grokfast_no_amp", lambda p: GrokFastAdamW(p, lr=1e-2, grokfast_alpha=0.9,
                                                    grokfast_lamb=1.5))])


@section
def soft_moe_pytorch():
    rng = np.random.default_rng(801)  # own stream: a failing section shifts no other
    from soft_moe_pytorch import SoftMoE
    moe = SoftMoE(dim=8, seq_len=12, num_experts=4, expert_mult=2).eval()
    det_init(moe, 190)
    x = t(rng.standard_normal((2, 12, 8))).requires_grad_()
    out = moe(x)
    (grad,) = torch.autograd.grad(out.square().mean(), x)
    record("soft_moe_pytorch", out=out, grad=grad)


@section
def torchjd():
    rng = np.random.default_rng(802)  # own stream: a failing section shifts no other
    # (UPGrad and DualProj project with quadprog, a compiled extra: not used here)
    from torchjd.aggregation import IMTLG, MGDA, AlignedMTL, Mean, PCGrad, Sum
    from torchjd.autojac import backward, jac_to_grad, mtl_backward
    x = t(rng.standard_normal((8, 5)))
    y1, y2 = t(rng.standard_normal((8, 1))), t(rng.standard_normal((8, 1)))
    for name, agg in [("mgda", MGDA()), ("imtlg", IMTLG()), ("aligned", AlignedMTL()),
                      ("mean", Mean()), ("sum", Sum())]:
        shared = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU())
        h1, h2 = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
        for i, m in enumerate((shared, h1, h2)):
            det_init(m, 200 + i)
        params = [*shared.parameters(), *h1.parameters(), *h2.parameters()]
        opt = torch.optim.SGD(params, lr=0.1)
        losses = []
        for _ in range(3):
            feats = shared(x)
            l1 = ((h1(feats) - y1) ** 2).mean()
            l2 = ((h2(feats) - y2) ** 2).mean()
            opt.zero_grad()
            mtl_backward([l1, l2], features=feats)
            jac_to_grad(shared.parameters(), agg)
            opt.step()
            losses.append([l1.item(), l2.item()])
        record("torchjd", **{f"{name}_losses": losses, f"{name}_w": shared[0].weight})
    # the plain Jacobian descent path on two losses of one model
    model = torch.nn.Linear(5, 2)
    det_init(model, 210)
    out = model(x)
    l1, l2 = out[:, 0].square().mean(), (out[:, 1] - 1).abs().mean()
    backward([l1, l2])
    jac_to_grad(model.parameters(), PCGrad())
    record("torchjd", jd_grad=model.weight.grad)


@section
def fast_pytorch_kmeans():
    rng = np.random.default_rng(901)  # own stream: a failing section shifts no other
    from fast_pytorch_kmeans import KMeans
    pts = np.concatenate([rng.normal(c, 0.3, (15, 2)) for c in ((0, 0), (3, 0), (0, 3))])
    x = t(pts)
    init = t(pts[[0, 15, 30]] + 0.5)
    for mode in ("euclidean", "cosine"):
        km = KMeans(n_clusters=3, mode=mode, max_iter=20)
        labels = km.fit_predict(x, centroids=init.clone())
        record("fast_pytorch_kmeans", **{f"{mode}_labels": labels,
                                         f"{mode}_centroids": km.centroids,
                                         f"{mode}_predict": km.predict(x[:6] * 0.9)})
    mini = KMeans(n_clusters=3, max_iter=5, minibatch=None)
    mini.fit(x, centroids=init.clone())
    record("fast_pytorch_kmeans", fit_centroids=mini.centroids)

np.savez(sys.argv[1], **RESULTS)
'''

PACKAGES = ["torchmetrics", "torch_optimizer", "ema_pytorch", "rotary_embedding_torch",
            "pytorch_metric_learning", "einx", "x_transformers", "torch_optimizer_adahessian",
            "lion_pytorch", "torch_optimizer_ranger", "vector_quantize_pytorch", "kornia",
            "schedulefree", "prodigyopt", "dadaptation", "torch_ema", "entmax", "torchdiffeq",
            "zuko", "zuko_distributions", "zuko_transforms", "perceiver_pytorch",
            "local_attention", "torch_dct", "geomloss", "torchsde", "gpytorch", "pyro",
            "adan_pytorch", "came_pytorch", "madgrad", "adabelief_pytorch", "pytorch_warmup",
            "torch_pca", "nystrom_attention", "linformer", "mlp_mixer_pytorch", "siren_pytorch",
            "axial_positional_embedding", "performer_pytorch", "torchinfo", "thop", "skorch",
            "captum", "pytorch_msssim", "tensorly", "opacus", "monai", "ignite", "torchcde",
            "pytorch_tabnet", "adam_atan2_pytorch", "grokfast_pytorch", "soft_moe_pytorch",
            "torchjd", "fast_pytorch_kmeans"]
# sections named <package>_<part> that exercise part of a package listed on its own
_PARTS = ("torch_optimizer_", "zuko_")

# sections that fail on ember for a public PyTorch name or behaviour ember lacks, with the
# text the failure must name. When one starts passing, move it to PACKAGES.
BLOCKED = {
    # SobolEngine: PyTorch's Sobol sequences come from the Joe-Kuo direction-number table
    # (21201 dimensions), which ember does not ship
    "botorch": "torch.quasirandom",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("torch")
    missing = [p for p in (*PACKAGES, *BLOCKED) if not p.startswith(_PARTS)
               and importlib.util.find_spec(p) is None]
    if missing:
        pytest.skip(f"registry packages not installed: {missing} "
                    "(pip install 'ember-tensor[test]')")
    d = tmp_path_factory.mktemp("registry")
    prog = d / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAM))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = {name: subprocess.Popen([sys.executable, *pre, str(prog), str(d / f"{name}.npz")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env)
             for name, pre in (("ember", ["-m", "ember.as_torch"]), ("torch", []))}
    out = {}
    for name, p in procs.items():
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"{name} run failed:\n{err}"
        with np.load(d / f"{name}.npz") as z:
            out[name] = dict(z)
    return out


@pytest.mark.parametrize("pkg", PACKAGES)
def test_package_matches_pytorch(runs, pkg):
    ember_res, torch_res = runs["ember"], runs["torch"]
    assert f"{pkg}/__error__" not in torch_res, str(torch_res[f"{pkg}/__error__"])
    assert f"{pkg}/__error__" not in ember_res, (
        f"{pkg} failed on ember:\n{ember_res[f'{pkg}/__error__']}")
    keys = sorted(k for k in torch_res if k.startswith(pkg + "/"))
    assert keys and keys == sorted(k for k in ember_res if k.startswith(pkg + "/"))
    for k in keys:
        assert ember_res[k].shape == torch_res[k].shape, k
        np.testing.assert_allclose(ember_res[k], torch_res[k], rtol=2e-4, atol=2e-5,
                                   err_msg=k)


@pytest.mark.parametrize("pkg", sorted(BLOCKED))
def test_blocked_package_fails_for_the_recorded_gap(runs, pkg):
    """The package runs under PyTorch, and fails on ember naming the missing public name."""
    assert f"{pkg}/__error__" not in runs["torch"], str(runs["torch"][f"{pkg}/__error__"])
    err = runs["ember"].get(f"{pkg}/__error__")
    assert err is not None, f"{pkg} now runs on ember: move it from BLOCKED to PACKAGES"
    assert BLOCKED[pkg] in str(err), f"{pkg} fails on ember for another reason now:\n{err}"


# ---- the private shims themselves, against PyTorch's (in this process: no alias needed) ----
_N = __import__("collections").namedtuple("_N", "a b")


def _trees():
    c = __import__("collections")
    return [1, None, [], (1,), [1, (2, None)], {"x": [1, 2], "y": _N(3, [4])},
            c.OrderedDict(b=5, a=(6, 7)), c.deque([7, [8]], maxlen=3),
            c.defaultdict(list, {"k": 8, "j": [9]}), {"x": {"y": {"z": [1.5, "s"]}}}]


@pytest.mark.parametrize("i", range(10))
def test_pytree_matches_torch(i):
    P = pytest.importorskip("torch.utils._pytree")
    from ember._torch_c import pytree as E
    tree = _trees()[i]
    leaves, spec = E.tree_flatten(tree)
    t_leaves, t_spec = P.tree_flatten(tree)
    assert leaves == t_leaves and spec.num_leaves == t_spec.num_leaves
    rebuilt = E.tree_unflatten(leaves, spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    mapped = E.tree_map(lambda x: (x, 0), tree)
    assert mapped == P.tree_map(lambda x: (x, 0), tree)
    assert E.tree_map(lambda a, b: (a, b), tree, tree) == P.tree_map(lambda a, b: (a, b),
                                                                      tree, tree)
    assert E.tree_leaves(tree) == P.tree_leaves(tree)
    assert E.tree_map_only(int, lambda x: -x, tree) == P.tree_map_only(int, lambda x: -x, tree)
    assert (E.tree_structure(tree) == E.tree_structure(E.tree_unflatten(leaves, spec))) is True
    if leaves:
        with pytest.raises(ValueError):
            P.tree_unflatten(leaves[:-1], t_spec)
        with pytest.raises(ValueError):
            E.tree_unflatten(leaves[:-1], spec)


@pytest.mark.parametrize("fn", [
    lambda P: P.tree_map(lambda a, b: a + b, [1, 2], [1]),           # arity
    lambda P: P.tree_map(lambda a, b: a + b, [1, 2], (1, 2)),        # node type
    lambda P: P.tree_map(lambda a, b: a + b, {"a": 1}, {"b": 1}),     # keys
])
def test_pytree_structure_mismatch_raises_as_torch(fn):
    P = pytest.importorskip("torch.utils._pytree")
    from ember._torch_c import pytree as E
    with pytest.raises(Exception) as t_err:
        fn(P)
    with pytest.raises(t_err.type):
        fn(E)


def test_pytree_subtree_arguments_and_is_leaf_as_torch():
    P = pytest.importorskip("torch.utils._pytree")
    from ember._torch_c import pytree as E
    for M in (P, E):
        assert M.tree_map(lambda a, b: (a, b), [1, 2], [[1], {"q": 3}]) == [(1, [1]),
                                                                            (2, {"q": 3})]
    is_dict = lambda x: isinstance(x, dict)  # noqa: E731
    assert E.tree_leaves([1, {"a": 2}], is_leaf=is_dict) == P.tree_leaves([1, {"a": 2}],
                                                                         is_leaf=is_dict)
    assert E.tree_all(lambda x: x > 0, [1, (2,)]) and not E.tree_any(lambda x: x > 5, [1, (2,)])
    assert (E.tree_structure([1, 2]) == E.tree_structure((1, 2))) is (
        P.tree_structure([1, 2]) == P.tree_structure((1, 2)))


def test_torch_c_shim_names():
    from ember._torch_c import C
    assert C._log_api_usage_once("x") is None and C._get_tracing_state() is None
    assert C._are_functorch_transforms_active() is False
    with pytest.raises(AttributeError, match=r"torch\._C\._jit_pass_inline"):
        C._jit_pass_inline


def test_alias_resolves_the_private_shims(tmp_path):
    script = tmp_path / "p.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch._C
        import torch.utils._pytree as P
        from torch.utils import _pytree
        import ember._torch_c as shim
        import ember.as_torch
        assert torch._C is shim.C and P is _pytree is shim.pytree
        assert torch._C._log_api_usage_once("probe") is None
        try:
            torch._C._jit_pass_inline
        except AttributeError as e:
            assert "torch._C._jit_pass_inline" in str(e)
        else:
            raise AssertionError("torch._C._jit_pass_inline resolved")
        try:
            import torch._export  # noqa: F401
        except ModuleNotFoundError as e:
            assert "torch._export" in str(e)
        else:
            raise AssertionError("torch._export imported")
        import torch._dynamo
        import torch._inductor.config
        assert torch._dynamo.reset is ember._dynamo.reset
        assert torch._inductor.config is ember._inductor.config
        ember.as_torch.uninstall()
        assert not [n for n in sys.modules if n == "torch" or n.startswith("torch.")]
        print("ok")
    """))
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
