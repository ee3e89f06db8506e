"""Sparse COO tensors (``ember.sparse_coo_tensor``, ``ember.sparse``) against PyTorch: the
same indices and values give the same dense tensors, coalesced forms, products, gradients
and error types."""
import copy
import pickle

import numpy as np
import pytest
import torch

import ember
from ember import _sparse_tensor as ST

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

IND = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]     # (0, 2) appears twice: uncoalesced
VAL = [1.5, -2.0, 3.0, 4.0, 0.5]
SIZE = (3, 4)


def _pair(ind=IND, val=VAL, size=SIZE, **kw):
    if size is None:   # (torch takes no size=None)
        return ember.sparse_coo_tensor(ind, val, **kw), torch.sparse_coo_tensor(ind, val, **kw)
    return (ember.sparse_coo_tensor(ind, val, size, **kw),
            torch.sparse_coo_tensor(ind, val, size, **kw))


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return x.detach().numpy()


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _same_sparse(e, t, tol=1e-5):
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e.sparse_dim() == t.sparse_dim() and e.dense_dim() == t.dense_dim()
    _close(e.to_dense(), t.to_dense(), tol)


def _raises_like(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)):
        fe()


# ---- construction and metadata --------------------------------------------------------------
def test_layout_objects_and_metadata():
    s, t = _pair()
    assert ember.sparse_coo is s.layout and repr(s.layout) == "ember.sparse_coo"
    assert ember.zeros(2).layout is ember.strided and not ember.zeros(2).is_sparse
    assert s.is_sparse and isinstance(s, ember.Tensor)
    assert tuple(s.shape) == tuple(t.shape) and tuple(s.size()) == tuple(t.size())
    assert s.size(1) == t.size(1) and s.dim() == t.dim() and s.numel() == t.numel()
    assert len(s) == len(t)
    assert s._nnz() == t._nnz() and s.sparse_dim() == t.sparse_dim()
    assert s.dense_dim() == t.dense_dim() and s.is_coalesced() == t.is_coalesced()
    assert s.dtype is ember.float32 and s.device.type == "cpu"
    np.testing.assert_array_equal(_np(s._indices()), _np(t._indices()))
    _close(s._values(), t._values())
    assert "layout=ember.sparse_coo" in repr(s) and "nnz=5" in repr(s)


@pytest.mark.parametrize("ind,val,size", [
    (IND, VAL, SIZE),
    (IND, VAL, None),
    ([[0, 2, 0]], [[1., 2.], [3., 4.], [5., 6.]], (3, 2)),     # one sparse, one dense dim
    ([[0, 2, 0]], [[1., 2.], [3., 4.], [5., 6.]], None),
    ([[], []], [], (2, 3)),                                    # empty
    ([[1, 1, 0], [0, 0, 1], [2, 2, 2]], [1., 2., 3.], (2, 2, 3)),
])
def test_to_dense_and_coalesce(ind, val, size):
    s, t = _pair(ind, val, size)
    _same_sparse(s, t)
    sc, tc = s.coalesce(), t.coalesce()
    assert sc.is_coalesced() and tc.is_coalesced()
    np.testing.assert_array_equal(_np(sc.indices()), _np(tc.indices()))
    _close(sc.values(), tc.values())
    assert sc.indices().dtype is ember.int64
    assert sc.coalesce() is sc


