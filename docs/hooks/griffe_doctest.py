"""A griffe extension for the API reference: ``>>>`` examples become code blocks, and
Sphinx roles (``:func:`ember.abs```) become links.

ember's docstrings show examples as doctest lines (``>>> x[1]``) wherever they fit, not only
under an ``Example:`` heading; as Markdown those lines would be a paragraph, with ``[1]``
read as a link. Each run of lines from a ``>>>`` line to the next blank line is fenced as
Python, keeping its indentation (so it stays inside its docstring section).

A Sphinx role (``:func:``, ``:meth:``, ``:class:``, ``:attr:``, ``:mod:``) naming an
object becomes an autorefs link to its entry in the reference, so a reference to a name the
reference lacks fails ``mkdocs build --strict``; ``~`` shows only the last part.
"""
from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|meth|class|attr|mod|data|obj):`(~?)([\w.]+)(?:\(\))?`")


def fence_examples(text: str) -> str:
    """``text`` with each doctest run wrapped in a ```` ```python ```` fence."""
    lines, out, i, fenced = text.split("\n"), [], 0, False
    while i < len(lines):
        line = lines[i]
        body = line.lstrip()
        if body.startswith("```"):
            fenced = not fenced
        elif body.startswith(">>>") and not fenced:
            indent = line[:len(line) - len(body)]
            out.append(indent + "```python")
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                out.append(lines[i])
                i += 1
            out.append(indent + "```")
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _link(m: re.Match) -> str:
    target = m.group(2)
    shown = target.rsplit(".", 1)[-1] if m.group(1) else target
    return f"[`{shown}`][{target}]"


def links(text: str) -> str:
    """``text`` with its Sphinx roles as autorefs links."""
    return _ROLE.sub(_link, text)


class DoctestBlocks(griffe.Extension):
    """Fences the doctest examples of every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is None:
            return
        text = obj.docstring.value
        if ">>>" in text:
            text = fence_examples(text)
        if ":`" in text:
            text = links(text)
        obj.docstring.value = text
