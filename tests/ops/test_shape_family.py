"""PyTorch's indexing / shape family in ember, against PyTorch 2.13: values, dtypes and
shapes, gradients (float64, against torch.autograd) and the exception type of bad input.

Each case is ``fn(lib, *inputs)`` run once with ``lib=torch`` on torch tensors and once with
``lib=ember`` on ember tensors holding the same values.
"""
import warnings

import numpy as np
import pytest
import torch

import ember

DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
RNG = np.random.default_rng(0)


def arr(*shape, kind="f"):
    if kind == "i":
        return RNG.integers(-5, 6, shape)
    if kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    return RNG.standard_normal(shape)


def to_torch(a, grad=False):
    t = torch.tensor(np.asarray(a))
    return t.requires_grad_(True) if grad and t.is_floating_point() else t


def to_ember(a, device="cpu", grad=False):
    t = ember.tensor(np.asarray(a)).to(device)
    return t.requires_grad_(True) if grad and t.is_floating_point() else t


def flat(res):
    if isinstance(res, (tuple, list)):
        return [r for x in res for r in flat(x)]
    return [res]


def same(e, t, tol=1e-6):
    """ember result ``e`` equals torch result ``t`` (values, shape, dtype)."""
    es, ts = flat(e), flat(t)
    assert len(es) == len(ts)
    for a, b in zip(es, ts):
        if not isinstance(b, torch.Tensor):
            assert a == b
            continue
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        assert a.dtype.name == str(b.dtype).replace("torch.", ""), (a.dtype, b.dtype)
        got = a.detach().cpu().float().numpy() if b.dtype == torch.bfloat16 else \
            a.detach().cpu().numpy()
        want = b.detach().float().numpy() if b.dtype == torch.bfloat16 else b.detach().numpy()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def run(fn, inputs, device="cpu", grad=False):
    """Run ``fn`` in both libraries; with ``grad``, also compare the gradients of a weighted
    sum of the (floating) outputs with respect to every floating input."""
    tt = [to_torch(a, grad) for a in inputs]
    et = [to_ember(a, device, grad) for a in inputs]
    t_out, e_out = fn(torch, *tt), fn(ember, *et)
    same(e_out, t_out)
    if grad:
        touts = [o for o in flat(t_out) if isinstance(o, torch.Tensor) and o.requires_grad]
        eouts = [o for o in flat(e_out) if isinstance(o, ember.Tensor) and o.requires_grad]
        assert len(touts) == len(eouts)
        if not touts:
            return
        weights = [np.linspace(-1, 2, o.numel()).reshape(tuple(o.shape)) for o in touts]
        sum(((o * torch.tensor(w)).sum() for o, w in zip(touts, weights))).backward()
        total = None
        for o, w in zip(eouts, weights):
            term = (o * ember.tensor(w).to(device)).sum()
            total = term if total is None else total + term
        total.backward()
        for a, b in zip(et, tt):
            if b.requires_grad:
                if b.grad is None:
                    assert a.grad is None or not a.grad.abs().sum().item()
                else:
                    np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(),
                                               rtol=1e-9, atol=1e-9)


I64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
M = arr(3, 4)
CUBE = arr(2, 3, 4)