def test_dtypes_and_options():
    i = torch.tensor(IND)
    for v in ([1, 2, 3, 4, 5], torch.tensor(VAL, dtype=torch.float64),
              torch.tensor([1, 2, 3, 4, 5], dtype=torch.int32)):
        ve = v if isinstance(v, list) else ember.tensor(v.numpy())
        s = ember.sparse_coo_tensor(ember.tensor(IND), ve, SIZE)
        t = torch.sparse_coo_tensor(i, v, SIZE)
        assert s.dtype.name == str(t.dtype).split(".")[1]
    s = ember.sparse_coo_tensor(IND, VAL, SIZE, dtype=ember.float64)
    t = torch.sparse_coo_tensor(IND, VAL, SIZE, dtype=torch.float64)
    assert s.dtype is ember.float64 and t.dtype is torch.float64
    assert ember.sparse_coo_tensor(IND, VAL, SIZE, is_coalesced=True).is_coalesced()
    assert ember.sparse_coo_tensor([[0], [1]], [1.], (2, 2)).is_coalesced() == \
        torch.sparse_coo_tensor([[0], [1]], [1.], (2, 2)).is_coalesced()
    s = ember.sparse_coo_tensor(IND, VAL, SIZE, requires_grad=True)
    assert s.requires_grad and s.is_leaf


@pytest.mark.parametrize("case", [
    lambda m: m.sparse_coo_tensor(IND, VAL[:3], SIZE),               # nnz mismatch
    lambda m: m.sparse_coo_tensor(IND, VAL, (3,)),                   # len(size)
    lambda m: m.sparse_coo_tensor(IND, VAL, (1, 4), check_invariants=True),
    lambda m: m.sparse_coo_tensor([[-1, 0], [0, 0]], [1., 2.], (2, 2), check_invariants=True),
])
def test_construction_errors(case):
    _raises_like(lambda: case(ember), lambda: case(torch))


def test_check_invariants_context():
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()
    ember.sparse_coo_tensor(IND, VAL, (1, 4))   # unchecked by default, as PyTorch
    with ember.sparse.check_sparse_tensor_invariants():
        assert ember.sparse.check_sparse_tensor_invariants.is_enabled()
        with pytest.raises(RuntimeError, match="size is inconsistent"):
            ember.sparse_coo_tensor(IND, VAL, (1, 4))
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()

    @ember.sparse.check_sparse_tensor_invariants()
    def build():
        return ember.sparse_coo_tensor(IND, VAL, (1, 4))
    with pytest.raises(RuntimeError):
        build()


def test_indices_values_need_coalesced():
    s, t = _pair()
    for name in ("indices", "values"):
        _raises_like(getattr(s, name), getattr(t, name))
        with pytest.raises(RuntimeError, match="uncoalesced"):
            getattr(s, name)()


@pytest.mark.parametrize("sparse_dim", [None, 1, 2])
def test_to_sparse(sparse_dim):
    x = torch.tensor([[0., 1., 0.], [0., 0., 0.], [2., 0., 3.]])
    e = ember.tensor(x.numpy())
    if sparse_dim is None:
        s, t = e.to_sparse(), x.to_sparse()
    else:
        s, t = e.to_sparse(sparse_dim), x.to_sparse(sparse_dim)
    _same_sparse(s, t)
    assert s.is_coalesced() == t.is_coalesced()
    np.testing.assert_array_equal(_np(s._indices()), _np(t._indices()))
    _close(s._values(), t._values())
    _same_sparse(e.to_sparse_coo(), x.to_sparse_coo())
    assert e.to_dense() is e


@pytest.mark.parametrize("sparse_dim", [0, 3])
def test_to_sparse_error(sparse_dim):
    _raises_like(lambda: ember.ones(2, 2).to_sparse(sparse_dim),
                 lambda: torch.ones(2, 2).to_sparse(sparse_dim))


def test_sparse_mask():
    x = torch.arange(12.).reshape(3, 4)
    e = ember.tensor(x.numpy())
    for coalesce in (False, True):
        s, t = _pair()
        if coalesce:
            s, t = s.coalesce(), t.coalesce()
        rs, rt = e.sparse_mask(s), x.sparse_mask(t)
        np.testing.assert_array_equal(_np(rs._indices()), _np(rt._indices()))
        _close(rs._values(), rt._values())


