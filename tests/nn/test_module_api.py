"""nn.Module and containers behave like PyTorch's: registration, traversal, state_dict,
load_state_dict errors, hooks, modes, conversion, repr."""
import copy
import pickle
from collections import OrderedDict

import pytest
import torch
import torch.nn as tnn

import ember
import ember.nn as nn
from nn_helpers import close, e, load_from_torch


def _net(lib):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.Conv2d(3, 4, 3, padding=1)
            self.bn = lib.BatchNorm2d(4)
            self.blocks = lib.Sequential(lib.Linear(4, 8), lib.ReLU(), lib.Linear(8, 2))
            self.heads = lib.ModuleList([lib.Linear(2, 2), lib.Linear(2, 3)])
            self.named = lib.ModuleDict({"emb": lib.Embedding(5, 2, padding_idx=0),
                                         "ln": lib.LayerNorm(2)})
            self.scale = lib.Parameter(torch.ones(1) if lib is tnn else ember.ones(1))
            self.register_buffer("steps", torch.zeros(1) if lib is tnn else ember.zeros(1))
            self.register_buffer("cache", torch.zeros(2) if lib is tnn else ember.zeros(2),
                                 persistent=False)

        def forward(self, x):
            x = self.bn(self.conv(x)).mean(dim=(2, 3))
            return self.heads[1](self.blocks(x)) * self.scale
    return Net()


# ---- Parameter --------------------------------------------------------------------------
def test_parameter_shares_storage_and_requires_grad():
    t = ember.zeros(3)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, ember.Tensor)
    assert p.requires_grad and p.is_leaf
    t[0] = 5.0
    assert p[0].item() == 5.0  # same memory
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_repr_and_ops_give_plain_tensors():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert repr(p) == repr(tnn.Parameter(torch.tensor([1.0, 2.0]))).replace("torch.", "ember.")
    assert type(p * 2) is ember.Tensor
    assert type(p.detach()) is ember.Tensor


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    with ember.no_grad():
        q[0] = 9.0
    assert p[0].item() == 1.0
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.tolist() == [1.0, 2.0]


def test_parameter_rejects_integer_tensors():
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(ember.tensor([1, 2]))


