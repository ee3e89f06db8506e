"""``python -m ember backends [--coverage]``: installed plugins, versions, devices, status."""
from __future__ import annotations

import argparse
import sys

from ember.dispatcher import API_VERSION, PRIMITIVES, coverage, plugin_records


def _backends(args) -> int:
    records = plugin_records()
    print(f"ember backend API version {API_VERSION}; {len(PRIMITIVES)} primitives")
    if not records:
        print("no backend plugins installed (pip install ember-cpu)")
    for r in records:
        head = f"{r.name:<10} {r.status:<8}"
        if r.status == "loaded":
            print(f"{head} version {r.version:<8} device type {r.device_type!r} "
                  f"({r.distribution or 'registered in-process'})")
            for i, d in enumerate(r.devices):
                print(f"    {r.device_type}:{i}  {d}")
            if not r.devices:
                status = getattr(r.backend, "status", None)
                why = ""
                if callable(status):
                    try:
                        why = f": {status()}"
                    except Exception as e:  # a status probe must not break the listing
                        why = f": {type(e).__name__}: {e}"
                print(f"    (no devices available{why})")
            if args.coverage:
                cov = coverage(r.device_type)
                for kind in ("native", "composite", "missing"):
                    names = sorted(n for n, k in cov.items() if k == kind)
                    print(f"    {kind} ({len(names)}): {', '.join(names) or '-'}")
        else:
            print(f"{head} {r.distribution}: {r.error}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ember")
    sub = p.add_subparsers(dest="cmd")
    b = sub.add_parser("backends", help="list installed backend plugins")
    b.add_argument("--coverage", action="store_true",
                   help="show which ops each backend runs natively or as composites")
    args = p.parse_args(argv)
    if args.cmd == "backends":
        return _backends(args)
    p.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