# ---- arithmetic --------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda s: s * 2.5, lambda s: 3 * s, lambda s: s / 4, lambda s: -s, lambda s: s.mul(2),
    lambda s: s.div(2), lambda s: s.neg(), lambda s: s + s, lambda s: s.coalesce() + s,
    lambda s: s.coalesce() + s.coalesce(), lambda s: s - s * 2, lambda s: s.add(s, alpha=2),
    lambda s: s.t(), lambda s: s.transpose(0, 1), lambda s: s.transpose(-1, 0),
    lambda s: s.coalesce().t(), lambda s: s.clone(), lambda s: s.detach(),
    lambda s: s.double(), lambda s: s.to("cpu"), lambda s: s.cpu(),
    lambda s: s.sum(0, keepdim=True), lambda s: s.sum(-1, keepdim=True), lambda s: s.sum(()),
    lambda s: s * s.to_dense().exp(), lambda s: s.mul(s.to_dense() + 1),
])
def test_sparse_results(fn):
    s, t = _pair()
    rs, rt = fn(s), fn(t)
    _same_sparse(rs, rt)
    assert rs.dtype.name == str(rt.dtype).split(".")[1]
    if rt.is_coalesced():
        assert rs.is_coalesced()


def test_dense_plus_sparse():
    s, t = _pair()
    x = torch.randn(SIZE)
    e = ember.tensor(x.numpy())
    r = e + s
    assert not r.is_sparse
    _close(r, x + t)
    _close(e - s, x - t)
    _raises_like(lambda: s + e, lambda: t + x)            # add(sparse, dense): RuntimeError
    _raises_like(lambda: s + ember.ones(4), lambda: t + torch.ones(4))


def test_inplace_add_and_zero():
    s, t = _pair()
    s2, t2 = _pair([[2], [3]], [7.], SIZE)
    s.add_(s2)
    t.add_(t2)
    _same_sparse(s, t)
    s.zero_()
    t.zero_()
    _same_sparse(s, t)
    assert s._nnz() == t._nnz() == 0


def test_strides_as_pytorch():
    s, t = _pair()
    assert s.stride() == t.stride() and s.storage_offset() == t.storage_offset()
    assert s.is_contiguous() == t.is_contiguous()
    assert s.type() == t.type().replace("torch", "ember")


@pytest.mark.parametrize("dims,keepdim", [((0,), True), ((1,), True), ((0, 1), True)])
def test_sum_keepdim_dense_dims(dims, keepdim):
    ind, val, size = [[0, 2, 0]], [[1., 2.], [3., 4.], [5., 6.]], (3, 2)
    s, t = _pair(ind, val, size)
    rs, rt = s.sum(dims, keepdim=keepdim), t.sum(dims, keepdim=keepdim)
    assert rs.is_sparse == rt.is_sparse and tuple(rs.shape) == tuple(rt.shape)
    _close(rs.to_dense() if rs.is_sparse else rs, rt.to_dense() if rt.is_sparse else rt)


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1)])
def test_sum(dim):
    for ind, val, size in [(IND, VAL, SIZE), ([[0, 2, 0]], [[1., 2.], [3., 4.], [5., 6.]],
                                              (3, 2))]:
        s, t = _pair(ind, val, size)
        rs = s.sum() if dim is None else s.sum(dim)
        rt = t.sum() if dim is None else t.sum(dim)
        assert rs.is_sparse == rt.is_sparse
        _close(rs.to_dense() if rs.is_sparse else rs, rt.to_dense() if rt.is_sparse else rt)
        ss = ember.sparse.sum(s) if dim is None else ember.sparse.sum(s, dim)
        tt = torch.sparse.sum(t) if dim is None else torch.sparse.sum(t, dim)
        _close(ss.to_dense() if ss.is_sparse else ss, tt.to_dense() if tt.is_sparse else tt)
    _raises_like(lambda: s.sum(5), lambda: t.sum(5))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dim, log):
    for ind, val, size in [(IND, VAL, SIZE), ([[0, 2, 0]], [[1., 2.], [3., 4.], [5., 6.]],
                                              (3, 2))]:
        s, t = _pair(ind, val, size)
        fe = ember.sparse.log_softmax if log else ember.sparse.softmax
        ft = torch.sparse.log_softmax if log else torch.sparse.softmax
        rs, rt = fe(s, dim), ft(t, dim)
        np.testing.assert_array_equal(_np(rs._indices()), _np(rt._indices()))
        _close(rs._values(), rt._values())
    assert fe(s, 1, dtype=ember.float64).dtype is ember.float64