# ---- registration and traversal ---------------------------------------------------------
def test_names_match_pytorch():
    ours, theirs = _net(nn), _net(tnn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    assert [k for k, _ in ours.named_buffers()] == [k for k, _ in theirs.named_buffers()]
    assert [k for k, _ in ours.named_modules()] == [k for k, _ in theirs.named_modules()]
    assert [k for k, _ in ours.named_children()] == [k for k, _ in theirs.named_children()]
    assert ([k for k, _ in ours.named_parameters(prefix="m", recurse=False)]
            == [k for k, _ in theirs.named_parameters(prefix="m", recurse=False)])
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert len(list(ours.modules())) == len(list(theirs.modules()))


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(list(seq.modules())) == 3


def test_setattr_getattr_delattr():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", ember.zeros(1))
    m.plain = 3
    assert set(m._parameters) == {"w"} and set(m._modules) == {"sub"}
    assert set(m._buffers) == {"buf"} and m.plain == 3
    m.buf = ember.ones(1)                  # reassigning a buffer keeps it a buffer
    assert m._buffers["buf"].item() == 1.0
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = ember.ones(2)                # a plain tensor can't replace a parameter
    m.w = None
    assert m.w is None and "w" in m._parameters
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope
    assert "buf" in dir(m)
    m.sub2 = nn.Linear(1, 1)
    m.sub2 = nn.Parameter(ember.ones(1))   # replacing a module by a parameter moves it
    assert "sub2" in m._parameters and "sub2" not in m._modules


def test_register_errors():
    m = nn.Module()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ember.zeros(1))
    with pytest.raises(TypeError, match="cannot assign"):
        m.register_parameter("p", ember.zeros(1))
    m.x = 1
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("x", ember.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.lin = nn.Linear(1, 1)
        Bad()


def test_buffer_class_and_non_persistent_buffers():
    m = nn.Module()
    m.a = nn.Buffer(ember.ones(2))
    m.b = nn.Buffer(ember.ones(2), persistent=False)
    assert set(m._buffers) == {"a", "b"}
    assert list(m.state_dict()) == ["a"]


def test_get_submodule_parameter_buffer():
    net = _net(nn)
    assert net.get_submodule("blocks.0") is net.blocks[0]
    assert net.get_parameter("blocks.2.bias") is net.blocks[2].bias
    assert net.get_buffer("bn.running_mean") is net.bn.running_mean
    with pytest.raises(AttributeError):
        net.get_submodule("blocks.9")


# ---- state_dict -------------------------------------------------------------------------
def test_state_dict_shares_memory_and_roundtrips():
    ours, theirs = _net(nn), _net(tnn)
    load_from_torch(ours, theirs)
    sd = ours.state_dict()
    assert not sd["conv.weight"].requires_grad
    sd["scale"][0] = 2.0
    assert ours.scale.item() == 2.0
    fresh = _net(nn)
    res = fresh.load_state_dict(ours.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    x = torch.randn(2, 3, 5, 5)
    theirs.eval(), fresh.eval()
    theirs.scale.data.fill_(2.0)
    close(fresh(e(x)), theirs(x))


def test_load_state_dict_strict_errors_match_pytorch():
    ours, theirs = _net(nn), _net(tnn)
    sd_t = theirs.state_dict()
    sd_e = {k: e(v) for k, v in sd_t.items()}
    for mutate in ("missing", "unexpected", "size"):
        st, se = OrderedDict(sd_t), dict(sd_e)
        if mutate == "missing":
            del st["blocks.0.bias"], se["blocks.0.bias"]
            del st["bn.num_batches_tracked"], se["bn.num_batches_tracked"]
        elif mutate == "unexpected":
            st["blocks.5.weight"] = torch.ones(1)
            se["blocks.5.weight"] = ember.ones(1)
            st["extra"] = torch.ones(1)
            se["extra"] = ember.ones(1)
        else:
            st["heads.0.weight"] = torch.ones(3, 2)
            se["heads.0.weight"] = ember.ones(3, 2)
        with pytest.raises(RuntimeError) as te:
            _net(tnn).load_state_dict(st)
        with pytest.raises(RuntimeError) as ee:
            ours.load_state_dict(se)
        assert str(ee.value) == str(te.value).replace("torch.", "ember.")


def test_load_state_dict_non_strict_returns_incompatible_keys():
    ours, theirs = _net(nn), _net(tnn)
    st = theirs.state_dict()
    del st["conv.bias"]
    st["junk"] = torch.ones(1)
    se = {k: e(v) for k, v in st.items()}
    rt = _net(tnn).load_state_dict(st, strict=False)
    re_ = ours.load_state_dict(se, strict=False)
    assert re_.missing_keys == rt.missing_keys
    assert re_.unexpected_keys == rt.unexpected_keys
    assert repr(re_) == repr(rt)


def test_load_state_dict_assign_keeps_parameter_type():
    lin = nn.Linear(2, 2)
    w = ember.ones(2, 2)
    lin.load_state_dict({"weight": w, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
    assert lin.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_deepcopy_module():
    net = _net(nn)
    dup = copy.deepcopy(net)
    assert isinstance(dup.conv.weight, nn.Parameter)
    with ember.no_grad():
        dup.conv.weight[0, 0, 0, 0] = 100.0
    assert net.conv.weight[0, 0, 0, 0].item() != 100.0


# ---- modes, conversion, grads -----------------------------------------------------------
def test_train_eval_recursive():
    net = _net(nn)
    assert net.training and net.blocks[0].training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


def test_to_dtype_keeps_parameter_objects():
    net = _net(nn)
    w = net.conv.weight
    ptrs = {id(p) for p in net.parameters()}
    assert net.to(ember.float64) is net
    assert net.conv.weight is w and w.dtype is ember.float64
    assert {id(p) for p in net.parameters()} == ptrs
    assert isinstance(w, nn.Parameter) and w.requires_grad
    assert net.bn.running_mean.dtype is ember.float64
    assert net.bn.num_batches_tracked.dtype is ember.int64   # integer buffers keep dtype
    net.float()
    assert w.dtype is ember.float32
    net.double()
    assert w.dtype is ember.float64
    net.to(dtype=ember.float32)
    assert w.dtype is ember.float32
    net.to("cpu").cpu()
    with pytest.raises(TypeError, match="floating point"):
        net.to(ember.int64)
    x = ember.randn(2, 3, 4, 4, dtype=ember.float64)
    assert net.double()(x).dtype is ember.float64


def test_zero_grad_and_requires_grad_():
    lin = nn.Linear(2, 2)
    lin.weight.grad = ember.ones(2, 2)
    lin.bias.grad = ember.ones(2)
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None
    lin.requires_grad_(False)
    assert not lin.weight.requires_grad
    lin.requires_grad_()
    assert lin.weight.requires_grad


def test_apply_visits_children_first():
    seen = []
    net = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]


# ---- hooks --------------------------------------------------------------------------------
def test_forward_hooks_modify_and_remove():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    y = lin(ember.ones(3, 2))
    expect = (lin.bias + 1).reshape(1, 2).expand(3, 2)
    assert ember.allclose(y, expect) and calls == [(3, 2)]
    h1.remove()
    h2.remove()
    assert not lin._forward_hooks and not lin._forward_pre_hooks
    assert lin(ember.zeros(1, 2)).shape == (1, 2) and len(calls) == 1


def test_forward_hooks_kwargs_prepend_and_context():
    m = nn.Identity()
    order = []
    m.register_forward_hook(lambda mod, a, out: order.append("second"))
    with m.register_forward_hook(lambda mod, a, out: order.append("first"), prepend=True):
        m(ember.ones(1))
    assert order == ["first", "second"]
    m.register_forward_pre_hook(lambda mod, a, kw: (a, {"scale": 2}), with_kwargs=True)

    class Scaled(nn.Module):
        def forward(self, x, scale=1):
            return x * scale
    s = Scaled()
    s.register_forward_pre_hook(lambda mod, a, kw: (a, {"scale": 3}), with_kwargs=True)
    s.register_forward_hook(lambda mod, a, kw, out: out + kw["scale"], with_kwargs=True)
    assert s(ember.ones(1)).item() == 6.0


def test_always_call_hook_runs_on_error():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    seen = []
    b = Boom()
    b.register_forward_hook(lambda m, a, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError):
        b(ember.ones(1))
    assert seen == [None]


def _backward_hook_run(lib, make):
    """A module with two tensor inputs (one not requiring grad), a non-tensor argument, an
    unused output and a non-tensor output, with a pre-hook and a full hook that scales the
    first input's gradient; returns what the hooks saw and the leaves' gradients."""
    class Two(lib.Module):
        def forward(self, a, tag, b):
            return a * 2 + b, (a * b).sum() * 3, 7

    def listed(grads):
        return [None if g is None else g.tolist() for g in grads]
    m, log = Two(), []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", listed(go))))

    def hook(mod, gi, go):
        log.append(("full", listed(gi), listed(go)))
        return (gi[0] * 10, None, gi[2])
    m.register_full_backward_hook(hook)
    a = make([1.0, 2.0]).requires_grad_()
    b = make([3.0, 4.0])
    out, _, seven = m(a, "x", b)
    out.sum().backward()
    first = (list(log), a.grad.tolist(), seven, type(out.grad_fn).__name__)
    log.clear()
    a.grad = None
    b.requires_grad_()
    out, total, _ = m(a, "x", b)
    (out.sum() + total).backward()
    return first, (list(log), a.grad.tolist(), b.grad.tolist())


def test_full_backward_hooks_match_pytorch():
    """What the hooks see (None for a non-tensor argument and an unused output, zeros for a
    tensor input that needs no grad) and a replaced grad_input, as in PyTorch."""
    ours = _backward_hook_run(nn, ember.tensor)
    theirs = _backward_hook_run(tnn, torch.tensor)
    assert ours == theirs
    assert ours[0][3] == "BackwardHookFunctionBackward"


def test_full_backward_hook_on_layers_matches_pytorch():
    """Grad-CAM's use: the hook's grad_output and grad_input of a conv inside a network, a
    pre-hook replacing grad_output, prepend order, and handles that remove."""
    torch.manual_seed(0)
    tnet = tnn.Sequential(tnn.Conv2d(2, 3, 3, padding=1), tnn.ReLU(), tnn.Conv2d(3, 1, 1))
    enet = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Conv2d(3, 1, 1))
    load_from_torch(enet, tnet)
    x = torch.randn(2, 2, 4, 4)
    results = []
    for lib, net, inp in ((torch, tnet, x), (ember, enet, e(x))):
        seen, order = {}, []
        net[0].register_full_backward_hook(
            lambda mod, gi, go: seen.update(gi=gi[0], go=go[0]) or order.append("b"))
        net[0].register_full_backward_hook(lambda mod, gi, go: order.append("a"), prepend=True)
        h = net[2].register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
        inp = inp.clone().requires_grad_()
        net(inp).sum().backward()
        h.remove()
        results.append((seen["gi"], seen["go"], inp.grad, net[0].weight.grad, order))
        net(inp).sum().backward()   # the removed pre-hook no longer doubles
        results[-1] += (inp.grad,)
    ours, theirs = results[1], results[0]
    for i in (0, 1, 2, 3, 5):
        close(ours[i], theirs[i])
    assert ours[4] == theirs[4] == ["a", "b", "a", "b"]


def test_full_backward_hook_without_input_grad_and_errors_match_pytorch():
    for lib, mod, make in ((tnn, torch, torch.ones), (nn, ember, ember.ones)):
        lin = lib.Linear(2, 2)
        seen = []
        h = lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
        with pytest.warns(UserWarning, match="no inputs require gradients"):
            lin(make(1, 2)).sum().backward()
        assert seen == [((None,), (1, 2))]
        h.remove()
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but "
                                               "expected 1"):
            lin(make(1, 2, requires_grad=True)).sum().backward()
        with mod.no_grad():   # no graph: the hooks are not set up
            assert not lin(make(1, 2, requires_grad=True)).requires_grad
    with pytest.raises(NotImplementedError, match="register_full_backward_hook"):
        nn.Linear(2, 2).register_backward_hook(lambda *a: None)


def test_module_full_backward_hook_global():
    seen = []
    h = nn.modules.module.register_module_full_backward_hook(
        lambda m, gi, go: seen.append(type(m).__name__))
    try:
        net = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
        net(ember.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        h.remove()
    assert seen == ["Tanh", "Linear", "Sequential"]


def test_missing_forward():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(ember.ones(1))


# ---- containers ---------------------------------------------------------------------------
def test_sequential_indexing_slicing_append():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2 and sub[0] is seq[1]
    seq.append(nn.Sigmoid())
    assert list(seq._modules) == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and isinstance(seq[1], nn.Linear)
    seq.insert(1, nn.Tanh())
    assert isinstance(seq[1], nn.Tanh)
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "Linear", "Sigmoid"]
    with pytest.raises(IndexError):
        seq[10]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]
    assert isinstance(named.act, nn.ReLU)
    assert len(seq + named) == 6 and len(named * 2) == 4


