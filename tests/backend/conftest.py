"""Backend tests run on every device: the native CPU backend, and "primcpu" — the CPU
backend's primitives only, registered in-process — which proves that a backend that
implements just ``PRIMITIVES`` runs every op through the dispatcher's composites."""
import numpy as np
import pytest

import ember
from ember.dispatcher import BACKENDS, PRIMITIVES, Backend, ensure_loaded, register_backend


class PrimitivesOnlyCPU(Backend):
    name = "primcpu"
    version = "test"
    device_type = "primcpu"

    def __init__(self):
        from ember_cpu import _C
        self._C = _C
        self.kernels = {n: getattr(_C, n) for n in PRIMITIVES}

    def device_count(self):
        return 1

    def allocate(self, nbytes, index):
        return self._C.Storage(nbytes)

    def copy_from_host(self, storage, byte_offset, host_buffer):
        src = self._C.Storage.from_buffer(host_buffer)
        self._C.storage_copy(storage, byte_offset, src, 0, src.nbytes)

    def copy_to_host(self, storage, byte_offset, nbytes):
        return bytes(memoryview(storage)[byte_offset:byte_offset + nbytes])


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