# ---- products and gradients ---------------------------------------------------------------
@pytest.mark.parametrize("which", ["sparse.mm", "mm", "spmm", "matmul", "method"])
def test_mm_and_gradients(which):
    d = torch.randn(4, 3)
    v = torch.tensor(VAL, requires_grad=True)
    ve = ember.tensor(VAL, requires_grad=True)
    de = ember.tensor(d.numpy(), requires_grad=True)
    dt = d.clone().requires_grad_()
    s = ember.sparse_coo_tensor(IND, ve, SIZE)
    t = torch.sparse_coo_tensor(IND, v, SIZE)
    assert s.requires_grad
    f = {"sparse.mm": (ember.sparse.mm, torch.sparse.mm), "mm": (ember.mm, torch.mm),
         "spmm": (ember.spmm, torch.spmm), "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
         "method": (lambda a, b: a.mm(b), lambda a, b: a.mm(b))}[which]
    re, rt = f[0](s, de), f[1](t, dt)
    assert not re.is_sparse
    _close(re, rt)
    g = torch.randn(3, 3)
    (re * ember.tensor(g.numpy())).sum().backward()
    (rt * g).sum().backward()
    _close(ve.grad, v.grad)
    _close(de.grad, dt.grad)



@pytest.mark.parametrize("which", ["mv", "method", "matmul", "operator"])
def test_matrix_times_vector_and_gradients(which):
    """A sparse matrix times a dense vector (PageRank's ``A @ r``): torch.mv, Tensor.mv,
    torch.matmul and ``@`` give a dense vector, gradients reach the values and the vector."""
    x = np.array([0.5, -1.0, 2.0, 1.5], np.float32)
    v, ve = torch.tensor(VAL, requires_grad=True), ember.tensor(VAL, requires_grad=True)
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    s = ember.sparse_coo_tensor(IND, ve, SIZE)
    t = torch.sparse_coo_tensor(IND, v, SIZE)
    f = {"mv": lambda m, a, b: m.mv(a, b), "method": lambda m, a, b: a.mv(b),
         "matmul": lambda m, a, b: m.matmul(a, b), "operator": lambda m, a, b: a @ b}[which]
    re, rt = f(ember, s, xe), f(torch, t, xt)
    assert not re.is_sparse and tuple(re.shape) == (3,)
    _close(re, rt)
    re.pow(2).sum().backward()
    rt.pow(2).sum().backward()
    _close(ve.grad, v.grad)
    _close(xe.grad, xt.grad)


@pytest.mark.parametrize("which", ["operator", "mm", "matmul", "sparse.mm", "spmm"])
@pytest.mark.parametrize("shape", [(2, 3), (3,), (2, 2, 3)])
def test_dense_times_sparse_and_gradients(which, shape):
    """dense @ sparse (the GCN example's ``degree @ adj @ degree`` after ``eye + adj`` made the
    middle dense): a dense result with PyTorch's strides, gradients to the dense operand and
    to the sparse operand's values."""
    if len(shape) != 2 and which != "operator":
        pytest.skip("mm / spmm take matrices only")
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 2
    v, ve = torch.tensor(VAL, requires_grad=True), ember.tensor(VAL, requires_grad=True)
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    s = ember.sparse_coo_tensor(IND, ve, SIZE)
    t = torch.sparse_coo_tensor(IND, v, SIZE)
    f = {"operator": lambda m, a, b: a @ b, "mm": lambda m, a, b: m.mm(a, b),
         "matmul": lambda m, a, b: m.matmul(a, b), "sparse.mm": lambda m, a, b: m.sparse.mm(a, b),
         "spmm": lambda m, a, b: m.spmm(a, b)}[which]
    re, rt = f(ember, xe, s), f(torch, xt, t)
    assert not re.is_sparse and tuple(re.shape) == tuple(rt.shape)
    assert re.stride() == rt.stride()
    _close(re, rt)
    re.pow(2).sum().backward()
    rt.pow(2).sum().backward()
    _close(ve.grad, v.grad)
    _close(xe.grad, xt.grad)


