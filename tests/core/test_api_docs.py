"""The API reference: every public name documented, every example right, the site builds.

The namespaces and what counts as public come from the mkdocs hook that writes the
reference's pages (``docs/hooks/api_reference.py``), so the test and the site agree.
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import os
import pkgutil
import subprocess
import sys

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hook():
    spec = importlib.util.spec_from_file_location(
        "_ember_api_reference", os.path.join(ROOT, "docs", "hooks", "api_reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


API = _hook()


def test_every_public_name_is_documented():
    missing = {path: API.undocumented(path) for path, _ in API.NAMESPACES}
    missing = {p: names for p, names in missing.items() if names}
    assert not missing, (f"{sum(map(len, missing.values()))} public names without a "
                         f"docstring: {missing}")


def test_the_reference_covers_the_public_namespaces():
    """Every public module directly under ember (``ember.<name>``, its name without ``_``)
    has a page, so a new namespace cannot go undocumented; the others are listed here with
    why."""
    pages = {p for p, _ in API.NAMESPACES}
    elsewhere = {
        "ember.utils": "its submodules have pages",
        "ember.convert": "a command (python -m ember.convert): docs/from_pytorch.md",
        "ember.as_torch": "a command (python -m ember.as_torch): docs/compat.md",
    }
    found = {f"ember.{m.name}" for m in pkgutil.iter_modules(ember.__path__)
             if not m.name.startswith("_")}
    assert "ember.nn" in found and "ember.linalg" in found
    missing = sorted(found - pages - set(elsewhere))
    assert not missing, f"public namespaces without an API reference page: {missing}"


def test_generated_pages_name_every_public_name():
    """Each page has one ``:::`` block per public name (what mkdocstrings renders)."""
    for path, summary in API.NAMESPACES:
        text = API.page(path, summary)
        names, _ = API.public_names(path)
        assert text.count("\n::: ") == len(names), path
    assert "::: ember.nn.Linear" in API.page("ember.nn", "")
    assert "::: ember.Tensor.add_" in API.page("ember.Tensor", "")


def _example_modules():
    """The modules whose docstrings the reference shows (the namespaces' own and every
    module under ember that defines a documented name)."""
    seen = {}
    for path, _ in API.NAMESPACES:
        ns = API._namespace(path)
        names, _ = API.public_names(path)
        for name in names:
            obj = getattr(ns, name)
            mod = getattr(obj.fget if isinstance(obj, property) else obj, "__module__", None)
            if mod and mod in sys.modules:
                seen[mod] = sys.modules[mod]
        if inspect.ismodule(ns):
            seen[ns.__name__] = ns
    return sorted(seen.items())


def test_every_example_runs_and_prints_what_it_shows():
    """The ``>>>`` examples in the docstrings (doctest, ``ember`` imported; an example
    that needs the network or a GPU says ``# doctest: +SKIP``)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    failed, ran, seen = [], 0, set()
    for name, mod in _example_modules():
        for test in finder.find(mod, name, globs={"ember": ember}):
            key = (test.filename, test.lineno, test.docstring)
            if key in seen:
                continue
            seen.add(key)
            out = []
            runner = doctest.DocTestRunner(optionflags=flags)
            result = runner.run(test, out=out.append)
            ran += result.attempted
            if result.failed:
                failed.append(f"{test.name}:\n{''.join(out)[:1500]}")
    assert ran > 500, ran
    assert not failed, f"{len(failed)} docstring examples fail:\n" + "\n".join(failed[:10])


def test_site_builds_strict(tmp_path):
    """``mkdocs build --strict`` with the API reference: no broken link, no docstring whose
    ``Args:`` names a parameter the function lacks, no unresolved cross-reference."""
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                        str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    page = (tmp_path / "site" / "api" / "ember.nn" / "index.html").read_text()
    assert 'id="ember.nn.Linear"' in page
    tensor = (tmp_path / "site" / "api" / "ember.Tensor" / "index.html").read_text()
    assert 'id="ember.Tensor.add_"' in tensor and "In-place version of" in tensor


def test_importing_ember_loads_no_backend_plugin():
    """Plugins load on first use, not at import (the docstring pass at import,
    ``_docstrings.fill``, reads ember's own names: asking the module for a missing name
    goes to its ``__getattr__``, which loads every plugin)."""
    r = subprocess.run([sys.executable, "-c", "import ember; from ember.dispatcher import "
                        "plugins; print(plugins._loaded, sorted(plugins.BACKENDS))"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False []"
