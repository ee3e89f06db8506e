"""Complex dtypes and ember.fft against PyTorch (the oracle): values, dtypes, shapes,
errors and gradients."""
import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.defs import spectral as SP

RNG = np.random.default_rng(7)


def _arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _carr(*shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _both(a, requires_grad=False):
    e = ember.tensor(a)
    t = torch.tensor(a)
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


def _close(e, t, rtol=2e-5, atol=2e-5):
    t = t.detach().resolve_conj()
    assert str(e.dtype).replace("ember.", "") == str(t.dtype).replace("torch.", "")
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.numpy(), rtol=rtol, atol=atol)


# ---- dtypes and promotion ---------------------------------------------------------------------
@pytest.mark.parametrize("a", ["float32", "float64", "complex64", "complex128", "int64", "float16"])
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_promote_types(a, b):
    assert (ember.promote_types(getattr(ember, a), getattr(ember, b)).name
            == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1])


@pytest.mark.parametrize("dt", ["float32", "float64", "int64"])
def test_result_type_with_complex_scalar(dt):
    e = ember.ones(2, dtype=getattr(ember, dt)) * 1j
    t = torch.ones(2, dtype=getattr(torch, dt)) * 1j
    _close(e, t)


def test_dtype_names_and_predicates():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert ember.complex128.itemsize == torch.complex128.itemsize
    z = ember.tensor([1 + 2j])
    assert z.is_complex() and ember.is_complex(z) and not ember.tensor([1.]).is_complex()
    assert ember.tensor([1 + 2j]).dtype is ember.complex64
    assert ember.tensor(np.array([1j])).dtype is ember.complex128


@pytest.mark.parametrize("data", [[1 + 2j, 3 - 1j], [[1.5 + 2j, -3e-5 - 1j], [0j, 1j]],
                                  1 + 2j, [0.25 + 1e6j, -2j]])
@pytest.mark.parametrize("dtype", [None, "complex128"])
def test_repr_matches_pytorch(data, dtype):
    e = ember.tensor(data, dtype=getattr(ember, dtype) if dtype else None)
    t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_numpy_item_tolist_roundtrip():
    a = _carr(3, 2)
    e = ember.from_numpy(a)
    e[0, 0] = 5 - 5j                       # (shares memory, as PyTorch's)
    assert a[0, 0] == 5 - 5j
    assert e.tolist() == torch.from_numpy(a).tolist()
    assert e[1, 1].item() == complex(a[1, 1])
    np.testing.assert_array_equal(e.numpy(), a)


# ---- elementwise ---------------------------------------------------------------------------
UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "abs",
         "angle", "sgn", "reciprocal", "neg", "conj", "log10", "log2", "rsqrt", "expm1",
         "log1p", "isnan", "isfinite", "isinf", "conj_physical"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unary(name, dtype):
    e, t = _both(_carr(4, 3, dtype=dtype))
    _close(getattr(ember, name)(e), getattr(torch, name)(t), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "eq", "ne", "pow"])
def test_binary_complex_real_and_scalars(name):
    (ea, ta), (eb, tb) = _both(_carr(3, 4)), _both(_carr(4))
    (er, tr) = _both(_arr(3, 1))
    fe, ft = getattr(ember, name), getattr(torch, name)
    _close(fe(ea, eb), ft(ta, tb), rtol=1e-4)
    _close(fe(ea, er), ft(ta, tr), rtol=1e-4)
    _close(fe(er, ea), ft(tr, ta), rtol=1e-4)
    for s in (2, 0.5, 1 - 2j):
        _close(fe(ea, s), ft(ta, s), rtol=1e-4)


def test_operators_and_inplace():
    (ea, ta), (eb, tb) = _both(_carr(5)), _both(_carr(5))
    _close(2j * ea - eb / (1 + 1j) + ea ** 2, 2j * ta - tb / (1 + 1j) + ta ** 2, rtol=1e-4)
    ea.mul_(eb).add_(1j)
    ta.mul_(tb).add_(1j)
    _close(ea, ta)
    with pytest.raises(RuntimeError):
        ember.ones(2).add_(ember.tensor([1j, 2j]))


