"""Adam, AdamW and SGD update a complex parameter as PyTorch does: as the pairs of reals
``view_as_real`` shows (Adam's second moment per part), on the multi-tensor op's path."""
import numpy as np
import pytest
import torch

import ember

W0 = np.array([[1 + 2j, -0.5 + 0.25j], [0.3 - 1j, 2 + 0j]], np.complex64)
X = np.array([[0.5 - 1j], [1.5 + 0.5j]], np.complex64)


def _train(lib, name, kw, steps=3):
    w = lib.from_numpy(W0.copy()).requires_grad_()
    x = lib.from_numpy(X.copy())
    opt = getattr(lib.optim, name)([w], lr=0.1, **kw)
    for _ in range(steps):
        opt.zero_grad()
        (w @ x).abs().pow(2).sum().backward()
        opt.step()
    return w.detach().numpy(), opt


@pytest.mark.parametrize("name,kw", [
    ("Adam", {}), ("Adam", {"amsgrad": True}), ("Adam", {"foreach": False}),
    ("AdamW", {"weight_decay": 0.1}), ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"weight_decay": 0.1}), ("SGD", {}),
    ("RMSprop", {}), ("RMSprop", {"centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("Adagrad", {"weight_decay": 0.1}), ("Adamax", {}), ("NAdam", {}),
    ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}), ("RAdam", {}),
    ("Adadelta", {}), ("ASGD", {"t0": 1}), ("Rprop", {}),
])
def test_complex_parameter_updates_match_torch(name, kw):
    want, topt = _train(torch, name, kw)
    got, eopt = _train(ember, name, kw)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the state stays complex, as PyTorch's
    assert eopt.state_dict()["state"].keys() == topt.state_dict()["state"].keys()
    for key, t in topt.state_dict()["state"].get(0, {}).items():
        e = eopt.state_dict()["state"][0][key]
        assert e.dtype.is_complex == t.dtype.is_complex, key
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
