"""Every op of the schema on the device under test, against the CPU reference.

- ``test_forward[op-dtype-layout]``: each sample call gives the reference's result
  (shape, dtype, device, values within the dtype's tolerance).
- ``test_grad[op-dtype-layout]``: after ``backward`` with a fixed output gradient, the
  gradient of each floating argument equals the reference's, both for the argument as
  the op saw it (a view) and for the base tensor the view was carved from.
- ``test_inplace[op-dtype-layout]``: the in-place form writes the reference's values into
  self (a view in the layout), returns self, and leaves the rest of the base untouched.
- ``test_out[op-dtype-kind]``: ``out=`` into a fresh, a strided and an empty (resized)
  tensor.
- ``test_compiled[op-dtype-layout]``: each forward sample inside ``ember.compile``: alone
  (the recorded kernels replayed: capture, graph breaks and materialisation), and, for
  contiguous float32 samples, between elementwise neighbours (its floating inputs and
  outputs multiplied by 1) under the default compiler, which fuses what it can with them
  (float32 only: each new fused group costs a C++ compile).
"""
from __future__ import annotations

import os
import re

import pytest

import ember
from ember.dispatcher import OPS

from ._cases import compile_cases, forward_cases, grad_cases, inplace_cases, out_cases
from ._compare import assert_close, flat_tensors, magnitude
from ._opdb import OP_DB
from ._samples import build, carve, expected_base_grad, rng_for, _sentinel


def _params(cases):
    return [pytest.param(c, id=c.id) for c in cases]


def _context(case, index, sample, device=None):
    """Where a failure happened, for plugin authors: the public op and the call (the op's
    name where the sample's function is a lambda), and a one-line reproduction."""
    args = ", ".join(repr(a) for a in sample.args)
    kw = ", ".join(f"{k}={v!r}" for k, v in sample.kwargs.items())
    fn = sample.fn or case.info.fn
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    if "<lambda>" in name or "<locals>" in name:
        name = case.op
    text = (f"{case.kind} {case.op} ({case.dtype.name}, {case.layout}), sample {index}: "
            f"{name}({', '.join(x for x in (args, kw) if x)})")
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[-1].rsplit(" ", 1)[0]
    if test and device is not None:
        text += f'\nreproduce: python -m ember.testing {device} -k "{test}"'
    return text


def _run_samples(case, body, device=None):
    for index, sample in case.samples:
        try:
            body(index, sample)
        except AssertionError as e:
            raise AssertionError(f"{_context(case, index, sample, device)}\n{e}") from None
        except Exception as e:
            if hasattr(e, "add_note"):
                e.add_note(_context(case, index, sample, device))
                raise
            raise RuntimeError(f"{_context(case, index, sample, device)}: {e!r}") from e


def _call(case, sample, args, kwargs):
    fn = sample.fn or case.info.fn
    return fn(*args, **kwargs)


def _mag(built) -> float:
    return magnitude([a.logical for a in built.tensors])


def _check(case, sample, built, actual, expected, device):
    if case.info.check is not None:
        case.info.check(actual, expected, sample, built)
        # the structure and device still have to match
        for a in flat_tensors(actual):
            assert a.device == ember.dispatcher.to_device(device), \
                f"result on {a.device}, expected on {device}"
    else:
        try:
            assert_close(actual, expected, device=device, scale=case.info.scale,
                         magnitude=_mag(built))
        except AssertionError as e:
            outs = flat_tensors(expected)
            shape = tuple(outs[0].shape) if len(outs) == 1 else None
            raise AssertionError(f"{e}{_inputs_at(str(e), built, shape)}") from None