@pytest.mark.parametrize("case", [
    lambda m, s: m.ones(4) @ s,                                     # vector of the wrong size
    lambda m, s: m.mm(m.ones(3), s),                                # mm of a vector
    lambda m, s: m.mm(m.ones(2, 3, dtype=m.float64), s),            # dtype
])
def test_dense_times_sparse_errors_match_torch(case):
    s, t = _pair()
    msgs = []
    for m, a in ((ember, s), (torch, t)):
        with pytest.raises(Exception) as info:
            case(m, a)
        msgs.append((type(info.value), str(info.value)))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("vec", [np.ones(5, np.float32), np.ones((4, 1), np.float32)])
def test_mv_shape_errors_match_torch(vec):
    s, t = _pair()
    msgs = []
    for m, a in ((ember, s), (torch, t)):
        with pytest.raises(RuntimeError) as info:
            m.mv(a, m.tensor(vec))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]

def test_leaf_sparse_grad():
    d = torch.randn(4, 2)
    s, t = _pair(requires_grad=True)
    ember.sparse.mm(s, ember.tensor(d.numpy())).pow(2).sum().backward()
    torch.sparse.mm(t, d).pow(2).sum().backward()
    assert s.grad.is_sparse and t.grad.is_sparse
    _same_sparse(s.grad, t.grad)


def test_dense_mm_unchanged():
    a, b = torch.randn(2, 3), torch.randn(3, 2)
    ea, eb = ember.tensor(a.numpy()), ember.tensor(b.numpy())
    _close(ember.mm(ea, eb), a @ b)
    _close(ember.sparse.mm(ea, eb), torch.sparse.mm(a, b))


@pytest.mark.parametrize("beta,alpha", [(1, 1), (2, 3), (0, 0.5)])
def test_addmm(beta, alpha):
    s, t = _pair()
    m, d = torch.randn(3, 2), torch.randn(4, 2)
    re = ember.sparse.addmm(ember.tensor(m.numpy()), s, ember.tensor(d.numpy()), beta=beta,
                            alpha=alpha)
    _close(re, torch.sparse.addmm(m, t, d, beta=beta, alpha=alpha))


@pytest.mark.parametrize("case", [
    lambda m, s: m.sparse.mm(s, m.ones(3, 2)),                      # inner size
    lambda m, s: m.sparse.mm(s, m.ones(4, 2, dtype=m.float64)),     # dtype
    lambda m, s: m.sparse.mm(m.ones(3, 4), m.ones(3, 2)),           # dense, bad sizes
    lambda m, s: m.sparse.sum(m.ones(3, 4), 0),
    lambda m, s: s.exp(),
    lambda m, s: s.cumsum(0),
    lambda m, s: s.view(12),
    lambda m, s: s.mean(),
    lambda m, s: s == s,
    lambda m, s: 2 / s,
    lambda m, s: s.indices(),
    lambda m, s: m.ones(2).is_coalesced(),
    lambda m, s: m.ones(2)._indices(),
    lambda m, s: m.sparse_coo_tensor([[0], [0]], [[1., 2.]], (2, 3, 2)).t(),
    lambda m, s: m.sparse_coo_tensor([[0, 1]], [[1., 2.], [3., 4.]], (2, 2)).transpose(0, 1),
    lambda m, s: s.to_dense(m.float64),
    lambda m, s: m.sparse.mm(s, m.ones(4)),
    lambda m, s: m.sparse.softmax(s.long(), 0),
    lambda m, s: s.transpose(0, 2),
    lambda m, s: s.sum(2),
])
def test_error_types(case):
    s, t = _pair()
    _raises_like(lambda: case(ember, s), lambda: case(torch, t))