CASES = {
    "repeat_interleave_int": (lambda L, x: L.repeat_interleave(x, 2), [arr(2, 3)]),
    "repeat_interleave_dim": (lambda L, x: x.repeat_interleave(3, dim=1), [arr(2, 3)]),
    "repeat_interleave_tensor": (lambda L, x, r: L.repeat_interleave(x, r, dim=0),
                                 [arr(3, 2), I64([2, 0, 3])]),
    "repeat_interleave_tensor_flat": (lambda L, x, r: L.repeat_interleave(x, r),
                                      [arr(3), I64([1, 2, 1])]),
    "repeat_interleave_output_size": (
        lambda L, x, r: L.repeat_interleave(x, r, dim=0, output_size=4),
        [arr(2, 2), I64([1, 3])]),
    "repeat_interleave_alone": (lambda L, r: L.repeat_interleave(r), [I64([2, 0, 1])]),
    "repeat_interleave_0d": (lambda L, x: L.repeat_interleave(x, 3), [np.float64(2.5)]),
    "diag_vector": (lambda L, x: L.diag(x), [arr(4)]),
    "diag_vector_offset": (lambda L, x: L.diag(x, -2), [arr(3)]),
    "diag_matrix": (lambda L, x: x.diag(1), [M]),
    "diag_embed": (lambda L, x: L.diag_embed(x), [arr(2, 3)]),
    "diag_embed_dims": (lambda L, x: L.diag_embed(x, 1, 0, 2), [arr(2, 3)]),
    "diagflat": (lambda L, x: L.diagflat(x, 1), [arr(2, 2)]),
    "diagonal_scatter": (lambda L, x, s: L.diagonal_scatter(x, s, 1), [M, arr(3)]),
    "select_scatter": (lambda L, x, s: L.select_scatter(x, s, 1, -1), [M, arr(3)]),
    "slice_scatter": (lambda L, x, s: L.slice_scatter(x, s, 1, 0, 4, 2), [M, arr(3, 2)]),
    "slice_scatter_default": (lambda L, x, s: x.slice_scatter(s), [M, arr(3, 4)]),
    "as_strided_scatter": (lambda L, x, s: L.as_strided_scatter(x, s, (2, 2), (1, 3), 1),
                           [M, arr(2, 2)]),
    "index_copy": (lambda L, x, i, s: L.index_copy(x, 1, i, s),
                   [M, I64([3, 0]), arr(3, 2)]),
    "index_copy_method": (lambda L, x, i, s: x.index_copy(0, i, s), [M, I64([2]), arr(1, 4)]),
    "index_fill": (lambda L, x, i: L.index_fill(x, 1, i, -1.5), [M, I64([1, 3])]),
    "index_fill_int": (lambda L, x, i: x.index_fill(0, i, 7), [arr(3, 2, kind="i"),
                                                              I64([0, -1])]),
    "index_put": (lambda L, x, i, v: L.index_put(x, (i,), v), [arr(5), I64([1, 3]), arr(2)]),
    "index_put_accumulate": (lambda L, x, i, v: x.index_put((i,), v, accumulate=True),
                             [arr(5), I64([1, 1, 3]), arr(3)]),
    "masked_scatter": (lambda L, x, m, s: L.masked_scatter(x, m, s),
                       [M, arr(3, 4, kind="b"), arr(12)]),
    "masked_scatter_broadcast": (lambda L, x, m, s: x.masked_scatter(m, s),
                                 [M, arr(4, kind="b"), arr(3, 5)]),
    "put": (lambda L, x, i, s: L.put(x, i, s), [M, I64([0, -1, 5]), arr(3)]),
    "put_accumulate": (lambda L, x, i, s: x.put(i, s, accumulate=True),
                       [M, I64([[1, 1], [2, 7]]), arr(2, 2)]),
    "take_along_dim": (lambda L, x, i: L.take_along_dim(x, i, 1), [M, I64([[0], [3], [1]])]),
    "take_along_dim_broadcast": (lambda L, x, i: x.take_along_dim(i, dim=0),
                                 [CUBE, I64([[[1]], [[0]]])]),
    "take_along_dim_flat": (lambda L, x, i: L.take_along_dim(x, i), [M, I64([11, 0, 4])]),
    "rot90": (lambda L, x: L.rot90(x), [M]),
    "rot90_k": (lambda L, x: [x.rot90(k, (1, 2)) for k in (-1, 0, 2, 3, 5)], [CUBE]),
    "kron": (lambda L, a, b: L.kron(a, b), [arr(2, 3), arr(3, 2)]),
    "kron_ranks": (lambda L, a, b: L.kron(a, b), [arr(2), arr(2, 3, 1)]),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c), [arr(2, 3), arr(3), arr()]),
    "block_diag_ints": (lambda L, a, b: L.block_diag(a, b), [arr(1, 2, kind="i"), arr(2, 2)]),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), [arr(2), arr(3)]),
    "cartesian_prod_one": (lambda L, a: L.cartesian_prod(a), [arr(3)]),
    "combinations": (lambda L, a: L.combinations(a), [arr(4)]),
    "combinations_r3_repl": (lambda L, a: L.combinations(a, 3, with_replacement=True),
                             [arr(3)]),
    "combinations_r1": (lambda L, a: L.combinations(a, 1), [arr(3)]),
    "combinations_too_many": (lambda L, a: L.combinations(a, 5), [arr(3)]),
    "combinations_r0": (lambda L, a: L.combinations(a, 0), [arr(3)]),
    "vander": (lambda L, x: L.vander(x), [arr(4)]),
    "vander_N_increasing": (lambda L, x: L.vander(x, N=3, increasing=True), [arr(4)]),
    "vander_int32": (lambda L, x: L.vander(x.int()), [arr(3, kind="i")]),
    "tensordot_int": (lambda L, a, b: L.tensordot(a, b), [CUBE, arr(3, 4, 2)]),
    "tensordot_lists": (lambda L, a, b: L.tensordot(a, b, dims=([1, 0], [0, 2])),
                        [arr(3, 2, 4), arr(2, 5, 3)]),
    "tensordot_zero": (lambda L, a, b: L.tensordot(a, b, 0), [arr(2), arr(3)]),
    "tril_": (lambda L, x: x.clone().tril_(-1), [M]),
    "triu_": (lambda L, x: x.clone().triu_(1), [M]),
    "tile": (lambda L, x: L.tile(x, (2,)), [arr(2, 3)]),
    "tile_more": (lambda L, x: (x.tile((2, 1, 3)), x.tile(2, 2)), [arr(2, 3)]),
    "tensor_split_keywords": (lambda L, x: (L.tensor_split(x, sections=2),
                                            x.tensor_split(indices=[1, 2], dim=1)), [M]),
    "tensor_split_sections": (lambda L, x: L.tensor_split(x, 3, dim=1), [arr(2, 7)]),
    "tensor_split_indices": (lambda L, x: x.tensor_split((1, 8, 2, -1)), [arr(6)]),
    "tensor_split_tensor": (lambda L, x, i: L.tensor_split(x, i), [arr(5), I64([1, 3])]),
    "hsplit": (lambda L, x: L.hsplit(x, 2), [arr(3, 4)]),
    "hsplit_1d": (lambda L, x: x.hsplit([1, 3]), [arr(5)]),
    "vsplit": (lambda L, x: L.vsplit(x, [1]), [arr(3, 4)]),
    "dsplit": (lambda L, x: L.dsplit(x, 2), [CUBE]),
    "split_with_sizes": (lambda L, x: L.split_with_sizes(x, [1, 2], 1), [arr(2, 3)]),
    "unsafe_split": (lambda L, x: L.unsafe_split(x, 2), [arr(5)]),
    "unsafe_chunk": (lambda L, x: x.unsafe_chunk(2, 1), [arr(2, 5)]),
    "unsafe_split_with_sizes": (lambda L, x: L.unsafe_split_with_sizes(x, [3, 2]), [arr(5)]),
    "atleast_1d": (lambda L, x, y: (L.atleast_1d(x), L.atleast_1d(x, y)), [arr(), arr(2)]),
    "atleast_2d": (lambda L, x, y: (L.atleast_2d(x), L.atleast_2d([x, y])), [arr(), arr(2)]),
    "atleast_3d": (lambda L, x, y, z: L.atleast_3d(x, y, z), [arr(), arr(2), arr(2, 3)]),
    "column_stack": (lambda L, x, y: L.column_stack([x, y]), [arr(3), arr(3, 2)]),
    "dstack": (lambda L, x, y: L.dstack((x, y)), [arr(3), arr(3)]),
    "row_stack": (lambda L, x, y: L.row_stack((x, y)), [arr(3), arr(2, 3)]),
    "hstack": (lambda L, x, y: L.hstack([x, y]), [arr(2, 1), arr(2, 3)]),
    "vstack": (lambda L, x, y: L.vstack([x, y]), [arr(3), arr(3)]),
    "ravel": (lambda L, x: L.ravel(x.t()), [M]),
    "sum_to_size": (lambda L, x: (x.sum_to_size(4), x.sum_to_size(3, 1), x.sum_to_size((1, 4))),
                    [M]),
    "meshgrid_ij": (lambda L, a, b: L.meshgrid(a, b, indexing="ij"), [arr(2), arr(3)]),
    "meshgrid_xy": (lambda L, a, b, c: L.meshgrid([a, b, c], indexing="xy"),
                    [arr(2), arr(3), arr(4)]),
    "alias_copy": (lambda L, x: L.alias_copy(x), [M]),
    "expand_copy": (lambda L, x: L.expand_copy(x, (2, 3, 4)), [M]),
    "permute_copy": (lambda L, x: L.permute_copy(x, (2, 0, 1)), [CUBE]),
    "select_copy": (lambda L, x: L.select_copy(x, 1, 2), [CUBE]),
    "slice_copy": (lambda L, x: L.slice_copy(x, 2, 1, None, 2), [CUBE]),
    "squeeze_copy": (lambda L, x: L.squeeze_copy(x.unsqueeze(1), 1), [M]),
    "unsqueeze_copy": (lambda L, x: L.unsqueeze_copy(x, -1), [M]),
    "t_copy": (lambda L, x: L.t_copy(x), [M]),
    "transpose_copy": (lambda L, x: L.transpose_copy(x, 0, 2), [CUBE]),
    "view_copy": (lambda L, x: L.view_copy(x, (4, 3)), [M]),
    "unbind_copy": (lambda L, x: L.unbind_copy(x, 1), [M]),
    "split_copy": (lambda L, x: L.split_copy(x, 3, 1), [M]),
    "split_with_sizes_copy": (lambda L, x: L.split_with_sizes_copy(x, [1, 3], 1), [M]),
    "diagonal_copy": (lambda L, x: L.diagonal_copy(x, 1, 1, 2), [CUBE]),
    "narrow_copy": (lambda L, x: (L.narrow_copy(x, 1, 1, 2), x.narrow_copy(0, 1, 2)), [M]),
    "unfold_copy": (lambda L, x: L.unfold_copy(x, 1, 2, 1), [M]),
    "as_strided_copy": (lambda L, x: L.as_strided_copy(x, (2, 2), (1, 2)), [M]),
    "detach_copy": (lambda L, x: L.detach_copy(x), [M]),
    "swapaxes_": (lambda L, x: x.clone().swapaxes_(0, 1), [M]),
    "adjoint": (lambda L, x: (L.adjoint(x), x.mH, x.H, x.adjoint()), [M]),
    "conj_real": (lambda L, x: (L.conj(x), L.resolve_conj(x), L.resolve_neg(x),
                                L.conj_physical(x), L.real(x), x.real), [M]),
}

