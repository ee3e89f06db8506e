"""Register ember's in-tree distributions without pip (offline machines lacking the build
backends): ``python scripts/dev_install.py [--build]``.

For each of ember, ember-cpu, ember-cuda (and ember-opencl when pyopencl imports) it writes
a ``.pth`` file putting the source folder on ``sys.path`` and a ``*.dist-info`` folder
with the entry points (``ember.backends``, ``pytest11``), which is all that plugin
discovery needs. ``--build`` first compiles the C++/CUDA extensions with plain CMake
(needs cmake, a compiler, pybind11; nvcc for CUDA) into the package folders. ``ember``
itself is the folder ``frontend/`` imported under the name ``ember``: a small finder in
the ``.pth`` maps it (and ``ember.dispatcher`` to ``dispatcher/``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DISTS = [
    # (distribution, version, folder put on sys.path, entry points)
    ("ember_cpu", "0.1.0", "backends/cpu", {"ember.backends": {"cpu": "ember_cpu.plugin"}}),
    ("ember_cuda", "0.1.0", "backends/cuda", {"ember.backends": {"cuda": "ember_cuda.plugin"}}),
    ("ember_opencl", "0.1.0", "backends/opencl",
     {"ember.backends": {"opencl": "ember_opencl.plugin"}}),
]

FINDER = '''import sys, importlib.machinery as _m, importlib.util as _u
class _EmberDevFinder:
    MAP = {"ember": %r, "ember.dispatcher": %r}
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        d = cls.MAP.get(name)
        if d is None:
            return None
        return _u.spec_from_file_location(name, d + "/__init__.py",
                                          submodule_search_locations=[d])
sys.meta_path.insert(0, _EmberDevFinder)
'''


def build(folder: str) -> None:
    import pybind11
    src = os.path.join(ROOT, folder)
    bld = os.path.join(ROOT, "build", "dev-" + os.path.basename(folder))
    cmd = ["cmake", "-S", src, "-B", bld, "-DCMAKE_BUILD_TYPE=Release",
           f"-Dpybind11_DIR={pybind11.get_cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}",
           f"-DCMAKE_INSTALL_PREFIX={src}"]
    if subprocess.run(cmd + (["-G", "Ninja"] if _has("ninja") else [])).returncode:
        raise SystemExit(f"cmake configure failed for {folder}")
    jobs = str(os.cpu_count() or 2)
    if subprocess.run(["cmake", "--build", bld, "-j", jobs]).returncode:
        raise SystemExit(f"build failed for {folder}")
    if subprocess.run(["cmake", "--install", bld]).returncode:
        raise SystemExit(f"install failed for {folder}")


def _has(tool: str) -> bool:
    from shutil import which
    return which(tool) is not None


def write_dist(site: str, name: str, version: str, folder: str, eps: dict) -> None:
    info = os.path.join(site, f"{name}-{version}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        for group, items in eps.items():
            f.write(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items()) + "\n")
    with open(os.path.join(info, "INSTALLER"), "w") as f:
        f.write("ember-dev-install\n")
    if folder:
        with open(os.path.join(site, f"{name}-dev.pth"), "w") as f:
            f.write(os.path.join(ROOT, folder) + "\n")


def main() -> None:
    site = sysconfig.get_paths()["purelib"]
    if "--build" in sys.argv:
        build("backends/cpu")
        if _has("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
            build("backends/cuda")
    with open(os.path.join(site, "ember-dev.pth"), "w") as f:
        f.write("import _ember_dev_finder\n")
    with open(os.path.join(site, "_ember_dev_finder.py"), "w") as f:
        f.write(FINDER % (os.path.join(ROOT, "frontend"), os.path.join(ROOT, "dispatcher")))
    write_dist(site, "ember_tensor", "0.1.0", "",
               {"console_scripts": {"ember": "ember.__main__:main"},
                "pytest11": {"ember_testing": "ember.testing.plugin"}})
    import importlib.util
    done = []
    for name, ver, folder, eps in DISTS:
        if name == "ember_opencl" and importlib.util.find_spec("pyopencl") is None:
            continue
        write_dist(site, name, ver, folder, eps)
        done.append(name)
    print(f"registered ember, {', '.join(done)} in {site}")


if __name__ == "__main__":
    main()
