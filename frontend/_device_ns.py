"""``ember.opencl``, ``ember.cuda``, ...: per-device-type namespaces.

Each forwards to the functions its backend plugin offers (``Backend.device_api``), so the
frontend never imports a backend package. Without the plugin (or with no device),
``is_available()`` is False and ``device_count()`` is 0, never an error, as in PyTorch;
anything else raises a RuntimeError that says which plugin to install.
"""
from __future__ import annotations

from ember.dispatcher.plugins import BACKENDS, ensure_loaded


class DeviceNamespace:
    def __init__(self, device_type: str):
        self._type = device_type

    def _backend(self):
        ensure_loaded()
        return BACKENDS.get(self._type)

    def is_available(self) -> bool:
        try:
            return self.device_count() > 0
        except Exception:
            return False

    def device_count(self) -> int:
        b = self._backend()
        if b is None:
            return 0
        try:
            return int(b.device_count())
        except Exception:
            return 0

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        b = self._backend()
        if b is None:
            raise RuntimeError(f"ember.{self._type}.{name}: no {self._type!r} backend is "
                               f"installed (pip install ember-{self._type}); see "
                               f"`python -m ember backends`")
        api = getattr(b, "device_api", None)
        if api is not None and hasattr(api, name):
            return getattr(api, name)
        if name == "synchronize":
            return b.synchronize
        raise AttributeError(f"ember.{self._type} has no attribute {name!r} (the "
                             f"{b.name!r} plugin does not provide it)")

    def __repr__(self):
        return f"<ember.{self._type} device namespace>"


def pinning_api():
    """The device API of an available accelerator plugin that offers pinned host memory
    (``pinned_buffer``), or None (``Tensor.pin_memory`` and ``DataLoader(pin_memory=)``)."""
    ensure_loaded()
    for b in BACKENDS.values():
        api = getattr(b, "device_api", None)
        if api is not None and hasattr(api, "pinned_buffer"):
            try:
                if api.is_available():
                    return api
            except Exception:
                continue
    return None


opencl = DeviceNamespace("opencl")
cuda = DeviceNamespace("cuda")
