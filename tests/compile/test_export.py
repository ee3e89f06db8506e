"""``ember.export.export`` against ``torch.export.export``: the same model and weights
exported by both, the programs run on new inputs (values against PyTorch's program and,
bit for bit, against ember's eager model), the signature and ``state_dict`` as PyTorch
names them, and the errors PyTorch raises."""
import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")
tnn = torch.nn


def _net(nn, lib):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 4 * 4, 5)
            self.register_buffer("scale", lib.tensor(0.5))

        def forward(self, x, bias=None):
            h = nn.functional.max_pool2d(self.bn(self.conv(x)).relu(), 2)
            out = self.fc(h.flatten(1)) * self.scale
            return (out + bias if bias is not None else out), h.sum()
    return Net()


def _pair(train=False):
    ember.manual_seed(0)
    mine = _net(enn, ember)
    theirs = _net(tnn, torch)
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                            for k, v in mine.state_dict().items()})
    # running statistics that are not the defaults
    with ember.no_grad():
        mine.bn.running_mean.copy_(ember.randn(4) * 0.1)
        mine.bn.running_var.copy_(ember.rand(4) + 0.5)
    theirs.bn.running_mean.copy_(torch.from_numpy(mine.bn.running_mean.numpy().copy()))
    theirs.bn.running_var.copy_(torch.from_numpy(mine.bn.running_var.numpy().copy()))
    mine.train(train)
    theirs.train(train)
    return mine, theirs


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((2, 3, 8, 8)).astype(np.float32),
            rng.standard_normal((2, 5)).astype(np.float32))


def test_program_runs_new_inputs_as_pytorchs_program():
    mine, theirs = _pair()
    x, b = _inputs(0)
    ep = ember.export.export(mine, (ember.from_numpy(x),), {"bias": ember.from_numpy(b)})
    tep = torch.export.export(theirs, (torch.from_numpy(x),), {"bias": torch.from_numpy(b)})
    m, tm = ep.module(), tep.module()
    for seed in (1, 2):
        x, b = _inputs(seed)
        out, total = m(ember.from_numpy(x), bias=ember.from_numpy(b))
        tout, ttotal = tm(torch.from_numpy(x), bias=torch.from_numpy(b))
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-5)
        # the graph runs eager mode's kernels: the same bits as the model itself
        with ember.no_grad():
            eout, etotal = mine(ember.from_numpy(x), bias=ember.from_numpy(b))
        np.testing.assert_array_equal(out.numpy(), eout.numpy())
        np.testing.assert_array_equal(total.numpy(), etotal.numpy())


def test_signature_and_state_dict_as_pytorch_names_them():
    mine, theirs = _pair()
    x, b = _inputs(0)
    ep = ember.export.export(mine, (ember.from_numpy(x),), {"bias": ember.from_numpy(b)})
    tep = torch.export.export(theirs, (torch.from_numpy(x),), {"bias": torch.from_numpy(b)})
    sig, tsig = ep.graph_signature, tep.graph_signature
    assert tuple(sig.parameters) == tuple(tsig.parameters)
    assert tuple(sig.buffers) == tuple(tsig.buffers)
    assert list(ep.state_dict) == list(tep.state_dict)
    assert len(sig.user_inputs) == len(tsig.user_inputs) == 2
    assert len(sig.user_outputs) == len(tsig.user_outputs) == 2
    m, tm = ep.module(), tep.module()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert sorted(n for n, _ in m.named_buffers()) == sorted(n for n, _ in tm.named_buffers())
    # the program holds the model's tensors, as PyTorch's does
    assert ep.state_dict["fc.weight"] is mine.fc.weight
    # the placeholders feeding parameters name them
    fed = set(sig.inputs_to_parameters.values())
    assert fed == set(tsig.inputs_to_parameters.values())
    assert "ExportedProgram" in str(ep) and "def forward" in str(ep)
    assert ep.run_decompositions() is ep


def test_parameters_of_the_module_are_what_runs():
    mine, _ = _pair()
    x, _b = _inputs(0)
    ep = ember.export.export(mine, (ember.from_numpy(x),))
    m = ep.module()
    with ember.no_grad():
        m.fc.weight.mul_(2.0)       # the same tensor as the model's
        expected = mine(ember.from_numpy(x))[0]
    np.testing.assert_array_equal(m(ember.from_numpy(x))[0].numpy(), expected.numpy())


