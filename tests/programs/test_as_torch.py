"""``python -m ember.as_torch``: unedited PyTorch code and PyTorch-based registry packages
run on ember. Each check runs in a fresh interpreter, so the alias never meets the real torch
the rest of the suite imports."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember
from ember import as_torch

ROOT = os.path.dirname(os.path.abspath(__file__))


def _run(tmp_path, source, *args):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, "-m", "ember.as_torch", str(script), *args],
                          capture_output=True, text=True, timeout=300)


def test_import_torch_gives_ember(tmp_path):
    r = _run(tmp_path, """
        import sys
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
        import ember
        assert torch.Tensor is ember.Tensor and nn is ember.nn and F is ember.nn.functional
        assert nn.__spec__.name == "ember.nn"      # ember's modules keep their own spec
        assert torch.__version__.endswith("+ember." + ember.__version__)
        assert sys.argv[1:] == ["--flag", "7"]
        torch.backends_probe = 1                   # attribute writes reach ember
        assert ember.backends_probe == 1
        try:
            import torch._export  # noqa: F401
        except ModuleNotFoundError as e:
            assert "torch._export" in str(e)
        else:
            raise AssertionError("torch._export imported")
        import torch._dynamo
        import torch._inductor.config
        assert torch._dynamo.reset is ember._dynamo.reset
        assert torch._inductor.config is ember._inductor.config
        print("ok")
    """, "--flag", "7")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_script_folder_heads_sys_path(tmp_path):
    """As ``python prog.py``: a script run from another folder imports its sibling modules
    (pytorch/examples fast_neural_style's ``import utils``); plain ``python prog.py`` is the
    oracle for sys.path[0]."""
    (tmp_path / "sibling_mod.py").write_text("VALUE = 7\n")
    source = "import sys\nimport sibling_mod\nprint(sys.path[0], sibling_mod.VALUE)\n"
    (tmp_path / "prog.py").write_text(source)
    cwd = tmp_path.parent
    ran = [subprocess.run([sys.executable, *pre, str(tmp_path / "prog.py")], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
           for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout == f"{os.path.realpath(tmp_path)} 7\n"


def test_refuses_when_real_torch_is_loaded(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "p.py"
    script.write_text("import torch\nimport ember.as_torch as a\ntry:\n    a.install()\n"
                      "except RuntimeError as e:\n    print('refused')\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300)
    assert r.stdout.strip() == "refused", r.stderr


def test_einops_runs_on_ember(tmp_path):
    """einops (a registry package written against torch) rearranges ember tensors; the
    values are checked against NumPy in the same program."""
    pytest.importorskip("einops")
    r = _run(tmp_path, """
        import numpy as np
        import torch
        from einops import rearrange, reduce, repeat
        from einops.layers.torch import Rearrange
        a = np.arange(24.0).reshape(2, 3, 4)
        x = torch.tensor(a)
        np.testing.assert_array_equal(rearrange(x, "b c d -> b (d c)").numpy(),
                                      a.transpose(0, 2, 1).reshape(2, 12))
        np.testing.assert_array_equal(reduce(x, "b c d -> b", "max").numpy(), a.max((1, 2)))
        assert repeat(x[0, 0], "d -> d n", n=3).shape == (4, 3)
        m = torch.nn.Sequential(Rearrange("b c d -> b (c d)"), torch.nn.Linear(12, 2))
        assert m(x.float()).shape == (2, 2)
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


_PRINTS = """
import torch
x = torch.zeros(2, 3, dtype=torch.float64)
print(x.dtype, x.shape, x.size(), torch.Size([]), str(torch.float16), [x.dtype])
print(torch.strided, x.layout, x.to_sparse().layout, torch.channels_last,
      torch.contiguous_format, torch.preserve_format)
print(x, torch.ones(2, dtype=torch.int32), torch.ones(2, dtype=torch.float16, requires_grad=True))
print(torch.empty(2, 3, device="meta", dtype=torch.int8), torch.zeros(0, dtype=torch.int64))
print(x.type(), torch.tensor([1, 2]).type(), x.device, repr(x.device))
print(torch.tensor([[1., 3.], [4., 2.]]).max(1))
print(torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2))]))
print(torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))}))
print(str(x.dtype) == "torch.float64", f"{torch.long}", "%s" % torch.bfloat16)
try:
    torch.nn.functional.embedding(torch.zeros(2), torch.zeros(3, 2))
except RuntimeError as e:
    print(str(e).split("but got ")[1].split()[0])
from torch.utils.benchmark import Timer
print(repr(Timer("1").timeit(1)).split(" object at ")[0])
"""


def test_printed_texts_name_torch(tmp_path):
    """Under as_torch, dtypes, sizes, layouts, memory formats, tensor reprs, type names,
    return types and benchmark Measurements print with PyTorch's module name
    (``torch.float32``, ``torch.Size([2])``), so a script comparing
    ``str(x.dtype) == "torch.float16"`` takes PyTorch's branch; the same script under real
    PyTorch is the oracle. Plain ember keeps ``ember.``."""
    pytest.importorskip("torch")
    script = tmp_path / "prog.py"
    script.write_text(_PRINTS)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True,
                          text=True, timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout
    assert "torch.float64" in ran[1].stdout


def test_printed_texts_name_ember_without_as_torch():
    x = ember.zeros(2, dtype=ember.float64)
    assert not as_torch.installed()
    assert (repr(x.dtype), repr(x.shape), repr(ember.strided), x.type()) == (
        "ember.float64", "ember.Size([2])", "ember.strided", "ember.DoubleTensor")
    assert repr(x).endswith("dtype=ember.float64)")


_CUDA_IMPORTS = """
import warnings
warnings.simplefilter("ignore")
import torch.cuda
import torch.cuda.amp
from torch.cuda import amp
from torch.cuda.amp import autocast, GradScaler
import torch


class M(torch.nn.Module):            # the old minGPT's spelling, on a CPU-only machine
    @autocast()
    def forward(self, x):
        return x * 2


print(torch.cuda.is_available(), amp is torch.cuda.amp, autocast is torch.cuda.amp.autocast)
print(M()(torch.ones(2)).tolist(), M()(torch.ones(2)).dtype, GradScaler().is_enabled())
"""


def test_torch_cuda_imports_as_modules(tmp_path):
    """``import torch.cuda`` and ``from torch.cuda.amp import autocast, GradScaler`` (older
    minGPT's model.py, many training scripts) import on a machine without a GPU, as under
    PyTorch (the oracle: the same script under real PyTorch), and the namespaces are
    importable from ember by their own names too."""
    pytest.importorskip("torch")
    script = tmp_path / "prog.py"
    script.write_text(_CUDA_IMPORTS)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True,
                          text=True, timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[0].returncode == 0, ran[0].stderr
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout
    import ember.cuda.amp as cuda_amp
    from ember.opencl import amp as opencl_amp
    assert cuda_amp is ember.cuda.amp and opencl_amp is ember.opencl.amp


_STALE_SAVED = """
import torch
w = torch.ones(3, dtype=torch.float64, requires_grad=True)
h = w * 2
s = h.sin()                          # saves h
h.mul_(2)
try:
    s.sum().backward()
except RuntimeError as e:
    print(str(e).split("], which")[0] + "]")
"""


def test_stale_saved_tensor_error_names_torch(tmp_path):
    """The 'modified by an inplace operation' error names the tensor's type as PyTorch's
    does (``[torch.DoubleTensor [3]]`` under as_torch; the oracle: real PyTorch)."""
    pytest.importorskip("torch")
    script = tmp_path / "prog.py"
    script.write_text(_STALE_SAVED)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True,
                          text=True, timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout
    assert "[torch.DoubleTensor [3]]" in ran[1].stdout


_FLOAT_OF_GRAD = """
import warnings
import torch
w = torch.ones(2, requires_grad=True)
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    float(w.detach().sum()); w.sum().item(); int(w.sum()); bool(w[0])
    s = w.sum()
    with torch.no_grad():
        float(s)
    opt = torch.optim.LBFGS([w])
    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    print(len(rec))
    float(w.sum()); float(w[0]); float(w.sum())
print([str(r.message).split(" (Triggered")[0] for r in rec])
"""


def test_float_of_a_tensor_requiring_grad_warns_once(tmp_path):
    """``float(t)`` of a tensor that requires grad, with grad mode on, warns (once a
    process) that the scalar leaves the graph; ``item()``, ``int()``, ``bool()``, detached
    tensors and ``float()`` under no_grad (LBFGS's of its closure's loss) do not (the
    oracle: the same script under real PyTorch)."""
    pytest.importorskip("torch")
    script = tmp_path / "prog.py"
    script.write_text(_FLOAT_OF_GRAD)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True,
                          text=True, timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout
    assert "Converting a tensor with requires_grad=True" in ran[1].stdout


_AMP_SPELLINGS = """
import warnings
import torch.cpu.amp
import torch
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    a = torch.cuda.amp.autocast()
    torch.cuda.amp.GradScaler()
    torch.amp.GradScaler("cuda")
    torch.amp.autocast("cuda")
    c = torch.cpu.amp.autocast()
print(torch.cuda.is_available(), a.fast_dtype, c.fast_dtype, torch.cpu.is_available())
for r in rec:
    print(r.category.__name__, str(r.message))
"""


def test_amp_device_spellings_warn_and_default_as_torch(tmp_path):
    """``torch.cuda.amp.autocast()`` / ``GradScaler()`` and ``torch.cpu.amp.autocast()``
    warn that they are deprecated (FutureWarning), a cuda autocast or GradScaler without a
    GPU warns it is disabled with PyTorch's text, and ``torch.cpu.amp.autocast()``'s
    default dtype is bfloat16 (cuda's float16); ``import torch.cpu.amp`` works first thing.
    The oracle: the same script under real PyTorch on this CPU-only machine."""
    pytest.importorskip("torch")
    script = tmp_path / "prog.py"
    script.write_text(_AMP_SPELLINGS)
    ran = [subprocess.run([sys.executable, *pre, str(script)], capture_output=True,
                          text=True, timeout=300) for pre in ((), ("-m", "ember.as_torch"))]
    if ran[0].stdout.startswith("True"):
        pytest.skip("a GPU is visible to PyTorch: the disabled-autocast texts do not apply")
    assert ran[1].returncode == 0, ran[1].stderr
    assert ran[1].stdout == ran[0].stdout
    assert "torch.float16 torch.bfloat16" in ran[1].stdout


def test_private_names_kornia_imports(tmp_path):
    """kornia 0.9 at import: ``torch.torch`` (the package itself),
    ``torch._subclasses.fake_tensor.is_fake``, ``torch.fx.experimental.proxy_tensor.
    get_proxy_mode``, ``isinstance(n, torch.SymInt)``; answered as PyTorch answers them
    outside its tracers (checked against it in this process below)."""
    r = _run(tmp_path, """
        import torch
        from torch._subclasses.fake_tensor import is_fake
        from torch.fx.experimental.proxy_tensor import get_proxy_mode
        import torch.fx.experimental.proxy_tensor as proxy_tensor
        import ember._torch_c as shim
        assert torch.torch is torch and torch.torch.Tensor is torch.Tensor
        assert is_fake is shim.is_fake and proxy_tensor is shim.proxy_tensor
        assert is_fake(torch.ones(2)) is False and get_proxy_mode() is None
        assert not isinstance(3, (torch.SymInt, torch.SymFloat, torch.SymBool))
        assert isinstance(3, (int, torch.SymInt))
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import is_fake
    from torch.fx.experimental.proxy_tensor import get_proxy_mode
    assert is_fake(torch.ones(2)) is False and get_proxy_mode() is None
    assert not isinstance(3, (torch.SymInt, torch.SymFloat, torch.SymBool))
    with pytest.raises(TypeError, match="symbolic"):
        ember.SymInt(None)
