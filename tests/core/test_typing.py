"""Type checking (issue 18): ember ships ``py.typed`` and mypy passes on the examples,
checked against ember's own sources laid out as installed (the API reference's link tree)."""
import os
import re
import subprocess
import sys

import ember
import ember.nn.modules as modules
from test_api_docs import API     # (the docs hook: the link tree of ember as installed)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_mypy_passes_on_the_examples(tmp_path):
    tree = API._shadow_tree(ROOT)
    examples = sorted(os.path.join(ROOT, "examples", f)
                      for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))
    assert len(examples) >= 4
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir",
         str(tmp_path / "cache"), "--disable-error-code", "import-untyped", *examples],
        env={**os.environ, "MYPYPATH": tree}, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    # ember itself is what mypy checked the examples against (not an unknown module)
    probe = tmp_path / "probe.py"
    probe.write_text("import ember.nn as nn\nreveal_type(nn.Linear(2, 3))\n")
    r = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir",
                        str(tmp_path / "cache"), str(probe)],
                       env={**os.environ, "MYPYPATH": tree}, capture_output=True, text=True,
                       timeout=600)
    assert "ember.nn.modules.linear.Linear" in r.stdout, r.stdout + r.stderr


def test_the_layers_list_is_every_familys():
    """``ember.nn.modules.__all__`` is written out (so type checkers follow ``from .modules
    import *``): it must be the union of the families' lists."""
    with open(modules.__file__) as f:      # the families ember.nn.modules star-imports
        names = re.findall(r"^from \.(\w+) import \*$", f.read(), re.M)
    assert len(names) >= 20
    families = [getattr(modules, n) for n in names]
    union = {"Module", "LazyModuleMixin"} | {n for f in families for n in f.__all__}
    assert set(modules.__all__) == union
    assert len(modules.__all__) == len(set(modules.__all__))
    assert all(hasattr(ember.nn, n) for n in modules.__all__)
