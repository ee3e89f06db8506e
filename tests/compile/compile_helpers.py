"""What the tests of ``tests/compile`` share (imported by name: pytest puts this folder on
``sys.path``)."""
import pytest

import ember


def _opencl() -> bool:
    try:
        ember.ones(1).to("opencl")
        return True
    except Exception:
        return False


#: skips a test where no OpenCL device is there
requires_opencl = pytest.mark.skipif(not _opencl(),
                                     reason="no OpenCL device (pip install ember-opencl)")
