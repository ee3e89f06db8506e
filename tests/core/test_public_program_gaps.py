"""Gaps found by running public PyTorch programs (pytorch/examples, nanoGPT, minGPT) under
``python -m ember.as_torch``; each test checks ember against PyTorch run the same way."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")

_HOGWILD = '''
import torch
import torch.multiprocessing as mp


def work(model, queue):
    with torch.no_grad():
        model.weight.add_(1.0)  # written into the parent's shared memory
    queue.put(type(model.weight).__module__.split(".")[0])


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    model = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    model.share_memory()
    queue = mp.Queue()
    p = mp.Process(target=work, args=(model, queue))
    p.start()
    lib = queue.get(timeout=120)
    p.join()
    mine = type(model.weight).__module__.split(".")[0]
    print(p.exitcode, lib == mine, model.weight.sum().item())
'''


def test_spawned_children_import_the_same_torch(tmp_path):
    """pytorch/examples mnist_hogwild: with the "spawn" start method a child re-imports the
    parent's main script; under the alias its ``import torch`` must give ember too, and its
    in-place updates land in the parent's shared parameters, as under PyTorch."""
    script = tmp_path / "hogwild.py"
    script.write_text(_HOGWILD)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[0].returncode == 0, ran[0].stderr
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout == "0 True 4.0\n"


def test_functional_data_parallel_needs_an_accelerator():
    """pytorch/examples dcgan (its older form) calls ``nn.parallel.data_parallel(self.main,
    input, None)``: PyTorch raises RuntimeError when no accelerator is present, while the
    ``DataParallel`` module runs on the CPU; ember does the same."""
    tm = torch.nn.Linear(3, 2)
    em = enn.Linear(3, 2)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    with ember.no_grad():
        em.weight.copy_(ember.tensor(tm.weight.detach().numpy()))
        em.bias.copy_(ember.tensor(tm.bias.detach().numpy()))
    want = tm(torch.from_numpy(x)).detach().numpy()
    # the module form runs wherever it is
    got = enn.DataParallel(em)(ember.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, torch.nn.DataParallel(tm)(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    if not torch.cuda.is_available() and not ember.accelerator.is_available():
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            torch.nn.parallel.data_parallel(tm, torch.from_numpy(x), None)
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            enn.parallel.data_parallel(em, ember.tensor(x), None)
    elif ember.accelerator.is_available():
        got = enn.parallel.data_parallel(em, ember.tensor(x)).detach().cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _warned(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


def _transformer_warnings(lib):
    lib.manual_seed(0)
    nn = lib.nn
    x = lib.randn(5, 3, 8)
    fmask = lib.zeros(5, 5)
    bpad = lib.zeros(3, 5, dtype=lib.bool)
    mha = nn.MultiheadAttention(8, 2)
    layer = nn.TransformerEncoderLayer(8, 2)
    return {
        "mha": _warned(lambda: mha(x, x, x, attn_mask=fmask, key_padding_mask=bpad)),
        "mha_same": _warned(lambda: mha(x, x, x, attn_mask=fmask.bool(), key_padding_mask=bpad)),
        "enc_layer": _warned(lambda: layer(x, src_mask=fmask, src_key_padding_mask=bpad)),
        "enc": _warned(lambda: nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)(
            x, mask=fmask, src_key_padding_mask=bpad)),
        "dec_layer": _warned(lambda: nn.TransformerDecoderLayer(8, 2)(
            x, x, tgt_mask=fmask, tgt_key_padding_mask=bpad)),
        "nested_seq_first": _warned(lambda: nn.TransformerEncoder(layer, 1)),
        "nested_batch_first": _warned(lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, batch_first=True), 1)),
        "nested_norm_first": _warned(lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, batch_first=True, norm_first=True), 1)),
        "nested_odd_heads": _warned(lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(9, 3, batch_first=True), 1)),
        "nested_transformer": _warned(lambda: nn.Transformer(8, 2, 1, 1, 16)),
    }


