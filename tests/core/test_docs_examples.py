"""The ```python blocks of the user guides run as written (in a scratch directory): an
example that names an undefined variable or an API that changed fails here."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDES = ["index.md", "tensors.md", "training.md", "allocator.md", "onnx.md"]


def _blocks(name):
    with open(os.path.join(ROOT, "docs", name)) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.mark.parametrize("name", GUIDES)
def test_guide_examples_run(name, tmp_path, monkeypatch):
    blocks = _blocks(name)
    assert blocks
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    for code in blocks:
        exec(compile(code, f"docs/{name}", "exec"), scope)
