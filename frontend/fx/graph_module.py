"""``ember.fx.GraphModule``: a Module whose ``forward`` is generated from a Graph."""
from __future__ import annotations

import copy
import linecache

import ember

from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph

__all__ = ["GraphModule"]

_COUNT = [0]


def _attr(obj, qualified: str):
    for part in qualified.split("."):
        obj = getattr(obj, part)
    return obj


def _copy_attr(from_module, to_module, target: str):
    """Install ``from_module``'s ``target`` (a dotted path) on ``to_module``, making empty
    Modules for the missing parents (PyTorch's rule: a tensor that is not a parameter
    becomes a buffer)."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:          # a parent already installed brings its children along
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target: str):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class _CodeOnlyModule(Module):
    """A Module made from another's ``__dict__`` (a GraphModule's deep copy)."""

    def __init__(self, body):
        super().__init__()
        self.__dict__ = body


class GraphModule(Module):
    """A Module running ``graph``: its ``forward`` is the graph's generated code
    (:attr:`code`). ``root`` (a Module, or a dict of qualified name to value) provides what
    the graph's ``get_attr`` and ``call_module`` nodes name; they are copied onto this
    module under the same qualified names.

    Example::

        gm = ember.fx.symbolic_trace(model)
        for node in gm.graph.nodes: ...      # edit the graph
        gm.recompile()                        # forward follows the edited graph
    """

    def __new__(cls, *args, **kwargs):
        # each instance gets a class of its own: forward is set on the class
        for t in cls.__mro__:
            if not t.__dict__.get("_fx_per_instance", False):
                base = t
                break
        impl = type(base.__name__, (base,), {"_fx_per_instance": True,
                                             "__module__": base.__module__})
        return super().__new__(impl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            self.training = getattr(root, "training", True)
            if isinstance(root, _CodeOnlyModule):
                for k, _ in root.named_children():
                    _copy_attr(root, self, k)
                for k, _ in root.named_buffers():
                    _copy_attr(root, self, k)
                for k, _ in root.named_parameters():
                    _copy_attr(root, self, k)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    targets.append(node.target)
            for target in sorted(targets, key=lambda t: t.count(".")):
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.meta: dict = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph ``forward`` runs; assigning one recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph):
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The source of ``forward``, generated from the graph."""
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from the graph (after editing it); returns the
        ``PythonCode`` (its ``src`` and ``globals``)."""
        python_code = self._graph.python_code("self")
        src, glob = python_code
        _COUNT[0] += 1
        filename = f"<eval_with_key>.{_COUNT[0]}"
        # (registered with linecache so that tracebacks show the generated line)
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), glob)  # noqa: S102 - source generated above
        self._code = src
        type(self).forward = glob["forward"]
        return python_code

    # ---- submodules ---------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, making empty parents as needed;
        False if a non-Module is in the way."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                mod.add_module(item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False if there is none."""
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod) or \
                not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self):
        """Remove the submodules no ``call_module`` or ``get_attr`` node uses."""
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                for i in range(1, len(fullpath) + 1):
                    used.add(".".join(fullpath[:i]))
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    for name, _ in submod.named_modules():
                        if name:
                            used.add(f"{node.target}.{name}")
        to_delete = [name for name, _ in self.named_modules() if name and name not in used]
        for name in to_delete:
            self.delete_submodule(name)

    # ---- printing ---------------------------------------------------------------------
    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The generated code as a class body (nested GraphModules included)."""
        text = self._readable(type(self).__name__)
        if print_output:
            print(text)
        return text

    def _readable(self, name: str) -> str:
        src = self._graph.python_code("self", verbose=True).src.lstrip("\n").rstrip()
        lines = [f"class {name}(ember.nn.Module):"] + [("    " + line).rstrip() for line in
                                                      src.splitlines()]
        for child_name, child in self.named_children():
            if isinstance(child, GraphModule):
                lines += [""] + ["    " + line for line in
                                 child._readable(child_name).splitlines()]
        return "\n".join(lines) + "\n"

    def __str__(self):
        return super().__str__() + "\n\n\n" + self._code + \
            "\n# To see more debug info, please use `graph_module.print_readable()`"

    # ---- copies -----------------------------------------------------------------------
    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake, fake.__dict__["_graph"], type(self).__name__)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = getattr(self, "meta", {})
        return res
