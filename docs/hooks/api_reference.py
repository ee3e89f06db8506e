"""The API reference: one page per public namespace, generated when the site is built.

Each page lists the namespace's public functions and classes (``::: ember.add`` blocks that
mkdocstrings renders from the live objects' docstrings and signatures, since many of ember's
functions are made from the op table at import time). :func:`public_names` decides what is
public; ``tests/core/test_api_docs.py`` uses it to count undocumented names.

A name that a namespace re-exports from outside ember (``ember.multiprocessing.Process`` is
Python's) is listed with a link to where it is documented instead of being rendered.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os

#: (namespace, page title's summary), in the order of the reference's navigation
NAMESPACES = [
    ("ember", "Tensor creation, math, reductions, shape ops, random sampling, dtypes, "
              "devices and the other top-level functions."),
    ("ember.Tensor", "The tensor class: its methods and attributes."),
    ("ember.nn", "Layers (modules), containers, parameters and losses."),
    ("ember.nn.functional", "The functional forms of the layers and losses."),
    ("ember.nn.init", "Parameter initialisation."),
    ("ember.nn.utils", "Gradient clipping, parameter vectors, weight and spectral norm."),
    ("ember.nn.utils.rnn", "Packed and padded sequences for recurrent layers."),
    ("ember.nn.utils.parametrize", "Parametrizations of module tensors."),
    ("ember.nn.parallel", "Data parallelism."),
    ("ember.nn.parallel.scatter_gather", "Splitting inputs across devices and joining "
                                         "outputs (scatter, gather)."),
    ("ember.optim", "Optimizers."),
    ("ember.optim.lr_scheduler", "Learning-rate schedules."),
    ("ember.optim.swa_utils", "Stochastic weight averaging."),
    ("ember.autograd", "Reverse-mode automatic differentiation."),
    ("ember.autograd.graph", "The autograd graph: nodes and saved-tensor hooks."),
    ("ember.autograd.functional", "Jacobians, Hessians and their products."),
    ("ember.autograd.forward_ad", "Forward-mode automatic differentiation: dual tensors."),
    ("ember.func", "Function transforms: grad, vmap, jacrev, functional_call."),
    ("ember.functorch", "PyTorch's older ``functorch`` package (deprecated): the "
                        "transforms and ``make_functional``."),
    ("ember.linalg", "Linear algebra."),
    ("ember.special", "Special functions."),
    ("ember.fft", "Discrete Fourier transforms."),
    ("ember.overrides", "The ``__torch_function__`` protocol: Tensor subclasses and "
                        "tensor-like types that take over ember's functions, and modes."),
    ("ember.library", "Custom operators written in Python (``custom_op``, their kernels, "
                      "gradients and shape functions) and ``ember.ops``."),
    ("ember.sparse", "Sparse tensors."),
    ("ember.distributions", "Probability distributions."),
    ("ember.amp", "Automatic mixed precision: autocast and GradScaler."),
    ("ember.profiler", "The profiler."),
    ("ember.compiler", "Compiler controls (see also ``ember.compile``)."),
    ("ember.fx", "The graph IR."),
    ("ember.onnx", "Export to ONNX."),
    ("ember.export", "Models as self-contained graph programs (``torch.export``)."),
    ("ember.jit", "TorchScript's names (ember runs the code eagerly)."),
    ("ember.futures", "Futures: results of work that finishes later, with callbacks."),
    ("ember.__config__", "How this ember was built (``show``, ``parallel_info``)."),
    ("ember.__future__", "Switches for how module conversions and load_state_dict replace "
                         "parameters (swap_tensors)."),
    ("ember.utils.data", "Datasets, samplers and the DataLoader."),
    ("ember.utils.checkpoint", "Activation checkpointing."),
    ("ember.utils.offload", "Activation offload to host memory (vDNN)."),
    ("ember.utils.dlpack", "DLPack interchange."),
    ("ember.utils.model_zoo", "``load_url`` (ember.hub.load_state_dict_from_url)."),
    ("ember.utils.benchmark", "Timing statements: Timer, Measurement, Compare."),
    ("ember.return_types", "The named tuples of ops with several results."),
    ("ember.types", "Type aliases of annotations: Number, Device, FileLike, Storage."),
    ("ember.distributed", "Multi-process communication (MPI)."),
    ("ember.distributed.nn", "Collectives that autograd differentiates (also as "
                             "``ember.distributed.nn.functional``)."),
    ("ember.distributed.tensor", "The name DTensor (ember has no distributed tensors)."),
    ("ember.distributed.fsdp", "The names of fully sharded data parallelism (not in ember)."),
    ("ember.distributed.optim", "ZeroRedundancyOptimizer: optimizer state sharded across "
                                "ranks."),
    ("ember.multiprocessing", "Multiprocessing with tensors in shared memory."),
    ("ember.serialization", "Saving and loading."),
    ("ember.hub", "Loading models published in repositories."),
    ("ember.accelerator", "The current accelerator device."),
    ("ember.backends", "Backend settings."),
    ("ember.testing", "Test helpers and the conformance kit for backend plugins."),
]


def _namespace(path: str):
    if path == "ember.Tensor":
        return importlib.import_module("ember").Tensor
    return importlib.import_module(path)


def _documentable(obj) -> bool:
    return (inspect.isroutine(obj) or inspect.isclass(obj)
            or isinstance(obj, (property, classmethod, staticmethod)))


def _home(obj) -> str:
    target = obj.fget if isinstance(obj, property) else obj
    return getattr(target, "__module__", None) or "ember"


def public_names(path: str) -> tuple[list[str], list[tuple[str, str]]]:
    """``(names, reexports)`` of one namespace: the public functions, classes (and, for
    ``ember.Tensor``, methods and properties) defined by ember, sorted; and the
    ``(name, module)`` pairs it re-exports from elsewhere."""
    ns = _namespace(path)
    names, reexports = [], []
    if inspect.isclass(ns):
        for name in sorted(dir(ns)):
            if name.startswith("_"):
                continue
            obj = inspect.getattr_static(ns, name)
            if _documentable(obj) or type(obj).__name__ in ("getset_descriptor",
                                                            "member_descriptor"):
                names.append(name)
        return names, reexports
    for name in sorted(getattr(ns, "__all__", None) or dir(ns)):
        if name.startswith("_"):
            continue
        obj = getattr(ns, name, None)
        if inspect.ismodule(obj) or not _documentable(obj):
            continue
        home = _home(obj)
        if home == "ember" or home.startswith("ember."):
            names.append(name)
        else:
            reexports.append((name, home))
    return names, reexports


def undocumented(path: str) -> list[str]:
    """The names of :func:`public_names` without a docstring of their own."""
    ns = _namespace(path)
    out = []
    for name in public_names(path)[0]:
        obj = inspect.getattr_static(ns, name) if inspect.isclass(ns) else getattr(ns, name)
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
        doc = getattr(obj, "__doc__", None)
        if type(obj).__name__ == "member_descriptor" and not doc:
            # (a field of __slots__ given as a dict: its value is the docstring, which
            # Python before 3.13 does not copy to the descriptor)
            slots = getattr(obj.__objclass__, "__slots__", None)
            doc = slots.get(name) if isinstance(slots, dict) else None
        if inspect.isclass(obj) and doc in (object.__doc__, type.__doc__):
            doc = None
        if not (doc and doc.strip()):
            out.append(name)
    return out


def page(path: str, summary: str) -> str:
    """The Markdown of one namespace's page."""
    names, reexports = public_names(path)
    lines = [f"# {path} {{ #{path} }}", "", summary, ""]
    if reexports:
        lines += ["Re-exported unchanged (documented where they are defined):", "",
                  "| name | from |", "|---|---|"]
        lines += [f"| `{path}.{n}` | `{m}` |" for n, m in reexports]
        lines.append("")
    ns = _namespace(path)
    pages = {_namespace(p) for p, _ in NAMESPACES if p != path}
    for name in names:
        lines.append(f"::: {_target(ns, path, name)}")
        if inspect.isclass(getattr(ns, name, None)) and getattr(ns, name) in pages:
            # (a class with a page of its own: its members are there)
            lines += ["    options:", "      members: false"]
        lines.append("")
    return "\n".join(lines)


