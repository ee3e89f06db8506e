"""Behaviour the PyTorch tutorials showed differing (run unchanged under ``ember.as_torch``),
checked against PyTorch itself."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

RNG = np.random.default_rng(0)


# ---- the grad_fn a printed loss / layer output shows ----------------------------------------
@pytest.mark.parametrize("shape, bias, transpose", [
    ((2, 4), True, False), ((2, 4), False, False), ((5, 2, 4), True, False),
    ((5, 2, 4), False, False), ((5, 2, 4), True, True), ((3, 5, 2, 4), True, False)])
def test_linear_grad_fn_is_pytorchs(shape, bias, transpose):
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((3, 4))
    b = RNG.standard_normal(3)
    names = []
    for lib, F in ((torch, TF), (ember, EF)):
        xt = lib.tensor(x)
        if transpose:
            xt = xt.transpose(0, 1)
        out = F.linear(xt, lib.tensor(w, requires_grad=True),
                       lib.tensor(b, requires_grad=True) if bias else None)
        names.append(out.grad_fn.name())
    assert names[1] == names[0]


@pytest.mark.parametrize("shape, tshape", [((4, 5), (4,)), ((5,), ()), ((2, 3, 4, 5), (2, 4, 5)),
                                            ((2, 3, 4), (2, 4))])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_pytorch(shape, tshape, reduction, weighted):
    c = shape[0] if len(shape) == 1 else shape[1]
    x = RNG.standard_normal(shape)
    t = RNG.integers(0, c, tshape)
    if t.size > 1:
        t.flat[0] = -100   # ignored
    w = RNG.random(c) if weighted else None
    g = RNG.standard_normal(tshape) if reduction == "none" else None
    res = []
    for lib, F in ((torch, TF), (ember, EF)):
        xt = lib.tensor(x, requires_grad=True)
        loss = F.nll_loss(xt, lib.tensor(t), weight=None if w is None else lib.tensor(w),
                          reduction=reduction)
        loss.backward(None if g is None else lib.tensor(g))
        res.append((loss.detach().numpy(), xt.grad.numpy(), loss.grad_fn.name()))
    (tl, tg, tn), (el, eg, en) = res
    np.testing.assert_allclose(el, tl, rtol=1e-12)
    np.testing.assert_allclose(eg, tg, rtol=1e-12)
    if not (len(shape) == 3 and reduction == "none"):   # (PyTorch: a view of nll_loss2d)
        assert en == tn


def test_cross_entropy_grad_fn_is_nll_loss():
    x = RNG.standard_normal((3, 5))
    t = np.array([0, 4, 2])
    names = [F.cross_entropy(lib.tensor(x, requires_grad=True), lib.tensor(t)).grad_fn.name()
             for lib, F in ((torch, TF), (ember, EF))]
    assert names[1] == names[0] == "NllLossBackward0"


def test_nll_loss_double_backward_matches_pytorch():
    x = RNG.standard_normal((4, 3))
    t = np.array([0, 2, 1, 2])
    res = []
    for lib, F in ((torch, TF), (ember, EF)):
        xt = lib.tensor(x, requires_grad=True)
        loss = F.nll_loss(F.log_softmax(xt, 1), lib.tensor(t))
        g, = lib.autograd.grad(loss, xt, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), xt)
        res.append(gg.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-10, atol=1e-14)


def test_nll_loss_weight_requiring_grad_still_differentiates_through_composite():
    # (PyTorch refuses such a weight; ember keeps giving its gradient)
    x = ember.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    w = ember.tensor(RNG.random(3), requires_grad=True)
    EF.nll_loss(x, ember.tensor([0, 2, 1, 2]), weight=w).backward()
    assert w.grad is not None and x.grad is not None


# ---- the graph a torchviz-style walk prints --------------------------------------------------
def test_accumulate_grad_name_is_pytorchs():
    names = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        node = (x * 2).grad_fn.next_functions[0][0]
        names.append((node.name(), type(node).__name__))
    assert names[1] == names[0]


def test_custom_function_node_repr_names_its_module():
    reprs = []
    for lib in (torch, ember):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g

        y = Exp.apply(lib.tensor([1.0], requires_grad=True))
        reprs.append(repr(y.grad_fn).split(" object at ")[0].replace("ember.", "torch."))
        assert y.grad_fn.name() == "ExpBackward"
    assert reprs[1] == reprs[0]


# ---- torch.func's jacfwd (column by column) ---------------------------------------------------
def _predict(F):
    return lambda weight, bias, x: F.linear(x, weight, bias).tanh()


def test_jacfwd_of_a_wide_output_and_the_batched_hessian_match_pytorch():
    # the jacobians/hessians tutorial: many more outputs than inputs, and vmap(hessian)
    w, b, x = RNG.standard_normal((40, 3)), RNG.standard_normal(40), RNG.standard_normal((4, 3))
    res = []
    for lib, F in ((torch, TF), (ember, EF)):
        fn = lib.func
        args = (lib.tensor(w), lib.tensor(b), lib.tensor(x))
        jac = fn.jacfwd(_predict(F), argnums=(0, 2))(args[0], args[1], args[2][0])
        hess = fn.vmap(fn.hessian(_predict(F), argnums=2), in_dims=(None, None, 0))(*args)
        res.append((jac[0].numpy(), jac[1].numpy(), hess.numpy()))
    for e, t in zip(res[1], res[0]):
        assert e.shape == t.shape
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_jacfwd_structured_outputs_and_aux_match_pytorch():
    def f(lib):
        return lambda x, y: ({"s": (x * y).sin(), "c": x.cos().sum()}, x * 2)
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    res = []
    for lib in (torch, ember):
        jac, aux = lib.func.jacfwd(f(lib), argnums=(0, 1), has_aux=True)(lib.tensor(a),
                                                                          lib.tensor(b))
        res.append(([jac["s"][0], jac["s"][1], jac["c"][0], jac["c"][1]], aux))
    for e, t in zip(res[1][0] + [res[1][1]], res[0][0] + [res[0][1]]):
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-14)


# ---- t[key] = value with leading size-1 dimensions (seq2seq: attentions[di] = attn of (1, n))
@pytest.mark.parametrize("shape, key, vshape", [
    ((10, 10), 0, (1, 10)), ((10, 10), 0, (1, 1, 10)), ((4, 5), slice(1, 3), (1, 2, 5)),
    ((4, 5), [0, 2], (1, 2, 5)), ((4, 5), "mask", (1, 1, 5)), ((3,), 1, (1, 1)),
    ((2, 3), (Ellipsis, 1), (1, 2)), ((10, 10), 0, (10, 1))])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_setitem_drops_the_values_leading_ones_as_pytorch(shape, key, vshape, requires_grad):
    res = []
    for lib in (torch, ember):
        t = lib.zeros(shape)
        k = lib.tensor([True, False, True, False]) if key == "mask" else key
        v = lib.arange(float(np.prod(vshape))).reshape(vshape).requires_grad_(requires_grad)
        try:
            t[k] = v
        except RuntimeError as e:
            res.append(str(e).replace("ember.", "torch."))
            continue
        if requires_grad:
            (t * lib.arange(float(t.numel())).reshape(shape)).sum().backward()
            res.append((t.detach().numpy(), v.grad.numpy()))
        else:
            res.append((t.numpy(),))
    if isinstance(res[0], str):
        assert res[1] == res[0]
    else:
        for e, t in zip(res[1], res[0]):
            np.testing.assert_array_equal(e, t)


def test_expand_to_fewer_dims_error_is_pytorchs():
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            lib.zeros(10, 1).expand(10)
        msgs.append(str(info.value).replace("ember.", "torch."))
    assert msgs[1] == msgs[0]


# ---- convolutions: one ConvolutionBackward0 node (the shapes recipe prints a conv's output) --
CONV_CASES = [  # (nd, transposed, cin, cout, groups, k, stride, padding, dilation, outpad, bias)
    (2, False, 3, 5, 1, 3, 1, 1, 1, 0, True), (2, False, 4, 4, 4, 3, 2, 1, 1, 0, True),
    (2, False, 4, 6, 2, 3, 1, 0, 2, 0, False), (1, False, 3, 2, 1, 4, 2, 1, 1, 0, True),
    (3, False, 2, 3, 1, 2, 1, 0, 1, 0, True), (2, True, 3, 5, 1, 3, 2, 1, 1, 1, True),
    (2, True, 4, 6, 2, 3, 1, 0, 2, 0, False), (1, True, 4, 4, 4, 3, 2, 1, 1, 1, True)]


@pytest.mark.parametrize("nd, tr, cin, cout, groups, k, stride, pad, dil, outpad, bias",
                         CONV_CASES)
def test_convolution_node_and_gradients_match_pytorch(nd, tr, cin, cout, groups, k, stride,
                                                      pad, dil, outpad, bias):
    x = RNG.standard_normal((2, cin) + (7,) * nd)
    w = RNG.standard_normal(((cin, cout // groups) if tr else (cout, cin // groups)) + (k,) * nd)
    b = RNG.standard_normal(cout)
    res = []
    for lib in (torch, ember):
        xs, ws, bs = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        fn = getattr(lib.nn.functional, f"conv{'_transpose' if tr else ''}{nd}d")
        kw = dict(stride=stride, padding=pad, dilation=dil, groups=groups)
        if tr:
            kw["output_padding"] = outpad
        y = fn(xs, ws, bs if bias else None, **kw)
        gy = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
        grads = lib.autograd.grad(y, (xs, ws) + ((bs,) if bias else ()), gy,
                                  create_graph=True)
        second = lib.autograd.grad((grads[0] ** 2).sum() + (grads[1] ** 2).sum(), (xs, ws))
        res.append(([t.detach().numpy() for t in (y,) + grads + second], y.grad_fn.name()))
    assert res[1][1] == res[0][1] == "ConvolutionBackward0"
    for e, t in zip(res[1][0], res[0][0]):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-10)


def test_meta_tensor_repr_wraps_as_pytorchs():
    outs = []
    for lib in (torch, ember):
        conv = lib.nn.Conv2d(3, 5, 2, device="meta")
        lines = [repr(conv(lib.rand(2**10, 3, 2**16, 2**16, device="meta")))]
        for dt in (lib.float64, lib.int64):
            lines.append(repr(lib.empty(2**20, 2**20, 2**10, 7, device="meta", dtype=dt)).replace(
                "ember.", "torch."))
        outs.append(lines)
    assert outs[1] == outs[0]


# ---- the swap_tensors recipe: torch.utils.swap_tensors, torch.__future__, module_load -------
def _swap_run(lib, swap, overwrite):
    fut = lib.__future__
    fut.set_swap_module_params_on_conversion(swap)
    fut.set_overwrite_module_params_on_conversion(overwrite)
    try:
        out = [fut.get_swap_module_params_on_conversion(),
               fut.get_overwrite_module_params_on_conversion()]
        m = lib.nn.Linear(3, 5)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        m(lib.ones(2, 3)).sum().backward()
        w, g = m.weight, m.weight.grad
        m.double()
        out += [m.weight is w, m.weight.grad is g, str(m.weight.dtype), str(m.weight.grad.dtype),
                opt.param_groups[0]["params"][0] is m.weight, type(m.weight).__name__,
                m.weight.requires_grad]
        for assign in (False, True):
            m = lib.nn.Linear(3, 5)
            w = m.weight
            sd = lib.nn.Linear(3, 5).state_dict()
            m.load_state_dict(sd, assign=assign)
            out += [m.weight is w, m.weight is sd["weight"], type(m.weight).__name__,
                    m.weight.requires_grad, bool((m.weight == sd["weight"]).all())]
        with lib.device("meta"):
            m = lib.nn.Linear(3, 5)
        w = m.weight
        m.load_state_dict(lib.nn.Linear(3, 5).state_dict(), assign=True)
        out += [m.weight is w, m.weight.device.type]
    finally:
        fut.set_swap_module_params_on_conversion(False)
        fut.set_overwrite_module_params_on_conversion(False)
    return [str(v).replace("ember.", "torch.") for v in out]


@pytest.mark.parametrize("swap, overwrite", [(False, False), (False, True), (True, False),
                                             (True, True)])
def test_future_module_param_conversion_flags_match_pytorch(swap, overwrite):
    import torch.__future__  # noqa: F401  (the attribute is set by importing it)
    import ember.__future__  # noqa: F401
    assert _swap_run(ember, swap, overwrite) == _swap_run(torch, swap, overwrite)


def test_swap_tensors_and_module_load_match_pytorch():
    import weakref
    res = []
    for lib in (torch, ember):
        out = []
        a, b = lib.ones(2, requires_grad=True), lib.zeros(3, dtype=lib.float64)
        lib.utils.swap_tensors(a, b)
        out += [a.tolist(), b.tolist(), str(a.dtype), a.requires_grad, b.requires_grad]
        p, q = lib.nn.Parameter(lib.ones(2)), lib.zeros(2)
        lib.utils.swap_tensors(p, q)
        out += [type(p).__name__, type(q).__name__, q.requires_grad]
        w = lib.zeros(2)
        out += [w.module_load(lib.ones(2)).tolist(), w.tolist(),
                w.module_load(lib.full((2,), 3.0), assign=True).tolist(), w.tolist()]
        r = lib.ones(1)
        ref = weakref.ref(r)
        with pytest.raises(RuntimeError) as info:
            lib.utils.swap_tensors(r, lib.zeros(1))
        out.append(str(info.value))
        del ref
        res.append([str(v).replace("ember.", "torch.") for v in out])
    assert res[1] == res[0]


# ---- torch.compile intro: TorchScript's deprecation warning, as PyTorch words and places it ---
def test_jit_deprecation_warning_matches_pytorch():
    import warnings

    def f(x):
        return x + 1

    res = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.jit.script(f)
        msgs = [w for w in caught if issubclass(w.category, DeprecationWarning)]
        # attributed to the library's own file, so the default filters hide it
        assert msgs and all(lib.__name__ in w.filename.replace("frontend", "ember")
                            for w in msgs)
        res.append(str(msgs[0].message).replace("ember.", "torch."))
    assert res[1] == res[0]


# ---- the TensorBoard tutorial's SummaryWriter calls: PR curves, embeddings, hparams, graphs --
def _events(logdir):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def _writer_run(lib, logdir):
    pytest.importorskip("tensorboard")
    from importlib import import_module
    SummaryWriter = import_module(lib.__name__ + ".utils.tensorboard").SummaryWriter
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 50).astype(bool)
    probs = rng.random(50).astype(np.float32)
    with SummaryWriter(str(logdir)) as w:
        w.add_pr_curve("pr", lib.tensor(labels), lib.tensor(probs), global_step=2)
        w.add_pr_curve("pr_w", lib.tensor(labels), lib.tensor(probs), num_thresholds=300,
                       weights=rng.random(50))
        w.add_embedding(lib.tensor(rng.random((9, 4)).astype(np.float32)),
                        metadata=[f"c{i}" for i in range(9)],
                        label_img=lib.tensor(rng.random((9, 1, 5, 6)).astype(np.float32)))
        w.add_embedding(lib.tensor(np.arange(6).reshape(3, 2)), metadata=[[1, "a"], [2, "b"],
                                                                            [3, "c"]],
                        metadata_header=["n", "s"], global_step=1, tag="a/b")
        w.add_hparams({"lr": 0.1, "name": "x", "flag": True}, {"hp/acc": 0.5},
                      run_name="run0")


def test_summary_writer_plugins_match_pytorch(tmp_path):
    from tensorboard.util import tensor_util
    _writer_run(torch, tmp_path / "t")
    _writer_run(ember, tmp_path / "e")
    et, ee = _events(tmp_path / "t"), _events(tmp_path / "e")
    assert sorted(ee.Tags()["tensors"]) == sorted(et.Tags()["tensors"]) == ["pr", "pr_w"]
    for tag in ("pr", "pr_w"):
        a, b = et.Tensors(tag)[0], ee.Tensors(tag)[0]
        assert a.step == b.step
        np.testing.assert_allclose(tensor_util.make_ndarray(b.tensor_proto),
                                   tensor_util.make_ndarray(a.tensor_proto), rtol=1e-6)
        assert et.SummaryMetadata(tag) == ee.SummaryMetadata(tag)
    for f in ("projector_config.pbtxt", "00000/default/tensors.tsv",
              "00000/default/metadata.tsv", "00000/default/sprite.png",
              "00001/a%2fb/tensors.tsv", "00001/a%2fb/metadata.tsv"):
        assert (tmp_path / "e" / f).read_bytes() == (tmp_path / "t" / f).read_bytes(), f
    ht, he = _events(tmp_path / "t" / "run0"), _events(tmp_path / "e" / "run0")
    assert [(s.step, s.value) for s in he.Scalars("hp/acc")] == \
        [(s.step, s.value) for s in ht.Scalars("hp/acc")]


def test_add_graph_writes_a_graph_with_shapes(tmp_path):
    pytest.importorskip("tensorboard")
    from ember.utils.tensorboard import SummaryWriter
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(net, ember.ones(5, 3))
    acc = _events(tmp_path)
    assert acc.Tags()["graph"] and acc.Tags()["run_metadata"] == ["step1"]   # (PyTorch's tag)
    graph = acc.Graph()
    shapes = {n.op: [list(d.size for d in s.dim) for s in n.attr["_output_shapes"].list.shape]
              for n in graph.node}
    assert shapes["Linear"] == [[5, 2]] and shapes["ReLU"] == [[5, 4]]
    assert {n.op for n in graph.node} >= {"IO Node", "Linear", "ReLU"}


# ---- the profiler recipe: memory columns and sort keys, stacks and export_stacks ------------
def _profile(lib, **kw):
    model = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.ReLU(), lib.nn.Flatten(),
                              lib.nn.Linear(4 * 6 * 6, 5))
    x = lib.ones(2, 3, 8, 8)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as prof:
        model(x)
    return prof


def _header(table: str) -> list:
    return [c for c in table.splitlines()[1].split("  ") if c.strip()]


def test_profile_memory_table_columns_and_sorting_match_pytorch():
    heads = []
    for lib in (torch, ember):
        prof = _profile(lib, profile_memory=True, record_shapes=True)
        for key in ("self_cpu_memory_usage", "cpu_memory_usage"):
            table = prof.key_averages().table(sort_by=key, row_limit=10)
            heads.append([h.strip() for h in _header(table)])
            rows = prof.key_averages()
            assert max(getattr(e, key) for e in rows) > 0
        # without profile_memory: no memory columns
        plain = _profile(lib).key_averages().table(sort_by="cpu_time_total")
        assert "CPU Mem" not in plain
    assert heads[2:] == heads[:2]
    ember_rows = _profile(ember, profile_memory=True).key_averages()
    linear = [e for e in ember_rows if e.key == "ember::linear"][0]
    assert linear.self_cpu_memory_usage == 2 * 5 * 4     # its (2, 5) float32 output


def test_with_stack_group_by_stack_n_and_export_stacks(tmp_path):
    # PyTorch 2.13 records with_stack as Python-function events and leaves op stacks
    # empty (its export_stacks writes nothing); ember records each op's stack as the
    # recipe documents (Source Location column, flamegraph lines) -- what both share:
    msgs = []
    for lib in (torch, ember):
        prof = _profile(lib, with_stack=True)
        assert "Source Location" not in prof.key_averages().table(row_limit=2)
        path = tmp_path / f"{lib.__name__}.txt"
        prof.export_stacks(str(path), "self_cpu_time_total")
        for line in path.read_text().splitlines():    # "frame;frame;... <microseconds>"
            frames, value = line.rsplit(" ", 1)
            assert int(value) > 0 and ".py(" in frames.split(";")[-1]
        with pytest.raises(ValueError) as info:
            prof.export_stacks(str(path), "cpu_time_total")
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]
    prof = _profile(ember, with_stack=True)
    table = prof.key_averages(group_by_stack_n=3).table(sort_by="self_cpu_time_total",
                                                       row_limit=2)
    assert _header(table)[-1].strip() == "Source Location"
    text = (tmp_path / "ember.txt").read_text()
    assert "test_tutorial_fixes.py(" in text and "ember/dispatcher" not in text


# ---- python -m ember.as_torch script.py runs the script as python script.py does -----------
def test_as_torch_script_file_and_argv_as_python_gives_them(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text("import sys, warnings\nprint(__file__, sys.argv[0], __name__)\n"
                      "warnings.warn('w')\n")
    outs = []
    for cmd in ([sys.executable, "s.py"], [sys.executable, "-m", "ember.as_torch", "s.py"]):
        r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        outs.append((r.stdout, r.stderr.splitlines()[0]))
    assert outs[1] == outs[0]


# ---- forward-mode AD tutorial: make_dual keeps a tangent laid out as the primal -------------
def test_make_dual_keeps_or_copies_the_tangent_as_pytorch():
    p, t = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    res = []
    for lib in (torch, ember):
        fw = lib.autograd.forward_ad
        primal, tangent = lib.tensor(p, dtype=lib.float32), lib.tensor(t, dtype=lib.float32)
        out = []
        with fw.dual_level():
            for tan in (tangent, tangent.T.contiguous().T):
                got = fw.unpack_dual(fw.make_dual(primal, tan)).tangent
                out += [got is tan, tuple(got.stride()), bool((got == tan).all())]
            got = fw.unpack_dual(fw.make_dual(primal.T, tangent.T.contiguous())).tangent
            out.append(tuple(got.stride()))
        res.append(out)
    assert res[1] == res[0]