def test_sign_and_ordering_are_refused_as_pytorch():
    z = ember.tensor([1 + 1j])
    for f in (lambda: z < z, lambda: ember.sign(z), lambda: ember.maximum(z, z)):
        with pytest.raises(RuntimeError):
            f()


# ---- views, parts, construction -----------------------------------------------------------
def test_view_as_real_complex_share_memory():
    e, t = _both(_arr(3, 2))
    ez, tz = ember.view_as_complex(e), torch.view_as_complex(t)
    _close(ez, tz)
    ez.imag.mul_(-2)
    tz.imag.mul_(-2)
    _close(e, t)
    _close(ember.view_as_real(ez), torch.view_as_real(tz))
    _close(ez.real, tz.real)
    ez.real = ember.tensor([1., 2., 3.])
    tz.real = torch.tensor([1., 2., 3.])
    _close(e, t)


@pytest.mark.parametrize("make", [
    lambda m: m.view_as_complex(m.ones(3, 3)),
    lambda m: m.view_as_complex(m.ones(2, 4)[:, ::2]),
    lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.int64)),
    lambda m: m.view_as_real(m.ones(2)),
    lambda m: m.tensor([1.]).imag,
])
def test_view_errors(make):
    with pytest.raises(RuntimeError) as te:
        make(torch)
    with pytest.raises(RuntimeError) as ee:
        make(ember)
    assert str(ee.value).split("\n")[0][:30] == str(te.value).split("\n")[0][:30]


def test_complex_polar_casts():
    (er, tr), (ei, ti) = _both(_arr(4)), _both(_arr(4))
    _close(ember.complex(er, ei), torch.complex(tr, ti))
    _close(ember.polar(er.abs(), ei), torch.polar(tr.abs(), ti))
    _close(ember.complex(er, ei).to(ember.complex128), torch.complex(tr, ti).to(torch.complex128))
    _close(er.to(ember.complex64), tr.to(torch.complex64))
    from ember.dispatcher import complex_ops
    complex_ops._WARNED[0] = False      # (once per process, as PyTorch: earlier tests warn)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        re = ember.complex(er, ei).to(ember.float32)
    _close(re, tr)
    _close(ember.zeros(2, dtype=ember.cfloat), torch.zeros(2, dtype=torch.cfloat))
    _close(ember.full((2,), 1 - 1j), torch.full((2,), 1 - 1j))
    r = ember.randn(20000, dtype=ember.complex64)
    assert r.dtype is ember.complex64
    assert abs(r.real.var().item() - 0.5) < 0.03 and abs(r.imag.var().item() - 0.5) < 0.03


def test_reductions_joins_indexing_products():
    (ea, ta), (eb, tb) = _both(_carr(3, 4)), _both(_carr(4, 2))
    _close(ea.sum(), ta.sum(), rtol=1e-5)
    _close(ea.mean(1), ta.mean(1), rtol=1e-5)
    _close(ember.cat([ea, ea * 2]), torch.cat([ta, ta * 2]))
    _close(ember.stack([ea, ea], 1), torch.stack([ta, ta], 1))
    _close(ea[ember.tensor([2, 0])], ta[torch.tensor([2, 0])])
    _close(ea.flip(0).T.contiguous(), ta.flip(0).T.contiguous())
    _close(ember.where(ea.real > 0, ea, 0.), torch.where(ta.real > 0, ta, 0.))
    _close(ea @ eb, ta @ tb, rtol=1e-4)
    _close(ea @ eb[:, 0], ta @ tb[:, 0], rtol=1e-4)
    (ec, tc) = _both(_carr(2, 3, 4))
    _close(ec @ eb, tc @ tb, rtol=1e-4)
    (er, tr) = _both(_arr(4, 2))
    for x, y in ((ea, er), (ta, tr)):   # (no promotion in products, as PyTorch)
        with pytest.raises(RuntimeError, match="same dtype"):
            x @ y
    _close(ea.mH, ta.mH)
    _close(ember.adjoint(ea), torch.adjoint(ta))