#: cases whose floating inputs also get gradients compared with torch.autograd
GRAD = {"repeat_interleave_int", "repeat_interleave_dim", "repeat_interleave_tensor",
        "repeat_interleave_0d", "diag_vector", "diag_matrix", "diag_embed", "diag_embed_dims",
        "diagflat", "diagonal_scatter", "select_scatter", "slice_scatter", "index_copy",
        "index_fill", "index_put", "index_put_accumulate",
        "masked_scatter", "masked_scatter_broadcast", "put", "put_accumulate",
        "take_along_dim", "take_along_dim_broadcast", "rot90", "rot90_k", "kron", "kron_ranks",
        "block_diag", "cartesian_prod", "combinations", "tensordot_int",
        "tensordot_lists", "tril_", "triu_", "tile", "tensor_split_sections", "hsplit",
        "column_stack", "dstack", "sum_to_size", "meshgrid_xy", "permute_copy", "slice_copy",
        "diagonal_copy", "unfold_copy", "adjoint"}

#: a representative subset that also runs on opencl
OPENCL = {"repeat_interleave_tensor", "diag_embed", "diagonal_scatter", "index_copy",
          "masked_scatter", "put_accumulate", "take_along_dim", "rot90", "kron",
          "block_diag", "combinations", "tensordot_int", "tensor_split_sections",
          "meshgrid_xy", "slice_copy"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, inputs = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(fn, inputs, grad=name in GRAD)


@pytest.mark.parametrize("name", sorted(OPENCL))
@pytest.mark.skipif("opencl" not in DEVICES, reason="no OpenCL device")
def test_matches_torch_opencl(name):
    fn, inputs = CASES[name]
    run(fn, inputs, device="opencl", grad=name in GRAD)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "uint8", "bool"])
