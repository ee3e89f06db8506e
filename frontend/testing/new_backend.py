"""``python -m ember.testing.new_backend NAME [DEST]``: start a backend plugin for device
type ``NAME`` from ember's plugin template (``examples/plugin-template``), renamed
throughout: the distribution ``ember-NAME``, the package ``ember_NAME``, the device type
and entry point ``NAME``, the classes ``<Name>Backend`` / ``<Name>Memory``, the
environment variables ``EMBER_<NAME>_*`` and the test file. No trace of ``example`` is
left (the script checks), so the template's tests pass as they are once the new
distribution is installed::

    python -m ember.testing.new_backend mydevice ../ember-mydevice
    pip install -e ../ember-mydevice
    python -m pytest ../ember-mydevice/tests       # the template's tests, renamed
    python -m ember.testing mydevice               # the conformance kit

Outside an ember checkout, pass the template folder with ``--template``.
"""
from __future__ import annotations

import argparse
import keyword
import os
import re
import shutil
import sys

__all__ = ["create", "main"]

_SKIP = ("__pycache__", ".egg-info", "build", ".pytest_cache")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def default_template() -> str | None:
    """The template folder of the ember checkout this package was installed from."""
    here = os.path.dirname(os.path.abspath(__file__))       # frontend/testing
    path = os.path.join(os.path.dirname(os.path.dirname(here)), "examples", "plugin-template")
    return path if os.path.isdir(path) else None


def _rules(name: str, dest_name: str) -> list:
    camel = "".join(p.capitalize() for p in name.split("_"))
    return [
        (re.compile(r"examples/plugin-template"), dest_name),
        (re.compile(r"ember_example"), f"ember_{name}"),
        (re.compile(r"ember-example"), f"ember-{name.replace('_', '-')}"),
        (re.compile(r"EMBER_EXAMPLE"), f"EMBER_{name.upper()}"),
        (re.compile(r"test_example"), f"test_{name}"),
        (re.compile(r"Example(?=[A-Z])"), camel),
        (re.compile(r"\bExample\b"), camel),
        (re.compile(r"\bexample\b"), name),
    ]


def _rename(text: str, rules) -> str:
    for pattern, repl in rules:
        text = pattern.sub(repl, text)
    return text


def _text(path: str) -> str:
    with open(path, encoding="utf-8", errors="ignore") as fh:
        return fh.read()


def create(name: str, dest: str, template: str | None = None) -> list:
    """Write the renamed template to ``dest`` (which must not exist); returns the files
    written."""
    if not _NAME.fullmatch(name) or keyword.iskeyword(name) or name in ("cpu", "example"):
        raise ValueError(f"new_backend: {name!r} is not a usable device type name: lower "
                         f"case letters, digits and _, starting with a letter, not a Python "
                         f"keyword, not 'cpu' or 'example'")
    template = template or default_template()
    if template is None or not os.path.isdir(template):
        raise FileNotFoundError("new_backend: the plugin template was not found (it is "
                                "examples/plugin-template in an ember checkout): pass "
                                "--template PATH")
    if os.path.exists(dest):
        raise FileExistsError(f"new_backend: {dest!r} exists already")
    rules = _rules(name, os.path.basename(os.path.abspath(dest)))
    written = []
    for dirpath, dirnames, files in os.walk(template):
        dirnames[:] = [d for d in dirnames if not any(s in d for s in _SKIP)]
        rel = os.path.relpath(dirpath, template)
        out_dir = os.path.join(dest, _rename(rel, rules)) if rel != "." else dest
        os.makedirs(out_dir, exist_ok=True)
        for f in files:
            src = os.path.join(dirpath, f)
            out = os.path.join(out_dir, _rename(f, rules))
            try:
                with open(src, encoding="utf-8") as fh:
                    text = fh.read()
            except UnicodeDecodeError:          # (no binary files in the template today)
                shutil.copy2(src, out)
            else:
                with open(out, "w", encoding="utf-8") as fh:
                    fh.write(_rename(text, rules))
            written.append(out)
    left = [p for p in written if re.search(r"(?i)example", os.path.relpath(p, dest))
            or re.search(r"(?i)example", _text(p))]
    if left:
        raise RuntimeError(f"new_backend: 'example' is still in {left} (a template change "
                           f"this script does not know)")
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ember.testing.new_backend",
                                description="Start a backend plugin from ember's template.")
    p.add_argument("name", help="the device type (tensor.to(NAME)), e.g. mydevice")
    p.add_argument("dest", nargs="?", help="the folder to create (default: ./ember-NAME)")
    p.add_argument("--template", help="the template folder (default: the ember checkout's)")
    args = p.parse_args(argv)
    dest = args.dest or f"ember-{args.name.replace('_', '-')}"
    try:
        files = create(args.name, dest, args.template)
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as e:
        print(e, file=sys.stderr)
        return 2
    print(f"wrote {len(files)} files to {dest}: pip install -e {dest}, then python -m "
          f"pytest {os.path.join(dest, 'tests')} and python -m ember.testing {args.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