# ---- autograd ------------------------------------------------------------------------------
W = _carr(3)
GRAD_CASES = {
    "mul_abs": lambda m, z: (z * m.tensor(W)).abs().sum(),
    "div": lambda m, z: (m.tensor(W) / z).real.sum(),
    "exp": lambda m, z: z.exp().imag.sum(),
    "conj": lambda m, z: (z * z.conj()).real.sum(),
    "sqrt": lambda m, z: z.sqrt().abs().sum(),
    "log": lambda m, z: (z.log() * m.tensor(W)).real.sum(),
    "matmul": lambda m, z: (m.outer(z, m.tensor(W)) @ z).abs().sum(),
    "angle": lambda m, z: z.angle().sum(),
    "pow": lambda m, z: (z ** 3).imag.sum(),
    "tanh": lambda m, z: z.tanh().real.sum() + z.sigmoid().imag.sum(),
    "cat_flip": lambda m, z: m.cat([z, z * 2]).flip(0)[1:].abs().sum(),
    "real_to_complex": lambda m, z: (z.real.to(m.complex64) * m.tensor(W)).imag.sum(),
    "complex": lambda m, z: m.complex(z.real * 2, z.imag).abs().sum(),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients(case):
    e, t = _both(_carr(3), requires_grad=True)
    le, lt = GRAD_CASES[case](ember, e), GRAD_CASES[case](torch, t)
    le.backward()
    lt.backward()
    _close(le, lt, rtol=1e-4)
    _close(e.grad, t.grad, rtol=1e-4, atol=1e-5)


def _rotary(m, xq, freqs_cis):
    # LLaMA's apply_rotary_emb, as the public model code writes it
    xq_ = m.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    return m.view_as_real(xq_ * fc).flatten(3).type_as(xq)


def test_rotary_embedding_forward_backward():
    a = _arr(2, 5, 3, 8)
    res = []
    for m in (ember, torch):
        freqs = 1.0 / (10000 ** (m.arange(0, 8, 2)[:4].float() / 8))
        freqs = m.outer(m.arange(5, dtype=m.float32), freqs)
        freqs_cis = m.polar(m.ones_like(freqs), freqs)
        xq = m.tensor(a, requires_grad=True)
        out = _rotary(m, xq, freqs_cis)
        (out * out.sin()).sum().backward()
        res.append((out, xq.grad))
    _close(res[0][0], res[1][0])
    _close(res[0][1], res[1][1])


# ---- ember.fft -----------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 5, 8, 64, 65, 100, 131, 256, 1000, 278])
def test_fft_lengths(n):
    e, t = _both(_arr(2, n))
    tol = dict(rtol=1e-4, atol=1e-4 * np.sqrt(n))
    _close(ember.fft.fft(e), torch.fft.fft(t), **tol)
    _close(ember.fft.ifft(ember.fft.fft(e)).real, t, **tol)
    _close(ember.fft.irfft(ember.fft.rfft(e), n=n), torch.fft.irfft(torch.fft.rfft(t), n=n),
           **tol)


@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("n", [None, 6, 11])
def test_fft_1d(fn, norm, n):
    real_in = fn in ("rfft", "ihfft")
    e, t = _both(_arr(3, 9) if real_in else _carr(3, 9))
    _close(getattr(ember.fft, fn)(e, n=n, dim=0 if n == 6 else -1, norm=norm),
           getattr(torch.fft, fn)(t, n=n, dim=0 if n == 6 else -1, norm=norm), rtol=1e-4,
           atol=1e-5)


@pytest.mark.parametrize("fn", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn",
                                "irfftn", "hfft2", "hfftn", "ihfft2", "ihfftn"])
@pytest.mark.parametrize("kw", [{}, {"s": (4, 6)}, {"dim": (0, 2)}, {"norm": "ortho"}])
def test_fft_nd(fn, kw):
    real_in = fn.startswith("rfft") or fn.startswith("ihfft")
    e, t = _both(_arr(3, 5, 7) if real_in else _carr(3, 5, 7))
    _close(getattr(ember.fft, fn)(e, **kw), getattr(torch.fft, fn)(t, **kw), rtol=1e-4,
           atol=1e-4)