def test_dtypes_kept(dtype):
    x = arr(3, 4) > 0 if dtype == "bool" else np.abs(arr(3, 4, kind="i"))
    t, e = torch.tensor(x).to(getattr(torch, dtype)), ember.tensor(x).to(getattr(ember, dtype))
    for fn in (lambda L, v: L.rot90(v), lambda L, v: L.tile(v, (2, 1)),
               lambda L, v: L.diag(v), lambda L, v: L.repeat_interleave(v, 2, 0),
               lambda L, v: L.diag_embed(v), lambda L, v: L.take_along_dim(
                   v, L.tensor([[0], [1], [2]]), 1),
               lambda L, v: L.index_fill(v, 0, L.tensor([1]), 1),
               lambda L, v: L.kron(v, v), lambda L, v: L.block_diag(v, v),
               lambda L, v: L.column_stack([v, v]), lambda L, v: L.ravel(v)):
        same(fn(ember, e), fn(torch, t))


def test_inplace_forms_write_self():
    x = arr(3, 4)
    for name, args_t, args_e in [
            ("index_copy_", (1, torch.tensor([0]), torch.ones(3, 1, dtype=torch.float64)),
             (1, ember.tensor([0]), ember.ones(3, 1, dtype=ember.float64))),
            ("index_fill_", (0, torch.tensor([2]), 3.0), (0, ember.tensor([2]), 3.0)),
            ("masked_scatter_", (torch.tensor(x > 0), torch.arange(12.).double()),
             (ember.tensor(x > 0), ember.arange(12.).double())),
            ("put_", (torch.tensor([1, 4]), torch.tensor([9., 8.]).double()),
             (ember.tensor([1, 4]), ember.tensor([9., 8.]).double())),
            ("tril_", (), ()), ("triu_", (1,), (1,))]:
        t, e = torch.tensor(x), ember.tensor(x)
        rt, re = getattr(t, name)(*args_t), getattr(e, name)(*args_e)
        assert re is e and rt is t
        same(e, t)


