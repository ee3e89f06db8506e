"""Autograd parity with PyTorch: the same small program runs under ember and torch from the
same NumPy inputs; outputs and every leaf's gradient must agree.

Each case is ``prog(lib, *leaves)`` where ``lib`` is ``ember`` or ``torch`` and the leaves
are float tensors requiring grad. Integer / boolean index tensors are built inside the
program with ``lib.tensor(numpy_array)``. The loss is ``sum_k (out_k * R_k).sum()`` with
fixed random ``R_k``, so every VJP sees a non-uniform upstream gradient.
Tolerances: rtol 1e-5 (float64), 1e-4 (float32).
"""
import zlib

import numpy as np
import pytest
import torch

import ember

DTYPES = {
    "f64": (np.float64, ember.float64, torch.float64, 1e-5, 1e-9),
    "f32": (np.float32, ember.float32, torch.float32, 1e-4, 1e-5),
}

CASES = {}


def case(name, *inputs):
    """Register ``prog`` under ``name``; ``inputs``: shapes (standard normal) or makers."""
    def deco(fn):
        assert name not in CASES, name
        CASES[name] = (fn, inputs)
        return fn
    return deco


def pos(*shape, low=0.5, high=2.0):
    return lambda rng: rng.uniform(low, high, shape)


def uni(*shape, low=-1.0, high=1.0):
    return lambda rng: rng.uniform(low, high, shape)


def distinct(*shape, scale=0.37):
    """Values far apart (no ties) for max/min/sort-like selections."""
    def make(rng):
        n = int(np.prod(shape))
        return (rng.permutation(n) * scale - n * scale / 2 + 0.05).reshape(shape)
    return make


def ties(*shape):
    """Small integers (as floats): many exact ties."""
    return lambda rng: rng.integers(-2, 3, shape).astype(np.float64)


def const(arr):
    return lambda rng: np.asarray(arr, dtype=np.float64)


def I(lib, data):  # noqa: E743 - an int64 index tensor
    return lib.tensor(np.asarray(data, dtype=np.int64))


def B(lib, data):
    return lib.tensor(np.asarray(data, dtype=bool))


def _outputs(out):
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(_outputs(o))
        return res
    return [out]


def _run(lib, prog, arrays, weights, lib_dtype):
    leaves = [lib.tensor(a, dtype=lib_dtype, requires_grad=True) for a in arrays]
    outs = _outputs(prog(lib, *leaves))
    loss = None
    for o, w in zip(outs, weights(outs)):
        if w is None or not o.requires_grad:
            continue
        term = (o * lib.tensor(w, dtype=o.dtype)).sum()
        loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    values = [o.detach().numpy().copy() for o in outs]
    grads = [None if t.grad is None else t.grad.numpy().copy() for t in leaves]
    return values, grads


def check(name, dtype_key):
    prog, specs = CASES[name]
    np_dt, e_dt, t_dt, rtol, atol = DTYPES[dtype_key]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [(rng.standard_normal(s) if isinstance(s, tuple) else s(rng)).astype(np_dt)
              for s in specs]
    wrng = np.random.default_rng(1234)
    cache = []

    def weights(outs):
        # one set of upstream weights shared by both runs (made on the torch run)
        if not cache:
            for o in outs:
                fl = o.dtype.is_floating_point
                cache.append(wrng.uniform(0.5, 1.5, tuple(o.shape)).astype(np_dt) if fl
                             else None)
        return cache

    t_vals, t_grads = _run(torch, prog, arrays, weights, t_dt)
    assert any(g is not None for g in t_grads), "case must differentiate something"
    e_vals, e_grads = _run(ember, prog, arrays, weights, e_dt)
    assert len(e_vals) == len(t_vals)
    for k, (ev, tv) in enumerate(zip(e_vals, t_vals)):
        assert ev.shape == tv.shape, f"output {k}: shape {ev.shape} != torch {tv.shape}"
        np.testing.assert_allclose(ev, tv, rtol=rtol, atol=atol, err_msg=f"output {k}")
    for k, (eg, tg) in enumerate(zip(e_grads, t_grads)):
        assert (eg is None) == (tg is None), \
            f"leaf {k}: grad is {'None' if eg is None else 'set'} in ember, " \
            f"{'None' if tg is None else 'set'} in torch"
        if tg is not None:
            assert eg.shape == tg.shape, f"leaf {k}: grad shape {eg.shape} != {tg.shape}"
            assert eg.dtype == tg.dtype, f"leaf {k}: grad dtype {eg.dtype} != {tg.dtype}"
            np.testing.assert_allclose(eg, tg, rtol=rtol, atol=atol, err_msg=f"grad {k}")


