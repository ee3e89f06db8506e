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


np.savez(sys.argv[1], **RESULTS)
'''

PACKAGES = ["torchmetrics", "torch_optimizer", "ema_pytorch", "rotary_embedding_torch",
            "pytorch_metric_learning", "einx", "x_transformers", "torch_optimizer_adahessian",
            "lion_pytorch", "torch_optimizer_ranger", "vector_quantize_pytorch", "kornia"]

# sections that fail on ember for a public PyTorch name or behaviour ember lacks, with the
# text the failure must name. When one starts passing, move it to PACKAGES.
BLOCKED = {
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("torch")
    missing = [p for p in (*PACKAGES, *BLOCKED) if not p.startswith("torch_optimizer_")
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
