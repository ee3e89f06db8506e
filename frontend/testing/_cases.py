"""From the op database to test cases: (op, dtype, layout) for each form of an op.

Which dtypes and samples apply is decided once per session by running the samples on the
CPU (the reference), contiguous: a call the reference rejects (``sub`` of bools, ``exp_``
in place on integers) is not a case. The device under test plays no part in choosing
cases, so every backend runs the same list.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import ember

from ._compare import flat_tensors
from ._opdb import OP_DB, OpInfo
from ._samples import (ALL_DTYPES, MAIN_DTYPES, Fixed, Sample, T, applies, build,
                       empty_shape, rng_for, zero_d_shape)

__all__ = ["Case", "forward_cases", "grad_cases", "inplace_cases", "out_cases", "all_cases",
           "samples_for", "OUT_KINDS"]

SHAPE_LAYOUTS = ("transposed", "sliced", "broadcast")
INPLACE_LAYOUTS = ("contiguous", "transposed", "sliced")
#: ``out=`` tensors: a fresh contiguous one, a strided view (steps of 2 into a sentinel
#: buffer), and an empty tensor the op must resize
OUT_KINDS = ("contiguous", "strided", "resized")


@dataclass(frozen=True)
class Case:
    kind: str           # forward, grad, inplace, out
    op: str
    dtype: object
    layout: str
    samples: tuple      # (index, Sample) pairs

    @property
    def id(self) -> str:
        return f"{self.op}-{self.dtype.name}-{self.layout}"

    @property
    def info(self) -> OpInfo:
        return OP_DB[self.op]


def _derived(info: OpInfo, which: str) -> list:
    spec = info.zero_d if which == "0-d" else info.empty
    if spec is False or spec is None:
        return []
    if spec is not True:
        return list(spec)
    fn = zero_d_shape if which == "0-d" else empty_shape
    out = []
    for s in info.samples:
        r = s.reshaped(fn)
        if r is not None:
            out.append(r)
    return out


def _plain(spec) -> bool:
    return type(spec) in (T, Fixed)


@functools.lru_cache(maxsize=None)
def samples_for(op: str, layout: str) -> tuple:
    """The (index, sample) pairs of ``op`` that ``layout`` applies to (before dtypes)."""
    info = OP_DB[op]
    if layout in info.skip_layouts:
        return ()
    if layout in ("0-d", "empty"):
        return tuple((100 + i, s) for i, s in enumerate(_derived(info, layout)))
    out = []
    for i, s in enumerate(info.samples):
        specs = s.specs
        if layout == "contiguous":
            out.append((i, s))
        elif layout == "special":
            if info.special and any(_plain(a) for a in specs):
                out.append((i, s))
        elif layout in SHAPE_LAYOUTS:
            if layout == "broadcast" and s.mutates:
                continue
            if any(applies(a, layout) for a in specs):
                out.append((i, s))
    return tuple(out)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _call(info, sample, args, kwargs):
    fn = sample.fn or info.fn
    return fn(*args, **kwargs)


def _runs(form: str, info: OpInfo, sample: Sample, dtype, index: int) -> bool:
    """Whether the reference (CPU) accepts this sample in this form and dtype."""
    rng = rng_for(info.name, index, dtype.name, "probe")
    try:
        if form == "forward":
            b = build(sample, dtype, "contiguous", "cpu", rng)
            flat_tensors(_quiet(lambda: _call(info, sample, b.ref_args, b.ref_kwargs)))
        elif form == "grad":
            b = build(sample, dtype, "contiguous", "cpu", rng, grad=True)
            res = _quiet(lambda: _call(info, sample, b.ref_args, b.ref_kwargs))
            outs = [o for o in flat_tensors(res) if o.requires_grad]
            if not outs:
                return False
            loss = outs[0].sum()
            for o in outs[1:]:
                loss = loss + o.sum()
            loss.backward()
        elif form == "inplace":
            b = build(sample, dtype, "contiguous", "cpu", rng)
            res = _quiet(lambda: info.inplace(*b.ref_args, **b.ref_kwargs))
            if res is not b.ref_args[0]:
                return False
        elif form == "out":
            b = build(sample, dtype, "contiguous", "cpu", rng)
            res = _quiet(lambda: _call(info, sample, b.ref_args, b.ref_kwargs))
            if not isinstance(res, ember.Tensor):
                return False
            out = ember.empty(tuple(res.shape), dtype=res.dtype)
            got = _quiet(lambda: info.fn(*b.ref_args, **b.ref_kwargs, out=out))
            if got is not out:
                return False
    except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError,
            ZeroDivisionError, OverflowError):
        return False
    return True


def _dtypes(info: OpInfo) -> tuple:
    return tuple(d for d in ALL_DTYPES if info.dtypes is None or d in info.dtypes)


def _supported(form, info, pairs, dtype) -> tuple:
    return tuple((i, s) for i, s in pairs if _runs(form, info, s, dtype, i))


@functools.lru_cache(maxsize=None)
def forward_cases() -> tuple:
    """The forward test cases: each op of the op database in each dtype its samples run in
    on the CPU reference, contiguous, plus (for the main dtypes) the transposed, sliced,
    broadcast, special-value, 0-d and empty layouts. Computed once and cached.
    """
    cases = []
    for name, info in OP_DB.items():
        for dt in _dtypes(info):
            base = _supported("forward", info, samples_for(name, "contiguous"), dt)
            if not base:
                continue
            ok = {i for i, _ in base}
            cases.append(Case("forward", name, dt, "contiguous", base))
            if dt not in MAIN_DTYPES:
                continue
            for layout in SHAPE_LAYOUTS + ("special",):
                if layout == "special" and not dt.is_floating_point:
                    continue
                pairs = tuple((i, s) for i, s in samples_for(name, layout) if i in ok)
                if pairs:
                    cases.append(Case("forward", name, dt, layout, pairs))
            for layout in ("0-d", "empty"):
                pairs = _supported("forward", info, samples_for(name, layout), dt)
                if pairs:
                    cases.append(Case("forward", name, dt, layout, pairs))
    return tuple(cases)


@functools.lru_cache(maxsize=None)
def compile_cases() -> tuple:
    """The forward cases in their contiguous, transposed, 0-d and empty layouts (the
    others differ from these only in how the inputs are carved, which capture records as
    it records any view)."""
    return tuple(c for c in forward_cases()
                 if c.layout in ("contiguous", "transposed", "0-d", "empty"))


@functools.lru_cache(maxsize=None)
def grad_cases() -> tuple:
    """float64 in every layout, float32 contiguous: gradients of differentiable ops."""
    cases = []
    for name, info in OP_DB.items():
        if not info.grad:
            continue
        for dt in (ember.float64, ember.float32):
            if info.dtypes is not None and dt not in info.dtypes:
                continue
            pairs = tuple((i, s) for i, s in samples_for(name, "contiguous")
                          if any(_plain(a) and a.grad for a in s.specs))
            base = _supported("grad", info, pairs, dt)
            if not base:
                continue
            cases.append(Case("grad", name, dt, "contiguous", base))
            if dt is not ember.float64:
                continue
            ok = {i for i, _ in base}
            for layout in SHAPE_LAYOUTS:
                sel = tuple((i, s) for i, s in samples_for(name, layout) if i in ok)
                if sel:
                    cases.append(Case("grad", name, dt, layout, sel))
    return tuple(cases)


@functools.lru_cache(maxsize=None)
def inplace_cases() -> tuple:
    """The in-place test cases: each op with an in-place form, in each dtype where its
    samples run in place on the reference, contiguous (and transposed and sliced for the
    main dtypes). Cached.
    """
    cases = []
    for name, info in OP_DB.items():
        if info.inplace is None:
            continue
        pairs = tuple((i, s) for i, s in samples_for(name, "contiguous")
                      if s.fn is None and s.specs and _plain(s.args[0]))
        for dt in _dtypes(info):
            base = _supported("inplace", info, pairs, dt)
            if not base:
                continue
            ok = {i for i, _ in base}
            for layout in INPLACE_LAYOUTS if dt in MAIN_DTYPES else ("contiguous",):
                if layout == "contiguous":
                    sel = base
                else:
                    sel = tuple((i, s) for i, s in samples_for(name, layout)
                                if i in ok and applies(s.args[0], layout))
                if sel:
                    cases.append(Case("inplace", name, dt, layout, sel))
    return tuple(cases)


@functools.lru_cache(maxsize=None)
def out_cases() -> tuple:
    """The ``out=`` test cases: each op taking ``out=``, in each dtype where its samples run,
    with each kind of output tensor in ``ember.testing._cases.OUT_KINDS`` (contiguous only
    outside the main dtypes). Cached.
    """
    cases = []
    for name, info in OP_DB.items():
        if not info.out:
            continue
        pairs = tuple((i, s) for i, s in samples_for(name, "contiguous") if s.fn is None)
        for dt in _dtypes(info):
            base = _supported("out", info, pairs, dt)
            if not base:
                continue
            for kind in OUT_KINDS if dt in MAIN_DTYPES else ("contiguous",):
                cases.append(Case("out", name, dt, kind, base))
    return tuple(cases)


def all_cases() -> dict:
    """Every kind of test case, as a dict: ``"forward"``, ``"grad"``, ``"inplace"``,
    ``"out"`` and ``"compiled"`` mapped to their tuples of :class:`Case`.
    """
    return {"forward": forward_cases(), "grad": grad_cases(), "inplace": inplace_cases(),
            "out": out_cases(), "compiled": compile_cases()}