def _inputs_at(message, built, shape):
    """The inputs' values at the first mismatch (where an input broadcasts to the result:
    elementwise ops), for the failure message."""
    m = re.search(r"first at \(([\d, ]*)\)", message)
    if m is None or shape is None:
        return ""
    idx = tuple(int(i) for i in m[1].split(",") if i.strip())
    parts = []
    for k, a in enumerate(built.ref_args):
        if not isinstance(a, ember.Tensor):
            continue
        off = len(shape) - a.dim()
        if len(idx) != len(shape) or off < 0 or any(n not in (1, shape[off + j])
                                                    for j, n in enumerate(a.shape)):
            parts.append(f"arg {k}: {tuple(a.shape)} {str(a.dtype)[6:]}")
            continue
        at = tuple(0 if n == 1 else idx[off + j] for j, n in enumerate(a.shape))
        parts.append(f"arg {k}{list(at)} = {a[at].item()!r}" if at else
                     f"arg {k} = {a.item()!r}")
    return ("\ninputs there: " + ", ".join(parts)) if parts else ""


@pytest.mark.parametrize("case", _params(forward_cases()))
def test_forward(case, ember_device):
    def body(index, sample):
        rng = rng_for(case.op, index, case.dtype.name, case.layout)
        b = build(sample, case.dtype, case.layout, ember_device, rng)
        expected = _call(case, sample, b.ref_args, b.ref_kwargs)
        actual = _call(case, sample, b.dev_args, b.dev_kwargs)
        _check(case, sample, b, actual, expected, ember_device)
    _run_samples(case, body, ember_device)


def _times_one(v):
    if isinstance(v, ember.Tensor) and v.dtype.is_floating_point:
        return v * 1
    return v


def _times_one_in_place(result):
    for t in flat_tensors(result):
        if t.dtype.is_floating_point and 0 not in t.stride() and not t.requires_grad:
            t.mul_(1)
    return result


@pytest.mark.parametrize("case", _params(compile_cases()))
def test_compiled(case, ember_device):
    def body(index, sample):
        rng = rng_for(case.op, index, case.dtype.name, case.layout)
        b = build(sample, case.dtype, case.layout, ember_device, rng)
        expected = _call(case, sample, b.ref_args, b.ref_kwargs)

        def alone(*args, **kwargs):
            return _call(case, sample, args, kwargs)
        actual = ember.compile(alone, backend="eager")(*b.dev_args, **b.dev_kwargs)
        _check(case, sample, b, actual, expected, ember_device)
        if case.layout != "contiguous" or case.dtype.name != "float32":
            return      # (each fused group is a C++ compile: float32 stands for the rest)

        def neighbours(*args, **kwargs):
            args = [_times_one(a) for a in args]
            return _times_one_in_place(_call(case, sample, args, kwargs))
        # fresh arguments (and generators: a random op draws what the reference drew)
        b = build(sample, case.dtype, case.layout, ember_device,
                  rng_for(case.op, index, case.dtype.name, case.layout))
        actual = ember.compile(neighbours)(*b.dev_args, **b.dev_kwargs)
        _check(case, sample, b, actual, expected, ember_device)
    _run_samples(case, body, ember_device)


@pytest.mark.parametrize("case", _params(grad_cases()))
def test_grad(case, ember_device):
    def body(index, sample):
        rng = rng_for(case.op, index, case.dtype.name, case.layout, "grad")
        b = build(sample, case.dtype, case.layout, ember_device, rng, grad=True)
        expected = flat_tensors(_call(case, sample, b.ref_args, b.ref_kwargs))
        actual = flat_tensors(_call(case, sample, b.dev_args, b.dev_kwargs))
        pairs = [(a, e) for a, e in zip(actual, expected) if e.requires_grad]
        assert pairs, "no output requires grad"
        seeds = [ember.tensor(rng.uniform(-1, 1, tuple(e.shape)), dtype=e.dtype)
                 for _, e in pairs]
        loss_e = sum(((e * g).sum() for (_, e), g in zip(pairs, seeds)), ember.tensor(0.0))
        loss_a = sum(((a * g.to(ember_device)).sum() for (a, _), g in zip(pairs, seeds)),
                     ember.tensor(0.0).to(ember_device))
        loss_e.backward()
        loss_a.backward()
        for arg in b.tensors:
            ref = b.ref_args[arg.position]
            if not ref.requires_grad:
                continue
            got_view = arg.view.grad
            got_base = arg.base.grad
            name = f"grad of argument {arg.position}"
            if ref.grad is None:
                for g in (got_view, got_base):
                    assert g is None or not bool((g != 0).any()), \
                        f"{name}: the reference has no gradient, the device a nonzero one"
                continue
            assert got_view is not None, f"{name}: no gradient on the device"
            assert_close(got_view, ref.grad, device=ember_device, scale=case.info.scale * 4,
                         what=name, magnitude=_mag(b))
            assert got_base is not None, f"{name}: no gradient on the base of the view"
            assert_close(got_base, expected_base_grad(ref.grad, arg.spec, arg.layout),
                         device=ember_device, scale=case.info.scale * 4,
                         what=f"{name} (base tensor)", magnitude=_mag(b))
    _run_samples(case, body, ember_device)


