"""Autocast on cpu against PyTorch, from a table: every op on PyTorch's CPU lists (lower
precision, float32, promote) that ember has is called the way PyTorch's docs call it, on
float32 and on bfloat16 inputs, under ``autocast("cpu")`` in both libraries, and the
result dtypes must agree. Then a training step of the demo's digits CNN under autocast
gives PyTorch's losses within bfloat16's tolerance."""
import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import autocast as AC

R = np.random.default_rng(0)


def arr(*shape, pos=False):
    a = R.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if pos else a


def spd(n):
    a = R.standard_normal((n, n)).astype(np.float32)
    return a @ a.T + n * np.eye(n, dtype=np.float32)


A33, B33, A233, V3 = arr(3, 3), arr(3, 3), arr(2, 3, 3), arr(3)
IMG1, IMG2, IMG3 = arr(1, 2, 8), arr(1, 2, 6, 6), arr(1, 2, 4, 4, 4)
K1, K2, K3 = arr(3, 2, 3), arr(3, 2, 3, 3), arr(3, 2, 2, 2, 2)
P33, SPD = arr(3, 3, pos=True), spd(3)
LOGITS, TARGET = arr(4, 5), np.array([1, 0, 4, 2])
_lp = arr(6, 1, 4)
LOGP = (_lp - np.log(np.exp(_lp).sum(-1, keepdims=True))).astype(np.float32)
Q, W_IN, B_IN, W_OUT, B_OUT = arr(2, 1, 4), arr(12, 4), arr(12), arr(4, 4), arr(4)