def test_transformer_mask_and_nested_tensor_warnings():
    """pytorch/examples language_translation and word_language_model: a bool padding mask
    with a float attention mask draws PyTorch's deprecation warning, and a
    TransformerEncoder whose layer rules out the nested-tensor path says why; ember warns
    the same sentences in the same places (programs filter warnings by their text)."""
    assert _transformer_warnings(ember) == _transformer_warnings(torch)


def test_encoder_layer_with_mixed_masks_matches():
    """The encoder layer turns both masks into additive float masks before attention, as
    PyTorch's does: the outputs agree with PyTorch's for a bool padding mask and a float
    causal mask."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 2, 8)).astype(np.float32)
    pad = np.zeros((2, 6), dtype=bool)
    pad[1, -2:] = True
    shapes = {n: tuple(p.shape) for n, p in
              torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16).named_parameters()}
    weights = {n: (rng.standard_normal(s) * 0.3).astype(np.float32) for n, s in shapes.items()}
    outs = []
    for lib in (torch, ember):
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
        with lib.no_grad():
            for name, p in layer.named_parameters():
                p.copy_(lib.tensor(weights[name]))
        mask = lib.nn.Transformer.generate_square_subsequent_mask(6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs.append(layer(lib.tensor(x), src_mask=mask,
                              src_key_padding_mask=lib.tensor(pad)).detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


def _dropout_behaviour(lib):
    """The warnings, errors and mask granularity of feature dropout for ranks 0 to 6."""
    F = lib.nn.functional
    lib.manual_seed(0)
    seen = {}
    for name, fn, shape in [("d2", F.dropout2d, (64, 50)), ("d2", F.dropout2d, (7,)),
                            ("d2", F.dropout2d, ()), ("d2", F.dropout2d, (6, 4, 3, 2, 2)),
                            ("d2", F.dropout2d, (6, 4, 3)), ("d3", F.dropout3d, (40, 30)),
                            ("d3", F.dropout3d, (40, 3, 2)), ("d3", F.dropout3d, (40,)),
                            ("d3", F.dropout3d, (40, 3, 2, 2, 1, 2)),
                            ("d3", F.dropout3d, (6, 4, 2, 2, 2))]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                y = fn(lib.ones(shape), 0.5).numpy()
                keep = (y != 0)
                # which axes the keep-mask is constant along
                const = tuple(ax for ax in range(y.ndim) if y.shape[ax] > 1 and
                              (keep == keep.take([0], axis=ax)).all())
                outcome = ("ok", const, bool(keep.any()), bool((~keep).any()))
            except RuntimeError as err:
                outcome = ("RuntimeError", str(err))
        seen[(name, shape)] = (outcome, [str(w.message) for w in caught])
    return seen


def test_feature_dropout_ranks_match_pytorch():
    """pytorch/examples mnist_rnn applies Dropout2d to (batch, features): PyTorch then drops
    single elements (one draw per entry of the first two dimensions), where ember dropped
    whole samples. Also: fewer than two dimensions is an error while training, and
    dropout3d warns for inputs that are not 4-D or 5-D, as in PyTorch."""
    assert _dropout_behaviour(ember) == _dropout_behaviour(torch)


def _iterator_names(lib):
    ds = lib.utils.data.TensorDataset(lib.arange(8.0))
    names = []
    for workers in (0, 2):
        it = iter(lib.utils.data.DataLoader(ds, batch_size=4, num_workers=workers))
        names.append((type(it).__name__,
                      isinstance(it, lib.utils.data.dataloader._BaseDataLoaderIter),
                      isinstance(it, lib.utils.data.dataloader._SingleProcessDataLoaderIter),
                      isinstance(it, lib.utils.data.dataloader._MultiProcessingDataLoaderIter),
                      [b[0].tolist() for b in it]))
    return names


def test_dataloader_iterator_class_names():
    """yunjey/pytorch-tutorial's pytorch_basics calls the removed ``data_iter.next()``: the
    AttributeError names the iterator class, which is PyTorch's (``isinstance`` checks in
    libraries use the same names)."""
    assert _iterator_names(ember) == _iterator_names(torch)


_WEIGHTS_ONLY = """
import io, pickle
import numpy as np
import torch
buf = io.BytesIO(); torch.save(np.arange(3.0), buf); buf.seek(0)
try:
    torch.load(buf)