@pytest.mark.parametrize("case", _params(inplace_cases()))
def test_inplace(case, ember_device):
    info = case.info

    def body(index, sample):
        rng = rng_for(case.op, index, case.dtype.name, case.layout, "inplace")
        b = build(sample, case.dtype, case.layout, ember_device, rng)
        self_arg = b.tensors[0]
        before = self_arg.base.cpu().clone()
        expected = info.inplace(*b.ref_args, **b.ref_kwargs)
        result = info.inplace(*b.dev_args, **b.dev_kwargs)
        assert result is b.dev_args[0], "the in-place form did not return self"
        mag = _mag(b)
        assert_close(result, expected, device=ember_device, scale=info.scale, magnitude=mag)
        # elements of the base outside the view keep their values
        want = before.clone()
        carve(want, self_arg.spec, self_arg.layout, tuple(expected.shape)).copy_(expected)
        assert_close(self_arg.base, want, device=ember_device, scale=info.scale,
                     what="base tensor of self", magnitude=mag)
    _run_samples(case, body, ember_device)


@pytest.mark.parametrize("case", _params(out_cases()))
def test_out(case, ember_device):
    info = case.info

    def body(index, sample):
        rng = rng_for(case.op, index, case.dtype.name, "contiguous", "out")
        b = build(sample, case.dtype, "contiguous", ember_device, rng)
        expected = info.fn(*b.ref_args, **b.ref_kwargs)
        shape, dt = tuple(expected.shape), expected.dtype
        base = None
        if case.layout == "contiguous":
            out = ember.empty(shape, dtype=dt, device=ember_device)
        elif case.layout == "strided":
            big = tuple(2 * n + 1 for n in shape)
            base = ember.full(big, _sentinel(dt), dtype=dt, device=ember_device)
            out = base[tuple(slice(1, 2 * n, 2) for n in shape)]
        else:
            out = ember.empty(0, dtype=dt, device=ember_device)
        result = info.fn(*b.dev_args, **b.dev_kwargs, out=out)
        assert result is out, "the call with out= did not return out"
        mag = _mag(b)
        assert_close(out, expected, device=ember_device, scale=info.scale, what="out",
                     magnitude=mag)
        if base is not None:
            want = ember.full(tuple(base.shape), _sentinel(dt), dtype=dt)
            want[tuple(slice(1, 2 * n, 2) for n in shape)] = expected
            assert_close(base, want, device=ember_device, what="base tensor of out",
                         magnitude=mag)
    _run_samples(case, body, ember_device)


def test_every_schema_op_has_an_entry():
    """The op database covers the schema: a new op needs samples before it ships."""
    missing = sorted(set(OPS) - set(OP_DB))
    unknown = sorted(set(OP_DB) - set(OPS))
    assert not missing, f"ops without an entry in ember.testing's op database: {missing}"
    assert not unknown, f"op database entries for ops not in the schema: {unknown}"


def test_every_op_has_cases():
    """Each op is exercised by at least one forward case (its samples run on the CPU)."""
    covered = {c.op for c in forward_cases()}
    assert sorted(set(OP_DB) - covered) == []


def test_every_differentiable_op_has_gradient_cases():
    covered = {c.op for c in grad_cases()}
    assert sorted(n for n, o in OPS.items() if o.differentiable and n not in covered) == []
