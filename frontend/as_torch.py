"""Run PyTorch code on ember without editing it: ``import torch`` gives ember.

    python -m ember.as_torch script.py [args...]
    python -m ember.as_torch -m package.module [args...]

or, from Python, ``ember.as_torch.install()`` before the first ``import torch``.

This is opt-in and meant for trying existing programs and registry packages written for
PyTorch: ``torch`` and every ``torch.<sub>`` module resolve to ``ember`` and
``ember.<sub>``. ``torch.__version__`` reads ``"<API level>+ember.<ember's version>"``: the
PyTorch release whose public API ember follows, with ember's own version as the local label,
so version checks in libraries see the API they are written against and the label says
what is really running. ``import functorch`` gives ``ember.functorch``. ``torch._C`` and
``torch.utils._pytree`` are the small shims in ``ember._torch_c`` (only the private names
registry packages need, each documented there; any other ``torch._C`` name raises
``AttributeError`` naming it). Any other module ember
does not have (``torch._export``, ``torch._functorch``, ...) raises ``ModuleNotFoundError``
naming it. A real PyTorch imported before ``install()`` is left alone: installing then
raises, since two libraries would answer to one name. While installed, ember's printed
texts use PyTorch's module name: ``str(x.dtype)`` is ``"torch.float32"``, ``x.shape`` prints
``torch.Size([2, 3])``, a tensor's repr ends ``dtype=torch.float64``.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import multiprocessing.spawn
import os
import runpy
import sys
import types

import ember
from ember.dispatcher import dtypes as _dtypes

from . import _torch_c

__all__ = ["install", "uninstall", "installed", "main", "TORCH_API_LEVEL"]

TORCH_API_LEVEL = "2.13.0"  # the PyTorch release whose public API ember follows

# private torch modules packages touch, and the shim each resolves to
_PRIVATE = {"torch._C": _torch_c.C, "torch.utils._pytree": _torch_c.pytree,
            "torch._subclasses": _torch_c.subclasses,
            "torch._subclasses.fake_tensor": _torch_c.fake_tensor,
            "torch.fx.experimental": _torch_c.fx_experimental,
            "torch.fx.experimental.proxy_tensor": _torch_c.proxy_tensor,
            "torch._prims_common": _torch_c.prims_common,
            "torch.utils.data._utils": _torch_c.data_utils,
            "torch.utils.data._utils.collate": _torch_c.data_utils_collate,
            "torch.distributed._tensor": _torch_c.dtensor_private,
            "torch.distributed._tensor.experimental": _torch_c.dtensor_experimental,
            "torch.distributed._composable": _torch_c.composable,
            "torch.distributed._composable.fsdp": _torch_c.composable_fsdp}


class _TorchModule(types.ModuleType):
    """``torch``: ember's namespace under PyTorch's name (attribute reads and writes go to
    ember, so ``torch.backends.cudnn.benchmark = True`` sets ember's flag)."""

    def __getattr__(self, name):
        if name == "_C":
            return _torch_c.C
        if name == "torch":     # (PyTorch's package holds itself: ``torch.torch.Tensor``)
            return self
        try:
            return getattr(ember, name)
        except AttributeError:
            raise AttributeError(f"module 'torch' (ember.as_torch) has no attribute {name!r}: "
                                 f"ember does not provide torch.{name}") from None

    def __setattr__(self, name, value):
        if name.startswith("__"):
            super().__setattr__(name, value)
        else:
            setattr(ember, name, value)

    def __dir__(self):
        return sorted(set(dir(ember)) | {"__version__", "_C"})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch.") \
                and fullname != "functorch":
            return None
        is_pkg = fullname == "torch" or hasattr(self._target(fullname), "__path__")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=is_pkg)

    @staticmethod
    def _target(fullname):
        if fullname == "torch":
            return ember
        if fullname == "functorch":     # (PyTorch's older package of function transforms)
            return importlib.import_module("ember.functorch")
        if fullname in _PRIVATE:
            return _PRIVATE[fullname]
        name = "ember" + fullname[len("torch"):]
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is not None and (e.name == name or name.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"No module named {fullname!r} (ember.as_torch maps torch.* to ember.*, "
                    f"and ember has no {name!r})", name=fullname) from None
            raise

    def create_module(self, spec):
        if spec.name == "torch":
            mod = _TorchModule("torch", ember.__doc__)
            mod.__version__ = f"{TORCH_API_LEVEL}+ember.{ember.__version__}"
            mod.__path__ = list(getattr(ember, "__path__", []))
            return mod
        target = self._target(spec.name)
        if spec.name in _PRIVATE:
            return target
        self._specs[id(target)] = (target.__spec__, getattr(target, "__loader__", None))
        return target

    def exec_module(self, module):
        # the import system stamps the torch.* spec on the module it was handed: ember's
        # modules keep their own
        saved = self._specs.pop(id(module), None)
        if saved is not None:
            module.__spec__, module.__loader__ = saved
        # ``from torch.utils import _pytree`` reads the attribute on ember.utils
        for full, shim in _PRIVATE.items():
            parent, _, child = full.rpartition(".")
            if parent != "torch" and module.__name__ == "ember" + parent[len("torch"):]:
                setattr(module, child, shim)


