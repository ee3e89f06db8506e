"""``python -m ember.testing.new_backend NAME``: the plugin template renamed throughout;
installed (into a folder, not this environment), its renamed tests pass as the
template's do."""
import os
import re
import subprocess
import sys

import pytest

from ember.testing.new_backend import create


def test_rename_leaves_no_old_name_and_the_tests_pass(tmp_path):
    dest = tmp_path / "ember-mydev"
    r = subprocess.run([sys.executable, "-m", "ember.testing.new_backend", "mydev",
                        str(dest)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for dirpath, _, files in os.walk(dest):
        for f in files:
            path = os.path.join(dirpath, f)
            assert not re.search(r"(?i)example", os.path.relpath(path, dest)), path
            with open(path, encoding="utf-8") as fh:
                assert not re.search(r"(?i)example", fh.read()), path
    assert (dest / "ember_mydev" / "plugin.py").exists()
    assert (dest / "tests" / "test_mydev.py").exists()
    assert 'mydev = "ember_mydev.plugin"' in (dest / "pyproject.toml").read_text()
    assert "class MydevBackend(Backend)" in (dest / "ember_mydev" / "plugin.py").read_text()

    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-build-isolation", "--target", str(site), str(dest)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, PYTHONPATH=str(site))
    # (the conformance kit is the template's own test in this suite)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", str(dest / "tests"), "-k", "not conformance_kit"],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert re.search(r"\b8 passed", r.stdout), r.stdout[-500:]


def test_bad_names_and_existing_folders_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a usable device type name"):
        create("My-Device", str(tmp_path / "x"))
    with pytest.raises(ValueError):
        create("class", str(tmp_path / "x"))
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError):
        create("mydev", str(tmp_path / "taken"))
