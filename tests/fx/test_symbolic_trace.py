"""ember.fx.symbolic_trace against torch.fx: each program is written once, as a function of
the library (``torch`` or ``ember``), traced by both, and the graphs compared node by node
(op, name, target, arguments), the generated code line by line (``ember.`` for ``torch.``)
and the traced modules' results on the same inputs and weights. Then what passes do with a
traced graph: custom tracers, wrap, concrete_args, editing, Interpreter, Transformer,
ShapeProp, replace_pattern, deep copies."""
import builtins
import copy
import math

import numpy as np
import pytest
import torch
import torch.fx as tfx
import torch.fx.passes.shape_prop as tshape

import ember
import ember.fx as efx
import ember.fx.passes.shape_prop as eshape

FX = {torch: tfx, ember: efx}


def _helper_scale(x, k):
    # (wrapped below: called with a proxy, it is one call_function node)
    return x * k if k > 0 else x


tfx.wrap("_helper_scale")
efx.wrap("_helper_scale")


# ---- the programs (one definition for both libraries) -----------------------------------
def mixed(lib):
    nn, F = lib.nn, lib.nn.functional

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", lib.ones(3))
            self.w = nn.Parameter(lib.ones(3) * 0.5)
            self.lin = nn.Linear(3, 3)
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
            self.c = lib.tensor([2.0, 1.0, 2.0])

        def forward(self, x, y=2):
            a = self.buf + x
            b = x * self.w + self.c
            c = self.lin(a) + self.seq(b)
            d = F.relu(c) + lib.relu(c) + c.relu() - 1
            e = d.view(d.size(0), -1).shape[1] * d
            f = lib.cat([d, e], dim=1)[:, :3]
            g = F.dropout(f, p=0.1, training=self.training) / math.sqrt(4) + y
            h = F.softmax(g, dim=-1) + F.layer_norm(g, (3,))
            return {"h": h, "k": lib.flatten(h, 1).sum(-1, keepdim=True)}
    return M().eval()


def conv_bn(lib):
    """The model of PyTorch's FX conv/batch-norm fusion tutorial."""
    nn = lib.nn

    class WrappedBatchNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.mod = nn.BatchNorm2d(1)

        def forward(self, x):
            return self.mod(x)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 1, 1)
            self.bn1 = nn.BatchNorm2d(1)
            self.conv2 = nn.Conv2d(1, 1, 1)
            self.nested = nn.Sequential(nn.BatchNorm2d(1), nn.Conv2d(1, 1, 1))
            self.wrapped = WrappedBatchNorm()

        def forward(self, x):
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.conv2(x)
            x = self.nested(x)
            x = self.wrapped(x)
            return x
    return M().eval()