_FINDER = _Finder()


class _AliasInChild:
    """Carried in the preparation data ``multiprocessing`` sends a child it starts with
    "spawn" or "forkserver": unpickling it (the child's first act, before it re-imports the
    parent's ``__main__``) installs the alias there too, so the child's ``import torch``
    gives ember as the parent's did."""

    def __reduce__(self):
        return install, ()


_parent_preparation_data = multiprocessing.spawn.get_preparation_data


def _preparation_data(name):
    data = _parent_preparation_data(name)
    if installed():
        data["ember.as_torch"] = _AliasInChild()
    return data


def installed() -> bool:
    return _FINDER in sys.meta_path


def install() -> None:
    """Make ``import torch`` (and ``torch.<sub>``) give ember from now on."""
    if installed():
        return
    real = sys.modules.get("torch")
    if real is not None and not isinstance(real, _TorchModule):
        raise RuntimeError("ember.as_torch.install(): PyTorch is already imported in this "
                           "process; install the alias before anything imports torch")
    sys.meta_path.insert(0, _FINDER)
    multiprocessing.spawn.get_preparation_data = _preparation_data
    # printed texts read as the program wrote them: torch.float32, torch.Size([2])
    _dtypes.set_module_name("torch")


def uninstall() -> None:
    """Remove the alias and forget the ``torch`` modules it handed out."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    if multiprocessing.spawn.get_preparation_data is _preparation_data:
        multiprocessing.spawn.get_preparation_data = _parent_preparation_data
    _dtypes.set_module_name("ember")
    for name in [n for n in sys.modules
                 if n in ("torch", "functorch") or n.startswith("torch.")]:
        mod = sys.modules[name]
        if (isinstance(mod, _TorchModule) or name in _PRIVATE
                or getattr(mod, "__name__", "").startswith("ember")):
            del sys.modules[name]


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1])
        raise SystemExit(0 if argv else 2)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit("ember.as_torch: -m needs a module name")
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        # as ``python script.py``: the script's folder (symbolic links resolved) heads
        # sys.path in place of the working directory ``-m`` put there, so the script's
        # sibling modules import wherever it is run from
        script_dir = os.path.dirname(os.path.realpath(argv[0]))
        if sys.path and sys.path[0] == os.getcwd():
            sys.path[0] = script_dir
        else:
            sys.path.insert(0, script_dir)
        sys.argv = argv
        _run_script(argv[0])


def _run_script(path: str) -> None:
    """Run the file ``path`` as ``__main__`` the way ``python path`` does: its ``__file__``
    (so warnings' and tracebacks' locations) absolute, ``sys.argv[0]`` as given."""
    full = os.path.abspath(path)
    with open(full, "rb") as f:
        code = compile(f.read(), full, "exec")
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=full, __cached__=None, __package__=None, __spec__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", full),
                         __builtins__=builtins)
    previous = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"] = previous


if __name__ == "__main__":
    # run through the importable module, so ``ember.as_torch.installed()``/``uninstall()``
    # in the program see the same finder as the one this command installs
    import ember.as_torch

    ember.as_torch.main()