except pickle.UnpicklingError as err:
    text = str(err)
    print("`torch.load`" in text, "`torch.serialization.add_safe_globals(" in text,
          "ember" in text)
"""


def test_weights_only_error_names_the_library_the_program_imported(tmp_path):
    """pytorch/examples time_sequence_prediction loads a pickled NumPy array with the default
    ``weights_only=True``: under the alias the refusal tells the user to call
    ``torch.load`` / ``torch.serialization.add_safe_globals``, as PyTorch's does."""
    script = tmp_path / "wo.py"
    script.write_text(_WEIGHTS_ONLY)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                          timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout == "True True False\n"


def _fx_outside_trace(lib):
    """pytorch/examples fx/inline_function.py and wrap_output_dynamically.py: a module and a
    traced GraphModule called on Proxies made from a graph's nodes, outside any trace."""
    from_node = lib.fx.node.map_arg

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = lib.nn.ReLU()

        def forward(self, x):
            return self.relu(x) + 1.0

    m = lib.fx.symbolic_trace(M())
    for node in list(m.graph.nodes):
        if (node.op, node.target) == ("call_module", "relu"):
            with m.graph.inserting_before(node):
                out = m.relu(*from_node(node.args, lib.fx.Proxy))
                node.replace_all_uses_with(out.node)
                m.graph.erase_node(node)
    m.recompile()
    leaky = lib.fx.symbolic_trace(lib.nn.LeakyReLU(0.1))
    g = lib.fx.Graph()
    x = lib.fx.Proxy(g.placeholder("x"))
    g.output(leaky(lib.sigmoid(x) * 2).node)
    gm = lib.fx.GraphModule(lib.nn.Module(), g)
    v = lib.tensor([-1.0, 0.5, 3.0])
    return ([(n.op, n.name) for n in m.graph.nodes], m(v).tolist(),
            [(n.op, n.name, n.kwargs) for n in g.nodes], gm(v).tolist())


def test_fx_proxy_calls_outside_a_trace_match_pytorch():
    """``torch.fx.node`` exists, and ember's functions called on a Proxy outside a
    symbolic trace add nodes (PyTorch's ``Proxy.__torch_function__``)."""
    got, want = _fx_outside_trace(ember), _fx_outside_trace(torch)
    assert got[0] == want[0] and got[2] == want[2]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-6)


def _rewrite_anchors(lib):
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([lib.neg(w1), w2]).sum()
            m2 = lib.cat([lib.neg(w1), w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

    def pattern(a1, a2):
        return lib.cat([lib.neg(a1), a2]).sum()

    def replacement(w1, w2):
        return lib.stack([w1, w2])

    traced = lib.fx.symbolic_trace(M())
    matches = lib.fx.replace_pattern(traced, pattern, replacement)
    return [(m.anchor.name, m.nodes_map[m.anchor].name) for m in matches]


def test_replace_pattern_match_anchor_is_the_pattern_node():
    """pytorch/examples fx/subgraph_rewriter_basic_use.py prints the matches: each
    ``Match.anchor`` is the pattern's node the match was found from, as in PyTorch."""
    assert _rewrite_anchors(ember) == _rewrite_anchors(torch)


_FX_CODE = """
import torch
gm = torch.fx.symbolic_trace(lambda x: torch.nn.functional.relu(torch.exp(x)) + x.sum())
print(gm.code.strip())
print(gm(torch.ones(2)).tolist())
"""


def test_fx_code_names_the_library_the_program_imported(tmp_path):
    """pytorch/examples fx/invert.py and replace_op.py print ``GraphModule.code``: under the
    alias it reads ``torch.exp``, ``torch.nn.functional.relu``, as PyTorch's, and runs."""
    script = tmp_path / "code.py"
    script.write_text(_FX_CODE)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                          timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout
    assert "torch.nn.functional.relu" in ran[1].stdout