def test_unsupported_ops_name_op_and_layout():
    s, _ = _pair()
    for fn, name in [(lambda: s.exp(), "exp"), (lambda: s.max(), "max"),
                     (lambda: s.reshape(12), "reshape"), (lambda: s[0], "getitem")]:
        with pytest.raises(NotImplementedError, match=rf"{name}.*sparse_coo"):
            fn()


def test_copy_and_pickle():
    s, t = _pair()
    for r in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        _same_sparse(r, t)
        assert r.is_coalesced() == s.is_coalesced()


# ---- sparse gradients: embeddings and optimizers ---------------------------------------
def test_embedding_sparse_grad_helper():
    idx = torch.tensor([[0, 1, 3], [3, 3, 1]])
    g = torch.randn(2, 3, 4)
    for padding_idx in (None, 1, 3):
        w = torch.randn(5, 4, requires_grad=True)
        torch.nn.functional.embedding(idx, w, padding_idx, sparse=True).backward(g)
        ge = ST.embedding_sparse_grad(ember.tensor(idx.numpy()), ember.tensor(g.numpy()), 5,
                                      padding_idx)
        _same_sparse(ge, w.grad)
        np.testing.assert_array_equal(_np(ge._indices()), _np(w.grad._indices()))
    w = torch.randn(5, 4, requires_grad=True)
    _raises_like(lambda: ST.embedding_sparse_grad(ember.tensor(idx.numpy()),
                                                  ember.tensor(g.numpy()), 5, None, True),
                 lambda: torch.nn.functional.embedding(idx, w, scale_grad_by_freq=True,
                                                       sparse=True).backward(g))


def test_embedding_sparse_function():
    idx = torch.tensor([[0, 1, 3], [3, 3, 1]])
    w0 = torch.randn(5, 4)
    we = ember.tensor(w0.numpy(), requires_grad=True)
    wt = w0.clone().requires_grad_()
    oe = ST.embedding_sparse(ember.tensor(idx.numpy()), we, 1)
    ot = torch.nn.functional.embedding(idx, wt, 1, sparse=True)
    _close(oe, ot)
    g = torch.randn(2, 3, 4)
    (ge,) = ember.autograd.grad(oe, [we], ember.tensor(g.numpy()))
    (gt,) = torch.autograd.grad(ot, [wt], g)
    assert ge.is_sparse and gt.is_sparse
    _same_sparse(ge, gt)


def test_grad_accumulation_helper():
    a, ta = _pair()
    b, tb = _pair([[2], [3]], [7.], SIZE)
    x = torch.randn(SIZE)
    e = ember.tensor(x.numpy())
    _same_sparse(ST.accumulate_grad(a, b), ta + tb)
    _close(ST.accumulate_grad(e, a), x + ta)
    _close(ST.accumulate_grad(a, e), x + ta)
    assert ST.accumulate_grad(None, a) is a
    y = e.clone()
    a._add_into_(y, alpha=2)
    _close(y, x.add(ta, alpha=2))