# name -> call(T, F, t) on the library T (ember or torch), its functional module F, and
# t(numpy array) making a tensor of the input dtype under test
CASES = {
    # lower precision
    "conv1d": lambda T, F, t: F.conv1d(t(IMG1), t(K1)),
    "conv2d": lambda T, F, t: F.conv2d(t(IMG2), t(K2)),
    "conv3d": lambda T, F, t: F.conv3d(t(IMG3), t(K3)),
    "conv_transpose1d": lambda T, F, t: F.conv_transpose1d(t(IMG1), t(K1.transpose(1, 0, 2))),
    "conv_transpose2d": lambda T, F, t: F.conv_transpose2d(t(IMG2),
                                                           t(K2.transpose(1, 0, 2, 3))),
    "conv_transpose3d": lambda T, F, t: F.conv_transpose3d(t(IMG3),
                                                           t(K3.transpose(1, 0, 2, 3, 4))),
    "bmm": lambda T, F, t: T.bmm(t(A233), t(A233)),
    "mm": lambda T, F, t: T.mm(t(A33), t(B33)),
    "linalg_vecdot": lambda T, F, t: T.linalg.vecdot(t(A33), t(B33)),
    "baddbmm": lambda T, F, t: T.baddbmm(t(A233), t(A233), t(A233)),
    "addmm": lambda T, F, t: T.addmm(t(A33), t(A33), t(B33)),
    "addbmm": lambda T, F, t: T.addbmm(t(A33), t(A233), t(A233)),
    "linear": lambda T, F, t: F.linear(t(A33), t(B33)),
    "matmul": lambda T, F, t: T.matmul(t(A33), t(B33)),
    "prelu": lambda T, F, t: F.prelu(t(A33), t(np.array([0.25], np.float32))),
    "scaled_dot_product_attention": lambda T, F, t: F.scaled_dot_product_attention(
        t(A233), t(A233), t(A233)),
    "multi_head_attention_forward": lambda T, F, t: F.multi_head_attention_forward(
        t(Q), t(Q), t(Q), 4, 2, t(W_IN), t(B_IN), None, None, False, 0.0, t(W_OUT),
        t(B_OUT), training=False)[0],
    # float32
    "avg_pool3d": lambda T, F, t: F.avg_pool3d(t(IMG3), 2),
    "binary_cross_entropy": lambda T, F, t: F.binary_cross_entropy(
        t(1 / (1 + np.exp(-A33))), t((B33 > 0).astype(np.float32))),
    "grid_sampler": lambda T, F, t: F.grid_sample(t(IMG2), t(arr(1, 2, 2, 2) * 0.5),
                                                  align_corners=False),
    "polar": lambda T, F, t: T.polar(t(P33), t(A33)),
    "prod": lambda T, F, t: T.prod(t(A33)),
    "quantile": lambda T, F, t: T.quantile(t(A33), 0.3),
    "nanquantile": lambda T, F, t: T.nanquantile(t(A33), 0.3),
    "cdist": lambda T, F, t: T.cdist(t(A33), t(B33)),
    "trace": lambda T, F, t: T.trace(t(A33)),
    "view_as_complex": lambda T, F, t: T.view_as_complex(t(arr(3, 2))),
    "cholesky": lambda T, F, t: T.linalg.cholesky(t(SPD)),
    "cholesky_inverse": lambda T, F, t: T.cholesky_inverse(t(np.linalg.cholesky(SPD))),
    "cholesky_solve": lambda T, F, t: T.cholesky_solve(t(A33), t(np.linalg.cholesky(SPD))),
    "inverse": lambda T, F, t: T.inverse(t(SPD)),
    "pinverse": lambda T, F, t: T.pinverse(t(A33)),
    "max_pool3d": lambda T, F, t: F.max_pool3d(t(IMG3), 2),
    "max_unpool2d": lambda T, F, t: F.max_unpool2d(
        *F.max_pool2d(t(IMG2), 2, return_indices=True), 2),
    "max_unpool3d": lambda T, F, t: F.max_unpool3d(
        *F.max_pool3d(t(IMG3), 2, return_indices=True), 2),
    "ctc_loss": lambda T, F, t: F.ctc_loss(t(LOGP), T.tensor([[1, 2]]), T.tensor([6]),
                                           T.tensor([2])),
    "orgqr": lambda T, F, t: T.orgqr(t(A33), t(V3[:2].copy())),
    "ormqr": lambda T, F, t: T.ormqr(t(A33), t(V3), t(B33)),
    "geqrf": lambda T, F, t: T.geqrf(t(A33))[0],
    "adaptive_avg_pool3d": lambda T, F, t: F.adaptive_avg_pool3d(t(IMG3), 2),
    "reflection_pad1d": lambda T, F, t: F.pad(t(IMG1), (1, 1), mode="reflect"),
    "reflection_pad2d": lambda T, F, t: F.pad(t(IMG2), (1, 1, 1, 1), mode="reflect"),
    "replication_pad1d": lambda T, F, t: F.pad(t(IMG1), (1, 1), mode="replicate"),
    "replication_pad2d": lambda T, F, t: F.pad(t(IMG2), (1, 1, 1, 1), mode="replicate"),
    "replication_pad3d": lambda T, F, t: F.pad(t(IMG3), (1,) * 6, mode="replicate"),
    "mse_loss": lambda T, F, t: F.mse_loss(t(A33), t(B33)),
    "cosine_embedding_loss": lambda T, F, t: F.cosine_embedding_loss(
        t(A33), t(B33), T.tensor([1, -1, 1])),
    "nll_loss": lambda T, F, t: F.nll_loss(t(LOGITS), T.tensor(TARGET)),
    "hinge_embedding_loss": lambda T, F, t: F.hinge_embedding_loss(
        t(A33), t(np.sign(B33))),
    "poisson_nll_loss": lambda T, F, t: F.poisson_nll_loss(t(A33), t(P33)),
    "smooth_l1_loss": lambda T, F, t: F.smooth_l1_loss(t(A33), t(B33)),
    "cross_entropy": lambda T, F, t: F.cross_entropy(t(LOGITS), T.tensor(TARGET)),
    "l1_loss": lambda T, F, t: F.l1_loss(t(A33), t(B33)),
    "huber_loss": lambda T, F, t: F.huber_loss(t(A33), t(B33)),
    "margin_ranking_loss": lambda T, F, t: F.margin_ranking_loss(t(V3), t(V3[::-1].copy()),
                                                                 t(np.sign(V3))),
    "soft_margin_loss": lambda T, F, t: F.soft_margin_loss(t(A33), t(np.sign(B33))),
    "triplet_margin_loss": lambda T, F, t: F.triplet_margin_loss(t(A33), t(B33), t(P33)),
    "multi_margin_loss": lambda T, F, t: F.multi_margin_loss(t(LOGITS), T.tensor(TARGET)),
    "kl_div": lambda T, F, t: F.kl_div(t(np.log(P33)), t(P33 / P33.sum()),
                                       reduction="batchmean"),
    "multilabel_margin_loss": lambda T, F, t: F.multilabel_margin_loss(
        t(A33), T.tensor([[1, -1, 0], [0, 2, -1], [2, 1, 0]])),
    "binary_cross_entropy_with_logits": lambda T, F, t: F.binary_cross_entropy_with_logits(
        t(A33), t((B33 > 0).astype(np.float32))),
    "linalg_cond": lambda T, F, t: T.linalg.cond(t(SPD)),
    "linalg_matrix_rank": lambda T, F, t: T.linalg.matrix_rank(t(A33)),
    "linalg_solve": lambda T, F, t: T.linalg.solve(t(SPD), t(A33)),
    "linalg_cholesky": lambda T, F, t: T.linalg.cholesky(t(SPD)),
    "linalg_svdvals": lambda T, F, t: T.linalg.svdvals(t(A33)),
    "linalg_eigvals": lambda T, F, t: T.linalg.eigvals(t(SPD)),
    "linalg_eigvalsh": lambda T, F, t: T.linalg.eigvalsh(t(SPD)),
    "linalg_inv": lambda T, F, t: T.linalg.inv(t(SPD)),
    "linalg_householder_product": lambda T, F, t: T.linalg.householder_product(
        t(A33), t(V3[:2].copy())),
    "linalg_tensorinv": lambda T, F, t: T.linalg.tensorinv(t(spd(4).reshape(4, 2, 2)),
                                                          ind=1),
    "linalg_tensorsolve": lambda T, F, t: T.linalg.tensorsolve(t(SPD), t(V3)),
    "linalg_eig": lambda T, F, t: T.linalg.eig(t(SPD))[1],
    "linalg_eigh": lambda T, F, t: T.linalg.eigh(t(SPD))[1],
    "linalg_qr": lambda T, F, t: T.linalg.qr(t(A33))[0],
    "linalg_svd": lambda T, F, t: T.linalg.svd(t(A33))[0],
    "linalg_lstsq": lambda T, F, t: T.linalg.lstsq(t(SPD), t(A33)).solution,
    "linalg_det": lambda T, F, t: T.linalg.det(t(SPD)),
    "linalg_slogdet": lambda T, F, t: T.linalg.slogdet(t(SPD))[1],
    "linalg_inv_ex": lambda T, F, t: T.linalg.inv_ex(t(SPD))[0],
    "linalg_lu_factor": lambda T, F, t: T.linalg.lu_factor(t(SPD))[0],
    "linalg_lu": lambda T, F, t: T.linalg.lu(t(SPD))[1],
    "linalg_lu_solve": lambda T, F, t: T.linalg.lu_solve(
        *(lambda lu: (t(lu[0].numpy() if hasattr(lu[0], "numpy") else lu[0]), lu[1]))(
            T.linalg.lu_factor(T.tensor(SPD))), t(A33)),
    "linalg_matrix_exp": lambda T, F, t: T.linalg.matrix_exp(t(A33 * 0.1)),
    # promote (mixed float32 / lower-precision inputs: the widest)
    "stack": lambda T, F, t: T.stack([t(A33), T.tensor(B33)]),
    "cat": lambda T, F, t: T.cat([t(A33), T.tensor(B33)]),
    "index_copy": lambda T, F, t: T.tensor(A33).index_copy(0, T.tensor([2, 0]),
                                                           t(B33[:2].copy())),
}