def test_as_strided_scatter_gradient():
    """Against float64 math (PyTorch 2.13's own gradient for ``input`` is wrong here: it
    keeps the overwritten positions and drops the others): the overwritten elements get no
    gradient, the rest the output's, and ``src`` the gradient of its positions."""
    x = ember.tensor(M, requires_grad=True)
    s = ember.tensor(arr(2, 2), requires_grad=True)
    w = np.linspace(-1, 2, 12).reshape(3, 4)
    (ember.as_strided_scatter(x, s, (2, 2), (1, 3), 1) * ember.tensor(w)).sum().backward()
    written = np.zeros(12, bool)
    written[[1, 2, 4, 5]] = True
    np.testing.assert_allclose(x.grad.numpy(), np.where(written.reshape(3, 4), 0, w))
    np.testing.assert_allclose(s.grad.numpy(), w.reshape(-1)[[1, 4, 2, 5]].reshape(2, 2))


def test_tril_triu_indices():
    for args in [(3, 3), (4, 3, 1), (3, 5, -1), (0, 3), (3, 4, 10), (3, 4, -10)]:
        same(ember.tril_indices(*args), torch.tril_indices(*args))
        same(ember.triu_indices(*args), torch.triu_indices(*args))
    same(ember.tril_indices(3, 2, dtype=ember.int32), torch.tril_indices(3, 2,
                                                                          dtype=torch.int32))


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning):
        ember.meshgrid(ember.zeros(2), ember.zeros(3))


