"""Fixtures of the opencl backend tests (helpers live in ocl_helpers.py, whose import skips
a test module on a machine without a usable OpenCL device)."""
import os

import pytest

import ember_opencl
from ember_opencl import _runtime as rt


@pytest.fixture
def device():
    if not ember_opencl.is_available():  # pragma: no cover - depends on the machine
        pytest.skip(f"no usable OpenCL device ({rt._discovery_error or 'none found'})")
    return rt.device(0)


def pytest_collection_modifyitems(config, items):
    """Every test here runs on the OpenCL device: without a usable one they are skipped,
    with the reason (PoCL that cannot compile for this host CPU, no ICD, ...)."""
    if ember_opencl.is_available():
        return
    here = os.path.dirname(os.path.abspath(__file__))
    skip = pytest.mark.skip(reason="no usable OpenCL device "
                                   f"({rt._discovery_error or 'none found'})")
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(skip)
