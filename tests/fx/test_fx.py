"""ember.fx against torch.fx: the same graph built through both APIs prints the same,
generates the same forward (with ``ember.`` for ``torch.``) and computes the same values;
editing a graph (users, replacing uses, inserting, erasing, dead code, lint), GraphModule
with module attributes and submodules, and the Interpreter."""
import operator

import numpy as np
import pytest
import torch
import torch.fx as tfx

import ember
import ember.fx as efx


def _build(lib, fx):
    """x, y -> sum(relu((x + 2 y) * 3), 0) and (x + 2 y) @ y.T, through the Graph API."""
    g = fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(lib.add, (x, y), {"alpha": 2})
    b = g.call_function(operator.mul, (a, 3))
    c = g.call_function(lib.relu, (b,))
    d = g.call_method("sum", (c,), {"dim": 0})
    t = g.call_method("t", (y,))
    e = g.call_function(operator.matmul, (a, t))
    s2 = g.call_function(lib.sum, (e,))
    g.output((d, s2))
    return g


def _lines(text):
    return [line.rstrip() for line in text.strip().splitlines()]


def test_printing_and_code_match_torch_fx():
    ours, theirs = _build(ember, efx), _build(torch, tfx)
    assert str(ours) == str(theirs).replace("torch.", "ember.")
    gm_e = efx.GraphModule(ember.nn.Module(), ours)
    gm_t = tfx.GraphModule(torch.nn.Module(), theirs)
    assert _lines(gm_e.code) == _lines(gm_t.code.replace("torch.", "ember."))
    assert [n.name for n in ours.nodes] == [n.name for n in theirs.nodes]
    for a, b in zip(ours.nodes, theirs.nodes):
        assert [u.name for u in a.users] == [u.name for u in b.users]
        assert [n.name for n in a.all_input_nodes] == [n.name for n in b.all_input_nodes]
        assert a.format_node().replace("ember.", "torch.") == b.format_node()


def test_graph_module_and_interpreter_compute_what_eager_computes():
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    gm_e = efx.GraphModule(ember.nn.Module(), _build(ember, efx))
    gm_t = tfx.GraphModule(torch.nn.Module(), _build(torch, tfx))
    want = gm_t(torch.tensor(x), torch.tensor(y))
    for got in (gm_e(ember.tensor(x), ember.tensor(y)),
                efx.Interpreter(gm_e).run(ember.tensor(x), ember.tensor(y))):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_editing_a_graph():
    g = _build(ember, efx)
    nodes = {n.name: n for n in g.nodes}
    relu = nodes["relu"]
    with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 "
                                           "users in the graph"):
        g.erase_node(relu)
    # replace relu by sigmoid, inserted before it
    with g.inserting_before(relu):
        sig = g.call_function(ember.sigmoid, relu.args)
    assert sig.name == "sigmoid"
    assert relu.replace_all_uses_with(sig) == [nodes["sum_1"]]
    assert not relu.users and list(sig.users) == [nodes["sum_1"]]
    g.erase_node(relu)
    with g.inserting_after(nodes["mul"]):
        dead = g.call_function(ember.exp, (nodes["mul"],))
    assert dead.prev is nodes["mul"] and not dead.users
    assert g.eliminate_dead_code() and dead not in g.nodes
    g.lint()
    gm = efx.GraphModule(ember.nn.Module(), g)
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    np.testing.assert_allclose(gm(x, y)[0].numpy(),
                               ember.sigmoid((x + 2 * y) * 3).sum(0).numpy(), rtol=1e-6)
    # a node reading a later node fails lint
    g2 = efx.Graph()
    p = g2.placeholder("p")
    first = g2.call_function(ember.neg, (p,))
    second = g2.call_function(ember.exp, (p,))
    first.args = (second,)
    with pytest.raises(RuntimeError, match="was used before it has been defined"):
        g2.lint()


def test_get_attr_and_call_module_with_a_root():
    torch.manual_seed(0)
    lin_t = torch.nn.Linear(4, 2)
    root = ember.nn.Module()
    root.lin = ember.nn.Linear(4, 2)
    root.lin.load_state_dict({k: ember.tensor(v.detach().numpy())
                              for k, v in lin_t.state_dict().items()})
    root.scale = ember.nn.Parameter(ember.tensor([2.0, -1.0]))
    g = efx.Graph()
    x = g.placeholder("x")
    h = g.call_module("lin", (x,))
    s = g.get_attr("scale")
    g.output(g.call_function(operator.mul, (h, s)))
    gm = efx.GraphModule(root, g)
    assert "self.lin(x)" in gm.code and "self.scale" in gm.code
    assert dict(gm.named_parameters()).keys() == {"lin.weight", "lin.bias", "scale"}
    xs = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    want = lin_t(torch.tensor(xs)) * torch.tensor([2.0, -1.0])
    np.testing.assert_allclose(gm(ember.tensor(xs)).detach().numpy(), want.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    gm(ember.tensor(xs)).sum().backward()        # autograd through the generated forward
    assert gm.lin.weight.grad is not None and gm.scale.grad is not None


def test_interpreter_subclass_sees_every_node():
    class Count(efx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.ops = []

        def run_node(self, node):
            self.ops.append(node.op)
            return super().run_node(node)

    gm = efx.GraphModule(ember.nn.Module(), _build(ember, efx))
    c = Count(gm)
    c.run(ember.randn(3, 4), ember.randn(3, 4))
    assert c.ops == ["placeholder", "placeholder", "call_function", "call_function",
                     "call_function", "call_method", "call_method", "call_function",
                     "call_function", "output"]
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter y"):
        efx.Interpreter(gm).run(ember.randn(3, 4))


def test_recompile_after_changing_a_target():
    g = _build(ember, efx)
    gm = efx.GraphModule(ember.nn.Module(), g)
    relu = next(n for n in g.nodes if n.name == "relu")
    relu.target = ember.tanh
    gm.recompile()
    assert "ember.tanh(mul)" in gm.code
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    np.testing.assert_allclose(gm(x, y)[0].numpy(), ember.tanh((x + 2 * y) * 3).sum(0).numpy(),
                               rtol=1e-6)
