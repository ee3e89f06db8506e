"""The architecture rules, checked on the source: the import graph of ``ember`` and
``ember.dispatcher`` has no circles, modules import at the top (a few documented lazy
imports apart), the dispatcher never imports the frontend, and backends import only the
public dispatcher."""
import ast
import os
from collections import defaultdict

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = (("ember.dispatcher", "dispatcher"), ("ember", "frontend"))
BACKEND_DIRS = ("backends/cpu/ember_cpu", "backends/cuda/ember_cuda",
                "backends/opencl/ember_opencl", "examples/plugin-template/ember_example")

#: imports that stay inside functions, and why
LAZY = {
    # an optional dependency that initialises MPI when imported
    ("ember.distributed._core", "mpi4py"),
    # the kit's pytest plugin is loaded by every pytest session (an entry point): it
    # imports ember only once a session asks for the kit
    ("ember.testing.plugin", "ember"), ("ember.testing.plugin", "ember.dispatcher"),
    # pytest is the kit's runner, an optional dependency (ember-tensor[testing])
    ("ember.testing", "pytest"),
    # optional dependencies of ONNX export (ember-tensor[onnx]): onnx takes 0.6 s to import, so
    # `import ember` does not pay it; onnxruntime only runs an exported program
    ("ember.onnx", "onnx"), ("ember.onnx", "onnxruntime"),
    # ml_dtypes gives .numpy() of a bfloat16 tensor its dtype: only that call needs it
    ("ember._creation", "ml_dtypes"),
}


def _modules(package, folder):
    out = {}
    base = os.path.join(ROOT, folder)
    for dirpath, _, files in os.walk(base):
        for f in files:
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join([package] + rel)] = os.path.join(dirpath, f)
    return out


MODULES = {}
for _pkg, _dir in PACKAGES:
    MODULES.update(_modules(_pkg, _dir))


def _targets(module, path, node):
    """The ember modules an import statement names (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    if node.level:
        parts = base.split(".")
        base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module
                                                                 else []))
    else:
        base = node.module
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _owner(name):
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def _scan():
    edges, inner = defaultdict(set), []
    for mod, path in MODULES.items():
        tree = ast.parse(open(path).read())
        top = {id(n) for stmt in tree.body if not isinstance(
            stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = _targets(mod, path, node)
            if id(node) not in top:
                inner.append((mod, node.lineno, names))
                continue
            for n in names:
                o = _owner(n)
                # a package importing its own submodules is not a circle
                if o and o != mod and not o.startswith(mod + "."):
                    edges[mod].add(o)
    return edges, inner


EDGES, INNER = _scan()


def _cycles(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return out


def test_the_modules_were_found():
    assert "ember.dispatcher.ops" in MODULES and "ember.autograd._engine" in MODULES
    assert EDGES["ember.dispatcher.ops"] >= {"ember.dispatcher.core",
                                              "ember.dispatcher.schema"}


def test_no_import_circles():
    assert _cycles(EDGES) == []


def test_no_imports_inside_functions():
    found = []
    for mod, line, names in INNER:
        if not all((mod, n) in LAZY or any((mod, p) in LAZY for p in _prefixes(n))
                   for n in names):
            found.append(f"{mod}:{line} imports {', '.join(names)}")
    assert found == []


def _prefixes(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def test_dispatcher_never_imports_the_frontend():
    bad = [(m, t) for m, ts in EDGES.items() if m.startswith("ember.dispatcher")
           for t in ts if not t.startswith("ember.dispatcher")]
    assert bad == []


def test_the_dispatcher_imports_in_order():
    """dtypes -> schema -> plugins -> core -> ops -> views -> definitions."""
    order = ["dtypes", "expr", "schema", "plugins", "core", "ops", "views", "defs"]
    rank = {f"ember.dispatcher.{m}": i for i, m in enumerate(order)}
    bad = []
    for m, ts in EDGES.items():
        if m in rank:
            bad += [(m, t) for t in ts if t in rank and rank[t] > rank[m]]
    assert bad == []


@pytest.mark.parametrize("folder", BACKEND_DIRS)
def test_backends_import_only_the_public_dispatcher(folder):
    base = os.path.join(ROOT, folder)
    bad = []
    for dirpath, _, files in os.walk(base):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            for node in ast.walk(ast.parse(open(path).read())):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                for n in names:
                    parts = n.split(".")
                    if parts[0] == "ember" and (len(parts) < 2 or parts[1] != "dispatcher"):
                        bad.append(f"{path}: imports the frontend ({n})")
                    elif parts[:2] == ["ember", "dispatcher"] and any(
                            p.startswith("_") for p in parts[2:]):
                        bad.append(f"{path}: imports private {n}")
    assert bad == []


def test_the_frontend_uses_only_the_public_dispatcher():
    bad = [(m, t) for m, ts in EDGES.items() if not m.startswith("ember.dispatcher")
           for t in ts if t.startswith("ember.dispatcher") and any(
               p.startswith("_") for p in t.split(".")[2:])]
    assert bad == []
