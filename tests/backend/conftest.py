"""Backend tests run on every device: the native CPU backend, and "primcpu" — the CPU
backend's primitives only, registered in-process — which proves that a backend that
implements just ``PRIMITIVES`` runs every op through the dispatcher's composites."""
import numpy as np
import pytest

import ember
from ember.dispatcher import BACKENDS, PRIMITIVES, ensure_loaded, register_backend
from ember_cpu.plugin import CPUBackend


class PrimitivesOnlyCPU(CPUBackend):
    """The CPU backend with every non-primitive kernel removed."""
    name = "primcpu"
    version = "test"
    device_type = "primcpu"
    host_accessible = False

    def __init__(self):
        super().__init__()
        self.kernels = {n: k for n, k in self.kernels.items() if n in PRIMITIVES}


ensure_loaded()
if "primcpu" not in BACKENDS:
    register_backend(PrimitivesOnlyCPU())

DEVICES = ["cpu", "primcpu"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def T(data, device="cpu", dtype=None):
    """An ember tensor holding ``data`` (NumPy array or nested lists) on ``device``."""
    return ember.tensor(np.asarray(data), dtype=dtype).to(device)


def N(t):
    """An ember tensor's values as a NumPy array (through the host)."""
    if t.dtype is ember.bfloat16:
        t = t.float()
    return t.cpu().numpy()