def test_sgd_sparse_step():
    w0 = torch.randn(5, 3)
    idx = torch.tensor([0, 2, 2, 4])
    wt = w0.clone().requires_grad_()
    opt = torch.optim.SGD([wt], lr=0.1)
    torch.nn.functional.embedding(idx, wt, sparse=True).pow(2).sum().backward()
    we = ember.tensor(w0.numpy())
    grad = ST.embedding_sparse_grad(ember.tensor(idx.numpy()),
                                    ember.tensor(wt.grad._values().numpy()), 5)
    opt.step()
    with ember.no_grad():
        ST.sgd_sparse_step_(we, grad, 0.1)
    _close(we, wt)


def test_sparse_adam_step():
    w0 = torch.randn(6, 3)
    wt = w0.clone().requires_grad_()
    opt = torch.optim.SparseAdam([wt], lr=0.05, betas=(0.8, 0.9), eps=1e-6)
    we = ember.tensor(w0.numpy())
    m, v = ember.zeros_like(we), ember.zeros_like(we)
    for step, idx in enumerate(([0, 2, 2, 5], [1, 2], [5, 5, 0]), 1):
        opt.zero_grad()
        it = torch.tensor(idx)
        torch.nn.functional.embedding(it, wt, sparse=True).pow(2).sum().backward()
        grad = ST.embedding_sparse_grad(ember.tensor(idx),
                                        ember.tensor(wt.grad._values().numpy()), 6)
        opt.step()
        with ember.no_grad():
            ST.sparse_adam_step_(we, grad, m, v, step, 0.05, 0.8, 0.9, 1e-6)
        _close(we, wt)
        _close(m, opt.state[wt]["exp_avg"])
        _close(v, opt.state[wt]["exp_avg_sq"])


@pytest.mark.parametrize("fn", [
    lambda m, s: s.to_dense(),
    lambda m, s: s.coalesce().to_dense(),
    lambda m, s: (s * 3 + s.coalesce()).to_dense(),
    lambda m, s: m.sparse.softmax(s, 1).to_dense(),
    lambda m, s: m.sparse.log_softmax(s, 0).to_dense(),
    lambda m, s: m.sparse.sum(s, 1).to_dense(),
    lambda m, s: s.t().to_dense(),
])
def test_gradients_to_values(fn):
    ve = ember.tensor(VAL, requires_grad=True)
    vt = torch.tensor(VAL, requires_grad=True)
    re = fn(ember, ember.sparse_coo_tensor(IND, ve, SIZE))
    rt = fn(torch, torch.sparse_coo_tensor(IND, vt, SIZE))
    _close(re, rt)
    wt = torch.randn(rt.shape)
    we = ember.tensor(wt.numpy())
    (re * we).sum().backward()
    (rt * wt).sum().backward()
    _close(ve.grad, vt.grad)


def test_to_sparse_gradient():
    x = torch.tensor([[0., 1., 0.], [2., 0., 3.]], requires_grad=True)
    e = ember.tensor(x.detach().numpy(), requires_grad=True)
    d = torch.randn(3, 2)
    torch.sparse.mm(x.to_sparse(), d).sum().backward()
    ember.sparse.mm(e.to_sparse(), ember.tensor(d.numpy())).sum().backward()
    _close(e.grad, x.grad)


@pytest.mark.parametrize("opt_name", ["SGD", "SparseAdam"])
def test_sparse_embedding_trains_like_torch(opt_name):
    """Embedding(sparse=True) end to end: a sparse COO weight gradient from backward(),
    consumed by SGD / SparseAdam, the weights following PyTorch's step by step."""
    def run(lib):
        w = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
        emb = lib.nn.Embedding(7, 3, sparse=True, padding_idx=2)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w))
        opt = getattr(lib.optim, opt_name)(emb.parameters(), lr=0.1)
        for step in range(3):
            idx = lib.tensor([[1, 2, 4], [4, 4, 6], [0, 1, 2]][step:] + [[5, 5, 3]])
            opt.zero_grad()
            (emb(idx) ** 2).sum().backward()
            assert emb.weight.grad.is_sparse
            opt.step()
        return emb.weight.detach().numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-6, atol=1e-7)
