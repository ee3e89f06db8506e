"""The distributions' metadata: one version for every first-party distribution, each
backend pinning ember to it, a BSD-3-Clause LICENSE file in each, and ``py.typed`` (PEP
561) shipped with the ember package."""
import os
import re

import pytest

import ember

tomllib = pytest.importorskip("tomllib")     # (Python 3.11+; the files are the same on 3.10)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DISTS = {"ember-tensor": ".", "ember-cpu": "backends/cpu", "ember-cuda": "backends/cuda",
         "ember-opencl": "backends/opencl", "ember-example": "examples/plugin-template"}


def _project(folder):
    with open(os.path.join(ROOT, folder, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


@pytest.mark.parametrize("name,folder", DISTS.items())
def test_every_distribution_has_the_license_it_declares(name, folder):
    proj = _project(folder)
    assert proj["name"] == name
    assert proj["license"] == {"text": "BSD-3-Clause"}
    with open(os.path.join(ROOT, folder, "LICENSE")) as f:
        text = f.read()
    assert text.startswith("BSD 3-Clause License") and "Redistributions" in text


def test_first_party_backends_pin_the_ember_they_were_released_with():
    version = _project(".")["version"]
    assert _project(".")["name"] == "ember-tensor"    # ("ember" is taken on PyPI)
    assert ember.__version__ == version
    # and ember pins its CPU backend: pip install ember gives a library with a device
    assert f"ember-cpu=={version}" in _project(".")["dependencies"]
    for name in ("ember-cpu", "ember-cuda", "ember-opencl"):
        proj = _project(DISTS[name])
        assert proj["version"] == version, name
        pins = [d for d in proj["dependencies"] if re.match(r"ember-tensor\b(?!-)", d)]
        assert pins == [f"ember-tensor=={version}"], (name, proj["dependencies"])


def test_the_package_is_typed():
    assert os.path.exists(os.path.join(os.path.dirname(ember.__file__), "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["ember"]


def test_the_wheel_lists_every_package():
    """An editable install finds any package; a wheel has only those listed."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        setup = tomllib.load(f)["tool"]["setuptools"]
    listed = set(setup["packages"])
    found = set()
    for name, folder in setup["package-dir"].items():
        base = os.path.join(ROOT, folder)
        for dirpath, _, files in os.walk(base):
            if "__init__.py" in files:
                rel = os.path.relpath(dirpath, base)
                found.add(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    assert found - listed == set(), f"packages missing from pyproject.toml: {found - listed}"


def test_extras_for_plugin_authors_and_the_other_backends():
    extras = _project(".")["optional-dependencies"]
    assert extras["testing"] == ["pytest>=7"]
    version = _project(".")["version"]
    assert extras["opencl"] == [f"ember-opencl=={version}"]
    assert extras["cuda"] == [f"ember-cuda=={version}"]


def test_release_wheels_are_configured_for_every_supported_python():
    """cibuildwheel builds the CPU backend for CPython 3.10-3.13 on manylinux and runs the
    conformance kit on each installed wheel."""
    with open(os.path.join(ROOT, "backends", "cpu", "pyproject.toml"), "rb") as f:
        cfg = tomllib.load(f)["tool"]["cibuildwheel"]
    assert cfg["build"] == ["cp310-*", "cp311-*", "cp312-*", "cp313-*"]
    assert cfg["manylinux-x86_64-image"] == "manylinux_2_28"
    assert "ember.testing cpu" in cfg["test-command"]
    # ember-tensor, a build requirement of the backend, comes from the wheel built first
    assert "/project/dist" in cfg["before-build"] and cfg["environment"]["PIP_FIND_LINKS"]
    assert _project(".")["requires-python"] == ">=3.10"
