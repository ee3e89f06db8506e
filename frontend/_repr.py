"""``repr(tensor)`` in PyTorch's format (``tensor([1., 2.], dtype=ember.float64)``)."""
from __future__ import annotations

import math

import numpy as np

from ember.dispatcher import dtypes as D
from ember.dispatcher import ops as O

# the print options (``ember.set_printoptions`` changes them); SCI_MODE None: automatic
PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None


class _Formatter:
    """PyTorch's element formatter: the mode (integer-valued, scientific) and the column
    width come from the nonzero finite values only; inf and nan are printed as they are
    in that width."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not floating:
            self.width = max((len(str(v)) for v in flat.tolist()), default=1)
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        mag = np.abs(vals)
        hi, lo = mag.max(), mag.min()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = (bool(hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4) if SCI_MODE is None
                         else bool(SCI_MODE))
        # (an integer-valued float gets a "." after it, which the width counts)
        extra = 1 if self.int_mode and not self.sci_mode else 0
        self.width = max(len(self._fmt(v)) + extra for v in vals.tolist())

    def _fmt(self, v: float) -> str:
        if self.sci_mode:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}"
        return f"{v:.{PRECISION}f}"

    def format(self, v) -> str:
        if not self.floating:
            s = str(v)
        elif not math.isfinite(v) and not self.sci_mode:
            s = f"{v:.0f}" if self.int_mode else f"{v:.{PRECISION}f}"
        else:
            s = self._fmt(v)
            if self.int_mode and not self.sci_mode:
                s += "."
        return s.rjust(self.width)


class _ComplexFormatter:
    """PyTorch's complex elements: the real and the imaginary parts each formatted by a
    formatter of their own, joined as ``re+imj``."""

    def __init__(self, values: np.ndarray):
        self.re = _Formatter(values.real.astype(np.float64), True)
        self.im = _Formatter(values.imag.astype(np.float64), True)
        self.width = self.re.width + self.im.width + 1

    def format(self, v) -> str:
        re = self.re.format(v.real)
        im = (self.im.format(v.imag) + "j").lstrip()
        return re + im if im[0] in "+-" else re + "+" + im


def _summarize(a: np.ndarray) -> np.ndarray:
    """The values that get printed (edges only when summarizing)."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        a = np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]])
    return np.stack([_summarize(x) for x in a]) if a.ndim > 1 else a


def _body(a, fmt, indent, summarize):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        if summarize and a.shape[0] > 2 * EDGEITEMS:
            items = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."] +
                     [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
        else:
            items = [fmt.format(v) for v in a.tolist()]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(a.shape[0]))
    parts = []
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + [None] + rows[-EDGEITEMS:]
    for r in rows:
        parts.append("..." if r is None else _body(a[r], fmt, indent + 1, summarize))
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _meta_repr(t) -> str:
    """A meta tensor has no values: PyTorch prints its size (and any dtype but the default
    float one) instead."""
    suffixes = ["device='meta'", f"size={tuple(t.shape)}"]
    if t.dtype is not D.get_default_dtype():
        suffixes.append(f"dtype={t.dtype!r}")
    return _add_suffixes("tensor(...", suffixes + _autograd_suffix(t), len("tensor("))


def _autograd_suffix(t) -> list:
    """``grad_fn=<...>``, or ``requires_grad=True`` for a leaf that requires grad."""
    gf = getattr(t, "grad_fn", None)
    if gf is not None:
        return [f"grad_fn=<{type(gf).__name__}>"]
    return ["requires_grad=True"] if getattr(t, "requires_grad", False) else []


def tensor_repr(t, numpy_of) -> str:
    if t.device.type == "meta":
        return _meta_repr(t)
    n = 1
    for s in t.shape:
        n *= s
    src = t if t.device.type == "cpu" else O.to(t, "cpu")
    if t.dtype is D.bfloat16:
        src = O.cast(src, D.float32)
    elif t.dtype is D.complex32:   # (NumPy has no complex32; complex64 holds its values)
        src = O.cast(src, D.complex64)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if n == 0:
        body = "[]"
        if len(t.shape) != 1:
            suffixes.insert(0, f"size={tuple(t.shape)}")
    else:
        a = numpy_of(src)
        summarize = n > THRESHOLD
        shown = _summarize(a) if summarize else a
        if t.dtype.is_complex:
            fmt = _ComplexFormatter(shown)
        else:
            fmt = _Formatter(shown.astype(np.float64) if t.dtype.is_floating_point else shown,
                             t.dtype.is_floating_point)
        body = _body(a.astype(np.float64) if t.dtype.is_floating_point else a, fmt,
                     len("tensor("), summarize)
    default = (D.get_default_dtype() if t.dtype.is_floating_point else
               D.default_complex_dtype() if t.dtype.is_complex else D.int64)
    if t.dtype is not default and t.dtype is not D.bool_ or (n == 0 and t.dtype is not
                                                              D.get_default_dtype()):
        if not (t.dtype is D.bool_ and n):
            suffixes.append(f"dtype={t.dtype!r}")
    return _add_suffixes("tensor(" + body, suffixes + _autograd_suffix(t), len("tensor("))


def _add_suffixes(text: str, suffixes, indent: int) -> str:
    """PyTorch's placement of ``dtype=`` / ``grad_fn=`` ...: on the last line while it
    fits the line width (PyTorch's count, which is 2 more than the line's length), else on
    a line of its own."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    parts.append(")")
    return "".join(parts)
