"""The ``meta`` device (``ember.dispatcher.meta``): tensors with shapes and no data, checked
against PyTorch's — what ops give, moving modules there and off again (``to_empty``), the
errors for reading data that does not exist, and the torch.func model-ensembling recipe
whose base model lives on it."""
import copy

import numpy as np
import pytest
import torch

import ember
from ember.func import functional_call, stack_module_state, vmap


def _both(fn):
    """``fn(lib)`` for ember and for PyTorch."""
    return fn(ember), fn(torch)


def _shape_dtype_device(t):
    return tuple(t.shape), str(t.dtype).split(".")[-1], str(t.device)


@pytest.mark.parametrize("case", [
    lambda T: T.ones(2, 3, device="meta"),
    lambda T: T.empty(4, device="meta", dtype=T.float16),
    lambda T: T.randn(2, 5, device="meta"),
    lambda T: T.arange(6, device="meta").view(2, 3).t(),
    lambda T: T.ones(2, 3, device="meta").sum(0),
    lambda T: T.ones(2, 3, device="meta") @ T.ones(3, 4, device="meta"),
    lambda T: T.ones(2, 3, device="meta").softmax(-1).argmax(1),
    lambda T: T.cat([T.zeros(2, device="meta"), T.zeros(3, device="meta")]),
    lambda T: T.ones(2, 3, device="meta").to(T.int64) + 1.5,
    lambda T: T.zeros(3, 4).to("meta"),
    lambda T: T.zeros(3, 4).to("meta", T.float64),
    lambda T: T.empty_like(T.zeros(2, 2, device="meta")),
    lambda T: T.nn.functional.conv2d(T.ones(1, 2, 5, 5, device="meta"),
                                     T.ones(3, 2, 3, 3, device="meta"), padding=1),
])
def test_ops_give_pytorchs_shapes_dtypes_and_device(case):
    ours, ref = _both(case)
    assert _shape_dtype_device(ours) == _shape_dtype_device(ref)
    assert ours.is_meta and ref.is_meta


def test_device_has_no_index_and_prints_as_torch():
    ours, ref = _both(lambda T: T.zeros(2, 3, device="meta"))
    assert repr(ours.device) == repr(ref.device).replace("torch", "ember")
    assert ember.device("meta") == ours.device and ours.device.index is None
    assert repr(ours) == "tensor(..., device='meta', size=(2, 3))" == repr(ref)
    assert ours.dtype.itemsize * ours.numel() == ref.element_size() * ref.numel()


def test_module_to_meta_trains_shapes_only_and_to_empty_leaves_it():
    ours, ref = _both(lambda T: T.nn.Linear(4, 3).to("meta"))
    for lin, T in ((ours, ember), (ref, torch)):
        assert lin.weight.is_meta and lin.weight.requires_grad
        assert type(lin.weight).__name__ == "Parameter"
        y = lin(T.ones(5, 4, device="meta"))
        y.sum().backward()
        assert lin.weight.grad.is_meta and tuple(lin.weight.grad.shape) == (3, 4)
        moved = lin.to_empty(device="cpu")
        assert moved.weight.device.type == "cpu" and tuple(moved.weight.shape) == (3, 4)
    made, made_ref = _both(lambda T: T.nn.Linear(4, 3, device="meta"))
    assert made.weight.is_meta and made_ref.weight.is_meta


@pytest.mark.parametrize("read", ["item", "cpu", "tolist", "numpy", "nonzero"])
def test_reading_data_raises_as_torch(read):
    errors = []
    for T in (ember, torch):
        x = T.ones(1 if read == "item" else 3, device="meta")
        with pytest.raises(Exception) as e:
            getattr(x, read)()
        errors.append(e.value)
    ours, ref = errors
    assert type(ours) is type(ref)
    if read in ("item", "cpu", "tolist"):
        assert str(ours) == str(ref)


def test_module_to_off_meta_points_to_to_empty_as_torch():
    errors = []
    for T in (ember, torch):
        with pytest.raises(NotImplementedError) as e:
            T.nn.Linear(2, 2, device="meta").to("cpu")
        errors.append(str(e.value))
    assert errors[0].replace("ember", "torch") == errors[1]


def test_model_ensembling_with_a_meta_base_model_matches_torch():
    """PyTorch's "Model ensembling" tutorial: stacked members, the base copy on 'meta'."""
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((5, 3)).astype(np.float32),
                rng.standard_normal(5).astype(np.float32)) for _ in range(3)]
    x = rng.standard_normal((4, 3)).astype(np.float32)
    outs = []
    for T, func in ((ember, ember.func), (torch, torch.func)):
        members = []
        for w, b in weights:
            lin = T.nn.Linear(3, 5)
            lin.load_state_dict({"weight": T.tensor(w), "bias": T.tensor(b)})
            members.append(lin)
        params, buffers = func.stack_module_state(members)
        base = copy.deepcopy(members[0]).to("meta")

        def fmodel(p, bufs, inp, base=base, func=func):
            return func.functional_call(base, (p, bufs), (inp,))
        outs.append(func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, T.tensor(x)))
    assert outs[0].device.type == "cpu"
    np.testing.assert_allclose(outs[0].detach().numpy(), outs[1].detach().numpy(), rtol=1e-6)
    assert stack_module_state and functional_call and vmap  # (the names ember exports)
