"""Sample inputs: argument specs, memory layouts, and building them on a device.

A sample is a call (``Sample(T(3, 4), T(4), alpha=2)``) whose tensor arguments are specs,
not tensors. For one (dtype, layout) the kit turns each spec into a *logical* value (a
contiguous CPU tensor: what the argument means) and a *device* tensor holding the same
values in the layout under test: a transposed view, a view sliced with steps out of a
larger buffer whose other elements hold a sentinel, a stride-0 broadcast view. The
reference call gets the logical values, contiguous, on the CPU.
"""
from __future__ import annotations

import copy
import zlib
from dataclasses import dataclass, field

import numpy as np

import ember

__all__ = ["T", "Idx", "Mask", "Fixed", "Sample", "DEVICE", "DTYPE", "GEN", "LAYOUTS",
           "Built", "build", "ALL_DTYPES", "MAIN_DTYPES", "NARROW_DTYPES", "FLOAT_DTYPES",
           "dtype_name", "rng_for"]

#: dtypes every op is tried in, in every layout
MAIN_DTYPES = (ember.float32, ember.float64, ember.int64, ember.int32, ember.bool)
#: further dtypes, tried in the contiguous layout only (keeps the kit fast)
NARROW_DTYPES = (ember.float16, ember.bfloat16, ember.int16, ember.int8, ember.uint8)
ALL_DTYPES = MAIN_DTYPES + NARROW_DTYPES
FLOAT_DTYPES = (ember.float32, ember.float64, ember.float16, ember.bfloat16)

#: ``contiguous``, ``transposed`` (last two dims), ``sliced`` (steps of 2 into a larger
#: buffer), ``broadcast`` (size-1 dim 0 expanded), ``0-d``, ``empty`` (a zero-size dim) and
#: ``special`` (floats: nan, ±inf, ±0, tiny and huge values)
LAYOUTS = ("contiguous", "transposed", "sliced", "broadcast", "0-d", "empty", "special")

_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.5, 1e-30, -3e4, 0.5, 2.5,
                      -0.5])


def dtype_name(dt) -> str:
    return dt.name


def rng_for(*key) -> np.random.Generator:
    """A generator seeded from ``key``: the same sample gets the same values every run."""
    return np.random.default_rng(zlib.crc32("/".join(map(str, key)).encode()))


class _Placeholder:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


#: stands for the device under test (or "cpu" in the reference call)
DEVICE = _Placeholder("DEVICE")
#: stands for the case's dtype
DTYPE = _Placeholder("DTYPE")


class GEN:
    """A fresh ``ember.Generator`` on the call's device, seeded with ``seed``."""

    def __init__(self, seed=1234):
        self.seed = seed

    def __repr__(self):
        return f"GEN({self.seed})"


class T:
    """A tensor of the case's dtype. Floats are uniform in [low, high); integers are drawn
    from [low, high] (clipped at 0 for unsigned types); bools are fair coins.

    ``nonzero`` avoids zeros (divisors), ``distinct`` makes values pairwise different
    (sort, max: no ties), ``zeros`` sets that fraction of values to 0, ``grad`` says whether
    gradient tests differentiate with respect to it, ``bcast`` whether the broadcast
    layout may replace it by a stride-0 view.
    """
    _DEFAULTS = dict(low=-3.0, high=3.0, nonzero=False, distinct=False, zeros=0.0,
                     grad=True, bcast=True)

    def __init__(self, *shape, low=-3.0, high=3.0, nonzero=False, distinct=False, zeros=0.0,
                 grad=True, bcast=True):
        self.shape = tuple(shape)
        self.low, self.high = low, high
        self.nonzero, self.distinct, self.zeros = nonzero, distinct, zeros
        self.grad, self.bcast = grad, bcast

    def __repr__(self):
        opts = [f"{k}={getattr(self, k)!r}" for k, v in self._DEFAULTS.items()
                if getattr(self, k) != v and k in self._shown]
        return f"{type(self).__name__}({', '.join([*map(str, self.shape), *opts])})"

    _shown = ("low", "high", "nonzero", "distinct", "zeros")

    def dtype(self, case_dtype):
        return case_dtype

    def values(self, dtype, rng, special=False) -> np.ndarray:
        shape = self.shape
        n = int(np.prod(shape, dtype=np.int64))
        if dtype is ember.bool:
            return rng.random(shape) < 0.5
        if dtype.is_floating_point:
            if self.distinct:
                # spaced wider than the coarsest dtype's rounding (bfloat16 near 3: 1/64)
                step = max((self.high - self.low) / max(n, 1), 0.07)
                v = self.low + step * rng.permutation(n) + 0.01
                v = v.reshape(shape)
            else:
                v = rng.uniform(self.low, self.high, shape)
            if special:
                pick = rng.random(shape) < 0.6
                v = np.where(pick, _SPECIALS[rng.integers(0, len(_SPECIALS), shape)], v)
        else:
            low = max(self.low, 0) if dtype is ember.uint8 else self.low
            if self.distinct:
                v = (rng.permutation(n) + int(low)).reshape(shape)
            else:
                v = rng.integers(int(low), int(self.high) + 1, shape)
        if self.zeros:
            v = np.where(rng.random(shape) < self.zeros, 0, v)
        if self.nonzero:
            if dtype.is_floating_point:
                v = np.where(np.abs(v) < 0.25, 0.5, v)
            else:
                v = np.where(v == 0, 1, v)
        return np.asarray(v)


