"""The distributions as a user installs them (issue 18's acceptance): wheels of ember
(distribution ``ember-tensor``: ``ember`` is taken on PyPI) and ember-cpu built from this
checkout (the CPU backend's CMake folder is the editable build's, so this is incremental),
installed into a fresh venv outside the repository with
``pip install ember-tensor[testing,demo]`` (nothing else: it pulls ember-cpu), then
``ember.ones(2) + 1``, the demo, and the conformance kit on cpu from there."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{(r.stdout + r.stderr)[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheels")
    dist = base / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
          "--no-build-isolation", "-w", str(dist), ROOT, os.path.join(ROOT, "backends", "cpu")],
         timeout=1200)
    names = sorted(os.listdir(dist))
    assert [n.split("-")[0] for n in names] == ["ember_cpu", "ember_tensor"], names
    env_dir = base / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], timeout=300)
    py = str(env_dir / "bin" / "python")
    _run([py, "-m", "pip", "install", "--quiet", "--find-links", str(dist),
          "ember-tensor[testing,demo]"], timeout=1200, cwd=base)
    return py, base


def test_pip_install_ember_gives_a_working_library(venv):
    py, base = venv
    out = _run([py, "-c", "import ember, ember_cpu; print(ember.ones(2) + 1); "
                "print(ember.__file__)"], cwd=base, timeout=300)
    assert out.startswith("tensor([2., 2.])")
    assert ROOT not in out and "site-packages" in out      # the installed copy, not ours


def test_the_demo_runs_from_the_installed_library(venv):
    py, base = venv
    out = _run([py, os.path.join(ROOT, "examples", "train_digits.py"), "--epochs", "1"],
               cwd=base, timeout=600)
    assert "predictions identical: True" in out


def test_the_conformance_kit_runs_from_the_installed_library(venv):
    py, base = venv
    out = _run([py, "-m", "ember.testing", "cpu", "-q", "-p", "no:cacheprovider"],
               cwd=base, timeout=1200)
    assert "cases generated for device 'cpu'" in out and " failed" not in out


def test_pip_install_a_backend_pulls_the_ember_it_was_released_with(venv, tmp_path):
    """``pip install ember-opencl`` into a venv without ember: the backend's pin brings
    ember-tensor (and that the CPU backend) at the same version, and the device works."""
    py, base = venv
    dist = base / "dist"
    _run([py, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist),
          os.path.join(ROOT, "backends", "opencl")], timeout=600, cwd=base)
    env_dir = tmp_path / "venv-opencl"
    _run([sys.executable, "-m", "venv", str(env_dir)], timeout=300)
    py2 = str(env_dir / "bin" / "python")
    _run([py2, "-m", "pip", "install", "--quiet", "--find-links", str(dist), "ember-opencl"],
         timeout=1200, cwd=tmp_path)
    out = _run([py2, "-c", "import importlib.metadata as m, ember; "
                "print(m.version('ember-tensor'), m.version('ember-opencl'), "
                "m.version('ember-cpu')); print(ember.ones(2, device='opencl') + 1)"],
               cwd=tmp_path, timeout=300)
    versions, result = out.splitlines()[:2]
    assert versions == "0.1.0 0.1.0 0.1.0"
    assert result.startswith("tensor([2., 2.]")