def test_training_mode_export_leaves_the_model_as_it_was():
    mine, theirs = _pair(train=True)
    before = mine.bn.running_mean.numpy().copy()
    tbefore = theirs.bn.running_mean.detach().numpy().copy()
    x, _b = _inputs(0)
    ember.export.export(mine, (ember.from_numpy(x),))
    torch.export.export(theirs, (torch.from_numpy(x),))
    np.testing.assert_array_equal(mine.bn.running_mean.numpy(), before)
    np.testing.assert_array_equal(theirs.bn.running_mean.detach().numpy(), tbefore)


def test_errors_as_pytorch():
    mine, theirs = _pair()
    x, b = _inputs(0)
    ep = ember.export.export(mine, (ember.from_numpy(x),), {"bias": ember.from_numpy(b)})
    tep = torch.export.export(theirs, (torch.from_numpy(x),), {"bias": torch.from_numpy(b)})
    m, tm = ep.module(), tep.module()
    x3 = np.zeros((3, 3, 8, 8), np.float32)
    with pytest.raises(AssertionError, match=r"Guard failed: x\.size\(\)\[0\] == 2"):
        m(ember.from_numpy(x3), bias=ember.from_numpy(b))
    with pytest.raises(AssertionError, match=r"Guard failed: x\.size\(\)\[0\] == 2"):
        tm(torch.from_numpy(x3), bias=torch.from_numpy(b))
    with pytest.raises(ValueError, match="kwarg keyword mismatch"):
        m(ember.from_numpy(x))
    with pytest.raises(ValueError, match="kwarg keyword mismatch"):
        tm(torch.from_numpy(x))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ep(ember.from_numpy(x))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        tep(torch.from_numpy(x))
    with pytest.raises(ValueError, match="Expected `mod` to be an instance"):
        ember.export.export(lambda t: t, (ember.from_numpy(x),))
    with pytest.raises(ValueError, match="Expected `mod` to be an instance"):
        torch.export.export(lambda t: t, (torch.from_numpy(x),))
    with pytest.raises(ValueError, match="Expecting `args` to be a tuple"):
        ember.export.export(mine, ember.from_numpy(x))
    with pytest.raises(Exception, match="Expecting `args` to be a tuple"):
        torch.export.export(theirs, torch.from_numpy(x))
    with pytest.raises(RuntimeError, match="float32"):
        m(ember.from_numpy(x.astype(np.float64)), bias=ember.from_numpy(b))


def test_what_is_not_supported_yet_says_so():
    mine, _ = _pair()
    x, _b = _inputs(0)
    with pytest.raises(NotImplementedError, match="dynamic_shapes"):
        ember.export.export(mine, (ember.from_numpy(x),),
                            dynamic_shapes={"x": {0: ember.export.Dim("batch")}})

    class Drop(enn.Module):
        def forward(self, t):
            return enn.functional.dropout(t, 0.5, True)
    with pytest.raises(NotImplementedError, match="random numbers"):
        ember.export.export(Drop(), (ember.randn(4),))

    class Branch(enn.Module):
        def forward(self, t):
            return t if t.sum() > 0 else -t
    with pytest.raises(ember._dynamo.exc.Unsupported, match="test_export"):
        ember.export.export(Branch(), (ember.randn(4),))
    with pytest.raises(NotImplementedError):
        ember.export.save(None, "x.pt2")


def test_nested_inputs_constants_and_returned_inputs():
    class M(enn.Module):
        def __init__(self):
            super().__init__()
            self.table = ember.arange(4.0)      # a plain attribute: a lifted constant

        def forward(self, pair, k, scale=2.0):
            a, b = pair
            return {"sum": (a + b) * scale + self.table[k], "a": a}
    a, b = ember.randn(3, 4), ember.randn(3, 4)
    ep = ember.export.export(M(), ((a, b), 1), {"scale": 2.0})
    assert ep.graph_signature.lifted_tensor_constants
    a2, b2 = ember.randn(3, 4), ember.randn(3, 4)
    out = ep.module()((a2, b2), 1, scale=2.0)
    np.testing.assert_array_equal(out["sum"].numpy(), ((a2 + b2) * 2.0 + 1.0).numpy())
    np.testing.assert_array_equal(out["a"].numpy(), a2.numpy())
    with pytest.raises(RuntimeError, match="to be equal to 1"):
        ep.module()((a2, b2), 2, scale=2.0)


def test_is_exporting_and_not_inside_compile():
    seen = []

    class M(enn.Module):
        def forward(self, t):
            seen.append(ember.compiler.is_exporting())
            return t * 2
    ember.export.export(M(), (ember.randn(3),))
    M()(ember.randn(3))
    assert seen == [True, False]

    @ember.compile(backend="eager")
    def outer(t):
        return ember.export.export(M(), (t,))
    with pytest.raises(RuntimeError, match="inside an ember.compile region"):
        outer(ember.randn(3))
