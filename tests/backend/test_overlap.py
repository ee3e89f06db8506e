"""Writes into memory that overlaps, on every device, against PyTorch 2.13.

* **Internal overlap** — a written-to tensor with a dim of size > 1 and stride 0 (made by
  ``expand`` or broadcasting): several elements are one memory location, threads race and
  the result changes from run to run. Every in-place op and every ``out=`` raises PyTorch's
  "unsupported operation: more than one element of the written-to tensor refers to a
  single memory location" where PyTorch does. The ops come from the op table: every op of
  ``ember.dispatcher.schema.OPS`` with a ``Tensor.<name>_`` method or an ``out=``
  argument is covered, the elementwise ones from their definitions alone (a new op is
  tested the moment it is defined), the others from the tables below, which a test keeps
  complete.
* **Assignment** ``x[key] = value``: PyTorch copies into the view a basic key makes (into
  ``x[None]`` for a bare ``True``) and raises where that view overlaps itself, for a
  scalar value too (``fill_`` itself stays allowed); advanced keys (index tensors, masks,
  bools inside a tuple) go through ``index_put_``, which writes and warns that this is
  deprecated. ember matches each form, with and without autograd; the error names
  ``__setitem__``, and ops that write through ``copy_`` (``div_``, ``index_add_``,
  ``masked_fill_``) name themselves.
* **Partial overlap** between an input and the output (``x[1:].add_(x[:-1])``): PyTorch
  refuses it; ember reads the inputs before writing, as the issue asks (the input is
  copied first), so the oracle is PyTorch on ``clone()``d inputs. An input that *is* the
  output (``x.mul_(x)``) needs no copy for an elementwise op and none is made; for the
  other ops (matmul, reductions) it is copied too.

Differences from PyTorch, each deliberate:

* ``out=`` with internal overlap of a reduction (sum, prod, argmax, argmin) or of ``bmm``:
  PyTorch does not check these outs and writes several results over each other (the last
  one wins), while it raises for ``mean`` and ``mm``; ember raises for all (a result that
  depends on the order of writes is never wanted). The same for the outs of ``cummax``,
  ``cummin``, ``histc``, ``multinomial`` and ``randperm``, and for ``tril_``/``triu_`` into
  an expanded tensor (PyTorch checks none of these).
* ``masked_fill_`` and ``index_fill_`` into an expanded tensor: PyTorch warns that this is
  deprecated (and will become an error); ember raises that error already.
* PyTorch raises for partial overlap; ember computes the result as if the inputs had been
  cloned (the issue's request).

Overlapping layouts other than stride 0 (``as_strided`` with strides smaller than the
extents below them) are "too hard to tell" in PyTorch and not rejected there; nor here.
"""
import inspect
import re
import warnings
import zlib
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

import ember
from conftest import DEVICES
from ember.dispatcher.schema import OPS, elementwise_ops

MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to "
           "a single memory location. Please clone() the tensor before performing the "
           "operation.")


def _opencl_installed() -> bool:
    """ember-opencl is installed (asked of the entry points: looking for a device here would
    start OpenCL in the test process at collection, before tests that fork)."""
    return any(ep.name == "opencl" for ep in entry_points(group="ember.backends"))


@pytest.fixture(params=DEVICES + (["opencl"] if _opencl_installed() else []))
def device(request):
    """The backend tests' devices, and opencl where ember-opencl is installed."""
    return request.param


def E(arr, device, dtype=None):
    t = ember.tensor(np.asarray(arr))
    return (t if dtype is None else t.to(dtype)).to(device)


def TT(arr, dtype=None):
    t = torch.tensor(np.asarray(arr))
    return t if dtype is None else t.to(dtype)