# =========================================================================================
# MLPs
# =========================================================================================
MLP_IN = [(8, 5), (5, 16), (16,), (16, 4), (4,)]


def _mlp(lib, x, w1, b1, w2, b2, act):
    h = x @ w1 + b1
    h = {"tanh": lambda: h.tanh(), "sigmoid": lambda: h.sigmoid(),
         "relu": lambda: h.clamp(min=0)}[act]()
    logits = h @ w2 + b2
    return logits.softmax(-1), logits.log_softmax(dim=1).mean()


for _act in ("tanh", "sigmoid", "relu"):
    case(f"mlp_{_act}", *MLP_IN)(lambda lib, *a, _act=_act: _mlp(lib, *a, _act))


@case("mlp_cross_entropy", (6, 5), (5, 7), (7,), (7, 3))
def _(lib, x, w1, b1, w2):
    h = lib.addmm(b1, x, w1).tanh()
    logp = (h @ w2).log_softmax(1)
    target = I(lib, [0, 2, 1, 1, 0, 2])
    return -logp.gather(1, target.unsqueeze(1)).mean()


@case("mlp_two_layer_relu_max", (4, 3), (3, 6), (6, 2))
def _(lib, x, w1, w2):
    h = lib.maximum(x @ w1, lib.zeros_like(x @ w1))
    out = (h @ w2).sigmoid()
    return out, out.sum(1).mean()


# =========================================================================================
# views
# =========================================================================================
@case("view_transpose_step_slice", (4, 6))
def _(lib, x):
    return x.t()[::2, 1:], x[1::2, ::3], x[:, -1]


@case("view_expand_unsqueeze", (4, 3))
def _(lib, x):
    return x[:, None, 1:].expand(4, 5, 2), x.unsqueeze(0).expand(2, 4, 3) * x


@case("view_reshape_of_transpose", (4, 6))
def _(lib, x):
    return x.t().reshape(3, 8), x.transpose(0, 1).reshape(-1)[::5], x.t().flatten()


@case("view_reshape_view_permute", (2, 3, 4))
def _(lib, x):
    return x.view(6, 4), x.permute(2, 0, 1).reshape(4, 6), x.reshape(2, 12).t(), \
        x.movedim(0, -1), x.squeeze(), x.unsqueeze(1).squeeze(1)


@case("view_narrow_select", (4, 6))
def _(lib, x):
    return x.narrow(1, 2, 3), x.narrow(0, 1, 2).select(1, 4), x.select(0, -1), x[2, 3]


@case("view_unfold", (3, 7))
def _(lib, x):
    return x.unfold(1, 3, 2), x.unfold(0, 2, 1)


@case("view_diagonal", (4, 5))
def _(lib, x):
    return x.diagonal(), x.diagonal(1), x.diagonal(-2), \
        x.unsqueeze(0).expand(3, 4, 5).diagonal(0, 1, 2), x.t().diagonal(1, 1, 0)


@case("view_diagonal_keywords", (4, 5))
def _(lib, x):
    return x.diagonal(offset=1), lib.diagonal(x, offset=-1, dim1=1, dim2=0)


@case("view_split_chunk_unbind", (4, 6))
def _(lib, x):
    s1, s2 = x.split([2, 4], dim=1)
    p, q, r = x.split(2, dim=1)
    c1, c2 = x.chunk(2, dim=0)
    u = x.unbind(1)
    return s1 * 2, s2.sum(0), p * q * r, c1 - c2, u[0] * u[5], lib.stack(u[1:3])


@case("view_chain_then_elementwise", (3, 4))
def _(lib, x):
    y = x.t()[1:, ::2].unsqueeze(0).expand(2, 3, 2)
    return (y * y).sin()