def test_modulelist_and_moduledict():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml.insert(0, nn.Sigmoid())
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "Linear", "Linear", "Linear", "ReLU",
                                             "Tanh"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == [str(i) for i in range(5)]
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.ReLU()
    md.update([("c", nn.Tanh())])
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert isinstance(md.pop("b"), nn.ReLU) and list(md) == ["a", "c"]
    assert list(md.state_dict()) == ["a.weight", "a.bias"]


def test_parameterlist_and_parameterdict():
    pl = nn.ParameterList([ember.ones(2), nn.Parameter(ember.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert list(pl.state_dict()) == ["0", "1"]
    pd = nn.ParameterDict({"x": ember.ones(1)})
    pd["y"] = nn.Parameter(ember.ones(2))
    assert list(pd.keys()) == ["x", "y"] and list(pd.state_dict()) == ["x", "y"]
    tpl = tnn.ParameterList([torch.ones(2), tnn.Parameter(torch.zeros(3))])
    assert repr(pl) == repr(tpl).replace("torch.", "ember.")
    tpd = tnn.ParameterDict({"x": torch.ones(1)})
    tpd["y"] = tnn.Parameter(torch.ones(2))
    assert repr(pd) == repr(tpd).replace("torch.", "ember.")


# ---- repr -----------------------------------------------------------------------------------
def _same_repr(ours, theirs):
    assert repr(ours) == repr(theirs).replace("torch.", ""), f"\n{ours!r}\n{theirs!r}"


def test_repr_of_a_network_matches_pytorch():
    _same_repr(_net(nn), _net(tnn))


@pytest.mark.parametrize("make", [
    lambda L: L.Linear(3, 4, bias=False),
    lambda L: L.Bilinear(2, 3, 4),
    lambda L: L.Conv1d(2, 4, 3, stride=2, padding=1, dilation=2, groups=2, bias=False),
    lambda L: L.Conv2d(3, 6, (3, 5), padding="same", padding_mode="reflect"),
    lambda L: L.Conv2d(3, 6, 3, padding="valid"),
    lambda L: L.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1, groups=2),
    lambda L: L.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
    lambda L: L.MaxPool1d(2),
    lambda L: L.AvgPool2d((2, 3)),
    lambda L: L.AvgPool1d(3),
    lambda L: L.AdaptiveAvgPool2d((2, None)),
    lambda L: L.AdaptiveMaxPool2d(3),
    lambda L: L.BatchNorm1d(4, momentum=None, affine=False),
    lambda L: L.BatchNorm2d(4, track_running_stats=False),
    lambda L: L.InstanceNorm2d(3, affine=True),
    lambda L: L.LayerNorm([3, 4], elementwise_affine=False),
    lambda L: L.LayerNorm(4, bias=False),
    lambda L: L.GroupNorm(2, 4, eps=1e-3),
    lambda L: L.RMSNorm(4, eps=1e-6),
    lambda L: L.Embedding(10, 3, padding_idx=2, max_norm=1.0),
    lambda L: L.Dropout(0.2),
    lambda L: L.Dropout2d(inplace=True),
    lambda L: L.ReLU(inplace=True),
    lambda L: L.ReLU(),
    lambda L: L.LeakyReLU(0.2),
    lambda L: L.GELU(approximate="tanh"),
    lambda L: L.ELU(alpha=0.5, inplace=True),
    lambda L: L.Softplus(beta=2, threshold=10),
    lambda L: L.Softmax(dim=1),
    lambda L: L.LogSoftmax(-1),
    lambda L: L.Hardswish(),
    lambda L: L.SiLU(),
    lambda L: L.Hardtanh(-2, 2),
    lambda L: L.ReLU6(),
    lambda L: L.PReLU(3),
    lambda L: L.Threshold(0.1, 20),
    lambda L: L.GLU(),
    lambda L: L.Flatten(),
    lambda L: L.Unflatten(1, (2, 5)),
    lambda L: L.Identity(),
    lambda L: L.Upsample(scale_factor=2, mode="bilinear"),
    lambda L: L.ZeroPad2d((1, 2, 3, 4)),
    lambda L: L.ReflectionPad2d(2),
    lambda L: L.ConstantPad1d(2, 3.5),
    lambda L: L.CrossEntropyLoss(label_smoothing=0.1),
    lambda L: L.MSELoss(),
    lambda L: L.ModuleList([L.Linear(2, 2), L.Linear(2, 2), L.ReLU(), L.Linear(2, 2)]),
    lambda L: L.ModuleList(),
    lambda L: L.Sequential(L.Linear(2, 2), L.Sequential(L.ReLU(), L.Dropout())),
])
def test_layer_repr_matches_pytorch(make):
    _same_repr(make(nn), make(tnn))


def test_state_dict_and_load_hooks():
    lin = nn.Linear(2, 2)
    def drop_bias(module, sd, prefix, meta):
        del sd[prefix + "bias"]
    lin.register_state_dict_post_hook(drop_bias)
    assert list(lin.state_dict()) == ["weight"]
    seen = []
    lin.register_load_state_dict_post_hook(lambda m, keys: seen.append(list(keys.missing_keys)))
    lin.load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)
    assert seen == [["bias"]]
    pre = []
    lin.register_load_state_dict_pre_hook(lambda m, sd, prefix, *rest: pre.append(prefix))
    lin.load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)
    assert pre == [""]