#: entries of PyTorch's CPU lists with no public function of that name in ember (nll_loss2d,
#: convolution, lu_solve and the fake-quantize op are
#: PyTorch internals or deprecated spellings): the test checks that each really is
#: missing, so none hides a failure
MISSING = {
    "lu_solve", "nll_loss2d", "fake_quantize_per_tensor_affine", "convolution",
}
# torch.fft's transforms (float32 lists): real and complex inputs alike
for _n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft"):
    CASES["fft_" + _n] = (lambda n: lambda T, F, t: getattr(T.fft, n)(t(A233)))(_n)
del _n
CASES["stft"] = lambda T, F, t: T.stft(t(arr(40)), 8, window=t(np.hanning(8).astype(np.float32)),
                                       return_complex=True)


def _listed():
    return sorted(AC.LOWER["cpu"] | AC.FP32["cpu"] | AC.PROMOTE["cpu"])


def _exists(name) -> bool:
    if name.startswith("fft_"):
        return hasattr(getattr(ember, "fft", None), name[4:])
    return any(hasattr(m, name) for m in (ember, ember.nn.functional, ember.linalg))


def test_every_listed_op_has_a_case_or_is_missing_from_ember():
    assert set(_listed()) == set(CASES) | MISSING
    # (convolution and lu_solve exist as ember names but not with these entries' meaning:
    # PyTorch's internal convolution op, the deprecated torch.lu_solve)
    present = {n for n in MISSING if _exists(n)} - {"convolution", "lu_solve"}
    assert present == set(), f"these exist now: give them a case ({present})"