def assert_same(got, want, what, loose=False):
    """ember tensor ``got`` has torch tensor ``want``'s dtype and values (NaN == NaN)."""
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), what
    act = got.cpu().numpy()
    exp = want.numpy()
    if want.dtype.is_floating_point:
        tol = 2e-5 if loose else 2e-6
        np.testing.assert_allclose(act.astype(np.float64), exp.astype(np.float64), rtol=tol,
                                   atol=tol / 2, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(act, exp, err_msg=what)


def torch_raises_overlap(fn) -> bool:
    """Whether PyTorch raises the internal-overlap error for ``fn()`` (the oracle)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except RuntimeError as e:
        assert "single memory location" in str(e), e
        return True
    return False


# ---- elementwise ops, from their definitions ---------------------------------------------
# (polygamma takes its order n before the tensor: tests/ops/test_elementwise_family.py)
ELEMENTWISE = [o for o in elementwise_ops() if o.name != "polygamma"]
#: ops defined on integers only although their promotion is the default one
_INTEGER_ONLY = {"gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"}
#: ops whose fallback (composite) computes a series approximation: a few float32 ulps from
#: PyTorch's library function on the backends without their kernel
_SERIES = {"lgamma", "digamma", "erfinv", "logit"}


def _integral(o) -> bool:
    return o.promotion == "integral" or o.name in _INTEGER_ONLY
INPLACE = [o for o in ELEMENTWISE if "inplace" in o.variants]


def _takes_out(fn) -> bool:
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


#: the elementwise ops whose ``ember.<name>`` takes ``out=``
WITH_OUT = [o for o in ELEMENTWISE if _takes_out(getattr(ember, o.name, None))]


def _dtypes(o):
    """(ember, torch) dtype of the written tensor: integers for bitwise ops, else float32."""
    return (ember.int64, torch.int64) if _integral(o) else (
        ember.float32, torch.float32)


def _values(o, shape, seed):
    """Values every input of ``o`` accepts: inside the op's domain and away from zero
    (divisors), small integers for integer ops; one array serves for all inputs."""
    rng = np.random.default_rng(zlib.crc32(f"{o.name}-{seed}".encode()))
    if _integral(o):
        return rng.integers(1, 7, shape)
    lo, hi = o.domain or (-3.0, 3.0)
    v = rng.uniform(lo, hi, shape)
    return np.where(np.abs(v) < 0.25, 0.5 if hi > 0.5 else hi, v).astype(np.float32)


def torch_out(name, ins, out):
    """``torch.<name>(*ins, out=out)``; for the few ops whose PyTorch function has no
    ``out=`` (``isnan``: ember's generated one has), their result copied into ``out``."""
    fn = getattr(torch, name)
    try:
        return fn(*ins, out=out)
    except TypeError as e:
        assert "unexpected keyword argument 'out'" in str(e), e
    return out.copy_(fn(*ins))


def _bool_args(o):
    """Positions of ``o``'s bool inputs (where's condition)."""
    return [i for i, v in enumerate(o.body_inputs()) if v.value[2] == "bool"]


@pytest.mark.parametrize("name", [o.name for o in INPLACE])
def test_inplace_into_an_expanded_tensor_raises(device, name):
    """``zeros(1).expand(5).<op>_(...)``: PyTorch raises, so does ember (the issue's
    ``x.expand(4_000_000).add_(1)`` raced on every run)."""
    o = OPS[name]
    edt, tdt = _dtypes(o)
    vals = _values(o, (5,), "expand")
    tx = torch.ones(1, dtype=tdt).expand(5)
    targs = [TT(vals, tdt)] * (len(o.body_inputs()) - 1)
    assert torch_raises_overlap(lambda: getattr(tx, name + "_")(*targs)), name
    x = E([1], device, edt).expand(5)
    eargs = [E(vals, device, edt)] * (len(o.body_inputs()) - 1)
    # named by the op (div_ writes through copy_, yet the error names div_)
    with pytest.raises(RuntimeError, match=f"^{name}_\\(\\): {re.escape(MESSAGE)}"):
        getattr(x, name + "_")(*eargs)
    assert x.cpu().numpy().tolist() == [1] * 5, "nothing may be written"


@pytest.mark.parametrize("name", [o.name for o in WITH_OUT])
def test_out_into_an_expanded_tensor_raises(device, name):
    o = OPS[name]
    edt, tdt = _dtypes(o)
    vals = _values(o, (5,), "out")
    conds = np.array([True, False, True, True, False])
    n = len(o.body_inputs())
    tins = [TT(conds) if i in _bool_args(o) else TT(vals, tdt) for i in range(n)]
    # (a predicate's out= must be bool)
    oe, ot = (ember.bool, torch.bool) if o.promotion == "bool_out" else (edt, tdt)
    tout = torch.zeros(1, dtype=ot).expand(5)
    assert torch_raises_overlap(lambda: torch_out(name, tins, tout)), name
    eins = [E(conds, device) if i in _bool_args(o) else E(vals, device, edt)
            for i in range(n)]
    with pytest.raises(RuntimeError, match="single memory location"):
        getattr(ember, name)(*eins, out=E([0], device, oe).expand(5))


@pytest.mark.parametrize("name", [o.name for o in INPLACE])
def test_inplace_with_partially_overlapping_inputs(device, name):
    """``x[1:].<op>_(x[:-1], ...)`` equals PyTorch on a clone of ``x[:-1]``, and so does an
    input that is the whole row of a broadcast (``x.<op>_(x[0])``) or a transpose
    (``x.<op>_(x.t())``); ``x.<op>_(x, ...)`` (the very same view) too."""
    o = OPS[name]
    edt, tdt = _dtypes(o)
    n_other = len(o.body_inputs()) - 1
    vals = _values(o, (7,), "partial")
    cases = {
        "shifted": (vals, lambda x: (x[1:], x[:-1])),
        "row": (_values(o, (3, 4), "row"), lambda x: (x, x[0])),
        "transposed": (_values(o, (4, 4), "t"), lambda x: (x, x.t())),
        "same": (vals, lambda x: (x, x)),
    }
    for case, (arr, pick) in cases.items():
        tx = TT(arr, tdt)
        dest, src = pick(tx)
        getattr(dest, name + "_")(*[src.clone()] * n_other)
        ex = E(arr, device, edt)
        dest, src = pick(ex)
        res = getattr(dest, name + "_")(*[src] * n_other)
        assert res is dest
        assert_same(ex, tx, f"{name}_ {case}", loose=name in _SERIES)


@pytest.mark.parametrize("name", [o.name for o in WITH_OUT])
def test_out_overlapping_the_inputs(device, name):
    """``ember.<op>(x[:-1], ..., out=x[1:])`` (partial) and ``out=`` the first input itself
    (exact aliasing) equal PyTorch on cloned inputs."""
    o = OPS[name]
    edt, tdt = _dtypes(o)
    n = len(o.body_inputs())
    bools = _bool_args(o)
    conds = np.array([True, False, True, True, False, True])
    vals = _values(o, (7,), "partial-out")
    for case, pick in (("shifted", lambda x: (x[1:], x[:-1])),
                       ("same", lambda x: (x[1:], x[1:]))):
        tx = TT(vals, tdt)
        dest, src = pick(tx)
        tins = [TT(conds) if i in bools else src.clone() for i in range(n)]
        ex = E(vals, device, edt)
        edest, esrc = pick(ex)
        eins = [E(conds, device) if i in bools else esrc for i in range(n)]
        try:
            torch_out(name, tins, dest)
        except RuntimeError as e:   # a result PyTorch will not cast to the out's dtype
            # (or a predicate given a non-bool out=: ember words it in its own terms)
            bool_out = "non-boolean outputs" in str(e)
            assert bool_out or "can't be cast" in str(e), e
            with pytest.raises(RuntimeError, match="expected Bool" if bool_out else
                               "can't be cast"):
                getattr(ember, name)(*eins, out=edest)
            continue
        getattr(ember, name)(*eins, out=edest)
        assert_same(ex, tx, f"{name} out= {case}", loose=name in _SERIES)


# ---- the other in-place ops --------------------------------------------------------------
def makers(device):
    """(torch, new) and (ember, new) where ``new(data, dtype=None)`` makes a tensor of that
    library on the test's device."""
    return (torch, lambda d, dt=None: TT(d, dt)), (ember, lambda d, dt=None: E(d, device, dt))


#: op -> (fn(x, src, new) writing into x in place, whether PyTorch raises for an expanded
#: x (True) / writes without error (False) / only warns that this is deprecated ("warns") /
#: writes without checking, several results over each other ("unchecked": ember raises,
#: see the module docstring))
OTHER_INPLACE = {
    "copy": (lambda x, src, new: x.copy_(src), True),
    "relu": (lambda x, src, new: x.relu_(), True),
    "polygamma": (lambda x, src, new: x.polygamma_(1), True),
    "fill": (lambda x, src, new: x.fill_(2.5), False),
    "scatter": (lambda x, src, new: x.scatter_(0, new([2, 0, 1]), src[:3]), True),
    "index_put": (lambda x, src, new: x.index_put_((new([0, 3]),), src[:2]), False),
    "index_add": (lambda x, src, new: x.index_add_(0, new([1, 2]), src[:2]), True),
    "masked_fill": (lambda x, src, new: x.masked_fill_(src > 0, -1.0), "warns"),
    "uniform": (lambda x, src, new: x.uniform_(), True),
    "normal": (lambda x, src, new: x.normal_(), True),
    "addmm": (lambda x, src, new: x.unsqueeze(0).addmm_(src[:1, None], src[None]), True),
    "tril": (lambda x, src, new: x.unsqueeze(0).tril_(), "unchecked"),
    "triu": (lambda x, src, new: x.unsqueeze(0).triu_(1), "unchecked"),
    "cumsum": (lambda x, src, new: x.cumsum_(0), True),
    "cumprod": (lambda x, src, new: x.cumprod_(0), True),
    "renorm": (lambda x, src, new: x.unsqueeze(0).renorm_(2, 0, 1.0), True),
    "scatter_reduce": (lambda x, src, new: x.scatter_reduce_(0, new([2, 0]), src[:2], "amax"),
                       True),
    "index_reduce": (lambda x, src, new: x.index_reduce_(0, new([1, 2]), src[:2], "amax"),
                     True),
    "index_copy": (lambda x, src, new: x.index_copy_(0, new([1, 2]), src[:2]), True),
    "index_fill": (lambda x, src, new: x.index_fill_(0, new([1, 2]), -1.0), "warns"),
    "masked_scatter": (lambda x, src, new: x.masked_scatter_(src > 0, src), True),
    "put": (lambda x, src, new: x.put_(new([1, 3]), src[:2]), True),
    "bernoulli": (lambda x, src, new: x.bernoulli_(0.5), True),
    "exponential": (lambda x, src, new: x.exponential_(), True),
    "geometric": (lambda x, src, new: x.geometric_(0.3), True),
    "log_normal": (lambda x, src, new: x.log_normal_(), True),
    "cauchy": (lambda x, src, new: x.cauchy_(), True),
    "random": (lambda x, src, new: x.random_(0, 10), True),
}


def test_every_inplace_op_of_the_table_is_covered():
    """Every op with a ``Tensor.<name>_`` method is tested here (a new one must be added)."""
    have = {n for n in OPS if hasattr(ember.Tensor, n + "_")}
    assert have == {o.name for o in INPLACE} | set(OTHER_INPLACE)


@pytest.mark.parametrize("name", sorted(OTHER_INPLACE))
def test_other_inplace_into_an_expanded_tensor(device, name):
    fn, torch_raises = OTHER_INPLACE[name]
    (_, tnew), (_, enew) = makers(device)
    src = np.array([1.5, -2.0, 3.0, -0.5, 4.0], np.float32)
    tx = torch.zeros(1).expand(5)
    assert torch_raises_overlap(lambda: fn(tx, tnew(src), tnew)) == (torch_raises is True)
    x = enew(np.zeros(1, np.float32)).expand(5)
    if torch_raises:        # "warns": the error PyTorch has announced
        # named by the op, also where it writes through copy_ (index_add_, masked_fill_)
        with pytest.raises(RuntimeError, match=f"^{name}_\\(\\): .*single memory location"):
            fn(x, enew(src), enew)
        assert x.cpu().numpy().tolist() == [0] * 5, "nothing may be written"
        return
    # one value per memory location: well defined, and PyTorch's result, with PyTorch's
    # warning where it gives one (index_put_: "deprecated on expanded tensors")
    tx = torch.zeros(1)
    with warnings.catch_warnings(record=True) as twarn:
        warnings.simplefilter("always")
        fn(tx.expand(5), tnew(src), tnew)
    x = enew(np.zeros(1, np.float32))
    with warnings.catch_warnings(record=True) as ewarn:
        warnings.simplefilter("always")
        fn(x.expand(5), enew(src), enew)
    assert_same(x, tx, name)
    assert _deprecated(ewarn) == _deprecated(twarn), name


def _deprecated(caught) -> bool:
    """Whether the caught warnings hold PyTorch's "on expanded tensors is deprecated"."""
    return any("on expanded tensors is deprecated" in str(w.message) for w in caught)


#: op -> fn(x, clone, new) writing into x from a view of x that overlaps it in part
OTHER_PARTIAL = {
    "copy": lambda x, c, new: x[1:].copy_(c(x[:-1])),
    "scatter": lambda x, c, new: x[2:].scatter_(0, new([3, 0, 1]), c(x[:3])),
    "index_put": lambda x, c, new: x.index_put_((new([1, 4, 2]),), c(x[:3])),
    "index_add": lambda x, c, new: x[1:].index_add_(0, new([0, 2, 3]), c(x[:3])),
}


@pytest.mark.parametrize("name", sorted(OTHER_PARTIAL))
def test_other_inplace_with_partially_overlapping_inputs(device, name):
    (_, tnew), (_, enew) = makers(device)
    vals = np.array([1.5, -2.0, 3.0, -0.5, 4.0, 0.25], np.float32)
    tx = tnew(vals)
    OTHER_PARTIAL[name](tx, lambda t: t.clone(), tnew)
    ex = enew(vals)
    OTHER_PARTIAL[name](ex, lambda t: t, enew)
    assert_same(ex, tx, name)


def test_scatter_with_an_index_sharing_its_memory(device):
    """``x.scatter_(0, x, src)``: the index is read before x is written."""
    tx = torch.tensor([2, 0, 1, 3])
    tx.scatter_(0, tx.clone(), torch.tensor([7, 8, 9, 6]))
    ex = E([2, 0, 1, 3], device)
    ex.scatter_(0, ex, E([7, 8, 9, 6], device))
    assert_same(ex, tx, "scatter_ index")


# ---- out= of the other ops ---------------------------------------------------------------
A = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
ONES = np.ones((4, 2), np.float32)

#: op -> (fn(lib, new, a, out), the out's shape and dtype): the ops whose ``ember.<name>``
#: takes ``out=``
OTHER_OUT = {
    "polygamma": (lambda lib, new, a, out: lib.polygamma(1, a + 2, out=out), (3, 4), "float32"),
    "gather": (lambda lib, new, a, out: lib.gather(a, 1, new([[0, 2]] * 3), out=out),
               (3, 2), "float32"),
    "index_select": (lambda lib, new, a, out: lib.index_select(a, 1, new([3, 1]), out=out),
                     (3, 2), "float32"),
    "cat": (lambda lib, new, a, out: lib.cat([a, a], 0, out=out), (6, 4), "float32"),
    "stack": (lambda lib, new, a, out: lib.stack([a, a], 0, out=out), (2, 3, 4), "float32"),
    "cumsum": (lambda lib, new, a, out: lib.cumsum(a, 1, out=out), (3, 4), "float32"),
    "cumprod": (lambda lib, new, a, out: lib.cumprod(a, 1, out=out), (3, 4), "float32"),
    "sum": (lambda lib, new, a, out: lib.sum(a, 1, out=out), (3,), "float32"),
    "prod": (lambda lib, new, a, out: lib.prod(a, 1, out=out), (3,), "float32"),
    "mean": (lambda lib, new, a, out: lib.mean(a, 1, out=out), (3,), "float32"),
    "argmax": (lambda lib, new, a, out: lib.argmax(a, 1, out=out), (3,), "int64"),
    "argmin": (lambda lib, new, a, out: lib.argmin(a, 1, out=out), (3,), "int64"),
    "mm": (lambda lib, new, a, out: lib.mm(a, new(ONES), out=out), (3, 2), "float32"),
    "matmul": (lambda lib, new, a, out: lib.matmul(a, new(ONES), out=out), (3, 2),
               "float32"),
    "bmm": (lambda lib, new, a, out: lib.bmm(a[None], new(ONES[None]), out=out), (1, 3, 2),
            "float32"),
    # reductions, scans, statistics, search
    "cummax": (lambda lib, new, a, out: lib.cummax(a, 1, out=(out, lib.empty(
        3, 4, dtype=lib.int64, device=a.device))), (3, 4), "float32"),
    "cummin": (lambda lib, new, a, out: lib.cummin(a, 1, out=(out, lib.empty(
        3, 4, dtype=lib.int64, device=a.device))), (3, 4), "float32"),
    "logcumsumexp": (lambda lib, new, a, out: lib.logcumsumexp(a, 1, out=out), (3, 4),
                     "float32"),
    "median": (lambda lib, new, a, out: lib.median(a, 1, out=(out, lib.empty(
        3, dtype=lib.int64, device=a.device))), (3,), "float32"),
    "nanmedian": (lambda lib, new, a, out: lib.nanmedian(a, 1, out=(out, lib.empty(
        3, dtype=lib.int64, device=a.device))), (3,), "float32"),
    "mode": (lambda lib, new, a, out: lib.mode(a, 1, out=(out, lib.empty(
        3, dtype=lib.int64, device=a.device))), (3,), "float32"),
    "kthvalue": (lambda lib, new, a, out: lib.kthvalue(a, 2, 1, out=(out, lib.empty(
        3, dtype=lib.int64, device=a.device))), (3,), "float32"),
    "aminmax": (lambda lib, new, a, out: lib.aminmax(a, dim=1, out=(out, lib.empty(
        3, device=a.device))), (3,), "float32"),
    "quantile": (lambda lib, new, a, out: lib.quantile(a, 0.5, 1, out=out), (3,), "float32"),
    "nanquantile": (lambda lib, new, a, out: lib.nanquantile(a, 0.5, 1, out=out), (3,),
                    "float32"),
    "histc": (lambda lib, new, a, out: lib.histc(a, 4, out=out), (4,), "float32"),
    "searchsorted": (lambda lib, new, a, out: lib.searchsorted(new([-0.5, 0.5]), a, out=out),
                     (3, 4), "int64"),
    "bucketize": (lambda lib, new, a, out: lib.bucketize(a, new([-0.5, 0.5]), out=out),
                  (3, 4), "int64"),
    "diff": (lambda lib, new, a, out: lib.diff(a, out=out), (3, 3), "float32"),
    "renorm": (lambda lib, new, a, out: lib.renorm(a, 2, 0, 1.0, out=out), (3, 4), "float32"),
    # shape and index ops
    "diag": (lambda lib, new, a, out: lib.diag(a, out=out), (3,), "float32"),
    "take_along_dim": (lambda lib, new, a, out: lib.take_along_dim(a, new([[0, 2]] * 3), 1,
                                                                   out=out), (3, 2), "float32"),
    "kron": (lambda lib, new, a, out: lib.kron(a, new(ONES), out=out), (12, 8), "float32"),
    "tensordot": (lambda lib, new, a, out: lib.tensordot(a, new(ONES), 1, out=out), (3, 2),
                  "float32"),
    # creation and sampling: the out's device is the device
    "logspace": (lambda lib, new, a, out: lib.logspace(0, 1, 5, out=out), (5,), "float32"),
    "range": (lambda lib, new, a, out: lib.range(0, 4, out=out), (5,), "float32"),
    "normal": (lambda lib, new, a, out: lib.normal(a, 1.0, out=out), (3, 4), "float32"),
    "randint": (lambda lib, new, a, out: lib.randint(0, 5, (3, 4), out=out), (3, 4), "int64"),
    "randperm": (lambda lib, new, a, out: lib.randperm(5, out=out), (5,), "int64"),
    "bernoulli": (lambda lib, new, a, out: lib.bernoulli(a.abs() / 4, out=out), (3, 4),
                  "float32"),
    "multinomial": (lambda lib, new, a, out: lib.multinomial(new(ONES), 1, out=out), (4, 1),
                    "int64"),
    # linear algebra
    "geqrf": (lambda lib, new, a, out: lib.geqrf(a, out=(out, lib.empty(3, device=a.device))),
              (3, 4), "float32"),
    "ormqr": (lambda lib, new, a, out: lib.ormqr(a, a[0, :3] * 0 + 0.5, a, out=out), (3, 4),
              "float32"),
    # out= added with the signature parity fixes (issue 14)
    "addmm": (lambda lib, new, a, out: lib.addmm(a[:, :2], a, new(ONES), out=out), (3, 2),
              "float32"),
    "all": (lambda lib, new, a, out: lib.all(a, 1, out=out), (3,), "bool"),
    "any": (lambda lib, new, a, out: lib.any(a, 1, out=out), (3,), "bool"),
    "index_add": (lambda lib, new, a, out: lib.index_add(a, 1, new([3, 1]), new(ONES[:3]),
                                                         out=out), (3, 4), "float32"),
    "index_copy": (lambda lib, new, a, out: lib.index_copy(a, 1, new([3, 1]), new(ONES[:3]),
                                                           out=out), (3, 4), "float32"),
    "logsumexp": (lambda lib, new, a, out: lib.logsumexp(a, 1, out=out), (3,), "float32"),
    "max": (lambda lib, new, a, out: lib.max(a, 1, out=(out, lib.empty(
        3, dtype=lib.int64, device=a.device))), (3,), "float32"),
    "min": (lambda lib, new, a, out: lib.min(a, 1, out=(out, lib.empty(
        3, dtype=lib.int64, device=a.device))), (3,), "float32"),
    "mv": (lambda lib, new, a, out: lib.mv(a, new(ONES[:, 0]), out=out), (3,), "float32"),
    "nonzero": (lambda lib, new, a, out: lib.nonzero(a, out=out), (11, 2), "int64"),
    "outer": (lambda lib, new, a, out: lib.outer(a[0], a[1], out=out), (4, 4), "float32"),
    "scatter": (lambda lib, new, a, out: lib.scatter(a, 1, new([[0, 2]] * 3), new(ONES[:3]),
                                                     out=out), (3, 4), "float32"),
    "sort": (lambda lib, new, a, out: lib.sort(a, 1, out=(out, lib.empty(
        3, 4, dtype=lib.int64, device=a.device))), (3, 4), "float32"),
    "topk": (lambda lib, new, a, out: lib.topk(a, 2, out=(out, lib.empty(
        3, 2, dtype=lib.int64, device=a.device))), (3, 2), "float32"),
    "std": (lambda lib, new, a, out: lib.std(a, 1, out=out), (3,), "float32"),
    "var": (lambda lib, new, a, out: lib.var(a, 1, out=out), (3,), "float32"),
    "tril": (lambda lib, new, a, out: lib.tril(a, out=out), (3, 4), "float32"),
    "triu": (lambda lib, new, a, out: lib.triu(a, out=out), (3, 4), "float32"),
    "arange": (lambda lib, new, a, out: lib.arange(5.0, out=out), (5,), "float32"),
    "eye": (lambda lib, new, a, out: lib.eye(3, out=out), (3, 3), "float32"),
    "linspace": (lambda lib, new, a, out: lib.linspace(0, 1, 5, out=out), (5,), "float32"),
}
#: ops whose out= PyTorch lets several results write to one location (see the module
#: docstring): ember raises
RAISES_WHERE_PYTORCH_DOES_NOT = {"sum", "prod", "argmax", "argmin", "bmm", "cummax", "cummin",
                                 "histc", "multinomial", "randperm", "all", "any", "eye", "mv",
                                 "std", "tril", "triu", "var"}
#: ops taking out= whose result is 0-d: an expanded out has a different shape and is resized
ZERO_D_OUT = {"dot"}


def test_every_out_op_of_the_table_is_covered():
    """Every op whose ``ember.<name>`` takes ``out=`` is tested here or from its definition."""
    have = {n for n in OPS if _takes_out(getattr(ember, n, None))}
    assert have == {o.name for o in WITH_OUT} | set(OTHER_OUT) | ZERO_D_OUT


@pytest.mark.parametrize("name", sorted(OTHER_OUT))
def test_other_out_into_an_expanded_tensor(device, name):
    fn, shape, dt = OTHER_OUT[name]
    (_, tnew), (_, enew) = makers(device)
    tout = torch.zeros((1,) * len(shape), dtype=getattr(torch, dt)).expand(*shape)
    assert torch_raises_overlap(lambda: fn(torch, tnew, tnew(A), tout)) != (
        name in RAISES_WHERE_PYTORCH_DOES_NOT), name
    out = enew(np.zeros((1,) * len(shape)), getattr(ember, dt)).expand(*shape)
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): .*single memory location"):
        fn(ember, enew, enew(A), out)
    assert not out.cpu().numpy().any(), "nothing may be written"


#: case -> fn(lib, x, clone): out= a view of the input x
OTHER_OUT_OVERLAP = {
    "mm (out is the input)": lambda lib, x, c: lib.mm(c(x[:, :3]), c(x[:, :3]),
                                                      out=x[:, :3]),
    "bmm (out is the input)": lambda lib, x, c: lib.bmm(c(x[None, :, :3]), c(x[None, :, :3]),
                                                        out=x[None, :, :3]),
    "sum (out is a column of the input)": lambda lib, x, c: lib.sum(c(x), 1, out=x[:, 1]),
    "cumsum (out is the input)": lambda lib, x, c: lib.cumsum(c(x), 1, out=x),
    "where (out is an operand)": lambda lib, x, c: lib.where(c(x) > 0, c(x[0]), c(x),
                                                             out=x),
}


@pytest.mark.parametrize("case", sorted(OTHER_OUT_OVERLAP))
def test_other_out_overlapping_the_inputs(device, case):
    tx = TT(A)
    OTHER_OUT_OVERLAP[case](torch, tx, lambda t: t.clone())
    ex = E(A, device)
    OTHER_OUT_OVERLAP[case](ember, ex, lambda t: t)
    assert_same(ex, tx, case)


# ---- layouts -----------------------------------------------------------------------------
def test_what_counts_as_internal_overlap(device):
    """Stride 0 on a dim of size > 1 raises; stride 0 on size-1 dims, empty tensors and
    disjoint views of one storage do not; nor does an ``as_strided`` view whose rows
    overlap (PyTorch's "too hard" case, which it does not reject)."""
    x = E(np.zeros(1, np.float32), device)
    with pytest.raises(RuntimeError, match="single memory location"):
        x.expand(4_000_000).add_(1)
    assert x.cpu().numpy().tolist() == [0.0]
    x.expand(1, 1).add_(1)
    x.expand(0, 3).add_(1)
    assert x.cpu().numpy().tolist() == [1.0]
    y = E(np.zeros(10, np.float32), device)
    torch.zeros(10).as_strided((4, 2), (1, 1)).add_(1)      # PyTorch: no error
    ember.as_strided(y, (4, 2), (1, 1)).add_(1)
    y[:5].add_(y[5:])                                          # disjoint: no copy needed
    t = torch.arange(6.).reshape(2, 3)
    t.add_(torch.arange(6.).reshape(2, 3)[:, :1])
    e = E(np.arange(6.0, dtype=np.float32).reshape(2, 3), device)
    e.add_(e[:, :1])                                         # a column broadcast over rows
    assert_same(e, t, "column broadcast")


# ---- assignment: x[key] = value ----------------------------------------------------------
#: keys of ``x[key] = value`` into ``zeros(1, 3).expand(4, 3)`` (rows share memory): basic
#: keys (PyTorch copies into the view they make, so it raises where that view overlaps
#: itself), bools (a bare True copies into ``x[None]``; bools in a tuple and index tensors
#: are advanced indexing: index_put_, which PyTorch lets through with a deprecation warning
#: when what it indexes into overlaps)
SETITEM_KEYS = {
    "...": Ellipsis, ":": slice(None), "0": 0, ":, 0": (slice(None), 0), "0, 0": (0, 0),
    "1:3": slice(1, 3), "0:1": slice(0, 1), "::4": slice(None, None, 4), "None": None,
    "None, ...": (None, Ellipsis), "0, None": (0, None), ":, 1:2": (slice(None), slice(1, 2)),
    "True": True, "False": False, "(True,)": (True,), "True, ...": (True, Ellipsis),
    "0, True": (0, True), "[0, 2]": [0, 2], "mask": [True, False, True, False],
    "[[1]], 1": ([[1]], 1),
}
#: values: Python scalars (these went to fill_, which must stay allowed), tensors
SETITEM_VALUES = {"float": 2.5, "bool": True, "0-d tensor": np.float32(2.5),
                  "row tensor": np.array([1.0, 2.0, 3.0], np.float32)}


def _setitem_outcome(lib, new, key, value, grad):
    """What ``zeros(1, 3).expand(4, 3)[key] = value`` does in ``lib``: ("overlap", message),
    (error type, message), or ("ok", whether it warned "deprecated", the values of the
    memory behind the expanded tensor)."""
    def conv(k):
        if isinstance(k, tuple):
            return tuple(conv(e) for e in k)
        return new(k) if isinstance(k, list) else k
    base = new(np.zeros((1, 3), np.float32))
    if grad:
        base.requires_grad_(True)
        base = base.clone()         # a non-leaf: in-place writes are recorded
    x = base.expand(4, 3)
    v = new(value) if isinstance(value, (np.ndarray, np.floating)) else value
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            x[conv(key)] = v
        except (RuntimeError, IndexError, TypeError) as e:
            kind = "overlap" if "single memory location" in str(e) else type(e).__name__
            return kind, str(e)
    return "ok", _deprecated(caught), base.detach().cpu().numpy().tolist()


@pytest.mark.parametrize("key", sorted(SETITEM_KEYS))
def test_setitem_into_an_expanded_tensor(device, key):
    """Every form of ``x[key] = value`` into an expanded tensor raises, warns or writes
    exactly as PyTorch does, with and without autograd; the error names ``__setitem__``
    and nothing is written."""
    (_, tnew), (_, enew) = makers(device)
    for vname, value in SETITEM_VALUES.items():
        for grad in (False, True):
            what = f"x[{key}] = {vname}{' (autograd)' if grad else ''}"
            want = _setitem_outcome(torch, tnew, SETITEM_KEYS[key], value, grad)
            got = _setitem_outcome(ember, enew, SETITEM_KEYS[key], value, grad)
            assert got[0] == want[0], f"{what}: PyTorch {want}, ember {got}"
            if want[0] == "overlap":
                assert got[1].startswith(f"__setitem__(): {MESSAGE}"), (what, got)
            elif want[0] == "ok":
                assert got[1:] == want[1:], f"{what}: PyTorch {want}, ember {got}"


def test_setitem_raises_before_writing(device):
    base = E(np.zeros((1, 3), np.float32), device)
    with pytest.raises(RuntimeError, match=re.escape(MESSAGE)):
        base.expand(4, 3)[...] = 7.0
    with pytest.raises(RuntimeError, match=re.escape(MESSAGE)):
        base.expand(4, 3)[1:3] = E(np.ones(3, np.float32), device)
    assert base.cpu().numpy().tolist() == [[0.0, 0.0, 0.0]]
    base.expand(4, 3).fill_(7.0)        # fill_ stays allowed, as in PyTorch
    base.expand(4, 3)[2] = 5.0          # one row: no element shares memory with another
    assert base.cpu().numpy().tolist() == [[5.0, 5.0, 5.0]]


#: keys with Python bools (PyTorch: a new dim of size 1, indexed by [0] for True and by []
#: for False, so ``x[False]`` selects nothing), alone or with other indices
BOOL_KEYS = {
    "True": True, "False": False, "(False,)": (False,), "0, True": (0, True),
    "False, 0": (False, 0), ":, False": (slice(None), False), "..., True": (Ellipsis, True),
    "True, ..., False": (True, Ellipsis, False), "None, True": (None, True),
    "True, [0, 1]": (True, [0, 1]), "[1, 0], True": ([1, 0], True), "True, True": (True, True),
    "0:1, False, 2": (slice(0, 1), False, 2),
}


@pytest.mark.parametrize("key", sorted(BOOL_KEYS))
def test_python_bool_keys(device, key):
    """``x[key]`` and ``x[key] = -1`` with Python bools in the key, against PyTorch."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (_, tnew), (_, enew) = makers(device)

    def conv(new, k):
        ks = k if isinstance(k, tuple) else (k,)
        out = tuple(new(e) if isinstance(e, list) else e for e in ks)
        return out if isinstance(k, tuple) else out[0]
    k = BOOL_KEYS[key]
    want, got = tnew(a)[conv(tnew, k)], enew(a)[conv(enew, k)]
    assert got.shape == tuple(want.shape), key
    assert_same(got, want, f"x[{key}]")
    tx, ex = tnew(a), enew(a)
    tx[conv(tnew, k)] = -1.0
    ex[conv(enew, k)] = -1.0
    assert_same(ex, tx, f"x[{key}] = -1")