def test_fft_dtypes_and_helpers():
    _close(ember.fft.fft(ember.tensor([1, 2, 3])), torch.fft.fft(torch.tensor([1, 2, 3])))
    e, t = _both(_arr(4, 9, dtype=np.float64))
    _close(ember.fft.rfft(e), torch.fft.rfft(t), rtol=1e-12, atol=1e-12)
    for n, d in ((5, 1.0), (6, 0.1), (1, 2.0)):
        _close(ember.fft.fftfreq(n, d), torch.fft.fftfreq(n, d))
        _close(ember.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d))
    _close(ember.fft.fftfreq(4, dtype=ember.float64), torch.fft.fftfreq(4, dtype=torch.float64))
    e, t = _both(_arr(3, 5))
    for dim in (None, 0, (-1,)):
        _close(ember.fft.fftshift(e, dim), torch.fft.fftshift(t, dim))
        _close(ember.fft.ifftshift(e, dim), torch.fft.ifftshift(t, dim))


def test_fft_errors_as_pytorch():
    e, t = _both(_carr(4))
    for f in (lambda m, x: m.fft.fft(x, n=0), lambda m, x: m.fft.rfft(x),
              lambda m, x: m.fft.fft(m.zeros(0)), lambda m, x: m.fft.irfft(x[:1]),
              lambda m, x: m.fft.fft(x, norm="bad")):
        with pytest.raises(RuntimeError) as te:
            f(torch, t)
        with pytest.raises(RuntimeError) as ee:
            f(ember, e)
        assert str(ee.value) == str(te.value)


def test_fft_gradients():
    a, c = _arr(4, 12), _carr(3, 70)
    grads = []
    for m in (ember, torch):
        w = m.tensor(a, requires_grad=True)
        z = m.tensor(c, requires_grad=True)
        F = m.fft
        loss = ((F.rfft(w, norm="ortho").abs() ** 2).sum()
                + F.irfft(F.fft(w)[..., :7] * 1j, n=12).sin().sum() + F.fft2(w).real.sum()
                + (F.ifft(z) * F.fft(z, n=131)[..., :70]).abs().sum()
                + F.hfft(z[:, :5], n=8).sum() + F.ihfft(w).abs().sum())
        loss.backward()
        grads.append((w.grad, z.grad))
    _close(grads[0][0], grads[1][0], rtol=1e-4, atol=1e-4)
    _close(grads[0][1], grads[1][1], rtol=1e-4, atol=1e-4)


def test_inplace_under_autograd():
    grads = []
    for m in (ember, torch):
        z = m.tensor([1 + 1j, 2j], requires_grad=True)
        w = z * 2
        w.add_(1j)
        w.abs().sum().backward()
        grads.append(z.grad)
    _close(grads[0], grads[1])
    z = ember.tensor([1 + 1j, 2j], requires_grad=True)
    with pytest.raises(NotImplementedError, match="in-place write"):
        (z * 2).real.mul_(2)   # (PyTorch supports it; ember refuses rather than guess)


# ---- stft / istft ----------------------------------------------------------------------------
STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=5, normalized=True),
    dict(n_fft=20, hop_length=6, win_length=12, center=False),
    dict(n_fft=16, pad_mode="constant", onesided=False),
]


@pytest.mark.parametrize("kw", STFT_CASES)
@pytest.mark.parametrize("batched", [False, True])
def test_stft(kw, batched):
    a = _arr(2, 90) if batched else _arr(100)
    res = []
    for m in (ember, torch):
        w = m.hamming_window(kw.get("win_length", kw["n_fft"]))
        x = m.tensor(a, requires_grad=True)
        s = m.stft(x, window=w, return_complex=True, **kw)
        s.abs().pow(2).sum().backward()
        res.append((s, x.grad))
    _close(res[0][0], res[1][0], rtol=1e-4, atol=1e-4)
    _close(res[0][1], res[1][1], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kw", [dict(), dict(length=95), dict(onesided=False, return_complex=True),
                                dict(normalized=True), dict(center=False)])
