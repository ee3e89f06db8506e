"""``ember.hub``: models published as ``hubconf.py`` entry points, and cached weights.

ember never downloads anything on its own. ``load(dir, model, source="local")`` imports
``dir/hubconf.py`` and calls its entry point ``model`` (running that file's code is what
the caller asks for, as with PyTorch's hub); ``source="github"`` works for a repository
already in the cache (``get_dir()/<owner>_<repo>_<ref>``, e.g. unpacked there by hand or by
PyTorch's hub with ``set_dir`` pointing at the same place). Where a download would be
needed — a repository or a weights file that is not in the cache — a
:class:`DownloadRequiredError` says which file to fetch and where to put it.
``load_state_dict_from_url`` reads cached weights with ``ember.load`` (PyTorch checkpoints
included); ``file://`` URLs are read from disk.

>>> model = ember.hub.load("path/to/repo", "resnet18", source="local",
...                        pretrained=False)  # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
from urllib.parse import unquote, urlparse

from .serialization import load as _load
from ember.dispatcher.warn import warn as _warn

__all__ = ["list", "help", "load", "get_dir", "set_dir", "load_state_dict_from_url",
           "download_url_to_file", "DownloadRequiredError", "HASH_REGEX"]

VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
#: the hash prefix in a weights file name (``resnet18-f37072fd.pth``)
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

_hub_dir = None


class _Faketqdm:
    """``ember.hub.tqdm`` where the ``tqdm`` package is not installed: PyTorch's hub stand-in
    (a byte or percent counter on stderr; not iterable, as PyTorch's is not)."""

    def __init__(self, total=None, disable=False, unit=None, *args, **kwargs):
        self.total = total
        self.disable = disable
        self.n = 0

    def update(self, n):
        """Count ``n`` more units and show the total."""
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def set_description(self, *args, **kwargs):
        """Ignored."""

    def write(self, s):
        """Write a line to stderr."""
        sys.stderr.write(f"{s}\n")

    def close(self):
        """Stop showing progress."""
        self.disable = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.disable:
            sys.stderr.write("\n")


def __getattr__(name):
    """``ember.hub.tqdm``: the ``tqdm`` package's progress bar when it is installed, else a
    small stand-in, as PyTorch's hub exports it (programs write ``from torch.hub import
    tqdm``). Imported on first use: ``import tqdm`` costs more than 40 ms, and every
    ``import ember`` imports this module."""
    if name == "tqdm":
        try:
            value = importlib.import_module("tqdm").tqdm
        except ImportError:
            value = _Faketqdm
        globals()["tqdm"] = value
        return value
    raise AttributeError(f"module 'ember.hub' has no attribute {name!r}")


class DownloadRequiredError(RuntimeError):
    """What ember.hub raises where PyTorch's hub would download: ember fetches nothing."""


def get_dir() -> str:
    """The hub cache folder: ``set_dir``'s, else ``$EMBER_HOME/hub``, else
    ``$XDG_CACHE_HOME/ember/hub`` (``~/.cache/ember/hub``)."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.environ.get("EMBER_HOME")
    if home is None:
        home = os.path.join(os.environ.get("XDG_CACHE_HOME",
                                           os.path.join(os.path.expanduser("~"), ".cache")),
                            "ember")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d) -> None:
    """Use ``d`` as the hub cache folder."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


# ---- repositories and hubconf.py --------------------------------------------------------
def _parse_repo_info(github: str):
    if ":" in github:
        repo_info, ref = github.split(":", 1)
    else:
        repo_info, ref = github, None
    if "/" not in repo_info:
        raise ValueError(f"Invalid input: {github!r}; the repository must be given as "
                         "'repo_owner/repo_name[:ref]'")
    owner, name = repo_info.split("/", 1)
    return owner, name, ref


def _cached_repo_dir(github: str, force_reload: bool, trust_repo) -> str:
    owner, name, ref = _parse_repo_info(github)
    hub = get_dir()
    candidates = ([f"{owner}_{name}_{ref.replace('/', '_')}"] if ref is not None
                  else [f"{owner}_{name}_main", f"{owner}_{name}_master"])
    for c in candidates:
        path = os.path.join(hub, c)
        if os.path.isdir(path) and not force_reload:
            _check_trust(f"{owner}_{name}", hub, trust_repo)
            return path
    why = "force_reload=True asks for a fresh download" if force_reload else (
        "it is not in the hub cache")
    raise DownloadRequiredError(
        f"ember.hub: the repository {github!r} would have to be downloaded from GitHub "
        f"({why}); ember does not download. Clone or unpack it into "
        f"{os.path.join(hub, candidates[0])!r} (or pass the folder with source='local').")


def _check_trust(repo_id: str, hub: str, trust_repo) -> None:
    if trust_repo is True:
        return
    trusted_file = os.path.join(hub, "trusted_list")
    trusted = set()
    if os.path.exists(trusted_file):
        with open(trusted_file) as f:
            trusted = {line.strip() for line in f}
    if repo_id in trusted:
        return
    if trust_repo is None:
        _warn(f"You are about to run code from an untrusted repository "
              f"({repo_id}). In a future release this will require trust_repo=True; "
              "pass trust_repo=True (or add the repository to the hub's "
              "trusted_list) to silence this warning.", UserWarning)
        return
    raise RuntimeError(f"ember.hub: the repository {repo_id!r} is not trusted: pass "
                       f"trust_repo=True or add it to {trusted_file!r}")


def _import_hubconf(repo_dir: str):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember.hub: {path!r} does not exist: the folder must hold "
                                f"a {MODULE_HUBCONF} defining the entry points")
    sys.path.insert(0, repo_dir)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    deps = getattr(module, VAR_DEPENDENCY, None)
    if deps:
        missing = [d for d in deps if importlib.util.find_spec(d) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _load_entry_from_hubconf(m, model: str):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    func = getattr(m, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _repo_dir(repo_or_dir: str, source: str, force_reload: bool, trust_repo) -> str:
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return os.fspath(repo_or_dir)
    return _cached_repo_dir(repo_or_dir, force_reload, trust_repo)


def list(github, force_reload=False, skip_validation=False, trust_repo=None,  # noqa: A001
         verbose=True, source: str = "github"):
    """The entry points (public callables) of the repository's ``hubconf.py``."""
    m = _import_hubconf(_repo_dir(github, source, force_reload, trust_repo))
    return [f for f in dir(m) if callable(getattr(m, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False,  # noqa: A001
         trust_repo=None, source: str = "github"):
    """The docstring of entry point ``model``."""
    m = _import_hubconf(_repo_dir(github, source, force_reload, trust_repo))
    return _load_entry_from_hubconf(m, model).__doc__


def load(repo_or_dir, model, *args, source: str = "github", trust_repo=None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs):
    """``hubconf.model(*args, **kwargs)`` from a local folder (``source="local"``) or a
    cached GitHub repository (``source="github"``, ``"owner/repo[:ref]"``)."""
    if not isinstance(source, str):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    m = _import_hubconf(_repo_dir(repo_or_dir, source, force_reload, trust_repo))
    return _load_entry_from_hubconf(m, model)(*args, **kwargs)


# ---- weights files ----------------------------------------------------------------------
def _local_path(url: str):
    """The path a ``file://`` URL (or a plain path) names, or None for a remote URL."""
    parts = urlparse(url)
    if parts.scheme == "file":
        return unquote(parts.path)
    if parts.scheme == "" and os.path.exists(url):
        return url
    return None


def _check_hash(path: str, hash_prefix: str) -> None:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    if digest[:len(hash_prefix)] != hash_prefix:
        raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')


def download_url_to_file(url: str, dst: str, hash_prefix=None, progress: bool = True) -> None:
    """Copy ``url`` to ``dst``: only ``file://`` URLs (and paths) can be served; a remote
    URL raises :class:`DownloadRequiredError` (ember does not download)."""
    src = _local_path(url)
    if src is None:
        raise DownloadRequiredError(
            f"ember.hub.download_url_to_file(): {url!r} would have to be downloaded; ember "
            f"does not download. Fetch it yourself and save it as {dst!r}.")
    if hash_prefix is not None:
        _check_hash(src, hash_prefix)
    shutil.copyfile(src, os.path.expanduser(dst))


def load_state_dict_from_url(url: str, model_dir=None, map_location=None,
                             progress: bool = True, check_hash: bool = False, file_name=None,
                             weights_only: bool = False):
    """``ember.load`` of the weights at ``url`` from the cache
    (``model_dir``, default ``get_dir()/checkpoints``). A file that is not there raises
    :class:`DownloadRequiredError` naming the file to fetch and where to put it."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    model_dir = os.path.expanduser(os.fspath(model_dir))
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        src = _local_path(url)
        if src is None:
            raise DownloadRequiredError(
                f"ember.hub.load_state_dict_from_url(): {filename!r} is not in the cache "
                f"({model_dir!r}) and would have to be downloaded from {url!r}; ember does "
                f"not download. Fetch the file and save it as {cached!r}.")
        os.makedirs(model_dir, exist_ok=True)
        shutil.copyfile(src, cached)
    if check_hash:
        r = HASH_REGEX.search(filename)
        if r:
            _check_hash(cached, r.group(1))
    return _load(cached, map_location=map_location, weights_only=weights_only)