@case("index_advanced", (5, 3))
def _(lib, x):
    idx = I(lib, [3, 0, 3, 4])
    return x[idx], x[idx, I(lib, [0, 2, 2, 1])], x[:, I(lib, [2, 2, 0])], \
        x[I(lib, [[0, 1], [1, 4]])]


@case("index_boolean_mask", (4, 3))
def _(lib, x):
    m = B(lib, [[True, False, True], [False, False, False], [True, True, True],
                [False, True, False]])
    rows = B(lib, [True, False, True, True])
    return x[m], x[rows], x.masked_select(m)


@case("index_take", (3, 4))
def _(lib, x):
    return x.take(I(lib, [0, 11, 5, 5]))


# =========================================================================================
# reductions and scans
# =========================================================================================
@case("reduce_sum_mean_dims", (3, 4, 5))
def _(lib, x):
    return x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(), x.mean(-1, keepdim=True), \
        x.mean((0, 1))


@case("reduce_amax_amin_ties", ties(4, 5))
def _(lib, x):
    return x.amax(), x.amax(1), x.amin(0, keepdim=True), x.amax((0, 1)), x.max(), x.min()


@case("reduce_max_min_dim_values", distinct(4, 5))
def _(lib, x):
    return x.max(1).values, x.max(0, keepdim=True)[0], x.min(dim=1).values


@case("reduce_sort_topk_values", distinct(3, 6))
def _(lib, x):
    return x.sort(1).values, x.sort(0, descending=True)[0], x.topk(2, dim=1).values


@case("reduce_prod", pos(3, 4, low=0.5, high=1.5))
def _(lib, x):
    return x.prod(), x.prod(1), x.prod(0, keepdim=True)


@case("reduce_prod_negative", uni(3, 4, low=0.5, high=1.5))
def _(lib, x):
    return (-x).prod(1), (x - 1.0).prod()


@case("reduce_var_std", (4, 6))
def _(lib, x):
    return x.var(), x.var(1), x.var(0, correction=0), x.var(1, keepdim=True, correction=2), \
        x.std(), x.std(1, correction=0), x.std(0, unbiased=True, keepdim=True)


@case("reduce_logsumexp", (3, 5))
def _(lib, x):
    return x.logsumexp(1), x.logsumexp(0, keepdim=True), (x * 30).logsumexp((0, 1))


@case("reduce_norm", (3, 4))
def _(lib, x):
    return x.norm(), x.norm(p=1), x.norm(p=2, dim=1), x.norm(p=float("inf")), \
        x.norm(p=float("inf"), dim=0), x.norm(p=1, dim=1, keepdim=True), x.norm(p=3)


@case("reduce_norm_linalg_style", (2, 3))
def _(lib, x):
    return lib.norm(x), lib.norm(x, dim=1)


@case("scan_cumsum", (3, 5))
def _(lib, x):
    return x.cumsum(1), x.cumsum(0), x.cumsum(-1)[:, ::2]


@case("scan_cumprod_no_zeros", uni(3, 5, low=0.5, high=1.5))
def _(lib, x):
    return x.cumprod(1), (-x).cumprod(0)


@case("softmax_family", (3, 5))
def _(lib, x):
    return x.softmax(0), x.log_softmax(-1), lib.softmax(x * 3, dim=1)


# =========================================================================================
# indexing ops
# =========================================================================================
@case("gather", (3, 4))
def _(lib, x):
    return x.gather(1, I(lib, [[0, 0, 3], [1, 2, 1], [3, 3, 3]])), \
        lib.gather(x, 0, I(lib, [[2, 1, 0, 0]]))


@case("scatter_unique", (3, 4), (3, 2))
def _(lib, x, src):
    idx = I(lib, [[3, 0], [1, 2], [0, 1]])
    return x.scatter(1, idx, src), lib.scatter(x, 0, I(lib, [[2, 0, 1]]), src.t()[:1])


@case("scatter_value", (3, 4))
def _(lib, x):
    return x.scatter(1, I(lib, [[0], [2], [3]]), 0.5)