def res_block(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(4)
            self.downsample = nn.Sequential(nn.Conv2d(2, 4, 1, stride=2, bias=False),
                                            nn.BatchNorm2d(4))

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return lib.flatten(lib.nn.functional.adaptive_avg_pool2d(out, 1), 1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Sequential(Block(), nn.Identity())
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(self.layer1(x))
    return Net().eval()


def functional(lib):
    def f(x, y):
        a, b = x.chunk(2, dim=1)
        s = lib.sin(a) @ y.t() + 1
        t = -s + abs(b.sum()) * 2 - x.shape[0]
        u = lib.where(t > 0, t, lib.zeros_like(t))
        v = _helper_scale(u, 3).clamp(min=-math.inf, max=10.0)
        return lib.stack([v, u.to(lib.float64).float()], 0).mean(0), t.dtype
    return f


def _tensors(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


CASES = {
    "mixed": (mixed, [(4, 3)]),
    "conv_bn": (conv_bn, [(2, 1, 3, 3)]),
    "res_block": (res_block, [(2, 2, 8, 8)]),
    "functional": (functional, [(3, 4), (5, 2)]),
}


# ---- comparing ------------------------------------------------------------------------
def _target(node):
    t = node.target
    if isinstance(t, str):
        return t
    name = getattr(t, "__name__", repr(t))
    module = getattr(t, "__module__", None) or ""
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module == "builtins" or getattr(builtins, name, None) is t:
        return f"builtins.{name}"
    return f"lib.{name}"


def _arg(a):
    if isinstance(a, (tfx.Node, efx.Node)):
        return f"%{a.name}"
    if isinstance(a, (list, tuple)):
        return ("list" if isinstance(a, list) else "tuple"), [_arg(x) for x in a]
    if isinstance(a, dict):
        return {k: _arg(v) for k, v in a.items()}
    return str(a).replace("torch.", "ember.")


def _structure(graph):
    return [(n.op, n.name, _target(n), _arg(n.args), _arg(n.kwargs), sorted(u.name for u in
                                                                           n.users))
            for n in graph.nodes]


def _code(gm):
    # (torch._assert, which concrete_args records, is ember.fx's own)
    code = gm.code.replace("torch.", "ember.").replace("ember.fx._symbolic_trace._assert",
                                                       "ember._assert")
    return [line.rstrip() for line in code.splitlines()]


def _to(lib, value):
    if isinstance(value, np.ndarray):
        return lib.tensor(value)
    return value


def _np(v):
    if isinstance(v, dict):
        return {k: _np(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_np(x) for x in v)
    if hasattr(v, "detach"):
        return v.detach().numpy()
    return str(v).replace("torch.", "ember.")


def _assert_close(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_close(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_close(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    else:
        assert a == b


def _both(make):
    torch.manual_seed(0)
    t = make(torch)
    e = make(ember)
    if isinstance(t, torch.nn.Module):
        e.load_state_dict(t.state_dict())
    return t, e


@pytest.mark.parametrize("case", sorted(CASES))
def test_traced_graph_code_and_results_match_torch_fx(case):
    make, shapes = CASES[case]
    t, e = _both(make)
    gm_t, gm_e = tfx.symbolic_trace(t), efx.symbolic_trace(e)
    assert _structure(gm_e.graph) == _structure(gm_t.graph)
    if case != "res_block":     # (F.adaptive_avg_pool2d is torch._C._nn's in the code)
        assert _code(gm_e) == _code(gm_t)
    assert type(gm_e).__name__ == type(gm_t).__name__
    assert sorted(gm_e.state_dict()) == sorted(gm_t.state_dict())
    assert [n for n, _ in gm_e.named_modules()] == [n for n, _ in gm_t.named_modules()]
    inputs = _tensors(1, *shapes)
    want = gm_t(*[_to(torch, x) for x in inputs])
    got = gm_e(*[_to(ember, x) for x in inputs])
    _assert_close(_np(got), _np(want))
    eager = e(*[_to(ember, x) for x in inputs])
    _assert_close(_np(got), _np(eager))


def test_printed_graph_reads_as_torch_fx():
    t, e = _both(conv_bn)
    assert str(efx.symbolic_trace(e).graph) == \
        str(tfx.symbolic_trace(t).graph).replace("torch.", "ember.")
    t, e = _both(mixed)
    gm_t, gm_e = tfx.symbolic_trace(t), efx.symbolic_trace(e)
    lines_t = str(gm_t.graph).replace("torch.", "ember.").splitlines()
    lines_e = str(gm_e.graph).splitlines()
    assert len(lines_e) == len(lines_t)
    for a, b in zip(lines_e, lines_t):
        if "call_function" not in b or "operator." in b or "builtins." in b:
            assert a == b


def test_a_traced_module_trains_and_keeps_the_roots_parameters():
    _, e = _both(res_block)
    e.train()
    gm = efx.symbolic_trace(e)
    assert gm.training
    # submodules are shared, not copied
    assert gm.get_submodule("layer1.0.conv1") is e.layer1[0].conv1
    out = gm(ember.randn(2, 2, 8, 8)).sum()
    out.backward()
    assert e.fc.weight.grad is not None


# ---- tracers, wrap, concrete_args -------------------------------------------------------
def _custom_tracer(lib):
    class NoLeaves(FX[lib].Tracer):
        def __init__(self):
            super().__init__()
            self.calls = []

        def is_leaf_module(self, m, qualified_name):
            return isinstance(m, (lib.nn.Conv2d, lib.nn.BatchNorm2d))

        def call_module(self, m, forward, args, kwargs):
            self.calls.append(type(m).__name__)
            return super().call_module(m, forward, args, kwargs)
    return NoLeaves()


def test_custom_tracer_leaves_and_call_module_hook():
    t, e = _both(res_block)
    tr_t, tr_e = _custom_tracer(torch), _custom_tracer(ember)
    g_t, g_e = tr_t.trace(t), tr_e.trace(e)
    assert _structure(g_e) == _structure(g_t)
    assert tr_e.calls == tr_t.calls
    assert any(n.op == "call_function" and n.target is ember.nn.functional.linear
               for n in g_e.nodes)
    gm_t = tfx.GraphModule(tr_t.root, g_t)
    gm_e = efx.GraphModule(tr_e.root, g_e)
    x = _tensors(2, (2, 2, 8, 8))[0]
    _assert_close(_np(gm_e(ember.tensor(x))), _np(gm_t(torch.tensor(x))))


def test_concrete_args_and_varargs():
    def f(x, flag, *rest, scale=2.0, **extra):
        return x * scale if flag else x - 1

    g_t = tfx.symbolic_trace(f, concrete_args={"flag": True})
    g_e = efx.symbolic_trace(f, concrete_args={"flag": True})
    assert _structure(g_e.graph) == _structure(g_t.graph)
    assert _code(g_e) == _code(g_t)
    np.testing.assert_allclose(g_e(ember.ones(2), True).numpy(), [2.0, 2.0])


def test_tracing_errors_are_torch_fxs():
    def branch(x):
        return x if x.sum() > 0 else -x

    def length(x):
        return x * len(x)

    for fx in (tfx, efx):
        with pytest.raises(fx.proxy.TraceError if fx is tfx else efx.TraceError,
                           match="symbolically traced variables cannot be used as inputs "
                                 "to control flow"):
            fx.symbolic_trace(branch)
        with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing"):
            fx.symbolic_trace(length)
    # nothing stays patched after a failed trace
    assert not hasattr(ember.relu, "__fx_original__")
    assert not hasattr(ember.Tensor.__add__, "__fx_original__")


def test_param_shapes_constant():
    def make(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.ones(3, 2))

            def forward(self, x):
                if self.w.shape[0] == 3:
                    return x @ self.w
                return x
        return M()
    t, e = _both(make)
    g_t = tfx.Tracer(param_shapes_constant=True).trace(t)
    g_e = efx.Tracer(param_shapes_constant=True).trace(e)
    assert _structure(g_e) == _structure(g_t)


# ---- passes on a traced graph -----------------------------------------------------------
def _relu_to_sigmoid(lib, gm):
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target),
                                                   lib.nn.ReLU):
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(lib.sigmoid, node.args)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def test_editing_a_traced_graph():
    t, e = _both(res_block)
    gm_t = _relu_to_sigmoid(torch, tfx.symbolic_trace(t))
    gm_e = _relu_to_sigmoid(ember, efx.symbolic_trace(e))
    assert _structure(gm_e.graph) == _structure(gm_t.graph)
    assert [n for n, _ in gm_e.named_modules()] == [n for n, _ in gm_t.named_modules()]
    x = _tensors(3, (2, 2, 8, 8))[0]
    _assert_close(_np(gm_e(ember.tensor(x))), _np(gm_t(torch.tensor(x))))
    # a deep copy is independent of the original
    clone = copy.deepcopy(gm_e)
    for node in clone.graph.nodes:
        if node.op == "call_function" and node.target is ember.sigmoid:
            node.target = ember.tanh
    clone.recompile()
    assert "ember.sigmoid" in gm_e.code and "ember.tanh" in clone.code
    assert clone.fc is not gm_e.fc


def test_interpreter_and_transformer():
    class Neg2Sig:
        pass

    def transformer(lib):
        class T(FX[lib].Transformer):
            def call_function(self, target, args, kwargs):
                if target is lib.sin:
                    target = lib.cos
                return super().call_function(target, args, kwargs)
        return T

    f = functional
    gm_t = tfx.symbolic_trace(f(torch))
    gm_e = efx.symbolic_trace(f(ember))
    new_t = transformer(torch)(gm_t).transform()
    new_e = transformer(ember)(gm_e).transform()
    assert _structure(new_e.graph) == _structure(new_t.graph)
    x, y = _tensors(4, (3, 4), (5, 2))
    _assert_close(_np(new_e(ember.tensor(x), ember.tensor(y))),
                  _np(new_t(torch.tensor(x), torch.tensor(y))))

    class Count(efx.Interpreter):
        def run_node(self, n):
            self.seen = getattr(self, "seen", []) + [n.op]
            return super().run_node(n)
    c = Count(gm_e)
    _assert_close(_np(c.run(ember.tensor(x), ember.tensor(y))),
                  _np(gm_e(ember.tensor(x), ember.tensor(y))))
    assert c.seen == [n.op for n in gm_e.graph.nodes]
    assert Neg2Sig


def test_shape_prop_records_torch_fxs_metadata():
    t, e = _both(res_block)
    gm_t, gm_e = tfx.symbolic_trace(t), efx.symbolic_trace(e)
    x = _tensors(5, (2, 2, 8, 8))[0]
    tshape.ShapeProp(gm_t).propagate(torch.tensor(x))
    eshape.ShapeProp(gm_e).propagate(ember.tensor(x))
    for a, b in zip(gm_e.graph.nodes, gm_t.graph.nodes):
        ma, mb = a.meta["tensor_meta"], b.meta["tensor_meta"]
        assert tuple(ma.shape) == tuple(mb.shape)
        assert str(ma.dtype) == str(mb.dtype).replace("torch.", "ember.")
        assert tuple(ma.stride) == tuple(mb.stride)
        assert ma.requires_grad == mb.requires_grad


def test_replace_pattern():
    def program(lib):
        def f(x, w):
            a = lib.relu(lib.mm(x, w))
            b = lib.relu(lib.mm(a, w.t()))
            return a + b
        return f

    def pattern(lib):
        def p(x, w):
            return lib.relu(lib.mm(x, w))
        return p

    def replacement(lib):
        def r(x, w):
            return lib.clamp(lib.mm(x, w), min=0.0)
        return r

    results = {}
    for lib in (torch, ember):
        fx = FX[lib]
        gm = fx.symbolic_trace(program(lib))
        matches = fx.replace_pattern(gm, pattern(lib), replacement(lib))
        results[lib] = gm, len(matches)
    (gm_t, n_t), (gm_e, n_e) = results[torch], results[ember]
    assert n_e == n_t == 2
    assert _structure(gm_e.graph) == _structure(gm_t.graph)
    assert _code(gm_e) == _code(gm_t)


def test_print_tabular_and_print_readable(capsys):
    pytest.importorskip("tabulate")
    t, e = _both(conv_bn)
    tfx.symbolic_trace(t).graph.print_tabular()
    want = capsys.readouterr().out
    efx.symbolic_trace(e).graph.print_tabular()
    got = capsys.readouterr().out
    assert got == want.replace("torch.", "ember.")


def _readable(gm):
    return [line.rstrip() for line in
            gm.print_readable(print_output=False).replace("torch.", "ember.").splitlines()]


def test_print_readable():
    t, e = _both(conv_bn)
    gm_t, gm_e = tfx.symbolic_trace(t), efx.symbolic_trace(e)
    assert _readable(gm_e) == _readable(gm_t)
    # with ShapeProp's metadata, each value is annotated with its dtype and shape
    x = _tensors(6, (2, 1, 3, 3))[0]
    tshape.ShapeProp(gm_t).propagate(torch.tensor(x))
    eshape.ShapeProp(gm_e).propagate(ember.tensor(x))
    assert _readable(gm_e) == _readable(gm_t)
    assert '        conv1: "f32[2, 1, 3, 3]" = self.conv1(x);  x = None' in _readable(gm_e)
