"""Fixtures of the opencl backend tests (helpers live in ocl_helpers.py)."""
import pytest

from ocl_helpers import rt


@pytest.fixture
def device():
    return rt.device(0)
