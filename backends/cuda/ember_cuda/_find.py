"""Where the CUDA libraries and headers ember loads at run time may be: the ``nvidia-*``
wheels first, then a toolkit (``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``)."""
from __future__ import annotations

import glob
import importlib.util
import os

__all__ = ["wheel_roots", "toolkits", "library_candidates"]


def wheel_roots() -> list:
    """The folders of the installed ``nvidia`` namespace package (the CUDA wheels)."""
    spec = importlib.util.find_spec("nvidia")
    return list(spec.submodule_search_locations or []) if spec else []


def toolkits() -> list:
    return [h for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                        "/usr/local/cuda") if h]


def library_candidates(lib: str, skip=()) -> list:
    """Paths (newest first) and bare names of ``lib`` (``"libcublas"``): the wheels', the
    toolkits', then the loader's search for versions 13 and 12; paths containing any of
    ``skip`` left out."""
    paths = []
    for root in wheel_roots():
        paths += sorted(glob.glob(os.path.join(root, "**", f"{lib}.so*"), recursive=True),
                        reverse=True)
    for home in toolkits():
        paths += sorted(glob.glob(os.path.join(home, "lib64", f"{lib}.so*")), reverse=True)
    paths += [f"{lib}.so.13", f"{lib}.so.12", f"{lib}.so"]
    return [p for p in paths if not any(s in p for s in skip)]