class Idx(T):
    """An int64 index tensor with values in [0, high). ``distinct_dim``: the values along
    that dim are pairwise different (scatter without reduction)."""

    def __init__(self, *shape, high, distinct_dim=None):
        super().__init__(*shape, high=high, grad=False, bcast=distinct_dim is None)
        self.distinct_dim = distinct_dim

    def __repr__(self):
        extra = "" if self.distinct_dim is None else f", distinct_dim={self.distinct_dim}"
        return f"Idx({', '.join(map(str, self.shape))}, high={self.high}{extra})"

    def dtype(self, case_dtype):
        return ember.int64

    def values(self, dtype, rng, special=False) -> np.ndarray:
        if self.distinct_dim is None:
            return rng.integers(0, self.high, self.shape)
        d = self.distinct_dim
        moved = list(self.shape)
        k = moved.pop(d)
        rows = [rng.permutation(self.high)[:k] for _ in range(int(np.prod(moved)))]
        arr = np.array(rows, dtype=np.int64).reshape(moved + [k])
        return np.moveaxis(arr, -1, d)


class Mask(T):
    """A bool tensor (conditions, masks)."""
    _shown = ()

    def __init__(self, *shape):
        super().__init__(*shape, grad=False)

    def dtype(self, case_dtype):
        return ember.bool

    def values(self, dtype, rng, special=False) -> np.ndarray:
        return rng.random(self.shape) < 0.5


class Fixed(T):
    """A tensor of a fixed dtype whatever the case's dtype (mixed-dtype promotion)."""

    def __init__(self, dtype, *shape, **kw):
        super().__init__(*shape, **kw)
        self.fixed = dtype

    def __repr__(self):
        return f"Fixed({self.fixed.name}, {super().__repr__()[6:]}"

    def dtype(self, case_dtype):
        return self.fixed


