"""Render the op table as the reference page ``docs/ops.md``.

The page is generated (``python -m ember.dispatcher.codegen docs docs/ops.md``) and a test
checks it matches the definitions, so the docs list every op exactly as the schema does.
"""
from __future__ import annotations

from .. import expr as X
from ..schema import KINDS, OPS, PRIMITIVES

__all__ = ["render_ops_page"]

_KIND_TITLES = {
    "elementwise": "Elementwise", "reduction": "Reductions", "scan": "Scans",
    "softmax": "Softmax", "sort": "Sorting", "index": "Indexing and rearranging",
    "copy": "Copies and joins", "creation": "Creation", "random": "Random numbers",
    "matmul": "Matrix products", "conv": "Convolution", "pool": "Pooling",
    "norm": "Normalisation", "embedding": "Embedding", "loss": "Losses",
    "attention": "Attention",
}


def _gradient(o) -> str:
    if not o.differentiable:
        return "—"
    if o.grad is not None:
        return "formula"
    return "through composite"


_LONG = 400


def _body(o) -> str:
    if o.scalar is None:
        return ""
    parts = []
    for mode, scalar in o.bodies().items():
        for kind, e in scalar.items():
            text = X.render_text(e).replace("|", "\\|")
            if len(text) > _LONG:  # (unrolled series: the definition is the readable form)
                text = f"{len(X.walk(e, shown=True))} nodes: see its definition in defs/"
            label = kind if mode is None else f"{o.mode_attr}={mode!r}, {kind}"
            parts.append(f"{label}: `{text}`")
    return "<br>".join(parts)


def render_ops_page() -> str:
    lines = [
        "# Ops",
        "",
        "Every op ember knows, from its definition in `dispatcher/defs/` (this page is",
        "generated: `python -m ember.dispatcher.codegen docs docs/ops.md`). **Primitives**",
        f"({len(PRIMITIVES)}) are what every backend implements; every other op has a",
        "composite a backend may replace with a native kernel. Elementwise ops show their",
        "scalar body per dtype kind (float, sint, uint, bool, or a group): the backends'",
        "kernels are generated from it. *Gradient*: a formula in the definition, or",
        "autograd differentiates the composite.",
        "",
    ]
    for kind in KINDS:
        ops = [o for o in OPS.values() if o.kind == kind]
        if not ops:
            continue
        lines += [f"## {_KIND_TITLES.get(kind, kind)}", ""]
        if kind == "elementwise":
            lines += ["| op | signature | promotion | gradient | body |",
                      "|---|---|---|---|---|"]
        else:
            lines += ["| op | signature | promotion | gradient |", "|---|---|---|---|"]
        for o in ops:
            name = f"**{o.name}**" if o.primitive else o.name
            sig = o.signature.split("  #")[0].replace("|", "\\|")
            row = [name, f"`{sig}`", o.promotion, _gradient(o)]
            if kind == "elementwise":
                row.append(_body(o))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)