@case("scatter_add_duplicates", (3, 4), (3, 3))
def _(lib, x, src):
    idx = I(lib, [[0, 0, 3], [1, 1, 1], [2, 3, 2]])
    return x.scatter_add(1, idx, src), lib.scatter_add(x, 0, I(lib, [[0, 0, 2], [2, 2, 2]]),
                                                       src[:2])


@case("index_select", (4, 3))
def _(lib, x):
    return x.index_select(0, I(lib, [3, 1, 3])), lib.index_select(x, 1, I(lib, [2, 0]))


@case("index_add", (4, 3), (3, 3), (4, 3))
def _(lib, x, src, src2):
    return x.index_add(0, I(lib, [1, 3, 1]), src), x.index_add(1, I(lib, [0, 0, 2]), src2,
                                                                 alpha=2.0)


@case("masked_fill_where", (3, 4), (3, 4))
def _(lib, x, y):
    m = B(lib, [[True, False, False, True], [False] * 4, [True] * 4])
    return x.masked_fill(m, 0.25), lib.where(m, x, y), lib.where(x > y, x * x, y), \
        lib.where(m[0], x, 0.0)


@case("cat_stack", (2, 3), (4, 3), (2, 3))
def _(lib, a, b, c):
    return lib.cat([a, b, c]), lib.cat([a, c], dim=1), lib.stack([a, c], dim=1), \
        lib.stack([a, c, a])


@case("flip_roll", (3, 4))
def _(lib, x):
    return x.flip(0), x.flip((0, 1)), x.roll(1, 0), x.roll((1, -2), (0, 1)), x.roll(5)


@case("repeat", (2, 3))
def _(lib, x):
    return x.repeat(2, 1), x.repeat(2, 1, 3)


@case("tril_triu", (4, 4), (3, 5))
def _(lib, a, b):
    return a.tril(), a.triu(1), b.tril(-1), b.triu(2)


# =========================================================================================
# linear algebra
# =========================================================================================
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)),
                 ((5, 2, 3), (3,)), ((2, 1, 2, 3), (5, 3, 4)), ((2, 3), (4, 1, 3, 2))]
for _a, _b in MATMUL_SHAPES:
    case(f"matmul_{_a}@{_b}".replace(" ", ""), _a, _b)(
        lambda lib, a, b: (a @ b, lib.matmul(a, b).sum()))


@case("bmm_mm_mv_dot_outer", (3, 2, 4), (3, 4, 5), (2, 4), (4, 5), (4,), (5,))
def _(lib, a, b, m, n, v, w):
    return lib.bmm(a, b), m.mm(n), lib.mm(m, n), m.mv(v), lib.mv(n.t(), v), v.dot(n[:, 0]), \
        lib.outer(v, w), v.outer(v)


@case("addmm", (3, 4), (3, 2), (2, 4), (4,))
def _(lib, inp, m1, m2, bias):
    return lib.addmm(inp, m1, m2), lib.addmm(inp, m1, m2, beta=0.5, alpha=2.0), \
        lib.addmm(bias, m1, m2), bias.unsqueeze(0).addmm(m1, m2)


EINSUM = ["ij,jk->ik", "bij,bjk->bik", "ii->i", "ii", "ij->", "i,j->ij", "bi,bi->b",
          "ijk->kji", "ij,ij->ij", "bij,jk->bik"]
_EIN_SHAPES = {"ij,jk->ik": [(2, 3), (3, 4)], "bij,bjk->bik": [(2, 3, 4), (2, 4, 2)],
               "ii->i": [(3, 3)], "ii": [(3, 3)], "ij->": [(2, 3)], "i,j->ij": [(3,), (4,)],
               "bi,bi->b": [(2, 5), (2, 5)], "ijk->kji": [(2, 3, 4)],
               "ij,ij->ij": [(2, 3), (2, 3)], "bij,jk->bik": [(2, 3, 4), (4, 5)]}
for _eq in EINSUM:
    case(f"einsum_{_eq}", *_EIN_SHAPES[_eq])(lambda lib, *ops, _eq=_eq: lib.einsum(_eq, *ops))