def test_to_converts_gradients_too():
    lin = nn.Linear(2, 2)
    lin.weight.grad = ember.ones(2, 2)
    g = lin.weight.grad
    lin.double()
    assert lin.weight.grad is g and g.dtype is ember.float64


def test_pickle_module_roundtrip():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(16, 2))
    net.eval()
    x = ember.randn(1, 3, 4, 4)
    back = pickle.loads(pickle.dumps(net))
    assert isinstance(back[0].weight, nn.Parameter)
    assert ember.allclose(back(x), net(x))


def test_private_hook_registrars_and_to_empty_as_torch():
    """The private registrars libraries call and Module.to_empty, side by side with torch."""
    import torch
    for lib in (ember, torch):
        calls = []
        m = lib.nn.Linear(2, 3)
        m._register_load_state_dict_pre_hook(lambda sd, prefix, *a: calls.append("pre"))
        m._register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, *a: calls.append(type(mod).__name__), with_module=True)
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: calls.append("post"))
        m.load_state_dict(m.state_dict())
        assert calls == ["post", "pre", "Linear"], lib
        e = m.to_empty(device="cpu")
        assert e is m and tuple(m.weight.shape) == (3, 2)
        assert isinstance(m.weight, lib.nn.Parameter)
    m = ember.nn.Linear(2, 3)
    m.to_empty(device="opencl")
    assert m.weight.device.type == "opencl" and m.bias.device.type == "opencl"


def test_hook_handles_are_torch_utils_hooks_removable_handles():
    """Every register_*_hook (Module, tensor, autograd node, optimizer) returns a
    ``utils.hooks.RemovableHandle`` with an ``id`` that works as a context manager, as
    PyTorch's; ``from torch.utils.hooks import RemovableHandle`` imports."""
    def run(lib):
        from importlib import import_module
        handle_type = import_module(lib.__name__ + ".utils.hooks").RemovableHandle
        calls = []
        m = lib.nn.Linear(2, 2)
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        handles = [m.register_forward_hook(lambda *a: calls.append("fwd")),
                   m.register_forward_pre_hook(lambda *a: calls.append("pre")),
                   x.register_hook(lambda g: calls.append("tensor")),
                   y.grad_fn.register_hook(lambda *a: calls.append("node")),
                   y.grad_fn.register_prehook(lambda *a: calls.append("node pre")),
                   opt.register_step_pre_hook(lambda *a: calls.append("step"))]
        kinds = [(isinstance(h, handle_type), isinstance(h.id, int)) for h in handles]
        for h in handles:
            with h:
                pass
        m(lib.ones(2))
        y.sum().backward()
        opt.step()
        return kinds, calls
    assert run(ember) == run(torch)
