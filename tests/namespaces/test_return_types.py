"""``ember.return_types`` as ``torch.return_types``: the named tuples of ops with several
results print, pickle and unpack as PyTorch's do."""
import pickle

import pytest
import torch

import ember

X = [[1.0, 3.0, 2.0], [4.0, 0.5, 6.0]]


CASES = [
    ("max", lambda L, x: x.max(1)), ("min", lambda L, x: L.min(x, dim=0)),
    ("sort", lambda L, x: x.sort(dim=1)), ("topk", lambda L, x: x.topk(2)),
    ("median", lambda L, x: x.median(1)), ("mode", lambda L, x: x.mode(1)),
    ("kthvalue", lambda L, x: x.kthvalue(2, 1)), ("cummax", lambda L, x: L.cummax(x, 1)),
    ("aminmax", lambda L, x: L.aminmax(x)), ("frexp", lambda L, x: L.frexp(x)),
    ("linalg_eigh", lambda L, x: L.linalg.eigh(x @ x.T)),
    ("linalg_slogdet", lambda L, x: L.linalg.slogdet(x @ x.T)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_like_pytorch(name, fn):
    r, t = fn(ember, ember.tensor(X)), fn(torch, torch.tensor(X))
    assert type(r).__name__ == type(t).__name__ == name
    assert type(r).__module__ == "ember.return_types"
    assert getattr(ember.return_types, name) is type(r)
    assert isinstance(r, tuple) and len(r) == len(t)
    if name not in ("linalg_eigh",):   # (eigenvector signs may differ)
        assert repr(r) == repr(t).replace("torch.", "ember.")
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r) and all(a.equal(b) for a, b in zip(back, r))
    a, b = r   # unpacks as a tuple
    assert a is r[0] and b is r[1]
