"""``ember.utils.memory_viz``: a picture of where device memory went.

``trace_plot(snapshot)`` turns a memory snapshot (``ember.<device>.memory._snapshot()``,
or the JSON ``_dump_snapshot`` writes) into one self-contained HTML page: the allocator's
active memory over time, each allocation a band from its ``alloc`` to its free, stacked
in allocation order (a band drops when an earlier one is freed), coloured by the line of
user code that asked for it; forward-pass allocations are drawn solid, backward-pass ones
hatched. Hovering a band shows its size, the autograd node (backward), and the stack.
Below the plot, the largest allocations alive at the peak are listed.

Command line::

    python -m ember.utils.memory_viz trace_plot snapshot.json -o memory.html
"""
from __future__ import annotations

import argparse
import html
import json
import sys
import zlib

__all__ = ["trace_plot", "allocations", "main"]

_W, _H, _LEFT, _BOTTOM = 1000, 420, 70, 30


def _fmt(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _site(entry) -> str:
    """The user line that made an allocation (the frame before ember's first)."""
    frames = entry.get("frames") or []
    user = [f for f in frames if not f.get("ember")]
    f = user[-1] if user else (frames[-1] if frames else None)
    if f is None:
        return "(no stack recorded)"
    op = frames[-1]["name"] if frames and frames[-1].get("ember") else ""
    return f"{f['filename']}:{f['line']} {f['name']}" + (f" -> {op}" if op else "")


def allocations(snapshot) -> list:
    """The trace's allocations as dicts: ``start`` and ``end`` (event indices; ``end`` None
    while alive at the end), ``size``, ``addr``, ``phase``, ``node``, ``site``, ``frames``."""
    traces = snapshot.get("device_traces") or [[]]
    trace = traces[0] if traces else []
    live = {}
    out = []
    for i, e in enumerate(trace):
        act = e.get("action")
        if act == "alloc":
            a = {"start": i, "end": None, "size": e.get("size", 0), "addr": e.get("addr"),
                 "phase": e.get("phase", "forward"), "node": e.get("node", ""),
                 "site": _site(e), "frames": e.get("frames") or []}
            live[e.get("addr")] = a
            out.append(a)
        elif act == "free_requested":
            a = live.pop(e.get("addr"), None)
            if a is not None:
                a["end"] = i
    return out


def _colour(site: str) -> str:
    h = zlib.crc32(site.encode()) % 360
    return f"hsl({h}, 65%, 55%)"


def trace_plot(snapshot, title: str = "ember: active device memory over time") -> str:
    """The HTML page of ``snapshot`` (a dict, a JSON string, or a path to the JSON)."""
    if isinstance(snapshot, str):
        if snapshot.lstrip().startswith("{"):
            snapshot = json.loads(snapshot)
        else:
            with open(snapshot) as f:
                snapshot = json.load(f)
    allocs = allocations(snapshot)
    n_events = max([a["start"] for a in allocs] + [a["end"] or 0 for a in allocs] + [1]) + 1
    # stack the live allocations in allocation order: each band's height at each event
    order = sorted(allocs, key=lambda a: a["start"])
    points = {id(a): [] for a in order}
    events = sorted({a["start"] for a in order} | {a["end"] for a in order if a["end"]}
                    | {n_events - 1})
    peak, peak_at, live = 0, 0, []
    for t in events:
        live = [a for a in order if a["start"] <= t and (a["end"] is None or a["end"] > t)]
        base = 0
        for a in live:
            points[id(a)].append((t, base, base + a["size"]))
            base += a["size"]
        if base > peak:
            peak, peak_at = base, t
    peak = max(peak, 1)
    sx = (_W - _LEFT - 10) / max(n_events - 1, 1)
    sy = (_H - _BOTTOM - 10) / peak

    def x(t):
        return _LEFT + t * sx

    def y(v):
        return _H - _BOTTOM - v * sy

    shapes = []
    for a in order:
        pts = points[id(a)]
        if not pts:
            continue
        end = a["end"] if a["end"] is not None else n_events - 1
        top = [(x(t), y(hi)) for t, _, hi in pts] + [(x(end), y(pts[-1][2]))]
        bottom = [(x(t), y(lo)) for t, lo, _ in pts] + [(x(end), y(pts[-1][1]))]
        poly = " ".join(f"{px:.1f},{py:.1f}" for px, py in top + bottom[::-1])
        stack = "\n".join(f"  {f['filename']}:{f['line']} {f['name']}"
                          for f in a["frames"][-6:])
        tip = html.escape(f"{_fmt(a['size'])} ({a['phase']}"
                          f"{', ' + a['node'] if a['node'] else ''})\n{a['site']}\n{stack}")
        fill = _colour(a["site"])
        extra = ' fill-opacity="0.55" stroke-dasharray="2,2"' if a["phase"] == "backward" \
            else ""
        shapes.append(f'<polygon points="{poly}" fill="{fill}" stroke="{fill}" '
                      f'stroke-width="0.3"{extra}><title>{tip}</title></polygon>')
    ticks = []
    for k in range(5):
        v = peak * k / 4
        ticks.append(f'<line x1="{_LEFT - 4}" x2="{_W - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#ddd"/><text x="{_LEFT - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end" font-size="11">{_fmt(v)}</text>')
    at_peak = sorted((a for a in order if a["start"] <= peak_at and
                      (a["end"] is None or a["end"] > peak_at)),
                     key=lambda a: -a["size"])[:15]
    rows = "".join(f"<tr><td>{_fmt(a['size'])}</td><td>{a['phase']}</td>"
                   f"<td>{html.escape(a['node'])}</td><td>{html.escape(a['site'])}</td></tr>"
                   for a in at_peak)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}">'
           + "".join(ticks) + "".join(shapes) +
           f'<line x1="{x(peak_at):.1f}" x2="{x(peak_at):.1f}" y1="5" y2="{_H - _BOTTOM}" '
           f'stroke="#c00" stroke-dasharray="4,3"/>'
           f'<text x="{_LEFT}" y="{_H - 8}" font-size="11">allocator events '
           f'(0 .. {n_events - 1}); peak {_fmt(peak)} at event {peak_at}</text></svg>')
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>body{{font-family:sans-serif;margin:20px}}table{{border-collapse:"
            f"collapse;font-size:12px}}td,th{{border:1px solid #ccc;padding:2px 6px}}</style>"
            f"</head><body><h2>{html.escape(title)}</h2><p>{len(allocs)} allocations; solid: "
            f"forward pass, hatched: backward pass; colour: the line of code that allocated; "
            f"hover for the stack.</p>{svg}<h3>Largest allocations alive at the peak</h3>"
            f"<table><tr><th>size</th><th>phase</th><th>autograd node</th><th>where</th></tr>"
            f"{rows}</table></body></html>")


def main(argv=None) -> int:
    """The command line ``python -m ember.utils.memory_viz trace_plot snapshot.json -o out.html``:
    write a memory snapshot's timeline as an HTML page.
    """
    p = argparse.ArgumentParser(prog="python -m ember.utils.memory_viz",
                                description="Draw a memory snapshot as an HTML page.")
    p.add_argument("command", choices=["trace_plot"])
    p.add_argument("snapshot", help="the JSON written by ember.<device>.memory._dump_snapshot")
    p.add_argument("-o", "--output", default="memory.html")
    args = p.parse_args(argv)
    page = trace_plot(args.snapshot)
    with open(args.output, "w") as f:
        f.write(page)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