def _run(T, F, call, dtype):
    tdt = getattr(T, dtype)
    with T.autocast("cpu"):
        out = call(T, F, lambda a: T.tensor(a).to(tdt))
    return str(out.dtype).split(".")[-1]


#: entries whose results are complex: ember has no complex dtypes yet, and says so
COMPLEX = {"linalg_eig", "linalg_eigvals"}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(set(CASES) - COMPLEX))
def test_result_dtype_under_autocast_matches_torch(name, dtype):
    """The dtype PyTorch gives, or an error where PyTorch raises (a bfloat16 input that
    PyTorch's autocast lets through to a float-only kernel)."""
    call = CASES[name]
    try:
        expected = _run(torch, torch.nn.functional, call, dtype)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            _run(ember, ember.nn.functional, call, dtype)
        return
    assert _run(ember, ember.nn.functional, call, dtype) == expected


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_results_are_refused_with_a_reason(name):
    with pytest.raises((NotImplementedError, AttributeError)):
        _run(ember, ember.nn.functional, CASES[name], "float32")


def test_digits_cnn_step_under_autocast_matches_torch():
    """The demo's CNN, same weights and batch, SGD: three steps under autocast("cpu",
    bfloat16) give PyTorch's losses within bfloat16's precision."""
    import sys
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parity"))
    from test_training_parity import make_cnn
    torch.manual_seed(0)
    tm = make_cnn(torch.nn, torch.nn.functional)
    em = make_cnn(ember.nn, ember.nn.functional)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    x = R.standard_normal((32, 1, 8, 8)).astype(np.float32)
    y = R.integers(0, 10, 32)
    losses = []
    for T, F, m in ((torch, torch.nn.functional, tm), (ember, ember.nn.functional, em)):
        opt = T.optim.SGD(m.parameters(), lr=0.05)
        out = []
        for _ in range(3):
            opt.zero_grad()
            with T.autocast("cpu", dtype=T.bfloat16):
                logits = m(T.tensor(x))
                loss = F.cross_entropy(logits, T.tensor(y))
            assert str(logits.dtype).endswith("bfloat16") and str(loss.dtype).endswith(
                "float32")
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses.append(out)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-2)


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 2, 3), (3, 4)),
                                    ((2, 3), (3,))])
@pytest.mark.parametrize("low_first", [True, False])
def test_matmul_operator_casts_mixed_operands_like_torch(shapes, low_first):
    """``a @ b`` is autocast's matmul entry, as ``torch.matmul`` is: a bfloat16 activation
    times float32 weights is a bfloat16 product, not a dtype-mismatch error."""
    a = R.standard_normal(shapes[0]).astype(np.float32)
    b = R.standard_normal(shapes[1]).astype(np.float32)
    outs = []
    for T in (torch, ember):
        x, y = T.tensor(a), T.tensor(b)
        x, y = (x.bfloat16(), y) if low_first else (x, y.bfloat16())
        with T.autocast("cpu", dtype=T.bfloat16):
            z = x @ y
            assert str(z.dtype).split(".")[-1] == "bfloat16"
            assert str(y.__rmatmul__(x).dtype).split(".")[-1] == "bfloat16"
        outs.append(z.float().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-2, atol=1e-2)
