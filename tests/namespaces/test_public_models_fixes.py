"""Behaviour public model code relies on (openai/whisper, openai/CLIP, segment-anything,
mamba-minimal, makemore, llm.c), each checked against PyTorch."""
import numpy as np
import pytest
import torch

import ember


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dims,padding_mode", [(1, "zeros"), (2, "zeros"), (3, "zeros"),
                                               (1, "reflect"), (2, "circular")])
def test_conv_forward_override_with_three_arguments(dims, padding_mode):
    # whisper's Conv1d overrides _conv_forward(x, weight, bias) to cast the parameters
    def subclass(lib):
        base = {1: lib.nn.Conv1d, 2: lib.nn.Conv2d, 3: lib.nn.Conv3d}[dims]

        class Cast(base):
            def _conv_forward(self, x, weight, bias):
                return super()._conv_forward(x, weight.to(x.dtype) * 2,
                                             None if bias is None else bias.to(x.dtype))
        return Cast(2, 3, kernel_size=3, padding=1, padding_mode=padding_mode)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2) + (5,) * dims).astype(np.float32)
    tm, em = subclass(torch), subclass(ember)
    em.load_state_dict({k: ember.from_numpy(_np(v)) for k, v in tm.state_dict().items()})
    want = tm(torch.from_numpy(x))
    got = em(ember.from_numpy(x))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-6)


_AXIS_CALLS = [
    # (what, call on a (lib, x) pair) -- whisper's timing.py: weights.mean(axis=0)
    ("mean", lambda lib, x: x.mean(axis=0)),
    ("sum keepdims", lambda lib, x: x.sum(axis=-1, keepdims=True)),
    ("max", lambda lib, x: x.max(axis=1).values),
    ("argmax", lambda lib, x: lib.argmax(x, axis=0)),
    ("cat", lambda lib, x: lib.cat([x, x], axis=1)),
    ("stack", lambda lib, x: lib.stack([x, x], axis=0)),
    ("softmax method", lambda lib, x: x.softmax(axis=-1)),
    ("cumsum", lambda lib, x: lib.cumsum(x, axis=1)),
    ("std_mean", lambda lib, x: lib.std_mean(x, axis=0)[0]),
    ("logsumexp", lambda lib, x: x.logsumexp(axis=1, keepdims=True)),
    ("unsqueeze", lambda lib, x: x.unsqueeze(axis=0)),
    ("index_select", lambda lib, x: x.index_select(axis=1, index=lib.tensor([2, 0]))),
    ("vector_norm", lambda lib, x: lib.linalg.vector_norm(x, axis=0, keepdims=True)),
]


@pytest.mark.parametrize("what,call", _AXIS_CALLS, ids=[c[0] for c in _AXIS_CALLS])
def test_numpy_axis_and_keepdims_names(what, call):
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    want = call(torch, torch.from_numpy(x))
    got = call(ember, ember.from_numpy(x))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib, x: x.sum(axis=0, dim=0),         # both names: PyTorch's parser rejects it
    lambda lib, x: x.split(2, axis=0),           # Python-level in PyTorch: no NumPy names
    lambda lib, x: lib.unique(x, axis=0),
])
def test_numpy_names_rejected_where_pytorch_rejects_them(call):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError) as want:
        call(torch, torch.from_numpy(x))
    with pytest.raises(TypeError) as got:
        call(ember, ember.from_numpy(x))
    assert "axis" in str(want.value) and "axis" in str(got.value)


_EINSUMS = [("bhc,hkc->bhk", (2, 3, 4), (3, 5, 4)),   # contraction: bmm
            ("bhc,hc->bhc", (2, 3, 4), (3, 4)),        # nothing summed: a broadcast multiply
            ("i,j->ij", (4,), (5,)),
            ("i,i->", (4,), (4,))]


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("eq,sa,sb", _EINSUMS, ids=[e[0] for e in _EINSUMS])
@pytest.mark.parametrize("da,db", [("bfloat16", "float32"), ("float64", "float32"),
                                   ("float32", "float32")])
def test_einsum_mixed_dtypes(eq, sa, sb, da, db, autocast):
    # segment-anything's add_decomposed_rel_pos under CPU bfloat16 autocast: a bfloat16 query
    # with float32 relative-position tables
    rng = np.random.default_rng(2)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)

    def run(lib):
        x = lib.from_numpy(a).to(getattr(lib, da))
        y = lib.from_numpy(b).to(getattr(lib, db))
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocast):
            return lib.einsum(eq, x, y)
    try:
        want = run(torch)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            run(ember)
        return
    got = run(ember)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    tol = 2e-2 if want.dtype == torch.bfloat16 else 1e-5
    np.testing.assert_allclose(_np(got.float()), _np(want.float()), rtol=tol, atol=tol)


@pytest.mark.parametrize("path", ["mean", "cat", "unsqueeze", "Tensor.mean", "Tensor.softmax",
                                  "linalg.vector_norm", "special.logsumexp"])
def test_functions_taking_numpy_names_still_pickle(path):
    # a partial of them is what a DataLoader worker (spawn) receives as collate_fn
    import functools
    import pickle

    def get(lib):
        obj = lib
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    for lib in (torch, ember):
        fn = get(lib)
        assert pickle.loads(pickle.dumps(functools.partial(fn))).func is fn
