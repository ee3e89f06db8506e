"""``python -m ember.dispatcher.codegen cxx OUT.h``: write the generated C++ header;
``... docs OUT.md``: the ops reference page.

A file is rewritten only when its text changes, so an unchanged op table does not trigger
a rebuild of the backends that include it.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import cxx, docs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ember.dispatcher.codegen",
                                description=__doc__.splitlines()[0])
    p.add_argument("target", choices=["cxx", "docs"], help="what to generate")
    p.add_argument("out", help="the file to write")
    args = p.parse_args(argv)
    text = cxx.render_header() if args.target == "cxx" else docs.render_ops_page()
    try:
        with open(args.out) as f:
            if f.read() == text:
                return 0
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