class Sample:
    """One call: positional args (specs or Python values) and keyword args.

    ``fn`` overrides the op's callable for this sample (creation ops, method forms); such
    samples are not used for the op's in-place and ``out=`` forms. ``mutates``: the call
    writes into its first argument, which therefore never gets a broadcast layout.
    """

    def __init__(self, *args, fn=None, mutates=False, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.fn = fn
        self.mutates = mutates

    def __repr__(self):
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"Sample({', '.join(parts)})"

    @property
    def specs(self):
        return [a for a in self.args if isinstance(a, T)]

    def reshaped(self, shape_fn) -> "Sample | None":
        """A copy whose tensor specs have ``shape_fn(spec)`` shapes (None: not applicable)."""
        new_args = []
        changed = False
        for a in self.args:
            if isinstance(a, T):
                shape = shape_fn(a)
                if shape is None:
                    return None
                b = copy.copy(a)
                b.shape = tuple(shape)
                if isinstance(a, Idx) and a.distinct_dim is not None and not shape:
                    return None
                changed |= b.shape != a.shape
                new_args.append(b)
            else:
                new_args.append(a)
        if not changed:
            return None
        s = copy.copy(self)
        s.args = tuple(new_args)
        return s


def zero_d_shape(spec):
    return ()


def empty_shape(spec):
    shape = list(spec.shape)
    for i, n in enumerate(shape):
        if n > 1:
            shape[i] = 0
            return shape
    return shape


@dataclass
class Arg:
    """One tensor argument as built for a call."""
    spec: T
    position: int              # index in the call's positional arguments
    logical: object            # contiguous CPU tensor: the values the argument means
    base: object               # the device tensor the layout was carved from
    view: object               # what the call receives on the device
    layout: str


@dataclass
class Built:
    """A sample built for the device under test and for the CPU reference."""
    dev_args: list
    ref_args: list
    dev_kwargs: dict
    ref_kwargs: dict
    tensors: list = field(default_factory=list)


def _sentinel(dtype):
    if dtype is ember.bool:
        return True
    return float("nan") if dtype.is_floating_point else 77


def applies(spec, layout) -> bool:
    """Whether ``layout`` changes how this argument is laid out."""
    nd = len(spec.shape)
    if layout == "transposed":
        return nd >= 2
    if layout == "sliced":
        return nd >= 1
    if layout == "broadcast":
        return spec.bcast and nd >= 1 and spec.shape[0] > 1
    return False


def _logical(spec, dtype, rng, layout):
    vals = spec.values(dtype, rng, special=layout == "special" and dtype.is_floating_point
                       and type(spec) in (T, Fixed))
    if layout == "broadcast" and applies(spec, layout):
        vals = np.broadcast_to(vals[:1], vals.shape)
    return ember.tensor(np.ascontiguousarray(vals), dtype=dtype)


def place(logical, spec, layout, device):
    """``(base, view)``: ``logical``'s values in ``layout`` on ``device``."""
    if not applies(spec, layout):
        base = logical.to(device, copy=True)
        return base, base
    if layout == "transposed":
        base = logical.transpose(-1, -2).contiguous().to(device)
        return base, base.transpose(-1, -2)
    if layout == "sliced":
        idx = tuple(slice(1, 2 * n, 2) for n in logical.shape)
        big = ember.full(tuple(2 * n + 1 for n in logical.shape), _sentinel(logical.dtype),
                         dtype=logical.dtype)
        big[idx] = logical
        base = big.to(device)
        return base, base[idx]
    if layout == "broadcast":
        base = logical[:1].contiguous().to(device)
        return base, base.expand(*logical.shape)
    raise AssertionError(layout)


def carve(base, spec, layout, shape):
    """The view ``place`` made of ``base`` (to rebuild it on another tensor)."""
    if not applies(spec, layout):
        return base
    if layout == "transposed":
        return base.transpose(-1, -2)
    if layout == "sliced":
        return base[tuple(slice(1, 2 * n, 2) for n in shape)]
    if layout == "broadcast":
        return base.expand(*shape)
    raise AssertionError(layout)


def expected_base_grad(ref_grad, spec, layout):
    """What ``base.grad`` must be on the device, given the reference gradient of the
    logical argument (the adjoint of ``place``)."""
    if not applies(spec, layout):
        return ref_grad
    if layout == "transposed":
        return ref_grad.transpose(-1, -2)
    if layout == "sliced":
        big = ember.zeros(tuple(2 * n + 1 for n in ref_grad.shape), dtype=ref_grad.dtype)
        big[tuple(slice(1, 2 * n, 2) for n in ref_grad.shape)] = ref_grad
        return big
    if layout == "broadcast":
        return ref_grad.sum(0, keepdim=True)
    raise AssertionError(layout)


def _resolve(v, dtype, device):
    if v is DEVICE:
        return device
    if v is DTYPE:
        return dtype
    if isinstance(v, GEN):
        return ember.Generator(device).manual_seed(v.seed)
    if isinstance(v, (list, tuple)):
        return type(v)(_resolve(x, dtype, device) for x in v)
    return v


def build(sample: Sample, dtype, layout: str, device, rng, *, grad=False) -> Built:
    """Build ``sample``'s arguments for ``device`` in ``layout`` and for the reference.

    With ``grad``, floating arguments marked ``grad`` require gradients: on the device the
    *base* is the leaf and the view keeps its gradient (``retain_grad``); in the reference
    the contiguous logical tensor is the leaf.
    """
    dev_args, ref_args, tensors = [], [], []
    tensor_layout = "contiguous" if layout in ("0-d", "empty") else layout
    for a in sample.args:
        if not isinstance(a, T):
            dev_args.append(a)
            ref_args.append(a)
            continue
        dt = a.dtype(dtype)
        logical = _logical(a, dt, rng, tensor_layout)
        base, view = place(logical, a, tensor_layout, device)
        ref = logical.clone()
        if grad and a.grad and dt.is_floating_point:
            base.requires_grad_()
            if view is not base:
                view = carve(base, a, tensor_layout, logical.shape)
                view.retain_grad()
            ref.requires_grad_()
        tensors.append(Arg(a, len(dev_args), logical, base, view, tensor_layout))
        dev_args.append(view)
        ref_args.append(ref)
    dev_kwargs = {k: _resolve(v, dtype, device) for k, v in sample.kwargs.items()}
    ref_kwargs = {k: _resolve(v, dtype, "cpu") for k, v in sample.kwargs.items()}
    return Built(dev_args, ref_args, dev_kwargs, ref_kwargs, tensors)