def test_view_dtype():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    t, e = torch.tensor(x), ember.tensor(x)
    for dt in ("int32", "float16", "uint8", "int64", "float64", "bfloat16", "int16"):
        tt = t.view(getattr(torch, dt))
        ee = e.view(getattr(ember, dt))
        same(ee, tt, tol=0)
    # views share memory and the version counter
    v = e.view(ember.int32)
    v[0, 0, 0] = 0
    assert e[0, 0, 0].item() == 0.0 and v._version == e._version
    h = torch.tensor(x).half()[:, :, 2:4]
    same(ember.tensor(x).half()[:, :, 2:4].view(ember.int32), h.view(torch.int32), tol=0)


# ---- errors: the same exception type as torch --------------------------------------------
ERRORS = {
    "repeat_interleave_negative": lambda L: L.repeat_interleave(L.tensor([1, 2]), -1),
    "repeat_interleave_negative_tensor": lambda L: L.repeat_interleave(
        L.tensor([1, 2]), L.tensor([1, -1])),
    "repeat_interleave_size": lambda L: L.repeat_interleave(L.tensor([1, 2]),
                                                            L.tensor([1, 2, 3])),
    "repeat_interleave_float_repeats": lambda L: L.repeat_interleave(L.tensor([1, 2]),
                                                                     L.tensor([1., 2.])),
    "repeat_interleave_dim": lambda L: L.repeat_interleave(L.zeros(2, 2), 2, dim=2),
    "diag_3d": lambda L: L.diag(L.zeros(2, 2, 2)),
    "diag_embed_same_dims": lambda L: L.diag_embed(L.zeros(2, 2), 0, 1, 1),
    "diagonal_scatter_shape": lambda L: L.diagonal_scatter(L.zeros(3, 3), L.zeros(2)),
    "select_scatter_shape": lambda L: L.select_scatter(L.zeros(3, 3), L.zeros(2), 0, 0),
    "select_scatter_index": lambda L: L.select_scatter(L.zeros(3, 3), L.zeros(3), 0, 5),
    "slice_scatter_shape": lambda L: L.slice_scatter(L.zeros(3, 3), L.zeros(3, 3), 0, 1),
    "index_copy_int_index": lambda L: L.index_copy(L.zeros(3), 0, L.tensor([0]).int(),
                                                   L.zeros(1)),
    "index_copy_count": lambda L: L.index_copy(L.zeros(3, 2), 0, L.tensor([0, 1]),
                                               L.zeros(1, 2)),
    "index_copy_dtype": lambda L: L.index_copy(L.zeros(3), 0, L.tensor([0]),
                                               L.zeros(1, dtype=L.float64)),
    "index_fill_int_index": lambda L: L.index_fill(L.zeros(3), 0, L.tensor([0]).int(), 1.),
    "index_fill_value_dims": lambda L: L.index_fill(L.zeros(3), 0, L.tensor([0]),
                                                    L.zeros(2)),
    "masked_scatter_not_bool": lambda L: L.masked_scatter(L.zeros(3), L.ones(3),
                                                          L.zeros(3)),
    "masked_scatter_short_source": lambda L: L.masked_scatter(
        L.zeros(3), L.ones(3, dtype=L.bool), L.zeros(2)),
    "put_int_index": lambda L: L.put(L.zeros(3), L.tensor([0]).int(), L.zeros(1)),
    "put_count": lambda L: L.put(L.zeros(3), L.tensor([0, 1]), L.zeros(1)),
    "put_dtype": lambda L: L.put(L.zeros(3), L.tensor([0]), L.zeros(1, dtype=L.float64)),
    "put_out_of_range": lambda L: L.put(L.zeros(3), L.tensor([3]), L.zeros(1)),
    "take_along_dim_dtype": lambda L: L.take_along_dim(L.zeros(3), L.tensor([0.])),
    "take_along_dim_ndim": lambda L: L.take_along_dim(L.zeros(3, 2), L.tensor([0]), 0),
    "rot90_dims": lambda L: L.rot90(L.zeros(2, 2), 1, (0,)),
    "rot90_1d": lambda L: L.rot90(L.zeros(2), 1, (0, 1)),
    "rot90_same": lambda L: L.rot90(L.zeros(2, 2), 1, (1, 1)),
    "block_diag_3d": lambda L: L.block_diag(L.zeros(1, 1, 1)),
    "cartesian_prod_2d": lambda L: L.cartesian_prod(L.zeros(2, 2)),
    "cartesian_prod_none": lambda L: L.cartesian_prod(),
    "combinations_2d": lambda L: L.combinations(L.zeros(2, 2)),
    "vander_2d": lambda L: L.vander(L.zeros(2, 2)),
    "tensordot_mismatch": lambda L: L.tensordot(L.zeros(2, 3), L.zeros(4, 2), 1),
    "tensordot_dtypes": lambda L: L.tensordot(L.zeros(2), L.zeros(2, dtype=L.float64), 1),
    "meshgrid_2d": lambda L: L.meshgrid(L.zeros(2, 2), indexing="ij"),
    "meshgrid_indexing": lambda L: L.meshgrid(L.zeros(2), indexing="ji"),
    "tensor_split_0d": lambda L: L.tensor_split(L.zeros(()), 2),
    "tensor_split_zero": lambda L: L.tensor_split(L.zeros(3), 0),
    "tensor_split_float_tensor": lambda L: L.tensor_split(L.zeros(3), L.tensor([1.])),
    "hsplit_indivisible": lambda L: L.hsplit(L.zeros(5), 2),
    "hsplit_0d": lambda L: L.hsplit(L.zeros(()), 2),
    "vsplit_1d": lambda L: L.vsplit(L.zeros(4), 2),
    "dsplit_2d": lambda L: L.dsplit(L.zeros(4, 4), 2),
    "split_with_sizes_sum": lambda L: L.split_with_sizes(L.zeros(4), [1, 2]),
    "hstack_empty": lambda L: L.hstack([]),
    "sum_to_size_bad": lambda L: L.zeros(2, 3).sum_to_size(2),
    "imag": lambda L: L.zeros(2).imag,
    "H_1d": lambda L: L.zeros(2).H,
    "mH_1d": lambda L: L.zeros(2).mH,
    "adjoint_1d": lambda L: L.zeros(2).adjoint(),
    "view_dtype_0d": lambda L: L.zeros(()).view(L.float16),
    "view_dtype_stride": lambda L: L.zeros(4, 2).t().view(L.float16),
    "view_dtype_size": lambda L: L.zeros(3, dtype=L.float16).view(L.float32),
    "view_dtype_offset": lambda L: L.zeros(4, dtype=L.float16)[1:3].view(L.float32),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(Exception) as ee:
        fn(ember)
    assert issubclass(ee.type, te.type) or ee.type is te.type, (ee.value, te.value)