# =========================================================================================
# elementwise
# =========================================================================================
UNARY = {"exp": None, "log": pos, "sqrt": pos, "rsqrt": pos, "sin": None, "cos": None,
         "tan": uni, "tanh": None, "sigmoid": None, "erf": None, "abs": distinct,
         "reciprocal": pos, "expm1": None, "log1p": pos, "log2": pos, "neg": None,
         "square": None, "floor": distinct, "sign": distinct}
for _op, _dom in UNARY.items():
    case(f"unary_{_op}", (3, 4) if _dom is None else _dom(3, 4))(
        lambda lib, x, _op=_op: getattr(x, _op)() * x if _op in ("floor", "sign")
        else getattr(x, _op)())


@case("binary_arith_broadcast", (3, 4), (4,), pos(3, 1))
def _(lib, a, b, c):
    return a + b, a - b, b - a, a * c, a / c, b / c, lib.sub(a, b, alpha=0.5), \
        lib.add(a, c, alpha=-2)


@case("pow_tensor_exponent", pos(3, 4), (3, 4), (4,))
def _(lib, base, e, e2):
    return base.pow(e), base ** e2, lib.pow(base, 2.5), base ** 0.5, base ** 3


@case("pow_scalar_base", (3, 4))
def _(lib, e):
    return 1.7 ** e, lib.pow(2.0, e)


@case("maximum_minimum_ties", ties(4, 5), ties(4, 5))
def _(lib, a, b):
    return lib.maximum(a, b), lib.minimum(a, b), lib.maximum(a, b[0])


@case("clamp_tensor_bounds", uni(3, 5, low=-2, high=2), uni(3, 5, low=-1.5, high=-0.2),
      uni(1, 5, low=0.2, high=1.5))
def _(lib, x, lo, hi):
    return x.clamp(min=lo, max=hi), lib.clamp(x, min=lo), x.clamp(max=hi), \
        x.clamp(-0.5, 0.5), x.clamp(min=0.1)


@case("lerp", (3, 4), (3, 4), uni(3, 4, low=0, high=1))
def _(lib, a, b, w):
    return a.lerp(b, w), lib.lerp(a, b, 0.25), a.lerp(b[0], w)


@case("addcmul_addcdiv", (3, 4), (3, 4), pos(3, 4))
def _(lib, a, t1, t2):
    return lib.addcmul(a, t1, t2), a.addcmul(t1, t2, value=-0.5), lib.addcdiv(a, t1, t2), \
        a.addcdiv(t1, t2, value=2.0)


# x/y are kept away from integer ratios (fmod/remainder are discontinuous there)
@case("fmod_remainder", const([[2.3, -2.3, 5.1, -0.4], [1.2, 3.7, -4.4, 0.9]]),
      const([[1.1, 1.1, -2.0, 1.5], [0.7, -1.6, 1.3, 2.2]]))
def _(lib, x, y):
    return lib.fmod(x, y), lib.remainder(x, y), x % y, lib.fmod(x, 1.5), x.remainder(-1.5)


@case("casts_double_float", (3, 4), (3, 4))
def _(lib, x, w):
    y = (x.double() * w.double()).sin()
    z = y.float() * x.float()
    return z, x.to(lib.float64).to(x.dtype) * w, y.to(x.dtype)


@case("div_rounding_mode_has_no_grad_for_result", pos(2, 3), pos(2, 3))
def _(lib, a, b):
    return a / b + lib.div(a * 7, b, rounding_mode="floor").detach()


# =========================================================================================
# in-place ops on non-leaves, index_put
# =========================================================================================
@case("inplace_chain", (3, 4), (3, 4), (4,))
def _(lib, x, w, b):
    y = x * 1
    y.mul_(w)
    y.add_(1)
    y += b
    y *= w
    y -= 0.5
    return y


@case("inplace_unary", (3, 4))
def _(lib, x):
    y = x * 2
    y.exp_()
    u = x.clone()
    u.tanh_()
    v = x + 0
    v.sin_().mul_(x)
    return y, u, v


@case("inplace_clamp_", (3, 4), (4,))
def _(lib, x, b):
    z = x + 0
    z.clamp_(min=-0.3, max=0.4)
    u = x * 1
    u.clamp_(min=b)
    return z, u


