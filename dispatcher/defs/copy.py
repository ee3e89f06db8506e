"""Copies, casts, creation and random numbers."""
from __future__ import annotations

from .. import core as C
from .. import dtypes as D
from .. import ops as O
from .. import views as V
from ..schema import composite, defop, gradient

__all__ = ["linspace", "eye", "randint", "randperm"]

# ---- copies and casts ---------------------------------------------------------------------
defop("copy", "copy", "copy_(Tensor self, Tensor src) -> Tensor", "(out, src)",
      promotion="none", primitive=True, inputs=("self", "src"),
      doc="any dtypes, broadcast src; devices: the dispatcher moves src first")
defop("to", "copy", "to(Tensor self, Device? device=None, ScalarType? dtype=None, "
      "bool copy=False) -> Tensor", "(composite only)", promotion="none",
      node="ToCopyBackward0")
defop("clone", "copy", "clone(Tensor self) -> Tensor", "(composite only)", promotion="none")
composite("to")(O.to)
composite("clone")(O.clone)


@gradient("copy")
def _(g, src_dtype, src_device):
    # the copy overwrote self: no gradient reaches its old values
    return None, O.to(g, src_device, src_dtype)


@gradient("to")
def _(g, self_dtype, self_device):
    return (O.to(g, self_device, self_dtype),)


@gradient("clone")
def _(g):
    return (g,)


# ---- creation -----------------------------------------------------------------------------
defop("fill", "creation", "fill_(Tensor self, Scalar value) -> Tensor", "(out, value)",
      promotion="none", primitive=True, differentiable=False)
defop("arange", "creation", "arange(start, end, step, *, dtype, device) -> Tensor",
      "(out, start, step)", promotion="none", primitive=True, differentiable=False)
for _n, _sig in (("linspace", "linspace(start, end, steps, *, dtype, device) -> Tensor"),
                 ("eye", "eye(n, m=None, *, dtype, device) -> Tensor")):
    defop(_n, "creation", _sig, "(composite only)", promotion="none", differentiable=False)


@composite("linspace")
def linspace(start, end, steps, dtype, device):
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    if steps == 0:
        return O.full((0,), 0, dtype, device)
    if steps == 1:
        return O.full((1,), start, dtype, device)
    E = O.elementwise
    step = (end - start) / (steps - 1)
    idx = O.arange(0, steps, 1, D.float64, device)
    # from both ends towards the middle, so both endpoints are exact
    lo = E("add", E("mul", idx, step), float(start))
    hi = E("sub", float(end), E("mul", E("sub", steps - 1, idx), step))
    res = O.where(E("lt", idx, steps // 2), lo, hi)
    if not dtype.is_floating_point:
        res = E("trunc", res)
    return O.cast(res, dtype)


@composite("eye")
def eye(n, m, dtype, device):
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got {n} and {m}")
    out = O.zeros((n, m), dtype, device)
    k = min(n, m)
    if k:
        O.fill_(V.as_strided(out, (k,), (m + 1,), 0), 1)
    return out


# ---- random numbers (counter-based: a generator's (seed, offset) fixes every value) --------
defop("uniform", "random", "uniform_(Tensor self, float from=0, float to=1, *, generator) "
      "-> Tensor", "(out, low, high, seed, offset)", promotion="none", primitive=True,
      differentiable=False)
defop("normal", "random", "normal_(Tensor self, float mean=0, float std=1, *, generator) "
      "-> Tensor", "(out, mean, std, seed, offset)", promotion="none", primitive=True,
      differentiable=False)
defop("randint", "random", "randint(low, high, size, *, generator, dtype, device) -> Tensor",
      "(composite only)", promotion="none", differentiable=False)
defop("randperm", "random", "randperm(n, *, generator, dtype, device) -> Tensor",
      "(composite only)", promotion="none", differentiable=False)


@composite("randint")
def randint(low, high, size, generator, dtype, device):
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    E = O.elementwise
    u = O.random_(C.empty(tuple(size), D.float64, device), "uniform", 0.0, 1.0, generator)
    v = E("floor", E("add", E("mul", u, float(high - low)), float(low)))
    v = E("minimum", v, float(high - 1))
    return O.cast(v, dtype)


@composite("randperm")
def randperm(n, generator, dtype, device):
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    u = O.random_(C.empty((n,), D.float64, device), "uniform", 0.0, 1.0, generator)
    return O.cast(O.sort(u, 0)[1], dtype)
