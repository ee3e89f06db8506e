"""How much of PyTorch's public API ember has, namespace by namespace.

The crawl lists PyTorch's public callables and classes in the namespaces programs use, drops
the reviewed omissions (``omissions.py``, each with its reason), and measures the share ember
provides under the same path. The floor below is the measured coverage; it only goes up.
Run this file with ``-s`` to print what is missing per namespace.
"""
import importlib
import inspect
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

from omissions import OMITTED  # noqa: E402

NAMESPACES = ["", "nn", "nn.functional", "nn.init", "nn.utils", "optim", "optim.lr_scheduler",
              "utils.data", "autograd", "linalg", "special", "fft", "distributions", "amp",
              "profiler", "utils.checkpoint"]
# names in torch's top level that belong to subsystems ember does not have: quantization,
# vendor libraries, other devices, TorchScript, the symbolic-shape machinery, storages
# (ember exposes untyped storage through Tensor.untyped_storage only)
TOP_LEVEL_EXCLUDED = ("quant", "qint", "cudnn", "mkldnn", "fbgemm", "miopen", "sparse_bsr",
                      "sparse_csc", "_nested", "vulkan", "xnnpack", "mps", "xpu", "hip", "jit",
                      "fake", "sym", "storage")
FLOOR = 0.955  # measured share of the non-omitted names; raise it as names land


def _module(root, ns):
    if not ns:
        return root
    try:
        return importlib.import_module(f"{root.__name__}.{ns}")
    except ImportError:
        obj = root
        for part in ns.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj


def _public(mod):
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    out = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in names:
            if n.startswith("_"):
                continue
            try:
                v = getattr(mod, n)
            except Exception:
                continue
            if inspect.ismodule(v) or not (callable(v) or inspect.isclass(v)):
                continue
            out.add(n)
    return out


def crawl():
    """{namespace: (wanted names, names ember has)} over the reviewed namespaces."""
    table = {}
    for ns in NAMESPACES:
        names = _public(_module(torch, ns))
        if ns == "":
            names = {n for n in names if not any(k in n.lower() for k in TOP_LEVEL_EXCLUDED)}
        names -= set(OMITTED.get(ns or "torch", {}))
        mine = _module(ember, ns)
        table[ns or "torch"] = (names, {n for n in names if mine is not None
                                        and hasattr(mine, n)})
    methods = {n for n in dir(torch.Tensor) if not n.startswith("_")} - set(OMITTED["Tensor"])
    table["Tensor"] = (methods, {n for n in methods if hasattr(ember.Tensor, n)})
    return table


@pytest.fixture(scope="module")
def table():
    return crawl()


def test_coverage_floor(table):
    have = sum(len(h) for _, h in table.values())
    want = sum(len(w) for w, _ in table.values())
    for ns, (w, h) in table.items():
        print(f"{ns:22s} {len(h):4d}/{len(w):4d}  missing: {' '.join(sorted(w - h))}")
    print(f"TOTAL {have}/{want} = {have / want:.1%}")
    assert have / want >= FLOOR, f"API coverage fell to {have / want:.1%} (floor {FLOOR:.1%})"


@pytest.mark.parametrize("ns", sorted(OMITTED))
def test_omissions_are_reviewed(ns):
    """Every omission names a real PyTorch name ember does not provide, with a reason."""
    root = torch.Tensor if ns == "Tensor" else _module(torch, "" if ns == "torch" else ns)
    mine = ember.Tensor if ns == "Tensor" else _module(ember, "" if ns == "torch" else ns)
    for name, reason in OMITTED[ns].items():
        assert hasattr(root, name), f"{ns}.{name} is not a PyTorch name: drop it from OMITTED"
        assert len(reason.split()) >= 5, f"{ns}.{name}: give the reason in a sentence"
        assert mine is None or not hasattr(mine, name), (
            f"ember provides {ns}.{name}: drop it from OMITTED")