@case("inplace_lerp_addcmul_masked_fill", (3, 4), (3, 4), (3, 4))
def _(lib, x, e, t):
    y = x.clone()
    y.lerp_(e, 0.3)
    y.addcmul_(t, e, value=0.5)
    y.masked_fill_(B(lib, [[True, False, False, False]] * 3), 0.0)
    return y


@case("inplace_index_add_scatter", (3, 4), (2, 4), (3, 2))
def _(lib, x, s, t):
    y = x * 1
    y.index_add_(0, I(lib, [2, 0]), s)
    y.scatter_add_(1, I(lib, [[0, 0], [1, 3], [2, 2]]), t)
    y.scatter_(1, I(lib, [[1], [0], [3]]), t[:, :1] * 1)
    return y


@case("inplace_copy_", (3, 4), (4,))
def _(lib, x, v):
    y = x * 1
    y.copy_(v)
    return y * x


@case("inplace_div_", (3, 4), pos(3, 4))
def _(lib, x, d):
    y = x * 1
    y.div_(d)
    z = x * 1
    z /= 2
    return y, z


@case("index_put_advanced", (4, 3), (2, 3))
def _(lib, x, v):
    y = x * 1
    y[I(lib, [3, 1])] = v
    return y


@case("index_put_advanced_pairs", (4, 3), (3,))
def _(lib, x, v):
    y = x * 1
    y[I(lib, [0, 2, 3]), I(lib, [1, 1, 0])] = v
    return y


@case("index_put_accumulate", (4, 3), (3, 3))
def _(lib, x, v):
    y = x * 1
    y.index_put_((I(lib, [1, 1, 2]),), v, accumulate=True)
    return y


@case("index_put_bool_mask", (3, 4))
def _(lib, x):
    y = x * 1
    y[x > 0] = 0.0
    return y


@case("setitem_basic_int_row", (4, 3), (3,))
def _(lib, x, v):
    y = x * 1
    y[1] = v
    return y


@case("setitem_basic_scalar_element", (4, 3))
def _(lib, x):
    y = x * 1
    y[0, 1] = 5.0
    return y


@case("setitem_basic_int_1d", (5,))
def _(lib, x):
    y = x * 1
    y[0] = 0.0
    return y


@case("setitem_basic_slice_column", (4, 3))
def _(lib, x):
    y = x * 1
    y[:, 0] = 0
    return y


@case("setitem_basic_slice_tensor", (4, 3), (2, 3))
def _(lib, x, v):
    y = x * 1
    y[1:3] = v
    return y


@case("inplace_on_view_of_non_leaf", (4, 3))
def _(lib, x):
    y = x * 1
    y[:, 0].mul_(2)
    y[1:3].add_(x[:2])
    return y


# ---- writes through views (PyTorch's CopySlices) -------------------------------------
@case("inplace_view_relu_then_use_base", (4, 5))
def _(lib, x):
    y = x * 2
    y[1:3].relu_()
    return y.sum(0) * y[0]


@case("inplace_strided_view_and_transposed_view", (4, 6))
def _(lib, x):
    y = x + 0
    y[:, ::2].mul_(3)
    y.t()[1].add_(x[:, 2])
    return y


@case("copy_into_view_of_plain_buffer", (3,))
def _(lib, x):
    buf = lib.zeros(2, 3)
    buf[0].copy_(x)
    buf[1] = x ** 2
    return buf


@case("stale_sibling_view_after_write", (5,))
def _(lib, x):
    y = x * 1
    a = y[0:3]               # made before the write below, overlaps it
    y[2:].mul_(4)
    return a * 2


@case("nested_views_write_then_reduce", (2, 3, 4))
def _(lib, x):
    y = x * 3
    y[1].t()[2].sub_(x[0, :, 1])
    return y.sum(0)


@case("fill_and_zero_through_views", (3, 4))
def _(lib, x):
    y = x * x
    y[0].zero_()
    y[:, 3].fill_(2.0)
    return y * x


# =========================================================================================
NAMES = sorted(CASES)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", NAMES)
def test_parity(name, dtype):
    check(name, dtype)


def test_case_table_is_sizeable():
    assert len(CASES) >= 80
