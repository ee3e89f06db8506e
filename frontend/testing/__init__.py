"""ember.testing: the conformance kit every backend runs.

One command tests a device against ember's CPU backend, op by op::

    pytest --pyargs ember.testing --ember-device=mydevice
    pytest --pyargs ember.testing --ember-device=mydevice --ember-xfail=xfail.txt
    python -m ember.testing mydevice                    # the same

The kit holds an op database (``OP_DB``: for every op of ``ember.dispatcher.schema``, the
public call that reaches it and sample inputs), builds each sample in several memory
layouts and dtypes, and compares the device's forward results, gradients, in-place and
``out=`` forms with the reference (the same call on ``"cpu"``). It also checks transfers,
views, random streams, training and, where the backend exposes them, the caching
allocator's statistics. See ``docs/plugins.md``.

>>> from ember.testing import OP_DB
>>> OP_DB["add"].fn is __import__("ember").add
True
"""
import argparse
import sys
from importlib.metadata import entry_points

from ._cases import (Case, all_cases, compile_cases, forward_cases, grad_cases, inplace_cases,
                     out_cases)
from ._compare import TOLERANCES, assert_close
from ._make_tensor import assert_allclose, make_tensor
from ._opdb import OP_DB, OpInfo
from ._samples import LAYOUTS, Fixed, Idx, Mask, Sample, T

__all__ = ["OP_DB", "OpInfo", "Sample", "T", "Idx", "Mask", "Fixed", "LAYOUTS", "Case",
           "all_cases", "compile_cases", "forward_cases", "grad_cases", "inplace_cases",
           "out_cases",
           "assert_close", "TOLERANCES", "pytest_args", "main", "make_tensor",
           "assert_allclose"]


def pytest_args(device: str, xfail: str | None = None) -> list:
    """The pytest arguments that run the kit on ``device`` (the plugin is added with
    ``-p`` when it is not registered through its entry point)."""
    args = ["--pyargs", "ember.testing", f"--ember-device={device}"]
    if xfail:
        args.append(f"--ember-xfail={xfail}")
    if not _plugin_registered():
        args = ["-p", "ember.testing.plugin"] + args
    return args


def _plugin_registered() -> bool:
    return any(ep.value.split(":")[0] == "ember.testing.plugin"
               for ep in entry_points(group="pytest11"))


def main(argv=None) -> int:
    """``python -m ember.testing DEVICE [--xfail FILE] [pytest options]``."""
    # pytest is the kit's runner, an optional dependency (ember-tensor[testing]): imported only here
    try:
        import pytest  # noqa: PLC0415
    except ModuleNotFoundError:
        print("python -m ember.testing: the conformance kit runs on pytest, which is not "
              "installed: pip install 'ember-tensor[testing]' (or pip install pytest)",
              file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog="python -m ember.testing",
                                description="Run ember's conformance kit on a device.")
    p.add_argument("device", nargs="?", default="cpu", help="device to test (default: cpu)")
    p.add_argument("--xfail", metavar="FILE", help="expected failures, one test id per line")
    args, rest = p.parse_known_args(argv)
    return int(pytest.main(pytest_args(args.device, args.xfail) + rest))