def _target(ns, path: str, name: str) -> str:
    """What mkdocstrings is asked for: ``path.name``, unless a submodule has that name too
    (``ember.nn.utils.spectral_norm`` is a function and a module), then the object's own
    module and qualified name."""
    if (inspect.ismodule(ns) and hasattr(ns, "__path__")
            and importlib.util.find_spec(f"{path}.{name}") is not None):
        obj = getattr(ns, name)
        return f"{obj.__module__}.{obj.__qualname__}"
    return f"{path}.{name}"


def page_file(path: str) -> str:
    return f"api/{path}.md"


def on_files(files, config):
    """Add the reference's pages to the site (mkdocs hook)."""
    from mkdocs.structure.files import File

    for path, summary in NAMESPACES:
        files.append(File.generated(config, page_file(path), content=page(path, summary)))
    index = ["# API reference", "", "| namespace | |", "|---|---|"]
    index += [f"| [{p}]({p}.md) | {s} |" for p, s in NAMESPACES]
    files.append(File.generated(config, "api/index.md", content="\n".join(index) + "\n"))
    return files


def _shadow_tree(root: str) -> str:
    """A folder holding ``ember/`` as the installed package is laid out (``frontend/``'s
    files with ``dispatcher/`` as ``ember/dispatcher``), made of links: griffe walks it to
    find the submodules of ``ember`` (the source tree splits them over two folders)."""
    base = os.path.join(root, "build", "api-src")
    pkg = os.path.join(base, "ember")
    os.makedirs(pkg, exist_ok=True)
    wanted = {name: os.path.join(root, "frontend", name)
              for name in os.listdir(os.path.join(root, "frontend"))}
    wanted["dispatcher"] = os.path.join(root, "dispatcher")
    for name, target in wanted.items():
        link = os.path.join(pkg, name)
        if not os.path.islink(link):
            os.symlink(target, link)
    return base


def on_config(config):
    """Make the shadow tree that mkdocs.yml's ``paths`` names (mkdocs hook; it was made
    when mkdocs loaded this file, before mkdocstrings read its ``paths``)."""
    _shadow_tree(os.path.dirname(os.path.abspath(config.config_file_path)))
    return config


# mkdocs loads hooks with the configuration, and runs their on_config after the plugins':
# mkdocstrings looks for the tree before on_config would make it, so it is made now
_shadow_tree(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