def test_istft(kw):
    a = _arr(2, 90)
    outs = []
    for m in (ember, torch):
        # (a Hann window has zeros at the ends: without centring it fails NOLA there)
        w = m.hann_window(16) if kw.get("center", True) else m.hamming_window(16)
        s = m.stft(m.tensor(a), 16, hop_length=4, window=w, return_complex=True,
                   onesided=kw.get("onesided") is not False,
                   normalized=kw.get("normalized", False),
                   center=kw.get("center", True))
        outs.append(m.istft(s, 16, hop_length=4, window=w, **kw))
    _close(outs[0], outs[1], rtol=1e-4, atol=1e-5)


def test_stft_errors_and_warnings():
    x = ember.randn(64)
    with pytest.raises(RuntimeError, match="return_complex"):
        with pytest.warns(UserWarning, match="window was not provided"):
            ember.stft(x, 16)
    for m in (ember, torch):     # (NOLA: the Hann window's zeros at an uncentred edge)
        w = m.hann_window(16)
        s = m.stft(m.randn(2, 90), 16, 4, window=w, return_complex=True, center=False)
        with pytest.raises(RuntimeError, match="window overlap add min"):
            m.istft(s, 16, 4, window=w, center=False)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = ember.stft(x, 16, window=ember.hann_window(16), return_complex=False)
    assert r.shape == torch.stft(torch.randn(64), 16, window=torch.hann_window(16),
                                 return_complex=False).shape


@pytest.mark.parametrize("n", [1, 6, 64, 96, 131, 1000])
@pytest.mark.parametrize("sign", [-1, 1])
def test_fft_pairs_kernel_and_composite(n, sign):
    """The cpu kernel and the composite other devices run (DFT matrices, Cooley-Tukey,
    Bluestein) against torch.fft."""

    c = _carr(3, n)
    want = (torch.fft.fft(torch.tensor(c)) if sign < 0
            else torch.fft.ifft(torch.tensor(c), norm="forward"))
    pairs = ember.view_as_real(ember.tensor(c)).contiguous()
    for got in (SP.fft_pairs(pairs, sign), SP._fft_pairs_composite(pairs, sign)):
        _close(ember.view_as_complex(got), want, rtol=1e-4, atol=1e-4 * np.sqrt(n))


@pytest.mark.parametrize("n", [1, 2, 9, 64, 100, 131, 1024])
def test_rfft_real_kernel_and_composite(n):
    a = _arr(3, n)
    want = torch.fft.rfft(torch.tensor(a))
    for got in (SP.rfft_real(ember.tensor(a)), SP._rfft_real_composite(ember.tensor(a))):
        _close(ember.view_as_complex(got), want, rtol=1e-4, atol=1e-4 * np.sqrt(n))


def test_dlpack_both_ways():
    a = _carr(3, 2, dtype=np.complex128)
    t = torch.from_dlpack(ember.from_numpy(a))
    assert t.dtype == torch.complex128
    np.testing.assert_array_equal(t.numpy(), a)
    e = ember.from_dlpack(torch.tensor(a).to(torch.complex64))
    assert e.dtype is ember.complex64
    np.testing.assert_array_equal(e.numpy(), a.astype(np.complex64))


@pytest.mark.parametrize("call", [
    "x.nonzero()", "L.argwhere(x)", "L.nonzero(x, as_tuple=True)[0]",
    "x.reshape(1, 5).nonzero()", "x.to(L.complex32).nonzero()",
    "x.index_fill(0, L.tensor([0]), 2)", "x.index_fill(0, L.tensor([2, 4]), 1 - 1j)",
    "x.to(L.complex32).index_fill(0, L.tensor([1]), 3).to(L.complex64)",
])
def test_nonzero_and_index_fill_of_complex_as_pytorch(call):
    got = []
    for L in (torch, ember):
        x = L.tensor([0j, 1 + 0j, 1j, 0j, 2 + 2j])
        got.append(eval(call, {"L": L, "x": x}).tolist())  # noqa: S307 - the calls above
    assert got[1] == got[0]
