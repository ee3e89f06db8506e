"""The op schema and plugin validation, with in-process fake backends."""
import os

import pytest

from ember.dispatcher.codegen.docs import render_ops_page

from ember.dispatcher import (API_VERSION, OPS, PRIMITIVES, Backend, register_backend,
                              unregister_backend)
from ember.dispatcher.plugins import validate_kernels
from ember.dispatcher.schema import KINDS


def test_primitive_budget():
    assert len(PRIMITIVES) <= 40


def test_every_non_primitive_op_has_a_composite():
    missing = [n for n, o in OPS.items() if not o.primitive and o.composite is None]
    assert missing == []


def test_schema_fields_are_documented():
    for name, o in OPS.items():
        assert o.kind in KINDS, name
        assert o.signature and o.kernel, name


def _noop(out, *args, **kw):
    pass


def _prims():
    return {n: _noop for n in PRIMITIVES}


def test_validate_rejects_unknown_ops():
    with pytest.raises(ValueError, match="unknown ops: frobnicate"):
        validate_kernels("p", {**_prims(), "frobnicate": _noop})


def test_validate_rejects_missing_primitives():
    k = _prims()
    del k["add"], k["bmm"]
    with pytest.raises(ValueError, match="plugin 'p' is missing required primitives: add, bmm"):
        validate_kernels("p", k)


def test_validate_rejects_non_callables_and_bad_arity():
    with pytest.raises(TypeError, match="not callable"):
        validate_kernels("p", {**_prims(), "exp": 3})
    with pytest.raises(TypeError, match="kernel for 'add' has signature"):
        validate_kernels("p", {**_prims(), "add": lambda out: None})


class _Fake(Backend):
    name = "fakecore"
    device_type = "fakecore"

    def __init__(self, api=API_VERSION):
        self.api_version = api
        self.kernels = _prims()


def test_register_and_duplicate_device_type():
    register_backend(_Fake())
    try:
        with pytest.raises(RuntimeError, match="claims device type 'fakecore', already "
                                               "provided by plugin 'fakecore'"):
            register_backend(_Fake(), name="second")
        assert OPS["add"].kernels["fakecore"] is _noop
    finally:
        unregister_backend("fakecore")
    assert "fakecore" not in OPS["add"].kernels


def test_wrong_api_version_names_the_plugin():
    with pytest.raises(RuntimeError, match="plugin 'fakecore' was written for ember backend API "
                                           "version 99"):
        register_backend(_Fake(api=99))


def test_the_ops_page_is_generated_from_the_table():
    """docs/ops.md lists every op as the definitions do (regenerate it with
    ``python -m ember.dispatcher.codegen docs docs/ops.md``)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "ops.md")
    with open(path) as f:
        assert f.read() == render_ops_page(), "docs/ops.md is stale: regenerate it"


def test_differentiability_comes_from_the_definition():
    # a formula only on differentiable ops; a differentiable op without a composite (a
    # primitive) has a formula, so autograd never meets a kernel it cannot differentiate
    for name, o in OPS.items():
        if o.grad is not None:
            assert o.differentiable, name
        if o.differentiable and o.composite is None:
            assert o.grad is not None, name
